/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N entry points (include/ncclx/m2n.h): descriptor checks, groups, cutting a call or group
 * into launches, and each launch's kernel view.  Planning is lib/m2n/m2n_plan.c's (pure host
 * code), moving bytes kernels/m2n/m2n.cu's; docs/m2n.md tells the whole story.  Nothing here
 * allocates: the engine, its group entries and the launch being built live in the plan's
 * regions.
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "env.h"
#include "error.h"
#include "gpu_check.h"
#include "m2n.h" /* kernels/: the launch */
#include "m2n_engine.h"
#include "m2n_plan.h"
#include "struct.h"

/* ---- descriptors ---- */

uint32_t ncclx_m2n_dtype_bytes(ncclxDataType_t t)
{
    switch (t) {
    case NCCLX_FP8_E4M3:
    case NCCLX_FP8_E5M2:
    case NCCLX_FP4X2_E2M1:
    case NCCLX_UINT8:
    case NCCLX_INT8:
        return 1;
    case NCCLX_BFLOAT16:
    case NCCLX_FLOAT16:
        return 2;
    case NCCLX_FLOAT32:
    case NCCLX_INT32:
    case NCCLX_UINT32:
        return 4;
    case NCCLX_INT64:
    case NCCLX_UINT64:
    case NCCLX_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

/* The last error again, prefixed by where (a group's "entry i of n: "). */
static ncclxResult_t ncclx_m2n_prefix(ncclxResult_t res, const char *where)
{
    char message[512];
    if (where[0] == '\0') {
        return res;
    }
    snprintf(message, sizeof(message), "%s", ncclxGetLastError());
    return NCCLX_ERROR(res, "%s%s", where, message);
}

/* The checks every rank makes alike (the descriptors are the same on every rank): the error
 * names the side and field, prefixed by `where` ("" or "entry 3 of 10: "). */
static ncclxResult_t ncclx_m2n_check_tensor(const struct ncclx_m2n *m, const ncclxM2nTensor_t *src,
                                            const ncclxM2nTensor_t *dst, const char *where,
                                            ncclx_m2n_checked_t *c)
{
    const ncclxM2nTensor_t *t[2] = {src, dst};
    const char *name[2] = {"src", "dst"};
    ncclxResult_t res;
    for (int k = 0; k < 2; k++) {
        ncclx_m2n_side_t *s = &c->side[k];
        const uint32_t bytes = ncclx_m2n_dtype_bytes(t[k]->dtype);
        if (bytes == 0) {
            return NCCLX_ERROR(ncclxInvalidArgument, "%s%s.dtype=%d is not a data type", where,
                               name[k], (int)t[k]->dtype);
        }
        memset(s, 0, sizeof(*s));
        s->ndims = t[k]->ndims;
        memcpy(s->local_shape, t[k]->local_shape, sizeof(s->local_shape));
        s->elem_bytes = bytes;
        s->mesh = t[k]->mesh;
        memcpy(s->placements, t[k]->placements, sizeof(s->placements));
        if (s->mesh.ndims == 1) {
            /* A one-axis mesh has one placement: the second is not read. */
            s->mesh.dims[1] = 1;
            s->placements[1] = NCCLX_M2N_REPLICATE;
        }
        res = ncclx_m2n_geom(s, name[k], m->ranks, &c->geom[k]);
        if (res != ncclxSuccess) {
            return ncclx_m2n_prefix(res, where);
        }
        /* Replicas on the destination's node serve it first (ncclx_m2n_serving_replica). */
        c->geom[k].node_size = m->node_size;
        c->data[k] = t[k]->data;
    }
    if (src->dtype != dst->dtype) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%sdst.dtype=%d but src.dtype=%d: M2N converts nothing; give both "
                           "sides one dtype",
                           where, (int)dst->dtype, (int)src->dtype);
    }
    res = ncclx_m2n_check_pair(&c->side[0], &c->geom[0], &c->side[1], &c->geom[1], m->ranks);
    return res != ncclxSuccess ? ncclx_m2n_prefix(res, where) : res;
}

