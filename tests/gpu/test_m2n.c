/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N resharding on loopback teams of one GPU, byte for byte: every source tile is filled from
 * a function of the global byte index, every destination tile poisoned (with canaries on both
 * sides of every tile), and after the reshard every destination byte must be the function of
 * its global index, every canary and source byte untouched, and ranks outside both meshes
 * untouched too.  The expected bytes are computed here from the mesh rules of
 * include/ncclx/m2n.h alone (not from the library's planner).  Each case runs three times back
 * to back with new data and no host synchronization in between.  Covered: dims 1-3, 1/2/4/8-byte
 * elements, (M, N) from (1, 1) to (4, 16), same-dim and cross-dim, replicate <-> shard, 2-axis
 * meshes both ways, destination mesh first, ranks outside both meshes, uneven replica counts,
 * staging far smaller than a tensor (hundreds of rounds), model-shaped patterns, a group of 100
 * tensors, graph capture replayed 50 times with new data, every refusal, a launch that fails on
 * one rank (fail-stop on both), and no allocation.
 * TEST_SEED=n replays a run; TEST_FILTER picks tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "alloc_counter.h"
#include "m2n.h" /* kernels/: the launch, to fail one on demand */
#include "ncclx_test.h"

#define MAX_RANKS   24
#define CANARY      256
#define MAX_TENSORS 100

/* ---- random numbers and byte values ---- */

static uint64_t rng_state;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
    rng_state += 0x9e3779b97f4a7c15ull;
    return mix64(rng_state);
}

static void rng_reset(const char *name)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *env = getenv("TEST_SEED");
        seed = env != NULL ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
        seed = seed == 0 ? 1 : seed;
        printf("test_m2n: seed %llu (rerun with TEST_SEED=%llu)\n", (unsigned long long)seed,
               (unsigned long long)seed);
    }
    rng_state = seed;
    for (const char *c = name; *c; c++) {
        rng_state = mix64(rng_state ^ (uint64_t)(unsigned char)*c);
    }
}

/* The byte at global byte index g of a tensor's version `salt`. */
static uint8_t value(uint64_t g, uint64_t salt)
{
    return (uint8_t)(mix64(g * 0x9e3779b97f4a7c15ull + salt) >> 56);
}

/* ---- one side of a tensor, as the test understands the rules ---- */

typedef struct {
    uint32_t ndims, elem;
    uint64_t global[3]; /* elements */
    uint32_t mesh_ndims, dims[2], start;
    int32_t placements[2];
} side_t;

typedef struct {
    side_t src, dst;
    ncclxDataType_t dtype;
} tensor_t;

static uint32_t side_size(const side_t *s)
{
    return s->dims[0] * (s->mesh_ndims == 2 ? s->dims[1] : 1);
}

/* The shard of rank on s (0 when every axis replicates); 0 when not a member. */
static int side_shard(const side_t *s, uint32_t rank, uint32_t *shard, int *shard_dim,
                      uint32_t *shards)
{
    const uint32_t d1 = s->mesh_ndims == 2 ? s->dims[1] : 1;
    uint32_t pos[2], l;
    *shard = 0;
    *shard_dim = -1;
    *shards = 1;
    if (rank < s->start || rank >= s->start + side_size(s)) {
        return 0;
    }
    l = rank - s->start;
    pos[0] = l / d1;
    pos[1] = l % d1;
    for (uint32_t a = 0; a < s->mesh_ndims; a++) {
        if (s->placements[a] >= 0) {
            *shard = pos[a];
            *shard_dim = s->placements[a];
            *shards = a == 0 ? s->dims[0] : d1;
        }
    }
    return 1;
}

static void local_shape(const side_t *s, uint64_t shape[3])
{
    uint32_t shard, shards;
    int dim;
    /* Any member gives the shape: compute it for the first rank of the mesh. */
    (void)side_shard(s, s->start, &shard, &dim, &shards);
    for (uint32_t d = 0; d < 3; d++) {
        shape[d] = d < s->ndims ? s->global[d] / ((int)d == dim ? shards : 1) : 1;
    }
}

static uint64_t tile_bytes(const side_t *s)
{
    uint64_t shape[3], n = s->elem;
    local_shape(s, shape);
    for (uint32_t d = 0; d < s->ndims; d++) {
        n *= shape[d];
    }
    return n;
}

/* Writes into out[] the global byte index of every byte of rank's tile on s. */
static void tile_globals(const side_t *s, uint32_t rank, uint64_t *out)
{
    uint64_t shape[3], gstride[3], lbytes[3], idx = 0;
    uint32_t shard, shards;
    int dim;
    (void)side_shard(s, rank, &shard, &dim, &shards);
    local_shape(s, shape);
    for (uint32_t d = 0; d < 3; d++) {
        lbytes[d] = d < s->ndims ? shape[d] * (d + 1 == s->ndims ? s->elem : 1) : 1;
    }
    gstride[s->ndims - 1] = 1;
    for (int d = (int)s->ndims - 2; d >= 0; d--) {
        gstride[d] = gstride[d + 1] * s->global[d + 1] * (d + 2 == (int)s->ndims ? s->elem : 1);
    }
    for (uint64_t a = 0; a < (s->ndims > 2 ? lbytes[0] : 1); a++) {
        for (uint64_t b = 0; b < (s->ndims > 1 ? lbytes[s->ndims - 2] : 1); b++) {
            for (uint64_t c = 0; c < lbytes[s->ndims - 1]; c++) {
                uint64_t coord[3] = {0, 0, 0}, g = 0;
                if (s->ndims == 3) {
                    coord[0] = a;
                    coord[1] = b;
                    coord[2] = c;
                } else if (s->ndims == 2) {
                    coord[0] = b;
                    coord[1] = c;
                } else {
                    coord[0] = c;
                }
                for (uint32_t d = 0; d < s->ndims; d++) {
                    if ((int)d == dim) {
                        coord[d] += shard * lbytes[d];
                    }
                    g += coord[d] * gstride[d];
                }
                out[idx++] = g;
            }
        }
    }
}

