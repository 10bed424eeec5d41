/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Device helpers of the HT kernels: peer addressing, the step signals that order the ranks'
 * kernels (every HT kernel waits for what it reads at its start and announces what it wrote in
 * its last block), and the routing-map bit tests.  The generic pieces (timers, acquire and
 * release, errors, last-block election, 16-byte copies, the public constants, module loading)
 * are kernels/common's, which LL and M2N share.
 */
#ifndef NCCLX_KERNELS_EP_HT_COMMON_CUH_
#define NCCLX_KERNELS_EP_HT_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <ncclx/ep.h>

#include "dev_consts.cuh"
#include "dev_error.cuh"
#include "dev_sync.cuh"
#include "dev_warp.cuh"
#include "ep_ht.h"
#include "load_kernels.cuh"
#include "net.cuh"

namespace ncclx
{
namespace ht
{

constexpr int kThreads = NCCLX_EP_THREADS;
constexpr unsigned kErrorOverflow = NCCLX_EP_ERROR_OVERFLOW;
constexpr int kStepBits = NCCLX_EP_HT_STEP_BITS;
constexpr unsigned long long kStepMask = (1ull << kStepBits) - 1;
constexpr int kAnyWord = -1; // a wait that does not compare operation words

// Rank peer's arena: a rank of this rank's load/store domain only (is_remote: the others,
// which only the network reaches).
__device__ __forceinline__ char *peer_base(const ncclx_ep_ht_group_desc_t &g, int peer)
{
    return static_cast<char *>(g.peers[peer - g.lsa_base]);
}

__device__ __forceinline__ bool is_remote(const ncclx_ep_ht_group_desc_t &g, int r)
{
    return r < g.lsa_base || r >= g.lsa_base + g.lsa;
}

// This rank's rail peer on node n: its relay there, and the rail source from there.
__device__ __forceinline__ int rail_peer(const ncclx_ep_ht_group_desc_t &g, int n)
{
    return n * g.lsa + (g.rank - g.lsa_base);
}

__device__ __forceinline__ int my_node(const ncclx_ep_ht_group_desc_t &g)
{
    return g.lsa_base / g.lsa;
}

// The slot of node n's relay rows, partials and relay entries at a rank of node viewer (n !=
// viewer): one per other node.
__device__ __forceinline__ int node_slot(int viewer, int n)
{
    return n < viewer ? n : n - 1;
}

__device__ __forceinline__ int net_signal_id(const ncclx_ep_ht_group_desc_t &g, int kind,
                                             int sender)
{
    return g.net_signal_base + kind * g.ranks + sender;
}

// The network word slot (NCCLX_EP_HT_NET_WORD_*) of sender in this rank's arena (an offset).
__device__ __forceinline__ size_t net_word_slot(const ncclx_ep_ht_group_desc_t &g, int which,
                                                int sender)
{
    return g.net_words + ((size_t)which * g.ranks + sender) * sizeof(unsigned long long);
}

// Signal (kind, source) in the arena starting at base.
__device__ __forceinline__ unsigned long long *
signal_at(char *base, const ncclx_ep_ht_group_desc_t &g, int kind, int source)
{
    return reinterpret_cast<unsigned long long *>(base + g.signals) + (size_t)kind * g.ranks +
           source;
}

// Once a wait has timed out the group exchanges nothing more: its ranks may no longer be in
// step, so anything read would be stale (the next host call fails with ncclxTimeout).
__device__ __forceinline__ bool halted(const ncclx_ep_ht_group_desc_t &g)
{
    return (load_volatile(&g.state->error) & kErrorTimeout) != 0;
}

// The deadline of every HT wait loop, checked once per 1024 spins: false once the group is
// halted, or timeout_ns after the first check (reported as a timeout); start begins at 0.
__device__ __forceinline__ bool wait_goes_on(const ncclx_ep_ht_group_desc_t &g, unsigned spins,
                                             unsigned long long &start)
{
    return wait_deadline_goes_on(g, halted, spins, start);
}

// Whether the group does nothing now: a wait timed out (for good), or a routing overflowed
// under TRAP (until ncclxEpClearAsyncError).  Read once per block, at the kernel's start, so
// that every thread of the block takes the same way.  Only a routing's scan reports an
// overflow, so every block of a data kernel sees the same answer; a timeout seen by some
// blocks only leaves the group halted anyway.
__device__ __forceinline__ bool block_stopped(const ncclx_ep_ht_group_desc_t &g)
{
    __shared__ int stopped;
    if (threadIdx.x == 0) {
        stopped = (load_volatile(&g.state->error) & (kErrorTimeout | kErrorOverflow)) != 0;
    }
    __syncthreads();
    return stopped != 0;
}

// The count and scan kernels of a routing follow its publish kernel's decision (an overflow
// that this routing's scan reports must not stop the scan itself half way).
__device__ __forceinline__ bool block_route_stopped(const ncclx_ep_ht_group_desc_t &g)
{
    __shared__ int stopped;
    if (threadIdx.x == 0) {
        stopped = load_volatile(&g.state->route_stopped) != 0 || halted(g);
    }
    __syncthreads();
    return stopped != 0;
}

// Waits until source's signal `kind` in this rank's arena reaches step at_least (false: timed
// out or halted, the timeout reported; or the step's operation word differs from word, which
// is reported as a mismatch: the source's rows must not be read).
__device__ __forceinline__ bool wait_net(const ncclx_ep_ht_group_desc_t &g, int kind, int sender,
                                         unsigned long long at_least, int word_slot, int word);

__device__ __forceinline__ bool wait_one(const ncclx_ep_ht_group_desc_t &g, int kind, int source,
                                         unsigned long long at_least, int word)
{
    if (is_remote(g, source)) {
        // Across domains a remote rank's map steps come as network signals; its dispatch rows
        // and their PUSHED signal come from its relay here (a store into this slot, as from a
        // rank of this domain); the other steps concern ranks of this domain only.
        if (kind == NCCLX_EP_HT_SIG_MAP_PUBLISHED || kind == NCCLX_EP_HT_SIG_MAP_READ) {
            return wait_net(g,
                            kind == NCCLX_EP_HT_SIG_MAP_PUBLISHED ? NCCLX_EP_HT_NET_MAP_PUBLISHED
                                                                  : NCCLX_EP_HT_NET_MAP_READ,
                            source, at_least, -1, kAnyWord);
        }
        if (kind != NCCLX_EP_HT_SIG_DISPATCH_PUSHED) {
            return true;
        }
    }
    const unsigned long long *sig = signal_at(peer_base(g, g.rank), g, kind, source);
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        const unsigned long long v = ld_acquire_sys(sig);
        if ((v & kStepMask) >= at_least) {
            if (word != kAnyWord && (v >> kStepBits) != (unsigned long long)word) {
                report_error(g, kErrorMismatch);
                return false;
            }
            return true;
        }
        if (!wait_goes_on(g, spins, start)) {
            return false;
        }
    }
}

// Waits until sender's network signal `kind` (NCCLX_EP_HT_NET_*) at this rank has counted
// at_least steps; with word_slot >= 0 the step's word (NCCLX_EP_HT_NET_WORD_*, put before the
// signal) must then be `word` (a mismatch otherwise, reported).  False on a timeout or halt.
__device__ __forceinline__ bool wait_net(const ncclx_ep_ht_group_desc_t &g, int kind, int sender,
                                         unsigned long long at_least, int word_slot, int word)
{
    const int id = net_signal_id(g, kind, sender);
    unsigned long long start = 0;
    for (unsigned spins = 0;; spins++) {
        if (net_read_signal(g.net, id) >= at_least) {
            if (word_slot >= 0) {
                const unsigned long long v = ld_acquire_sys(reinterpret_cast<unsigned long long *>(
                    peer_base(g, g.rank) + net_word_slot(g, word_slot, sender)));
                if ((v >> kStepBits) != (unsigned long long)word || (v & kStepMask) != at_least) {
                    report_error(g, kErrorMismatch);
                    return false;
                }
            }
            return true;
        }
        if (!wait_goes_on(g, spins, start)) {
            return false;
        }
    }
}

// Every thread of the block returns true once each rail peer (one per other node) has counted
// at_least steps of network signal `kind` (thread n polls node n's), false when a wait timed out,
// the group is halted or (word_slot >= 0) a peer's word differs from `word` (every node is
// still waited for, so a mismatch leaves no peer's step unread).
__device__ __forceinline__ bool block_wait_rails(const ncclx_ep_ht_group_desc_t &g, int kind,
                                                 unsigned long long at_least, int word_slot = -1,
                                                 int word = kAnyWord)
{
    __shared__ int failed;
    if (threadIdx.x == 0) {
        failed = halted(g) ? 1 : 0;
    }
    __syncthreads();
    for (int n = threadIdx.x; n < g.nodes && !load_volatile(&failed); n += blockDim.x) {
        if (n != my_node(g) && !wait_net(g, kind, rail_peer(g, n), at_least, word_slot, word)) {
            failed = 1;
        }
    }
    __syncthreads();
    return failed == 0;
}

// Every thread of the block returns true once every rank's signal `kind` has reached at_least
// (one thread per rank polls), false when a wait timed out or the group is halted.
__device__ __forceinline__ bool block_wait_all(const ncclx_ep_ht_group_desc_t &g, int kind,
                                               unsigned long long at_least, int word = kAnyWord)
{
    __shared__ int failed;
    if (threadIdx.x == 0) {
        failed = halted(g) ? 1 : 0;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < g.ranks && !load_volatile(&failed); r += blockDim.x) {
        if (!wait_one(g, kind, r, at_least, word)) {
            failed = 1;
        }
    }
    __syncthreads();
    return failed == 0;
}

// The block waits for one source's signal (thread 0 polls).
__device__ __forceinline__ bool block_wait_one(const ncclx_ep_ht_group_desc_t &g, int kind,
                                               int source, unsigned long long at_least)
{
    __shared__ int ok;
    if (threadIdx.x == 0) {
        ok = !halted(g) && wait_one(g, kind, source, at_least, kAnyWord);
    }
    __syncthreads();
    return ok != 0;
}

// Across domains, the map steps to remote ranks: the map itself (put into slot g.rank of their
// copies) with the signal, or the signal alone; one warp per remote rank.  The other steps stay
// in the domain (dispatch and combine cross through the relays, ep_ht_net.cu).
__device__ __forceinline__ void signal_remote_map(const ncclx_ep_ht_group_desc_t &g, bool publish)
{
    const size_t map_bytes = (size_t)g.max_tokens * g.map_words * sizeof(uint32_t);
    const int lane = threadIdx.x % kWarpSize;
    for (int ri = threadIdx.x / kWarpSize; ri < g.ranks - g.lsa; ri += kWarps) {
        const int r = ri < g.lsa_base ? ri : ri + g.lsa;
        net_put_signal_warp(
            g.net, r, publish ? g.net_maps + (size_t)g.rank * map_bytes : 0, g.map,
            publish ? map_bytes : 0,
            net_signal_id(g, publish ? NCCLX_EP_HT_NET_MAP_PUBLISHED : NCCLX_EP_HT_NET_MAP_READ,
                          g.rank),
            1ull, lane);
    }
}

// Called by every thread of the last block of a step (after last_block(), whose fences make
// every block's writes visible system-wide): tells every rank of this domain (and across domains
// every rank, for the map steps) that this rank finished step value - 1, of operation word
// `word`.  A halted group tells nothing: its peers then time out on it instead
// of reading rows it did not write.  Returns whether it signalled (the step then ends).
__device__ __forceinline__ bool signal_all(const ncclx_ep_ht_group_desc_t &g, int kind,
                                           unsigned long long value, unsigned word = 0)
{
    // One answer per warp (the network puts below are warp-wide).
    if (__shfl_sync(0xffffffffu, halted(g) ? 1 : 0, 0) != 0) {
        return false;
    }
    __threadfence_system();
    const unsigned long long v = (unsigned long long)word << kStepBits | value;
    for (int r = g.lsa_base + threadIdx.x; r < g.lsa_base + g.lsa; r += blockDim.x) {
        st_release_sys(signal_at(peer_base(g, r), g, kind, g.rank), v);
    }
    if (g.nodes > 1 &&
        (kind == NCCLX_EP_HT_SIG_MAP_PUBLISHED || kind == NCCLX_EP_HT_SIG_MAP_READ)) {
        signal_remote_map(g, kind == NCCLX_EP_HT_SIG_MAP_PUBLISHED);
    }
    return true;
}

// Called by every thread of a step's last block, across domains: network signal `kind`
// (NCCLX_EP_HT_NET_*) to this rank's rail peer on every other node, with `value` put into its
// network word slot `word_slot` first (word_slot < 0: a 0-byte put carries the signal); one warp
// per node.  A halted group tells nothing, as signal_all.
__device__ __forceinline__ void signal_rails(const ncclx_ep_ht_group_desc_t &g, int kind,
                                             int word_slot = -1, unsigned long long value = 0)
{
    if (__shfl_sync(0xffffffffu, halted(g) ? 1 : 0, 0) != 0) {
        return;
    }
    const int lane = threadIdx.x % kWarpSize;
    for (int n = threadIdx.x / kWarpSize; n < g.nodes; n += kWarps) {
        if (n == my_node(g)) {
            continue;
        }
        const int id = net_signal_id(g, kind, g.rank);
        if (word_slot >= 0) {
            net_put_value_signal_warp(g.net, rail_peer(g, n), net_word_slot(g, word_slot, g.rank),
                                      value, id, 1ull, lane);
        } else {
            net_put_signal_warp(g.net, rail_peer(g, n), 0, 0, 0, id, 1ull, lane);
        }
    }
}

// The direct words of rank r (ep_ht.h: NCCLX_EP_HT_DIRECT_*), after its signals.
__device__ __forceinline__ unsigned long long *direct_words(const ncclx_ep_ht_group_desc_t &g,
                                                            int r)
{
    return signal_at(peer_base(g, r), g, NCCLX_EP_HT_SIGNALS, 0);
}

// Called by every block before the step signal that lets peers use them: this rank's caller
// buffers p0 and p1 in the two direct words after `tag_word`, their exact row sizes in
// `shape_word`, then the operation's tag (direct_tag) in `tag_word` (each block writes the
// same values: a peer may see any block's signal first).
__device__ __forceinline__ void publish_direct(const ncclx_ep_ht_group_desc_t &g, int tag_word,
                                               int shape_word, unsigned long long tag,
                                               unsigned long long shape, const void *p0,
                                               const void *p1)
{
    if (threadIdx.x == 0) {
        volatile unsigned long long *w = direct_words(g, g.rank);
        w[tag_word + 1] = reinterpret_cast<unsigned long long>(p0);
        w[tag_word + 2] = reinterpret_cast<unsigned long long>(p1);
        w[shape_word] = shape;
        __threadfence(); // all of it before the tag
        w[tag_word] = tag;
        __threadfence_system(); // and before this block's signal (other threads')
    }
    __syncthreads();
}

// Every thread of the block: out0[r] and out1[r] (out1 may be NULL) = rank r's two direct
// words after `tag_word` (r < g.ranks), once r has published for this operation: its tag
// reaches `tag`'s operation number (a step signal does not say so on a group's first
// operation, when every signal is still 0).  False when a wait failed (timeout or halt,
// reported) or a rank's tag is not `tag` or its rows not of `shape` (a mismatch, reported: it
// published for an operation of another shape or routing); nothing is then written or read.
// With skip_closed (a dispatch's push), a rank whose tag is closed (it gave up on this
// operation: a timeout or a mismatch, which it reports itself) is refused alone: its out0[r]
// and out1[r] are NULL, it is not claimed, and the block still serves every other rank, so
// that a late pusher's rows reach every healthy rank (reported here as a mismatch: this
// rank's rows for r were dropped).  *claimed, a __shared__ word of the caller, gets the ranks
// claimed (bit r) for block_release_direct, which the caller calls when this returned true
// (a word in shared memory: a register held across the caller's copy loop made the FP32
// reduce spill under its two-blocks-per-SM bound).
__device__ __forceinline__ bool block_load_direct(const ncclx_ep_ht_group_desc_t &g, int tag_word,
                                                  int shape_word, int claim_word,
                                                  unsigned long long tag, unsigned long long shape,
                                                  char **out0, char **out1, bool skip_closed,
                                                  unsigned long long *claimed)
{
    static_assert(kThreads >= NCCLX_EP_HT_DIRECT_MAX_RANKS, "one thread per rank");
    if (threadIdx.x == 0) {
        *claimed = 0;
    }
    const int r = threadIdx.x;
    int ok = 1;
    bool closed = false;
    volatile unsigned long long *w = r < g.ranks ? direct_words(g, r) : nullptr;
    if (w != nullptr) {
        unsigned long long start = 0, t;
        for (unsigned spins = 0;
             ((t = ld_acquire_sys(const_cast<unsigned long long *>(&w[tag_word]))) >> 24) <
             (tag >> 24);
             spins++) {
            if (!wait_goes_on(g, spins, start)) {
                ok = 0;
                break;
            }
        }
        closed = ok && skip_closed && t == NCCLX_EP_HT_DIRECT_CLOSED;
        if (closed) {
            report_error(g, kErrorMismatch);
        } else if (ok && (t != tag || w[shape_word] != shape)) {
            report_error(g, kErrorMismatch);
            ok = 0;
        }
        out0[r] = closed ? nullptr : reinterpret_cast<char *>(w[tag_word + 1]);
        if (out1 != nullptr) {
            out1[r] = closed ? nullptr : reinterpret_cast<char *>(w[tag_word + 2]);
        }
    }
    // Claims only once every rank has published (no waiting while one is held): the claim,
    // then the tag again.  A rank that closed its tag before the claim counted is refused
    // here (alone, with skip_closed); one that closes after it waits for the release.
    if (__syncthreads_and(ok) == 0) {
        return false;
    }
    if (w != nullptr && !closed) {
        unsigned long long *claims = const_cast<unsigned long long *>(&w[claim_word]);
        atomicAdd(claims, 1ull);
        __threadfence();
        const unsigned long long now = w[tag_word];
        if (now == tag) {
            atomicOr(claimed, 1ull << r);
        } else {
            atomicAdd(claims, ~0ull); // -1
            report_error(g, kErrorMismatch);
            if (skip_closed && now == NCCLX_EP_HT_DIRECT_CLOSED) {
                out0[r] = nullptr;
                if (out1 != nullptr) {
                    out1[r] = nullptr;
                }
            } else {
                ok = 0;
            }
        }
    }
    const bool all = __syncthreads_and(ok) != 0;
    if (!all && w != nullptr && ((*claimed >> r) & 1ull) != 0) {
        atomicAdd(const_cast<unsigned long long *>(&w[claim_word]), ~0ull);
    }
    return all;
}

// The block is done with the ranks' buffers that block_load_direct claimed for it (bit r of
// *claimed): each claim is released after the block's reads and writes of them (the barrier,
// then a fence).
__device__ __forceinline__ void block_release_direct(const ncclx_ep_ht_group_desc_t &g,
                                                     int claim_word,
                                                     const unsigned long long *claimed)
{
    __syncthreads();
    if (threadIdx.x < g.ranks && ((*claimed >> threadIdx.x) & 1ull) != 0) {
        __threadfence();
        atomicAdd(&direct_words(g, threadIdx.x)[claim_word], ~0ull); // -1
    }
}

// Thread 0 of a block of a rank whose operation ends without knowing every peer done with its
// published buffers (idempotent: any number of blocks may call it): closes the tag (no peer
// claims them any more) and waits until no claim is left.  A claimer holds claims only while
// it copies, which never waits, so this ends; past the timeout it gives up and says so.
__device__ __forceinline__ void close_direct(const ncclx_ep_ht_group_desc_t &g, int tag_word,
                                             int claim_word)
{
    if (threadIdx.x != 0) {
        return;
    }
    volatile unsigned long long *w = direct_words(g, g.rank);
    w[tag_word] = NCCLX_EP_HT_DIRECT_CLOSED;
    __threadfence(); // the store before the claims' load (both sides fence: no claim is missed)
    const unsigned long long start = globaltimer();
    while (w[claim_word] != 0) {
        if (globaltimer() - start > g.timeout_ns) {
            report_error(g, kErrorTimeout);
            break;
        }
    }
    __threadfence(); // the claimers' accesses before this rank's return
}

// Bit e of a routing-map row.
__device__ __forceinline__ bool row_has(const uint32_t *row, int e)
{
    return (row[e >> 5] >> (e & 31)) & 1u;
}

// Whether a routing-map row has any expert in [lo, hi).
__device__ __forceinline__ bool row_has_range(const uint32_t *row, int lo, int hi)
{
    for (int w = lo >> 5; w <= (hi - 1) >> 5; w++) {
        uint32_t bits = row[w];
        const int first = w << 5;
        if (lo > first) {
            bits &= ~0u << (lo - first);
        }
        if (hi < first + 32) {
            bits &= (1u << (hi - first)) - 1u;
        }
        if (bits != 0) {
            return true;
        }
    }
    return false;
}

// The routing map of rank r (a remote rank's: the copy it put into this rank's arena).
__device__ __forceinline__ const uint32_t *map_of(const ncclx_ep_ht_group_desc_t &g, int r)
{
    if (is_remote(g, r)) {
        return reinterpret_cast<const uint32_t *>(peer_base(g, g.rank) + g.net_maps) +
               (size_t)r * g.max_tokens * g.map_words;
    }
    return reinterpret_cast<const uint32_t *>(peer_base(g, r) + g.map);
}

// The operation word a data kernel sends and expects: the call's word (host) mixed with the
// routing step of the handle, so that ranks whose handles come from different routing steps
// (snapshots imported from different updates) read none of each other's rows.
__device__ __forceinline__ unsigned step_word(const ncclx_ep_ht_handle_desc_t &h, unsigned op)
{
    // The step number alone repeats across contexts (every context counts from 1); the hash of
    // the routing's counts (the same on every rank of one routing) tells routings apart too.
    const unsigned long long step =
        load_volatile(&h.header->step) ^ load_volatile(&h.header->counts);
    return (op ^ (unsigned)((step * 0x9e3779b97f4a7c15ull) >> 40)) & 0xffffffu;
}

// The tag of the direct words of operation number n (of its kind) with operation word op:
// a peer uses the buffers only when both match its own, so that rows of another shape or
// routing are never written into, or read from, a buffer sized for this one.
__device__ __forceinline__ unsigned long long direct_tag(const ncclx_ep_ht_handle_desc_t &h,
                                                         unsigned long long n, unsigned op)
{
    return (n + 1) << 24 | step_word(h, op);
}

// One 64-bit word's share of a snapshot checksum: position-dependent and mixed, summed modulo
// 2^64 (so blocks can add their shares in any order).
__device__ __forceinline__ unsigned long long checksum_share(size_t index, unsigned long long word)
{
    unsigned long long x = word ^ (index * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

// Adds the checksum of the handle memory after its header into *sum (every block of the grid
// takes a share of the words; sum starts at 0).
__device__ __forceinline__ void add_checksum(const ncclx_ep_ht_handle_desc_t &h,
                                             unsigned long long *sum)
{
    const unsigned long long *words = reinterpret_cast<const unsigned long long *>(h.header);
    const size_t first = sizeof(ncclx_ep_ht_handle_header_t) / 8, n = h.bytes / 8;
    unsigned long long mine = 0;
    for (size_t i = first + blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        mine += checksum_share(i, words[i]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        mine += __shfl_xor_sync(0xffffffffu, mine, o);
    }
    if (threadIdx.x % kWarpSize == 0) {
        atomicAdd(sum, mine);
    }
}

// Rows padded to the alignment: an expert with no rows takes none.
__device__ __forceinline__ long long padded(long long count, int alignment)
{
    return alignment <= 1 ? count : (count + alignment - 1) / alignment * alignment;
}

// ep_ht_rows.cu: kernels 3 (scan) and 4 (seal) of a routing, which ncclx_ep_ht_launch_route
// (ep_ht_route.cu) launches after the map and its counts.  Returns the CUDA status of the
// launches, as the launchers do.
cudaError_t launch_rows(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                        int idx_int64, cudaStream_t stream);

// ep_ht_net.cu, across load/store domains only: the relay of dispatch (after the push) and the
// node partials of combine (after the stage).
cudaError_t launch_relay(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                         const ncclx_ep_ht_dispatch_desc_t *a, cudaStream_t stream);
cudaError_t launch_partials(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                            const ncclx_ep_ht_combine_desc_t *a, cudaStream_t stream);

} // namespace ht
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_HT_COMMON_CUH_ */
