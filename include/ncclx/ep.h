/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Mixture-of-Experts dispatch and combine: the low-latency (LL) algorithm, described first,
 * and the high-throughput (HT) algorithm, described before ncclxEpHandleGetLayout below.
 *
 * A group (declared in the plan) spans every rank of the context; experts are numbered
 * globally, rank r owns experts [r * L, (r + 1) * L) with L = num_experts / num_ranks.  A
 * handle holds one routing (topk_idx); dispatch sends each token once to every rank that owns
 * at least one of its experts, combine brings the expert outputs back and reduces them.
 *
 * Layouts (chosen per handle):
 *  - EXPERT_MAJOR: dispatch writes out_tokens [L, R * T, hidden], the received tokens of local
 *    expert e at rows 0 .. out_counts[e] - 1, ordered by (source rank, source token index);
 *    combine takes expert_out of the same shape and the caller's topk_weights [T, K], and
 *    returns out[t] = sum over k (in k order) of weight[t][k] * expert_out row of (t, k).
 *  - RANK_MAJOR: dispatch writes out_tokens [R, T, hidden]: row (s, i) is the i-th token that
 *    source rank s sent here (in source token order), out_counts[s] of them, plus out_topk_idx
 *    [R, T, K] (each top-k entry of the token: the expert id, local or global numbering, or
 *    -1 where the expert is not on this rank) and out_topk_weights [R, T, K]; combine takes
 *    expert_out [R, T, hidden] holding one pre-weighted row per received token and returns
 *    out[t] = sum over the token's destination ranks (in rank order) of their rows.
 * Combine accumulates in float64, in that fixed order, and rounds once to expert_out's dtype:
 * both directions are deterministic (two runs on the same input give bitwise-identical
 * outputs).  A token that lists one expert twice gets one expert-major row; combine applies
 * both weights to it.
 *
 * R = ranks, T = max_dispatch_tokens_per_rank of the group, K = the handle's top-k, hidden =
 * the group's planned hidden (every call uses exactly it).  Entries of topk_idx equal to -1
 * are not routed; entries outside [-1, num_experts) are treated as -1 (the token's other
 * entries are still delivered) and reported by ncclxEpGetAsyncError.  Every rank passes the
 * same top-k, layout, recipe, dtypes and scale row size to one operation (QUANT_FWD: a rank
 * without tokens passes its [0, S] scales, not absent ones): every message and
 * signal carries an operation word, and a receiver drops (never reads) the data of a peer
 * whose word differs and reports NCCLX_EP_ERROR_MISMATCH.  Every call checks its arguments
 * against the group and the handle and names the offending field; nothing here allocates, and
 * every call can be captured in a CUDA graph.
 *
 * Streams, graphs and threads: a group's eager work runs on one stream at a time.  Handle
 * create/update/import, dispatch, combine, layout, the mask calls and (HT) the error clear of
 * one group are refused (ncclxInvalidUsage) on a stream other than the one of the group's previous
 * eager operation until that operation is known complete (synchronize the old stream before
 * switching).  Calls made while their stream is being captured are neither checked nor
 * remembered: a capture enqueues nothing, so it may happen on any stream (the PyTorch pattern:
 * warm up and capture on a side stream, keep calling eagerly on the program's own streams,
 * replay on any of them).  Graph replays are not seen by the library: replay a group's graphs
 * on one stream at a time, and not while eager work of the group is in flight on another
 * stream.  ncclxEpComplete comes on the stream of its send_only call, captured or eager.  Calls
 * on one group (and its handles) need external synchronization between threads; different
 * groups and contexts may be driven from different threads.
 *
 * Failed launches: if the receive half of a dispatch or combine fails to launch after its send
 * ran, the operation stays in flight and ncclxEpComplete retries it (it is never sent twice);
 * a routing launch that fails leaves the handle without routing (dispatch is refused until an
 * update succeeds).  A CUDA error left pending by the application (cudaGetLastError) is logged
 * and cleared before each launch, so it is not taken for the launch's failure.
 */
#ifndef NCCLX_EP_H_
#define NCCLX_EP_H_

#include <stdint.h>

#include <ncclx/init.h>
#include <ncclx/plan.h>
#include <ncclx/result.h>
#include <ncclx/struct.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclxEpGroup *ncclxEpGroup_t;
typedef struct ncclxEpHandle *ncclxEpHandle_t;

#define NCCLX_MAGIC_EP_HANDLE_CONFIG 0x6e786863u /* 'nxhc' */
#define NCCLX_MAGIC_EP_DISPATCH_ARGS 0x6e786461u /* 'nxda' */
#define NCCLX_MAGIC_EP_COMBINE_ARGS  0x6e786361u /* 'nxca' */
#define NCCLX_MAGIC_EP_LAYOUT_INFO   0x6e786c69u /* 'nxli' */

