/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL combine.  Send: for every message this rank received in the handle's dispatch, each
 * warp stores the expert output row(s) of a (message, chunk) into the source rank's combine
 * area at (token, k) (expert-major) or (token, rank order) (rank-major); the grid's last
 * block signals every rank.  Receive: wait for every rank, then reduce each token's rows in a
 * fixed order in float64 and round once to the output dtype, so results are bitwise
 * reproducible; the last block advances the group's combine sequence number.
 */
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

__device__ __forceinline__ size_t dtype_bytes(int dtype)
{
    return dtype == kFp32 ? 4 : 2;
}

__device__ __forceinline__ char *combine_slot(char *base, const ncclx_ep_ll_group_desc_t &g,
                                              int parity, int token, int slot)
{
    return base + g.combine_recv +
           ((size_t)(parity * g.max_tokens + token) * g.combine_slots + slot) *
               g.combine_slot_bytes;
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_send_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                        ncclx_ep_ll_combine_desc_t a)
{
    const unsigned long long seq = g.state->combine_seq;
    const int parity = (int)(seq & 1), T = g.max_tokens, K = h.topk, lane = threadIdx.x % kWarpSize;
    const int warp = blockIdx.x * kWarps + threadIdx.x / kWarpSize, warps = gridDim.x * kWarps;
    const size_t row = (size_t)g.hidden * dtype_bytes(a.dtype);
    const int chunks = (int)((row + kChunkBytes - 1) / kChunkBytes);
    const char *expert_out = static_cast<const char *>(a.expert_out);
    for (int u = warp; u < g.ranks * T * chunks; u += warps) {
        const int m = u / chunks, c = u % chunks, s = m / T, i = m % T;
        if (i >= h.recv_count[s]) {
            continue;
        }
        const int tok = h.recv_tok[m], t = tok & 0xffff, order = tok >> 16;
        const size_t begin = (size_t)c * kChunkBytes, end = min(row, begin + kChunkBytes);
        char *peer = peer_base(g, s);
        if (!h.expert_major) {
            char *dst = combine_slot(peer, g, parity, t, order);
            warp_copy_to(&dst, 1, expert_out + (size_t)m * row, begin, end, lane);
            continue;
        }
        for (int k = 0; k < K; k++) {
            int p = h.recv_pos[(size_t)m * K + k];
            if (p >= 0) {
                char *dst = combine_slot(peer, g, parity, t, k);
                warp_copy_to(&dst, 1, expert_out + (size_t)p * row, begin, end, lane);
            }
        }
    }
    if (last_block(&g.state->combine_arrive)) {
        for (int d = threadIdx.x; d < g.ranks; d += blockDim.x) {
            st_release_sys(signal_at(peer_base(g, d), g, parity, g.rank, 1), (seq + 1) << 32);
        }
    }
}

constexpr int kElemsPerLane = 8;
constexpr int kElemsPerWarp = kElemsPerLane * kWarpSize;

// 8 consecutive elements of a 16-byte aligned row: raw bytes (one or two 16-byte loads) ...
__device__ __forceinline__ void load8_raw(const char *p, int dtype, uint4 r[2])
{
    r[0] = reinterpret_cast<const uint4 *>(p)[0];
    if (dtype == kFp32) {
        r[1] = reinterpret_cast<const uint4 *>(p)[1];
    }
}

