/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Shared helpers for cmocka tests.
 */
#ifndef NCCLX_TEST_H_
#define NCCLX_TEST_H_

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

#endif /* NCCLX_TEST_H_ */
