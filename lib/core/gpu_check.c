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

/*
 * Before a launch: a CUDA error left by the application (cudaGetLastError is per thread and
 * sticky until read) would otherwise be taken for this launch's failure, leaving the
 * protocol out of step with what really ran.  It is logged and cleared here.
 */
void ncclx_clear_stale_cuda_error(const char *call)
{
    cudaError_t stale = cudaGetLastError();
    if (stale != cudaSuccess) {
        NCCLX_WARN("%s: clearing a CUDA error left by an earlier call of the application: %s", call,
                   cudaGetErrorString(stale));
    }
}
