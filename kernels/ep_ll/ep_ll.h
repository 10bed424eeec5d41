/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL dispatch/combine kernels' view of a group, a handle and a call: plain structs of
 * device pointers and sizes, filled by lib/ep/ep.c, lib/ep/ep_ll.c and lib/ep/ep_ll_args.c and
 * passed by value to the launchers.
 *
 * Symmetric memory of a group on every rank (same offsets everywhere):
 *   dispatch receive area [2][R][T] messages of msg_bytes: (parity, source, slot)
 *   combine receive area  [2][T][combine_slots] rows of combine_slot_bytes: (parity, token, j)
 *   signals               [2][R] x {dispatch, combine} uint64: (parity, source)
 *   dispatch counts       expert-major: [2][R][L] int32: (parity, source, local expert), the
 *                         rows the source sends each local expert, stored before its signal
 *   zero copy (zero_copy) expert-major output rows [L][R][T] and scale rows, rank-major
 *                         output rows [R][T] and scale rows (each with its layout in the
 *                         plan); count boards [2][R] (parity, source)
 *   mask words (enable_mask) clean round one [R] uint64, clean round two [R] uint64, and
 *                         evicted [R] uint32 (rank r was masked by some rank's timeout)
 * The message and signal formats are in ep_ll_wire.h; docs/ep-ll.md lists every word.
 */
#ifndef NCCLX_KERNELS_EP_LL_H_
#define NCCLX_KERNELS_EP_LL_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "dev_state.h" /* NCCLX_EP_THREADS, ncclx_ep_arrive_t */
#include "ep_ll_wire.h"
#include "net.h" /* the network transport, across load/store domains */

#ifdef __cplusplus
extern "C" {
#endif

/* Group state in private device memory (NCCLX_EP_DEV_STATE_BYTES).  Sequence numbers are
 * read and advanced only through op_begin/op_end (ep_ll_common.cuh) and reset by a clean. */
typedef struct {
    unsigned long long dispatch_seq;
    unsigned long long combine_seq;
    ncclx_ep_arrive_t dispatch_arrive;
    ncclx_ep_arrive_t combine_arrive;
    ncclx_ep_arrive_t unpack_arrive;
    ncclx_ep_arrive_t reduce_arrive;
    ncclx_ep_arrive_t net_arrive; /* the network kernels of dispatch and combine (one at a time) */
    unsigned int error;           /* NCCLX_EP_ERROR_* bits, published to the mapped status */
    unsigned int reserved;
    unsigned long long clean_epoch; /* generation of the last clean every answering rank finished */
    unsigned long long clean_high;  /* highest generation any clean of this rank agreed on */
    ncclx_ep_arrive_t board_first;  /* first_block of a send that posts its board (board_in_send) */
    ncclx_ep_arrive_t signal_first; /* first_block of a receive that signals (signal_in_recv) */
} ncclx_ep_dev_state_t;

/* What every LL kernel of a group needs. */
typedef struct {
    int rank, ranks, local_experts, num_experts;
    int max_tokens, max_topk, hidden;
    int blocks; /* grid size of the data-moving kernels */
    /* A receive kernel may be launched before its send ended (early_recv), and a zero-copy
     * send before its board kernel ended: the rank has a GPU of compute capability 9.0 or
     * later to itself (not a loopback team of several ranks). */
    int early_launch;
    /* device: symmetric arena base of each rank of this rank's load/store domain, ranks
     * [lsa_base, lsa_base + lsa_size): peers[r - lsa_base] (peer_base).  Every other rank is
     * reached only through net (docs/multi-node.md): what goes to it is staged in this rank's
     * net_dispatch_out / net_combine_out and put into its arena where a store would have put
     * it; its signals arrive as network signals (net_signal_base + (parity * 2 + dir) * R +
     * source) after it put the signal word into this rank's signal slot. */
    void *const *peers;
    int lsa_base, lsa_size;
    ncclx_net_desc_t net;
    size_t net_dispatch_out, net_combine_out; /* symmetric: [R - lsa][T] messages, rows */
    size_t net_dispatch_counts; /* symmetric, expert-major: [R - lsa][L] int32 counts out */
    int net_combine_rows; /* staged combine rows per message: expert-major min(K, L), else 1 */
    /* With a mask (enable_mask) across domains: remote sources' combine rows land here, laid out
     * as their staging, and are copied into the combine area once the source counts (so late
     * rows of an evicted remote rank land where nothing reads them); (size_t)-1 without. */
    size_t net_combine_in;
    unsigned long long *net_seen; /* device [2][R]: clean round signals consumed, per source */
    unsigned long long *net_base; /* device [4][R]: op signal counts at the last clean */
    int net_signal_base;
    size_t dispatch_recv, combine_recv, signals; /* region offsets in the symmetric arena */
    size_t dispatch_counts;                      /* expert-major groups: [2][R][L] int32 (above) */
    /* Zero copy (a group planned with zero_copy; offsets (size_t)-1 without): expert-major
     * dispatch rows are stored by their sender straight into the receiver's zero-copy rows
     * [L][R][T] (and scale rows), at places every rank learns from the count boards [2][R]
     * (ep_ll_wire.h) before any row moves (the handle keeps where they went:
     * zero_copy_starts); rank-major rows into its rank-major rows [R][T] at (source, slot),
     * a place the sender knows (the boards are then only the handshake that the receiver is
     * done with its previous rows).  A combine may read them back from there (pull, below). */
    int zero_copy;
    size_t zero_copy_rows, zero_copy_scales, count_boards, board_bytes;
    size_t zero_copy_rm_rows, zero_copy_rm_scales;
    size_t msg_bytes;
    size_t combine_slot_bytes;
    int combine_slots;
    ncclx_ep_dev_state_t *state; /* device */
    unsigned int *status;        /* device view of the mapped status: error bits */
    unsigned long long timeout_ns;
    /* Per (direction, source): what this rank concluded about the source in the current
     * operation, (tag << 32 | count + 1), 0 in the low word = not counted.  Every block and
     * thread of the rank uses the one answer. */
    unsigned long long *decisions; /* device [2][R] */
    /* Masking (NULL / unused without it): inactive[r] != 0 when rank r is masked out (zeroed
     * arenas = every rank active); mask_words is the symmetric region described above. */
    int *inactive;
    size_t mask_words;
    unsigned int *evicted; /* this rank's own evicted words (symmetric, local address) */
} ncclx_ep_ll_group_desc_t;

/* One handle's device memory (see ncclx_ep_ll_handle_layout_t).  Expert-major also has
 * expert_slot [T, K] (the token's index among this rank's tokens to the entry's expert, in token
 * order) and expert_count [E] (this rank's tokens to each expert), both from the routing; on a
 * zero_copy group, zero_copy_starts [E] (where the handle's last dispatch put this rank's rows of
 * each expert among that expert's rows at its rank, -1 for none; the dispatch's boards write it).
 */
typedef struct {
    int32_t *idx, *route, *send_count, *recv_count, *recv_tok, *recv_pos;
    int32_t *expert_slot, *expert_count, *zero_copy_starts;
    int num_tokens, topk, expert_major, global_ids;
} ncclx_ep_ll_handle_desc_t;

/* Data types as the kernels know them (values of ncclxDataType_t). */
typedef struct {
    const void *tokens;        /* [num_tokens, row_bytes] */
    const void *scales;        /* QUANT_FWD: [num_tokens, scale_bytes] */
    const float *topk_weights; /* [num_tokens, K] or NULL */
    void *out_tokens, *out_scales, *out_topk_idx, *out_topk_weights;
    int32_t *out_counts;
    size_t row_bytes;     /* input token row bytes (FP8: BF16 row = hidden * 2) */
    size_t out_row_bytes; /* output token row bytes */
    size_t scale_bytes;   /* scale row bytes (FP8: hidden / 128 * 4) */
    int recipe;           /* NCCLX_EP_RECIPE_* */
    int round_scales;
    int out_idx_int64; /* rank-major out_topk_idx is INT64 */
    unsigned op;       /* operation word (ep_ll_wire.h): checked by every receiver */
    int wait_in_send;  /* the send's last block waits for the sources (no wait kernel): set
                          by the host for a dispatch that is not send_only, in one load/store
                          domain, of at most NCCLX_EP_THREADS ranks */
    int early_recv;    /* the receive kernel is a programmatic dependent of the send (see
                          ncclx_ep_ll_launch_dispatch_recv): wait_in_send and early_launch */
    /* Zero copy (a dispatch of a zero_copy group): rows go straight to the receivers' zero-copy
     * rows of the handle's layout, messages carry header and entries only; copy_rows /
     * copy_scales: out_tokens / out_scales are not this rank's zero-copy rows, so the receive
     * copies the rows there from them. */
    int zero_copy, copy_rows, copy_scales;
    int board_in_send; /* zero copy, early_recv: no board kernel; the send's blocks exchange the
                          boards (the first block to run posts, every block waits for the
                          peers') */
    int recv_in_send;  /* a team of one, zero copy into its own rows (no copy_rows or
                          copy_scales), wait_in_send: the send records the messages it sends
                          itself and ends the operation; no receive kernel */
} ncclx_ep_ll_dispatch_desc_t;

/* The combine receive reduces a token's row in units of this many elements (one warp each). */
#define NCCLX_EP_LL_REDUCE_UNIT_ELEMS 256
/* A combine whose receive has at most this many (token, unit) units (two steps of one block's
 * warps: a token of hidden 7168, a few of a smaller hidden) may be reduced by the send's last
 * block (a team of one reducing its own rows: by the send's grid of at most two blocks, a warp
 * a unit): see reduce_in_send. */
#define NCCLX_EP_LL_REDUCE_IN_SEND_UNITS 32

typedef struct {
    const void *expert_out;    /* EM [L, R*T, H] or RM [R, T, H] */
    const float *topk_weights; /* EM [num_tokens, K] */
    void *out;                 /* [num_tokens, H] */
    int dtype;                 /* BF16, FP16 or FP32 (ncclxDataType_t values) */
    unsigned op;               /* combine operation word (ep_ll_wire.h) */
    int reduce_in_send;        /* the send's last block waits for the sources and reduces (no
                                  receive kernel): set by the host for a combine that is not
                                  send_only, in one load/store domain, of at most
                                  NCCLX_EP_THREADS ranks and NCCLX_EP_LL_REDUCE_IN_SEND_UNITS
                                  units */
    int early_recv;            /* the receive kernel is a programmatic dependent of the send:
                                  the conditions of reduce_in_send but the units, not
                                  reduce_in_send, and early_launch */
    /* Zero copy (a combine of a zero_copy group): zero_copy, the receive reads
     * the rows of the sources that signal pull straight from their zero-copy rows; pull, this
     * rank's expert_out is its zero-copy rows, so its send stores no row and signals pull
     * (docs/ep-ll.md, "Zero copy"). */
    int zero_copy, pull;
    int signal_in_recv; /* pull on a rank alone on its GPU, not send_only and not reduce_in_send:
                           no send kernel; the receive's first block signals, then every block
                           waits and reduces (one kernel per combine; early_recv is 0) */
    int reduce_own;     /* pull in a team of one, reduce_in_send or signal_in_recv: its own rows
                           are all it receives, so it signals itself nothing and waits for
                           nothing (its one source is in its view or nothing is) */
} ncclx_ep_ll_combine_desc_t;

/** Validates topk_idx ([num_tokens, K], int32 or int64) into the handle and routes it. */
cudaError_t ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                     const ncclx_ep_ll_handle_desc_t *h, const void *topk_idx,
                                     int idx_int64, cudaStream_t stream);

/** Whether the LL receive kernels were built with their wait for an early launch (PTX of
 *  compute capability 9.0 or later); see kernels/common/early_launch.cuh. */
int ncclx_ep_ll_early_launch_built(void);

/** Sends the handle's tokens (send phase of dispatch); zero copy: the count boards first. */
cudaError_t ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                             const ncclx_ep_ll_handle_desc_t *h,
                                             const ncclx_ep_ll_dispatch_desc_t *a,
                                             cudaStream_t stream);

