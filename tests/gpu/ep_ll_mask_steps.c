/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Steps shared by the active-mask GPU tests (test_ep_ll_mask, test_ep_ll_straggler).
 */
#include "gpu/ep_ll_mask_steps.h"

#include <stdlib.h>
#include <time.h>

#include "gpu/ep_ll_short.h"

double mask_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

unsigned mask_env_uint(const char *name, unsigned fallback, unsigned lo, unsigned hi)
{
    const char *s = getenv(name);
    char *end = NULL;
    if (s == NULL || *s == '\0') {
        return fallback;
    }
    unsigned long v = strtoul(s, &end, 10);
    if (*end != '\0' || v < lo || v > hi) {
        fail_msg("%s=%s is not an integer in [%u, %u]", name, s, lo, hi);
    }
    return (unsigned)v;
}

void mask_open_team(ep_team_t *t, uint32_t ranks, uint64_t timeout_ms, uint32_t enable_mask)
{
    ep_team_plan(t, 4 * ranks, 6, 512, 32);
    t->group_plan.enable_mask = enable_mask;
    t->group_plan.timeout_ns = timeout_ms * 1000000ull;
    /* The library's default grid unless TEST_MASK_SM_BUDGET sets the blocks per kernel: a
     * group with a mask on a loopback team gets one block per SM share (lib/context/context.c). */
    t->group_plan.sm_budget = mask_env_uint("TEST_MASK_SM_BUDGET", 0, 0, NCCLX_EP_MAX_SM_BUDGET);
    ep_team_open(t, ranks);
}

/* Every rank in `who` queries its mask into `d_mask` (device int32[R] per rank): entry r must
 * be 0 exactly for the ranks in `masked`. */
void mask_expect_mask(const ep_team_t *t, int32_t *const d_mask[], uint32_t who, uint32_t masked)
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

void mask_expect_async(const ep_team_t *t, uint32_t who, uint32_t want)
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
void mask_start_run(ep_run_t *run, ep_team_t *t, const ep_case_t *k)
{
    ep_routing_t rt = ep_routing_default();
    ep_run_alloc(run, t, k);
    ep_alloc_arm();
    ep_run_fill(run, &rt);
    ep_run_create(run);
    ep_team_sync(t);
}

/* Handles destroyed, nothing allocated since start_run, buffers freed. */
void mask_finish_run(ep_run_t *run, ep_team_t *t, const char *where)
{
    ep_run_destroy(run);
    ep_team_sync_only(t);
    ep_alloc_assert_none(where);
    ep_run_free(run);
}

/* Fresh data for `masked` (reference without those ranks), rerouted handles. */
void mask_refill(ep_run_t *run, uint32_t masked, uint32_t absent)
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
double mask_iterate(ep_run_t *run)
{
    double start;
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    ep_team_sync_only(run->team);
    start = mask_now_ms();
    ep_run_enqueue_dispatch(run, 0);
    ep_run_enqueue_combine(run, 0);
    ep_team_sync_only(run->team);
    double ms = mask_now_ms() - start;
    ep_run_check_dispatch(run);
    ep_run_check_combine(run);
    return ms;
}

void mask_clean_all(ep_team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpMaskClean(t->group[r], t->stream[r]));
    }
    ep_team_sync_only(t);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpClearAsyncError(t->group[r], t->stream[r]));
    }
    ep_team_sync_only(t);
}

void mask_recover(ep_run_t *run, int32_t *const d_mask[], int iterations)
{
    const ep_team_t *t = run->team;
    const uint32_t all = (1u << t->ranks) - 1;
    run->absent = 0;
    mask_clean_all(run->team);
    mask_expect_mask(t, d_mask, all, 0);
    mask_expect_async(t, all, 0);
    for (int i = 0; i < iterations; i++) {
        mask_refill(run, 0, 0);
        mask_iterate(run);
        ep_team_assert_no_async_error(t);
    }
}

void mask_alloc_masks(const ep_team_t *t, int32_t *d_mask[])
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaMalloc((void **)&d_mask[r], EP_MAX_RANKS * sizeof(int32_t)));
    }
}

void mask_free_masks(const ep_team_t *t, int32_t *d_mask[])
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaFree(d_mask[r]));
    }
}
