/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the LL dispatch's send (ep_ll_dispatch.cu) and receive (ep_ll_dispatch_recv.cu) both
 * know: where a message, its payload, scales and top-k entries lie, the count boards of a
 * zero-copy group and the per-expert counts, the wait for the sources' signals, and how a
 * received row's top-k entries reach the caller (rank-major).
 */
#ifndef NCCLX_KERNELS_EP_LL_DISPATCH_CUH_
#define NCCLX_KERNELS_EP_LL_DISPATCH_CUH_

#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

__device__ __forceinline__ size_t payload_offset(const ncclx_ep_ll_group_desc_t &g)
{
    return ncclx_ep_msg_payload_offset((uint32_t)g.max_topk);
}

__device__ __forceinline__ size_t scale_offset(const ncclx_ep_ll_dispatch_desc_t &a)
{
    return ncclx_ep_msg_scale_offset(a.out_row_bytes);
}

__device__ __forceinline__ const int2 *topk_entries(const char *msg)
{
    return reinterpret_cast<const int2 *>(msg + NCCLX_EP_MSG_HEADER_BYTES);
}

__device__ __forceinline__ char *message_at(char *base, const ncclx_ep_ll_group_desc_t &g,
                                            int parity, int source, int slot)
{
    return base + g.dispatch_recv +
           ((size_t)(parity * g.ranks + source) * g.max_tokens + slot) * g.msg_bytes;
}

// Source s's count board of this parity in the arena at base (ep_ll_wire.h): the word, then the
// source's row count of every expert.
__device__ __forceinline__ unsigned long long *
board_word(char *base, const ncclx_ep_ll_group_desc_t &g, int parity, int source)
{
    return reinterpret_cast<unsigned long long *>(
        base + g.count_boards + ((size_t)parity * g.ranks + source) * g.board_bytes);
}

__device__ __forceinline__ int32_t *board_counts(char *base, const ncclx_ep_ll_group_desc_t &g,
                                                 int parity, int source)
{
    return reinterpret_cast<int32_t *>(
        reinterpret_cast<char *>(board_word(base, g, parity, source)) +
        NCCLX_EP_BOARD_COUNTS_OFFSET);
}

// The dispatch counts region of the rank whose arena starts at base: [2][R][L] int32, the rows
// source s sends each local expert of that rank in the operation of this parity.
__device__ __forceinline__ int32_t *expert_counts(char *base, const ncclx_ep_ll_group_desc_t &g,
                                                  int parity, int source)
{
    return reinterpret_cast<int32_t *>(base + g.dispatch_counts) +
           ((size_t)parity * g.ranks + source) * g.local_experts;
}

// Rank-major: lane k's top-k entry (expert e, weight w) of received row m into the outputs: the
// expert's id (local, or global with global_ids) and its weight where e is this rank's, else -1
// and 0.
__device__ __forceinline__ void write_rank_major_meta(const ncclx_ep_ll_group_desc_t &g,
                                                      const ncclx_ep_ll_handle_desc_t &h,
                                                      const ncclx_ep_ll_dispatch_desc_t &a, int m,
                                                      int e, float w, int lane)
{
    if (lane < h.topk) {
        const bool mine = e >= 0 && e / g.local_experts == g.rank;
        const long long id = mine ? (h.global_ids ? e : e - g.rank * g.local_experts) : -1;
        const size_t at = (size_t)m * h.topk + lane;
        if (a.out_idx_int64) {
            static_cast<long long *>(a.out_topk_idx)[at] = id;
        } else {
            static_cast<int *>(a.out_topk_idx)[at] = (int)id;
        }
        static_cast<float *>(a.out_topk_weights)[at] = mine ? w : 0.0f;
    }
}

// The receive's wait, one thread per source from `first` in steps of `step`: learn what each
// source sent (wait_source: one answer for the rank) and record it for the copy.
__device__ __forceinline__ void wait_sources(const ncclx_ep_ll_group_desc_t &g,
                                             const ncclx_ep_ll_handle_desc_t &h,
                                             const ncclx_ep_ll_dispatch_desc_t &a,
                                             const LiveView &view, const Op &op, int first,
                                             int step)
{
    for (int s = first; s < g.ranks; s += step) {
        const int got = wait_source(g, kDispatchDir, s, op, a.op, view.has(s));
        h.recv_count[s] = got < 0 ? 0 : min(got, g.max_tokens);
        if (!h.expert_major) {
            a.out_counts[s] = h.recv_count[s];
        }
    }
}

} // namespace
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_LL_DISPATCH_CUH_ */