/** Dispatch send across load/store domains (ep_ll_net.cu; the send launcher calls it when the
 *  group has a network): every remote destination's staged messages, then its signal. */
cudaError_t ncclx_ep_ll_launch_dispatch_net(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const ncclx_ep_ll_dispatch_desc_t *a,
                                            cudaStream_t stream);

/** Combine send across load/store domains: every staged row to its remote source, then the
 *  source's signal. */
cudaError_t ncclx_ep_ll_launch_combine_net(const ncclx_ep_ll_group_desc_t *g,
                                           const ncclx_ep_ll_handle_desc_t *h,
                                           const ncclx_ep_ll_combine_desc_t *a,
                                           cudaStream_t stream);

/** The grid of the dispatch send for a handle of num_tokens tokens of row_bytes: no more blocks
 *  than its (token, chunk) units need, at most g->blocks, at least 1. */
int ncclx_ep_ll_dispatch_send_blocks(const ncclx_ep_ll_group_desc_t *g, int num_tokens,
                                     size_t row_bytes);

/** Warps of that grid per (token, chunk) unit, each moving a share of the chunk's bytes to every
 *  destination: with fp8 (the FP8 recipe's send) the warps the units leave spare, 1, 2 or 4 (1 KiB
 *  shares of a 4 KiB chunk); otherwise 1. */
