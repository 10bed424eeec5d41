/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N transfer planning (lib/m2n/m2n_plan.h): canonical sides, replica assignment and the overlap
 * boxes of shard pairs.  Pure host code, no allocation.
 */
#include "m2n_plan.h"

#include <string.h>

#include "error.h"
#include "m2n_ring.h"

/* The most bytes of a tensor: sizes stay below 2^62, so that sums and products of two in-range
 * values fit.  Every check below is `value > MAX / factor`, which admits value * factor up to
 * MAX exactly: MAX must be the largest size allowed, not the first one refused. */
#define NCCLX_M2N_MAX_BYTES ((1ull << 62) - 1)

static ncclxResult_t ncclx_m2n_check_mesh(const ncclx_m2n_side_t *s, const char *what,
                                          uint32_t world, uint64_t *size)
{
    const ncclx_m2n_mesh_t *m = &s->mesh;
    if (m->ndims < 1 || m->ndims > NCCLX_M2N_MAX_MESH_DIMS) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.mesh.ndims=%u: must be 1 or 2", what,
                           m->ndims);
    }
    *size = 1;
    for (uint32_t a = 0; a < m->ndims; a++) {
        if (m->dims[a] == 0) {
            return NCCLX_ERROR(ncclxInvalidArgument, "%s.mesh.dims[%u]=0: must be >= 1", what, a);
        }
        *size *= m->dims[a];
    }
    if ((uint64_t)m->start_rank + *size > world) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s.mesh: ranks [%u, %llu) lie past the context's %u ranks", what,
                           m->start_rank, (unsigned long long)(m->start_rank + *size), world);
    }
    return ncclxSuccess;
}

/* The shard axis of the side (-1: every axis replicates). */
static ncclxResult_t ncclx_m2n_shard_axis(const ncclx_m2n_side_t *s, const char *what, int *axis)
{
    *axis = -1;
    for (uint32_t a = 0; a < s->mesh.ndims; a++) {
        const int32_t p = s->placements[a];
        if (p == NCCLX_M2N_REPLICATE) {
            continue;
        }
        if (p < 0 || (uint32_t)p >= s->ndims) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s.placements[%u]=%d: must be NCCLX_M2N_REPLICATE (-1) or a "
                               "tensor dim in [0, %u)",
                               what, a, (int)p, s->ndims);
        }
        if (*axis >= 0) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s.placements[%u]=%d: a second shard axis (placements[%d] shards "
                               "already); one side shards along one mesh axis at most",
                               what, a, (int)p, *axis);
        }
        *axis = (int)a;
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_m2n_geom(const ncclx_m2n_side_t *s, const char *what, uint32_t world,
                             ncclx_m2n_geom_t *g)
{
    ncclx_m2n_geom_t c;
    uint64_t size = 0, bytes = 1;
    int axis;
    if (s->ndims < 1 || s->ndims > NCCLX_M2N_MAX_TENSOR_DIMS) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.ndims=%u: must be 1, 2 or 3", what, s->ndims);
    }
    if (s->elem_bytes != 1 && s->elem_bytes != 2 && s->elem_bytes != 4 && s->elem_bytes != 8) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s: an element of %u bytes; M2N moves 1, 2, 4 or "
                           "8-byte elements",
                           what, s->elem_bytes);
    }
    NCCLX_CHECK(ncclx_m2n_check_mesh(s, what, world, &size));
    NCCLX_CHECK(ncclx_m2n_shard_axis(s, what, &axis));
    c.ndims = s->ndims;
    c.dims[0] = s->mesh.dims[0];
    c.dims[1] = s->mesh.ndims == 2 ? s->mesh.dims[1] : 1;
    c.start_rank = s->mesh.start_rank;
    c.size = (uint32_t)size;
    if (axis < 0) { /* one shard of dim 0, every rank a replica: mesh {size, 1}, shards on axis 1 */
        c.dims[0] = c.size;
        c.dims[1] = 1;
        c.shard_axis = 1;
        c.shard_dim = 0;
    } else {
        c.shard_axis = (uint32_t)axis;
        c.shard_dim = (uint32_t)s->placements[axis];
    }
    c.shards = c.dims[c.shard_axis];
    c.replicas = c.dims[1 - c.shard_axis];
    c.node_size = world;
    for (uint32_t d = 0; d < c.ndims; d++) {
        const uint64_t unit = d + 1 == c.ndims ? s->elem_bytes : 1;
        if (s->local_shape[d] == 0 || s->local_shape[d] > NCCLX_M2N_MAX_BYTES / unit / c.shards) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s.local_shape[%u]=%llu: must be >= 1 and the tensor below 2^62 "
                               "bytes",
                               what, d, (unsigned long long)s->local_shape[d]);
        }
        c.local[d] = s->local_shape[d] * unit;
        c.global[d] = c.local[d] * (d == c.shard_dim ? c.shards : 1);
        if (c.global[d] > NCCLX_M2N_MAX_BYTES / bytes) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s.local_shape: the global tensor reaches 2^62 bytes", what);
        }
        bytes *= c.global[d];
    }
    c.local_bytes = 1;
    for (uint32_t d = c.ndims; d-- > 0;) {
        c.stride[d] = c.local_bytes;
        c.local_bytes *= c.local[d];
    }
    *g = c;
    return ncclxSuccess;
}

