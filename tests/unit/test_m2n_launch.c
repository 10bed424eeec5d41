/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N launches (groups of reshards): every rank's launch plan (ncclx_m2n_plan_rank) is checked
 * against its peers' and run on the CPU as kernels/m2n.cu runs it, rounds through rings of
 * slices, until every destination byte holds its global value; the per-rank transfer bound is
 * exact; launches past the per-launch arrays are refused, naming the bound.
 */
#include "m2n_plan_fixture.h"

/* ---- Launches: ncclx_m2n_plan_rank against a CPU run of the kernel's protocol ---- */

/* kernels/m2n.h's NCCLX_M2N_DEPTH (that header needs the CUDA runtime, which this GPU-free test
 * does without): the slices of a source's ring at a destination. */
#define SIM_DEPTH 4u

enum { SIM_WORLD = 12, SIM_GROUP = 6, NUM_BUDGETS = 6, NUM_CHUNKS = 3 };

/* Grids from below the self copy's two blocks to more blocks than any pair count here. */
static const uint32_t budgets[NUM_BUDGETS] = {1, 2, 3, 8, 33, 132};
/* One 16-byte unit, a size that is no power of two, and rounds that take most pairs at once. */
static const uint64_t chunks[NUM_CHUNKS] = {16, 48, 4096};

/* One launch: n reshards on a context of world ranks. */
typedef struct {
    uint32_t world, n;
    ncclx_m2n_side_t src[SIM_GROUP], dst[SIM_GROUP];
    ncclx_m2n_geom_t s[SIM_GROUP], d[SIM_GROUP];
} launch_t;

/* Every rank's tiles of every tensor of a launch (NULL off the mesh), and how many times each
 * destination byte was written. */
typedef struct {
    uint8_t *src[SIM_WORLD][SIM_GROUP], *dst[SIM_WORLD][SIM_GROUP];
    uint8_t *writes[SIM_WORLD][SIM_GROUP];
} tiles_t;

/* Every rank's plan of the launch for each budget. */
static ncclx_m2n_rank_plan_t plans[NUM_BUDGETS][SIM_WORLD];
static ncclx_m2n_edge_t plan_scratch[NCCLX_M2N_MAX_TRANSFERS];
static uint64_t sim_rounds_max; /* the most rounds a pair took with 16-byte rounds */

/* A random valid reshard whose meshes fit a context of world ranks, at random disjoint places;
 * both on rank 0 when world is 1 (a self copy). */
static void random_in_world(ncclx_m2n_side_t *src, ncclx_m2n_side_t *dst, uint32_t world)
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

/* 1 to SIM_GROUP random reshards on 1 to SIM_WORLD ranks (one in eight: a one-rank context). */
static void random_launch(launch_t *l)
{
    memset(l, 0, sizeof(*l));
    l->world = below(8) == 0 ? 1 : 2 + below(SIM_WORLD - 1);
    l->n = 1 + below(SIM_GROUP);
    for (uint32_t e = 0; e < l->n; e++) {
        random_in_world(&l->src[e], &l->dst[e], l->world);
        assert_ncclx_ok(ncclx_m2n_geom(&l->src[e], "src", l->world, &l->s[e]));
        assert_ncclx_ok(ncclx_m2n_geom(&l->dst[e], "dst", l->world, &l->d[e]));
        assert_ncclx_ok(ncclx_m2n_check_pair(&l->src[e], &l->s[e], &l->dst[e], &l->d[e], l->world));
    }
}

/* The global byte index (row-major over the global shape) of byte `offset` of shard `shard`'s
 * tile on g. */
static uint64_t global_index(const ncclx_m2n_geom_t *g, uint32_t shard, uint64_t offset)
{
    uint64_t c[3], x = 0;
    global_of(g, shard, offset, c);
    for (uint32_t k = 0; k < g->ndims; k++) {
        x = x * g->global[k] + c[k];
    }
    return x;
}

/* The byte of tensor e at global byte index x: differs between tensors, so that a box applied
 * to the wrong tensor's tile shows. */
static uint8_t tensor_byte(uint32_t e, uint64_t x)
{
    uint64_t h = (x + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(e + 1) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint8_t)h;
}

