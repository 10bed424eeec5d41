/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT argument checks (as lib/ep/ep_ll_args.c for LL): a dispatch's and a combine's arguments
 * against the group and the handle, every refusal naming the call and the field, and the
 * kernels' descriptors and operation words they fill.  Pure host code.
 */
#include <string.h>

#include "ep_group.h"
#include "ep_tensor.h"
#include "error.h"

#define BIT(t)       NCCLX_DTYPE_BIT(t)
#define IDX_DTYPES   (BIT(NCCLX_INT32) | BIT(NCCLX_INT64))
#define FLOAT_TOKENS (BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | BIT(NCCLX_FLOAT32))
#define ALL_DTYPES   ((1u << NCCLX_NUM_DATA_TYPES) - 1u)

/* Whether rows [a, a + a_rows * a_row) and [b, b + b_rows * b_row) share a byte. */
static int ncclx_ht_overlap(const void *a, size_t a_rows, size_t a_row, const void *b,
                            size_t b_rows, size_t b_row)
{
    const char *x = a, *y = b;
    return x != NULL && y != NULL && a_rows * a_row != 0 && b_rows * b_row != 0 &&
           x < y + b_rows * b_row && y < x + a_rows * a_row;
}

/* The direct path (a group on one GPU) writes a rank's outputs, or reads its expert rows,
 * while the rank itself still reads its inputs, or writes its output: the two may not share
 * memory there (the staged path copies in separate steps and allows it). */
static ncclxResult_t ncclx_ht_check_direct_overlap(const char *call, const char *in_field,
                                                   const char *out_field, const char *verb,
                                                   int overlap)
{
    if (overlap) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s: args->%s, which peers %s during the call on this group's "
                           "direct path (every rank on one GPU), overlaps args->%s: use "
                           "separate buffers, or NCCLX_EP_HT_PATH=STAGED on every rank",
                           call, out_field, verb, in_field);
    }
    return ncclxSuccess;
}

/* Receive-side tensors have S rows (the group's max_recv_tokens_per_rank). */
static const char *const ncclx_recv_why = "[max_recv_tokens_per_rank, ...]";

static ncclxResult_t ncclx_ht_check_pass(uint32_t pass, const char *call)
{
    if (pass != NCCLX_EP_PASS_FORWARD && pass != NCCLX_EP_PASS_BACKWARD) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s: args->pass=%u: NCCLX_EP_PASS_FORWARD (0) or "
                           "NCCLX_EP_PASS_BACKWARD (1)",
                           call, pass);
    }
    return ncclxSuccess;
}

/* A tensor that this call must not get. */
static ncclxResult_t ncclx_ht_absent(const ncclxTensor_t *t, const char *what, const char *why)
{
    if (t->ndim != 0 || t->data != NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclx%s must be absent (NCCLX_TENSOR_INIT): %s",
                           what, why);
    }
    return ncclxSuccess;
}

