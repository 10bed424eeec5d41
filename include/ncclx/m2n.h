/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N: move a distributed tensor from one mesh of ranks (layout A) to another (layout B),
 * GPU to GPU, in one collective call.  Typical use: after a training step, move every weight
 * from the trainer layout (e.g. TP2 x DP2, sharded on dim 0 or 1) to the inference layout
 * (e.g. 16 replicas).  Only bytes move: no conversion, no reduction.  docs/m2n.md explains the
 * concepts, the planning and the protocol.
 *
 * A mesh is 1 or 2 axes of ranks over a contiguous interval of the context's ranks, row-major.
 * A tensor has 1 to 3 dims; each rank holds a dense row-major local tile.  Per mesh axis its
 * placement replicates the tensor or shards one tensor dim evenly; at most one axis shards.
 *
 * Allocation-free and capturable: the staging memory and every control word come from the
 * plan (ncclxPlan_t.m2n_*) at init; a call plans on the host (a pure function of the two
 * descriptors, the same on every rank, no communication) and enqueues one kernel.  Calls and
 * groups can be captured in a CUDA graph and replayed with new data in the same tiles.
 */
#ifndef NCCLX_M2N_H_
#define NCCLX_M2N_H_

#include <stdint.h>

#include <ncclx/init.h>
#include <ncclx/plan.h>
#include <ncclx/result.h>
#include <ncclx/struct.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLX_M2N_MAX_TENSOR_DIMS 3
#define NCCLX_M2N_MAX_MESH_DIMS   2
/** Placement of a mesh axis: the axis replicates the tensor... */
#define NCCLX_M2N_REPLICATE (-1)
/** ...or shards tensor dim d evenly over the axis' ranks. */
#define NCCLX_M2N_SHARD(d) ((int32_t)(d))

/** Per launch and rank: at most this many (peer, tensor) transfers... */
#define NCCLX_M2N_MAX_TRANSFERS 256u
/** ...and this many peers (a group larger than that runs as several launches). */
#define NCCLX_M2N_MAX_PEERS 64u

/** A mesh: ndims axes of dims[] ranks over [start_rank, start_rank + dims product) of the
 *  context's ranks; rank start_rank + l sits at (l / dims[1], l % dims[1]) (a 1-axis mesh:
 *  dims[1] is ignored). */
typedef struct {
    uint32_t ndims; /**< 1 or 2 */
    uint32_t dims[NCCLX_M2N_MAX_MESH_DIMS];
    uint32_t start_rank;
} ncclxM2nMesh_t;

#define NCCLX_MAGIC_M2N_TENSOR 0x6e786d74u /* 'nxmt' */

/** One side of a reshard, as this rank sees it.  Every rank of the context passes the same
 *  descriptors except data: this rank's tile when it is in the mesh, NULL when it is not. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    void *data;            /**< device tile, dense row-major local_shape; NULL off the mesh */
    ncclxDataType_t dtype; /**< any type: only its size matters (1, 2, 4 or 8 bytes) */
    uint32_t ndims;        /**< 1 to 3 */
    uint64_t local_shape[NCCLX_M2N_MAX_TENSOR_DIMS]; /**< tile shape in elements, on every rank */
    ncclxM2nMesh_t mesh;
    int32_t placements[NCCLX_M2N_MAX_MESH_DIMS]; /**< per mesh axis: REPLICATE or SHARD(d) */
} ncclxM2nTensor_t;

#define NCCLX_M2N_TENSOR_INIT                                                                     \
    {                                                                                             \
        NCCLX_STRUCT_HEADER_INIT(ncclxM2nTensor_t, NCCLX_MAGIC_M2N_TENSOR), NULL, NCCLX_UINT8, 1, \
            {0, 0, 0}, {1, {1, 1}, 0},                                                            \
        {                                                                                         \
            NCCLX_M2N_REPLICATE, NCCLX_M2N_REPLICATE                                              \
        }                                                                                         \
    }

