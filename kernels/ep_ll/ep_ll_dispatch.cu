/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL dispatch, the send: each warp takes a (token, chunk) and stores it once into every
 * destination rank's receive area, or zero copy straight into the rows' final places
 * (quantizing to FP8 on the way for that recipe, ep_ll_fp8.cuh); the grid's last block then
 * gives every rank this rank's row count per local expert of that rank (expert-major) and
 * signals it with its message count, and, for a dispatch that receives at once, waits for the
 * sources (wait_in_send).  The receive is ep_ll_dispatch_recv.cu.
 */
#include "ep_ll_dispatch.cuh"
#include "ep_ll_fp8.cuh"

namespace ncclx
{
namespace
{

// A message to remote rank d is staged in this rank's arena, in d's row at its slot: the rows
// of a destination are contiguous, so its messages cross the network in one put
// (ep_ll_net.cu).
__device__ __forceinline__ char *staged_message(const ncclx_ep_ll_group_desc_t &g, int d, int slot)
{
    return peer_base(g, g.rank) + g.net_dispatch_out +
           ((size_t)remote_index(g, d) * g.max_tokens + slot) * g.msg_bytes;
}

// Destinations of token t: lane k < topk reads top-k entry k; the lane of a rank's first
// entry holds that rank's message (slot from the routing).  Also returns each lane's
// destination rank (-1 if none) and its rank order among the token's destinations.
struct TokenRoute {
    LaneTargets msgs;
    int expert;      // top-k entry of this lane (-1: none or lane >= topk)
    int order;       // rank order of this lane's destination among the token's destinations
    int slot;        // the token's message slot at this lane's destination (-1: lane >= topk)
    int expert_slot; // expert-major: the token's slot among this rank's tokens to the expert
};

__device__ __forceinline__ TokenRoute route_token(const ncclx_ep_ll_group_desc_t &g,
                                                  const ncclx_ep_ll_handle_desc_t &h,
                                                  const LiveView &view, int t, int parity, int lane)
{
    TokenRoute r;
    r.slot = -1;
    r.expert = -1;
    r.expert_slot = 0;
    if (lane < h.topk) { // one round trip for the three
        r.expert = h.idx[t * h.topk + lane];
        r.slot = h.route[t * h.topk + lane];
        if (h.expert_major) {
            r.expert_slot = h.expert_slot[t * h.topk + lane];
        }
    }
    // Slots and rank orders count every destination; a masked one just gets no message.
    const int d = r.expert >= 0 ? r.expert / g.local_experts : -1;
    bool first;
    r.order = destination_order(d, first);
    const bool send = first && view.has(d);
    r.msgs.lanes = __ballot_sync(0xffffffffu, send);
    r.msgs.mine = nullptr;
    if (send) {
        r.msgs.mine = is_remote(g, d) ? staged_message(g, d, r.slot)
                                      : message_at(peer_base(g, d), g, parity, g.rank, r.slot);
    }
    return r;
}

// Header and top-k entries of token t into every destination's message.
__device__ __forceinline__ void write_headers(const ncclx_ep_ll_handle_desc_t &h,
                                              const ncclx_ep_ll_dispatch_desc_t &a, const Op &op,
                                              int t, const TokenRoute &r, int lane)
{
    float w = 0.0f;
    if (lane < h.topk && a.topk_weights != nullptr) {
        w = a.topk_weights[t * h.topk + lane];
    }
    const int2 entry = make_int2(ncclx_ep_pack_entry(r.expert, r.expert_slot), __float_as_int(w));
    for (unsigned rest = r.msgs.lanes; rest != 0; rest &= rest - 1) {
        const int j = __ffs(rest) - 1;
        char *msg = target_of(r.msgs, j);
        const int order = __shfl_sync(0xffffffffu, r.order, j);
        if (lane == 0) {
            *reinterpret_cast<int4 *>(msg) = make_int4(t, order, (int)a.op, (int)op.tag);
        }
        if (lane < h.topk) {
            reinterpret_cast<int2 *>(msg + NCCLX_EP_MSG_HEADER_BYTES)[lane] = entry;
        }
    }
}

// ---- zero copy (a group planned with zero_copy; docs/ep-ll.md, "Zero copy") ----

// Waits for source s's board of operation op: true when it came with this rank's operation word
// (its rows count), false when s is not live, its word differs (reported) or the wait timed out
// (reported; a zero-copy group has no mask, so a timeout halts it).
__device__ __forceinline__ bool wait_board(const ncclx_ep_ll_group_desc_t &g, const Op &op, int s,
                                           unsigned want_op, bool live)
{
    if (!live) {
        return false;
    }
    const unsigned long long *word = board_word(peer_base(g, g.rank), g, op.parity, s);
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        const unsigned long long v = ld_acquire_sys(word);
        if (ncclx_ep_signal_tag(v) == op.tag) {
            if (ncclx_ep_signal_op(v) != want_op) {
                report_error(g, kErrorMismatch);
                return false;
            }
            return true;
        }
        if (!unmasked_wait_goes_on(g, spins, start)) {
            return false;
        }
    }
}

// Entries of the board copy per thread whose loads are in flight at once.
constexpr int kBoardBatch = 4;

// Zero copy, before any row moves: this rank's row count of every expert onto every live rank's
// board, released by the board's word (post_board, one block); then every source's board
// (wait_boards, in every block that stores rows), and from them, for each expert e, where this
// rank's rows start among the rows e's rank receives for e: the rows of the sources before this
// rank whose boards came with this operation's word (expert_start: the receiver counts exactly
// those, a source with another word is dropped by both).  -1 for the experts of a rank whose
// board did not come (another word, a timeout): no row goes there.  This is also the handshake
// that makes the rows safe to store: a rank posts its board only when it starts this dispatch,
// after everything it did before in its stream, the use of its previous rows included.
// Every thread of the block calls it; nothing from a rank that is out of the group.
__device__ __forceinline__ void post_board(const ncclx_ep_ll_group_desc_t &g,
                                           const ncclx_ep_ll_handle_desc_t &h,
                                           const ncclx_ep_ll_dispatch_desc_t &a,
                                           const LiveView &view, const Op &op, bool out)
{
    if (out) {
        return;
    }
    const int R = g.ranks, E = g.num_experts;
    // A rank-major handle posts the word alone: its rows' places need no counts (store_starts).
    const long long pairs = h.expert_major ? (long long)R * E : 0;
    for (long long i0 = threadIdx.x; i0 < pairs; i0 += kBoardBatch * (long long)blockDim.x) {
        int32_t n[kBoardBatch];
#pragma unroll
        for (int b = 0; b < kBoardBatch; b++) {
            const long long i = i0 + (long long)b * blockDim.x;
            n[b] = i < pairs ? h.expert_count[i % E] : 0;
        }
#pragma unroll
        for (int b = 0; b < kBoardBatch; b++) {
            const long long i = i0 + (long long)b * blockDim.x;
            const int d = (int)(i / E);
            if (i < pairs && view.has(d)) {
                board_counts(peer_base(g, d), g, op.parity, g.rank)[i % E] = n[b];
            }
        }
    }
    __syncthreads();
    for (int d = threadIdx.x; d < R; d += blockDim.x) {
        if (view.has(d)) {
            st_release_sys(board_word(peer_base(g, d), g, op.parity, g.rank),
                           ncclx_ep_signal_word(op.tag, a.op, 0));
        }
    }
}

// counted[s]: whether source s's board came with this operation's word.  Every source's board,
// not only those this rank stores to: a pulled combine (ep_ll_combine.cu) reads a rank's rows
// until its reader posts its next board, so no row may be stored into any rank before every
// rank's board of this operation is in.  own: counted[g.rank] without waiting (the block that
// posts this rank's board may be another block of the same grid).  Every thread calls it.
__device__ __forceinline__ void wait_boards(const ncclx_ep_ll_group_desc_t &g,
                                            const ncclx_ep_ll_dispatch_desc_t &a,
                                            const LiveView &view, const Op &op, bool out,
                                            unsigned char *counted, bool own)
{
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        counted[s] =
            !out && (s == g.rank && own ? view.has(s) : wait_board(g, op, s, a.op, view.has(s)));
    }
    __syncthreads();
}

