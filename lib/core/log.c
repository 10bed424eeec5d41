/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Logging.  The level, destination and callback are process-wide by nature (one stderr, one
 * NCCLX_DEBUG), so they live in one lock-protected state block.  The level and the loaded flag
 * are also atomics: ncclx_log_enabled() runs on the host path of every operation and must not
 * take the lock (nor wait for a line being written or a log file being opened under it).
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "error.h"
#include "log.h"

typedef struct {
    pthread_mutex_t lock;
    /* Written under the lock, read without it by ncclx_log_enabled(). */
    atomic_int loaded;    /* NCCLX_DEBUG and NCCLX_DEBUG_FILE were read (release: host is set) */
    atomic_int level;     /* an ncclxLogLevel_t */
    int level_overridden; /* ncclxSetLogLevel() wins over NCCLX_DEBUG */
    FILE *file;           /* NULL: stderr */
    ncclxLogCallback_t callback;
    void *user_data;
    int rank;
    char host[64];
} ncclx_log_state_t;

static ncclx_log_state_t ncclx_log = {
    .lock = PTHREAD_MUTEX_INITIALIZER, .level = NCCLX_LOG_WARN, .rank = -1};

static const char *const ncclx_level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

/* Expands %h (host) and %p (pid) in the NCCLX_DEBUG_FILE pattern. */
static void ncclx_log_expand_path(const char *pattern, const char *host, char *out, size_t len)
{
    size_t used = 0;
    for (const char *p = pattern; *p != '\0' && used + 1 < len; p++) {
        int n = 0;
        if (p[0] == '%' && p[1] == 'h') {
            n = snprintf(out + used, len - used, "%s", host);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            n = snprintf(out + used, len - used, "%d", (int)getpid());
            p++;
        } else {
            out[used] = *p;
            n = 1;
        }
        used += (n > 0) ? (size_t)n : 0;
    }
    out[used < len ? used : len - 1] = '\0';
}

/* Called with the lock held. */
static void ncclx_log_load_locked(void)
{
    int index = NCCLX_LOG_WARN;
    const char *path;
    if (gethostname(ncclx_log.host, sizeof(ncclx_log.host)) != 0) {
        snprintf(ncclx_log.host, sizeof(ncclx_log.host), "unknown");
    }
    ncclx_log.host[sizeof(ncclx_log.host) - 1] = '\0';
    if (!ncclx_env_choice_quiet(NCCLX_ENV_DEBUG, &index)) {
        /* The logger cannot report through itself: say it once on stderr. */
        fprintf(stderr,
                "%s:%d NCCLX WARN NCCLX_DEBUG='%s' is not one of NONE, WARN, INFO, "
                "TRACE; using WARN\n",
                ncclx_log.host, (int)getpid(), ncclx_env_raw(NCCLX_ENV_DEBUG));
    }
    if (!ncclx_log.level_overridden) {
        atomic_store_explicit(&ncclx_log.level, index, memory_order_relaxed);
    }
    if (ncclx_log.file != NULL) {
        fclose(ncclx_log.file);
        ncclx_log.file = NULL;
    }
    path = ncclx_env_get_string(NCCLX_ENV_DEBUG_FILE);
    if (path != NULL) {
        char expanded[4096];
        ncclx_log_expand_path(path, ncclx_log.host, expanded, sizeof(expanded));
        ncclx_log.file = fopen(expanded, "a");
        if (ncclx_log.file == NULL) {
            fprintf(stderr,
                    "%s:%d NCCLX WARN cannot open NCCLX_DEBUG_FILE '%s'; logging to "
                    "stderr\n",
                    ncclx_log.host, (int)getpid(), expanded);
        }
    }
    atomic_store_explicit(&ncclx_log.loaded, 1, memory_order_release);
}

/* Lock-free once loaded; the first call (or racing first calls) load under the lock. */
static void ncclx_log_ensure_loaded(void)
{
    if (atomic_load_explicit(&ncclx_log.loaded, memory_order_acquire)) {
        return;
    }
    pthread_mutex_lock(&ncclx_log.lock);
    if (!atomic_load_explicit(&ncclx_log.loaded, memory_order_relaxed)) {
        ncclx_log_load_locked();
    }
    pthread_mutex_unlock(&ncclx_log.lock);
}

static ncclxLogLevel_t ncclx_log_level(void)
{
    return (ncclxLogLevel_t)atomic_load_explicit(&ncclx_log.level, memory_order_relaxed);
}

void ncclx_log_reload(void)
{
    pthread_mutex_lock(&ncclx_log.lock);
    ncclx_log.level_overridden = 0;
    ncclx_log_load_locked();
    pthread_mutex_unlock(&ncclx_log.lock);
}

int ncclx_log_enabled(ncclxLogLevel_t level)
{
    ncclx_log_ensure_loaded();
    return level != NCCLX_LOG_NONE && level <= ncclx_log_level();
}

void ncclx_log_set_rank(int rank)
{
    pthread_mutex_lock(&ncclx_log.lock);
    ncclx_log.rank = rank;
    pthread_mutex_unlock(&ncclx_log.lock);
}

void ncclx_log_at(ncclxLogLevel_t level, const char *file, int line, const char *fmt, ...)
{
    char message[1024];
    char text[1280];
    const char *base = strrchr(file, '/');
    ncclxLogCallback_t callback;
    void *user_data;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);

    ncclx_log_ensure_loaded();
    pthread_mutex_lock(&ncclx_log.lock);
    if (level == NCCLX_LOG_NONE || level > ncclx_log_level()) {
        pthread_mutex_unlock(&ncclx_log.lock);
        return;
    }
    snprintf(text, sizeof(text), "%s:%d:%d NCCLX %s %s:%d %s", ncclx_log.host, (int)getpid(),
             ncclx_log.rank, ncclx_level_names[level], base ? base + 1 : file, line, message);
    callback = ncclx_log.callback;
    user_data = ncclx_log.user_data;
    if (callback == NULL) {
        /* Under the lock: whole lines, and a reload cannot close the file under us. */
        FILE *out = ncclx_log.file != NULL ? ncclx_log.file : stderr;
        fprintf(out, "%s\n", text);
        fflush(out);
    }
    pthread_mutex_unlock(&ncclx_log.lock);
    /* Outside the lock: a callback may log again (a libncclx call that fails) or change the
     * level without deadlocking on a lock its own thread holds. */
    if (callback != NULL) {
        callback(level, text, user_data);
    }
}

ncclxResult_t ncclxSetLogCallback(ncclxLogCallback_t callback, void *user_data)
{
    ncclx_log_ensure_loaded();
    pthread_mutex_lock(&ncclx_log.lock);
    ncclx_log.callback = callback;
    ncclx_log.user_data = callback != NULL ? user_data : NULL;
    pthread_mutex_unlock(&ncclx_log.lock);
    return ncclxSuccess;
}

ncclxResult_t ncclxSetLogLevel(ncclxLogLevel_t level)
{
    if ((unsigned)level > NCCLX_LOG_TRACE) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxSetLogLevel: level %d is not an ncclxLogLevel_t", (int)level);
    }
    ncclx_log_ensure_loaded();
    pthread_mutex_lock(&ncclx_log.lock);
    atomic_store_explicit(&ncclx_log.level, (int)level, memory_order_relaxed);
    ncclx_log.level_overridden = 1;
    pthread_mutex_unlock(&ncclx_log.lock);
    return ncclxSuccess;
}

ncclxLogLevel_t ncclxGetLogLevel(void)
{
    ncclx_log_ensure_loaded();
    return ncclx_log_level();
}