/* The checks only this rank can make: its tiles. */
static ncclxResult_t ncclx_m2n_check_tiles(const struct ncclx_m2n *m, const ncclx_m2n_checked_t *c,
                                           const char *where)
{
    const char *name[2] = {"src", "dst"};
    for (int k = 0; k < 2; k++) {
        uint32_t shard, replica;
        const int member = ncclx_m2n_position(&c->geom[k], m->rank, &shard, &replica);
        if (member && c->data[k] == NULL) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s%s.data is NULL on rank %u, a member of %s.mesh", where, name[k],
                               m->rank, name[k]);
        }
        if (!member && c->data[k] != NULL) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s%s.data=%p on rank %u, which is not in %s.mesh: pass NULL", where,
                               name[k], c->data[k], m->rank, name[k]);
        }
        if (member && (uintptr_t)c->data[k] % c->side[k].elem_bytes != 0) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s%s.data=%p is not aligned to its %u-byte elements", where,
                               name[k], c->data[k], c->side[k].elem_bytes);
        }
    }
    return ncclxSuccess;
}

/* FNV-1a over the planned geometry of a launch's tensors: what every rank must agree on. */
static uint64_t ncclx_m2n_hash(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ b[i]) * 0x100000001b3ull;
    }
    return h;
}

static unsigned ncclx_m2n_vote_word(const ncclx_m2n_checked_t *c, uint32_t n, uint32_t launch,
                                    int direct)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = ncclx_m2n_hash(h, &direct, sizeof(direct)); /* both paths never meet in one launch */
    h = ncclx_m2n_hash(h, &n, sizeof(n));
    h = ncclx_m2n_hash(h, &launch, sizeof(launch));
    for (uint32_t e = 0; e < n; e++) {
        for (int k = 0; k < 2; k++) {
            const ncclx_m2n_side_t *s = &c[e].side[k];
            h = ncclx_m2n_hash(h, &s->ndims, sizeof(s->ndims));
            h = ncclx_m2n_hash(h, s->local_shape, sizeof(s->local_shape));
            h = ncclx_m2n_hash(h, &s->elem_bytes, sizeof(s->elem_bytes));
            h = ncclx_m2n_hash(h, &s->mesh, sizeof(s->mesh));
            h = ncclx_m2n_hash(h, s->placements, sizeof(s->placements));
        }
    }
    return (unsigned)((h ^ (h >> 32)) & ~NCCLX_M2N_VOTE_REFUSE);
}

/* ---- launches ---- */

static ncclxResult_t ncclx_m2n_check_usable(const struct ncclxContext *ctx, const char *call)
{
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: ctx is NULL", call);
    }
    if (ctx->m2n == NULL) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: the context's plan has no M2N staging (plan.m2n_staging_bytes "
                           "is 0)",
                           call);
    }
    if (ctx->m2n->broken) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: an earlier M2N launch of this rank failed after other launches "
                           "of its call were enqueued; this rank's M2N is out of step with its "
                           "peers for good",
                           call);
    }
    if (*ctx->m2n->status & NCCLX_M2N_ERROR_TIMEOUT) {
        return NCCLX_ERROR(ncclxTimeout,
                           "%s: an M2N wait of this rank timed out; the ranks' M2N counters no "
                           "longer agree and M2N exchanges nothing more on this context",
                           call);
    }
    return ncclxSuccess;
}

/* Orders this call after the previous eager one, whatever the streams (two M2N kernels of one
 * rank must never run at once: they would share the launch count and the counters).  Outside
 * a capture only: a graph's launches are ordered by the graph and its replays by the caller. */
