/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL across load/store domains (docs/multi-node.md).  The send kernels store what goes to a
 * rank of another domain into this rank's network staging instead of the rank's arena; these
 * kernels, launched right after them in stream order, put it where the store would have gone
 * and then signal: dispatch, each remote destination's messages (contiguous by slot: one put,
 * cut into pieces over the warps); combine, each row to its (token, slot) at the source.  Every
 * warp flushes its puts before it arrives (the staging is reused by the next operation), and the
 * grid's last block puts each remote rank's signal word into its signal slot with a network
 * signal, which the rank reads before the word (read_source_signal).
 */
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

static_assert(sizeof(ncclx_ep_dev_state_t) <= 256, "LL state fits NCCLX_EP_DEV_STATE_BYTES");

// Bytes of one put of a destination's staged messages.
constexpr size_t kNetPieceBytes = 64 * 1024;

// The last block: the signal word of every remote rank in view, put into its slot (parity, this
// rank, dir) with one network signal each; one warp per rank.  An expert-major dispatch first
// puts the rank's staged row counts per local expert into its counts (parity, this rank): on the
// same context and peer, so the signal lands after them.
__device__ __forceinline__ void signal_remote(const ncclx_ep_ll_group_desc_t &g,
                                              const LiveView &view, const Op &op, int dir,
                                              unsigned op_word, const int32_t *counts,
                                              bool expert_counts)
{
    const int lane = threadIdx.x % kWarpSize, remote = g.ranks - g.lsa_size;
    for (int ri = threadIdx.x / kWarpSize; ri < remote; ri += kWarps) {
        const int d = remote_rank(g, ri);
        if (!view.has(d)) {
            continue;
        }
        const unsigned count = counts != nullptr ? (unsigned)counts[d] : 0u;
        if (expert_counts) {
            const size_t row = (size_t)g.local_experts * sizeof(int32_t);
            net_put_warp(g.net, d, g.dispatch_counts + ((size_t)op.parity * g.ranks + g.rank) * row,
                         g.net_dispatch_counts + (size_t)ri * row, row, lane);
        }
        const size_t slot = g.signals + ((size_t)(op.parity * g.ranks + g.rank) * 2 + dir) * 8;
        net_put_value_signal_warp(g.net, d, slot, ncclx_ep_signal_word(op.tag, op_word, count),
                                  net_signal_id(g, op.parity, dir, g.rank), 1ull, lane);
    }
    if (expert_counts) {
        net_flush_warp(g.net, lane); // the next dispatch's send writes the count staging again
    }
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_net_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                        ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    load_live_view(g, view);
    const Op op = op_begin(&g.state->dispatch_seq);
    const int lane = threadIdx.x % kWarpSize, remote = g.ranks - g.lsa_size;
    const int warps = gridDim.x * kWarps;
    const size_t row = (size_t)g.max_tokens * g.msg_bytes;
    const int pieces = (int)((row + kNetPieceBytes - 1) / kNetPieceBytes);
    const int warp = unit_warp((long long)remote * pieces, warps);
    for (int u = warp; u < remote * pieces; u += warps) {
        const int ri = u / pieces, d = remote_rank(g, ri);
        const size_t begin = (size_t)(u % pieces) * kNetPieceBytes;
        const size_t bytes = (size_t)h.send_count[d] * g.msg_bytes;
        if (!view.has(d) || begin >= bytes) {
            continue;
        }
        const size_t src = g.net_dispatch_out + (size_t)ri * row + begin;
        const size_t dst = g.dispatch_recv + (size_t)(op.parity * g.ranks + g.rank) * row + begin;
        net_put_warp(g.net, d, dst, src, min(kNetPieceBytes, bytes - begin), lane);
    }
    net_flush_warp(g.net, lane);
    if (last_block(&g.state->net_arrive) && !block_self_out(g)) {
        signal_remote(g, view, op, kDispatchDir, a.op, h.send_count, h.expert_major != 0);
    }
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_net_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                       ncclx_ep_ll_combine_desc_t a)
{
    __shared__ LiveView view;
    load_live_view(g, view);
    const Op op = op_begin(&g.state->combine_seq);
    const int lane = threadIdx.x % kWarpSize, remote = g.ranks - g.lsa_size, T = g.max_tokens;
    const int K = h.topk;
    const int warps = gridDim.x * kWarps, warp = unit_warp((long long)remote * T, warps);
    const size_t row = (size_t)g.hidden * (a.dtype == kFp32 ? 4 : 2);
    for (int u = warp; u < remote * T; u += warps) {
        const int ri = u / T, i = u % T, s = remote_rank(g, ri), m = s * T + i;
        if (!view.has(s) || i >= h.recv_count[s] || h.recv_tok[m] == NCCLX_EP_TOKEN_DROPPED) {
            continue;
        }
        const int t = ncclx_ep_packed_token(h.recv_tok[m]);
        const size_t staged =
            g.net_combine_out + ((size_t)ri * T + i) * g.net_combine_rows * g.combine_slot_bytes;
        // With a mask the rows land by source at s, as staged here (combine_net_recv_kernel).
        const size_t arrival = g.net_combine_in + ((size_t)remote_index_at(g, s, g.rank) * T + i) *
                                                      g.net_combine_rows * g.combine_slot_bytes;
        // The slots combine_send_kernel filled: rank-major the token's rank order, expert-major
        // each top-k entry this rank served.
        const unsigned slots =
            h.expert_major
                ? __ballot_sync(0xffffffffu, lane < K && h.recv_pos[(size_t)m * K + lane] >= 0)
                : 1u << ncclx_ep_packed_order(h.recv_tok[m]);
        for (unsigned rest = slots, c = 0; rest != 0; rest &= rest - 1, c++) {
            const int k = __ffs(rest) - 1;
            const size_t dst =
                g.net_combine_in != NCCLX_NO_NET_REGION
                    ? arrival + (size_t)c * g.combine_slot_bytes
                    : g.combine_recv + ((size_t)(op.parity * T + t) * g.combine_slots + k) *
                                           g.combine_slot_bytes;
            net_put_warp(g.net, s, dst, staged + (size_t)c * g.combine_slot_bytes, row, lane);
        }
    }
    net_flush_warp(g.net, lane);
    if (last_block(&g.state->net_arrive) && !block_self_out(g)) {
        signal_remote(g, view, op, kCombineDir, a.op, nullptr, false);
    }
}

