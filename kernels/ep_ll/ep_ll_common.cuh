/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Device helpers shared by the LL kernels: peer addressing, sequence numbers (op_begin /
 * op_end), who takes part (live views, decisions, eviction), bounded waits, destination order,
 * and element conversions.  The pieces HT and M2N share with LL (timers, acquire and release,
 * errors, last-block election, 16-byte copies, the public constants, module loading) are in
 * kernels/common's dev_*.cuh and load_kernels.cuh, which this header brings in for the LL files.
 */
#ifndef NCCLX_KERNELS_EP_LL_COMMON_CUH_
#define NCCLX_KERNELS_EP_LL_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <ncclx/ep.h>
#include <ncclx/plan.h>

#include "dev_consts.cuh"
#include "dev_error.cuh"
#include "dev_sync.cuh"
#include "dev_warp.cuh"
#include "early_launch.cuh"
#include "ep_ll.h"
#include "net.cuh"
#include "load_kernels.cuh"

namespace ncclx
{

// Rows move in chunks of this many bytes (one warp step of warp_copy_to).
constexpr size_t kChunkBytes = 4096;
// The grid of a kernel cut to its work: no more blocks than `units` need at `per_block` units a
// block (unit_warp spreads them), at least one, at most the group's grid.  A small batch then
// launches few blocks (one at one token: its elections cost no ticket, dev_sync.cuh), a large one
// as many as the group may use.
inline int grid_for_units(const ncclx_ep_ll_group_desc_t *g, size_t units, size_t per_block)
{
    const size_t want = units == 0 ? 1 : (units + per_block - 1) / per_block;
    return want < (size_t)g->blocks ? (int)want : g->blocks;
}

// Live views are bitmaps in shared memory: LL groups span at most NCCLX_EP_MAX_LL_RANKS.
constexpr int kLiveWords = NCCLX_EP_MAX_LL_RANKS / 32;
static_assert(NCCLX_EP_MAX_LL_RANKS % 32 == 0, "whole bitmap words");

// Rank peer's arena, for a rank of this rank's load/store domain only (is_remote: the others).
__device__ __forceinline__ char *peer_base(const ncclx_ep_ll_group_desc_t &g, int peer)
{
    return static_cast<char *>(g.peers[peer - g.lsa_base]);
}

// Row slot of token `token` in the combine area of the rank whose arena starts at base.
__device__ __forceinline__ char *combine_slot(char *base, const ncclx_ep_ll_group_desc_t &g,
                                              int parity, int token, int slot)
{
    return base + g.combine_recv +
           ((size_t)(parity * g.max_tokens + token) * g.combine_slots + slot) *
               g.combine_slot_bytes;
}

// ---- ranks of other load/store domains (docs/multi-node.md) ----

// Whether rank r is reached through the network rather than by load/store.
__device__ __forceinline__ bool is_remote(const ncclx_ep_ll_group_desc_t &g, int r)
{
    return r < g.lsa_base || r >= g.lsa_base + g.lsa_size;
}

// Rank r's index among the remote ranks (the row of this rank's network staging).
__device__ __forceinline__ int remote_index(const ncclx_ep_ll_group_desc_t &g, int r)
{
    return r < g.lsa_base ? r : r - g.lsa_size;
}

// Rank r's index among the remote ranks of rank viewer (its row of viewer's staging).
__device__ __forceinline__ int remote_index_at(const ncclx_ep_ll_group_desc_t &g, int viewer, int r)
{
    const int base = viewer / g.lsa_size * g.lsa_size;
    return r < base ? r : r - g.lsa_size;
}

__device__ __forceinline__ int remote_rank(const ncclx_ep_ll_group_desc_t &g, int index)
{
    return index < g.lsa_base ? index : index + g.lsa_size;
}

// The network signal of source s's signal word (parity, direction) at this rank.
__device__ __forceinline__ int net_signal_id(const ncclx_ep_ll_group_desc_t &g, int parity, int dir,
                                             int s)
{
    return g.net_signal_base + (parity * 2 + dir) * g.ranks + s;
}

__device__ __forceinline__ unsigned long long *
signal_at(char *base, const ncclx_ep_ll_group_desc_t &g, int parity, int source, int which)
{
    return reinterpret_cast<unsigned long long *>(base + g.signals) +
           ((size_t)(parity * g.ranks + source) * 2 + which);
}

// The mask words of the rank whose symmetric arena starts at base (enable_mask only):
// clean round one and two slots [R] uint64, then evicted [R] uint32.
__device__ __forceinline__ unsigned long long *
clean_slots(char *base, const ncclx_ep_ll_group_desc_t &g, int round)
{
    return reinterpret_cast<unsigned long long *>(base + g.mask_words) + (size_t)round * g.ranks;
}

__device__ __forceinline__ unsigned *evicted_words(char *base, const ncclx_ep_ll_group_desc_t &g)
{
    return reinterpret_cast<unsigned *>(clean_slots(base, g, 2));
}

// Rank r's combine send progress word (ep_ll_wire.h), in r's arena at base (R >= 2).
__device__ __forceinline__ unsigned *progress_word(char *base, const ncclx_ep_ll_group_desc_t &g,
                                                   int r)
{
    return &evicted_words(base, g)[ncclx_ep_progress_index((unsigned)r, (unsigned)g.ranks)];
}

// Whether the group tracks combine send progress (an active mask and a peer to evict).
__device__ __forceinline__ bool tracks_progress(const ncclx_ep_ll_group_desc_t &g)
{
    return g.inactive != nullptr && g.ranks > 1;
}

// inactive[s] of a rank masked after a timeout while its combine send ran: its rows may still
// land (see evict).  Every reader of inactive tests for 0, so this is "masked" to them.
constexpr int kMaskedLate = 2;

// ---- one owner for sequence numbers and parity ----

// The sequence number, buffer parity and wire tag of the operation a kernel works on.
struct Op {
    unsigned long long seq;
    int parity;
    unsigned tag;
};

__device__ __forceinline__ Op op_of(unsigned long long seq)
{
    Op op;
    op.seq = seq;
    op.parity = (int)(seq & 1);
    op.tag = ncclx_ep_seq_tag(seq);
    return op;
}

// Every kernel of an operation reads its sequence number here (or in begin_op, with its view)...
__device__ __forceinline__ Op op_begin(const unsigned long long *seq)
{
    return op_of(load_volatile(seq));
}

// ...and the operation's last kernel (one thread of its last block) ends it here.
__device__ __forceinline__ void op_end(unsigned long long *seq, const Op &op)
{
    *reinterpret_cast<volatile unsigned long long *>(seq) = op.seq + 1;
}

// ---- who takes part ----

// A group without a mask stops exchanging once a wait of it has timed out: its sequence
// numbers may no longer agree with its peers', so anything it read would be stale.
__device__ __forceinline__ bool group_halted(const ncclx_ep_ll_group_desc_t &g)
{
    return g.inactive == nullptr && (load_volatile(&g.state->error) & kErrorTimeout) != 0;
}

// This rank is out of the group: halted, masked by its own update, or evicted by a peer.
__device__ __forceinline__ bool self_out(const ncclx_ep_ll_group_desc_t &g)
{
    if (g.inactive == nullptr) {
        return group_halted(g);
    }
    return load_volatile(&g.inactive[g.rank]) != 0 || load_volatile(&g.evicted[g.rank]) != 0;
}

// Whether this rank exchanges with rank r now (read fresh: waits use it to stop early).
__device__ __forceinline__ bool rank_live_now(const ncclx_ep_ll_group_desc_t &g, int r)
{
    if (self_out(g)) {
        return false;
    }
    return g.inactive == nullptr || load_volatile(&g.inactive[r]) == 0;
}

// A block's view of the live ranks, taken once at kernel start so that every decision of the
// block uses the same set (a mask that changes meanwhile takes effect in the next kernel).
struct LiveView {
    unsigned bits[kLiveWords];
    __device__ __forceinline__ bool has(int r) const
    {
        return (bits[r >> 5] >> (r & 31)) & 1u;
    }
};

// One thread per rank, a warp per 32 ranks: every load of the view is issued at once.  A
// rank that finds itself evicted (a peer timed out on it) reports it (from the block that
// `reporter` names, so that a kernel reports once) and exchanges nothing.
__device__ __forceinline__ void load_live_view(const ncclx_ep_ll_group_desc_t &g, LiveView &view,
                                               bool reporter)
{
    const bool out = self_out(g);
    const int lane = threadIdx.x % kWarpSize;
    const int words = (g.ranks + kWarpSize - 1) / kWarpSize;
    for (int r0 = (int)threadIdx.x - lane; r0 < words * kWarpSize; r0 += blockDim.x) {
        const int r = r0 + lane;
        bool live = !out && r < g.ranks;
        if (g.inactive != nullptr && r < g.ranks) {
            live = live && load_volatile(&g.inactive[r]) == 0;
            if (r == g.rank && reporter && load_volatile(&g.evicted[r]) != 0) {
                report_error(g, kErrorEvicted);
            }
        }
        const unsigned bits = __ballot_sync(0xffffffffu, live);
        if (lane == 0) {
            view.bits[r0 / kWarpSize] = bits;
        }
    }
    __syncthreads();
}

__device__ __forceinline__ void load_live_view(const ncclx_ep_ll_group_desc_t &g, LiveView &view)
{
    load_live_view(g, view, blockIdx.x == 0);
}

// A kernel's start: its operation (op_begin) and the block's live view (load_live_view), the
// sequence number's load issued first and its value used only after the view's loads, so that
// both are in flight together: one round trip before the kernel's work, not two.
__device__ __forceinline__ Op begin_op(const ncclx_ep_ll_group_desc_t &g,
                                       const unsigned long long *seq, LiveView &view)
{
    const unsigned long long at = load_volatile(seq);
    load_live_view(g, view);
    return op_of(at);
}

// ---- what a rank concluded about a source ----

constexpr int kDispatchDir = 0, kCombineDir = 1;

// Records outcome (a count >= 0, or -1: not counted) for the source behind word in the
// operation tagged tag, unless some thread recorded one first; returns the recorded outcome
// and whether it was this call's.
__device__ __forceinline__ int settle(unsigned long long *word, unsigned long long seen,
                                      unsigned tag, int outcome, bool &mine)
{
    const unsigned long long want = (unsigned long long)tag << 32 | (unsigned)(outcome + 1);
    __threadfence();
    for (;;) {
        const unsigned long long prev = atomicCAS(word, seen, want);
        if (prev == seen) {
            mine = true;
            return outcome;
        }
        if ((unsigned)(prev >> 32) == tag) {
            mine = false;
            __threadfence();
            return (int)(unsigned)prev - 1;
        }
        seen = prev;
    }
}

// Masks rank s after a timeout: in this rank's mask, and in s's own evicted word, so that s,
// if it was only late, learns that it is out and sends nothing more until a clean.  The other
// ranks are not told: each masks s through its own wait, so no rank can mask a third one.
//
// Rows of s's combine send may still be on their way: a warp that found s in the group just
// before the eviction stores its chunk afterwards, possibly much later.  The combine area is
// keyed by (token, entry), not by source, so such a chunk could overwrite another rank's row
// of a later operation of the same parity.  s stores its progress (ep_ll_wire.h) before each
// block checks the eviction, and this rank reads it after the eviction (both sides with a
// sequentially consistent fence between): either s's blocks see the eviction and store
// nothing, or this rank sees s busy and marks it kMaskedLate, so that its next combine signal
// waits for s's send to end (wait_late_rows) before any peer can write those slots again.
__device__ __forceinline__ void evict(const ncclx_ep_ll_group_desc_t &g, int s)
{
    atomicExch(&g.inactive[s], 1);
    if (is_remote(g, s)) {
        // A remote rank's late combine rows land by source (net_combine_in), where nothing reads
        // them until a clean counts it in again: it is only told.
        net_put_value_thread(g.net, s,
                             g.mask_words + 2 * sizeof(uint64_t) * g.ranks + s * sizeof(unsigned),
                             1u, -1, 0);
        return;
    }
    char *peer = peer_base(g, s);
    *reinterpret_cast<volatile unsigned *>(&evicted_words(peer, g)[s]) = 1u;
    __threadfence_system();
    if (tracks_progress(g) && load_volatile(progress_word(peer, g, s)) != NCCLX_EP_PROGRESS_IDLE) {
        atomicExch(&g.inactive[s], kMaskedLate);
    }
}

// Combine send, every block before it checks whether this rank is in the group: announce the
// send (evict reads it).  The fence orders the store before that check's loads.
__device__ __forceinline__ void progress_begin(const ncclx_ep_ll_group_desc_t &g, const Op &op)
{
    if (!tracks_progress(g)) {
        return;
    }
    if (threadIdx.x == 0) {
        *reinterpret_cast<volatile unsigned *>(progress_word(peer_base(g, g.rank), g, g.rank)) =
            ncclx_ep_progress_busy(op.tag);
        __threadfence_system();
    }
    __syncthreads();
}

// Combine send, the last block (every block's rows are visible): the send has ended.
__device__ __forceinline__ void progress_end(const ncclx_ep_ll_group_desc_t &g)
{
    if (tracks_progress(g) && threadIdx.x == 0) {
        *reinterpret_cast<volatile unsigned *>(progress_word(peer_base(g, g.rank), g, g.rank)) =
            NCCLX_EP_PROGRESS_IDLE;
        __threadfence_system();
    }
}

// Before this rank lets peers write its combine slots again (the combine send's last block,
// before its signals; a clean, before its round two): waits until every rank this rank
// evicted while its combine send ran (kMaskedLate) has ended that send, so that its late rows
// land before any peer, released by this rank, writes those slots.  One deadline for all such
// ranks, half the group's timeout from now (the peers waiting for this rank give up after a
// whole one); an evicted rank stops waiting.  A late rank still sending at the deadline is
// reported as a timeout (its rows may yet land: the caller must clean before trusting the
// group's results), and false is returned.  Either way the rank is then plainly masked, and
// never waited for again.  Every thread of the block calls it.
__device__ __forceinline__ bool wait_late_rows(const ncclx_ep_ll_group_desc_t &g)
{
    __shared__ int quiet;
    if (!tracks_progress(g)) {
        return true;
    }
    if (threadIdx.x == 0) {
        quiet = 1;
    }
    __syncthreads();
    const unsigned long long deadline = globaltimer() + g.timeout_ns / 2;
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        if (load_volatile(&g.inactive[s]) != kMaskedLate) {
            continue;
        }
        const unsigned *word = progress_word(peer_base(g, s), g, s);
        for (unsigned spins = 0; load_volatile(word) != NCCLX_EP_PROGRESS_IDLE; spins++) {
            if ((spins & 1023) != 0) {
                continue;
            }
            if (self_out(g)) {
                break;
            }
            if (globaltimer() > deadline) {
                report_error(g, kErrorTimeout);
                quiet = 0;
                break;
            }
        }
        atomicCAS(&g.inactive[s], kMaskedLate, 1);
    }
    __threadfence_system();
    __syncthreads();
    return quiet != 0;
}

