/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N planner (lib/m2n/m2n_plan.c) against a brute-force check over hundreds of random valid
 * shapes, meshes and placements: for every destination rank, the boxes of every source shard
 * are walked byte by byte; each destination byte must be covered exactly once, and the source
 * byte it comes from must have the same global coordinates (both recomputed here from the
 * local offsets, independently of the planner).  Also the replica assignment's balance and
 * every refusal.  Whole launches are tests/unit/test_m2n_launch.c's.
 */
#include "m2n_plan_fixture.h"

#include "context.h"
#include "m2n_engine.h"
#include "plan_internal.h"

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
        {
            /* bytes is the sum of the edges' bytes, sends (a source's) included. */
            uint64_t sum = 0;
            for (uint32_t e = 0; e < w[r].num_edges; e++) {
                sum += edges[r][e].box.bytes;
            }
            assert_int_equal(w[r].bytes, sum);
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
                        const uint64_t pos = (a0 * b.pieces[1] + a1) * b.run + r;
                        uint64_t gs[3], gd[3], ls, ld, contiguous;
                        assert_true(so < s.local_bytes && dof < d.local_bytes);
                        /* box_locate finds the same bytes from the box position. */
                        ncclx_m2n_box_locate(&b, pos, &ls, &ld, &contiguous);
                        assert_int_equal(ls, so);
                        assert_int_equal(ld, dof);
                        assert_int_equal(contiguous, b.run - r);
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

/* Replicas on the destination's node serve first (ncclx_m2n_serving_replica), for random
 * shapes on nodes of 1, 2, 3 and 4 ranks: every rank's schedule stays whole and consistent
 * (check_schedules), a shard some replica of which is on the destination's node is served from
 * there, and one that no replica on that node holds is served by the block rule's replica. */
static void test_node_aware_replicas(void **state)
{
    (void)state;
    for (int n = 0; n < 300; n++) {
        ncclx_m2n_side_t src, dst;
        ncclx_m2n_geom_t s, d;
        const uint32_t world = random_pair(&src, &dst, below(3));
        const uint32_t node_size = 1 + below(4);
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", world, &s));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", world, &d));
        s.node_size = d.node_size = node_size;
        check_schedules(&s, &d, world);
        for (uint32_t j = 0; j < d.shards; j++) {
            for (uint32_t q = 0; q < d.replicas; q++) {
                const uint32_t node = ncclx_m2n_rank(&d, j, q) / node_size;
                for (uint32_t i = 0; i < s.shards; i++) {
                    const uint32_t p = ncclx_m2n_serving_replica(&s, &d, i, j, q);
                    int near = 0;
                    for (uint32_t x = 0; x < s.replicas; x++) {
                        near |= ncclx_m2n_rank(&s, i, x) / node_size == node;
                    }
                    assert_true(p < s.replicas);
                    if (near) {
                        assert_int_equal(ncclx_m2n_rank(&s, i, p) / node_size, node);
                    } else {
                        assert_int_equal(p, ncclx_m2n_server(s.replicas, d.replicas, q));
                    }
                }
            }
        }
    }
    /* On one domain (node_size = world, as ncclx_m2n_geom sets it) the block rule decides. */
    {
        const ncclx_m2n_side_t src = {1, {64, 0, 0}, 1, {1, {2, 0}, 3}, {NCCLX_M2N_REPLICATE}};
        const ncclx_m2n_side_t dst = {1, {64, 0, 0}, 1, {1, {3, 0}, 5}, {NCCLX_M2N_REPLICATE}};
        ncclx_m2n_geom_t s, d;
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 8, &s));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 8, &d));
        assert_int_equal(d.node_size, 8);
        assert_int_equal(ncclx_m2n_serving_replica(&s, &d, 0, 0, 0), 0);
        assert_int_equal(ncclx_m2n_serving_replica(&s, &d, 0, 0, 1), 0);
        assert_int_equal(ncclx_m2n_serving_replica(&s, &d, 0, 0, 2), 1);
        /* Nodes of 4 (docs/m2n.md): copies on ranks 3 (node 0) and 4 (node 1), replicas on
         * ranks 5-7 (node 1): rank 4 serves all three, nothing crosses. */
        s.node_size = d.node_size = 4;
        for (uint32_t q = 0; q < 3; q++) {
            assert_int_equal(ncclx_m2n_serving_replica(&s, &d, 0, 0, q), 1);
        }
        check_schedules(&s, &d, 8);
    }
    /* Several copies on the destination's node share its replicas: nodes of 8, copies on ranks
     * 4-7 (node 0) and 8-9 (node 1), replicas on ranks 10-15 (node 1).  The block rule gives
     * replica q copy q; the four whose copy is on node 0 take ranks 8 and 9 in turn (q modulo
     * the two near copies), not all the first. */
    {
        const ncclx_m2n_side_t src = {1, {64, 0, 0}, 1, {1, {6, 0}, 4}, {NCCLX_M2N_REPLICATE}};
        const ncclx_m2n_side_t dst = {1, {64, 0, 0}, 1, {1, {6, 0}, 10}, {NCCLX_M2N_REPLICATE}};
        static const uint32_t want[6] = {4, 5, 4, 5, 4, 5};
        ncclx_m2n_geom_t s, d;
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 16, &s));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 16, &d));
        s.node_size = d.node_size = 8;
        for (uint32_t q = 0; q < 6; q++) {
            assert_int_equal(ncclx_m2n_serving_replica(&s, &d, 0, 0, q), want[q]);
        }
        check_schedules(&s, &d, 16);
    }
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
    s->local_shape[0] = (1ull << 61) - 1; /* each dim fits, the product does not */
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
    /* ... and the other way round: any difference, not only a wider destination. */
    d.elem_bytes = 1;
    d.local_shape[1] = 32; /* the same bytes per row: only the element size differs */
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst: elements of 1 bytes, src of 2");
    /* The last dim counts elements in the message (the geometry keeps bytes): 8 against 16. */
    d = ok;
    d.mesh.start_rank = 4;
    d.local_shape[1] = 8;
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst.local_shape[1]=8 gives a global dim 1 of 8 elements, "
                       "src.local_shape[1]=16 gives 16:");
    /* Tensors of different ranks, either one the larger. */
    d = ok;
    d.mesh.start_rank = 4;
    d.ndims = 3;
    d.local_shape[2] = 1;
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 8, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 8), ncclxInvalidArgument,
                       "dst.ndims=3 but src.ndims=2");
    assert_ncclx_error(ncclx_m2n_check_pair(&d, &g2, &s, &g, 8), ncclxInvalidArgument,
                       "dst.ndims=2 but src.ndims=3");
    /* Meshes that share a rank are refused in a context of two ranks already. */
    s = (ncclx_m2n_side_t){1, {16, 0, 0}, 2, {1, {2, 0}, 0}, {NCCLX_M2N_REPLICATE, 0}};
    d = (ncclx_m2n_side_t){1, {16, 0, 0}, 2, {1, {1, 0}, 1}, {NCCLX_M2N_REPLICATE, 0}};
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 2, &g));
    assert_ncclx_ok(ncclx_m2n_geom(&d, "dst", 2, &g2));
    assert_ncclx_error(ncclx_m2n_check_pair(&s, &g, &d, &g2, 2), ncclxInvalidArgument,
                       "dst.mesh ranks [1, 2) overlap src.mesh ranks [0, 2)");
    s.mesh.dims[0] = 1;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 2, &g));
    assert_ncclx_ok(ncclx_m2n_check_pair(&s, &g, &d, &g2, 2));
    /* One rank in all: a self copy is allowed. */
    s = (ncclx_m2n_side_t){1, {10, 0, 0}, 8, {1, {1, 0}, 0}, {NCCLX_M2N_REPLICATE, 0}};
    check_case(&s, &s, 1);
}

