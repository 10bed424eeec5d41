/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL combine.  Send: for every message this rank received in the handle's dispatch, each
 * warp stores the expert output row(s) of a (message, chunk) into the source rank's combine
 * area at (token, k) (expert-major) or (token, rank order) (rank-major); the grid's last
 * block signals every rank.  Receive: wait for every rank, then reduce each token's rows in a
 * fixed order in float64 and round once to the output dtype, so results are bitwise
 * reproducible; the last block ends the operation (op_end).  Which ranks arrived is decided
 * once per rank (wait_source), so every block reduces over the same rows.  A small combine that
 * is not send_only, on one load/store domain, is received by the send's last block instead
 * (reduce_in_send): one kernel per combine.  Zero copy (docs/ep-ll.md): a rank whose expert
 * outputs are its zero-copy rows stores nothing and says so in its signal (a.pull); the receive
 * reads that rank's rows where the handle's dispatch put them (token_rows), so each row moves
 * once.
 */
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

__device__ __forceinline__ size_t dtype_bytes(int dtype)
{
    return dtype == kFp32 ? 4 : 2;
}

// Row c of message i from remote source s, staged in this rank's arena (ep_ll_net.cu puts it
// where combine_slot would have stored it).  A message carries one row rank-major and one per
// entry this rank served expert-major, at most net_combine_rows: c counts them in entry order.
__device__ __forceinline__ char *staged_row(const ncclx_ep_ll_group_desc_t &g, int s, int i, int c)
{
    return peer_base(g, g.rank) + g.net_combine_out +
           (((size_t)remote_index(g, s) * g.max_tokens + i) * g.net_combine_rows + c) *
               g.combine_slot_bytes;
}

// The count of a combine signal whose sender's rows are to be pulled from its zero-copy rows
// (a.pull); 0 when it stored them into the receiver's combine slots.
constexpr unsigned kCombinePulled = 1;

constexpr int kElemsPerLane = 8;
constexpr int kElemsPerWarp = kElemsPerLane * kWarpSize;
static_assert(kElemsPerWarp == NCCLX_EP_LL_REDUCE_UNIT_ELEMS, "the host's unit (ep_ll.h)");

// 8 consecutive elements of a 16-byte aligned row as doubles (16 or 32 bytes of loads).
__device__ __forceinline__ void load8(const char *p, int dtype, double x[kElemsPerLane])
{
    if (dtype == kFp32) {
        float4 a = reinterpret_cast<const float4 *>(p)[0];
        float4 b = reinterpret_cast<const float4 *>(p)[1];
        x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w;
        x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
        return;
    }
    uint4 v = *reinterpret_cast<const uint4 *>(p);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (dtype == kBf16) {
            x[2 * i] = __uint_as_float(w[i] << 16);
            x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        } else {
            x[2 * i] = __half2float(__ushort_as_half((unsigned short)(w[i] & 0xffffu)));
            x[2 * i + 1] = __half2float(__ushort_as_half((unsigned short)(w[i] >> 16)));
        }
    }
}

