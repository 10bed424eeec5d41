/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N across load/store domains, on loopback teams shaped as emulated nodes
 * (ncclxLoopbackInitConfig; the machinery: tests/gpu/m2n_harness.h).  Every destination byte is
 * checked against the mesh rules, and the emulated network's counters against what must cross:
 *  - trainer nodes -> generator nodes (the refit: no source on a destination's node) on 2x2,
 *    2x4, 4x2 and 8x1, cross-dim: every destination byte crosses exactly once, plus the votes;
 *  - a reshard inside one node: nothing but the votes crosses;
 *  - source replicas on several nodes: a replica on the destination's node serves it, so
 *    only the bytes no replica on its node holds cross (the least possible);
 *  - 16 KiB of staging per rank (hundreds of rounds through the network signals) with the
 *    emulator holding unsignalled puts back and a 20 us delay per signal;
 *  - a group of two tensors captured on every rank and replayed 20 times, without allocating.
 * The rest of M2N's behaviour across nodes: test_m2n and test_m2n_faults with TEST_NODES
 * (tests/gpu/run_m2n_nodes.sh).  TEST_SEED=n replays a run; TEST_FILTER picks tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "alloc_counter.h"
#include "m2n_harness.h"

/* Payload bytes every rank of t has put to other nodes so far (the emulator's counters). */
static uint64_t net_bytes(const team_t *t)
{
    uint64_t sum = 0;
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclxNetStats_t s = NCCLX_NET_STATS_INIT;
        assert_ncclx_ok(ncclxContextGetNetStats(t->ctx[r], &s));
        assert_int_equal(s.kind, t->nodes > 1 ? NCCLX_NET_KIND_EMULATED : NCCLX_NET_KIND_NONE);
        sum += s.bytes;
    }
    return sum;
}

/* The vote words of one launch: every rank puts 8 bytes to every rank of another node. */
static uint64_t vote_bytes(const team_t *t)
{
    const uint32_t per_node = t->ranks / t->nodes;
    return (uint64_t)t->ranks * (t->ranks - per_node) * 8u;
}

static uint64_t global_bytes(const side_t *s)
{
    return s->global[0] * s->global[1] * s->global[2] * s->elem;
}

/* Destination bytes in all: the most that may cross (each once). */
static uint64_t dst_bytes(const team_t *t, const tiles_t *tl)
{
    uint64_t sum = 0;
    for (uint32_t r = 0; r < t->ranks; r++) {
        sum += tl->dev[1][r] != NULL ? tl->bytes[1] : 0;
    }
    return sum;
}

/* Destination bytes that no source rank of the destination's own node holds: the least that
 * must cross. */
static uint64_t least_bytes(const team_t *t, const tensor_t *x, const tiles_t *tl)
{
    const uint32_t per_node = t->ranks / t->nodes;
    const uint64_t g = global_bytes(&x->src);
    uint8_t *held = malloc(g);
    uint64_t least = 0;
    assert_non_null(held);
    for (uint32_t node = 0; node < t->nodes; node++) {
        memset(held, 0, g);
        for (uint32_t s = node * per_node; s < (node + 1) * per_node; s++) {
            for (uint64_t i = 0; tl->dev[0][s] != NULL && i < tl->bytes[0]; i++) {
                held[tl->globals[0][s][i]] = 1;
            }
        }
        for (uint32_t d = node * per_node; d < (node + 1) * per_node; d++) {
            for (uint64_t i = 0; tl->dev[1][d] != NULL && i < tl->bytes[1]; i++) {
                least += held[tl->globals[1][d][i]] == 0;
            }
        }
    }
    free(held);
    return least;
}

/* Three versions of x, each one call on every rank, checked byte for byte; the payload that
 * crossed per call must lie in [least, most] (plus the votes), the same every time. */
