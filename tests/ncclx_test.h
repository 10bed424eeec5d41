/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Shared helpers for cmocka tests.
 */
#ifndef NCCLX_TEST_H_
#define NCCLX_TEST_H_

#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <ncclx.h>

/** Asserts that call fails with expected and that the last error mentions needle. */
#define assert_ncclx_error(call, expected, needle)                                               \
    do {                                                                                         \
        ncclxResult_t res_ = (call);                                                             \
        if (res_ != (expected) || strstr(ncclxGetLastError(), (needle)) == NULL) {               \
            fail_msg("%s returned %d (%s), last error '%s'; expected %d with '%s'", #call,       \
                     (int)res_, ncclxGetErrorString(res_), ncclxGetLastError(), (int)(expected), \
                     (needle));                                                                  \
        }                                                                                        \
    } while (0)

#define assert_ncclx_ok(call)                                                                     \
    do {                                                                                          \
        ncclxResult_t res_ = (call);                                                              \
        if (res_ != ncclxSuccess) {                                                               \
            fail_msg("%s failed: %s: %s", #call, ncclxGetErrorString(res_), ncclxGetLastError()); \
        }                                                                                         \
    } while (0)

/* Whether test `name` matches TEST_FILTER: patterns separated by '|', each a shell pattern
 * (fnmatch: '*', '?' and '[...]', which cmocka's own filter does not know). */
static inline int ncclx_test_selected(const char *filter, const char *name)
{
    char pattern[256];
    for (const char *p = filter; *p != '\0';) {
        size_t len = strcspn(p, "|");
        if (len < sizeof(pattern)) {
            memcpy(pattern, p, len);
            pattern[len] = '\0';
            if (fnmatch(pattern, name, 0) == 0) {
                return 1;
            }
        }
        p += len + (p[len] == '|');
    }
    return 0;
}

/* Runs the tests that TEST_FILTER selects (all without it).  A filter that selects none is a
 * failure: a sanitizer run over zero tests must not read as clean. */
static inline int ncclx_run_selected_tests(const char *group, const struct CMUnitTest *tests,
                                           size_t count)
{
    const char *filter = getenv("TEST_FILTER");
    if (filter == NULL) {
        return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
    }
    struct CMUnitTest *chosen = calloc(count, sizeof(*chosen));
    if (chosen == NULL) {
        fprintf(stderr, "%s: out of memory for the test list\n", group);
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (ncclx_test_selected(filter, tests[i].name)) {
            chosen[n++] = tests[i];
        }
    }
    int failed = 1;
    if (n == 0) {
        fprintf(stderr, "%s: TEST_FILTER='%s' selects no test\n", group, filter);
    } else {
        failed = _cmocka_run_group_tests(group, chosen, n, NULL, NULL);
    }
    free(chosen);
    return failed;
}
#define ncclx_run_tests(group, tests) \
    ncclx_run_selected_tests((group), (tests), sizeof(tests) / sizeof((tests)[0]))

#endif /* NCCLX_TEST_H_ */