// Rounds 8 doubles once to dtype and stores them (16 or 32 bytes).
__device__ __forceinline__ void store8(char *p, int dtype, const double x[kElemsPerLane])
{
    if (dtype == kFp32) {
        reinterpret_cast<float4 *>(p)[0] =
            make_float4(__double2float_rn(x[0]), __double2float_rn(x[1]), __double2float_rn(x[2]),
                        __double2float_rn(x[3]));
        reinterpret_cast<float4 *>(p)[1] =
            make_float4(__double2float_rn(x[4]), __double2float_rn(x[5]), __double2float_rn(x[6]),
                        __double2float_rn(x[7]));
        return;
    }
    unsigned w[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        unsigned short lo, hi;
        if (dtype == kBf16) {
            lo = __bfloat16_as_ushort(__double2bfloat16(x[2 * i]));
            hi = __bfloat16_as_ushort(__double2bfloat16(x[2 * i + 1]));
        } else {
            lo = __half_as_ushort(__double2half(x[2 * i]));
            hi = __half_as_ushort(__double2half(x[2 * i + 1]));
        }
        w[i] = (unsigned)lo | ((unsigned)hi << 16);
    }
    *reinterpret_cast<uint4 *>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// The sources of a combine's rows, as the rank decided them (wait_source, one answer per
// source): `arrived`, those that count in it; `pulled`, those of a zero-copy combine whose signal
// says that their rows are still in their zero-copy rows (their expert_out was those rows), for
// this rank to read there instead of in its combine slots (docs/ep-ll.md, "Zero copy").
struct CombineSources {
    LiveView arrived, pulled;
};

// The rows that make out[t], as a warp learns them once per (token, chunk) unit: bit q of rows is
// set when row q of the token counts, and lane q holds row q's address (mine) and weight (w), so
// that the reduce's loads need no further lookup (the lookups of every row are in flight at once,
// one round trip, instead of one chain of them per batch of rows).  Expert-major: row q is top-k
// entry q (skipped for -1, for experts on ranks that did not arrive in this combine, and for a
// pulled row the handle's dispatch put nowhere); it is read in this rank's combine slot (t, q),
// or, pulled, in the zero-copy rows of the entry's rank, at the place the handle's dispatch
// stored the token's row for that expert (the expert's row block, this rank's start among its
// sources, the token's slot among this rank's tokens to the expert).  Rank-major: row q is the
// q-th destination rank in rank order (every destination counts in the order, arrived or not, as
// in dispatch), pre-weighted, in slot (t, q), or, pulled, in the rank-major rows of that rank at
// (this rank, the token's message slot there).
struct TokenRows {
    unsigned rows;
    const char *mine;
    float w;
};

// What a reduce may pull, fixed per kernel instance: nothing (a group without zero copy), the rows
// of one layout (the receive kernel, whose instance the launcher picks by the handle's layout, so
// that the pulled reduce carries one layout's address work and no branch into the other's), or
// either layout, read from the handle (the reduce in a combine send, kept to one instance).
enum PullRows { kPullNone, kPullExpertMajor, kPullRankMajor, kPullEither };

template <PullRows kPull>
__device__ __forceinline__ bool pull_expert_major(const ncclx_ep_ll_handle_desc_t &h)
{
    return kPull == kPullExpertMajor || (kPull != kPullRankMajor && h.expert_major);
}

template <PullRows kPull>
__device__ __forceinline__ TokenRows token_rows(const ncclx_ep_ll_group_desc_t &g,
                                                const ncclx_ep_ll_handle_desc_t &h,
                                                const ncclx_ep_ll_combine_desc_t &a,
                                                const CombineSources &from, char *self, int parity,
                                                int t, int lane)
{
    const int K = h.topk, i = t * K + lane;
    const int e = lane < K ? h.idx[i] : -1;
    const int d = e >= 0 ? e / g.local_experts : -1;
    TokenRows r;
    r.mine = combine_slot(self, g, parity, t, lane);
    r.w = 1.0f;
    constexpr bool kZeroCopy = kPull != kPullNone;
    if (!pull_expert_major<kPull>(h)) {
        bool first;
        const int order = destination_order(d, first);
        // A pulled rank's row lies in its rank-major rows at (this rank, the token's message
        // slot there), which the lane of d's first entry knows (h.route); it goes to lane
        // `order`, which the reduce reads in rank order as any other row.  A rank whose board
        // did not come in the dispatch got no row (start < 0): skipped, as expert-major.
        const bool pulled = kZeroCopy && first && from.pulled.has(d);
        const int start = pulled ? h.zero_copy_starts[e] : 0;
        const bool counts = first && from.arrived.has(d) && start >= 0;
        r.rows = __reduce_or_sync(0xffffffffu, counts ? 1u << order : 0u);
        if (kZeroCopy) {
            const char *at = nullptr;
            if (pulled && start >= 0) {
                const size_t pos = (size_t)g.rank * g.max_tokens + (size_t)h.route[i];
                at = peer_base(g, d) + g.zero_copy_rm_rows + pos * g.hidden * dtype_bytes(a.dtype);
            }
            for (unsigned rest = __ballot_sync(0xffffffffu, at != nullptr); rest != 0;
                 rest &= rest - 1) {
                const int j = __ffs(rest) - 1;
                const char *row = reinterpret_cast<const char *>(
                    __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(at), j));
                if (lane == __shfl_sync(0xffffffffu, order, j)) {
                    r.mine = row;
                }
            }
        }
        return r;
    }
    const bool pulled = kZeroCopy && d >= 0 && from.pulled.has(d);
    // Independent loads, issued together.
    const int start = pulled ? h.zero_copy_starts[e] : 0;
    const int slot = pulled ? h.expert_slot[i] : 0;
    r.w = lane < K ? a.topk_weights[i] : 0.0f;
    if (pulled && start >= 0) {
        const size_t pos = (size_t)(e - d * g.local_experts) * g.ranks * g.max_tokens +
                           (size_t)start + (size_t)slot;
        r.mine = peer_base(g, d) + g.zero_copy_rows + pos * g.hidden * dtype_bytes(a.dtype);
    }
    r.rows = __ballot_sync(0xffffffffu, d >= 0 && from.arrived.has(d) && (!pulled || start >= 0));
    return r;
}

