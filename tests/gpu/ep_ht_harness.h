/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The machinery of the EP HT GPU tests (tests/gpu/test_ep_ht.c): a case (one HT group on a
 * team), a run (every rank's routing, inputs, outputs and handles, sized once), drawing data,
 * enqueueing routing, dispatch and combine on every rank, and judging every output bit for bit
 * against the CPU reference (tests/ref/ep_ht_ref.h), outputs poisoned first.  Allocator calls
 * are counted only around library calls (lib_begin / lib_end): the reference allocates.
 */
#ifndef NCCLX_TEST_EP_HT_HARNESS_H_
#define NCCLX_TEST_EP_HT_HARNESS_H_

#include <stddef.h>
#include <stdint.h>

#include "ep_ll_harness.h"
#include "ref/ep_ht_ref.h"

typedef struct {
    uint32_t ranks; /* loopback team; 0: the real 1-rank communicator */
    uint32_t experts, tokens, topk, hidden;
    uint32_t max_topk;  /* the group's bound (0: topk) */
    uint32_t recv;      /* max_recv_tokens_per_rank (0: R * T) */
    uint32_t alignment; /* expert_alignment */
    uint32_t layout;    /* FLAT or EXPERT_MAJOR */
    uint32_t drop, global_ids, quant;
    uint32_t zero_copy; /* out_tokens and expert_out are the group's buffers (BF16/FP16 only) */
    uint32_t zero_copy_skip; /* with zero_copy: bit r = rank r keeps buffers of its own (ranks
                                that mix the two) */
    uint32_t mxfp8;          /* combine with NCCLX_EP_RECIPE_MXFP8 (BF16, EXPERT_MAJOR); expert
                                outputs then span many binades, with zero, tiny and infinite blocks */
    ncclxDataType_t dtype, idx_dtype, count_dtype;
    uint32_t nodes; /* loopback: N >= 1 a team shaped as N emulated nodes
                       (ncclxLoopbackConfig_t); 0: the TEST_NODES rule (ht_test_nodes) */
} ht_case_t;

typedef enum { HT_RANDOM, HT_REPEATS, HT_HOT, HT_BAD_IDS } ht_draw_t;

typedef struct {
    uint32_t n;
    int64_t *idx;
    float *weights, *grad_w, *expert_out_f;
    uint8_t *tokens, *scales, *grads, *expert_out;
    void *idx_upload;
    uint8_t *got, *got_scales, *got_idx, *got_w, *got_out, *got_gw;
    void *d_idx, *d_w, *d_tokens, *d_grads, *d_scales, *d_out_tokens, *d_out_scales, *d_out_idx,
        *d_out_w;
    void *d_expert_out, *d_out, *d_grad_w, *d_out_gw, *d_layout;
    void *d_handle_mem; /* caller memory of the current handle (ncclxEpHandleInit), or NULL */
} ht_rank_t;

typedef struct {
    ep_team_t team;
    ht_case_t c;
    ncclx_ht_ref_case_t rc;
    uint32_t R, L, S, K;
    size_t row, srow, crow, esize, isize;
    ncclxEpHandle_t h[EP_MAX_RANKS];
    ncclxEpHandle_t h_other[EP_MAX_RANKS]; /* a second handle per rank (ht_swap_handles) */
    int have_other;
    ht_rank_t r[EP_MAX_RANKS];
    ncclx_ht_ref_routing_t routing[EP_MAX_RANKS];
    ncclx_ht_ref_layout_t lay[EP_MAX_RANKS];
    float *want, *want_w; /* combine expectations of one rank (allocated at open) */
    int have_handles;
} ht_run_t;

extern size_t lib_allocs; /* allocator calls inside lib_begin / lib_end since it was zeroed */

void lib_begin(void);
void lib_end(void);
void lib_assert_none(const char *where);
size_t dtype_size(ncclxDataType_t t);
/* An element of dtype t (BF16, FP16, FP32) as a float, and back (nearest even). */
float ht_to_float(const uint8_t *p, ncclxDataType_t t);
void ht_from_float(float f, uint8_t *p, ncclxDataType_t t);
/* Bytes of one rank's layout tensor (L + 1 int64 slots, 16-byte aligned). */
size_t ht_layout_stride(const ht_run_t *run);
void *dmalloc(size_t bytes);
void *hmalloc(size_t bytes);
void ht_open(ht_run_t *run, const ht_case_t *c);
void ht_close(ht_run_t *run);
void ht_set_routing(ht_run_t *run);
void ht_fill(ht_run_t *run, ht_draw_t draw, uint32_t empty_ranks, int keep_counts);
ncclxTensor_t tensor2(void *data, ncclxDataType_t dt, int64_t d0, int64_t d1);
ncclxTensor_t ht_idx(const ht_run_t *run, uint32_t r);
ncclxEpDispatchArgs_t ht_dispatch_args(const ht_run_t *run, uint32_t r, int backward);
ncclxEpCombineArgs_t ht_combine_args(const ht_run_t *run, uint32_t r, int backward);
void ht_route(ht_run_t *run);
void ht_layout(ht_run_t *run);
void ht_poison(ht_run_t *run);
void ht_enqueue(ht_run_t *run, int dispatch, int backward);
void ht_check_layout(ht_run_t *run, uint32_t r);
void ht_check_untouched_dispatch(ht_run_t *run);
void ht_check_dispatch(ht_run_t *run, int backward);
void ht_check_dispatch_rank(ht_run_t *run, uint32_t r, int backward);
void ht_check_rows_from(ht_run_t *run, uint32_t r, uint32_t sources);
int ht_zero_copy_rank(const ht_run_t *run, uint32_t r);
void ht_check_combine(ht_run_t *run, int backward);
void ht_init_caller_handles(ht_run_t *run);
void ht_swap_handles(ht_run_t *run);
void ht_forward_checked(ht_run_t *run);
void ht_iteration(ht_run_t *run, int expect_bad);
void ht_case(const ht_case_t *c, ht_draw_t draw, uint32_t empty_ranks, int iterations);
ht_case_t base_case(uint32_t ranks, uint32_t layout);
void ht_capture(ht_run_t *run, int with_combine, cudaGraphExec_t *exec);
/** The emulated nodes TEST_NODES gives a loopback team of `ranks` ranks (ep_team_open's rule:
 *  N when TEST_NODES=N divides ranks), 0 when it stays unshaped (and for ranks 0, the real
 *  communicator). */
uint32_t ht_test_nodes(uint32_t ranks);
/** The emulated nodes of run's team: c.nodes, else ht_test_nodes (0: unshaped). */
uint32_t ht_run_nodes(const ht_run_t *run);
/** Whether run's loopback team takes the direct path (docs/ep-ht.md): unshaped (a shaped team,
 *  even of one node, never reaches peers' caller buffers) and NCCLX_EP_HT_PATH not STAGED. */
int ht_direct_path(const ht_run_t *run);
/** Draws every rank's expert outputs again, spread over many binades (sign, exponent and full
 *  mantissa random; BF16/FP32 2^-20 .. 2^20, FP16 2^-10 .. 2^8), so that FP32 sums depend on
 *  their order: the combine's summation tree is then visible bit for bit.  Uploads them. */
void ht_wide_expert_out(ht_run_t *run);

/* Random routing in which every rank sends its whole batch (so every rank sends to every
 * other), outputs poisoned, routed. */
static inline void ht_route_full_batches(ht_run_t *run)
{
    ht_fill(run, HT_RANDOM, 0, 0);
    for (uint32_t r = 0; r < run->R; r++) {
        run->r[r].n = run->c.tokens;
    }
    ht_fill(run, HT_RANDOM, 0, 1);
    ht_poison(run);
    ht_route(run);
}

#endif /* NCCLX_TEST_EP_HT_HARNESS_H_ */
