/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL dispatch.  Send: each warp takes a (token, chunk) and stores it once into every
 * destination rank's receive area (quantizing to FP8 on the way for that recipe); the grid's
 * last block then signals every rank with its message count.  Receive: wait for every
 * source and record each message's token (meta), number the rows of each local expert in
 * (source, token) order (positions, expert-major only), then copy the messages into the
 * caller's outputs (unpack); unpack's last block ends the operation (op_end).
 */
#include <cub/block/block_scan.cuh>

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

// A message to remote rank d is staged in this rank's arena, in d's row at its slot: the rows
// of a destination are contiguous, so its messages cross the network in one put
// (ep_ll_net.cu).
__device__ __forceinline__ char *staged_message(const ncclx_ep_ll_group_desc_t &g, int d, int slot)
{
    return peer_base(g, g.rank) + g.net_dispatch_out +
           ((size_t)remote_index(g, d) * g.max_tokens + slot) * g.msg_bytes;
}

// Destinations of token t: lane k < topk reads top-k entry k; the lane of a rank's first
// entry holds that rank's message (slot from the routing).  Also returns each lane's
// destination rank (-1 if none) and its rank order among the token's destinations.
struct TokenRoute {
    LaneTargets msgs;
    int expert; // top-k entry of this lane (-1: none or lane >= topk)
    int order;  // rank order of this lane's destination among the token's destinations
};

__device__ __forceinline__ TokenRoute route_token(const ncclx_ep_ll_group_desc_t &g,
                                                  const ncclx_ep_ll_handle_desc_t &h,
                                                  const LiveView &view, int t, int parity, int lane)
{
    TokenRoute r;
    int slot = -1;
    r.expert = -1;
    if (lane < h.topk) {
        r.expert = h.idx[t * h.topk + lane];
        slot = h.route[t * h.topk + lane];
    }
    // Slots and rank orders count every destination; a masked one just gets no message.
    const int d = r.expert >= 0 ? r.expert / g.local_experts : -1;
    bool first;
    r.order = destination_order(d, first);
    const bool send = first && view.has(d);
    r.msgs.lanes = __ballot_sync(0xffffffffu, send);
    r.msgs.mine = nullptr;
    if (send) {
        r.msgs.mine = is_remote(g, d) ? staged_message(g, d, slot)
                                      : message_at(peer_base(g, d), g, parity, g.rank, slot);
    }
    return r;
}

// Header and top-k entries of token t into every destination's message.
__device__ __forceinline__ void write_headers(const ncclx_ep_ll_handle_desc_t &h,
                                              const ncclx_ep_ll_dispatch_desc_t &a, const Op &op,
                                              int t, const TokenRoute &r, int lane)
{
    float w = 0.0f;
    if (lane < h.topk && a.topk_weights != nullptr) {
        w = a.topk_weights[t * h.topk + lane];
    }
    const int2 entry = make_int2(r.expert, __float_as_int(w));
    for (unsigned rest = r.msgs.lanes; rest != 0; rest &= rest - 1) {
        const int j = __ffs(rest) - 1;
        char *msg = target_of(r.msgs, j);
        const int order = __shfl_sync(0xffffffffu, r.order, j);
        if (lane == 0) {
            *reinterpret_cast<int4 *>(msg) = make_int4(t, order, (int)a.op, (int)op.tag);
        }
        if (lane < h.topk) {
            reinterpret_cast<int2 *>(msg + NCCLX_EP_MSG_HEADER_BYTES)[lane] = entry;
        }
    }
}

// FP8 recipe: elements [begin, end) of a BF16 row.  A lane owns 4 elements of each
// 128-element block; a warp step loads kFp8Blocks blocks at once (8-byte loads) before it
// reduces, scales and stores them, so several loads are in flight per lane.
constexpr int kFp8Blocks = 4;

__device__ __forceinline__ float bf16_bits_to_float(unsigned bits16)
{
    return __uint_as_float(bits16 << 16);
}

__device__ __forceinline__ float fp8_scale(float amax, int round_scales)
{
    float scale = fmaxf(amax, 1e-4f) / 448.0f;
    if (round_scales) {
        unsigned bits = __float_as_uint(scale);
        if (bits & 0x007fffffu) { // not a power of two: next one up
            bits = (bits & 0xff800000u) + 0x00800000u;
        }
        scale = __uint_as_float(bits);
    }
    return scale;
}