static ncclxM2nTensor_t descriptor(const side_t *s, ncclxDataType_t dtype, void *data)
{
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    local_shape(s, t.local_shape);
    t.data = data;
    t.dtype = dtype;
    t.ndims = s->ndims;
    t.mesh.ndims = s->mesh_ndims;
    t.mesh.dims[0] = s->dims[0];
    t.mesh.dims[1] = s->dims[1];
    t.mesh.start_rank = s->start;
    t.placements[0] = s->placements[0];
    t.placements[1] = s->placements[1];
    return t;
}

/* ---- the team and the tiles ---- */

typedef struct {
    uint32_t ranks;
    ncclxContext_t ctx[MAX_RANKS];
    cudaStream_t stream[MAX_RANKS];
} team_t;

static void team_open(team_t *t, uint32_t ranks, uint64_t staging_per_rank)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    plan.m2n_staging_bytes = staging_per_rank * ranks;
    plan.m2n_max_group_entries = MAX_TENSORS;
    t->ranks = ranks;
    assert_ncclx_ok(ncclxLoopbackInit(&plan, ranks, 0, t->ctx));
    for (uint32_t r = 0; r < ranks; r++) {
        assert_int_equal(cudaStreamCreateWithFlags(&t->stream[r], cudaStreamNonBlocking),
                         cudaSuccess);
    }
}

static void team_close(team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaStreamSynchronize(t->stream[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(t->stream[r]), cudaSuccess);
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxFinalize(t->ctx[r]));
    }
}

static void team_sync(team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaStreamSynchronize(t->stream[r]), cudaSuccess);
    }
}

/* Every rank's tile of each side of a tensor: CANARY bytes before and after (0xA5). */
typedef struct {
    uint64_t bytes[2];
    uint8_t *dev[2][MAX_RANKS]; /* the allocation (canary, tile, canary); NULL off the mesh */
    uint64_t *globals[2][MAX_RANKS];
} tiles_t;

static void tiles_alloc(const team_t *t, const tensor_t *x, tiles_t *tl)
{
    const side_t *side[2] = {&x->src, &x->dst};
    memset(tl, 0, sizeof(*tl));
    for (int k = 0; k < 2; k++) {
        tl->bytes[k] = tile_bytes(side[k]);
        for (uint32_t r = 0; r < t->ranks; r++) {
            uint32_t shard, shards;
            int dim;
            if (!side_shard(side[k], r, &shard, &dim, &shards)) {
                continue;
            }
            assert_int_equal(cudaMalloc((void **)&tl->dev[k][r], tl->bytes[k] + 2 * CANARY),
                             cudaSuccess);
            tl->globals[k][r] = malloc(tl->bytes[k] * sizeof(uint64_t));
            assert_non_null(tl->globals[k][r]);
            tile_globals(side[k], r, tl->globals[k][r]);
        }
    }
}

static void tiles_free(tiles_t *tl)
{
    for (int k = 0; k < 2; k++) {
        for (uint32_t r = 0; r < MAX_RANKS; r++) {
            if (tl->dev[k][r] != NULL) {
                assert_int_equal(cudaFree(tl->dev[k][r]), cudaSuccess);
            }
            free(tl->globals[k][r]);
        }
    }
}

static void *tile_ptr(const tiles_t *tl, int k, uint32_t r)
{
    return tl->dev[k][r] != NULL ? tl->dev[k][r] + CANARY : NULL;
}

/* Host images of (canary, tile, canary): sources hold version salt, destinations poison. */
static uint8_t *image(const tiles_t *tl, int k, uint32_t r, uint64_t salt)
{
    uint8_t *h = malloc(tl->bytes[k] + 2 * CANARY);
    assert_non_null(h);
    memset(h, 0xA5, CANARY);
    memset(h + CANARY + tl->bytes[k], 0xA5, CANARY);
    for (uint64_t i = 0; i < tl->bytes[k]; i++) {
        h[CANARY + i] = k == 0 ? value(tl->globals[k][r][i], salt) : 0xDE;
    }
    return h;
}

/* Enqueues the upload of version salt (sources) and the poison (destinations) on each rank's
 * stream.  The images are freed by the caller after the streams are synchronized. */
static void upload(const team_t *t, const tiles_t *tl, uint64_t salt, uint8_t **keep, int *kept)
{
    for (int k = 0; k < 2; k++) {
        for (uint32_t r = 0; r < t->ranks; r++) {
            if (tl->dev[k][r] == NULL) {
                continue;
            }
            uint8_t *h = image(tl, k, r, salt);
            assert_int_equal(cudaMemcpyAsync(tl->dev[k][r], h, tl->bytes[k] + 2 * CANARY,
                                             cudaMemcpyHostToDevice, t->stream[r]),
                             cudaSuccess);
            keep[(*kept)++] = h;
        }
    }
}

/* Checks every tile of the tensor after the streams are synchronized: sources hold version
 * salt, destinations too when moved, else the poison. */
static void check(const team_t *t, const tiles_t *tl, uint64_t salt, int moved, const char *what)
{
    for (int k = 0; k < 2; k++) {
        for (uint32_t r = 0; r < t->ranks; r++) {
            if (tl->dev[k][r] == NULL) {
                continue;
            }
            const uint64_t n = tl->bytes[k] + 2 * CANARY;
            uint8_t *h = malloc(n);
            uint64_t wrong = 0, first = UINT64_MAX;
            assert_non_null(h);
            assert_int_equal(cudaMemcpy(h, tl->dev[k][r], n, cudaMemcpyDeviceToHost), cudaSuccess);
            for (uint64_t i = 0; i < n; i++) {
                uint8_t want = 0xA5;
                if (i >= CANARY && i < CANARY + tl->bytes[k]) {
                    want = k == 1 && !moved ? 0xDE : value(tl->globals[k][r][i - CANARY], salt);
                }
                if (h[i] != want) {
                    wrong++;
                    first = first == UINT64_MAX ? i : first;
                }
            }
            free(h);
            if (wrong != 0) {
                fail_msg("%s: rank %u %s tile: %llu of %llu bytes wrong (first at tile byte "
                         "%lld)",
                         what, r, k == 0 ? "source" : "destination", (unsigned long long)wrong,
                         (unsigned long long)n, (long long)first - CANARY);
            }
        }
    }
}

