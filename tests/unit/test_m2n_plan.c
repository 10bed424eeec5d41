/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N planner (lib/m2n_plan.c) against a brute-force check over hundreds of random valid
 * shapes, meshes and placements: for every destination rank, the boxes of every source shard
 * are walked byte by byte; each destination byte must be covered exactly once, and the source
 * byte it comes from must have the same global coordinates (both recomputed here from the
 * local offsets, independently of the planner).  Also the replica assignment's balance and
 * every refusal.
 */
#include "ncclx_test.h"

#include <stdlib.h>

#include "m2n_plan.h"

static uint64_t rng = 12345;

static uint32_t below(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33) % n;
}

/* The global coordinates (dims in bytes along the last one) of byte `offset` of shard `shard`'s
 * local tile. */
static void global_of(const ncclx_m2n_geom_t *g, uint32_t shard, uint64_t offset, uint64_t *out)
{
    for (uint32_t d = g->ndims; d-- > 0;) {
        out[d] = offset % g->local[d] + (d == g->shard_dim ? shard * g->local[d] : 0);
        offset /= g->local[d];
    }
}

static uint32_t gcd(uint32_t a, uint32_t b)
{
    return b == 0 ? a : gcd(b, a % b);
}

/* A random side on [start, start + size): the mesh and placements only (shapes come later). */
static void random_mesh(ncclx_m2n_side_t *s, uint32_t ndims, uint32_t start)
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

static uint32_t mesh_size(const ncclx_m2n_side_t *s)
{
    return s->mesh.dims[0] * (s->mesh.ndims == 2 ? s->mesh.dims[1] : 1);
}

/* Shards of tensor dim d on side s (1 when it does not shard d). */
static uint32_t shards_of(const ncclx_m2n_side_t *s, uint32_t d)
{
    for (uint32_t a = 0; a < s->mesh.ndims; a++) {
        if (s->placements[a] == (int32_t)d) {
            return s->mesh.dims[a];
        }
    }
    return 1;
}

/* Every rank's schedule: a destination receives its whole tile, each receive matches a send of
 * that source (same box), non-members move nothing, and a capacity one short is refused. */
static void check_schedules(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t world)
{
    enum { CAP = 256 };
    static ncclx_m2n_edge_t edges[64][CAP];
    static ncclx_m2n_schedule_t w[64];
    assert_true(world <= 64);
    for (uint32_t r = 0; r < world; r++) {
        assert_ncclx_ok(ncclx_m2n_schedule(s, d, r, edges[r], CAP, "plan.m2n_max_edges", &w[r]));
        if (!w[r].is_src && !w[r].is_dst) {
            assert_int_equal(w[r].num_edges, 0);
        }
        if (w[r].is_dst && !w[r].is_src) {
            assert_int_equal(w[r].bytes, d->local_bytes);
        }
        if (w[r].num_edges > 0) {
            ncclx_m2n_schedule_t before = w[r], again;
            memcpy(&again, &before, sizeof(again));
            assert_ncclx_error(ncclx_m2n_schedule(s, d, r, edges[r], w[r].num_edges - 1,
                                                  "plan.m2n_max_edges", &again),
                               ncclxResourceExhausted, "more than plan.m2n_max_edges=");
            assert_memory_equal(&again, &before, sizeof(again));
        }
    }
    for (uint32_t r = 0; r < world; r++) {
        if (!w[r].is_dst || w[r].is_src) {
            continue;
        }
        for (uint32_t e = 0; e < w[r].num_edges; e++) {
            const ncclx_m2n_edge_t *in = &edges[r][e];
            const uint32_t p = in->peer;
            int found = 0;
            assert_true(w[p].is_src);
            for (uint32_t f = 0; f < w[p].num_edges; f++) {
                found += edges[p][f].peer == r &&
                         memcmp(&edges[p][f].box, &in->box, sizeof(in->box)) == 0;
            }
            assert_int_equal(found, 1);
        }
    }
}

