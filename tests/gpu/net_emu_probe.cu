/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The emulator ordering probe (net_emu_probe.h): the real net.cuh, one block of three warps.
 */
#include "net.cuh"
#include "net_emu_probe.h"

namespace
{

using ncclx::globaltimer;
using ncclx::kWarpSize;
using ncclx::load_volatile;

__device__ void spin_for(unsigned long long ns)
{
    const unsigned long long until = globaltimer() + ns;
    while (globaltimer() < until) {
    }
}

__global__ void signal_race_kernel(ncclx_net_desc_t n, int slot, int race, size_t dst_off,
                                   size_t src_off, size_t bytes, unsigned long long delay_ns,
                                   unsigned char *seen, int *status)
{
    __shared__ volatile int taken;
    const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
    ncclx_net_held_t *h = ncclx::emu_held(n, 0, 0, slot);
    if (threadIdx.x == 0) {
        taken = 0;
    }
    __syncthreads();
    if (warp == 0) { // the other warp
        if (lane == 0) {
            const unsigned want = race == NCCLX_PROBE_APPLYING ? 3u : 1u;
            if (atomicCAS(&h->state, 2u, want) != 2u) {
                *status = 2; // the slot was not held: the probe itself is wrong
            }
            __threadfence();
            taken = 1;
            spin_for(delay_ns);
        }
        __syncwarp();
        if (race == NCCLX_PROBE_APPLYING) {
            ncclx::emu_copy_warp(ncclx::emu_arena(n, 0) + dst_off,
                                 static_cast<const char *>(n.local) + src_off, bytes, lane);
            __syncwarp();
        }
        if (lane == 0) {
            __threadfence();
            atomicExch(&h->state, race == NCCLX_PROBE_APPLYING ? 0u : 2u);
        }
    } else if (warp == 1) { // the signalling warp, once the other warp holds the slot
        while (taken == 0) {
        }
        ncclx::net_put_signal_warp(n, 0, 0, 0, 0, 0, 1ull, lane);
    } else if (warp == 2) { // the receiver
        if (lane == 0) {
            const unsigned long long *signal = ncclx::emu_signal(n, 0, 0);
            const unsigned long long start = globaltimer();
            while (ncclx::ld_acquire_sys(signal) == 0) {
                if (globaltimer() - start > 1000000000ull) {
                    *status = 1;
                    break;
                }
            }
        }
        __syncwarp();
        const volatile unsigned char *dst =
            reinterpret_cast<const volatile unsigned char *>(ncclx::emu_arena(n, 0) + dst_off);
        for (size_t i = lane; i < bytes; i += kWarpSize) {
            seen[i] = dst[i];
        }
    }
}

} // namespace

extern "C" cudaError_t ncclx_probe_signal_race(const ncclx_net_desc_t *n, int slot,
                                               ncclx_probe_race_t race, size_t dst_off,
                                               size_t src_off, size_t bytes,
                                               unsigned long long delay_ns, unsigned char *seen,
                                               int *status)
{
    signal_race_kernel<<<1, 3 * kWarpSize>>>(*n, slot, (int)race, dst_off, src_off, bytes, delay_ns,
                                             seen, status);
    return cudaGetLastError();
}