/* Every rank calls ncclxM2nReshard for each tensor (in a group when n > 1). */
static void reshard_all(const team_t *t, const tensor_t *x, const tiles_t *tl, uint32_t n)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        if (n > 1) {
            assert_ncclx_ok(ncclxM2nGroupStart(t->ctx[r]));
        }
        for (uint32_t e = 0; e < n; e++) {
            const ncclxM2nTensor_t src = descriptor(&x[e].src, x[e].dtype, tile_ptr(&tl[e], 0, r));
            const ncclxM2nTensor_t dst = descriptor(&x[e].dst, x[e].dtype, tile_ptr(&tl[e], 1, r));
            assert_ncclx_ok(ncclxM2nReshard(t->ctx[r], &src, &dst, (ncclxStream_t)t->stream[r]));
        }
        if (n > 1) {
            assert_ncclx_ok(ncclxM2nGroupEnd(t->ctx[r]));
        }
    }
}

/* Three versions back to back (upload, reshard; no host sync between), then every check. */
static void run_tensors(uint32_t ranks, uint64_t staging_per_rank, const tensor_t *x, uint32_t n,
                        const char *what)
{
    team_t t;
    static tiles_t tl[MAX_TENSORS];
    uint8_t **keep = malloc(sizeof(uint8_t *) * 2 * MAX_RANKS * MAX_TENSORS * 3);
    int kept = 0;
    uint64_t salt[3];
    uint32_t err[MAX_RANKS];
    assert_non_null(keep);
    team_open(&t, ranks, staging_per_rank);
    for (uint32_t e = 0; e < n; e++) {
        tiles_alloc(&t, &x[e], &tl[e]);
    }
    for (int it = 0; it < 3; it++) {
        salt[it] = rnd();
        for (uint32_t e = 0; e < n; e++) {
            upload(&t, &tl[e], salt[it] + e, keep, &kept);
        }
        ncclx_test_alloc_arm();
        reshard_all(&t, x, tl, n);
        assert_int_equal(ncclx_test_alloc_disarm(), 0);
        if (it < 2) {
            continue;
        }
        team_sync(&t);
        for (uint32_t e = 0; e < n; e++) {
            char name[160];
            snprintf(name, sizeof(name), "%s, tensor %u of %u, version 3", what, e, n);
            check(&t, &tl[e], salt[it] + e, 1, name);
        }
    }
    for (uint32_t r = 0; r < ranks; r++) {
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err[r]));
        assert_int_equal(err[r], 0);
    }
    team_close(&t);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
    free(keep);
    for (uint32_t e = 0; e < n; e++) {
        tiles_free(&tl[e]);
    }
    printf("# %s: %u ranks, %u tensor(s), exact\n", what, ranks, n);
}

static side_t side1(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t ranks,
                    uint32_t start, int32_t placement)
{
    side_t s = {ndims, elem, {g[0], g[1], g[2]}, 1, {ranks, 1}, start, {placement, -1}};
    return s;
}

static side_t side2(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t d0, uint32_t d1,
                    uint32_t start, int32_t p0, int32_t p1)
{
    side_t s = {ndims, elem, {g[0], g[1], g[2]}, 2, {d0, d1}, start, {p0, p1}};
    return s;
}

static ncclxDataType_t dtype_of(uint32_t elem)
{
    return elem == 1   ? NCCLX_UINT8
           : elem == 2 ? NCCLX_BFLOAT16
           : elem == 4 ? NCCLX_FLOAT32
                       : NCCLX_FLOAT64;
}

static tensor_t tensor(side_t s, side_t d)
{
    tensor_t x = {s, d, dtype_of(s.elem)};
    return x;
}

#define STAGING (4u * 512u * 1024u) /* per rank: slices of 512 KiB */

/* ---- launch failures on demand (the launcher is replaced at link time) ---- */

static int fail_launch_of_rank = -1; /* the next launch of this rank fails */
/* Nonzero: every launch votes with this word (and its own refusal bit), as if every call's
 * hash collided with every other's. */
static unsigned force_vote_word;

cudaError_t __real_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);
cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);

cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream)
{
    if (l->rank == fail_launch_of_rank) {
        fail_launch_of_rank = -1;
        return cudaErrorLaunchOutOfResources; /* as a launch that could not start would */
    }
    if (force_vote_word != 0) {
        static ncclx_m2n_launch_t forced; /* passed by value at the launch: reused at once */
        forced = *l;
        forced.word =
            (l->word & NCCLX_M2N_VOTE_REFUSE) | (force_vote_word & ~NCCLX_M2N_VOTE_REFUSE);
        return __real_ncclx_m2n_launch(&forced, stream);
    }
    return __real_ncclx_m2n_launch(l, stream);
}

/* ---- the tests ---- */

