/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL dispatch's FP8 recipe: a warp quantizes a chunk of a BF16 token row to E4M3 with one
 * FLOAT32 scale per 128 elements, storing the bytes and the scales straight into every
 * destination (the receive area's messages, or the zero-copy rows).  Included by
 * ep_ll_dispatch.cu alone, whose FP8 send kernel is its one caller.
 */
#ifndef NCCLX_KERNELS_EP_LL_FP8_CUH_
#define NCCLX_KERNELS_EP_LL_FP8_CUH_

#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

// FP8 recipe: elements [begin, end) of a BF16 row (begin and end multiples of 128: the plan
// refuses FP8 for a hidden size that is not).  A warp step takes kFp8Steps x 512 elements; in
// each 512, lane i owns the 16 elements from 16 i, so the 8 lanes of a 128-element block reduce
// its amax in 3 shuffles, and each lane stores its 16 FP8 bytes with one 16-byte store per
// destination (a lane of 4 elements took 5 shuffles a block and 4-byte stores: the FP8 send was
// bound by those instructions, not by its bytes).  All loads of a step are issued before the
// first is used, so kFp8Steps x 32 bytes are in flight per lane.
constexpr int kFp8Steps = 2;
constexpr int kFp8LaneElems = 16;
constexpr int kFp8StepElems = kFp8LaneElems * kWarpSize;

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

// Two BF16 elements packed in one word, to FP8 E4M3 bytes of x / scale (round to nearest,
// saturated to the finite range), as two bytes of the result.
__device__ __forceinline__ unsigned fp8_pair(unsigned two_bf16, float scale)
{
    const unsigned lo = __nv_cvt_float_to_fp8(bf16_bits_to_float(two_bf16 & 0xffffu) / scale,
                                              __NV_SATFINITE, __NV_E4M3);
    const unsigned hi = __nv_cvt_float_to_fp8(bf16_bits_to_float(two_bf16 >> 16) / scale,
                                              __NV_SATFINITE, __NV_E4M3);
    return lo | (hi << 8);
}

__device__ __forceinline__ float bf16_pair_amax(unsigned two_bf16, float amax)
{
    return fmaxf(amax, fmaxf(fabsf(bf16_bits_to_float(two_bf16 & 0xffffu)),
                             fabsf(bf16_bits_to_float(two_bf16 >> 16))));
}

__device__ void quantize_fp8_to(const ncclx_ep_ll_dispatch_desc_t &a, const __nv_bfloat16 *row,
                                const LaneTargets &payload, const LaneTargets &scale_rows,
                                int begin, int end, int lane)
{
    for (int b0 = begin; b0 < end; b0 += kFp8StepElems * kFp8Steps) {
        uint4 raw[kFp8Steps][2];
#pragma unroll
        for (int u = 0; u < kFp8Steps; u++) {
            const int b = b0 + u * kFp8StepElems + lane * kFp8LaneElems;
            if (b < end) {
                const uint4 *from = reinterpret_cast<const uint4 *>(row + b);
                raw[u][0] = from[0];
                raw[u][1] = from[1];
            } else { // past the end: amax and q ignore it, but it is defined
                raw[u][0] = raw[u][1] = make_uint4(0, 0, 0, 0);
            }
        }
#pragma unroll
        for (int u = 0; u < kFp8Steps; u++) {
            const int b = b0 + u * kFp8StepElems + lane * kFp8LaneElems;
            // A step that starts past the end does so for every lane: the warp leaves together.
            if (b0 + u * kFp8StepElems >= end) {
                break;
            }
            // The lanes past the chunk's end (a last step of fewer than 512 elements) take part
            // in the shuffles, which every lane must reach, and store nothing.
            const bool mine = b < end;
            const unsigned w[8] = {raw[u][0].x, raw[u][0].y, raw[u][0].z, raw[u][0].w,
                                   raw[u][1].x, raw[u][1].y, raw[u][1].z, raw[u][1].w};
            float amax = 0.0f;
            if (mine) {
#pragma unroll
                for (int i = 0; i < 8; i++) {
                    amax = bf16_pair_amax(w[i], amax);
                }
            }
#pragma unroll
            for (int offset = 4; offset > 0; offset >>= 1) { // the 8 lanes of this lane's block
                amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
            }
            const float scale = fp8_scale(amax, a.round_scales);
            uint4 q = make_uint4(0, 0, 0, 0);
            if (mine) {
                q.x = fp8_pair(w[0], scale) | (fp8_pair(w[1], scale) << 16);
                q.y = fp8_pair(w[2], scale) | (fp8_pair(w[3], scale) << 16);
                q.z = fp8_pair(w[4], scale) | (fp8_pair(w[5], scale) << 16);
                q.w = fp8_pair(w[6], scale) | (fp8_pair(w[7], scale) << 16);
            }
            for (unsigned rest = payload.lanes; rest != 0; rest &= rest - 1) {
                const int j = __ffs(rest) - 1;
                char *p = target_of(payload, j), *sp = target_of(scale_rows, j);
                if (mine) {
                    *reinterpret_cast<uint4 *>(p + b) = q;
                    if (lane % 8 == 0) {
                        reinterpret_cast<float *>(sp)[b / 128] = scale;
                    }
                }
            }
        }
    }
}

} // namespace
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_LL_FP8_CUH_ */
