/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL active mask: query, update, clean, and the clear of the asynchronous error word.  The
 * mask lives in the group's private device memory as inactive[r] (0 = active, so zeroed
 * arenas start with every rank active); a rank's own symmetric evicted word tells it that a
 * peer masked it after a timeout.  LL kernels skip masked ranks, and an evicted rank
 * exchanges nothing.
 *
 * Clean is collective over the ranks that call it.  Round one: each rank writes a proposed
 * generation (its highest so far + 1) into every rank's round-one slot and waits for every
 * slot to hold a proposal; a proposal is consumed (zeroed) once seen, and withdrawn from a
 * rank that did not answer, so a stale one is never mistaken for a new clean.  Everyone that
 * answered has finished every earlier operation (each rank enters clean in stream order), so
 * nothing is in flight: each rank resets its signals, decisions, sequence numbers and
 * evicted words and marks the answering ranks active.  The generation is the largest
 * proposal seen.  Round two: each rank writes that generation to the ranks that answered and
 * waits until each holds exactly it, so no one sends new data before every receiver has
 * reset, and ranks that disagree time out instead of rejoining.  The epoch advances only when
 * every rank of the new mask answered round two; a rank that does not answer stays masked.
 */
#include "ep_ll_common.cuh"

namespace ncclx
{
namespace
{

constexpr int kMaskThreads = 512;
constexpr int kUpdateRanks = 1024; // ranks per update launch (bits passed by value)

struct MaskBits {
    unsigned bits[kUpdateRanks / 32];
    int base, count;
};

__global__ void mask_query_kernel(ncclx_ep_ll_group_desc_t g, int32_t *out)
{
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < g.ranks; r += gridDim.x * blockDim.x) {
        /* This rank's own entry also reads 0 once a peer has evicted it. */
        const bool evicted = r == g.rank && load_volatile(&g.evicted[r]) != 0;
        out[r] = g.inactive[r] == 0 && !evicted ? 1 : 0;
    }
}

// Masks every rank whose bit is 0; a 1 leaves the entry as it is (only a clean re-admits:
// re-activating a rank here would leave its sequence numbers out of step with this rank's).
// An entry already masked keeps its value (kMaskedLate: its late rows are still waited for).
__global__ void mask_update_kernel(ncclx_ep_ll_group_desc_t g, MaskBits m)
{
    for (int i = threadIdx.x; i < m.count; i += blockDim.x) {
        if (((m.bits[i / 32] >> (i % 32)) & 1u) == 0) {
            atomicCAS(&g.inactive[m.base + i], 0, 1);
        }
    }
}

// Waits until *p is nonzero (want == 0) or equals want; returns the value seen, 0 on timeout.
__device__ unsigned long long wait_slot(const ncclx_ep_ll_group_desc_t &g,
                                        const unsigned long long *p, unsigned long long want)
{
    const unsigned long long start = globaltimer();
    for (unsigned spins = 1;; spins++) {
        const unsigned long long v = ld_acquire_sys(p);
        if (want == 0 ? v != 0 : v == want) {
            return v;
        }
        if ((spins & 1023) == 0 && globaltimer() - start > g.timeout_ns) {
            return 0;
        }
    }
}

// ---- clean slots across load/store domains (docs/multi-node.md) ----

// The network signal that counts rank s's words into this rank's round slots.
__device__ __forceinline__ int clean_signal_id(const ncclx_ep_ll_group_desc_t &g, int round, int s)
{
    return g.net_signal_base + 4 * g.ranks + round * g.ranks + s;
}

// Writes value into rank p's round slot of this rank: a release store in this domain; across,
// a word put with a network signal (which also orders it after this rank's earlier puts to p).
__device__ void send_slot(const ncclx_ep_ll_group_desc_t &g, int p, int round,
                          unsigned long long value)
{
    if (!is_remote(g, p)) {
        st_release_sys(&clean_slots(peer_base(g, p), g, round)[g.rank], value);
        return;
    }
    const size_t offset = g.mask_words + ((size_t)round * g.ranks + g.rank) * sizeof(uint64_t);
    net_put_value_thread(g.net, p, offset, value, clean_signal_id(g, round, g.rank), 1ull);
}

// wait_slot on source s's round slot of this rank.  A remote source's word counts only once its
// network signal grew since the last word taken from s in that round: the signal says that the
// word, and every put s made before it (its operations' rows and signals), have landed.
__device__ unsigned long long wait_slot_from(const ncclx_ep_ll_group_desc_t &g, int round, int s,
                                             unsigned long long want)
{
    const unsigned long long *p = clean_slots(peer_base(g, g.rank), g, round) + s;
    if (!is_remote(g, s)) {
        return wait_slot(g, p, want);
    }
    unsigned long long *seen = &g.net_seen[round * g.ranks + s];
    const unsigned long long start = globaltimer();
    for (unsigned spins = 1;; spins++) {
        const unsigned long long count = net_read_signal(g.net, clean_signal_id(g, round, s));
        if (count > *seen) {
            const unsigned long long v = ld_acquire_sys(p);
            if (want == 0 ? v != 0 : v == want) {
                *seen = count;
                return v;
            }
        }
        if ((spins & 1023) == 0 && globaltimer() - start > g.timeout_ns) {
            return 0;
        }
    }
}

// Forgets every earlier operation on this rank: signals, decisions, sequence numbers.  A remote
// source counted in (it answered round one, so every signal it sent before has landed) gets
// its operation signals' counts as the base its next operations count from.
__device__ void reset_operations(const ncclx_ep_ll_group_desc_t &g)
{
    for (int i = threadIdx.x; g.net_base != nullptr && i < 4 * g.ranks; i += blockDim.x) {
        const int id = i / g.ranks, s = i % g.ranks;
        if (is_remote(g, s) && g.inactive[s] == 0) {
            g.net_base[i] = net_read_signal(g.net, net_signal_id(g, id / 2, id % 2, s));
        }
    }
    unsigned long long *signals =
        reinterpret_cast<unsigned long long *>(peer_base(g, g.rank) + g.signals);
    for (int i = threadIdx.x; i < 2 * g.ranks * 2; i += blockDim.x) {
        signals[i] = 0;
    }
    for (int i = threadIdx.x; i < 2 * g.ranks; i += blockDim.x) {
        g.decisions[i] = 0;
    }
    if (threadIdx.x == 0) {
        g.state->dispatch_seq = 0;
        g.state->combine_seq = 0;
    }
}

__global__ void __launch_bounds__(kMaskThreads) mask_clean_kernel(ncclx_ep_ll_group_desc_t g)
{
    __shared__ unsigned long long generation;
    __shared__ int complete;
    char *self = peer_base(g, g.rank);
    unsigned long long *round1 = clean_slots(self, g, 0);
    const unsigned long long proposal = g.state->clean_high + 1;
    if (threadIdx.x == 0) {
        generation = proposal;
        complete = 1;
    }
    __threadfence_system();
    __syncthreads();
    // Round one, to every rank (a masked rank that wants back in calls clean too).
    for (int p = threadIdx.x; p < g.ranks; p += blockDim.x) {
        send_slot(g, p, 0, proposal);
    }
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        const unsigned long long seen = wait_slot_from(g, 0, s, 0);
        if (seen != 0) {
            atomicMax(&generation, seen);
            round1[s] = 0; // consumed: the next clean needs a new proposal from s
            g.inactive[s] = 0;
        } else {
            // Withdraw ours, so that s, arriving late, does not count this rank in.  A rank
            // still marked late keeps the mark: its rows are waited for below.
            send_slot(g, s, 0, 0);
            atomicCAS(&g.inactive[s], 0, 1);
            complete = 0;
            report_error(g, kErrorTimeout);
        }
    }
    __syncthreads();
    // A rank evicted inside its combine send that did not answer may still be storing rows
    // into this rank's combine slots: they must land before round two lets the answering peers
    // write those slots again.  One that never ends its send leaves the clean incomplete.
    if (!wait_late_rows(g) && threadIdx.x == 0) {
        complete = 0;
    }
    reset_operations(g);
    // One of these entries is this rank's own progress word (ep_ll_wire.h,
    // ncclx_ep_progress_index): zero is its idle value, and no combine send of this rank runs
    // during its clean (stream order), so clearing it says nothing false.
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        if (g.inactive[s] == 0) {
            g.evicted[s] = 0;
        }
    }
    __threadfence_system();
    __syncthreads();
    // Round two, among the ranks that answered: equality, not "at least".
    const unsigned long long agreed = generation;
    for (int p = threadIdx.x; p < g.ranks; p += blockDim.x) {
        if (g.inactive[p] == 0) {
            send_slot(g, p, 1, agreed);
        }
    }
    for (int s = threadIdx.x; s < g.ranks; s += blockDim.x) {
        if (g.inactive[s] == 0 && wait_slot_from(g, 1, s, agreed) == 0) {
            g.inactive[s] = 1;
            complete = 0;
            report_error(g, kErrorTimeout);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        g.state->clean_high = agreed;
        if (complete) {
            g.state->clean_epoch = agreed;
        }
    }
}

