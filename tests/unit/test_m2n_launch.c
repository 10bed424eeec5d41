/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N launches (groups of reshards): every rank's launch plan (ncclx_m2n_plan_rank) is checked
 * against its peers' and run on the CPU as kernels/m2n/m2n.cu runs it, rounds through rings of
 * slices, until every destination byte holds its global value; launches past the per-launch
 * arrays are refused, naming the bound (the transfer bound and direct blocks: test_m2n_bounds.c).
 */
#include "m2n_plan_fixture.h"
#include "m2n_ring.h"

/* ---- Launches: ncclx_m2n_plan_rank against a CPU run of the kernel's protocol ---- */

enum { SIM_WORLD = 12, SIM_GROUP = 6, NUM_BUDGETS = 6, NUM_RINGS = 4 };

/* Grids from below the self copy's two blocks to more blocks than any pair count here. */
static const uint32_t budgets[NUM_BUDGETS] = {1, 2, 3, 8, 33, 132};
/* Ring shapes (slice bytes, channels per source): one 16-byte unit on one channel, a size that
 * is no power of two on channels that do not divide the slices, slices that take most pairs
 * at once, and more channels than most pairs have slices. */
static const struct {
    uint64_t slice;
    uint32_t channels;
} rings[NUM_RINGS] = {{16, 1}, {48, 3}, {4096, 2}, {32, 16}};

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
static uint64_t sim_rounds_max; /* the most rounds a channel took */

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
 * tensor order and inside their tiles; the stream ends with its last box; the channels of the
 * ring (slice, channels); the blocks as documented for this budget, never more than a pair's
 * channels; as many boxes as the schedules have edges, no more than the launch bound that
 * lib/m2n/m2n.c cuts groups by. */
static void check_rank_plan(const launch_t *l, const ncclx_m2n_rank_plan_t *p, uint32_t rank,
                            uint32_t budget, uint64_t slice, uint32_t channels, int direct)
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
            /* Boxes packed tight: each at the first 16-byte boundary after the last. */
            assert_int_equal(x->begin, (end + 15) / 16 * 16);
            assert_true(x->run >= 1 && x->pieces[0] >= 1 && x->pieces[1] >= 1);
            assert_int_equal(x->bytes, x->run * x->pieces[0] * x->pieces[1]);
            assert_true(x->offset + (x->pieces[0] - 1) * x->stride[0] +
                            (x->pieces[1] - 1) * x->stride[1] + x->run <=
                        g->local_bytes);
            end = x->begin + x->bytes;
        }
        assert_int_equal(pr->bytes, end);
        /* As many channels as the stream has slices, at most the ring's (counted here, not by
         * ncclx_m2n_pair_channels, which the planner calls). */
        {
            uint64_t slices = 0;
            for (uint64_t at = 0; at < end; at += slice) {
                slices++;
            }
            assert_int_equal(pr->channels, slices < channels ? slices : channels);
        }
        assert_true(pr->channels >= 1 && pr->channels <= channels);
        assert_true(pr->blocks <= pr->channels);
        if (direct && pr->send) {
            assert_int_equal(pr->blocks, 1); /* the direct path's source only signals */
        }
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

/* The budget and the ring change the blocks and channels only. */
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
                /* The direct path reads the peer's side from this end's run. */
                assert_int_equal(u->peer_offset, v->offset);
                assert_int_equal(u->peer_stride[0], v->stride[0]);
                assert_int_equal(u->peer_stride[1], v->stride[1]);
            }
        }
    }
}

/* One piece of a box that a span covers: `n` bytes at piece (a0, a1) of box b, from byte
 * `in_piece` of the piece, which is byte `at` of the pair's stream. */
typedef struct {
    const ncclx_m2n_run_t *b;
    uint64_t a0, a1, in_piece, at, n;
} sim_piece_t;

/* kernels/m2n/m2n_copy.cuh's walk of stream bytes [s0, s1) of pair pr (rank plan p): every piece of
 * every box it covers, in stream order. */
static void sim_for_each_piece(const ncclx_m2n_rank_plan_t *p, const ncclx_m2n_pair_t *pr,
                               uint64_t s0, uint64_t s1, void (*fn)(const sim_piece_t *, void *),
                               void *arg)
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
        for (uint64_t k = k0; k <= k1; k++) {
            const uint64_t from = k == k0 ? p0 : k * b->run;
            const uint64_t to = k == k1 ? p1 : (k + 1) * b->run;
            const sim_piece_t piece = {
                b,        k / b->pieces[1], k % b->pieces[1], from - k * b->run, b->begin + from,
                to - from};
            fn(&piece, arg);
        }
    }
}

