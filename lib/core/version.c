/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <cuda_runtime_api.h>
#include <hwloc.h>
#include <nccl.h>
#include <pmix.h>

#include <ncclx/version.h>

#include "error.h"

ncclxResult_t ncclxGetVersion(int *version)
{
    if (version == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxGetVersion: version is NULL");
    }
    *version = NCCLX_VERSION_CODE;
    return ncclxSuccess;
}

ncclxResult_t ncclxGetVersionInfo(ncclxVersionInfo_t *info)
{
    ncclxVersionInfo_t result = {NCCLX_VERSION_CODE, 0, 0, 0, NULL};
    cudaError_t cuda_err;
    ncclResult_t nccl_err;
    if (info == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxGetVersionInfo: info is NULL");
    }
    nccl_err = ncclGetVersion(&result.nccl);
    if (nccl_err != ncclSuccess) {
        return NCCLX_ERROR(ncclxNcclError, "ncclGetVersion failed: %s",
                           ncclGetErrorString(nccl_err));
    }
    cuda_err = cudaRuntimeGetVersion(&result.cuda_runtime);
    if (cuda_err != cudaSuccess) {
        return NCCLX_ERROR(ncclxCudaError, "cudaRuntimeGetVersion failed: %s",
                           cudaGetErrorString(cuda_err));
    }
    result.hwloc = hwloc_get_api_version();
    result.pmix = PMIx_Get_version();
    *info = result;
    return ncclxSuccess;
}
