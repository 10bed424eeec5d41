/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Argument checks of LL dispatch and combine, and the kernels' call descriptors they fill.
 * Shapes follow include/ncclx/ep.h; every mismatch names the call, the field and the
 * dimension.
 */
#include <string.h>

#include "ep_group.h"
#include "ep_tensor.h"
#include "error.h"

#define BIT(t)       NCCLX_DTYPE_BIT(t)
#define FLOAT_TOKENS (BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | BIT(NCCLX_FLOAT32))
#define ALL_DTYPES   ((1u << NCCLX_NUM_DATA_TYPES) - 1u)

/* Output shapes: [L, R*T, inner] expert-major, [R, T, inner] rank-major. */
static void ncclx_out_shape(const ncclx_ep_handle_t *h, int64_t inner, int64_t shape[3])
{
    const ncclx_ep_dims_t *d = &h->group->dims;
    if (h->desc.expert_major) {
        shape[0] = d->local_experts;
        shape[1] = (int64_t)d->ranks * d->tokens;
    } else {
        shape[0] = d->ranks;
        shape[1] = d->tokens;
    }
    shape[2] = inner;
}

static const char *ncclx_out_why(const ncclx_ep_handle_t *h)
{
    return h->desc.expert_major ? "[local_experts, ranks * max_tokens, ...] (expert-major)"
                                : "[ranks, max_tokens, ...] (rank-major)";
}

static ncclxResult_t ncclx_check_recipe(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a)
{
    const ncclxEpGroupPlan_t *p = &h->group->plan;
    if (a->recipe != NCCLX_EP_RECIPE_NONE && a->recipe != NCCLX_EP_RECIPE_QUANT_FWD &&
        a->recipe != NCCLX_EP_RECIPE_FP8) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->recipe=0x%x: LL takes "
                           "NCCLX_EP_RECIPE_NONE, _QUANT_FWD or _FP8",
                           a->recipe);
    }
    if (!(p->recipes & a->recipe)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->recipe=0x%x is not in "
                           "the group's plan recipes 0x%x",
                           a->recipe, p->recipes);
    }
    if (a->round_scales > 1 || a->send_only > 1) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpDispatch: args->%s must be 0 or 1",
                           a->round_scales > 1 ? "round_scales" : "send_only");
    }
    return ncclxSuccess;
}

/* The input rows: dtype per recipe, [num_tokens, hidden]; fills row and out-row bytes. */
static ncclxResult_t ncclx_check_tokens(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                        ncclx_ep_ll_dispatch_desc_t *d)
{
    const ncclxEpGroupPlan_t *p = &h->group->plan;
    const int64_t shape[2] = {h->desc.num_tokens, p->hidden};
    uint32_t allowed = p->token_dtypes & FLOAT_TOKENS;
    if (a->recipe == NCCLX_EP_RECIPE_FP8) {
        allowed = BIT(NCCLX_BFLOAT16);
    } else if (a->recipe == NCCLX_EP_RECIPE_QUANT_FWD) {
        allowed = p->token_dtypes;
    }
    NCCLX_CHECK(ncclx_tensor_check(&a->tokens, "ncclxEpDispatch: args->tokens", allowed, 2, shape,
                                   "[num_tokens of the handle, the group's hidden]"));
    d->row_bytes = ncclx_tensor_row_bytes(&a->tokens);
    d->out_row_bytes = a->recipe == NCCLX_EP_RECIPE_FP8 ? p->hidden : d->row_bytes;
    if (a->recipe == NCCLX_EP_RECIPE_QUANT_FWD && d->row_bytes > p->max_token_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->tokens rows are %zu "
                           "bytes, more than the plan's max_token_bytes=%u",
                           d->row_bytes, p->max_token_bytes);
    }
    return ncclxSuccess;
}

/* Whether a QUANT_FWD dispatch forwards scales.  Absent scales are NCCLX_TENSOR_INIT (ndim 0,
 * no data); an empty rank's [0, S] has NULL data but is given, as are zero-width [N, 0] rows:
 * what counts is the tensor, not its bytes, so that every rank of an operation agrees whatever
 * its token count.  Data without a shape is not absent: the tensor check names it. */
