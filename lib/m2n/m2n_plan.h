/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N transfer planning on the host (include/ncclx/m2n.h; lib/m2n/m2n.c runs what it plans).  A
 * distributed tensor lives on a mesh of ranks: 1 or 2 mesh axes over a contiguous interval of the
 * context's ranks, row-major; per mesh axis, its placement replicates the tensor or shards one
 * tensor dim evenly.  Moving a tensor from a source layout to a destination layout is planned as
 * boxes: for each (source shard i, destination shard j) pair, their overlap in global coordinates,
 * cut into runs of contiguous bytes in both local tiles.  Which source replica serves which
 * destination replica is a fixed, balanced choice. Everything is a pure function of the two
 * descriptors, so every rank computes the same plan without communication.  Sizes along the last
 * dim are in bytes (elements x element size).
 */
#ifndef NCCLX_LIB_M2N_PLAN_H_
#define NCCLX_LIB_M2N_PLAN_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx.h>

/** A mesh, as the public API describes it (include/ncclx/m2n.h). */
typedef ncclxM2nMesh_t ncclx_m2n_mesh_t;

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
    uint32_t node_size; /* ranks per load/store domain (node): ranks r and r' share one when
                           r / node_size == r' / node_size; ncclx_m2n_geom sets the world
                           (one domain), the caller the team's lsa_size */
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

/** The source replica whose shard i serves destination shard j of replica q: the block rule's
 *  (ncclx_m2n_server) when that rank is on the destination's node or no replica of shard i
 *  is; otherwise one of those on the destination's node (number q mod their count, in replica
 *  order), so that bytes a node already holds do not cross the network.  On one domain it is
 *  always the block rule's. */
uint32_t ncclx_m2n_serving_replica(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t i,
                                   uint32_t j, uint32_t q);

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

/** Where byte `pos` of the box (0 <= pos < box->bytes, box order: piece (a0, a1) outer, a1
 *  fastest, then the run) lies: its offsets in the source and destination tiles, and how many
 *  bytes from there on stay contiguous in both (up to the end of its run). */
void ncclx_m2n_box_locate(const ncclx_m2n_box_t *box, uint64_t pos, uint64_t *src_offset,
                          uint64_t *dst_offset, uint64_t *contiguous);

/** The most transfers any one rank can have in a reshard of s into d (an upper bound, the same
 *  on every rank: the launch bounds are checked with it, so every rank splits a group alike). */
uint32_t ncclx_m2n_transfer_bound(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d);

/*
 * A launch as one rank runs it.  Its transfers with one peer in one direction form a pair: the
 * pair's boxes (one per tensor of the launch, in tensor order) laid end to end, each starting
 * at a 16-byte multiple, make the pair's stream, which moves in rounds through the source's
 * ring of slices at the destination.  Both ends list the same boxes in the same order.  Pairs
 * are sorted by (source rank, destination rank); blocks take them in that order.
 */
typedef struct {
    uint32_t peer, send; /* send: this rank is the source */
    uint32_t first_box, num_boxes;
    uint32_t first_block, blocks;
    uint32_t channels; /* kernels/m2n/m2n_ring.h's ncclx_m2n_pair_channels: the same at both ends */
    uint32_t reserved;
    uint64_t bytes; /* the stream's length */
} ncclx_m2n_pair_t;

typedef struct {
    uint32_t entry; /* the tensor of the launch (whose tile the box lies in) */
    uint32_t reserved;
    uint64_t offset; /* this rank's side: tile offset of piece (0, 0) */
    uint64_t run, pieces[2], stride[2];
    uint64_t peer_offset, peer_stride[2]; /* the same on the peer's tile (the direct path) */
    uint64_t begin, bytes;                /* place in the pair's stream */
} ncclx_m2n_run_t;

typedef struct {
    uint32_t num_pairs, num_boxes;
    uint32_t blocks; /* grid: at least 1, at most max(budget, 2) (a self copy needs two) */
    uint32_t reserved;
    ncclx_m2n_pair_t pairs[NCCLX_M2N_MAX_PEERS];
    ncclx_m2n_run_t boxes[NCCLX_M2N_MAX_TRANSFERS];
} ncclx_m2n_rank_plan_t;

/**
 * rank's part of a launch of n tensors (s[e] into d[e]) in a context of world ranks whose ring
 * (kernels/m2n/m2n_ring.h) has slices of `slice` bytes and `channels` channels per source, with
 * `budget` blocks: every pair gets one block and the rest are shared in proportion to the
 * pairs' bytes (with direct, the direct path's grid: the receiving pairs' bytes only), no pair
 * more blocks than it has channels; with more pairs than the budget, pair k goes to block
 * k % budget.  scratch
 * holds NCCLX_M2N_MAX_TRANSFERS edges.  ncclxResourceExhausted naming NCCLX_M2N_MAX_TRANSFERS
 * or NCCLX_M2N_MAX_PEERS when the launch does not fit (*out is then partly written: the
 * caller must not use it).
 */
ncclxResult_t ncclx_m2n_plan_rank(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t n,
                                  uint32_t rank, uint32_t world, uint64_t slice, uint32_t channels,
                                  uint32_t budget, int direct, ncclx_m2n_edge_t *scratch,
                                  ncclx_m2n_rank_plan_t *out);

#endif /* NCCLX_LIB_M2N_PLAN_H_ */
