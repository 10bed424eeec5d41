/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * How the M2N kernel (m2n.cu) moves bytes: the copy loops (16-, 4- or 1-byte units, with the
 * cache policy of packing, unpacking or the direct path) and the walk over the pieces of a
 * pair's boxes that a span of its stream touches, which packs a span into a ring slot, unpacks
 * it from one, or copies it straight from the source's tiles (the direct path).  Apart from the
 * protocol (votes, rounds, counters) so that each file has one purpose; included by m2n.cu only.
 */
#ifndef NCCLX_KERNELS_M2N_COPY_CUH_
#define NCCLX_KERNELS_M2N_COPY_CUH_

#include <stdint.h>

#include "dev_sync.cuh"
#include "m2n.h"

namespace ncclx
{
namespace m2n
{

// Pieces of at most this many bytes are spread over warps; longer ones over the whole block.
constexpr unsigned long long kWarpPiece = 8192;

typedef unsigned long long u64;

// Loads and stores by copy.  Packing reads the tile once (streaming: it should not push the
// staging out of L2) and writes the slot; unpacking reads the slot from L2 (never L1: the slot
// held another round before) and writes the tile streaming; the direct path streams both.
enum Copy { kPack, kUnpack, kDirect };

template <int kCopy, typename T> __device__ __forceinline__ T load_unit(const T *p)
{
    return kCopy == kUnpack ? __ldcg(p) : __ldcs(p);
}

template <int kCopy, typename T> __device__ __forceinline__ void store_unit(T *p, T v)
{
    if (kCopy == kPack) {
        *p = v;
    } else {
        __stcs(p, v);
    }
}

// `width` threads (lane in [0, width)) copy n bytes; 16-byte accesses when both ends agree
// modulo 16, 4-byte ones when they agree modulo 4, bytes otherwise.  Four loads per thread are
// in flight before their stores (more spill at the 64 registers of two blocks per SM).  Not
// inlined: on its own it needs no spill, inside move_span it would share the registers.
template <int kCopy, typename T>
__device__ __noinline__ void copy_units(char *dst, const char *src, u64 n, unsigned lane,
                                        unsigned width)
{
    const u64 misalign = (sizeof(T) - ((uintptr_t)dst % sizeof(T))) % sizeof(T);
    const u64 head = misalign < n ? misalign : n;
    for (u64 i = lane; i < head; i += width) {
        store_unit<kCopy>(dst + i, load_unit<kCopy>(src + i));
    }
    const u64 units = (n - head) / sizeof(T);
    const T *s = reinterpret_cast<const T *>(src + head);
    T *d = reinterpret_cast<T *>(dst + head);
    const u64 w = width;
    u64 i = lane;
    for (; i + 3 * w < units; i += 4 * w) {
        T v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            v[u] = load_unit<kCopy>(s + i + u * w);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            store_unit<kCopy>(d + i + u * w, v[u]);
        }
    }
    for (; i < units; i += w) {
        store_unit<kCopy>(d + i, load_unit<kCopy>(s + i));
    }
    for (u64 k = head + units * sizeof(T) + lane; k < n; k += width) {
        store_unit<kCopy>(dst + k, load_unit<kCopy>(src + k));
    }
}

template <int kCopy>
__device__ __forceinline__ void span_copy(char *dst, const char *src, u64 n, unsigned lane,
                                          unsigned width)
{
    const uintptr_t x = (uintptr_t)dst ^ (uintptr_t)src;
    if (x % 16 == 0) {
        copy_units<kCopy, uint4>(dst, src, n, lane, width);
    } else if (x % 4 == 0) {
        copy_units<kCopy, unsigned>(dst, src, n, lane, width);
    } else {
        copy_units<kCopy, char>(dst, src, n, lane, width);
    }
}

// The first box of pair pr that ends after stream byte s0 (boxes lie in ascending stream order).
__device__ __forceinline__ int first_box_after(const ncclx_m2n_launch_t &l,
                                               const ncclx_m2n_pair_desc_t &pr, u64 s0)
{
    int lo = pr.first_box, hi = pr.first_box + pr.num_boxes;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (l.boxes[mid].begin + l.boxes[mid].bytes <= s0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

// Calls f(bi, a0, a1, from, to, lane, width) for every piece of pair pr's boxes that stream
// bytes [s0, s1) touch: box bi's positions [from, to) of its piece (a0, a1) (a piece: `run`
// bytes contiguous in the tile), which `width` threads (this one is `lane`) copy.  Short
// pieces go to warps in turn, long ones to the whole block.
template <typename F>
__device__ __forceinline__ void for_each_piece(const ncclx_m2n_launch_t &l,
                                               const ncclx_m2n_pair_desc_t &pr, u64 s0, u64 s1, F f)
{
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int bi = first_box_after(l, pr, s0);
         bi < pr.first_box + pr.num_boxes && l.boxes[bi].begin < s1; bi++) {
        const ncclx_m2n_box_desc_t &b = l.boxes[bi];
        const u64 lo = s0 > b.begin ? s0 : b.begin;
        const u64 hi = s1 < b.begin + b.bytes ? s1 : b.begin + b.bytes;
        if (lo >= hi) {
            continue; // a gap before a 16-byte-aligned box
        }
        // Box positions [p0, p1), pieces k0 .. k1 (k1 inclusive, the last may be partial).
        const u64 p0 = lo - b.begin, p1 = hi - b.begin;
        const u64 k0 = p0 / b.run, k1 = (p1 - 1) / b.run;
        const bool by_warp = b.run <= kWarpPiece;
        for (u64 k = k0 + (by_warp ? warp : 0); k <= k1; k += by_warp ? warps : 1) {
            f(bi, k / b.pieces1, k % b.pieces1, k == k0 ? p0 : k * b.run,
              k == k1 ? p1 : (k + 1) * b.run, by_warp ? lane : threadIdx.x,
              by_warp ? 32u : blockDim.x);
        }
    }
}

// Moves stream bytes [s0, s1) of pair pr between its boxes and `slot` (which holds stream byte
// s0 at its start): packs when the pair sends, unpacks when it receives.
__device__ void move_span(const ncclx_m2n_launch_t &l, const ncclx_m2n_pair_desc_t &pr, u64 s0,
                          u64 s1, char *slot)
{
    for_each_piece(l, pr, s0, s1,
                   [&](int bi, u64 a0, u64 a1, u64 from, u64 to, unsigned lane, unsigned width) {
                       const ncclx_m2n_box_desc_t &b = l.boxes[bi];
                       char *t = b.tile + a0 * b.stride0 + a1 * b.stride1 + from % b.run;
                       char *s = slot + (b.begin + from - s0);
                       if (pr.send) {
                           span_copy<kPack>(s, t, to - from, lane, width);
                       } else {
                           span_copy<kUnpack>(t, s, to - from, lane, width);
                       }
                   });
}

// The direct path's move_span: stream bytes [s0, s1) of receiving pair pr straight from the
// source's tiles (`tiles`: the source's src_tiles table) into this rank's.
__device__ void move_span_direct(const ncclx_m2n_launch_t &l, const ncclx_m2n_pair_desc_t &pr,
                                 u64 s0, u64 s1, const void *const *tiles)
{
    int entry = -1;
    const char *src = nullptr;
    for_each_piece(l, pr, s0, s1,
                   [&](int bi, u64 a0, u64 a1, u64 from, u64 to, unsigned lane, unsigned width) {
                       const ncclx_m2n_box_desc_t &b = l.boxes[bi];
                       if (b.entry != entry) {
                           // Written before the source's vote, which every block acquired;
                           // volatile: the table held another launch's tiles before, which L1
                           // may still have.
                           entry = b.entry;
                           src = static_cast<const char *>(load_volatile(&tiles[entry]));
                       }
                       char *t = b.tile + a0 * b.stride0 + a1 * b.stride1 + from % b.run;
                       const char *f = src + b.peer_offset + a0 * b.peer_stride0 +
                                       a1 * b.peer_stride1 + from % b.run;
                       span_copy<kDirect>(t, f, to - from, lane, width);
                   });
}

} // namespace m2n
} // namespace ncclx

#endif /* NCCLX_KERNELS_M2N_COPY_CUH_ */
