/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A context on a communicator: device communicator, arenas, peer table, groups.  Shared by
 * ncclxInit (PMIx) and ncclxInitWithComm (caller's communicator).
 */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "gpu_check.h"
#include "struct.h"

#define NCCLX_DEFAULT_LSA_BARRIERS 32 /* CTAs that may hold an LSA barrier at once */

static int ncclx_lsa_barrier_count(const ncclx_plan_norm_t *norm)
{
    int count = NCCLX_DEFAULT_LSA_BARRIERS;
    for (uint32_t gi = 0; gi < norm->num_groups; gi++) {
        if ((int)norm->groups[gi].sm_budget > count) {
            count = (int)norm->groups[gi].sm_budget;
        }
    }
    return count;
}

/* Team from the communicator itself (ncclxInitWithComm): nodes = ranks / LSA size. */
static ncclxResult_t ncclx_team_from_comm(struct ncclxContext *ctx, int lsa, ncclxTeam_t *team)
{
    int ranks = 0;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_NCCL_CHECK_GOTO(ncclCommCount(ctx->comm, &ranks), res, out);
    team->num_ranks = (uint32_t)ranks;
    team->lsa_size = (uint32_t)lsa;
    team->num_nodes = (uint32_t)(ranks / lsa);
out:
    return res;
}

/* The context region layout and what each class needs. */
static ncclxResult_t ncclx_context_measure(struct ncclxContext *ctx, const ncclxPlan_t *plan,
                                           const ncclxTeam_t *team, size_t bytes[])
{
    ncclx_layout_t layout;
    NCCLX_CHECK(ncclx_plan_import(plan, team, &ctx->norm));
    ncclx_layout_init_measure(&layout, NULL, NULL);
    NCCLX_CHECK(ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        bytes[c] = layout.arena[c].used;
    }
    return ncclxSuccess;
}

void ncclx_context_build_groups(struct ncclxContext *ctx)
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
        ncclx_ep_group_bind(g, ctx, ctx->rank, ctx->blocks);
        ctx->groups[gi] = g;
    }
}

/* Blocks per data-moving kernel when the plan sets no sm_budget: two per SM, shared evenly
 * by the ranks that run on the GPU (a loopback team) so that their kernels co-reside. */
ncclxResult_t ncclx_context_default_blocks(struct ncclxContext *ctx, int ranks_on_gpu)
{
    int sms = 0;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CUDA_CHECK_GOTO(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->cuda_device), res, out);
    /* Two 512-thread blocks fit on an SM (the kernels are built for it), so every rank's
     * kernels can be resident at once: a waiting rank never keeps a peer's send out. */
    ctx->blocks = 2 * sms / ranks_on_gpu > 0 ? 2 * sms / ranks_on_gpu : 1;
out:
    return res;
}

/* Zeroed arenas, the peer table, eager module loading; all on ctx->stream. */
ncclxResult_t ncclx_context_prepare_device(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    const ncclx_arenas_t *a = &ctx->arenas;
    for (int c = NCCLX_MEM_SYMMETRIC; c <= NCCLX_MEM_DEVICE; c++) {
        if (a->base[c] != NULL) {
            NCCLX_CUDA_CHECK_GOTO(cudaMemsetAsync(a->base[c], 0, a->bytes[c], ctx->stream), res,
                                  out);
        }
    }
    ctx->peer_table = ncclx_arena_ptr(a, NCCLX_MEM_DEVICE, ctx->regions.peer_table);
    if (a->window != NULL && ctx->comm != NULL) {
        NCCLX_CUDA_CHECK_GOTO(ncclx_launch_resolve_peers(a->window, 0, (int)ctx->norm.team.lsa_size,
                                                         ctx->peer_table, ctx->stream),
                              res, out);
    }
    NCCLX_CUDA_CHECK_GOTO(ncclx_kernels_load(), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    return res;
}

/* Every rank is ready (arenas zeroed, window registered) before any peer writes to us. */
static ncclxResult_t ncclx_context_barrier(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    void *scratch = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, ctx->regions.scratch);
    NCCLX_NCCL_CHECK_GOTO(
        ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, ctx->comm, ctx->stream), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    return res;
}

void ncclx_context_fill_info(struct ncclxContext *ctx)
{
    ncclxContextInfo_t *info = &ctx->info;
    int rank = ctx->rank;
    info->rank = rank;
    info->num_ranks = (int32_t)ctx->norm.team.num_ranks;
    info->num_nodes = (int32_t)ctx->norm.team.num_nodes;
    info->lsa_size = (int32_t)ctx->norm.team.lsa_size;
    info->cuda_device = ctx->cuda_device;
    if (!info->from_pmix) {
        info->local_size = info->lsa_size;
        info->local_rank = rank % info->lsa_size;
        info->node_id = rank / info->lsa_size;
    }
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        info->bytes[c] = ctx->arenas.bytes[c];
    }
}

