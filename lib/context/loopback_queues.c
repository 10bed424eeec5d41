/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Hardware queues for a loopback team (lib/context/loopback_queues.h says why they matter).
 */
#include "loopback_queues.h"

#include <cuda.h>
#include <errno.h>
#include <stdlib.h>

#include "error.h"
#include "gpu_check.h"

#define NCCLX_QUEUES_VARIABLE "CUDA_DEVICE_MAX_CONNECTIONS"

uint32_t ncclx_loopback_queues_of(const char *value)
{
    char *end = NULL;
    unsigned long long v;
    if (value == NULL || *value < '0' || *value > '9') {
        return NCCLX_LOOPBACK_DEFAULT_QUEUES;
    }
    errno = 0;
    v = strtoull(value, &end, 10);
    if (*end != '\0' || v < 1) {
        return NCCLX_LOOPBACK_DEFAULT_QUEUES;
    }
    /* More than the hardware has is read as all of it: the caller asked for many queues, and
     * counting fewer would refuse teams that run. */
    return errno == ERANGE || v > NCCLX_LOOPBACK_MAX_QUEUES ? NCCLX_LOOPBACK_MAX_QUEUES
                                                            : (uint32_t)v;
}

ncclxResult_t ncclx_loopback_queue_verdict(uint32_t ranks, uint32_t queues, int started_early)
{
    const uint32_t most = started_early ? (queues / 2 > 0 ? queues / 2 : 1) : queues;
    if (ranks > NCCLX_LOOPBACK_MAX_QUEUES) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxLoopbackInit: num_ranks=%u: a loopback team runs each rank on "
                           "its own stream, and a GPU has at most %u hardware queues "
                           "(" NCCLX_QUEUES_VARIABLE "); more ranks would share queues and a "
                           "rank's kernel could wait behind a peer that waits for it: use at "
                           "most %u ranks",
                           ranks, NCCLX_LOOPBACK_MAX_QUEUES, NCCLX_LOOPBACK_MAX_QUEUES);
    }
    if (ranks <= most) {
        return ncclxSuccess;
    }
    if (started_early) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxLoopbackInit: num_ranks=%u but CUDA started in this process "
                           "before ncclxLoopbackInit with " NCCLX_QUEUES_VARIABLE "=%u hardware "
                           "queues, too late to raise it, and shared with the program's own "
                           "streams (a team may use half: %u ranks): the ranks' streams could "
                           "share queues and a rank's kernel wait behind a peer until the "
                           "timeout; export " NCCLX_QUEUES_VARIABLE "=32 before the program "
                           "starts CUDA (before importing torch, before compute-sanitizer), or "
                           "use at most %u ranks",
                           ranks, queues, most, most);
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

/* The queues of the context this library saw start (0: it has not seen one start): a later
 * team of the process then counts those, not "started early". */
static uint32_t ncclx_queues_of_our_start;

ncclxResult_t ncclx_loopback_check_queues(uint32_t ranks, int cuda_device)
{
    int active = 0;
    /* Read before setenv, which may free what getenv returned. */
    const uint32_t queues_before = ncclx_loopback_queues_of(getenv(NCCLX_QUEUES_VARIABLE));
    /* Raised before anything below can start CUDA; a value the caller chose stays. */
    if (setenv(NCCLX_QUEUES_VARIABLE, "32", 0) != 0) {
        return NCCLX_ERROR(ncclxSystemError,
                           "ncclxLoopbackInit: setenv(" NCCLX_QUEUES_VARIABLE ") failed");
    }
    NCCLX_CHECK(ncclx_primary_context_active(cuda_device, &active));
    const uint32_t ours = __atomic_load_n(&ncclx_queues_of_our_start, __ATOMIC_ACQUIRE);
    if (!active) {
        /* This team's init starts the context, with the value in the environment now. */
        const uint32_t queues = ncclx_loopback_queues_of(getenv(NCCLX_QUEUES_VARIABLE));
        NCCLX_CHECK(ncclx_loopback_queue_verdict(ranks, queues, 0));
        __atomic_store_n(&ncclx_queues_of_our_start, queues, __ATOMIC_RELEASE);
        return ncclxSuccess;
    }
    if (ours != 0) { /* an earlier team of this process started it */
        return ncclx_loopback_queue_verdict(ranks, ours, 0);
    }
    /* Started before the library ran: with the value the process had then. */
    return ncclx_loopback_queue_verdict(ranks, queues_before, 1);
}
