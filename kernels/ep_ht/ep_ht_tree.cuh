/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The summation order of every HT combine but MXFP8's (docs/ep-ht.md, "Summation order"): a
 * binary tree over ranks.  A token's rows on one rank are a leaf, summed in FP32 from 0.0f in
 * ascending expert; leaves meet in the tree over positions [0, P), P the power of two >= R, an
 * absent leaf or subtree adding nothing; the root is rounded once.  Each aligned power-of-two
 * block of ranks is a subtree, so a node's partial summed on its relay (ep_ht_net.cu) and sent
 * as FP32 gives the same bits as the same rows summed here: the result does not depend on how
 * the team is cut into load/store domains.
 *
 * A warp sums one token: its sources (rows in the token's dtype, or FP32 node partials) go to a
 * TreeWarp in ascending position, lane 0 turns the positions into a merge schedule (tree_plan),
 * then each lane runs the schedule over its 4-element columns with a stack of partial sums kept
 * in registers (depth: the tree's levels or the token's sources, whichever is fewer: a template
 * argument chosen at launch, tree_depth).
 */
#ifndef NCCLX_KERNELS_EP_HT_TREE_CUH_
#define NCCLX_KERNELS_EP_HT_TREE_CUH_

#include <type_traits>

#include "ep_ht_common.cuh"

namespace ncclx
{
namespace ht
{

constexpr int kTreeSources = 32; // a token's sources: its top-k rows at most (K <= 32)

// One warp's token: sources in ascending position.  Consecutive row sources of one position
// are one leaf; a partial is a leaf of its own (a whole node's subtree).
struct TreeWarp {
    const char *src[kTreeSources];
    int pos[kTreeSources];
    unsigned char partial[kTreeSources];
    unsigned char pops[kTreeSources]; // merges before the leaf that starts here is pushed
    int ends;                         // merges after the last leaf
    unsigned char leaf_first[9];      // tree_leaves: leaf j's sources are [first[j], first[j + 1])
};

// A team of at most this many ranks in one load/store domain sums on a static tree
// (tree_leaves, tree_sum_leaves): no schedule, no stack selection, all first loads in flight.
constexpr int kTreeStaticLeaves = 8;

__device__ __forceinline__ bool tree_same_leaf(const TreeWarp &w, int i)
{
    return i > 0 && w.pos[i] == w.pos[i - 1] && !w.partial[i] && !w.partial[i - 1];
}

// Lane 0: the merge schedule of n sources.  Two consecutive leaves at positions a < b meet at
// level msb(a ^ b); a pending sum on the stack is merged with the one above it before a leaf
// whose level is higher, which evaluates the tree left to right.
__device__ __forceinline__ void tree_plan(TreeWarp &w, int n)
{
    int levels[kTreeSources];
    int depth = 0, prev = -1;
    for (int i = 0; i < n; i++) {
        if (tree_same_leaf(w, i)) {
            w.pops[i] = 0;
            continue;
        }
        int pops = 0;
        if (prev >= 0) {
            const int level = 31 - __clz(prev ^ w.pos[i]);
            while (depth > 0 && levels[depth - 1] < level) {
                depth--;
                pops++;
            }
            levels[depth++] = level;
        }
        prev = w.pos[i];
        w.pops[i] = (unsigned char)pops;
    }
    w.ends = depth;
}

// Elements a lane sums per step.  Four: the kernels run two blocks of 512 threads per SM, so
// 64 registers a thread, which hold the stack (depth x 4), a batch of loads and the addresses.
constexpr int kTreeCols = 4;

// 4 elements of a row in the token's dtype, as loaded: 8 bytes of a 16-bit dtype, 16 of FP32.
template <int kDtype> struct TreeRow {
    using Raw = typename std::conditional<kDtype == kFp32, uint4, uint2>::type;
};

// Row sources whose loads a lane issues before it adds any of them, so that they are in flight
// together (the tree's control flow would otherwise leave one load in flight at a time); fewer
// where the loads or the stack take more registers.
template <int kDtype, int kDepth> struct TreeBatch {
    static constexpr int N = kDtype == kFp32 || kDepth > 4 ? 4 : 8;
};

// A stack of 4-wide partial sums in registers: every access is unrolled over the depth (an
// indexed register array would live in local memory).
template <int kDepth> struct TreeStack {
    float v[kDepth][kTreeCols];
    int top = 0;

    __device__ __forceinline__ void push(const float (&x)[kTreeCols])
    {
#pragma unroll
        for (int d = 0; d < kDepth; d++) {
            if (d == top) {
#pragma unroll
                for (int c = 0; c < kTreeCols; c++) {
                    v[d][c] = x[c];
                }
            }
        }
        top++;
    }

    // The two sums on top become their sum (left + right).
    __device__ __forceinline__ void merge()
    {
        float right[kTreeCols] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int d = 1; d < kDepth; d++) {
            if (d == top - 1) {
#pragma unroll
                for (int c = 0; c < kTreeCols; c++) {
                    right[c] = v[d][c];
                }
            }
        }
#pragma unroll
        for (int d = 0; d + 1 < kDepth; d++) {
            if (d == top - 2) {
#pragma unroll
                for (int c = 0; c < kTreeCols; c++) {
                    v[d][c] = v[d][c] + right[c];
                }
            }
        }
        top--;
    }
};

// 4 elements of a row in the token's dtype, added to acc in order.
template <int kDtype>
__device__ __forceinline__ void tree_add_row(float (&acc)[kTreeCols],
                                             const typename TreeRow<kDtype>::Raw &u)
{
    if constexpr (kDtype == kFp32) {
        acc[0] += __uint_as_float(u.x);
        acc[1] += __uint_as_float(u.y);
        acc[2] += __uint_as_float(u.z);
        acc[3] += __uint_as_float(u.w);
    } else {
        float2 lo, hi;
        if constexpr (kDtype == kBf16) {
            lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.x));
            hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&u.y));
        } else {
            lo = __half22float2(*reinterpret_cast<const __half2 *>(&u.x));
            hi = __half22float2(*reinterpret_cast<const __half2 *>(&u.y));
        }
        acc[0] += lo.x;
        acc[1] += lo.y;
        acc[2] += hi.x;
        acc[3] += hi.y;
    }
}

