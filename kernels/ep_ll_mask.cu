/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL active mask: query, update and clean.  The mask lives in the group's private device
 * memory as inactive[r] (0 = active, so zeroed arenas start with every rank active); LL
 * kernels set inactive[r] when a wait on r times out and skip inactive ranks from then on.
 *
 * Clean is collective: every rank that takes part writes its barrier generation into every
 * peer's clean barrier slot and waits for every peer's.  Round one proves that all earlier
 * operations of all ranks are over (each rank enters clean in stream order), so no stale
 * signal is still in flight; then each rank zeroes its own signals and sequence numbers and
 * marks active every rank that answered; round two keeps anyone from sending new data before
 * every receiver has reset.  A rank that does not answer within the group's timeout stays
 * masked and the timeout is reported.
 */
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

constexpr int kMaskThreads = 512;
constexpr int kUpdateRanks = 1024; // ranks per update launch (bits passed by value)

struct MaskBits {
    unsigned bits[kUpdateRanks / 32];
    int base, count;
};

__global__ void mask_query_kernel(ncclx_ep_ll_group_desc_t g, int32_t *out)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < g.ranks; r += gridDim.x * blockDim.x) {
        out[r] = g.inactive[r] == 0 ? 1 : 0;
    }
}

__global__ void mask_update_kernel(ncclx_ep_ll_group_desc_t g, MaskBits m)
{
    for (int i = threadIdx.x; i < m.count; i += blockDim.x) {
        g.inactive[m.base + i] = (m.bits[i / 32] >> (i % 32)) & 1u ? 0 : 1;
    }
}

// Waits until *p >= want; false after the group's timeout.
__device__ bool wait_at_least(const ncclx_ep_ll_group_desc_t &g, const unsigned long long *p,
                              unsigned long long want)
{
    unsigned long long start = globaltimer();
    for (unsigned spins = 1;; spins++) {
        if (ld_acquire_sys(p) >= want) {
            return true;
        }
        if ((spins & 1023) == 0 && globaltimer() - start > g.timeout_ns) {
            return false;
        }
    }
}

// One barrier round at generation v over the ranks marked in inactive as taking part (0).
// Round one (first) waits for every rank and writes the answer into inactive.
__device__ void clean_round(const ncclx_ep_ll_group_desc_t &g, unsigned long long v, bool first)
{
    __threadfence_system();
    __syncthreads();
    for (int p = threadIdx.x; p < g.ranks; p += blockDim.x) {
        char *slot =
            peer_base(g, p) + g.clean_barrier + (size_t)g.rank * sizeof(unsigned long long);
        st_release_sys(reinterpret_cast<unsigned long long *>(slot), v);
    }
    const unsigned long long *mine =
        reinterpret_cast<const unsigned long long *>(peer_base(g, g.rank) + g.clean_barrier);
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        if (!first && g.inactive[s] != 0) {
            continue;
        }
        const bool answered = wait_at_least(g, mine + s, v);
        if (!answered) {
            report_error(g, kErrorTimeout);
        }
        if (first || !answered) {
            g.inactive[s] = answered ? 0 : 1;
        }
    }
    __syncthreads();
}

__global__ void __launch_bounds__(kMaskThreads) mask_clean_kernel(ncclx_ep_ll_group_desc_t g)
{
    const unsigned long long epoch = g.state->clean_epoch;
    clean_round(g, 2 * epoch + 1, true);
    // Nothing is in flight any more: forget every earlier operation.
    unsigned long long *signals =
        reinterpret_cast<unsigned long long *>(peer_base(g, g.rank) + g.signals);
    for (int i = threadIdx.x; i < 2 * g.ranks * 2; i += blockDim.x) {
        signals[i] = 0;
    }
    if (threadIdx.x == 0) {
        g.state->dispatch_seq = 0;
        g.state->combine_seq = 0;
    }
    clean_round(g, 2 * epoch + 2, false);
    if (threadIdx.x == 0) {
        g.state->clean_epoch = epoch + 1;
    }
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g,
                                                     int32_t *out, cudaStream_t stream)
{
    int blocks = (g->ranks + ncclx::kMaskThreads - 1) / ncclx::kMaskThreads;
    ncclx::mask_query_kernel<<<blocks, ncclx::kMaskThreads, 0, stream>>>(*g, out);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g,
                                                      const int32_t *mask, cudaStream_t stream)
{
    for (int base = 0; base < g->ranks; base += ncclx::kUpdateRanks) {
        ncclx::MaskBits m = {};
        m.base = base;
        m.count = min(ncclx::kUpdateRanks, g->ranks - base);
        for (int i = 0; i < m.count; i++) {
            m.bits[i / 32] |= (mask[base + i] != 0 ? 1u : 0u) << (i % 32);
        }
        ncclx::mask_update_kernel<<<1, ncclx::kMaskThreads, 0, stream>>>(*g, m);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) {
            return err;
        }
    }
    return cudaSuccess;
}

extern "C" cudaError_t ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g,
                                                     cudaStream_t stream)
{
    ncclx::mask_clean_kernel<<<1, ncclx::kMaskThreads, 0, stream>>>(*g);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_mask_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::mask_query_kernel),
                                   reinterpret_cast<const void *>(ncclx::mask_update_kernel),
                                   reinterpret_cast<const void *>(ncclx::mask_clean_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