ncclxResult_t ncclx_m2n_check_pair(const ncclx_m2n_side_t *src, const ncclx_m2n_geom_t *s,
                                   const ncclx_m2n_side_t *dst, const ncclx_m2n_geom_t *d,
                                   uint32_t world)
{
    if (src->elem_bytes != dst->elem_bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "dst: elements of %u bytes, src of %u: M2N moves bytes and converts "
                           "nothing; give both sides one dtype",
                           dst->elem_bytes, src->elem_bytes);
    }
    if (s->ndims != d->ndims) {
        return NCCLX_ERROR(ncclxInvalidArgument, "dst.ndims=%u but src.ndims=%u", d->ndims,
                           s->ndims);
    }
    for (uint32_t k = 0; k < s->ndims; k++) {
        const uint64_t unit = k + 1 == s->ndims ? src->elem_bytes : 1;
        if (s->global[k] != d->global[k]) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "dst.local_shape[%u]=%llu gives a global dim %u of %llu elements, "
                               "src.local_shape[%u]=%llu gives %llu: both sides must describe one "
                               "tensor",
                               k, (unsigned long long)dst->local_shape[k], k,
                               (unsigned long long)(d->global[k] / unit), k,
                               (unsigned long long)src->local_shape[k],
                               (unsigned long long)(s->global[k] / unit));
        }
    }
    if (world > 1 && s->start_rank < d->start_rank + d->size &&
        d->start_rank < s->start_rank + s->size) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "dst.mesh ranks [%u, %u) overlap src.mesh ranks [%u, %u): a rank is "
                           "either a source or a destination",
                           d->start_rank, d->start_rank + d->size, s->start_rank,
                           s->start_rank + s->size);
    }
    return ncclxSuccess;
}

int ncclx_m2n_position(const ncclx_m2n_geom_t *g, uint32_t rank, uint32_t *shard, uint32_t *replica)
{
    uint32_t pos[2], l;
    if (rank < g->start_rank || rank - g->start_rank >= g->size) {
        return 0;
    }
    l = rank - g->start_rank;
    pos[0] = l / g->dims[1];
    pos[1] = l % g->dims[1];
    *shard = pos[g->shard_axis];
    *replica = pos[1 - g->shard_axis];
    return 1;
}

uint32_t ncclx_m2n_rank(const ncclx_m2n_geom_t *g, uint32_t shard, uint32_t replica)
{
    uint32_t pos[2];
    pos[g->shard_axis] = shard;
    pos[1 - g->shard_axis] = replica;
    return g->start_rank + pos[0] * g->dims[1] + pos[1];
}

uint32_t ncclx_m2n_server(uint32_t src_replicas, uint32_t dst_replicas, uint32_t q)
{
    if (src_replicas == dst_replicas) {
        return q;
    }
    if (src_replicas < dst_replicas) {
        /* src_replicas blocks of destinations, the first `extra` one larger. */
        const uint32_t base = dst_replicas / src_replicas, extra = dst_replicas % src_replicas;
        const uint32_t big = extra * (base + 1);
        return q < big ? q / (base + 1) : extra + (q - big) / base;
    }
    /* dst_replicas blocks of sources, the first `extra` one larger: block q's first serves. */
    const uint32_t base = src_replicas / dst_replicas, extra = src_replicas % dst_replicas;
    return q * base + (q < extra ? q : extra);
}