/* Checks every destination rank's tile: covered exactly once, from the right coordinates. */
static void check_case(const ncclx_m2n_side_t *src, const ncclx_m2n_side_t *dst, uint32_t world)
{
    ncclx_m2n_geom_t s, d;
    assert_ncclx_ok(ncclx_m2n_geom(src, "src", world, &s));
    assert_ncclx_ok(ncclx_m2n_geom(dst, "dst", world, &d));
    assert_ncclx_ok(ncclx_m2n_check_pair(src, &s, dst, &d, world));
    uint8_t *cover = calloc(d.local_bytes, 1);
    uint64_t *sent = calloc(s.shards, sizeof(uint64_t));
    assert_non_null(cover);
    assert_non_null(sent);
    for (uint32_t j = 0; j < d.shards; j++) {
        memset(cover, 0, d.local_bytes);
        for (uint32_t i = 0; i < s.shards; i++) {
            ncclx_m2n_box_t b;
            if (!ncclx_m2n_overlap(&s, &d, i, j, &b)) {
                continue;
            }
            assert_int_equal(b.src_shard, i);
            assert_int_equal(b.dst_shard, j);
            sent[i] += b.bytes;
            for (uint64_t a0 = 0; a0 < b.pieces[0]; a0++) {
                for (uint64_t a1 = 0; a1 < b.pieces[1]; a1++) {
                    for (uint64_t r = 0; r < b.run; r++) {
                        const uint64_t so =
                            b.src_offset + a0 * b.src_stride[0] + a1 * b.src_stride[1] + r;
                        const uint64_t dof =
                            b.dst_offset + a0 * b.dst_stride[0] + a1 * b.dst_stride[1] + r;
                        uint64_t gs[3], gd[3];
                        assert_true(so < s.local_bytes && dof < d.local_bytes);
                        global_of(&s, i, so, gs);
                        global_of(&d, j, dof, gd);
                        assert_memory_equal(gs, gd, s.ndims * sizeof(uint64_t));
                        cover[dof]++;
                    }
                }
            }
        }
        for (uint64_t x = 0; x < d.local_bytes; x++) {
            if (cover[x] != 1) {
                fail_msg("dst shard %u byte %llu covered %u times", j, (unsigned long long)x,
                         cover[x]);
            }
        }
    }
    for (uint32_t i = 0; i < s.shards; i++) {
        assert_int_equal(sent[i], s.local_bytes); /* a source shard's tile goes out once */
    }
    /* Every destination rank has a server; ranks and positions round-trip. */
    for (uint32_t r = 0; r < world; r++) {
        uint32_t shard, replica;
        if (ncclx_m2n_position(&d, r, &shard, &replica)) {
            const uint32_t p = ncclx_m2n_server(s.replicas, d.replicas, replica);
            uint32_t ss, sr;
            assert_true(p < s.replicas);
            assert_int_equal(ncclx_m2n_rank(&d, shard, replica), r);
            assert_true(ncclx_m2n_position(&s, ncclx_m2n_rank(&s, 0, p), &ss, &sr));
            assert_int_equal(sr, p);
        }
    }
    free(sent);
    free(cover);
    check_schedules(&s, &d, world);
}

/* A random valid pair: meshes of 1 to 16 ranks in either order, then `extra` ranks in
 * neither; a global shape that both sides' shard counts divide.  Returns the world size. */
static uint32_t random_pair(ncclx_m2n_side_t *src, ncclx_m2n_side_t *dst, uint32_t extra)
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

static void test_random_cases(void **state)
{
    (void)state;
    for (int n = 0; n < 600; n++) {
        ncclx_m2n_side_t src, dst;
        const uint32_t world = random_pair(&src, &dst, below(3));
        check_case(&src, &dst, world);
    }
}

/* The model-shaped patterns: TP2 x DP2 (shard dim 0 or 1) to TP1 x DP16 replicas, experts
 * EP16 on dim 0 to TP8 (dim 1 or 2) x DP2, and the same with the destination first. */
