/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP HT entry points behind the shared ones of lib/ep/ep_ll.c: the kernels' view of an HT group
 * and handle, argument checks of routing, dispatch, combine and the layout query (every
 * mismatch names the call and the field), and the launches.  Nothing here allocates or waits
 * for the GPU; the kernels are kernels/ep_ht/ep_ht_route.cu and kernels/ep_ht/ep_ht_data.cu.
 */
#include <string.h>

#include "context.h"
#include "env.h"
#include "ep_algo.h"
#include "ep_group.h"
#include "ep_tensor.h"
#include "error.h"
#include "gpu_check.h"
#include "struct.h"

#define BIT(t)       NCCLX_DTYPE_BIT(t)
#define IDX_DTYPES   (BIT(NCCLX_INT32) | BIT(NCCLX_INT64))
#define FLOAT_TOKENS (BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | BIT(NCCLX_FLOAT32))
#define ALL_DTYPES   ((1u << NCCLX_NUM_DATA_TYPES) - 1u)

void ncclx_ep_ht_group_bind(ncclx_ep_group_t *g, struct ncclxContext *ctx)
{
    ncclx_ep_ht_group_desc_t *d = &g->ht;
    const ncclx_ep_group_regions_t *r = &g->regions;
    int32_t *counters = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->ht_counters);
    memset(d, 0, sizeof(*d));
    ncclx_ep_ht_handle_layout(&g->dims, &g->ht_handle_layout);
    /* What both algorithms' views share is the LL view's (filled first, ncclx_ep_group_bind). */
    d->rank = g->desc.rank;
    d->ranks = g->desc.ranks;
    d->local_experts = g->desc.local_experts;
    d->num_experts = g->desc.num_experts;
    d->max_tokens = g->desc.max_tokens;
    d->max_topk = g->desc.max_topk;
    d->hidden = g->desc.hidden;
    d->blocks = g->desc.blocks;
    d->peers = g->desc.peers;
    d->state = (ncclx_ep_ht_state_t *)(void *)g->desc.state;
    d->status = g->desc.status;
    d->timeout_ns = g->desc.timeout_ns; /* the plan's, or NCCLX_TIMEOUT_MS */
    d->recv_slots = (int)g->dims.recv_slots;
    d->map_words = (int)((g->plan.num_experts + 31) / 32);
    d->drop = g->plan.overflow_policy == NCCLX_EP_OVERFLOW_DROP;
    d->alignment = g->plan.expert_alignment > 1 ? (int)g->plan.expert_alignment : 1;
    /* The path is part of every operation word besides. */
    d->direct = ncclx_context_direct_path(ctx, NCCLX_ENV_EP_HT_PATH) &&
                d->ranks <= NCCLX_EP_HT_DIRECT_MAX_RANKS;
    d->map = r->ht_map;
    d->signals = r->signals;
    d->dispatch_rows = r->dispatch_recv;
    d->dispatch_meta = r->ht_dispatch_meta;
    d->combine_rows = r->combine_recv;
    d->combine_meta = r->ht_combine_meta;
    d->payload_bytes = g->dims.payload_bytes;
    d->combine_row_bytes = g->dims.combine_slot_bytes;
    d->expert_hits = counters;
    d->rank_hits = counters + (size_t)g->dims.ranks * g->plan.num_experts;
    g->ht_dispatch_rows = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_SYMMETRIC, r->dispatch_recv);
    g->ht_combine_rows = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_SYMMETRIC, r->combine_recv);
}

ncclxResult_t ncclxEpGroupGetHtBuffers(ncclxEpGroup_t g, ncclxEpHtBuffers_t *buffers)
{
    ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
    if (g == NULL || buffers == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpGroupGetHtBuffers: %s is NULL",
                           g == NULL ? "group" : "buffers");
    }
    NCCLX_CHECK(ncclx_struct_check_output(buffers, NCCLX_MAGIC_EP_HT_BUFFERS,
                                          NCCLX_EP_HT_BUFFERS_SIZE_V1, "buffers"));
    if (g->plan.algorithm != NCCLX_EP_ALGO_HT) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpGroupGetHtBuffers: EP group %u is LL (zero-copy buffers are "
                           "an HT feature)",
                           g->index);
    }
    b.dispatch_rows = g->ht_dispatch_rows;
    b.combine_rows = g->ht_combine_rows;
    b.dispatch_row_bytes = g->dims.payload_bytes;
    b.combine_row_bytes = g->dims.combine_slot_bytes;
    b.rows = g->dims.recv_slots;
    ncclx_struct_export(buffers, &b, sizeof(b));
    return ncclxSuccess;
}

/* Whether t's data lies in [base, base + bytes). */
static int ncclx_ht_inside(const ncclxTensor_t *t, const char *base, size_t bytes)
{
    const char *p = t->data;
    return base != NULL && p >= base && p < base + bytes;
}

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