// Where this rank's rows of expert e start among the rows e's rank receives for e (see
// post_board), or -1 when e's rank's board did not come.  The sources' counts are loaded
// together, kBoardBatch at a time.
__device__ __forceinline__ int expert_start(const ncclx_ep_ll_group_desc_t &g,
                                            const unsigned char *counted, int parity, int e)
{
    if (!counted[e / g.local_experts]) {
        return -1;
    }
    char *self = peer_base(g, g.rank);
    int start = 0;
    for (int s0 = 0; s0 < g.rank; s0 += kBoardBatch) {
        int n[kBoardBatch];
#pragma unroll
        for (int b = 0; b < kBoardBatch; b++) {
            const int s = s0 + b;
            n[b] = s < g.rank && counted[s] ? board_counts(self, g, parity, s)[e] : 0;
        }
#pragma unroll
        for (int b = 0; b < kBoardBatch; b++) {
            start += min(max(n[b], 0), g.max_tokens);
        }
    }
    return start;
}

// Every expert's start into the handle (zero_copy_starts), where a pulled combine finds them;
// rank-major (no counts on the boards): 0 where the expert's rank's board came, else -1.
__device__ __forceinline__ void store_starts(const ncclx_ep_ll_group_desc_t &g,
                                             const ncclx_ep_ll_handle_desc_t &h,
                                             const unsigned char *counted, int parity)
{
    for (int e = threadIdx.x; e < g.num_experts; e += blockDim.x) {
        h.zero_copy_starts[e] = h.expert_major ? expert_start(g, counted, parity, e)
                                               : (counted[e / g.local_experts] ? 0 : -1);
    }
}