static int ncclx_scales_given(const ncclxEpDispatchArgs_t *a)
{
    return a->recipe == NCCLX_EP_RECIPE_QUANT_FWD &&
           (a->scales.ndim != 0 || a->scales.data != NULL);
}

/* Scales: FP8 produces FLOAT32 [.., hidden/128]; QUANT_FWD forwards [num_tokens, S]. */
static ncclxResult_t ncclx_check_scales(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                        ncclx_ep_ll_dispatch_desc_t *d)
{
    const ncclxEpGroupPlan_t *p = &h->group->plan;
    int64_t out_shape[3];
    if (a->recipe == NCCLX_EP_RECIPE_FP8) {
        ncclx_out_shape(h, p->hidden / 128, out_shape);
        NCCLX_CHECK(ncclx_tensor_check(&a->out_scales, "ncclxEpDispatch: args->out_scales",
                                       BIT(NCCLX_FLOAT32), 3, out_shape, ncclx_out_why(h)));
        d->scale_bytes = (size_t)p->hidden / 128 * 4;
        d->out_scales = a->out_scales.data;
        return ncclxSuccess;
    }
    if (!ncclx_scales_given(a)) {
        d->scale_bytes = 0;
        return ncclxSuccess;
    }
    const int64_t in_shape[2] = {h->desc.num_tokens, NCCLX_ANY_DIM};
    NCCLX_CHECK(ncclx_tensor_check(&a->scales, "ncclxEpDispatch: args->scales", ALL_DTYPES, 2,
                                   in_shape, "[num_tokens, scales per token]"));
    /* Whole bytes: a row of 33 FP4 values would round down to 16 bytes, and its rows (and
     * out_scales' rows) would not start where the kernels read and write them. */
    const uint64_t scale_bits =
        (uint64_t)a->scales.shape[1] * ncclx_tensor_elem_bits(a->scales.dtype);
    if (scale_bits % 8 != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->scales rows of %lld values of dtype %d are "
                           "%llu bits: not whole bytes",
                           (long long)a->scales.shape[1], (int)a->scales.dtype,
                           (unsigned long long)scale_bits);
    }
    const size_t scale_bytes = ncclx_tensor_row_bytes(&a->scales);
    if (scale_bytes > p->max_scale_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->scales rows are %zu "
                           "bytes, more than the plan's max_scale_bytes=%u",
                           scale_bytes, p->max_scale_bytes);
    }
    ncclx_out_shape(h, a->scales.shape[1], out_shape);
    NCCLX_CHECK(ncclx_tensor_check(&a->out_scales, "ncclxEpDispatch: args->out_scales",
                                   BIT(a->scales.dtype), 3, out_shape, ncclx_out_why(h)));
    d->scale_bytes = scale_bytes;
    d->scales = a->scales.data;
    d->out_scales = a->out_scales.data;
    return ncclxSuccess;
}

/* The dtype of the scale rows an operation moves (NCCLX_NUM_DATA_TYPES: none).  Whether scales
 * were given, not whether this rank has their bytes: a rank without tokens (NULL data) or with
 * zero-width rows has no bytes, yet it moves its peers' operation. */
static uint32_t ncclx_scale_dtype(const ncclxEpDispatchArgs_t *a)
{
    if (a->recipe == NCCLX_EP_RECIPE_FP8) {
        return NCCLX_FLOAT32;
    }
    return ncclx_scales_given(a) ? (uint32_t)a->scales.dtype : NCCLX_NUM_DATA_TYPES;
}