/** Direction of an HT dispatch or combine (ncclxEpDispatchArgs_t.pass, ...CombineArgs_t.pass). */
#define NCCLX_EP_PASS_FORWARD  0u
#define NCCLX_EP_PASS_BACKWARD 1u

#define NCCLX_TENSOR_MAX_DIMS 4

/** A contiguous row-major device tensor. */
typedef struct {
    void *data;                           /**< device pointer (NULL: absent) */
    ncclxDataType_t dtype;                /**< element type */
    uint32_t ndim;                        /**< dimensions used in shape */
    int64_t shape[NCCLX_TENSOR_MAX_DIMS]; /**< sizes, outermost first */
} ncclxTensor_t;

/** An absent tensor. */
#define NCCLX_TENSOR_INIT        \
    {                            \
        NULL, NCCLX_BFLOAT16, 0, \
        {                        \
            0, 0, 0, 0           \
        }                        \
    }

/** The EP group declared at plan index `index` of ctx. */
ncclxResult_t ncclxEpGroupGet(ncclxContext_t ctx, uint32_t index, ncclxEpGroup_t *group);

typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t layout;            /**< one NCCLX_EP_LAYOUT_* the group's plan allows */
    uint32_t topk;              /**< K, 1 .. the group's max_topk */
    uint32_t global_expert_ids; /**< RANK_MAJOR (LL) and FLAT (HT) out_topk_idx: 1 global ids,
                                     0 local (e - r*L) */
    uint32_t reserved0;
} ncclxEpHandleConfig_t;

#define NCCLX_EP_HANDLE_CONFIG_INIT                                                    \
    {                                                                                  \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpHandleConfig_t, NCCLX_MAGIC_EP_HANDLE_CONFIG), \
            NCCLX_EP_LAYOUT_EXPERT_MAJOR, 1, 0, 0                                      \
    }

/**
 * Takes a handle from the group's pool and routes it with topk_idx ([num_tokens, K], int32 or
 * int64, num_tokens <= T; values in [-1, num_experts)).  The routing is computed on the GPU in
 * stream order.  ncclxResourceExhausted when the group's num_handles are all in use.
 */
ncclxResult_t ncclxEpHandleCreate(ncclxEpGroup_t group, const ncclxEpHandleConfig_t *config,
                                  const ncclxTensor_t *topk_idx, ncclxStream_t stream,
                                  ncclxEpHandle_t *handle);

/**
 * Split lifecycle (both algorithms): size a handle's device memory, allocate it yourself (for
 * example before a CUDA graph capture), initialize a handle on it without routing, and route it
 * later with ncclxEpHandleUpdate (dispatch before the first update is refused).
 *
 * *bytes = the exact device memory of one handle of group with this layout and top-k (topk 0:
 * the group's max_topk): with the largest shape, what the plan reserves per handle.  Pure host
 * call.
 */
ncclxResult_t ncclxEpHandleMemSize(ncclxEpGroup_t group, uint32_t layout, uint32_t topk,
                                   size_t *bytes);

/**
 * A handle on caller device memory: handle_mem is a 1-D NCCLX_UINT8 device tensor of at least
 * ncclxEpHandleMemSize(config->layout, config->topk) bytes, 16-byte aligned, that the caller
 * keeps for the handle's life (destroy never frees it).  The host struct comes from the group's
 * pool (ncclxResourceExhausted when all num_handles are in use).  Nothing is enqueued on stream
 * and nothing allocates: call it before a capture, then capture update, dispatch and combine.
 */
ncclxResult_t ncclxEpHandleInit(ncclxEpGroup_t group, const ncclxEpHandleConfig_t *config,
                                const ncclxTensor_t *handle_mem, ncclxStream_t stream,
                                ncclxEpHandle_t *handle);

#define NCCLX_MAGIC_EP_HANDLE_STATE 0x6e787374u /* 'nxst' */

/** What a snapshot of an HT handle's memory was routed with (ncclxEpHandleImport). */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t num_tokens;            /**< tokens of the routing */
    uint32_t topk;                  /**< K of the exporting handle */
    ncclxDataType_t topk_idx_dtype; /**< NCCLX_INT32 or NCCLX_INT64, as routed */
    uint32_t global_expert_ids;     /**< config.global_expert_ids of the exporting handle */
} ncclxEpHandleState_t;

#define NCCLX_EP_HANDLE_STATE_INIT                                                         \
    {                                                                                      \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpHandleState_t, NCCLX_MAGIC_EP_HANDLE_STATE), 0, 1, \
            NCCLX_INT64, 0                                                                 \
    }

