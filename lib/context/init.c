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

/* ---- agreement through the caller's communicator (ncclxInitWithComm) ---- */

static ncclxResult_t ncclx_nccl_allgather(ncclx_init_coll_t *coll, const char *step,
                                          const void *mine, void *all, size_t bytes)
{
    struct ncclxContext *ctx = coll->state;
    unsigned char *dev = NULL;
    ncclxResult_t res = ncclxSuccess;
    (void)step; /* NCCL collectives match in call order */
    /* Staging memory for one collective, at init, freed before returning. */
    NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaMalloc((void **)&dev, bytes * coll->size)));
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpyAsync(dev + (size_t)coll->rank * bytes, mine, bytes,
                                          cudaMemcpyHostToDevice, ctx->stream),
                          res, out);
    NCCLX_NCCL_CHECK_GOTO(ncclAllGather(dev + (size_t)coll->rank * bytes, dev, bytes, ncclUint8,
                                        ctx->comm, ctx->stream),
                          res, out);
    NCCLX_CUDA_CHECK_GOTO(
        cudaMemcpyAsync(all, dev, bytes * coll->size, cudaMemcpyDeviceToHost, ctx->stream), res,
        out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    (void)cudaFree(dev);
    return res;
}

static ncclxResult_t ncclx_nccl_broadcast(ncclx_init_coll_t *coll, const char *step, uint32_t root,
                                          void *data, size_t bytes)
{
    struct ncclxContext *ctx = coll->state;
    void *dev = NULL;
    ncclxResult_t res = ncclxSuccess;
    (void)step;
    NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaMalloc(&dev, bytes)));
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpyAsync(dev, data, bytes, cudaMemcpyHostToDevice, ctx->stream),
                          res, out);
    NCCLX_NCCL_CHECK_GOTO(
        ncclBroadcast(dev, dev, bytes, ncclUint8, (int)root, ctx->comm, ctx->stream), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpyAsync(data, dev, bytes, cudaMemcpyDeviceToHost, ctx->stream),
                          res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    (void)cudaFree(dev);
    return res;
}

/* ---- agreement through PMIx (ncclxInit) ---- */

typedef struct {
    ncclx_init_coll_t coll;
    const ncclx_bootstrap_t *bs;
    uint32_t instance; /* 0 until the ranks agreed on the context's instance */
    int timeout_s;
} ncclx_pmix_coll_t;

static ncclxResult_t ncclx_pmix_allgather(ncclx_init_coll_t *coll, const char *step,
                                          const void *mine, void *all, size_t bytes)
{
    ncclx_pmix_coll_t *p = coll->state;
    char key[64];
    snprintf(key, sizeof(key), "init.%s", step);
    return ncclx_bootstrap_allgather(p->bs, key, p->instance, mine, all, bytes, p->timeout_s);
}

static ncclxResult_t ncclx_pmix_broadcast(ncclx_init_coll_t *coll, const char *step, uint32_t root,
                                          void *data, size_t bytes)
{
    ncclx_pmix_coll_t *p = coll->state;
    char key[64];
    snprintf(key, sizeof(key), "init.%s", step);
    return ncclx_bootstrap_exchange(p->bs, key, p->instance, root, data, bytes, p->timeout_s);
}

/* The fence timeout of the agreement: NCCLX_FENCE_TIMEOUT_S, or its default when the variable
 * is garbage on this rank (the first step reports that; the vote itself must still happen). */
static int ncclx_init_fence_timeout(void)
{
    uint64_t value = 0;
    ncclxEnvVar_t var;
    if (ncclx_env_raw(NCCLX_ENV_FENCE_TIMEOUT_S) == NULL ||
        ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value) != ncclxSuccess) {
        if (ncclxEnvGet(NCCLX_ENV_FENCE_TIMEOUT_S, &var) != ncclxSuccess) {
            return 300;
        }
        return atoi(var.default_value);
    }
    return (int)value;
}

static void ncclx_pmix_coll_init(ncclx_pmix_coll_t *p, const ncclx_bootstrap_t *bs)
{
    memset(p, 0, sizeof(*p));
    p->coll.rank = bs->rank;
    p->coll.size = bs->size;
    p->coll.allgather = ncclx_pmix_allgather;
    p->coll.broadcast = ncclx_pmix_broadcast;
    p->coll.state = p;
    p->bs = bs;
    p->timeout_s = ncclx_init_fence_timeout();
}

