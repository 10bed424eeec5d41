/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N kernel (docs/m2n.md, "Protocol").  One launch per call (or per batch of a group), on
 * every rank of the context:
 *  vote: block 0 writes this rank's vote word into every rank's vote slot of this launch's
 *        parity; every block reads every rank's.  All ranks read the same words, so all take
 *        the same way: when any word differs from the others (a rank refused, or described
 *        another call) no rank moves a byte.  A rank votes only once its previous launch has
 *        ended, so a vote also says that its staging ring is free again.
 *  data: each (peer, direction) pair of the launch is a stream of bytes (its boxes end to end)
 *        cut into slices, which go through the pair's channels (m2n_ring.h).  For round j of
 *        channel c, one block of the source packs the slice into slot j % NCCLX_M2N_DEPTH of
 *        the channel's ring at the destination and raises the destination's filled counter;
 *        one block of the destination waits for it, unpacks the slot into the tile and raises
 *        the source's freed counter, which the source waits for before it reuses the slot.
 *        No two blocks share a channel, so a round costs one signal and no atomics.  Counters
 *        only grow (since init), so a graph replay or the next call goes on from where the
 *        last ended.
 * Blocks take their work in ascending (pair, round, channel) order, and every rank's grid fits
 * its share of the GPU, so the lowest unfinished round always has both of its ends running.
 *
 * The copy loops and the walk over a pair's pieces are m2n_copy.cuh's; the error clear is
 * m2n_clear.cu's.
 */
#include "dev_error.cuh"
#include "dev_sync.cuh"
#include "load_kernels.cuh"
#include "m2n.h"
#include "m2n_copy.cuh"
#include "net.cuh"