static ncclxResult_t ncclx_m2n_order(struct ncclx_m2n *m, ncclxStream_t stream, int *capturing)
{
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaStreamIsCapturing((cudaStream_t)stream, &capture)));
    *capturing = capture != cudaStreamCaptureStatusNone;
    if (!*capturing && m->have_done) {
        NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaStreamWaitEvent((cudaStream_t)stream, m->done, 0)));
    }
    return ncclxSuccess;
}

/* Fills the kernel view of launch number `launch` (n tensors at c) and enqueues it; with
 * refuse, the launch only votes the call down.  *voted_down: the launch went out as a vote
 * down because planning failed (the error is returned); else an error means no launch. */
static ncclxResult_t ncclx_m2n_enqueue(struct ncclx_m2n *m, const ncclx_m2n_checked_t *c,
                                       uint32_t n, uint32_t launch, int refuse,
                                       ncclxStream_t stream, int *voted_down)
{
    ncclx_m2n_launch_t *l = &m->launch;
    ncclx_m2n_rank_plan_t *p = &m->plan;
    *voted_down = 0;
    l->word = ncclx_m2n_vote_word(c, n, launch, m->direct) | (refuse ? NCCLX_M2N_VOTE_REFUSE : 0u);
    l->num_pairs = 0;
    l->num_entries = 0; /* a refused launch publishes no tile */
    l->blocks = 1;
    if (!refuse) {
        for (uint32_t e = 0; e < n; e++) {
            m->src_geom[e] = c[e].geom[0];
            m->dst_geom[e] = c[e].geom[1];
        }
        /* Cannot fail (the launch was cut so that every rank's transfers fit); if it did, the
         * launch still goes out, voting the call down, so that the ranks stay in step. */
        const ncclxResult_t planned =
            ncclx_m2n_plan_rank(m->src_geom, m->dst_geom, n, m->rank, m->ranks, m->slice,
                                m->channels, (uint32_t)m->ctx->blocks, m->direct, m->edges, p);
        if (planned != ncclxSuccess) {
            char message[512];
            snprintf(message, sizeof(message), "%s", ncclxGetLastError());
            l->word |= NCCLX_M2N_VOTE_REFUSE;
            NCCLX_CHECK(NCCLX_CUDA_STATUS(ncclx_m2n_launch(l, (cudaStream_t)stream)));
            *voted_down = 1;
            return NCCLX_ERROR(planned, "%s", message);
        }
        for (uint32_t k = 0; k < p->num_pairs; k++) {
            const ncclx_m2n_pair_t *a = &p->pairs[k];
            ncclx_m2n_pair_desc_t *d = &l->pairs[k];
            d->peer = (int)a->peer;
            d->send = (int)a->send;
            d->first_box = (int)a->first_box;
            d->num_boxes = (int)a->num_boxes;
            d->first_block = (int)a->first_block;
            d->blocks = (int)a->blocks;
            d->channels = (int)a->channels;
            d->reserved = 0;
            d->bytes = a->bytes;
            for (uint32_t b = a->first_box; b < a->first_box + a->num_boxes; b++) {
                const ncclx_m2n_run_t *r = &p->boxes[b];
                ncclx_m2n_box_desc_t *x = &l->boxes[b];
                x->tile = (char *)c[r->entry].data[a->send ? 0 : 1] + r->offset;
                x->run = r->run;
                x->pieces1 = r->pieces[1];
                x->stride0 = r->stride[0];
                x->stride1 = r->stride[1];
                x->begin = r->begin;
                x->bytes = r->bytes;
                x->peer_offset = r->peer_offset;
                x->peer_stride0 = r->peer_stride[0];
                x->peer_stride1 = r->peer_stride[1];
                x->entry = (int)r->entry;
                x->reserved = 0;
            }
        }
        for (uint32_t e = 0; e < n; e++) {
            l->src_tiles[e] = c[e].data[0]; /* NULL where this rank is no source */
        }
        l->num_entries = (int)n;
        l->num_pairs = (int)p->num_pairs;
        l->blocks = (int)p->blocks;
    }
    return NCCLX_CUDA_STATUS(ncclx_m2n_launch(l, (cudaStream_t)stream));
}

