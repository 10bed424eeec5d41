/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The network emulator's ordering rule under chaos (docs/multi-node.md): a signal is seen only
 * after every put posted before it to the same (context, peer).  The probe (net_emu_probe.cu)
 * posts the signal while another warp holds the earlier put in a slot it is applying or still
 * filling, and a receiver reads the destination as soon as the signal is seen: it must find the
 * put's bytes, not the poison.  A signal that skipped such slots lands before the put: caught.
 */
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu/net_emu_probe.h"
#include "ncclx_test.h"

#define CUDA_OK(call) assert_int_equal((call), cudaSuccess)

#define ARENA_BYTES  (64u << 10)
#define SIGNAL_TABLE (48u << 10) /* [CONTEXTS][1] uint64 */
#define PUT_BYTES    1024u
#define POISON       0xA5

static void check_race(ncclx_probe_race_t race)
{
    void *arena, **world;
    ncclx_net_stats_t *stats;
    ncclx_net_held_t *held;
    unsigned *held_next;
    unsigned char *seen;
    int *status;
    CUDA_OK(cudaMalloc(&arena, ARENA_BYTES));
    CUDA_OK(cudaMalloc((void **)&world, sizeof(void *)));
    CUDA_OK(cudaMalloc((void **)&stats, sizeof(*stats)));
    CUDA_OK(cudaMalloc((void **)&held, NCCLX_NET_CONTEXTS * NCCLX_NET_HELD_PUTS * sizeof(*held)));
    CUDA_OK(cudaMalloc((void **)&held_next, NCCLX_NET_CONTEXTS * sizeof(unsigned)));
    CUDA_OK(cudaMalloc((void **)&seen, PUT_BYTES));
    CUDA_OK(cudaMalloc((void **)&status, sizeof(int)));

    /* The put's source: fresh random bytes; its destination and the receiver's copy: poison. */
    static unsigned char payload[PUT_BYTES], got[PUT_BYTES];
    for (unsigned i = 0; i < PUT_BYTES; i++) {
        payload[i] = (unsigned char)(rand() % 255); /* never the poison's 0xA5 run by chance */
        if (payload[i] == POISON) {
            payload[i] = 0;
        }
    }
    const size_t src_off = 0, dst_off = 16u << 10;
    CUDA_OK(cudaMemset(arena, 0, ARENA_BYTES));
    CUDA_OK(cudaMemcpy((char *)arena + src_off, payload, PUT_BYTES, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset((char *)arena + dst_off, POISON, PUT_BYTES));
    CUDA_OK(cudaMemset(seen, POISON, PUT_BYTES));
    CUDA_OK(cudaMemset(status, 0, sizeof(int)));
    CUDA_OK(cudaMemcpy(world, &arena, sizeof(void *), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(stats, 0, sizeof(*stats)));
    CUDA_OK(cudaMemset(held_next, 0, NCCLX_NET_CONTEXTS * sizeof(unsigned)));

    /* Context 0, peer 0: one slot, chosen at random, holds the put. */
    static ncclx_net_held_t slots[NCCLX_NET_CONTEXTS * NCCLX_NET_HELD_PUTS];
    memset(slots, 0, sizeof(slots));
    const int slot = rand() % NCCLX_NET_HELD_PUTS;
    slots[slot].dst_off = dst_off;
    slots[slot].src_off = src_off;
    slots[slot].bytes = PUT_BYTES;
    slots[slot].peer = 0;
    slots[slot].state = 2;
    CUDA_OK(cudaMemcpy(held, slots, sizeof(slots), cudaMemcpyHostToDevice));

    ncclx_net_desc_t n;
    memset(&n, 0, sizeof(n));
    n.kind = NCCLX_NET_EMULATED;
    n.rank = 0;
    n.ranks = 1;
    n.lsa_size = 1;
    n.num_signals = 1;
    n.local = arena;
    n.world = world;
    n.signal_table = SIGNAL_TABLE;
    n.stats = stats;
    n.held = held;
    n.held_next = held_next;
    n.chaos = 1;

    /* 200 us: far longer than a signal takes when nothing makes it wait. */
    CUDA_OK(ncclx_probe_signal_race(&n, slot, race, dst_off, src_off, PUT_BYTES, 200000ull, seen,
                                    status));
    CUDA_OK(cudaDeviceSynchronize());
    int st = -1;
    CUDA_OK(cudaMemcpy(&st, status, sizeof(int), cudaMemcpyDeviceToHost));
    assert_int_equal(st, 0);
    CUDA_OK(cudaMemcpy(got, seen, PUT_BYTES, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < PUT_BYTES; i++) {
        if (got[i] != payload[i]) {
            fail_msg("%s race, slot %d: the receiver saw the signal before byte %u of the put "
                     "(0x%02x, want 0x%02x)",
                     race == NCCLX_PROBE_APPLYING ? "applying" : "filling", slot, i, got[i],
                     payload[i]);
        }
    }
    /* Afterwards the put has landed, whoever applied it. */
    CUDA_OK(cudaMemcpy(got, (char *)arena + dst_off, PUT_BYTES, cudaMemcpyDeviceToHost));
    assert_memory_equal(got, payload, PUT_BYTES);

    CUDA_OK(cudaFree(status));
    CUDA_OK(cudaFree(seen));
    CUDA_OK(cudaFree(held_next));
    CUDA_OK(cudaFree(held));
    CUDA_OK(cudaFree(stats));
    CUDA_OK(cudaFree(world));
    CUDA_OK(cudaFree(arena));
}

/* Another warp's flush claimed the put and copies it: the signal waits until it has landed. */
static void test_signal_waits_for_put_being_applied(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        check_race(NCCLX_PROBE_APPLYING);
    }
}

/* Another warp is still writing the slot: the signal waits until it is held, then applies it. */
static void test_signal_waits_for_put_being_held(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        check_race(NCCLX_PROBE_FILLING);
    }
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_waits_for_put_being_applied),
        cmocka_unit_test(test_signal_waits_for_put_being_held),
    };
    printf("seed %u\n", seed);
    srand(seed);
    return cmocka_run_group_tests_name("gpu_net_emu", tests, NULL, NULL);
}
