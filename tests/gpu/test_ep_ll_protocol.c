/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL protocol under long runs and misuse, element by element against the CPU reference:
 *  - arrive counters preset just below the 32-bit wrap (the state after ~16 million launches),
 *    with grids of 132 (a loopback team of 2) and of 264 and 256 blocks (one rank), and grid
 *    sizes that change between launches: exact across the wrap, one block elected per launch
 *    (and the first-block counters of a zero-copy rank alone on its GPU);
 *  - sequence numbers preset where the old 32-bit tag was 0 (it matched a zeroed signal);
 *  - one rank using a different top-k: the others drop its data (NCCLX_EP_ERROR_MISMATCH) and
 *    are exact without it; the group goes on exact afterwards;
 *  - a CUDA error left pending by the application is not taken for a launch failure;
 *  - a receive launch that fails after its send stays in flight and ncclxEpComplete finishes
 *    it (no second send); a routing launch that fails leaves the handle without routing;
 *  - one stream per group: a call on another stream while the group's work is in flight is
 *    refused, and accepted once that work is complete;
 *  - ncclxEpClearAsyncError is stream ordered and clears only what it read.
 * The launch-failure cases replace two launchers at link time (-Wl,--wrap, see gpu_ep.am).
 */
#include <stdio.h>
#include <unistd.h>

#include "ep_group.h"
#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_short.h"

static const ep_case_t em_case = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {0, RM, FP8, 1, 0, BF16, U8, 0, I32, I64, F32, 0};
#define ALL_RANKS_ZC 0xffffu

/* ---- launch failures on demand ---- */

static int fail_next_recv;  /* the next dispatch receive launch fails */
static int fail_next_route; /* the next routing launch fails */

cudaError_t __real_ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream);
cudaError_t __real_ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const void *topk_idx, int idx_int64,
                                            cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const void *topk_idx, int idx_int64,
                                            cudaStream_t stream);

cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream)
{
    if (fail_next_recv) {
        fail_next_recv = 0;
        return cudaErrorLaunchOutOfResources; /* as a launch that could not start would */
    }
    return __real_ncclx_ep_ll_launch_dispatch_recv(g, h, a, stream);
}

cudaError_t __wrap_ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const void *topk_idx, int idx_int64,
                                            cudaStream_t stream)
{
    if (fail_next_route) {
        fail_next_route = 0;
        return cudaErrorLaunchOutOfResources;
    }
    return __real_ncclx_ep_ll_launch_route(g, h, topk_idx, idx_int64, stream);
}

/* ---- helpers ---- */

static void open_team(ep_team_t *t, uint32_t ranks, uint32_t hidden, uint32_t tokens,
                      uint32_t sm_budget)
{
    ep_team_plan(t, ranks < 2 ? 8 : 4 * ranks, 6, hidden, tokens);
    t->group_plan.sm_budget = sm_budget;
    t->group_plan.enable_mask = 1;
    ep_team_open(t, ranks);
}

static void start(ep_run_t *run, ep_team_t *t, const ep_case_t *k)
{
    ep_routing_t rt = ep_routing_default();
    rt.full = 1; /* every rank sends max_tokens: work in every block of the grid */
    ep_run_alloc(run, t, k);
    ep_alloc_arm();
    ep_run_fill(run, &rt);
    ep_run_create(run);
    ep_team_sync(t);
}

static void finish(ep_run_t *run, const char *where)
{
    ep_run_destroy(run);
    ep_team_sync_only(run->team);
    ep_alloc_assert_none(where);
    ep_run_free(run);
}

/* New data and routing, dispatch and combine on every rank, both checked. */
static void iterate(ep_run_t *run)
{
    ep_routing_t rt = ep_routing_default();
    rt.full = 1;
    ep_run_fill(run, &rt);
    ep_run_update(run);
    ep_run_dispatch_and_check(run, 0);
    ep_run_combine_and_check(run, 0);
    ep_team_assert_no_async_error(run->team);
}

static ncclx_ep_dev_state_t read_state(const ep_team_t *t, uint32_t r)
{
    ncclx_ep_dev_state_t s;
    assert_cuda_ok(cudaMemcpy(&s, t->group[r]->desc.state, sizeof(s), cudaMemcpyDeviceToHost));
    return s;
}

