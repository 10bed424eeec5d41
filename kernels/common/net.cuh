/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The network transport's device interface (what it promises: kernels/common/net.h).  Every
 * function is called by a whole warp with the same arguments.  The emulator's puts and signals
 * touch the peer's arena only at the offsets they are given, through the world table that only
 * this file reads; the GIN side is net_gin.cuh.
 */
#ifndef NCCLX_KERNELS_NET_CUH_
#define NCCLX_KERNELS_NET_CUH_

#include "dev_sync.cuh"
#include "dev_warp.cuh"
#include "net.h"
#include "net_gin.cuh"

namespace ncclx
{

// ---- the emulator ----

__device__ __forceinline__ char *emu_arena(const ncclx_net_desc_t &n, int r)
{
    return static_cast<char *>(n.world[r]);
}

__device__ __forceinline__ unsigned long long *emu_signal(const ncclx_net_desc_t &n, int r,
                                                          int signal)
{
    return reinterpret_cast<unsigned long long *>(emu_arena(n, r) + n.signal_table) +
           (size_t)net_context(r) * n.num_signals + signal;
}

// dst <- src, bytes of them, by the warp (16-byte steps when everything is 16-byte aligned).
__device__ __forceinline__ void emu_copy_warp(char *dst, const char *src, size_t bytes, int lane)
{
    if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | bytes) & 15) == 0) {
        LaneTargets to;
        to.lanes = 1u;
        to.mine = dst;
        (void)warp_copy_to(to, src, 0, bytes, lane);
        return;
    }
    for (size_t i = lane; i < bytes; i += kWarpSize) {
        dst[i] = src[i];
    }
}

__device__ __forceinline__ ncclx_net_held_t *emu_held(const ncclx_net_desc_t &n, int context,
                                                      int peer, int slot)
{
    return n.held + ((size_t)context * n.ranks + peer) * NCCLX_NET_HELD_PUTS + slot;
}

// Applies the puts held back for (context, peer), the latest first.  A slot another warp is
// filling (1) or applying (3) is waited for, never skipped: its put may be one this rank posted
// before the signal that calls here, and the signal must not overtake it (a slot being filled
// becomes held, and this warp applies it; one being applied becomes free once it has landed).
// Neither state waits on anything, so the wait is short.
__device__ __forceinline__ void emu_apply_held(const ncclx_net_desc_t &n, int context, int peer,
                                               int lane)
{
    for (int slot = NCCLX_NET_HELD_PUTS - 1; slot >= 0; slot--) {
        ncclx_net_held_t *h = emu_held(n, context, peer, slot);
        bool mine = false;
        if (lane == 0) {
            unsigned state;
            do {
                state = atomicCAS(&h->state, 2u, 3u);
            } while (state == 1u || state == 3u);
            mine = state == 2u;
            __threadfence();
        }
        mine = __shfl_sync(0xffffffffu, mine, 0);
        if (!mine) {
            continue;
        }
        const unsigned long long dst = load_volatile(&h->dst_off), src = load_volatile(&h->src_off),
                                 bytes = load_volatile(&h->bytes);
        emu_copy_warp(emu_arena(n, peer) + dst, static_cast<const char *>(n.local) + src, bytes,
                      lane);
        __syncwarp();
        if (lane == 0) {
            __threadfence();
            atomicExch(&h->state, 0u);
        }
    }
}

// Chaos mode: holds the put back in a free slot of (context, peer); false when none is free
// (the caller then applies it now, an earlier landing being always allowed).
__device__ __forceinline__ bool emu_hold(const ncclx_net_desc_t &n, int context, int peer,
                                         size_t dst_off, size_t src_off, size_t bytes, int lane)
{
    bool held = false;
    if (lane == 0) {
        const unsigned slot =
            atomicAdd(&n.held_next[context * n.ranks + peer], 1u) % NCCLX_NET_HELD_PUTS;
        ncclx_net_held_t *h = emu_held(n, context, peer, (int)slot);
        if (atomicCAS(&h->state, 0u, 1u) == 0u) {
            h->dst_off = dst_off;
            h->src_off = src_off;
            h->bytes = bytes;
            h->peer = peer;
            __threadfence();
            atomicExch(&h->state, 2u);
            atomicAdd(&n.stats->held, 1ull);
            held = true;
        }
    }
    return __shfl_sync(0xffffffffu, held, 0);
}

__device__ __forceinline__ void emu_count(const ncclx_net_desc_t &n, size_t bytes, int signals,
                                          int lane)
{
    if (lane == 0) {
        atomicAdd(&n.stats->bytes, (unsigned long long)bytes);
        atomicAdd(&n.stats->puts, 1ull);
        if (signals) {
            atomicAdd(&n.stats->signals, 1ull);
        }
    }
}

// ---- the interface ----