static void run_counted(uint32_t ranks, uint32_t nodes, uint64_t staging, const tensor_t *x,
                        int exact_least, const char *what)
{
    team_t t;
    tiles_t tl;
    uint64_t crossed_first = 0;
    team_open_shaped(&t, ranks, nodes, staging);
    tiles_alloc(&t, x, &tl);
    const uint64_t least = least_bytes(&t, x, &tl), most = dst_bytes(&t, &tl);
    for (int it = 0; it < 3; it++) {
        uint8_t *keep[2 * MAX_RANKS];
        int kept = 0;
        const uint64_t salt = rnd();
        upload(&t, &tl, salt, keep, &kept);
        team_sync(&t);
        const uint64_t before = net_bytes(&t);
        ncclx_test_alloc_arm();
        reshard_all(&t, x, &tl, 1);
        assert_int_equal(ncclx_test_alloc_disarm(), 0);
        team_sync(&t);
        const uint64_t crossed = net_bytes(&t) - before - vote_bytes(&t);
        check(&t, &tl, salt, 1, what);
        if (crossed < least || crossed > most || (exact_least && crossed != least)) {
            fail_msg("%s: %llu payload bytes crossed, expected %s%llu%s%llu", what,
                     (unsigned long long)crossed, exact_least ? "exactly " : "between ",
                     (unsigned long long)least, exact_least ? "" : " and ",
                     exact_least ? 0ull : (unsigned long long)most);
        }
        if (it > 0) {
            assert_int_equal(crossed, crossed_first);
        }
        crossed_first = crossed;
        for (int i = 0; i < kept; i++) {
            free(keep[i]);
        }
    }
    for (uint32_t r = 0; r < ranks; r++) {
        uint32_t err = 1;
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
    }
    team_close(&t);
    tiles_free(&tl);
    printf("# %s: %u ranks on %u nodes, exact; %llu bytes crossed (least %llu, most %llu) + %llu "
           "of votes\n",
           what, ranks, nodes, (unsigned long long)crossed_first, (unsigned long long)least,
           (unsigned long long)most, (unsigned long long)vote_bytes(&t));
}

/* The refit: a trainer on the first half of the nodes, sharded on rows, to a generator on the
 * other half, sharded on columns.  No destination has a source on its node: every byte crosses
 * exactly once. */
static void test_trainer_to_generator(void **state)
{
    static const struct {
        uint32_t nodes, ranks;
    } shapes[] = {{2, 4}, {2, 8}, {4, 8}, {8, 8}};
    const uint64_t g[3] = {192, 320, 1};
    (void)state;
    rng_reset("trainer_to_generator");
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const uint32_t half = shapes[i].ranks / 2;
        char name[96];
        tensor_t x = tensor(side1(2, g, 2, half, 0, 0), side1(2, g, 2, half, half, 1));
        snprintf(name, sizeof(name), "%ux%u trainer S0 -> generator S1", shapes[i].nodes,
                 shapes[i].ranks / shapes[i].nodes);
        run_counted(shapes[i].ranks, shapes[i].nodes, STAGING, &x, 1, name);
    }
}

/* Both meshes on one node (ranks 0-1 -> 2-3 of a 2x4 team; ranks 4-7 on the other node
 * take no part but still vote): nothing but the votes crosses. */
static void test_inside_nodes(void **state)
{
    const uint64_t g[3] = {256, 96, 1};
    (void)state;
    rng_reset("inside_nodes");
    tensor_t x = tensor(side1(2, g, 4, 2, 0, 0), side1(2, g, 4, 2, 2, 1));
    run_counted(8, 2, STAGING, &x, 1, "2x4 S0 on ranks 0-1 -> S1 on ranks 2-3");
}

/* Source replicas on both nodes: a destination is served by a replica on its own node when
 * one holds its bytes (ncclx_m2n_serving_replica), so only what no replica on its node holds
 * crosses: here nothing but the votes. */
static void test_replicas_on_both_nodes(void **state)
{
    const uint64_t g[3] = {128, 160, 1};
    (void)state;
    rng_reset("replicas");
    /* [R2 x S2] on ranks 2-5 (replica 0 on node 0, replica 1 on node 1) -> S1 on ranks 6-7
     * (node 1): replica 1 serves (the block rule alone would pick replica 0, across). */
    tensor_t x = tensor(side2(2, g, 2, 2, 2, 2, -1, 0), side1(2, g, 2, 2, 6, 1));
    run_counted(8, 2, STAGING, &x, 1, "2x4 [R2 x S0] on ranks 2-5 -> S1 on ranks 6-7");
    /* Replicated on ranks 3 (node 0) and 4 (node 1) -> 3 replicas on ranks 5-7 (node 1): rank 4
     * serves all three (the block rule would send two of them from rank 3). */
    x = tensor(side1(2, g, 2, 2, 3, -1), side1(2, g, 2, 3, 5, -1));
    run_counted(8, 2, STAGING, &x, 1, "2x4 R on ranks 3-4 -> R on ranks 5-7");
    /* Replicas on ranks 0-1 (node 0) and 2-3 (node 1) of a 4x2 team -> S0 over ranks 4-7
     * (nodes 2 and 3): no replica on a destination's node, every byte crosses once. */
    x = tensor(side2(2, g, 2, 2, 2, 0, -1, 1), side1(2, g, 2, 4, 4, 0));
    run_counted(8, 4, STAGING, &x, 1, "4x2 [R2 x S1] on ranks 0-3 -> S0 on ranks 4-7");
}