// Elements [elem, elem + 4) of the token's sum over the n sources of w (tree_plan done): false
// when there is no source (the caller writes zeros).  Row sources are loaded a batch at a
// time; an FP32 partial (a whole subtree, at most one per other node) where it is added.
template <int kDtype, int kDepth>
__device__ __forceinline__ bool tree_sum(const TreeWarp &w, int n, size_t elem,
                                         float (&out)[kTreeCols])
{
    using Raw = typename TreeRow<kDtype>::Raw;
    constexpr int kBatch = TreeBatch<kDtype, kDepth>::N;
    constexpr size_t kElem = kDtype == kFp32 ? 4 : 2;
    TreeStack<kDepth> stack;
    float acc[kTreeCols] = {0.0f, 0.0f, 0.0f, 0.0f};
    bool open = false; // acc holds a leaf not pushed yet
    for (int base = 0; base < n; base += kBatch) {
        Raw raw[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; j++) {
            if (base + j < n && !w.partial[base + j]) {
                raw[j] = *reinterpret_cast<const Raw *>(w.src[base + j] + elem * kElem);
            }
        }
#pragma unroll
        for (int j = 0; j < kBatch; j++) {
            const int i = base + j;
            if (i >= n) {
                break;
            }
            if (!tree_same_leaf(w, i)) {
                if (open) {
                    stack.push(acc);
                }
                for (int m = 0; m < w.pops[i]; m++) {
                    stack.merge();
                }
                acc[0] = acc[1] = acc[2] = acc[3] = 0.0f;
                open = true;
            }
            if (w.partial[i]) {
                // A whole subtree, already summed: the leaf's value as it is.
                const float4 f = *reinterpret_cast<const float4 *>(w.src[i] + elem * 4);
                acc[0] = f.x;
                acc[1] = f.y;
                acc[2] = f.z;
                acc[3] = f.w;
            } else {
                tree_add_row<kDtype>(acc, raw[j]);
            }
        }
    }
    if (!open) {
        return false;
    }
    stack.push(acc);
    for (int m = 0; m < w.ends; m++) {
        stack.merge();
    }
#pragma unroll
    for (int c = 0; c < kTreeCols; c++) {
        out[c] = stack.v[0][c];
    }
    return true;
}