/* Rank-major extras: forwarded weights in, received top-k idx and weights out. */
static ncclxResult_t ncclx_check_rank_major(const ncclx_ep_handle_t *h,
                                            const ncclxEpDispatchArgs_t *a,
                                            ncclx_ep_ll_dispatch_desc_t *d)
{
    const int64_t w_shape[2] = {h->desc.num_tokens, h->desc.topk};
    int64_t out_shape[3];
    NCCLX_CHECK(ncclx_tensor_check(&a->topk_weights, "ncclxEpDispatch: args->topk_weights",
                                   BIT(NCCLX_FLOAT32), 2, w_shape, "[num_tokens, topk]"));
    ncclx_out_shape(h, h->desc.topk, out_shape);
    NCCLX_CHECK(ncclx_tensor_check(&a->out_topk_idx, "ncclxEpDispatch: args->out_topk_idx",
                                   BIT(NCCLX_INT32) | BIT(NCCLX_INT64), 3, out_shape,
                                   "[ranks, max_tokens, topk]"));
    NCCLX_CHECK(ncclx_tensor_check(&a->out_topk_weights, "ncclxEpDispatch: args->out_topk_weights",
                                   BIT(NCCLX_FLOAT32), 3, out_shape, "[ranks, max_tokens, topk]"));
    d->topk_weights = a->topk_weights.data;
    d->out_topk_idx = a->out_topk_idx.data;
    d->out_topk_weights = a->out_topk_weights.data;
    d->out_idx_int64 = a->out_topk_idx.dtype == NCCLX_INT64;
    return ncclxSuccess;
}

/* Whether an operation's receive may run in its send's last block, the only block left once it
 * has signalled (a dispatch's wait, wait_in_send; a small combine's wait and reduce,
 * reduce_in_send): one launch less.  Not a send_only one: its send must end without waiting.
 * Not across load/store domains: the network kernel, enqueued after the send, signals the
 * remote ranks, so a send that waited would never see them.  Not past one block's threads (one
 * per source): a thread would wait for two sources one after the other, and two timeouts could
 * add up. */
static int ncclx_ll_receive_in_send(const ncclx_ep_handle_t *h, uint32_t send_only)
{
    return send_only == 0 && h->group->desc.net.kind == NCCLX_NET_NONE &&
           h->group->desc.ranks <= NCCLX_EP_THREADS;
}

/* This rank's zero-copy rows (and scale rows) of handle h's layout, and how many: expert-major
 * [L][R][T], rank-major [R][T] (ncclxEpGroupGetLlBuffers' tokens / rank_major_tokens).  NULL
 * rows: the group has no zero copy, or not for this layout. */
typedef struct {
    const char *rows, *scales, *name; /* name: the ncclxEpLlBuffers_t field, for errors */
    size_t row_area, scale_area;
} ncclx_zero_copy_rows_t;

static ncclx_zero_copy_rows_t ncclx_zero_copy_rows_of(const ncclx_ep_handle_t *h)
{
    const ncclx_ep_group_t *g = h->group;
    const int em = h->desc.expert_major;
    const size_t rows = ncclx_ep_zero_copy_rows(g, em);
    ncclx_zero_copy_rows_t z;
    z.rows = g->desc.zero_copy ? (em ? g->zero_copy_tokens : g->zero_copy_rm_tokens) : NULL;
    z.scales = z.rows != NULL ? (em ? g->zero_copy_scales : g->zero_copy_rm_scales) : NULL;
    z.name = em ? "" : "rank_major_";
    z.row_area = rows * g->dims.zero_copy_row_bytes;
    z.scale_area = rows * g->dims.zero_copy_scale_bytes;
    return z;
}

/* Zero copy (a dispatch of a group planned with zero_copy): peers store the rows into this
 * rank's zero-copy rows of the handle's layout during the dispatch, so the input may not lie
 * there, and an output there must be exactly them (a view shifted by a row would receive rows
 * half-written); any other output gets one more copy (copy_rows, copy_scales). */