static void tiles_alloc(const launch_t *l, tiles_t *t)
{
    memset(t, 0, sizeof(*t));
    for (uint32_t r = 0; r < l->world; r++) {
        for (uint32_t e = 0; e < l->n; e++) {
            uint32_t shard, replica;
            if (ncclx_m2n_position(&l->s[e], r, &shard, &replica)) {
                t->src[r][e] = malloc(l->s[e].local_bytes);
                assert_non_null(t->src[r][e]);
                for (uint64_t o = 0; o < l->s[e].local_bytes; o++) {
                    t->src[r][e][o] = tensor_byte(e, global_index(&l->s[e], shard, o));
                }
            }
            if (ncclx_m2n_position(&l->d[e], r, &shard, &replica)) {
                t->dst[r][e] = malloc(l->d[e].local_bytes);
                t->writes[r][e] = malloc(l->d[e].local_bytes);
                assert_non_null(t->dst[r][e]);
                assert_non_null(t->writes[r][e]);
            }
        }
    }
}

static void tiles_free(const launch_t *l, tiles_t *t)
{
    for (uint32_t r = 0; r < l->world; r++) {
        for (uint32_t e = 0; e < l->n; e++) {
            free(t->src[r][e]);
            free(t->dst[r][e]);
            free(t->writes[r][e]);
        }
    }
}

/* Sort key of a pair, recomputed here: (source, destination), a self copy's send first. */
static uint64_t sim_pair_key(const ncclx_m2n_pair_t *p, uint32_t rank)
{
    const uint64_t src = p->send ? rank : p->peer, dst = p->send ? p->peer : rank;
    return (src << 33) | (dst << 1) | (p->send ? 0u : 1u);
}

/* The pair (peer, send) of rank plan p: its index, or fails. */
static uint32_t pair_of(const ncclx_m2n_rank_plan_t *p, uint32_t peer, uint32_t send)
{
    for (uint32_t k = 0; k < p->num_pairs; k++) {
        if (p->pairs[k].peer == peer && p->pairs[k].send == send) {
            return k;
        }
    }
    fail_msg("no pair (peer %u, send %u) in a plan of %u pairs", peer, send, p->num_pairs);
    return 0;
}

/* Pairs in key order with their boxes in prefix order; boxes 16-byte aligned, disjoint, in
 * tensor order and inside their tiles; the stream ends with its last box; the blocks as
 * documented for this budget; as many boxes as the schedules have edges, no more than the
 * launch bound that lib/m2n.c cuts groups by. */
static void check_rank_plan(const launch_t *l, const ncclx_m2n_rank_plan_t *p, uint32_t rank,
                            uint32_t budget)
{
    const uint32_t grid = budget < 2 ? 2 : budget;
    uint32_t edges = 0, bound = 0, first = 0, blocks = 0;
    for (uint32_t e = 0; e < l->n; e++) {
        ncclx_m2n_schedule_t w;
        assert_ncclx_ok(ncclx_m2n_schedule(&l->s[e], &l->d[e], rank, plan_scratch,
                                           NCCLX_M2N_MAX_TRANSFERS, "cap", &w));
        edges += w.num_edges;
        bound += ncclx_m2n_transfer_bound(&l->s[e], &l->d[e]);
    }
    assert_int_equal(p->num_boxes, edges);
    assert_true(p->num_boxes <= bound);
    assert_true(p->num_pairs <= p->num_boxes && p->num_pairs <= NCCLX_M2N_MAX_PEERS);
    for (uint32_t k = 0; k < p->num_pairs; k++) {
        const ncclx_m2n_pair_t *pr = &p->pairs[k];
        uint64_t end = 0;
        assert_true(pr->peer < l->world);
        assert_true(pr->send <= 1);
        assert_true(pr->peer != rank || l->world == 1);
        if (k > 0) {
            assert_true(sim_pair_key(&p->pairs[k - 1], rank) < sim_pair_key(pr, rank));
        }
        assert_int_equal(pr->first_box, first);
        assert_true(pr->num_boxes >= 1);
        first += pr->num_boxes;
        for (uint32_t b = pr->first_box; b < pr->first_box + pr->num_boxes; b++) {
            const ncclx_m2n_run_t *x = &p->boxes[b];
            const ncclx_m2n_geom_t *g = pr->send ? &l->s[x->entry] : &l->d[x->entry];
            assert_true(x->entry < l->n);
            assert_true(b == pr->first_box || x->entry > p->boxes[b - 1].entry);
            assert_int_equal(x->begin % 16, 0);
            assert_true(x->begin >= end);
            assert_true(x->run >= 1 && x->pieces[0] >= 1 && x->pieces[1] >= 1);
            assert_int_equal(x->bytes, x->run * x->pieces[0] * x->pieces[1]);
            assert_true(x->offset + (x->pieces[0] - 1) * x->stride[0] +
                            (x->pieces[1] - 1) * x->stride[1] + x->run <=
                        g->local_bytes);
            end = x->begin + x->bytes;
        }
        assert_int_equal(pr->bytes, end);
    }
    assert_int_equal(first, p->num_boxes);
    if (p->num_pairs == 0) {
        assert_int_equal(p->blocks, 1); /* the vote still runs */
    } else if (p->num_pairs <= grid) {
        for (uint32_t k = 0; k < p->num_pairs; k++) {
            assert_true(p->pairs[k].blocks >= 1);
            assert_int_equal(p->pairs[k].first_block, blocks);
            blocks += p->pairs[k].blocks;
        }
        assert_true(blocks <= grid);
        assert_int_equal(p->blocks, blocks);
    } else {
        assert_int_equal(p->blocks, grid);
        for (uint32_t k = 0; k < p->num_pairs; k++) {
            assert_int_equal(p->pairs[k].blocks, 1);
            assert_int_equal(p->pairs[k].first_block, k % grid);
        }
    }
}