// Where source s's signal of operation op in direction dir lands in this rank's arena.
__device__ __forceinline__ const unsigned long long *
source_signal(const ncclx_ep_ll_group_desc_t &g, int dir, int s, const Op &op)
{
    return signal_at(peer_base(g, g.rank), g, op.parity, s, dir == kDispatchDir ? 0 : 1);
}

// Source s's signal word of operation op in direction dir as this rank may read it now.  A
// source of this domain stores it with release; a remote one puts it, then adds 1 to its network
// signal, which says that the word and the data put before it have landed: the word counts only
// once the network signal has counted this operation (every source signals every operation of
// a direction: (seq >> 1) + 1 of them on this parity since the group's start, or, with a mask,
// since the last clean that counted the source in, whose count net_base holds).  Until then 0,
// which never matches a tag.
__device__ __forceinline__ unsigned long long read_source_signal(const ncclx_ep_ll_group_desc_t &g,
                                                                 int dir, int s, const Op &op)
{
    if (is_remote(g, s)) {
        const int id = op.parity * 2 + dir;
        const unsigned long long base = g.net_base != nullptr ? g.net_base[id * g.ranks + s] : 0;
        if (net_read_signal(g.net, net_signal_id(g, op.parity, dir, s)) <
            base + (op.seq >> 1) + 1) {
            return 0;
        }
    }
    return ld_acquire_sys(source_signal(g, dir, s, op));
}

