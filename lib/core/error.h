/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Internal error reporting.  An error is logged once, where it is first detected, by
 * ncclx_error(), which also records it as this thread's last error; callers pass the status up
 * with NCCLX_CHECK* and add nothing.
 */
#ifndef NCCLX_LIB_ERROR_H_
#define NCCLX_LIB_ERROR_H_

#include <ncclx/result.h>

#include "log.h"

/** Records "message" as the last error, logs it at WARN, and returns result. */
ncclxResult_t ncclx_error_at(ncclxResult_t result, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define NCCLX_ERROR(result, ...) ncclx_error_at((result), __FILE__, __LINE__, __VA_ARGS__)

/** Clears this thread's last error (entry points that succeed need not call it). */
void ncclx_error_clear(void);

/** Returns from the enclosing function if call fails (the error was already reported). */
#define NCCLX_CHECK(call)                  \
    do {                                   \
        ncclxResult_t ncclx_res_ = (call); \
        if (ncclx_res_ != ncclxSuccess) {  \
            return ncclx_res_;             \
        }                                  \
    } while (0)

/** Stores the status of call in res and jumps to label if it failed. */
#define NCCLX_CHECK_GOTO(call, res, label) \
    do {                                   \
        (res) = (call);                    \
        if ((res) != ncclxSuccess) {       \
            goto label;                    \
        }                                  \
    } while (0)

#endif /* NCCLX_LIB_ERROR_H_ */