/* docs/m2n.md: a tensor stays below 2^62 bytes.  2^62 - 1 bytes pass and exactly 2^62 are
 * refused, whether the bytes come from one dim, from elements of 8 bytes, from shards or from
 * a product of dims. */
static void test_size_boundary(void **state)
{
    (void)state;
    const uint64_t top = 1ull << 62;
    ncclx_m2n_geom_t g;
    /* 2^62 - 1 = 3 * 1537228672809129301: a 2-dim tensor of exactly the largest size. */
    const ncclx_m2n_side_t line = {1, {top - 1, 0, 0}, 1, {1, {1, 0}, 0}, {-1, -1}};
    const ncclx_m2n_side_t rect = {2, {3, (top - 1) / 3, 0}, 1, {1, {1, 0}, 0}, {-1, -1}};
    ncclx_m2n_side_t s = line;
    assert_int_equal(3 * ((top - 1) / 3), top - 1);
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 4, &g));
    assert_int_equal(g.local_bytes, top - 1);
    s.local_shape[0] = top;
    assert_ncclx_error(ncclx_m2n_geom(&s, "src", 4, &g), ncclxInvalidArgument, "2^62");
    s = rect;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "dst", 4, &g));
    assert_int_equal(g.local_bytes, top - 1);
    s.local_shape[0] = 4;
    s.local_shape[1] = top / 4;
    assert_ncclx_error(ncclx_m2n_geom(&s, "dst", 4, &g), ncclxInvalidArgument, "dst.local_shape");
    /* 8-byte elements: 2^59 of them are 2^62 bytes. */
    s = line;
    s.elem_bytes = 8;
    s.local_shape[0] = (top - 1) / 8;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 4, &g));
    s.local_shape[0] = top / 8;
    assert_ncclx_error(ncclx_m2n_geom(&s, "src", 4, &g), ncclxInvalidArgument, "2^62");
    /* Two shards of 2^61 bytes: the global tensor is 2^62. */
    s = line;
    s.mesh.dims[0] = 2;
    s.placements[0] = 0;
    s.local_shape[0] = top / 2;
    assert_ncclx_error(ncclx_m2n_geom(&s, "src", 4, &g), ncclxInvalidArgument, "2^62");
    s.local_shape[0] = top / 2 - 1;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 4, &g));
    assert_int_equal(g.global[0], top - 2);
    /* Eight shards of 2^61 bytes: the local shape alone is refused (each dim is bounded with
     * its shards, so that the global product cannot wrap 64 bits: 8 * 2^61 = 2^64). */
    s.mesh.dims[0] = 8;
    s.local_shape[0] = top / 2;
    assert_ncclx_error(ncclx_m2n_geom(&s, "src", 8, &g), ncclxInvalidArgument,
                       "src.local_shape[0]=2305843009213693952: must be >= 1");
    /* Three dims whose product is 2^62 (each far below it). */
    s = (ncclx_m2n_side_t){3, {1u << 20, 1u << 21, 1u << 21}, 1, {1, {1, 0}, 0}, {-1, -1}};
    assert_ncclx_error(ncclx_m2n_geom(&s, "src", 4, &g), ncclxInvalidArgument, "2^62");
    s.local_shape[2] = (1u << 21) - 1;
    assert_ncclx_ok(ncclx_m2n_geom(&s, "src", 4, &g));
}

