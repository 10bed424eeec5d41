/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Logging (callback, level filtering, line format, NCCLX_DEBUG, NCCLX_DEBUG_FILE) and the
 * NCCLX_* environment table (validation, listing).  Every test starts from an environment
 * without any variable of the table, and with the log state reloaded from it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ncclx_test.h"

#include "env.h"
#include "log.h"

#define MAX_LINES 16

typedef struct {
    int count;
    int per_level[NCCLX_LOG_TRACE + 1];
    char lines[MAX_LINES][512];
} captured_t;

static captured_t captured;

static void capture(ncclxLogLevel_t level, const char *line, void *user_data)
{
    captured_t *c = user_data;
    if (c->count < MAX_LINES) {
        snprintf(c->lines[c->count], sizeof(c->lines[0]), "%s", line);
    }
    c->count++;
    if ((unsigned)level <= NCCLX_LOG_TRACE) {
        c->per_level[level]++;
    }
}

/* Index of the first captured line containing needle, or -1. */
static int find_line(const char *needle)
{
    for (int i = 0; i < captured.count && i < MAX_LINES; i++) {
        if (strstr(captured.lines[i], needle) != NULL) {
            return i;
        }
    }
    return -1;
}

extern char **environ;

/* Removes every NCCLX_* variable, ours or not (a test harness may export its own), so that
 * each test sees only what it sets. */
static void unset_ncclx_variables(void)
{
    char name[256];
    int again = 1;
    while (again) {
        again = 0;
        for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
            const char *eq = strchr(*entry, '=');
            if (strncmp(*entry, "NCCLX_", 6) == 0 && eq != NULL &&
                (size_t)(eq - *entry) < sizeof(name)) {
                snprintf(name, sizeof(name), "%.*s", (int)(eq - *entry), *entry);
                unsetenv(name); /* environ changes under us: start over */
                again = 1;
                break;
            }
        }
    }
}

static int setup(void **state)
{
    (void)state;
    unset_ncclx_variables();
    ncclx_log_reload();
    memset(&captured, 0, sizeof(captured));
    return ncclxSetLogCallback(capture, &captured) == ncclxSuccess ? 0 : -1;
}

/* Temporary directory of test_debug_file, removed here even when the test failed. */
static char log_dir[64];
static char log_path[128];

static int teardown(void **state)
{
    (void)state;
    ncclxSetLogCallback(NULL, NULL);
    unset_ncclx_variables();
    ncclx_log_reload();
    if (log_dir[0] != '\0') {
        unlink(log_path);
        rmdir(log_dir);
        log_dir[0] = '\0';
    }
    return 0;
}

static void emit_one_of_each(void)
{
    NCCLX_WARN("warn line %d", 1);
    NCCLX_INFO("info line %d", 2);
    NCCLX_TRACE("trace line %d", 3);
}

static void test_callback_and_format(void **state)
{
    char where[64];
    int line;
    (void)state;
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_WARN); /* the default */
    line = __LINE__ + 1;
    NCCLX_WARN("the answer is %d", 42);
    assert_int_equal(captured.count, 1);
    assert_int_equal(captured.per_level[NCCLX_LOG_WARN], 1);
    assert_non_null(strstr(captured.lines[0], "NCCLX WARN "));
    snprintf(where, sizeof(where), " test_log_env.c:%d the answer is 42", line);
    assert_non_null(strstr(captured.lines[0], where));
    assert_null(strchr(captured.lines[0], '\n'));
    /* host:pid:rank first: the rank is -1 until the job is known. */
    snprintf(where, sizeof(where), ":%d:-1 NCCLX WARN", (int)getpid());
    assert_non_null(strstr(captured.lines[0], where));
    ncclx_log_set_rank(3);
    NCCLX_WARN("with a rank");
    snprintf(where, sizeof(where), ":%d:3 NCCLX WARN", (int)getpid());
    assert_non_null(strstr(captured.lines[1], where));
    ncclx_log_set_rank(-1);
    /* A failing call logs its message once, at WARN. */
    assert_ncclx_error(ncclxEnvGet(-1, NULL), ncclxInvalidArgument, "var is NULL");
    assert_int_equal(captured.count, 3);
    assert_non_null(strstr(captured.lines[2], "invalid argument: ncclxEnvGet: var is NULL"));
    /* Removing the callback stops delivery to it. */
    assert_ncclx_ok(ncclxSetLogCallback(NULL, &captured));
    ncclxSetLogLevel(NCCLX_LOG_NONE); /* keep stderr quiet */
    NCCLX_WARN("not captured");
    assert_int_equal(captured.count, 3);
}

