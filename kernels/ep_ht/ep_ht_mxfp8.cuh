/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The MXFP8 combine of HT groups (NCCLX_EP_RECIPE_MXFP8, EXPERT_MAJOR, BF16), used by the
 * stage and reduce kernels of ep_ht_data.cu:
 *  stage:  on the experts' rank, a token's kept rows there (linked by the routing: em_head,
 *          em_next) are summed in FP32 in ascending expert order, and the sum is quantized
 *          once into the token's first row: E4M3 codes [H], then E8M0 scales [H / 32] (one per
 *          32 consecutive elements);
 *  reduce: on the token's rank, each rank's packed row is decoded and added in FP32 in
 *          ascending rank order, then rounded once to BF16.
 * Bit for bit the rules of tests/ref/ep_mxfp8_ref.h (IEEE single multiplications, no flush
 * to zero: NVCCFLAGS has no -ftz): scale e = the exponent of amax / 448 rounded up (at most
 * 254, 0 for an all-zero block), codes = E4M3 (nearest even, saturating) of x * 2^(127 - e),
 * value = code * 2^(e - 127) with e = 0 decoding to 0.
 * Lane layout: a lane holds 8 consecutive elements (16 bytes of BF16), so the 4 lanes 4b ..
 * 4b + 3 hold one 32-element block and reduce its amax among themselves.
 */
#ifndef NCCLX_KERNELS_EP_HT_MXFP8_CUH_
#define NCCLX_KERNELS_EP_HT_MXFP8_CUH_

#include "ep_ht_common.cuh"

namespace ncclx
{
namespace ht
{

constexpr int kMxBlock = 32;       // elements per E8M0 scale
constexpr int kMxLaneElements = 8; // BF16 elements per lane per step (16 bytes)
constexpr int kMxMaxChain = 32;    // a token has at most K <= 32 rows on one rank

// E8M0 code of a block whose absolute maximum is amax >= 0 (NaN already ignored).
__device__ __forceinline__ unsigned mx_scale_code(float amax)
{
    const unsigned u = __float_as_uint(__fmul_rn(amax, 1.0f / 448.0f)) & 0x7fffffffu;
    const unsigned e = (u >> 23) + ((u & 0x7fffffu) != 0 ? 1u : 0u);
    return e > 254u ? 254u : e;
}

// 2^(127 - e) as an exact float: 2^-127 (e = 254) is the subnormal 0x00400000.
__device__ __forceinline__ float mx_multiplier(unsigned e)
{
    if (e == 0) {
        return __uint_as_float(254u << 23);
    }
    return e >= 254u ? __uint_as_float(0x00400000u) : __uint_as_float((254u - e) << 23);
}

// E4M3 code of v (nearest even, saturating to +-448; NaN -> 0x7f whatever its sign).
__device__ __forceinline__ unsigned mx_e4m3(float v)
{
    if (v != v) {
        return 0x7fu;
    }
    return (unsigned)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ float mx_decode(unsigned code, float scale)
{
    const __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)code, __NV_E4M3);
    return __fmul_rn(__half2float(__half(h)), scale);
}

// Stages the token whose first row here is `head`: sums its rows (expert_out, row_bytes
// apart) in ascending expert order and writes the packed row to dst.  chain: the warp's
// scratch of kMxMaxChain row numbers.  All 32 lanes call it.
__device__ __forceinline__ void mx_stage_token(const ncclx_ep_ht_group_desc_t &g,
                                               const ncclx_ep_ht_handle_desc_t &h,
                                               const char *expert_out, size_t row_bytes, int head,
                                               char *dst, int *chain, int lane)
{
    if (lane == 0) {
        int n = 0;
        for (int r = head; r >= 0 && n < kMxMaxChain; r = h.em_next[r]) {
            chain[n++] = r;
        }
        for (int i = n; i < kMxMaxChain; i++) {
            chain[i] = -1;
        }
    }
    __syncwarp();
    const int H = g.hidden;
    for (int base = 0; base < H; base += kWarpSize * kMxLaneElements) {
        const int elem = base + lane * kMxLaneElements;
        const bool active = elem < H;
        float acc[kMxLaneElements];
#pragma unroll
        for (int i = 0; i < kMxLaneElements; i++) {
            acc[i] = 0.0f;
        }
        for (int c = 0; active && c < kMxMaxChain && chain[c] >= 0; c++) {
            const uint4 v = *reinterpret_cast<const uint4 *>(
                expert_out + (size_t)chain[c] * row_bytes + (size_t)elem * 2);
            const __nv_bfloat162 *p = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float2 f = __bfloat1622float2(p[i]);
                acc[2 * i] = __fadd_rn(acc[2 * i], f.x);
                acc[2 * i + 1] = __fadd_rn(acc[2 * i + 1], f.y);
            }
        }
        float amax = 0.0f;
#pragma unroll
        for (int i = 0; i < kMxLaneElements; i++) {
            amax = fmaxf(amax, fabsf(acc[i]));
        }
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
        const unsigned e = mx_scale_code(amax);
        const float m = mx_multiplier(e);
        unsigned lo = 0, hi = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            lo |= mx_e4m3(__fmul_rn(acc[i], m)) << (8 * i);
            hi |= mx_e4m3(__fmul_rn(acc[4 + i], m)) << (8 * i);
        }
        if (active) {
            *reinterpret_cast<uint2 *>(dst + elem) = make_uint2(lo, hi);
            if (lane % (kMxBlock / kMxLaneElements) == 0) {
                reinterpret_cast<unsigned char *>(dst)[H + elem / kMxBlock] = (unsigned char)e;
            }
        }
    }
    __syncwarp();
}

// Sums the packed rows sources[0 .. n) (ascending rank) of one token into its BF16 row out.
__device__ __forceinline__ void mx_reduce_token(const ncclx_ep_ht_group_desc_t &g,
                                                const char *const *sources, int n, char *out,
                                                int lane)
{
    const int H = g.hidden;
    for (int elem = lane * kMxLaneElements; elem < H; elem += kWarpSize * kMxLaneElements) {
        float acc[kMxLaneElements];
#pragma unroll
        for (int i = 0; i < kMxLaneElements; i++) {
            acc[i] = 0.0f;
        }
        for (int s = 0; s < n; s++) {
            const uint2 codes = *reinterpret_cast<const uint2 *>(sources[s] + elem);
            const unsigned e =
                reinterpret_cast<const unsigned char *>(sources[s])[H + elem / kMxBlock];
            const float scale = __uint_as_float(e << 23);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                acc[i] = __fadd_rn(acc[i], mx_decode((codes.x >> (8 * i)) & 0xffu, scale));
                acc[4 + i] = __fadd_rn(acc[4 + i], mx_decode((codes.y >> (8 * i)) & 0xffu, scale));
            }
        }
        uint4 v;
        __nv_bfloat162 *p = reinterpret_cast<__nv_bfloat162 *>(&v);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            p[i] = __floats2bfloat162_rn(acc[2 * i], acc[2 * i + 1]);
        }
        *reinterpret_cast<uint4 *>(out + (size_t)elem * 2) = v;
    }
}

} // namespace ht
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_HT_MXFP8_CUH_ */
