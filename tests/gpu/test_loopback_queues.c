/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A loopback team and the GPU's hardware queues (lib/context/loopback_queues.h), on a real GPU.
 * Each case runs in a child process of its own, because whether CUDA has started is a property of
 * the process: a program that starts CUDA before ncclxLoopbackInit (PyTorch does) gets CUDA's
 * 8 queues unless it exported CUDA_DEVICE_MAX_CONNECTIONS itself, and a team with more ranks
 * than that must be refused with what to do, not left to time out in its first wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "ncclx_test.h"

/* In the child: 0 when ncclxLoopbackInit of ranks gives want (and a refusal names the
 * variable), else a nonzero exit code after a message. */
static int child_init(uint32_t ranks, ncclxResult_t want, const char *must_say)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxContext_t ctx[64];
    const ncclxResult_t got = ncclxLoopbackInit(&plan, ranks, 0, ctx);
    if (got != want) {
        fprintf(stderr, "child: ncclxLoopbackInit(%u ranks) = %d (%s), want %d\n", ranks, got,
                got == ncclxSuccess ? "success" : ncclxGetLastError(), want);
        return 1;
    }
    if (got == ncclxSuccess) {
        for (uint32_t r = 0; r < ranks; r++) {
            if (ncclxFinalize(ctx[r]) != ncclxSuccess) {
                fprintf(stderr, "child: ncclxFinalize(rank %u) failed\n", r);
                return 2;
            }
        }
        return 0;
    }
    if (strstr(ncclxGetLastError(), "CUDA_DEVICE_MAX_CONNECTIONS") == NULL ||
        (must_say != NULL && strstr(ncclxGetLastError(), must_say) == NULL)) {
        fprintf(stderr, "child: the refusal does not say what to do: %s\n", ncclxGetLastError());
        return 3;
    }
    printf("child: %u ranks refused as expected: %s\n", ranks, ncclxGetLastError());
    return 0;
}

/* Runs scenario in a child process; fails unless it exits 0. */
static void in_child(int (*scenario)(void), const char *name)
{
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        _exit(scenario());
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fail_msg("%s: the child failed (status 0x%x)", name, status);
    }
}

/* CUDA started before the team, the variable unset: CUDA's 8 queues, shared with the program's
 * own streams, so a team may have 4 ranks.  5 are refused with the advice to export the
 * variable before CUDA starts; 4 ranks are accepted. */
static int started_early(void)
{
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    if (cudaFree(NULL) != cudaSuccess) {
        fprintf(stderr, "child: cudaFree(NULL) could not start CUDA\n");
        return 10;
    }
    int rc = child_init(5, ncclxInvalidUsage, "before the program starts CUDA");
    return rc != 0 ? rc : child_init(4, ncclxSuccess, NULL);
}

/* The variable exported as 16 before CUDA started: the same rule, 8 ranks work, 9 do not. */
static int exported_before_start(void)
{
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "16", 1);
    if (cudaFree(NULL) != cudaSuccess) {
        return 10;
    }
    int rc = child_init(9, ncclxInvalidUsage, NULL);
    return rc != 0 ? rc : child_init(8, ncclxSuccess, NULL);
}

/* CUDA not started, the variable unset: ncclxLoopbackInit raises it to 32 itself, so a team
 * of 32 works, 33 do not; later teams of the process (CUDA now started, by the library) keep
 * the 32 it set: 32 again, then 24. */
static int library_sets_it(void)
{
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    int rc = child_init(33, ncclxInvalidUsage, NULL);
    rc = rc != 0 ? rc : child_init(32, ncclxSuccess, NULL);
    rc = rc != 0 ? rc : child_init(32, ncclxSuccess, NULL);
    return rc != 0 ? rc : child_init(24, ncclxSuccess, NULL);
}

static void test_started_early(void **state)
{
    (void)state;
    in_child(started_early, "CUDA started before ncclxLoopbackInit");
}

static void test_exported_before_start(void **state)
{
    (void)state;
    in_child(exported_before_start, "CUDA_DEVICE_MAX_CONNECTIONS=16 before CUDA started");
}

static void test_library_sets_it(void **state)
{
    (void)state;
    in_child(library_sets_it, "CUDA not started before ncclxLoopbackInit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_started_early),
        cmocka_unit_test(test_exported_before_start),
        cmocka_unit_test(test_library_sets_it),
    };
    return ncclx_run_tests("gpu_loopback_queues", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