// ... and as doubles.
__device__ __forceinline__ void convert8(const uint4 r[2], int dtype, double x[kElemsPerLane])
{
    const unsigned w[8] = {r[0].x, r[0].y, r[0].z, r[0].w, r[1].x, r[1].y, r[1].z, r[1].w};
    if (dtype == kFp32) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            x[i] = __uint_as_float(w[i]);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (dtype == kBf16) {
            x[2 * i] = __uint_as_float(w[i] << 16);
            x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        } else {
            x[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
            x[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
        }
    }
}

// Rounds 8 doubles once to dtype and stores them (16 or 32 bytes).
__device__ __forceinline__ void store8(char *p, int dtype, const double x[kElemsPerLane])
{
    if (dtype == kFp32) {
        reinterpret_cast<float4 *>(p)[0] =
            make_float4(__double2float_rn(x[0]), __double2float_rn(x[1]), __double2float_rn(x[2]),
                        __double2float_rn(x[3]));
        reinterpret_cast<float4 *>(p)[1] =
            make_float4(__double2float_rn(x[4]), __double2float_rn(x[5]), __double2float_rn(x[6]),
                        __double2float_rn(x[7]));
        return;
    }
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        unsigned short lo, hi;
        if (dtype == kBf16) {
            lo = __bfloat16_as_ushort(__double2bfloat16(x[2 * i]));
            hi = __bfloat16_as_ushort(__double2bfloat16(x[2 * i + 1]));
        } else {
            lo = __half_as_ushort(__double2half(x[2 * i]));
            hi = __half_as_ushort(__double2half(x[2 * i + 1]));
        }
        w[i] = (unsigned)lo | ((unsigned)hi << 16);
    }
    *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_recv_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                        ncclx_ep_ll_combine_desc_t a)
{
    const unsigned long long seq = g.state->combine_seq;
    const int parity = (int)(seq & 1), K = h.topk, H = g.hidden, lane = threadIdx.x % kWarpSize;
    const int warp = blockIdx.x * kWarps + threadIdx.x / kWarpSize, warps = gridDim.x * kWarps;
    const size_t esize = dtype_bytes(a.dtype);
    // Whole 8-element groups of 16-byte aligned rows take the vector path.
    const bool vector_rows = ((size_t)H * esize) % 16 == 0;
    char *self = peer_base(g, g.rank);
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        wait_signal(g, signal_at(self, g, parity, s, 1), (unsigned)(seq + 1));
    }
    __syncthreads();
    const int chunks = (H + kElemsPerWarp - 1) / kElemsPerWarp;
    for (int u = warp; u < h.num_tokens * chunks; u += warps) {
        const int t = u / chunks, first = (u % chunks) * kElemsPerWarp + lane * kElemsPerLane;
        const bool active = first < H, vector = vector_rows && first + kElemsPerLane <= H;
        // The token's routing, one entry per lane, broadcast below: no global load in the loop.
        const int my_expert = h.expert_major && lane < K ? h.idx[t * K + lane] : -1;
        const double my_weight =
            h.expert_major && lane < K ? (double)a.topk_weights[t * K + lane] : 1.0;
        const int rows = h.expert_major ? K : h.ndest[t];
        double acc[kElemsPerLane];
#pragma unroll
        for (int x = 0; x < kElemsPerLane; x++) {
            acc[x] = 0.0;
        }
        // Two rows per step: both loads in flight, then the FMAs in row order.
        for (int q = 0; q < rows; q += 2) {
            bool valid[2];
            double w[2];
            uint4 raw[2][2];
#pragma unroll
            for (int j = 0; j < 2; j++) {
                const int row = q + j < rows ? q + j : q;
                const int e = __shfl_sync(0xffffffffu, my_expert, row);
                w[j] = __shfl_sync(0xffffffffu, my_weight, row);
                valid[j] = q + j < rows && (!h.expert_major || e >= 0);
                if (valid[j] && active && vector) {
                    load8_raw(combine_slot(self, g, parity, t, q + j) + (size_t)first * esize,
                              a.dtype, raw[j]);
                }
            }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (!valid[j] || !active) {
                    continue;
                }
                double x[kElemsPerLane];
                if (vector) {
                    convert8(raw[j], a.dtype, x);
                } else {
                    const char *slot = combine_slot(self, g, parity, t, q + j);
#pragma unroll
                    for (int i = 0; i < kElemsPerLane; i++) {
                        x[i] =
                            first + i < H ? (double)load_as_float(slot, first + i, a.dtype) : 0.0;
                    }
                }
#pragma unroll
                for (int i = 0; i < kElemsPerLane; i++) {
                    acc[i] = fma(w[j], x[i], acc[i]);
                }
            }
        }
        if (!active) {
            continue;
        }
        char *out = static_cast<char *>(a.out) + (size_t)t * H * esize;
        if (vector) {
            store8(out + (size_t)first * esize, a.dtype, acc);
        } else {
            for (int i = 0; i < kElemsPerLane && first + i < H; i++) {
                store_from_double(a.out, (size_t)t * H + first + i, acc[i], a.dtype);
            }
        }
    }
    if (last_block(&g.state->reduce_arrive) && threadIdx.x == 0) {
        g.state->combine_seq = seq + 1;
    }
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                       const ncclx_ep_ll_handle_desc_t *h,
                                                       const ncclx_ep_ll_combine_desc_t *a,
                                                       cudaStream_t stream)
{
    ncclx::combine_send_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                                       const ncclx_ep_ll_handle_desc_t *h,
                                                       const ncclx_ep_ll_combine_desc_t *a,
                                                       cudaStream_t stream)
{
    ncclx::combine_recv_kernel<<<g->blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_combine_load(void)
{
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, ncclx::combine_send_kernel);
    return err != cudaSuccess ? err : cudaFuncGetAttributes(&attr, ncclx::combine_recv_kernel);
}
