/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT dispatch and combine (docs/ep-ht.md, "Data path"), two kernels each, all capturable:
 *  dispatch  push:     each of this rank's tokens is written once per destination row that the
 *                      routing gave it (FLAT: per rank; EXPERT_MAJOR: per expert), straight
 *                      into the destination's dispatch rows, with its top-k metadata;
 *            copy-out: once every rank has pushed, the received rows go to the caller's
 *                      outputs (EXPERT_MAJOR pad rows are written as zeros).
 *  combine   stage:    this rank's expert outputs (and backward weight gradients) go to its
 *                      combine rows, where their tokens' ranks read them (MXFP8: each
 *                      token's rows here summed and quantized once, ep_ht_mxfp8.cuh);
 *            reduce:   once every rank has staged, each token sums its rows from every rank
 *                      in a fixed order (rank, then expert), in FP32, rounded once.
 * Each kernel waits at its start for the ranks' previous step that it depends on, and its last
 * block signals its own step (ep_ht_common.cuh), so the rows a rank reads are complete and the
 * rows it writes are no longer read by anyone.
 */
#include "ep_ht_common.cuh"
#include "ep_ht_mxfp8.cuh"
#include "ep_ht_meta.cuh"
#include "ep_ht_tree.cuh"

namespace ncclx
{
namespace ht
{
namespace
{

// The entries of one token, one per lane (lane k < K holds top-k entry k): its expert (-1:
// none; repeats are -1 in the handle), the expert's rank, and its order among the token's
// entries on that rank (ascending expert id), which is where FLAT metadata puts it.
struct Entry {
    int expert, rank, order, on_rank; // on_rank: the token's entries on that rank
};

__device__ __forceinline__ Entry load_entry(const ncclx_ep_ht_group_desc_t &g,
                                            const ncclx_ep_ht_handle_desc_t &h, int t, int lane)
{
    Entry en;
    en.expert = lane < h.topk ? h.idx[(size_t)t * h.topk + lane] : -1;
    en.rank = en.expert >= 0 ? en.expert / g.local_experts : -1;
    en.order = 0;
    en.on_rank = 0;
    // Every lane runs the same K shuffles (a loop over a per-lane set of lanes would leave
    // lanes waiting in shuffles that others never reach).
    for (int k = 0; k < h.topk; k++) {
        const int other = __shfl_sync(0xffffffffu, en.expert, k);
        const bool same_rank = other >= 0 && other / g.local_experts == en.rank;
        en.on_rank += same_rank;
        en.order += same_rank && other < en.expert;
    }
    return en;
}

// ---- dispatch ----

// The exact sizes of a dispatch's output rows, published with its buffers on the direct path.
__device__ __forceinline__ unsigned long long dispatch_shape(const ncclx_ep_ht_dispatch_desc_t &a)
{
    return (unsigned long long)a.row_bytes << 32 | a.scale_bytes;
}

// Across domains, the warp of token t: kept_remote says whether this lane's entry has a kept row
// on a rank of another domain.  The token is packed once into this rank's network staging (its
// row, scale row, then its K entries {expert, weight}) and put once to the relay of each node
// that keeps a row of it, which writes the rows there (ep_ht_net.cu).
__device__ __forceinline__ void push_remote(const ncclx_ep_ht_group_desc_t &g,
                                            const ncclx_ep_ht_dispatch_desc_t &a, int t, int K,
                                            const Entry &en, bool kept_remote, int lane)
{
    unsigned rest = __ballot_sync(0xffffffffu, kept_remote);
    if (rest == 0) {
        return;
    }
    char *stage = peer_base(g, g.rank) + g.net_stage + (size_t)t * g.relay_row_bytes;
    const LaneTargets to = {1u, stage};
    warp_copy_to(to, static_cast<const char *>(a.tokens) + (size_t)t * a.row_bytes, 0, a.row_bytes,
                 lane);
    if (a.scale_bytes != 0) {
        const LaneTargets sc = {1u, stage + a.row_bytes};
        warp_copy_to(sc, static_cast<const char *>(a.scales) + (size_t)t * a.scale_bytes, 0,
                     a.scale_bytes, lane);
    }
    const size_t meta = relay_meta_offset(a.row_bytes, a.scale_bytes);
    if (lane < K) {
        const float w = a.backward ? 0.0f : a.topk_weights[(size_t)t * K + lane];
        reinterpret_cast<Meta *>(stage + meta)[lane] = Meta{en.expert, w};
    }
    __threadfence_system(); // the packed token before the network reads it
    __syncwarp();
    const size_t bytes = meta + (size_t)K * sizeof(Meta);
    while (rest != 0) {
        const int n = __shfl_sync(0xffffffffu, en.rank, __ffs(rest) - 1) / g.lsa;
        // This node's slot at the relay on node n.
        const size_t dst =
            g.net_relay + ((size_t)node_slot(n, my_node(g)) * g.max_tokens + t) * g.relay_row_bytes;
        net_put_warp(g.net, rail_peer(g, n), dst, g.net_stage + (size_t)t * g.relay_row_bytes,
                     bytes, lane);
        rest &= ~__ballot_sync(0xffffffffu, kept_remote && en.rank / g.lsa == n);
    }
}

__global__ void __launch_bounds__(kThreads, 2)
    push_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                ncclx_ep_ht_dispatch_desc_t a)
{
    const unsigned long long op = load_volatile(&g.state->dispatch_seq);
    const int lane = threadIdx.x % kWarpSize, K = h.topk, KM = g.max_topk;
    if (block_stopped(g)) {
        return;
    }
    __shared__ char *outs[NCCLX_EP_HT_DIRECT_MAX_RANKS], *outs_s[NCCLX_EP_HT_DIRECT_MAX_RANKS];
    __shared__ unsigned long long claimed; // destinations whose buffers this block claimed
    // Entering dispatch op, this rank is done with its dispatch rows of op - 1 (a caller that
    // reads them in place has done so before this call, in stream order), and on the direct
    // path with its outputs of op - 1, whose successors it publishes: every block says so (the
    // same value), then waits for every rank to say the same of its rows.
    if (g.direct) {
        // Every dispatch of a direct group is direct (a zero-copy one publishes the group's
        // dispatch rows as its out_tokens); the group's path is in the word all the same.
        publish_direct(g, NCCLX_EP_HT_DIRECT_DISPATCH_OP, NCCLX_EP_HT_DIRECT_DISPATCH_SHAPE,
                       direct_tag(h, op, a.op), dispatch_shape(a), a.out_tokens, a.out_scales);
    }
    (void)signal_all(g, NCCLX_EP_HT_SIG_DISPATCH_FREE, op);
    // Across domains also each relay's word that it forwarded this rank's rows of op - 1 (its
    // relay rows for this rank are free again).
    const bool pushing =
        block_wait_all(g, NCCLX_EP_HT_SIG_DISPATCH_FREE, op) &&
        (g.nodes == 1 || block_wait_rails(g, NCCLX_EP_HT_NET_RELAY_FREE, op)) &&
        (!a.direct ||
         block_load_direct(g, NCCLX_EP_HT_DIRECT_DISPATCH_OP, NCCLX_EP_HT_DIRECT_DISPATCH_SHAPE,
                           NCCLX_EP_HT_DIRECT_DISPATCH_CLAIMS, direct_tag(h, op, a.op),
                           dispatch_shape(a), outs, outs_s, true, &claimed));
    if (!pushing && threadIdx.x == 0 && !halted(g)) {
        // A destination refused the whole block (a mismatch, not a closed tag): this rank's
        // rows are missing at ranks that may agree with it, which the PUSHED word tells.
        *reinterpret_cast<volatile unsigned *>(&g.state->dispatch_incomplete) = 1u;
    }
    if (pushing) {
        for (long long tt = (long long)blockIdx.x * kWarps + threadIdx.x / kWarpSize;
             tt < h.num_tokens; tt += (long long)gridDim.x * kWarps) {
            const int t = (int)tt; // < num_tokens
            const Entry en = load_entry(g, h, t, lane);
            LaneTargets to = {0u, nullptr};
            int row = -1;
            bool first = false;
            if (a.direct && en.expert >= 0 && outs[en.rank] == nullptr) {
                // That destination closed its outputs (it gave up on this dispatch): nothing
                // of this token goes there, rows nor metadata; the others still get theirs.
            } else if (h.expert_major) {
                row = en.expert >= 0 ? h.em_row[(size_t)t * K + lane] : -1;
            } else if (en.expert >= 0) {
                first = en.order == 0;
                row = h.flat_row[(size_t)t * g.ranks + en.rank];
            }
            // A rank of another domain gets its rows through its node's relay (push_remote).
            const bool remote = en.expert >= 0 && is_remote(g, en.rank);
            char *dest = en.expert >= 0 && !remote ? peer_base(g, en.rank) : nullptr;
            const bool target = !remote && row >= 0 && (h.expert_major || first);
            to.lanes = __ballot_sync(0xffffffffu, target);
            if (!target) {
                to.mine = nullptr;
            } else if (a.direct) {
                to.mine = outs[en.rank] + (size_t)row * a.row_bytes; // the caller's row there
            } else {
                to.mine = dest + g.dispatch_rows + (size_t)row * g.payload_bytes;
            }
            const char *src = static_cast<const char *>(a.tokens) + (size_t)t * a.row_bytes;
            warp_copy_to(to, src, 0, a.row_bytes, lane);
            if (a.scale_bytes != 0) {
                // The scale row follows the token row in a dispatch row.
                LaneTargets sc = to;
                if (target && a.direct) {
                    sc.mine = outs_s[en.rank] + (size_t)row * a.scale_bytes;
                } else {
                    sc.mine = target ? to.mine + a.row_bytes : nullptr;
                }
                const char *ssrc = static_cast<const char *>(a.scales) + (size_t)t * a.scale_bytes;
                warp_copy_to(sc, ssrc, 0, a.scale_bytes, lane);
            }
            if (!a.backward && row >= 0 && !remote) {
                const float w = a.topk_weights[(size_t)t * K + lane];
                Meta *m = meta_rows(dest, g) + (size_t)row * KM;
                if (h.expert_major) {
                    m[0] = Meta{en.expert, w};
                } else {
                    m[en.order] = Meta{en.expert, w};
                }
            }
            if (!a.backward && !h.expert_major && target) {
                // The tail after the token's entries on that rank.
                Meta *m = meta_rows(dest, g) + (size_t)row * KM;
                for (int p = en.on_rank; p < K; p++) {
                    m[p] = Meta{-1, 0.0f};
                }
            }
        }
    }
    if (pushing && a.direct) {
        block_release_direct(g, NCCLX_EP_HT_DIRECT_DISPATCH_CLAIMS, &claimed); // before PUSHED
    }
    if (pushing && g.nodes > 1) {
        // Across domains, a loop of its own (the loop above keeps its registers): each token
        // once to the relay of every other node that keeps a row of it.
        for (long long tt = (long long)blockIdx.x * kWarps + threadIdx.x / kWarpSize;
             tt < h.num_tokens; tt += (long long)gridDim.x * kWarps) {
            const int t = (int)tt; // < num_tokens
            const Entry en = load_entry(g, h, t, lane);
            int row = -1;
            if (en.expert >= 0 && is_remote(g, en.rank)) {
                row = h.expert_major ? h.em_row[(size_t)t * K + lane]
                                     : h.flat_row[(size_t)t * g.ranks + en.rank];
            }
            push_remote(g, a, t, K, en, row >= 0, lane);
        }
        net_flush_warp(g.net, lane); // this warp's puts have read the staging
    }
    if (last_block(&g.state->arrive[1])) {
        // A push that left rows out for a rank that did not close (ep_ht.h: dispatch_incomplete)
        // signals a word no rank of this operation expects: every receiver then reports the
        // mismatch, instead of one that agrees with this rank returning without those rows.
        volatile unsigned *incomplete = &g.state->dispatch_incomplete;
        const unsigned word =
            step_word(h, a.op) ^ (*incomplete != 0 ? NCCLX_EP_HT_WORD_INCOMPLETE : 0u);
        __syncthreads(); // every thread has read the flag
        if (threadIdx.x == 0) {
            *incomplete = 0u; // for the next dispatch (this one's blocks are all done)
        }
        (void)signal_all(g, NCCLX_EP_HT_SIG_DISPATCH_PUSHED, op + 1, word);
        if (g.nodes > 1) {
            signal_rails(g, NCCLX_EP_HT_NET_RELAY_FILLED, NCCLX_EP_HT_NET_WORD_DISPATCH,
                         (unsigned long long)word << kStepBits | (op + 1));
        }
    }
}

// The EXPERT_MAJOR zone holding row i: returns the zone's real row count and sets base, or -1
// when i is past every zone.
__device__ __forceinline__ int zone_of(const ncclx_ep_ht_group_desc_t &g,
                                       const ncclx_ep_ht_handle_desc_t &h, long long i,
                                       long long &base)
{
    for (int el = 0; el < g.local_experts; el++) {
        const int count = h.zone_count[el];
        const long long start = h.zone_base[el];
        if (count > 0 && i >= start && i < start + padded(count, g.alignment)) {
            base = start;
            return count;
        }
    }
    return -1;
}

__device__ __forceinline__ void warp_zero(char *dst, size_t bytes, int lane)
{
    for (size_t o = (size_t)lane * 16; o < bytes; o += kWarpSize * 16) {
        *reinterpret_cast<uint4 *>(dst + o) = make_uint4(0, 0, 0, 0);
    }
}

__global__ void __launch_bounds__(kThreads, 2)
    copy_out_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                    ncclx_ep_ht_dispatch_desc_t a)
{
    const unsigned long long op = load_volatile(&g.state->dispatch_seq);
    const int lane = threadIdx.x % kWarpSize, K = h.topk, KM = g.max_topk;
    char *self = peer_base(g, g.rank);
    if (block_stopped(g)) {
        // A timeout (for good) may have come after this dispatch published its outputs: no
        // straggler may use them once this call is over.  (A TRAP overflow stops the push
        // before it publishes, and the last tag's operation is over.)
        if (a.direct && halted(g)) {
            close_direct(g, NCCLX_EP_HT_DIRECT_DISPATCH_OP, NCCLX_EP_HT_DIRECT_DISPATCH_CLAIMS);
        }
        return;
    }
    // A peer whose operation word differs pushed rows of another shape: nothing is read.
    const bool pushed =
        block_wait_all(g, NCCLX_EP_HT_SIG_DISPATCH_PUSHED, op + 1, (int)step_word(h, a.op));
    if (!pushed && a.direct && blockIdx.x == 0) {
        // Not every peer is known to be done writing into out_tokens (a timeout, a mismatch):
        // none may start now, and this call ends only after those under way.
        close_direct(g, NCCLX_EP_HT_DIRECT_DISPATCH_OP, NCCLX_EP_HT_DIRECT_DISPATCH_CLAIMS);
    }
    if (pushed) {
        const long long rows = h.totals[1];
        for (long long i = blockIdx.x * kWarps + threadIdx.x / kWarpSize; i < rows;
             i += (long long)gridDim.x * kWarps) {
            bool pad = false;
            if (h.expert_major) {
                long long base = 0;
                const int count = zone_of(g, h, i, base);
                pad = count < 0 || i - base >= count;
            }
            char *out = static_cast<char *>(a.out_tokens) + (size_t)i * a.row_bytes;
            char *out_s = a.scale_bytes != 0
                              ? static_cast<char *>(a.out_scales) + (size_t)i * a.scale_bytes
                              : nullptr;
            const Meta *m = meta_rows(self, g) + (size_t)i * KM;
            if (pad) {
                warp_zero(out, a.row_bytes, lane);
                if (out_s != nullptr) {
                    warp_zero(out_s, a.scale_bytes, lane);
                }
            } else if (!a.in_place && !a.direct) {
                const char *src = self + g.dispatch_rows + (size_t)i * g.payload_bytes;
                const LaneTargets to = {1u, out};
                warp_copy_to(to, src, 0, a.row_bytes, lane);
                if (out_s != nullptr) {
                    const LaneTargets sc = {1u, out_s};
                    warp_copy_to(sc, src + a.row_bytes, 0, a.scale_bytes, lane);
                }
            }
            if (a.backward) {
                continue;
            }
            if (h.expert_major) {
                if (lane == 0) {
                    static_cast<float *>(a.out_topk_weights)[i] = pad ? 0.0f : m[0].weight;
                }
            } else if (lane < K) {
                const Meta e = m[lane];
                const long long id =
                    e.expert < 0 ? -1
                                 : (h.global_ids ? e.expert : e.expert - g.rank * g.local_experts);
                if (a.out_idx_int64) {
                    static_cast<long long *>(a.out_topk_idx)[(size_t)i * K + lane] = id;
                } else {
                    static_cast<int32_t *>(a.out_topk_idx)[(size_t)i * K + lane] = (int32_t)id;
                }
                static_cast<float *>(a.out_topk_weights)[(size_t)i * K + lane] = e.weight;
            }
        }
    }
    // Copied out, the rows are free now; read in place (or pushed straight into the caller's
    // outputs, which stay in use), they are free when this rank's next dispatch starts
    // (push_kernel).
    if (last_block(&g.state->arrive[2]) &&
        (a.in_place || a.direct ? !halted(g)
                                : signal_all(g, NCCLX_EP_HT_SIG_DISPATCH_FREE, op + 1)) &&
        threadIdx.x == 0) {
        *reinterpret_cast<volatile unsigned long long *>(&g.state->dispatch_seq) = op + 1;
    }
}

// ---- combine ----

// kMx: MXFP8 (ep_ht_mxfp8.cuh): a token's rows here are staged as one packed row, in its
// first row here; the others are not staged.
template <bool kMx>
__global__ void __launch_bounds__(kThreads, 2)
    stage_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                 ncclx_ep_ht_combine_desc_t a)
{
    __shared__ int chain[kWarps][kMxMaxChain];
    const unsigned long long op = load_volatile(&g.state->combine_seq);
    const int lane = threadIdx.x % kWarpSize, KM = g.max_topk;
    char *self = peer_base(g, g.rank);
    if (block_stopped(g)) {
        return;
    }
    if (g.direct) { // every combine of a direct group, as every dispatch (push_kernel)
        // Peers read expert_out in place once this step is signalled (by the last block, whose
        // election orders every block's writes before it).
        publish_direct(g, NCCLX_EP_HT_DIRECT_COMBINE_OP, NCCLX_EP_HT_DIRECT_COMBINE_SHAPE,
                       direct_tag(h, op, a.op), a.row_bytes, a.expert_out, nullptr);
    }
    if (block_wait_all(g, NCCLX_EP_HT_SIG_COMBINE_PULLED, op)) {
        const long long rows = h.totals[1];
        for (long long i = blockIdx.x * kWarps + threadIdx.x / kWarpSize; i < rows;
             i += (long long)gridDim.x * kWarps) {
            if (kMx) {
                if (h.em_head[i] != 0) {
                    mx_stage_token(g, h, static_cast<const char *>(a.expert_out), a.row_bytes,
                                   (int)i, self + g.combine_rows + (size_t)i * g.combine_row_bytes,
                                   chain[threadIdx.x / kWarpSize], lane);
                }
            } else if (!a.in_place && !a.direct) {
                const LaneTargets to = {1u,
                                        self + g.combine_rows + (size_t)i * g.combine_row_bytes};
                warp_copy_to(to, static_cast<const char *>(a.expert_out) + (size_t)i * a.row_bytes,
                             0, a.row_bytes, lane);
            }
            if (a.backward) {
                float *grads = grad_rows(self, g) + (size_t)i * KM;
                if (h.expert_major) {
                    if (lane == 0) {
                        grads[0] = a.topk_weights[i];
                    }
                } else if (lane < h.topk) {
                    grads[lane] = a.topk_weights[(size_t)i * h.topk + lane];
                }
            }
        }
    }
    if (last_block(&g.state->arrive[3])) {
        (void)signal_all(g, NCCLX_EP_HT_SIG_COMBINE_STAGED, op + 1, step_word(h, a.op));
    }
}