/* The budget changes the blocks only. */
static void check_same_but_blocks(const ncclx_m2n_rank_plan_t *a, const ncclx_m2n_rank_plan_t *b)
{
    assert_int_equal(a->num_pairs, b->num_pairs);
    assert_int_equal(a->num_boxes, b->num_boxes);
    for (uint32_t k = 0; k < a->num_pairs; k++) {
        assert_int_equal(a->pairs[k].peer, b->pairs[k].peer);
        assert_int_equal(a->pairs[k].send, b->pairs[k].send);
        assert_int_equal(a->pairs[k].first_box, b->pairs[k].first_box);
        assert_int_equal(a->pairs[k].num_boxes, b->pairs[k].num_boxes);
        assert_int_equal(a->pairs[k].bytes, b->pairs[k].bytes);
    }
    assert_memory_equal(a->boxes, b->boxes, a->num_boxes * sizeof(a->boxes[0]));
}

/* Both ends of every pair list the same stream: a send of rank r to q is a receive of q from
 * r (and back), with as many boxes, the same length, and box by box the same tensor, place
 * in the stream and shape (each end with its own tile's offset and strides). */
static void check_ends_agree(const launch_t *l, const ncclx_m2n_rank_plan_t *p)
{
    for (uint32_t r = 0; r < l->world; r++) {
        for (uint32_t k = 0; k < p[r].num_pairs; k++) {
            const ncclx_m2n_pair_t *a = &p[r].pairs[k];
            const ncclx_m2n_rank_plan_t *o = &p[a->peer];
            const ncclx_m2n_pair_t *b = &o->pairs[pair_of(o, r, !a->send)];
            assert_int_equal(a->num_boxes, b->num_boxes);
            assert_int_equal(a->bytes, b->bytes);
            for (uint32_t x = 0; x < a->num_boxes; x++) {
                const ncclx_m2n_run_t *u = &p[r].boxes[a->first_box + x];
                const ncclx_m2n_run_t *v = &o->boxes[b->first_box + x];
                assert_int_equal(u->entry, v->entry);
                assert_int_equal(u->begin, v->begin);
                assert_int_equal(u->bytes, v->bytes);
                assert_int_equal(u->run, v->run);
                assert_int_equal(u->pieces[0], v->pieces[0]);
                assert_int_equal(u->pieces[1], v->pieces[1]);
            }
        }
    }
}

/* kernels/m2n.cu move_span: stream bytes [s0, s1) of pair pr of rank's plan p between its
 * boxes' tiles and `slice` (which holds stream byte s_base at its start), piece by piece;
 * packs when the pair sends, unpacks (counting the writes) when it receives. */
