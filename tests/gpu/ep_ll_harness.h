/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Shared machinery of the EP LL GPU tests: a team (a loopback team of N ranks on one GPU, or
 * the real 1-rank communicator), one run (a case, one handle per rank and every rank's
 * input, output and expected buffers), enqueueing an operation on every rank, and judging
 * each rank's outputs against the CPU reference in tests/ref.
 *
 * Buffers are sized for max_tokens tokens once, so a run can take new data and new routings
 * (ep_run_fill) any number of times without allocating; tests count allocations around
 * everything after ep_run_alloc.
 */
#ifndef NCCLX_TEST_EP_LL_HARNESS_H_
#define NCCLX_TEST_EP_LL_HARNESS_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ncclx_test.h"
#include "ref/ep_ref.h"

/* Loopback teams of up to 16 ranks (bit r of the uint32_t rank sets below is rank r). */
#define EP_MAX_RANKS 16

/* ---- random numbers: a fresh seed per process (printed), TEST_SEED=n replays it ---- */

/** Reads TEST_SEED or draws a seed, and prints it with the program's name. */
void ep_seed_init(const char *program);
/** Restarts the generator for one test: the same name and seed give the same numbers. */
void ep_rng_reset(const char *test_name);
uint64_t ep_rand_u64(void);
uint32_t ep_rand_below(uint32_t n); /* uniform in [0, n), n >= 1 */
float ep_rand_unit(void);           /* uniform in [0, 1) */

/* ---- teams ---- */

typedef struct {
    uint32_t ranks;
    uint32_t nodes; /* loopback: 0 no shape, N emulated nodes (ncclxLoopbackConfig_t) */
    int singleton;  /* 1: ncclxInit on a real NCCL communicator (rank 0 of 1) */
    ncclxEpGroupPlan_t group_plan;
    const ncclxEpGroupPlan_t *group_plans[1];
    ncclxPlan_t plan;
    ncclxContext_t ctx[EP_MAX_RANKS];
    cudaStream_t stream[EP_MAX_RANKS];
    ncclxEpGroup_t group[EP_MAX_RANKS];
} ep_team_t;

/**
 * Fills t->group_plan (LL, both layouts, recipes NONE | QUANT_FWD | FP8, tokens BF16, FP16,
 * FP32, FP8 E4M3, FP4x2 and UINT8, QUANT_FWD rows up to 2 * hidden bytes and 64 scale bytes,
 * 4 handles, a 20 s GPU timeout) and t->plan.  Tests may change t->group_plan before
 * ep_team_open.  t must not move afterwards (the plan points into it).
 */
void ep_team_plan(ep_team_t *t, uint32_t experts, uint32_t max_topk, uint32_t hidden,
                  uint32_t max_tokens);
/** ranks > 0: a loopback team (of t->nodes emulated nodes when set, else of TEST_NODES nodes
 *  when that divides ranks); ranks == 0: ncclxInit, rank 0 of 1.  One stream per rank. */
void ep_team_open(ep_team_t *t, uint32_t ranks);
void ep_team_close(ep_team_t *t);
/** Waits for every rank's stream; fails on a CUDA error or a nonzero asynchronous error. */
void ep_team_sync(const ep_team_t *t);
/** Waits for every rank's stream; fails on a CUDA error (asynchronous errors not checked). */
void ep_team_sync_only(const ep_team_t *t);
void ep_team_assert_no_async_error(const ep_team_t *t);

/* ---- one case ---- */

typedef struct {
    uint32_t topk; /* 0: the group's max_topk */
    uint32_t layout, recipe, round_scales, global_ids;
    ncclxDataType_t dtype;         /* tokens (FP8 recipe: BF16) */
    ncclxDataType_t scale_dtype;   /* QUANT_FWD scales */
    uint32_t scale_elems;          /* QUANT_FWD scales per token (0: none) */
    ncclxDataType_t idx_dtype;     /* topk_idx: INT32 or INT64 */
    ncclxDataType_t out_idx_dtype; /* RANK_MAJOR out_topk_idx: INT32 or INT64 */
    ncclxDataType_t combine_dtype; /* expert_out and out: BF16, FP16 or FP32 */
    uint32_t null_when_empty;      /* 1: a rank without tokens passes NULL data for its
                                      [0, ...] tensors (topk_idx, tokens, scales, weights, out) */
} ep_case_t;

/** What ep_run_fill draws. */
typedef enum {
    EP_ROUTE_RANDOM = 0, /* K distinct experts per token */
    EP_ROUTE_ONE_EXPERT, /* one entry = `expert`, the others -1 */
    EP_ROUTE_ONE_RANK,   /* every entry on one rank (distinct experts while it has enough) */
    EP_ROUTE_REPEATS     /* experts drawn with replacement: repeated ids within a token */
} ep_route_kind_t;

