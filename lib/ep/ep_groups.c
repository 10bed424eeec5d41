/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP's room in the context (lib/plan/rooms.h): the groups built in their host regions at init,
 * each bound to its regions and its algorithm, and the EP kernel modules loaded.
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "env.h"
#include "ep_algo.h"
#include "ep_group.h"
#include "error.h"
#include "gpu_check.h"

/* The address of a region of mem_class, NULL where the plan has none (NCCLX_NO_REGION). */
static void *ncclx_region_or_null(const struct ncclxContext *ctx, ncclxMemClass_t mem_class,
                                  size_t offset)
{
    return offset != NCCLX_NO_REGION ? ncclx_arena_ptr(&ctx->arenas, mem_class, offset) : NULL;
}

ncclxResult_t ncclx_ep_group_bind(ncclx_ep_group_t *g, struct ncclxContext *ctx, int rank,
                                  int blocks)
{
    ncclxResult_t res = ncclxSuccess;
    cudaEvent_t done = NULL;
    ncclx_ep_ll_group_desc_t *d = &g->desc;
    const ncclx_ep_group_regions_t *r = &g->regions;
    g->ctx = ctx;
    ncclx_ep_ll_handle_layout(&g->dims, (g->plan.layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) != 0,
                              &g->handle_layout);
    g->handle_memory = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->handles);
    g->status = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_MAPPED_HOST, r->status);
    memset(d, 0, sizeof(*d));
    d->rank = rank;
    d->ranks = (int)g->dims.ranks;
    d->local_experts = (int)g->dims.local_experts;
    d->num_experts = (int)g->plan.num_experts;
    d->max_tokens = (int)g->dims.tokens;
    d->max_topk = (int)g->dims.topk;
    d->hidden = (int)g->dims.hidden;
    d->blocks = g->plan.sm_budget != 0 ? (int)g->plan.sm_budget : blocks;
    d->early_launch = ctx->early_launch && ncclx_ep_ll_early_launch_built();
    d->peers = (void *const *)ctx->peer_table;
    d->lsa_size = (int)ctx->norm.team.lsa_size;
    d->lsa_base = rank / d->lsa_size * d->lsa_size;
    d->net = ctx->net;
    d->net_dispatch_out = r->net_dispatch_out;
    d->net_combine_out = r->net_combine_out;
    d->net_combine_rows = (int)r->net_combine_rows;
    d->net_combine_in = r->net_combine_in;
    d->net_seen = r->net_mask != NCCLX_NO_REGION
                      ? ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->net_mask)
                      : NULL;
    d->net_base = d->net_seen != NULL ? d->net_seen + 2 * (size_t)g->dims.ranks : NULL;
    d->net_signal_base = (int)r->net_signal_base;
    d->dispatch_recv = r->dispatch_recv;
    d->combine_recv = r->combine_recv;
    d->signals = r->signals;
    d->dispatch_counts = r->dispatch_counts;
    d->net_dispatch_counts = r->net_dispatch_counts;
    d->zero_copy = g->plan.zero_copy != 0;
    d->zero_copy_rows = r->zero_copy_rows;
    d->zero_copy_scales = r->zero_copy_scales;
    d->zero_copy_rm_rows = r->zero_copy_rm_rows;
    d->zero_copy_rm_scales = r->zero_copy_rm_scales;
    d->count_boards = r->count_boards;
    d->board_bytes = ncclx_ep_board_bytes(g->plan.num_experts);
    g->zero_copy_tokens = ncclx_region_or_null(ctx, NCCLX_MEM_SYMMETRIC, r->zero_copy_rows);
    g->zero_copy_scales = ncclx_region_or_null(ctx, NCCLX_MEM_SYMMETRIC, r->zero_copy_scales);
    g->zero_copy_rm_tokens = ncclx_region_or_null(ctx, NCCLX_MEM_SYMMETRIC, r->zero_copy_rm_rows);
    g->zero_copy_rm_scales = ncclx_region_or_null(ctx, NCCLX_MEM_SYMMETRIC, r->zero_copy_rm_scales);
    d->msg_bytes = g->dims.dispatch_msg_bytes;
    d->decisions = r->decisions != NCCLX_NO_REGION
                       ? ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->decisions)
                       : NULL;
    d->combine_slot_bytes = g->dims.combine_slot_bytes;
    d->combine_slots = (int)g->dims.combine_slots;
    d->state = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->state);
    d->status = (unsigned int *)((char *)ctx->arenas.mapped_device + r->status);
    d->timeout_ns = g->plan.timeout_ns;
    d->inactive = r->mask != NCCLX_NO_REGION
                      ? (int *)ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->mask)
                      : NULL;
    d->mask_words = r->mask_words;
    /* Read by every kernel at its start: the local address saves a peer-table lookup. */
    d->evicted = r->mask_words != NCCLX_NO_REGION
                     ? (unsigned int *)((char *)ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_SYMMETRIC,
                                                                r->mask_words) +
                                        2 * sizeof(uint64_t) * g->dims.ranks)
                     : NULL;
    g->masked_by_update = r->host_masked != NCCLX_NO_REGION
                              ? ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->host_masked)
                              : NULL;
    if (g->masked_by_update != NULL) {
        memset(g->masked_by_update, 0, g->dims.ranks); /* the host arena is not zeroed */
    }
    d->timeout_ns = ncclx_env_timeout_ns(d->timeout_ns); /* NCCLX_TIMEOUT_MS wins */
    if (ncclx_ep_algo(g)->bind != NULL) {
        ncclx_ep_algo(g)->bind(g, ctx);
    }
    g->last_stream = NULL;
    NCCLX_CUDA_CHECK_GOTO(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), res, out);
    g->op_done = done;