/* ---- contexts on a communicator ---- */

/* This rank's device and rank in ctx->comm, and the communicator's size. */
static ncclxResult_t ncclx_rank_from_comm(struct ncclxContext *ctx, uint32_t *size)
{
    int ranks = 0;
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommCuDevice(ctx->comm, &ctx->cuda_device)));
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommUserRank(ctx->comm, &ctx->rank)));
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommCount(ctx->comm, &ranks)));
    *size = (uint32_t)ranks;
    return ncclxSuccess;
}

/* The team of a caller's communicator: nodes = ranks / LSA size. */
static ncclxResult_t ncclx_team_from_comm(ncclComm_t comm, uint32_t ranks, ncclxTeam_t *team)
{
    uint32_t lsa = 0;
    NCCLX_CHECK(ncclx_comm_lsa_size(comm, &lsa));
    team->num_ranks = ranks;
    team->lsa_size = lsa;
    team->num_nodes = ranks / lsa;
    return ncclxSuccess;
}

/* What ncclxInitWithComm checks without the communicator: arguments, environment, config. */
static ncclxResult_t ncclx_with_comm_args(const ncclxPlan_t *plan, const ncclxInitConfig_t *config,
                                          const void *context)
{
    ncclxInitConfig_t cfg;
    NCCLX_CHECK(ncclx_check_init_args(plan, context));
    return ncclx_import_config(config, &cfg);
}

/* The rest of the first step, once the communicator answered: the context's stream (the
 * agreement runs on it), the team and the plan. */
static ncclxResult_t ncclx_with_comm_local(struct ncclxContext *ctx, const ncclxPlan_t *plan,
                                           uint32_t ranks)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    NCCLX_CHECK(ncclx_context_open(ctx));
    NCCLX_CHECK(ncclx_team_from_comm(ctx->comm, ranks, &team));
    NCCLX_CHECK(ncclx_plan_import(plan, &team, &ctx->norm));
    return ncclx_context_default_blocks(ctx, 1);
}

/* Asks the communicator quietly (an earlier error's message stays the one reported). */
static int ncclx_comm_answers(struct ncclxContext *ctx, uint32_t *size)
{
    int ranks = 0;
    if (ncclCommCuDevice(ctx->comm, &ctx->cuda_device) != ncclSuccess ||
        ncclCommUserRank(ctx->comm, &ctx->rank) != ncclSuccess ||
        ncclCommCount(ctx->comm, &ranks) != ncclSuccess) {
        return 0;
    }
    *size = (uint32_t)ranks;
    return 1;
}

ncclxResult_t ncclxInitWithComm(const ncclxPlan_t *plan, struct ncclComm *comm,
                                const ncclxInitConfig_t *config, ncclxContext_t *context)
{
    ncclx_init_coll_t coll = {0, 0, ncclx_nccl_allgather, ncclx_nccl_broadcast, NULL};
    struct ncclxContext *ctx;
    ncclxResult_t res;
    if (comm == NULL) {
        /* No communicator, no agreement: a caller error on every rank alike. */
        return NCCLX_ERROR(ncclxInvalidArgument, "comm is NULL");
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "context: out of host memory");
    }
    ctx->comm = comm;
    ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    res = ncclx_with_comm_args(plan, config, context);
    if (res == ncclxSuccess) {
        NCCLX_CHECK_GOTO(ncclx_rank_from_comm(ctx, &coll.size), res, err_free);
    } else if (!ncclx_comm_answers(ctx, &coll.size)) {
        goto err_free; /* not a communicator: nobody to tell */
    }
    coll.rank = (uint32_t)ctx->rank;
    coll.state = ctx;
    /* Whatever failed locally, every rank votes (on the context's stream, or the default
     * stream when it could not be made), so that no rank goes on alone. */
    if (res == ncclxSuccess) {
        res = ncclx_with_comm_local(ctx, plan, coll.size);
    }
    NCCLX_CHECK_GOTO(
        ncclx_init_agree(&coll, "arguments", res, res == ncclxSuccess ? &ctx->norm : NULL, 0), res,
        err_teardown);
    ctx->coll = &coll;
    res = ncclx_context_build(ctx, &ncclx_window_ops);
    ctx->coll = NULL;
    if (res != ncclxSuccess) {
        goto err_teardown;
    }
    NCCLX_INFO("context ready on an existing communicator: rank %d of %d, device %d",
               ctx->info.rank, ctx->info.num_ranks, ctx->cuda_device);
    *context = ctx;
    return ncclxSuccess;
