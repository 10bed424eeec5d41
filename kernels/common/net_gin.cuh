/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The GIN side of the network transport (kernels/common/net.h): NCCL 2.28.9's device API over
 * the device communicator that lib/context/net.c creates with GIN resources.  Compiled always;
 * runs only where NCCL brought GIN up (a communicator of more than one LSA team on machines with
 * an RDMA NIC).  Every signal of rank r travels on context r mod NCCLX_NET_CONTEXTS (the
 * receiver reads the table of the context the sender used), and so does every put to r, so a
 * signal orders every earlier put to its receiver.  A warp calls each function together: lane 0
 * posts, as ncclCoopWarp asks.
 */
#ifndef NCCLX_KERNELS_NET_GIN_CUH_
#define NCCLX_KERNELS_NET_GIN_CUH_

#include <nccl.h>
#include <nccl_device.h>

#include "net.h"

namespace ncclx
{

__device__ __forceinline__ int net_context(int peer)
{
    return peer % NCCLX_NET_CONTEXTS;
}

__device__ __forceinline__ const ncclDevComm &gin_comm(const ncclx_net_desc_t &n)
{
    return *static_cast<const ncclDevComm *>(n.dev_comm);
}

// A put of bytes from this rank's arena at src_off to peer's at dst_off; signal >= 0 adds add
// to the peer's signal once the payload and every earlier put to the peer have settled.
__device__ __forceinline__ void gin_put_warp(const ncclx_net_desc_t &n, int peer, size_t dst_off,
                                             size_t src_off, size_t bytes, int signal,
                                             unsigned long long add)
{
    const ncclDevComm &comm = gin_comm(n);
    ncclGin gin(comm, net_context(peer));
    ncclWindow_t window = static_cast<ncclWindow_t>(n.window);
    if (signal >= 0) {
        gin.put(ncclTeamWorld(comm), peer, window, dst_off, window, src_off, bytes,
                ncclGin_SignalAdd{(ncclGinSignal_t)(n.signal_base + signal), add}, ncclGin_None{},
                ncclCoopWarp());
    } else {
        gin.put(ncclTeamWorld(comm), peer, window, dst_off, window, src_off, bytes, ncclGin_None{},
                ncclGin_None{}, ncclCoopWarp());
    }
}

// value into peer's arena at dst_off, adding add to the peer's signal (ordered as a put's).
__device__ __forceinline__ void gin_put_value_warp(const ncclx_net_desc_t &n, int peer,
                                                   size_t dst_off, unsigned long long value,
                                                   int signal, unsigned long long add)
{
    const ncclDevComm &comm = gin_comm(n);
    ncclGin gin(comm, net_context(peer));
    gin.putValue(ncclTeamWorld(comm), peer, static_cast<ncclWindow_t>(n.window), dst_off, value,
                 ncclGin_SignalAdd{(ncclGinSignal_t)(n.signal_base + signal), add}, ncclCoopWarp());
}

// The same from one thread (ncclCoopThread); signal < 0: no signal.
template <typename T>
__device__ __forceinline__ void gin_put_value_thread(const ncclx_net_desc_t &n, int peer,
                                                     size_t dst_off, T value, int signal,
                                                     unsigned long long add)
{
    const ncclDevComm &comm = gin_comm(n);
    ncclGin gin(comm, net_context(peer));
    ncclWindow_t window = static_cast<ncclWindow_t>(n.window);
    if (signal >= 0) {
        gin.putValue(ncclTeamWorld(comm), peer, window, dst_off, value,
                     ncclGin_SignalAdd{(ncclGinSignal_t)(n.signal_base + signal), add},
                     ncclCoopThread());
    } else {
        gin.putValue(ncclTeamWorld(comm), peer, window, dst_off, value, ncclGin_None{},
                     ncclCoopThread());
    }
}

// Every context's puts of this rank: their sources may be reused.
__device__ __forceinline__ void gin_flush_warp(const ncclx_net_desc_t &n)
{
    for (int c = 0; c < NCCLX_NET_CONTEXTS; c++) {
        ncclGin gin(gin_comm(n), c);
        gin.flush(ncclCoopWarp());
    }
}

// This rank's signal (on its own context, where every sender adds to it).
__device__ __forceinline__ unsigned long long gin_read_signal(const ncclx_net_desc_t &n, int signal)
{
    ncclGin gin(gin_comm(n), net_context(n.rank));
    return gin.readSignal((ncclGinSignal_t)(n.signal_base + signal));
}

__device__ __forceinline__ void gin_reset_signal(const ncclx_net_desc_t &n, int signal)
{
    ncclGin gin(gin_comm(n), net_context(n.rank));
    gin.resetSignal((ncclGinSignal_t)(n.signal_base + signal));
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_NET_GIN_CUH_ */