__device__ void quantize_fp8_to(const ncclx_ep_ll_dispatch_desc_t &a, const __nv_bfloat16 *row,
                                const LaneTargets &payload, int begin, int end, int lane)
{
    const size_t scales = scale_offset(a);
    for (int b0 = begin; b0 < end; b0 += 128 * kFp8Blocks) {
        uint2 raw[kFp8Blocks];
#pragma unroll
        for (int u = 0; u < kFp8Blocks; u++) {
            const int b = b0 + u * 128;
            if (b < end) {
                raw[u] = *reinterpret_cast<const uint2 *>(row + b + lane * 4);
            }
        }
#pragma unroll
        for (int u = 0; u < kFp8Blocks; u++) {
            const int b = b0 + u * 128;
            if (b >= end) {
                break;
            }
            float x[4] = {
                bf16_bits_to_float(raw[u].x & 0xffffu), bf16_bits_to_float(raw[u].x >> 16),
                bf16_bits_to_float(raw[u].y & 0xffffu), bf16_bits_to_float(raw[u].y >> 16)};
            float amax = fmaxf(fmaxf(fabsf(x[0]), fabsf(x[1])), fmaxf(fabsf(x[2]), fabsf(x[3])));
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) {
                amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
            }
            const float scale = fp8_scale(amax, a.round_scales);
            unsigned q = 0;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                __nv_fp8_storage_t v =
                    __nv_cvt_float_to_fp8(x[i] / scale, __NV_SATFINITE, __NV_E4M3);
                q |= (unsigned)v << (8 * i);
            }
            for (unsigned rest = payload.lanes; rest != 0; rest &= rest - 1) {
                char *p = target_of(payload, __ffs(rest) - 1);
                *reinterpret_cast<unsigned *>(p + b + lane * 4) = q;
                if (lane == 0) {
                    reinterpret_cast<float *>(p + scales)[b / 128] = scale;
                }
            }
        }
    }
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_send_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                         ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    load_live_view(g, view);
    const Op op = op_begin(&g.state->dispatch_seq);
    const int parity = op.parity, lane = threadIdx.x % kWarpSize;
    const int warp = blockIdx.x * kWarps + threadIdx.x / kWarpSize, warps = gridDim.x * kWarps;
    const bool fp8 = a.recipe == kRecipeFp8;
    const size_t in_row = a.row_bytes, poff = payload_offset(g);
    const int chunks = (int)((in_row + kChunkBytes - 1) / kChunkBytes);
    for (int u = warp; u < h.num_tokens * chunks; u += warps) {
        const int t = u / chunks, c = u % chunks;
        const TokenRoute r = route_token(g, h, view, t, parity, lane);
        LaneTargets payload = r.msgs;
        payload.mine = payload.mine != nullptr ? payload.mine + poff : nullptr;
        const char *src = static_cast<const char *>(a.tokens) + (size_t)t * in_row;
        size_t begin = (size_t)c * kChunkBytes, end = min(in_row, begin + kChunkBytes);
        if (c == 0) {
            write_headers(h, a, op, t, r, lane);
            if (a.recipe == kRecipeQuantFwd && a.scale_bytes > 0) {
                const char *s = static_cast<const char *>(a.scales) + (size_t)t * a.scale_bytes;
                for (unsigned rest = payload.lanes; rest != 0; rest &= rest - 1) {
                    char *p = target_of(payload, __ffs(rest) - 1) + scale_offset(a);
                    for (size_t i = lane; i < a.scale_bytes; i += kWarpSize) {
                        p[i] = s[i];
                    }
                }
            }
        }
        if (fp8) {
            quantize_fp8_to(a, reinterpret_cast<const __nv_bfloat16 *>(src), payload,
                            (int)(begin / 2), (int)(end / 2), lane);
        } else {
            warp_copy_to(payload, src, begin, end, lane);
        }
    }
    // A rank evicted while it sent signals nothing: its peers have masked it already.  Remote
    // ranks are signalled by the network kernel, after their puts.
    if (last_block(&g.state->dispatch_arrive) && !self_out(g)) {
        for (int d = threadIdx.x; d < g.ranks; d += blockDim.x) {
            if (view.has(d) && !is_remote(g, d)) {
                st_release_sys(signal_at(peer_base(g, d), g, parity, g.rank, 0),
                               ncclx_ep_signal_word(op.tag, a.op, (unsigned)h.send_count[d]));
            }
        }
    }
}