/**
 * Reshards src into dst: every byte of dst's tiles is written from the global tensor that
 * src's tiles describe.  Collective over every rank of the context, in the same order: ranks
 * in neither mesh call it too (data NULL on both sides).  Meshes must be disjoint (both may be
 * rank 0 on a one-rank context: a copy).  Enqueued on stream; returns without waiting.
 *
 * Errors, each naming the field: a descriptor error (dims, shapes, placements, meshes, dtype
 * sizes, global shapes that differ, a call beyond NCCLX_M2N_MAX_TRANSFERS or
 * NCCLX_M2N_MAX_PEERS) is seen by every rank alike, so every rank returns it and nothing is
 * enqueued.  A tile error (data NULL on a member, set on a non-member, not aligned to its
 * element size; in a group, an entry on another stream than entry 0's) is seen by its own rank
 * only: that rank returns ncclxInvalidArgument and its
 * kernel votes the call down, so that no rank moves any byte of it; the others then find
 * NCCLX_M2N_ERROR_REFUSED in ncclxM2nGetAsyncError once their stream reaches the call.
 * A context planned without M2N (m2n_staging_bytes 0): ncclxInvalidUsage.  After a wait timed
 * out (NCCLX_M2N_ERROR_TIMEOUT): ncclxTimeout, for good.  The timeout (NCCLX_TIMEOUT_MS, else
 * 100 s) counts from when this rank's stream reaches the call: set it above the longest time
 * the ranks may arrive apart (e.g. a trainer's step while the generators already wait).
 */
ncclxResult_t ncclxM2nReshard(ncclxContext_t ctx, const ncclxM2nTensor_t *src,
                              const ncclxM2nTensor_t *dst, ncclxStream_t stream);

/**
 * Groups: between ncclxM2nGroupStart and ncclxM2nGroupEnd, ncclxM2nReshard records the call
 * (descriptors copied; tiles must stay valid until the work completes) and returns
 * ncclxSuccess.  Start/End nest; the outermost End checks every entry and enqueues them as
 * few launches as the per-launch bounds allow (each launch moves several tensors at once).
 * Every entry must use the stream of the first.  An entry's error is reported by End as
 * "entry i of n: ..." and nothing of the group moves.  A call that cannot be recorded (a bad
 * struct header, a full group) fails at once and makes End fail ("entry i: ...") without
 * enqueueing: every rank must record the same entries, or its peers wait for it until the
 * timeout.  Abort drops every recorded entry and
 * every nesting level.  A group holds at most ncclxPlan_t.m2n_max_group_entries entries
 * (ncclxResourceExhausted when one more is recorded).
 */
ncclxResult_t ncclxM2nGroupStart(ncclxContext_t ctx);
ncclxResult_t ncclxM2nGroupEnd(ncclxContext_t ctx);
ncclxResult_t ncclxM2nGroupAbort(ncclxContext_t ctx);

/** Asynchronous M2N errors (bits of ncclxM2nGetAsyncError). */
#define NCCLX_M2N_ERROR_TIMEOUT 0x1u /**< a wait timed out: M2N exchanges nothing more */
#define NCCLX_M2N_ERROR_REFUSED 0x2u /**< a rank refused a call (its tile error): nothing moved */
/** Ranks described a call differently: nothing moved.  On the direct path (one GPU) a
 *  difference that the vote's hash missed is found before any peer tile is read; it comes with
 *  TIMEOUT (M2N stops) and the call's destinations must not be used. */
#define NCCLX_M2N_ERROR_MISMATCH 0x4u

/** The M2N error bits this rank's kernels have reported (0: none). */
ncclxResult_t ncclxM2nGetAsyncError(ncclxContext_t ctx, uint32_t *error);

/** Clears, in stream order, the REFUSED and MISMATCH bits of this rank's M2N error word that
 *  this call reads (a TIMEOUT stays).  A bit that a kernel reports after that read survives:
 *  no report is lost.  The clear runs on stream after the context's last eager M2N call (on
 *  any stream) and before its next one, like an M2N call.  Does not wait for the GPU: the
 *  word reads without the bits once the clear has run (synchronize stream to be sure).
 *  Capturable; a captured clear clears the bits seen at capture, and nothing when none was. */
ncclxResult_t ncclxM2nClearAsyncError(ncclxContext_t ctx, ncclxStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_M2N_H_ */