// 4 elements of the token's sum, rounded once to the dtype.
template <int kDtype>
__device__ __forceinline__ void store_columns(char *out, size_t elem, const float (&v)[kTreeCols])
{
    if constexpr (kDtype == kFp32) {
        *reinterpret_cast<float4 *>(out + elem * 4) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        uint2 u;
        if constexpr (kDtype == kBf16) {
            *reinterpret_cast<__nv_bfloat162 *>(&u.x) = __floats2bfloat162_rn(v[0], v[1]);
            *reinterpret_cast<__nv_bfloat162 *>(&u.y) = __floats2bfloat162_rn(v[2], v[3]);
        } else {
            *reinterpret_cast<__half2 *>(&u.x) = __floats2half2_rn(v[0], v[1]);
            *reinterpret_cast<__half2 *>(&u.y) = __floats2half2_rn(v[2], v[3]);
        }
        *reinterpret_cast<uint2 *>(out + elem * 2) = u;
    }
}

// One warp per token: its sources in summation order (ascending expert, which orders ranks
// too) go to shared memory, then the lanes sum them over their columns in the tree order
// (ep_ht_tree.cuh).  Across domains a node of other ranks is one source: the FP32 partial its
// relay put here (ep_ht_net.cu).  kMx: one packed source row per rank (the token's first kept
// row there), decoded and added in rank order as it is.
template <int kDtype, bool kMx, int kDepth>
__global__ void __launch_bounds__(kThreads, 2)
    reduce_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h,
                  ncclx_ep_ht_combine_desc_t a)
{
    __shared__ TreeWarp tree[kWarps];
    __shared__ char *expert_outs[NCCLX_EP_HT_DIRECT_MAX_RANKS];
    const unsigned long long op = load_volatile(&g.state->combine_seq);
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    const int K = h.topk, KM = g.max_topk;
    __shared__ unsigned long long claimed; // sources whose expert rows this block claimed
    char *self = peer_base(g, g.rank);
    if (block_stopped(g)) {
        // Every stopped block (not one: a block that stops returns before the election of the
        // last block, which might then never close), as in copy_out.
        if (a.direct && halted(g)) {
            close_direct(g, NCCLX_EP_HT_DIRECT_COMBINE_OP, NCCLX_EP_HT_DIRECT_COMBINE_CLAIMS);
        }
        return;
    }
    // A peer whose operation word differs staged rows of another shape: nothing is read.
    const unsigned word = step_word(h, a.op);
    const bool pulling =
        block_wait_all(g, NCCLX_EP_HT_SIG_COMBINE_STAGED, op + 1, (int)word) &&
        (g.nodes == 1 || block_wait_rails(g, NCCLX_EP_HT_NET_PARTIAL_READY, op + 1,
                                          NCCLX_EP_HT_NET_WORD_COMBINE, (int)word)) &&
        (!a.direct ||
         block_load_direct(g, NCCLX_EP_HT_DIRECT_COMBINE_OP, NCCLX_EP_HT_DIRECT_COMBINE_SHAPE,
                           NCCLX_EP_HT_DIRECT_COMBINE_CLAIMS, direct_tag(h, op, a.op), a.row_bytes,
                           expert_outs, nullptr, false, &claimed));
    if (pulling) { // every source or none (no skip_closed): a token's sum needs all its rows
        TreeWarp &tw = tree[warp];
        // An int index: t < T <= 2^20 (plan validation) and the stride is at most 16 x the
        // grid (sm_budget <= 1024, or two blocks per SM), so t + stride stays far below 2^31.
        for (int t = blockIdx.x * kWarps + warp; t < h.num_tokens; t += gridDim.x * kWarps) {
            const Entry en = load_entry(g, h, t, lane);
            int row = -1;
            if (en.expert >= 0) {
                row = h.expert_major ? h.em_row[(size_t)t * K + lane]
                                     : h.flat_row[(size_t)t * g.ranks + en.rank];
            }
            const bool remote = en.expert >= 0 && is_remote(g, en.rank);
            const int node = en.expert >= 0 ? en.rank / g.lsa : -1;
            // FLAT: one source per rank (its first entry); EM: one per expert; a remote node:
            // one (its partial) held by its lowest kept entry.  Order: by expert id.
            bool source = row >= 0 && (h.expert_major || en.order == 0);
            int node_order = 0; // across domains: the entry's order among its node's entries
            for (int k = 0; (kMx || g.nodes > 1) && k < K; k++) { // the same trips every lane
                const int other = __shfl_sync(0xffffffffu, en.expert, k);
                const int other_row = __shfl_sync(0xffffffffu, row, k);
                const bool lower = other >= 0 && other < en.expert;
                const bool same_node = other >= 0 && other / g.local_experts / g.lsa == node;
                node_order += lower && same_node;
                if (kMx ? lower && other_row >= 0 && other / g.local_experts == en.rank
                        : remote && lower && other_row >= 0 && same_node) {
                    source = false; // a lower entry holds the packed row or the partial
                }
            }
            const unsigned sources_mask = __ballot_sync(0xffffffffu, source);
            int position = 0;
            for (unsigned rest = sources_mask; rest != 0; rest &= rest - 1) {
                position += __shfl_sync(0xffffffffu, en.expert, __ffs(rest) - 1) < en.expert;
            }
            const char *partial =
                remote
                    ? self + g.net_partial_in +
                          ((size_t)node_slot(my_node(g), node) * g.max_tokens + t) * g.partial_bytes
                    : nullptr;
            char *base = en.expert >= 0 && !remote ? peer_base(g, en.rank) : nullptr;
            if (source) {
                tw.src[position] = remote ? partial
                                   : a.direct
                                       ? expert_outs[en.rank] + (size_t)row * a.row_bytes
                                       : base + g.combine_rows + (size_t)row * g.combine_row_bytes;
                tw.pos[position] = remote ? node * g.lsa : en.rank;
                tw.partial[position] = remote ? 1 : 0;
            }
            __syncwarp();
            const int n = __popc(sources_mask);
            char *out = static_cast<char *>(a.out) + (size_t)t * a.row_bytes;
            if (kMx) {
                mx_reduce_token(g, tw.src, n, out, lane);
            } else {
                if (lane == 0) {
                    if (kDepth == 0) {
                        tree_leaves(tw, n);
                    } else {
                        tree_plan(tw, n);
                    }
                }
                __syncwarp();
                for (int e = lane * kTreeCols; e < g.hidden; e += kWarpSize * kTreeCols) {
                    float v[kTreeCols];
                    if constexpr (kDepth == 0) {
                        tree_sum_leaves<kDtype>(tw, (size_t)e, v);
                    } else if (!tree_sum<kDtype, (kDepth > 0 ? kDepth : 1)>(tw, n, (size_t)e, v)) {
                        v[0] = v[1] = v[2] = v[3] = 0.0f;
                    }
                    store_columns<kDtype>(out, (size_t)e, v);
                }
            }
            if (a.backward && lane < K) {
                float grad = 0.0f;
                if (row >= 0 && remote) {
                    // The relay's gradient of this entry: by its order among the token's
                    // experts on that node (every valid entry there, kept or not).
                    grad =
                        reinterpret_cast<const float *>(partial + (size_t)g.hidden * 4)[node_order];
                } else if (row >= 0) {
                    const float *grads = grad_rows(base, g) + (size_t)row * KM;
                    grad = h.expert_major ? grads[0] : grads[en.order];
                }
                a.out_topk_weights[(size_t)t * K + lane] = grad;
            }
            __syncwarp();
        }
    }
    if (pulling && a.direct) {
        block_release_direct(g, NCCLX_EP_HT_DIRECT_COMBINE_CLAIMS, &claimed); // before PULLED
    }
    if (last_block(&g.state->arrive[4])) {
        // Direct: the caller may rewrite expert_out once this kernel ends, so it ends only
        // when every peer has read it (the peers' own PULLED), or, when that is not known
        // (a timeout, a mismatch), once no peer can read it any more (close_direct).
        const bool pulled =
            __syncthreads_and(signal_all(g, NCCLX_EP_HT_SIG_COMBINE_PULLED, op + 1));
        if (pulled && g.nodes > 1) {
            // Each relay may put the next combine's partials into this rank's arena.
            signal_rails(g, NCCLX_EP_HT_NET_PARTIAL_FREE);
        }
        const bool all_pulled =
            pulled && (!a.direct || block_wait_all(g, NCCLX_EP_HT_SIG_COMBINE_PULLED, op + 1));
        if (!all_pulled && a.direct) {
            close_direct(g, NCCLX_EP_HT_DIRECT_COMBINE_OP, NCCLX_EP_HT_DIRECT_COMBINE_CLAIMS);
        }
        if (all_pulled && threadIdx.x == 0) {
            *reinterpret_cast<volatile unsigned long long *>(&g.state->combine_seq) = op + 1;
        }
    }
}

} // namespace
} // namespace ht
} // namespace ncclx