static void test_level_filtering(void **state)
{
    (void)state;
    for (int level = NCCLX_LOG_NONE; level <= NCCLX_LOG_TRACE; level++) {
        memset(&captured, 0, sizeof(captured));
        assert_ncclx_ok(ncclxSetLogLevel((ncclxLogLevel_t)level));
        assert_int_equal(ncclxGetLogLevel(), level);
        emit_one_of_each();
        assert_int_equal(captured.count, level);
        assert_int_equal(captured.per_level[NCCLX_LOG_NONE], 0);
        assert_int_equal(captured.per_level[NCCLX_LOG_WARN], level >= NCCLX_LOG_WARN);
        assert_int_equal(captured.per_level[NCCLX_LOG_INFO], level >= NCCLX_LOG_INFO);
        assert_int_equal(captured.per_level[NCCLX_LOG_TRACE], level >= NCCLX_LOG_TRACE);
        if (level >= NCCLX_LOG_INFO) {
            assert_true(find_line("NCCLX INFO ") >= 0);
            assert_true(find_line("info line 2") >= 0);
        }
        if (level >= NCCLX_LOG_TRACE) {
            assert_true(find_line("NCCLX TRACE ") >= 0);
        }
    }
    /* ncclx_log_at filters too, for callers that skip ncclx_log_enabled(). */
    memset(&captured, 0, sizeof(captured));
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_WARN));
    ncclx_log_at(NCCLX_LOG_INFO, __FILE__, __LINE__, "info at WARN");
    ncclx_log_at(NCCLX_LOG_TRACE, __FILE__, __LINE__, "trace at WARN");
    ncclx_log_at(NCCLX_LOG_NONE, __FILE__, __LINE__, "a line of level NONE");
    assert_int_equal(captured.count, 0);
    ncclx_log_at(NCCLX_LOG_WARN, __FILE__, __LINE__, "warn at WARN");
    assert_int_equal(captured.count, 1);
}

/* The level check sits on the host path of every operation: it must not wait for the log
 * lock.  A reload whose NCCLX_DEBUG_FILE is a FIFO without a reader blocks in fopen() under
 * that lock until a reader opens it; meanwhile the level check must still answer. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int enabled;
} level_check_t;

static void *reload_worker(void *arg)
{
    (void)arg;
    ncclx_log_reload(); /* blocks in fopen() of the FIFO, under the log lock */
    return NULL;
}

static void *level_check_worker(void *arg)
{
    level_check_t *c = arg;
    int enabled = ncclx_log_enabled(NCCLX_LOG_WARN);
    pthread_mutex_lock(&c->lock);
    c->enabled = enabled;
    c->done = 1;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void test_level_check_lock_free(void **state)
{
    const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    level_check_t check = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, -1};
    pthread_t reloader, checker;
    struct timespec deadline;
    int reader, rc = 0, done;
    (void)state;
    snprintf(log_dir, sizeof(log_dir), "%s/ncclx-test-log-XXXXXX", tmp);
    assert_non_null(mkdtemp(log_dir));
    snprintf(log_path, sizeof(log_path), "%s/fifo", log_dir);
    assert_int_equal(mkfifo(log_path, 0600), 0);
    assert_int_equal(ncclx_log_enabled(NCCLX_LOG_WARN), 1); /* loaded, at WARN */
    setenv("NCCLX_DEBUG_FILE", log_path, 1);
    assert_int_equal(pthread_create(&reloader, NULL, reload_worker, NULL), 0);
    /* Let the reloader reach the blocking open (holding the lock). */
    nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 300 * 1000 * 1000}, NULL);
    assert_int_equal(pthread_create(&checker, NULL, level_check_worker, &check), 0);
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 2;
    pthread_mutex_lock(&check.lock);
    while (!check.done && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&check.cond, &check.lock, &deadline);
    }
    done = check.done;
    pthread_mutex_unlock(&check.lock);
    /* Unblock the reloader (pass or fail), then stop writing to the FIFO before closing it. */
    reader = open(log_path, O_RDONLY | O_NONBLOCK);
    assert_true(reader >= 0);
    assert_int_equal(pthread_join(reloader, NULL), 0);
    assert_int_equal(pthread_join(checker, NULL), 0);
    unsetenv("NCCLX_DEBUG_FILE");
    ncclx_log_reload();
    close(reader);
    assert_true(done); /* answered while the reload held the lock */
    assert_int_equal(check.enabled, 1);
}

static void test_set_level_rejects(void **state)
{
    (void)state;
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_INFO));
    assert_ncclx_error(ncclxSetLogLevel((ncclxLogLevel_t)4), ncclxInvalidArgument,
                       "level 4 is not an ncclxLogLevel_t");
    assert_ncclx_error(ncclxSetLogLevel((ncclxLogLevel_t)-1), ncclxInvalidArgument, "level -1");
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_INFO);
}