err_teardown:
    /* The caller's communicator stays the caller's: it is not aborted, and the window (if
     * every rank registered it) is deregistered collectively. */
    (void)ncclx_context_teardown(ctx);
err_free:
    free(ctx);
    return res;
}

/* ---- ncclxInit: a PMIx job ---- */

/* Step one of ncclxInit, on this rank alone: arguments, environment, config (its instance is
 * the drawn one unless it names one), the team PMIx gives and the plan, imported once. */
static ncclxResult_t ncclx_init_local(const ncclxPlan_t *plan, const ncclxInitConfig_t *config,
                                      const void *context, const ncclx_bootstrap_t *bs,
                                      uint32_t drawn, ncclxInitConfig_t *cfg,
                                      ncclx_plan_norm_t *norm)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    NCCLX_CHECK(ncclx_check_init_args(plan, context));
    NCCLX_CHECK(ncclx_import_config(config, cfg));
    if (cfg->instance == 0) {
        cfg->instance = drawn;
    }
    /* The team, and so every budget, is known before any GPU memory is touched. */
    NCCLX_CHECK(ncclx_bootstrap_team(bs, &team));
    return ncclx_plan_import(plan, &team, norm);
}

/* GPU, CPU/memory binding and NIC before any NCCL call, so NCCL sees the binding; then rank 0
 * makes the NCCL unique id. */
static ncclxResult_t ncclx_init_place(struct ncclxContext *ctx, const ncclx_bootstrap_t *bs,
                                      const ncclxInitConfig_t *cfg, ncclUniqueId *id,
                                      ncclx_placement_undo_t *undo)
{
    NCCLX_CHECK(ncclx_placement_setup(bs->local_rank, bs->local_size, cfg->cuda_device,
                                      cfg->bind ? NCCLX_BIND_DEFAULT : NCCLX_BIND_NONE,
                                      &ctx->placement, undo));
    ctx->has_placement = 1;
    if (bs->rank == 0) {
        NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclGetUniqueId(id)));
    }
    return ncclxSuccess;
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

/* The communicator from rank 0's id, this rank's place in it, and the context's stream. */
static ncclxResult_t ncclx_init_comm(struct ncclxContext *ctx, const ncclx_bootstrap_t *bs,
                                     const ncclUniqueId *id)
{
    ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm = NULL;
    uint32_t size = 0;
    NCCLX_CHECK(NCCLX_NCCL_STATUS(
        ncclCommInitRankConfig(&comm, (int)bs->size, *id, (int)bs->rank, &nccl_config)));
    ctx->comm = comm;
    ctx->comm_owned = 1;
    NCCLX_CHECK(ncclx_rank_from_comm(ctx, &size));
    NCCLX_CHECK(ncclx_check_lsa(ctx));
    NCCLX_CHECK(ncclx_context_default_blocks(ctx, 1));
    return ncclx_context_open(ctx);
}

static void ncclx_info_from_bootstrap(ncclxContextInfo_t *info, const ncclx_bootstrap_t *bs)
{
    info->from_pmix = 1;
    info->singleton = bs->singleton;
    info->local_rank = (int32_t)bs->local_rank;
    info->local_size = (int32_t)bs->local_size;
    info->node_id = (int32_t)bs->node_id;
}

/* A failed init on a communicator we made: abort it (every rank does, after agreeing to),
 * which also drops its windows, then free what the context holds locally. */
static void ncclx_init_abort(struct ncclxContext *ctx)
{
    if (ctx->comm_owned) {
        (void)ncclCommAbort(ctx->comm);
        ctx->comm = NULL;
        ctx->comm_owned = 0;
        ctx->arenas.window = NULL; /* went with the communicator */
    }
    (void)ncclx_context_teardown(ctx);
}

