/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N transfer planning on the host (groundwork of the resharding issue; no public API uses it
 * yet).  A distributed tensor lives on a mesh of ranks: 1 or 2 mesh axes over a contiguous
 * interval of the context's ranks, row-major; per mesh axis, its placement replicates the
 * tensor or shards one tensor dim evenly.  Moving a tensor from a source layout to a
 * destination layout is planned as boxes: for each (source shard i, destination shard j)
 * pair, their overlap in global coordinates, cut into runs of contiguous bytes in both local
 * tiles.  Which source replica serves which destination replica is a fixed, balanced choice.
 * Everything is a pure function of the two descriptors, so every rank computes the same plan
 * without communication.  Sizes along the last dim are in bytes (elements x element size).
 */
#ifndef NCCLX_LIB_M2N_PLAN_H_
#define NCCLX_LIB_M2N_PLAN_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx.h>

#define NCCLX_M2N_MAX_TENSOR_DIMS 3
#define NCCLX_M2N_MAX_MESH_DIMS   2
#define NCCLX_M2N_REPLICATE       (-1) /* placement of a mesh axis; d >= 0: shard tensor dim d */

/** A mesh: ndims axes of dims[] ranks over [start_rank, start_rank + product), row-major. */
typedef struct {
    uint32_t ndims;
    uint32_t dims[NCCLX_M2N_MAX_MESH_DIMS];
    uint32_t start_rank;
} ncclx_m2n_mesh_t;

/** One side of a reshard as the caller describes it (local tile shape in elements). */
typedef struct {
    uint32_t ndims;
    uint64_t local_shape[NCCLX_M2N_MAX_TENSOR_DIMS];
    uint32_t elem_bytes; /* 1, 2, 4 or 8 */
    ncclx_m2n_mesh_t mesh;
    int32_t placements[NCCLX_M2N_MAX_MESH_DIMS]; /* per mesh axis */
} ncclx_m2n_side_t;

/** A side in canonical form: a 2-axis mesh {d0, d1}, one shard axis (a fully replicated side
 *  is one shard of dim 0), shapes in bytes along the last dim. */
typedef struct {
    uint32_t ndims;
    uint64_t global[NCCLX_M2N_MAX_TENSOR_DIMS]; /* bytes along the last dim */
    uint64_t local[NCCLX_M2N_MAX_TENSOR_DIMS];  /* bytes along the last dim */
    uint64_t stride[NCCLX_M2N_MAX_TENSOR_DIMS]; /* local row-major strides in bytes */
    uint64_t local_bytes;
    uint32_t shard_dim; /* tensor dim the shards cut */
    uint32_t shards, replicas;
    uint32_t shard_axis; /* 0 or 1: the canonical mesh axis that numbers the shards */
    uint32_t dims[2];    /* canonical mesh */
    uint32_t start_rank, size;
} ncclx_m2n_geom_t;

/** One (source shard, destination shard) overlap: pieces[0] x pieces[1] runs of run bytes;
 *  piece (a, b) starts at offset + a * stride[0] + b * stride[1] in each local tile. */
typedef struct {
    uint32_t src_shard, dst_shard;
    uint64_t run;
    uint64_t pieces[2];
    uint64_t src_offset, dst_offset;
    uint64_t src_stride[2], dst_stride[2];
    uint64_t bytes; /* run * pieces[0] * pieces[1] */
} ncclx_m2n_box_t;

/** Checks one side (what names it in errors: "src", "dst") against a context of world ranks
 *  and puts it in canonical form.  ncclxInvalidArgument names the first bad field. */
ncclxResult_t ncclx_m2n_geom(const ncclx_m2n_side_t *side, const char *what, uint32_t world,
                             ncclx_m2n_geom_t *geom);

/** Checks that src and dst can be resharded into each other: same element size and global
 *  shape, disjoint meshes (one rank may be both only when world is 1). */
ncclxResult_t ncclx_m2n_check_pair(const ncclx_m2n_side_t *src, const ncclx_m2n_geom_t *s,
                                   const ncclx_m2n_side_t *dst, const ncclx_m2n_geom_t *d,
                                   uint32_t world);

/** The shard and replica of rank on g: 1 when the rank is a member, else 0. */
int ncclx_m2n_position(const ncclx_m2n_geom_t *g, uint32_t rank, uint32_t *shard,
                       uint32_t *replica);

/** The rank of (shard, replica) on g. */
uint32_t ncclx_m2n_rank(const ncclx_m2n_geom_t *g, uint32_t shard, uint32_t replica);