static void write_state(const ep_team_t *t, uint32_t r, const ncclx_ep_dev_state_t *s)
{
    assert_cuda_ok(cudaMemcpy(t->group[r]->desc.state, s, sizeof(*s), cudaMemcpyHostToDevice));
}

/* Every rank's four arrive counters at count = base = value (as after many launches). */
static void preset_arrivals(const ep_team_t *t, unsigned value)
{
    ep_team_sync_only(t);
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclx_ep_dev_state_t s = read_state(t, r);
        ncclx_ep_arrive_t *arrive[4] = {&s.dispatch_arrive, &s.combine_arrive, &s.unpack_arrive,
                                        &s.reduce_arrive};
        for (int i = 0; i < 4; i++) {
            arrive[i]->count = arrive[i]->base = value;
        }
        write_state(t, r, &s);
    }
}

/* Every launch elected exactly one block, the last: each counter's base caught up with it. */
static void expect_arrivals_settled(const ep_team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclx_ep_dev_state_t s = read_state(t, r);
        const ncclx_ep_arrive_t *arrive[4] = {&s.dispatch_arrive, &s.combine_arrive,
                                              &s.unpack_arrive, &s.reduce_arrive};
        for (int i = 0; i < 4; i++) {
            if (arrive[i]->count != arrive[i]->base) {
                fail_msg("rank %u: arrive counter %d at %u but its launch started at %u", r, i,
                         arrive[i]->count, arrive[i]->base);
            }
        }
    }
}

static void set_grid(const ep_team_t *t, int blocks)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        t->group[r]->desc.blocks = blocks;
    }
}

/* ---- counter wrap ---- */

/* Presets the counters two dispatch send grids below 2^32 (plus an odd offset, so that the
 * counter is not a multiple of the grid), then runs `iterations` exact iterations.  The send's
 * grid is the group's `blocks` cut to what rank 0's tokens need (both cases dispatch BF16 rows). */
static void across_the_wrap(ep_run_t *run, int blocks, int iterations)
{
    set_grid(run->team, blocks);
    const int send_grid = ncclx_ep_ll_dispatch_send_blocks(
        &run->team->group[0]->desc, (int)run->r[0].num_tokens, (size_t)run->c.hidden * 2);
    const unsigned below = (unsigned)(2 * send_grid + 7);
    preset_arrivals(run->team, 0u - below);
    for (int i = 0; i < iterations; i++) {
        iterate(run);
    }
    expect_arrivals_settled(run->team);
    /* One dispatch send launch per iteration: the counter went through 2^32 and on. */
    const ncclx_ep_dev_state_t s = read_state(run->team, 0);
    assert_true(iterations >= 3); /* 3 grids > 2 grids + 7 blocks: a wrap */
    assert_int_equal(s.dispatch_arrive.count, (unsigned)(iterations * send_grid) - below);
}

static void test_counter_wrap_team_of_2(void **state)
{
    ep_team_t t;
    ep_run_t run;
    (void)state;
    ep_rng_reset("counter_wrap_2");
    open_team(&t, 2, 4096, 64, 132); /* 2 x 132 blocks: co-resident on 132 SMs */
    start(&run, &t, &em_case);
    across_the_wrap(&run, 132, 6);
    /* Grid sizes that change from one launch to the next: no invariant on the grid. */
    set_grid(&t, 7);
    iterate(&run);
    set_grid(&t, 66);
    iterate(&run);
    across_the_wrap(&run, 33, 6);
    finish(&run, "counter wrap, team of 2");
    ep_team_close(&t);
}

static void test_counter_wrap_one_rank(void **state)
{
    ep_team_t t;
    ep_run_t run;
    (void)state;
    ep_rng_reset("counter_wrap_1");
    open_team(&t, 1, 4096, 256, 264);
    start(&run, &t, &rm_case);
    across_the_wrap(&run, 264, 4);
    across_the_wrap(&run, 256, 4);
    finish(&run, "counter wrap, one rank");
    ep_team_close(&t);
}