// One thread per (source, slot): learn what the source sent (wait_source: the same answer
// for every thread), then check and record the message's token.  A message whose header
// carries another operation word or tag is dropped and reported, never read.
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_meta_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                         ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    load_live_view(g, view);
    const Op op = op_begin(&g.state->dispatch_seq);
    const int T = g.max_tokens, K = h.topk;
    char *self = peer_base(g, g.rank);
    for (int m = blockIdx.x * blockDim.x + threadIdx.x; m < g.ranks * T;
         m += gridDim.x * blockDim.x) {
        const int s = m / T, i = m % T;
        const int got = wait_source(g, kDispatchDir, s, op, a.op, view.has(s));
        const int count = got < 0 ? 0 : min(got, T);
        if (i == 0) {
            h.recv_count[s] = count;
            if (!h.expert_major) {
                a.out_counts[s] = count;
            }
        }
        if (i >= count) {
            continue;
        }
        const char *msg = message_at(self, g, op.parity, s, i);
        const int4 header = *reinterpret_cast<const int4 *>(msg);
        const bool valid = (unsigned)header.z == a.op && (unsigned)header.w == op.tag;
        if (!valid) {
            report_error(g, kErrorMismatch);
        }
        h.recv_tok[m] = valid ? ncclx_ep_pack_token(header.x, header.y) : NCCLX_EP_TOKEN_DROPPED;
        if (h.expert_major) {
            const int2 *entries = topk_entries(msg);
            for (int k = 0; k < K; k++) {
                const int e = entries[k].x;
                if (!valid || e < 0 || e / g.local_experts != g.rank) {
                    h.recv_pos[(size_t)m * K + k] = -1;
                }
            }
        }
    }
}

// Whether message m of the handle's last dispatch was received and accepted.
__device__ __forceinline__ bool accepted(const ncclx_ep_ll_group_desc_t &g,
                                         const ncclx_ep_ll_handle_desc_t &h, int m)
{
    return m % g.max_tokens < h.recv_count[m / g.max_tokens] &&
           h.recv_tok[m] != NCCLX_EP_TOKEN_DROPPED;
}

// Expert-major: one block per local expert numbers its rows in (source, slot) order.
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_positions_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                              ncclx_ep_ll_dispatch_desc_t a)
{
    using Scan = cub::BlockScan<int, NCCLX_EP_THREADS>;
    __shared__ typename Scan::TempStorage scan_storage;
    const int parity = op_begin(&g.state->dispatch_seq).parity, T = g.max_tokens, K = h.topk;
    const int rows = g.ranks * T;
    char *self = peer_base(g, g.rank);
    for (int e = blockIdx.x; e < g.local_experts; e += gridDim.x) {
        const int expert = g.rank * g.local_experts + e;
        int base = 0;
        for (int m0 = 0; m0 < rows; m0 += blockDim.x) {
            const int m = m0 + threadIdx.x;
            const int2 *entries = nullptr;
            int mine = 0, pos = 0, total = 0;
            if (m < rows && accepted(g, h, m)) {
                entries = topk_entries(message_at(self, g, parity, m / T, m % T));
                for (int k = 0; k < K; k++) {
                    mine |= entries[k].x == expert;
                }
            }
            Scan(scan_storage).ExclusiveSum(mine, pos, total);
            __syncthreads();
            if (mine) {
                for (int k = 0; k < K; k++) {
                    if (entries[k].x == expert) {
                        h.recv_pos[(size_t)m * K + k] = e * rows + base + pos;
                    }
                }
            }
            base += total;
        }
        if (threadIdx.x == 0) {
            a.out_counts[e] = base;
        }
    }
}