/*
 * The same boundary through ncclxM2nReshard, on a CPU-built context (the plan imported and laid
 * out, host classes in host memory, fake bases for the device classes, the engine filled by
 * ncclx_m2n_bind_host) of 300 ranks: the source replicated on rank 0, the destination on ranks
 * 1 .. 257.  That reshard has 257 transfers on rank 0, more than one launch holds, so a tensor
 * that passes the descriptor checks is refused with ncclxResourceExhausted before anything
 * touches the GPU, while one of 2^62 bytes must be refused by the descriptor checks
 * (ncclxInvalidArgument naming the field), on a rank in neither mesh (299) and on members
 * (0: the source, 5: a destination) alike.
 */
enum { BIG_WORLD = 300, BIG_DST = 257 };

static struct ncclxContext *cpu_context(uint32_t ranks, int rank)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_layout_t layout;
    struct ncclxContext *ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    team.num_ranks = team.lsa_size = ranks;
    plan.m2n_staging_bytes = (uint64_t)ranks * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, &ctx->norm));
    ncclx_layout_init_measure(&layout, NULL, NULL);
    assert_ncclx_ok(ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        const size_t bytes = (layout.arena[c].used + 255) / 256 * 256;
        ctx->arenas.bytes[c] = layout.arena[c].used;
        if (c == NCCLX_MEM_HOST || c == NCCLX_MEM_MAPPED_HOST) {
            ctx->arenas.base[c] = aligned_alloc(256, bytes);
            assert_non_null(ctx->arenas.base[c]);
            memset(ctx->arenas.base[c], 0, bytes);
        } else {
            ctx->arenas.base[c] = (void *)(uintptr_t)(0x10000000u * (unsigned)(c + 1));
        }
    }
    ctx->arenas.mapped_device = (void *)(uintptr_t)0x50000000u;
    ctx->rank = rank;
    ctx->m2n = ncclx_m2n_bind_host(ctx);
    assert_non_null(ctx->m2n);
    return ctx;
}

static void cpu_context_free(struct ncclxContext *ctx)
{
    (void)ncclx_m2n_unbind(ctx); /* no event was made: it only forgets the engine */
    free(ctx->arenas.base[NCCLX_MEM_HOST]);
    free(ctx->arenas.base[NCCLX_MEM_MAPPED_HOST]);
    free(ctx);
}

static void test_size_boundary_reshard(void **state)
{
    (void)state;
    const int ranks[] = {BIG_WORLD - 1, 0, 5};
    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
        struct ncclxContext *ctx = cpu_context(BIG_WORLD, ranks[k]);
        ncclxM2nTensor_t src = NCCLX_M2N_TENSOR_INIT, dst = NCCLX_M2N_TENSOR_INIT;
        src.local_shape[0] = dst.local_shape[0] = (1ull << 62) - 1;
        dst.mesh.dims[0] = BIG_DST;
        dst.mesh.start_rank = 1;
        src.data = ranks[k] == 0 ? (void *)(uintptr_t)0x1000 : NULL;
        dst.data = ranks[k] >= 1 && ranks[k] <= BIG_DST ? (void *)(uintptr_t)0x2000 : NULL;
        assert_ncclx_error(ncclxM2nReshard(ctx, &src, &dst, NULL), ncclxResourceExhausted,
                           "up to 257 transfers");
        src.local_shape[0] = dst.local_shape[0] = 1ull << 62;
        assert_ncclx_error(ncclxM2nReshard(ctx, &src, &dst, NULL), ncclxInvalidArgument,
                           "src.local_shape[0]=4611686018427387904");
        cpu_context_free(ctx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_cases),
        cmocka_unit_test(test_model_patterns),
        cmocka_unit_test(test_server_balance),
        cmocka_unit_test(test_node_aware_replicas),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_size_boundary),
        cmocka_unit_test(test_size_boundary_reshard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