// The boards of a zero-copy dispatch in a kernel of their own (one block), ahead of the send: on
// a loopback team, where the send's blocks must not spin on peers' boards while holding SMs that
// a peer needs to post its own.  (A rank alone on its GPU exchanges them in the send itself:
// board_in_send.)
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_board_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                          ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    __shared__ unsigned char counted[NCCLX_EP_MAX_LL_RANKS];
    const Op op = begin_op(g, &g.state->dispatch_seq, view);
    // Whether this rank is out, as the view just taken says (one answer for the block, the same
    // loads as block_self_out's: a rank out of the group sees no rank live, itself included).
    const bool out = !view.has(g.rank);
    post_board(g, h, a, view, op, out);
    wait_boards(g, a, view, op, out, counted, false);
    store_starts(g, h, counted, op.parity);
    // The send (launched early on a rank alone on its GPU) may have its blocks scheduled now:
    // after the wait for the boards, so that a slow peer holds this one block, not the send's
    // grid; it reads the starts only after this grid has ended (wait_for_previous_grid).
    allow_early_launch();
}

// Zero copy: lane k's row of token t for its top-k entry, at its final place in the rows of the
// entry's rank (one row per distinct expert: a token that lists an expert twice sends one), and
// the row's scale row in scale_rows.  Rank-major: the lane of each destination's message stores
// the token's one row for that rank, at (this rank, the message's slot) of its rank-major rows.
// counted: the boards this block waited for itself (board_in_send), from which the lane works
// its row's start out; nullptr: the board kernel's starts (zero_copy_starts; rank-major: only
// whether the destination's board came).  row: the lane's row (pos above; -1 for none).
__device__ __forceinline__ LaneTargets zero_copy_targets(
    const ncclx_ep_ll_group_desc_t &g, const ncclx_ep_ll_handle_desc_t &h,
    const ncclx_ep_ll_dispatch_desc_t &a, const LiveView &view, const TokenRoute &r, int t,
    int lane, LaneTargets &scale_rows, const unsigned char *counted, int parity, int &row)
{
    const int e = r.expert, L = g.local_experts;
    const int d = e >= 0 ? e / L : 0;
    long long pos = -1;
    bool first;
    if (!h.expert_major) {
        const bool message = (r.msgs.lanes >> lane) & 1u; // d's first lane, d in view
        if (message && (counted != nullptr ? counted[d] != 0 : h.zero_copy_starts[e] >= 0)) {
            pos = (long long)g.rank * g.max_tokens + r.slot;
        }
        first = pos >= 0;
    } else {
        if (e >= 0 && view.has(d)) {
            const int start =
                counted != nullptr ? expert_start(g, counted, parity, e) : h.zero_copy_starts[e];
            if (start >= 0) {
                pos = (long long)(e - d * L) * g.ranks * g.max_tokens + start + r.expert_slot;
            }
        }
        const unsigned same = __match_any_sync(0xffffffffu, pos >= 0 ? e : -1);
        first = pos >= 0 && (same & lanemask_lt()) == 0;
    }
    row = (int)pos;
    const size_t rows = h.expert_major ? g.zero_copy_rows : g.zero_copy_rm_rows;
    const size_t scales = h.expert_major ? g.zero_copy_scales : g.zero_copy_rm_scales;
    LaneTargets to;
    to.lanes = __ballot_sync(0xffffffffu, first);
    to.mine = first ? peer_base(g, d) + rows + (size_t)pos * a.out_row_bytes : nullptr;
    scale_rows.lanes = to.lanes;
    scale_rows.mine = first && a.scale_bytes > 0
                          ? peer_base(g, d) + scales + (size_t)pos * a.scale_bytes
                          : nullptr;
    return to;
}