// Lane 0, a team of R <= 8 ranks in one domain: where each rank's (leaf's) sources start.
__device__ __forceinline__ void tree_leaves(TreeWarp &w, int n)
{
    int i = 0;
    for (int j = 0; j < kTreeStaticLeaves; j++) {
        w.leaf_first[j] = (unsigned char)i;
        while (i < n && w.pos[i] == j) {
            i++;
        }
    }
    w.leaf_first[kTreeStaticLeaves] = (unsigned char)n;
}

// The same sum as tree_sum for R <= 8 ranks in one domain, on the full tree over 8 leaves: an
// absent leaf is 0.0f there, which adds nothing (no leaf or subtree sum is -0.0f: each starts
// from +0.0f), so the bits equal the sparse tree's.  Each leaf's first source is loaded before
// any is added; a leaf's further sources (expert-major: several experts of one rank) after.
template <int kDtype>
__device__ __forceinline__ void tree_sum_leaves(const TreeWarp &w, size_t elem,
                                                float (&out)[kTreeCols])
{
    using Raw = typename TreeRow<kDtype>::Raw;
    constexpr size_t kElem = kDtype == kFp32 ? 4 : 2;
    constexpr int kLevels = 4; // log2(8) + 1
    // FP32 rows: 16 bytes a load, too many registers for 8 in flight beside the tree; loaded
    // where added.
    constexpr bool kPreload = kDtype != kFp32;
    Raw raw[kTreeStaticLeaves];
#pragma unroll
    for (int j = 0; j < kTreeStaticLeaves; j++) {
        const int f = w.leaf_first[j];
        if (kPreload && f < w.leaf_first[j + 1]) {
            raw[j] = *reinterpret_cast<const Raw *>(w.src[f] + elem * kElem);
        }
    }
    float st[kLevels][kTreeCols];
#pragma unroll
    for (int j = 0; j < kTreeStaticLeaves; j++) {
        float val[kTreeCols] = {0.0f, 0.0f, 0.0f, 0.0f};
        const int f = w.leaf_first[j], end = w.leaf_first[j + 1];
        if (f < end) {
            if (kPreload) {
                tree_add_row<kDtype>(val, raw[j]);
            }
            for (int s = kPreload ? f + 1 : f; s < end; s++) {
                const Raw x = *reinterpret_cast<const Raw *>(w.src[s] + elem * kElem);
                tree_add_row<kDtype>(val, x);
            }
        }
        // Leaf j closes the subtrees whose last leaf it is: one per low set bit of j.
        int level = 0;
#pragma unroll
        for (int b = 0; b < kLevels - 1; b++) {
            if (level == b && ((j >> b) & 1)) {
#pragma unroll
                for (int c = 0; c < kTreeCols; c++) {
                    val[c] = st[b][c] + val[c];
                }
                level = b + 1;
            }
        }
#pragma unroll
        for (int b = 0; b < kLevels; b++) {
            if (b == level) {
#pragma unroll
                for (int c = 0; c < kTreeCols; c++) {
                    st[b][c] = val[c];
                }
            }
        }
    }
#pragma unroll
    for (int c = 0; c < kTreeCols; c++) {
        out[c] = st[kLevels - 1][c];
    }
}

// The stack depth a tree sum of R ranks with at most K sources per token needs: the levels of
// the tree (log2(P) + 1, P the power of two >= R), and never more than the sources (each entry
// of the stack holds at least one).  The kernels are built for 4, 8 and 17 (R <= 65536).
__host__ __device__ __forceinline__ int tree_depth(int ranks, int max_sources)
{
    int levels = 1;
    while ((1 << (levels - 1)) < ranks) {
        levels++;
    }
    return levels < max_sources ? levels : max_sources;
}

} // namespace ht
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_HT_TREE_CUH_ */