// Adds the token's rows (in row order, so the sum is the same bits every time) over the 8
// elements at `first` to acc, kBatch rows' loads in flight at once.  Every lane of the warp calls
// it (the rows' addresses come by shuffles); a lane past the row's end (first >= H) adds nothing,
// one whose 8 elements are not a whole 16-byte piece (not vector) adds them one by one.
template <int kElemBytes, int kBatch>
__device__ __forceinline__ void reduce_rows(const TokenRows &r, int dtype, int first, int H,
                                            bool vector, double acc[kElemsPerLane])
{
    constexpr int kWords = kElemBytes * kElemsPerLane / 16;
    for (unsigned rows = r.rows; rows != 0;) {
        // A batch short of rows repeats its first row's load and skips its sum.
        const int q0 = __ffs(rows) - 1;
        const char *src[kBatch];
        float w[kBatch];
        bool use[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
            use[b] = rows != 0;
            const int q = use[b] ? __ffs(rows) - 1 : q0;
            rows &= rows - 1;
            src[b] = reinterpret_cast<const char *>(
                __shfl_sync(0xffffffffu, reinterpret_cast<unsigned long long>(r.mine), q));
            w[b] = __shfl_sync(0xffffffffu, r.w, q);
        }
        if (vector) {
            uint4 raw[kBatch][kWords];
#pragma unroll
            for (int b = 0; b < kBatch; b++) {
                const uint4 *from =
                    reinterpret_cast<const uint4 *>(src[b] + (size_t)first * kElemBytes);
#pragma unroll
                for (int i = 0; i < kWords; i++) {
                    raw[b][i] = from[i];
                }
            }
#pragma unroll
            for (int b = 0; b < kBatch; b++) {
                if (use[b]) {
                    double x[kElemsPerLane];
                    load8(reinterpret_cast<const char *>(raw[b]), dtype, x);
#pragma unroll
                    for (int i = 0; i < kElemsPerLane; i++) {
                        acc[i] = fma((double)w[b], x[i], acc[i]);
                    }
                }
            }
            continue;
        }
#pragma unroll
        for (int b = 0; b < kBatch; b++) {
            for (int i = 0; use[b] && i < kElemsPerLane && first + i < H; i++) {
                acc[i] = fma((double)w[b], (double)load_as_float(src[b], first + i, dtype), acc[i]);
            }
        }
    }
}