// A team of one that receives in its send (recv_in_send): what the receive kernel would learn
// from the message this rank sends itself for token t, recorded by the send as it stores it (the
// only messages such a rank receives are its own): the token and its rank order (recv_tok) and,
// expert-major, each top-k entry's row (recv_pos; row from zero_copy_targets), rank-major the
// entries for the caller.  A token this rank does not send itself records nothing, as no message
// of it arrives.
__device__ __forceinline__ void record_own_message(const ncclx_ep_ll_group_desc_t &g,
                                                   const ncclx_ep_ll_handle_desc_t &h,
                                                   const ncclx_ep_ll_dispatch_desc_t &a, int t,
                                                   const TokenRoute &r, int row, int lane)
{
    const int d = r.expert >= 0 ? r.expert / g.local_experts : -1;
    const unsigned own = r.msgs.lanes & __ballot_sync(0xffffffffu, d == g.rank);
    if (own == 0) {
        return;
    }
    const int j = __ffs(own) - 1;
    const int m = g.rank * g.max_tokens + __shfl_sync(0xffffffffu, r.slot, j);
    const int order = __shfl_sync(0xffffffffu, r.order, j);
    if (lane == 0) {
        h.recv_tok[m] = ncclx_ep_pack_token(t, order);
    }
    if (h.expert_major) {
        if (lane < h.topk) {
            h.recv_pos[(size_t)m * h.topk + lane] = d == g.rank ? row : -1;
        }
    } else {
        const float w =
            lane < h.topk && a.topk_weights != nullptr ? a.topk_weights[t * h.topk + lane] : 0.0f;
        write_rank_major_meta(g, h, a, m, r.expert, w, lane);
    }
}