static void test_model_patterns(void **state)
{
    (void)state;
    ncclx_m2n_side_t src, dst;
    for (int32_t dim = 0; dim < 2; dim++) {
        memset(&src, 0, sizeof(src));
        memset(&dst, 0, sizeof(dst));
        src = (ncclx_m2n_side_t){2, {64, 40, 0}, 2, {2, {2, 2}, 0}, {NCCLX_M2N_REPLICATE, dim}};
        src.local_shape[dim] /= 2;
        dst = (ncclx_m2n_side_t){
            2, {64, 40, 0}, 2, {2, {16, 1}, 4}, {NCCLX_M2N_REPLICATE, NCCLX_M2N_REPLICATE}};
        check_case(&src, &dst, 20);
    }
    for (int32_t dim = 1; dim < 3; dim++) {
        src = (ncclx_m2n_side_t){3, {1, 16, 24}, 1, {1, {16, 0}, 16}, {0, NCCLX_M2N_REPLICATE}};
        dst = (ncclx_m2n_side_t){3, {16, 16, 24}, 1, {2, {2, 8}, 0}, {NCCLX_M2N_REPLICATE, dim}};
        dst.local_shape[dim] /= 8;
        check_case(&src, &dst, 32);
    }
}

/* Fewer sources than destinations: contiguous blocks, sizes differing by at most one, every
 * source used.  More sources: one distinct source per destination, in order. */
static void test_server_balance(void **state)
{
    (void)state;
    for (uint32_t rs = 1; rs <= 24; rs++) {
        for (uint32_t rd = 1; rd <= 24; rd++) {
            uint32_t count[24] = {0}, prev = 0;
            for (uint32_t q = 0; q < rd; q++) {
                const uint32_t p = ncclx_m2n_server(rs, rd, q);
                assert_true(p < rs);
                assert_true(q == 0 || p >= prev);
                if (rs >= rd) {
                    assert_true(q == 0 || p > prev);
                }
                count[p]++;
                prev = p;
            }
            if (rs <= rd) {
                for (uint32_t p = 0; p < rs; p++) {
                    assert_true(count[p] == rd / rs || count[p] == rd / rs + 1);
                }
            }
        }
    }
    assert_int_equal(ncclx_m2n_server(2, 5, 2), 0); /* blocks {0,1,2} {3,4} */
    assert_int_equal(ncclx_m2n_server(2, 5, 3), 1);
    assert_int_equal(ncclx_m2n_server(5, 2, 1), 3); /* blocks {0,1,2} {3,4} */
}

/* One broken field of a valid side (ok in test_refusals) each. */
static void m_ndims(ncclx_m2n_side_t *s)
{
    s->ndims = 4;
}
static void m_elem(ncclx_m2n_side_t *s)
{
    s->elem_bytes = 3;
}
static void m_mesh_ndims(ncclx_m2n_side_t *s)
{
    s->mesh.ndims = 3;
}
static void m_mesh_dim(ncclx_m2n_side_t *s)
{
    s->mesh.dims[1] = 0;
}
static void m_start(ncclx_m2n_side_t *s)
{
    s->mesh.start_rank = 5;
}
static void m_place_dim(ncclx_m2n_side_t *s)
{
    s->placements[1] = 2;
}
static void m_place_neg(ncclx_m2n_side_t *s)
{
    s->placements[1] = -3;
}
static void m_two_shards(ncclx_m2n_side_t *s)
{
    s->placements[0] = 1;
}
static void m_shape_zero(ncclx_m2n_side_t *s)
{
    s->local_shape[1] = 0;
}
static void m_shape_huge(ncclx_m2n_side_t *s)
{
    s->local_shape[0] = 1ull << 61;
}

