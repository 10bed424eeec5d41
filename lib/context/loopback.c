/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Loopback teams: N ranks of one job on one GPU in one process.  One device allocation holds
 * every rank's symmetric arena (N slices); each rank is a full context, built by the same
 * sequence as any other (ncclx_context_build) with symmetric-memory ops that hand out its
 * slice and point its peer table at the N slices, so the real kernels run unchanged as N
 * concurrent ranks.  No NCCL communicator is involved.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <ncclx/ep.h> /* ncclxLoopbackInit is declared with the EP calls */

#include "context.h"
#include "env.h"
#include "gpu_check.h"
#include "loopback_queues.h"
#include "struct.h"

/* More ranks than a GPU's hardware queues are refused by ncclx_loopback_check_queues; this bound
 * only sizes the arrays of the entry points. */
#define NCCLX_LOOPBACK_MAX_RANKS 1024u

/* The shared symmetric block, freed by the last context that releases it. */
struct ncclx_loopback {
    void *base;
    size_t slice_bytes;
    uint32_t ranks;
    uint32_t lsa_size; /* ranks per emulated node: the peer table holds its node's ranks */
    uint32_t refs;
};

static ncclxResult_t ncclx_loopback_release(struct ncclx_loopback *team)
{
    ncclxResult_t res = ncclxSuccess;
    if (--team->refs == 0) {
        if (team->base != NULL) {
            res = NCCLX_CUDA_STATUS(cudaFree(team->base));
        }
        free(team);
    }
    return res;
}

static ncclxResult_t ncclx_loopback_alloc(size_t slice_bytes, uint32_t ranks, uint32_t lsa_size,
                                          struct ncclx_loopback **out)
{
    struct ncclx_loopback *team = calloc(1, sizeof(*team));
    ncclxResult_t res = ncclxSuccess;
    if (team == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "loopback team: out of host memory");
    }
    team->slice_bytes = slice_bytes;
    team->ranks = ranks;
    team->lsa_size = lsa_size;
    team->refs = 1; /* the caller's */
    if (slice_bytes > 0) {
        NCCLX_CUDA_CHECK_GOTO(cudaMalloc(&team->base, slice_bytes * ranks), res, err);
    }
    *out = team;
    return ncclxSuccess;
err:
    free(team);
    return res;
}

static void *ncclx_loopback_slice(const struct ncclx_loopback *team, uint32_t rank)
{
    return team->base != NULL ? (char *)team->base + (size_t)rank * team->slice_bytes : NULL;
}

/* ---- symmetric memory of a loopback rank: its slice of the team's block ---- */

static ncclxResult_t ncclx_loopback_sym_alloc(struct ncclxContext *ctx, size_t bytes)
{
    struct ncclx_loopback *team = ctx->loopback;
    if (bytes > team->slice_bytes) {
        return NCCLX_ERROR(ncclxInternalError,
                           "loopback rank %d needs %zu symmetric bytes, its slice has %zu",
                           ctx->rank, bytes, team->slice_bytes);
    }
    ctx->arenas.base[NCCLX_MEM_SYMMETRIC] = ncclx_loopback_slice(team, (uint32_t)ctx->rank);
    team->refs++;
    ctx->loopback_ref = 1;
    return ncclxSuccess;
}

/* The rank's load/store peers, as NCCL's LSA team would give them: the ranks of its emulated
 * node, indexed by their rank in the node.  Ranks of other nodes have no entry, so no kernel can
 * reach them by load/store (an unshaped team is one node of every rank). */
static ncclxResult_t ncclx_loopback_resolve_peers(struct ncclxContext *ctx)
{
    struct ncclx_loopback *team = ctx->loopback;
    const uint32_t node_base = (uint32_t)ctx->rank / team->lsa_size * team->lsa_size;
    ncclxResult_t res = ncclxSuccess;
    void **peers = malloc(team->lsa_size * sizeof(void *));
    if (peers == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "loopback peer table: out of host memory");
    }
    for (uint32_t p = 0; p < team->lsa_size; p++) {
        peers[p] = ncclx_loopback_slice(team, node_base + p);
    }
    /* On the context's stream, after the zeroing of the arenas that it queued (a plain
     * cudaMemcpy is not ordered with that non-blocking stream: the zeroing could land after the
     * table); waited for, since peers is freed right after. */
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpyAsync(ctx->peer_table, peers, team->lsa_size * sizeof(void *),
                                          cudaMemcpyHostToDevice, ctx->stream),
                          res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    free(peers);
    return res;
}

/* One process builds the ranks one after the other, each waiting for its stream, and
 * ncclxLoopbackInit returns after the last: nobody can write to a rank that is not ready. */
static ncclxResult_t ncclx_loopback_barrier(struct ncclxContext *ctx)
{
    (void)ctx;
    return ncclxSuccess;
}