/* The smallest staging (one channel of 4 KiB rounds: a 480 KiB tile takes over a hundred of
 * them through the network signals), with unsignalled puts held back and a 20 us delay per
 * signal. */
static void test_rounds_chaos(void **state)
{
    const uint64_t g[3] = {384, 640, 1};
    (void)state;
    rng_reset("rounds_chaos");
    tensor_t x = tensor(side1(2, g, 4, 2, 0, 0), side1(2, g, 4, 2, 2, 1));
    run_tensors_shaped(4, 2, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1,
                       "2x2 16 KiB staging per rank, S0 -> S1");
    assert_int_equal(setenv("NCCLX_NET_EMU_CHAOS", "1", 1), 0);
    assert_int_equal(setenv("NCCLX_NET_EMU_DELAY_NS", "20000", 1), 0);
    run_tensors_shaped(4, 2, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1,
                       "2x2 16 KiB staging per rank, S0 -> S1, chaos, 20 us per signal");
    x = tensor(side1(2, g, 4, 4, 0, 1), side2(2, g, 4, 2, 2, 4, -1, 0));
    run_tensors_shaped(8, 2, 1u << 20, &x, 1, "2x4 S1 -> [R2 x S0], 8 channels, chaos");
    assert_int_equal(unsetenv("NCCLX_NET_EMU_CHAOS"), 0);
    assert_int_equal(unsetenv("NCCLX_NET_EMU_DELAY_NS"), 0);
}

/* A group of two tensors captured on every rank of a 2x4 team and replayed 20 times on new
 * data, without an allocation; every replay moves the same bytes across. */
static void test_group_graph_replay(void **state)
{
    const uint64_t g[3] = {96, 160, 1};
    tensor_t x[2];
    team_t t;
    tiles_t tl[2];
    cudaGraph_t graph[MAX_RANKS];
    cudaGraphExec_t exec[MAX_RANKS];
    uint64_t crossed_first = 0;
    (void)state;
    rng_reset("group_graph");
    x[0] = tensor(side1(2, g, 2, 4, 0, 0), side1(2, g, 2, 4, 4, 1));
    x[1] = tensor(side2(2, g, 4, 2, 2, 4, -1, 1), side1(2, g, 4, 4, 0, -1));
    team_open_shaped(&t, 8, 2, STAGING);
    tiles_alloc(&t, &x[0], &tl[0]);
    tiles_alloc(&t, &x[1], &tl[1]);
    ncclx_test_alloc_arm();
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamBeginCapture(t.stream[r], cudaStreamCaptureModeThreadLocal),
                         cudaSuccess);
    }
    reshard_all(&t, x, tl, 2);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamEndCapture(t.stream[r], &graph[r]), cudaSuccess);
    }
    assert_int_equal(ncclx_test_alloc_disarm(), 0);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
    }
    for (int replay = 0; replay < 20; replay++) {
        uint8_t *keep[4 * MAX_RANKS];
        int kept = 0;
        const uint64_t salt = rnd();
        upload(&t, &tl[0], salt, keep, &kept);
        upload(&t, &tl[1], salt + 1, keep, &kept);
        team_sync(&t);
        const uint64_t before = net_bytes(&t);
        for (uint32_t r = 0; r < t.ranks; r++) {
            assert_int_equal(cudaGraphLaunch(exec[r], t.stream[r]), cudaSuccess);
        }
        team_sync(&t);
        const uint64_t crossed = net_bytes(&t) - before;
        check(&t, &tl[0], salt, 1, "2x4 group replay, tensor 0");
        check(&t, &tl[1], salt + 1, 1, "2x4 group replay, tensor 1");
        assert_true(crossed > vote_bytes(&t));
        if (replay > 0) {
            assert_int_equal(crossed, crossed_first);
        }
        crossed_first = crossed;
        for (int i = 0; i < kept; i++) {
            free(keep[i]);
        }
    }
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint32_t err = 1;
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
        assert_int_equal(cudaGraphExecDestroy(exec[r]), cudaSuccess);
        assert_int_equal(cudaGraphDestroy(graph[r]), cudaSuccess);
    }
    team_close(&t);
    tiles_free(&tl[0]);
    tiles_free(&tl[1]);
    printf("# 2x4 group of 2 captured, 20 replays exact, %llu bytes crossed per replay\n",
           (unsigned long long)crossed_first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trainer_to_generator),   cmocka_unit_test(test_inside_nodes),
        cmocka_unit_test(test_replicas_on_both_nodes), cmocka_unit_test(test_rounds_chaos),
        cmocka_unit_test(test_group_graph_replay),
    };
    return ncclx_run_tests("gpu_m2n_nodes", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
