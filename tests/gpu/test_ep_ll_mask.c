/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL active masks on loopback teams of 4 and 8 ranks:
 *  - dead rank: rank k enqueues nothing; the survivors return within the timeout plus a
 *    margin, every survivor's mask shows k = 0, the async error is TIMEOUT, dispatch and
 *    combine equal the reference without k, and the next iterations take no wait for k;
 *  - recovery: every rank (k too) cleans, clears the error, and the next iterations are exact
 *    again; three cycles per process with a different dead rank each time;
 *  - slow rank: k enqueues late but within the timeout: not masked, exact;
 *  - update by hand: every rank masks a healthy k, the group skips it (no timeout), clean
 *    re-admits it;
 *  - a mask query captured in a CUDA graph reports the current mask at each replay;
 *  - a group without a mask: a timeout sets the error bit and the next call fails.
 * Allocation counters stay at zero from the end of buffer allocation to the end of each test.
 * Prints how long survivors took to return after a rank stopped, per timeout setting.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_short.h"

static const ep_case_t em_case = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {0, RM, NONE, 0, 0, BF16, U8, 0, I32, I64, F32, 0};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void open_team(ep_team_t *t, uint32_t ranks, uint64_t timeout_ms, uint32_t enable_mask)
{
    ep_team_plan(t, 4 * ranks, 6, 512, 32);
    t->group_plan.enable_mask = enable_mask;
    t->group_plan.timeout_ns = timeout_ms * 1000000ull;
    ep_team_open(t, ranks);
}

/* Every rank in `who` queries its mask into `d_mask` (device int32[R] per rank): entry r must
 * be 0 exactly for the ranks in `masked`. */
static void expect_mask(const ep_team_t *t, int32_t *const d_mask[], uint32_t who, uint32_t masked)
{
    int32_t got[EP_MAX_RANKS];
    for (uint32_t r = 0; r < t->ranks; r++) {
        if (!((who >> r) & 1u)) {
            continue;
        }
        ncclxTensor_t m = ep_tensor(d_mask[r], I32, 1, t->ranks, 0, 0);
        assert_cuda_ok(cudaMemsetAsync(d_mask[r], 0x7f, t->ranks * sizeof(int32_t), t->stream[r]));
        assert_ncclx_ok(ncclxEpMaskQuery(t->group[r], &m, t->stream[r]));
        assert_cuda_ok(cudaMemcpyAsync(got, d_mask[r], t->ranks * sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, t->stream[r]));
        assert_cuda_ok(cudaStreamSynchronize(t->stream[r]));
        for (uint32_t s = 0; s < t->ranks; s++) {
            int32_t want = (masked >> s) & 1u ? 0 : 1;
            if (got[s] != want) {
                fail_msg("rank %u: mask[%u] = %d, want %d", r, s, got[s], want);
            }
        }
    }
}

static void expect_async(const ep_team_t *t, uint32_t who, uint32_t want)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        uint32_t error = 0;
        if ((who >> r) & 1u) {
            assert_ncclx_ok(ncclxEpGetAsyncError(t->group[r], &error));
            if (error != want) {
                fail_msg("rank %u: async error 0x%x, want 0x%x", r, error, want);
            }
        }
    }
}

/* Buffers for case k on team t, allocation counting armed, first data, handles created. */
static void start_run(ep_run_t *run, ep_team_t *t, const ep_case_t *k)
{
    ep_routing_t rt = ep_routing_default();
    ep_run_alloc(run, t, k);
    ep_alloc_arm();
    ep_run_fill(run, &rt);
    ep_run_create(run);
    ep_team_sync(t);
}

/* Handles destroyed, nothing allocated since start_run, buffers freed. */
static void finish_run(ep_run_t *run, ep_team_t *t, const char *where)
{
    ep_run_destroy(run);
    ep_team_sync_only(t);
    ep_alloc_assert_none(where);
    ep_run_free(run);
}

/* Fresh data for `masked` (reference without those ranks), rerouted handles. */
static void refill(ep_run_t *run, uint32_t masked, uint32_t absent)
{
    ep_routing_t rt = ep_routing_default();
    run->masked = masked;
    run->absent = 0; /* every rank routes: a rank dies between its routing and its dispatch */
    ep_run_fill(run, &rt);
    ep_run_update(run);
    ep_team_sync_only(run->team);
    run->absent = absent;
}

/* Dispatch and combine on every rank not absent; returns the milliseconds until all of them
 * returned, after checking the ranks not masked against the reference. */
static double iterate(ep_run_t *run)
{
    double start;
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    ep_team_sync_only(run->team);
    start = now_ms();
    ep_run_enqueue_dispatch(run, 0);
    ep_run_enqueue_combine(run, 0);
    ep_team_sync_only(run->team);
    double ms = now_ms() - start;
    ep_run_check_dispatch(run);
    ep_run_check_combine(run);
    return ms;
}