typedef struct {
    ep_route_kind_t kind;
    uint32_t expert;      /* EP_ROUTE_ONE_EXPERT */
    float unrouted;       /* probability that an entry becomes -1 */
    uint32_t empty_ranks; /* bit r: rank r has no token */
    int full;             /* 1: every other rank has max_tokens tokens; 0: 1 .. max_tokens */
    int keep_tokens;      /* 1: keep each rank's num_tokens (graph replays) */
    uint32_t bad_ranks;   /* bit r: rank r routes out-of-range ids (reference: -1) */
    uint32_t values;      /* EP_VALUES_* bits: which values are drawn (0: the defaults) */
} ep_routing_t;

/* Values ep_run_fill draws besides the defaults (finite BF16 blocks for the FP8 recipe,
 * weights in [0, 1), expert outputs in [-2, 2)). */
/** FP8 recipe inputs: 128-element blocks of NaN (quiet and signalling, both signs), +-Inf,
 * +-0, BF16 subnormals, the largest BF16 values, amax below the 1e-4 scale floor, and
 * values on E4M3 rounding ties, alone or mixed with ordinary values. */
#define EP_VALUES_SPECIAL_TOKENS 0x1u
/** Weights: +0, -0, negative, and per token a magnitude class: float subnormals (BF16 and
 * FP16 results +-0), 2^-128 (float and BF16 subnormal results), 2^-16 (FP16 subnormals), 1,
 * 2^15 (FP16 overflow), or powers of two 2^-3 .. 2^3 (sums on exact ties). */
#define EP_VALUES_SIGNED_WEIGHTS 0x2u
/** Expert outputs: per row a magnitude spread over the combine dtype's range (FP16: 2^-30 ..
 * 2^14; BF16 and FP32: 2^-140 .. 2^60), both signs. */
#define EP_VALUES_WIDE_EXPERT_OUT 0x4u

/** The default: random, 10% unrouted, random token counts. */
ep_routing_t ep_routing_default(void);

typedef struct {
    uint32_t num_tokens;
    /* Host inputs (max_tokens rows). idx is what the GPU gets, ref_idx what the reference
     * sees (the same but with out-of-range ids as -1). */
    int64_t *idx, *ref_idx;
    void *idx_upload; /* idx in the case's idx dtype */
    float *weights;
    uint8_t *tokens, *scales, *expert_out;
    /* Device buffers. */
    void *d_idx, *d_weights, *d_tokens, *d_scales, *d_expert_out;
    void *d_out_tokens, *d_out_scales, *d_counts, *d_out_idx, *d_out_weights, *d_out;
    /* Expected and received outputs on the host. */
    ncclx_ref_rank_dispatch_t want, got;
    void *got_idx_raw; /* out_topk_idx as received (INT32 or INT64) */
    double *want_out;
    uint8_t *got_out, *prev_out;
    int have_prev; /* prev_out holds a combine result of the same inputs */
    /* Zero copy (ep_run_zero_copy): the rank's rows from ncclxEpGroupGetLlBuffers (NULL
     * without) and their sizes (rows x row_bytes, rows x scale_bytes). */
    void *zc_tokens, *zc_scales;
    size_t zc_token_bytes, zc_scale_bytes;
} ep_rank_t;

typedef struct {
    ep_team_t *team;
    ep_case_t k;
    ncclx_ref_case_t c;
    size_t in_row, scale_row, out_rows, out_row, out_scale_row, counts, combine_row;
    ncclxEpHandle_t handle[EP_MAX_RANKS];
    int own_handles; /* 0: the handles are borrowed from another run (ep_run_share) */
    /* Active-mask tests.  masked (set before ep_run_fill): bit r: the reference runs without
     * rank r (no tokens from it, entries routed to its experts count as -1) and checks skip
     * it.  absent: bit r: rank r enqueues nothing (a dead rank); poison skips it too. */
    uint32_t masked, absent;
    /* Zero copy (runs of a group planned with zero_copy, after ep_run_zero_copy;
     * tests may change both between operations).  zc_dispatch: bit r: rank r's dispatch
     * receives in place (out_tokens, and out_scales where the case has them, are its zero-copy
     * rows), else into its own buffers.  zc_combine: bit r: rank r's expert outputs are written
     * into its zero-copy rows right before each of its combines (ep_run_stage_expert_out, in
     * stream order, as an expert computing in place writes them) and its combine reads
     * expert_out there. */
    uint32_t zc_dispatch, zc_combine;
    ep_rank_t r[EP_MAX_RANKS];
} ep_run_t;

