/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What needs NCCL's device API (C++): the LSA peer-pointer table of a symmetric window, and the
 * device communicator with GIN that the network transport runs on (kernels/common/net.h).
 */
#include <new>

#include <nccl.h>
#include <nccl_device.h>

#include "kernels.h"
#include "net.h"

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

extern "C" ncclResult_t ncclx_gin_create(ncclComm_t comm, int signals, void *device_copy,
                                         size_t room, cudaStream_t stream, void **state,
                                         const char **what)
{
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
    // NCCL 2.29 and later refuse requirements that do not come from their initializer (it sets
    // the struct's size, magic and version): a zeroed struct fails before GIN is even tried.
    ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
    ncclDevCommRequirements reqs = {}; // 2.28: a plain struct, zeroed (no initializer)
#endif
    ncclDevComm *dev = nullptr;
    *state = nullptr;
    if (sizeof(ncclDevComm) > room) {
        *what = "the plan's room for ncclDevComm (NCCLX_NET_DEV_COMM_BYTES) is too small";
        return ncclInternalError;
    }
    dev = new (std::nothrow) ncclDevComm();
    if (dev == nullptr) {
        *what = "host memory for ncclDevComm";
        return ncclSystemError;
    }
    reqs.ginForceEnable = true;
    reqs.ginContextCount = NCCLX_NET_CONTEXTS;
    reqs.ginSignalCount = signals;
    *what = "ncclDevCommCreate with GIN";
    ncclResult_t res = ncclDevCommCreate(comm, &reqs, dev);
    if (res == ncclSuccess && dev->ginContextCount == 0) {
        // A kernel may never use GIN without a context (undefined in NCCL): refuse it here.
        *what = "ncclDevCommCreate (no GIN context came up)";
        (void)ncclDevCommDestroy(comm, dev);
        res = ncclInvalidUsage;
    }
    if (res != ncclSuccess) {
        delete dev;
        return res;
    }
    if (cudaMemcpyAsync(device_copy, dev, sizeof(*dev), cudaMemcpyHostToDevice, stream) !=
        cudaSuccess) {
        *what = "cudaMemcpyAsync of ncclDevComm";
        (void)ncclDevCommDestroy(comm, dev);
        delete dev;
        return ncclUnhandledCudaError;
    }
    *state = dev;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclx_gin_destroy(ncclComm_t comm, void *state)
{
    ncclDevComm *dev = static_cast<ncclDevComm *>(state);
    if (dev == nullptr) {
        return ncclSuccess;
    }
    ncclResult_t res = ncclDevCommDestroy(comm, dev);
    delete dev;
    return res;
}
