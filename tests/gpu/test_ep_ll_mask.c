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
#include "gpu/ep_ll_mask_steps.h"
#include "gpu/ep_ll_short.h"

/* What a survivor may take past the timeout to return (the loopback ranks share one GPU). */
#define TIMEOUT_SLACK_MS 100.0

static const ep_case_t em_case = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {0, RM, NONE, 0, 0, BF16, U8, 0, I32, I64, F32, 0};

static void dead_rank_cycles(uint32_t ranks, uint64_t timeout_ms, const ep_case_t *k)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    const uint32_t all = (1u << ranks) - 1;
    mask_open_team(&t, ranks, timeout_ms, 1);
    mask_alloc_masks(&t, d_mask);
    mask_start_run(&run, &t, k);
    mask_iterate(&run);
    /* Three different dead ranks: the first three of a random permutation. */
    uint32_t order[EP_MAX_RANKS], seen = 0;
    for (uint32_t i = 0; i < ranks; i++) {
        const uint32_t j = ep_rand_below(i + 1);
        order[i] = order[j];
        order[j] = i;
    }
    for (int cycle = 0; cycle < 3; cycle++) {
        const uint32_t dead = order[cycle], bit = 1u << dead;
        assert_false(seen & bit);
        seen |= bit;
        /* Rank `dead` stops before its dispatch. */
        mask_refill(&run, bit, bit);
        double ms = 0.0;
        {
            /* The survivors' view after the timeout, printed before the checks. */
            ep_run_poison_dispatch(&run);
            ep_run_poison_combine(&run);
            ep_team_sync_only(&t);
            const double start = mask_now_ms();
            ep_run_enqueue_dispatch(&run, 0);
            ep_run_enqueue_combine(&run, 0);
            ep_team_sync_only(&t);
            ms = mask_now_ms() - start;
            for (uint32_t r = 0; r < ranks; r++) {
                uint32_t error = 0;
                assert_ncclx_ok(ncclxEpGetAsyncError(t.group[r], &error));
                printf("#   rank %u: asynchronous error 0x%x\n", r, error);
            }
            ep_run_check_dispatch(&run);
            ep_run_check_combine(&run);
        }
        printf("# %u ranks, timeout %llu ms: rank %u stopped, survivors returned after %.1f ms\n",
               ranks, (unsigned long long)timeout_ms, dead, ms);
        /* Tight: the timeout, plus the rest of the operation and the host's wake-up. */
        if (ms < 0.9 * (double)timeout_ms || ms > (double)timeout_ms + TIMEOUT_SLACK_MS) {
            fail_msg("survivors returned after %.1f ms; the timeout is %llu ms", ms,
                     (unsigned long long)timeout_ms);
        }
        mask_expect_async(&t, all & ~bit, NCCLX_EP_ERROR_TIMEOUT);
        mask_expect_mask(&t, d_mask, all & ~bit, bit);
        /* Later iterations skip the dead rank without waiting for it. */
        for (int i = 0; i < 3; i++) {
            mask_refill(&run, bit, bit);
            ms = mask_iterate(&run);
            if (ms > 0.5 * (double)timeout_ms) {
                fail_msg("iteration %d after the timeout took %.1f ms: it waited for rank %u", i,
                         ms, dead);
            }
        }
        mask_expect_mask(&t, d_mask, all & ~bit, bit);
        /* Recovery: every rank, the dead one too, cleans; then exact again. */
        mask_recover(&run, d_mask, 2);
    }
    mask_finish_run(&run, &t, "dead rank cycles");
    mask_free_masks(&t, d_mask);
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
    mask_open_team(&t, 4, 5000, 1);
    mask_alloc_masks(&t, d_mask);
    for (int l = 0; l < 2; l++) {
        mask_start_run(&run, &t, l == 0 ? &em_case : &rm_case);
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
        mask_expect_mask(&t, d_mask, 0xf, 0);
        mask_finish_run(&run, &t, "slow rank");
    }
    mask_free_masks(&t, d_mask);
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
    mask_open_team(&t, 4, 5000, 1);
    mask_alloc_masks(&t, d_mask);
    mask_start_run(&run, &t, &em_case);
    const uint32_t k = ep_rand_below(4);
    for (uint32_t r = 0; r < 4; r++) {
        host_mask[r] = r == k ? 0 : 1;
    }
    for (uint32_t r = 0; r < 4; r++) {
        assert_ncclx_ok(ncclxEpMaskUpdate(t.group[r], host_mask, 4, t.stream[r]));
    }
    mask_expect_mask(&t, d_mask, 0xf, 1u << k);
    for (int i = 0; i < 3; i++) {
        mask_refill(&run, 1u << k, 0); /* k still calls dispatch and combine */
        double ms = mask_iterate(&run);
        if (ms > 2500.0) {
            fail_msg("a masked rank was waited for (%.1f ms)", ms);
        }
        ep_team_assert_no_async_error(&t);
    }
    /* A combine needs a dispatch after a mask change. */
    mask_clean_all(&t);
    {
        ncclxEpCombineArgs_t c = ep_combine_args(&run, 0, 0);
        assert_ncclx_error(ncclxEpCombine(run.handle[0], &c, t.stream[0]), ncclxInvalidUsage,
                           "no completed dispatch");
    }
    mask_expect_mask(&t, d_mask, 0xf, 0);
    mask_refill(&run, 0, 0);
    mask_iterate(&run);
    ep_team_assert_no_async_error(&t);
    mask_finish_run(&run, &t, "update by hand");
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* Rank 0's mask query in a CUDA graph: each replay writes the mask of that moment.  Every
 * round starts from a clean by all ranks (only a clean re-admits), then rank 0 masks by hand. */