// Puts bytes of this rank's arena at src_off into peer's arena at dst_off; tells the peer
// nothing.  The source may be reused only after net_flush_warp.
__device__ __forceinline__ void net_put_warp(const ncclx_net_desc_t &n, int peer, size_t dst_off,
                                             size_t src_off, size_t bytes, int lane)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_put_warp(n, peer, dst_off, src_off, bytes, -1, 0);
        return;
    }
    emu_count(n, bytes, 0, lane);
    if (n.chaos && emu_hold(n, net_context(peer), peer, dst_off, src_off, bytes, lane)) {
        return;
    }
    emu_copy_warp(emu_arena(n, peer) + dst_off, static_cast<const char *>(n.local) + src_off, bytes,
                  lane);
}

// net_put_warp (bytes may be 0), then adds add to the peer's signal: the peer sees the add only
// after this payload and every earlier put of this rank to it.
__device__ __forceinline__ void net_put_signal_warp(const ncclx_net_desc_t &n, int peer,
                                                    size_t dst_off, size_t src_off, size_t bytes,
                                                    int signal, unsigned long long add, int lane)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_put_warp(n, peer, dst_off, src_off, bytes, signal, add);
        return;
    }
    emu_count(n, bytes, 1, lane);
    if (n.chaos) {
        emu_apply_held(n, net_context(peer), peer, lane);
    }
    if (bytes > 0) {
        emu_copy_warp(emu_arena(n, peer) + dst_off, static_cast<const char *>(n.local) + src_off,
                      bytes, lane);
    }
    __syncwarp();
    if (lane == 0) {
        if (n.delay_ns != 0) {
            const unsigned long long until = globaltimer() + n.delay_ns;
            while (globaltimer() < until) {
            }
        }
        __threadfence_system();
        atomicAdd(emu_signal(n, peer, signal), add);
    }
    __syncwarp();
}

// value (8 bytes) into peer's arena at dst_off, then adds add to the peer's signal, ordered as
// net_put_signal_warp orders it (no source buffer: the value travels in the operation).
__device__ __forceinline__ void net_put_value_signal_warp(const ncclx_net_desc_t &n, int peer,
                                                          size_t dst_off, unsigned long long value,
                                                          int signal, unsigned long long add,
                                                          int lane)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_put_value_warp(n, peer, dst_off, value, signal, add);
        return;
    }
    emu_count(n, sizeof(value), 1, lane);
    if (n.chaos) {
        emu_apply_held(n, net_context(peer), peer, lane);
    }
    __syncwarp();
    if (lane == 0) {
        *reinterpret_cast<volatile unsigned long long *>(emu_arena(n, peer) + dst_off) = value;
        if (n.delay_ns != 0) {
            const unsigned long long until = globaltimer() + n.delay_ns;
            while (globaltimer() < until) {
            }
        }
        __threadfence_system();
        atomicAdd(emu_signal(n, peer, signal), add);
    }
    __syncwarp();
}

// net_put_value_signal_warp from one thread, for a word only (a clean's proposal, an eviction);
// signal < 0: no signal (the peer polls the word; it lands, but orders nothing).  The emulator
// does not apply held puts here: call it only after this rank flushed its puts to the peer.
template <typename T> // 4 or 8 bytes
__device__ __forceinline__ void net_put_value_thread(const ncclx_net_desc_t &n, int peer,
                                                     size_t dst_off, T value, int signal,
                                                     unsigned long long add)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_put_value_thread(n, peer, dst_off, value, signal, add);
        return;
    }
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a word of 4 or 8 bytes");
    atomicAdd(&n.stats->bytes, (unsigned long long)sizeof(value));
    atomicAdd(&n.stats->puts, 1ull);
    *reinterpret_cast<volatile T *>(emu_arena(n, peer) + dst_off) = value;
    if (signal >= 0) {
        atomicAdd(&n.stats->signals, 1ull);
        if (n.delay_ns != 0) {
            const unsigned long long until = globaltimer() + n.delay_ns;
            while (globaltimer() < until) {
            }
        }
        __threadfence_system();
        atomicAdd(emu_signal(n, peer, signal), add);
    } else {
        __threadfence_system();
    }
}

// Every put this rank posted so far has read its source: the sources may be reused.  Says
// nothing about the peers (only a signal does).
__device__ __forceinline__ void net_flush_warp(const ncclx_net_desc_t &n, int lane)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_flush_warp(n);
        return;
    }
    if (n.chaos) {
        for (int peer = 0; peer < n.ranks; peer++) {
            emu_apply_held(n, net_context(peer), peer, lane);
        }
    }
    __syncwarp();
}

// This rank's signal, with acquire: what its senders' adds made of it.  Any thread may call.
__device__ __forceinline__ unsigned long long net_read_signal(const ncclx_net_desc_t &n, int signal)
{
    if (n.kind == NCCLX_NET_GIN) {
        return gin_read_signal(n, signal);
    }
    return ld_acquire_sys(emu_signal(n, n.rank, signal));
}

// Sets this rank's signal to 0.  Only when no add to it can be on its way.  Any thread.
__device__ __forceinline__ void net_reset_signal(const ncclx_net_desc_t &n, int signal)
{
    if (n.kind == NCCLX_NET_GIN) {
        gin_reset_signal(n, signal);
        return;
    }
    st_release_sys(emu_signal(n, n.rank, signal), 0ull);
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_NET_CUH_ */
