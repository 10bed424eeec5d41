/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The HT (high-throughput) kernels' view of a group, a handle and a call: plain structs of
 * device pointers and sizes, filled by lib/ep/ep_ht.c and lib/ep/ep_ht_args.c and passed by value
 * to the launchers. docs/ep-ht.md describes the algorithm and lists every protocol word.
 *
 * Symmetric memory of an HT group on every rank (same offsets everywhere):
 *   routing map     [T][W] uint32, W = ceil(E / 32): bit e of row t = this rank's token t
 *                   lists expert e (written by the rank itself, read by every rank)
 *   signals         [NCCLX_EP_HT_SIGNALS][R] uint64: (kind, source rank) = the number of
 *                   the source's last finished step of that kind (written by the source),
 *                   then NCCLX_EP_HT_DIRECT_WORDS uint64 of this rank's own: the caller's
 *                   buffers that the direct path (every rank on this GPU) writes or reads
 *                   in place, each behind the number of the operation it belongs to
 *   dispatch rows   [S][payload_bytes]: received rows at their final place
 *   dispatch meta   [S][K] {int32 expert, float weight}: FLAT ids/weights, EM weight in [0]
 *   combine rows    [S][combine_row_bytes]: this rank's expert outputs, pulled by owners
 *   combine meta    [S][K] float: backward combine's weight gradients
 */
#ifndef NCCLX_KERNELS_EP_HT_H_
#define NCCLX_KERNELS_EP_HT_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "dev_state.h" /* NCCLX_EP_THREADS, ncclx_ep_arrive_t */
#include "net.h"       /* the network transport, across load/store domains */