_Static_assert(sizeof(ncclx_ep_ht_handle_header_t) == 64, "the handle layout's header piece");

/* FNV-1a over one value's bytes. */
static uint64_t ncclx_fnv(uint64_t hash, uint64_t value)
{
    for (int i = 0; i < 8; i++) {
        hash ^= (value >> (8 * i)) & 0xffu;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/* What a snapshot of h's memory must have been made for: the group's geometry, this rank (the
 * rows are this rank's view), the handle's layout, top-k and memory layout. */
static uint64_t ncclx_ep_ht_geometry(const ncclx_ep_handle_t *h, size_t bytes)
{
    const ncclx_ep_group_t *g = h->group;
    const uint64_t fields[] = {g->dims.ranks,
                               (uint64_t)g->ht.rank,
                               g->plan.num_experts,
                               g->plan.hidden,
                               g->dims.tokens,
                               g->dims.recv_slots,
                               g->plan.max_topk,
                               g->plan.expert_alignment,
                               g->plan.overflow_policy,
                               h->config.layout,
                               h->config.topk,
                               h->config.global_expert_ids,
                               bytes};
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        hash = ncclx_fnv(hash, fields[i]);
    }
    return hash;
}

void ncclx_ep_ht_handle_desc(ncclx_ep_handle_t *h, char *base, const ncclx_ep_ht_handle_layout_t *l)
{
    ncclx_ep_ht_handle_desc_t *d = &h->ht;
    d->header = (ncclx_ep_ht_handle_header_t *)(base + l->header);
    d->bytes = l->bytes;
    d->geometry = ncclx_ep_ht_geometry(h, l->bytes);
    const int em = h->config.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    d->idx = (int32_t *)(base + l->idx);
    d->flat_row = (int32_t *)(base + l->flat_row);
    d->em_row = em ? (int32_t *)(base + l->em_row) : NULL;
    d->totals = (long long *)(base + l->totals);
    d->counts = (int32_t *)(base + l->counts);
    d->offsets = (int32_t *)(base + l->offsets);
    d->zone_count = (int32_t *)(base + l->zone_count);
    d->zone_base = (int32_t *)(base + l->zone_base);
    d->em_next = em && h->group->dims.mxfp8_combine ? (int32_t *)(base + l->em_next) : NULL;
    d->em_head = em && h->group->dims.mxfp8_combine ? (uint8_t *)(base + l->em_head) : NULL;
    d->topk = (int)h->config.topk;
    d->expert_major = em;
    d->global_ids = (int)h->config.global_expert_ids;
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
    if (ncclx_ht_inside(&a->tokens, g->ht_dispatch_rows,
                        (size_t)g->dims.recv_slots * g->dims.payload_bytes) ||
        ncclx_ht_inside(&a->tokens, g->ht_combine_rows,
                        (size_t)g->dims.recv_slots * g->dims.combine_slot_bytes)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->tokens lies in the group's own buffers "
                           "(ncclxEpGroupGetHtBuffers), which peers write during the dispatch: "
                           "copy the tokens elsewhere first");
    }
    /* Zero copy: out_tokens is this rank's dispatch rows, row for row. */
    if (ncclx_ht_inside(&a->out_tokens, g->ht_dispatch_rows,
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

ncclxResult_t ncclx_ep_ht_dispatch(ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                   ncclxStream_t stream)
{
    ncclx_ep_group_t *g = h->group;
    ncclx_ep_ht_dispatch_desc_t d;
    ncclxResult_t res = ncclxSuccess;
    if (g->broken) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpDispatch: EP group %u is unusable: a launch failed in the "
                           "middle of one of its steps (finalize the context)",
                           g->index);
    }
    if (!h->routed) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpDispatch: handle %u has no routing (ncclxEpHandleInit gave "
                           "it none, or its last routing launch failed): call "
                           "ncclxEpHandleUpdate",
                           h->index);
    }
    if (h->route_gen != g->route_gen) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpDispatch: handle %u was routed before a receive overflow of "
                           "EP group %u was cleared: route it again with ncclxEpHandleUpdate",
                           h->index, g->index);
    }
    /* After the routing checks: without a routing, num_tokens means nothing yet. */
    NCCLX_CHECK(ncclx_ep_ht_dispatch_desc(h, a, &d));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpDispatch"));
    h->dispatched = 0;
    ncclx_clear_stale_cuda_error("ncclxEpDispatch");
    res = NCCLX_CUDA_STATUS(ncclx_ep_ht_launch_dispatch(&g->ht, &h->ht, &d, (cudaStream_t)stream));
    if (res != ncclxSuccess) {
        g->broken = 1; /* the push may have run and signalled: the ranks are out of step */
        goto out;
    }
    h->dispatched = 1;
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
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
    if (ncclx_ht_inside(&a->out, g->ht_dispatch_rows,
                        (size_t)g->dims.recv_slots * g->dims.payload_bytes) ||
        ncclx_ht_inside(&a->out, g->ht_combine_rows,
                        (size_t)g->dims.recv_slots * g->dims.combine_slot_bytes)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->out lies in the group's own buffers "
                           "(ncclxEpGroupGetHtBuffers), which peers read during the combine");
    }
    /* Zero copy: expert_out is this rank's combine rows, row for row. */
    if (ncclx_ht_inside(&a->expert_out, g->ht_combine_rows,
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

ncclxResult_t ncclx_ep_ht_combine(ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                  ncclxStream_t stream)
{
    ncclx_ep_group_t *g = h->group;
    ncclx_ep_ht_combine_desc_t d;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_ht_combine_desc(h, a, &d));
    if (g->broken) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpCombine: EP group %u is unusable: a launch failed in the "
                           "middle of one of its steps (finalize the context)",
                           g->index);
    }
    /* ncclxEpCombine has checked that the handle has a completed dispatch. */
    if (h->route_gen != g->route_gen) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpCombine: handle %u was routed before a receive overflow of "
                           "EP group %u was cleared: route it again and dispatch",
                           h->index, g->index);
    }
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpCombine"));
    ncclx_clear_stale_cuda_error("ncclxEpCombine");
    res = NCCLX_CUDA_STATUS(ncclx_ep_ht_launch_combine(&g->ht, &h->ht, &d, (cudaStream_t)stream));
    if (res != ncclxSuccess) {
        g->broken = 1; /* the stage may have run and signalled */
        goto out;
    }
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}