// A team of one receiving in its send (recv_in_send), the block that ends the operation (see the
// send kernel's end): what it sent itself is all it receives, so the receive's answers come from
// its handle, with no signal to itself and no wait for it (nothing else reads a team of one's
// signal; a later operation that does waits for its own tag): the messages (recv_count, and
// rank-major out_counts), expert-major each local expert's rows (out_counts: its count, within the
// messages, as the receive plans them); then the operation ends.  A rank out of its view (a group
// that halted) received nothing, as its wait would have concluded.
__device__ __forceinline__ void receive_own(const ncclx_ep_ll_group_desc_t &g,
                                            const ncclx_ep_ll_handle_desc_t &h,
                                            const ncclx_ep_ll_dispatch_desc_t &a,
                                            const LiveView &view, const Op &op)
{
    const int n = view.has(g.rank) ? min(max(h.send_count[g.rank], 0), g.max_tokens) : 0;
    if (h.expert_major) {
        const int L = g.local_experts;
        for (int l = threadIdx.x; l < L; l += blockDim.x) {
            a.out_counts[l] = n > 0 ? min(max(h.expert_count[g.rank * L + l], 0), n) : 0;
        }
    }
    if (threadIdx.x == 0) {
        h.recv_count[g.rank] = n;
        if (!h.expert_major) {
            a.out_counts[g.rank] = n;
        }
        op_end(&g.state->dispatch_seq, op);
    }
}

// Where this rank's per-expert counts for destination d go: d's counts region, or (a remote d)
// this rank's staging, which the network kernel puts before d's signal.
__device__ __forceinline__ int32_t *counts_for(const ncclx_ep_ll_group_desc_t &g, int d, int parity)
{
    return is_remote(g, d)
               ? reinterpret_cast<int32_t *>(peer_base(g, g.rank) + g.net_dispatch_counts) +
                     (size_t)remote_index(g, d) * g.local_experts
               : expert_counts(peer_base(g, d), g, parity, g.rank);
}

// Entries of the count copy per thread whose loads are in flight at once: a group of up to
// kCountBatch x NCCLX_EP_THREADS (destination, expert) pairs copies its counts in one round trip.
constexpr int kCountBatch = 4;

// The send's last block, every thread: expert-major, this rank's row count for each local expert
// of each destination d in view (stored into d's counts, or staged for the network kernel's put),
// the (d, expert) pairs spread over the block's threads with kCountBatch loads in flight each, so
// that the copy costs one round trip rather than one per 32 experts of a destination; then one
// thread per d signals it with its message count, released after the counts (the barrier orders
// every thread's stores before the release).
__device__ __forceinline__ void signal_destinations(const ncclx_ep_ll_group_desc_t &g,
                                                    const ncclx_ep_ll_handle_desc_t &h,
                                                    const ncclx_ep_ll_dispatch_desc_t &a,
                                                    const LiveView &view, const Op &op)
{
    const int L = g.local_experts, pairs = g.ranks * L;
    if (h.expert_major && !a.zero_copy) {
        for (int i0 = (int)threadIdx.x; i0 < pairs; i0 += kCountBatch * (int)blockDim.x) {
            int32_t n[kCountBatch];
#pragma unroll
            for (int b = 0; b < kCountBatch; b++) {
                const int i = i0 + b * (int)blockDim.x;
                n[b] = i < pairs && view.has(i / L) ? h.expert_count[i] : 0;
            }
#pragma unroll
            for (int b = 0; b < kCountBatch; b++) {
                const int i = i0 + b * (int)blockDim.x;
                if (i < pairs && view.has(i / L)) {
                    counts_for(g, i / L, op.parity)[i % L] = n[b];
                }
            }
        }
        __syncthreads();
    }
    for (int d = threadIdx.x; d < g.ranks; d += blockDim.x) {
        if (view.has(d) && !is_remote(g, d)) {
            st_release_sys(signal_at(peer_base(g, d), g, op.parity, g.rank, 0),
                           ncclx_ep_signal_word(op.tag, a.op, (unsigned)h.send_count[d]));
        }
    }
}

// A unit's share that one warp takes when the grid has warps to spare (send_ways): a whole step
// of either loop (512 elements of the FP8 quantization, 2 x 512 bytes of the BF16 copy).
constexpr size_t kShareBytes = 1024;
constexpr int kMaxWays = (int)(kChunkBytes / kShareBytes);

