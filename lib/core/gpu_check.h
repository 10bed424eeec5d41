/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Checks for CUDA and NCCL calls: report the failing call once, with the library's error
 * string, and return the status (…_STATUS) or jump to the cleanup label (…_CHECK_GOTO).
 */
#ifndef NCCLX_LIB_GPU_CHECK_H_
#define NCCLX_LIB_GPU_CHECK_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "error.h"

ncclxResult_t ncclx_cuda_status(cudaError_t err, const char *call, const char *file, int line);
ncclxResult_t ncclx_nccl_status(ncclResult_t err, const char *call, const char *file, int line);

#define NCCLX_CUDA_STATUS(call) ncclx_cuda_status((call), #call, __FILE__, __LINE__)
#define NCCLX_NCCL_STATUS(call) ncclx_nccl_status((call), #call, __FILE__, __LINE__)
#define NCCLX_CUDA_CHECK_GOTO(call, res, label) \
    NCCLX_CHECK_GOTO(NCCLX_CUDA_STATUS(call), res, label)
#define NCCLX_NCCL_CHECK_GOTO(call, res, label) \
    NCCLX_CHECK_GOTO(NCCLX_NCCL_STATUS(call), res, label)

/** Logs and clears a CUDA error the application left pending, before call launches. */
void ncclx_clear_stale_cuda_error(const char *call);

/** first if it is an error, else res: cleanup paths report the first failure. */
static inline ncclxResult_t ncclx_first_error(ncclxResult_t first, ncclxResult_t res)
{
    return first != ncclxSuccess ? first : res;
}

#endif /* NCCLX_LIB_GPU_CHECK_H_ */
