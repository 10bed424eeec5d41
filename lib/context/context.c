/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The one build sequence of a context (ncclx_context_build), shared by ncclxInit,
 * ncclxInitWithComm and ncclxLoopbackInit, and the symmetric-memory ops of NCCL contexts: an
 * ncclMemAlloc block registered as a symmetric window, peers resolved through the window.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "gpu_check.h"
#include "rooms.h"
#include "struct.h"

/*
 * NCCL's host query of the load/store (LSA) team.  nccl_device/core.h declares it but is not
 * clean C (it declares inline functions it never defines), so the declaration is repeated
 * here; struct ncclTeam is { int nRanks, rank, stride; } in NCCL 2.28 and later.
 */
struct ncclTeam {
    int nRanks, rank, stride;
};
struct ncclTeam ncclTeamLsa(ncclComm_t comm);

ncclxResult_t ncclx_comm_lsa_size(ncclComm_t comm, uint32_t *lsa_size)
{
    int ranks = 0;
    struct ncclTeam lsa;
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommCount(comm, &ranks)));
    /* NCCL returns an empty team when it cannot set up its device runtime. */
    lsa = ncclTeamLsa(comm);
    if (lsa.nRanks < 1 || lsa.nRanks > ranks || ranks % lsa.nRanks != 0) {
        return NCCLX_ERROR(ncclxNcclError,
                           "ncclTeamLsa: NCCL reports a load/store team of %d ranks in a "
                           "communicator of %d (NCCL_DEBUG=WARN may say why)",
                           lsa.nRanks, ranks);
    }
    /* Node of rank r = r / lsa_size everywhere in the library: NCCL's team must be that block. */
    int rank = 0;
    NCCLX_CHECK(NCCLX_NCCL_STATUS(ncclCommUserRank(comm, &rank)));
    if (lsa.rank != rank % lsa.nRanks) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "rank %d is rank %d of NCCL's load/store team of %d, not %d: libncclx "
                           "needs each node's ranks consecutive (srun --distribution=block, "
                           "mpirun --map-by slot or core)",
                           rank, lsa.rank, lsa.nRanks, rank % lsa.nRanks);
    }
    *lsa_size = (uint32_t)lsa.nRanks;
    return ncclxSuccess;
}

/* ---- symmetric memory of an NCCL communicator: a registered symmetric window ---- */

static ncclxResult_t ncclx_window_alloc(struct ncclxContext *ctx, size_t bytes)
{
    ncclx_arenas_t *a = &ctx->arenas;
    void *base = NULL;
    ncclWindow_t window = NULL;
    ncclxResult_t res = ncclxSuccess;
    if (bytes == 0) {
        return ncclxSuccess; /* the same plan everywhere: no rank registers anything */
    }
    NCCLX_NCCL_CHECK_GOTO(ncclMemAlloc(&base, bytes), res, err);
    NCCLX_NCCL_CHECK_GOTO(
        ncclCommWindowRegister(ctx->comm, base, bytes, &window, NCCL_WIN_COLL_SYMMETRIC), res,
        err_free);
    a->base[NCCLX_MEM_SYMMETRIC] = base;
    a->window = window;
    return ncclxSuccess;
err_free:
    (void)ncclMemFree(base);
err:
    return res;
}

static ncclxResult_t ncclx_window_resolve_peers(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    if (ctx->arenas.window == NULL) {
        return ncclxSuccess; /* no symmetric memory: the zeroed table stays */
    }
    NCCLX_CUDA_CHECK_GOTO(ncclx_launch_resolve_peers(ctx->arenas.window, 0,
                                                     (int)ctx->norm.team.lsa_size, ctx->peer_table,
                                                     ctx->stream),
                          res, out);
out:
    return res;
}

/* An allreduce of one word: it returns on a rank only once every rank has entered it. */
static ncclxResult_t ncclx_window_barrier(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    void *scratch = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, ctx->regions.scratch);
    NCCLX_NCCL_CHECK_GOTO(
        ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, ctx->comm, ctx->stream), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    return res;
}

static ncclxResult_t ncclx_window_free(struct ncclxContext *ctx)
{
    ncclx_arenas_t *a = &ctx->arenas;
    ncclxResult_t first = ncclxSuccess;
    if (a->window != NULL) {
        first = ncclx_first_error(
            first, NCCLX_NCCL_STATUS(ncclCommWindowDeregister(ctx->comm, a->window)));
        a->window = NULL;
    }
    if (a->base[NCCLX_MEM_SYMMETRIC] != NULL) {
        first =
            ncclx_first_error(first, NCCLX_NCCL_STATUS(ncclMemFree(a->base[NCCLX_MEM_SYMMETRIC])));
        a->base[NCCLX_MEM_SYMMETRIC] = NULL;
    }
    return first;
}

