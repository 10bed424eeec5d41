/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The network transport of a context (kernels/common/net.h), set up once at init in the
 * regions the plan gave it: nothing on a team of one load/store domain; the emulator on a shaped
 * loopback team of several emulated nodes; NCCL GIN on a communicator of several LSA teams,
 * refused with what is missing when NCCL cannot bring GIN up.
 */
#include <string.h>

#include "context.h"
#include "env.h"
#include "error.h"
#include "gpu_check.h"
#include "log.h"
#include "struct.h"

static void *ncclx_net_device(struct ncclxContext *ctx, size_t offset)
{
    return offset != NCCLX_NO_REGION ? ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, offset)
                                     : NULL;
}

/* The emulator: every rank's arena in the world table (the loopback ops write it). */
static ncclxResult_t ncclx_net_emulated(struct ncclxContext *ctx, ncclx_net_desc_t *n)
{
    const ncclx_plan_regions_t *r = &ctx->regions;
    uint64_t chaos = 0, delay = 0;
    NCCLX_CHECK(ncclx_env_get_uint(NCCLX_ENV_NET_EMU_CHAOS, &chaos));
    NCCLX_CHECK(ncclx_env_get_uint(NCCLX_ENV_NET_EMU_DELAY_NS, &delay));
    n->kind = NCCLX_NET_EMULATED;
    n->world = ncclx_net_device(ctx, r->net_world);
    n->signal_table = r->net_signals;
    n->held = ncclx_net_device(ctx, r->net_held);
    n->held_next = ncclx_net_device(ctx, r->net_held_next);
    n->chaos = (int)chaos;
    n->delay_ns = delay;
    if (ctx->sym->resolve_world == NULL) {
        return NCCLX_ERROR(ncclxInternalError, "%s cannot give the emulated network its arenas",
                           ctx->sym->name);
    }
    return ctx->sym->resolve_world(ctx, (void **)n->world);
}

/* GIN: NCCL's device communicator with the plan's signals, copied into its region. */
static ncclxResult_t ncclx_net_gin(struct ncclxContext *ctx, ncclx_net_desc_t *n)
{
    const ncclx_plan_regions_t *r = &ctx->regions;
    const char *what = "";
    void *device_copy = ncclx_net_device(ctx, r->net_dev_comm);
    ncclResult_t nres =
        ncclx_gin_create(ctx->comm, (int)r->net_num_signals, device_copy, NCCLX_NET_DEV_COMM_BYTES,
                         ctx->stream, &ctx->net_gin_state, &what);
    if (nres != ncclSuccess) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "the team spans %u load/store domains (team.lsa_size=%u of %u ranks), "
                           "so its LL groups and M2N reach the other domains through NCCL GIN, "
                           "and %s "
                           "failed: %s (%d).  GIN needs NCCL >= 2.28.9 and, on every node, an "
                           "RDMA NIC (InfiniBand or RoCE) with GPUDirect RDMA (nvidia-peermem or "
                           "DMA-BUF); docs/multi-node.md",
                           ctx->norm.team.num_ranks / ctx->norm.team.lsa_size,
                           ctx->norm.team.lsa_size, ctx->norm.team.num_ranks, what,
                           ncclGetErrorString(nres), (int)nres);
    }
    n->kind = NCCLX_NET_GIN;
    n->dev_comm = device_copy;
    n->window = ctx->arenas.window;
    n->signal_base = 0;
    return NCCLX_CUDA_STATUS(cudaStreamSynchronize(ctx->stream));
}

ncclxResult_t ncclx_net_setup(struct ncclxContext *ctx)
{
    const ncclx_plan_regions_t *r = &ctx->regions;
    ncclx_net_desc_t *n = &ctx->net;
    memset(n, 0, sizeof(*n));
    n->kind = NCCLX_NET_NONE;
    n->rank = ctx->rank;
    n->ranks = (int)ctx->norm.team.num_ranks;
    n->lsa_size = (int)ctx->norm.team.lsa_size;
    if (!NCCLX_TEAM_MULTI_DOMAIN(&ctx->norm.team)) {
        return ncclxSuccess;
    }
    n->num_signals = (int)r->net_num_signals;
    n->local = ctx->arenas.base[NCCLX_MEM_SYMMETRIC];
    n->stats = ncclx_net_device(ctx, r->net_stats);
    if (ctx->loopback != NULL) {
        NCCLX_CHECK(ncclx_net_emulated(ctx, n));
    } else {
        NCCLX_CHECK(ncclx_net_gin(ctx, n));
    }
    NCCLX_INFO("rank %d: %s network to %d ranks outside its %d-rank load/store domain%s", ctx->rank,
               n->kind == NCCLX_NET_GIN ? "NCCL GIN" : "emulated", n->ranks - n->lsa_size,
               n->lsa_size, n->chaos ? " (chaos: unsignalled puts held back)" : "");
    return ncclxSuccess;
}

ncclxResult_t ncclx_net_teardown(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    if (ctx->net_gin_state != NULL) {
        res = NCCLX_NCCL_STATUS(ncclx_gin_destroy(ctx->comm, ctx->net_gin_state));
        ctx->net_gin_state = NULL;
    }
    ctx->net.kind = NCCLX_NET_NONE;
    return res;
}

ncclxResult_t ncclx_net_read_stats(struct ncclxContext *ctx, ncclx_net_stats_t *stats)
{
    memset(stats, 0, sizeof(*stats));
    if (ctx->net.stats == NULL) {
        return ncclxSuccess;
    }
    return NCCLX_CUDA_STATUS(
        cudaMemcpy(stats, ctx->net.stats, sizeof(*stats), cudaMemcpyDeviceToHost));
}

ncclxResult_t ncclxContextGetNetStats(ncclxContext_t ctx, ncclxNetStats_t *stats)
{
    ncclxNetStats_t mine = NCCLX_NET_STATS_INIT;
    ncclx_net_stats_t counters;
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxContextGetNetStats: context is NULL");
    }
    NCCLX_CHECK(
        ncclx_struct_check_output(stats, NCCLX_MAGIC_NET_STATS, NCCLX_NET_STATS_SIZE_V1, "stats"));
    NCCLX_CHECK(ncclx_net_read_stats(ctx, &counters));
    mine.kind = (uint32_t)ctx->net.kind; /* ncclx_net_kind_t and ncclxNetKind_t agree */
    mine.counted = ctx->net.kind == NCCLX_NET_EMULATED;
    mine.bytes = counters.bytes;
    mine.puts = counters.puts;
    mine.signals = counters.signals;
    ncclx_struct_export(stats, &mine, sizeof(mine));
    return ncclxSuccess;
}

_Static_assert((int)NCCLX_NET_KIND_NONE == (int)NCCLX_NET_NONE &&
                   (int)NCCLX_NET_KIND_EMULATED == (int)NCCLX_NET_EMULATED &&
                   (int)NCCLX_NET_KIND_GIN == (int)NCCLX_NET_GIN,
               "the public network kinds are the transport's");