// The deadline of a wait of a group without a mask, checked once per 1024 spins: false once the
// group is halted, or timeout_ns after the first check (reported as a timeout, which halts
// the group); start begins at 0.
__device__ __forceinline__ bool unmasked_wait_goes_on(const ncclx_ep_ll_group_desc_t &g,
                                                      unsigned spins, unsigned long long &start)
{
    return wait_deadline_goes_on(g, group_halted, spins, start);
}

// wait_source for a group without a mask.  Only a timeout can make threads see different
// things, and a timeout halts the group (its results are undefined from then on and every
// later call says so), so each thread goes by the signal it reads: no decision word, no
// atomic on the path from a signal's arrival to the data.
__device__ __forceinline__ int wait_source_unmasked(const ncclx_ep_ll_group_desc_t &g, int dir,
                                                    int s, const Op &op, unsigned want_op,
                                                    bool live)
{
    if (!live) {
        return -1;
    }
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        const unsigned long long v = read_source_signal(g, dir, s, op);
        if (ncclx_ep_signal_tag(v) == op.tag) {
            if (ncclx_ep_signal_op(v) != want_op) {
                report_error(g, kErrorMismatch);
                return -1;
            }
            return (int)ncclx_ep_signal_count(v);
        }
        if (!unmasked_wait_goes_on(g, spins, start)) {
            return -1;
        }
    }
}