/* What a span moves and where: the launch, tiles, this end's rank and pair, and the slot (ring
 * path) that holds stream byte s0 at its start. */
typedef struct {
    const launch_t *l;
    tiles_t *t;
    uint32_t rank;
    const ncclx_m2n_pair_t *pr;
    uint8_t *slot;
    uint64_t s0, slice;
} sim_span_t;

static void sim_count_writes(tiles_t *t, uint32_t rank, uint32_t entry, uint64_t at, uint64_t n)
{
    for (uint64_t y = 0; y < n; y++) {
        t->writes[rank][entry][at + y]++;
    }
}

/* kernels/m2n/m2n_copy.cuh move_span, one piece: packs into the slot when the pair sends, unpacks
 * from it (counting the writes) when it receives. */
static void sim_ring_piece(const sim_piece_t *x, void *arg)
{
    const sim_span_t *w = arg;
    const ncclx_m2n_run_t *b = x->b;
    const uint64_t size =
        w->pr->send ? w->l->s[b->entry].local_bytes : w->l->d[b->entry].local_bytes;
    uint8_t *tile = w->pr->send ? w->t->src[w->rank][b->entry] : w->t->dst[w->rank][b->entry];
    const uint64_t at = b->offset + x->a0 * b->stride[0] + x->a1 * b->stride[1] + x->in_piece;
    const uint64_t in = x->at - w->s0;
    assert_non_null(tile);
    assert_true(at + x->n <= size);
    assert_true(in + x->n <= w->slice);
    if (w->pr->send) {
        memcpy(w->slot + in, tile + at, x->n);
    } else {
        memcpy(tile + at, w->slot + in, x->n);
        sim_count_writes(w->t, w->rank, b->entry, at, x->n);
    }
}

/* kernels/m2n/m2n_copy.cuh move_span_direct, one piece: from the source's tile (its side of the box
 * from this end's peer_offset and peer_stride) into this rank's, counting the writes. */
static void sim_direct_piece(const sim_piece_t *x, void *arg)
{
    const sim_span_t *w = arg;
    const ncclx_m2n_run_t *b = x->b;
    const uint8_t *from_tile = w->t->src[w->pr->peer][b->entry];
    uint8_t *tile = w->t->dst[w->rank][b->entry];
    const uint64_t at = b->offset + x->a0 * b->stride[0] + x->a1 * b->stride[1] + x->in_piece;
    const uint64_t src_at =
        b->peer_offset + x->a0 * b->peer_stride[0] + x->a1 * b->peer_stride[1] + x->in_piece;
    assert_non_null(from_tile);
    assert_non_null(tile);
    assert_true(at + x->n <= w->l->d[b->entry].local_bytes);
    assert_true(src_at + x->n <= w->l->s[b->entry].local_bytes);
    memcpy(tile + at, from_tile + src_at, x->n);
    sim_count_writes(w->t, w->rank, b->entry, at, x->n);
}

/* kernels/m2n/m2n.cu's exact check of the direct path on the CPU: source plan ps's table as
 * publish_direct writes it (its pairs, and its side of every box: m2n_ring.h's records)
 * against receiving pair `in` of rank `rank`'s plan (its view of the source's side), as
 * same_plan compares them before it reads the source's tile.  1: the same boxes. */