/* Runs n tensors (descriptors at src[i], dst[i] with stride `step` bytes) as few launches as
 * the per-launch bounds allow.  group: errors name the entry. */
static ncclxResult_t ncclx_m2n_submit(struct ncclx_m2n *m, const ncclx_m2n_entry_t *entries,
                                      uint32_t n, int group, ncclxStream_t stream, const char *call)
{
    ncclxResult_t local = ncclxSuccess, res;
    char local_message[512] = "";
    int voted_down = 0;
    uint32_t launch = 0, first = 0;
    int capturing = 0;
    ncclx_clear_stale_cuda_error(call);
    /* Every rank checks every descriptor alike: an error here is every rank's, and nothing is
     * enqueued anywhere. */
    for (uint32_t e = 0; e < n; e++) {
        char where[64] = "";
        ncclx_m2n_checked_t c;
        uint32_t bound;
        if (group) {
            snprintf(where, sizeof(where), "entry %u of %u: ", e, n);
            /* Only this rank sees its streams: like a tile error, it votes the group down (on
             * entry 0's stream) so that its peers skip it too instead of waiting for it. */
            if (entries[e].stream != entries[0].stream && local == ncclxSuccess) {
                local = NCCLX_ERROR(ncclxInvalidArgument,
                                    "%sstream %p differs from entry 0's (%p): one group runs on "
                                    "one stream",
                                    where, (void *)entries[e].stream, (void *)entries[0].stream);
                snprintf(local_message, sizeof(local_message), "%s", ncclxGetLastError());
            }
        }
        NCCLX_CHECK(ncclx_m2n_check_tensor(m, &entries[e].src, &entries[e].dst, where, &c));
        bound = ncclx_m2n_transfer_bound(&c.geom[0], &c.geom[1]);
        if (bound > NCCLX_M2N_MAX_TRANSFERS ||
            (2 * m->ranks > NCCLX_M2N_MAX_PEERS && bound > NCCLX_M2N_MAX_PEERS)) {
            return NCCLX_ERROR(ncclxResourceExhausted,
                               "%s: %sa rank may have up to %u transfers in this reshard, more "
                               "than one launch holds (NCCLX_M2N_MAX_TRANSFERS=%u, "
                               "NCCLX_M2N_MAX_PEERS=%u)",
                               call, where, bound, NCCLX_M2N_MAX_TRANSFERS, NCCLX_M2N_MAX_PEERS);
        }
        if (local == ncclxSuccess) {
            local = ncclx_m2n_check_tiles(m, &c, where);
            if (local != ncclxSuccess) {
                snprintf(local_message, sizeof(local_message), "%s", ncclxGetLastError());
            }
        }
    }
    res = ncclx_m2n_order(m, stream, &capturing);
    if (res != ncclxSuccess) {
        /* Nothing enqueued: the peers will time out on this rank; say so for good. */
        m->broken = 1;
        return res;
    }
    /* Launches: consecutive tensors while the sum of their bounds fits one launch (the same cut
     * on every rank).  A rank with a tile error votes every launch down. */
    while (first < n) {
        uint32_t end = first, sum = 0;
        for (; end < n && end - first < NCCLX_M2N_MAX_TRANSFERS; end++) {
            /* Every tensor has a transfer at least: a launch never holds more tensors than
             * transfers, so checked[] (one per tensor) is never written past its end. */
            ncclx_m2n_checked_t *c = &m->checked[end - first];
            /* Checked above: cannot fail now. */
            NCCLX_CHECK(ncclx_m2n_check_tensor(m, &entries[end].src, &entries[end].dst, "", c));
            const uint32_t b = ncclx_m2n_transfer_bound(&c->geom[0], &c->geom[1]);
            if (end > first &&
                (sum + b > NCCLX_M2N_MAX_TRANSFERS ||
                 (2 * m->ranks > NCCLX_M2N_MAX_PEERS && sum + b > NCCLX_M2N_MAX_PEERS))) {
                break;
            }
            sum += b;
        }
        res = ncclx_m2n_enqueue(m, m->checked, end - first, launch++, local != ncclxSuccess, stream,
                                &voted_down);
        if (res != ncclxSuccess && voted_down) {
            /* A planning refusal went out as a vote down: the rest follow as vote downs. */
            local = res;
            snprintf(local_message, sizeof(local_message), "%s", ncclxGetLastError());
        } else if (res != ncclxSuccess) {
            /* A launch failed: launches before it may be enqueued, the peers expect the rest. */
            m->broken = 1;
            return res;
        }
        first = end;
    }
    if (!capturing) {
        res = NCCLX_CUDA_STATUS(cudaEventRecord(m->done, (cudaStream_t)stream));
        if (res != ncclxSuccess) {
            m->broken = 1; /* the next call could not be ordered after this one */
            return res;
        }
        m->have_done = 1;
    }
    if (local != ncclxSuccess) {
        return NCCLX_ERROR(local, "%s: %s (this rank voted the call down: no rank moves any of it)",
                           call, local_message);
    }
    return ncclxSuccess;
}