static void test_debug_env(void **state)
{
    (void)state;
    setenv("NCCLX_DEBUG", "info", 1); /* case does not matter */
    ncclx_log_reload();
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_INFO);
    emit_one_of_each();
    assert_int_equal(captured.count, 2);
    assert_true(find_line("info line 2") >= 0);

    memset(&captured, 0, sizeof(captured));
    setenv("NCCLX_DEBUG", "TRACE", 1);
    ncclx_log_reload();
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_TRACE);
    emit_one_of_each();
    assert_int_equal(captured.count, 3);

    memset(&captured, 0, sizeof(captured));
    setenv("NCCLX_DEBUG", "NONE", 1);
    ncclx_log_reload();
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_NONE);
    emit_one_of_each();
    assert_int_equal(captured.count, 0);

    /* ncclxSetLogLevel wins over NCCLX_DEBUG until the next reload. */
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_WARN));
    emit_one_of_each();
    assert_int_equal(captured.count, 1);
    ncclx_log_reload();
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_NONE);
    assert_ncclx_ok(ncclxEnvValidate());
}

static void test_debug_env_garbage(void **state)
{
    (void)state;
    setenv("NCCLX_DEBUG", "LOUD", 1);
    ncclx_log_reload(); /* falls back to WARN, with a note on stderr */
    assert_int_equal(ncclxGetLogLevel(), NCCLX_LOG_WARN);
    assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, "NCCLX_DEBUG='LOUD'");
    assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument,
                       "is not one of NONE, WARN, INFO, TRACE");
    setenv("NCCLX_DEBUG", "WARNING", 1); /* a prefix match would be a bug */
    assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, "NCCLX_DEBUG='WARNING'");
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *in = fopen(path, "r");
    size_t n;
    assert_non_null(in);
    n = fread(buf, 1, len - 1, in);
    buf[n] = '\0';
    fclose(in);
}

/* Open file descriptors of this process (Linux). */
static int count_open_fds(void)
{
    int count = 0;
    DIR *fds = opendir("/proc/self/fd");
    assert_non_null(fds);
    while (readdir(fds) != NULL) {
        count++;
    }
    closedir(fds);
    return count;
}

static void test_debug_file(void **state)
{
    const char *tmp = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
    char pattern[128], text[2048];
    int fds_before = count_open_fds();
    (void)state;
    snprintf(log_dir, sizeof(log_dir), "%s/ncclx-test-log-XXXXXX", tmp);
    assert_non_null(mkdtemp(log_dir));
    snprintf(pattern, sizeof(pattern), "%s/log.%%p", log_dir);
    snprintf(log_path, sizeof(log_path), "%s/log.%d", log_dir, (int)getpid());
    assert_ncclx_ok(ncclxSetLogCallback(NULL, NULL));
    setenv("NCCLX_DEBUG_FILE", pattern, 1);
    setenv("NCCLX_DEBUG", "INFO", 1);
    ncclx_log_reload();
    NCCLX_INFO("written to the file %s", "ok");
    NCCLX_TRACE("filtered out");
    read_file(log_path, text, sizeof(text));
    assert_non_null(strstr(text, "NCCLX INFO test_log_env.c:"));
    assert_non_null(strstr(text, "written to the file ok\n"));
    assert_null(strstr(text, "filtered out"));
    /* With a callback installed, nothing more goes to the file. */
    assert_ncclx_ok(ncclxSetLogCallback(capture, &captured));
    NCCLX_WARN("to the callback only");
    assert_int_equal(captured.count, 1);
    /* Reloading reopens (one file, not two); unsetting the variable closes it. */
    ncclx_log_reload();
    assert_int_equal(count_open_fds(), fds_before + 1);
    unsetenv("NCCLX_DEBUG_FILE");
    ncclx_log_reload();
    assert_int_equal(count_open_fds(), fds_before);
    read_file(log_path, text, sizeof(text));
    assert_null(strstr(text, "to the callback only"));
}

static void test_fence_timeout(void **state)
{
    static const char *const bad[] = {
        "abc", "-1", "1x", "0", "99999999", " 5", "+5", "86401", "99999999999999999999999"};
    uint64_t value = 0;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("NCCLX_FENCE_TIMEOUT_S", bad[i], 1);
        assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, "NCCLX_FENCE_TIMEOUT_S");
        value = 77;
        assert_ncclx_error(ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value),
                           ncclxInvalidArgument, bad[i]);
        assert_int_equal(value, 77); /* not written on failure */
    }
    setenv("NCCLX_FENCE_TIMEOUT_S", "60", 1);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_ncclx_ok(ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value));
    assert_int_equal(value, 60);
    setenv("NCCLX_FENCE_TIMEOUT_S", "86400", 1);
    assert_ncclx_ok(ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value));
    assert_int_equal(value, 86400);
    unsetenv("NCCLX_FENCE_TIMEOUT_S");
    assert_ncclx_ok(ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value));
    assert_int_equal(value, 300); /* the declared default */
}