/* A zero-copy team of one on a real communicator (a rank alone on its GPU: a pulled combine is one
 * receive kernel, signal_in_recv, which reduces this rank's own rows as they lie, reduce_own),
 * the election counters preset below the wrap.  First into the caller's buffers: the send posts
 * its board from the block it elects (board_in_send), and the receive copies the rows with the
 * group's grid.  Every launch elects one block (count and base settle together): the send's
 * first-block counter moves by the send's grid, the dispatch receive's last-block counter by the
 * group's grid and the combine receive's (last_block_local) by its grid per iteration; the
 * combine's first-block counter stays where it is (a team of one signals itself nothing).  Then
 * in place: a team of one receiving in its send (recv_in_send) posts no board, elects no poster
 * and launches no receive, so the board counter and the receive's stay where they are, while the
 * send's last-block counter (the operation ends only after every block has taken its sequence
 * number) and the combine's go on.  Results stay exact. */
static void test_counter_wrap_zero_copy(void **state)
{
    const uint32_t hidden = 4096, tokens = 256;
    const int iterations = 4, in_place = 2;
    ep_team_t t;
    ep_run_t run;
    (void)state;
    ep_rng_reset("counter_wrap_zc");
    ep_team_plan(&t, 8, 6, hidden, tokens);
    t.group_plan.layouts = EM;
    t.group_plan.sm_budget = 264;
    t.group_plan.zero_copy = 1;
    ep_team_open(&t, 1);
    ep_routing_t rt = ep_routing_default();
    rt.full = 1;
    ep_run_alloc(&run, &t, &em_case);
    ep_run_zero_copy(&run, 0, ALL_RANKS_ZC); /* the caller's buffers, combines pulled */
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    const ncclx_ep_ll_group_desc_t *g = &t.group[0]->desc;
    const int send_grid = ncclx_ep_ll_dispatch_send_blocks(g, (int)tokens, (size_t)hidden * 2);
    const int units = (int)(tokens * ((hidden + NCCLX_EP_LL_REDUCE_UNIT_ELEMS - 1) /
                                      NCCLX_EP_LL_REDUCE_UNIT_ELEMS));
    const int warps = NCCLX_EP_THREADS / 32;
    const int recv_grid = units / warps < g->blocks ? (units + warps - 1) / warps : g->blocks;
    const unsigned below = (unsigned)(2 * send_grid + 7);
    ep_team_sync_only(&t);
    ncclx_ep_dev_state_t s = read_state(&t, 0);
    s.board_first.count = s.board_first.base = 0u - below;
    s.signal_first.count = s.signal_first.base = 0u - below;
    s.reduce_arrive.count = s.reduce_arrive.base = 0u - (unsigned)(recv_grid + 3);
    const unsigned unpack_from = s.unpack_arrive.count;
    write_state(&t, 0, &s);
    for (int i = 0; i < iterations; i++) {
        iterate(&run);
    }
    s = read_state(&t, 0);
    assert_int_equal(s.board_first.count, s.board_first.base);
    assert_int_equal(s.board_first.count, (unsigned)(iterations * send_grid) - below);
    assert_int_equal(s.signal_first.count, 0u - below);
    assert_int_equal(s.signal_first.base, 0u - below);
    assert_int_equal(s.reduce_arrive.count, s.reduce_arrive.base);
    assert_int_equal(s.reduce_arrive.count, (unsigned)((iterations - 1) * recv_grid - 3));
    assert_int_equal(s.unpack_arrive.count, s.unpack_arrive.base);
    assert_int_equal(s.unpack_arrive.count - unpack_from, (unsigned)(iterations * g->blocks));
    const ncclx_ep_dev_state_t before = s;
    ep_run_zero_copy(&run, ALL_RANKS_ZC, ALL_RANKS_ZC); /* in place */
    for (int i = 0; i < in_place; i++) {
        iterate(&run);
    }
    s = read_state(&t, 0);
    assert_int_equal(s.board_first.count, before.board_first.count);
    assert_int_equal(s.board_first.base, before.board_first.base);
    assert_int_equal(s.unpack_arrive.count, before.unpack_arrive.count);
    assert_int_equal(s.unpack_arrive.base, before.unpack_arrive.base);
    assert_int_equal(s.dispatch_arrive.count, s.dispatch_arrive.base);
    assert_int_equal(s.dispatch_arrive.count - before.dispatch_arrive.count,
                     (unsigned)(in_place * send_grid));
    assert_int_equal(s.signal_first.count, before.signal_first.count);
    assert_int_equal(s.signal_first.base, before.signal_first.base);
    assert_int_equal(s.reduce_arrive.count, s.reduce_arrive.base);
    assert_int_equal(s.reduce_arrive.count - before.reduce_arrive.count,
                     (unsigned)(in_place * recv_grid));
    assert_true(s.dispatch_seq - before.dispatch_seq == (unsigned long long)in_place);
    assert_true(s.combine_seq - before.combine_seq == (unsigned long long)in_place);
    finish(&run, "counter wrap, zero copy, one rank");
    ep_team_close(&t);
}