__device__ void unpack_rank_major_meta(const ncclx_ep_ll_group_desc_t &g,
                                       const ncclx_ep_ll_handle_desc_t &h,
                                       const ncclx_ep_ll_dispatch_desc_t &a, const char *msg, int m,
                                       bool valid, int lane)
{
    const int2 *entries = topk_entries(msg);
    if (lane < h.topk) {
        const int e = valid ? entries[lane].x : -1;
        const bool mine = e >= 0 && e / g.local_experts == g.rank;
        long long id = mine ? (h.global_ids ? e : e - g.rank * g.local_experts) : -1;
        size_t at = (size_t)m * h.topk + lane;
        if (a.out_idx_int64) {
            static_cast<long long *>(a.out_topk_idx)[at] = id;
        } else {
            static_cast<int *>(a.out_topk_idx)[at] = (int)id;
        }
        static_cast<float *>(a.out_topk_weights)[at] =
            mine ? __int_as_float(entries[lane].y) : 0.0f;
    }
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_unpack_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                           ncclx_ep_ll_dispatch_desc_t a)
{
    const Op op = op_begin(&g.state->dispatch_seq);
    const int parity = op.parity, T = g.max_tokens, K = h.topk, lane = threadIdx.x % kWarpSize;
    const int warp = blockIdx.x * kWarps + threadIdx.x / kWarpSize, warps = gridDim.x * kWarps;
    const size_t out_row = a.out_row_bytes, poff = payload_offset(g);
    const int chunks = (int)((out_row + kChunkBytes - 1) / kChunkBytes);
    char *self = peer_base(g, g.rank);
    for (int u = warp; u < g.ranks * T * chunks; u += warps) {
        const int m = u / chunks, c = u % chunks, s = m / T, i = m % T;
        if (i >= h.recv_count[s]) {
            continue;
        }
        const char *msg = message_at(self, g, parity, s, i);
        if (h.recv_tok[m] == NCCLX_EP_TOKEN_DROPPED) {
            // Rank-major: the row's top-k entries say that it holds nothing.
            if (!h.expert_major && c == 0) {
                unpack_rank_major_meta(g, h, a, msg, m, false, lane);
            }
            continue;
        }
        // The output rows of this message: one per distinct local expert (expert-major),
        // held one per lane, or the message's own row (rank-major).
        LaneTargets to;
        if (h.expert_major) {
            const int p = lane < K ? h.recv_pos[(size_t)m * K + lane] : -1;
            const unsigned same = __match_any_sync(0xffffffffu, p);
            const bool first = p >= 0 && (same & lanemask_lt()) == 0;
            to.lanes = __ballot_sync(0xffffffffu, first);
            to.mine = first ? static_cast<char *>(a.out_tokens) + (size_t)p * out_row : nullptr;
        } else {
            to.lanes = 1u;
            to.mine = static_cast<char *>(a.out_tokens) + (size_t)m * out_row;
        }
        size_t begin = (size_t)c * kChunkBytes, end = min(out_row, begin + kChunkBytes);
        warp_copy_to(to, msg + poff, begin, end, lane);
        if (c != 0) {
            continue;
        }
        if (a.scale_bytes > 0) {
            for (unsigned rest = to.lanes; rest != 0; rest &= rest - 1) {
                char *row_at = target_of(to, __ffs(rest) - 1);
                size_t row = (size_t)(row_at - static_cast<char *>(a.out_tokens)) / out_row;
                char *out = static_cast<char *>(a.out_scales) + row * a.scale_bytes;
                for (size_t b = lane; b < a.scale_bytes; b += kWarpSize) {
                    out[b] = msg[poff + scale_offset(a) + b];
                }
            }
        }
        if (!h.expert_major) {
            unpack_rank_major_meta(g, h, a, msg, m, true, lane);
        }
    }
    if (last_block(&g.state->unpack_arrive) && threadIdx.x == 0) {
        op_end(&g.state->dispatch_seq, op);
    }
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                                        const ncclx_ep_ll_handle_desc_t *h,
                                                        const ncclx_ep_ll_dispatch_desc_t *a,
                                                        cudaStream_t stream)
{
    ncclx::dispatch_send_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && g->net.kind != NCCLX_NET_NONE) {
        err = ncclx_ep_ll_launch_dispatch_net(g, h, a, stream);
    }
    return err;
}

extern "C" cudaError_t ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                        const ncclx_ep_ll_handle_desc_t *h,
                                                        const ncclx_ep_ll_dispatch_desc_t *a,
                                                        cudaStream_t stream)
{
    int meta_blocks = (g->ranks * g->max_tokens + NCCLX_EP_THREADS - 1) / NCCLX_EP_THREADS;
    ncclx::dispatch_meta_kernel<<<min(meta_blocks, g->blocks), NCCLX_EP_THREADS, 0, stream>>>(
        *g, *h, *a);
    if (h->expert_major) {
        ncclx::dispatch_positions_kernel<<<min(g->local_experts, g->blocks), NCCLX_EP_THREADS, 0,
                                           stream>>>(*g, *h, *a);
    }
    ncclx::dispatch_unpack_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_dispatch_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::dispatch_send_kernel),
                                   reinterpret_cast<const void *>(ncclx::dispatch_meta_kernel),
                                   reinterpret_cast<const void *>(ncclx::dispatch_positions_kernel),
                                   reinterpret_cast<const void *>(ncclx::dispatch_unpack_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
