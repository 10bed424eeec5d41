/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL dispatch, the receive: wait for every source (dispatch_wait_kernel, a block or two; or, for
 * a dispatch that is not send_only on one load/store domain, the send's last block:
 * wait_in_send), then the copy (dispatch_recv_kernel): learn from the counts where each (local
 * expert, source)'s rows start (rows of an expert are in (source, token) order: the routing
 * numbered each source's tokens per expert, and that number travels in the message's top-k
 * entries), and copy each received message straight to its output rows, or, zero copy, record
 * the rows its sources stored in place; its last block ends the operation (op_end).  A team of
 * one receiving in place has no receive kernel (recv_in_send, ep_ll_dispatch.cu).
 */
#include "ep_ll_dispatch.cuh"

namespace ncclx
{
namespace
{

// What every block of the receive learns before it moves a row, in dynamic shared memory sized
// for the group (recv_plan_bytes): the messages each source sent (0 when the source does not
// count in this operation), where each source's messages start in the list of received messages,
// and expert-major where each (local expert, source)'s rows start in the expert's output:
// [L][R + 1], the last column the expert's row count.  Sized for the group rather than for the
// largest group: a block that asks for much shared memory may not share an SM with the other
// ranks' kernels of a loopback team, and then the spinning receive blocks of some ranks could
// keep another rank's send from running.
struct RecvPlan {
    int *count, *start, *row;
};

__host__ __device__ __forceinline__ size_t recv_plan_bytes(int ranks, int local_experts,
                                                           int expert_major)
{
    return ((size_t)2 * ranks + 1 + (expert_major ? (size_t)local_experts * (ranks + 1) : 0)) *
           sizeof(int);
}

// Expert-major: row[l][s] = rows of local expert l from the sources before s, by the counts the
// sources stored before their signals (clamped to their message counts, so that no count read
// here can place a row past the expert's R x T rows).  Every count is loaded at once (one
// coalesced pass), then summed in shared memory: a thread per expert for small teams, a warp per
// expert for large ones.
__device__ __forceinline__ void plan_expert_rows(const ncclx_ep_ll_group_desc_t &g,
                                                 const RecvPlan &p, int parity, bool zero_copy)
{
    const int R = g.ranks, L = g.local_experts, lane = threadIdx.x % kWarpSize;
    char *self = peer_base(g, g.rank);
    const int32_t *counts = expert_counts(self, g, parity, 0);
    for (int i = threadIdx.x; i < R * L; i += blockDim.x) {
        const int s = i / L, l = i % L;
        // Zero copy: the counts are the source's board, as its senders read them.
        const int n = zero_copy ? board_counts(self, g, parity, s)[g.rank * L + l] : counts[i];
        p.row[(size_t)l * (R + 1) + s] = p.count[s] > 0 ? min(max(n, 0), p.count[s]) : 0;
    }
    __syncthreads();
    if (R <= kWarpSize) {
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            int *row = p.row + (size_t)l * (R + 1), running = 0;
            for (int s = 0; s < R; s++) {
                const int n = row[s];
                row[s] = running;
                running += n;
            }
            row[R] = running;
        }
        __syncthreads();
        return;
    }
    for (int l = threadIdx.x / kWarpSize; l < L; l += kWarps) {
        int *row = p.row + (size_t)l * (R + 1);
        warp_exclusive_sum(row, row, R, lane);
    }
    __syncthreads();
}

// Rank-major: message m's top-k entries as the receiver reports them (valid: the message holds a
// token; otherwise its entries say that it holds nothing).
__device__ void unpack_rank_major_meta(const ncclx_ep_ll_group_desc_t &g,
                                       const ncclx_ep_ll_handle_desc_t &h,
                                       const ncclx_ep_ll_dispatch_desc_t &a, const char *msg, int m,
                                       bool valid, int lane)
{
    int e = -1;
    float w = 0.0f;
    if (valid && lane < h.topk) {
        const int2 entry = topk_entries(msg)[lane];
        e = ncclx_ep_entry_expert(entry.x);
        w = __int_as_float(entry.y);
    }
    write_rank_major_meta(g, h, a, m, e, w, lane);
}

// Expert-major: lane k's output row of message m (source s) for top-k entry k, or -1 when the
// entry is empty, another rank's, or its expert slot is past what the source said it sent that
// expert (reported: a row is never written outside its expert's rows).
__device__ __forceinline__ int expert_row(const ncclx_ep_ll_group_desc_t &g, const RecvPlan &p,
                                          const int2 *entries, int K, int s, int lane)
{
    const int word = lane < K ? entries[lane].x : -1;
    const int e = ncclx_ep_entry_expert(word), slot = ncclx_ep_entry_slot(word);
    if (e < 0 || e / g.local_experts != g.rank) {
        return -1;
    }
    const int l = e - g.rank * g.local_experts;
    const int *row = p.row + (size_t)l * (g.ranks + 1);
    if (slot >= row[s + 1] - row[s]) {
        report_error(g, kErrorMismatch);
        return -1;
    }
    return l * g.ranks * g.max_tokens + row[s] + slot;
}

// The receive's wait, one thread per source (a block or two: few blocks spin, so that a peer's
// routing and send always find room on the GPU beside them): learn what each source sent
// (wait_source: one answer for the rank) and record it for the copy.
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_wait_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                         ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    const Op op = begin_op(g, &g.state->dispatch_seq, view);
    wait_sources(g, h, a, view, op, (int)(blockIdx.x * blockDim.x + threadIdx.x),
                 (int)(gridDim.x * blockDim.x));
}