/** The source replica that serves destination replica q: balanced blocks (equal counts: q;
 *  fewer sources: source p serves a contiguous block of destinations, the first ones one
 *  larger; more sources: the first source of destination q's block). */
uint32_t ncclx_m2n_server(uint32_t src_replicas, uint32_t dst_replicas, uint32_t q);

/** The overlap of source shard i and destination shard j: 1 and *box when they overlap, else
 *  0. */
int ncclx_m2n_overlap(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t i, uint32_t j,
                      ncclx_m2n_box_t *box);

/** One transfer of a rank's schedule: the peer rank and the box moved between them. */
typedef struct {
    uint32_t peer;
    ncclx_m2n_box_t box;
} ncclx_m2n_edge_t;

/** A rank's part of a reshard: as a source, what it sends to whom (ascending destination
 *  shard, then replica); as a destination, what it receives from whom (ascending source
 *  shard).  A rank in neither mesh has no edge. */
typedef struct {
    int is_src, is_dst;
    uint32_t shard, replica; /* on the side the rank belongs to */
    uint32_t num_edges;
    uint32_t num_sends; /* edges[0 .. num_sends) are sends, the rest receives */
    uint64_t bytes;     /* sum of the edges' bytes */
} ncclx_m2n_schedule_t;

/** Fills edges[0 .. capacity) with rank's transfers; ncclxResourceExhausted (naming
 *  `bound`, the plan field that caps them) when they do not fit, nothing written then. */
ncclxResult_t ncclx_m2n_schedule(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                 uint32_t rank, ncclx_m2n_edge_t *edges, uint32_t capacity,
                                 const char *bound, ncclx_m2n_schedule_t *out);

/*
 * Staging in rounds.  A destination rank's staging area (the plan's staging bytes, symmetric
 * memory) is cut into one slice per incoming edge (in the order of its schedule), and each
 * slice into two halves, so that a source packs round k + 1 while the destination unpacks round
 * k.  Round k of an edge carries bytes [k * chunk, (k + 1) * chunk) of the edge's box, read in
 * box order (piece (a0, a1) outer, a1 fastest, then the run).
 */

/** Bytes of one round of an edge (one half of its slice, 16-byte multiple) when a destination
 *  with `staging` bytes receives `edges` edges; 0 when that is below `min_chunk`. */
uint64_t ncclx_m2n_chunk_bytes(uint64_t staging, uint32_t edges, uint64_t min_chunk);

/** Offset of edge e's slice (half h) in its destination's staging area. */
uint64_t ncclx_m2n_slice_offset(uint64_t chunk, uint32_t e, uint32_t h);

/** Rounds that an edge of `bytes` bytes takes with rounds of `chunk` bytes (at least 1). */
uint64_t ncclx_m2n_rounds(uint64_t bytes, uint64_t chunk);

/** Where byte `pos` of the box (0 <= pos < box->bytes, box order) lies: its offsets in the
 *  source and destination tiles, and how many bytes from there on stay contiguous in both (up
 *  to the end of its run). */
void ncclx_m2n_box_locate(const ncclx_m2n_box_t *box, uint64_t pos, uint64_t *src_offset,
                          uint64_t *dst_offset, uint64_t *contiguous);

/** One transfer as the GPU will run it: a send (this rank packs into the peer's staging) or a
 *  receive (this rank unpacks from its own staging); both ends of an edge compute the same
 *  slot, chunk and rounds. */
typedef struct {
    uint32_t peer;
    uint32_t send; /* 1: this rank is the source */
    uint32_t slot; /* the edge's slice in the destination's staging (its receive order) */
    uint32_t reserved;
    uint64_t chunk;  /* bytes per round */
    uint64_t rounds; /* ncclx_m2n_rounds(box.bytes, chunk) */
    ncclx_m2n_box_t box;
} ncclx_m2n_xfer_t;

/** rank's transfers (its schedule, ncclx_m2n_schedule) with staging rounds for destinations of
 *  `staging` bytes: ncclxResourceExhausted naming `bound` when they exceed capacity, and
 *  naming `staging_field` when a destination's chunk would fall below min_chunk. */
ncclxResult_t ncclx_m2n_transfers(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d,
                                  uint32_t rank, uint64_t staging, uint64_t min_chunk,
                                  const char *staging_field, ncclx_m2n_edge_t *scratch,
                                  ncclx_m2n_xfer_t *out, uint32_t capacity, const char *bound,
                                  uint32_t *count);

#endif /* NCCLX_LIB_M2N_PLAN_H_ */