// Warps of the FP8 send's grid per (token, chunk) unit.  A grid cut to its units
// (kSendUnitsPerBlock a block) or a batch smaller than the group's grid leaves most warps without
// a unit; they then split each unit's bytes, so that a chunk is quantized by several warps at
// once instead of by one warp step after step.  Each warp works out the same routing and stores
// its share to every destination.  A power of two (1, 2 or 4), so that the chunk's whole-KiB
// shares are equal: 3 ways would round each share up to 2 KiB, leaving the third warp of every
// full chunk a routing and no bytes.  The BF16 copy
// keeps one warp a unit: its chain is the routing's round trips and the chunk's load, which more
// warps do not shorten (on one rank, one H100, a split of its destinations over the spare warps
// measured +2.3% at 128 tokens, and this split of its bytes +3.8 to +6.8% at 1 to 128 tokens,
// its spill stores 32 -> 48 bytes: every share's warp repeats the routing).
__host__ __device__ __forceinline__ int send_ways(int units, int warps)
{
    const int spare = units > 0 ? warps / units : 1;
    int ways = 1;
    while (ways * 2 <= spare && ways * 2 <= kMaxWays) {
        ways *= 2;
    }
    return ways;
}

// kFp8: the kernel of the FP8 recipe.  Each recipe's copy loop gets a kernel of its own, so that
// neither pays for the other's registers (at the 64 registers of two 512-thread blocks an SM,
// one kernel for both spilled 40 bytes; the BF16 loop alone spills 20, the FP8 one none).
// kZeroCopy: rows go straight to their receivers' zero-copy rows (the messages carry only the
// header and top-k entries), a kernel of its own so that the receive-area path keeps its
// registers.
template <bool kFp8, bool kZeroCopy>
__global__ void __launch_bounds__(NCCLX_EP_THREADS, 2)
    dispatch_send_kernel(ncclx_ep_ll_group_desc_t g, ncclx_ep_ll_handle_desc_t h,
                         ncclx_ep_ll_dispatch_desc_t a)
{
    __shared__ LiveView view;
    __shared__ unsigned char counted[kZeroCopy ? NCCLX_EP_MAX_LL_RANKS : 1];
    const bool boards = kZeroCopy && a.board_in_send;
    if (kZeroCopy && !boards) {
        wait_for_previous_grid(); // launched early after the board kernel: its starts first
    }
    const Op op = begin_op(g, &g.state->dispatch_seq, view);
    const int parity = op.parity, lane = threadIdx.x % kWarpSize;
    // A rank alone on its GPU exchanges the boards here (board_in_send): the first block to run
    // posts this rank's (not block 0, which need not be resident while the others wait), every
    // block waits for the peers' and works its rows' starts out from them, and the poster keeps
    // the starts for the combine.
    if (boards) {
        const bool out = !view.has(g.rank); // as in the board kernel
        // A team of one receiving in its send (recv_in_send) posts no board: no peer reads it and
        // its own counts are its handle's (receive_own).  Nothing waits for its poster then, so
        // block 0 keeps the starts, without an election.
        const bool poster = a.recv_in_send ? blockIdx.x == 0 : first_block(&g.state->board_first);
        if (poster && !a.recv_in_send) {
            post_board(g, h, a, view, op, out);
        }
        wait_boards(g, a, view, op, out, counted, true);
        if (poster) {
            store_starts(g, h, counted, parity);
        }
    }
    const int warps = gridDim.x * kWarps;
    const size_t in_row = a.row_bytes, poff = payload_offset(g);
    const int chunks = (int)((in_row + kChunkBytes - 1) / kChunkBytes);
    const int units = h.num_tokens * chunks, ways = kFp8 ? send_ways(units, warps) : 1;
    // Each of a unit's warps takes `share` bytes of its chunk: whole kShareBytes steps, ways
    // being a power of two no larger than kMaxWays.
    const size_t share = kChunkBytes / ways;
    const int warp = unit_warp((long long)units * ways, warps);
    for (int v = warp; v < units * ways; v += warps) {
        const int u = v / ways, part = v % ways;
        const int t = u / chunks, c = u % chunks;
        if ((size_t)c * kChunkBytes + (size_t)part * share >= in_row) {
            continue; // the part past a short last chunk
        }
        const TokenRoute r = route_token(g, h, view, t, parity, lane);
        LaneTargets payload, scale_rows;
        if (kZeroCopy) {
            int row;
            payload = zero_copy_targets(g, h, a, view, r, t, lane, scale_rows,
                                        boards ? counted : nullptr, parity, row);
            if (a.recv_in_send && c == 0 && part == 0) {
                record_own_message(g, h, a, t, r, row, lane);
            }
        } else {
            payload = r.msgs;
            payload.mine = payload.mine != nullptr ? payload.mine + poff : nullptr;
            scale_rows.lanes = payload.lanes;
            scale_rows.mine = payload.mine != nullptr ? payload.mine + scale_offset(a) : nullptr;
        }
        const char *src = static_cast<const char *>(a.tokens) + (size_t)t * in_row;
        const size_t begin = (size_t)c * kChunkBytes + (size_t)part * share;
        const size_t end = min(min(in_row, (size_t)(c + 1) * kChunkBytes), begin + share);
        if (c == 0 && part == 0) {
            write_headers(h, a, op, t, r, lane);
            if (a.recipe == kRecipeQuantFwd && a.scale_bytes > 0) {
                const char *s = static_cast<const char *>(a.scales) + (size_t)t * a.scale_bytes;
                for (unsigned rest = scale_rows.lanes; rest != 0; rest &= rest - 1) {
                    char *p = target_of(scale_rows, __ffs(rest) - 1);
                    for (size_t i = lane; i < a.scale_bytes; i += kWarpSize) {
                        p[i] = s[i];
                    }
                }
            }
        }
        if (kFp8) {
            quantize_fp8_to(a, reinterpret_cast<const __nv_bfloat16 *>(src), payload, scale_rows,
                            (int)(begin / 2), (int)(end / 2), lane);
        } else {
            warp_copy_to(payload, src, begin, end, lane);
        }
    }
    // A team of one receiving in its send: what receive_own writes depends on no other block's
    // work, and the next kernel of the stream reads it only after this grid has ended, so the
    // block that ends the operation is elected without system-scope fences (last_block_local;
    // a grid of one block is its own).  An election still: the operation may end only once every
    // block has taken its sequence number (begin_op), and a block can start after block 0 has
    // finished (SMs held by other streams), when it would take the next operation's number,
    // parity and tag.
    if (a.recv_in_send) {
        if (last_block_local(&g.state->dispatch_arrive)) {
            receive_own(g, h, a, view, op);
        }
        return;
    }
    // A rank evicted while it sent signals nothing: its peers have masked it already.  Remote
    // ranks are signalled by the network kernel, after their puts.
    if (last_block(&g.state->dispatch_arrive)) {
        if (!block_self_out(g)) {
            signal_destinations(g, h, a, view, op);
        }
        // A dispatch that receives at once waits here, in the one block left, instead of in a
        // kernel of its own: one launch less on the path of every dispatch.  A group with a
        // mask takes the view again, as the wait kernel would take it after the send (an
        // eviction meanwhile counts); without one the view changes only when the group halts,
        // which the wait checks by itself (unmasked_wait_goes_on): one round trip less.
        if (a.wait_in_send) {
            __syncthreads();
            if (g.inactive != nullptr) {
                load_live_view(g, view, true);
            }
            wait_sources(g, h, a, view, op, (int)threadIdx.x, (int)blockDim.x);
        }
        // The other blocks have ended and the sources are in: the copy (early_recv) may have
        // its blocks scheduled now, spread over the idle SMs.  Not before the wait: while a
        // slow peer is waited for, one block holds an SM, not the copy's whole grid (which
        // would keep other streams' kernels out for as long as the wait lasts).
        allow_early_launch();
    }
}

} // namespace
} // namespace ncclx

