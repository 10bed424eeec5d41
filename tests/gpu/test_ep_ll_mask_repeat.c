/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Timeout events in a row: on loopback teams of 8 and 4 ranks, cycle after cycle one rank
 * (a different one each cycle of a round) enqueues nothing; every survivor must time out on
 * that rank alone (asynchronous error exactly TIMEOUT, nobody else masked) and return exact
 * results; then every rank cleans and two iterations are exact again.  A survivor that a
 * peer masks too (a survivor that stalled during the event) fails the test, with each
 * rank's timeline (when its dispatch and its combine ended) to say which one and where.
 *
 * TEST_MASK_CYCLES sets the cycles per team (default 12); TEST_MASK_TIMEOUT_MS
 * the timeout (default 50); TEST_MASK_TIMELINE=1 records CUDA events around each rank's
 * dispatch and combine and prints when each ended (off by default, so that the test adds
 * nothing to the streams); TEST_MASK_REVERSE=1 enqueues the ranks in reverse order;
 * TEST_MASK_SM_BUDGET sets the blocks per kernel; TEST_FILTER=test_repeat_8 runs one team.  `make
 * check-gpu` runs the defaults; a long run is, for example, TEST_MASK_CYCLES=400
 * tests/gpu/test_ep_ll_mask_repeat.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_mask_steps.h"
#include "gpu/ep_ll_short.h"

static const ep_case_t em_case = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {0, RM, NONE, 0, 0, BF16, U8, 0, I32, I64, F32, 0};

/* Per rank: events before its dispatch, after it, and after its combine. */
typedef struct {
    cudaEvent_t start[EP_MAX_RANKS], dispatched[EP_MAX_RANKS], combined[EP_MAX_RANKS];
} timeline_t;

static int timeline_on;

static void record_each(const ep_run_t *run, cudaEvent_t ev[])
{
    if (!timeline_on) {
        return;
    }
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        if (!((run->absent >> r) & 1u)) {
            assert_cuda_ok(cudaEventRecord(ev[r], run->team->stream[r]));
        }
    }
}

/* Each rank's error word and when (ms after the first rank's start) its dispatch and its
 * combine ended. */
static void print_timeline(const ep_run_t *run, timeline_t *tl, uint32_t first)
{
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        uint32_t error = 0;
        float d = -1.0f, c = -1.0f;
        assert_ncclx_ok(ncclxEpGetAsyncError(run->team->group[r], &error));
        if (timeline_on && !((run->absent >> r) & 1u)) {
            assert_cuda_ok(cudaEventElapsedTime(&d, tl->start[first], tl->dispatched[r]));
            assert_cuda_ok(cudaEventElapsedTime(&c, tl->start[first], tl->combined[r]));
            printf("#   rank %u: error 0x%x, dispatch ended at %.1f ms, combine at %.1f ms\n", r,
                   error, d, c);
        } else {
            printf("#   rank %u:%s error 0x%x\n", r, (run->absent >> r) & 1u ? " absent," : "",
                   error);
        }
    }
}

/* Dispatch (or combine) on ranks R-1 .. 0 (TEST_MASK_REVERSE=1: does the held survivor
 * follow the host's enqueue order?). */
static void enqueue_reverse(ep_run_t *run, int dispatch)
{
    const ep_team_t *t = run->team;
    for (uint32_t i = 0; i < t->ranks; i++) {
        const uint32_t r = t->ranks - 1 - i;
        if ((run->absent >> r) & 1u) {
            continue;
        }
        if (dispatch) {
            ncclxEpDispatchArgs_t a = ep_dispatch_args(run, r, 0);
            assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &a, t->stream[r]));
        } else {
            ncclxEpCombineArgs_t c = ep_combine_args(run, r, 0);
            assert_ncclx_ok(ncclxEpCombine(run->handle[r], &c, t->stream[r]));
        }
    }
}