// With a mask across domains, before the reduction: waits for every remote source (the rank's
// one answer, wait_source) and copies the rows of those that arrived from where they landed by
// source into the combine area, one warp per token; rows of a source that did not arrive stay
// where they landed and are never read.
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_net_recv_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                            ncclx_ep_ll_combine_desc_t a)
{
    __shared__ LiveView view;
    __shared__ LiveView arrived;
    load_live_view(g, view);
    const Op op = op_begin(&g.state->combine_seq);
    const int lane = threadIdx.x % kWarpSize, K = h.topk, T = g.max_tokens;
    const int warps = gridDim.x * kWarps, warp = unit_warp(h.num_tokens, warps);
    const size_t row = (size_t)g.hidden * (a.dtype == kFp32 ? 4 : 2);
    char *self = peer_base(g, g.rank);
    for (int w = threadIdx.x; w < kLiveWords; w += blockDim.x) {
        arrived.bits[w] = 0;
    }
    __syncthreads();
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        if (is_remote(g, s) && wait_source(g, kCombineDir, s, op, a.op, view.has(s)) >= 0) {
            atomicOr(&arrived.bits[s >> 5], 1u << (s & 31));
        }
    }
    __syncthreads();
    for (int t = warp; t < h.num_tokens; t += warps) {
        const int e = lane < K ? h.idx[t * K + lane] : -1;
        const int d = e >= 0 ? e / g.local_experts : -1;
        const int i = lane < K ? h.route[t * K + lane] : -1;
        // The source's row index for this entry, as combine_send_kernel staged it.
        bool first;
        const int order = destination_order(d, first);
        const int c = h.expert_major ? __popc(__match_any_sync(0xffffffffu, d) & lanemask_lt()) : 0;
        const int slot = h.expert_major ? lane : order;
        const bool take =
            d >= 0 && is_remote(g, d) && arrived.has(d) && (h.expert_major || first) && i >= 0;
        for (unsigned rest = __ballot_sync(0xffffffffu, take); rest != 0; rest &= rest - 1) {
            const int j = __ffs(rest) - 1;
            const int dj = __shfl_sync(0xffffffffu, d, j), ij = __shfl_sync(0xffffffffu, i, j);
            const int cj = __shfl_sync(0xffffffffu, c, j), sj = __shfl_sync(0xffffffffu, slot, j);
            LaneTargets to;
            to.lanes = 1u;
            to.mine = combine_slot(self, g, op.parity, t, sj);
            const char *from = self + g.net_combine_in +
                               (((size_t)remote_index(g, dj) * T + ij) * g.net_combine_rows + cj) *
                                   g.combine_slot_bytes;
            (void)warp_copy_to(to, from, 0, row, lane);
        }
    }
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_combine_net_recv(const ncclx_ep_ll_group_desc_t *g,
                                                           const ncclx_ep_ll_handle_desc_t *h,
                                                           const ncclx_ep_ll_combine_desc_t *a,
                                                           cudaStream_t stream)
{
    ncclx::combine_net_recv_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_dispatch_net(const ncclx_ep_ll_group_desc_t *g,
                                                       const ncclx_ep_ll_handle_desc_t *h,
                                                       const ncclx_ep_ll_dispatch_desc_t *a,
                                                       cudaStream_t stream)
{
    ncclx::dispatch_net_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_combine_net(const ncclx_ep_ll_group_desc_t *g,
                                                      const ncclx_ep_ll_handle_desc_t *h,
                                                      const ncclx_ep_ll_combine_desc_t *a,
                                                      cudaStream_t stream)
{
    ncclx::combine_net_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_net_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::dispatch_net_kernel),
                                   reinterpret_cast<const void *>(ncclx::combine_net_kernel),
                                   reinterpret_cast<const void *>(ncclx::combine_net_recv_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