ncclxResult_t ncclx_context_setup(struct ncclxContext *ctx, const ncclxPlan_t *plan,
                                  const ncclxTeam_t *team)
{
    ncclxResult_t res = ncclxSuccess;
    ncclxTeam_t comm_team = NCCLX_TEAM_INIT;
    size_t bytes[NCCLX_MEM_NUM_CLASSES];
    int lsa;
    NCCLX_NCCL_CHECK_GOTO(ncclCommCuDevice(ctx->comm, &ctx->cuda_device), res, err);
    NCCLX_NCCL_CHECK_GOTO(ncclCommUserRank(ctx->comm, &ctx->rank), res, err);
    NCCLX_CUDA_CHECK_GOTO(cudaSetDevice(ctx->cuda_device), res, err);
    NCCLX_CHECK_GOTO(ncclx_context_default_blocks(ctx, 1), res, err);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), res, err);
    /* The device communicator first: it knows the real LSA (NVLink) team. */
    NCCLX_NCCL_CHECK_GOTO(
        (ncclResult_t)ncclx_devcomm_create(ctx->comm, NCCLX_DEFAULT_LSA_BARRIERS, ctx->devcomm),
        res, err_destroy_stream);
    ctx->devcomm_created = 1;
    lsa = ncclx_devcomm_lsa_size(ctx->devcomm);
    if (team == NULL) {
        NCCLX_CHECK_GOTO(ncclx_team_from_comm(ctx, lsa, &comm_team), res, err_destroy_devcomm);
        team = &comm_team;
    } else if ((int)team->lsa_size != lsa) {
        res = NCCLX_ERROR(ncclxUnsupported,
                          "NCCL's load/store team has %d ranks but the job "
                          "runs %u ranks per node: LSA teams spanning nodes are not supported yet",
                          lsa, team->lsa_size);
        goto err_destroy_devcomm;
    }
    NCCLX_CHECK_GOTO(ncclx_context_measure(ctx, plan, team, bytes), res, err_destroy_devcomm);
    if (ncclx_lsa_barrier_count(&ctx->norm) > NCCLX_DEFAULT_LSA_BARRIERS) {
        /* Recreate with enough barriers for the plan's largest SM budget. */
        NCCLX_NCCL_CHECK_GOTO((ncclResult_t)ncclx_devcomm_destroy(ctx->comm, ctx->devcomm), res,
                              err);
        ctx->devcomm_created = 0;
        NCCLX_NCCL_CHECK_GOTO((ncclResult_t)ncclx_devcomm_create(
                                  ctx->comm, ncclx_lsa_barrier_count(&ctx->norm), ctx->devcomm),
                              res, err_destroy_stream);
        ctx->devcomm_created = 1;
    }
    NCCLX_CHECK_GOTO(ncclx_arenas_alloc(&ctx->arenas, bytes, &ctx->norm.plan, ctx->comm), res,
                     err_destroy_devcomm);
    NCCLX_CHECK_GOTO(ncclx_context_prepare_device(ctx), res, err_free_arenas);
    ncclx_context_build_groups(ctx);
    NCCLX_CHECK_GOTO(ncclx_context_barrier(ctx), res, err_free_arenas);
    ncclx_context_fill_info(ctx);
    return ncclxSuccess;

err_free_arenas:
    (void)ncclx_arenas_free(&ctx->arenas, ctx->comm);
err_destroy_devcomm:
    if (ctx->devcomm_created) {
        (void)ncclx_devcomm_destroy(ctx->comm, ctx->devcomm);
        ctx->devcomm_created = 0;
    }
err_destroy_stream:
    (void)cudaStreamDestroy(ctx->stream);
    ctx->stream = NULL;
err:
    return res;
}

ncclxResult_t ncclx_context_teardown(struct ncclxContext *ctx)
{
    ncclxResult_t first = ncclxSuccess;
    (void)cudaSetDevice(ctx->cuda_device);
    first = ncclx_first_error(first, NCCLX_CUDA_STATUS(cudaStreamSynchronize(ctx->stream)));
    first = ncclx_first_error(first, ncclx_arenas_free(&ctx->arenas, ctx->comm));
    if (ctx->loopback != NULL) {
        first = ncclx_first_error(first, ncclx_loopback_release(ctx->loopback));
        ctx->loopback = NULL;
    }
    if (ctx->devcomm_created) {
        first = ncclx_first_error(
            first, NCCLX_NCCL_STATUS((ncclResult_t)ncclx_devcomm_destroy(ctx->comm, ctx->devcomm)));
        ctx->devcomm_created = 0;
    }
    first = ncclx_first_error(first, NCCLX_CUDA_STATUS(cudaStreamDestroy(ctx->stream)));
    ctx->stream = NULL;
    return first;
}