static int sim_same_plan(const ncclx_m2n_rank_plan_t *ps, uint32_t rank, const ncclx_m2n_pair_t *in,
                         const ncclx_m2n_rank_plan_t *pd)
{
    static uint64_t pairs[2 * NCCLX_M2N_MAX_PEERS];
    static uint64_t boxes[NCCLX_M2N_MAX_TRANSFERS][NCCLX_M2N_DIRECT_BOX_WORDS];
    int found = -1;
    for (uint32_t k = 0; k < ps->num_pairs; k++) {
        const ncclx_m2n_pair_t *a = &ps->pairs[k];
        pairs[2 * k] = ncclx_m2n_direct_pair_word(a->peer, a->send, a->first_box, a->num_boxes);
        pairs[2 * k + 1] = a->bytes;
        for (uint32_t x = a->first_box; x < a->first_box + a->num_boxes; x++) {
            const ncclx_m2n_run_t *b = &ps->boxes[x];
            ncclx_m2n_direct_record(b->entry, b->begin, b->bytes, b->run, b->pieces[1],
                                    a->send ? b->offset : ~0ull, b->stride[0], b->stride[1],
                                    boxes[x]);
        }
    }
    for (uint32_t k = 0; k < ps->num_pairs; k++) {
        if ((pairs[2 * k] & 0xffffffffull) == rank && ((pairs[2 * k] >> 32) & 1) != 0) {
            found = (int)k;
        }
    }
    if (found < 0) {
        return 0;
    }
    const uint64_t first = (pairs[2 * found] >> 33) & 0x1ff, num = (pairs[2 * found] >> 42) & 0x1ff;
    if (num != in->num_boxes || pairs[2 * found + 1] != in->bytes) {
        return 0;
    }
    for (uint32_t x = 0; x < in->num_boxes; x++) {
        const ncclx_m2n_run_t *b = &pd->boxes[in->first_box + x];
        uint64_t r[NCCLX_M2N_DIRECT_BOX_WORDS];
        ncclx_m2n_direct_record(b->entry, b->begin, b->bytes, b->run, b->pieces[1], b->peer_offset,
                                b->peer_stride[0], b->peer_stride[1], r);
        if (memcmp(r, boxes[first + x], sizeof(r)) != 0) {
            return 0;
        }
    }
    return 1;
}

/* Stream bytes [s0, s1) of pair pr of rank's plan p: through `slot` (the ring), or tile to tile
 * when slot is NULL (the direct path, receiving pairs only). */
static void sim_move_span(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                          uint32_t rank, const ncclx_m2n_pair_t *pr, uint64_t s0, uint64_t s1,
                          uint8_t *slot, uint64_t slice)
{
    sim_span_t w = {l, t, rank, pr, slot, s0, slice};
    sim_for_each_piece(p, pr, s0, s1, slot != NULL ? sim_ring_piece : sim_direct_piece, &w);
}

/* Rounds [j0, j1) of every channel of pair pr (rank's end), each channel worked by the block
 * that kernels/m2n/m2n.cu move_pair gives it (channels part, part + blocks, ...), each round of a
 * channel moving its slice through its slot of the ring of source `source` in `staging`. */
static void sim_move_rounds(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                            uint32_t rank, const ncclx_m2n_pair_t *pr, uint32_t source, uint64_t j0,
                            uint64_t j1, uint64_t slice, uint32_t channels, uint8_t *staging,
                            uint64_t ring)
{
    const uint64_t slices = ncclx_m2n_slices(pr->bytes, slice);
    for (uint32_t part = 0; part < pr->blocks; part++) {
        for (uint32_t c = part; c < pr->channels; c += pr->blocks) {
            const uint64_t rounds = ncclx_m2n_channel_rounds(slices, c, pr->channels);
            if (rounds > sim_rounds_max) {
                sim_rounds_max = rounds;
            }
            for (uint64_t j = j0; j < j1 && j < rounds; j++) {
                const uint64_t k = j * pr->channels + c;
                const uint64_t lo = k * slice,
                               len = pr->bytes - lo < slice ? pr->bytes - lo : slice;
                const uint64_t at = ncclx_m2n_slot(source, c, j, channels, slice);
                assert_true(k < slices);
                assert_true(at + slice <= ring);
                sim_move_span(l, t, p, rank, pr, lo, lo + len, staging + at, slice);
            }
        }
    }
}

/* Runs the launch through rings of (slice, channels).  Per destination, in waves: every source
 * packs the next NCCLX_M2N_DEPTH rounds of every channel into its ring (the most it may run
 * ahead), then the destination unpacks them all; a slot shared by two rounds in flight, two
 * channels or two sources would show as a wrong byte, a channel worked twice or never as a
 * byte written twice or never.  Then every destination byte holds its global value, written
 * once, and the sources are untouched. */