const ncclx_symmetric_ops_t ncclx_window_ops = {
    "NCCL symmetric window", ncclx_window_alloc, ncclx_window_resolve_peers,
    ncclx_window_barrier,    ncclx_window_free,  NULL,
};

/* ---- the build sequence ---- */

/* Blocks per data-moving kernel when the plan sets no sm_budget: two per SM, shared evenly
 * by the ranks that run on the GPU (a loopback team) so that their kernels co-reside.  Groups
 * with an active mask on a shared GPU get one per SM share: at two the GPU is exactly full
 * when every rank runs, and a timeout event then now and then held a survivor up for a whole
 * timeout (1 to 9 in 100 dead-rank events on 8 ranks of one H200), never at one (0 in 100;
 * docs/ep-ll.md, limits). */
ncclxResult_t ncclx_context_default_blocks(struct ncclxContext *ctx, int ranks_on_gpu)
{
    int sms = 0, major = 0, runtime = 0, driver = 0;
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CUDA_CHECK_GOTO(
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->cuda_device), res, out);
    NCCLX_CUDA_CHECK_GOTO(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx->cuda_device), res,
        out);
    NCCLX_CUDA_CHECK_GOTO(cudaRuntimeGetVersion(&runtime), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaDriverGetVersion(&driver), res, out);
    /* Two 512-thread blocks fit on an SM (the kernels are built for it), so every rank's
     * kernels can be resident at once: a waiting rank never keeps a peer's send out. */
    ctx->blocks = 2 * sms / ranks_on_gpu > 0 ? 2 * sms / ranks_on_gpu : 1;
    ctx->blocks_masked =
        ranks_on_gpu > 1 ? (sms / ranks_on_gpu > 0 ? sms / ranks_on_gpu : 1) : ctx->blocks;
    /* Programmatic dependent launch (kernels/common/early_launch.cuh) is a compute capability
     * 9.0 feature, and a graph capture takes it from CUDA 12.3 on (runtime and driver: the
     * library may run on an older 12.x than it was built with); on a shared GPU the early
     * blocks would hold SMs that a peer's send needs. */
    ctx->early_launch = ranks_on_gpu == 1 && major >= 9 && runtime >= 12030 && driver >= 12030;
out:
    return res;
}

int ncclx_context_direct_path(const struct ncclxContext *ctx, ncclx_env_id_t path_var)
{
    int path = 0;
    (void)ncclx_env_choice_quiet(path_var, &path); /* validated at init: 0 AUTO, 1 STAGED */
    return ctx->all_buffers_reachable && path == 0;
}

/* Zeroed arenas, the peer table, eager module loading; all on ctx->stream. */
static ncclxResult_t ncclx_context_prepare_device(struct ncclxContext *ctx)
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
    NCCLX_CHECK_GOTO(ctx->sym->resolve_peers(ctx), res, out);
    NCCLX_CUDA_CHECK_GOTO(ncclx_nccl_kernels_load(), res, out);
    for (const ncclx_room_t *const *room = ncclx_rooms; *room != NULL; room++) {
        NCCLX_CUDA_CHECK_GOTO((*room)->kernels_load(), res, out);
    }
    NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize(ctx->stream), res, out);
out:
    return res;
}

static void ncclx_context_fill_info(struct ncclxContext *ctx)
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

ncclxResult_t ncclx_context_open(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CUDA_CHECK_GOTO(cudaSetDevice(ctx->cuda_device), res, out);
    NCCLX_CUDA_CHECK_GOTO(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking), res, out);
out:
    return res;
}

static ncclxResult_t ncclx_context_measure(struct ncclxContext *ctx, size_t bytes[])
{
    ncclx_layout_t layout;
    ncclx_layout_init_measure(&layout, NULL, NULL);
    NCCLX_CHECK(ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        bytes[c] = layout.arena[c].used;
    }
    return ncclxSuccess;
}

