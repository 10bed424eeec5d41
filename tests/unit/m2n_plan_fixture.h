/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the M2N planner tests share: a seeded generator, the global coordinates of a tile byte,
 * and random valid meshes and reshards (tests/unit/test_m2n_plan.c, test_m2n_launch.c).
 */
#ifndef NCCLX_TESTS_M2N_PLAN_FIXTURE_H_
#define NCCLX_TESTS_M2N_PLAN_FIXTURE_H_

#include "ncclx_test.h"

#include <stdlib.h>

#include "m2n_plan.h"

static uint64_t rng = 12345;

static inline uint32_t below(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33) % n;
}

/* The global coordinates (dims in bytes along the last one) of byte `offset` of shard `shard`'s
 * local tile. */
static inline void global_of(const ncclx_m2n_geom_t *g, uint32_t shard, uint64_t offset,
                             uint64_t *out)
{
    for (uint32_t d = g->ndims; d-- > 0;) {
        out[d] = offset % g->local[d] + (d == g->shard_dim ? shard * g->local[d] : 0);
        offset /= g->local[d];
    }
}

static inline uint32_t gcd(uint32_t a, uint32_t b)
{
    return b == 0 ? a : gcd(b, a % b);
}

/* A random side on [start, start + size): the mesh and placements only (shapes come later). */
static inline void random_mesh(ncclx_m2n_side_t *s, uint32_t ndims, uint32_t start)
{
    memset(s, 0, sizeof(*s));
    s->ndims = ndims;
    s->mesh.ndims = 1 + below(2);
    s->mesh.start_rank = start;
    for (uint32_t a = 0; a < s->mesh.ndims; a++) {
        s->mesh.dims[a] = 1 + below(4);
        s->placements[a] = NCCLX_M2N_REPLICATE;
    }
    if (below(4) != 0) { /* one shard axis, else fully replicated */
        s->placements[below(s->mesh.ndims)] = (int32_t)below(ndims);
    }
}

static inline uint32_t mesh_size(const ncclx_m2n_side_t *s)
{
    return s->mesh.dims[0] * (s->mesh.ndims == 2 ? s->mesh.dims[1] : 1);
}

/* Shards of tensor dim d on side s (1 when it does not shard d). */
static inline uint32_t shards_of(const ncclx_m2n_side_t *s, uint32_t d)
{
    for (uint32_t a = 0; a < s->mesh.ndims; a++) {
        if (s->placements[a] == (int32_t)d) {
            return s->mesh.dims[a];
        }
    }
    return 1;
}

/* A random valid pair: meshes of 1 to 16 ranks in either order, then `extra` ranks in
 * neither; a global shape that both sides' shard counts divide.  Returns the world size. */
static inline uint32_t random_pair(ncclx_m2n_side_t *src, ncclx_m2n_side_t *dst, uint32_t extra)
{
    const uint32_t ndims = 1 + below(3);
    random_mesh(src, ndims, 0);
    random_mesh(dst, ndims, 0);
    if (below(2)) {
        src->mesh.start_rank = mesh_size(dst);
    } else {
        dst->mesh.start_rank = mesh_size(src);
    }
    src->elem_bytes = dst->elem_bytes = 1u << below(4);
    for (uint32_t d = 0; d < ndims; d++) {
        const uint32_t a = shards_of(src, d), b = shards_of(dst, d);
        const uint64_t g = (uint64_t)(1 + below(3)) * (a / gcd(a, b) * b);
        src->local_shape[d] = g / a;
        dst->local_shape[d] = g / b;
    }
    return mesh_size(src) + mesh_size(dst) + extra;
}

/* A random valid reshard whose meshes fit a context of world ranks, at random disjoint places;
 * both on rank 0 when world is 1 (a self copy). */
static inline void random_in_world(ncclx_m2n_side_t *src, ncclx_m2n_side_t *dst, uint32_t world)
{
    uint32_t a, b;
    do {
        (void)random_pair(src, dst, 0);
        a = mesh_size(src);
        b = mesh_size(dst);
    } while (world == 1 ? (a != 1 || b != 1) : a + b > world);
    if (world == 1) {
        src->mesh.start_rank = dst->mesh.start_rank = 0;
        return;
    }
    const uint32_t slack = world - a - b, before = below(slack + 1);
    const uint32_t between = below(slack - before + 1);
    ncclx_m2n_side_t *first = below(2) ? src : dst, *second = first == src ? dst : src;
    first->mesh.start_rank = before;
    second->mesh.start_rank = before + mesh_size(first) + between;
}

/* A side of the tests below: a 1-dim tensor of 64 bytes on ranks [start, start + dims[0]),
 * replicated or sharded. */
static inline ncclx_m2n_side_t line_side(uint32_t start, uint32_t ranks, int shard)
{
    ncclx_m2n_side_t s;
    memset(&s, 0, sizeof(s));
    s.ndims = 1;
    s.elem_bytes = 1;
    s.local_shape[0] = shard ? 64 / ranks : 64;
    s.mesh.ndims = 1;
    s.mesh.dims[0] = ranks;
    s.mesh.start_rank = start;
    s.placements[0] = shard ? 0 : NCCLX_M2N_REPLICATE;
    s.placements[1] = NCCLX_M2N_REPLICATE;
    return s;
}

#endif /* NCCLX_TESTS_M2N_PLAN_FIXTURE_H_ */
