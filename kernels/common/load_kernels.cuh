/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The host helper behind every kernel file's module loader (ncclx_*_load, which each room
 * calls at init, lib/plan/rooms.h): forces the load of a list of kernels.  Shared by the LL,
 * HT and M2N kernel files, so that no kernel folder includes another's helpers.
 */
#ifndef NCCLX_KERNELS_LOAD_KERNELS_CUH_
#define NCCLX_KERNELS_LOAD_KERNELS_CUH_

#include <cuda_runtime_api.h>

namespace ncclx
{

// Loads the modules of n kernels now (cudaFuncGetAttributes forces the load), so that no
// later launch, possibly inside a graph capture, pays for it.
inline cudaError_t load_kernels(const void *const *kernels, int n)
{
    cudaFuncAttributes attr;
    for (int i = 0; i < n; i++) {
        cudaError_t err = cudaFuncGetAttributes(&attr, kernels[i]);
        if (err != cudaSuccess) {
            return err;
        }
    }
    return cudaSuccess;
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_LOAD_KERNELS_CUH_ */