// The receive's copy: every block learns where every row goes (RecvPlan), then its warps take
// (message, chunk) units of the list of received messages: check the header (another operation word
// or tag: dropped and reported, never read), record the token for combine (chunk 0), and copy the
// payload straight to its output rows.  The last block ends the operation.
// kZeroCopy: a zero-copy dispatch's receive (a kernel of its own, so that the receive-area
// path keeps its registers).
template <bool kZeroCopy>
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_recv_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                         ncclx_ep_ll_dispatch_desc_t a)
{
    wait_for_previous_grid(); // launched early (early_recv): the send must have ended
    extern __shared__ int recv_smem[];
    RecvPlan p;
    p.count = recv_smem;
    p.start = p.count + g.ranks;
    p.row = p.start + g.ranks + 1;
    const Op op = op_begin(&g.state->dispatch_seq);
    const int parity = op.parity, T = g.max_tokens, K = h.topk, R = g.ranks;
    const int lane = threadIdx.x % kWarpSize;
    const int warps = gridDim.x * kWarps;
    for (int s = threadIdx.x; s < R; s += blockDim.x) {
        p.count[s] = h.recv_count[s]; // the wait's answer (wait_sources)
    }
    __syncthreads();
    source_starts(p.count, p.start, R);
    const size_t out_row = a.out_row_bytes, poff = payload_offset(g);
    // Zero copy: the rows are in place already, unless out_tokens is the caller's own buffer
    // (copy_rows); a message is then one unit of bookkeeping.
    const bool copy = !kZeroCopy || a.copy_rows;
    const int chunks = copy ? (int)((out_row + kChunkBytes - 1) / kChunkBytes) : 1;
    const long long units = (long long)p.start[R] * chunks;
    // A block that unit_warp gives no unit (few messages: a small batch) skips the expert plan,
    // R x L counts loaded and summed for nothing; block 0 still plans, for out_counts.
    const bool busy = units >= warps || (long long)blockIdx.x < units;
    if (h.expert_major && (busy || blockIdx.x == 0)) {
        plan_expert_rows(g, p, parity, kZeroCopy);
        for (int l = threadIdx.x; blockIdx.x == 0 && l < g.local_experts; l += blockDim.x) {
            a.out_counts[l] = p.row[(size_t)l * (R + 1) + R];
        }
    }
    char *self = peer_base(g, g.rank);
    // Zero copy: this rank's rows of the handle's layout, where its sources stored the rows.
    const size_t zc_rows = h.expert_major ? g.zero_copy_rows : g.zero_copy_rm_rows;
    const size_t zc_scales = h.expert_major ? g.zero_copy_scales : g.zero_copy_rm_scales;
    const int warp = unit_warp(units, warps);
    for (int u = warp; u < units; u += warps) {
        const int n = u / chunks, c = u % chunks, s = source_of(p.start, R, n);
        const int i = n - p.start[s], m = s * T + i;
        const char *msg = message_at(self, g, parity, s, i);
        const int4 header = *reinterpret_cast<const int4 *>(msg);
        const bool valid = (unsigned)header.z == a.op && (unsigned)header.w == op.tag;
        if (!valid) {
            if (c == 0) {
                if (lane == 0) {
                    report_error(g, kErrorMismatch);
                    h.recv_tok[m] = NCCLX_EP_TOKEN_DROPPED;
                }
                if (h.expert_major && lane < K) {
                    h.recv_pos[(size_t)m * K + lane] = -1;
                } else if (!h.expert_major) {
                    // The row's top-k entries say that it holds nothing.
                    unpack_rank_major_meta(g, h, a, msg, m, false, lane);
                }
            }
            continue;
        }
        // The output rows of this message: one per distinct local expert (expert-major),
        // held one per lane, or the message's own row (rank-major).
        LaneTargets to;
        if (h.expert_major) {
            const int pos = expert_row(g, p, topk_entries(msg), K, s, lane);
            if (c == 0 && lane < K) {
                h.recv_pos[(size_t)m * K + lane] = pos;
            }
            const unsigned same = __match_any_sync(0xffffffffu, pos);
            const bool first = pos >= 0 && (same & lanemask_lt()) == 0;
            to.lanes = __ballot_sync(0xffffffffu, first);
            to.mine = first ? static_cast<char *>(a.out_tokens) + (size_t)pos * out_row : nullptr;
        } else {
            to.lanes = 1u;
            to.mine = static_cast<char *>(a.out_tokens) + (size_t)m * out_row;
        }
        size_t begin = (size_t)c * kChunkBytes, end = min(out_row, begin + kChunkBytes);
        if (!kZeroCopy) {
            warp_copy_to(to, msg + poff, begin, end, lane);
        } else if (a.copy_rows) {
            // From this rank's zero-copy rows to the caller's, row for row.
            for (unsigned rest = to.lanes; rest != 0; rest &= rest - 1) {
                LaneTargets one;
                one.lanes = 1u;
                one.mine = target_of(to, __ffs(rest) - 1);
                const size_t at = (size_t)(one.mine - static_cast<char *>(a.out_tokens));
                warp_copy_to(one, self + zc_rows + at, begin, end, lane);
            }
        }
        if (c != 0) {
            continue;
        }
        if (lane == 0) {
            h.recv_tok[m] = ncclx_ep_pack_token(header.x, header.y);
        }
        if (a.scale_bytes > 0 && (!kZeroCopy || a.copy_scales)) {
            for (unsigned rest = to.lanes; rest != 0; rest &= rest - 1) {
                char *row_at = target_of(to, __ffs(rest) - 1);
                size_t row = (size_t)(row_at - static_cast<char *>(a.out_tokens)) / out_row;
                char *out = static_cast<char *>(a.out_scales) + row * a.scale_bytes;
                const char *from = kZeroCopy ? self + zc_scales + row * a.scale_bytes
                                             : msg + poff + scale_offset(a);
                for (size_t b = lane; b < a.scale_bytes; b += kWarpSize) {
                    out[b] = from[b];
                }
            }
        }
        if (!h.expert_major) {
            unpack_rank_major_meta(g, h, a, msg, m, true, lane);
        }
    }
    if (last_block(&g.state->unpack_arrive) && threadIdx.x == 0) {
        op_end(&g.state->dispatch_seq, op);
    }
}

} // namespace
} // namespace ncclx

