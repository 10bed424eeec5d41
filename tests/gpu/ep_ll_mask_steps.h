/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Steps shared by the active-mask GPU tests: a team with a timeout, mask and async-error
 * expectations, one run's start and finish (allocation counting armed in between), refills
 * with a rank masked or absent, one checked iteration, and a clean on every rank.
 */
#ifndef NCCLX_TEST_EP_LL_MASK_STEPS_H_
#define NCCLX_TEST_EP_LL_MASK_STEPS_H_

#include "gpu/ep_ll_harness.h"

/** Milliseconds on a monotonic clock. */
double mask_now_ms(void);
/** The unsigned integer in environment variable `name`, or `fallback` when it is unset or
 *  empty; fails the test unless it lies in [lo, hi]. */
unsigned mask_env_uint(const char *name, unsigned fallback, unsigned lo, unsigned hi);
/** A loopback team of `ranks`, 4 experts per rank, top-6, hidden 512, 32 tokens. */
void mask_open_team(ep_team_t *t, uint32_t ranks, uint64_t timeout_ms, uint32_t enable_mask);
/** Every rank in `who` queries its mask: entry r must be 0 exactly for the ranks in `masked`. */
void mask_expect_mask(const ep_team_t *t, int32_t *const d_mask[], uint32_t who, uint32_t masked);
/** Every rank in `who` has exactly `want` in its asynchronous error word. */
void mask_expect_async(const ep_team_t *t, uint32_t who, uint32_t want);
/** Buffers for case k, allocation counting armed, first data, handles created. */
void mask_start_run(ep_run_t *run, ep_team_t *t, const ep_case_t *k);
/** Handles destroyed, nothing allocated since mask_start_run, buffers freed. */
void mask_finish_run(ep_run_t *run, ep_team_t *t, const char *where);
/** Fresh data with the reference run without `masked`, rerouted handles; then `absent`. */
void mask_refill(ep_run_t *run, uint32_t masked, uint32_t absent);
/** Dispatch and combine on every rank not absent; checks the ranks not masked; returns the
 *  milliseconds until every one of them returned. */
double mask_iterate(ep_run_t *run);
/** Clean on every rank, then every rank's asynchronous error cleared (stream ordered). */
void mask_clean_all(ep_team_t *t);
/** Every rank back (absent cleared), cleans and clears its error; then no rank is masked, no
 *  error is left, and `iterations` iterations with fresh data are exact without error. */
void mask_recover(ep_run_t *run, int32_t *const d_mask[], int iterations);
void mask_alloc_masks(const ep_team_t *t, int32_t *d_mask[]);
void mask_free_masks(const ep_team_t *t, int32_t *d_mask[]);

#endif /* NCCLX_TEST_EP_LL_MASK_STEPS_H_ */
