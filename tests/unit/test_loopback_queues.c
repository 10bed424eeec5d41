/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The hardware-queue verdict of a loopback team (lib/context/loopback_queues.h): how a value of
 * CUDA_DEVICE_MAX_CONNECTIONS reads, and which teams are refused with what message.  The GPU
 * side (whether CUDA started before ncclxLoopbackInit) is tests/gpu/test_loopback_queues.c.
 */
#include <stdio.h>
#include <string.h>

#include "loopback_queues.h"
#include "ncclx_test.h"

static void test_queues_of(void **state)
{
    (void)state;
    const struct {
        const char *value;
        uint32_t want;
    } rows[] = {
        {NULL, 8},   {"", 8},    {"0", 8},  {"1", 1},  {"8", 8},  {"16", 16}, {"31", 31},
        {"32", 32},  {"33", 32}, {"-4", 8}, {"4x", 8}, {" 4", 8}, {"x", 8},   {"99999999999", 32},
        {"032", 32},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const uint32_t got = ncclx_loopback_queues_of(rows[i].value);
        if (got != rows[i].want) {
            fail_msg("queues_of(%s) = %u, want %u", rows[i].value ? rows[i].value : "NULL", got,
                     rows[i].want);
        }
    }
}

/* Every (ranks, queues) around the boundaries: accepted exactly when ranks <= 32 and ranks <=
 * queues, or queues / 2 (at least 1) when CUDA started before the library; a refusal is
 * ncclxInvalidUsage naming the variable, and tells a process whose CUDA started early to
 * export it before CUDA starts. */
static void test_verdict(void **state)
{
    (void)state;
    for (uint32_t queues = 1; queues <= NCCLX_LOOPBACK_MAX_QUEUES; queues++) {
        for (uint32_t ranks = 1; ranks <= 40; ranks++) {
            for (int early = 0; early < 2; early++) {
                const uint32_t most = early ? (queues >= 2 ? queues / 2 : 1) : queues;
                const int ok = ranks <= most && ranks <= NCCLX_LOOPBACK_MAX_QUEUES;
                const ncclxResult_t res = ncclx_loopback_queue_verdict(ranks, queues, early);
                if (ok) {
                    assert_int_equal(res, ncclxSuccess);
                    continue;
                }
                assert_int_equal(res, ncclxInvalidUsage);
                const char *msg = ncclxGetLastError();
                assert_non_null(strstr(msg, "num_ranks"));
                assert_non_null(strstr(msg, "CUDA_DEVICE_MAX_CONNECTIONS"));
                if (early && ranks <= NCCLX_LOOPBACK_MAX_QUEUES) {
                    assert_non_null(strstr(msg, "before the program starts CUDA"));
                }
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queues_of),
        cmocka_unit_test(test_verdict),
    };
    return cmocka_run_group_tests_name("loopback_queues", tests, NULL, NULL);
}