// Warps of a send block that have a (token, chunk) unit when the grid is cut to the units.
constexpr size_t kSendUnitsPerBlock = 4;

// No more blocks than the handle's (token, chunk) units need, at kSendUnitsPerBlock units a
// block (unit_warp spreads them): a rank with one token launches one block, and its
// last-block election and launch cost that much less, while a rank with a few hundred units
// stores from as many SMs as the group's grid allows rather than from units / 16.
extern "C" int ncclx_ep_ll_dispatch_send_blocks(const ncclx_ep_ll_group_desc_t *g, int num_tokens,
                                                size_t row_bytes)
{
    const size_t units =
        (size_t)num_tokens * ((row_bytes + ncclx::kChunkBytes - 1) / ncclx::kChunkBytes);
    return ncclx::grid_for_units(g, units, kSendUnitsPerBlock);
}

extern "C" int ncclx_ep_ll_dispatch_send_ways(const ncclx_ep_ll_group_desc_t *g, int num_tokens,
                                              size_t row_bytes, int fp8)
{
    const int chunks = (int)((row_bytes + ncclx::kChunkBytes - 1) / ncclx::kChunkBytes);
    if (!fp8) {
        return 1;
    }
    return ncclx::send_ways(num_tokens * chunks,
                            ncclx_ep_ll_dispatch_send_blocks(g, num_tokens, row_bytes) *
                                ncclx::kWarps);
}