int ncclx_ep_ll_dispatch_send_ways(const ncclx_ep_ll_group_desc_t *g, int num_tokens,
                                   size_t row_bytes, int fp8);

/** The grid of the dispatch receive: g->blocks, or, for a receive that leaves its rows in place
 *  (zero copy, no copy_rows), no more blocks than R x T messages need at one a warp. */
int ncclx_ep_ll_dispatch_recv_blocks(const ncclx_ep_ll_group_desc_t *g,
                                     const ncclx_ep_ll_dispatch_desc_t *a);

/** Waits for every source and unpacks into the dispatch outputs (receive phase). */
cudaError_t ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                             const ncclx_ep_ll_handle_desc_t *h,
                                             const ncclx_ep_ll_dispatch_desc_t *a,
                                             cudaStream_t stream);

/** Sends the expert outputs back to their tokens' ranks (send phase of combine). */
cudaError_t ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const ncclx_ep_ll_combine_desc_t *a,
                                            cudaStream_t stream);

/** With a mask across domains: waits for each remote source and copies its arrived rows into
 *  the combine area (before the reduction; ep_ll_net.cu). */
cudaError_t ncclx_ep_ll_launch_combine_net_recv(const ncclx_ep_ll_group_desc_t *g,
                                                const ncclx_ep_ll_handle_desc_t *h,
                                                const ncclx_ep_ll_combine_desc_t *a,
                                                cudaStream_t stream);