// The receive of a combine, by warp `warp` of `warps` of the calling blocks (every thread of each
// calls it): the block learns which sources arrived and which left their rows to be pulled (one
// thread per source; the rank's one answer per source, wait_source: a signal's count is 1 for a
// pulled source), then its warps reduce the handle's (token, 256-element) units.  kPull: what
// the combine of a zero-copy group (a.zero_copy, the only one whose sources may be pulled) may
// pull (PullRows).
template <PullRows kPull>
__device__ __forceinline__ void
reduce_tokens(const ncclx_ep_ll_group_desc_t &g, const ncclx_ep_ll_handle_desc_t &h,
              const ncclx_ep_ll_combine_desc_t &a, const LiveView &view, CombineSources &from,
              const Op &op, int warp, int warps)
{
    const int parity = op.parity, H = g.hidden, lane = threadIdx.x % kWarpSize;
    const size_t esize = dtype_bytes(a.dtype);
    // Whole 8-element groups of 16-byte aligned rows take the vector path.
    const bool vector_rows = ((size_t)H * esize) % 16 == 0;
    char *self = peer_base(g, g.rank);
    for (int w = threadIdx.x; w < kLiveWords; w += blockDim.x) {
        from.arrived.bits[w] = from.pulled.bits[w] = 0;
    }
    __syncthreads();
    // A team of one reducing its own rows (reduce_own) has sent itself no signal: its one source
    // counts, pulled, when it is in the view (as its own signal would have said).
    const bool own = kPull != kPullNone && a.reduce_own;
    if (own && threadIdx.x == 0 && view.has(g.rank)) {
        from.arrived.bits[g.rank >> 5] = from.pulled.bits[g.rank >> 5] = 1u << (g.rank & 31);
    }
    for (int s = threadIdx.x; !own && s < g.ranks; s += blockDim.x) {
        const int count = wait_source(g, kCombineDir, s, op, a.op, view.has(s));
        if (count >= 0) {
            atomicOr(&from.arrived.bits[s >> 5], 1u << (s & 31));
        }
        if (kPull != kPullNone && count == (int)kCombinePulled) {
            atomicOr(&from.pulled.bits[s >> 5], 1u << (s & 31));
        }
    }
    __syncthreads();
    const int chunks = (H + kElemsPerWarp - 1) / kElemsPerWarp;
    for (int u = warp; u < h.num_tokens * chunks; u += warps) {
        const int t = u / chunks, first = (u % chunks) * kElemsPerWarp + lane * kElemsPerLane;
        const TokenRows rows = token_rows<kPull>(g, h, a, from, self, parity, t, lane);
        const bool vector = vector_rows && first + kElemsPerLane <= H;
        double acc[kElemsPerLane];
#pragma unroll
        for (int x = 0; x < kElemsPerLane; x++) {
            acc[x] = 0.0;
        }
        if (esize == 2) {
            reduce_rows<2, 4>(rows, a.dtype, first, H, vector, acc);
        } else {
            reduce_rows<4, 2>(rows, a.dtype, first, H, vector, acc);
        }
        if (first >= H) {
            continue;
        }
        char *out = static_cast<char *>(a.out) + (size_t)t * H * esize;
        if (vector) {
            store8(out + (size_t)first * esize, a.dtype, acc);
        } else {
            for (int i = 0; i < kElemsPerLane && first + i < H; i++) {
                store_from_double(a.out, (size_t)t * H + first + i, acc[i], a.dtype);
            }
        }
    }
}

// Every thread of the block: this rank's combine signal, with count, to every rank in view of its
// load/store domain (a remote one is signalled after its puts: ep_ll_net.cu); nothing from a rank
// that is out of the group.  Before it, the wait for the rows of ranks evicted while late.
__device__ __forceinline__ void signal_combine(const ncclx_ep_ll_group_desc_t &g,
                                               const ncclx_ep_ll_combine_desc_t &a,
                                               const LiveView &view, const Op &op, unsigned count)
{
    // One answer for the whole block: wait_late_rows synchronizes it.
    if (block_self_out(g)) {
        return;
    }
    (void)wait_late_rows(g); /* a late rank past the deadline is reported there */
    for (int d = threadIdx.x; d < g.ranks; d += blockDim.x) {
        if (view.has(d) && !is_remote(g, d)) {
            st_release_sys(signal_at(peer_base(g, d), g, op.parity, g.rank, 1),
                           ncclx_ep_signal_word(op.tag, a.op, count));
        }
    }
}