static void sim_move_span(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                          uint32_t rank, const ncclx_m2n_pair_t *pr, uint64_t s0, uint64_t s1,
                          uint8_t *slice, uint64_t s_base, uint64_t chunk)
{
    for (uint32_t bi = pr->first_box; bi < pr->first_box + pr->num_boxes; bi++) {
        const ncclx_m2n_run_t *b = &p->boxes[bi];
        const uint64_t lo = s0 > b->begin ? s0 : b->begin;
        const uint64_t hi = s1 < b->begin + b->bytes ? s1 : b->begin + b->bytes;
        if (lo >= hi) {
            continue;
        }
        const uint64_t p0 = lo - b->begin, p1 = hi - b->begin;
        const uint64_t k0 = p0 / b->run, k1 = (p1 - 1) / b->run;
        const uint64_t size = pr->send ? l->s[b->entry].local_bytes : l->d[b->entry].local_bytes;
        uint8_t *tile = pr->send ? t->src[rank][b->entry] : t->dst[rank][b->entry];
        assert_non_null(tile);
        for (uint64_t k = k0; k <= k1; k++) {
            const uint64_t from = k == k0 ? p0 : k * b->run;
            const uint64_t to = k == k1 ? p1 : (k + 1) * b->run;
            const uint64_t a1 = k % b->pieces[1], a0 = k / b->pieces[1];
            const uint64_t at =
                b->offset + a0 * b->stride[0] + a1 * b->stride[1] + (from - k * b->run);
            const uint64_t in = b->begin + from - s_base;
            assert_true(at + (to - from) <= size);
            assert_true(in + (to - from) <= chunk);
            if (pr->send) {
                memcpy(slice + in, tile + at, to - from);
            } else {
                memcpy(tile + at, slice + in, to - from);
                for (uint64_t y = 0; y < to - from; y++) {
                    t->writes[rank][b->entry][at + y]++;
                }
            }
        }
    }
}

/* kernels/m2n.cu move_pair, round j: the pair's blocks each move their 16-byte-unit share. */
static void sim_move_round(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                           uint32_t rank, const ncclx_m2n_pair_t *pr, uint64_t j, uint64_t chunk,
                           uint8_t *slice)
{
    const uint64_t lo = j * chunk, len = pr->bytes - lo < chunk ? pr->bytes - lo : chunk;
    const uint64_t units = (len + 15) / 16;
    for (uint64_t part = 0; part < pr->blocks; part++) {
        const uint64_t b0 = units * part / pr->blocks * 16;
        const uint64_t b1e = units * (part + 1) / pr->blocks * 16, b1 = b1e < len ? b1e : len;
        if (b0 < b1) {
            sim_move_span(l, t, p, rank, pr, lo + b0, lo + b1, slice, lo, chunk);
        }
    }
}

/* Runs the launch with rounds of `chunk` bytes.  Per destination, in waves: every source packs
 * its next SIM_DEPTH rounds into its ring (the most it may run ahead), then the destination
 * unpacks them all; a slice shared by two rounds in flight, or by two sources, would show as
 * a wrong byte.  Then every destination byte holds its global value, written once, and the
 * sources are untouched. */
static void run_launch(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                       uint64_t chunk)
{
    const uint64_t ring = (uint64_t)l->world * SIM_DEPTH * chunk;
    uint8_t *staging = malloc(ring);
    assert_non_null(staging);
    for (uint32_t r = 0; r < l->world; r++) {
        for (uint32_t e = 0; e < l->n; e++) {
            if (t->dst[r][e] != NULL) {
                memset(t->dst[r][e], 0xa5, l->d[e].local_bytes);
                memset(t->writes[r][e], 0, l->d[e].local_bytes);
            }
        }
    }
    for (uint32_t r = 0; r < l->world; r++) {
        memset(staging, 0x5a, ring);
        for (uint64_t wave = 0, more = 1; more; wave++) {
            more = 0;
            for (int unpack = 0; unpack < 2; unpack++) {
                for (uint32_t k = 0; k < p[r].num_pairs; k++) {
                    const ncclx_m2n_pair_t *in = &p[r].pairs[k];
                    if (in->send) {
                        continue;
                    }
                    const uint32_t from = in->peer;
                    const ncclx_m2n_pair_t *out = &p[from].pairs[pair_of(&p[from], r, 1)];
                    const uint64_t rounds = (in->bytes + chunk - 1) / chunk;
                    if (chunk == 16 && rounds > sim_rounds_max) {
                        sim_rounds_max = rounds;
                    }
                    for (uint64_t j = wave * SIM_DEPTH; j < rounds && j < (wave + 1) * SIM_DEPTH;
                         j++) {
                        uint8_t *slice =
                            staging + ((uint64_t)from * SIM_DEPTH + j % SIM_DEPTH) * chunk;
                        if (unpack) {
                            sim_move_round(l, t, &p[r], r, in, j, chunk, slice);
                        } else {
                            sim_move_round(l, t, &p[from], from, out, j, chunk, slice);
                        }
                        more |= j + 1 < rounds;
                    }
                }
            }
        }
    }
    free(staging);
    for (uint32_t r = 0; r < l->world; r++) {
        for (uint32_t e = 0; e < l->n; e++) {
            uint32_t shard, replica;
            if (ncclx_m2n_position(&l->s[e], r, &shard, &replica)) {
                for (uint64_t o = 0; o < l->s[e].local_bytes; o++) {
                    assert_int_equal(t->src[r][e][o],
                                     tensor_byte(e, global_index(&l->s[e], shard, o)));
                }
            }
            if (!ncclx_m2n_position(&l->d[e], r, &shard, &replica)) {
                continue;
            }
            for (uint64_t o = 0; o < l->d[e].local_bytes; o++) {
                const uint8_t want = tensor_byte(e, global_index(&l->d[e], shard, o));
                if (t->writes[r][e][o] != 1 || t->dst[r][e][o] != want) {
                    fail_msg("rank %u tensor %u of %u byte %llu: written %u times, 0x%02x, want "
                             "0x%02x (world %u, chunk %llu)",
                             r, e, l->n, (unsigned long long)o, t->writes[r][e][o], t->dst[r][e][o],
                             want, l->world, (unsigned long long)chunk);
                }
            }
        }
    }
}

