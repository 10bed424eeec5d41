/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT across load/store domains (docs/ep-ht.md, "Across nodes"): the relay's two kernels.  A
 * rank's relay on node n is its rail peer there (rank n * lsa + rank % lsa); the push puts each
 * token once into the relay of every node keeping a row of it (ep_ht_data.cu, push_remote).
 *  relay     (dispatch, after the push): once a rail source's rows are in (its RELAY_FILLED,
 *            with its operation word), each of its tokens is written from the relay rows into
 *            the rows of this domain's ranks that the routing gave it (the relay entries of the
 *            handle: the sender's row formulas, computed here at routing), with the metadata;
 *            then DISPATCH_PUSHED for that source at each rank of the domain (as the source's
 *            own push would) and RELAY_FREE back to the source.
 *  partials  (combine, after the stage): each rail source's token that keeps a row in this
 *            domain is summed here over the domain's ranks in the tree order (ep_ht_tree.cuh),
 *            in FP32, with the backward weight gradients, and put once to the source, which adds
 *            it as the node's subtree; then PARTIAL_READY with the word.
 * The step numbers are the group's dispatch_seq and combine_seq, which the next kernel of the
 * operation advances; each kernel elects its own last block (arrive[5], arrive[6]).
 */
#include "ep_ht_common.cuh"
#include "ep_ht_meta.cuh"
#include "ep_ht_tree.cuh"

