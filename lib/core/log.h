/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Internal logging macros.  NCCLX_LOG_MAX_LEVEL is the compile-time floor: lines above it
 * are compiled out.  The runtime level comes from NCCLX_DEBUG or ncclxSetLogLevel().
 */
#ifndef NCCLX_LIB_LOG_H_
#define NCCLX_LIB_LOG_H_

#include <ncclx/log.h>

#ifndef NCCLX_LOG_MAX_LEVEL
#define NCCLX_LOG_MAX_LEVEL NCCLX_LOG_TRACE
#endif

void ncclx_log_at(ncclxLogLevel_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/** Cheap test used by the macros, so that arguments are not evaluated when filtered out. */
int ncclx_log_enabled(ncclxLogLevel_t level);

/** Rank shown in every line once the job is known (-1: not yet). */
void ncclx_log_set_rank(int rank);

/** Re-reads NCCLX_DEBUG and NCCLX_DEBUG_FILE (tests; init of a new context). */
void ncclx_log_reload(void);

#define NCCLX_LOG(level, ...)                                             \
    do {                                                                  \
        if ((level) <= NCCLX_LOG_MAX_LEVEL && ncclx_log_enabled(level)) { \
            ncclx_log_at((level), __FILE__, __LINE__, __VA_ARGS__);       \
        }                                                                 \
    } while (0)

#define NCCLX_WARN(...)  NCCLX_LOG(NCCLX_LOG_WARN, __VA_ARGS__)
#define NCCLX_INFO(...)  NCCLX_LOG(NCCLX_LOG_INFO, __VA_ARGS__)
#define NCCLX_TRACE(...) NCCLX_LOG(NCCLX_LOG_TRACE, __VA_ARGS__)

#endif /* NCCLX_LIB_LOG_H_ */