/* Every room bound to its regions (each binds its kernels' descriptors). */
static ncclxResult_t ncclx_context_bind_rooms(struct ncclxContext *ctx)
{
    for (const ncclx_room_t *const *room = ncclx_rooms; *room != NULL; room++) {
        NCCLX_CHECK((*room)->bind(ctx));
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_context_build(struct ncclxContext *ctx, const ncclx_symmetric_ops_t *sym)
{
    size_t bytes[NCCLX_MEM_NUM_CLASSES];
    ncclxResult_t res = ncclx_context_measure(ctx, bytes);
    ctx->sym = sym;
    /* Private memory first: a GPU with less free memory fails here, alone, and every rank
     * learns it before any of them registers a window. */
    if (res == ncclxSuccess) {
        res = ncclx_arenas_alloc(&ctx->arenas, bytes, &ctx->norm.plan);
    }
    NCCLX_CHECK(ncclx_init_agree(ctx->coll, "memory", res, NULL, 0));
    res = sym->alloc(ctx, bytes[NCCLX_MEM_SYMMETRIC]);
    NCCLX_CHECK(ncclx_init_agree(ctx->coll, "symmetric", res, NULL, 0));
    NCCLX_CHECK(ncclx_init_agree(ctx->coll, "device", ncclx_context_prepare_device(ctx), NULL, 0));
    NCCLX_CHECK(ncclx_init_agree(ctx->coll, "network", ncclx_net_setup(ctx), NULL, 0));
    NCCLX_CHECK(ncclx_init_agree(ctx->coll, "rooms", ncclx_context_bind_rooms(ctx), NULL, 0));
    /* Every rank is ready (arenas zeroed, memory registered) before any peer writes to us. */
    NCCLX_CHECK(sym->barrier(ctx));
    ncclx_context_fill_info(ctx);
    return ncclxSuccess;
}

/* ---- agreement between the steps of init ---- */

/* One rank's word on a step. */
typedef struct {
    int32_t status;
    uint32_t instance;
    uint64_t plan_hash;
} ncclx_init_vote_t;

/* What the first failed rank says about its failure. */
typedef struct {
    int32_t status;
    uint32_t rank;
    char message[248];
} ncclx_init_failure_t;

/* The first failed rank tells everyone why.  A rank that did not fail reports it; one that
 * failed too keeps its own error (and message). */
static ncclxResult_t ncclx_init_remote_failure(ncclx_init_coll_t *coll, const char *step,
                                               uint32_t failed, ncclxResult_t mine)
{
    ncclx_init_failure_t why;
    char key[64];
    ncclxResult_t res;
    memset(&why, 0, sizeof(why));
    snprintf(key, sizeof(key), "%s.why", step);
    res = coll->broadcast(coll, key, failed, &why, sizeof(why));
    if (mine != ncclxSuccess) {
        return mine;
    }
    if (res != ncclxSuccess) {
        return res;
    }
    why.message[sizeof(why.message) - 1] = '\0';
    return NCCLX_ERROR(ncclxRemoteError, "rank %u failed at init step '%s' (%s): %s", failed, step,
                       ncclxGetErrorString((ncclxResult_t)why.status), why.message);
}

/* This rank failed first: it tells the others why and keeps its own error. */
static ncclxResult_t ncclx_init_tell_failure(ncclx_init_coll_t *coll, const char *step,
                                             ncclxResult_t mine)
{
    ncclx_init_failure_t why;
    char key[64];
    memset(&why, 0, sizeof(why));
    why.status = (int32_t)mine;
    why.rank = coll->rank;
    snprintf(why.message, sizeof(why.message), "%s", ncclxGetLastError());
    snprintf(key, sizeof(key), "%s.why", step);
    if (coll->broadcast(coll, key, coll->rank, &why, sizeof(why)) != ncclxSuccess) {
        /* The others knew of the failure, not its message; ours stays the one reported. */
        return NCCLX_ERROR(mine, "%s", why.message);
    }
    return mine;
}

/* Every rank fetches the plans of rank 0 and of the first rank that differs, and names the
 * same first difference. */
static ncclxResult_t ncclx_init_plan_mismatch(ncclx_init_coll_t *coll,
                                              const ncclx_plan_norm_t *norm, uint32_t odd)
{
    ncclxResult_t res = ncclxSuccess;
    ncclx_plan_difference_t d;
    char name[96];
    ncclx_plan_norm_t *first = malloc(sizeof(*first));
    ncclx_plan_norm_t *other = malloc(sizeof(*other));
    if (first == NULL || other == NULL) {
        /* The broadcasts need both buffers on every rank: fail without naming the field. */
        res = NCCLX_ERROR(ncclxInvalidArgument,
                          "rank %u holds another plan or team than rank 0 (no host memory left "
                          "to name the field): every rank must pass the same plan",
                          odd);
        goto out;
    }
    memcpy(first, norm, sizeof(*first));
    memcpy(other, norm, sizeof(*other));
    NCCLX_CHECK_GOTO(coll->broadcast(coll, "plan.first", 0, first, sizeof(*first)), res, out);
    NCCLX_CHECK_GOTO(coll->broadcast(coll, "plan.odd", odd, other, sizeof(*other)), res, out);
    if (!ncclx_plan_diff(other, first, &d)) {
        res = NCCLX_ERROR(ncclxInternalError,
                          "ranks 0 and %u hash their plans differently but no field differs", odd);
        goto out;
    }
    ncclx_plan_difference_name(&d, name, sizeof(name));
    res = NCCLX_ERROR(ncclxInvalidArgument,
                      "%s is %" PRIu64 " on rank %u but %" PRIu64 " on rank 0: every rank must "
                      "pass the same plan and run on the same team shape",
                      name, d.a, odd, d.b);
out:
    free(other);
    free(first);
    return res;
}

ncclxResult_t ncclx_init_agree(ncclx_init_coll_t *coll, const char *step, ncclxResult_t mine,
                               const ncclx_plan_norm_t *norm, uint32_t instance)
{
    ncclx_init_vote_t vote, *votes;
    uint32_t failed = UINT32_MAX, odd = UINT32_MAX;
    ncclxResult_t res = ncclxSuccess;
    if (coll == NULL || coll->size == 1) {
        return mine;
    }
    votes = calloc(coll->size, sizeof(*votes));
    if (votes == NULL) {
        /* This rank cannot vote: the others time out in the exchange instead of hanging. */
        return mine != ncclxSuccess
                   ? mine
                   : NCCLX_ERROR(ncclxOutOfMemory, "init step '%s': no host memory for %u votes",
                                 step, coll->size);
    }
    memset(&vote, 0, sizeof(vote));
    vote.status = (int32_t)mine;
    vote.instance = instance;
    vote.plan_hash = norm != NULL && mine == ncclxSuccess ? ncclx_plan_hash(norm) : 0;
    res = coll->allgather(coll, step, &vote, votes, sizeof(vote));
    if (res != ncclxSuccess) {
        free(votes);
        return mine != ncclxSuccess ? mine : res;
    }
    for (uint32_t r = 0; r < coll->size && failed == UINT32_MAX; r++) {
        if (votes[r].status != (int32_t)ncclxSuccess) {
            failed = r;
        }
    }
    for (uint32_t r = 1; r < coll->size && failed == UINT32_MAX && odd == UINT32_MAX; r++) {
        if (votes[r].plan_hash != votes[0].plan_hash || votes[r].instance != votes[0].instance) {
            odd = r;
        }
    }
    if (failed != UINT32_MAX) {
        /* Only the first failed rank speaks. */
        res = failed == coll->rank ? ncclx_init_tell_failure(coll, step, mine)
                                   : ncclx_init_remote_failure(coll, step, failed, mine);
    } else if (odd != UINT32_MAX && votes[odd].instance != votes[0].instance) {
        res = NCCLX_ERROR(ncclxInvalidArgument,
                          "config.instance is %u on rank %u but %u on rank 0: every rank must "
                          "give the same context the same instance",
                          votes[odd].instance, odd, votes[0].instance);
    } else if (odd != UINT32_MAX) {
        res = ncclx_init_plan_mismatch(coll, norm, odd);
    }
    free(votes);
    return res;
}

/* Every room's unbind, in reverse build order (each is idempotent and takes a partial bind). */
static ncclxResult_t ncclx_context_unbind_rooms(struct ncclxContext *ctx)
{
    ncclxResult_t first = ncclxSuccess;
    size_t n = 0;
    while (ncclx_rooms[n] != NULL) {
        n++;
    }
    while (n-- > 0) {
        first = ncclx_first_error(first, ncclx_rooms[n]->unbind(ctx));
    }
    return first;
}

ncclxResult_t ncclx_context_teardown(struct ncclxContext *ctx)
{
    ncclxResult_t first = ncclxSuccess;
    (void)cudaSetDevice(ctx->cuda_device);
    if (ctx->stream != NULL) {
        first = ncclx_first_error(first, NCCLX_CUDA_STATUS(cudaStreamSynchronize(ctx->stream)));
    }
    if (ctx->sym != NULL) {
        first = ncclx_first_error(first, ncclx_context_unbind_rooms(ctx));
        first = ncclx_first_error(first, ncclx_net_teardown(ctx));
        first = ncclx_first_error(first, ctx->sym->free(ctx));
        first = ncclx_first_error(first, ncclx_arenas_free(&ctx->arenas));
        ctx->sym = NULL;
    }
    if (ctx->stream != NULL) {
        first = ncclx_first_error(first, NCCLX_CUDA_STATUS(cudaStreamDestroy(ctx->stream)));
        ctx->stream = NULL;
    }
    return first;
}