uint32_t ncclx_m2n_serving_replica(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t i,
                                   uint32_t j, uint32_t q)
{
    const uint32_t block = ncclx_m2n_server(s->replicas, d->replicas, q);
    const uint32_t per_node = d->node_size > 0 ? d->node_size : 1;
    const uint32_t node = ncclx_m2n_rank(d, j, q) / per_node;
    uint32_t near = 0;
    if (ncclx_m2n_rank(s, i, block) / per_node == node) {
        return block;
    }
    for (uint32_t p = 0; p < s->replicas; p++) {
        near += ncclx_m2n_rank(s, i, p) / per_node == node;
    }
    if (near == 0) {
        return block;
    }
    for (uint32_t p = 0, k = q % near;; p++) {
        if (ncclx_m2n_rank(s, i, p) / per_node == node && k-- == 0) {
            return p;
        }
    }
}

int ncclx_m2n_overlap(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t i, uint32_t j,
                      ncclx_m2n_box_t *box)
{
    uint64_t lo[NCCLX_M2N_MAX_TENSOR_DIMS] = {0}, hi[NCCLX_M2N_MAX_TENSOR_DIMS] = {0};
    uint64_t s_lo[NCCLX_M2N_MAX_TENSOR_DIMS], d_lo[NCCLX_M2N_MAX_TENSOR_DIMS];
    const uint32_t k = s->shard_dim > d->shard_dim ? s->shard_dim : d->shard_dim;
    ncclx_m2n_box_t b;
    for (uint32_t x = 0; x < s->ndims; x++) {
        const uint64_t s_hi = (s_lo[x] = x == s->shard_dim ? i * s->local[x] : 0) + s->local[x];
        const uint64_t d_hi = (d_lo[x] = x == d->shard_dim ? j * d->local[x] : 0) + d->local[x];
        lo[x] = s_lo[x] > d_lo[x] ? s_lo[x] : d_lo[x];
        hi[x] = s_hi < d_hi ? s_hi : d_hi;
        if (lo[x] >= hi[x]) {
            return 0;
        }
    }
    b.src_shard = i;
    b.dst_shard = j;
    /* Dims past k are whole on both sides (neither shards them): the run takes them all. */
    b.run = hi[k] - lo[k];
    for (uint32_t x = k + 1; x < s->ndims; x++) {
        b.run *= s->global[x];
    }
    b.src_offset = b.dst_offset = 0;
    for (uint32_t x = 0; x < s->ndims; x++) {
        b.src_offset += (lo[x] - s_lo[x]) * s->stride[x];
        b.dst_offset += (lo[x] - d_lo[x]) * d->stride[x];
    }
    b.bytes = b.run;
    for (uint32_t a = 0; a < 2; a++) {
        b.pieces[a] = a < k ? hi[a] - lo[a] : 1;
        b.src_stride[a] = a < k ? s->stride[a] : 0;
        b.dst_stride[a] = a < k ? d->stride[a] : 0;
        b.bytes *= b.pieces[a];
    }
    *box = b;
    return 1;
}

/* Visits rank's edges in order; with edges NULL only counts them. */
static uint32_t ncclx_m2n_edges(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                const ncclx_m2n_schedule_t *who, ncclx_m2n_edge_t *edges,
                                uint64_t *bytes)
{
    uint32_t n = 0;
    ncclx_m2n_box_t b;
    *bytes = 0;
    if (who->is_src) {
        for (uint32_t j = 0; j < d->shards; j++) {
            if (!ncclx_m2n_overlap(s, d, who->shard, j, &b)) {
                continue;
            }
            for (uint32_t q = 0; q < d->replicas; q++) {
                if (ncclx_m2n_serving_replica(s, d, who->shard, j, q) != who->replica) {
                    continue;
                }
                if (edges != NULL) {
                    edges[n].peer = ncclx_m2n_rank(d, j, q);
                    edges[n].box = b;
                }
                n++;
                *bytes += b.bytes;
            }
        }
    }
    if (who->is_dst) {
        for (uint32_t i = 0; i < s->shards; i++) {
            if (!ncclx_m2n_overlap(s, d, i, who->shard, &b)) {
                continue;
            }
            const uint32_t p = ncclx_m2n_serving_replica(s, d, i, who->shard, who->replica);
            if (edges != NULL) {
                edges[n].peer = ncclx_m2n_rank(s, i, p);
                edges[n].box = b;
            }
            n++;
            *bytes += b.bytes;
        }
    }
    return n;
}

