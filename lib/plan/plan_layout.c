/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Places every region of a plan, in a fixed order, into the four class arenas.  The same
 * function sizes a plan (measuring arenas) and lays it out at init (real arenas).
 */
#include <stdio.h>

#include "ep_ht.h"
#include "error.h"
#include "m2n_ring.h"
#include "net.h"
#include "plan_internal.h"
#include "pool.h"
#include "rooms.h"

static const size_t ncclx_class_align[NCCLX_MEM_NUM_CLASSES] = {
    [NCCLX_MEM_SYMMETRIC] = NCCLX_DEVICE_ALIGN,
    [NCCLX_MEM_DEVICE] = NCCLX_DEVICE_ALIGN,
    [NCCLX_MEM_MAPPED_HOST] = NCCLX_HOST_ALIGN,
    [NCCLX_MEM_HOST] = NCCLX_HOST_ALIGN,
};

void ncclx_layout_init_measure(ncclx_layout_t *layout, ncclx_region_visitor_t visit, void *ctx)
{
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        ncclx_arena_init_measure(&layout->arena[c], ncclxMemClassName((ncclxMemClass_t)c));
        layout->per_handle[c] = 0;
    }
    layout->visit = visit;
    layout->ctx = ctx;
    layout->num_regions = 0;
}

/* Reserves count objects of each bytes in mem_class; *offset = NCCLX_NO_REGION if empty. */
static ncclxResult_t ncclx_reserve(ncclx_layout_t *layout, ncclxMemClass_t mem_class, int group,
                                   const char *name, size_t each, uint32_t count, size_t *offset)
{
    ncclx_region_t region = {mem_class, group, name, 0, 0, each, count};
    char what[96];
    if (each == 0 || count == 0) {
        *offset = NCCLX_NO_REGION;
        return ncclxSuccess;
    }
    if (!ncclx_size_mul(each, count, &region.bytes)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan: %s of group %d: %u x %zu bytes overflows",
                           name, group, count, each);
    }
    snprintf(what, sizeof(what), group < 0 ? "%s" : "%s of EP group %d", name, group);
    NCCLX_CHECK(ncclx_arena_carve(&layout->arena[mem_class], region.bytes,
                                  ncclx_class_align[mem_class], what, &region.offset, NULL));
    *offset = region.offset;
    layout->num_regions++;
    if (layout->visit != NULL) {
        layout->visit(&region, layout->ctx);
    }
    return ncclxSuccess;
}

/* Bytes of a product of sizes, or an error naming the region. */
static ncclxResult_t ncclx_product(size_t a, size_t b, size_t c, const char *name, int group,
                                   size_t *out)
{
    size_t ab;
    if (!ncclx_size_mul(a, b, &ab) || !ncclx_size_mul(ab, c, out)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan: %s of EP group %d overflows 64 bits", name,
                           group);
    }
    return ncclxSuccess;
}

/* ncclx_reserve of one region of a * b * c bytes, the product checked first. */
static ncclxResult_t ncclx_reserve_product(ncclx_layout_t *layout, ncclxMemClass_t mem_class,
                                           int group, const char *name, size_t a, size_t b,
                                           size_t c, size_t *offset)
{
    size_t bytes;
    NCCLX_CHECK(ncclx_product(a, b, c, name, group, &bytes));
    return ncclx_reserve(layout, mem_class, group, name, bytes, 1, offset);
}

static ncclxResult_t ncclx_layout_ep_symmetric(ncclx_layout_t *layout, int gi, int ll, int mask,
                                               int expert_major, const ncclx_ep_dims_t *d,
                                               ncclx_ep_group_regions_t *r)
{
    const size_t buffers = ll ? NCCLX_EP_LL_BUFFERS : 1;
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "dispatch receive area",
                                      buffers, d->recv_slots, d->dispatch_msg_bytes,
                                      &r->dispatch_recv));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "combine receive area",
                                      buffers, (size_t)d->tokens * d->combine_slots,
                                      d->combine_slot_bytes, &r->combine_recv));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "signals", buffers, d->ranks,
                                      NCCLX_EP_SIGNAL_BYTES, &r->signals));
    /* Clean's round-one and round-two slots (uint64 per source) and the evicted words (uint32
     * per rank): never reset by a clean as a whole (see kernels/ep_ll/ep_ll_mask.cu). */
    NCCLX_CHECK(
        ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, gi, "mask words",
                      mask ? (size_t)d->ranks * (2 * sizeof(uint64_t) + sizeof(uint32_t)) : 0, 1,
                      &r->mask_words));
    /* Expert-major: each source's row count per local expert of this rank, stored before its
     * dispatch signal, so that the receiver knows every row's final position before it copies
     * one (kernels/ep_ll/ep_ll_dispatch.cu). */
    return ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "dispatch expert counts",
                                 expert_major ? buffers : 0, d->ranks,
                                 (size_t)d->local_experts * sizeof(int32_t), &r->dispatch_counts);
}