/* Random launches: every rank's plan for every budget checked on its own and against its
 * peers', then the whole launch run through simulated rings with three round sizes (each
 * with another budget's blocks). */
static void test_launch_protocol(void **state)
{
    (void)state;
    for (int it = 0; it < 300; it++) {
        launch_t l;
        tiles_t t;
        random_launch(&l);
        for (uint32_t b = 0; b < NUM_BUDGETS; b++) {
            for (uint32_t r = 0; r < l.world; r++) {
                assert_ncclx_ok(ncclx_m2n_plan_rank(l.s, l.d, l.n, r, l.world, budgets[b],
                                                    plan_scratch, &plans[b][r]));
                check_rank_plan(&l, &plans[b][r], r, budgets[b]);
                if (b > 0) {
                    check_same_but_blocks(&plans[0][r], &plans[b][r]);
                }
            }
        }
        check_ends_agree(&l, plans[0]);
        tiles_alloc(&l, &t);
        for (uint32_t c = 0; c < NUM_CHUNKS; c++) {
            run_launch(&l, &t, plans[((uint32_t)it + c) % NUM_BUDGETS], chunks[c]);
        }
        tiles_free(&l, &t);
    }
    assert_true(sim_rounds_max > 2 * SIM_DEPTH); /* rings were reused, several times over */
}

/* A side of the tests below: a 1-dim tensor of 64 bytes on ranks [start, start + dims[0]),
 * replicated or sharded. */
static ncclx_m2n_side_t line_side(uint32_t start, uint32_t ranks, int shard)
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

/* The most edges any rank has, and the most sends and receives. */
static uint32_t worst_rank(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t world,
                           uint32_t *sends, uint32_t *recvs)
{
    uint32_t worst = 0;
    *sends = *recvs = 0;
    for (uint32_t r = 0; r < world; r++) {
        ncclx_m2n_schedule_t w;
        assert_ncclx_ok(
            ncclx_m2n_schedule(s, d, r, plan_scratch, NCCLX_M2N_MAX_TRANSFERS, "cap", &w));
        worst = w.num_edges > worst ? w.num_edges : worst;
        *sends = w.num_sends > *sends ? w.num_sends : *sends;
        *recvs = w.num_edges - w.num_sends > *recvs ? w.num_edges - w.num_sends : *recvs;
    }
    return worst;
}

/* The bound is exactly the most transfers any rank has (ranks that send and ranks that
 * receive are different ranks, except in a self copy, which has one of each). */
static uint32_t check_bound(const ncclx_m2n_side_t *src, const ncclx_m2n_side_t *dst,
                            uint32_t world, uint32_t *worst)
{
    ncclx_m2n_geom_t s, d;
    uint32_t sends, recvs, bound;
    assert_ncclx_ok(ncclx_m2n_geom(src, "src", world, &s));
    assert_ncclx_ok(ncclx_m2n_geom(dst, "dst", world, &d));
    bound = ncclx_m2n_transfer_bound(&s, &d);
    *worst = worst_rank(&s, &d, world, &sends, &recvs);
    assert_int_equal(bound, *worst);
    assert_true(bound <= sends + recvs);
    return bound;
}