static void run_launch(const launch_t *l, tiles_t *t, const ncclx_m2n_rank_plan_t *p,
                       uint64_t slice, uint32_t channels, int direct)
{
    const uint64_t ring = (uint64_t)l->world * channels * NCCLX_M2N_DEPTH * slice;
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
    for (uint32_t r = 0; r < l->world && direct; r++) {
        /* The direct path: every receiving channel's slices straight from the source's tile. */
        for (uint32_t k = 0; k < p[r].num_pairs; k++) {
            const ncclx_m2n_pair_t *in = &p[r].pairs[k];
            uint64_t end = 0;
            /* Agreeing plans pass the exact check (else every launch would be refused). */
            assert_true(in->send || sim_same_plan(&p[in->peer], r, in, &p[r]));
            for (uint32_t part = 0; part < in->blocks && !in->send; part++) {
                uint64_t lo, hi;
                ncclx_m2n_direct_range(in->bytes, slice, in->blocks, part, &lo, &hi);
                assert_int_equal(lo, end); /* the blocks' runs end to end, whole slices */
                assert_true(lo == hi || lo % slice == 0);
                if (lo < hi) {
                    sim_move_span(l, t, &p[r], r, in, lo, hi, NULL, slice);
                }
                end = hi;
            }
            assert_true(in->send || end == in->bytes);
        }
    }
    for (uint32_t r = 0; r < l->world && !direct; r++) {
        memset(staging, 0x5a, ring);
        for (uint64_t wave = 0, more = 1; more; wave++) {
            const uint64_t j0 = wave * NCCLX_M2N_DEPTH, j1 = j0 + NCCLX_M2N_DEPTH;
            more = 0;
            for (int unpack = 0; unpack < 2; unpack++) {
                for (uint32_t k = 0; k < p[r].num_pairs; k++) {
                    const ncclx_m2n_pair_t *in = &p[r].pairs[k];
                    if (in->send) {
                        continue;
                    }
                    const uint32_t from = in->peer;
                    const ncclx_m2n_pair_t *out = &p[from].pairs[pair_of(&p[from], r, 1)];
                    assert_int_equal(out->channels, in->channels);
                    if (unpack) {
                        sim_move_rounds(l, t, &p[r], r, in, from, j0, j1, slice, channels, staging,
                                        ring);
                    } else {
                        sim_move_rounds(l, t, &p[from], from, out, from, j0, j1, slice, channels,
                                        staging, ring);
                    }
                    more |= ncclx_m2n_channel_rounds(ncclx_m2n_slices(in->bytes, slice), 0,
                                                     in->channels) > j1;
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
                             "0x%02x (world %u, slice %llu, channels %u, %s)",
                             r, e, l->n, (unsigned long long)o, t->writes[r][e][o], t->dst[r][e][o],
                             want, l->world, (unsigned long long)slice, channels,
                             direct ? "direct" : "staged");
                }
            }
        }
    }
}

/* Random launches: every rank's plan for every budget checked on its own and against its
 * peers', then the whole launch run through simulated rings of every shape (each with another
 * budget's blocks), and tile to tile as the direct path runs it. */
static void test_launch_protocol(void **state)
{
    (void)state;
    for (int it = 0; it < 300; it++) {
        launch_t l;
        tiles_t t;
        random_launch(&l);
        for (uint32_t b = 0; b < NUM_BUDGETS; b++) {
            for (uint32_t r = 0; r < l.world; r++) {
                assert_ncclx_ok(ncclx_m2n_plan_rank(l.s, l.d, l.n, r, l.world, rings[0].slice,
                                                    rings[0].channels, budgets[b], 0, plan_scratch,
                                                    &plans[b][r]));
                check_rank_plan(&l, &plans[b][r], r, budgets[b], rings[0].slice, rings[0].channels,
                                0);
                if (b > 0) {
                    check_same_but_blocks(&plans[0][r], &plans[b][r]);
                }
            }
        }
        check_ends_agree(&l, plans[0]);
        tiles_alloc(&l, &t);
        for (uint32_t c = 0; c < NUM_RINGS; c++) {
            const uint32_t b = ((uint32_t)it + c) % NUM_BUDGETS;
            for (int direct = 0; direct < 2; direct++) {
                for (uint32_t r = 0; r < l.world; r++) {
                    assert_ncclx_ok(ncclx_m2n_plan_rank(l.s, l.d, l.n, r, l.world, rings[c].slice,
                                                        rings[c].channels, budgets[b], direct,
                                                        plan_scratch, &plans[b][r]));
                    check_rank_plan(&l, &plans[b][r], r, budgets[b], rings[c].slice,
                                    rings[c].channels, direct);
                }
                run_launch(&l, &t, plans[b], rings[c].slice, rings[c].channels, direct);
            }
        }
        tiles_free(&l, &t);
    }
    assert_true(sim_rounds_max > 2 * NCCLX_M2N_DEPTH); /* rings were reused, several times over */
}