static ncclxResult_t ncclx_loopback_sym_free(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    if (ctx->loopback_ref) {
        res = ncclx_loopback_release(ctx->loopback);
        ctx->loopback_ref = 0;
    }
    ctx->loopback = NULL;
    ctx->arenas.base[NCCLX_MEM_SYMMETRIC] = NULL;
    return res;
}

/* The emulated network's view: every rank's slice, whatever its node. */
static ncclxResult_t ncclx_loopback_resolve_world(struct ncclxContext *ctx, void **world)
{
    struct ncclx_loopback *team = ctx->loopback;
    ncclxResult_t res = ncclxSuccess;
    void **slices = malloc(team->ranks * sizeof(void *));
    if (slices == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "loopback arena table: out of host memory");
    }
    for (uint32_t p = 0; p < team->ranks; p++) {
        slices[p] = ncclx_loopback_slice(team, p);
    }
    NCCLX_CUDA_CHECK_GOTO(cudaMemcpyAsync(world, slices, team->ranks * sizeof(void *),
                                          cudaMemcpyHostToDevice, ctx->stream),
                          res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    free(slices);
    return res;
}

const ncclx_symmetric_ops_t ncclx_loopback_ops = {
    "loopback slice",       ncclx_loopback_sym_alloc, ncclx_loopback_resolve_peers,
    ncclx_loopback_barrier, ncclx_loopback_sym_free,  ncclx_loopback_resolve_world,
};

/* ---- the team ---- */

/* One rank: a context like any other, on the team's block. */
static ncclxResult_t ncclx_loopback_rank(const ncclx_plan_norm_t *norm, uint32_t rank,
                                         int cuda_device, int shaped, struct ncclx_loopback *team,
                                         ncclxContext_t *out)
{
    ncclxResult_t res = ncclxSuccess;
    struct ncclxContext *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
    }
    ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    ctx->norm = *norm;
    ctx->rank = (int)rank;
    ctx->cuda_device = cuda_device;
    ctx->loopback = team;
    /* Only without a shape may a rank use another rank's caller buffers (the one-GPU paths). */
    ctx->all_buffers_reachable = !shaped;
    NCCLX_CHECK_GOTO(ncclx_context_default_blocks(ctx, (int)team->ranks), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_context_open(ctx), res, err_teardown);
    NCCLX_CHECK_GOTO(ncclx_context_build(ctx, &ncclx_loopback_ops), res, err_teardown);
    *out = ctx;
    return ncclxSuccess;
err_teardown:
    (void)ncclx_context_teardown(ctx);
err_free:
    free(ctx);
    return res;
}

/* Every rank's plan, imported and compared with rank 0's before the GPU is touched; *norm is
 * rank 0's (every rank builds from it). */
static ncclxResult_t ncclx_loopback_plans(const ncclxPlan_t *const plans[], uint32_t num_ranks,
                                          const ncclxTeam_t *team, ncclx_plan_norm_t *norm)
{
    ncclxResult_t res = ncclxSuccess;
    ncclx_plan_norm_t *other = NULL;
    NCCLX_CHECK(ncclx_plan_import(plans[0], team, norm));
    for (uint32_t r = 1; r < num_ranks && res == ncclxSuccess; r++) {
        ncclx_plan_difference_t d;
        char name[96];
        if (plans[r] == plans[0]) {
            continue;
        }
        if (other == NULL && (other = malloc(sizeof(*other))) == NULL) {
            return NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
        }
        res = ncclx_plan_import(plans[r], team, other);
        if (res == ncclxSuccess && ncclx_plan_diff(other, norm, &d)) {
            ncclx_plan_difference_name(&d, name, sizeof(name));
            res = NCCLX_ERROR(ncclxInvalidArgument,
                              "%s is %" PRIu64 " on loopback rank %u but %" PRIu64 " on rank 0: "
                              "every rank must pass the same plan",
                              name, d.a, r, d.b);
        }
    }
    free(other);
    return res;
}