/* LL zero copy (docs/ep-ll.md, "Zero copy"): the output rows peers store into and their scale
 * rows, per layout the plan enables (expert-major [L][R][T], rank-major [R][T]: regions of
 * their own, so that one layout's dispatch never overwrites the other's rows), and the count
 * boards that tell every rank where each row goes; empty without zero_copy. */
static ncclxResult_t ncclx_layout_ep_zero_copy(ncclx_layout_t *layout, int gi,
                                               const ncclxEpGroupPlan_t *g,
                                               const ncclx_ep_dims_t *d,
                                               ncclx_ep_group_regions_t *r)
{
    const size_t on = g->zero_copy ? 1 : 0;
    const size_t em = on && (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) ? 1 : 0;
    const size_t rm = on && (g->layouts & NCCLX_EP_LAYOUT_RANK_MAJOR) ? 1 : 0;
    const size_t rows = (size_t)d->local_experts * d->ranks * d->tokens;
    const size_t rm_rows = (size_t)d->ranks * d->tokens;
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "zero-copy rows", em, rows,
                                      d->zero_copy_row_bytes, &r->zero_copy_rows));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "zero-copy scale rows", em,
                                      rows, d->zero_copy_scale_bytes, &r->zero_copy_scales));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "zero-copy rank-major rows",
                                      rm, rm_rows, d->zero_copy_row_bytes, &r->zero_copy_rm_rows));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi,
                                      "zero-copy rank-major scale rows", rm, rm_rows,
                                      d->zero_copy_scale_bytes, &r->zero_copy_rm_scales));
    return ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "count boards",
                                 on * NCCLX_EP_LL_BUFFERS, d->ranks,
                                 ncclx_ep_board_bytes(d->num_experts), &r->count_boards);
}

/* HT: the routing map, the step signals, the dispatch rows and their metadata, the combine rows
 * and the backward weight gradients (kernels/ep_ht/ep_ht.h). */
static ncclxResult_t ncclx_layout_ep_ht_symmetric(ncclx_layout_t *layout, int gi,
                                                  const ncclx_ep_dims_t *d,
                                                  ncclx_ep_group_regions_t *r)
{
    size_t bytes;
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, gi, "HT routing map",
                              ncclx_ep_ht_map_bytes(d, d->num_experts), 1, &r->ht_map));
    NCCLX_CHECK(
        ncclx_product(NCCLX_EP_HT_SIGNALS, d->ranks, sizeof(uint64_t), "HT signals", gi, &bytes));
    bytes += NCCLX_EP_HT_DIRECT_WORDS * sizeof(uint64_t); /* the direct path's own words */
    NCCLX_CHECK(
        ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, gi, "HT signals", bytes, 1, &r->signals));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT dispatch rows", 1,
                                      d->recv_slots, d->payload_bytes, &r->dispatch_recv));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT dispatch metadata",
                                      d->recv_slots, d->topk, 8, &r->ht_dispatch_meta));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT combine rows", 1,
                                      d->recv_slots, d->combine_slot_bytes, &r->combine_recv));
    return ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT weight gradients",
                                 d->recv_slots, d->topk, sizeof(float), &r->ht_combine_meta);
}

/* HT on a team of several load/store domains (hierarchical: a token crosses the network once
 * per destination node, to its rail peer there, the relay, which fans it out over the node;
 * docs/ep-ht.md): every remote rank's routing map, this rank's tokens packed once, the rows it
 * relays and the node partials it sums and receives, the operation words, and the group's
 * network signals.  Empty on one domain. */