ncclxResult_t ncclx_m2n_schedule(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                 uint32_t rank, ncclx_m2n_edge_t *edges, uint32_t capacity,
                                 const char *bound, ncclx_m2n_schedule_t *out)
{
    ncclx_m2n_schedule_t w;
    uint32_t shard, replica;
    memset(&w, 0, sizeof(w));
    if (ncclx_m2n_position(s, rank, &shard, &replica)) {
        w.is_src = 1;
        w.shard = shard;
        w.replica = replica;
    }
    /* A rank is on one side, except in a one-rank context (a self copy): its edges then list
     * the sends first, then the receives, and shard/replica are its source position. */
    if (ncclx_m2n_position(d, rank, &shard, &replica)) {
        w.is_dst = 1;
        if (!w.is_src) {
            w.shard = shard;
            w.replica = replica;
        }
    }
    {
        ncclx_m2n_schedule_t src_view = w, dst_view = w;
        uint64_t b1 = 0, b2 = 0;
        uint32_t n1, n2;
        src_view.is_dst = 0;
        dst_view.is_src = 0;
        if (w.is_dst) {
            (void)ncclx_m2n_position(d, rank, &dst_view.shard, &dst_view.replica);
        }
        n1 = ncclx_m2n_edges(s, d, &src_view, NULL, &b1);
        n2 = ncclx_m2n_edges(s, d, &dst_view, NULL, &b2);
        if ((uint64_t)n1 + n2 > capacity) {
            return NCCLX_ERROR(ncclxResourceExhausted,
                               "rank %u has %u transfers in this reshard, more than %s=%u", rank,
                               n1 + n2, bound, capacity);
        }
        (void)ncclx_m2n_edges(s, d, &src_view, edges, &b1);
        (void)ncclx_m2n_edges(s, d, &dst_view, edges + n1, &b2);
        w.num_edges = n1 + n2;
        w.num_sends = n1;
        w.bytes = b1 + b2;
    }
    *out = w;
    return ncclxSuccess;
}

void ncclx_m2n_box_locate(const ncclx_m2n_box_t *box, uint64_t pos, uint64_t *src_offset,
                          uint64_t *dst_offset, uint64_t *contiguous)
{
    const uint64_t piece = pos / box->run, in_run = pos % box->run;
    const uint64_t a1 = piece % box->pieces[1], a0 = piece / box->pieces[1];
    *src_offset = box->src_offset + a0 * box->src_stride[0] + a1 * box->src_stride[1] + in_run;
    *dst_offset = box->dst_offset + a0 * box->dst_stride[0] + a1 * box->dst_stride[1] + in_run;
    *contiguous = box->run - in_run;
}

/* How many shards of `other` overlap shard i of `side` (shards cut one dim each). */
static uint32_t ncclx_m2n_overlapping(const ncclx_m2n_geom_t *side, const ncclx_m2n_geom_t *other,
                                      uint32_t i)
{
    const uint32_t k = side->shard_dim;
    if (other->shard_dim != k) {
        return other->shards; /* the cuts cross: every shard of other meets shard i */
    }
    const uint64_t lo = i * side->local[k], hi = lo + side->local[k];
    return (uint32_t)((hi - 1) / other->local[k] - lo / other->local[k] + 1);
}