/**
 * HT export and import.  An HT handle's device memory holds no pointer: a byte copy of the
 * memory of a handle on caller memory (ncclxEpHandleInit), taken after its routing, is a
 * complete snapshot of that routing, with a header (format, the group's geometry and this
 * rank, the layout and top-k, the routing step) and a checksum.  ncclxEpHandleImport binds such
 * a copy (handle_mem, at least ncclxEpHandleMemSize(layout, state->topk) bytes) to a handle of
 * the group's pool: after checking the header against this group, rank, layout and *state and
 * the checksum (ncclxInvalidArgument naming what differs, nothing written), the handle
 * dispatches and combines exactly as the exporting one did.  It launches a check kernel on
 * stream and waits for it: not capturable.  All ranks must import snapshots of the same routing
 * step: operations between handles of different steps exchange nothing and report
 * NCCLX_EP_ERROR_MISMATCH.  ncclxInvalidUsage on LL groups.
 */
ncclxResult_t ncclxEpHandleImport(ncclxEpGroup_t group, uint32_t layout,
                                  const ncclxEpHandleState_t *state,
                                  const ncclxTensor_t *handle_mem, ncclxStream_t stream,
                                  ncclxEpHandle_t *handle);

/** Routes an existing handle with new topk_idx (same K; num_tokens may change). */
ncclxResult_t ncclxEpHandleUpdate(ncclxEpHandle_t handle, const ncclxTensor_t *topk_idx,
                                  ncclxStream_t stream);

/** Returns the handle to its group's pool (after the work using it has been enqueued). */
ncclxResult_t ncclxEpHandleDestroy(ncclxEpHandle_t handle);

/** Dispatch arguments.  Output rows past the received counts are left untouched. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t recipe;       /**< NCCLX_EP_RECIPE_NONE, _QUANT_FWD or _FP8 (the plan allows it) */
    uint32_t round_scales; /**< FP8: round each scale up to a power of two */
    uint32_t send_only;    /**< 1: only send; ncclxEpComplete receives */
    uint32_t reserved0;
    ncclxTensor_t tokens;       /**< [num_tokens, hidden]: BF16/FP16/FP32 (NONE), BF16 (FP8), any
                                     dtype with 16-byte rows (QUANT_FWD) */
    ncclxTensor_t scales;       /**< QUANT_FWD only: [num_tokens, S] of any dtype */
    ncclxTensor_t topk_weights; /**< [num_tokens, K] FLOAT32; RANK_MAJOR only (forwarded) */
    ncclxTensor_t out_tokens;   /**< EXPERT_MAJOR [L, R*T, hidden], RANK_MAJOR [R, T, hidden];
                                     dtype of tokens (FP8_E4M3 for the FP8 recipe) */
    ncclxTensor_t out_scales;   /**< FP8: [L, R*T, hidden/128] or [R, T, hidden/128] FLOAT32;
                                     QUANT_FWD: [L, R*T, S] or [R, T, S] of scales' dtype */
    ncclxTensor_t out_counts;   /**< INT32: EXPERT_MAJOR [L] per local expert, RANK_MAJOR [R]
                                     per source rank */
    ncclxTensor_t out_topk_idx; /**< RANK_MAJOR: [R, T, K] INT32 or INT64 */
    ncclxTensor_t out_topk_weights; /**< RANK_MAJOR: [R, T, K] FLOAT32 */
    /* Since 0.2 (a 0.1 caller's smaller struct gets the defaults). */
    uint32_t pass; /**< HT: NCCLX_EP_PASS_FORWARD (default) or _BACKWARD; LL: forward only */
    uint32_t reserved1;
} ncclxEpDispatchArgs_t;

#define NCCLX_EP_DISPATCH_ARGS_INIT                                                     \
    {                                                                                   \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpDispatchArgs_t, NCCLX_MAGIC_EP_DISPATCH_ARGS),  \
            NCCLX_EP_RECIPE_NONE, 0, 0, 0, NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT,        \
            NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, \
            NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_EP_PASS_FORWARD, 0              \
    }

/** Dispatches the handle's tokens; with send_only, ncclxEpComplete finishes it. */
ncclxResult_t ncclxEpDispatch(ncclxEpHandle_t handle, const ncclxEpDispatchArgs_t *args,
                              ncclxStream_t stream);

typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t send_only; /**< 1: only send; ncclxEpComplete receives and reduces */
    uint32_t reserved0;
    ncclxTensor_t expert_out;   /**< same shape as the dispatch's out_tokens; BF16/FP16/FP32;
                                     rows are 16-byte multiples (hidden x element bytes) */
    ncclxTensor_t topk_weights; /**< EXPERT_MAJOR: [num_tokens, K] FLOAT32 */
    ncclxTensor_t out;          /**< [num_tokens, hidden], expert_out's dtype */
    /* Since 0.2 (a 0.1 caller's smaller struct gets the defaults). */
    uint32_t pass; /**< HT: NCCLX_EP_PASS_FORWARD (default) or _BACKWARD; LL: forward only */
    uint32_t reserved1;
    ncclxTensor_t out_topk_weights; /**< HT backward: [num_tokens, K] FLOAT32, the gradient of
                                         the token's top-k weights */
    uint32_t recipe; /**< NCCLX_EP_RECIPE_NONE (default), or NCCLX_EP_RECIPE_MXFP8: HT,
                          EXPERT_MAJOR handle, BF16 expert_out and out, a group planned with
                          the recipe, expert_out not the group's own combine rows (zero copy);
                          forward or backward.  Each rank's rows of a token are summed in FP32
                          and sent once as E4M3 codes with one E8M0 scale per 32 elements
                          (the library makes the scales: there is no scales input); the token's
                          rank adds the decoded rows in FP32 and rounds once to BF16.  Backward
                          weight gradients travel unquantized. */
    uint32_t reserved2;
} ncclxEpCombineArgs_t;

#define NCCLX_EP_COMBINE_ARGS_INIT                                                             \
    {                                                                                          \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpCombineArgs_t, NCCLX_MAGIC_EP_COMBINE_ARGS), 0, 0,     \
            NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_EP_PASS_FORWARD, 0, \
            NCCLX_TENSOR_INIT, NCCLX_EP_RECIPE_NONE, 0                                         \
    }

/** Combines the experts' outputs of the handle's last dispatch back into out. */
ncclxResult_t ncclxEpCombine(ncclxEpHandle_t handle, const ncclxEpCombineArgs_t *args,
                             ncclxStream_t stream);

/**
 * Finishes the handle's send_only dispatch or combine (receive, unpack or reduce) in stream
 * order.  One send may be in flight per group.
 */
ncclxResult_t ncclxEpComplete(ncclxEpHandle_t handle, ncclxStream_t stream);

/*
 * High throughput (HT): groups planned with NCCLX_EP_ALGO_HT, for thousands of tokens per
 * rank (training, prefill), inside one load/store team (every rank reachable by NVLink, or a
 * loopback team).  docs/ep-ht.md describes the algorithm and every protocol word.
 *
 * The routing is computed once per ncclxEpHandleCreate / ncclxEpHandleUpdate, on the GPU and
 * capturable: every rank publishes one bit per (token, expert), the ranks exchange those maps
 * and each computes, by prefix counts, the final receive row of each of its tokens at every
 * destination.  S = max_recv_tokens_per_rank (0 in the plan: R * T) receive rows per rank.
 * Layouts (the handle's config.layout):
 *  - FLAT: one row per (token, destination rank) pair, however many of the rank's experts the
 *    token hits, ordered by (source rank, source token).  Dispatch writes out_tokens [S,
 *    hidden], out_topk_idx [S, K] (INT32 or INT64: the token's experts on this rank, ascending,
 *    local or global ids per config.global_expert_ids, then -1) and out_topk_weights [S, K]
 *    (their weights, then 0).
 *  - EXPERT_MAJOR: one row per (token, local expert) pair, in one zone per local expert (in
 *    expert order), each zone ordered by (source rank, source token) and padded with zero rows
 *    to a multiple of expert_alignment (an expert with no tokens takes no rows).  Dispatch
 *    writes out_tokens [S, hidden] and out_topk_weights [S] (the row's weight, 0 on pad rows);
 *    out_topk_idx must be absent.
 * Rows past the received rows are left untouched.  ncclxEpHandleGetLayout gives the counts.
 * A token that lists one expert twice goes to it once, with the weight of the first listing.
 *
 * Forward dispatch takes tokens [num_tokens, hidden] (BF16/FP16/FP32 with RECIPE_NONE; any
 * dtype with 16-byte rows plus scales with RECIPE_QUANT_FWD, both forwarded as bytes) and
 * topk_weights [num_tokens, K] FLOAT32.  Forward combine takes expert_out [S, hidden] (one row
 * per received row, weights already applied by the caller) and returns out[t] = the sum of
 * the token's rows over its destination ranks in rank order (EXPERT_MAJOR: over its experts in
 * expert order), accumulated in FP32 and rounded once: deterministic, bitwise.  A token with no
 * destination gets a zero row.  Backward dispatch scatters gradients [num_tokens, hidden] into
 * the forward rows (no weights); backward combine also takes topk_weights = the gradient of the
 * received weights (FLAT [S, K], EXPERT_MAJOR [S]) and returns out_topk_weights [num_tokens, K]:
 * each top-k entry's gradient (0 for -1 entries, repeated experts after the first, and dropped
 * rows).
 * MXFP8 combine (args->recipe = NCCLX_EP_RECIPE_MXFP8, see ncclxEpCombineArgs_t): on each rank
 * the token's EXPERT_MAJOR rows there are summed in FP32 (ascending expert) and the sum is
 * quantized once: blocks of 32 elements, scale e = the E8M0 exponent of amax / 448 rounded up
 * (bias 127, at most 254; 0 for an all-zero block), codes = E4M3 (nearest even, saturating to
 * +-448, NaN -> 0x7f) of x * 2^(127 - e).  The token's rank adds code * 2^(e - 127) (e = 0
 * decodes to 0) over ranks in ascending order in FP32 and rounds once to BF16: bitwise
 * deterministic; same-rank experts give Q(a + b), different ranks Q(a) + Q(b).  A row of
 * H + H / 32 bytes crosses NVLink instead of 2H.  Needs hidden % 32 == 0 (the plan checks it).
 *
 * Overflow: a routing that needs more than S rows on a rank is, per the group's
 * overflow_policy, TRAP: every rank reports NCCLX_EP_ERROR_OVERFLOW, the group's kernels do
 * nothing from then on (outputs untouched, the ranks stay in step), its next call fails with
 * ncclxInvalidUsage naming the overflow, and after ncclxEpClearAsyncError (on every rank) each
 * handle must be routed again before its next dispatch; or DROP: rows past S are not delivered
 * (FLAT: the last source ranks' last tokens; EXPERT_MAJOR: the rows of the last zones), counts
 * and offsets are clamped to S, the total reports the true number, and a dropped (token, rank)
 * or (token, expert) contributes 0 to combine.
 * Every rank passes the same layout, top-k, pass, recipe, dtype and row sizes to one operation:
 * the step signals carry an operation word, and a rank whose word differs from a peer's reads
 * none of its rows and reports NCCLX_EP_ERROR_MISMATCH (the operation's outputs are then
 * undefined).  Whether a rank uses zero copy is not part of it (ncclxEpHtBuffers_t).  A rank
 * that reports no error has received every row of the operation: a rank whose wait timed out
 * closes its outputs to late peers, which still deliver their rows to every other rank (and
 * report NCCLX_EP_ERROR_MISMATCH: their rows for the closed rank were dropped); a peer that
 * could not deliver to a rank that did not close tells every rank (each reports a mismatch).
 * A launch that fails in the middle of an HT step leaves the group unusable.
 * send_only, ncclxEpComplete and the active mask are LL features (refused on HT groups).
 */