static ncclxResult_t ncclx_layout_ep_ht_net(ncclx_layout_t *layout, int gi, const ncclxTeam_t *team,
                                            const ncclx_ep_dims_t *d, uint32_t *num_signals,
                                            ncclx_ep_group_regions_t *r)
{
    const int on = NCCLX_TEAM_MULTI_DOMAIN(team);
    /* Relay rows and partials are kept per other node (the rank's own has none). */
    const size_t ranks = on ? d->ranks : 0, others = on ? d->nodes - 1 : 0;
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT network maps", ranks, 1,
                                      ncclx_ep_ht_map_bytes(d, d->num_experts), &r->ht_net_maps));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT network staging", on,
                                      d->tokens, d->relay_row_bytes, &r->ht_net_stage));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT relay rows", others,
                                      d->tokens, d->relay_row_bytes, &r->ht_net_relay));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT partials out", others,
                                      d->tokens, d->partial_bytes, &r->ht_net_partial_out));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "HT partials in", others,
                                      d->tokens, d->partial_bytes, &r->ht_net_partial_in));
    /* [0][s]: the dispatch word from s, [1][r]: the combine word from r. */
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, gi, "HT network words",
                              2 * ranks * sizeof(uint64_t), 1, &r->ht_net_words));
    r->net_signal_base = *num_signals;
    if (on) {
        /* kind x peer: MAP_PUBLISHED, MAP_READ, RELAY_FILLED, RELAY_FREE, PARTIAL_READY,
         * PARTIAL_FREE */
        *num_signals += 6u * d->ranks;
    }
    return ncclxSuccess;
}

/* LL on a team of several load/store domains: the staging of what goes to other domains, and
 * the group's network signals.  Empty on one domain. */
