/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Device helpers of the HT kernels: peer addressing, the step signals that order the ranks'
 * kernels (every HT kernel waits for what it reads at its start and announces what it wrote in
 * its last block), and the routing-map bit tests.  The generic pieces (timers, errors,
 * last-block election, 16-byte copies) are ep_ll_common.cuh's.
 */
#ifndef NCCLX_KERNELS_EP_HT_COMMON_CUH_
#define NCCLX_KERNELS_EP_HT_COMMON_CUH_

#include "ep_ht.h"
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace ht
{

constexpr int kThreads = NCCLX_EP_THREADS;
constexpr unsigned kErrorOverflow = NCCLX_EP_ERROR_OVERFLOW;

__device__ __forceinline__ char *peer_base(const ncclx_ep_ht_group_desc_t &g, int peer)
{
    return static_cast<char *>(g.peers[peer]);
}

// Signal (kind, source) in the arena starting at base.
__device__ __forceinline__ unsigned long long *
signal_at(char *base, const ncclx_ep_ht_group_desc_t &g, int kind, int source)
{
    return reinterpret_cast<unsigned long long *>(base + g.signals) + (size_t)kind * g.ranks +
           source;
}

// Once a wait has timed out the group exchanges nothing more: its ranks may no longer be in
// step, so anything read would be stale (the next host call fails with ncclxTimeout).
__device__ __forceinline__ bool halted(const ncclx_ep_ht_group_desc_t &g)
{
    return (load_volatile(&g.state->error) & kErrorTimeout) != 0;
}

// The whole block waits until source's signal `kind` in this rank's arena reaches at_least
// (false: timed out or halted; the timeout is reported).
__device__ __forceinline__ bool wait_one(const ncclx_ep_ht_group_desc_t &g, int kind, int source,
                                         unsigned long long at_least)
{
    const unsigned long long *sig = signal_at(peer_base(g, g.rank), g, kind, source);
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        if (ld_acquire_sys(sig) >= at_least) {
            return true;
        }
        if ((spins & 1023) == 0) {
            const unsigned long long now = globaltimer();
            if (halted(g)) {
                return false;
            }
            if (start == 0) {
                start = now;
            } else if (now - start > g.timeout_ns) {
                report_error(g, kErrorTimeout);
                return false;
            }
        }
    }
}

// Every thread of the block returns true once every rank's signal `kind` has reached at_least
// (one thread per rank polls), false when a wait timed out or the group is halted.
__device__ __forceinline__ bool block_wait_all(const ncclx_ep_ht_group_desc_t &g, int kind,
                                               unsigned long long at_least)
{
    __shared__ int failed;
    if (threadIdx.x == 0) {
        failed = halted(g) ? 1 : 0;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < g.ranks && !load_volatile(&failed); r += blockDim.x) {
        if (!wait_one(g, kind, r, at_least)) {
            failed = 1;
        }
    }
    __syncthreads();
    return failed == 0;
}

// The block waits for one source's signal (thread 0 polls).
__device__ __forceinline__ bool block_wait_one(const ncclx_ep_ht_group_desc_t &g, int kind,
                                               int source, unsigned long long at_least)
{
    __shared__ int ok;
    if (threadIdx.x == 0) {
        ok = !halted(g) && wait_one(g, kind, source, at_least);
    }
    __syncthreads();
    return ok != 0;
}

// Called by the last block of a step (after last_block(), whose fences make every block's
// writes visible system-wide): tells every rank that this rank finished step value - 1.
__device__ __forceinline__ void signal_all(const ncclx_ep_ht_group_desc_t &g, int kind,
                                           unsigned long long value)
{
    __threadfence_system();
    for (int r = threadIdx.x; r < g.ranks; r += blockDim.x) {
        st_release_sys(signal_at(peer_base(g, r), g, kind, g.rank), value);
    }
}

// Bit e of a routing-map row.
__device__ __forceinline__ bool row_has(const uint32_t *row, int e)
{
    return (row[e >> 5] >> (e & 31)) & 1u;
}

// Whether a routing-map row has any expert in [lo, hi).
__device__ __forceinline__ bool row_has_range(const uint32_t *row, int lo, int hi)
{
    for (int w = lo >> 5; w <= (hi - 1) >> 5; w++) {
        uint32_t bits = row[w];
        const int first = w << 5;
        if (lo > first) {
            bits &= ~0u << (lo - first);
        }
        if (hi < first + 32) {
            bits &= (1u << (hi - first)) - 1u;
        }
        if (bits != 0) {
            return true;
        }
    }
    return false;
}

// The routing map of rank r.
__device__ __forceinline__ const uint32_t *map_of(const ncclx_ep_ht_group_desc_t &g, int r)
{
    return reinterpret_cast<const uint32_t *>(peer_base(g, r) + g.map);
}

// Rows padded to the alignment: an expert with no rows takes none.
__device__ __forceinline__ long long padded(long long count, int alignment)
{
    return alignment <= 1 ? count : (count + alignment - 1) / alignment * alignment;
}

} // namespace ht
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_HT_COMMON_CUH_ */