namespace ncclx
{
namespace ht
{
namespace
{

// The relay entries of rail node n's token t, one per lane (lane q < K: entry q).
__device__ __forceinline__ int2 relay_entry(const ncclx_ep_ht_handle_desc_t &h,
                                            const ncclx_ep_ht_group_desc_t &g, int n, int t,
                                            int lane)
{
    return lane < h.topk
               ? h.relay[((size_t)node_slot(my_node(g), n) * g.max_tokens + t) * h.topk + lane]
               : make_int2(-1, -1);
}

// The lane's entry (row, expert) among the token's entries on this domain: its rank, its order
// among the entries on that rank, how many the rank has, and whether a lower entry of the rank
// keeps a row (FLAT sends one row per rank: the first kept one's).
struct RelayEntry {
    int row, expert, rank, order, on_rank;
    bool first_kept;
};

__device__ __forceinline__ RelayEntry relay_view(const ncclx_ep_ht_group_desc_t &g,
                                                 const ncclx_ep_ht_handle_desc_t &h, int2 e)
{
    RelayEntry r;
    r.row = e.x;
    r.expert = e.y;
    r.rank = e.y >= 0 ? e.y / g.local_experts : -1;
    r.order = 0;
    r.on_rank = 0;
    r.first_kept = r.row >= 0;
    for (int k = 0; k < h.topk; k++) {
        const int other = __shfl_sync(0xffffffffu, e.y, k);
        const int other_row = __shfl_sync(0xffffffffu, e.x, k);
        const bool same = other >= 0 && other / g.local_experts == r.rank;
        r.on_rank += same;
        r.order += same && other < r.expert;
        if (same && other < r.expert && other_row >= 0) {
            r.first_kept = false;
        }
    }
    return r;
}

__global__ void __launch_bounds__(kThreads, 2)
    relay_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                 ncclx_ep_ht_dispatch_desc_t a)
{
    const unsigned long long op = load_volatile(&g.state->dispatch_seq);
    const int lane = threadIdx.x % kWarpSize, K = h.topk, KM = g.max_topk;
    char *self = peer_base(g, g.rank);
    if (block_stopped(g)) {
        return;
    }
    const unsigned word = step_word(h, a.op);
    // The ranks of this domain are done with their rows of op - 1 (the FREE their pushes
    // signalled), and every rail source's rows of op are in, of this operation's word; a source
    // of another word is not forwarded (nor any: its receivers report the mismatch).
    const bool forwarding = block_wait_all(g, NCCLX_EP_HT_SIG_DISPATCH_FREE, op) &&
                            block_wait_rails(g, NCCLX_EP_HT_NET_RELAY_FILLED, op + 1,
                                             NCCLX_EP_HT_NET_WORD_DISPATCH, (int)word);
    const size_t meta = relay_meta_offset(a.row_bytes, a.scale_bytes);
    const long long items = (long long)g.nodes * g.max_tokens;
    for (long long it = (long long)blockIdx.x * kWarps + threadIdx.x / kWarpSize;
         forwarding && it < items; it += (long long)gridDim.x * kWarps) {
        const int n = (int)(it / g.max_tokens), t = (int)(it % g.max_tokens);
        if (n == my_node(g)) {
            continue;
        }
        const int2 e = relay_entry(h, g, n, t, lane);
        if (__ballot_sync(0xffffffffu, e.x >= 0) == 0) {
            continue; // no kept row of this token here: the source put nothing
        }
        const RelayEntry r = relay_view(g, h, e);
        const char *src = self + g.net_relay +
                          ((size_t)node_slot(my_node(g), n) * g.max_tokens + t) * g.relay_row_bytes;
        // The entry's weight: the source's entry of the same expert.
        const Meta mine =
            lane < K ? reinterpret_cast<const Meta *>(src + meta)[lane] : Meta{-1, 0.0f};
        float w = 0.0f;
        for (int k = 0; k < K; k++) {
            const int ek = __shfl_sync(0xffffffffu, mine.expert, k);
            const float wk = __shfl_sync(0xffffffffu, mine.weight, k);
            w = ek == r.expert && r.expert >= 0 ? wk : w;
        }
        char *dest = r.row >= 0 ? peer_base(g, r.rank) : nullptr;
        const bool target = r.row >= 0 && (h.expert_major || r.first_kept);
        LaneTargets to;
        to.lanes = __ballot_sync(0xffffffffu, target);
        to.mine = target ? dest + g.dispatch_rows + (size_t)r.row * g.payload_bytes : nullptr;
        warp_copy_to(to, src, 0, a.row_bytes, lane);
        if (a.scale_bytes != 0) {
            LaneTargets sc = to;
            sc.mine = target ? to.mine + a.row_bytes : nullptr;
            warp_copy_to(sc, src + a.row_bytes, 0, a.scale_bytes, lane);
        }
        if (!a.backward && r.row >= 0) {
            Meta *m = meta_rows(dest, g) + (size_t)r.row * KM;
            if (h.expert_major) {
                m[0] = Meta{r.expert, w};
            } else {
                m[r.order] = Meta{r.expert, w};
                if (r.first_kept) {
                    for (int p = r.on_rank; p < K; p++) {
                        m[p] = Meta{-1, 0.0f}; // the tail after the token's entries there
                    }
                }
            }
        }
    }
    if (last_block(&g.state->arrive[5])) {
        // For each rail source, what its own push would have signalled to this domain's ranks:
        // its rows are in, of this word (of a word no rank expects when they were not
        // forwarded, so that each reports the mismatch); then the source may refill.
        const unsigned told = forwarding ? word : word ^ NCCLX_EP_HT_WORD_INCOMPLETE;
        const bool live = __syncthreads_or(halted(g) ? 1 : 0) == 0;
        for (int i = threadIdx.x; live && i < g.nodes * g.lsa; i += blockDim.x) {
            const int n = i / g.lsa, j = g.lsa_base + i % g.lsa;
            if (n != my_node(g)) {
                st_release_sys(
                    signal_at(peer_base(g, j), g, NCCLX_EP_HT_SIG_DISPATCH_PUSHED, rail_peer(g, n)),
                    (unsigned long long)told << kStepBits | (op + 1));
            }
        }
        signal_rails(g, NCCLX_EP_HT_NET_RELAY_FREE);
    }
}

template <int kDtype, int kDepth>
__global__ void __launch_bounds__(kThreads, 2)
    partial_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                   ncclx_ep_ht_combine_desc_t a)
{
    __shared__ TreeWarp tree[kWarps];
    const unsigned long long op = load_volatile(&g.state->combine_seq);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, KM = g.max_topk;
    char *self = peer_base(g, g.rank);
    if (block_stopped(g)) {
        return;
    }
    const unsigned word = step_word(h, a.op);
    // This domain's rows of op are staged (of this word), and every rail source has read the
    // partials of op - 1 that this rank put into its arena.
    const bool staged = block_wait_all(g, NCCLX_EP_HT_SIG_COMBINE_STAGED, op + 1, (int)word);
    const bool summing = block_wait_rails(g, NCCLX_EP_HT_NET_PARTIAL_FREE, op) && staged;
    const size_t bytes = (size_t)g.hidden * 4 + (a.backward ? (size_t)h.topk * 4 : 0);
    const long long items = (long long)g.nodes * g.max_tokens;
    TreeWarp &tw = tree[warp];
    for (long long it = (long long)blockIdx.x * kWarps + warp; summing && it < items;
         it += (long long)gridDim.x * kWarps) {
        const int n = (int)(it / g.max_tokens), t = (int)(it % g.max_tokens);
        if (n == my_node(g)) {
            continue;
        }
        const int2 e = relay_entry(h, g, n, t, lane);
        if (__ballot_sync(0xffffffffu, e.x >= 0) == 0) {
            continue; // no kept row of this token here: the source expects no partial
        }
        const RelayEntry r = relay_view(g, h, e);
        // FLAT: one source per rank (its first kept entry); EM: one per kept entry.  The entries
        // ascend by expert, so by rank.
        const bool source = r.row >= 0 && (h.expert_major || r.first_kept);
        const unsigned sources_mask = __ballot_sync(0xffffffffu, source);
        if (source) {
            const int position = __popc(sources_mask & lanemask_lt());
            tw.src[position] =
                peer_base(g, r.rank) + g.combine_rows + (size_t)r.row * g.combine_row_bytes;
            tw.pos[position] = r.rank;
            tw.partial[position] = 0;
        }
        __syncwarp();
        const int count = __popc(sources_mask);
        if (lane == 0) {
            tree_plan(tw, count);
        }
        __syncwarp();
        const size_t out_off =
            g.net_partial_out +
            ((size_t)node_slot(my_node(g), n) * g.max_tokens + t) * g.partial_bytes;
        float *out = reinterpret_cast<float *>(self + out_off);
        for (int c = lane * kTreeCols; c < g.hidden; c += kWarpSize * kTreeCols) {
            float v[kTreeCols];
            if (!tree_sum<kDtype, kDepth>(tw, count, (size_t)c, v)) {
                v[0] = v[1] = v[2] = v[3] = 0.0f;
            }
            *reinterpret_cast<float4 *>(out + c) = make_float4(v[0], v[1], v[2], v[3]);
        }
        if (a.backward && lane < h.topk) {
            // Entry q's gradient: staged at its row (FLAT: at its order on its rank).
            float grad = 0.0f;
            if (r.row >= 0) {
                const float *grads = grad_rows(peer_base(g, r.rank), g) + (size_t)r.row * KM;
                grad = h.expert_major ? grads[0] : grads[r.order];
            }
            out[g.hidden + lane] = grad;
        }
        __threadfence_system(); // the partial before the network reads it
        __syncwarp();
        net_put_warp(g.net, rail_peer(g, n),
                     g.net_partial_in +
                         ((size_t)node_slot(n, my_node(g)) * g.max_tokens + t) * g.partial_bytes,
                     out_off, bytes, lane);
    }
    net_flush_warp(g.net, lane);
    if (last_block(&g.state->arrive[6])) {
        // A relay that could not sum (a staged word of another operation) says so with a word
        // no source expects.
        const unsigned told = staged ? word : word ^ NCCLX_EP_HT_WORD_INCOMPLETE;
        signal_rails(g, NCCLX_EP_HT_NET_PARTIAL_READY, NCCLX_EP_HT_NET_WORD_COMBINE,
                     (unsigned long long)told << kStepBits | (op + 1));
    }
}

template <int kDtype>
cudaError_t launch_partials_of(const ncclx_ep_ht_group_desc_t *g,
                               const ncclx_ep_ht_handle_desc_t *h,
                               const ncclx_ep_ht_combine_desc_t *a, cudaStream_t stream)
{
    // A node's subtree spans lsa ranks.
    const int depth = tree_depth(g->lsa, g->max_topk);
    if (depth <= 4) {
        partial_kernel<kDtype, 4><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else if (depth <= 8) {
        partial_kernel<kDtype, 8><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else {
        partial_kernel<kDtype, 17><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    }
    return cudaGetLastError();
}

} // namespace

cudaError_t launch_relay(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                         const ncclx_ep_ht_dispatch_desc_t *a, cudaStream_t stream)
{
    relay_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

cudaError_t launch_partials(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                            const ncclx_ep_ht_combine_desc_t *a, cudaStream_t stream)
{
    if (a->dtype == kBf16) {
        return launch_partials_of<kBf16>(g, h, a, stream);
    }
    if (a->dtype == kFp16) {
        return launch_partials_of<kFp16>(g, h, a, stream);
    }
    return launch_partials_of<kFp32>(g, h, a, stream);
}

} // namespace ht
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ht_net_load(void)
{
    using namespace ncclx::ht;
    const void *const kernels[] = {
        reinterpret_cast<const void *>(relay_kernel),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kBf16, 4>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp16, 4>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp32, 4>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kBf16, 8>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp16, 8>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp32, 8>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kBf16, 17>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp16, 17>),
        reinterpret_cast<const void *>(partial_kernel<ncclx::kFp32, 17>)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
