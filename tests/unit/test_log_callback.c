/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A log callback that calls back into libncclx: it reads the level, changes it, and makes a
 * call that fails (and so logs again).  None of this may deadlock: the callback runs without
 * the log lock.  The logging runs in a helper thread so that a deadlock shows up as a failed
 * test after a few seconds instead of a hung `make check`.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "ncclx_test.h"

typedef struct {
    int depth;      /* callback nesting right now */
    int max_depth;  /* deepest nesting seen */
    int lines;      /* lines delivered */
    int level_seen; /* what ncclxGetLogLevel() returned inside the callback */
    char nested[512];
} reentry_t;

static reentry_t seen;

static void reentrant_callback(ncclxLogLevel_t level, const char *line, void *user_data)
{
    reentry_t *r = user_data;
    (void)level;
    r->lines++;
    r->depth++;
    if (r->depth > r->max_depth) {
        r->max_depth = r->depth;
    }
    if (r->depth == 1) {
        /* Each of these takes the log lock; the last one also logs a WARN line of its own. */
        r->level_seen = (int)ncclxGetLogLevel();
        (void)ncclxSetLogLevel(NCCLX_LOG_WARN);
        (void)ncclxSetLogLevel((ncclxLogLevel_t)77);
    } else {
        snprintf(r->nested, sizeof(r->nested), "%s", line);
    }
    r->depth--;
}

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    ncclxResult_t res;
} worker_t;

static void *log_worker(void *arg)
{
    worker_t *w = arg;
    /* A failing call: its error is logged at WARN, which reaches the callback. */
    ncclxResult_t res = ncclxSetLogLevel((ncclxLogLevel_t)99);
    pthread_mutex_lock(&w->lock);
    w->res = res;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void test_callback_may_call_libncclx(void **state)
{
    worker_t w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, ncclxSuccess};
    pthread_t thread;
    struct timespec deadline;
    int rc = 0;
    (void)state;
    memset(&seen, 0, sizeof(seen));
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_WARN));
    assert_ncclx_ok(ncclxSetLogCallback(reentrant_callback, &seen));
    assert_int_equal(pthread_create(&thread, NULL, log_worker, &w), 0);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&w.lock);
    while (!w.done && rc == 0) {
        rc = pthread_cond_timedwait(&w.cond, &w.lock, &deadline);
    }
    pthread_mutex_unlock(&w.lock);
    if (!w.done) {
        /* The worker is stuck on the log lock: report it; exiting ends the stuck thread. */
        fail_msg("a log callback that calls libncclx deadlocked (no return after 10 s: %s)",
                 rc == ETIMEDOUT ? "timed out" : "wait failed");
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(w.res, ncclxInvalidArgument);
    /* The outer line, then the nested one logged by the failing call inside the callback. */
    assert_int_equal(seen.lines, 2);
    assert_int_equal(seen.max_depth, 2);
    assert_int_equal(seen.level_seen, NCCLX_LOG_WARN);
    assert_non_null(strstr(seen.nested, "level 77 is not an ncclxLogLevel_t"));
    assert_ncclx_ok(ncclxSetLogCallback(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_callback_may_call_libncclx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
