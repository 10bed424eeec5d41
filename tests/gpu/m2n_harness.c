/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N GPU tests' machinery (tests/gpu/m2n_harness.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc_counter.h"
#include "m2n_harness.h"

uint64_t m2n_rng_state;

/* ---- random numbers and byte values ---- */

uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t rnd(void)
{
    m2n_rng_state += 0x9e3779b97f4a7c15ull;
    return mix64(m2n_rng_state);
}

void rng_reset(const char *name)
{
    static uint64_t seed;
    if (seed == 0) {
        const char *env = getenv("TEST_SEED");
        seed = env != NULL ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
        seed = seed == 0 ? 1 : seed;
        printf("test_m2n: seed %llu (rerun with TEST_SEED=%llu)\n", (unsigned long long)seed,
               (unsigned long long)seed);
    }
    m2n_rng_state = seed;
    for (const char *c = name; *c; c++) {
        m2n_rng_state = mix64(m2n_rng_state ^ (uint64_t)(unsigned char)*c);
    }
}

/* The byte at global byte index g of a tensor's version `salt`. */
uint8_t value(uint64_t g, uint64_t salt)
{
    return (uint8_t)(mix64(g * 0x9e3779b97f4a7c15ull + salt) >> 56);
}

/* ---- one side of a tensor, as the test understands the rules ---- */

uint32_t side_size(const side_t *s)
{
    return s->dims[0] * (s->mesh_ndims == 2 ? s->dims[1] : 1);
}

/* The shard of rank on s (0 when every axis replicates); 0 when not a member. */
int side_shard(const side_t *s, uint32_t rank, uint32_t *shard, int *shard_dim, uint32_t *shards)
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

void local_shape(const side_t *s, uint64_t shape[3])
{
    uint32_t shard, shards;
    int dim;
    /* Any member gives the shape: compute it for the first rank of the mesh. */
    (void)side_shard(s, s->start, &shard, &dim, &shards);
    for (uint32_t d = 0; d < 3; d++) {
        shape[d] = d < s->ndims ? s->global[d] / ((int)d == dim ? shards : 1) : 1;
    }
}

uint64_t tile_bytes(const side_t *s)
{
    uint64_t shape[3], n = s->elem;
    local_shape(s, shape);
    for (uint32_t d = 0; d < s->ndims; d++) {
        n *= shape[d];
    }
    return n;
}

/* Writes into out[] the global byte index of every byte of rank's tile on s. */
void tile_globals(const side_t *s, uint32_t rank, uint64_t *out)
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

ncclxM2nTensor_t descriptor(const side_t *s, ncclxDataType_t dtype, void *data)
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

uint32_t test_nodes(uint32_t ranks)
{
    const char *env = getenv("TEST_NODES");
    const int n = env != NULL ? atoi(env) : 0;
    return n > 0 && ranks % (uint32_t)n == 0 ? (uint32_t)n : 0;
}

/* nodes > 0: a loopback team shaped as that many emulated nodes; 0: test_nodes(ranks). */
void team_open_shaped(team_t *t, uint32_t ranks, uint32_t nodes, uint64_t staging_per_rank)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    plan.m2n_staging_bytes = staging_per_rank * ranks;
    plan.m2n_max_group_entries = MAX_TENSORS;
    if (nodes == 0) {
        nodes = test_nodes(ranks);
    }
    t->ranks = ranks;
    t->nodes = nodes;
    config.num_ranks = ranks;
    config.num_nodes = nodes;
    assert_ncclx_ok(ncclxLoopbackInitConfig(&plan, &config, t->ctx));
    for (uint32_t r = 0; r < ranks; r++) {
        assert_int_equal(cudaStreamCreateWithFlags(&t->stream[r], cudaStreamNonBlocking),
                         cudaSuccess);
    }
}

void team_open(team_t *t, uint32_t ranks, uint64_t staging_per_rank)
{
    team_open_shaped(t, ranks, 0, staging_per_rank);
}

void team_close(team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaStreamSynchronize(t->stream[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(t->stream[r]), cudaSuccess);
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxFinalize(t->ctx[r]));
    }
}

void team_sync(team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaStreamSynchronize(t->stream[r]), cudaSuccess);
    }
}

/* Every rank's tile of each side of a tensor: CANARY bytes before and after (0xA5). */

void tiles_alloc(const team_t *t, const tensor_t *x, tiles_t *tl)
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

void tiles_free(tiles_t *tl)
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

void *tile_ptr(const tiles_t *tl, int k, uint32_t r)
{
    return tl->dev[k][r] != NULL ? tl->dev[k][r] + CANARY : NULL;
}

/* Host images of (canary, tile, canary): sources hold version salt, destinations poison. */
uint8_t *image(const tiles_t *tl, int k, uint32_t r, uint64_t salt)
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
void upload(const team_t *t, const tiles_t *tl, uint64_t salt, uint8_t **keep, int *kept)
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
void check(const team_t *t, const tiles_t *tl, uint64_t salt, int moved, const char *what)
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
void reshard_all(const team_t *t, const tensor_t *x, const tiles_t *tl, uint32_t n)
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
void run_tensors(uint32_t ranks, uint64_t staging_per_rank, const tensor_t *x, uint32_t n,
                 const char *what)
{
    run_tensors_shaped(ranks, 0, staging_per_rank, x, n, what);
}

/* run_tensors on a team of `nodes` emulated nodes (team_open_shaped). */
void run_tensors_shaped(uint32_t ranks, uint32_t nodes, uint64_t staging_per_rank,
                        const tensor_t *x, uint32_t n, const char *what)
{
    team_t t;
    static tiles_t tl[MAX_TENSORS];
    uint8_t **keep = malloc(sizeof(uint8_t *) * 2 * MAX_RANKS * MAX_TENSORS * 3);
    int kept = 0;
    uint64_t salt[3];
    uint32_t err[MAX_RANKS];
    assert_non_null(keep);
    team_open_shaped(&t, ranks, nodes, staging_per_rank);
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
    if (t.nodes != 0) {
        printf("# %s: %u ranks on %u emulated nodes, %u tensor(s), exact\n", what, ranks, t.nodes,
               n);
    } else {
        printf("# %s: %u ranks, %u tensor(s), exact\n", what, ranks, n);
    }
}

side_t side1(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t ranks, uint32_t start,
             int32_t placement)
{
    side_t s = {ndims, elem, {g[0], g[1], g[2]}, 1, {ranks, 1}, start, {placement, -1}};
    return s;
}

side_t side2(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t d0, uint32_t d1,
             uint32_t start, int32_t p0, int32_t p1)
{
    side_t s = {ndims, elem, {g[0], g[1], g[2]}, 2, {d0, d1}, start, {p0, p1}};
    return s;
}

ncclxDataType_t dtype_of(uint32_t elem)
{
    return elem == 1   ? NCCLX_UINT8
           : elem == 2 ? NCCLX_BFLOAT16
           : elem == 4 ? NCCLX_FLOAT32
                       : NCCLX_FLOAT64;
}

tensor_t tensor(side_t s, side_t d)
{
    tensor_t x = {s, d, dtype_of(s.elem)};
    return x;
}
