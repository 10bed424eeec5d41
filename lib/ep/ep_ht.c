/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The HT algorithm behind the EP front end (lib/ep/ep.c, lib/ep/ep_algo.h): the kernels' view
 * of an HT group and handle, the layout query, and the launches of routing, dispatch and
 * combine (their arguments are checked by lib/ep/ep_ht_args.c).  Nothing here allocates or waits
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

#define BIT(t)     NCCLX_DTYPE_BIT(t)
#define IDX_DTYPES (BIT(NCCLX_INT32) | BIT(NCCLX_INT64))

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
    /* The path is part of every operation word besides.  Across load/store domains the caller
     * buffers of other domains are out of reach: never direct. */
    d->direct = ncclx_context_direct_path(ctx, NCCLX_ENV_EP_HT_PATH) &&
                d->ranks <= NCCLX_EP_HT_DIRECT_MAX_RANKS && g->dims.nodes == 1;
    /* Across load/store domains (docs/ep-ht.md, "Across nodes"); on one domain lsa = R. */
    d->lsa = (int)g->dims.lsa;
    d->lsa_base = d->rank / d->lsa * d->lsa;
    d->nodes = (int)g->dims.nodes;
    d->net = ctx->net;
    d->net_signal_base = (int)r->net_signal_base;
    d->net_maps = r->ht_net_maps;
    d->net_stage = r->ht_net_stage;
    d->net_relay = r->ht_net_relay;
    d->net_partial_out = r->ht_net_partial_out;
    d->net_partial_in = r->ht_net_partial_in;
    d->net_words = r->ht_net_words;
    d->relay_row_bytes = g->dims.relay_row_bytes;
    d->partial_bytes = g->dims.partial_bytes;
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
    d->relay = h->group->dims.nodes > 1 ? (int2 *)(void *)(base + l->relay) : NULL;
    d->topk = (int)h->config.topk;
    d->expert_major = em;
    d->global_ids = (int)h->config.global_expert_ids;
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