static ncclxResult_t ncclx_layout_ep_net(ncclx_layout_t *layout, int gi, const ncclxTeam_t *team,
                                         const ncclxEpGroupPlan_t *g, const ncclx_ep_dims_t *d,
                                         uint32_t *num_signals, ncclx_ep_group_regions_t *r)
{
    const int on = NCCLX_TEAM_MULTI_DOMAIN(team);
    const size_t remote = on ? (size_t)team->num_ranks - team->lsa_size : 0;
    /* A message returns one row rank-major, and expert-major one per entry served here. */
    r->net_combine_rows = (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR)
                              ? (d->topk < d->local_experts ? d->topk : d->local_experts)
                              : 1;
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "dispatch network staging",
                                      remote, d->tokens, d->dispatch_msg_bytes,
                                      &r->net_dispatch_out));
    /* Expert-major: this rank's row counts per local expert of each remote rank, put before its
     * dispatch signal. */
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "dispatch count staging",
                                      (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) ? remote : 0,
                                      d->local_experts, sizeof(int32_t), &r->net_dispatch_counts));
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "combine network staging",
                                      remote * d->tokens, r->net_combine_rows,
                                      d->combine_slot_bytes, &r->net_combine_out));
    /* With a mask, remote sources' combine rows land by source and are copied into the combine
     * area once their source's signal counts, so that the late rows of an evicted remote rank
     * land where nothing reads them; the clean's network counters. */
    NCCLX_CHECK(ncclx_reserve_product(layout, NCCLX_MEM_SYMMETRIC, gi, "combine network arrivals",
                                      g->enable_mask ? remote * d->tokens : 0, r->net_combine_rows,
                                      d->combine_slot_bytes, &r->net_combine_in));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "network clean counters",
                              on && g->enable_mask ? (size_t)6 * d->ranks * sizeof(uint64_t) : 0, 1,
                              &r->net_mask));
    r->net_signal_base = *num_signals;
    if (on) {
        /* (parity, direction) x source, and with a mask clean round one and two x source */
        *num_signals += (g->enable_mask ? 6u : 4u) * d->ranks;
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_layout_ep_group(ncclx_layout_t *layout, int gi,
                                           const ncclxEpGroupPlan_t *g, const ncclxTeam_t *team,
                                           uint32_t *net_signals, ncclx_ep_group_regions_t *r)
{
    ncclx_ep_dims_t d;
    int ll = g->algorithm == NCCLX_EP_ALGO_LL;
    const size_t host_handle_bytes = ncclx_host_object_bytes(NCCLX_HOST_EP_HANDLE);
    NCCLX_CHECK(ncclx_ep_dims_compute(g, team, (uint32_t)gi, &d));
    r->ht_map = r->ht_dispatch_meta = r->ht_combine_meta = r->ht_counters = NCCLX_NO_REGION;
    r->mask_words = r->dispatch_counts = r->net_dispatch_counts = NCCLX_NO_REGION;
    r->zero_copy_rows = r->zero_copy_scales = r->count_boards = NCCLX_NO_REGION;
    r->zero_copy_rm_rows = r->zero_copy_rm_scales = NCCLX_NO_REGION;
    r->net_dispatch_out = r->net_combine_out = r->net_combine_in = r->net_mask = NCCLX_NO_REGION;
    r->net_combine_rows = 0;
    r->ht_net_maps = r->ht_net_stage = r->ht_net_relay = NCCLX_NO_REGION;
    r->ht_net_partial_out = r->ht_net_partial_in = r->ht_net_words = NCCLX_NO_REGION;
    r->net_signal_base = *net_signals;
    if (ll) {
        NCCLX_CHECK(ncclx_layout_ep_symmetric(layout, gi, ll, g->enable_mask,
                                              (g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) != 0, &d,
                                              r));
        NCCLX_CHECK(ncclx_layout_ep_net(layout, gi, team, g, &d, net_signals, r));
        NCCLX_CHECK(ncclx_layout_ep_zero_copy(layout, gi, g, &d, r));
    } else {
        NCCLX_CHECK(ncclx_layout_ep_ht_symmetric(layout, gi, &d, r));
        NCCLX_CHECK(ncclx_layout_ep_ht_net(layout, gi, team, &d, net_signals, r));
    }
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "group state", NCCLX_EP_DEV_STATE_BYTES,
                              1, &r->state));
    /* Only a group with a mask settles who arrived (kernels/ep_ll/ep_ll_common.cuh, wait_source).
     */
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "arrival decisions",
                              ll && g->enable_mask ? (size_t)2 * d.ranks * sizeof(uint64_t) : 0, 1,
                              &r->decisions));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "active mask",
                              g->enable_mask ? (size_t)d.ranks * sizeof(int32_t) : 0, 1, &r->mask));
    NCCLX_CHECK(
        ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "HT routing counts",
                      ll ? 0 : (size_t)d.ranks * (d.num_experts + d.ranks) * sizeof(int32_t), 1,
                      &r->ht_counters));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, gi, "handle routing", d.handle_bytes,
                              g->num_handles, &r->handles));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_MAPPED_HOST, gi, "group status", NCCLX_STATUS_BYTES,
                              1, &r->status));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, gi, "group",
                              ncclx_host_object_bytes(NCCLX_HOST_EP_GROUP), 1, &r->host_group));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, gi, "handles", host_handle_bytes,
                              g->num_handles, &r->host_handles));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, gi, "handle pool bookkeeping",
                              ncclx_pool_bookkeeping_bytes(g->num_handles), 1, &r->host_pool));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, gi, "ranks masked by update",
                              ll && g->enable_mask ? d.ranks : 0, 1, &r->host_masked));
    if (d.handle_bytes > layout->per_handle[NCCLX_MEM_DEVICE]) {
        layout->per_handle[NCCLX_MEM_DEVICE] = d.handle_bytes;
    }
    if (host_handle_bytes > layout->per_handle[NCCLX_MEM_HOST]) {
        layout->per_handle[NCCLX_MEM_HOST] = host_handle_bytes;
    }
    return ncclxSuccess;
}