/* A zero-copy rank alone on its GPU, in place, its combines pulled, with a batch of `tokens`
 * tokens of 2048 BF16 elements (8 reduce units each), the election counters preset just below
 * the wrap.  Three iterations (every rank full); each counter must end at its preset plus
 * moves[i] per iteration, count and base together, and results stay exact. */
static void run_small_batch_counters(uint32_t tokens, const unsigned moves[5], const char *what)
{
    const uint32_t hidden = 2048;
    const int iterations = 3;
    ep_team_t t;
    ep_run_t run;
    ep_rng_reset(what);
    ep_team_plan(&t, 8, 6, hidden, tokens);
    t.group_plan.layouts = EM;
    t.group_plan.zero_copy = 1;
    ep_team_open(&t, 1);
    ep_run_alloc(&run, &t, &em_case);
    ep_run_zero_copy(&run, ALL_RANKS_ZC, ALL_RANKS_ZC); /* in place, combines pulled */
    ep_alloc_arm();
    ep_routing_t rt = ep_routing_default();
    rt.full = 1;
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    const ncclx_ep_ll_group_desc_t *g = &t.group[0]->desc;
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, (int)tokens, (size_t)hidden * 2), 1);
    assert_true(tokens * (hidden / NCCLX_EP_LL_REDUCE_UNIT_ELEMS) <=
                NCCLX_EP_LL_REDUCE_IN_SEND_UNITS);
    ep_team_sync_only(&t);
    ncclx_ep_dev_state_t s = read_state(&t, 0);
    ncclx_ep_arrive_t *counters[5] = {&s.board_first, &s.dispatch_arrive, &s.unpack_arrive,
                                      &s.combine_arrive, &s.reduce_arrive};
    for (int i = 0; i < 5; i++) {
        counters[i]->count = counters[i]->base = 0u - 1u;
    }
    write_state(&t, 0, &s);
    const ncclx_ep_dev_state_t before = s;
    for (int i = 0; i < iterations; i++) {
        iterate(&run);
    }
    s = read_state(&t, 0);
    /* Each operation ended once: the results of a team of one in place do not depend on its
     * sequence numbers, so only these say that one block, and one only, ended each. */
    assert_true(s.dispatch_seq - before.dispatch_seq == (unsigned long long)iterations);
    assert_true(s.combine_seq - before.combine_seq == (unsigned long long)iterations);
    for (int i = 0; i < 5; i++) {
        const unsigned want = 0u - 1u + (unsigned)iterations * moves[i];
        if (counters[i]->count != want || counters[i]->base != want) {
            fail_msg("%s: counter %d at %u (base %u), expected %u", what, i, counters[i]->count,
                     counters[i]->base, want);
        }
    }
    finish(&run, what);
    ep_team_close(&t);
}

/* 2 tokens: every kernel of an iteration is a grid of one block (the send cut to its 2 units,
 * which also receives, as a team of one receiving in place does, and the pulled combine's send
 * that reduces its own 16 units, a warp each), and a grid of one block takes no ticket: its
 * first and last block are itself (dev_sync.cuh).  No counter moves. */
