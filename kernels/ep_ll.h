/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL dispatch/combine kernels' view of a group, a handle and a call: plain structs of
 * device pointers and sizes, filled by lib/ep_ll.c and passed by value to the launchers.
 *
 * Symmetric memory of a group on every rank (same offsets everywhere):
 *   dispatch receive area [2][R][T] messages of msg_bytes: (parity, source, slot)
 *   combine receive area  [2][T][combine_slots] rows of combine_slot_bytes: (parity, token, j)
 *   signals               [2][R] x {dispatch, combine} uint64: (parity, source)
 * A message is a 16-byte header (source token, rank order j of this destination among the
 * token's destinations), K top-k entries (int32 expert, float weight), then the payload: the
 * token row, and from payload_scale_offset the scale row.  A signal holds
 * (sequence + 1) << 32 | message count: a receiver waits until the sequence matches its own.
 */
#ifndef NCCLX_KERNELS_EP_LL_H_
#define NCCLX_KERNELS_EP_LL_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLX_EP_MSG_HEADER 16
#define NCCLX_EP_THREADS    512

/* Group state in private device memory (NCCLX_EP_DEV_STATE_BYTES): sequence numbers advance
 * once per completed operation, arrive counters find the last block of a grid. */
typedef struct {
    unsigned long long dispatch_seq;
    unsigned long long combine_seq;
    unsigned int dispatch_arrive;
    unsigned int combine_arrive;
    unsigned int unpack_arrive;
    unsigned int reduce_arrive;
    unsigned int error;             /* NCCLX_EP_ERROR_* bits, also mirrored to the mapped status */
    unsigned long long clean_epoch; /* mask cleans completed (the clean barrier's generation) */
} ncclx_ep_dev_state_t;

/* What every LL kernel of a group needs. */
typedef struct {
    int rank, ranks, local_experts, num_experts;
    int max_tokens, max_topk, hidden;
    int blocks;                                  /* grid size of the data-moving kernels */
    void *const *peers;                          /* device: symmetric arena base of each rank */
    size_t dispatch_recv, combine_recv, signals; /* region offsets in the symmetric arena */
    size_t msg_bytes, payload_scale_offset;
    size_t combine_slot_bytes;
    int combine_slots;
    ncclx_ep_dev_state_t *state; /* device */
    unsigned int *status;        /* device view of the mapped status: error bits */
    unsigned long long timeout_ns;
    /* Masking (NULL / unused without it): inactive[r] != 0 when rank r is masked out (zeroed
     * arenas = every rank active); clean_barrier is a symmetric [R] uint64 region. */
    int *inactive;
    size_t clean_barrier;
} ncclx_ep_ll_group_desc_t;

/* One handle's device memory (see ncclx_ep_ll_handle_layout_t). */
typedef struct {
    int32_t *idx, *route, *ndest, *send_count, *recv_count, *expert_count, *recv_tok, *recv_pos;
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
} ncclx_ep_ll_dispatch_desc_t;

typedef struct {
    const void *expert_out;    /* EM [L, R*T, H] or RM [R, T, H] */
    const float *topk_weights; /* EM [num_tokens, K] */
    void *out;                 /* [num_tokens, H] */
    int dtype;                 /* BF16, FP16 or FP32 (ncclxDataType_t values) */
} ncclx_ep_ll_combine_desc_t;

/** Validates topk_idx ([num_tokens, K], int32 or int64) into the handle and routes it. */
cudaError_t ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                     const ncclx_ep_ll_handle_desc_t *h, const void *topk_idx,
                                     int idx_int64, cudaStream_t stream);

/** Sends the handle's tokens (send phase of dispatch). */
cudaError_t ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                             const ncclx_ep_ll_handle_desc_t *h,
                                             const ncclx_ep_ll_dispatch_desc_t *a,
                                             cudaStream_t stream);

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

/** Waits for every rank and reduces into out (receive phase of combine). */
cudaError_t ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                            const ncclx_ep_ll_handle_desc_t *h,
                                            const ncclx_ep_ll_combine_desc_t *a,
                                            cudaStream_t stream);

/** Writes 1 (active) or 0 (masked) per rank into out [ranks] (device int32). */
cudaError_t ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g, int32_t *out,
                                          cudaStream_t stream);

/** Sets the mask from mask [ranks] (host int32, 0 or 1; read now, applied in stream order). */
cudaError_t ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g, const int32_t *mask,
                                           cudaStream_t stream);

/** Collective: barrier, reset signals / sequence numbers / mask, barrier. */
cudaError_t ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g, cudaStream_t stream);

/* Load each file's kernels now (see ncclx_kernels_load, which calls them). */
cudaError_t ncclx_ep_ll_route_load(void);
cudaError_t ncclx_ep_ll_dispatch_load(void);
cudaError_t ncclx_ep_ll_combine_load(void);
cudaError_t ncclx_ep_ll_mask_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_EP_LL_H_ */
