/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The NCCLX_* environment table, variable by variable: each numeric variable at its minimum,
 * below it, at its maximum, one past it, empty and unset; each enumerated variable at every
 * choice, empty and at garbage; the string variable empty.  And the unit of NCCLX_TIMEOUT_MS:
 * milliseconds in, the nanoseconds the kernels compare against globaltimer out.
 *
 * The bounds and defaults are written here, not read from lib/core/env.c: a bound moved by one
 * there fails a row.  Every variable the library lists must have a row
 * (test_every_variable_has_a_row).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "env.h"

typedef enum { UINT_VAR, CHOICE_VAR, STRING_VAR } kind_t;

typedef struct {
    const char *name;
    ncclx_env_id_t id;
    kind_t kind;
    const char *default_value; /* as ncclxEnvGet reports it; "" = unset */
    uint64_t min, max;         /* UINT_VAR */
    const char *choices[5];    /* CHOICE_VAR, in index order */
} row_t;

static const row_t rows[] = {
    {"NCCLX_DEBUG", NCCLX_ENV_DEBUG, CHOICE_VAR, "WARN", 0, 0, {"NONE", "WARN", "INFO", "TRACE"}},
    {"NCCLX_DEBUG_FILE", NCCLX_ENV_DEBUG_FILE, STRING_VAR, "", 0, 0, {NULL}},
    {"NCCLX_BIND", NCCLX_ENV_BIND, CHOICE_VAR, "AUTO", 0, 0, {"AUTO", "NONE"}},
    {"NCCLX_CUDA_DEVICE", NCCLX_ENV_CUDA_DEVICE, UINT_VAR, "", 0, 1023, {NULL}},
    {"NCCLX_FENCE_TIMEOUT_S", NCCLX_ENV_FENCE_TIMEOUT_S, UINT_VAR, "300", 1, 86400, {NULL}},
    {"NCCLX_TIMEOUT_MS", NCCLX_ENV_TIMEOUT_MS, UINT_VAR, "", 1, 86400000, {NULL}},
    {"NCCLX_M2N_PATH", NCCLX_ENV_M2N_PATH, CHOICE_VAR, "AUTO", 0, 0, {"AUTO", "STAGED"}},
    {"NCCLX_EP_HT_PATH", NCCLX_ENV_EP_HT_PATH, CHOICE_VAR, "AUTO", 0, 0, {"AUTO", "STAGED"}},
    {"NCCLX_NET_EMU_CHAOS", NCCLX_ENV_NET_EMU_CHAOS, UINT_VAR, "0", 0, 1, {NULL}},
    {"NCCLX_NET_EMU_DELAY_NS", NCCLX_ENV_NET_EMU_DELAY_NS, UINT_VAR, "0", 0, 1000000000, {NULL}},
};

#define NUM_ROWS (sizeof(rows) / sizeof(rows[0]))

extern char **environ;

/* Removes every NCCLX_* variable (a harness may export its own), so that each test sees only
 * what it sets. */
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
    return ncclxSetLogLevel(NCCLX_LOG_NONE) == ncclxSuccess ? 0 : -1; /* failures are expected */
}

static int teardown(void **state)
{
    (void)state;
    unset_ncclx_variables();
    return 0;
}

/* The table above and the library's list name the same variables, in the same order. */
static void test_every_variable_has_a_row(void **state)
{
    (void)state;
    assert_int_equal(ncclxEnvCount(), NUM_ROWS);
    assert_int_equal(NCCLX_ENV_NUM_VARS, NUM_ROWS);
    for (size_t i = 0; i < NUM_ROWS; i++) {
        ncclxEnvVar_t var;
        assert_int_equal(rows[i].id, i);
        assert_ncclx_ok(ncclxEnvGet((int)i, &var));
        assert_string_equal(var.name, rows[i].name);
        assert_string_equal(var.default_value, rows[i].default_value);
    }
}

/* Sets name=value and expects ncclx_env_get_uint to give want (ok) or to fail naming the
 * variable, the value and the bounds, leaving *value alone; ncclxEnvValidate agrees. */