#ifdef __cplusplus
extern "C" {
#endif

/* Signal kinds: what the source rank has finished, step number + 1 in the low 40 bits; the
 * high 24 bits carry the operation word of the step (NCCLX_EP_HT_SIG_DISPATCH_PUSHED and
 * _COMBINE_STAGED; 0 for the others), which the reader compares with its own. */
#define NCCLX_EP_HT_STEP_BITS           40
#define NCCLX_EP_HT_SIG_MAP_PUBLISHED   0 /* its routing map of update n is written */
#define NCCLX_EP_HT_SIG_MAP_READ        1 /* it has read every map of update n */
#define NCCLX_EP_HT_SIG_DISPATCH_PUSHED 2 /* its rows of dispatch n are in my dispatch rows */
#define NCCLX_EP_HT_SIG_DISPATCH_FREE   3 /* it is done with its dispatch rows of dispatch n */
#define NCCLX_EP_HT_SIG_COMBINE_STAGED  4 /* its combine rows of combine n are staged */
#define NCCLX_EP_HT_SIG_COMBINE_PULLED  5 /* it has read every combine row of combine n */
#define NCCLX_EP_HT_SIGNALS             6
/* Across load/store domains (docs/ep-ht.md, "Across nodes"): the network signals of a group,
 * counters that the sender adds 1 to per step (so after step n the count is n + 1, the value a
 * step signal would hold); id = net_signal_base + kind * R + the sender. */
#define NCCLX_EP_HT_NET_MAP_PUBLISHED 0 /* a remote rank's map of update n is in my copy */
#define NCCLX_EP_HT_NET_MAP_READ      1 /* a remote rank has read my map of update n */
#define NCCLX_EP_HT_NET_RELAY_FILLED                                                               \
    2                                   /* a rail source's rows of dispatch n are in my relay rows \
                                         */
#define NCCLX_EP_HT_NET_RELAY_FREE    3 /* my relay on a node has forwarded my rows of dispatch n */
#define NCCLX_EP_HT_NET_PARTIAL_READY 4 /* a relay's node partials of combine n are in mine */
#define NCCLX_EP_HT_NET_PARTIAL_FREE  5 /* a rail source has read my partials of combine n */
#define NCCLX_EP_HT_NET_SIGNALS       6
/* The network words (symmetric, [2][R] uint64): the operation word that came with a rail
 * source's RELAY_FILLED ([0][s]) and a relay's PARTIAL_READY ([1][r]), as word << 40 | n + 1. */
#define NCCLX_EP_HT_NET_WORD_DISPATCH 0
#define NCCLX_EP_HT_NET_WORD_COMBINE  1

/* The direct words after the signals (the direct path, docs/ep-ht.md): written by the rank
 * itself before it signals the step that lets peers use them. */
#define NCCLX_EP_HT_DIRECT_WORDS       16
#define NCCLX_EP_HT_DIRECT_DISPATCH_OP 0 /* the tag of dispatch n: (n + 1) << 24 | its word */
#define NCCLX_EP_HT_DIRECT_OUT_TOKENS  1 /* its out_tokens, which peers push rows into */
#define NCCLX_EP_HT_DIRECT_OUT_SCALES  2 /* its out_scales (QUANT_FWD), or NULL */
#define NCCLX_EP_HT_DIRECT_COMBINE_OP  3 /* the tag of combine n, alike */
#define NCCLX_EP_HT_DIRECT_EXPERT_OUT  4 /* its expert_out, which peers' reductions read */
                                         /* 5: NULL */
/* The exact row sizes behind the pointers (the word is a 24-bit hash: a collision must never
 * let a peer write or read past a buffer): row_bytes << 32 | scale_bytes, and row_bytes. */
#define NCCLX_EP_HT_DIRECT_DISPATCH_SHAPE 6
#define NCCLX_EP_HT_DIRECT_COMBINE_SHAPE  7
/* Claims (10 to 15 unused): how many peer blocks use this rank's published buffers now.  A
 * peer takes one after the tag matched and checks the tag again; a rank whose operation ends
 * without every peer done (a timeout, a mismatch) closes its tag and waits until no claim is
 * left, so that no late peer writes or reads its buffers after the call. */
#define NCCLX_EP_HT_DIRECT_DISPATCH_CLAIMS 8
#define NCCLX_EP_HT_DIRECT_COMBINE_CLAIMS  9
#define NCCLX_EP_HT_DIRECT_CLOSED          (~0ull) /* a closed tag: no operation's */
/* Teams of at most this many ranks take the direct path (a kernel block keeps every peer's
 * buffer in shared memory). */
#define NCCLX_EP_HT_DIRECT_MAX_RANKS 64

/* HT group state in private device memory (fits NCCLX_EP_DEV_STATE_BYTES).  Step numbers
 * advance in the last block of a step's last kernel, so graph replays advance them too. */
typedef struct {
    unsigned long long route_seq, dispatch_seq, combine_seq;
    ncclx_ep_arrive_t arrive[7]; /* last-block election: route scan, dispatch push, dispatch
                                    copy-out, combine stage, combine reduce, and across domains
                                    the dispatch relay and the combine partials */
    unsigned int error;          /* NCCLX_EP_ERROR_* bits, published to the mapped status */
    unsigned int route_stopped;  /* the current routing does nothing (written by its publish) */
    unsigned int dispatch_incomplete; /* a block of the current push refused a destination that
                                         had not closed (a mismatch): the push's last block
                                         signals PUSHED with NCCLX_EP_HT_WORD_INCOMPLETE mixed in
                                         and clears it */
} ncclx_ep_ht_state_t;

/* Mixed into the operation word of a DISPATCH_PUSHED signal whose push left rows out for a
 * rank that had not closed: no receiver's own word has it, so each reports a mismatch. */
#define NCCLX_EP_HT_WORD_INCOMPLETE 0x800000u

/* What every HT kernel of a group needs. */
typedef struct {
    int rank, ranks, local_experts, num_experts;
    int max_tokens, max_topk, hidden, recv_slots; /* T, K_max, H, S */
    int map_words;                                /* W */
    int blocks;                                   /* grid size of every HT kernel */
    int drop;                                     /* overflow policy DROP */
    int alignment;                                /* EM zone padding, >= 1 */
    int direct;         /* every rank on this GPU and NCCLX_EP_HT_PATH=AUTO: calls with the caller's
                           buffers go straight between them (the call's desc says whether it does) */
    void *const *peers; /* device: symmetric arena base of each rank */
    size_t map, signals, dispatch_rows, dispatch_meta, combine_rows, combine_meta; /* offsets */
    size_t payload_bytes;     /* dispatch row stride */
    size_t combine_row_bytes; /* combine row stride */
    int32_t *expert_hits;     /* device [R][E]: tokens of source s listing expert e (update) */
    int32_t *rank_hits;       /* device [R][R]: tokens of source s hitting rank j (update) */
    ncclx_ep_ht_state_t *state;
    unsigned int *status; /* device view of the mapped status: error bits */
    unsigned long long timeout_ns;
    /* Across load/store domains (nodes > 1; docs/ep-ht.md "Across nodes"): peers holds only
     * this rank's domain (ranks lsa_base .. lsa_base + lsa - 1); a token crosses to another
     * node once, to this rank's rail peer there (the relay, rank n * lsa + rank % lsa), which
     * writes it into its node's rows; combine sums each node's rows there and sends one FP32
     * partial back.  All offsets are symmetric; every region is absent on one domain. */
    int lsa, lsa_base, nodes;
    ncclx_net_desc_t net;
    int net_signal_base;
    size_t net_maps;        /* [R][T][W]: remote rank s's routing map in slot s */
    size_t net_stage;       /* [T][relay_row_bytes]: this rank's tokens packed once */
    size_t net_relay;       /* [nodes - 1][T][relay_row_bytes]: rail sources' tokens, by node */
    size_t net_partial_out; /* [nodes - 1][T][partial_bytes]: node partials for rail sources */
    size_t net_partial_in;  /* [nodes - 1][T][partial_bytes]: node partials of my tokens */
    size_t net_words;       /* [2][R] uint64 (NCCLX_EP_HT_NET_WORD_*) */
    size_t relay_row_bytes; /* token row, scale row (8-aligned), then K {expert, weight} */
    size_t partial_bytes;   /* H floats, then K floats (backward weight gradients) */
} ncclx_ep_ht_group_desc_t;

/* The header at the start of every HT handle's device memory.  The memory holds no pointer,
 * so a byte copy of it is a complete snapshot of the routing (ncclxEpHandleImport checks this
 * header and the checksum before it binds one).  Written by the routing's last kernel. */
#define NCCLX_EP_HT_HANDLE_MAGIC   0x6e786873u /* 'nxhs' */
#define NCCLX_EP_HT_HANDLE_VERSION 1u
typedef struct {
    unsigned int magic, version;
    unsigned long long geometry; /* ncclx_ep_ht_geometry: group, rank, layout, top-k */
    unsigned long long step;     /* the group's routing step that wrote it (1, 2, ...) */
    unsigned long long checksum; /* of the bytes after this header (ncclx_ep_ht_checksum) */
    int num_tokens, topk, layout, idx_int64;
    unsigned long long overflowed; /* the routing overflowed under TRAP: never importable */
    unsigned long long counts;     /* hash of the routing's per-rank counts, equal on every rank */
} ncclx_ep_ht_handle_header_t;

/* One HT handle's device memory (see ncclx_ep_ht_handle_layout_t). */
typedef struct {
    ncclx_ep_ht_handle_header_t *header;
    int32_t *idx;        /* [T][K]: validated top-k, -1 = not routed or a repeated expert */
    int32_t *flat_row;   /* [T][R]: FLAT row of the token at each rank, -1 */
    int32_t *em_row;     /* [T][K]: EM row of each entry at its expert's rank, -1 (EM only) */
    long long *totals;   /* [2]: recv total before any drop, rows delivered (<= S) */
    int32_t *counts;     /* [L]: per local expert, as ncclxEpHandleGetLayout reports them */
    int32_t *offsets;    /* [L + 1]: EM zone starts, clamped to S; [L] = padded total */
    int32_t *zone_count; /* [L]: EM real rows per zone, unclamped */
    int32_t *zone_base;  /* [L]: EM zone starts, clamped to S */
    /* EXPERT_MAJOR handles of a group with the MXFP8 combine (else NULL): this rank's kept
     * receive rows of each (source, token) linked in ascending expert order, so that the
     * combine sums a token's rows here before quantizing them once. */
    int32_t *em_next; /* [S]: the token's next row here, -1 after its last (real rows only) */
    uint8_t *em_head; /* [S]: 1 on the token's first row here, 0 elsewhere (pads too) */
    /* Across load/store domains (else NULL): [nodes - 1][T][K] {row, expert}, slot = the other
     * node (ep_ht_common.cuh, node_slot): the q-th expert
     * (ascending) of the rail source on node n's token t among this rank's node's experts, and
     * its row at the expert's rank (FLAT: the token's row there; -1: dropped); expert -1 ends. */
    int2 *relay;
    int num_tokens, topk, expert_major, global_ids;
    unsigned long long geometry; /* what the header must say (ncclx_ep_ht_geometry) */
    size_t bytes;                /* the whole memory, header included */
} ncclx_ep_ht_handle_desc_t;

typedef struct {
    const void *tokens;        /* [num_tokens, row_bytes] */
    const void *scales;        /* QUANT_FWD: [num_tokens, scale_bytes] */
    const float *topk_weights; /* forward: [num_tokens, K] */
    void *out_tokens, *out_scales, *out_topk_idx, *out_topk_weights;
    size_t row_bytes, scale_bytes;
    int out_idx_int64;
    int backward;
    int in_place; /* out_tokens is this rank's dispatch rows: rows are not copied, and the rows
                     stay in use (no DISPATCH_FREE) until this rank's next dispatch starts */
    int direct;   /* the direct path: peers push rows straight into out_tokens and out_scales
                     (published in the direct words); DISPATCH_FREE as with in_place */
    unsigned op;  /* operation word (ncclx_ep_ht_op_word): every rank's must be the same */
} ncclx_ep_ht_dispatch_desc_t;

typedef struct {
    const void *expert_out;    /* [S, H] */
    const float *topk_weights; /* backward: FLAT [S, K], EM [S] */
    void *out;                 /* [num_tokens, H] */
    float *out_topk_weights;   /* backward: [num_tokens, K] */
    size_t row_bytes;          /* H * element bytes */
    int dtype;                 /* BF16, FP16 or FP32 */
    int mxfp8; /* NCCLX_EP_RECIPE_MXFP8 (BF16, EXPERT_MAJOR): each rank's partial sum of a
                  token is staged once, as E4M3 codes [H] then E8M0 scales [H / 32] */
    int backward;
    int in_place; /* expert_out is this rank's combine rows: nothing to stage */
    int direct;   /* the direct path: peers read expert_out in place (published in the direct
                     words), and the reduction ends only once every peer has read it */
    unsigned op;  /* operation word (ncclx_ep_ht_op_word) */
} ncclx_ep_ht_combine_desc_t;

/* The 24-bit operation word of a dispatch or combine: what a receiver must agree on with the
 * sender to read its rows (layout, pass, top-k, recipe or dtype, row and scale sizes). */
static inline unsigned ncclx_ep_ht_op_word(int expert_major, int backward, int topk, int kind,
                                           size_t row_bytes, size_t scale_bytes, int direct)
{
    /* Every field whole, mixed into 24 bits (a 64-bit finalizer): two different operations
     * share a word with odds of 2^-24, instead of whenever a truncated field wraps. */
    unsigned long long x =
        (unsigned long long)(expert_major & 1) | (unsigned long long)(backward & 1) << 1 |
        (unsigned long long)(topk & 0xff) << 2 | (unsigned long long)(kind & 0xf) << 10 |
        (unsigned long long)(row_bytes & 0xffffffu) << 14 |
        (unsigned long long)(scale_bytes & 0xffffffu) << 38 |
        (unsigned long long)(direct & 1) << 62; /* the paths never meet in one operation */
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (unsigned)(x & 0xffffffu);
}

/* Where ncclxEpHandleGetLayout writes (NULL: absent). */
typedef struct {
    void *counts, *offsets, *total;
    int int64, offsets_entries; /* L or L + 1 */
} ncclx_ep_ht_layout_desc_t;

/** Routes the handle: validates topk_idx ([num_tokens, K], int32 or int64) into the handle,
 *  publishes this rank's routing map, counts every rank's map and computes the handle's rows
 *  (three kernels, collective over the team). */
cudaError_t ncclx_ep_ht_launch_route(const ncclx_ep_ht_group_desc_t *g,
                                     const ncclx_ep_ht_handle_desc_t *h, const void *topk_idx,
                                     int idx_int64, cudaStream_t stream);

/** Checks the snapshot at h (its header against what h describes, and its checksum) and
 *  writes the verdict to *verdict (device-visible host memory): NCCLX_EP_HT_IMPORT_* bits of
 *  what differs, 0 when it may be bound; *step gets the header's routing step.  Reads only. */
#define NCCLX_EP_HT_IMPORT_MAGIC    0x1u
#define NCCLX_EP_HT_IMPORT_VERSION  0x2u
#define NCCLX_EP_HT_IMPORT_GEOMETRY 0x4u
#define NCCLX_EP_HT_IMPORT_STATE    0x8u /* num_tokens, topk or index dtype */
#define NCCLX_EP_HT_IMPORT_CHECKSUM 0x10u
#define NCCLX_EP_HT_IMPORT_OVERFLOW 0x20u /* a routing that overflowed under TRAP */
cudaError_t ncclx_ep_ht_launch_verify(const ncclx_ep_ht_group_desc_t *g,
                                      const ncclx_ep_ht_handle_desc_t *h, int idx_int64,
                                      unsigned *verdict, unsigned long long *step,
                                      cudaStream_t stream);

/** Dispatch: pushes this rank's rows to their places, then copies the received rows out. */
cudaError_t ncclx_ep_ht_launch_dispatch(const ncclx_ep_ht_group_desc_t *g,
                                        const ncclx_ep_ht_handle_desc_t *h,
                                        const ncclx_ep_ht_dispatch_desc_t *a, cudaStream_t stream);

/** Combine: stages this rank's expert outputs, then sums every token's rows from its ranks. */
cudaError_t ncclx_ep_ht_launch_combine(const ncclx_ep_ht_group_desc_t *g,
                                       const ncclx_ep_ht_handle_desc_t *h,
                                       const ncclx_ep_ht_combine_desc_t *a, cudaStream_t stream);

/** Writes the handle's counts, offsets and total into the caller's tensors. */
cudaError_t ncclx_ep_ht_launch_layout(const ncclx_ep_ht_group_desc_t *g,
                                      const ncclx_ep_ht_handle_desc_t *h,
                                      const ncclx_ep_ht_layout_desc_t *l, cudaStream_t stream);

/** Clears error bits of an HT group (see ncclx_ep_ll_launch_clear_error). */
cudaError_t ncclx_ep_ht_launch_clear_error(const ncclx_ep_ht_group_desc_t *g, unsigned bits,
                                           cudaStream_t stream);

/* Load each file's kernels now (EP's room calls them at init, lib/ep/ep_groups.c). */
cudaError_t ncclx_ep_ht_route_load(void);
cudaError_t ncclx_ep_ht_rows_load(void);
cudaError_t ncclx_ep_ht_net_load(void);
cudaError_t ncclx_ep_ht_data_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_EP_HT_H_ */
