/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The memory-ordering and timing primitives every kernel folder (LL, HT, M2N) builds its
 * signals and bounded waits on: the global timer, system-scope acquire loads and release
 * stores, volatile loads, and the election of a grid's last block through an arrive counter
 * (dev_state.h).  Here so that no kernel folder includes another's helpers.
 */
#ifndef NCCLX_KERNELS_DEV_SYNC_CUH_
#define NCCLX_KERNELS_DEV_SYNC_CUH_

#include "dev_consts.cuh" /* kErrorTimeout */
#include "dev_error.cuh"  /* report_error */
#include "dev_state.h"

namespace ncclx
{

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

template <typename T> __device__ __forceinline__ T load_volatile(const T *p)
{
    return *reinterpret_cast<const volatile T *>(p);
}

// Thread 0 of a block: the block's arrival at a grid's arrive counter, and its place among the
// launch's arrivals (0 the first, gridDim.x - 1 the last).  The counter may hold any value and
// wrap; base is where this launch started, read before the block arrives and moved by the last
// arrival to where the next launch starts.  kSystem: the fence between the two orders the
// block's earlier writes system-wide (last_block), else on this GPU.
template <bool kSystem> __device__ __forceinline__ unsigned arrive_place(ncclx_ep_arrive_t *arrive)
{
    const unsigned base = load_volatile(&arrive->base);
    if (kSystem) {
        __threadfence_system();
    } else {
        __threadfence();
    }
    const unsigned ticket = atomicAdd(&arrive->count, 1u);
    const unsigned place = ticket - base;
    if (place == gridDim.x - 1) {
        *reinterpret_cast<volatile unsigned *>(&arrive->base) = ticket + 1;
    }
    return place;
}

// True in exactly one block of the grid: the last to arrive.  The counter may hold any value and
// wrap; base is where this launch started, so the election holds for any grid size and any
// number of launches.  Every block calls it once per launch.
// kSystem (last_block): every block's writes are visible system-wide before the winner goes on,
// for what peers and the network read after its signal.  Otherwise (last_block_local: a grid
// whose writes only later kernels of its stream read, a team of one ending an operation in
// place; those see every block's writes once the grid has ended) GPU-scope fences only, which
// order each block's reads of the operation's state (its sequence number) before the winner
// moves it: at 128 tokens the send of a one-rank dispatch spent about a sixth of its stall
// samples in the system-scope election.
// A grid of one block (a small batch: the LL kernels cut their grids to their work) is its own
// last block: no ticket, so two round trips to L2 less on its path, and the counter stays where
// it is (count equals base between launches, which is all a later launch needs); with kSystem
// it keeps the election's fences, in the same places.
template <bool kSystem> __device__ __forceinline__ bool last_block_at(ncclx_ep_arrive_t *arrive)
{
    __shared__ bool is_last;
    __syncthreads();
    if (gridDim.x == 1) {
        if (kSystem) {
            if (threadIdx.x == 0) {
                __threadfence_system();
            }
            __syncthreads();
            __threadfence();
        }
        return true;
    }
    if (threadIdx.x == 0) {
        is_last = arrive_place<kSystem>(arrive) == gridDim.x - 1;
    }
    __syncthreads();
    if (is_last) {
        __threadfence(); // every other block's arrival before what the winner writes
    }
    return is_last;
}

__device__ __forceinline__ bool last_block(ncclx_ep_arrive_t *arrive)
{
    return last_block_at<true>(arrive);
}

__device__ __forceinline__ bool last_block_local(ncclx_ep_arrive_t *arrive)
{
    return last_block_at<false>(arrive);
}

// True in exactly one block of the grid: the first to arrive.  A kernel whose blocks wait for
// peers, and whose own contribution a peer waits for, posts it from the first block that runs
// rather than from block 0, which need not be resident while the others spin.  Every block calls
// it once per launch (the counter works as last_block's: base is where this launch started, moved
// by the launch's last arrival), so any grid size and any number of launches elect one block; a
// grid of one block takes no ticket (as in last_block).
__device__ __forceinline__ bool first_block(ncclx_ep_arrive_t *arrive)
{
    __shared__ bool is_first;
    __syncthreads();
    if (gridDim.x == 1) {
        return true;
    }
    if (threadIdx.x == 0) {
        is_first = arrive_place<false>(arrive) == 0;
    }
    __syncthreads();
    return is_first;
}

// The deadline of a bounded wait, checked once per 1024 spins: false once halted(g) says the
// group has stopped, or timeout_ns after the first check (reported as a timeout); start begins
// at 0.  G: a descriptor with timeout_ns, status and state->error (LL, HT).
template <typename G, typename Halted>
__device__ __forceinline__ bool wait_deadline_goes_on(const G &g, Halted halted, unsigned spins,
                                                      unsigned long long &start)
{
    if ((spins & 1023) != 0) {
        return true;
    }
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
    return true;
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_DEV_SYNC_CUH_ */
