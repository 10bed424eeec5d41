/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N transfer planning (lib/m2n_plan.h): canonical sides, replica assignment and the overlap
 * boxes of shard pairs.  Pure host code, no allocation.
 */
#include "m2n_plan.h"

#include <string.h>

#include "error.h"

/* Tensor sizes stay below 2^62 bytes, so that sums and products of two in-range values fit. */
#define NCCLX_M2N_MAX_BYTES (1ull << 62)

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
                if (ncclx_m2n_server(s->replicas, d->replicas, q) != who->replica) {
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
        const uint32_t p = ncclx_m2n_server(s->replicas, d->replicas, who->replica);
        for (uint32_t i = 0; i < s->shards; i++) {
            if (!ncclx_m2n_overlap(s, d, i, who->shard, &b)) {
                continue;
            }
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

uint64_t ncclx_m2n_chunk_bytes(uint64_t staging, uint32_t edges, uint64_t min_chunk)
{
    const uint64_t chunk = edges == 0 ? 0 : staging / edges / 2 / 16 * 16;
    return chunk >= min_chunk && chunk > 0 ? chunk : 0;
}

uint64_t ncclx_m2n_slice_offset(uint64_t chunk, uint32_t e, uint32_t h)
{
    return ((uint64_t)e * 2 + h) * chunk;
}

uint64_t ncclx_m2n_rounds(uint64_t bytes, uint64_t chunk)
{
    const uint64_t r = (bytes + chunk - 1) / chunk;
    return r == 0 ? 1 : r;
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

/* A destination shard's incoming edges: how many source shards overlap it, and the position of
 * source shard i among them (ascending shard: the receive order of ncclx_m2n_schedule). */
static uint32_t ncclx_m2n_incoming(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t j,
                                   uint32_t i, uint32_t *position)
{
    ncclx_m2n_box_t b;
    uint32_t n = 0;
    for (uint32_t x = 0; x < s->shards; x++) {
        if (x == i) {
            *position = n;
        }
        n += (uint32_t)ncclx_m2n_overlap(s, d, x, j, &b);
    }
    return n;
}

ncclxResult_t ncclx_m2n_transfers(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                  uint32_t rank, uint64_t staging, uint64_t min_chunk,
                                  const char *staging_field, ncclx_m2n_edge_t *scratch,
                                  ncclx_m2n_xfer_t *out, uint32_t capacity, const char *bound,
                                  uint32_t *count)
{
    ncclx_m2n_schedule_t w;
    NCCLX_CHECK(ncclx_m2n_schedule(s, d, rank, scratch, capacity, bound, &w));
    /* Every destination this rank touches must get rounds of at least min_chunk: checked
     * before anything is written. */
    for (uint32_t pass = 0; pass < 2; pass++) {
        for (uint32_t e = 0; e < w.num_edges; e++) {
            const ncclx_m2n_box_t *b = &scratch[e].box;
            uint32_t position = 0;
            const uint32_t incoming =
                ncclx_m2n_incoming(s, d, b->dst_shard, b->src_shard, &position);
            const uint64_t chunk = ncclx_m2n_chunk_bytes(staging, incoming, min_chunk);
            if (chunk == 0) {
                return NCCLX_ERROR(ncclxResourceExhausted,
                                   "%s=%llu: destination shard %u receives from %u source "
                                   "shards, which leaves rounds below %llu bytes",
                                   staging_field, (unsigned long long)staging, b->dst_shard,
                                   incoming, (unsigned long long)min_chunk);
            }
            if (pass == 1) {
                ncclx_m2n_xfer_t x;
                memset(&x, 0, sizeof(x));
                x.peer = scratch[e].peer;
                x.send = e < w.num_sends ? 1u : 0u; /* the schedule lists the sends first */
                x.slot = position;
                x.chunk = chunk;
                x.rounds = ncclx_m2n_rounds(b->bytes, chunk);
                x.box = *b;
                out[e] = x;
            }
        }
    }
    *count = w.num_edges;
    return ncclxSuccess;
}