static ncclxResult_t ncclx_ll_zero_copy_desc(const ncclx_ep_handle_t *h,
                                             const ncclxEpDispatchArgs_t *a,
                                             ncclx_ep_ll_dispatch_desc_t *d)
{
    const ncclx_zero_copy_rows_t z = ncclx_zero_copy_rows_of(h);
    if (z.rows == NULL) {
        return ncclxSuccess;
    }
    /* The inputs: neither may start in the rows or the scale rows. */
    const ncclxTensor_t *const inputs[2] = {&a->tokens, &a->scales};
    for (int i = 0; i < 2; i++) {
        if (ncclx_tensor_starts_in(inputs[i], z.rows, z.row_area) ||
            ncclx_tensor_starts_in(inputs[i], z.scales, z.scale_area)) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpDispatch: args->%s lies in the group's zero-copy rows "
                               "(ncclxEpGroupGetLlBuffers .%stokens / .%sscales), which peers "
                               "write during the dispatch: copy it elsewhere first",
                               i == 0 ? "tokens" : "scales", z.name, z.name);
        }
    }
    if ((ncclx_tensor_starts_in(&a->out_tokens, z.rows, z.row_area) &&
         a->out_tokens.data != z.rows) ||
        ncclx_tensor_starts_in(&a->out_tokens, z.scales, z.scale_area)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->out_tokens starts inside the group's "
                           "zero-copy rows but not at their first row (ncclxEpGroupGetLlBuffers "
                           ".%stokens): pass exactly them, or a buffer of your own",
                           z.name);
    }
    if (d->scale_bytes > 0 && ((ncclx_tensor_starts_in(&a->out_scales, z.scales, z.scale_area) &&
                                a->out_scales.data != z.scales) ||
                               ncclx_tensor_starts_in(&a->out_scales, z.rows, z.row_area))) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->out_scales starts inside the group's "
                           "zero-copy rows but not at the first scale row "
                           "(ncclxEpGroupGetLlBuffers .%sscales): pass exactly them, or a "
                           "buffer of your own",
                           z.name);
    }
    d->zero_copy = 1;
    d->copy_rows = a->out_tokens.data != z.rows;
    d->copy_scales = d->scale_bytes > 0 && a->out_scales.data != z.scales;
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_dispatch_desc(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                     ncclx_ep_ll_dispatch_desc_t *out)
{
    const ncclx_ep_dims_t *dims = &h->group->dims;
    ncclx_ep_ll_dispatch_desc_t d;
    int64_t shape[3];
    const int64_t count_shape[1] = {h->desc.expert_major ? (int64_t)dims->local_experts
                                                         : (int64_t)dims->ranks};
    memset(&d, 0, sizeof(d));
    NCCLX_CHECK(ncclx_check_recipe(h, a));
    NCCLX_CHECK(ncclx_check_tokens(h, a, &d));
    ncclx_out_shape(h, h->group->plan.hidden, shape);
    NCCLX_CHECK(ncclx_tensor_check(&a->out_tokens, "ncclxEpDispatch: args->out_tokens",
                                   a->recipe == NCCLX_EP_RECIPE_FP8 ? BIT(NCCLX_FP8_E4M3)
                                                                    : BIT(a->tokens.dtype),
                                   3, shape, ncclx_out_why(h)));
    NCCLX_CHECK(ncclx_check_scales(h, a, &d));
    NCCLX_CHECK(ncclx_tensor_check(&a->out_counts, "ncclxEpDispatch: args->out_counts",
                                   BIT(NCCLX_INT32), 1, count_shape,
                                   "[local_experts] (expert-major) or [ranks] (rank-major)"));
    if (!h->desc.expert_major) {
        NCCLX_CHECK(ncclx_check_rank_major(h, a, &d));
    }
    if (d.row_bytes % 16 != 0 || d.out_row_bytes % 16 != 0) {
        const int in = d.row_bytes % 16 != 0;
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->%s rows of %zu bytes are not 16-byte "
                           "multiples (rows move in 16-byte pieces)",
                           in ? "tokens" : "out_tokens", in ? d.row_bytes : d.out_row_bytes);
    }
    d.tokens = a->tokens.data;
    d.out_tokens = a->out_tokens.data;
    d.out_counts = a->out_counts.data;
    d.recipe = (int)a->recipe;
    d.round_scales = (int)a->round_scales;
    /* What every receiver checks before it reads a byte of this operation's messages: the
     * scale rows too (QUANT_FWD forwards the caller's as bytes, of the caller's size and type;
     * FP8 makes FLOAT32 ones). */
    d.op = ncclx_ep_op_word((uint32_t)h->desc.topk, h->desc.expert_major, a->recipe,
                            (uint32_t)a->tokens.dtype, d.scale_bytes, ncclx_scale_dtype(a));
    /* A dispatch that receives at once waits for its sources in the send's last block (one
     * launch less): see ncclx_ll_receive_in_send. */
    d.wait_in_send = ncclx_ll_receive_in_send(h, a->send_only);
    d.early_recv = d.wait_in_send && h->group->desc.early_launch;
    NCCLX_CHECK(ncclx_ll_zero_copy_desc(h, a, &d));
    /* A zero-copy dispatch exchanges its count boards in a kernel of one block before the send;
     * on a rank alone on its GPU the send's blocks do it (one kernel less).  Not on a loopback
     * team (send blocks spinning on a peer's board could hold the SMs the peer needs to post
     * it), and not send_only: while a peer is late the whole send grid waits, which a dispatch
     * overlapped with other work must not do. */
    d.board_in_send = d.zero_copy && d.early_recv;
    /* A team of one whose rows land in place receives only what it sends itself: its send
     * records those messages as it stores them and ends the operation, so the dispatch is one
     * kernel (the receive kernel's launch, plan and election were a third of it). */
    d.recv_in_send = d.zero_copy && !d.copy_rows && !d.copy_scales && d.wait_in_send &&
                     h->group->desc.ranks == 1;
    *out = d;
    return ncclxSuccess;
}