static void repeat_timeouts(uint32_t ranks, const ep_case_t *k)
{
    const unsigned cycles = mask_env_uint("TEST_MASK_CYCLES", 12, 1, 100000);
    const unsigned timeout_ms = mask_env_uint("TEST_MASK_TIMEOUT_MS", 50, 10, 60000);
    timeline_on = (int)mask_env_uint("TEST_MASK_TIMELINE", 0, 0, 1);
    const int reverse = (int)mask_env_uint("TEST_MASK_REVERSE", 0, 0, 1);
    const uint32_t all = (1u << ranks) - 1;
    ep_team_t t;
    ep_run_t run;
    timeline_t tl;
    int32_t *d_mask[EP_MAX_RANKS];
    uint32_t order[EP_MAX_RANKS], stalled = 0, first = 0;
    mask_open_team(&t, ranks, timeout_ms, 1);
    mask_alloc_masks(&t, d_mask);
    for (uint32_t r = 0; r < ranks; r++) {
        assert_cuda_ok(cudaEventCreate(&tl.start[r]));
        assert_cuda_ok(cudaEventCreate(&tl.dispatched[r]));
        assert_cuda_ok(cudaEventCreate(&tl.combined[r]));
    }
    mask_start_run(&run, &t, k);
    mask_iterate(&run);
    for (unsigned cycle = 0; cycle < cycles; cycle++) {
        /* A new permutation each round of `ranks` cycles: every rank dies once per round. */
        if (cycle % ranks == 0) {
            for (uint32_t i = 0; i < ranks; i++) {
                const uint32_t j = ep_rand_below(i + 1);
                order[i] = order[j];
                order[j] = i;
            }
        }
        const uint32_t dead = order[cycle % ranks], bit = 1u << dead;
        first = dead == 0 ? 1 : 0;
        mask_refill(&run, bit, bit);
        ep_run_poison_dispatch(&run);
        ep_run_poison_combine(&run);
        ep_team_sync_only(&t);
        record_each(&run, tl.start);
        if (reverse) {
            enqueue_reverse(&run, 1);
        } else {
            ep_run_enqueue_dispatch(&run, 0);
        }
        record_each(&run, tl.dispatched);
        if (reverse) {
            enqueue_reverse(&run, 0);
        } else {
            ep_run_enqueue_combine(&run, 0);
        }
        record_each(&run, tl.combined);
        ep_team_sync_only(&t);
        uint32_t bad = 0;
        for (uint32_t r = 0; r < ranks; r++) {
            uint32_t error = 0;
            assert_ncclx_ok(ncclxEpGetAsyncError(t.group[r], &error));
            bad |= r != dead && error != NCCLX_EP_ERROR_TIMEOUT ? 1u << r : 0u;
        }
        if (bad != 0) {
            printf("# cycle %u of %u ranks, timeout %u ms: rank %u stopped; ranks 0x%x ended with "
                   "another error than TIMEOUT\n",
                   cycle, ranks, timeout_ms, dead, bad);
            print_timeline(&run, &tl, first);
            stalled++;
        } else {
            /* Every survivor masked exactly the dead rank: results exact. */
            ep_run_check_dispatch(&run);
            ep_run_check_combine(&run);
            mask_expect_mask(&t, d_mask, all & ~bit, bit);
        }
        mask_recover(&run, d_mask, 2);
    }
    printf("# %u ranks: %u timeout events, %u with a survivor masked as well\n", ranks, cycles,
           stalled);
    mask_finish_run(&run, &t, "timeouts in a row");
    for (uint32_t r = 0; r < ranks; r++) {
        assert_cuda_ok(cudaEventDestroy(tl.start[r]));
        assert_cuda_ok(cudaEventDestroy(tl.dispatched[r]));
        assert_cuda_ok(cudaEventDestroy(tl.combined[r]));
    }
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
    if (stalled != 0) {
        fail_msg("%u of %u timeout events on %u ranks also masked a survivor", stalled, cycles,
                 ranks);
    }
}

static void test_repeat_8(void **state)
{
    (void)state;
    ep_rng_reset("repeat_8");
    repeat_timeouts(8, &em_case);
}

static void test_repeat_4(void **state)
{
    (void)state;
    ep_rng_reset("repeat_4");
    repeat_timeouts(4, &rm_case);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repeat_8),
        cmocka_unit_test(test_repeat_4),
    };
    setvbuf(stdout, NULL, _IONBF, 0);
    ep_seed_init("test_ep_ll_mask_repeat");
    return ncclx_run_tests("gpu_ep_ll_mask_repeat", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
