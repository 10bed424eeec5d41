/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT routing at handle create/update (docs/ep-ht.md, "Routing"): three kernels, all
 * capturable, launched in order by ncclx_ep_ht_launch_route here.  This file holds the routing
 * map and its counts; the rows and offsets, and the seal of the finished handle, are
 * ep_ht_rows.cu's.
 *  1. publish: validate topk_idx into the handle and write this rank's routing map (one bit
 *     per (token, expert); every row up to T, so no stale bits of an earlier routing survive).
 *  2. count: read every rank's map and count, per source rank, the tokens listing each expert
 *     and the tokens hitting each rank.  (2b. chain, EXPERT_MAJOR handles of MXFP8 groups:
 *     link this rank's receive rows of each (source, token).)
 *  3. scan (ep_ht_rows.cu): the rows of every token, the receiver-side counts and offsets.
 * Also the error clear of HT groups.
 */
#include "ep_ht_common.cuh"

namespace ncclx
{
namespace ht
{
namespace
{

static_assert(sizeof(ncclx_ep_ht_state_t) <= 256, "HT state fits NCCLX_EP_DEV_STATE_BYTES");

// Every kernel launched on the group's blocks is built for two blocks per SM
// (__launch_bounds__(kThreads, 2), at most 64 registers a thread): the automatic grid is two
// blocks per SM shared by the ranks of a loopback team, whose routing kernels wait for each
// other, so a kernel that needed more registers would leave a peer's blocks without an SM.
// Grid-stride indices are 64-bit: S may be up to 2^31 - 1, so an int index plus one stride
// could wrap (the other bounds, T <= 2^20 and R <= E <= 4096, come from plan validation).

template <typename I>
__device__ void publish_rows(const ncclx_ep_ht_group_desc_t &g, const ncclx_ep_ht_handle_desc_t &h,
                             const I *topk_idx)
{
    uint32_t *map = reinterpret_cast<uint32_t *>(peer_base(g, g.rank) + g.map);
    const int K = h.topk, W = g.map_words;
    for (long long tt = (long long)blockIdx.x * blockDim.x + threadIdx.x; tt < g.max_tokens;
         tt += (long long)gridDim.x * blockDim.x) {
        const int t = (int)tt; // < T
        uint32_t *row = map + (size_t)t * W;
        for (int w = 0; w < W; w++) {
            row[w] = 0;
        }
        bool bad = false;
        for (int k = 0; k < K; k++) {
            int e = -1;
            if (t < h.num_tokens) {
                const long long v = (long long)topk_idx[(size_t)t * K + k];
                if (v >= 0 && v < g.num_experts) {
                    e = (int)v;
                } else if (v != -1) {
                    bad = true;
                }
            }
            // A repeated expert is routed once, by its first listing.
            if (e >= 0 && row_has(row, e)) {
                e = -1;
            }
            if (e >= 0) {
                row[e >> 5] |= 1u << (e & 31);
            }
            h.idx[(size_t)t * K + k] = e;
            if (h.em_row != nullptr) {
                h.em_row[(size_t)t * K + k] = -1;
            }
        }
        if (bad) {
            report_error(g, kErrorBadExpert);
        }
    }
}

// Kernel 1.  The map may be rewritten only once every rank has read the previous one.
template <typename I>
__global__ void __launch_bounds__(kThreads, 2)
    publish_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h, const I *topk_idx)
{
    const unsigned long long op = load_volatile(&g.state->route_seq);
    // The whole routing (this kernel, count and scan) does nothing in a stopped group; every
    // block writes the same answer for the next two kernels.
    const bool stopped = block_stopped(g);
    if (threadIdx.x == 0) {
        *reinterpret_cast<volatile unsigned *>(&g.state->route_stopped) = stopped ? 1u : 0u;
    }
    if (stopped) {
        return;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        h.header->checksum = 0; /* the seal kernel adds it up */
    }
    if (h.relay != nullptr) {
        // Every relay entry starts as none; the scan fills the rail sources' (ep_ht_rows.cu).
        const long long entries = (long long)(g.nodes - 1) * g.max_tokens * h.topk;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < entries;
             i += (long long)gridDim.x * blockDim.x) {
            h.relay[i] = make_int2(-1, -1);
        }
    }
    if (h.em_head != nullptr) {
        // Every row starts as no token's first (pads and rows past the total stay so).
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < g.recv_slots;
             i += (long long)gridDim.x * blockDim.x) {
            h.em_head[i] = 0;
        }
    }
    if (block_wait_all(g, NCCLX_EP_HT_SIG_MAP_READ, op)) {
        publish_rows(g, h, topk_idx);
        const long long experts = (long long)g.ranks * g.num_experts;
        const long long counters = experts + (long long)g.ranks * g.ranks;
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < counters;
             i += (long long)gridDim.x * blockDim.x) {
            if (i < experts) {
                g.expert_hits[i] = 0;
            } else {
                g.rank_hits[i - experts] = 0;
            }
        }
    }
    if (last_block(&g.state->arrive[0])) {
        (void)signal_all(g, NCCLX_EP_HT_SIG_MAP_PUBLISHED, op + 1);
    }
}