ncclxResult_t ncclxInit(const ncclxPlan_t *plan, const ncclxInitConfig_t *config,
                        ncclxContext_t *context)
{
    ncclxInitConfig_t cfg = NCCLX_INIT_CONFIG_INIT;
    ncclx_pmix_coll_t pmix;
    ncclx_placement_undo_t undo;
    ncclUniqueId id;
    struct ncclxContext *ctx;
    ncclx_bootstrap_t *bs;
    ncclxResult_t res;
    uint32_t drawn = atomic_fetch_add(&ncclx_next_instance, 1);
    ctx = calloc(1, sizeof(*ctx));
    bs = calloc(1, sizeof(*bs));
    if (ctx == NULL || bs == NULL) {
        res = NCCLX_ERROR(ncclxOutOfMemory, "context: out of host memory");
        goto err_free;
    }
    ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    memset(&id, 0, sizeof(id));
    memset(&undo, 0, sizeof(undo));
    NCCLX_CHECK_GOTO(ncclx_bootstrap_init(bs), res, err_free);
    ncclx_log_set_rank((int)bs->rank);
    /* Each step ends with a vote (PMIx), so that a rank that failed alone fails every rank
     * instead of leaving them in the next collective.  The first vote also compares the plans
     * and uses instance 0 (no context's): the context's own instance is not agreed yet.  Being
     * a fence right after PMIx_Init, it also keeps every rank from returning (and exiting, which
     * finalizes PMIx) while a peer is still inside PMIx_Init: with PMIx 4.2.2 that peer's
     * PMIx_Init could then wait forever (docs/init.md). */
    ncclx_pmix_coll_init(&pmix, bs);
    res = ncclx_init_local(plan, config, context, bs, drawn, &cfg, &ctx->norm);
    NCCLX_CHECK_GOTO(ncclx_init_agree(&pmix.coll, "arguments", res,
                                      res == ncclxSuccess ? &ctx->norm : NULL, cfg.instance),
                     res, err_finalize_bootstrap);
    pmix.instance = cfg.instance;
    NCCLX_INFO("ncclxInit: context instance %u (PMIx keys ncclx.%u.*)", cfg.instance, cfg.instance);
    res = ncclx_init_place(ctx, bs, &cfg, &id, &undo);
    NCCLX_CHECK_GOTO(ncclx_init_agree(&pmix.coll, "placement", res, NULL, 0), res,
                     err_finalize_bootstrap);
    NCCLX_CHECK_GOTO(
        ncclx_bootstrap_exchange(bs, "nccl_unique_id", cfg.instance, 0, &id, sizeof(id), 0), res,
        err_finalize_bootstrap);
    res = ncclx_init_comm(ctx, bs, &id);
    NCCLX_CHECK_GOTO(ncclx_init_agree(&pmix.coll, "communicator", res, NULL, 0), res, err_abort);
    ncclx_info_from_bootstrap(&ctx->info, bs);
    ctx->coll = &pmix.coll;
    res = ncclx_context_build(ctx, &ncclx_window_ops);
    ctx->coll = NULL;
    if (res != ncclxSuccess) {
        goto err_abort;
    }
    ctx->bootstrap = bs;
    ncclx_placement_undo_release(&undo); /* the context keeps its placement */
    NCCLX_INFO("context ready: rank %u of %u (local %u of %u, node %u of %u), device %d", bs->rank,
               bs->size, bs->local_rank, bs->local_size, bs->node_id, bs->num_nodes,
               ctx->cuda_device);
    *context = ctx;
    return ncclxSuccess;

err_abort:
    ncclx_init_abort(ctx);
err_finalize_bootstrap:
    /* As init.h promises: binding, NCCL_IB_HCA and the current device as they were (nothing
     * to do when placement did not run). */
    ncclx_placement_undo(&undo);
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
    NCCLX_CHECK(ncclx_struct_check_output(placement, NCCLX_MAGIC_PLACEMENT, NCCLX_PLACEMENT_SIZE_V1,
                                          "placement"));
    ncclx_struct_export(placement, &ctx->placement, sizeof(ctx->placement));
    return ncclxSuccess;
}

ncclxResult_t ncclxContextGetInfo(ncclxContext_t ctx, ncclxContextInfo_t *info)
{
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxContextGetInfo: context is NULL");
    }
    NCCLX_CHECK(ncclx_struct_check_output(info, NCCLX_MAGIC_CONTEXT_INFO,
                                          NCCLX_CONTEXT_INFO_SIZE_V1, "info"));
    ncclx_struct_export(info, &ctx->info, sizeof(ctx->info));
    return ncclxSuccess;
}