static void clean_all(ep_team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpMaskClean(t->group[r], t->stream[r]));
    }
    ep_team_sync_only(t);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpClearAsyncError(t->group[r]));
    }
}

static void alloc_masks(const ep_team_t *t, int32_t *d_mask[])
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaMalloc((void **)&d_mask[r], EP_MAX_RANKS * sizeof(int32_t)));
    }
}

static void free_masks(const ep_team_t *t, int32_t *d_mask[])
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaFree(d_mask[r]));
    }
}

static void dead_rank_cycles(uint32_t ranks, uint64_t timeout_ms, const ep_case_t *k)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    const uint32_t all = (1u << ranks) - 1;
    open_team(&t, ranks, timeout_ms, 1);
    alloc_masks(&t, d_mask);
    start_run(&run, &t, k);
    iterate(&run);
    for (int cycle = 0; cycle < 3; cycle++) {
        const uint32_t dead = ep_rand_below(ranks), bit = 1u << dead;
        /* Rank `dead` stops before its dispatch. */
        refill(&run, bit, bit);
        double ms = iterate(&run);
        printf("# %u ranks, timeout %llu ms: rank %u stopped, survivors returned after %.1f ms\n",
               ranks, (unsigned long long)timeout_ms, dead, ms);
        if (ms < 0.9 * (double)timeout_ms || ms > (double)timeout_ms + 1000.0) {
            fail_msg("survivors returned after %.1f ms; the timeout is %llu ms", ms,
                     (unsigned long long)timeout_ms);
        }
        expect_async(&t, all & ~bit, NCCLX_EP_ERROR_TIMEOUT);
        expect_mask(&t, d_mask, all & ~bit, bit);
        /* Later iterations skip the dead rank without waiting for it. */
        for (int i = 0; i < 3; i++) {
            refill(&run, bit, bit);
            ms = iterate(&run);
            if (ms > 0.5 * (double)timeout_ms) {
                fail_msg("iteration %d after the timeout took %.1f ms: it waited for rank %u", i,
                         ms, dead);
            }
        }
        expect_mask(&t, d_mask, all & ~bit, bit);
        /* Recovery: every rank, the dead one too, cleans; then exact again. */
        run.absent = 0;
        clean_all(&t);
        expect_mask(&t, d_mask, all, 0);
        expect_async(&t, all, 0);
        for (int i = 0; i < 2; i++) {
            refill(&run, 0, 0);
            iterate(&run);
            ep_team_assert_no_async_error(&t);
        }
    }
    finish_run(&run, &t, "dead rank cycles");
    free_masks(&t, d_mask);
    ep_team_close(&t);
}

static void test_dead_rank_4(void **state)
{
    (void)state;
    ep_rng_reset("dead_rank_4");
    dead_rank_cycles(4, 200, &em_case);
    dead_rank_cycles(4, 200, &rm_case);
}

static void test_dead_rank_8(void **state)
{
    (void)state;
    ep_rng_reset("dead_rank_8");
    dead_rank_cycles(8, 1000, &em_case);
    dead_rank_cycles(8, 200, &rm_case);
}