// Kernel 2.  Work item = (source, chunk of kThreads rows); counts gather in shared memory
// (num_experts + ranks ints) and are added to the group's counters once per item.
__global__ void __launch_bounds__(kThreads, 2) count_kernel(ncclx_ep_ht_group_desc_t g)
{
    extern __shared__ int counts[]; // [E] experts, then [R] ranks
    int *rank_counts = counts + g.num_experts;
    const unsigned long long op = load_volatile(&g.state->route_seq);
    const int chunks = (g.max_tokens + kThreads - 1) / kThreads;
    const int W = g.map_words, L = g.local_experts;
    if (block_route_stopped(g)) {
        return;
    }
    for (int i = threadIdx.x; i < g.num_experts + g.ranks; i += blockDim.x) {
        counts[i] = 0;
    }
    for (long long item = blockIdx.x; item < (long long)g.ranks * chunks; item += gridDim.x) {
        const int s = (int)(item / chunks);
        const int t = (int)(item % chunks) * kThreads + threadIdx.x;
        if (!block_wait_one(g, NCCLX_EP_HT_SIG_MAP_PUBLISHED, s, op + 1)) {
            return;
        }
        if (t < g.max_tokens) {
            const uint32_t *row = map_of(g, s) + (size_t)t * W;
            int last_rank = -1;
            for (int w = 0; w < W; w++) {
                for (uint32_t bits = row[w]; bits != 0; bits &= bits - 1) {
                    const int e = (w << 5) + __ffs(bits) - 1;
                    atomicAdd(&counts[e], 1);
                    if (e / L != last_rank) { // bits ascend: ranks ascend
                        last_rank = e / L;
                        atomicAdd(&rank_counts[last_rank], 1);
                    }
                }
            }
        }
        __syncthreads();
        for (int j = threadIdx.x; j < g.num_experts + g.ranks; j += blockDim.x) {
            if (counts[j] != 0) {
                int *dst = j < g.num_experts
                               ? &g.expert_hits[(size_t)s * g.num_experts + j]
                               : &g.rank_hits[(size_t)s * g.ranks + j - g.num_experts];
                atomicAdd(dst, counts[j]);
                counts[j] = 0;
            }
        }
        __syncthreads();
    }
}