uint32_t ncclx_m2n_transfer_bound(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d)
{
    /* A source replica serves at most ceil(Rd / Rs) destination replicas of each shard by the
     * block rule; where the meshes span several nodes a replica on a destination's node serves
     * it instead (ncclx_m2n_serving_replica), so one may serve them all. */
    const uint32_t per_node = d->node_size > 0 ? d->node_size : 1;
    const uint32_t lo = s->start_rank < d->start_rank ? s->start_rank : d->start_rank;
    const uint32_t s_end = s->start_rank + s->size, d_end = d->start_rank + d->size;
    const uint32_t hi = (s_end > d_end ? s_end : d_end) - 1;
    const uint32_t served = lo / per_node != hi / per_node ? d->replicas
                            : s->replicas < d->replicas
                                ? (d->replicas + s->replicas - 1) / s->replicas
                                : 1;
    uint32_t sends = 0, recvs = 0;
    for (uint32_t i = 0; i < s->shards; i++) {
        const uint32_t n = ncclx_m2n_overlapping(s, d, i);
        sends = n > sends ? n : sends;
    }
    for (uint32_t j = 0; j < d->shards; j++) {
        const uint32_t n = ncclx_m2n_overlapping(d, s, j);
        recvs = n > recvs ? n : recvs;
    }
    /* A rank is on both sides only in a self copy (meshes that share ranks: one rank). */
    const int shared =
        s->start_rank < d->start_rank + d->size && d->start_rank < s->start_rank + s->size;
    if (shared) {
        return sends * served + recvs;
    }
    return sends * served > recvs ? sends * served : recvs;
}

/* Sort key of a pair: (source, destination) in rank order; a self copy's send comes first. */
static uint64_t ncclx_m2n_pair_key(const ncclx_m2n_pair_t *p, uint32_t rank, uint32_t world)
{
    const uint64_t src = p->send ? rank : p->peer, dst = p->send ? p->peer : rank;
    return ((src * world + dst) << 1) | (p->send ? 0u : 1u);
}

static ncclxResult_t ncclx_m2n_find_pair(ncclx_m2n_rank_plan_t *o, uint32_t peer, uint32_t send,
                                         uint32_t *index)
{
    for (uint32_t k = 0; k < o->num_pairs; k++) {
        if (o->pairs[k].peer == peer && o->pairs[k].send == send) {
            *index = k;
            return ncclxSuccess;
        }
    }
    if (o->num_pairs == NCCLX_M2N_MAX_PEERS) {
        return NCCLX_ERROR(ncclxResourceExhausted,
                           "this launch has more than NCCLX_M2N_MAX_PEERS=%u (peer, direction) "
                           "pairs on one rank",
                           NCCLX_M2N_MAX_PEERS);
    }
    memset(&o->pairs[o->num_pairs], 0, sizeof(o->pairs[0]));
    o->pairs[o->num_pairs].peer = peer;
    o->pairs[o->num_pairs].send = send;
    *index = o->num_pairs++;
    return ncclxSuccess;
}

/* One block per pair, the rest of the budget shared by bytes (no pair more blocks than
 * channels); or, with more pairs than the budget, pair k on block k % budget.  direct: a
 * sending pair only signals (its destination copies), so it keeps its one block and the rest
 * goes to the receiving pairs. */
static void ncclx_m2n_assign_blocks(ncclx_m2n_rank_plan_t *o, uint32_t budget, int direct)
{
    const uint32_t n = o->num_pairs;
    uint64_t total = 0;
    uint32_t cursor = 0;
    budget = budget < 2 ? 2 : budget; /* a self copy's two ends never share a block */
    if (n == 0) {
        o->blocks = 1; /* the vote */
        return;
    }
    if (n > budget) {
        for (uint32_t k = 0; k < n; k++) {
            o->pairs[k].first_block = k % budget;
            o->pairs[k].blocks = 1;
        }
        o->blocks = budget;
        return;
    }
    for (uint32_t k = 0; k < n; k++) {
        total += direct && o->pairs[k].send ? 0 : o->pairs[k].bytes;
    }
    for (uint32_t k = 0; k < n; k++) {
        const uint64_t bytes = direct && o->pairs[k].send ? 0 : o->pairs[k].bytes;
        const double share = total ? (double)bytes / (double)total : 0.0;
        o->pairs[k].first_block = cursor;
        const uint32_t blocks = 1 + (uint32_t)((double)(budget - n) * share);
        o->pairs[k].blocks = blocks < o->pairs[k].channels ? blocks : o->pairs[k].channels;
        cursor += o->pairs[k].blocks;
    }
    o->blocks = cursor;
}