// Waits for source s's signal of operation op in direction dir and returns its count, or -1
// when s does not count in this operation: not live, masked meanwhile, timed out, or its
// operation word differs from want_op.  With a mask, every thread of the rank gets the same
// answer (the first to know records it in the group's decision words), so all blocks of a
// kernel agree on who arrived.  A timeout masks s (groups with a mask, and s is told: see
// evict) or halts the group (without one), and is reported.
__device__ __forceinline__ int wait_source(const ncclx_ep_ll_group_desc_t &g, int dir, int s,
                                           const Op &op, unsigned want_op, bool live)
{
    if (g.inactive == nullptr) {
        return wait_source_unmasked(g, dir, s, op, want_op, live);
    }
    unsigned long long *word = g.decisions + (size_t)dir * g.ranks + s;
    const unsigned long long seen = load_volatile(word);
    bool mine;
    if ((unsigned)(seen >> 32) == op.tag) {
        __threadfence();
        return (int)(unsigned)seen - 1;
    }
    if (!live) {
        return settle(word, seen, op.tag, -1, mine);
    }
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        const unsigned long long v = read_source_signal(g, dir, s, op);
        if (ncclx_ep_signal_tag(v) == op.tag) {
            // Every block of a combine receive sees the signal at about the same time: one that
            // finds the answer recorded already takes it without an atomic on the shared word.
            const unsigned long long decided = load_volatile(word);
            if ((unsigned)(decided >> 32) == op.tag) {
                __threadfence();
                return (int)(unsigned)decided - 1;
            }
            const bool match = ncclx_ep_signal_op(v) == want_op;
            const int got =
                settle(word, decided, op.tag, match ? (int)ncclx_ep_signal_count(v) : -1, mine);
            if (mine && !match) {
                report_error(g, kErrorMismatch);
            }
            return got;
        }
        if ((spins & 1023) == 0) {
            const unsigned long long now = globaltimer();
            const unsigned long long decided = load_volatile(word);
            if ((unsigned)(decided >> 32) == op.tag) {
                __threadfence();
                return (int)(unsigned)decided - 1;
            }
            if (!rank_live_now(g, s)) {
                return settle(word, seen, op.tag, -1, mine);
            }
            if (start == 0) {
                start = now;
            } else if (now - start > g.timeout_ns) {
                const int got = settle(word, seen, op.tag, -1, mine);
                if (mine) {
                    evict(g, s);
                    report_error(g, kErrorTimeout);
                }
                return got;
            }
        }
    }
}