/** Where ncclxEpHandleGetLayout writes (every tensor optional, one device tensor each; INT32 or
 *  INT64, all present ones of one dtype). */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t reserved0, reserved1;
    ncclxTensor_t expert_counts;  /**< [>= L]: rows per local expert (FLAT: received rows
                                       that hit it; EXPERT_MAJOR: its zone, padded), clamped */
    ncclxTensor_t expert_offsets; /**< EXPERT_MAJOR [>= L]: first row of each zone (clamped to
                                       S); [L] = the padded total when L + 1 entries */
    ncclxTensor_t recv_total;     /**< [>= 1]: rows the routing needs before any drop (FLAT:
                                       tokens received; EXPERT_MAJOR: padded rows) */
} ncclxEpLayoutInfo_t;

#define NCCLX_EP_LAYOUT_INFO_INIT                                                        \
    {                                                                                    \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpLayoutInfo_t, NCCLX_MAGIC_EP_LAYOUT_INFO), 0, 0, \
            NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT, NCCLX_TENSOR_INIT                      \
    }

#define NCCLX_MAGIC_EP_HT_BUFFERS 0x6e786862u /* 'nxhb' */

/**
 * HT zero-copy buffers: this rank's dispatch rows and combine rows in symmetric memory (what
 * peers write into and read from).  A dispatch whose out_tokens is dispatch_rows viewed as
 * [rows, hidden] (its token rows exactly dispatch_row_bytes, no scales) receives the rows in
 * place instead of copying them out; they stay valid until this rank's next HT dispatch of the
 * group is enqueued.  A combine whose expert_out is combine_rows viewed as [rows, hidden] (rows
 * of exactly combine_row_bytes) reads the expert outputs in place; write them there only after
 * a dispatch of the group that was enqueued after the group's previous combine (until then
 * peers may still read that combine's rows: with two handles, dispatch A, dispatch B, combine A,
 * the rows for B may be written only after another dispatch).  Never write the dispatch rows
 * yourself (peers write them from their next dispatch on), and keep tokens and combine outputs
 * out of both buffers (refused).  Other buffers work as before (one more copy each way).
 * Zero copy is each rank's own choice, per call, on every path: ranks of one operation may mix
 * it freely with buffers of their own (it is not part of the operation word).  On the direct
 * path (every rank on one GPU) a zero-copy rank's buffers are its outputs and inputs in place,
 * written and read by the peers as they would be on the staged path.
 */
