/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

/* Per thread, so that concurrent callers never see each other's messages. */
static _Thread_local char ncclx_last_error[512];

static const char *const ncclx_result_strings[ncclxNumResults] = {
    [ncclxSuccess] = "success",
    [ncclxInvalidArgument] = "invalid argument",
    [ncclxInvalidUsage] = "invalid usage",
    [ncclxResourceExhausted] = "resource exhausted",
    [ncclxUnsupported] = "unsupported",
    [ncclxSystemError] = "system error",
    [ncclxCudaError] = "CUDA error",
    [ncclxNcclError] = "NCCL error",
    [ncclxPmixError] = "PMIx error",
    [ncclxHwlocError] = "hwloc error",
    [ncclxTimeout] = "timeout",
    [ncclxOutOfMemory] = "out of memory",
    [ncclxRemoteError] = "remote error",
    [ncclxInternalError] = "internal error",
};

const char *ncclxGetErrorString(ncclxResult_t result)
{
    if ((unsigned)result >= ncclxNumResults) {
        return "unknown result code";
    }
    return ncclx_result_strings[result];
}

const char *ncclxGetLastError(void)
{
    return ncclx_last_error;
}

void ncclx_error_clear(void)
{
    ncclx_last_error[0] = '\0';
}

ncclxResult_t ncclx_error_at(ncclxResult_t result, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ncclx_last_error, sizeof(ncclx_last_error), fmt, ap);
    va_end(ap);
    if (ncclx_log_enabled(NCCLX_LOG_WARN)) {
        ncclx_log_at(NCCLX_LOG_WARN, file, line, "%s: %s", ncclxGetErrorString(result),
                     ncclx_last_error);
    }
    return result;
}