/* One optional layout tensor: 1-D, at least min_entries, INT32 or INT64 like the others. */
static ncclxResult_t ncclx_ht_check_info_tensor(const ncclxTensor_t *t, const char *field,
                                                int64_t min_entries, int *dtype)
{
    char what[96];
    if (t->ndim == 0 && t->data == NULL) {
        return ncclxSuccess;
    }
    snprintf(what, sizeof(what), "ncclxEpHandleGetLayout: info->%s", field);
    const int64_t any[1] = {NCCLX_ANY_DIM};
    /* Written element by element: aligned to the element is enough. */
    NCCLX_CHECK(ncclx_tensor_check_aligned(
        t, what, *dtype < 0 ? IDX_DTYPES : BIT(*dtype), 1, any,
        "[entries], INT32 or INT64 like the other layout tensors",
        ncclx_tensor_elem_bits(t->dtype) / 8 > 0 ? ncclx_tensor_elem_bits(t->dtype) / 8 : 1));
    if (t->shape[0] < min_entries || t->data == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.shape[0]=%lld: needs at least %lld entries",
                           what, (long long)t->shape[0], (long long)min_entries);
    }
    *dtype = (int)t->dtype;
    return ncclxSuccess;
}

ncclxResult_t ncclxEpHandleGetLayout(ncclxEpHandle_t h, const ncclxEpLayoutInfo_t *info,
                                     ncclxStream_t stream)
{
    ncclxEpLayoutInfo_t in = NCCLX_EP_LAYOUT_INFO_INIT;
    ncclx_ep_ht_layout_desc_t l;
    int dtype = -1;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpHandleGetLayout"));
    ncclx_ep_group_t *g = h->group;
    if (g->plan.algorithm != NCCLX_EP_ALGO_HT) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleGetLayout: EP group %u is LL (its dispatch returns the "
                           "counts in args->out_counts)",
                           g->index);
    }
    NCCLX_CHECK(ncclx_struct_import(&in, sizeof(in), info, NCCLX_MAGIC_EP_LAYOUT_INFO,
                                    NCCLX_EP_LAYOUT_INFO_SIZE_V1, "info"));
    const int64_t L = g->dims.local_experts;
    NCCLX_CHECK(ncclx_ht_check_info_tensor(&in.expert_counts, "expert_counts", L, &dtype));
    NCCLX_CHECK(ncclx_ht_check_info_tensor(&in.expert_offsets, "expert_offsets", L, &dtype));
    NCCLX_CHECK(ncclx_ht_check_info_tensor(&in.recv_total, "recv_total", 1, &dtype));
    if (in.expert_offsets.data != NULL && !h->ht.expert_major) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleGetLayout: info->expert_offsets: a FLAT handle has no "
                           "expert zones (leave it absent)");
    }
    if (!h->routed) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleGetLayout: handle %u has no routing (ncclxEpHandleInit "
                           "gave it none, or its last routing launch failed)",
                           h->index);
    }
    if (h->route_gen != g->route_gen) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleGetLayout: handle %u was routed before a receive "
                           "overflow of EP group %u was cleared: route it again",
                           h->index, g->index);
    }
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpHandleGetLayout"));
    l.counts = in.expert_counts.data;
    l.offsets = in.expert_offsets.data;
    l.total = in.recv_total.data;
    l.int64 = dtype == NCCLX_INT64;
    l.offsets_entries = in.expert_offsets.shape[0] > L ? (int)L + 1 : (int)L;
    ncclx_clear_stale_cuda_error("ncclxEpHandleGetLayout");
    NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ht_launch_layout(&g->ht, &h->ht, &l, (cudaStream_t)stream), res,
                          out);
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}

