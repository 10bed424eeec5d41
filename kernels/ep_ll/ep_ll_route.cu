/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL routing (handle update): one block per destination rank d numbers the tokens that go to
 * d in token order (a block-wide scan), which gives each token its slot in d's receive area.
 * Block 0 also keeps a validated copy of topk_idx.  Expert-major handles have one block more per
 * 32 experts, which numbers the tokens that go to each of its experts in token order (the expert
 * slot) and counts them: with the counts of every source before it, a receiver knows where each
 * row goes before the row moves (ep_ll_dispatch.cu).
 */
#include <cub/block/block_scan.cuh>

#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

// The routing runs in blocks of the data kernels' size: a larger block might not find room on
// an SM that a peer's spinning receive already half fills (a loopback team's ranks share the
// GPU), and the peer waits for this rank's dispatch, which waits for this routing.
constexpr int kRouteThreads = NCCLX_EP_THREADS;
constexpr int kRouteWarps = kRouteThreads / kWarpSize;
constexpr int kTokensPerThread = 2; // thread t has tokens 2t and 2t + 1 (a blocked arrangement)
static_assert(kRouteThreads * kTokensPerThread >= NCCLX_EP_MAX_LL_TOKENS_PER_RANK,
              "a routing block holds every token of a rank");
static_assert(kTokensPerThread == 2, "number_expert_rows ranks a lane's two tokens");
constexpr int kExpertsPerBlock = 32; // one ballot bit per expert of the block
static_assert(kRouteWarps * 2 == kWarpSize, "a warp scans the warps' totals of two experts");

template <typename IdxT>
__device__ __forceinline__ int expert_at(const IdxT *topk_idx, int i, int num_experts)
{
    long long e = static_cast<long long>(topk_idx[i]);
    return (e >= 0 && e < num_experts) ? static_cast<int>(e) : -1;
}

// Experts [e0, e0 + 32).  Warp w holds tokens [64w, 64w + 64), lane l tokens 64w + 2l + j.  Per
// expert x, ballot j of the warp says which lanes' token j goes to x; a token's index among the
// warp's tokens to x is the bits of both ballots below its lane, plus its lane's first token when
// it is the second; the exclusive sum of the warps' totals (16 lanes per expert, a lane per warp)
// is where warp w's tokens start.  A token that lists an expert twice is one row of it (one bit),
// as a receiver counts it.
template <typename IdxT>
__device__ __forceinline__ void number_expert_rows(const ncclx_ep_ll_group_desc_t &g,
                                                   const ncclx_ep_ll_handle_desc_t &h,
                                                   const IdxT *topk_idx, int e0)
{
    __shared__ unsigned ballots[kTokensPerThread][kRouteWarps][kExpertsPerBlock];
    __shared__ int warp_start[kRouteWarps][kExpertsPerBlock];
    const int lane = threadIdx.x % kWarpSize, w = threadIdx.x / kWarpSize, K = h.topk;
    unsigned hits[kTokensPerThread] = {0, 0};
    for (int j = 0; j < kTokensPerThread; j++) {
        const int t = threadIdx.x * kTokensPerThread + j;
        for (int k = 0; t < h.num_tokens && k < K; k++) {
            const int e = expert_at(topk_idx, t * K + k, g.num_experts);
            if (e >= e0 && e < e0 + kExpertsPerBlock) {
                hits[j] |= 1u << (e - e0);
            }
        }
        unsigned mine = 0; // lane x keeps expert x's ballot
        for (int x = 0; x < kExpertsPerBlock; x++) {
            const unsigned b = __ballot_sync(0xffffffffu, (hits[j] >> x) & 1u);
            mine = lane == x ? b : mine;
        }
        ballots[j][w][lane] = mine;
    }
    __syncthreads();
    {
        // Warp w, lane l: expert w + 16 (l / 16), the tokens of warps before l % 16.
        const int x = w + kRouteWarps * (lane / kRouteWarps), v = lane % kRouteWarps;
        const int n = __popc(ballots[0][v][x]) + __popc(ballots[1][v][x]);
        int incl = n;
        for (int off = 1; off < kRouteWarps; off <<= 1) {
            const int up = __shfl_up_sync(0xffffffffu, incl, off, kRouteWarps);
            incl += v >= off ? up : 0;
        }
        warp_start[v][x] = incl - n;
        if (v == kRouteWarps - 1 && e0 + x < g.num_experts) {
            h.expert_count[e0 + x] = incl;
        }
    }
    __syncthreads();
    const unsigned below = lanemask_lt();
    for (int j = 0; j < kTokensPerThread; j++) {
        const int t = threadIdx.x * kTokensPerThread + j;
        for (int k = 0; t < h.num_tokens && k < K; k++) {
            const int e = expert_at(topk_idx, t * K + k, g.num_experts);
            if (e >= e0 && e < e0 + kExpertsPerBlock) {
                const int x = e - e0;
                const int first_of_lane = j == 1 ? (int)((hits[0] >> x) & 1u) : 0;
                h.expert_slot[t * K + k] = warp_start[w][x] + __popc(ballots[0][w][x] & below) +
                                           __popc(ballots[1][w][x] & below) + first_of_lane;
            }
        }
    }
}

