/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Device helpers shared by the LL kernels: peer addressing, signals with acquire/release at
 * system scope, bounded waits, last-block detection, and 16-byte copies.
 */
#ifndef NCCLX_KERNELS_EP_LL_COMMON_CUH_
#define NCCLX_KERNELS_EP_LL_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "ep_ll.h"

namespace ncclx
{

constexpr int kWarpSize = 32;
constexpr int kWarps = NCCLX_EP_THREADS / kWarpSize;
// Rows move in chunks of this many bytes (one warp step of warp_copy_to).
constexpr size_t kChunkBytes = 4096;
// NCCLX_EP_RECIPE_* and ncclxDataType_t values the kernels need (include/ncclx/plan.h).
constexpr int kRecipeQuantFwd = 0x2;
constexpr int kRecipeFp8 = 0x4;
constexpr int kBf16 = 0, kFp16 = 1, kFp32 = 2;
constexpr unsigned kErrorTimeout = 0x1, kErrorBadExpert = 0x2;

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long ld_acquire_sys(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_sys(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ char *peer_base(const ncclx_ep_ll_group_desc_t &g, int peer)
{
    return static_cast<char *>(g.peers[peer]);
}

__device__ __forceinline__ unsigned long long *
signal_at(char *base, const ncclx_ep_ll_group_desc_t &g, int parity, int source, int which)
{
    return reinterpret_cast<unsigned long long *>(base + g.signals) +
           ((size_t)(parity * g.ranks + source) * 2 + which);
}

// Records an error for the host (mapped status) and for later kernels (device state).  The
// device word collects every bit atomically; the host word gets the union seen so far.
__device__ __forceinline__ void report_error(const ncclx_ep_ll_group_desc_t &g, unsigned bits)
{
    unsigned all = atomicOr(&g.state->error, bits) | bits;
    volatile unsigned *status = g.status;
    *status = *status | all;
    __threadfence_system();
}

// Whether this rank exchanges with rank r in the current operation: both it and this rank are
// active (a masked rank is out of the group until a clean; groups without masking: always).
__device__ __forceinline__ bool rank_live(const ncclx_ep_ll_group_desc_t &g, int r)
{
    return g.inactive == nullptr || (g.inactive[r] == 0 && g.inactive[g.rank] == 0);
}

// Messages the handle's last dispatch took from source s, 0 once s is masked: a rank masked
// by a timeout late in a dispatch (after some of its messages were counted) contributes
// nothing anywhere, and combine sends nothing back to it.
__device__ __forceinline__ int received(const ncclx_ep_ll_group_desc_t &g,
                                        const ncclx_ep_ll_handle_desc_t &h, int s)
{
    return rank_live(g, s) ? h.recv_count[s] : 0;
}

// Waits until source's signal carries sequence tag want; returns the message count.  Returns
// 0 at once for a rank that is not live, and 0 after the group's timeout: the error is
// reported and, with masking, the source is masked so that later operations skip it (other
// threads waiting for it see the mask and stop too).
__device__ __forceinline__ unsigned wait_signal(const ncclx_ep_ll_group_desc_t &g,
                                                const unsigned long long *signal, unsigned want,
                                                int source)
{
    if (!rank_live(g, source)) {
        return 0;
    }
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        unsigned long long v = ld_acquire_sys(signal);
        if ((unsigned)(v >> 32) == want) {
            return (unsigned)v;
        }
        if ((spins & 1023) == 0) {
            unsigned long long now = globaltimer();
            if (g.inactive != nullptr &&
                *reinterpret_cast<volatile int *>(&g.inactive[source]) != 0) {
                return 0;
            }
            if (start == 0) {
                start = now;
            } else if (now - start > g.timeout_ns) {
                if (g.inactive != nullptr) {
                    atomicExch(&g.inactive[source], 1);
                }
                report_error(g, kErrorTimeout);
                return 0;
            }
        }
    }
}

// True in exactly one block of the grid: the last to arrive (after every block's writes are
// visible system-wide).  counter only grows; all launches on it use the same grid size.
__device__ __forceinline__ bool last_block(unsigned *counter)
{
    __shared__ bool is_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned ticket = atomicAdd(counter, 1u);
        is_last = ((ticket + 1) % gridDim.x) == 0;
    }
    __syncthreads();
    if (is_last) {
        __threadfence();
    }
    return is_last;
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

// Lane k holds d, the rank of top-k entry k (-1: none).  Sets first on the lane of each
// rank's first entry and returns the rank order of d among the token's distinct destination
// ranks: the slot of rank-major combine rows.  Every destination counts, masked or not, so
// dispatch (which writes the order into the header) and combine (which reads the rows) agree.
__device__ __forceinline__ int destination_order(int d, bool &first)
{
    const unsigned same = __match_any_sync(0xffffffffu, d);
    first = d >= 0 && (same & lanemask_lt()) == 0;
    int order = 0;
    for (unsigned rest = __ballot_sync(0xffffffffu, first); rest != 0; rest &= rest - 1) {
        order += __shfl_sync(0xffffffffu, d, __ffs(rest) - 1) < d;
    }
    return order;
}

// A warp copies [begin, end) bytes (16-byte multiples) of src to each target,
// kCopyUnroll 16-byte loads in flight per lane before the stores.
constexpr int kCopyUnroll = 8;

__device__ __forceinline__ void warp_copy_to(const LaneTargets &to, const char *src, size_t begin,
                                             size_t end, int lane)
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
}

__device__ __forceinline__ float load_as_float(const void *p, size_t i, int dtype)
{
    if (dtype == kBf16) {
        return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    }
    if (dtype == kFp16) {
        return __half2float(static_cast<const __half *>(p)[i]);
    }
    return static_cast<const float *>(p)[i];
}

__device__ __forceinline__ void store_from_double(void *p, size_t i, double v, int dtype)
{
    if (dtype == kBf16) {
        static_cast<__nv_bfloat16 *>(p)[i] = __double2bfloat16(v);
    } else if (dtype == kFp16) {
        static_cast<__half *>(p)[i] = __double2half(v);
    } else {
        static_cast<float *>(p)[i] = __double2float_rn(v);
    }
}

// Loads the modules of n kernels now (cudaFuncGetAttributes forces the load), so that no
// later launch, possibly inside a graph capture, pays for it.
inline cudaError_t load_kernels(const void *const *kernels, int n)
{
    cudaFuncAttributes attr;
    for (int i = 0; i < n; i++) {
        cudaError_t err = cudaFuncGetAttributes(&attr, kernels[i]);
        if (err != cudaSuccess) {
            return err;
        }
    }
    return cudaSuccess;
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_LL_COMMON_CUH_ */