static void test_matrix(void **state)
{
    (void)state;
    rng_reset("matrix");
    const uint64_t g1[3] = {8192, 1, 1}, g2[3] = {200, 200, 1}, g2b[3] = {240, 240, 1};
    const uint64_t g2c[3] = {360, 840, 1}, g3[3] = {64, 128, 128}, g3b[3] = {128, 64, 64};
    const uint64_t g2d[3] = {128, 512, 1}, g1t[3] = {4, 1, 1};
    tensor_t x;
    /* (1, 1): a plain copy, 1-D bytes. */
    x = tensor(side1(1, g1, 1, 1, 0, -1), side1(1, g1, 1, 1, 1, -1));
    run_tensors(2, STAGING, &x, 1, "(1,1) 1-D u8 R -> R");
    /* (2, 2): cross-dim, bf16. */
    x = tensor(side1(2, g2, 2, 2, 0, 0), side1(2, g2, 2, 2, 2, 1));
    run_tensors(4, STAGING, &x, 1, "(2,2) 2-D bf16 S0 -> S1");
    /* (2, 4): same dim onto a 2 x 2 mesh (shards outer, replicas inner), f32. */
    x = tensor(side1(2, g2b, 4, 2, 0, 0), side2(2, g2b, 4, 2, 2, 2, 0, -1));
    run_tensors(6, STAGING, &x, 1, "(2,4) 2-D f32 S0 -> [S0 x R]");
    /* (4, 2): 3-D, innermost dim to outermost. */
    x = tensor(side1(3, g3, 2, 4, 0, 2), side1(3, g3, 2, 2, 4, 0));
    run_tensors(6, STAGING, &x, 1, "(4,2) 3-D bf16 S2 -> S0");
    /* (3, 5): odd counts, f64, cross-dim. */
    x = tensor(side1(2, g2c, 8, 3, 0, 0), side1(2, g2c, 8, 5, 3, 1));
    run_tensors(8, STAGING, &x, 1, "(3,5) 2-D f64 S0 -> S1");
    /* (4, 16): [R x S1] (replicas outer, TP inner) to 16 replicas: the refit pattern. */
    x = tensor(side2(2, g2d, 2, 2, 2, 0, -1, 1), side1(2, g2d, 2, 16, 4, -1));
    run_tensors(20, STAGING, &x, 1, "(4,16) 2-D bf16 [R x S1] -> R[16]");
    /* Destination mesh first, a rank outside both meshes at the end. */
    x = tensor(side1(3, g3b, 4, 2, 2, 1), side2(3, g3b, 4, 2, 1, 0, 0, -1));
    run_tensors(6, STAGING, &x, 1, "dst first, ranks 4 and 5 outside: 3-D f32 S1 -> S0");
    /* A rank outside both meshes in the middle; 1-byte tiny tensor, 1 -> 3 replicas. */
    x = tensor(side1(1, g1t, 1, 1, 0, -1), side1(1, g1t, 1, 3, 2, -1));
    run_tensors(5, STAGING, &x, 1, "4-byte tensor R[1] -> R[3], rank 1 outside");
    /* Uneven replicas: 3 source replicas to 2 (one idles), and 2 to 5. */
    x = tensor(side2(2, g2, 2, 3, 2, 0, -1, 0), side2(2, g2, 2, 2, 2, 6, -1, 1));
    run_tensors(10, STAGING, &x, 1, "[R3 x S0] -> [R2 x S1]");
    x = tensor(side2(3, g3b, 1, 2, 2, 0, -1, 2), side2(3, g3b, 1, 5, 1, 4, -1, 1));
    run_tensors(9, STAGING, &x, 1, "[R2 x S2] -> [R5 x S1], 3-D u8");
    /* Every dtype size and ndims over one mesh pair, random shard dims. */
    for (uint32_t elem = 1; elem <= 8; elem *= 2) {
        for (uint32_t nd = 1; nd <= 3; nd++) {
            const uint64_t g[3] = {48, nd > 1 ? 40 : 1, nd > 2 ? 24 : 1};
            const int32_t sd = (int32_t)(rnd() % nd), dd = (int32_t)(rnd() % nd);
            char name[96];
            x = tensor(side1(nd, g, elem, 4, 0, sd), side2(nd, g, elem, 2, 4, 4, -1, dd));
            snprintf(name, sizeof(name), "%u-D, %u-byte elements, S%d -> [R2 x S%d]", nd, elem, sd,
                     dd);
            run_tensors(12, STAGING, &x, 1, name);
        }
    }
}

/* Staging of 16 KiB per rank: one channel of 4 KiB rounds, so a 1.2 MiB tile takes hundreds of
 * them.  Then channels (kernels/m2n/m2n_ring.h) that each go round their ring twice: 1 MiB per
 * source is 8 channels of 32 KiB slices, on 4 ranks a block per channel; 512 KiB is 4
 * channels, on 24 ranks (11 blocks each, 8 pairs) one block works all 4 in turn. */
static void test_rounds(void **state)
{
    (void)state;
    rng_reset("rounds");
    const uint64_t g[3] = {512, 640, 1}, g3[3] = {510, 640, 1}; /* 510 rows: cut in 3 */
    tensor_t x = tensor(side1(2, g, 4, 2, 0, 0), side1(2, g, 4, 2, 2, 1));
    run_tensors(4, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1, "16 KiB staging per rank, S0 -> S1");
    x = tensor(side1(2, g3, 2, 1, 0, -1), side1(2, g3, 2, 3, 1, 0));
    run_tensors(4, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1, "16 KiB staging per rank, R -> S0");
    const uint64_t big[3] = {2048, 1024, 1}, wide[3] = {4096, 4096, 1};
    x = tensor(side1(2, big, 4, 2, 0, 0), side1(2, big, 4, 2, 2, 1));
    run_tensors(4, 1u << 20, &x, 1, "8 channels x 8 rounds per pair, S0 -> S1");
    x = tensor(side1(2, wide, 4, 8, 0, 0), side1(2, wide, 4, 8, 8, 1));
    run_tensors(24, 512u << 10, &x, 1, "4 channels x 8 rounds, 1 block per pair, S0 -> S1");
}

