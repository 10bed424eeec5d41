/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclxInit and ncclxInitWithComm on the CPU, as a PMIx singleton (no server).  The GPU and
 * NCCL calls that init would make are replaced at link time (-Wl,--wrap) where a test needs
 * init to get further than a machine without a GPU allows:
 *  - the PMIx key instance is drawn by ncclxInit only, never by ncclxInitWithComm;
 *  - a loopback team whose ranks hold different plans fails, naming the field, before the GPU.
 */
#include <stdio.h>
#include <stdlib.h>

#include <nccl.h>

#include "ncclx_test.h"

#include "context.h"

/* PMIx 4.2 leaks inside itself (see test_bootstrap_singleton.c): ignore only those. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:pmix_hash_fetch\nleak:pmix_mca_base_show_load_errors_init\n";
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

extern char **environ;

/* ---- link-time replacements ---- */

/* A communicator that is not one: NCCL must never see it. */
static struct ncclComm *const fake_comm = (struct ncclComm *)(uintptr_t)0x5eed;

ncclResult_t __real_ncclCommCuDevice(ncclComm_t comm, int *device);
ncclResult_t __wrap_ncclCommCuDevice(ncclComm_t comm, int *device);
ncclResult_t __wrap_ncclCommCuDevice(ncclComm_t comm, int *device)
{
    if (comm == fake_comm) {
        return ncclInvalidUsage;
    }
    return __real_ncclCommCuDevice(comm, device);
}

/* ---- helpers ---- */

#define MAX_LINES 64

static struct {
    int count;
    char lines[MAX_LINES][512];
} captured;

static void capture(ncclxLogLevel_t level, const char *line, void *user_data)
{
    (void)level;
    (void)user_data;
    if (captured.count < MAX_LINES) {
        snprintf(captured.lines[captured.count++], sizeof(captured.lines[0]), "%s", line);
    }
}

/* The instance of the last "context instance N" line captured, or 0. */
static unsigned last_instance(void)
{
    unsigned instance = 0;
    for (int i = 0; i < captured.count; i++) {
        const char *at = strstr(captured.lines[i], "context instance ");
        if (at != NULL) {
            instance = (unsigned)strtoul(at + strlen("context instance "), NULL, 10);
        }
    }
    return instance;
}

static void unset_prefixed(const char *prefix)
{
    char name[256];
    for (int again = 1; again;) {
        again = 0;
        for (char **entry = environ; *entry != NULL; entry++) {
            size_t len = strcspn(*entry, "=");
            if (strncmp(*entry, prefix, strlen(prefix)) == 0 && len < sizeof(name)) {
                memcpy(name, *entry, len);
                name[len] = '\0';
                unsetenv(name); /* environ changed: start over */
                again = 1;
                break;
            }
        }
    }
}

/* No PMIx server, no launcher, no NCCLX_* setting: a plain singleton. */
static int setup(void **state)
{
    static const char *const launcher[] = {"SLURM_STEP_NUM_TASKS", "SLURM_STEP_ID",
                                           "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    (void)state;
    unset_prefixed("PMIX_");
    unset_prefixed("NCCLX_");
    for (size_t i = 0; i < sizeof(launcher) / sizeof(launcher[0]); i++) {
        unsetenv(launcher[i]);
    }
    memset(&captured, 0, sizeof(captured));
    if (ncclxSetLogLevel(NCCLX_LOG_INFO) != ncclxSuccess) {
        return -1;
    }
    return ncclxSetLogCallback(capture, NULL) == ncclxSuccess ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    ncclxSetLogCallback(NULL, NULL);
    ncclxSetLogLevel(NCCLX_LOG_WARN);
    return 0;
}

static ncclxEpGroupPlan_t group;
static const ncclxEpGroupPlan_t *groups[1] = {&group};

static ncclxPlan_t small_plan(void)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.num_experts = 8;
    g.max_topk = 2;
    g.hidden = 256;
    g.max_dispatch_tokens_per_rank = 8;
    group = g;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    return plan;
}

/* ---- tests ---- */

/* ncclxInit draws one instance per call; ncclxInitWithComm none, even when it gets as far as
 * asking the communicator for its device (the draw used to happen before that). */
static void test_instance_not_drawn_by_init_with_comm(void **state)
{
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    unsigned first, second;
    (void)state;
    /* Without a GPU ncclxInit fails, after drawing (a real GPU would succeed: clean up). */
    if (ncclxInit(&plan, NULL, &ctx) == ncclxSuccess) {
        assert_ncclx_ok(ncclxFinalize(ctx));
    }
    first = last_instance();
    assert_int_not_equal(first, 0);
    ctx = (ncclxContext_t)0x1;
    assert_ncclx_error(ncclxInitWithComm(&plan, fake_comm, NULL, &ctx), ncclxNcclError,
                       "ncclCommCuDevice");
    assert_ptr_equal(ctx, (ncclxContext_t)0x1);
    if (ncclxInit(&plan, NULL, &ctx) == ncclxSuccess) {
        assert_ncclx_ok(ncclxFinalize(ctx));
    }
    second = last_instance();
    assert_int_equal(second, first + 1);
}

/* Rank 2 of a loopback team of 4 plans another hidden size: every rank's plan is compared
 * before the GPU is touched, so even without one the error names the group and field. */
static void test_loopback_plans_differ(void **state)
{
    ncclxPlan_t plan = small_plan();
    ncclxPlan_t odd_plan = NCCLX_PLAN_INIT;
    ncclxEpGroupPlan_t odd_group;
    const ncclxEpGroupPlan_t *odd_groups[1] = {&odd_group};
    const ncclxPlan_t *plans[4] = {&plan, &plan, &odd_plan, &plan};
    ncclxContext_t ctx[4] = {NULL, NULL, NULL, NULL};
    (void)state;
    group.num_experts = 32;
    odd_group = group;
    odd_group.hidden = 4096;
    odd_plan = plan;
    odd_plan.ep_groups = odd_groups;
    assert_ncclx_error(ncclx_loopback_init(plans, 4, 0, ctx), ncclxInvalidArgument,
                       "plan.ep_groups[0]->hidden is 4096 on loopback rank 2 but 256 on rank 0");
    assert_null(ctx[0]);
    /* A copy of the same plan is the same plan. */
    odd_group.hidden = group.hidden;
    odd_group.timeout_ns = 5;
    assert_ncclx_error(ncclx_loopback_init(plans, 4, 0, ctx), ncclxInvalidArgument,
                       "plan.ep_groups[0]->timeout_ns is 5 on loopback rank 2");
    odd_group.timeout_ns = group.timeout_ns;
    if (ncclx_loopback_init(plans, 4, 0, ctx) == ncclxSuccess) {
        for (int r = 0; r < 4; r++) {
            assert_ncclx_ok(ncclxFinalize(ctx[r]));
        }
    } else {
        /* Without a GPU: past the comparison, into CUDA. */
        assert_int_equal(strstr(ncclxGetLastError(), "on loopback rank"), NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_instance_not_drawn_by_init_with_comm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loopback_plans_differ, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