// The reduce kernel for the group's stack depth (ep_ht_tree.cuh, tree_depth): a token has at
// most K sources (one per kept entry at most, a node's partial covering at least one).  Depth
// 0: the static tree of a team of at most 8 ranks in one domain (tree_sum_leaves).
template <int kDtype>
static void launch_reduce(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                          const ncclx_ep_ht_combine_desc_t *a, cudaStream_t stream)
{
    using namespace ncclx::ht;
    const int depth = tree_depth(g->ranks, g->max_topk);
    if (g->nodes == 1 && g->ranks <= kTreeStaticLeaves) {
        reduce_kernel<kDtype, false, 0><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else if (depth <= 4) {
        reduce_kernel<kDtype, false, 4><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else if (depth <= 8) {
        reduce_kernel<kDtype, false, 8><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else {
        reduce_kernel<kDtype, false, 17><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    }
}

extern "C" cudaError_t ncclx_ep_ht_launch_dispatch(const ncclx_ep_ht_group_desc_t *g,
                                                   const ncclx_ep_ht_handle_desc_t *h,
                                                   const ncclx_ep_ht_dispatch_desc_t *a,
                                                   cudaStream_t stream)
{
    using namespace ncclx::ht;
    cudaError_t err;
    push_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    if ((err = cudaGetLastError()) != cudaSuccess) {
        return err;
    }
    if (g->nodes > 1 && (err = launch_relay(g, h, a, stream)) != cudaSuccess) {
        return err;
    }
    copy_out_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ht_launch_combine(const ncclx_ep_ht_group_desc_t *g,
                                                  const ncclx_ep_ht_handle_desc_t *h,
                                                  const ncclx_ep_ht_combine_desc_t *a,
                                                  cudaStream_t stream)
{
    using namespace ncclx::ht;
    cudaError_t err;
    if (a->mxfp8) {
        stage_kernel<true><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else {
        stage_kernel<false><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    }
    if ((err = cudaGetLastError()) != cudaSuccess) {
        return err;
    }
    if (g->nodes > 1 && (err = launch_partials(g, h, a, stream)) != cudaSuccess) {
        return err;
    }
    if (a->mxfp8) {
        reduce_kernel<ncclx::kBf16, true, 1><<<g->blocks, kThreads, 0, stream>>>(*g, *h, *a);
    } else if (a->dtype == ncclx::kBf16) {
        launch_reduce<ncclx::kBf16>(g, h, a, stream);
    } else if (a->dtype == ncclx::kFp16) {
        launch_reduce<ncclx::kFp16>(g, h, a, stream);
    } else {
        launch_reduce<ncclx::kFp32>(g, h, a, stream);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ht_data_load(void)
{
    using namespace ncclx::ht;
    const void *const kernels[] = {
        reinterpret_cast<const void *>(push_kernel),
        reinterpret_cast<const void *>(copy_out_kernel),
        reinterpret_cast<const void *>(stage_kernel<false>),
        reinterpret_cast<const void *>(stage_kernel<true>),
#define NCCLX_HT_REDUCE_DEPTHS(d)                                              \
    reinterpret_cast<const void *>(reduce_kernel<ncclx::kBf16, false, d>),     \
        reinterpret_cast<const void *>(reduce_kernel<ncclx::kFp16, false, d>), \
        reinterpret_cast<const void *>(reduce_kernel<ncclx::kFp32, false, d>)
        NCCLX_HT_REDUCE_DEPTHS(0),
        NCCLX_HT_REDUCE_DEPTHS(4),
        NCCLX_HT_REDUCE_DEPTHS(8),
        NCCLX_HT_REDUCE_DEPTHS(17),
#undef NCCLX_HT_REDUCE_DEPTHS
        reinterpret_cast<const void *>(reduce_kernel<ncclx::kBf16, true, 1>)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