// kReduce: the kernel of a combine that reduces in the send (reduce_in_send).  A kernel of its
// own, so that the reduce's registers cost the send's copy loop nothing when it does not.
// kZeroCopy: a combine of a zero-copy group (a.zero_copy), whose reduce may pull.
template <bool kReduce, bool kZeroCopy>
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_send_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                        ncclx_ep_ll_combine_desc_t a)
{
    __shared__ LiveView view;
    __shared__ CombineSources from; // kReduce: the sources the reduce counts
    // [R] counts and [R + 1] starts, sized for the group (see ep_ll_dispatch_recv.cu, RecvPlan).
    extern __shared__ int list_smem[];
    int *count = list_smem, *start = list_smem + g.ranks;
    const Op op = op_begin(&g.state->combine_seq);
    progress_begin(g, op); // before this block's first look at the evicted word
    load_live_view(g, view);
    // The messages of the handle's dispatch, as one list (a source out of view sends nothing);
    // a pulled combine stores none of them: one that reduces in the send skips the round trip
    // for their counts (in the others the branch cost 4 bytes of spill stores in the copy loop).
    const bool pull = kZeroCopy && a.pull;
    if (!(kReduce && pull)) {
        for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
            count[s] = view.has(s) ? h.recv_count[s] : 0;
        }
        __syncthreads();
        source_starts(count, start, g.ranks);
    }
    const int parity = op.parity, T = g.max_tokens, K = h.topk, lane = threadIdx.x % kWarpSize;
    const int warps = gridDim.x * kWarps;
    const size_t row = (size_t)g.hidden * dtype_bytes(a.dtype);
    const int chunks = (int)((row + kChunkBytes - 1) / kChunkBytes);
    const char *expert_out = static_cast<const char *>(a.expert_out);
    // Rows land in slots that the source reuses for other tokens in later operations: once a
    // peer has evicted this rank (it was late), it must not store one more row.
    const unsigned *stop = g.evicted != nullptr ? &g.evicted[g.rank] : nullptr;
    bool going = true;
    // Expert-major, the rows of a (message, chunk) go to different slots.  When the grid has
    // warps to spare (few messages: one rank, a small batch) they are split over `split` warps,
    // part p taking the message's p-th, (p + split)-th, ... rows, so that several rows' loads
    // are in flight at once instead of one row after another.
    // A pulled combine (a.pull) stores no row: its rows stay where the expert wrote them.
    const int units = pull ? 0 : start[g.ranks] * chunks;
    const int split = h.expert_major ? max(1, min(K, warps / max(units, 1))) : 1;
    const int warp = unit_warp((long long)units * split, warps);
    for (int u = warp; going && u < units * split; u += warps) {
        const int part = u % split, v = u / split;
        const int n = v / chunks, c = v % chunks, s = source_of(start, g.ranks, n);
        const int i = n - start[s], m = s * T + i;
        const int tok = h.recv_tok[m];
        if (tok == NCCLX_EP_TOKEN_DROPPED) {
            continue;
        }
        const int t = ncclx_ep_packed_token(tok), order = ncclx_ep_packed_order(tok);
        const size_t begin = (size_t)c * kChunkBytes, end = min(row, begin + kChunkBytes);
        // A remote source's rows are staged in this rank's arena (staged_row).
        const bool remote = is_remote(g, s);
        char *peer = remote ? nullptr : peer_base(g, s);
        LaneTargets to;
        if (!h.expert_major) {
            to.lanes = 1u;
            to.mine = remote ? staged_row(g, s, i, 0) : combine_slot(peer, g, parity, t, order);
            going = warp_copy_to(to, expert_out + (size_t)m * row, begin, end, lane, stop);
            continue;
        }
        // Lane k holds top-k entry k's output row and its destination, slot (t, k) (or the
        // row's staging place); this part copies the rows whose index among the message's rows
        // is `part` modulo `split`.  The destinations are worked out before the loop, one per
        // lane, so that the loop keeps only what the copy needs live (it runs at the kernel's
        // register limit).
        const int p = lane < K ? h.recv_pos[(size_t)m * K + lane] : -1;
        const unsigned valid = __ballot_sync(0xffffffffu, p >= 0);
        const int q = __popc(valid & lanemask_lt());
        to.mine = p < 0    ? nullptr
                  : remote ? staged_row(g, s, i, q)
                           : combine_slot(peer, g, parity, t, lane);
        const unsigned rows = __ballot_sync(0xffffffffu, p >= 0 && q % split == part);
        for (unsigned rest = rows; going && rest != 0; rest &= rest - 1) {
            const int k = __ffs(rest) - 1;
            to.lanes = 1u << k;
            going = warp_copy_to(to, expert_out + (size_t)__shfl_sync(0xffffffffu, p, k) * row,
                                 begin, end, lane, stop);
        }
    }
    // A team of one reducing its own rows (reduce_own: it pulls, so its send stores no row):
    // nothing to signal or to wait for, so every block reduces at once, one unit a warp (the
    // launcher's grid), and the block elected last with GPU-scope fences ends the operation.
    const bool own = kReduce && kZeroCopy && a.reduce_own;
    if (own || last_block(&g.state->combine_arrive)) {
        // The other blocks have ended: the receive (early_recv) may have its blocks scheduled
        // now, spread over the idle SMs (a trigger at every block's start let them take the
        // first SMs the copy freed, two to an SM: the 32-token combine of one rank was 4.6%
        // slower on one H100).
        if (!own) {
            allow_early_launch();
            signal_combine(g, a, view, op, pull ? kCombinePulled : 0);
            progress_end(g);
        }
        // A small combine that receives at once waits and reduces here, in the one block left,
        // instead of in a kernel of its own (a launch and a grid-wide last-block election less
        // on the path of a decode step).  The view is taken again, as the receive kernel would
        // take it after the send; a block reduces NCCLX_EP_LL_REDUCE_IN_SEND_UNITS units in two
        // steps of its warps.  reduce_own: every block of the grid reduces, a warp a unit, with
        // the view it took at its start (a team of one's mask changes only in stream order).
        if (kReduce) {
            __syncthreads();
            if (!own) {
                load_live_view(g, view, true);
            }
            const int first = own ? (int)blockIdx.x * kWarps : 0;
            reduce_tokens<kZeroCopy ? kPullEither : kPullNone>(
                g, h, a, view, from, op, first + (int)threadIdx.x / kWarpSize,
                own ? (int)gridDim.x * kWarps : kWarps);
            __syncthreads();
            if ((!own || last_block_local(&g.state->combine_arrive)) && threadIdx.x == 0) {
                op_end(&g.state->combine_seq, op);
            }
        }
    }
}