typedef struct {
    NCCLX_STRUCT_HEADER;
    void *dispatch_rows;         /**< device [rows][dispatch_row_bytes] */
    void *combine_rows;          /**< device [rows][combine_row_bytes] */
    uint64_t dispatch_row_bytes; /**< the plan's largest token row (scales included) */
    uint64_t combine_row_bytes;  /**< hidden x the plan's largest combine element */
    uint32_t rows;               /**< max_recv_tokens_per_rank */
    uint32_t reserved0;
} ncclxEpHtBuffers_t;

#define NCCLX_EP_HT_BUFFERS_INIT                                                                   \
    {                                                                                              \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpHtBuffers_t, NCCLX_MAGIC_EP_HT_BUFFERS), NULL, NULL, 0, 0, \
            0, 0                                                                                   \
    }

/** HT: this rank's zero-copy buffers of group (an output struct: start from
 *  NCCLX_EP_HT_BUFFERS_INIT).  ncclxInvalidUsage on an LL group. */
ncclxResult_t ncclxEpGroupGetHtBuffers(ncclxEpGroup_t group, ncclxEpHtBuffers_t *buffers);

#define NCCLX_MAGIC_EP_LL_BUFFERS 0x6e786c6cu /* 'nxll' */

/**
 * LL zero-copy rows (a group planned with zero_copy): where this rank's dispatch rows land.
 * Each peer writes every row it sends here once, at its final place, so the dispatch moves each
 * row once.  Expert-major handles use `tokens` / `scales` (viewed as [L, R*T, hidden] of the
 * call's dtype, and [L, R*T, the call's scale row]); rank-major handles `rank_major_tokens` /
 * `rank_major_scales` ([R*T, hidden] and [R*T, scale row]: row s*T + i is source s's i-th
 * token), rows of their own, so that the two layouts' dispatches never overwrite each other's
 * rows.  Rows are packed at the call's row size, which is at most row_bytes.  A dispatch whose
 * out_tokens (and out_scales, FP8 and QUANT_FWD) are its layout's rows receives in place; other
 * out_tokens / out_scales get one more copy, from these rows.  The rows of a dispatch stay valid
 * until this rank's next dispatch of the group in the same layout is enqueued (peers write the
 * next rows only after this rank has started that dispatch, in stream order): compute on them,
 * and combine from them, before it.  Combine may read expert_out from its layout's rows where
 * its rows fit in row_bytes (hidden x the combine dtype's size <= row_bytes: not BF16 expert
 * outputs on a plan whose largest row is FP8).  Never write them while a dispatch of the group
 * is in flight.
 */
typedef struct {
    NCCLX_STRUCT_HEADER;
    void *tokens;             /**< device [L][R*T] rows of up to row_bytes; NULL without
                                   NCCLX_EP_LAYOUT_EXPERT_MAJOR in the plan's layouts */
    void *scales;             /**< device [L][R*T] scale rows of up to scale_bytes; NULL
                                   without FP8 or QUANT_FWD */
    uint64_t row_bytes;       /**< the plan's largest token row (hidden x dtype, or
                                   max_token_bytes) */
    uint64_t scale_bytes;     /**< the plan's largest scale row (0 without) */
    uint32_t rows;            /**< L x R x T (0 without expert-major) */
    uint32_t rank_major_rows; /**< R x T (0 without NCCLX_EP_LAYOUT_RANK_MAJOR) */
    void *rank_major_tokens;  /**< device [R*T] rows of up to row_bytes; NULL without
                                   NCCLX_EP_LAYOUT_RANK_MAJOR in the plan's layouts */
    void *rank_major_scales;  /**< device [R*T] scale rows; NULL without scales or rank-major */
} ncclxEpLlBuffers_t;

#define NCCLX_EP_LL_BUFFERS_INIT                                                                   \
    {                                                                                              \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpLlBuffers_t, NCCLX_MAGIC_EP_LL_BUFFERS), NULL, NULL, 0, 0, \
            0, 0, NULL, NULL                                                                       \
    }

/** LL: this rank's zero-copy rows of group (an output struct: start from
 *  NCCLX_EP_LL_BUFFERS_INIT).  ncclxInvalidUsage on an HT group or one planned without
 *  zero_copy. */
ncclxResult_t ncclxEpGroupGetLlBuffers(ncclxEpGroup_t group, ncclxEpLlBuffers_t *buffers);

/** HT: writes the handle's receive layout (its last routing) into info's tensors, in stream
 *  order, with no host synchronization: capturable. */