// ---- the received messages as one list ----

// out[i] = sum of in[j] over j < i for i < n, and out[n] = the total, by one warp (every lane
// calls it), 32 entries a step; in and out may be the same shared-memory array.
__device__ __forceinline__ void warp_exclusive_sum(const int *in, int *out, int n, int lane)
{
    int running = 0;
    for (int i0 = 0; i0 < n; i0 += kWarpSize) {
        const int i = i0 + lane;
        const int x = i < n ? in[i] : 0;
        int incl = x;
        for (int off = 1; off < kWarpSize; off <<= 1) {
            const int up = __shfl_up_sync(0xffffffffu, incl, off);
            incl += lane >= off ? up : 0;
        }
        if (i < n) {
            out[i] = running + incl - x;
        }
        running += __shfl_sync(0xffffffffu, incl, kWarpSize - 1);
    }
    if (lane == 0) {
        out[n] = running;
    }
}

// start[s] = sum of count[r] over r < s, for s <= R (shared memory, every thread calls it; warp 0
// scans).  The list of (source, message) then has start[R] entries: the kernels walk it instead
// of all R x T slots, so a rank that got one token does one unit of work.
__device__ __forceinline__ void source_starts(const int *count, int *start, int ranks)
{
    if (threadIdx.x < kWarpSize) {
        warp_exclusive_sum(count, start, ranks, (int)threadIdx.x);
    }
    __syncthreads();
}