// kPull: kPullNone for a group without zero copy, else the handle's layout (PullRows).
template <PullRows kPull>
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    combine_recv_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                        ncclx_ep_ll_combine_desc_t a)
{
    __shared__ LiveView view;
    __shared__ CombineSources from;
    wait_for_previous_grid(); // launched early (early_recv): the send must have ended
    // Not begin_op: with the two loads in flight together the default plan's combine of a rank
    // alone on one H100 was 2.3% slower (34.06 -> 34.85 us, 4 rounds; 34.08 with this order).
    load_live_view(g, view);
    const Op op = op_begin(&g.state->combine_seq);
    // A pulled combine of a rank alone on its GPU has no send kernel: this rank's signal (its
    // rows are where its experts wrote them) comes from the first block, before it waits.
    // A team of one reducing its own rows (reduce_own) signals itself nothing.
    const bool own = kPull != kPullNone && a.reduce_own;
    if (kPull != kPullNone && a.signal_in_recv && !own && first_block(&g.state->signal_first)) {
        signal_combine(g, a, view, op, kCombinePulled);
    }
    // The grid is cut to the units, so blocks first: a block's warps share a token's routing.
    reduce_tokens<kPull>(g, h, a, view, from, op, blockIdx.x * kWarps + threadIdx.x / kWarpSize,
                         gridDim.x * kWarps);
    // reduce_own: out is read by later kernels of this stream only (last_block_local).
    const bool last =
        own ? last_block_local(&g.state->reduce_arrive) : last_block(&g.state->reduce_arrive);
    if (last && threadIdx.x == 0) {
        op_end(&g.state->combine_seq, op);
    }
}

