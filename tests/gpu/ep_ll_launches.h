/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Kernels and early launches of captured LL operations (tests/gpu/ep_ll_launches.c).
 */
#ifndef NCCLX_TESTS_GPU_EP_LL_LAUNCHES_H_
#define NCCLX_TESTS_GPU_EP_LL_LAUNCHES_H_

#include "gpu/ep_ll_harness.h"

/** Whether rank r's group launches kernels early (a rank alone on a GPU of compute capability
 *  9.0 or later, CUDA 12.3 or later, kernels built with their wait), after checking that the
 *  group decided so. */
int ep_launches_early(const ep_team_t *t, uint32_t r);
/** Captures rank r's dispatch, or its combine (send_only: the send and ncclxEpComplete), into
 *  *exec; returns the graph's kernel nodes and sets *early to its programmatic edges. */
size_t ep_capture_op(ep_run_t *run, uint32_t r, int combine, uint32_t send_only,
                     cudaGraphExec_t *exec, size_t *early);
/** Replays every rank's captured operation three times, outputs poisoned before each replay and
 *  checked after it, then destroys the graphs. */
void ep_replay_and_check(ep_run_t *run, cudaGraphExec_t *exec, int combine);
/** Captures every rank's dispatch, not send_only then send_only, checks each graph's kernel
 *  nodes (kernels[alone][send_only], alone: the rank's group launches early) and its
 *  programmatic edges (early[send_only] where the group launches early, none elsewhere), and
 *  replays and checks the graphs.  run: created and routed, every rank synchronized. */
void ep_check_dispatch_launches(ep_run_t *run, const size_t kernels[2][2], const size_t early[2]);

#endif /* NCCLX_TESTS_GPU_EP_LL_LAUNCHES_H_ */