/* ---- entry points ---- */

static ncclxResult_t ncclx_m2n_import(const ncclxM2nTensor_t *src, const ncclxM2nTensor_t *dst,
                                      ncclxStream_t stream, ncclx_m2n_entry_t *e)
{
    const ncclxM2nTensor_t defaults = NCCLX_M2N_TENSOR_INIT;
    e->src = defaults;
    e->dst = defaults;
    e->stream = stream;
    NCCLX_CHECK(ncclx_struct_import(&e->src, sizeof(e->src), src, NCCLX_MAGIC_M2N_TENSOR,
                                    NCCLX_M2N_TENSOR_SIZE_V1, "src"));
    return ncclx_struct_import(&e->dst, sizeof(e->dst), dst, NCCLX_MAGIC_M2N_TENSOR,
                               NCCLX_M2N_TENSOR_SIZE_V1, "dst");
}

ncclxResult_t ncclxM2nReshard(ncclxContext_t ctx, const ncclxM2nTensor_t *src,
                              const ncclxM2nTensor_t *dst, ncclxStream_t stream)
{
    struct ncclx_m2n *m;
    ncclx_m2n_entry_t e;
    NCCLX_CHECK(ncclx_m2n_check_usable(ctx, "ncclxM2nReshard"));
    m = ctx->m2n;
    if (m->depth > 0) {
        /* Recording: the group fails as a whole if this entry cannot be kept. */
        ncclxResult_t res = ncclxSuccess;
        if (m->num_entries == m->max_entries) {
            res = NCCLX_ERROR(ncclxResourceExhausted,
                              "ncclxM2nReshard: the group already holds "
                              "plan.m2n_max_group_entries=%u entries",
                              m->max_entries);
        } else {
            res = ncclx_m2n_import(src, dst, stream, &m->entries[m->num_entries]);
            if (res == ncclxSuccess) {
                m->num_entries++;
                return ncclxSuccess;
            }
        }
        if (m->group_error == ncclxSuccess) {
            m->group_error = res;
            snprintf(m->group_message, sizeof(m->group_message), "entry %u: %s", m->num_entries,
                     ncclxGetLastError());
        }
        return res;
    }
    NCCLX_CHECK(ncclx_m2n_import(src, dst, stream, &e));
    return ncclx_m2n_submit(m, &e, 1, 0, stream, "ncclxM2nReshard");
}