ncclxResult_t ncclx_m2n_plan_rank(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t n,
                                  uint32_t rank, uint32_t world, uint64_t slice, uint32_t channels,
                                  uint32_t budget, int direct, ncclx_m2n_edge_t *scratch,
                                  ncclx_m2n_rank_plan_t *out)
{
    ncclx_m2n_rank_plan_t *o = out;
    uint32_t cursor[NCCLX_M2N_MAX_PEERS];
    o->num_pairs = o->num_boxes = 0;
    o->blocks = 1;
    o->reserved = 0;
    /* Pass 1: the pairs and how many boxes each has. */
    for (uint32_t e = 0; e < n; e++) {
        ncclx_m2n_schedule_t w;
        NCCLX_CHECK(
            ncclx_m2n_schedule(&s[e], &d[e], rank, scratch, NCCLX_M2N_MAX_TRANSFERS - o->num_boxes,
                               "NCCLX_M2N_MAX_TRANSFERS (what is left of it in this launch)", &w));
        for (uint32_t k = 0; k < w.num_edges; k++) {
            uint32_t p;
            NCCLX_CHECK(ncclx_m2n_find_pair(o, scratch[k].peer, k < w.num_sends, &p));
            o->pairs[p].num_boxes++;
            o->num_boxes++;
        }
    }
    /* Pairs in (source, destination) order: insertion sort, at most NCCLX_M2N_MAX_PEERS. */
    for (uint32_t a = 1; a < o->num_pairs; a++) {
        const ncclx_m2n_pair_t x = o->pairs[a];
        const uint64_t key = ncclx_m2n_pair_key(&x, rank, world);
        uint32_t b = a;
        for (; b > 0 && ncclx_m2n_pair_key(&o->pairs[b - 1], rank, world) > key; b--) {
            o->pairs[b] = o->pairs[b - 1];
        }
        o->pairs[b] = x;
    }
    for (uint32_t p = 0, first = 0; p < o->num_pairs; p++) {
        o->pairs[p].first_box = first;
        cursor[p] = first;
        first += o->pairs[p].num_boxes;
    }
    /* Pass 2: each box at its pair's cursor (tensor order within a pair), then the streams. */
    for (uint32_t e = 0; e < n; e++) {
        ncclx_m2n_schedule_t w;
        NCCLX_CHECK(ncclx_m2n_schedule(&s[e], &d[e], rank, scratch, NCCLX_M2N_MAX_TRANSFERS,
                                       "NCCLX_M2N_MAX_TRANSFERS", &w));
        for (uint32_t k = 0; k < w.num_edges; k++) {
            const uint32_t send = k < w.num_sends;
            const ncclx_m2n_box_t *b = &scratch[k].box;
            uint32_t p;
            ncclx_m2n_run_t *r;
            NCCLX_CHECK(ncclx_m2n_find_pair(o, scratch[k].peer, send, &p));
            r = &o->boxes[cursor[p]++];
            memset(r, 0, sizeof(*r));
            r->entry = e;
            r->offset = send ? b->src_offset : b->dst_offset;
            r->peer_offset = send ? b->dst_offset : b->src_offset;
            r->run = b->run;
            r->bytes = b->bytes;
            for (uint32_t a = 0; a < 2; a++) {
                r->pieces[a] = b->pieces[a];
                r->stride[a] = send ? b->src_stride[a] : b->dst_stride[a];
                r->peer_stride[a] = send ? b->dst_stride[a] : b->src_stride[a];
            }
        }
    }
    for (uint32_t p = 0; p < o->num_pairs; p++) {
        uint64_t at = 0;
        for (uint32_t k = 0; k < o->pairs[p].num_boxes; k++) {
            ncclx_m2n_run_t *r = &o->boxes[o->pairs[p].first_box + k];
            r->begin = (at + 15) / 16 * 16;
            at = r->begin + r->bytes;
        }
        o->pairs[p].bytes = at;
        o->pairs[p].channels = ncclx_m2n_pair_channels(at, slice, channels);
    }
    ncclx_m2n_assign_blocks(o, budget, direct);
    return ncclxSuccess;
}