/* Zero copy (a combine of a group planned with zero_copy): when expert_out is this rank's
 * zero-copy rows of the handle's layout (its experts computed in place), the rows stay there and
 * the tokens' ranks read them (pull: each row moves once); any other expert_out is sent as on
 * any group, and the ranks of one combine may differ in this (each says which in its signal).
 * expert_out at the rows in a wider dtype than the plan sized them for would not fit in them:
 * refused. */
static ncclxResult_t ncclx_ll_pull_desc(const ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                        ncclx_ep_ll_combine_desc_t *d)
{
    const ncclx_ep_group_t *g = h->group;
    const ncclx_zero_copy_rows_t z = ncclx_zero_copy_rows_of(h);
    if (z.rows == NULL) {
        return ncclxSuccess;
    }
    d->zero_copy = 1;
    if (a->expert_out.data == NULL || a->expert_out.data != z.rows) {
        return ncclxSuccess;
    }
    const uint64_t row = ncclx_tensor_row_bytes(&a->expert_out);
    if (row > g->dims.zero_copy_row_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->expert_out is the group's zero-copy rows "
                           "(ncclxEpGroupGetLlBuffers .%stokens), but its rows of %llu bytes do "
                           "not fit their rows of %zu bytes: pass a buffer of your own",
                           z.name, (unsigned long long)row, g->dims.zero_copy_row_bytes);
    }
    /* Peers read the rows until their combines end: this rank's own results may not land there. */
    const ncclxTensor_t *const written[2] = {&a->out, &a->topk_weights};
    for (int i = 0; i < 2; i++) {
        if (ncclx_tensor_starts_in(written[i], z.rows, z.row_area)) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpCombine: args->%s lies in the group's zero-copy rows, "
                               "which this combine's expert_out leaves to its peers to read: "
                               "put it elsewhere",
                               i == 0 ? "out" : "topk_weights");
        }
    }
    d->pull = 1;
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_combine_desc(const ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                    ncclx_ep_ll_combine_desc_t *out)
{
    const ncclxEpGroupPlan_t *p = &h->group->plan;
    ncclx_ep_ll_combine_desc_t d;
    int64_t shape[3];
    const int64_t out_shape[2] = {h->desc.num_tokens, p->hidden};
    /* FP32 rows need the wider combine slots, which the plan sizes only with FP32 tokens. */
    uint32_t allowed =
        BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | (p->token_dtypes & BIT(NCCLX_FLOAT32));
    if (a->send_only > 1) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpCombine: args->send_only must be 0 or 1");
    }
    if (a->recipe != NCCLX_EP_RECIPE_NONE) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->recipe=0x%x: an LL combine takes "
                           "NCCLX_EP_RECIPE_NONE (MXFP8 is an HT expert-major combine)",
                           a->recipe);
    }
    ncclx_out_shape(h, p->hidden, shape);
    NCCLX_CHECK(ncclx_tensor_check(&a->expert_out, "ncclxEpCombine: args->expert_out", allowed, 3,
                                   shape, ncclx_out_why(h)));
    NCCLX_CHECK(ncclx_tensor_check(&a->out, "ncclxEpCombine: args->out", BIT(a->expert_out.dtype),
                                   2, out_shape, "[num_tokens of the handle, hidden]"));
    memset(&d, 0, sizeof(d));
    if (h->desc.expert_major) {
        const int64_t w_shape[2] = {h->desc.num_tokens, h->desc.topk};
        NCCLX_CHECK(ncclx_tensor_check(&a->topk_weights, "ncclxEpCombine: args->topk_weights",
                                       BIT(NCCLX_FLOAT32), 2, w_shape, "[num_tokens, topk]"));
        d.topk_weights = a->topk_weights.data;
    }
    /* Combine moves rows in 16-byte pieces (as dispatch does). */
    if (ncclx_tensor_row_bytes(&a->expert_out) % 16 != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->expert_out rows of %llu bytes (hidden=%u) are "
                           "not 16-byte multiples",
                           (unsigned long long)ncclx_tensor_row_bytes(&a->expert_out), p->hidden);
    }
    d.expert_out = a->expert_out.data;
    d.out = a->out.data;
    d.dtype = (int)a->expert_out.dtype;
    /* The dispatch's word too: a peer that dropped this rank's messages sends no rows back. */
    d.op = ncclx_ep_combine_op_word(h->pending_dispatch.op, (uint32_t)a->expert_out.dtype);
    /* A small combine that receives at once is reduced by the send's last block (one launch
     * less; reduce_own below: by the send's grid, a warp a unit); only up to what one block
     * reduces in two steps of its warps: a larger one takes its own grid. */
    const uint64_t units =
        (uint64_t)h->desc.num_tokens *
        ((p->hidden + NCCLX_EP_LL_REDUCE_UNIT_ELEMS - 1) / NCCLX_EP_LL_REDUCE_UNIT_ELEMS);
    const int receive_in_send = ncclx_ll_receive_in_send(h, a->send_only);
    d.reduce_in_send = receive_in_send && units <= NCCLX_EP_LL_REDUCE_IN_SEND_UNITS;
    /* Otherwise the receive kernel follows the send at once: launched early, where the rank has
     * its GPU to itself (see ncclx_ep_ll_launch_combine_recv). */
    d.early_recv = receive_in_send && !d.reduce_in_send && h->group->desc.early_launch;
    NCCLX_CHECK(ncclx_ll_pull_desc(h, a, &d));
    /* A pulled combine's send only signals.  On a rank alone on its GPU the receive's first
     * block does that, so the combine is one kernel; elsewhere (a loopback team) the one-block
     * send stays: a receive grid whose blocks wait for peers must not hold the SMs that a peer
     * needs to start its own before it has signalled. */
    if (d.pull && d.early_recv) {
        d.signal_in_recv = 1;
        d.early_recv = 0;
    }
    /* A team of one that pulls and receives at once reduces its own rows as they lie: the
     * signal to itself and the wait for it were a third of a 1-token combine's chain. */
    d.reduce_own = d.pull && h->group->desc.ranks == 1 && (d.reduce_in_send || d.signal_in_recv);
    *out = d;
    return ncclxSuccess;
}