__global__ void clear_error_kernel(ncclx_ep_ll_group_desc_t g, unsigned bits)
{
    const unsigned old = atomicAnd(&g.state->error, ~bits);
    publish_status(g, old & ~bits);
}

} // namespace
} // namespace ncclx

extern "C" cudaError_t ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g,
                                                     int32_t *out, cudaStream_t stream)
{
    int blocks = (g->ranks + ncclx::kMaskThreads - 1) / ncclx::kMaskThreads;
    ncclx::mask_query_kernel<<<blocks, ncclx::kMaskThreads, 0, stream>>>(*g, out);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g,
                                                      const int32_t *mask, cudaStream_t stream)
{
    for (int base = 0; base < g->ranks; base += ncclx::kUpdateRanks) {
        ncclx::MaskBits m = {};
        m.base = base;
        m.count = min(ncclx::kUpdateRanks, g->ranks - base);
        for (int i = 0; i < m.count; i++) {
            m.bits[i / 32] |= (mask[base + i] != 0 ? 1u : 0u) << (i % 32);
        }
        ncclx::mask_update_kernel<<<1, ncclx::kMaskThreads, 0, stream>>>(*g, m);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) {
            return err;
        }
    }
    return cudaSuccess;
}

extern "C" cudaError_t ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g,
                                                     cudaStream_t stream)
{
    ncclx::mask_clean_kernel<<<1, ncclx::kMaskThreads, 0, stream>>>(*g);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_launch_clear_error(const ncclx_ep_ll_group_desc_t *g,
                                                      unsigned bits, cudaStream_t stream)
{
    ncclx::clear_error_kernel<<<1, 1, 0, stream>>>(*g, bits);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_ep_ll_mask_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::mask_query_kernel),
                                   reinterpret_cast<const void *>(ncclx::mask_update_kernel),
                                   reinterpret_cast<const void *>(ncclx::mask_clean_kernel),
                                   reinterpret_cast<const void *>(ncclx::clear_error_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