/* Dispatch tokens and scales: fills row and scale bytes. */
static ncclxResult_t ncclx_ht_check_rows(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                         ncclx_ep_ht_dispatch_desc_t *d)
{
    const ncclx_ep_group_t *g = h->group;
    const int64_t in_shape[2] = {h->ht.num_tokens, g->plan.hidden};
    const int64_t out_shape[2] = {g->dims.recv_slots, g->plan.hidden};
    const int quant = a->recipe == NCCLX_EP_RECIPE_QUANT_FWD;
    const uint32_t allowed = quant ? g->plan.token_dtypes : (g->plan.token_dtypes & FLOAT_TOKENS);
    NCCLX_CHECK(ncclx_tensor_check(&a->tokens, "ncclxEpDispatch: args->tokens", allowed, 2,
                                   in_shape, "[num_tokens of the handle, the group's hidden]"));
    NCCLX_CHECK(ncclx_tensor_check(&a->out_tokens, "ncclxEpDispatch: args->out_tokens",
                                   BIT(a->tokens.dtype), 2, out_shape,
                                   "[max_recv_tokens_per_rank, hidden]"));
    d->row_bytes = ncclx_tensor_row_bytes(&a->tokens);
    if (d->row_bytes % 16 != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->tokens rows of %zu bytes are not 16-byte "
                           "multiples",
                           d->row_bytes);
    }
    d->scale_bytes = 0;
    if (!quant) {
        NCCLX_CHECK(ncclx_ht_absent(&a->scales, "EpDispatch: args->scales",
                                    "scales travel only with NCCLX_EP_RECIPE_QUANT_FWD"));
        return ncclx_ht_absent(&a->out_scales, "EpDispatch: args->out_scales",
                               "scales travel only with NCCLX_EP_RECIPE_QUANT_FWD");
    }
    if (d->row_bytes > g->plan.max_token_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->tokens rows are %zu bytes, more than the plan's "
                           "max_token_bytes=%u",
                           d->row_bytes, g->plan.max_token_bytes);
    }
    if (a->scales.ndim == 0 && a->scales.data == NULL) {
        return ncclx_ht_absent(&a->out_scales, "EpDispatch: args->out_scales",
                               "args->scales is absent");
    }
    const int64_t s_shape[2] = {h->ht.num_tokens, NCCLX_ANY_DIM};
    NCCLX_CHECK(ncclx_tensor_check(&a->scales, "ncclxEpDispatch: args->scales", ALL_DTYPES, 2,
                                   s_shape, "[num_tokens, scales per token]"));
    d->scale_bytes = ncclx_tensor_row_bytes(&a->scales);
    /* Whole bits too: a row of 33 FP4 values would round down to 16 bytes. */
    const uint64_t scale_bits =
        (uint64_t)a->scales.shape[1] * ncclx_tensor_elem_bits(a->scales.dtype);
    if (scale_bits % 128 != 0 || d->scale_bytes > g->plan.max_scale_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->scales rows are %zu bytes: HT needs a 16-byte "
                           "multiple of at most the plan's max_scale_bytes=%u",
                           d->scale_bytes, g->plan.max_scale_bytes);
    }
    const int64_t os_shape[2] = {g->dims.recv_slots, a->scales.shape[1]};
    NCCLX_CHECK(ncclx_tensor_check(&a->out_scales, "ncclxEpDispatch: args->out_scales",
                                   BIT(a->scales.dtype), 2, os_shape, ncclx_recv_why));
    d->scales = a->scales.data;
    d->out_scales = a->out_scales.data;
    return ncclxSuccess;
}

/* Forward: weights in; FLAT ids and weights out, EXPERT_MAJOR one weight per row.  Backward:
 * none of them. */