ncclxResult_t ncclxM2nGroupStart(ncclxContext_t ctx)
{
    NCCLX_CHECK(ncclx_m2n_check_usable(ctx, "ncclxM2nGroupStart"));
    if (ctx->m2n->depth == 0) {
        ctx->m2n->num_entries = 0;
        ctx->m2n->group_error = ncclxSuccess;
    }
    ctx->m2n->depth++;
    return ncclxSuccess;
}

static void ncclx_m2n_group_reset(struct ncclx_m2n *m)
{
    m->depth = 0;
    m->num_entries = 0;
    m->group_error = ncclxSuccess;
}

ncclxResult_t ncclxM2nGroupEnd(ncclxContext_t ctx)
{
    struct ncclx_m2n *m;
    ncclxResult_t res;
    if (ctx == NULL || ctx->m2n == NULL) {
        return ncclx_m2n_check_usable(ctx, "ncclxM2nGroupEnd");
    }
    m = ctx->m2n;
    if (m->depth == 0) {
        return NCCLX_ERROR(ncclxInvalidUsage, "ncclxM2nGroupEnd without ncclxM2nGroupStart");
    }
    if (--m->depth > 0) {
        return ncclxSuccess;
    }
    if (m->group_error != ncclxSuccess) {
        res = NCCLX_ERROR(m->group_error, "ncclxM2nGroupEnd: %s; nothing of the group was enqueued",
                          m->group_message);
    } else if (m->num_entries == 0) {
        res = ncclxSuccess;
    } else {
        res = ncclx_m2n_check_usable(ctx, "ncclxM2nGroupEnd");
        if (res == ncclxSuccess) {
            res = ncclx_m2n_submit(m, m->entries, m->num_entries, 1, m->entries[0].stream,
                                   "ncclxM2nGroupEnd");
        }
    }
    ncclx_m2n_group_reset(m);
    return res;
}

ncclxResult_t ncclxM2nGroupAbort(ncclxContext_t ctx)
{
    if (ctx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxM2nGroupAbort: ctx is NULL");
    }
    if (ctx->m2n != NULL) {
        ncclx_m2n_group_reset(ctx->m2n);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclxM2nGetAsyncError(ncclxContext_t ctx, uint32_t *error)
{
    if (ctx == NULL || error == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxM2nGetAsyncError: %s is NULL",
                           ctx == NULL ? "ctx" : "error");
    }
    if (ctx->m2n == NULL) {
        return ncclx_m2n_check_usable(ctx, "ncclxM2nGetAsyncError");
    }
    *error = *ctx->m2n->status;
    return ncclxSuccess;
}

ncclxResult_t ncclxM2nClearAsyncError(ncclxContext_t ctx, ncclxStream_t stream)
{
    struct ncclx_m2n *m;
    int capturing = 0;
    if (ctx == NULL || ctx->m2n == NULL) {
        return ncclx_m2n_check_usable(ctx, "ncclxM2nClearAsyncError");
    }
    m = ctx->m2n;
    /* Only the bits seen now: a bit that a kernel reports after this read survives the clear,
     * so no report is lost (the EP clear's rule).  TIMEOUT stays for good. */
    const unsigned seen = *m->status & (NCCLX_M2N_ERROR_REFUSED | NCCLX_M2N_ERROR_MISMATCH);
    if (seen == 0) {
        return ncclxSuccess;
    }
    ncclx_clear_stale_cuda_error("ncclxM2nClearAsyncError");
    /* In stream order, after the context's last eager M2N call (whatever its stream) and
     * before the next one: the clear is an M2N operation like a call. */
    NCCLX_CHECK(ncclx_m2n_order(m, stream, &capturing));
    NCCLX_CHECK(NCCLX_CUDA_STATUS(
        ncclx_m2n_launch_clear(m->state, m->status_device, seen, (cudaStream_t)stream)));
    if (!capturing) {
        NCCLX_CHECK(NCCLX_CUDA_STATUS(cudaEventRecord(m->done, (cudaStream_t)stream)));
        m->have_done = 1;
    }
    return ncclxSuccess;
}