extern "C" cudaError_t ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                                        const ncclx_ep_ll_handle_desc_t *h,
                                                        const ncclx_ep_ll_dispatch_desc_t *a,
                                                        cudaStream_t stream)
{
    const int blocks = ncclx_ep_ll_dispatch_send_blocks(g, h->num_tokens, a->row_bytes);
    const bool fp8 = a->recipe == ncclx::kRecipeFp8;
    if (a->zero_copy) {
        // The boards first: every row's place is known before the send stores one (in the send
        // itself with board_in_send).
        cudaError_t err = cudaSuccess;
        if (!a->board_in_send) {
            ncclx::dispatch_board_kernel<<<1, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
            err = cudaGetLastError();
            if (err != cudaSuccess) {
                return err;
            }
        }
        // On a rank alone on its GPU the send is scheduled while the board kernel ends.
        err = ncclx::launch_after(g->early_launch != 0 && !a->board_in_send,
                                  fp8 ? ncclx::dispatch_send_kernel<true, true>
                                      : ncclx::dispatch_send_kernel<false, true>,
                                  blocks, NCCLX_EP_THREADS, 0, stream, *g, *h, *a);
        if (err == cudaSuccess && g->net.kind != NCCLX_NET_NONE) {
            err = ncclx_ep_ll_launch_dispatch_net(g, h, a, stream);
        }
        return err;
    } else if (fp8) {
        ncclx::dispatch_send_kernel<true, false>
            <<<blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    } else {
        ncclx::dispatch_send_kernel<false, false>
            <<<blocks, NCCLX_EP_THREADS, 0, stream>>>(*g, *h, *a);
    }
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && g->net.kind != NCCLX_NET_NONE) {
        err = ncclx_ep_ll_launch_dispatch_net(g, h, a, stream);
    }
    return err;
}

extern "C" cudaError_t ncclx_ep_ll_dispatch_load(void)
{
    const void *const kernels[] = {
        reinterpret_cast<const void *>(ncclx::dispatch_send_kernel<false, false>),
        reinterpret_cast<const void *>(ncclx::dispatch_send_kernel<true, false>),
        reinterpret_cast<const void *>(ncclx::dispatch_send_kernel<false, true>),
        reinterpret_cast<const void *>(ncclx::dispatch_send_kernel<true, true>),
        reinterpret_cast<const void *>(ncclx::dispatch_board_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
