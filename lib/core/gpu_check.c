/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include "gpu_check.h"

ncclxResult_t ncclx_cuda_status(cudaError_t err, const char *call, const char *file, int line)
{
    if (err == cudaSuccess) {
        return ncclxSuccess;
    }
    return ncclx_error_at(ncclxCudaError, file, line, "%s failed: %s (%s)", call,
                          cudaGetErrorName(err), cudaGetErrorString(err));
}

ncclxResult_t ncclx_nccl_status(ncclResult_t err, const char *call, const char *file, int line)
{
    if (err == ncclSuccess) {
        return ncclxSuccess;
    }
    return ncclx_error_at(ncclxNcclError, file, line, "%s failed: %s", call,
                          ncclGetErrorString(err));
}