ncclxResult_t ncclxEpHandleGetLayout(ncclxEpHandle_t handle, const ncclxEpLayoutInfo_t *info,
                                     ncclxStream_t stream);

/**
 * A loopback team: num_ranks ranks of one job emulated on one GPU in this process, each a
 * full context (its own slice of one symmetric allocation, its own arenas) running the same
 * kernels as real ranks.  Drive rank r with contexts[r] on its own non-blocking stream; all
 * ranks' calls of one operation must be enqueued before any of them can finish.  Each kernel
 * of an EP group runs on the plan's sm_budget blocks per rank: blocks of 512 threads, two of
 * which fit on an SM, so a kernel occupies at most sm_budget SMs (at least sm_budget / 2).
 * The default (sm_budget 0) is 2 x SMs / num_ranks blocks (an LL group with an active mask:
 * SMs / num_ranks), a share that keeps every rank's kernels co-resident.
 * Each rank's stream needs a hardware queue of its own (CUDA_DEVICE_MAX_CONNECTIONS, 8 by
 * default, at most 32): this call sets 32 when CUDA has not started yet in the process, and
 * refuses (ncclxInvalidUsage, saying what to do) a team of more ranks than the queues in effect
 * allow -- more than 32 ranks, or, when CUDA started before the library without the variable
 * (PyTorch, compute-sanitizer), more than half of CUDA's 8 queues, which the program's own
 * streams share: export CUDA_DEVICE_MAX_CONNECTIONS=32 before CUDA starts.
 * Finalize every context with ncclxFinalize (any order).
 */
ncclxResult_t ncclxLoopbackInit(const ncclxPlan_t *plan, uint32_t num_ranks, int cuda_device,
                                ncclxContext_t contexts[]);

#define NCCLX_MAGIC_LOOPBACK_CONFIG 0x6e786c62u /* 'nxlb' */

/** How ncclxLoopbackInitConfig builds a loopback team. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t num_ranks;  /**< ranks of the team, as for ncclxLoopbackInit */
    int32_t cuda_device; /**< the GPU every rank runs on */
    /**
     * The emulated shape.  0: none, the team of ncclxLoopbackInit: one load/store domain in
     * which every rank also reaches the other ranks' own (caller) buffers, so the paths that
     * exist only on one GPU (HT's and M2N's direct paths) run.  N >= 1, dividing num_ranks:
     * N nodes of num_ranks / N ranks each (team.num_nodes = N, team.lsa_size = num_ranks / N),
     * and each rank reaches the others only as a rank of a real team of that shape could: the
     * ranks of its node through the library's symmetric memory (the device peer table holds
     * only them), never their caller buffers, so the one-GPU paths are off and the paths of a
     * real team run.  A plan whose capabilities cannot cross load/store domains yet is refused
     * on a team of N >= 2 as on a real one (README, "What works today").
     */
    uint32_t num_nodes;
    uint32_t reserved0;
} ncclxLoopbackConfig_t;

#define NCCLX_LOOPBACK_CONFIG_INIT                                                               \
    {                                                                                            \
        NCCLX_STRUCT_HEADER_INIT(ncclxLoopbackConfig_t, NCCLX_MAGIC_LOOPBACK_CONFIG), 1, 0, 0, 0 \
    }

/**
 * ncclxLoopbackInit with a config (NULL: refused; NCCLX_LOOPBACK_CONFIG_INIT is one rank on
 * device 0 without a shape).  ncclxLoopbackInit(plan, n, dev, contexts) is this call with
 * num_ranks n, cuda_device dev and num_nodes 0.  Everything else is as ncclxLoopbackInit says.
 */
ncclxResult_t ncclxLoopbackInitConfig(const ncclxPlan_t *plan, const ncclxLoopbackConfig_t *config,
                                      ncclxContext_t contexts[]);

/**
 * Reads the group's asynchronous error word (mapped host memory: no GPU synchronization):
 * 0 = none, else an NCCLX_EP_ERROR_* bit set by a kernel (a wait timed out, ...).
 */
ncclxResult_t ncclxEpGetAsyncError(ncclxEpGroup_t group, uint32_t *error);

/**
 * Clears, in stream order, the bits of the group's asynchronous error word that this call
 * reads (nothing else clears them; an HT group's NCCLX_EP_ERROR_TIMEOUT is never cleared, and
 * an HT group's clear runs on the group's stream like its other calls).  A bit that a kernel
 * reports after that read, or that an operation enqueued earlier on stream reports before the clear
 * runs, survives: no report is ever lost.  Does not wait for the GPU: the word reads 0 once the
 * clear has run (synchronize stream to be sure).  Capturable, but a captured clear clears the bits
 * seen at capture.
 */
