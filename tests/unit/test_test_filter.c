/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The test selection of the GPU test programs (TEST_FILTER, tests/ncclx_test.h): shell patterns
 * with '[...]' and several patterns per filter, which cmocka's own filter matched as nothing
 * (a sanitizer pass over test_[dg]* then ran zero tests and looked clean).
 */
#include "ncclx_test.h"

static void test_patterns(void **state)
{
    (void)state;
    assert_true(ncclx_test_selected("test_[dg]*", "test_drop"));
    assert_true(ncclx_test_selected("test_[dg]*", "test_graph_replay"));
    assert_false(ncclx_test_selected("test_[dg]*", "test_trap"));
    assert_true(ncclx_test_selected("test_trap|test_drop", "test_drop"));
    assert_true(ncclx_test_selected("test_trap|test_drop", "test_trap"));
    assert_false(ncclx_test_selected("test_trap|test_drop", "test_drop_more"));
    assert_true(ncclx_test_selected("test_*_teams", "test_flat_teams"));
    assert_false(ncclx_test_selected("", "test_flat_teams"));
    assert_false(ncclx_test_selected("|", "test_flat_teams"));
}

static int ran;

static void count_run(void **state)
{
    (void)state;
    ran++;
}

/* The selected tests run, the others do not, and a filter that selects none fails. */
static void test_selection_runs(void **state)
{
    (void)state;
    const struct CMUnitTest inner[] = {
        {"inner_a", count_run, NULL, NULL, NULL},
        {"inner_b", count_run, NULL, NULL, NULL},
        {"other", count_run, NULL, NULL, NULL},
    };
    const char *saved = getenv("TEST_FILTER");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("TEST_FILTER", "inner_*", 1), 0);
    ran = 0;
    assert_int_equal(ncclx_run_tests("inner", inner), 0);
    assert_int_equal(ran, 2);
    assert_int_equal(setenv("TEST_FILTER", "nothing_[xy]", 1), 0);
    ran = 0;
    assert_int_not_equal(ncclx_run_tests("inner", inner), 0);
    assert_int_equal(ran, 0);
    if (restore != NULL) {
        assert_int_equal(setenv("TEST_FILTER", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("TEST_FILTER"), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patterns),
        cmocka_unit_test(test_selection_runs),
    };
    return cmocka_run_group_tests_name("test_filter", tests, NULL, NULL);
}