out:
    return res;
}

ncclxResult_t ncclx_ep_group_unbind(ncclx_ep_group_t *g)
{
    ncclxResult_t res = ncclxSuccess;
    if (g->op_done != NULL) {
        res = NCCLX_CUDA_STATUS(cudaEventDestroy(g->op_done));
        g->op_done = NULL;
    }
    return res;
}

/* Destroys what binding a group created (its event); the groups live in the host arena. */
static ncclxResult_t ncclx_ep_groups_unbind(struct ncclxContext *ctx)
{
    ncclxResult_t first = ncclxSuccess;
    for (uint32_t gi = 0; gi < ctx->norm.num_groups; gi++) {
        if (ctx->groups[gi] != NULL) {
            first = ncclx_first_error(first, ncclx_ep_group_unbind(ctx->groups[gi]));
            ctx->groups[gi] = NULL;
        }
    }
    return first;
}

/* Builds every planned group in its host region and binds it. */
static ncclxResult_t ncclx_ep_groups_bind(struct ncclxContext *ctx)
{
    for (uint32_t gi = 0; gi < ctx->norm.num_groups; gi++) {
        const ncclx_ep_group_regions_t *r = &ctx->regions.groups[gi];
        ncclx_ep_group_t *g = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->host_group);
        char name[64];
        memset(g, 0, sizeof(*g));
        g->plan = ctx->norm.groups[gi];
        g->regions = *r;
        g->index = gi;
        /* Cannot fail: the plan was validated and measured with the same function. */
        (void)ncclx_ep_dims_compute(&g->plan, &ctx->norm.team, gi, &g->dims);
        snprintf(name, sizeof(name), "EP group %u handles", gi);
        ncclx_pool_init(&g->handles, name, "raise num_handles in the group's plan",
                        ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->host_handles),
                        sizeof(ncclx_ep_handle_t), g->plan.num_handles,
                        ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->host_pool));
        NCCLX_CHECK(ncclx_ep_group_bind(g, ctx, ctx->rank,
                                        g->plan.enable_mask ? ctx->blocks_masked : ctx->blocks));
        ctx->groups[gi] = g;
    }
    return ncclxSuccess;
}

/* Every LL and HT kernel module, loaded at init. */
static cudaError_t ncclx_ep_kernels_load(void)
{
    cudaError_t (*const loaders[])(void) = {
        ncclx_ep_ll_route_load,   ncclx_ep_ll_dispatch_load, ncclx_ep_ll_dispatch_recv_load,
        ncclx_ep_ll_combine_load, ncclx_ep_ll_mask_load,     ncclx_ep_ll_net_load,
        ncclx_ep_ht_route_load,   ncclx_ep_ht_rows_load,     ncclx_ep_ht_data_load,
        ncclx_ep_ht_net_load};
    cudaError_t err = cudaSuccess;
    for (size_t i = 0; i < sizeof(loaders) / sizeof(loaders[0]) && err == cudaSuccess; i++) {
        err = loaders[i]();
    }
    return err;
}

const ncclx_room_t ncclx_ep_room = {"EP", ncclx_ep_kernels_load, ncclx_ep_groups_bind,
                                    ncclx_ep_groups_unbind};