static const struct {
    void (*mutate)(ncclx_m2n_side_t *s);
    const char *what, *needle;
} side_refusals[] = {
    {m_ndims, "src", "src.ndims=4: must be 1, 2 or 3"},
    {m_elem, "src", "src: an element of 3 bytes"},
    {m_mesh_ndims, "src", "src.mesh.ndims=3: must be 1 or 2"},
    {m_mesh_dim, "src", "src.mesh.dims[1]=0"},
    {m_start, "dst", "dst.mesh: ranks [5, 9) lie past the context's 8 ranks"},
    {m_place_dim, "src", "src.placements[1]=2: must be NCCLX_M2N_REPLICATE (-1) or a tensor dim"},
    {m_place_neg, "src", "src.placements[1]=-3"},
    {m_two_shards, "src", "src.placements[1]=0: a second shard axis"},
    {m_shape_zero, "src", "src.local_shape[1]=0"},
    {m_shape_huge, "src", "src.local_shape: the global tensor reaches 2^62 bytes"},
};

/* Every refusal names its field. */
static void test_refusals(void **state)
{
    (void)state;
    ncclx_m2n_geom_t g, g2;
    const ncclx_m2n_side_t ok = {2, {8, 16, 0}, 2, {2, {2, 2}, 0}, {NCCLX_M2N_REPLICATE, 0}};
    ncclx_m2n_side_t s = ok, d;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 8, &g));
    assert_int_equal(g.shards, 2);
    assert_int_equal(g.replicas, 2);
    assert_int_equal(g.global[0], 16);
    assert_int_equal(g.global[1], 32);
    for (size_t c = 0; c < sizeof(side_refusals) / sizeof(side_refusals[0]); c++) {
        s = ok;
        side_refusals[c].mutate(&s);
        assert_ncclx_error(ncclx_m2n_geom(&s, side_refusals[c].what, 8, &g), ncclxInvalidArgument,
                           side_refusals[c].needle);
    }
    /* Pairs. */
    s = ok;
    d = ok;
    d.mesh.start_rank = 4;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 8, &g));
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_ok(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8));
    d.mesh.start_rank = 3;
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst.mesh ranks [3, 7) overlap src.mesh ranks [0, 4)");
    d = ok;
    d.mesh.start_rank = 4;
    d.placements[1] = 1; /* shards dim 1 now: global dim 1 doubles */
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst.local_shape[0]=8 gives a global dim 0 of 8 elements, "
                       "src.local_shape[0]=8 gives 16");
    d = ok;
    d.mesh.start_rank = 4;
    d.elem_bytes = 4;
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst: elements of 4 bytes, src of 2");
    /* Staging too small for rounds of 16 bytes: refused, naming the plan field. */
    {
        ncclx_m2n_edge_t scratch[8];
        ncclx_m2n_xfer_t xf[8];
        uint32_t n = 99;
        s = ok;
        d = ok;
        d.mesh.start_rank = 4;
        assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 8, &g));
        assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
        assert_ncclx_error(ncclx_m2n_transfers(&g, &g2, 4, 16, 16, "plan.m2n_staging_bytes",
                                               scratch, xf, 8, "cap", &n),
                           ncclxResourceExhausted,
                           "plan.m2n_staging_bytes=16: destination shard 0 receives from 1 "
                           "source shards");
        assert_int_equal(n, 99);
        assert_ncclx_ok(ncclx_m2n_transfers(&g, &g2, 4, 32, 16, "plan.m2n_staging_bytes", scratch,
                                            xf, 8, "cap", &n));
        assert_int_equal(n, 1);
        assert_int_equal(xf[0].chunk, 16);
        assert_int_equal(xf[0].rounds, g2.local_bytes / 16);
    }
    /* One rank in all: a self copy is allowed. */
    s = (ncclx_m2n_side_t){1, {10, 0, 0}, 8, {1, {1, 0}, 0}, {NCCLX_M2N_REPLICATE, 0}};
    check_case(&s, &s, 1);
}

/* The byte at global coordinates g (the last in bytes). */
static uint8_t value_at(const uint64_t *g, uint32_t ndims)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t d = 0; d < ndims; d++) {
        h = (h ^ g[d]) * 0xff51afd7ed558ccdull;
    }
    return (uint8_t)(h >> 56);
}