/* Model shapes scaled to one GPU, same meshes and placements (docs/m2n.md). */
static void test_models(void **state)
{
    (void)state;
    rng_reset("models");
    /* qwen3-32b TP2 x DP2 -> 16 replicas: q [8192, 5120] scaled by 8 (column parallel S0),
     * o (row parallel S1), a norm (replicated). */
    const uint64_t q[3] = {1024, 640, 1}, o[3] = {640, 1024, 1}, nrm[3] = {640, 1, 1};
    tensor_t x[3];
    x[0] = tensor(side2(2, q, 2, 2, 2, 0, -1, 0), side1(2, q, 2, 16, 4, -1));
    x[1] = tensor(side2(2, o, 2, 2, 2, 0, -1, 1), side1(2, o, 2, 16, 4, -1));
    x[2] = tensor(side2(1, nrm, 2, 2, 2, 0, -1, -1), side1(1, nrm, 2, 16, 4, -1));
    run_tensors(20, STAGING, x, 3, "qwen3-32b layer TP2xDP2 -> TP1xDP16 (group)");
    /* DeepSeek-V3 experts EP16 -> TP8 x DP2, scaled to E = 32, [32, 256, 896] fp8 (1 byte):
     * S0 on 8 ranks -> [R2 x S1] and [R2 x S2]: every pair overlaps (all to all). */
    const uint64_t ex[3] = {32, 256, 896};
    x[0] = tensor(side1(3, ex, 1, 8, 0, 0), side2(3, ex, 1, 2, 8, 8, -1, 1));
    x[1] = tensor(side1(3, ex, 1, 8, 0, 0), side2(3, ex, 1, 2, 8, 8, -1, 2));
    run_tensors(24, STAGING, x, 2, "DeepSeek-V3 experts EP8 -> TP8 x DP2 (group)");
    /* Qwen-235B shared experts, scaled: [S0 over 4 x R2] -> [R2 x S0 over 8], same dim, shard
     * and replica counts both change. */
    const uint64_t sh[3] = {1024, 768, 1};
    x[0] = tensor(side2(2, sh, 2, 4, 2, 0, 0, -1), side2(2, sh, 2, 2, 8, 8, -1, 0));
    run_tensors(24, STAGING, x, 1, "Qwen-235B shared experts [S0(4) x R2] -> [R2 x S0(8)]");
}

/* 100 tensors of several shapes and meshes in one group (several launches). */
static void test_group_of_100(void **state)
{
    (void)state;
    rng_reset("group100");
    static tensor_t x[MAX_TENSORS];
    for (uint32_t e = 0; e < MAX_TENSORS; e++) {
        const uint32_t elem = 1u << (rnd() % 4);
        const uint64_t g[3] = {8 * (1 + rnd() % 8), 4 * (1 + rnd() % 8), 1};
        switch (e % 4) {
        case 0:
            x[e] = tensor(side1(2, g, elem, 4, 0, 0), side1(2, g, elem, 4, 4, 1));
            break;
        case 1:
            x[e] = tensor(side1(2, g, elem, 2, 0, 1), side2(2, g, elem, 2, 2, 4, 0, -1));
            break;
        case 2:
            x[e] = tensor(side1(1, g, elem, 4, 0, -1), side1(1, g, elem, 4, 4, 0));
            break;
        default: /* the other way round: ranks 4.. are sources, 0.. destinations */
            x[e] = tensor(side1(2, g, elem, 4, 4, 0), side1(2, g, elem, 2, 0, 1));
            break;
        }
    }
    run_tensors(8, STAGING, x, MAX_TENSORS, "group of 100 tensors, both directions");
}

/* One call and a group of two captured per rank, replayed 50 times with new data. */
static void test_graph_replay(void **state)
{
    (void)state;
    rng_reset("graph");
    const uint64_t g[3] = {96, 160, 1};
    tensor_t x[2];
    x[0] = tensor(side1(2, g, 2, 4, 0, 0), side1(2, g, 2, 4, 4, 1));
    x[1] = tensor(side2(2, g, 4, 2, 2, 0, -1, 1), side1(2, g, 4, 4, 4, -1));
    team_t t;
    tiles_t tl[2];
    cudaGraph_t graph[MAX_RANKS];
    cudaGraphExec_t exec[MAX_RANKS];
    team_open(&t, 8, STAGING);
    tiles_alloc(&t, &x[0], &tl[0]);
    tiles_alloc(&t, &x[1], &tl[1]);
    ncclx_test_alloc_arm();
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamBeginCapture(t.stream[r], cudaStreamCaptureModeThreadLocal),
                         cudaSuccess);
    }
    /* A single call of tensor 0, then a group of both. */
    reshard_all(&t, &x[0], &tl[0], 1);
    reshard_all(&t, x, tl, 2);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamEndCapture(t.stream[r], &graph[r]), cudaSuccess);
    }
    assert_int_equal(ncclx_test_alloc_disarm(), 0);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
    }
    for (int replay = 0; replay < 50; replay++) {
        uint8_t *keep[4 * MAX_RANKS];
        int kept = 0;
        const uint64_t salt = rnd();
        upload(&t, &tl[0], salt, keep, &kept);
        upload(&t, &tl[1], salt + 1, keep, &kept);
        for (uint32_t r = 0; r < t.ranks; r++) {
            assert_int_equal(cudaGraphLaunch(exec[r], t.stream[r]), cudaSuccess);
        }
        team_sync(&t);
        check(&t, &tl[0], salt, 1, "graph replay, tensor 0");
        check(&t, &tl[1], salt + 1, 1, "graph replay, tensor 1");
        for (int i = 0; i < kept; i++) {
            free(keep[i]);
        }
    }
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaGraphExecDestroy(exec[r]), cudaSuccess);
        assert_int_equal(cudaGraphDestroy(graph[r]), cudaSuccess);
    }
    team_close(&t);
    tiles_free(&tl[0]);
    tiles_free(&tl[1]);
    printf("# graph replay: 50 replays of a call and a group on 8 ranks, exact\n");
}

/* One eager reshard of x (then a group of it and itself) on the team's current streams, on new
 * data, checked byte for byte; also an M2N async error clear on each stream. */