/* The ring of a plan (kernels/m2n/m2n_ring.h): slices of 128-byte multiples in [MIN, MAX], at least
 * one channel and at most MAX_CHANNELS, never more staging than the plan gives each source;
 * preferred slices before more channels; at the plan's least staging one channel of the
 * smallest slices. */
static void test_ring_shape(void **state)
{
    (void)state;
    for (int it = 0; it < 20000; it++) {
        const uint32_t ranks = 1 + below(64);
        const uint64_t per_source = NCCLX_M2N_MIN_STAGING_PER_RANK + below(1u << 20) * below(600);
        uint64_t slice;
        uint32_t channels;
        ncclx_m2n_ring_shape(per_source * ranks + below(ranks), ranks, &slice, &channels);
        assert_int_equal(slice % 128, 0);
        assert_true(slice >= NCCLX_M2N_MIN_SLICE && slice <= NCCLX_M2N_MAX_SLICE);
        assert_true(channels >= 1 && channels <= NCCLX_M2N_MAX_CHANNELS);
        assert_true((uint64_t)channels * NCCLX_M2N_DEPTH * slice <= per_source);
        if (per_source >= NCCLX_M2N_DEPTH * NCCLX_M2N_PREFERRED_SLICE) {
            assert_true(slice >= NCCLX_M2N_PREFERRED_SLICE);
        }
        if (per_source >=
            (uint64_t)NCCLX_M2N_DEPTH * NCCLX_M2N_MAX_CHANNELS * NCCLX_M2N_PREFERRED_SLICE) {
            assert_int_equal(channels, NCCLX_M2N_MAX_CHANNELS);
        }
    }
    {
        uint64_t slice;
        uint32_t channels;
        ncclx_m2n_ring_shape(3ull * NCCLX_M2N_MIN_STAGING_PER_RANK, 3, &slice, &channels);
        assert_int_equal(slice, NCCLX_M2N_MIN_SLICE);
        assert_int_equal(channels, 1);
        ncclx_m2n_ring_shape(2ull << 30, 2, &slice, &channels);
        assert_int_equal(slice, NCCLX_M2N_MAX_SLICE);
        assert_int_equal(channels, NCCLX_M2N_MAX_CHANNELS);
    }
}

/* Channels cut a stream into slices exactly once: every slice on one channel and round, the
 * rounds of each channel adding up to the slices, channel 0 the longest. */
static void test_channel_rounds(void **state)
{
    (void)state;
    for (int it = 0; it < 5000; it++) {
        const uint64_t slice = 16 * (1 + below(300));
        const uint64_t bytes = 1 + below(1u << 20);
        const uint32_t channels = 1 + below(NCCLX_M2N_MAX_CHANNELS);
        const uint64_t slices = ncclx_m2n_slices(bytes, slice);
        const uint32_t c_p = ncclx_m2n_pair_channels(bytes, slice, channels);
        uint64_t total = 0;
        assert_true(slices * slice >= bytes && (slices - 1) * slice < bytes);
        assert_true(c_p >= 1 && c_p <= channels && c_p <= slices);
        assert_int_equal(c_p, slices < channels ? slices : channels);
        for (uint32_t c = 0; c < c_p; c++) {
            const uint64_t rounds = ncclx_m2n_channel_rounds(slices, c, c_p);
            assert_true(rounds <= ncclx_m2n_channel_rounds(slices, 0, c_p));
            assert_true(rounds >= 1);
            assert_true((rounds - 1) * c_p + c < slices && rounds * c_p + c >= slices);
            total += rounds;
        }
        assert_int_equal(total, slices);
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
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, MANY - 1, 0, 9, 4096, 1, 8, 0, plan_scratch, &p));
    assert_int_equal(p.num_boxes, NCCLX_M2N_MAX_TRANSFERS);
    assert_int_equal(p.num_pairs, 8);
    assert_ncclx_error(ncclx_m2n_plan_rank(s, d, MANY, 0, 9, 4096, 1, 8, 0, plan_scratch, &p),
                       ncclxResourceExhausted, "NCCLX_M2N_MAX_TRANSFERS");
    /* A destination has one box per tensor: it fits. */
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, MANY, 3, 9, 4096, 1, 8, 0, plan_scratch, &p));
    assert_int_equal(p.num_boxes, MANY);
    assert_int_equal(p.num_pairs, 1);

    src = line_side(0, 1, 0);
    dst = line_side(1, 64, 0);
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 65, &s[0]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 65, &d[0]));
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, 1, 0, 65, 4096, 1, 8, 0, plan_scratch, &p));
    assert_int_equal(p.num_pairs, NCCLX_M2N_MAX_PEERS); /* exactly full */
    check_rank_plan(&(launch_t){.world = 65, .n = 1, .s = {s[0]}, .d = {d[0]}}, &p, 0, 8, 4096, 1,
                    0);
    dst = line_side(1, 69, 0);
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 70, &s[0]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 70, &d[0]));
    assert_ncclx_error(ncclx_m2n_plan_rank(s, d, 1, 0, 70, 4096, 1, 8, 0, plan_scratch, &p),
                       ncclxResourceExhausted, "NCCLX_M2N_MAX_PEERS");
    assert_ncclx_ok(ncclx_m2n_plan_rank(s, d, 1, 69, 70, 4096, 1, 8, 0, plan_scratch, &p));
    assert_int_equal(p.num_pairs, 1);
    assert_int_equal(p.pairs[0].peer, 0);
    assert_int_equal(p.pairs[0].send, 0);
}