static void test_one_block_grids(void **state)
{
    static const unsigned none[5] = {0, 0, 0, 0, 0};
    (void)state;
    run_small_batch_counters(2, none, "one-block grids");
}

/* 4 tokens: the pulled combine that reduces its own 32 units (reduce_own) is a grid of two
 * blocks, a warp a unit, whose last block, elected on the send's counter, ends the operation:
 * that counter moves by 2 an iteration, across the wrap, and nothing else moves. */
static void test_own_reduce_grid(void **state)
{
    static const unsigned combine_send_only[5] = {0, 0, 0, 2, 0};
    (void)state;
    run_small_batch_counters(4, combine_send_only, "own reduce over two blocks");
}

/* ---- sequence tag 0 ---- */

/* Sequence numbers where (sequence + 1) mod 2^32 is 0: the old tag 0 matched the zeroed
 * signals of a fresh group, so receivers read buffers nobody had written. */
static void test_sequence_tag_never_zero(void **state)
{
    ep_team_t t;
    ep_run_t run;
    (void)state;
    ep_rng_reset("sequence_tag");
    open_team(&t, 4, 1024, 32, 0);
    ep_run_alloc(&run, &t, &em_case);
    ep_alloc_arm();
    for (uint32_t r = 0; r < t.ranks; r++) {
        ncclx_ep_dev_state_t s = read_state(&t, r);
        s.dispatch_seq = s.combine_seq = 0xffffffffull;
        write_state(&t, r, &s);
    }
    {
        ep_routing_t rt = ep_routing_default();
        ep_run_fill(&run, &rt);
        ep_run_create(&run);
        ep_team_sync(&t);
    }
    for (int i = 0; i < 4; i++) {
        iterate(&run);
    }
    const ncclx_ep_dev_state_t s = read_state(&t, 0);
    assert_true(s.dispatch_seq == 0xffffffffull + 4);
    finish(&run, "sequence tag");
    ep_team_close(&t);
}

/* ---- per-operation agreement ---- */

/* One rank (drawn) runs every operation with case kb, the others with ka: every rank drops the
 * odd one's data and reports NCCLX_EP_ERROR_MISMATCH, the others' results are exact without
 * it; after a clear of the error word all agree again. */
static void mismatch_case(const ep_case_t *ka, const ep_case_t *kb, const char *name)
{
    ep_team_t t;
    ep_run_t a, b;
    ep_routing_t rt = ep_routing_default();
    ep_rng_reset(name);
    open_team(&t, 4, 1024, 32, 0);
    const uint32_t odd = ep_rand_below(4), bit = 1u << odd, all = 0xf;
    ep_run_alloc(&a, &t, ka);
    ep_run_alloc(&b, &t, kb);
    ep_alloc_arm();
    a.masked = bit; /* the others' reference: without the odd rank */
    ep_run_fill(&a, &rt);
    ep_run_fill(&b, &rt);
    ep_run_create(&a);
    ep_run_create(&b);
    ep_team_sync(&t);
    a.absent = bit;
    b.absent = all & ~bit;
    ep_run_poison_dispatch(&a);
    ep_run_poison_combine(&a);
    ep_run_enqueue_dispatch(&a, 0);
    ep_run_enqueue_dispatch(&b, 0);
    ep_run_enqueue_combine(&a, 0);
    ep_run_enqueue_combine(&b, 0);
    ep_team_sync_only(&t);
    ep_run_check_dispatch(&a);
    ep_run_check_combine(&a);
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint32_t error = 0;
        assert_ncclx_ok(ncclxEpGetAsyncError(t.group[r], &error));
        if (error != NCCLX_EP_ERROR_MISMATCH) {
            fail_msg("%s: rank %u: async error 0x%x, want NCCLX_EP_ERROR_MISMATCH", name, r, error);
        }
        assert_ncclx_ok(ncclxEpClearAsyncError(t.group[r], t.stream[r]));
    }
    ep_team_sync_only(&t);
    /* Nothing was masked and nobody got out of step: all four agree again. */
    a.masked = 0;
    a.absent = 0;
    for (int i = 0; i < 3; i++) {
        iterate(&a);
    }
    ep_run_destroy(&b);
    finish(&a, name);
    ep_run_free(&b);
    ep_team_close(&t);
}