// A receive that copies rows keeps the group's grid (its copy is spread over every SM it may
// use).  One that leaves the rows in place (zero copy, out_tokens the group's rows) moves no
// payload: a message is one unit of bookkeeping, and there are at most R x T of them, so no more
// blocks than those units need at one unit a warp (unit_warp spreads them over the blocks).  A
// rank alone on its GPU at 128 tokens launches 8 blocks instead of 264 that would find nothing to
// do but the grid's last-block election.
extern "C" int ncclx_ep_ll_dispatch_recv_blocks(const ncclx_ep_ll_group_desc_t *g,
                                                const ncclx_ep_ll_dispatch_desc_t *a)
{
    if (!a->zero_copy || a->copy_rows) {
        return g->blocks;
    }
    const size_t messages = (size_t)g->ranks * (size_t)g->max_tokens;
    return ncclx::grid_for_units(g, messages, ncclx::kWarps);
}

extern "C" cudaError_t ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                        const ncclx_ep_ll_handle_desc_t *h,
                                                        const ncclx_ep_ll_dispatch_desc_t *a,
                                                        cudaStream_t stream)
{
    if (a->recv_in_send) {
        return cudaSuccess; // the send received (record_own_message): no kernel
    }
    if (!a->wait_in_send) {
        ncclx::dispatch_wait_kernel<<<(g->ranks + NCCLX_EP_THREADS - 1) / NCCLX_EP_THREADS,
                                      NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    }
    const size_t smem = ncclx::recv_plan_bytes(g->ranks, g->local_experts, h->expert_major);
    // Right after the send (early_recv: no wait kernel between them, the rank alone on its
    // GPU), the copy's blocks are scheduled as soon as the send's last block has its sources.
    if (a->zero_copy) {
        return ncclx::launch_after(a->early_recv != 0, ncclx::dispatch_recv_kernel<true>,
                                   ncclx_ep_ll_dispatch_recv_blocks(g, a), NCCLX_EP_THREADS, smem,
                                   stream, *g, *h, *a);
    }
    return ncclx::launch_after(a->early_recv != 0, ncclx::dispatch_recv_kernel<false>, g->blocks,
                               NCCLX_EP_THREADS, smem, stream, *g, *h, *a);
}

extern "C" int ncclx_ep_ll_early_launch_built(void)
{
    // The receive kernels wait for their send (griddepcontrol) only where their code was made
    // for compute capability 9.0 or later: kernels JIT-compiled from older PTX (a build for
    // sm_80 on a Hopper GPU) lack the wait.  Both receive kernels come from one build's flags.
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, ncclx::dispatch_recv_kernel<false>) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return attr.ptxVersion >= 90;
}

extern "C" cudaError_t ncclx_ep_ll_dispatch_recv_load(void)
{
    const void *const kernels[] = {
        reinterpret_cast<const void *>(ncclx::dispatch_wait_kernel),
        reinterpret_cast<const void *>(ncclx::dispatch_recv_kernel<false>),
        reinterpret_cast<const void *>(ncclx::dispatch_recv_kernel<true>)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
