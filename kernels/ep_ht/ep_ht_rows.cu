/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT routing, its rows and offsets (docs/ep-ht.md, "Routing"): the kernels that
 * ncclx_ep_ht_launch_route (ep_ht_route.cu) launches after the routing map and its counts.
 *  3. scan: prefix counts over this rank's own rows give each token's final receive row at every
 *     destination (FLAT) or for every expert (EXPERT_MAJOR); the receiver-side counts, zone
 *     offsets and totals go into the handle.  Its last block tells every rank that this rank
 *     has finished reading their maps.
 *  4. seal: the header and checksum of the finished handle.
 * And what reads a routed handle: the import check of a snapshot (ncclxEpHandleImport) and the
 * layout copy (ncclxEpHandleGetLayout).
 */
#include "ep_ht_common.cuh"

namespace ncclx
{
namespace ht
{
namespace
{

// Built as ep_ht_route.cu's kernels (see there): two blocks per SM, at most 64 registers a
// thread, 64-bit grid-stride indices.

__device__ __forceinline__ int warp_sum(int v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

__device__ __forceinline__ long long warp_sum64(long long v)
{
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

// Tokens of every source listing expert e (a warp computes it; every lane gets it).  64 bits:
// R x T may pass 2^31 when the plan sets S.
__device__ __forceinline__ long long expert_total(const ncclx_ep_ht_group_desc_t &g, int e,
                                                  int lane)
{
    long long v = 0;
    for (int s = lane; s < g.ranks; s += kWarpSize) {
        v += g.expert_hits[(size_t)s * g.num_experts + e];
    }
    return warp_sum64(v);
}

// Unclamped start of expert e's zone on its rank: padded sizes of the rank's earlier experts.
__device__ __forceinline__ long long zone_start(const ncclx_ep_ht_group_desc_t &g, int e, int lane)
{
    const int first = e / g.local_experts * g.local_experts;
    long long base = 0;
    for (int x = first; x < e; x++) {
        base += padded(expert_total(g, x, lane), g.alignment);
    }
    return base;
}

// FLAT: row of each of this rank's tokens at rank j = tokens of earlier sources hitting j +
// this rank's earlier tokens hitting j.
__device__ void scan_rank(const ncclx_ep_ht_group_desc_t &g, const ncclx_ep_ht_handle_desc_t &h,
                          int j, int lane)
{
    const uint32_t *map = map_of(g, g.rank);
    const int L = g.local_experts;
    long long before = 0;
    for (int s = lane; s < g.rank; s += kWarpSize) {
        before += g.rank_hits[(size_t)s * g.ranks + j];
    }
    long long row = warp_sum64(before);
    for (int t0 = 0; t0 < g.max_tokens; t0 += kWarpSize) {
        const int t = t0 + lane;
        const bool hit =
            t < h.num_tokens && row_has_range(map + (size_t)t * g.map_words, j * L, (j + 1) * L);
        const unsigned hits = __ballot_sync(0xffffffffu, hit);
        const long long mine = row + __popc(hits & lanemask_lt());
        if (t < g.max_tokens) {
            h.flat_row[(size_t)t * g.ranks + j] = hit && mine < g.recv_slots ? (int)mine : -1;
        }
        row += __popc(hits);
    }
}

// EXPERT_MAJOR: row of each of this rank's tokens for expert e = zone start + tokens of
// earlier sources listing e + this rank's earlier tokens listing e.
__device__ void scan_expert(const ncclx_ep_ht_group_desc_t &g, const ncclx_ep_ht_handle_desc_t &h,
                            int e, int lane)
{
    const uint32_t *map = map_of(g, g.rank);
    long long before = 0;
    for (int s = lane; s < g.rank; s += kWarpSize) {
        before += g.expert_hits[(size_t)s * g.num_experts + e];
    }
    long long row = zone_start(g, e, lane) + warp_sum64(before);
    for (int t0 = 0; t0 < h.num_tokens; t0 += kWarpSize) {
        const int t = t0 + lane;
        const bool hit = t < h.num_tokens && row_has(map + (size_t)t * g.map_words, e);
        const unsigned hits = __ballot_sync(0xffffffffu, hit);
        if (hit) {
            const long long mine = row + __popc(hits & lanemask_lt());
            for (int k = 0; k < h.topk; k++) {
                if (h.idx[(size_t)t * h.topk + k] == e) {
                    h.em_row[(size_t)t * h.topk + k] = mine < g.recv_slots ? (int)mine : -1;
                    break;
                }
            }
        }
        row += __popc(hits);
    }
}

// Across domains, this rank relays the tokens of its rail source s on node n (the rank of n
// with this rank's place in its domain) to the ranks of this domain, and sums their rows for it
// in combine: the scans below give the row of each of s's tokens at this domain's ranks (FLAT)
// or for this domain's experts (EXPERT_MAJOR), by the sender's own formulas on s's map (its copy
// here), into relay entry [n][t][q], q = the expert's order among t's experts in this domain.
__device__ __forceinline__ int node_order(const uint32_t *row, int lo, int e)
{
    int q = 0;
    for (int w = lo >> 5; w <= (e - 1) >> 5 && e > lo; w++) {
        uint32_t bits = row[w];
        const int first = w << 5;
        if (lo > first) {
            bits &= ~0u << (lo - first);
        }
        if (e < first + 32) {
            bits &= (1u << (e - first)) - 1u;
        }
        q += __popc(bits);
    }
    return q;
}

// FLAT: s's rows at rank j of this domain (scan_rank's formula for source s).
__device__ void relay_scan_rank(const ncclx_ep_ht_group_desc_t &g,
                                const ncclx_ep_ht_handle_desc_t &h, int n, int j, int lane)
{
    const int s = rail_peer(g, n), L = g.local_experts, lo = g.lsa_base * L;
    const uint32_t *map = map_of(g, s);
    long long before = 0;
    for (int x = lane; x < s; x += kWarpSize) {
        before += g.rank_hits[(size_t)x * g.ranks + j];
    }
    long long row = warp_sum64(before);
    for (int t0 = 0; t0 < g.max_tokens; t0 += kWarpSize) {
        const int t = t0 + lane;
        const uint32_t *r = map + (size_t)t * g.map_words;
        const bool hit = t < g.max_tokens && row_has_range(r, j * L, (j + 1) * L);
        const unsigned hits = __ballot_sync(0xffffffffu, hit);
        const long long mine = row + __popc(hits & lanemask_lt());
        if (hit) {
            int2 *entry = h.relay + ((size_t)node_slot(my_node(g), n) * g.max_tokens + t) * h.topk;
            const int kept = mine < g.recv_slots ? (int)mine : -1;
            for (int e = j * L; e < (j + 1) * L; e++) {
                if (row_has(r, e)) {
                    const int q = node_order(r, lo, e);
                    if (q < h.topk) {
                        entry[q] = make_int2(kept, e);
                    }
                }
            }
        }
        row += __popc(hits);
    }
}

// EXPERT_MAJOR: s's rows for expert e of this domain (scan_expert's formula for source s).
__device__ void relay_scan_expert(const ncclx_ep_ht_group_desc_t &g,
                                  const ncclx_ep_ht_handle_desc_t &h, int n, int e, int lane)
{
    const int s = rail_peer(g, n), lo = g.lsa_base * g.local_experts;
    const uint32_t *map = map_of(g, s);
    long long before = 0;
    for (int x = lane; x < s; x += kWarpSize) {
        before += g.expert_hits[(size_t)x * g.num_experts + e];
    }
    long long row = zone_start(g, e, lane) + warp_sum64(before);
    for (int t0 = 0; t0 < g.max_tokens; t0 += kWarpSize) {
        const int t = t0 + lane;
        const uint32_t *r = map + (size_t)t * g.map_words;
        const bool hit = t < g.max_tokens && row_has(r, e);
        const unsigned hits = __ballot_sync(0xffffffffu, hit);
        if (hit) {
            const long long mine = row + __popc(hits & lanemask_lt());
            const int q = node_order(r, lo, e);
            if (q < h.topk) {
                h.relay[((size_t)node_slot(my_node(g), n) * g.max_tokens + t) * h.topk + q] =
                    make_int2(mine < g.recv_slots ? (int)mine : -1, e);
            }
        }
        row += __popc(hits);
    }
}

// Rows of FLAT receive order kept under the budget that list local expert e: sources whose
// rows all fit count whole; the source that crosses S is scanned row by row.
__device__ int flat_kept_for_expert(const ncclx_ep_ht_group_desc_t &g, int e, int lane)
{
    const int L = g.local_experts, me = g.rank;
    long long base = 0;
    int kept = 0;
    for (int s = 0; s < g.ranks && base < g.recv_slots; s++) {
        const int n = g.rank_hits[(size_t)s * g.ranks + me];
        if (base + n <= g.recv_slots) {
            kept += g.expert_hits[(size_t)s * g.num_experts + e];
        } else {
            const uint32_t *map = map_of(g, s);
            long long row = base;
            int mine = 0;
            for (int t0 = 0; t0 < g.max_tokens && row < g.recv_slots; t0 += kWarpSize) {
                const int t = t0 + lane;
                const uint32_t *r = map + (size_t)t * g.map_words;
                const bool hit = t < g.max_tokens && row_has_range(r, me * L, (me + 1) * L);
                const unsigned hits = __ballot_sync(0xffffffffu, hit);
                const bool keep = hit && row + __popc(hits & lanemask_lt()) < g.recv_slots;
                mine += keep && row_has(r, e);
                row += __popc(hits);
            }
            kept += warp_sum(mine);
        }
        base += n;
    }
    return kept;
}

// This rank's receive side: per local expert counts and zones, and the totals.
__device__ void receiver_expert(const ncclx_ep_ht_group_desc_t &g,
                                const ncclx_ep_ht_handle_desc_t &h, int el, int lane)
{
    const int e = g.rank * g.local_experts + el;
    const long long count = expert_total(g, e, lane);
    const long long base = zone_start(g, e, lane);
    const long long S = g.recv_slots;
    int reported;
    if (h.expert_major) {
        const long long room = S - base > 0 ? S - base : 0;
        const long long pad = padded(count, g.alignment);
        reported = (int)(pad < room ? pad : room);
    } else {
        reported = flat_kept_for_expert(g, e, lane);
    }
    if (lane == 0) {
        h.zone_count[el] = (int)(count < S ? count : S); /* rows past S are never read */
        h.zone_base[el] = (int)(base < S ? base : S);
        h.counts[el] = reported;
        h.offsets[el] = (int)(base < S ? base : S);
    }
}

__device__ void receiver_totals(const ncclx_ep_ht_group_desc_t &g,
                                const ncclx_ep_ht_handle_desc_t &h, int lane)
{
    long long total = 0, em_total = 0;
    for (int s = lane; s < g.ranks; s += kWarpSize) {
        total += g.rank_hits[(size_t)s * g.ranks + g.rank];
    }
    total = warp_sum64(total);
    for (int el = 0; el < g.local_experts; el++) {
        em_total += padded(expert_total(g, g.rank * g.local_experts + el, lane), g.alignment);
    }
    const long long need = h.expert_major ? em_total : total;
    const long long S = g.recv_slots;
    // TRAP: every rank reports an overflow of any rank (every rank holds every count), so that
    // all of them stop together and stay in step (kernels do nothing until the clear).
    bool overflow = false;
    for (int j = 0; j < g.ranks && !g.drop && !overflow; j++) {
        long long need_j = 0;
        if (h.expert_major) {
            for (int x = j * g.local_experts; x < (j + 1) * g.local_experts; x++) {
                need_j += padded(expert_total(g, x, lane), g.alignment);
            }
        } else {
            for (int s = lane; s < g.ranks; s += kWarpSize) {
                need_j += g.rank_hits[(size_t)s * g.ranks + j];
            }
            need_j = warp_sum64(need_j);
        }
        overflow = need_j > S;
    }
    if (lane == 0) {
        h.totals[0] = need;
        h.totals[1] = need < S ? need : S;
        h.offsets[g.local_experts] = (int)(em_total < S ? em_total : S);
        if (overflow) {
            report_error(g, kErrorOverflow);
        }
    }
}

// Kernel 3: one warp per work item: R destination scans (FLAT) or E expert scans (EM), then L
// receiver experts, then the totals.
__global__ void __launch_bounds__(kThreads, 2)
    scan_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h)
{
    const unsigned long long op = load_volatile(&g.state->route_seq);
    const int lane = threadIdx.x % kWarpSize;
    const int scans = h.expert_major ? g.num_experts : g.ranks;
    // Across domains, then one relay scan per (other node, rank or expert of this domain).
    const int relay_per_node = h.relay == nullptr ? 0
                               : h.expert_major   ? g.lsa * g.local_experts
                                                  : g.lsa;
    const int relays = relay_per_node * g.nodes;
    const int items = scans + g.local_experts + 1 + relays;
    if (block_route_stopped(g)) {
        return;
    }
    {
        for (long long it = (long long)blockIdx.x * kWarps + threadIdx.x / kWarpSize; it < items;
             it += (long long)gridDim.x * kWarps) {
            const int item = (int)it; // < items
            if (item < scans) {
                if (h.expert_major) {
                    scan_expert(g, h, item, lane);
                } else {
                    scan_rank(g, h, item, lane);
                }
            } else if (item < scans + g.local_experts) {
                receiver_expert(g, h, item - scans, lane);
            } else if (item == scans + g.local_experts) {
                receiver_totals(g, h, lane);
            } else {
                const int r = item - scans - g.local_experts - 1;
                const int n = r / relay_per_node, x = r % relay_per_node;
                if (n == my_node(g)) {
                    continue; // this domain's own tokens are not relayed
                }
                if (h.expert_major) {
                    relay_scan_expert(g, h, n, g.lsa_base * g.local_experts + x, lane);
                } else {
                    relay_scan_rank(g, h, n, g.lsa_base + x, lane);
                }
            }
        }
    }
    if (last_block(&g.state->arrive[0]) && signal_all(g, NCCLX_EP_HT_SIG_MAP_READ, op + 1) &&
        threadIdx.x == 0) {
        *reinterpret_cast<volatile unsigned long long *>(&g.state->route_seq) = op + 1;
    }
}

// Kernel 4: the header and checksum of the finished routing (ncclxEpHandleImport checks them).
__global__ void __launch_bounds__(kThreads, 2)
    seal_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h, int idx_int64)
{
    if (block_route_stopped(g)) {
        return;
    }
    add_checksum(h, &h.header->checksum);
    if (blockIdx.x == 0 && threadIdx.x < kWarpSize) {
        // Hash of every rank's per-destination counts: each rank holds all of them.
        unsigned long long hash = 0;
        for (int i = threadIdx.x; i < g.ranks * g.ranks; i += kWarpSize) {
            hash += checksum_share((size_t)i, (unsigned long long)(unsigned)g.rank_hits[i]);
        }
        for (int o = 16; o > 0; o >>= 1) {
            hash += __shfl_xor_sync(0xffffffffu, hash, o);
        }
        if (threadIdx.x == 0) {
            h.header->counts = hash;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        ncclx_ep_ht_handle_header_t *hd = h.header;
        hd->overflowed = (load_volatile(&g.state->error) & kErrorOverflow) != 0 ? 1ull : 0ull;
        hd->magic = NCCLX_EP_HT_HANDLE_MAGIC;
        hd->version = NCCLX_EP_HT_HANDLE_VERSION;
        hd->geometry = h.geometry;
        hd->step = load_volatile(&g.state->route_seq); /* advanced by this routing's scan */
        hd->num_tokens = h.num_tokens;
        hd->topk = h.topk;
        hd->layout = h.expert_major;
        hd->idx_int64 = idx_int64;
    }
}

// ncclxEpHandleImport: the snapshot's header against what the handle is to be, and its checksum
// recomputed into *sum (zeroed before the launch); the last block writes the verdict.
__global__ void __launch_bounds__(kThreads, 2)
    verify_kernel(ncclx_ep_ht_group_desc_t g, ncclx_ep_ht_handle_desc_t h, int idx_int64,
                  unsigned long long *sum, unsigned *verdict, unsigned long long *step)
{
    add_checksum(h, sum);
    if (last_block(&g.state->arrive[0]) && threadIdx.x == 0) {
        const ncclx_ep_ht_handle_header_t *hd = h.header;
        unsigned bad = 0;
        bad |= hd->magic != NCCLX_EP_HT_HANDLE_MAGIC ? NCCLX_EP_HT_IMPORT_MAGIC : 0u;
        bad |= hd->version != NCCLX_EP_HT_HANDLE_VERSION ? NCCLX_EP_HT_IMPORT_VERSION : 0u;
        bad |= hd->geometry != h.geometry ? NCCLX_EP_HT_IMPORT_GEOMETRY : 0u;
        bad |= hd->num_tokens != h.num_tokens || hd->topk != h.topk ||
                       hd->layout != h.expert_major || hd->idx_int64 != idx_int64
                   ? NCCLX_EP_HT_IMPORT_STATE
                   : 0u;
        bad |= load_volatile(sum) != hd->checksum ? NCCLX_EP_HT_IMPORT_CHECKSUM : 0u;
        bad |= hd->overflowed != 0 ? NCCLX_EP_HT_IMPORT_OVERFLOW : 0u;
        *reinterpret_cast<volatile unsigned long long *>(step) = hd->step;
        *reinterpret_cast<volatile unsigned *>(verdict) = bad;
        __threadfence_system();
    }
}

__global__ void layout_kernel(ncclx_ep_ht_handle_desc_t h, int local_experts,
                              ncclx_ep_ht_layout_desc_t l)
{
    for (int i = threadIdx.x; i <= local_experts; i += blockDim.x) {
        if (l.counts != nullptr && i < local_experts) {
            if (l.int64) {
                static_cast<long long *>(l.counts)[i] = h.counts[i];
            } else {
                static_cast<int32_t *>(l.counts)[i] = h.counts[i];
            }
        }
        if (l.offsets != nullptr && i < l.offsets_entries) {
            if (l.int64) {
                static_cast<long long *>(l.offsets)[i] = h.offsets[i];
            } else {
                static_cast<int32_t *>(l.offsets)[i] = h.offsets[i];
            }
        }
    }
    if (threadIdx.x == 0 && l.total != nullptr) {
        if (l.int64) {
            *static_cast<long long *>(l.total) = h.totals[0];
        } else {
            *static_cast<int32_t *>(l.total) =
                h.totals[0] > 0x7fffffffLL ? 0x7fffffff : (int32_t)h.totals[0];
        }
    }
}

} // namespace

cudaError_t launch_rows(const ncclx_ep_ht_group_desc_t *g, const ncclx_ep_ht_handle_desc_t *h,
                        int idx_int64, cudaStream_t stream)
{
    cudaError_t err;
    scan_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h);
    if ((err = cudaGetLastError()) != cudaSuccess) {
        return err;
    }
    seal_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h, idx_int64);
    return cudaGetLastError();
}

} // namespace ht
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ht_launch_verify(const ncclx_ep_ht_group_desc_t *g,
                                                 const ncclx_ep_ht_handle_desc_t *h, int idx_int64,
                                                 unsigned *verdict, unsigned long long *step,
                                                 cudaStream_t stream)
{
    using namespace ncclx::ht;
    /* The routing counters are scratch between routings: the first word sums the checksum. */
    unsigned long long *sum = reinterpret_cast<unsigned long long *>(g->expert_hits);
    cudaError_t err = cudaMemsetAsync(sum, 0, sizeof(*sum), stream);
    if (err != cudaSuccess) {
        return err;
    }
    verify_kernel<<<g->blocks, kThreads, 0, stream>>>(*g, *h, idx_int64, sum, verdict, step);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ht_launch_layout(const ncclx_ep_ht_group_desc_t *g,
                                                 const ncclx_ep_ht_handle_desc_t *h,
                                                 const ncclx_ep_ht_layout_desc_t *l,
                                                 cudaStream_t stream)
{
    ncclx::ht::layout_kernel<<<1, 256, 0, stream>>>(*h, g->local_experts, *l);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ht_rows_load(void)
{
    using namespace ncclx::ht;
    const void *const kernels[] = {reinterpret_cast<const void *>(scan_kernel),
                                   reinterpret_cast<const void *>(seal_kernel),
                                   reinterpret_cast<const void *>(verify_kernel),
                                   reinterpret_cast<const void *>(layout_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