// Whether this rank is out of the group (self_out), read once for the whole block, so that every
// lane of a warp takes the same branch into the warp-collective code after it even if a mask
// changes meanwhile.  Every thread of the block calls it.
__device__ __forceinline__ bool block_self_out(const ncclx_ep_ll_group_desc_t &g)
{
    __shared__ bool out;
    __syncthreads();
    if (threadIdx.x == 0) {
        out = self_out(g);
    }
    __syncthreads();
    return out;
}

// The source of entry n of the list: the last s with start[s] <= n (n < start[R]).
__device__ __forceinline__ int source_of(const int *start, int ranks, int n)
{
    int lo = 0, hi = ranks - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (start[mid] <= n) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

// Lane k holds d, the rank of top-k entry k (-1: none).  Sets first on the lane of each
// rank's first entry and returns the rank order of d among the token's distinct destination
// ranks: the slot of rank-major combine rows.  Every destination counts, masked or not, so
// dispatch (which writes the order into the header) and combine (which reads the rows) agree.
__device__ __forceinline__ int destination_order(int d, bool &first)
{
    const unsigned same = __match_any_sync(0xffffffffu, d);
    first = d >= 0 && (same & lanemask_lt()) == 0;
    int order = 0;
    for (unsigned rest = __ballot_sync(0xffffffffu, first); rest != 0; rest &= rest - 1) {
        order += __shfl_sync(0xffffffffu, d, __ffs(rest) - 1) < d;
    }
    return order;
}

__device__ __forceinline__ float load_as_float(const void *p, size_t i, int dtype)
{
    if (dtype == kBf16) {
        return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    }
    if (dtype == kFp16) {
        return __half2float(static_cast<const __half *>(p)[i]);
    }
    return static_cast<const float *>(p)[i];
}

__device__ __forceinline__ void store_from_double(void *p, size_t i, double v, int dtype)
{
    if (dtype == kBf16) {
        static_cast<__nv_bfloat16 *>(p)[i] = __double2bfloat16(v);
    } else if (dtype == kFp16) {
        static_cast<__half *>(p)[i] = __double2half(v);
    } else {
        static_cast<float *>(p)[i] = __double2float_rn(v);
    }
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_LL_COMMON_CUH_ */
