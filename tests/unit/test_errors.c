/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Status codes and the per-thread last error message.
 */
#include <pthread.h>
#include <stdio.h>

#include "ncclx_test.h"

static void test_error_strings(void **state)
{
    (void)state;
    assert_string_equal(ncclxGetErrorString(ncclxSuccess), "success");
    for (int r = 0; r < ncclxNumResults; r++) {
        const char *s = ncclxGetErrorString((ncclxResult_t)r);
        if (s == NULL || s[0] == '\0') {
            fail_msg("result %d has no string", r);
        }
        for (int q = 0; q < r; q++) {
            if (strcmp(s, ncclxGetErrorString((ncclxResult_t)q)) == 0) {
                fail_msg("results %d and %d share the string '%s'", q, r, s);
            }
        }
    }
}

static void test_out_of_range_string(void **state)
{
    const int codes[] = {ncclxNumResults, ncclxNumResults + 1, 1000, -1};
    (void)state;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *s = ncclxGetErrorString((ncclxResult_t)codes[i]);
        assert_non_null(s);
        assert_true(s[0] != '\0');
        /* It must not pass for a real code either. */
        for (int r = 0; r < ncclxNumResults; r++) {
            assert_string_not_equal(s, ncclxGetErrorString((ncclxResult_t)r));
        }
    }
}

typedef struct {
    char initial[64];
    char after[256];
    ncclxResult_t result;
} thread_report_t;

static void *fail_on_other_thread(void *arg)
{
    thread_report_t *report = arg;
    ncclxEnvVar_t var;
    snprintf(report->initial, sizeof(report->initial), "%s", ncclxGetLastError());
    report->result = ncclxEnvGet(ncclxEnvCount() + 5, &var);
    snprintf(report->after, sizeof(report->after), "%s", ncclxGetLastError());
    return NULL;
}

static void test_last_error_per_thread(void **state)
{
    thread_report_t report;
    pthread_t thread;
    char mine[256];
    (void)state;
    ncclxSetLogLevel(NCCLX_LOG_NONE); /* the expected failures need not reach stderr */
    assert_ncclx_error(ncclxSetLogLevel((ncclxLogLevel_t)7), ncclxInvalidArgument, "level 7");
    snprintf(mine, sizeof(mine), "%s", ncclxGetLastError());

    memset(&report, 0, sizeof(report));
    assert_int_equal(pthread_create(&thread, NULL, fail_on_other_thread, &report), 0);
    assert_int_equal(pthread_join(thread, NULL), 0);
    /* A new thread starts clean, sees its own failure, and leaves ours alone. */
    assert_string_equal(report.initial, "");
    assert_int_equal(report.result, ncclxInvalidArgument);
    assert_non_null(strstr(report.after, "ncclxEnvGet: index"));
    assert_string_equal(ncclxGetLastError(), mine);
    assert_null(strstr(ncclxGetLastError(), "ncclxEnvGet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_strings),
        cmocka_unit_test(test_out_of_range_string),
        cmocka_unit_test(test_last_error_per_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