static void test_graph_query(void **state)
{
    ep_team_t t;
    int32_t *d_mask[EP_MAX_RANKS];
    int32_t host_mask[4], got[4];
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    (void)state;
    ep_rng_reset("graph_query");
    mask_open_team(&t, 4, 5000, 1);
    mask_alloc_masks(&t, d_mask);
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
        mask_clean_all(&t);
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
    mask_free_masks(&t, d_mask);
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
    mask_open_team(&t, 2, 100, 0);
    mask_start_run(&run, &t, &em_case);
    assert_ncclx_error(ncclxEpMaskUpdate(t.group[0], all, 2, t.stream[0]), ncclxInvalidUsage,
                       "without an active mask");
    assert_ncclx_error(ncclxEpMaskClean(t.group[0], t.stream[0]), ncclxInvalidUsage,
                       "without an active mask");
    ncclxEpDispatchArgs_t a = ep_dispatch_args(&run, 0, 0);
    assert_ncclx_ok(ncclxEpDispatch(run.handle[0], &a, t.stream[0])); /* rank 1 never does */
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    mask_expect_async(&t, 1, NCCLX_EP_ERROR_TIMEOUT);
    ncclxEpCombineArgs_t c = ep_combine_args(&run, 0, 0);
    assert_ncclx_error(ncclxEpCombine(run.handle[0], &c, t.stream[0]), ncclxTimeout,
                       "timed out (asynchronous error 0x1)");
    assert_ncclx_error(ncclxEpDispatch(run.handle[0], &a, t.stream[0]), ncclxTimeout,
                       "has no active mask");
    assert_ncclx_ok(ncclxEpClearAsyncError(t.group[0], t.stream[0]));
    ep_team_sync_only(&t);
    mask_expect_async(&t, 3, 0);
    mask_finish_run(&run, &t, "no mask group");
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_graph_query),    cmocka_unit_test(test_no_mask_group),
        cmocka_unit_test(test_update_by_hand), cmocka_unit_test(test_slow_rank),
        cmocka_unit_test(test_dead_rank_4),    cmocka_unit_test(test_dead_rank_8),
    };
    setvbuf(stdout, NULL, _IONBF, 0);
    ep_seed_init("test_ep_ll_mask");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