// The handle's (token, 256-element chunk) reduce units: a warp each in the receive, and in a
// send that reduces its own rows (reduce_own).
inline size_t reduce_units(const ncclx_ep_ll_group_desc_t *g, const ncclx_ep_ll_handle_desc_t *h)
{
    return (size_t)h->num_tokens * ((g->hidden + kElemsPerWarp - 1) / kElemsPerWarp);
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                       const ncclx_ep_ll_handle_desc_t *h,
                                                       const ncclx_ep_ll_combine_desc_t *a,
                                                       cudaStream_t stream)
{
    if (a->signal_in_recv) {
        return cudaSuccess; // the receive's first block signals
    }
    const size_t smem = (2 * (size_t)g->ranks + 1) * sizeof(int);
    // A pulled combine's send only signals: one block; one that reduces its own rows
    // (reduce_own), a warp for each of its at most NCCLX_EP_LL_REDUCE_IN_SEND_UNITS units.
    const int blocks = a->reduce_own && a->reduce_in_send
                           ? ncclx::grid_for_units(g, ncclx::reduce_units(g, h), ncclx::kWarps)
                       : a->pull ? 1
                                 : g->blocks;
    using Kernel =
        void (*)(ncclx_ep_ll_group_desc_t, ncclx_ep_ll_handle_desc_t, ncclx_ep_ll_combine_desc_t);
    const Kernel kernels[2][2] = {
        {ncclx::combine_send_kernel<false, false>, ncclx::combine_send_kernel<false, true>},
        {ncclx::combine_send_kernel<true, false>, ncclx::combine_send_kernel<true, true>}};
    kernels[a->reduce_in_send != 0][a->zero_copy != 0]<<<blocks, NCCLX_EP_THREADS, smem, stream>>>(
        *g, *h, *a);
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && g->net.kind != NCCLX_NET_NONE) {
        err = ncclx_ep_ll_launch_combine_net(g, h, a, stream);
    }
    return err;
}

extern "C" cudaError_t ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                                       const ncclx_ep_ll_handle_desc_t *h,
                                                       const ncclx_ep_ll_combine_desc_t *a,
                                                       cudaStream_t stream)
{
    if (a->reduce_in_send) {
        return cudaSuccess; // the send's last block reduced
    }
    if (g->net_combine_in != NCCLX_NO_NET_REGION) {
        cudaError_t err = ncclx_ep_ll_launch_combine_net_recv(g, h, a, stream);
        if (err != cudaSuccess) {
            return err;
        }
    }
    // No more blocks than the handle's (token, 256-element chunk) units need (see dispatch send).
    const int blocks = ncclx::grid_for_units(g, ncclx::reduce_units(g, h), ncclx::kWarps);
    // The receive's instance pulls the handle's layout only (PullRows).
    using Kernel =
        void (*)(ncclx_ep_ll_group_desc_t, ncclx_ep_ll_handle_desc_t, ncclx_ep_ll_combine_desc_t);
    const Kernel kernel = !a->zero_copy     ? ncclx::combine_recv_kernel<ncclx::kPullNone>
                          : h->expert_major ? ncclx::combine_recv_kernel<ncclx::kPullExpertMajor>
                                            : ncclx::combine_recv_kernel<ncclx::kPullRankMajor>;
    // Right after the send (early_recv), its blocks are scheduled as the send's blocks end.
    return ncclx::launch_after(a->early_recv != 0, kernel, blocks, NCCLX_EP_THREADS, 0, stream, *g,
                               *h, *a);
}

extern "C" cudaError_t ncclx_ep_ll_combine_load(void)
{
    const void *const kernels[] = {
        reinterpret_cast<const void *>(ncclx::combine_send_kernel<false, false>),
        reinterpret_cast<const void *>(ncclx::combine_send_kernel<true, false>),
        reinterpret_cast<const void *>(ncclx::combine_send_kernel<false, true>),
        reinterpret_cast<const void *>(ncclx::combine_send_kernel<true, true>),
        reinterpret_cast<const void *>(ncclx::combine_recv_kernel<ncclx::kPullNone>),
        reinterpret_cast<const void *>(ncclx::combine_recv_kernel<ncclx::kPullExpertMajor>),
        reinterpret_cast<const void *>(ncclx::combine_recv_kernel<ncclx::kPullRankMajor>)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