/* ---- the HT algorithm behind the EP front end (lib/ep/ep_algo.h) ---- */

static size_t ncclx_ht_handle_layouts(const ncclx_ep_dims_t *d, uint32_t layout,
                                      ncclx_ep_ll_handle_layout_t *ll,
                                      ncclx_ep_ht_handle_layout_t *ht)
{
    (void)layout; /* one layout of memory for both HT layouts */
    (void)ll;
    ncclx_ep_ht_handle_layout(d, ht);
    return ht->bytes;
}

static void ncclx_ht_handle_bind(ncclx_ep_handle_t *h, char *caller_memory)
{
    const ncclx_ep_group_t *g = h->group;
    ncclx_ep_ht_handle_layout_t ht = g->ht_handle_layout;
    char *base;
    if (caller_memory != NULL) { /* laid out for this handle's shape alone */
        ncclx_ep_dims_t d = g->dims;
        d.topk = h->config.topk;
        (void)ncclx_ht_handle_layouts(&d, h->config.layout, NULL, &ht);
        base = caller_memory;
    } else { /* the group's pool: every handle has the stride of the largest shape */
        base = g->handle_memory + (size_t)h->index * ht.bytes;
    }
    ncclx_ep_ht_handle_desc(h, base, &ht);
}

static ncclxResult_t ncclx_ht_route_ready(const ncclx_ep_group_t *g, const char *call)
{
    if (g->broken) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: EP group %u is unusable: a launch failed in the middle of one of "
                           "its steps (finalize the context)",
                           call, g->index);
    }
    return ncclxSuccess;
}

static cudaError_t ncclx_ht_launch_route(ncclx_ep_handle_t *h, const void *topk_idx, int idx64,
                                         cudaStream_t stream)
{
    return ncclx_ep_ht_launch_route(&h->group->ht, &h->ht, topk_idx, idx64, stream);
}

/* HT routing is several collective kernels: a failure after the first leaves the ranks out of
 * step for good. */
static void ncclx_ht_route_failed(ncclx_ep_group_t *g)
{
    g->broken = 1u;
}

static ncclxResult_t ncclx_ht_complete(ncclx_ep_handle_t *h, ncclxStream_t stream)
{
    (void)stream;
    return NCCLX_ERROR(ncclxInvalidUsage,
                       "ncclxEpComplete: EP group %u is HT, whose dispatch and combine are "
                       "whole (send_only is an LL feature)",
                       h->group->index);
}

/* HT kernels read the error word once at their start: a clear on another stream could change
 * it under a running kernel, so the clear follows the stream rule. */
static ncclxResult_t ncclx_ht_clear(ncclx_ep_group_t *g, uint32_t seen, ncclxStream_t stream)
{
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpClearAsyncError"));
    ncclx_clear_stale_cuda_error("ncclxEpClearAsyncError");
    if (seen & NCCLX_EP_ERROR_OVERFLOW) {
        /* Every routing up to now overflowed or was skipped (the group was stopped). */
        g->route_gen++;
    }
    NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ht_launch_clear_error(&g->ht, seen, (cudaStream_t)stream), res,
                          out);
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}

const ncclx_ep_algo_t ncclx_ep_ht_algo = {
    .name = "HT",
    .second_layout = NCCLX_EP_LAYOUT_FLAT,
    .layouts_text = "an HT handle is NCCLX_EP_LAYOUT_FLAT or NCCLX_EP_LAYOUT_EXPERT_MAJOR",
    .clear_keeps = NCCLX_EP_ERROR_TIMEOUT,
    .has_masks = 0,
    .imports_handles = 1,
    .bind = ncclx_ep_ht_group_bind,
    .handle_layouts = ncclx_ht_handle_layouts,
    .handle_bind = ncclx_ht_handle_bind,
    .route_ready = ncclx_ht_route_ready,
    .launch_route = ncclx_ht_launch_route,
    .route_failed = ncclx_ht_route_failed,
    .dispatch = ncclx_ep_ht_dispatch,
    .combine = ncclx_ep_ht_combine,
    .complete = ncclx_ht_complete,
    .clear = ncclx_ht_clear,
};
