/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Which CUDA device a local rank uses.  The choice itself is a pure function of the device
 * count, the local rank and an optional request; only ncclx_placement_cuda_gpu() asks CUDA.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "env.h"
#include "error.h"
#include "placement.h"

/* For messages only: what the user restricted CUDA to. */
static const char *ncclx_visible_devices(void)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    return v != NULL ? v : "(unset)";
}

ncclxResult_t ncclx_placement_choose_device(int device_count, uint32_t local_rank,
                                            uint32_t local_size,
                                            const ncclx_device_request_t *request, int *device)
{
    if (local_rank >= local_size) {
        return NCCLX_ERROR(ncclxInvalidArgument, "local rank %u is not below the local size %u",
                           local_rank, local_size);
    }
    if (device_count <= 0) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s): libncclx needs "
                           "one GPU per process",
                           ncclx_visible_devices());
    }
    if (request != NULL && request->device >= 0) {
        if (request->device >= device_count) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s=%" PRId64 " asks for a CUDA device that does not exist: %d "
                               "visible (CUDA_VISIBLE_DEVICES=%s)",
                               request->source, request->device, device_count,
                               ncclx_visible_devices());
        }
        *device = (int)request->device;
        return ncclxSuccess;
    }
    if (local_rank < (uint32_t)device_count) {
        *device = (int)local_rank;
        return ncclxSuccess;
    }
    if (device_count == 1) {
        *device = 0; /* the launcher narrowed CUDA_VISIBLE_DEVICES to this process's GPU */
        return ncclxSuccess;
    }
    return NCCLX_ERROR(ncclxInvalidArgument,
                       "local rank %u of %u has no GPU of its own: only %d CUDA devices are "
                       "visible (CUDA_VISIBLE_DEVICES=%s); run at most %d processes per node "
                       "or set NCCLX_CUDA_DEVICE",
                       local_rank, local_size, device_count, ncclx_visible_devices(), device_count);
}

ncclxResult_t ncclx_placement_device_request(int32_t explicit_device, const char *explicit_name,
                                             ncclx_device_request_t *request)
{
    ncclx_device_request_t r = {-1, NULL};
    if (explicit_device >= 0) {
        r.device = explicit_device;
        r.source = explicit_name;
    } else if (ncclx_env_raw(NCCLX_ENV_CUDA_DEVICE) != NULL) {
        uint64_t value = 0;
        NCCLX_CHECK(ncclx_env_get_uint(NCCLX_ENV_CUDA_DEVICE, &value));
        r.device = (int64_t)value;
        r.source = "NCCLX_CUDA_DEVICE";
    }
    *request = r;
    return ncclxSuccess;
}

ncclxResult_t ncclx_placement_cuda_gpu(uint32_t local_rank, uint32_t local_size,
                                       const ncclx_device_request_t *request, int *device,
                                       char *busid, size_t len)
{
    char raw[NCCLX_PLACEMENT_BUSID_LEN] = "";
    int count = 0;
    int chosen = -1;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* do not leave the failure for the application's next check */
        return NCCLX_ERROR(ncclxCudaError,
                           "no usable CUDA device: cudaGetDeviceCount failed: %s (%s); a GPU "
                           "and its driver are needed (or name the GPU by PCI bus id)",
                           cudaGetErrorName(err), cudaGetErrorString(err));
    }
    NCCLX_CHECK(ncclx_placement_choose_device(count, local_rank, local_size, request, &chosen));
    err = cudaDeviceGetPCIBusId(raw, (int)sizeof(raw), chosen);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return NCCLX_ERROR(ncclxCudaError, "cudaDeviceGetPCIBusId(device %d) failed: %s (%s)",
                           chosen, cudaGetErrorName(err), cudaGetErrorString(err));
    }
    snprintf(busid, len, "%s", raw);
    *device = chosen;
    return ncclxSuccess;
}