static ncclxResult_t ncclx_ht_check_weights(const ncclx_ep_handle_t *h,
                                            const ncclxEpDispatchArgs_t *a,
                                            ncclx_ep_ht_dispatch_desc_t *d)
{
    const ncclx_ep_group_t *g = h->group;
    const int64_t S = g->dims.recv_slots, K = h->ht.topk;
    if (d->backward) {
        const char *why = "a backward dispatch moves gradients only";
        NCCLX_CHECK(ncclx_ht_absent(&a->topk_weights, "EpDispatch: args->topk_weights", why));
        NCCLX_CHECK(ncclx_ht_absent(&a->out_topk_idx, "EpDispatch: args->out_topk_idx", why));
        return ncclx_ht_absent(&a->out_topk_weights, "EpDispatch: args->out_topk_weights", why);
    }
    const int64_t w_shape[2] = {h->ht.num_tokens, K};
    NCCLX_CHECK(ncclx_tensor_check(&a->topk_weights, "ncclxEpDispatch: args->topk_weights",
                                   BIT(NCCLX_FLOAT32), 2, w_shape, "[num_tokens, topk]"));
    if (h->ht.expert_major) {
        const int64_t ow_shape[1] = {S};
        NCCLX_CHECK(ncclx_ht_absent(&a->out_topk_idx, "EpDispatch: args->out_topk_idx",
                                    "an EXPERT_MAJOR row's zone names its expert"));
        NCCLX_CHECK(ncclx_tensor_check(
            &a->out_topk_weights, "ncclxEpDispatch: args->out_topk_weights", BIT(NCCLX_FLOAT32), 1,
            ow_shape, "[max_recv_tokens_per_rank] (expert-major)"));
    } else {
        const int64_t o_shape[2] = {S, K};
        NCCLX_CHECK(ncclx_tensor_check(&a->out_topk_idx, "ncclxEpDispatch: args->out_topk_idx",
                                       IDX_DTYPES, 2, o_shape, "[max_recv_tokens_per_rank, topk]"));
        NCCLX_CHECK(
            ncclx_tensor_check(&a->out_topk_weights, "ncclxEpDispatch: args->out_topk_weights",
                               BIT(NCCLX_FLOAT32), 2, o_shape, "[max_recv_tokens_per_rank, topk]"));
        d->out_topk_idx = a->out_topk_idx.data;
        d->out_idx_int64 = a->out_topk_idx.dtype == NCCLX_INT64;
    }
    d->topk_weights = a->topk_weights.data;
    d->out_topk_weights = a->out_topk_weights.data;
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_ht_dispatch_desc(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                        ncclx_ep_ht_dispatch_desc_t *out)
{
    const ncclx_ep_group_t *g = h->group;
    ncclx_ep_ht_dispatch_desc_t d;
    memset(&d, 0, sizeof(d));
    if (a->recipe != NCCLX_EP_RECIPE_NONE && a->recipe != NCCLX_EP_RECIPE_QUANT_FWD) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->recipe=0x%x: HT dispatch takes "
                           "NCCLX_EP_RECIPE_NONE or _QUANT_FWD",
                           a->recipe);
    }
    if (!(g->plan.recipes & a->recipe)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->recipe=0x%x is not in the group's plan "
                           "recipes 0x%x",
                           a->recipe, g->plan.recipes);
    }
    if (a->send_only != 0 || a->round_scales != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->%s=%u: an LL feature (HT dispatch is whole); "
                           "leave 0",
                           a->send_only != 0 ? "send_only" : "round_scales",
                           a->send_only != 0 ? a->send_only : a->round_scales);
    }
    NCCLX_CHECK(ncclx_ht_check_pass(a->pass, "ncclxEpDispatch"));
    d.backward = a->pass == NCCLX_EP_PASS_BACKWARD;
    NCCLX_CHECK(ncclx_ht_absent(&a->out_counts, "EpDispatch: args->out_counts",
                                "HT counts come from ncclxEpHandleGetLayout"));
    NCCLX_CHECK(ncclx_ht_check_rows(h, a, &d));
    NCCLX_CHECK(ncclx_ht_check_weights(h, a, &d));
    d.tokens = a->tokens.data;
    d.out_tokens = a->out_tokens.data;
    if (ncclx_tensor_starts_in(&a->tokens, g->ht_dispatch_rows,
                               (size_t)g->dims.recv_slots * g->dims.payload_bytes) ||
        ncclx_tensor_starts_in(&a->tokens, g->ht_combine_rows,
                               (size_t)g->dims.recv_slots * g->dims.combine_slot_bytes)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->tokens lies in the group's own buffers "
                           "(ncclxEpGroupGetHtBuffers), which peers write during the dispatch: "
                           "copy the tokens elsewhere first");
    }
    /* Zero copy: out_tokens is this rank's dispatch rows, row for row. */
    if (ncclx_tensor_starts_in(&a->out_tokens, g->ht_dispatch_rows,
                               (size_t)g->dims.recv_slots * g->dims.payload_bytes)) {
        if (a->out_tokens.data != g->ht_dispatch_rows || d.row_bytes != g->dims.payload_bytes ||
            d.scale_bytes != 0) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpDispatch: args->out_tokens points into the group's "
                               "dispatch rows (ncclxEpGroupGetHtBuffers): it must start there, "
                               "with rows of exactly %zu bytes (here %zu) and no scales",
                               g->dims.payload_bytes, d.row_bytes);
        }
        d.in_place = 1;
    }
    /* The path is the group's, whatever this rank's buffers (zero copy is each rank's own
     * choice on every path): on the direct path a zero-copy rank publishes its dispatch rows
     * as its out_tokens, and peers push into them in place as they would push there on the
     * staged path.  The word (path included) is then the same on every rank. */
    d.direct = g->ht.direct;
    if (d.direct) {
        const size_t T = (size_t)h->ht.num_tokens, S = g->dims.recv_slots;
        NCCLX_CHECK(ncclx_ht_check_direct_overlap(
            "ncclxEpDispatch", "tokens", "out_tokens", "write",
            ncclx_ht_overlap(d.tokens, T, d.row_bytes, d.out_tokens, S, d.row_bytes)));
        NCCLX_CHECK(ncclx_ht_check_direct_overlap(
            "ncclxEpDispatch", "scales", "out_scales", "write",
            ncclx_ht_overlap(d.scales, T, d.scale_bytes, d.out_scales, S, d.scale_bytes)));
    }
    d.op = ncclx_ep_ht_op_word(h->ht.expert_major, d.backward, h->ht.topk,
                               a->recipe == NCCLX_EP_RECIPE_QUANT_FWD, d.row_bytes, d.scale_bytes,
                               d.direct);
    *out = d;
    return ncclxSuccess;
}