template <typename IdxT>
__global__ void __launch_bounds__(kRouteThreads, 2)
    route_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h, const IdxT *topk_idx)
{
    using Scan = cub::BlockScan<int, kRouteThreads>;
    __shared__ typename Scan::TempStorage scan_storage;
    if ((int)blockIdx.x >= g.ranks) {
        number_expert_rows(g, h, topk_idx, ((int)blockIdx.x - g.ranks) * kExpertsPerBlock);
        return;
    }
    const int d = blockIdx.x, K = h.topk, L = g.local_experts;
    int goes[kTokensPerThread], slot[kTokensPerThread], total = 0;
    for (int j = 0; j < kTokensPerThread; j++) {
        const int t = threadIdx.x * kTokensPerThread + j;
        goes[j] = 0;
        for (int k = 0; t < h.num_tokens && k < K; k++) {
            const int e = expert_at(topk_idx, t * K + k, g.num_experts);
            goes[j] |= (e >= 0 && e / L == d);
        }
    }
    Scan(scan_storage).ExclusiveSum(goes, slot, total);
    for (int j = 0; j < kTokensPerThread; j++) {
        const int t = threadIdx.x * kTokensPerThread + j;
        for (int k = 0; t < h.num_tokens && k < K; k++) {
            const int e = expert_at(topk_idx, t * K + k, g.num_experts);
            if (e >= 0 && e / L == d) {
                h.route[t * K + k] = slot[j];
            }
        }
    }
    if (threadIdx.x == 0) {
        h.send_count[d] = total;
    }
    if (d != 0) {
        return;
    }
    // Block 0: the validated copy and the unrouted entries.
    for (int j = 0; j < kTokensPerThread; j++) {
        const int t = threadIdx.x * kTokensPerThread + j;
        for (int k = 0; t < h.num_tokens && k < K; k++) {
            const long long raw = static_cast<long long>(topk_idx[t * K + k]);
            const int e = expert_at(topk_idx, t * K + k, g.num_experts);
            if (raw != -1 && e < 0) {
                report_error(g, kErrorBadExpert);
            }
            h.idx[t * K + k] = e;
            if (e < 0) {
                h.route[t * K + k] = -1;
                if (h.expert_major) {
                    h.expert_slot[t * K + k] = -1;
                }
            }
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
    const int blocks =
        g->ranks + (h->expert_major
                        ? (g->num_experts + ncclx::kExpertsPerBlock - 1) / ncclx::kExpertsPerBlock
                        : 0);
    if (idx_int64) {
        ncclx::route_kernel<long long><<<blocks, ncclx::kRouteThreads, 0, stream>>>(
            *g, *h, static_cast<const long long *>(topk_idx));
    } else {
        ncclx::route_kernel<int><<<blocks, ncclx::kRouteThreads, 0, stream>>>(
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
