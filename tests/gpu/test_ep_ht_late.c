/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * GPU tests of EP HT ranks that come late: a straggler past its peer's timeout, and the 3-rank
 * case where rank 0 gives up and later operations are exact again.  As test_ep_ht.c: outputs
 * compared with the CPU reference, on the direct path and with NCCLX_EP_HT_PATH=STAGED
 * (tests/gpu/run_ep_ht_staged.sh), and on emulated nodes (TEST_NODES, run_ep_ht_nodes.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_ht_harness.h"

/* The gate of test_straggler_after_timeout: rank 1's stream waits here until the test opens
 * it, or 60 s pass (a test that failed before opening it must not hang the program). */
static int straggler_gate;

static void CUDART_CB open_when_told(void *arg)
{
    (void)arg;
    const struct timespec pause = {0, 1000000};
    for (int ms = 0; ms < 60000 && !__atomic_load_n(&straggler_gate, __ATOMIC_ACQUIRE); ms++) {
        nanosleep(&pause, NULL);
    }
}

/* Opens run's team with a GPU timeout of 300 ms (NCCLX_TIMEOUT_MS, read at init), then puts the
 * variable back as it was. */
static void open_with_300ms_timeout(ht_run_t *run, const ht_case_t *c)
{
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", "300", 1), 0);
    ht_open(run, c);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
}

/* Every rank dispatches, ranks 1.. held behind the host gate (open_when_told) until rank 0 has
 * given up on them (its wait times out) and its caller has reused out_tokens (0x5a); then the
 * late ranks run.  Fails if any late rank wrote into rank 0's reused out_tokens. */
static void straggle_and_reuse(ht_run_t *run)
{
    ep_team_sync(&run->team);
    __atomic_store_n(&straggler_gate, 0, __ATOMIC_RELEASE);
    for (uint32_t r = 1; r < run->R; r++) {
        assert_cuda_ok(cudaLaunchHostFunc(run->team.stream[r], open_when_told, NULL));
    }
    for (uint32_t r = run->R; r-- > 0;) {
        ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
        assert_ncclx_ok(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]));
    }
    assert_cuda_ok(cudaStreamSynchronize(run->team.stream[0]));
    const size_t bytes = (size_t)run->S * run->row;
    assert_cuda_ok(cudaMemsetAsync(run->r[0].d_out_tokens, 0x5a, bytes, run->team.stream[0]));
    assert_cuda_ok(cudaStreamSynchronize(run->team.stream[0]));
    __atomic_store_n(&straggler_gate, 1, __ATOMIC_RELEASE);
    for (uint32_t r = 1; r < run->R; r++) {
        assert_cuda_ok(cudaStreamSynchronize(run->team.stream[r]));
    }
    uint8_t *got = hmalloc(bytes);
    assert_cuda_ok(cudaMemcpy(got, run->r[0].d_out_tokens, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++) {
        if (got[i] != 0x5a) {
            fail_msg("rank 0's reused out_tokens byte %zu is 0x%02x: a late rank wrote into it "
                     "after rank 0's dispatch had ended",
                     i, got[i]);
        }
    }
    free(got);
}

/* A straggler past the timeout on the direct path (one GPU): rank 1's dispatch starts only
 * after rank 0's has timed out and ended and rank 0's caller has reused its out_tokens.  Rank 1
 * must write nothing there (rank 0 closed its published buffers on the way out), and both
 * ranks report TIMEOUT.  On the staged path rank 1 only ever writes the group's own rows. */
static void test_straggler_after_timeout(void **state)
{
    (void)state;
    ep_rng_reset("test_straggler_after_timeout");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(2, NCCLX_EP_LAYOUT_FLAT);
    open_with_300ms_timeout(run, &c);
    ht_route_full_batches(run);
    straggle_and_reuse(run);
    /* Rank 0 gave up waiting for rank 1.  On the direct path rank 1 then finds rank 0 closed
     * and cannot deliver its rows: it reports an error too.  On the staged path rank 0 had
     * pushed its rows into the group's own before giving up, so rank 1 may well complete. */
    uint32_t err0 = 0, err1 = 0;
    assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[0], &err0));
    assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[1], &err1));
    assert_int_equal(err0 & NCCLX_EP_ERROR_TIMEOUT, NCCLX_EP_ERROR_TIMEOUT);
    /* A team shaped as emulated nodes (TEST_NODES) takes the staged path whatever
     * NCCLX_EP_HT_PATH says: rank 0 had put its rows toward rank 1 before giving up. */
    if (ht_direct_path(run)) {
        if (err1 == 0) {
            fail_msg("the straggler (rank 1) reported no error on the direct path, where rank "
                     "0's outputs were closed to it");
        }
    } else {
        assert_int_equal(err1 & ~(uint32_t)NCCLX_EP_ERROR_TIMEOUT, 0);
    }
    ht_close(run);
    free(run);
}

/* The 3-rank variant: rank 0 gives up (its wait for the late ranks times out) and closes its
 * outputs; then rank 1 (late past rank 0's timeout) and rank 2 dispatch together.  Rank 2
 * must either receive every row exactly or report an error, never return success with rows
 * missing; rank 0's reused out_tokens stays untouched.  On the direct path a pusher that
 * finds one destination closed still delivers its rows to every other: rank 2's rows from
 * ranks 1 and 2 are exact whatever its error word (rank 0, which timed out before pushing,
 * leaves it waiting for its rows: a timeout).  On the staged path rank 0 had pushed into the
 * group's rows before it gave up, so ranks 1 and 2 complete: exact, no error. */
static void test_late_peer_three_ranks(void **state)
{
    (void)state;
    ep_rng_reset("test_late_peer_three_ranks");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(3, NCCLX_EP_LAYOUT_FLAT);
    open_with_300ms_timeout(run, &c);
    ht_route_full_batches(run);
    straggle_and_reuse(run);
    uint32_t err[3] = {0, 0, 0};
    for (uint32_t r = 0; r < 3; r++) {
        assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err[r]));
    }
    assert_int_equal(err[0] & NCCLX_EP_ERROR_TIMEOUT, NCCLX_EP_ERROR_TIMEOUT);
    /* The promise on every path: a rank that reports no error has every row, bit for bit. */
    for (uint32_t r = 1; r < 3; r++) {
        if (err[r] == 0) {
            ht_check_dispatch_rank(run, r, 0);
        }
    }
    if (ht_direct_path(run)) { /* not with NCCLX_EP_HT_PATH=STAGED, nor on a shaped team */
        /* Rank 0 closed: rank 1 and rank 2 pushed to each other (and themselves) all the
         * same, and each is left without rank 0's rows, which it reports. */
        ht_check_rows_from(run, 2, 0x6u);
        ht_check_rows_from(run, 1, 0x6u);
        assert_int_not_equal(err[2], 0);
        assert_int_not_equal(err[1], 0);
    } else {
        assert_int_equal(err[1], 0);
        assert_int_equal(err[2], 0);
    }
    ht_close(run);
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straggler_after_timeout),
        cmocka_unit_test(test_late_peer_three_ranks),
    };
    ep_seed_init("test_ep_ht_late");
    return ncclx_run_tests("gpu_ep_ht_late", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