/* The odd rank dispatches and combines with top-4, the others with top-6. */
static void test_mismatched_topk(void **state)
{
    const ep_case_t k6 = {6, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t k4 = {4, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    (void)state;
    mismatch_case(&k6, &k4, "mismatched top-k");
}

/* QUANT_FWD: the odd rank's scale rows differ in size (6 against 7 bytes), or only in their
 * dtype (8 bytes of FP8 against 8 of UINT8): both are in the operation word. */
static void test_mismatched_scales(void **state)
{
    const ep_case_t q7 = {0, RM, QFWD, 0, 1, E4M3, U8, 7, I32, I64, BF16, 0};
    const ep_case_t q6 = {0, RM, QFWD, 0, 1, E4M3, U8, 6, I32, I64, BF16, 0};
    const ep_case_t q8 = {0, RM, QFWD, 0, 1, E4M3, U8, 8, I32, I64, BF16, 0};
    const ep_case_t q8_fp8 = {0, RM, QFWD, 0, 1, E4M3, E4M3, 8, I32, I64, BF16, 0};
    (void)state;
    mismatch_case(&q7, &q6, "mismatched scale row bytes");
    mismatch_case(&q8, &q8_fp8, "mismatched scale dtype");
}

/* ---- launches ---- */

/* A CUDA error left pending by the application: the library's calls still succeed. */
static void test_stale_cuda_error(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int count = 0;
    (void)state;
    ep_rng_reset("stale_cuda_error");
    open_team(&t, 2, 1024, 32, 0);
    start(&run, &t, &em_case);
    assert_cuda_ok(cudaGetDeviceCount(&count));
    assert_int_not_equal(cudaSetDevice(count + 7), cudaSuccess); /* leaves an error pending */
    iterate(&run);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    finish(&run, "stale CUDA error");
    ep_team_close(&t);
}

static void test_failed_launches(void **state)
{
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("failed_launches");
    open_team(&t, 2, 1024, 32, 0);
    start(&run, &t, &em_case);
    ep_run_fill(&run, &rt);
    ep_run_update(&run);
    ep_run_poison_dispatch(&run);
    ep_team_sync_only(&t);
    /* Rank 0's receive fails to launch after its send ran. */
    fail_next_recv = 1;
    ncclxEpDispatchArgs_t a0 = ep_dispatch_args(&run, 0, 0);
    ncclxEpDispatchArgs_t a1 = ep_dispatch_args(&run, 1, 0);
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a0, t.stream[0]), ncclxCudaError,
                       "stays in flight (its peers wait for it): call ncclxEpComplete to retry it");
    assert_ncclx_ok(ncclxEpDispatch(run.handle[1], &a1, t.stream[1]));
    /* Not sent twice: a new dispatch is refused while the operation is in flight. */
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a0, t.stream[0]), ncclxInvalidUsage,
                       "in flight");
    assert_ncclx_ok(ncclxEpComplete(run.handle[0], t.stream[0]));
    ep_team_sync(&t);
    ep_run_check_dispatch(&run);
    ep_run_combine_and_check(&run, 0);
    /* A routing launch that fails: the handle has no routing until an update succeeds. */
    ep_run_fill(&run, &rt);
    a0 = ep_dispatch_args(&run, 0, 0);
    fail_next_route = 1;
    ncclxTensor_t idx = ep_idx_tensor(&run, 0);
    assert_ncclx_error(ncclxEpHandleUpdate(run.handle[0], &idx, t.stream[0]), ncclxCudaError,
                       "ncclxEpHandleUpdate: the LL routing launch failed");
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a0, t.stream[0]), ncclxInvalidUsage,
                       "has no routing");
    ep_run_update(&run);
    ep_run_dispatch_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    ep_team_assert_no_async_error(&t);
    finish(&run, "failed launches");
    ep_team_close(&t);
}

static void CUDART_CB hold_stream(void *microseconds)
{
    usleep(*(const useconds_t *)microseconds);
}

/* One stream per group: rank 0's group has work in flight on its stream; a call on another
 * stream is refused until that work is complete. */