/* NCCLX_M2N_PATH and NCCLX_EP_HT_PATH: AUTO or STAGED in any case; anything else is rejected
 * by name at init. */
static void check_path_variable(ncclx_env_id_t id, const char *name)
{
    static const char *const bad[] = {"direct", "0", "STAGE", "AUTO "};
    int index = -1;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv(name, bad[i], 1);
        assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, name);
    }
    setenv(name, "staged", 1);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_int_equal(ncclx_env_choice_quiet(id, &index), 1);
    assert_int_equal(index, 1);
    unsetenv(name);
    assert_int_equal(ncclx_env_choice_quiet(id, &index), 1);
    assert_int_equal(index, 0); /* AUTO */
}

static void test_m2n_path(void **state)
{
    (void)state;
    check_path_variable(NCCLX_ENV_M2N_PATH, "NCCLX_M2N_PATH");
}

static void test_ep_ht_path(void **state)
{
    (void)state;
    check_path_variable(NCCLX_ENV_EP_HT_PATH, "NCCLX_EP_HT_PATH");
}

/* NCCLX_TIMEOUT_MS: unset means the plan decides; garbage and 0 are rejected by name. */
static void test_gpu_timeout(void **state)
{
    static const char *const bad[] = {"abc", "0", "-5", "86400001", "10ms"};
    uint64_t value = 77;
    (void)state;
    assert_null(ncclx_env_raw(NCCLX_ENV_TIMEOUT_MS));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("NCCLX_TIMEOUT_MS", bad[i], 1);
        assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, "NCCLX_TIMEOUT_MS");
    }
    setenv("NCCLX_TIMEOUT_MS", "2500", 1);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_ncclx_ok(ncclx_env_get_uint(NCCLX_ENV_TIMEOUT_MS, &value));
    assert_int_equal(value, 2500);
    unsetenv("NCCLX_TIMEOUT_MS");
}

static void test_unknown_variable(void **state)
{
    (void)state;
    setenv("NCCLX_FOO", "1", 1);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_true(find_line("NCCLX WARN") >= 0);
    assert_true(find_line("NCCLX_FOO is set but libncclx reads no such variable") >= 0);
    /* A known variable set to a good value draws no such warning. */
    memset(&captured, 0, sizeof(captured));
    unsetenv("NCCLX_FOO");
    setenv("NCCLX_DEBUG", "WARN", 1);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_int_equal(find_line("NCCLX_DEBUG is set but"), -1);
}

static void test_env_listing(void **state)
{
    ncclxEnvVar_t var, first;
    int count = ncclxEnvCount();
    int seen_debug = 0, seen_file = 0, seen_fence = 0;
    (void)state;
    assert_int_equal(count, NCCLX_ENV_NUM_VARS);
    for (int i = 0; i < count; i++) {
        memset(&var, 0, sizeof(var));
        assert_ncclx_ok(ncclxEnvGet(i, &var));
        assert_non_null(var.name);
        assert_non_null(var.default_value);
        assert_non_null(var.description);
        assert_true(strncmp(var.name, "NCCLX_", 6) == 0);
        assert_true(strlen(var.description) > 0);
        for (int j = 0; j < i; j++) {
            ncclxEnvVar_t other;
            assert_ncclx_ok(ncclxEnvGet(j, &other));
            assert_string_not_equal(var.name, other.name);
        }
        seen_debug += strcmp(var.name, "NCCLX_DEBUG") == 0;
        seen_file += strcmp(var.name, "NCCLX_DEBUG_FILE") == 0;
        seen_fence += strcmp(var.name, "NCCLX_FENCE_TIMEOUT_S") == 0;
        /* Every listed variable is one the library knows: its default is accepted and
         * setting it draws no "no such variable" warning. */
        setenv(var.name, var.default_value, 1);
    }
    assert_int_equal(seen_debug + seen_file + seen_fence, 3);
    assert_ncclx_ok(ncclxEnvValidate());
    assert_int_equal(find_line("is set but"), -1);

    assert_ncclx_ok(ncclxEnvGet(0, &first));
    memcpy(&var, &first, sizeof(var));
    assert_ncclx_error(ncclxEnvGet(-1, &var), ncclxInvalidArgument, "index -1");
    assert_ncclx_error(ncclxEnvGet(count, &var), ncclxInvalidArgument, "is outside [0, ");
    assert_memory_equal(&var, &first, sizeof(var)); /* untouched on failure */
    assert_ncclx_error(ncclxEnvGet(0, NULL), ncclxInvalidArgument, "var is NULL");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_callback_and_format, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_filtering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_check_lock_free, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_level_rejects, setup, teardown),
        cmocka_unit_test_setup_teardown(test_debug_env, setup, teardown),
        cmocka_unit_test_setup_teardown(test_debug_env_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_debug_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fence_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_m2n_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ep_ht_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_variable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_listing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