/* Rank k enqueues 100 ms after the others, well within a 5 s timeout. */
static void test_slow_rank(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("slow_rank");
    open_team(&t, 4, 5000, 1);
    alloc_masks(&t, d_mask);
    for (int l = 0; l < 2; l++) {
        start_run(&run, &t, l == 0 ? &em_case : &rm_case);
        const uint32_t slow = ep_rand_below(4);
        ep_run_poison_dispatch(&run);
        ep_run_poison_combine(&run);
        ep_team_sync_only(&t);
        run.absent = 1u << slow;
        ep_run_enqueue_dispatch(&run, 0);
        ep_run_enqueue_combine(&run, 0);
        usleep(100000);
        ncclxEpDispatchArgs_t a = ep_dispatch_args(&run, slow, 0);
        ncclxEpCombineArgs_t c = ep_combine_args(&run, slow, 0);
        assert_ncclx_ok(ncclxEpDispatch(run.handle[slow], &a, t.stream[slow]));
        assert_ncclx_ok(ncclxEpCombine(run.handle[slow], &c, t.stream[slow]));
        run.absent = 0;
        ep_team_sync(&t); /* no asynchronous error */
        ep_run_check_dispatch(&run);
        ep_run_check_combine(&run);
        expect_mask(&t, d_mask, 0xf, 0);
        finish_run(&run, &t, "slow rank");
    }
    free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* Every rank masks a healthy rank k by hand: the group skips k at once (no timeout, no error)
 * and k itself exchanges nothing; a clean brings k back. */
static void test_update_by_hand(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    int32_t host_mask[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("update_by_hand");
    open_team(&t, 4, 5000, 1);
    alloc_masks(&t, d_mask);
    start_run(&run, &t, &em_case);
    const uint32_t k = ep_rand_below(4);
    for (uint32_t r = 0; r < 4; r++) {
        host_mask[r] = r == k ? 0 : 1;
    }
    for (uint32_t r = 0; r < 4; r++) {
        assert_ncclx_ok(ncclxEpMaskUpdate(t.group[r], host_mask, 4, t.stream[r]));
    }
    expect_mask(&t, d_mask, 0xf, 1u << k);
    for (int i = 0; i < 3; i++) {
        refill(&run, 1u << k, 0); /* k still calls dispatch and combine */
        double ms = iterate(&run);
        if (ms > 2500.0) {
            fail_msg("a masked rank was waited for (%.1f ms)", ms);
        }
        ep_team_assert_no_async_error(&t);
    }
    /* A combine needs a dispatch after a mask change. */
    clean_all(&t);
    {
        ncclxEpCombineArgs_t c = ep_combine_args(&run, 0, 0);
        assert_ncclx_error(ncclxEpCombine(run.handle[0], &c, t.stream[0]), ncclxInvalidUsage,
                           "no completed dispatch");
    }
    expect_mask(&t, d_mask, 0xf, 0);
    refill(&run, 0, 0);
    iterate(&run);
    ep_team_assert_no_async_error(&t);
    finish_run(&run, &t, "update by hand");
    free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* Rank 0's mask query in a CUDA graph: each replay writes the mask of that moment. */
static void test_graph_query(void **state)
{
    ep_team_t t;
    int32_t *d_mask[EP_MAX_RANKS];
    int32_t host_mask[4], got[4];
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    (void)state;
    ep_rng_reset("graph_query");
    open_team(&t, 4, 5000, 1);
    alloc_masks(&t, d_mask);
    ncclxTensor_t m = ep_tensor(d_mask[0], I32, 1, 4, 0, 0);
    assert_cuda_ok(cudaStreamBeginCapture(t.stream[0], cudaStreamCaptureModeThreadLocal));
    assert_ncclx_ok(ncclxEpMaskQuery(t.group[0], &m, t.stream[0]));
    assert_cuda_ok(cudaStreamEndCapture(t.stream[0], &graph));
    assert_cuda_ok(cudaGraphInstantiate(&exec, graph, 0));
    ep_alloc_arm();
    for (int round = 0; round < 6; round++) {
        const uint32_t masked = round == 5 ? 0 : ep_rand_below(16);
        for (uint32_t r = 0; r < 4; r++) {
            host_mask[r] = (masked >> r) & 1u ? 0 : 1;
        }
        assert_ncclx_ok(ncclxEpMaskUpdate(t.group[0], host_mask, 4, t.stream[0]));
        assert_cuda_ok(cudaMemsetAsync(d_mask[0], 0x7f, sizeof(got), t.stream[0]));
        assert_cuda_ok(cudaGraphLaunch(exec, t.stream[0]));
        assert_cuda_ok(
            cudaMemcpyAsync(got, d_mask[0], sizeof(got), cudaMemcpyDeviceToHost, t.stream[0]));
        assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
        assert_memory_equal(got, host_mask, sizeof(got));
    }
    ep_alloc_assert_none("graph mask query");
    assert_cuda_ok(cudaGraphExecDestroy(exec));
    assert_cuda_ok(cudaGraphDestroy(graph));
    free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* Without a mask a timeout is reported, the next call fails, mask calls are refused. */
static void test_no_mask_group(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int32_t all[2] = {1, 1};
    (void)state;
    ep_rng_reset("no_mask_group");
    open_team(&t, 2, 100, 0);
    start_run(&run, &t, &em_case);
    assert_ncclx_error(ncclxEpMaskUpdate(t.group[0], all, 2, t.stream[0]), ncclxInvalidUsage,
                       "without an active mask");
    assert_ncclx_error(ncclxEpMaskClean(t.group[0], t.stream[0]), ncclxInvalidUsage,
                       "without an active mask");
    ncclxEpDispatchArgs_t a = ep_dispatch_args(&run, 0, 0);
    assert_ncclx_ok(ncclxEpDispatch(run.handle[0], &a, t.stream[0])); /* rank 1 never does */
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    expect_async(&t, 1, NCCLX_EP_ERROR_TIMEOUT);
    ncclxEpCombineArgs_t c = ep_combine_args(&run, 0, 0);
    assert_ncclx_error(ncclxEpCombine(run.handle[0], &c, t.stream[0]), ncclxTimeout,
                       "timed out (asynchronous error 0x1)");
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a, t.stream[0]), ncclxTimeout,
                       "has no active mask");
    assert_ncclx_ok(ncclxEpClearAsyncError(t.group[0]));
    expect_async(&t, 3, 0);
    finish_run(&run, &t, "no mask group");
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_query),    cmocka_unit_test(test_no_mask_group),
        cmocka_unit_test(test_update_by_hand), cmocka_unit_test(test_slow_rank),
        cmocka_unit_test(test_dead_rank_4),    cmocka_unit_test(test_dead_rank_8),
    };
    ep_seed_init("test_ep_ll_mask");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
