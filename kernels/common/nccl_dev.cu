/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What needs NCCL's device API (C++): the LSA peer-pointer table of a symmetric window.
 */
#include <nccl.h>
#include <nccl_device.h>

#include "kernels.h"

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