static void stream_pattern_eager(team_t *t, const tensor_t *x, const tiles_t *tl, const char *where)
{
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    const uint64_t salt = rnd();
    upload(t, tl, salt, keep, &kept);
    reshard_all(t, x, tl, 1);
    team_sync(t);
    check(t, tl, salt, 1, where);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

static void stream_pattern_replay(team_t *t, const tiles_t *tl, cudaGraphExec_t *exec,
                                  const char *where)
{
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    const uint64_t salt = rnd();
    upload(t, tl, salt, keep, &kept);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaGraphLaunch(exec[r], t->stream[r]), cudaSuccess);
    }
    team_sync(t);
    check(t, tl, salt, 1, where);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* The PyTorch graph pattern (tests/gpu/test_ep_streams.c runs it for EP): eager on stream A, a
 * warm-up and a capture on a side stream C, eager on A again and on a third stream B, replays
 * on A and on B, eager once more; every byte checked each time. */
static void test_stream_pattern(void **state)
{
    (void)state;
    rng_reset("stream_pattern");
    const uint64_t g[3] = {64, 96, 1};
    tensor_t x = tensor(side1(2, g, 2, 2, 0, 0), side1(2, g, 2, 2, 2, 1));
    team_t t;
    tiles_t tl;
    cudaStream_t a[MAX_RANKS], b[MAX_RANKS], c[MAX_RANKS];
    cudaGraphExec_t exec[MAX_RANKS];
    team_open(&t, 4, STAGING);
    tiles_alloc(&t, &x, &tl);
    for (uint32_t r = 0; r < t.ranks; r++) {
        a[r] = t.stream[r];
        assert_int_equal(cudaStreamCreateWithFlags(&b[r], cudaStreamNonBlocking), cudaSuccess);
        assert_int_equal(cudaStreamCreateWithFlags(&c[r], cudaStreamNonBlocking), cudaSuccess);
    }
    stream_pattern_eager(&t, &x, &tl, "eager on stream A");
    memcpy(t.stream, c, sizeof(c));
    stream_pattern_eager(&t, &x, &tl, "eager warm-up on side stream C");
    for (uint32_t r = 0; r < t.ranks; r++) {
        cudaGraph_t graph = NULL;
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        assert_int_equal(cudaStreamBeginCapture(c[r], cudaStreamCaptureModeThreadLocal),
                         cudaSuccess);
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)c[r]));
        assert_int_equal(cudaStreamEndCapture(c[r], &graph), cudaSuccess);
        assert_int_equal(cudaGraphInstantiate(&exec[r], graph, 0), cudaSuccess);
        assert_int_equal(cudaGraphDestroy(graph), cudaSuccess);
    }
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_eager(&t, &x, &tl, "eager on stream A after the capture");
    memcpy(t.stream, b, sizeof(b));
    stream_pattern_eager(&t, &x, &tl, "eager on a third stream B");
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_replay(&t, &tl, exec, "graph replay on stream A");
    memcpy(t.stream, b, sizeof(b));
    stream_pattern_replay(&t, &tl, exec, "graph replay on stream B");
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_eager(&t, &x, &tl, "eager on stream A after the replays");
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint32_t err = 1;
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
        assert_int_equal(cudaGraphExecDestroy(exec[r]), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(b[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(b[r]), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(c[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(c[r]), cudaSuccess);
    }
    team_close(&t);
    tiles_free(&tl);
    printf("# stream pattern: eager A, capture C, eager A and B, replays A and B, exact\n");
}

/* Refusals: a descriptor error on every rank moves nothing; a tile error on one rank makes
 * that rank fail and every other rank skip the call (REFUSED), and nothing moves; after a
 * clear the next call is exact. */
static void test_refusals(void **state)
{
    (void)state;
    rng_reset("refusals");
    const uint64_t g[3] = {64, 96, 1};
    tensor_t x = tensor(side1(2, g, 2, 2, 0, 0), side1(2, g, 2, 2, 2, 1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err;
    team_open(&t, 5, STAGING);
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 7, keep, &kept);
    team_sync(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        ncclxM2nTensor_t bad;
        /* Global shapes that differ. */
        bad = dst;
        bad.local_shape[0] += 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "both sides must describe one tensor");
        /* Overlapping meshes. */
        bad = dst;
        bad.mesh.start_rank = 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "overlap");
        /* Two shard axes. */
        bad = dst;
        bad.mesh.ndims = 2;
        bad.mesh.dims[0] = 1;
        bad.mesh.dims[1] = 2;
        bad.placements[0] = 0;
        bad.placements[1] = 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "second shard axis");
        /* Not a data type; a dtype that differs from the other side's. */
        bad = src;
        bad.dtype = (ncclxDataType_t)(NCCLX_FLOAT16 + 100);
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "src.dtype");
        bad = src;
        bad.dtype = NCCLX_INT8;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "converts nothing");
        bad = src;
        bad.ndims = 4;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "src.ndims");
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after descriptor errors (nothing may move)");
    /* A tile error on rank 2 (a destination member with NULL data): rank 2 fails at once,
     * the others enqueue, every rank skips. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst =
            descriptor(&x.dst, x.dtype, r == 2 ? NULL : tile_ptr(&tl, 1, r));
        if (r == 2) {
            assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]),
                               ncclxInvalidArgument, "dst.data is NULL");
        } else {
            assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        }
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after a tile error on rank 2 (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, r == 2 ? 0u : NCCLX_M2N_ERROR_REFUSED);
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
        assert_int_equal(cudaStreamSynchronize(t.stream[r]), cudaSuccess);
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
    }
    /* Data on a non-member (rank 4 is in neither mesh). */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src =
            descriptor(&x.src, x.dtype, r == 4 ? tile_ptr(&tl, 0, 0) : tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        const ncclxResult_t res = ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]);
        assert_int_equal(res, r == 4 ? ncclxInvalidArgument : ncclxSuccess);
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after data on a non-member (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
    }
    /* Groups: End without Start, an entry error names its entry, Abort drops everything. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        ncclxM2nTensor_t bad = dst;
        bad.local_shape[1] = 7;
        assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidUsage, "without");
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]));
        assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidArgument, "entry 1 of 2");
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nGroupAbort(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nGroupEnd(t.ctx[r])); /* empty */
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after group errors and an abort (nothing may move)");
    /* A group whose entry 1 is on another stream on rank 1 only: rank 1 fails, every rank
     * skips the group. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        const cudaStream_t second = r == 1 ? t.stream[0] : t.stream[r];
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)second));
        if (r == 1) {
            assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidArgument,
                               "one group runs on one stream");
        } else {
            assert_ncclx_ok(ncclxM2nGroupEnd(t.ctx[r]));
        }
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after a group on two streams on rank 1 (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, r == 1 ? 0u : NCCLX_M2N_ERROR_REFUSED);
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
    }
    /* And a good call now moves everything. */
    upload(&t, &tl, 8, keep, &kept);
    reshard_all(&t, &x, &tl, 1);
    team_sync(&t);
    check(&t, &tl, 8, 1, "a call after the refusals");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* Rank 0's launch fails (its peer's goes out): rank 0's call returns the CUDA error and every
 * later M2N call of rank 0 is refused as out of step; rank 1 waits for rank 0's vote until the
 * timeout (300 ms here), reports TIMEOUT, moves nothing, and refuses every later call with
 * ncclxTimeout.  A rank must never go on as if the call had happened. */
