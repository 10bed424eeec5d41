/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Status codes.  Every libncclx call returns an ncclxResult_t; 0 is success.  A failing call
 * also records a one-line message naming the offending field or the call that failed, which
 * ncclxGetLastError() returns (per thread).
 */
#ifndef NCCLX_RESULT_H_
#define NCCLX_RESULT_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ncclxSuccess = 0,
    ncclxInvalidArgument = 1,   /**< a field or argument has a bad value; the message names it */
    ncclxInvalidUsage = 2,      /**< valid arguments, wrong moment or object state */
    ncclxResourceExhausted = 3, /**< the plan holds no more of something (handles, groups, bytes) */
    ncclxUnsupported = 4,       /**< not supported by this build, GPU or NCCL */
    ncclxSystemError = 5,       /**< an OS call failed (errno in the message) */
    ncclxCudaError = 6,         /**< a CUDA runtime call failed */
    ncclxNcclError = 7,         /**< an NCCL call failed */
    ncclxPmixError = 8,         /**< a PMIx call failed */
    ncclxHwlocError = 9,        /**< an hwloc call failed */
    ncclxTimeout = 10,          /**< a wait (host or GPU) ran past its timeout */
    ncclxOutOfMemory = 11,      /**< an allocation at init failed, or a plan does not fit */
    ncclxRemoteError = 12,      /**< a peer failed or was masked out */
    ncclxInternalError = 13,    /**< a libncclx bug: please report it */
    ncclxNumResults = 14
} ncclxResult_t;

/** Short constant description of a status code ("invalid argument"); never NULL. */
const char *ncclxGetErrorString(ncclxResult_t result);

/**
 * The message of the last call that failed on this thread ("plan.ep_groups[1]->hidden=100:
 * ..."), or "" if none has.  Valid until the next failing call on this thread.
 */
const char *ncclxGetLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_RESULT_H_ */