static void test_one_stream_per_group(void **state)
{
    ep_team_t t;
    ep_run_t run;
    cudaStream_t other;
    useconds_t hold_us = 200000;
    (void)state;
    ep_rng_reset("one_stream");
    open_team(&t, 2, 1024, 32, 0);
    start(&run, &t, &em_case);
    assert_cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    ncclxTensor_t idx = ep_idx_tensor(&run, 0);
    assert_cuda_ok(cudaLaunchHostFunc(t.stream[0], hold_stream, &hold_us));
    assert_ncclx_ok(ncclxEpHandleUpdate(run.handle[0], &idx, t.stream[0]));
    assert_ncclx_error(ncclxEpHandleUpdate(run.handle[0], &idx, other), ncclxInvalidUsage,
                       "a group runs on one stream");
    ncclxEpDispatchArgs_t a0 = ep_dispatch_args(&run, 0, 0);
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a0, other), ncclxInvalidUsage,
                       "a group runs on one stream");
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    /* Known complete: the group may move to the other stream, and back once that is idle. */
    assert_ncclx_ok(ncclxEpHandleUpdate(run.handle[0], &idx, other));
    assert_cuda_ok(cudaStreamSynchronize(other));
    ep_run_update(&run);
    ep_run_dispatch_and_check(&run, 1); /* send_only + complete on each rank's stream */
    ep_run_combine_and_check(&run, 0);
    ep_team_assert_no_async_error(&t);
    assert_cuda_ok(cudaStreamDestroy(other));
    finish(&run, "one stream per group");
    ep_team_close(&t);
}

/* The clear is stream ordered and clears what it read: a timeout reported by an operation
 * enqueued before it on the same stream survives it. */
static void test_clear_is_stream_ordered(void **state)
{
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    uint32_t error = 0;
    (void)state;
    ep_rng_reset("clear_ordered");
    ep_team_plan(&t, 8, 6, 1024, 32);
    t.group_plan.enable_mask = 1;
    t.group_plan.timeout_ns = 100000000ull;
    ep_team_open(&t, 2);
    start(&run, &t, &em_case);
    rt.bad_ranks = 0x1; /* rank 0 routes out-of-range ids: NCCLX_EP_ERROR_BAD_EXPERT */
    ep_run_fill(&run, &rt);
    ep_run_update(&run);
    ep_team_sync_only(&t);
    assert_ncclx_ok(ncclxEpGetAsyncError(t.group[0], &error));
    assert_int_equal(error, NCCLX_EP_ERROR_BAD_EXPERT);
    /* Rank 1 stays away: rank 0's dispatch times out 100 ms from now. */
    ncclxEpDispatchArgs_t a0 = ep_dispatch_args(&run, 0, 0);
    assert_ncclx_ok(ncclxEpDispatch(run.handle[0], &a0, t.stream[0]));
    assert_ncclx_ok(ncclxEpClearAsyncError(t.group[0], t.stream[0]));
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    assert_ncclx_ok(ncclxEpGetAsyncError(t.group[0], &error));
    assert_int_equal(error, NCCLX_EP_ERROR_TIMEOUT);
    assert_ncclx_ok(ncclxEpClearAsyncError(t.group[0], t.stream[0]));
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    assert_ncclx_ok(ncclxEpGetAsyncError(t.group[0], &error));
    assert_int_equal(error, 0);
    finish(&run, "clear is stream ordered");
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_wrap_team_of_2),
        cmocka_unit_test(test_counter_wrap_one_rank),
        cmocka_unit_test(test_counter_wrap_zero_copy),
        cmocka_unit_test(test_one_block_grids),
        cmocka_unit_test(test_own_reduce_grid),
        cmocka_unit_test(test_sequence_tag_never_zero),
        cmocka_unit_test(test_mismatched_topk),
        cmocka_unit_test(test_mismatched_scales),
        cmocka_unit_test(test_stale_cuda_error),
        cmocka_unit_test(test_failed_launches),
        cmocka_unit_test(test_one_stream_per_group),
        cmocka_unit_test(test_clear_is_stream_ordered),
    };
    ep_seed_init("test_ep_ll_protocol");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
