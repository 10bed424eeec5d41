/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL routing (handle update): one block per destination rank d numbers the tokens that go to
 * d in token order (a block-wide scan), which gives each token its slot in d's receive area.
 * Block 0 also keeps a validated copy of topk_idx.
 */
#include <cub/block/block_scan.cuh>

#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

constexpr int kRouteThreads = 1024; // >= NCCLX_EP_MAX_LL_TOKENS_PER_RANK

template <typename IdxT>
__device__ __forceinline__ int expert_at(const IdxT *topk_idx, int i, int num_experts)
{
    long long e = static_cast<long long>(topk_idx[i]);
    return (e >= 0 && e < num_experts) ? static_cast<int>(e) : -1;
}

template <typename IdxT>
__global__ void __launch_bounds__(kRouteThreads)
    route_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h, const IdxT *topk_idx)
{
    using Scan = cub::BlockScan<int, kRouteThreads>;
    __shared__ typename Scan::TempStorage scan_storage;
    const int d = blockIdx.x, t = threadIdx.x, K = h.topk, L = g.local_experts;
    const bool live = t < h.num_tokens;
    int goes = 0, slot = 0, total = 0;
    if (live) {
        for (int k = 0; k < K; k++) {
            int e = expert_at(topk_idx, t * K + k, g.num_experts);
            goes |= (e >= 0 && e / L == d);
        }
    }
    Scan(scan_storage).ExclusiveSum(goes, slot, total);
    if (live) {
        for (int k = 0; k < K; k++) {
            int e = expert_at(topk_idx, t * K + k, g.num_experts);
            if (e >= 0 && e / L == d) {
                h.route[t * K + k] = slot;
            }
        }
    }
    if (t == 0) {
        h.send_count[d] = total;
    }
    if (d != 0 || !live) {
        return;
    }
    // Block 0: the validated copy and the unrouted entries.
    for (int k = 0; k < K; k++) {
        const long long raw = static_cast<long long>(topk_idx[t * K + k]);
        const int e = expert_at(topk_idx, t * K + k, g.num_experts);
        if (raw != -1 && e < 0) {
            report_error(g, kErrorBadExpert);
        }
        h.idx[t * K + k] = e;
        if (e < 0) {
            h.route[t * K + k] = -1;
        }
    }
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_route(const ncclx_ep_ll_group_desc_t *g,
                                                const ncclx_ep_ll_handle_desc_t *h,
                                                const void *topk_idx, int idx_int64,
                                                cudaStream_t stream)
{
    if (idx_int64) {
        ncclx::route_kernel<long long><<<g->ranks, ncclx::kRouteThreads, 0, stream>>>(
            *g, *h, static_cast<const long long *>(topk_idx));
    } else {
        ncclx::route_kernel<int><<<g->ranks, ncclx::kRouteThreads, 0, stream>>>(
            *g, *h, static_cast<const int *>(topk_idx));
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_route_load(void)
{
    cudaFuncAttributes attr;
    cudaError_t err = cudaFuncGetAttributes(&attr, ncclx::route_kernel<int>);
    return err != cudaSuccess ? err : cudaFuncGetAttributes(&attr, ncclx::route_kernel<long long>);
}