/* The direct path's exact check under a vote collision: a destination whose descriptors
 * differ from its source's (while their vote words would agree) finds the source's published
 * plan unlike its own, whether the tensors differ in bytes or only in shape; identical
 * descriptors pass. */
static void test_direct_exact_check(void **state)
{
    (void)state;
    static ncclx_m2n_geom_t s[2], d[2];
    static ncclx_m2n_rank_plan_t ps, pd;
    /* 8192 bytes from rank 0 to rank 1; rank 1 thinks 4096. */
    ncclx_m2n_side_t src = line_side(0, 1, 0), dst = line_side(1, 1, 0);
    src.local_shape[0] = dst.local_shape[0] = 8192;
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 2, &s[0]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 2, &d[0]));
    src.local_shape[0] = dst.local_shape[0] = 4096;
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 2, &s[1]));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 2, &d[1]));
    for (int other = 0; other < 2; other++) {
        assert_ncclx_ok(
            ncclx_m2n_plan_rank(&s[0], &d[0], 1, 0, 2, 4096, 4, 8, 1, plan_scratch, &ps));
        assert_ncclx_ok(
            ncclx_m2n_plan_rank(&s[other], &d[other], 1, 1, 2, 4096, 4, 8, 1, plan_scratch, &pd));
        assert_int_equal(pd.num_pairs, 1);
        assert_int_equal(sim_same_plan(&ps, 1, &pd.pairs[0], &pd), !other);
    }
    /* 64 x 128 bytes sharded on dim 1 over ranks 0 and 1 into rank 2; rank 2 thinks 128 x 64
     * (as many bytes, other rows). */
    for (int other = 0; other < 2; other++) {
        ncclx_m2n_side_t a = line_side(0, 2, 1), b = line_side(2, 1, 0);
        a.ndims = b.ndims = 2;
        a.local_shape[0] = b.local_shape[0] = other ? 128 : 64;
        a.local_shape[1] = other ? 32 : 64;
        b.local_shape[1] = other ? 64 : 128;
        a.placements[0] = 1;
        assert_ncclx_ok(ncclx_m2n_geom(&a, "src", 3, &s[other]));
        assert_ncclx_ok(ncclx_m2n_geom(&b, "dst", 3, &d[other]));
        assert_ncclx_ok(ncclx_m2n_check_pair(&a, &s[other], &b, &d[other], 3));
        assert_int_equal(s[other].local_bytes, 4096);
    }
    for (uint32_t source = 0; source < 2; source++) {
        for (int other = 0; other < 2; other++) {
            assert_ncclx_ok(
                ncclx_m2n_plan_rank(&s[0], &d[0], 1, source, 3, 4096, 4, 8, 1, plan_scratch, &ps));
            assert_ncclx_ok(ncclx_m2n_plan_rank(&s[other], &d[other], 1, 2, 3, 4096, 4, 8, 1,
                                                plan_scratch, &pd));
            assert_int_equal(pd.num_pairs, 2);
            const uint32_t k = pd.pairs[0].peer == source ? 0 : 1;
            assert_int_equal(pd.pairs[k].peer, source);
            assert_int_equal(sim_same_plan(&ps, 2, &pd.pairs[k], &pd), !other);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_launch_protocol),    cmocka_unit_test(test_ring_shape),
        cmocka_unit_test(test_channel_rounds),     cmocka_unit_test(test_plan_rank_refusals),
        cmocka_unit_test(test_direct_exact_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
