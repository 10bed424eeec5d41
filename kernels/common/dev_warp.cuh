/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Warp-level helpers of the EP kernels (LL and HT): the warps of an NCCLX_EP_THREADS block,
 * the lanes below this one, and a warp's 16-byte copy of a byte range to the destinations its
 * lanes hold.  Here so that neither folder includes the other's helpers.
 */
#ifndef NCCLX_KERNELS_DEV_WARP_CUH_
#define NCCLX_KERNELS_DEV_WARP_CUH_

#include <stddef.h>

#include "dev_state.h"
#include "dev_sync.cuh"

namespace ncclx
{

constexpr int kWarpSize = 32;
constexpr int kWarps = NCCLX_EP_THREADS / kWarpSize;

// This warp's index in the grid for a loop `for (u = unit_warp(units, warps); u < units;
// u += warps)`.  With fewer units than warps, numbered across blocks first (warp w of block b
// is w * gridDim.x + b), so that every block, and so every SM, gets a share of the units instead
// of the first few blocks' SMs all of them.  Otherwise blocks first, so that neighbouring units
// (the chunks of one row) go to warps of one block, which share their loads of its metadata.
__device__ __forceinline__ int unit_warp(long long units, int warps)
{
    if (units < warps) {
        return (int)(threadIdx.x / kWarpSize) * (int)gridDim.x + (int)blockIdx.x;
    }
    return (int)blockIdx.x * kWarps + (int)(threadIdx.x / kWarpSize);
}

// The destinations of a warp's copy, held one per lane: lane l's `mine` is a destination
// when bit l of `lanes` is set.  Keeping them in lanes (instead of an array per thread) keeps
// the copy loops free of local memory; a lane's pointer reaches the others by a shuffle.
struct LaneTargets {
    unsigned lanes;
    char *mine;
};

__device__ __forceinline__ char *target_of(const LaneTargets &t, int lane)
{
    return reinterpret_cast<char *>(
        __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(t.mine), lane));
}

__device__ __forceinline__ unsigned lanemask_lt()
{
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

// A warp copies [begin, end) bytes (16-byte multiples) of src to each target,
// kCopyUnroll 16-byte loads in flight per lane before the stores.
// With stop, a nonzero *stop read after the loads (its latency hidden behind theirs)
// abandons the copy before the next stores; returns false then.
constexpr int kCopyUnroll = 8;

__device__ __forceinline__ bool warp_copy_to(const LaneTargets &to, const char *src, size_t begin,
                                             size_t end, int lane, const unsigned *stop = nullptr)
{
    constexpr size_t kStep = (size_t)kCopyUnroll * kWarpSize * 16;
    for (size_t off0 = begin; off0 < end; off0 += kStep) {
        const size_t off = off0 + (size_t)lane * 16;
        uint4 v[kCopyUnroll];
#pragma unroll
        for (int u = 0; u < kCopyUnroll; u++) {
            size_t o = off + (size_t)u * kWarpSize * 16;
            if (o < end) {
                v[u] = *reinterpret_cast<const uint4 *>(src + o);
            }
        }
        if (stop != nullptr && __any_sync(0xffffffffu, load_volatile(stop) != 0)) {
            return false;
        }
        for (unsigned rest = to.lanes; rest != 0; rest &= rest - 1) {
            char *dst = target_of(to, __ffs(rest) - 1);
#pragma unroll
            for (int u = 0; u < kCopyUnroll; u++) {
                size_t o = off + (size_t)u * kWarpSize * 16;
                if (o < end) {
                    *reinterpret_cast<uint4 *>(dst + o) = v[u];
                }
            }
        }
    }
    return true;
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_DEV_WARP_CUH_ */