/* args->recipe of an HT combine: NONE, or MXFP8 where the plan, the handle and the dtype
 * allow it. */
static ncclxResult_t ncclx_ht_check_combine_recipe(const ncclx_ep_handle_t *h,
                                                   const ncclxEpCombineArgs_t *a)
{
    const ncclx_ep_group_t *g = h->group;
    if (a->recipe == NCCLX_EP_RECIPE_NONE) {
        return ncclxSuccess;
    }
    if (a->recipe != NCCLX_EP_RECIPE_MXFP8) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->recipe=0x%x: an HT combine takes "
                           "NCCLX_EP_RECIPE_NONE or NCCLX_EP_RECIPE_MXFP8",
                           a->recipe);
    }
    if (!(g->plan.recipes & NCCLX_EP_RECIPE_MXFP8)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->recipe=NCCLX_EP_RECIPE_MXFP8 is not in EP "
                           "group %u's plan recipes 0x%x",
                           g->index, g->plan.recipes);
    }
    if (!h->ht.expert_major) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->recipe=NCCLX_EP_RECIPE_MXFP8 needs an "
                           "EXPERT_MAJOR handle; handle %u is FLAT",
                           h->index);
    }
    if (a->expert_out.dtype != NCCLX_BFLOAT16) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->expert_out.dtype=%d: the MXFP8 combine takes "
                           "BF16 rows (and writes BF16 out)",
                           (int)a->expert_out.dtype);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_ht_combine_desc(const ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                       ncclx_ep_ht_combine_desc_t *out)
{
    const ncclx_ep_group_t *g = h->group;
    const ncclxEpGroupPlan_t *p = &g->plan;
    const int64_t S = g->dims.recv_slots, K = h->ht.topk;
    const int64_t in_shape[2] = {S, p->hidden}, out_shape[2] = {h->ht.num_tokens, p->hidden};
    /* FP32 rows need the wider combine rows, which the plan sizes only with FP32 tokens. */
    const uint32_t allowed =
        BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | (p->token_dtypes & BIT(NCCLX_FLOAT32));
    ncclx_ep_ht_combine_desc_t d;
    memset(&d, 0, sizeof(d));
    if (a->send_only != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->send_only=%u: an LL feature; leave 0",
                           a->send_only);
    }
    NCCLX_CHECK(ncclx_ht_check_pass(a->pass, "ncclxEpCombine"));
    d.backward = a->pass == NCCLX_EP_PASS_BACKWARD;
    NCCLX_CHECK(ncclx_ht_check_combine_recipe(h, a));
    d.mxfp8 = a->recipe == NCCLX_EP_RECIPE_MXFP8;
    NCCLX_CHECK(ncclx_tensor_check(&a->expert_out, "ncclxEpCombine: args->expert_out", allowed, 2,
                                   in_shape, "[max_recv_tokens_per_rank, hidden]"));
    NCCLX_CHECK(ncclx_tensor_check(&a->out, "ncclxEpCombine: args->out", BIT(a->expert_out.dtype),
                                   2, out_shape, "[num_tokens of the handle, hidden]"));
    d.row_bytes = ncclx_tensor_row_bytes(&a->expert_out);
    if (d.row_bytes % 16 != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->expert_out rows of %zu bytes (hidden=%u) are "
                           "not 16-byte multiples",
                           d.row_bytes, p->hidden);
    }
    if (d.backward) {
        const int64_t flat[2] = {S, K}, em[1] = {S}, ow[2] = {h->ht.num_tokens, K};
        NCCLX_CHECK(ncclx_tensor_check(
            &a->topk_weights, "ncclxEpCombine: args->topk_weights", BIT(NCCLX_FLOAT32),
            h->ht.expert_major ? 1 : 2, h->ht.expert_major ? em : flat,
            h->ht.expert_major ? "[max_recv_tokens_per_rank] (expert-major)"
                               : "[max_recv_tokens_per_rank, topk] (flat)"));
        NCCLX_CHECK(ncclx_tensor_check(&a->out_topk_weights,
                                       "ncclxEpCombine: args->out_topk_weights", BIT(NCCLX_FLOAT32),
                                       2, ow, "[num_tokens, topk]"));
        d.topk_weights = a->topk_weights.data;
        d.out_topk_weights = a->out_topk_weights.data;
    } else {
        const char *why = "a forward HT combine sums rows the caller has already weighted";
        NCCLX_CHECK(ncclx_ht_absent(&a->topk_weights, "EpCombine: args->topk_weights", why));
        NCCLX_CHECK(ncclx_ht_absent(&a->out_topk_weights, "EpCombine: args->out_topk_weights",
                                    "only a backward combine returns weight gradients"));
    }
    d.expert_out = a->expert_out.data;
    d.out = a->out.data;
    d.dtype = (int)a->expert_out.dtype;
    if (ncclx_tensor_starts_in(&a->out, g->ht_dispatch_rows,
                               (size_t)g->dims.recv_slots * g->dims.payload_bytes) ||
        ncclx_tensor_starts_in(&a->out, g->ht_combine_rows,
                               (size_t)g->dims.recv_slots * g->dims.combine_slot_bytes)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->out lies in the group's own buffers "
                           "(ncclxEpGroupGetHtBuffers), which peers read during the combine");
    }
    /* Zero copy: expert_out is this rank's combine rows, row for row. */
    if (ncclx_tensor_starts_in(&a->expert_out, g->ht_combine_rows,
                               (size_t)g->dims.recv_slots * g->dims.combine_slot_bytes)) {
        if (a->expert_out.data != g->ht_combine_rows || d.row_bytes != g->dims.combine_slot_bytes) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpCombine: args->expert_out points into the group's combine "
                               "rows (ncclxEpGroupGetHtBuffers): it must start there, with rows "
                               "of exactly %zu bytes (here %zu)",
                               g->dims.combine_slot_bytes, d.row_bytes);
        }
        if (d.mxfp8) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpCombine: args->expert_out is the group's combine rows "
                               "(zero copy), which the MXFP8 combine overwrites with packed rows "
                               "while it reads them: pass expert rows of your own");
        }
        d.in_place = 1;
    }
    /* The MXFP8 combine stages packed rows, which peers read: it has no direct path.  Zero
     * copy takes the group's path, as in a dispatch: on the direct path peers read this
     * rank's combine rows in place as its expert_out. */
    d.direct = g->ht.direct && !d.mxfp8;
    if (d.direct) {
        NCCLX_CHECK(ncclx_ht_check_direct_overlap(
            "ncclxEpCombine", "out", "expert_out", "read",
            ncclx_ht_overlap(d.expert_out, g->dims.recv_slots, d.row_bytes, d.out,
                             (size_t)h->ht.num_tokens, d.row_bytes)));
    }
    /* An MXFP8 combine stages packed rows: its word differs from a plain BF16 combine's. */
    d.op = ncclx_ep_ht_op_word(h->ht.expert_major, d.backward, h->ht.topk, d.dtype, d.row_bytes,
                               d.mxfp8 ? (size_t)g->plan.hidden / 32 : 0, d.direct);
    *out = d;
    return ncclxSuccess;
}