static void test_transfer_bound(void **state)
{
    (void)state;
    uint32_t worst;
    for (int n = 0; n < 600; n++) {
        ncclx_m2n_side_t src, dst;
        const uint32_t world = n % 8 == 0 ? 1 : 2 + below(SIM_WORLD - 1);
        random_in_world(&src, &dst, world);
        (void)check_bound(&src, &dst, world, &worst);
    }
    /* One source replicated to 4: it sends 4 times. */
    {
        const ncclx_m2n_side_t src = line_side(0, 1, 0), dst = line_side(1, 4, 0);
        assert_true(check_bound(&src, &dst, 5, &worst) >= 4);
        assert_int_equal(worst, 4);
    }
    /* Dim 0 cut in 4, then in 2: each destination receives from 2 sources. */
    {
        const ncclx_m2n_side_t src = line_side(0, 4, 1), dst = line_side(4, 2, 1);
        assert_true(check_bound(&src, &dst, 6, &worst) >= 2);
        assert_int_equal(worst, 2);
    }
    /* Cut in 2, then in 4: each source sends to 2 destinations. */
    {
        const ncclx_m2n_side_t src = line_side(0, 2, 1), dst = line_side(2, 4, 1);
        assert_true(check_bound(&src, &dst, 6, &worst) >= 2);
        assert_int_equal(worst, 2);
    }
    /* A self copy: one send and one receive on rank 0. */
    {
        const ncclx_m2n_side_t one = line_side(0, 1, 0);
        assert_int_equal(check_bound(&one, &one, 1, &worst), 2);
        assert_int_equal(worst, 2);
    }
}

/* A launch beyond the per-launch arrays is refused, naming the bound: 33 tensors of one source
 * replicated to 8 (264 sends on the source, 256 fit), and one source replicated to 69 (69 send
 * pairs, 64 fit). */
static void test_plan_rank_refusals(void **state)
{
    (void)state;
    enum { MANY = 33 };
    static ncclx_m2n_geom_t s[MANY], d[MANY];
    static ncclx_m2n_rank_plan_t p;
    ncclx_m2n_side_t src = line_side(0, 1, 0), dst = line_side(1, 8, 0);
    for (uint32_t e = 0; e < MANY; e++) {
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 9, &s[e]));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 9, &d[e]));
    }
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, MANY - 1, 0, 9, 8, plan_scratch, &p));
    assert_int_equal(p.num_boxes, NCCLX_M2N_MAX_TRANSFERS);
    assert_int_equal(p.num_pairs, 8);
    assert_ncclx_error(ncclx_m2n_plan_rank(s, d, MANY, 0, 9, 8, plan_scratch, &p),
                       ncclxResourceExhausted, "NCCLX_M2N_MAX_TRANSFERS");
    /* A destination has one box per tensor: it fits. */
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, MANY, 3, 9, 8, plan_scratch, &p));
    assert_int_equal(p.num_boxes, MANY);
    assert_int_equal(p.num_pairs, 1);

    src = line_side(0, 1, 0);
    dst = line_side(1, 64, 0);
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 65, &s[0]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 65, &d[0]));
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, 1, 0, 65, 8, plan_scratch, &p));
    assert_int_equal(p.num_pairs, NCCLX_M2N_MAX_PEERS); /* exactly full */
    check_rank_plan(&(launch_t){.world = 65, .n = 1, .s = {s[0]}, .d = {d[0]}}, &p, 0, 8);
    dst = line_side(1, 69, 0);
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 70, &s[0]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 70, &d[0]));
    assert_ncclx_error(ncclx_m2n_plan_rank(s, d, 1, 0, 70, 8, plan_scratch, &p),
                       ncclxResourceExhausted, "NCCLX_M2N_MAX_PEERS");
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, 1, 69, 70, 8, plan_scratch, &p));
    assert_int_equal(p.num_pairs, 1);
    assert_int_equal(p.pairs[0].peer, 0);
    assert_int_equal(p.pairs[0].send, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_protocol),
        cmocka_unit_test(test_transfer_bound),
        cmocka_unit_test(test_plan_rank_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
