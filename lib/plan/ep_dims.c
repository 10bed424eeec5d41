/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP group dimensions: the one place that says how big a message, a slot and a handle are.
 * docs/plan-sizing.md gives the same formulas in prose.
 */
#include "error.h"
#include "plan_internal.h"

/* Largest token row on the wire over the enabled recipes and dtypes. */
static size_t ncclx_payload_bytes(const ncclxEpGroupPlan_t *g)
{
    size_t best = 0, candidate;
    if (g->recipes & (NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_MXFP8)) {
        uint32_t max_bits = 0;
        for (int t = 0; t < NCCLX_NUM_DATA_TYPES; t++) {
            uint32_t bits = ncclx_dtype_bits((ncclxDataType_t)t);
            if ((g->token_dtypes & NCCLX_DTYPE_BIT(t)) && bits > max_bits) {
                max_bits = bits;
            }
        }
        candidate = (size_t)g->hidden * max_bits / 8;
        best = candidate > best ? candidate : best;
    }
    if (g->recipes & NCCLX_EP_RECIPE_QUANT_FWD) {
        candidate = ncclx_align_up(g->max_token_bytes, 16) + ncclx_align_up(g->max_scale_bytes, 16);
        best = candidate > best ? candidate : best;
    }
    if (g->recipes & NCCLX_EP_RECIPE_FP8) {
        /* E4M3 row + one float32 scale per 128 elements. */
        candidate = ncclx_align_up(g->hidden, 16) + ncclx_align_up((size_t)g->hidden / 128 * 4, 16);
        best = candidate > best ? candidate : best;
    }
    return ncclx_align_up(best, 16);
}

/* LL zero copy: the largest output token row and scale row over the enabled recipes and
 * dtypes (a call views the rows as [L, R*T] rows of its own sizes, which are at most these). */
static void ncclx_zero_copy_rows(const ncclxEpGroupPlan_t *g, ncclx_ep_dims_t *d)
{
    size_t row = 0, scale = 0;
    d->zero_copy_row_bytes = d->zero_copy_scale_bytes = 0;
    if (!g->zero_copy) {
        return;
    }
    if (g->recipes & NCCLX_EP_RECIPE_NONE) {
        for (int t = 0; t < NCCLX_NUM_DATA_TYPES; t++) {
            const size_t bytes = (size_t)g->hidden * ncclx_dtype_bits((ncclxDataType_t)t) / 8;
            if ((g->token_dtypes & NCCLX_DTYPE_BIT(t)) && bytes > row) {
                row = bytes;
            }
        }
    }
    if ((g->recipes & NCCLX_EP_RECIPE_QUANT_FWD) && g->max_token_bytes > row) {
        row = g->max_token_bytes;
    }
    if ((g->recipes & NCCLX_EP_RECIPE_QUANT_FWD) && g->max_scale_bytes > scale) {
        scale = g->max_scale_bytes;
    }
    if (g->recipes & NCCLX_EP_RECIPE_FP8) {
        row = g->hidden > row ? g->hidden : row; /* E4M3 */
        scale = (size_t)g->hidden / 128 * 4 > scale ? (size_t)g->hidden / 128 * 4 : scale;
    }
    d->zero_copy_row_bytes = row;
    d->zero_copy_scale_bytes = scale;
}

/* Carves one piece of a handle: 16-byte aligned. */
static size_t ncclx_handle_piece(size_t *cursor, size_t bytes)
{
    size_t offset = *cursor;
    *cursor += ncclx_align_up(bytes, 16);
    return offset;
}

void ncclx_ep_ll_handle_layout(const ncclx_ep_dims_t *d, int expert_major,
                               ncclx_ep_ll_handle_layout_t *h)
{
    size_t cursor = 0;
    size_t tk = (size_t)d->tokens * d->topk, rt = (size_t)d->ranks * d->tokens;
    h->idx = ncclx_handle_piece(&cursor, tk * 4);
    h->route = ncclx_handle_piece(&cursor, tk * 4);
    h->send_count = ncclx_handle_piece(&cursor, (size_t)d->ranks * 4);
    h->recv_count = ncclx_handle_piece(&cursor, (size_t)d->ranks * 4);
    h->recv_tok = ncclx_handle_piece(&cursor, rt * 4);
    h->recv_pos = expert_major ? ncclx_handle_piece(&cursor, rt * d->topk * 4) : 0;
    h->expert_slot = expert_major ? ncclx_handle_piece(&cursor, tk * 4) : 0;
    h->expert_count = expert_major ? ncclx_handle_piece(&cursor, (size_t)d->num_experts * 4) : 0;
    /* Zero copy: where the dispatch put this rank's rows of each expert, kept with the handle so
     * that its combine finds them there even after another handle's dispatch (rank-major: only
     * whether each expert's rank took rows, >= 0, as its rows' place needs no count). */
    h->zero_copy_starts =
        d->zero_copy_row_bytes != 0 ? ncclx_handle_piece(&cursor, (size_t)d->num_experts * 4) : 0;
    h->bytes = ncclx_align_up(cursor, NCCLX_DEVICE_ALIGN);
}

/* Every HT handle holds both layouts' row maps: a handle's layout is chosen at create, and all
 * handles of a group share one stride. */