static void fill_tile(const ncclx_m2n_geom_t *g, uint32_t shard, uint8_t *tile)
{
    uint64_t c[3];
    for (uint64_t o = 0; o < g->local_bytes; o++) {
        global_of(g, shard, o, c);
        tile[o] = value_at(c, g->ndims);
    }
}

/* Moves one random case through staging in rounds (staging of 32 x source shards << scale
 * bytes), as the GPU will: every destination's edges
 * get a slice of `staging` bytes in two halves; round k of an edge packs its bytes [k chunk,
 * (k + 1) chunk) from the source tile into half k % 2, and the destination unpacks them.  The
 * destination tiles (poisoned first) must then hold the values of their global coordinates,
 * every byte written once. */
static uint64_t staged_rounds_max; /* the most rounds any destination took */

/* The send that matches receive x of rank r (from source rank x->peer) (same box), which must agree
 * on slot, chunk and rounds. */
static const ncclx_m2n_xfer_t *matching_send(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                             uint32_t r, const ncclx_m2n_xfer_t *x,
                                             uint64_t staging, ncclx_m2n_xfer_t *sends)
{
    static ncclx_m2n_edge_t scratch[256];
    uint32_t n = 0;
    const ncclx_m2n_xfer_t *found = NULL;
    assert_ncclx_ok(ncclx_m2n_transfers(s, d, x->peer, staging, 16, "plan.m2n_staging_bytes",
                                        scratch, sends, 256, "cap", &n));
    for (uint32_t f = 0; f < n; f++) {
        if (sends[f].send && sends[f].peer == r &&
            memcmp(&sends[f].box, &x->box, sizeof(x->box)) == 0) {
            assert_null(found);
            found = &sends[f];
        }
    }
    assert_non_null(found);
    assert_int_equal(found->slot, x->slot);
    assert_int_equal(found->chunk, x->chunk);
    assert_int_equal(found->rounds, x->rounds);
    return found;
}

/* Packs (or unpacks) round k of a transfer between a tile and its slice half. */
static void move_round(const ncclx_m2n_xfer_t *x, uint64_t k, uint8_t *half, uint8_t *tile,
                       int unpack, uint8_t *writes)
{
    const ncclx_m2n_box_t *b = &x->box;
    const uint64_t lo = k * x->chunk, hi = lo + x->chunk < b->bytes ? lo + x->chunk : b->bytes;
    for (uint64_t pos = lo; pos < hi;) {
        uint64_t so, dof, run;
        ncclx_m2n_box_locate(b, pos, &so, &dof, &run);
        run = run < hi - pos ? run : hi - pos;
        if (unpack) {
            memcpy(tile + dof, half + (pos - lo), run);
            for (uint64_t y = 0; y < run; y++) {
                writes[dof + y]++;
            }
        } else {
            memcpy(half + (pos - lo), tile + so, run);
        }
        pos += run;
    }
}

/* Moves one random case through staging in rounds (staging of 32 x source shards << scale
 * bytes), as the GPU will: each source packs round k
 * of its send into half k % 2 of its slot's slice in the destination's staging (the slot and
 * chunk of its own transfer list), and the destination unpacks it with its receive.  The
 * destination tiles (poisoned first) must then hold the values of their global coordinates,
 * every byte written once. */