// Kernel 2b, EXPERT_MAJOR handles of a group with the MXFP8 combine: links this rank's kept
// rows of each (source, token) in ascending expert order (em_next, em_head), so that the
// combine sums a token's rows here before it quantizes them.  The row of (s, t, e) is e's zone
// start + rows of e from sources before s + s's tokens before t listing e: the formula of
// scan_expert on the sender, so both ends agree on every row.  One block per source: the next
// row of each local expert stays in shared memory ([L] ints, saturating at S).  It reads the
// peers' maps, so it runs before the scan kernel tells them that their maps were read.
__global__ void __launch_bounds__(kThreads, 2)
    chain_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h)
{
    extern __shared__ int next_row[]; // [L]
    __shared__ int warp_hits[kWarps];
    const int L = g.local_experts, W = g.map_words, first = g.rank * L, S = g.recv_slots;
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    if (block_route_stopped(g)) {
        return;
    }
    for (long long ss = blockIdx.x; ss < g.ranks; ss += gridDim.x) {
        const int s = (int)ss; // < R
        if (threadIdx.x == 0) {
            long long zone = 0;
            for (int el = 0; el < L; el++) {
                long long total = 0, before = 0;
                for (int x = 0; x < g.ranks; x++) {
                    const int n = g.expert_hits[(size_t)x * g.num_experts + first + el];
                    total += n;
                    before += x < s ? n : 0;
                }
                next_row[el] = (int)(zone + before < S ? zone + before : S);
                zone += padded(total, g.alignment);
            }
        }
        __syncthreads();
        const uint32_t *map = map_of(g, s);
        for (int t0 = 0; t0 < g.max_tokens; t0 += kThreads) {
            const int t = t0 + threadIdx.x;
            int prev = -1;
            for (int el = 0; el < L; el++) {
                const bool hit = t < g.max_tokens && row_has(map + (size_t)t * W, first + el);
                const unsigned hits = __ballot_sync(0xffffffffu, hit);
                if (lane == 0) {
                    warp_hits[warp] = __popc(hits);
                }
                __syncthreads();
                int before = 0, total = 0;
                for (int w = 0; w < kWarps; w++) {
                    before += w < warp ? warp_hits[w] : 0;
                    total += warp_hits[w];
                }
                const long long r = (long long)next_row[el] + before + __popc(hits & lanemask_lt());
                if (hit && r < S) {
                    h.em_head[r] = prev < 0 ? 1 : 0;
                    if (prev >= 0) {
                        h.em_next[prev] = (int)r;
                    }
                    prev = (int)r;
                }
                __syncthreads(); // every thread has read warp_hits and next_row[el]
                if (threadIdx.x == 0) {
                    const long long n = (long long)next_row[el] + total;
                    next_row[el] = (int)(n < S ? n : S);
                }
            }
            if (prev >= 0) {
                h.em_next[prev] = -1;
            }
        }
        __syncthreads();
    }
}

__global__ void clear_error_kernel(ncclx_ep_ht_group_desc_t g, unsigned bits)
{
    const unsigned old = atomicAnd(&g.state->error, ~bits);
    publish_status(g, old & ~bits);
}

size_t count_smem(const ncclx_ep_ht_group_desc_t *g)
{
    return (size_t)(g->num_experts + g->ranks) * sizeof(int);
}

} // namespace
} // namespace ht
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ht_launch_route(const ncclx_ep_ht_group_desc_t *g,
                                                const ncclx_ep_ht_handle_desc_t *h,
                                                const void *topk_idx, int idx_int64,
                                                cudaStream_t stream)
{
    using namespace ncclx::ht;
    cudaError_t err;
    if (idx_int64) {
        publish_kernel<long long>
            <<<g->blocks, kThreads, 0, stream>>>(*g, *h, static_cast<const long long *>(topk_idx));
    } else {
        publish_kernel<int32_t>
            <<<g->blocks, kThreads, 0, stream>>>(*g, *h, static_cast<const int32_t *>(topk_idx));
    }
    if ((err = cudaGetLastError()) != cudaSuccess) {
        return err;
    }
    count_kernel<<<g->blocks, kThreads, count_smem(g), stream>>>(*g);
    if ((err = cudaGetLastError()) != cudaSuccess) {
        return err;
    }
    if (h->em_next != nullptr) {
        chain_kernel<<<g->blocks, kThreads, (size_t)g->local_experts * sizeof(int), stream>>>(*g,
                                                                                              *h);
        if ((err = cudaGetLastError()) != cudaSuccess) {
            return err;
        }
    }
    return launch_rows(g, h, idx_int64, stream); // kernels 3 and 4 (ep_ht_rows.cu)
}

extern "C" cudaError_t ncclx_ep_ht_launch_clear_error(const ncclx_ep_ht_group_desc_t *g,
                                                      unsigned bits, cudaStream_t stream)
{
    ncclx::ht::clear_error_kernel<<<1, 1, 0, stream>>>(*g, bits);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ht_route_load(void)
{
    using namespace ncclx::ht;
    const void *const kernels[] = {reinterpret_cast<const void *>(publish_kernel<long long>),
                                   reinterpret_cast<const void *>(publish_kernel<int32_t>),
                                   reinterpret_cast<const void *>(count_kernel),
                                   reinterpret_cast<const void *>(chain_kernel),
                                   reinterpret_cast<const void *>(clear_error_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