/* The M2N engine's regions, all empty without M2N staging. */
static ncclxResult_t ncclx_layout_m2n(ncclx_layout_t *layout, const ncclx_plan_norm_t *norm,
                                      ncclx_plan_regions_t *regions)
{
    const int on = norm->plan.m2n_staging_bytes != 0;
    const size_t ranks = norm->team.num_ranks;
    uint64_t slice = 0;
    uint32_t channels = 0;
    if (on) {
        ncclx_m2n_ring_shape(norm->plan.m2n_staging_bytes, norm->team.num_ranks, &slice, &channels);
    }
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, -1, "M2N staging",
                              norm->plan.m2n_staging_bytes, 1, &regions->m2n_staging));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, -1, "M2N signals",
                              on ? ncclx_m2n_signal_bytes((uint32_t)ranks, channels) : 0, 1,
                              &regions->m2n_signals));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "M2N state",
                              on ? NCCLX_M2N_STATE_BYTES : 0, 1, &regions->m2n_state));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "M2N round counts",
                              on ? ncclx_m2n_count_words(channels) * ranks * sizeof(uint64_t) : 0,
                              1, &regions->m2n_counts));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_MAPPED_HOST, -1, "M2N status",
                              on ? NCCLX_STATUS_BYTES : 0, 1, &regions->m2n_status));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, -1, "M2N engine",
                              on ? ncclx_host_object_bytes(NCCLX_HOST_M2N_ENGINE) : 0, 1,
                              &regions->m2n_engine));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_HOST, -1, "M2N group entries",
                              ncclx_host_object_bytes(NCCLX_HOST_M2N_ENTRY),
                              norm->plan.m2n_max_group_entries, &regions->m2n_entries));
    /* Across load/store domains a put reads from the symmetric arena, so a slice for a rank of
     * another domain is packed here first: one ring per remote destination, the mirror of this
     * rank's ring at that destination; and the network signals of the votes and the rounds. */
    const uint64_t remote =
        on && NCCLX_TEAM_MULTI_DOMAIN(&norm->team) ? ranks - norm->team.lsa_size : 0;
    size_t bytes = 0;
    NCCLX_CHECK(ncclx_product(remote * channels, NCCLX_M2N_DEPTH * slice, 1, "M2N network staging",
                              -1, &bytes));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, -1, "M2N network staging", bytes, 1,
                              &regions->m2n_net_staging));
    regions->m2n_net_signal_base = regions->net_num_signals;
    regions->net_num_signals += (uint32_t)ncclx_m2n_net_signals((uint32_t)remote, channels);
    return ncclxSuccess;
}

/* The network transport's own regions (kernels/common/net.h), after every group has counted
 * its signals; all empty on one load/store domain. */
static ncclxResult_t ncclx_layout_net(ncclx_layout_t *layout, const ncclx_plan_norm_t *norm,
                                      ncclx_plan_regions_t *regions)
{
    const int on = NCCLX_TEAM_MULTI_DOMAIN(&norm->team);
    const uint32_t ranks = on ? norm->team.num_ranks : 0;
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_SYMMETRIC, -1, "network signals",
                              sizeof(uint64_t) * NCCLX_NET_CONTEXTS,
                              on ? regions->net_num_signals : 0, &regions->net_signals));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "network held puts",
                              sizeof(ncclx_net_held_t) * NCCLX_NET_CONTEXTS * NCCLX_NET_HELD_PUTS,
                              ranks, &regions->net_held));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "network held put cursors",
                              sizeof(uint32_t) * NCCLX_NET_CONTEXTS, ranks,
                              &regions->net_held_next));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "network counters",
                              on ? NCCLX_NET_STATS_BYTES : 0, 1, &regions->net_stats));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "network arena table", sizeof(void *),
                              ranks, &regions->net_world));
    return ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "network device communicator",
                         on ? NCCLX_NET_DEV_COMM_BYTES : 0, 1, &regions->net_dev_comm);
}

ncclxResult_t ncclx_plan_layout(ncclx_layout_t *layout, const ncclx_plan_norm_t *norm,
                                ncclx_plan_regions_t *regions)
{
    regions->net_num_signals = 0;
    NCCLX_CHECK(ncclx_layout_m2n(layout, norm, regions));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "LSA peer pointer table",
                              sizeof(void *), norm->team.lsa_size, &regions->peer_table));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_DEVICE, -1, "context scratch",
                              NCCLX_CONTEXT_SCRATCH_BYTES, 1, &regions->scratch));
    NCCLX_CHECK(ncclx_reserve(layout, NCCLX_MEM_MAPPED_HOST, -1, "context status",
                              NCCLX_STATUS_BYTES, 1, &regions->status));
    for (uint32_t gi = 0; gi < norm->num_groups; gi++) {
        NCCLX_CHECK(ncclx_layout_ep_group(layout, (int)gi, &norm->groups[gi], &norm->team,
                                          &regions->net_num_signals, &regions->groups[gi]));
    }
    return ncclx_layout_net(layout, norm, regions);
}