void ncclx_ep_ht_handle_layout(const ncclx_ep_dims_t *d, ncclx_ep_ht_handle_layout_t *h)
{
    size_t cursor = 0;
    size_t tk = (size_t)d->tokens * d->topk, L = d->local_experts;
    h->header =
        ncclx_handle_piece(&cursor, 64); /* kernels/ep_ht/ep_ht.h: ncclx_ep_ht_handle_header_t */
    h->idx = ncclx_handle_piece(&cursor, tk * 4);
    h->flat_row = ncclx_handle_piece(&cursor, (size_t)d->tokens * d->ranks * 4);
    h->em_row = ncclx_handle_piece(&cursor, tk * 4);
    h->totals = ncclx_handle_piece(&cursor, 2 * 8);
    h->counts = ncclx_handle_piece(&cursor, L * 4);
    h->offsets = ncclx_handle_piece(&cursor, (L + 1) * 4);
    h->zone_count = ncclx_handle_piece(&cursor, L * 4);
    h->zone_base = ncclx_handle_piece(&cursor, L * 4);
    /* The MXFP8 combine sums each token's rows on a rank before quantizing: the receiver's
     * links between them (kernels/ep_ht/ep_ht.h, em_next and em_head). */
    h->em_next = d->mxfp8_combine ? ncclx_handle_piece(&cursor, (size_t)d->recv_slots * 4) : 0;
    h->em_head = d->mxfp8_combine ? ncclx_handle_piece(&cursor, d->recv_slots) : 0;
    /* Across load/store domains: the relay entries of the rail sources' tokens on this rank's
     * node, [nodes - 1][T][K] {int32 row, int32 expert}, by other node (kernels/ep_ht/ep_ht.h).
     */
    h->relay = d->nodes > 1
                   ? ncclx_handle_piece(&cursor, (size_t)(d->nodes - 1) * d->tokens * d->topk * 8)
                   : 0;
    h->bytes = ncclx_align_up(cursor, NCCLX_DEVICE_ALIGN);
}

size_t ncclx_ep_ht_map_bytes(const ncclx_ep_dims_t *d, uint32_t num_experts)
{
    return (size_t)d->tokens * ((num_experts + 31) / 32) * 4;
}

static size_t ncclx_handle_bytes(const ncclx_ep_dims_t *d, const ncclxEpGroupPlan_t *g, int ll)
{
    if (ll) {
        ncclx_ep_ll_handle_layout_t h;
        ncclx_ep_ll_handle_layout(d, (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) != 0, &h);
        return h.bytes;
    }
    ncclx_ep_ht_handle_layout_t h;
    ncclx_ep_ht_handle_layout(d, &h);
    return h.bytes;
}

ncclxResult_t ncclx_ep_dims_compute(const ncclxEpGroupPlan_t *g, const ncclxTeam_t *team,
                                    uint32_t gi, ncclx_ep_dims_t *d)
{
    int ll = g->algorithm == NCCLX_EP_ALGO_LL;
    uint64_t recv_slots;
    if (ll && team->num_ranks > NCCLX_EP_MAX_LL_RANKS) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "plan.ep_groups[%u]: an LL group spans at most %u ranks (one "
                           "load/store domain); the team has %u",
                           gi, NCCLX_EP_MAX_LL_RANKS, team->num_ranks);
    }
    d->ranks = team->num_ranks;
    d->local_experts = g->num_experts / team->num_ranks;
    d->tokens = g->max_dispatch_tokens_per_rank;
    d->topk = g->max_topk;
    d->hidden = g->hidden;
    d->num_experts = g->num_experts;
    recv_slots = (uint64_t)d->ranks * d->tokens;
    if (!ll && g->max_recv_tokens_per_rank != 0) {
        recv_slots = g->max_recv_tokens_per_rank;
    }
    if (recv_slots > INT32_MAX) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "plan.ep_groups[%u]: ranks * "
                           "max_dispatch_tokens_per_rank = %llu receive rows exceeds 2^31-1; "
                           "set max_recv_tokens_per_rank",
                           gi, (unsigned long long)recv_slots);
    }
    d->recv_slots = (uint32_t)recv_slots;
    if (!ll) {
        d->combine_slots = 1; /* HT: one combine row per receive row */
    } else if (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        d->combine_slots = d->topk; /* weights are applied per (token, expert) at the receiver */
    } else {
        d->combine_slots = d->topk < d->ranks ? d->topk : d->ranks; /* one row per rank */
    }
    d->mxfp8_combine = !ll && (g->recipes & NCCLX_EP_RECIPE_MXFP8) != 0;
    d->lsa = team->lsa_size;
    d->nodes = team->num_ranks / team->lsa_size;
    d->payload_bytes = ncclx_payload_bytes(g);
    d->dispatch_msg_bytes = ncclx_ep_msg_bytes(d->topk, d->payload_bytes);
    d->combine_elem_bytes = (g->token_dtypes & NCCLX_DTYPE_BIT(NCCLX_FLOAT32)) ? 4 : 2;
    d->combine_slot_bytes = ncclx_align_up((size_t)d->hidden * d->combine_elem_bytes, 16);
    /* HT across load/store domains: a relayed row carries the token's top-k meta, and a node's
     * partial its weight gradients (docs/plan-sizing.md). */
    d->relay_row_bytes = 0;
    d->partial_bytes = 0;
    if (!ll && d->nodes > 1) {
        d->relay_row_bytes = ncclx_align_up(d->payload_bytes + (size_t)d->topk * 8, 16);
        d->partial_bytes = ncclx_align_up((size_t)d->hidden * 4 + (size_t)d->topk * 4, 16);
    }
    ncclx_zero_copy_rows(g, d);
    d->handle_bytes = ncclx_handle_bytes(d, g, ll);
    return ncclxSuccess;
}