/** Sizes and allocates everything of a case on team t (host and device). */
void ep_run_alloc(ep_run_t *run, ep_team_t *t, const ep_case_t *k);
void ep_run_free(ep_run_t *run);
/** Draws fresh inputs and routings, computes the expected outputs, uploads the inputs. */
void ep_run_fill(ep_run_t *run, const ep_routing_t *routing);
/** Makes run use other's handles (same layout and topk): ep_run_update reroutes them. */
void ep_run_share_handles(ep_run_t *run, const ep_run_t *other);
/** Takes every rank's zero-copy rows of the case's layout (ncclxEpGroupGetLlBuffers: L x R x T
 *  rows expert-major, R x T rank-major, each rank's own, large enough for the case's out_tokens,
 * out_scales and expert_out) and sets run->zc_dispatch and run->zc_combine.  From then on
 * ep_run_poison_dispatch also poisons every rank's zero-copy rows, from that rank's stream, whether
 * it receives in place or not. */
void ep_run_zero_copy(ep_run_t *run, uint32_t dispatch_ranks, uint32_t combine_ranks);
/** Where rank r's dispatch writes out_tokens / out_scales: its zero-copy rows (zc_dispatch)
 *  or its own buffers; the checks read them there. */
void *ep_out_tokens(const ep_run_t *run, uint32_t r);
void *ep_out_scales(const ep_run_t *run, uint32_t r);
/** Where rank r's combine reads expert_out: its zero-copy rows (zc_combine) or its buffer. */
void *ep_expert_out(const ep_run_t *run, uint32_t r);

/* ---- building arguments ---- */

ncclxTensor_t ep_tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0, int64_t d1,
                        int64_t d2);
ncclxTensor_t ep_idx_tensor(const ep_run_t *run, uint32_t r);
ncclxEpHandleConfig_t ep_handle_config(const ep_run_t *run);
ncclxEpDispatchArgs_t ep_dispatch_args(const ep_run_t *run, uint32_t r, uint32_t send_only);
ncclxEpCombineArgs_t ep_combine_args(const ep_run_t *run, uint32_t r, uint32_t send_only);

/* ---- operations on every rank (each enqueued for rank 0 .. R-1, nothing waited for) ---- */

void ep_run_create(ep_run_t *run);
void ep_run_update(ep_run_t *run);
void ep_run_destroy(ep_run_t *run);
/** Fills the dispatch outputs (or the combine output) with 0xff bytes, in stream order. */
void ep_run_poison_dispatch(const ep_run_t *run);
void ep_run_poison_combine(const ep_run_t *run);
void ep_run_enqueue_dispatch(ep_run_t *run, uint32_t send_only);
/** Combine on every rank; a zc_combine rank's expert outputs are staged first. */
void ep_run_enqueue_combine(ep_run_t *run, uint32_t send_only);
void ep_run_enqueue_complete(ep_run_t *run);
/** zc_combine: copies rank r's expert outputs (the rows ep_run_fill uploaded) into its
 *  zero-copy rows on its stream (capturable); nothing for another rank. */
void ep_run_stage_expert_out(const ep_run_t *run, uint32_t r);

/** One whole case on team t: allocate, create, dispatch and combine twice (checked), then new
 *  data rerouted through ncclxEpHandleUpdate and the same again; nothing may allocate after
 *  the buffers (where names the case in the failure); frees everything. */
void ep_run_case(ep_team_t *t, const ep_case_t *k, const ep_routing_t *rt, const char *where);

/** Poison, dispatch (+ complete when send_only) on every rank, wait, check. */
void ep_run_dispatch_and_check(ep_run_t *run, uint32_t send_only);
/** Poison, combine (+ complete) on every rank, wait, check. */
void ep_run_combine_and_check(ep_run_t *run, uint32_t send_only);

/* ---- checks (after the team's streams were synchronized) ---- */

/** Every rank's dispatch outputs against the reference, bit for bit (NaN codes included);
 * rows past the counts still poison. */
void ep_run_check_dispatch(ep_run_t *run);
/** Every rank's combine output bit for bit equal to the reference's float64 result rounded
 * once to nearest even (ncclx_ref_combine_diff_exact: the kernels promise it), and bitwise
 * equal to the previous result of the same inputs when there is one. */
void ep_run_check_combine(ep_run_t *run);
/** Fails unless every dispatch output (counts included) of every rank is still poison. */
void ep_run_check_dispatch_untouched(const ep_run_t *run);
/** Fails unless every rank's combine output is still poison. */
void ep_run_check_combine_untouched(const ep_run_t *run);

/* ---- allocation counting ---- */

void ep_alloc_arm(void);
/** Disarms; fails if anything allocated since ep_alloc_arm (names the first allocator). */
void ep_alloc_assert_none(const char *where);

/** Fails with the CUDA error string unless err is cudaSuccess. */
#define assert_cuda_ok(call)                                            \
    do {                                                                \
        cudaError_t err_ = (call);                                      \
        if (err_ != cudaSuccess) {                                      \
            fail_msg("%s failed: %s", #call, cudaGetErrorString(err_)); \
        }                                                               \
    } while (0)

#endif /* NCCLX_TEST_EP_LL_HARNESS_H_ */