/* The config's fields, checked before anything else is touched. */
static ncclxResult_t ncclx_loopback_check_config(const ncclxLoopbackConfig_t *c)
{
    if (c->num_ranks < 1 || c->num_ranks > NCCLX_LOOPBACK_MAX_RANKS) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxLoopbackInit: num_ranks=%u is outside [1, %u]", c->num_ranks,
                           NCCLX_LOOPBACK_MAX_RANKS);
    }
    if (c->num_nodes != 0 && c->num_ranks % c->num_nodes != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxLoopbackInit: config->num_nodes=%u must be 0 (no shape) or "
                           "divide config->num_ranks=%u",
                           c->num_nodes, c->num_ranks);
    }
    if (c->reserved0 != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxLoopbackInit: config->reserved0=%u must be 0", c->reserved0);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_loopback_init(const ncclxPlan_t *const plans[],
                                  const ncclxLoopbackConfig_t *config, ncclxContext_t contexts[])
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_plan_norm_t *norm = NULL;
    struct ncclx_loopback *shared = NULL;
    ncclxContext_t made[NCCLX_LOOPBACK_MAX_RANKS];
    uint32_t done = 0, num_ranks = 0;
    int cuda_device = 0;
    ncclxResult_t res = ncclxSuccess;
    if (plans == NULL || contexts == NULL || config == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxLoopbackInit: %s is NULL",
                           plans == NULL      ? "plan"
                           : contexts == NULL ? "contexts"
                                              : "config");
    }
    NCCLX_CHECK(ncclx_loopback_check_config(config));
    num_ranks = config->num_ranks;
    cuda_device = config->cuda_device;
    for (uint32_t r = 0; r < num_ranks; r++) {
        if (plans[r] == NULL) {
            return NCCLX_ERROR(ncclxInvalidArgument, "ncclxLoopbackInit: rank %u's plan is NULL",
                               r);
        }
    }
    NCCLX_CHECK(ncclxEnvValidate());
    team.num_ranks = num_ranks;
    team.num_nodes = config->num_nodes != 0 ? config->num_nodes : 1;
    team.lsa_size = num_ranks / team.num_nodes;
    norm = malloc(sizeof(*norm));
    if (norm == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
    }
    /* The plans are imported and compared once, before the GPU is touched. */
    NCCLX_CHECK_GOTO(ncclx_loopback_plans(plans, num_ranks, &team, norm), res, out);
    /* The ranks' streams must not share hardware queues, or a waiting rank's kernel can sit in
     * front of a peer's send (lib/context/loopback_queues.h). */
    NCCLX_CHECK_GOTO(ncclx_loopback_check_queues(num_ranks, cuda_device), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaSetDevice(cuda_device), res, out);
    {
        ncclx_layout_t layout;
        ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
        if (regions == NULL) {
            res = NCCLX_ERROR(ncclxOutOfMemory, "ncclxLoopbackInit: out of host memory");
            goto out;
        }
        ncclx_layout_init_measure(&layout, NULL, NULL);
        res = ncclx_plan_layout(&layout, norm, regions);
        free(regions);
        if (res != ncclxSuccess) {
            goto out;
        }
        /* Slices start on 4 KiB so every rank's regions keep their alignment. */
        NCCLX_CHECK_GOTO(
            ncclx_loopback_alloc(ncclx_align_up(layout.arena[NCCLX_MEM_SYMMETRIC].used, 4096),
                                 num_ranks, team.lsa_size, &shared),
            res, out);
    }
    for (done = 0; done < num_ranks; done++) {
        NCCLX_CHECK_GOTO(ncclx_loopback_rank(norm, done, cuda_device, config->num_nodes != 0,
                                             shared, &made[done]),
                         res, err_finalize);
    }
    memcpy(contexts, made, num_ranks * sizeof(made[0]));
    NCCLX_INFO("loopback team of %u ranks on CUDA device %d (%s%u nodes of %u)", num_ranks,
               cuda_device, config->num_nodes != 0 ? "shaped: " : "no shape, ", team.num_nodes,
               team.lsa_size);
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

/* The plan for every rank. */
static ncclxResult_t ncclx_loopback_same_plan(const ncclxPlan_t *plan,
                                              const ncclxLoopbackConfig_t *config,
                                              ncclxContext_t contexts[])
{
    const ncclxPlan_t *plans[NCCLX_LOOPBACK_MAX_RANKS];
    if (plan == NULL || config->num_ranks < 1 || config->num_ranks > NCCLX_LOOPBACK_MAX_RANKS) {
        return ncclx_loopback_init(plan == NULL ? NULL : &plan, config, contexts);
    }
    for (uint32_t r = 0; r < config->num_ranks; r++) {
        plans[r] = plan;
    }
    return ncclx_loopback_init(plans, config, contexts);
}

ncclxResult_t ncclxLoopbackInit(const ncclxPlan_t *plan, uint32_t num_ranks, int cuda_device,
                                ncclxContext_t contexts[])
{
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    config.num_ranks = num_ranks;
    config.cuda_device = cuda_device;
    return ncclx_loopback_same_plan(plan, &config, contexts);
}

ncclxResult_t ncclxLoopbackInitConfig(const ncclxPlan_t *plan, const ncclxLoopbackConfig_t *config,
                                      ncclxContext_t contexts[])
{
    ncclxLoopbackConfig_t c = NCCLX_LOOPBACK_CONFIG_INIT;
    NCCLX_CHECK(ncclx_struct_import(&c, sizeof(c), config, NCCLX_MAGIC_LOOPBACK_CONFIG,
                                    NCCLX_LOOPBACK_CONFIG_SIZE_V1, "config"));
    return ncclx_loopback_same_plan(plan, &c, contexts);
}