static void run_staged(const ncclx_m2n_side_t *src, const ncclx_m2n_side_t *dst, uint32_t world,
                       uint32_t scale)
{
    enum { CAP = 256 };
    static ncclx_m2n_edge_t scratch[CAP];
    static ncclx_m2n_xfer_t recvs[CAP], sends[CAP];
    ncclx_m2n_geom_t s, d;
    uint32_t n = 0;
    assert_ncclx_ok(ncclx_m2n_geom(src, "src", world, &s));
    assert_ncclx_ok(ncclx_m2n_geom(dst, "dst", world, &d));
    /* Rounds of 16 << scale bytes or more with every source shard sending to one destination. */
    const uint64_t staging = (uint64_t)32 * s.shards << scale;
    uint8_t *src_tiles = malloc(s.shards * s.local_bytes), *tile = malloc(d.local_bytes);
    uint8_t *want = malloc(d.local_bytes), *writes = malloc(d.local_bytes);
    uint8_t *area = malloc(staging);
    assert_true(src_tiles != NULL && tile != NULL && want != NULL && writes != NULL &&
                area != NULL);
    for (uint32_t i = 0; i < s.shards; i++) {
        fill_tile(&s, i, src_tiles + (size_t)i * s.local_bytes);
    }
    for (uint32_t r = 0; r < world; r++) {
        uint32_t j, q;
        uint64_t rounds = 0;
        if (!ncclx_m2n_position(&d, r, &j, &q)) {
            continue;
        }
        assert_ncclx_ok(ncclx_m2n_transfers(&s, &d, r, staging, 16, "plan.m2n_staging_bytes",
                                            scratch, recvs, CAP, "cap", &n));
        fill_tile(&d, j, want);
        memset(tile, 0xa5, d.local_bytes);
        memset(writes, 0, d.local_bytes);
        memset(area, 0x5a, staging);
        for (uint32_t e = 0; e < n; e++) {
            assert_false(recvs[e].send);
            assert_true(ncclx_m2n_slice_offset(recvs[e].chunk, recvs[e].slot, 1) + recvs[e].chunk <=
                        staging);
            rounds = recvs[e].rounds > rounds ? recvs[e].rounds : rounds;
        }
        staged_rounds_max = rounds > staged_rounds_max ? rounds : staged_rounds_max;
        for (uint64_t k = 0; k < rounds; k++) {
            for (uint32_t e = 0; e < n; e++) {
                const ncclx_m2n_xfer_t *x = &recvs[e];
                if (k >= x->rounds) {
                    continue; /* this edge is done */
                }
                const ncclx_m2n_xfer_t *out = matching_send(&s, &d, r, x, staging, sends);
                uint8_t *src_tile = src_tiles + (size_t)out->box.src_shard * s.local_bytes;
                move_round(out, k,
                           area + ncclx_m2n_slice_offset(out->chunk, out->slot, (uint32_t)(k % 2)),
                           src_tile, 0, NULL);
                move_round(x, k,
                           area + ncclx_m2n_slice_offset(x->chunk, x->slot, (uint32_t)(k % 2)),
                           tile, 1, writes);
            }
        }
        for (uint64_t x = 0; x < d.local_bytes; x++) {
            if (writes[x] != 1 || tile[x] != want[x]) {
                fail_msg("rank %u byte %llu: written %u times, 0x%02x, want 0x%02x (staging %llu)",
                         r, (unsigned long long)x, writes[x], tile[x], want[x],
                         (unsigned long long)staging);
            }
        }
    }
    free(area);
    free(writes);
    free(want);
    free(tile);
    free(src_tiles);
}

static void test_staged_rounds(void **state)
{
    (void)state;
    assert_int_equal(ncclx_m2n_chunk_bytes(1000, 3, 16), 160); /* 1000 / 3 / 2 = 166 -> 160 */
    assert_int_equal(ncclx_m2n_chunk_bytes(1000, 3, 256), 0);
    assert_int_equal(ncclx_m2n_chunk_bytes(1000, 0, 16), 0);
    assert_int_equal(ncclx_m2n_rounds(0, 64), 1);
    assert_int_equal(ncclx_m2n_rounds(129, 64), 3);
    for (int n = 0; n < 200; n++) {
        ncclx_m2n_side_t src, dst;
        const uint32_t world = random_pair(&src, &dst, 0);
        /* From a budget that forces many rounds to one that takes every edge at once. */
        run_staged(&src, &dst, world, below(8));
    }
    assert_true(staged_rounds_max >= 4); /* some edges did take several rounds (7 here) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_cases),   cmocka_unit_test(test_model_patterns),
        cmocka_unit_test(test_server_balance), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_staged_rounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