static void test_launch_failure(void **state)
{
    (void)state;
    rng_reset("launch failure");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err = 0;
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", "300", 1), 0);
    team_open(&t, 2, STAGING);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 5, keep, &kept);
    team_sync(&t);
    ncclxM2nTensor_t src[2], dst[2];
    for (uint32_t r = 0; r < 2; r++) {
        src[r] = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        dst[r] = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
    }
    fail_launch_of_rank = 0;
    assert_ncclx_error(ncclxM2nReshard(t.ctx[0], &src[0], &dst[0], (ncclxStream_t)t.stream[0]),
                       ncclxCudaError, "cudaErrorLaunchOutOfResources");
    assert_int_equal(fail_launch_of_rank, -1); /* the wrapper did fail it */
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[1], &src[1], &dst[1], (ncclxStream_t)t.stream[1]));
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err));
    assert_int_equal(err & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    check(&t, &tl, 5, 0, "after a failed launch (nothing may move)");
    assert_ncclx_error(ncclxM2nReshard(t.ctx[0], &src[0], &dst[0], (ncclxStream_t)t.stream[0]),
                       ncclxInvalidUsage, "out of step");
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src[1], &dst[1], (ncclxStream_t)t.stream[1]),
                       ncclxTimeout, "timed out");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* ---- a team with a short timeout, and a host gate in a stream ---- */

static void team_open_timeout(team_t *t, uint32_t ranks, const char *ms)
{
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", ms, 1), 0);
    team_open(t, ranks, STAGING);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
}

/* A stream held behind a host function until the test opens the gate, or 60 s pass (a test
 * that failed before opening it must not hang the program). */
static int gate;

static void CUDART_CB wait_for_gate(void *arg)
{
    (void)arg;
    const struct timespec pause = {0, 1000000};
    for (int ms = 0; ms < 60000 && !__atomic_load_n(&gate, __ATOMIC_ACQUIRE); ms++) {
        nanosleep(&pause, NULL);
    }
}

static void gate_stream(cudaStream_t stream)
{
    __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
    assert_int_equal(cudaLaunchHostFunc(stream, wait_for_gate, NULL), cudaSuccess);
}

static void gate_open(void)
{
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
}

static int direct_path(void)
{
    const char *path = getenv("NCCLX_M2N_PATH");
    return path == NULL || strcasecmp(path, "STAGED") != 0;
}

/* ncclxM2nClearAsyncError(ctx, stream) runs in stream order and is capturable: behind a gated
 * stream it returns at once and the bit stays until the stream runs it; an M2N call that rank
 * 0 enqueues on another stream after the clear runs after it (its REFUSED survives); a clear
 * captured in a graph clears nothing until the graph runs; a call after the clears is exact. */
