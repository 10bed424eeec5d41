/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The machinery of the M2N GPU tests (tests/gpu/test_m2n.c, test_m2n_faults.c): random bytes as
 * a function of a tensor's global byte index, each side of a tensor as the test understands the
 * mesh rules of include/ncclx/m2n.h (never the library's planner), a loopback team, every
 * rank's tiles with canaries, uploads, byte-for-byte checks, and one reshard on every rank
 * (each function is described where it is defined, tests/gpu/m2n_harness.c).
 */
#ifndef NCCLX_TEST_M2N_HARNESS_H_
#define NCCLX_TEST_M2N_HARNESS_H_

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ncclx_test.h"

#define MAX_RANKS   24
#define CANARY      256
#define MAX_TENSORS 100
#define STAGING     (4u * 512u * 1024u) /* per rank: slices of 512 KiB */

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

typedef struct {
    uint32_t ranks;
    uint32_t nodes; /* emulated nodes of the loopback team; 0: no shape */
    ncclxContext_t ctx[MAX_RANKS];
    cudaStream_t stream[MAX_RANKS];
} team_t;

typedef struct {
    uint64_t bytes[2];
    uint8_t *dev[2][MAX_RANKS]; /* the allocation (canary, tile, canary); NULL off the mesh */
    uint64_t *globals[2][MAX_RANKS];
} tiles_t;

/* The generator's state (rng_reset, rnd). */
extern uint64_t m2n_rng_state;

uint64_t mix64(uint64_t x);
uint64_t rnd(void);
void rng_reset(const char *name);
uint8_t value(uint64_t g, uint64_t salt);
uint32_t side_size(const side_t *s);
int side_shard(const side_t *s, uint32_t rank, uint32_t *shard, int *shard_dim, uint32_t *shards);
void local_shape(const side_t *s, uint64_t shape[3]);
uint64_t tile_bytes(const side_t *s);
void tile_globals(const side_t *s, uint32_t rank, uint64_t *out);
ncclxM2nTensor_t descriptor(const side_t *s, ncclxDataType_t dtype, void *data);
/* TEST_NODES=N when N divides ranks (the same assertions across load/store domains,
 * tests/gpu/run_m2n_nodes.sh), else 0: the emulated nodes team_open gives `ranks` ranks. */
uint32_t test_nodes(uint32_t ranks);
void team_open(team_t *t, uint32_t ranks, uint64_t staging_per_rank);
void team_open_shaped(team_t *t, uint32_t ranks, uint32_t nodes, uint64_t staging_per_rank);
void team_close(team_t *t);
void team_sync(team_t *t);
void tiles_alloc(const team_t *t, const tensor_t *x, tiles_t *tl);
void tiles_free(tiles_t *tl);
void *tile_ptr(const tiles_t *tl, int k, uint32_t r);
uint8_t *image(const tiles_t *tl, int k, uint32_t r, uint64_t salt);
void upload(const team_t *t, const tiles_t *tl, uint64_t salt, uint8_t **keep, int *kept);
void check(const team_t *t, const tiles_t *tl, uint64_t salt, int moved, const char *what);
void reshard_all(const team_t *t, const tensor_t *x, const tiles_t *tl, uint32_t n);
void run_tensors(uint32_t ranks, uint64_t staging_per_rank, const tensor_t *x, uint32_t n,
                 const char *what);
void run_tensors_shaped(uint32_t ranks, uint32_t nodes, uint64_t staging_per_rank,
                        const tensor_t *x, uint32_t n, const char *what);
side_t side1(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t ranks, uint32_t start,
             int32_t placement);
side_t side2(uint32_t ndims, const uint64_t g[3], uint32_t elem, uint32_t d0, uint32_t d1,
             uint32_t start, int32_t p0, int32_t p1);
ncclxDataType_t dtype_of(uint32_t elem);
tensor_t tensor(side_t s, side_t d);

#endif /* NCCLX_TEST_M2N_HARNESS_H_ */
