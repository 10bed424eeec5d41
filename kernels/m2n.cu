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
 *        cut into rounds of `chunk` bytes.  The source's blocks pack round j into slice
 *        j % NCCLX_M2N_DEPTH of its ring at the destination and the last of them raises the
 *        destination's filled counter; the destination's blocks wait for it, unpack the slice
 *        into the tile and the last of them raises the source's freed counter, which the
 *        source waits for before it reuses the slice.  Counters only grow (since init), so a
 *        graph replay or the next call goes on from where the last ended.
 * Blocks take their pairs in ascending (source, destination) order, and every rank's grid fits
 * its share of the GPU, so the lowest unfinished pair always has both of its ends running.
 */
#include "ep_ll_common.cuh"
#include "m2n.h"

namespace ncclx
{
namespace m2n
{
namespace
{

constexpr int kThreads = NCCLX_M2N_THREADS;
constexpr int kDepth = NCCLX_M2N_DEPTH;
constexpr unsigned kTimeout = NCCLX_M2N_ERROR_TIMEOUT;
constexpr unsigned kRefused = NCCLX_M2N_ERROR_REFUSED;
constexpr unsigned kMismatch = NCCLX_M2N_ERROR_MISMATCH;
constexpr unsigned kRefuse = NCCLX_M2N_VOTE_REFUSE;
// Pieces of at most this many bytes are spread over warps; longer ones over the whole block.
constexpr unsigned long long kWarpPiece = 8192;

typedef unsigned long long u64;

__device__ __forceinline__ char *base_of(const ncclx_m2n_launch_t &l, int rank)
{
    return static_cast<char *>(l.peers[rank]);
}

__device__ __forceinline__ u64 *votes(char *base, const ncclx_m2n_launch_t &l, int parity)
{
    return reinterpret_cast<u64 *>(base + l.signals) + (size_t)parity * l.ranks;
}

__device__ __forceinline__ u64 *filled(char *base, const ncclx_m2n_launch_t &l)
{
    return reinterpret_cast<u64 *>(base + l.signals) + (size_t)2 * l.ranks;
}

__device__ __forceinline__ u64 *freed(char *base, const ncclx_m2n_launch_t &l)
{
    return reinterpret_cast<u64 *>(base + l.signals) + (size_t)3 * l.ranks;
}

// After a wait timed out the ranks' counters no longer agree: nothing is exchanged again.
__device__ __forceinline__ bool halted(const ncclx_m2n_launch_t &l)
{
    return (load_volatile(&l.state->error) & kTimeout) != 0;
}

// Spins until pred(value at p) holds; false (the timeout reported) past the timeout or once
// M2N is halted.
template <typename Pred>
__device__ __forceinline__ bool wait_for(const ncclx_m2n_launch_t &l, const u64 *p, Pred pred,
                                         u64 *seen)
{
    u64 start = 0;
    for (unsigned spins = 0;; spins++) {
        const u64 v = ld_acquire_sys(p);
        if (pred(v)) {
            *seen = v;
            return true;
        }
        if ((spins & 1023) == 0) {
            if (halted(l)) {
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

// `width` threads (lane in [0, width)) copy n bytes; 16-byte accesses when both ends agree
// modulo 16, 4-byte ones when they agree modulo 4, bytes otherwise.
template <typename T>
__device__ __forceinline__ void copy_units(char *dst, const char *src, u64 n, unsigned lane,
                                           unsigned width)
{
    const u64 misalign = (sizeof(T) - ((uintptr_t)dst % sizeof(T))) % sizeof(T);
    const u64 head = misalign < n ? misalign : n;
    for (u64 i = lane; i < head; i += width) {
        dst[i] = src[i];
    }
    const u64 units = (n - head) / sizeof(T);
    const T *s = reinterpret_cast<const T *>(src + head);
    T *d = reinterpret_cast<T *>(dst + head);
    u64 i = lane;
    for (; i + 3 * (u64)width < units; i += 4 * (u64)width) {
        const T a = s[i], b = s[i + width], c = s[i + 2 * (u64)width], e = s[i + 3 * (u64)width];
        d[i] = a;
        d[i + width] = b;
        d[i + 2 * (u64)width] = c;
        d[i + 3 * (u64)width] = e;
    }
    for (; i < units; i += width) {
        d[i] = s[i];
    }
    for (u64 k = head + units * sizeof(T) + lane; k < n; k += width) {
        dst[k] = src[k];
    }
}

__device__ __forceinline__ void span_copy(char *dst, const char *src, u64 n, unsigned lane,
                                          unsigned width)
{
    const uintptr_t x = (uintptr_t)dst ^ (uintptr_t)src;
    if (x % 16 == 0) {
        copy_units<uint4>(dst, src, n, lane, width);
    } else if (x % 4 == 0) {
        copy_units<unsigned>(dst, src, n, lane, width);
    } else {
        copy_units<char>(dst, src, n, lane, width);
    }
}

// Moves stream bytes [s0, s1) of pair p between its boxes and `slice` (which holds stream byte
// s_base at its start): packs when the pair sends, unpacks when it receives.  A box is walked
// piece by piece (a piece: `run` bytes contiguous in the tile); short pieces go to warps in
// turn, long ones to the whole block.
__device__ void move_span(const ncclx_m2n_launch_t &l, const ncclx_m2n_pair_desc_t &pr, u64 s0,
                          u64 s1, char *slice, u64 s_base)
{
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int bi = pr.first_box; bi < pr.first_box + pr.num_boxes; bi++) {
        const ncclx_m2n_box_desc_t &b = l.boxes[bi];
        const u64 lo = s0 > b.begin ? s0 : b.begin;
        const u64 hi = s1 < b.begin + b.bytes ? s1 : b.begin + b.bytes;
        if (lo >= hi) {
            continue;
        }
        // Box positions [p0, p1), pieces k0 .. k1 (k1 inclusive, the last may be partial).
        const u64 p0 = lo - b.begin, p1 = hi - b.begin;
        const u64 k0 = p0 / b.run, k1 = (p1 - 1) / b.run;
        const bool by_warp = b.run <= kWarpPiece;
        for (u64 k = k0 + (by_warp ? warp : 0); k <= k1; k += by_warp ? warps : 1) {
            const u64 from = k == k0 ? p0 : k * b.run;
            const u64 to = k == k1 ? p1 : (k + 1) * b.run;
            const u64 a1 = k % b.pieces1, a0 = k / b.pieces1;
            char *t = b.tile + a0 * b.stride0 + a1 * b.stride1 + (from - k * b.run);
            char *s = slice + (b.begin + from - s_base);
            if (pr.send) {
                span_copy(s, t, to - from, by_warp ? lane : threadIdx.x, by_warp ? 32 : blockDim.x);
            } else {
                span_copy(t, s, to - from, by_warp ? lane : threadIdx.x, by_warp ? 32 : blockDim.x);
            }
        }
    }
}

// This block's part (`part` of pr.blocks) of every round of pair p; false when a wait failed.
__device__ bool move_pair(const ncclx_m2n_launch_t &l, int p, int part)
{
    __shared__ u64 base;
    __shared__ int ok;
    const ncclx_m2n_pair_desc_t &pr = l.pairs[p];
    const int peer = pr.peer;
    char *self = base_of(l, l.rank);
    if (threadIdx.x == 0) {
        base = load_volatile(pr.send ? &l.sent[peer] : &l.received[peer]);
    }
    __syncthreads();
    const u64 rounds = (pr.bytes + l.chunk - 1) / l.chunk;
    for (u64 j = 0; j < rounds; j++) {
        const u64 q = j % kDepth;
        char *slice = pr.send ? base_of(l, peer) + l.staging + ((u64)l.rank * kDepth + q) * l.chunk
                              : self + l.staging + ((u64)peer * kDepth + q) * l.chunk;
        if (threadIdx.x == 0) {
            u64 seen;
            if (pr.send) {
                // Slice q held round j - kDepth: the destination must have read it out.
                const u64 need = base + j + 1 - kDepth;
                ok = j < (u64)kDepth ||
                     wait_for(
                         l, freed(self, l) + peer, [need](u64 v) { return v >= need; }, &seen);
            } else {
                const u64 need = base + j + 1;
                ok = wait_for(
                    l, filled(self, l) + peer, [need](u64 v) { return v >= need; }, &seen);
            }
        }
        __syncthreads();
        if (!ok) {
            return false;
        }
        const u64 lo = j * l.chunk;
        const u64 len = pr.bytes - lo < l.chunk ? pr.bytes - lo : l.chunk;
        const u64 units = (len + 15) / 16;
        const u64 b0 = units * part / pr.blocks * 16;
        const u64 b1e = units * (part + 1) / pr.blocks * 16;
        const u64 b1 = b1e < len ? b1e : len;
        if (b0 < b1) {
            move_span(l, pr, lo + b0, lo + b1, slice, lo);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            // The counter goes round 0 .. blocks - 1 once per round: the last block is the one
            // that finds blocks - 1, and leaves it at 0 for the next round.
            const unsigned old = atomicInc(&l.state->round_arrive[p][q], (unsigned)pr.blocks - 1);
            if (old == (unsigned)pr.blocks - 1) {
                __threadfence_system();
                u64 *counter = pr.send ? filled(base_of(l, peer), l) : freed(base_of(l, peer), l);
                st_release_sys(counter + l.rank, base + j + 1);
                if (j + 1 == rounds) {
                    // Every block of the pair read base before it arrived here.
                    *reinterpret_cast<volatile u64 *>(pr.send ? &l.sent[peer] : &l.received[peer]) =
                        base + rounds;
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
        for (int r = threadIdx.x; r < l.ranks; r += blockDim.x) {
            st_release_sys(votes(base_of(l, r), l, parity) + l.rank, ((u64)tag << 32) | l.word);
        }
    }
    for (int r = threadIdx.x; r < l.ranks; r += blockDim.x) {
        u64 v = 0;
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
        return;
    }
    if (bits != 0 && threadIdx.x == 0 && blockIdx.x == 0) {
        report_error(l, bits);
    }
    if (bits == 0 && !(l.word & kRefuse)) {
        for (int p = 0; p < l.num_pairs; p++) {
            const int part = (int)blockIdx.x - l.pairs[p].first_block;
            if (part >= 0 && part < l.pairs[p].blocks && !move_pair(l, p, part)) {
                return;
            }
        }
    }
    if (last_block(&l.state->arrive) && threadIdx.x == 0) {
        *reinterpret_cast<volatile u64 *>(&l.state->seq) = seq + 1;
    }
}

struct ClearView {
    ncclx_m2n_state_t *state;
    unsigned *status;
};

__global__ void clear_kernel(ncclx_m2n_state_t *state, unsigned *status)
{
    const ClearView v = {state, status};
    const unsigned now =
        atomicAnd(&state->error, ~(kRefused | kMismatch)) & ~(kRefused | kMismatch);
    publish_status(v, now);
}

} // namespace
} // namespace m2n
} // namespace ncclx

extern "C" cudaError_t ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream)
{
    ncclx::m2n::m2n_kernel<<<l->blocks, ncclx::m2n::kThreads, 0, stream>>>(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_m2n_launch_clear(ncclx_m2n_state_t *state, unsigned int *status,
                                              cudaStream_t stream)
{
    ncclx::m2n::clear_kernel<<<1, 1, 0, stream>>>(state, status);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_m2n_kernels_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::m2n::m2n_kernel),
                                   reinterpret_cast<const void *>(ncclx::m2n::clear_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