ncclxResult_t ncclxEpClearAsyncError(ncclxEpGroup_t group, ncclxStream_t stream);

/*
 * Active mask (LL groups planned with enable_mask).  Each rank keeps one entry per rank of
 * the group, 1 = active, 0 = masked, in device memory reserved by the plan.  When a GPU wait
 * for rank k runs past the group's timeout (ncclxEpGroupPlan_t.timeout_ns, or
 * NCCLX_TIMEOUT_MS), the kernel masks k, sets NCCLX_EP_ERROR_TIMEOUT and finishes without k:
 * k's tokens are not received (its counts are 0), tokens routed to k's experts contribute
 * nothing to combine, nothing is read from k's slots, and later operations neither send to
 * nor wait for k.  The timeout also marks k evicted in k's own symmetric memory: k, if it was
 * only late, learns that it is out (NCCLX_EP_ERROR_EVICTED, its own mask entry reads 0) and
 * sends nothing more; rows of a combine send of k that were already past that check are
 * waited for, up to half the timeout, before each survivor's next combine signal
 * (docs/ep-ll.md, "Late rows"), so they never land in a survivor's later operation.  (Each
 * other rank masks k through its own wait; no rank masks a third one.)  A rank whose own entry is 0
 * is out of the group: its operations exchange nothing (dispatch counts 0, combine output 0). Every
 * block of an operation uses the same answer for whether a rank arrived.  Groups without masking
 * also time out instead of hanging: the error bit is set, from then on their kernels exchange
 * nothing (no waits, counts 0, combine output 0; graph replays included), and the next call on
 * the group fails with ncclxTimeout (finalize the context).
 *
 * All four calls below are refused (ncclxUnsupported / ncclxInvalidUsage) on HT groups and on
 * groups planned without enable_mask.  Update and clean invalidate every handle's dispatch
 * (combine again only after a new dispatch) and are refused while a send_only operation is in
 * flight.
 */

/**
 * Writes the mask (1 active, 0 masked) into mask: a device INT32 tensor [num_ranks].  Stream
 * ordered, no allocation, no host synchronization: capturable in a CUDA graph.
 */
ncclxResult_t ncclxEpMaskQuery(ncclxEpGroup_t group, const ncclxTensor_t *mask,
                               ncclxStream_t stream);

/**
 * Masks, in this rank's mask, every rank whose entry of mask (host memory, num_ranks int32
 * values, each 0 or 1, read during the call) is 0, applied in stream order.  Masking a rank on
 * every rank makes the group skip it without a timeout.  It never re-activates a rank (only a
 * clean does, which keeps sequence numbers in step): a 1 for a rank that an earlier update of
 * this rank masked is refused (ncclxInvalidArgument), and a 1 for a rank masked by a timeout
 * leaves it masked.  Captured in a graph, the mask values are baked into the graph.
 */
ncclxResult_t ncclxEpMaskUpdate(ncclxEpGroup_t group, const int32_t *mask, uint32_t num_ranks,
                                ncclxStream_t stream);

/**
 * Collective over the ranks that are to be active afterwards (a masked or evicted rank that
 * wants back in calls it too): waits for every earlier operation of every rank, resets the
 * receive signals and sequence numbers, sets every answering rank active, and agrees on a new
 * generation with every answering rank, so a delayed rank can rejoin the same communicator.
 * A rank that does not call it within the group's timeout stays masked (and
 * NCCLX_EP_ERROR_TIMEOUT is set); ranks that cleaned without others, or missed a clean, agree
 * again at the next clean they all call.  Does not clear the asynchronous error
 * (ncclxEpClearAsyncError does).  Stream ordered.
 */
ncclxResult_t ncclxEpMaskClean(ncclxEpGroup_t group, ncclxStream_t stream);

#define NCCLX_EP_ERROR_TIMEOUT    0x1u /**< a GPU wait ran past the group's timeout */
#define NCCLX_EP_ERROR_BAD_EXPERT 0x2u /**< a topk_idx value outside [-1, num_experts) */
/** A peer's operation did not match this rank's (top-k, layout, recipe or dtype differ, or a
 *  message carried the wrong sequence tag): its data was dropped, not read. */
#define NCCLX_EP_ERROR_MISMATCH 0x4u
/** HT: a routing needed more receive rows than max_recv_tokens_per_rank on some rank under
 *  the TRAP policy: the group does nothing until the error is cleared. */
#define NCCLX_EP_ERROR_OVERFLOW 0x10u
/** This rank was masked out by a peer (it was late past the group's timeout): it exchanges
 *  nothing until ncclxEpMaskClean re-admits it. */
#define NCCLX_EP_ERROR_EVICTED 0x8u

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_EP_H_ */