static void test_clear_stream_ordered(void **state)
{
    (void)state;
    rng_reset("clear stream ordered");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err = 0;
    cudaStream_t other;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    team_open(&t, 2, STAGING);
    assert_int_equal(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 3, keep, &kept);
    team_sync(&t);
    /* Rank 1 refuses (dst.data NULL on a member): rank 0 finds REFUSED. */
    const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, 0));
    const ncclxM2nTensor_t dst0 = descriptor(&x.dst, x.dtype, NULL);
    const ncclxM2nTensor_t src1 = descriptor(&x.src, x.dtype, NULL);
    const ncclxM2nTensor_t bad1 = descriptor(&x.dst, x.dtype, NULL);
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src, &dst0, (ncclxStream_t)t.stream[0]));
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src1, &bad1, (ncclxStream_t)t.stream[1]),
                       ncclxInvalidArgument, "dst.data is NULL");
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* The clear behind a gate: it returns without waiting, and the bit is still there. */
    gate_stream(t.stream[0]);
    assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[0], (ncclxStream_t)t.stream[0]));
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* A refused call of rank 0 on another stream: ordered after the clear, so its REFUSED is
     * reported after the clear ran and stays. */
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src, &dst0, (ncclxStream_t)other));
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src1, &bad1, (ncclxStream_t)t.stream[1]),
                       ncclxInvalidArgument, "dst.data is NULL");
    gate_open();
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(other), cudaSuccess);
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* Captured: nothing is cleared until the graph runs. */
    assert_int_equal(cudaStreamBeginCapture(t.stream[0], cudaStreamCaptureModeThreadLocal),
                     cudaSuccess);
    assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[0], (ncclxStream_t)t.stream[0]));
    assert_int_equal(cudaStreamEndCapture(t.stream[0], &graph), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    assert_int_equal(cudaGraphLaunch(exec, t.stream[0]), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, 0);
    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(graph), cudaSuccess);
    /* Nothing moved so far; a good call now moves everything. */
    check(&t, &tl, 3, 0, "after two refused calls and the clears (nothing may move)");
    reshard_all(&t, &x, &tl, 1);
    team_sync(&t);
    check(&t, &tl, 3, 1, "a call after the clears");
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, 0);
    assert_int_equal(cudaStreamDestroy(other), cudaSuccess);
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* Two ranks whose vote words agree (forced here, as a hash collision would) but whose
 * descriptors differ: rank 0 sends a tensor of 8192 bytes, rank 1 expects one of 4096 (each
 * rank's tiles as its own descriptors say).  On the direct path rank 1 compares rank 0's
 * published plan with its own before it reads: it must copy nothing and report MISMATCH (and
 * TIMEOUT: M2N stops), and rank 0, whose destination never frees its tile, reports TIMEOUT.
 * Neither may return with the other's bytes silently copied. */
static void test_vote_collision(void **state)
{
    (void)state;
    if (!direct_path()) {
        printf("# test_vote_collision: the staged path reads no peer tile; skipped\n");
        return;
    }
    rng_reset("vote collision");
    const uint64_t big[3] = {8192, 1, 1}, small[3] = {4096, 1, 1};
    tensor_t x = tensor(side1(1, big, 1, 1, 0, -1), side1(1, big, 1, 1, 1, -1));
    const tensor_t y = tensor(side1(1, small, 1, 1, 0, -1), side1(1, small, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err0 = 0, err1 = 0;
    team_open_timeout(&t, 2, "300");
    tiles_alloc(&t, &x, &tl); /* rank 1's tile is 8192 bytes: it uses the first 4096 */
    upload(&t, &tl, 9, keep, &kept);
    team_sync(&t);
    const ncclxM2nTensor_t src0 = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, 0));
    const ncclxM2nTensor_t dst0 = descriptor(&x.dst, x.dtype, NULL);
    const ncclxM2nTensor_t src1 = descriptor(&y.src, y.dtype, NULL);
    const ncclxM2nTensor_t dst1 = descriptor(&y.dst, y.dtype, tile_ptr(&tl, 1, 1));
    force_vote_word = 0x2a5a2a5au;
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src0, &dst0, (ncclxStream_t)t.stream[0]));
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[1], &src1, &dst1, (ncclxStream_t)t.stream[1]));
    force_vote_word = 0;
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err0));
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err1));
    if ((err1 & NCCLX_M2N_ERROR_MISMATCH) == 0) {
        fail_msg("rank 1 read a peer tile described differently and reported 0x%x, not "
                 "MISMATCH",
                 err1);
    }
    assert_int_equal(err0 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    check(&t, &tl, 9, 0, "after a vote collision (nothing may move)");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* A destination past its source's timeout (test_ep_ht.c's test_straggler_after_timeout for
 * M2N): rank 1's stream is held until rank 0's call has timed out and ended and rank 0's caller
 * has overwritten its source tile.  On the direct path rank 1 must then copy nothing (rank 0
 * closed its tiles on the way out) and report an error; never success with the new bytes.
 * On the staged path rank 1 reads only its own ring, which rank 0 never filled: it times out. */
static void test_straggler_after_timeout(void **state)
{
    (void)state;
    rng_reset("straggler after timeout");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err0 = 0, err1 = 0;
    team_open_timeout(&t, 2, "300");
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 11, keep, &kept);
    team_sync(&t);
    gate_stream(t.stream[1]);
    reshard_all(&t, &x, &tl, 1);
    /* Rank 0 gives up (its vote wait, then its wait for rank 1, time out); its caller reuses
     * the tile. */
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err0));
    assert_int_equal(err0 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    assert_int_equal(cudaMemset(tile_ptr(&tl, 0, 0), 0x5a, tl.bytes[0]), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    gate_open();
    assert_int_equal(cudaStreamSynchronize(t.stream[1]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err1));
    {
        uint8_t *h = malloc(tl.bytes[1]);
        uint64_t reused = 0, poison = 0;
        assert_non_null(h);
        assert_int_equal(cudaMemcpy(h, tile_ptr(&tl, 1, 1), tl.bytes[1], cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (uint64_t i = 0; i < tl.bytes[1]; i++) {
            reused += h[i] == 0x5a;
            poison += h[i] == 0xDE;
        }
        free(h);
        if (err1 == 0) {
            fail_msg("the straggler (rank 1) reported no error after its source had given up "
                     "(%llu of %llu destination bytes hold the source's reused tile)",
                     (unsigned long long)reused, (unsigned long long)tl.bytes[1]);
        }
        if (direct_path() && poison != tl.bytes[1]) {
            fail_msg("the straggler (rank 1) copied %llu bytes (%llu of the reused tile) from a "
                     "source that had closed its tiles",
                     (unsigned long long)(tl.bytes[1] - poison), (unsigned long long)reused);
        }
    }
    assert_int_equal(err1 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* A context planned without M2N refuses every M2N call. */
static void test_not_planned(void **state)
{
    (void)state;
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxContext_t ctx[2];
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    assert_ncclx_ok(ncclxLoopbackInit(&plan, 2, 0, ctx));
    assert_ncclx_error(ncclxM2nReshard(ctx[0], &t, &t, NULL), ncclxInvalidUsage,
                       "m2n_staging_bytes");
    assert_ncclx_error(ncclxM2nGroupStart(ctx[0]), ncclxInvalidUsage, "m2n_staging_bytes");
    assert_ncclx_ok(ncclxFinalize(ctx[0]));
    assert_ncclx_ok(ncclxFinalize(ctx[1]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_planned),    cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_rounds),         cmocka_unit_test(test_models),
        cmocka_unit_test(test_group_of_100),   cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_stream_pattern), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_launch_failure), cmocka_unit_test(test_clear_stream_ordered),
        cmocka_unit_test(test_vote_collision), cmocka_unit_test(test_straggler_after_timeout),
    };
    return ncclx_run_tests("gpu_m2n", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