/** Waits for every rank and reduces into out (receive phase of combine); launches nothing when
 *  the send reduced (reduce_in_send). */
cudaError_t ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const ncclx_ep_ll_combine_desc_t *a,
                                            cudaStream_t stream);

/** Writes 1 (active) or 0 (masked) per rank into out [ranks] (device int32). */
cudaError_t ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g, int32_t *out,
                                          cudaStream_t stream);

/** Masks the ranks whose entry of mask [ranks] (host int32, 0 or 1; read now) is 0, in stream
 *  order.  Never re-activates a rank: only a clean does. */
cudaError_t ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g, const int32_t *mask,
                                           cudaStream_t stream);

/** Collective: barrier, reset signals / sequence numbers / mask, barrier. */
cudaError_t ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g, cudaStream_t stream);

/** Clears the error bits `bits` of the group (device word and mapped status) in stream order;
 *  bits reported by other kernels meanwhile survive. */
cudaError_t ncclx_ep_ll_launch_clear_error(const ncclx_ep_ll_group_desc_t *g, unsigned bits,
                                           cudaStream_t stream);

/* Load each file's kernels now (EP's room calls them at init, lib/ep/ep_groups.c). */
cudaError_t ncclx_ep_ll_route_load(void);
cudaError_t ncclx_ep_ll_dispatch_load(void);
cudaError_t ncclx_ep_ll_dispatch_recv_load(void);
cudaError_t ncclx_ep_ll_combine_load(void);
cudaError_t ncclx_ep_ll_mask_load(void);
cudaError_t ncclx_ep_ll_net_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_EP_LL_H_ */
