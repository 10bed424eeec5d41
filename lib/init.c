/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Public entry points of a context's life: ncclxInit (PMIx bootstrap), ncclxInitWithComm,
 * ncclxFinalize, ncclxContextGetInfo.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "context.h"
#include "env.h"
#include "gpu_check.h"
#include "placement.h"
#include "struct.h"

/* PMIx contexts of a job are created in the same order on every rank, so a process-wide
 * counter gives every rank the same instance number for the same context: the PMIx keys of two
 * contexts never collide.  Only ncclxInit draws from it, once per call whatever happens:
 * ncclxInitWithComm contexts use no PMIx key, and a job may mix both kinds in different orders
 * on different ranks without shifting the numbers of its PMIx contexts. */
static atomic_uint ncclx_next_instance = 1;

static ncclxResult_t ncclx_import_config(const ncclxInitConfig_t *config, ncclxInitConfig_t *out)
{
    const ncclxInitConfig_t defaults = NCCLX_INIT_CONFIG_INIT;
    *out = defaults;
    if (config != NULL) {
        NCCLX_CHECK(ncclx_struct_import(out, sizeof(*out), config, NCCLX_MAGIC_INIT_CONFIG,
                                        NCCLX_INIT_CONFIG_SIZE_V1, "config"));
    }
    if (out->bind > 1) {
        return NCCLX_ERROR(ncclxInvalidArgument, "config->bind=%u: must be 0 or 1", out->bind);
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_check_init_args(const ncclxPlan_t *plan, const void *context)
{
    if (plan == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan is NULL");
    }
    if (context == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "context (output) is NULL");
    }
    return ncclxEnvValidate();
}

/* This rank's device and rank in ctx->comm. */
static ncclxResult_t ncclx_rank_from_comm(struct ncclxContext *ctx)
{
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommCuDevice(ctx->comm, &ctx->cuda_device)));
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommUserRank(ctx->comm, &ctx->rank)));
    return ncclxSuccess;
}

/* The context's plan and team are in ctx->norm, its rank and device set: the build sequence
 * on an NCCL window of ctx->comm. */
static ncclxResult_t ncclx_context_on_comm(struct ncclxContext *ctx)
{
    NCCLX_CHECK(ncclx_context_default_blocks(ctx, 1));
    NCCLX_CHECK(ncclx_context_open(ctx));
    return ncclx_context_build(ctx, &ncclx_window_ops);
}

/* The team of a caller's communicator: nodes = ranks / LSA size. */
static ncclxResult_t ncclx_team_from_comm(ncclComm_t comm, ncclxTeam_t *team)
{
    int ranks = 0;
    uint32_t lsa = 0;
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommCount(comm, &ranks)));
    NCCLX_CHECK(ncclx_comm_lsa_size(comm, &lsa));
    team->num_ranks = (uint32_t)ranks;
    team->lsa_size = lsa;
    team->num_nodes = (uint32_t)ranks / lsa;
    return ncclxSuccess;
}

ncclxResult_t ncclxInitWithComm(const ncclxPlan_t *plan, struct ncclComm *comm,
                                const ncclxInitConfig_t *config, ncclxContext_t *context)
{
    ncclxInitConfig_t cfg;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    struct ncclxContext *ctx;
    ncclxResult_t res;
    NCCLX_CHECK(ncclx_check_init_args(plan, context));
    if (comm == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "comm is NULL");
    }
    NCCLX_CHECK(ncclx_import_config(config, &cfg));
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "context: out of host memory");
    }
    ctx->comm = comm;
    ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    NCCLX_CHECK_GOTO(ncclx_rank_from_comm(ctx), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_team_from_comm(comm, &team), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_plan_import(plan, &team, &ctx->norm), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_context_on_comm(ctx), res, err_teardown);
    NCCLX_INFO("context ready on an existing communicator: rank %d of %d, device %d",
               ctx->info.rank, ctx->info.num_ranks, ctx->cuda_device);
    *context = ctx;
    return ncclxSuccess;
err_teardown:
    (void)ncclx_context_teardown(ctx);
err_free:
    free(ctx);
    return res;
}

/* Rank 0 makes the NCCL unique id; PMIx carries it to everyone; then the communicator. */
static ncclxResult_t ncclx_comm_from_bootstrap(struct ncclxContext *ctx,
                                               const ncclx_bootstrap_t *bs, uint32_t instance)
{
    ncclUniqueId id;
    ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
    ncclxResult_t res = ncclxSuccess;
    memset(&id, 0, sizeof(id));
    if (bs->rank == 0) {
        NCCLX_NCCL_CHECK_GOTO(ncclGetUniqueId(&id), res, out);
    }
    NCCLX_CHECK_GOTO(
        ncclx_bootstrap_exchange(bs, "nccl_unique_id", instance, 0, &id, sizeof(id), 0), res, out);
    NCCLX_NCCL_CHECK_GOTO(
        ncclCommInitRankConfig(&ctx->comm, (int)bs->size, id, (int)bs->rank, &nccl_config), res,
        out);
    ctx->comm_owned = 1;
out:
    return res;
}

static void ncclx_info_from_bootstrap(ncclxContextInfo_t *info, const ncclx_bootstrap_t *bs)
{
    info->from_pmix = 1;
    info->singleton = bs->singleton;
    info->local_rank = (int32_t)bs->local_rank;
    info->local_size = (int32_t)bs->local_size;
    info->node_id = (int32_t)bs->node_id;
}