static void expect_uint(const row_t *r, const char *value, int ok, uint64_t want)
{
    uint64_t got = 0x5a5a5a5a5a5a5a5aull;
    char needle[160];
    setenv(r->name, value, 1);
    if (ok) {
        ncclxResult_t res = ncclx_env_get_uint(r->id, &got);
        if (res != ncclxSuccess || got != want) {
            fail_msg("%s='%s': %s, %" PRIu64 "; expected %" PRIu64, r->name, value,
                     ncclxGetLastError(), got, want);
        }
        assert_ncclx_ok(ncclxEnvValidate());
        return;
    }
    snprintf(needle, sizeof(needle), "%s=%s is outside [%" PRIu64 ", %" PRIu64 "]", r->name, value,
             r->min, r->max);
    assert_ncclx_error(ncclx_env_get_uint(r->id, &got), ncclxInvalidArgument, needle);
    assert_true(got == 0x5a5a5a5a5a5a5a5aull);
    assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, needle);
}

static void test_uint_bounds(void **state)
{
    char text[64];
    (void)state;
    for (size_t i = 0; i < NUM_ROWS; i++) {
        const row_t *r = &rows[i];
        uint64_t got = 7, dflt = 0;
        if (r->kind != UINT_VAR) {
            continue;
        }
        if (r->default_value[0] != '\0') {
            dflt = strtoull(r->default_value, NULL, 10);
        }
        /* The maximum, one past it, the minimum and one below it. */
        snprintf(text, sizeof(text), "%" PRIu64, r->max);
        expect_uint(r, text, 1, r->max);
        snprintf(text, sizeof(text), "%" PRIu64, r->max + 1);
        expect_uint(r, text, 0, 0);
        snprintf(text, sizeof(text), "%" PRIu64, r->min);
        expect_uint(r, text, 1, r->min);
        if (r->min > 0) {
            snprintf(text, sizeof(text), "%" PRIu64, r->min - 1);
            expect_uint(r, text, 0, 0);
        }
        /* Leading zeros are still the maximum; the largest 64-bit value is past it. */
        snprintf(text, sizeof(text), "000%" PRIu64, r->max);
        expect_uint(r, text, 1, r->max);
        expect_uint(r, "18446744073709551615", 0, 0);
        /* Past 64 bits, or not a decimal: refused as such. */
        setenv(r->name, "18446744073709551616", 1);
        assert_ncclx_error(ncclx_env_get_uint(r->id, &got), ncclxInvalidArgument,
                           "is not an unsigned decimal integer");
        setenv(r->name, "1.5", 1);
        assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, r->name);
        /* Empty is unset: the default (0 for a variable without one), and valid. */
        setenv(r->name, "", 1);
        assert_null(ncclx_env_raw(r->id));
        assert_ncclx_ok(ncclx_env_get_uint(r->id, &got));
        assert_true(got == dflt);
        assert_ncclx_ok(ncclxEnvValidate());
        unsetenv(r->name);
        got = 7;
        assert_ncclx_ok(ncclx_env_get_uint(r->id, &got));
        assert_true(got == dflt);
        /* A default, when there is one, lies inside the bounds. */
        if (r->default_value[0] != '\0') {
            assert_true(dflt >= r->min && dflt <= r->max);
        }
    }
}

