/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Logging.  NCCLX_DEBUG=NONE|WARN|INFO|TRACE sets the level (default WARN) and
 * NCCLX_DEBUG_FILE a destination file (default stderr; %h is replaced by the host name and %p
 * by the process id).  Each line reads
 *
 *     host:pid:rank NCCLX LEVEL file:line message
 *
 * Embedded launchers that own their stderr install a callback instead: it receives every line
 * at or under the level, and nothing is then written to the file or stderr.
 */
#ifndef NCCLX_LOG_H_
#define NCCLX_LOG_H_

#include <ncclx/result.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NCCLX_LOG_NONE = 0,
    NCCLX_LOG_WARN = 1,
    NCCLX_LOG_INFO = 2,
    NCCLX_LOG_TRACE = 3
} ncclxLogLevel_t;

/**
 * Receives one formatted line (no trailing newline, valid only during the call).  Called
 * without any libncclx lock held, in the thread that logs: it may call libncclx (a call that
 * fails logs again, so guard against unbounded recursion) and may run in several threads at
 * once.
 */
typedef void (*ncclxLogCallback_t)(ncclxLogLevel_t level, const char *line, void *user_data);

/**
 * Installs callback (NULL restores the file/stderr destination).  Thread-safe; a line that
 * another thread is delivering at that moment may still reach the previous callback, so keep
 * its user_data alive until no thread can be logging.
 */
ncclxResult_t ncclxSetLogCallback(ncclxLogCallback_t callback, void *user_data);

/** Overrides NCCLX_DEBUG for this process. */
ncclxResult_t ncclxSetLogLevel(ncclxLogLevel_t level);

/** The level in force (NCCLX_DEBUG, or the last ncclxSetLogLevel). */
ncclxLogLevel_t ncclxGetLogLevel(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_LOG_H_ */
