/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <cuda_runtime_api.h>

#include "env.h"
#include "gpu_check.h"
#include "placement_init.h"

ncclxResult_t ncclx_init_place(const ncclx_bootstrap_t *bs, const ncclxInitConfig_t *config,
                               int *cuda_device)
{
    ncclxResult_t res = ncclxSuccess;
    int count = 0;
    uint64_t device = bs->local_rank;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        return NCCLX_ERROR(ncclxCudaError, "no usable CUDA device on %s (rank %u): %s",
                           bs->hostname, bs->rank,
                           err != cudaSuccess ? cudaGetErrorString(err) : "no device visible");
    }
    if (config->cuda_device >= 0) {
        device = (uint64_t)config->cuda_device;
    } else if (ncclx_env_raw(NCCLX_ENV_CUDA_DEVICE) != NULL) {
        NCCLX_CHECK(ncclx_env_get_uint(NCCLX_ENV_CUDA_DEVICE, &device));
    }
    if (device >= (uint64_t)count) {
        return NCCLX_ERROR(ncclxInvalidArgument, "CUDA device %llu does not exist: %d visible "
                           "(local rank %u of %u; check CUDA_VISIBLE_DEVICES, NCCLX_CUDA_DEVICE)",
                           (unsigned long long)device, count, bs->local_rank, bs->local_size);
    }
    NCCLX_CUDA_CHECK_GOTO(cudaSetDevice((int)device), res, out);
    *cuda_device = (int)device;
out:
    return res;
}