static void test_choices(void **state)
{
    char lower[16];
    (void)state;
    for (size_t i = 0; i < NUM_ROWS; i++) {
        const row_t *r = &rows[i];
        int index = -1, dflt = -1;
        if (r->kind != CHOICE_VAR) {
            continue;
        }
        for (int c = 0; r->choices[c] != NULL; c++) {
            size_t k;
            if (strcmp(r->choices[c], r->default_value) == 0) {
                dflt = c;
            }
            setenv(r->name, r->choices[c], 1);
            assert_ncclx_ok(ncclx_env_get_choice(r->id, &index));
            assert_int_equal(index, c);
            for (k = 0; r->choices[c][k] != '\0' && k + 1 < sizeof(lower); k++) {
                lower[k] = (char)(r->choices[c][k] | 0x20);
            }
            lower[k] = '\0';
            setenv(r->name, lower, 1);
            index = -1;
            assert_int_equal(ncclx_env_choice_quiet(r->id, &index), 1);
            assert_int_equal(index, c);
            assert_ncclx_ok(ncclxEnvValidate());
        }
        assert_true(dflt >= 0);
        /* Empty and unset: the default. */
        setenv(r->name, "", 1);
        assert_ncclx_ok(ncclx_env_get_choice(r->id, &index));
        assert_int_equal(index, dflt);
        assert_ncclx_ok(ncclxEnvValidate());
        unsetenv(r->name);
        index = -1;
        assert_ncclx_ok(ncclx_env_get_choice(r->id, &index));
        assert_int_equal(index, dflt);
        /* Garbage: refused by name, the quiet parser falls back to the default. */
        setenv(r->name, "garbage", 1);
        assert_ncclx_error(ncclxEnvValidate(), ncclxInvalidArgument, r->name);
        assert_int_equal(ncclx_env_choice_quiet(r->id, &index), 0);
        assert_int_equal(index, dflt);
        unsetenv(r->name);
    }
}

static void test_string_empty(void **state)
{
    (void)state;
    for (size_t i = 0; i < NUM_ROWS; i++) {
        if (rows[i].kind != STRING_VAR) {
            continue;
        }
        setenv(rows[i].name, "", 1);
        assert_null(ncclx_env_get_string(rows[i].id));
        assert_ncclx_ok(ncclxEnvValidate());
        setenv(rows[i].name, "x", 1);
        assert_string_equal(ncclx_env_get_string(rows[i].id), "x");
        unsetenv(rows[i].name);
        assert_null(ncclx_env_get_string(rows[i].id));
    }
}

/* NCCLX_TIMEOUT_MS is milliseconds; the kernels count nanoseconds (globaltimer). */
static void test_timeout_unit(void **state)
{
    static const struct {
        const char *ms;
        uint64_t ns;
    } cases[] = {
        {"1", 1000000ull},               /* the minimum: one millisecond */
        {"7", 7000000ull},               /* not a power of ten */
        {"2500", 2500000000ull},         /* 2.5 s: past 2^31 ns */
        {"60000", 60000000000ull},       /* a minute: past 2^32 ns */
        {"86400000", 86400000000000ull}, /* the maximum, one day */
    };
    const uint64_t plan_ns = 123456789ull;
    (void)state;
    /* Unset or empty: the plan's timeout as it is. */
    assert_true(ncclx_env_timeout_ns(plan_ns) == plan_ns);
    assert_true(ncclx_env_timeout_ns(NCCLX_DEFAULT_TIMEOUT_NS) == NCCLX_DEFAULT_TIMEOUT_NS);
    setenv("NCCLX_TIMEOUT_MS", "", 1);
    assert_true(ncclx_env_timeout_ns(plan_ns) == plan_ns);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        setenv("NCCLX_TIMEOUT_MS", cases[i].ms, 1);
        uint64_t got = ncclx_env_timeout_ns(plan_ns);
        if (got != cases[i].ns) {
            fail_msg("NCCLX_TIMEOUT_MS=%s gave %" PRIu64 " ns, expected %" PRIu64, cases[i].ms, got,
                     cases[i].ns);
        }
        assert_true(ncclx_env_timeout_ns(0) == cases[i].ns); /* whatever the plan says */
    }
    /* Past the maximum (refused at init by ncclxEnvValidate): the plan's timeout stands. */
    setenv("NCCLX_TIMEOUT_MS", "86400001", 1);
    assert_true(ncclx_env_timeout_ns(plan_ns) == plan_ns);
    setenv("NCCLX_TIMEOUT_MS", "0", 1);
    assert_true(ncclx_env_timeout_ns(plan_ns) == plan_ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_variable_has_a_row, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uint_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_choices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_string_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_unit, setup, teardown),
    };
    return cmocka_run_group_tests_name("env_bounds", tests, NULL, NULL);
}
