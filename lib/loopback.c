/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Loopback teams: N ranks of one job on one GPU in one process.  One device allocation holds
 * every rank's symmetric arena (N slices); each rank is a full context whose peer table
 * points at the N slices, so the real kernels run unchanged as N concurrent ranks.  No NCCL
 * communicator is involved.
 */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "env.h"
#include "gpu_check.h"

/* The shared symmetric block, freed by the last context that releases it. */
struct ncclx_loopback {
    void *base;
    size_t slice_bytes;
    uint32_t refs;
};

ncclxResult_t ncclx_loopback_release(struct ncclx_loopback *team)
{
    ncclxResult_t res = ncclxSuccess;
    if (--team->refs == 0) {
        res = NCCLX_CUDA_STATUS(cudaFree(team->base));
        free(team);
    }
    return res;
}

static ncclxResult_t ncclx_loopback_alloc(size_t slice_bytes, uint32_t ranks,
                                          struct ncclx_loopback **out)
{
    struct ncclx_loopback *team = calloc(1, sizeof(*team));
    ncclxResult_t res = ncclxSuccess;
    if (team == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "loopback team: out of host memory");
    }
    team->slice_bytes = slice_bytes;
    if (slice_bytes > 0) {
        NCCLX_CUDA_CHECK_GOTO(cudaMalloc(&team->base, slice_bytes * ranks), res, err);
    }
    *out = team;
    return ncclxSuccess;
err:
    free(team);
    return res;
}

/* One rank: its own arenas except the symmetric slice, a peer table over every slice. */
static ncclxResult_t ncclx_loopback_rank(struct ncclxContext *ctx, const ncclxPlan_t *plan,
                                         const ncclxTeam_t *team, struct ncclx_loopback *shared)
{
    size_t bytes[NCCLX_MEM_NUM_CLASSES];
    void *peers[NCCLX_MAX_RANKS > 1024 ? 1024 : NCCLX_MAX_RANKS];
    ncclx_layout_t layout;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_plan_import(plan, team, &ctx->norm));
    ncclx_layout_init_measure(&layout, NULL, NULL);
    NCCLX_CHECK(ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        bytes[c] = layout.arena[c].used;
    }
    NCCLX_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), res, err);
    NCCLX_CHECK_GOTO(ncclx_arenas_alloc(&ctx->arenas, bytes, &ctx->norm.plan, NULL), res,
                     err_destroy_stream);
    ctx->arenas.base[NCCLX_MEM_SYMMETRIC] =
        shared->base != NULL ? (char *)shared->base + (size_t)ctx->rank * shared->slice_bytes
                             : NULL;
    ctx->arenas.symmetric_shared = 1;
    shared->refs++;
    ctx->loopback = shared;
    NCCLX_CHECK_GOTO(ncclx_context_prepare_device(ctx), res, err_free_arenas);
    for (uint32_t p = 0; p < team->num_ranks; p++) {
        peers[p] = shared->base != NULL ? (char *)shared->base + p * shared->slice_bytes : NULL;
    }
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpy(ctx->peer_table, peers, team->num_ranks * sizeof(void *),
                                     cudaMemcpyHostToDevice),
                          res, err_free_arenas);
    ncclx_context_build_groups(ctx);
    ncclx_context_fill_info(ctx);
    return ncclxSuccess;
err_free_arenas:
    (void)ncclx_arenas_free(&ctx->arenas, NULL);
    if (ctx->loopback != NULL) {
        (void)ncclx_loopback_release(ctx->loopback);
        ctx->loopback = NULL;
    }
err_destroy_stream:
    (void)cudaStreamDestroy(ctx->stream);
err:
    return res;
}

ncclxResult_t ncclxLoopbackInit(const ncclxPlan_t *plan, uint32_t num_ranks, int cuda_device,
                                ncclxContext_t contexts[])
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_plan_norm_t *norm = NULL;
    struct ncclx_loopback *shared = NULL;
    ncclxContext_t made[1024];
    uint32_t done = 0;
    ncclxResult_t res = ncclxSuccess;
    if (plan == NULL || contexts == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxLoopbackInit: %s is NULL",
                           plan == NULL ? "plan" : "contexts");
    }
    if (num_ranks < 1 || num_ranks > 1024) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxLoopbackInit: num_ranks=%u is outside "
                           "[1, 1024]",
                           num_ranks);
    }
    NCCLX_CHECK(ncclxEnvValidate());
    /* The ranks' streams must not share hardware queues, or a waiting rank's kernel can sit in
     * front of a peer's send.  Effective only if CUDA is not initialized yet in this process. */
    if (setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0) != 0) {
        NCCLX_WARN("could not set CUDA_DEVICE_MAX_CONNECTIONS for the loopback team");
    }
    team.num_ranks = team.lsa_size = num_ranks;
    norm = malloc(sizeof(*norm));
    if (norm == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
    }
    NCCLX_CHECK_GOTO(ncclx_plan_import(plan, &team, norm), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaSetDevice(cuda_device), res, out);
    {
        ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
        NCCLX_CHECK_GOTO(ncclxPlanComputeSizes(plan, &team, &sizes), res, out);
        /* Slices start on 4 KiB so every rank's regions keep their alignment. */
        NCCLX_CHECK_GOTO(
            ncclx_loopback_alloc(ncclx_align_up(sizes.total[NCCLX_MEM_SYMMETRIC], 4096), num_ranks,
                                 &shared),
            res, out);
        shared->refs = 1; /* ours, dropped below */
    }
    for (done = 0; done < num_ranks; done++) {
        struct ncclxContext *ctx = calloc(1, sizeof(*ctx));
        if (ctx == NULL) {
            res = NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
            goto err_finalize;
        }
        ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
        ctx->rank = (int)done;
        ctx->cuda_device = cuda_device;
        NCCLX_CHECK_GOTO(ncclx_context_default_blocks(ctx, (int)num_ranks), res, err_free_ctx);
        NCCLX_CHECK_GOTO(ncclx_loopback_rank(ctx, plan, &team, shared), res, err_free_ctx);
        made[done] = ctx;
        continue;
    err_free_ctx:
        free(ctx);
        goto err_finalize;
    }
    memcpy(contexts, made, num_ranks * sizeof(made[0]));
    NCCLX_INFO("loopback team of %u ranks on CUDA device %d", num_ranks, cuda_device);
    (void)ncclx_loopback_release(shared);
    goto out;
err_finalize:
    while (done-- > 0) {
        (void)ncclxFinalize(made[done]);
    }
    (void)ncclx_loopback_release(shared);
out:
    free(norm);
    return res;
}