/* NCCL's load/store team must be the job's node (the plan was sized for it). */
static ncclxResult_t ncclx_check_lsa(const struct ncclxContext *ctx)
{
    uint32_t lsa = 0;
    NCCLX_CHECK(ncclx_comm_lsa_size(ctx->comm, &lsa));
    if (lsa != ctx->norm.team.lsa_size) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "NCCL's load/store team has %u ranks but the job runs %u ranks per "
                           "node: LSA teams spanning nodes are not supported yet",
                           lsa, ctx->norm.team.lsa_size);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclxInit(const ncclxPlan_t *plan, const ncclxInitConfig_t *config,
                        ncclxContext_t *context)
{
    ncclxInitConfig_t cfg;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    struct ncclxContext *ctx;
    ncclx_bootstrap_t *bs;
    ncclxResult_t res;
    uint32_t drawn = atomic_fetch_add(&ncclx_next_instance, 1);
    NCCLX_CHECK(ncclx_check_init_args(plan, context));
    NCCLX_CHECK(ncclx_import_config(config, &cfg));
    if (cfg.instance == 0) {
        cfg.instance = drawn;
    }
    NCCLX_INFO("ncclxInit: context instance %u (PMIx keys ncclx.%u.*)", cfg.instance, cfg.instance);
    ctx = calloc(1, sizeof(*ctx));
    bs = calloc(1, sizeof(*bs));
    if (ctx == NULL || bs == NULL) {
        res = NCCLX_ERROR(ncclxOutOfMemory, "context: out of host memory");
        goto err_free;
    }
    ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    NCCLX_CHECK_GOTO(ncclx_bootstrap_init(bs), res, err_free);
    ncclx_log_set_rank((int)bs->rank);
    /* The team, and so every budget, is known before any GPU memory is touched; the plan is
     * imported here, once. */
    NCCLX_CHECK_GOTO(ncclx_bootstrap_team(bs, &team), res, err_finalize_bootstrap);
    NCCLX_CHECK_GOTO(ncclx_plan_import(plan, &team, &ctx->norm), res, err_finalize_bootstrap);
    /* GPU, CPU/memory binding and NIC before any NCCL call, so NCCL sees the binding. */
    NCCLX_CHECK_GOTO(ncclx_placement_setup(bs->local_rank, bs->local_size, cfg.cuda_device,
                                           cfg.bind ? NCCLX_BIND_DEFAULT : NCCLX_BIND_NONE,
                                           &ctx->placement),
                     res, err_finalize_bootstrap);
    ctx->has_placement = 1;
    NCCLX_CHECK_GOTO(ncclx_comm_from_bootstrap(ctx, bs, cfg.instance), res, err_finalize_bootstrap);
    ncclx_info_from_bootstrap(&ctx->info, bs);
    NCCLX_CHECK_GOTO(ncclx_rank_from_comm(ctx), res, err_destroy_comm);
    NCCLX_CHECK_GOTO(ncclx_check_lsa(ctx), res, err_destroy_comm);
    NCCLX_CHECK_GOTO(ncclx_context_on_comm(ctx), res, err_teardown);
    ctx->bootstrap = bs;
    NCCLX_INFO("context ready: rank %u of %u (local %u of %u, node %u of %u), device %d", bs->rank,
               bs->size, bs->local_rank, bs->local_size, bs->node_id, bs->num_nodes,
               ctx->cuda_device);
    *context = ctx;
    return ncclxSuccess;

err_teardown:
    (void)ncclx_context_teardown(ctx);
err_destroy_comm:
    (void)ncclCommDestroy(ctx->comm);
err_finalize_bootstrap:
    (void)ncclx_bootstrap_finalize(bs);
err_free:
    free(bs);
    free(ctx);
    return res;
}

ncclxResult_t ncclxFinalize(ncclxContext_t ctx)
{
    ncclxResult_t first;
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxFinalize: context is NULL");
    }
    first = ncclx_context_teardown(ctx);
    if (ctx->comm_owned) {
        first = ncclx_first_error(first, NCCLX_NCCL_STATUS(ncclCommFinalize(ctx->comm)));
        first = ncclx_first_error(first, NCCLX_NCCL_STATUS(ncclCommDestroy(ctx->comm)));
    }
    if (ctx->bootstrap != NULL) {
        first = ncclx_first_error(first, ncclx_bootstrap_finalize(ctx->bootstrap));
        free(ctx->bootstrap);
    }
    free(ctx);
    return first;
}

ncclxResult_t ncclxContextGetPlacement(ncclxContext_t ctx, ncclxPlacement_t *placement)
{
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxContextGetPlacement: context is NULL");
    }
    if (!ctx->has_placement) {
        return NCCLX_ERROR(ncclxInvalidUsage, "ncclxContextGetPlacement: the context was made "
                                              "by ncclxInitWithComm, which places nothing");
    }
    NCCLX_CHECK(ncclx_struct_check_output(placement, NCCLX_MAGIC_PLACEMENT,
                                          sizeof(ncclxPlacement_t), "placement"));
    ncclx_struct_export(placement, &ctx->placement, sizeof(ctx->placement));
    return ncclxSuccess;
}

ncclxResult_t ncclxContextGetInfo(ncclxContext_t ctx, ncclxContextInfo_t *info)
{
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxContextGetInfo: context is NULL");
    }
    NCCLX_CHECK(ncclx_struct_check_output(info, NCCLX_MAGIC_CONTEXT_INFO,
                                          sizeof(ncclxContextInfo_t), "info"));
    ncclx_struct_export(info, &ctx->info, sizeof(ctx->info));
    return ncclxSuccess;
}
