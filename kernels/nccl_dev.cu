/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What needs NCCL's device API (C++): the device communicator and the LSA peer-pointer table.
 */
#include <nccl.h>
#include <nccl_device.h>

#include "kernels.h"

static_assert(sizeof(ncclDevComm) <= NCCLX_DEVCOMM_STORAGE_BYTES,
              "NCCLX_DEVCOMM_STORAGE_BYTES is too small for this NCCL's ncclDevComm");

namespace
{

// One thread per LSA peer: the table kernels use to reach peers by load/store.
__global__ void ncclxResolvePeersKernel(ncclWindow_t window, size_t offset, int lsa_size,
                                        void **table)
{
    int peer = blockIdx.x * blockDim.x + threadIdx.x;
    if (peer < lsa_size) {
        table[peer] = ncclGetLsaPointer(window, offset, peer);
    }
}

} // namespace

extern "C" int ncclx_devcomm_create(void *comm, int lsa_barrier_count, void *storage)
{
    ncclDevCommRequirements reqs = {};
    reqs.lsaBarrierCount = lsa_barrier_count;
    return (int)ncclDevCommCreate(static_cast<ncclComm_t>(comm), &reqs,
                                  static_cast<ncclDevComm *>(storage));
}

extern "C" int ncclx_devcomm_destroy(void *comm, const void *storage)
{
    return (int)ncclDevCommDestroy(static_cast<ncclComm_t>(comm),
                                   static_cast<const ncclDevComm *>(storage));
}

extern "C" int ncclx_devcomm_lsa_size(const void *storage)
{
    return static_cast<const ncclDevComm *>(storage)->lsaSize;
}

extern "C" cudaError_t ncclx_launch_resolve_peers(void *window, size_t offset, int lsa_size,
                                                  void **table, cudaStream_t stream)
{
    ncclxResolvePeersKernel<<<(lsa_size + 127) / 128, 128, 0, stream>>>(
        static_cast<ncclWindow_t>(window), offset, lsa_size, table);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_nccl_kernels_load(void)
{
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, ncclxResolvePeersKernel);
}
