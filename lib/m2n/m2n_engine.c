/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N's room in the context (lib/plan/rooms.h): the engine bound to its regions at init, with
 * its event, and the M2N kernel module loaded.  The calls that use it are lib/m2n/m2n.c's.
 */
#include <string.h>

#include "context.h"
#include "env.h"
#include "error.h"
#include "gpu_check.h"
#include "m2n_engine.h"

_Static_assert(NCCLX_M2N_MIN_STAGING_PER_RANK == NCCLX_M2N_DEPTH * NCCLX_M2N_MIN_SLICE,
               "the plan's least staging is one channel of the smallest slices per source");
_Static_assert(sizeof(ncclx_m2n_state_t) <= NCCLX_M2N_STATE_BYTES, "M2N state outgrew its region");
_Static_assert(sizeof(ncclx_m2n_launch_t) <= 32000, "the launch must fit the kernel parameters");

size_t ncclx_m2n_engine_bytes(void)
{
    return sizeof(struct ncclx_m2n);
}

size_t ncclx_m2n_entry_bytes(void)
{
    return sizeof(ncclx_m2n_entry_t);
}

struct ncclx_m2n *ncclx_m2n_bind_host(struct ncclxContext *ctx)
{
    const ncclx_plan_regions_t *r = &ctx->regions;
    const ncclxPlan_t *plan = &ctx->norm.plan;
    struct ncclx_m2n *m;
    uint64_t timeout_ns = NCCLX_DEFAULT_TIMEOUT_NS;
    if (plan->m2n_staging_bytes == 0) {
        return NULL;
    }
    m = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->m2n_engine);
    memset(m, 0, sizeof(*m)); /* the host arena is not zeroed */
    m->ctx = ctx;
    m->ranks = ctx->norm.team.num_ranks;
    m->node_size = ctx->norm.team.lsa_size;
    m->rank = (uint32_t)ctx->rank;
    ncclx_m2n_ring_shape(plan->m2n_staging_bytes, m->ranks, &m->slice, &m->channels);
    /* A rank whose NCCLX_M2N_PATH differs votes every launch down as a mismatch. */
    m->direct = ncclx_context_direct_path(ctx, NCCLX_ENV_M2N_PATH);
    m->max_entries = plan->m2n_max_group_entries;
    m->entries = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_HOST, r->m2n_entries);
    m->status = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_MAPPED_HOST, r->m2n_status);
    m->status_device =
        (unsigned *)((char *)ctx->arenas.mapped_device + r->m2n_status); /* device view */
    m->state = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->m2n_state);
    *m->status = 0;
    timeout_ns = ncclx_env_timeout_ns(timeout_ns);
    {
        ncclx_m2n_launch_t *l = &m->launch;
        unsigned long long *counts = ncclx_arena_ptr(&ctx->arenas, NCCLX_MEM_DEVICE, r->m2n_counts);
        l->rank = ctx->rank;
        l->ranks = (int)m->ranks;
        l->slice = m->slice;
        l->channels = m->channels;
        l->direct = m->direct;
        l->one_gpu = ctx->loopback != NULL;
        l->timeout_ns = timeout_ns;
        l->peers = (void *const *)ctx->peer_table;
        l->lsa_size = (int)ctx->norm.team.lsa_size;
        l->lsa_base = ctx->rank / l->lsa_size * l->lsa_size;
        l->net_staging = r->m2n_net_staging;
        l->net_signal_base = r->m2n_net_signal_base;
        l->net = ctx->net;
        l->staging = r->m2n_staging;
        l->signals = r->m2n_signals;
        l->state = m->state;
        l->sent = counts;
        l->received = counts + (size_t)m->ranks * m->channels;
        l->status = m->status_device;
    }
    return m;
}

ncclxResult_t ncclx_m2n_bind(struct ncclxContext *ctx)
{
    struct ncclx_m2n *m = ncclx_m2n_bind_host(ctx);
    ctx->m2n = NULL;
    if (m == NULL) {
        return ncclxSuccess;
    }
    NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming)));
    ctx->m2n = m;
    return ncclxSuccess;
}

ncclxResult_t ncclx_m2n_unbind(struct ncclxContext *ctx)
{
    ncclxResult_t res = ncclxSuccess;
    if (ctx->m2n != NULL && ctx->m2n->done != NULL) {
        res = NCCLX_CUDA_STATUS(cudaEventDestroy(ctx->m2n->done));
        ctx->m2n->done = NULL;
    }
    ctx->m2n = NULL;
    return res;
}

/* The reshard and the clear of its errors, loaded at init. */
static cudaError_t ncclx_m2n_load(void)
{
    cudaError_t err = ncclx_m2n_kernels_load();
    return err != cudaSuccess ? err : ncclx_m2n_clear_load();
}

const ncclx_room_t ncclx_m2n_room = {"M2N", ncclx_m2n_load, ncclx_m2n_bind, ncclx_m2n_unbind};