namespace ncclx
{
namespace m2n
{
namespace
{

constexpr int kThreads = NCCLX_M2N_THREADS;
constexpr unsigned kTimeout = NCCLX_M2N_ERROR_TIMEOUT;
constexpr unsigned kRefused = NCCLX_M2N_ERROR_REFUSED;
constexpr unsigned kMismatch = NCCLX_M2N_ERROR_MISMATCH;
constexpr unsigned kRefuse = NCCLX_M2N_VOTE_REFUSE;

// The symmetric arena of a rank of this rank's load/store domain (never one of another).
__device__ __forceinline__ char *base_of(const ncclx_m2n_launch_t &l, int rank)
{
    return static_cast<char *>(l.peers[rank - l.lsa_base]);
}

// Whether rank r is in another load/store domain, reached only through the network.
__device__ __forceinline__ bool is_remote(const ncclx_m2n_launch_t &l, int r)
{
    return r < l.lsa_base || r >= l.lsa_base + l.lsa_size;
}

// m2n_ring.h's network signals of M2N.
__device__ __forceinline__ int vote_signal(const ncclx_m2n_launch_t &l, int receiver, int source)
{
    return (int)ncclx_m2n_vote_signal(l.net_signal_base, (unsigned)l.lsa_size, (unsigned)receiver,
                                      (unsigned)source);
}

__device__ __forceinline__ int filled_signal(const ncclx_m2n_launch_t &l, int receiver, int source,
                                             unsigned c)
{
    return (int)ncclx_m2n_filled_signal(l.net_signal_base, (unsigned)l.lsa_size, (unsigned)l.ranks,
                                        l.channels, (unsigned)receiver, (unsigned)source, c);
}

__device__ __forceinline__ int freed_signal(const ncclx_m2n_launch_t &l, int source, int dest,
                                            unsigned c)
{
    return (int)ncclx_m2n_freed_signal(l.net_signal_base, (unsigned)l.lsa_size, (unsigned)l.ranks,
                                       l.channels, (unsigned)source, (unsigned)dest, c);
}

__device__ __forceinline__ u64 *votes(char *base, const ncclx_m2n_launch_t &l, int parity)
{
    return reinterpret_cast<u64 *>(base + l.signals) + (size_t)parity * l.ranks;
}

// m2n_ring.h's filled[R][channels] and freed[R][channels], after the votes.
__device__ __forceinline__ u64 *filled(char *base, const ncclx_m2n_launch_t &l)
{
    return reinterpret_cast<u64 *>(base + l.signals) + (size_t)2 * l.ranks;
}

__device__ __forceinline__ u64 *freed(char *base, const ncclx_m2n_launch_t &l)
{
    return filled(base, l) + (size_t)l.ranks * l.channels;
}

// m2n_ring.h's src_tiles[NCCLX_M2N_MAX_TRANSFERS], after every rank's words.
__device__ __forceinline__ const void **src_tiles(char *base, const ncclx_m2n_launch_t &l)
{
    return reinterpret_cast<const void **>(reinterpret_cast<u64 *>(base + l.signals) +
                                           ncclx_m2n_signal_words(l.channels) * l.ranks);
}

// m2n_ring.h's direct path table (NCCLX_M2N_DIRECT_*), after src_tiles.
__device__ __forceinline__ u64 *direct_table(char *base, const ncclx_m2n_launch_t &l)
{
    return reinterpret_cast<u64 *>(base + l.signals) +
           ncclx_m2n_signal_words(l.channels) * l.ranks + NCCLX_M2N_MAX_TRANSFERS;
}

// Acquire and release at the narrowest scope that holds every rank of the context: the GPU
// when all of them are on this one (a loopback team), else the system (peers on other GPUs).
__device__ __forceinline__ u64 ld_acquire(const ncclx_m2n_launch_t &l, const u64 *p)
{
    u64 v;
    if (l.one_gpu) {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    } else {
        v = ld_acquire_sys(p);
    }
    return v;
}

__device__ __forceinline__ void st_release(const ncclx_m2n_launch_t &l, u64 *p, u64 v)
{
    if (l.one_gpu) {
        asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    } else {
        st_release_sys(p, v);
    }
}

// After a wait timed out the ranks' counters no longer agree: nothing is exchanged again.
__device__ __forceinline__ bool halted(const ncclx_m2n_launch_t &l)
{
    return (load_volatile(&l.state->error) & kTimeout) != 0;
}

// Polls probe() until it holds; every 1024 polls checks the halt (unless past_halt) and the
// group's timeout, which it reports.
template <typename Probe>
__device__ __forceinline__ bool poll(const ncclx_m2n_launch_t &l, Probe probe, bool past_halt)
{
    u64 start = 0;
    for (unsigned spins = 0;; spins++) {
        if (probe()) {
            return true;
        }
        if ((spins & 1023) == 0) {
            if (!past_halt && halted(l)) {
                return false;
            }
            const u64 now = globaltimer();
            if (start == 0) {
                start = now;
            } else if (now - start > l.timeout_ns) {
                report_error(l, kTimeout);
                return false;
            }
        }
    }
}

// Spins (plain volatile loads, which cost no fence) until pred(value at p) holds, then takes
// the value again with acquire so that what was written before it is seen; false (the timeout
// reported) past the timeout or, unless past_halt, once M2N is halted.
template <typename Pred>
__device__ __forceinline__ bool wait_for(const ncclx_m2n_launch_t &l, const u64 *p, Pred pred,
                                         u64 *seen, bool past_halt = false)
{
    return poll(
        l,
        [&]() {
            if (pred(load_volatile(p))) {
                const u64 v = ld_acquire(l, p);
                if (pred(v)) {
                    *seen = v;
                    return true;
                }
            }
            return false;
        },
        past_halt);
}

// wait_for on this rank's network signal: until it counts at least need (its senders' puts
// before the adds have landed), with the same timeout and halt rules.
__device__ bool wait_signal(const ncclx_m2n_launch_t &l, int signal, u64 need)
{
    return poll(
        l, [&]() { return net_read_signal(l.net, signal) >= need; }, false);
}

// Thread 0: closes this rank's direct table (t: its own) and waits until no reader holds a
// claim on it (HT's close_direct).  A reader claims, then checks the table open for its launch,
// then reads the tiles and releases; a closer stores CLOSED, then reads the claims: with a full
// fence between on both sides, either the reader sees CLOSED (and reads nothing) or the closer
// sees its claim (and waits for the release, which never waits on anything).
__device__ void close_direct(const ncclx_m2n_launch_t &l, u64 *t)
{
    volatile u64 *w = t;
    w[NCCLX_M2N_DIRECT_OPEN] = NCCLX_M2N_DIRECT_CLOSED;
    __threadfence();
    const u64 start = globaltimer();
    while (w[NCCLX_M2N_DIRECT_CLAIMS] != 0) {
        if (globaltimer() - start > l.timeout_ns) {
            report_error(l, kTimeout);
            break;
        }
    }
    __threadfence(); // the readers' accesses before this rank's tiles change
}

// Block 0 of a direct launch, before its vote: the table that this launch's destinations read
// (m2n_ring.h).  Closed first, so that no reader of the last launch reads it while it changes
// (none is left but for a rank whose plan differs: a launch ends once its readers are done),
// then opened for this launch's tag.
__device__ void publish_direct(const ncclx_m2n_launch_t &l, char *self, u64 tag)
{
    volatile u64 *t = direct_table(self, l);
    if (threadIdx.x == 0) {
        close_direct(l, const_cast<u64 *>(t));
    }
    __syncthreads();
    const int num_boxes =
        l.num_pairs > 0 ? l.pairs[l.num_pairs - 1].first_box + l.pairs[l.num_pairs - 1].num_boxes
                        : 0;
    for (int e = threadIdx.x; e < l.num_entries; e += blockDim.x) {
        *reinterpret_cast<const void *volatile *>(&src_tiles(self, l)[e]) = l.src_tiles[e];
    }
    for (int k = threadIdx.x; k < l.num_pairs; k += blockDim.x) {
        const ncclx_m2n_pair_desc_t &pr = l.pairs[k];
        t[NCCLX_M2N_DIRECT_PAIRS + 2 * k] = ncclx_m2n_direct_pair_word(
            (unsigned)pr.peer, (unsigned)pr.send, (unsigned)pr.first_box, (unsigned)pr.num_boxes);
        t[NCCLX_M2N_DIRECT_PAIRS + 2 * k + 1] = pr.bytes;
    }
    for (int x = threadIdx.x; x < num_boxes; x += blockDim.x) {
        const ncclx_m2n_box_desc_t &b = l.boxes[x];
        volatile u64 *y = t + NCCLX_M2N_DIRECT_BOXES + (size_t)x * NCCLX_M2N_DIRECT_BOX_WORDS;
        const char *base = static_cast<const char *>(l.src_tiles[b.entry]);
        uint64_t r[NCCLX_M2N_DIRECT_BOX_WORDS];
        // A receiving box (a self copy's) is never read: its offset stays unmatched.
        ncclx_m2n_direct_record((u64)b.entry, b.begin, b.bytes, b.run, b.pieces1,
                                base != nullptr ? (u64)(b.tile - base) : ~0ull, b.stride0,
                                b.stride1, r);
        for (int w = 0; w < NCCLX_M2N_DIRECT_BOX_WORDS; w++) {
            y[w] = (u64)r[w];
        }
    }
    if (threadIdx.x == 0) {
        t[NCCLX_M2N_DIRECT_NUM_PAIRS] = (u64)l.num_pairs;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence(); // the table before it opens
        t[NCCLX_M2N_DIRECT_OPEN] = tag;
    }
    __syncthreads();
}

// Whether source table t (claimed and open for this launch) lists, for receiving pair pr of
// this rank, the same boxes as this rank's plan: the source's side of each (offset and strides
// in its tile, run, pieces, place in the stream) exactly, so that every read stays inside what
// the source planned from its own descriptors.  The vote word is a hash: this is its backstop.
__device__ bool same_plan(const ncclx_m2n_launch_t &l, const ncclx_m2n_pair_desc_t &pr,
                          const u64 *t)
{
    __shared__ int found;
    if (threadIdx.x == 0) {
        found = -1;
    }
    __syncthreads();
    const u64 n = load_volatile(&t[NCCLX_M2N_DIRECT_NUM_PAIRS]);
    for (u64 k = threadIdx.x; k < n && k < NCCLX_M2N_MAX_PEERS; k += blockDim.x) {
        const u64 w = load_volatile(&t[NCCLX_M2N_DIRECT_PAIRS + 2 * k]);
        if ((w & 0xffffffffull) == (u64)(unsigned)l.rank && ((w >> 32) & 1) != 0) {
            found = (int)k; // one pair per (peer, direction)
        }
    }
    __syncthreads();
    int ok = found >= 0;
    if (ok) {
        const u64 w = load_volatile(&t[NCCLX_M2N_DIRECT_PAIRS + 2 * found]);
        const u64 first = (w >> 33) & 0x1ff, num = (w >> 42) & 0x1ff;
        ok = num == (u64)pr.num_boxes && first + num <= NCCLX_M2N_MAX_TRANSFERS &&
             load_volatile(&t[NCCLX_M2N_DIRECT_PAIRS + 2 * found + 1]) == pr.bytes;
        for (int x = threadIdx.x; ok && x < pr.num_boxes; x += blockDim.x) {
            const ncclx_m2n_box_desc_t &b = l.boxes[pr.first_box + x];
            const u64 *y = t + NCCLX_M2N_DIRECT_BOXES + (first + x) * NCCLX_M2N_DIRECT_BOX_WORDS;
            uint64_t r[NCCLX_M2N_DIRECT_BOX_WORDS];
            ncclx_m2n_direct_record((u64)b.entry, b.begin, b.bytes, b.run, b.pieces1, b.peer_offset,
                                    b.peer_stride0, b.peer_stride1, r);
            for (int w = 0; w < NCCLX_M2N_DIRECT_BOX_WORDS; w++) {
                ok = ok && load_volatile(&y[w]) == (u64)r[w];
            }
        }
    }
    return __syncthreads_and(ok) != 0;
}

// The direct path for this block (part `first` of pr.blocks) and its channels of pair pr
// (base[] holds their counts).  A receiving block copies its run of the stream tile to tile
// (the vote said that the source's tile is ready) and then raises freed of its channels; the
// source's block raises filled of every channel alike (the ring's bookkeeping) and waits until
// freed says that every channel's reader is done, so that its tile does not change while it is
// read.  The counters end where the ring would leave them, so both paths may follow each other
// on one context.
__device__ bool move_pair_direct(const ncclx_m2n_launch_t &l, const ncclx_m2n_pair_desc_t &pr,
                                 const u64 *base, unsigned first, unsigned step, unsigned mine,
                                 u64 slices, const u64 *wait_words, u64 *post_words, u64 *counts,
                                 u64 tag)
{
    const unsigned C = (unsigned)pr.channels;
    if (!pr.send) {
        // Claim the source's table, then check it still open for this launch: a source that
        // gave up waiting for its destinations closed it and its caller may reuse its tiles.
        __shared__ int admitted;
        u64 *t = direct_table(base_of(l, pr.peer), l);
        if (threadIdx.x == 0) {
            atomicAdd(&t[NCCLX_M2N_DIRECT_CLAIMS], 1ull);
            __threadfence();
            admitted = load_volatile(&t[NCCLX_M2N_DIRECT_OPEN]) == tag;
            if (!admitted) {
                atomicAdd(&t[NCCLX_M2N_DIRECT_CLAIMS], ~0ull); // -1
                report_error(l, kTimeout); // the source gave up: M2N is out of step
            }
        }
        __syncthreads();
        if (!admitted) {
            return false;
        }
        const bool same = same_plan(l, pr, t);
        uint64_t lo, hi;
        ncclx_m2n_direct_range(pr.bytes, l.slice, (unsigned)pr.blocks, first, &lo, &hi);
        if (same && lo < hi) {
            move_span_direct(l, pr, lo, hi, src_tiles(base_of(l, pr.peer), l));
        }
        __syncthreads(); // every read of the source's tile comes before the release below
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(&t[NCCLX_M2N_DIRECT_CLAIMS], ~0ull); // -1
            if (!same) {
                // The votes agreed (a hash) but the plans do not: nothing read, nothing posted,
                // so the source's wait times out; the counters no longer agree, M2N stops.
                report_error(l, kMismatch | kTimeout);
            }
        }
        if (!same) {
            return false;
        }
    }
    int ok = 1;
    for (unsigned i = threadIdx.x; i < mine; i += blockDim.x) {
        const unsigned c = first + i * step;
        const u64 need = base[i] + ncclx_m2n_channel_rounds(slices, c, C);
        st_release(l, post_words + c, need);
        u64 seen;
        // Past a halt too (its own timeout still ends it): a destination that saw every vote
        // in time copies this tile whatever happened here since, and the tile must not change
        // before it is done.
        if (pr.send && !wait_for(
                           l, wait_words + c, [need](u64 v) { return v >= need; }, &seen, true)) {
            ok = 0;
            break;
        }
        *reinterpret_cast<volatile u64 *>(&counts[c]) = need;
    }
    const bool all = __syncthreads_and(ok) != 0;
    if (!all && pr.send && threadIdx.x == 0) {
        // This rank gives up on its destinations and its caller may reuse its tiles: no reader
        // may start on them any more, and one at work finishes first.
        close_direct(l, direct_table(base_of(l, l.rank), l));
    }
    return all;
}

// This block's channels of pair p (channels part, part + blocks, ... of the pair's), round by
// round and, within a round, channel by channel: every block of both ends takes its work in
// (pair, round, channel) order, so the lowest unfinished item always has both of its ends at it.
// False when a wait failed.
__device__ bool move_pair(const ncclx_m2n_launch_t &l, int p, int part, u64 tag)
{
    __shared__ u64 base[NCCLX_M2N_MAX_CHANNELS];
    __shared__ int ok;
    const ncclx_m2n_pair_desc_t &pr = l.pairs[p];
    const unsigned C = (unsigned)pr.channels, step = (unsigned)pr.blocks, first = (unsigned)part;
    const unsigned mine = first < C ? (C - first + step - 1) / step : 0;
    const u64 slices = ncclx_m2n_slices(pr.bytes, l.slice);
    if (mine == 0) {
        return true; // more blocks than channels (the planner gives none such)
    }
    const size_t row = (size_t)pr.peer * l.channels;
    // A peer of another domain: its counters are network signals and a slice is put, not stored.
    const bool net = is_remote(l, pr.peer);
    char *self = base_of(l, l.rank), *remote = net ? nullptr : base_of(l, pr.peer);
    u64 *counts = (pr.send ? l.sent : l.received) + row;
    // Waits on my own counters of this peer; posts into the peer's counters of me.
    const u64 *wait_words = (pr.send ? freed(self, l) : filled(self, l)) + row;
    u64 *post_words =
        net ? nullptr
            : (pr.send ? filled(remote, l) : freed(remote, l)) + (size_t)l.rank * l.channels;
    const unsigned source = pr.send ? (unsigned)l.rank : (unsigned)pr.peer;
    __syncthreads(); // base[] of the block's previous pair is no longer read
    for (unsigned i = threadIdx.x; i < mine; i += blockDim.x) {
        base[i] = load_volatile(&counts[first + i * step]);
    }
    __syncthreads();
    if (l.direct) {
        return move_pair_direct(l, pr, base, first, step, mine, slices, wait_words, post_words,
                                counts, tag);
    }
    const u64 rounds = ncclx_m2n_channel_rounds(slices, first, C); // the most of its channels
    for (u64 j = 0; j < rounds; j++) {
        for (unsigned i = 0; i < mine; i++) {
            const unsigned c = first + i * step;
            const u64 k = j * C + c;
            if (k >= slices) {
                break; // higher channels have no round j either
            }
            if (threadIdx.x == 0) {
                u64 seen;
                if (pr.send) {
                    // The slot held round j - DEPTH: the destination must have read it out.
                    const u64 need = base[i] + j + 1 - NCCLX_M2N_DEPTH;
                    ok = j < NCCLX_M2N_DEPTH ||
                         (net ? wait_signal(l, freed_signal(l, l.rank, pr.peer, c), need)
                              : wait_for(
                                    l, wait_words + c, [need](u64 v) { return v >= need; }, &seen));
                } else {
                    const u64 need = base[i] + j + 1;
                    ok = net ? wait_signal(l, filled_signal(l, l.rank, pr.peer, c), need)
                             : wait_for(
                                   l, wait_words + c, [need](u64 v) { return v >= need; }, &seen);
                }
            }
            __syncthreads();
            if (!ok) {
                return false;
            }
            const u64 lo = k * l.slice;
            const u64 len = pr.bytes - lo < l.slice ? pr.bytes - lo : l.slice;
            // The slot of this round in the destination's ring; a slice for another domain is
            // packed into this rank's network staging first and put there.
            const u64 slot = l.staging + ncclx_m2n_slot(source, c, j, l.channels, l.slice);
            const u64 packed =
                l.net_staging + ncclx_m2n_net_slot((unsigned)l.lsa_size, (unsigned)l.rank,
                                                   (unsigned)pr.peer, c, j, l.channels, l.slice);
            move_span(l, pr, lo, lo + len,
                      pr.send ? (net ? self + packed : remote + slot) : self + slot);
            if (net && pr.send) {
                __threadfence_system(); // the packed slice before the put reads it (a NIC)
            }
            __syncthreads();
            if (net && threadIdx.x < kWarpSize) {
                // The payload (none when freeing), then the add that counts the round.
                const int lane = (int)threadIdx.x;
                if (pr.send) {
                    net_put_signal_warp(l.net, pr.peer, slot, packed, len,
                                        filled_signal(l, pr.peer, l.rank, c), 1, lane);
                } else {
                    net_put_signal_warp(l.net, pr.peer, 0, 0, 0,
                                        freed_signal(l, pr.peer, l.rank, c), 1, lane);
                }
            }
            if (threadIdx.x == 0) {
                // Release: the block's writes (pack) or reads (unpack) of the slot, ordered
                // before it by the barrier, come first.
                if (!net) {
                    st_release(l, post_words + c, base[i] + j + 1);
                }
                if (j + 1 == ncclx_m2n_channel_rounds(slices, c, C)) {
                    *reinterpret_cast<volatile u64 *>(&counts[c]) = base[i] + j + 1;
                }
            }
        }
    }
    return true;
}

__global__ void __launch_bounds__(kThreads, 2)
    m2n_kernel(const __grid_constant__ ncclx_m2n_launch_t l)
{
    __shared__ int stop;
    __shared__ unsigned bits;
    const u64 seq = load_volatile(&l.state->seq);
    if (threadIdx.x == 0) {
        stop = halted(l) ? 1 : 0;
        bits = 0;
    }
    __syncthreads();
    if (stop) {
        return; // no vote: the peers time out on this rank, as it did on one of theirs
    }
    const int parity = (int)(seq & 1);
    const unsigned tag = (unsigned)(seq + 1);
    char *self = base_of(l, l.rank);
    if (blockIdx.x == 0) {
        // The direct path's table of this rank's source tiles and plan goes out with the vote
        // (whose release stores order it): a destination reads it only after it saw the vote,
        // and under a claim.
        if (l.direct) {
            publish_direct(l, self, (u64)seq + 1);
        }
        const u64 vote = ((u64)tag << 32) | l.word;
        for (int r = threadIdx.x; r < l.ranks; r += blockDim.x) {
            if (!is_remote(l, r)) {
                st_release(l, votes(base_of(l, r), l, parity) + l.rank, vote);
            }
        }
        // To another domain: the word with an add to the receiver's vote signal of this rank,
        // one warp per receiver.
        const int warps = (int)blockDim.x / kWarpSize, warp = (int)threadIdx.x / kWarpSize;
        for (int r = warp; l.lsa_size < l.ranks && r < l.ranks; r += warps) {
            if (is_remote(l, r)) {
                net_put_value_signal_warp(
                    l.net, r, l.signals + ((size_t)parity * l.ranks + l.rank) * sizeof(u64), vote,
                    vote_signal(l, r, l.rank), 1, (int)threadIdx.x % kWarpSize);
            }
        }
    }
    for (int r = threadIdx.x; r < l.ranks; r += blockDim.x) {
        u64 v = 0;
        // A vote from another domain is read once its signal counts it: seq + 1 votes of that
        // rank since init, one per launch.
        if (is_remote(l, r) && !wait_signal(l, vote_signal(l, l.rank, r), seq + 1)) {
            atomicOr(&bits, kTimeout);
            break;
        }
        if (!wait_for(
                l, votes(self, l, parity) + r, [tag](u64 x) { return (unsigned)(x >> 32) == tag; },
                &v)) {
            atomicOr(&bits, kTimeout);
            break;
        }
        const unsigned word = (unsigned)v;
        if (word != l.word && r != l.rank) {
            atomicOr(&bits, (word & kRefuse) ? kRefused : ((l.word & kRefuse) ? 0u : kMismatch));
        }
    }
    __syncthreads();
    if (bits & kTimeout) {
        // Another rank may have seen every vote in time (this rank's own went out first) and,
        // on the direct path, read this rank's tiles: a sending block still waits for its
        // destinations (bounded by the timeout) before the launch may end and a tile change.
        for (int p = 0; l.direct && !(l.word & kRefuse) && p < l.num_pairs; p++) {
            const int part = (int)blockIdx.x - l.pairs[p].first_block;
            if (l.pairs[p].send && part >= 0 && part < l.pairs[p].blocks) {
                (void)move_pair(l, p, part, (u64)seq + 1);
            }
        }
        return;
    }
    if (bits != 0 && threadIdx.x == 0 && blockIdx.x == 0) {
        report_error(l, bits);
    }
    if (bits == 0 && !(l.word & kRefuse)) {
        for (int p = 0; p < l.num_pairs; p++) {
            const int part = (int)blockIdx.x - l.pairs[p].first_block;
            if (part >= 0 && part < l.pairs[p].blocks && !move_pair(l, p, part, (u64)seq + 1)) {
                return;
            }
        }
    }
    if (last_block(&l.state->arrive) && threadIdx.x == 0) {
        *reinterpret_cast<volatile u64 *>(&l.state->seq) = seq + 1;
    }
}

} // namespace
} // namespace m2n
} // namespace ncclx

extern "C" cudaError_t ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream)
{
    ncclx::m2n::m2n_kernel<<<l->blocks, ncclx::m2n::kThreads, 0, stream>>>(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_m2n_kernels_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::m2n::m2n_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
