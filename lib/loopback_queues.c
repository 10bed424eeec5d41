/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Hardware queues for a loopback team (lib/loopback_queues.h says why they matter).
 */
#include "loopback_queues.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "gpu_check.h"

#define NCCLX_QUEUES_VARIABLE "CUDA_DEVICE_MAX_CONNECTIONS"

uint32_t ncclx_loopback_queues_of(const char *value)
{
    char *end = NULL;
    unsigned long v;
    if (value == NULL || *value < '0' || *value > '9') {
        return NCCLX_LOOPBACK_DEFAULT_QUEUES;
    }
    v = strtoul(value, &end, 10);
    if (*end != '\0' || v < 1 || v > NCCLX_LOOPBACK_MAX_QUEUES) {
        return NCCLX_LOOPBACK_DEFAULT_QUEUES;
    }
    return (uint32_t)v;
}

ncclxResult_t ncclx_loopback_queue_verdict(uint32_t ranks, uint32_t queues, int started_early)
{
    if (ranks > NCCLX_LOOPBACK_MAX_QUEUES) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxLoopbackInit: num_ranks=%u: a loopback team runs each rank on "
                           "its own stream, and a GPU has at most %u hardware queues "
                           "(" NCCLX_QUEUES_VARIABLE "); more ranks would share queues and a "
                           "rank's kernel could wait behind a peer that waits for it: use at "
                           "most %u ranks",
                           ranks, NCCLX_LOOPBACK_MAX_QUEUES, NCCLX_LOOPBACK_MAX_QUEUES);
    }
    if (ranks <= queues) {
        return ncclxSuccess;
    }
    if (started_early) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxLoopbackInit: num_ranks=%u but CUDA started in this process "
                           "before ncclxLoopbackInit with " NCCLX_QUEUES_VARIABLE "=%u hardware "
                           "queues, too late to raise it: the ranks' streams would share queues "
                           "and a rank's kernel could wait behind a peer until the timeout; "
                           "export " NCCLX_QUEUES_VARIABLE "=32 before the program starts CUDA "
                           "(before importing torch, before compute-sanitizer), or use at most "
                           "%u ranks",
                           ranks, queues, queues);
    }
    return NCCLX_ERROR(ncclxInvalidUsage,
                       "ncclxLoopbackInit: num_ranks=%u but " NCCLX_QUEUES_VARIABLE "=%u gives "
                       "the GPU only %u hardware queues: the ranks' streams would share queues "
                       "and a rank's kernel could wait behind a peer until the timeout; "
                       "raise " NCCLX_QUEUES_VARIABLE
                       " to at least %u (at most 32) or use fewer ranks",
                       ranks, queues, queues, ranks);
}

/* A driver function of the CUDA 12.0 ABI (the runtime's lookup by version where it has one). */
static cudaError_t ncclx_driver_entry_point(const char *symbol, void **fn,
                                            enum cudaDriverEntryPointQueryResult *found)
{
#if CUDART_VERSION >= 12050
    return cudaGetDriverEntryPointByVersion(symbol, fn, 12000, cudaEnableDefault, found);
#else
    return cudaGetDriverEntryPoint(symbol, fn, cudaEnableDefault, found);
#endif
}

/* Whether the primary context of cuda_device exists already (*active), through the driver's
 * entry point: the runtime has no call for it, and this library links no libcuda of its own. */
static ncclxResult_t ncclx_primary_context_active(int cuda_device, int *active)
{
    typedef CUresult (*get_device_fn)(CUdevice *, int);
    typedef CUresult (*get_state_fn)(CUdevice, unsigned int *, int *);
    void *get_device = NULL, *get_state = NULL;
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUdevice dev = 0;
    unsigned int flags = 0;
    CUresult cu;
    NCCLX_CHECK(NCCLX_CUDA_STATUS(ncclx_driver_entry_point("cuDeviceGet", &get_device, &found)));
    if (found != cudaDriverEntryPointSuccess) {
        return NCCLX_ERROR(ncclxCudaError, "ncclxLoopbackInit: the driver has no cuDeviceGet");
    }
    NCCLX_CHECK(NCCLX_CUDA_STATUS(
        ncclx_driver_entry_point("cuDevicePrimaryCtxGetState", &get_state, &found)));
    if (found != cudaDriverEntryPointSuccess) {
        return NCCLX_ERROR(ncclxCudaError,
                           "ncclxLoopbackInit: the driver has no cuDevicePrimaryCtxGetState");
    }
    cu = ((get_device_fn)get_device)(&dev, cuda_device);
    if (cu != CUDA_SUCCESS) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxLoopbackInit: cuda_device=%d: cuDeviceGet failed (%d)",
                           cuda_device, (int)cu);
    }
    cu = ((get_state_fn)get_state)(dev, &flags, active);
    if (cu != CUDA_SUCCESS) {
        return NCCLX_ERROR(ncclxCudaError,
                           "ncclxLoopbackInit: cuDevicePrimaryCtxGetState failed (%d)", (int)cu);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_loopback_check_queues(uint32_t ranks, int cuda_device)
{
    char before[16] = "";
    const char *value = getenv(NCCLX_QUEUES_VARIABLE);
    int active = 0, had_value = value != NULL;
    if (had_value) { /* setenv may free what getenv returned */
        snprintf(before, sizeof(before), "%s", value);
    }
    /* Raised before anything below can start CUDA; a value the caller chose stays. */
    if (setenv(NCCLX_QUEUES_VARIABLE, "32", 0) != 0) {
        return NCCLX_ERROR(ncclxSystemError,
                           "ncclxLoopbackInit: setenv(" NCCLX_QUEUES_VARIABLE ") failed");
    }
    NCCLX_CHECK(ncclx_primary_context_active(cuda_device, &active));
    /* A context that existed before got the value the process had then. */
    const uint32_t queues = ncclx_loopback_queues_of(active ? (had_value ? before : NULL)
                                                            : getenv(NCCLX_QUEUES_VARIABLE));
    return ncclx_loopback_queue_verdict(ranks, queues, active);
}
