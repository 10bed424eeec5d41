/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclxInit and ncclxInitWithComm on the CPU, as a PMIx singleton (no server).  The GPU and
 * NCCL calls that init would make are replaced at link time (-Wl,--wrap) where a test needs
 * init to get further than a machine without a GPU allows:
 *  - the PMIx key instance is drawn by ncclxInit only, never by ncclxInitWithComm;
 *  - a loopback team whose ranks hold different plans fails, naming the field, before the GPU;
 *  - an ncclxInit that fails after placing the process (a fake GPU of a recorded topology,
 *    hwloc told it is this system) puts back the CPU binding, NCCL_IB_HCA and the current
 *    device.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
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

/* A fake machine for ncclxInit: two GPUs, the second being the H100 of topo-interleaved.xml
 * (on the socket of the odd CPUs, next to mlx5_4), and a communicator that cannot be made (the
 * failure after placement).  Off: the real calls. */
static struct {
    int on;
    int current; /* the current device */
    int set_calls;
} fake_gpu;

static const char *const fake_busids[2] = {"0000:00:00.0", "0000:81:00.0"};

cudaError_t __real_cudaGetDeviceCount(int *count);
cudaError_t __wrap_cudaGetDeviceCount(int *count);
cudaError_t __wrap_cudaGetDeviceCount(int *count)
{
    if (!fake_gpu.on) {
        return __real_cudaGetDeviceCount(count);
    }
    *count = 2;
    return cudaSuccess;
}

cudaError_t __real_cudaDeviceGetPCIBusId(char *busid, int len, int device);
cudaError_t __wrap_cudaDeviceGetPCIBusId(char *busid, int len, int device);
cudaError_t __wrap_cudaDeviceGetPCIBusId(char *busid, int len, int device)
{
    if (!fake_gpu.on) {
        return __real_cudaDeviceGetPCIBusId(busid, len, device);
    }
    if (device < 0 || device > 1) {
        return cudaErrorInvalidDevice;
    }
    snprintf(busid, (size_t)len, "%s", fake_busids[device]);
    return cudaSuccess;
}

cudaError_t __real_cudaSetDevice(int device);
cudaError_t __wrap_cudaSetDevice(int device);
cudaError_t __wrap_cudaSetDevice(int device)
{
    if (!fake_gpu.on) {
        return __real_cudaSetDevice(device);
    }
    fake_gpu.current = device;
    fake_gpu.set_calls++;
    return cudaSuccess;
}

cudaError_t __real_cudaGetDevice(int *device);
cudaError_t __wrap_cudaGetDevice(int *device);
cudaError_t __wrap_cudaGetDevice(int *device)
{
    if (!fake_gpu.on) {
        return __real_cudaGetDevice(device);
    }
    *device = fake_gpu.current;
    return cudaSuccess;
}

ncclResult_t __real_ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t __wrap_ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t __wrap_ncclGetUniqueId(ncclUniqueId *id)
{
    if (!fake_gpu.on) {
        return __real_ncclGetUniqueId(id);
    }
    memset(id, 0x42, sizeof(*id));
    return ncclSuccess;
}

ncclResult_t __real_ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config);
ncclResult_t __wrap_ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config);
ncclResult_t __wrap_ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                           ncclConfig_t *config)
{
    if (!fake_gpu.on) {
        return __real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
    }
    return ncclSystemError;
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
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    (void)state;
    config.num_ranks = 4;
    group.num_experts = 32;
    odd_group = group;
    odd_group.hidden = 4096;
    odd_plan = plan;
    odd_plan.ep_groups = odd_groups;
    assert_ncclx_error(ncclx_loopback_init(plans, &config, ctx), ncclxInvalidArgument,
                       "plan.ep_groups[0]->hidden is 4096 on loopback rank 2 but 256 on rank 0");
    assert_null(ctx[0]);
    /* A copy of the same plan is the same plan. */
    odd_group.hidden = group.hidden;
    odd_group.timeout_ns = 5;
    assert_ncclx_error(ncclx_loopback_init(plans, &config, ctx), ncclxInvalidArgument,
                       "plan.ep_groups[0]->timeout_ns is 5 on loopback rank 2");
    odd_group.timeout_ns = group.timeout_ns;
    if (ncclx_loopback_init(plans, &config, ctx) == ncclxSuccess) {
        for (int r = 0; r < 4; r++) {
            assert_ncclx_ok(ncclxFinalize(ctx[r]));
        }
    } else {
        /* Without a GPU: past the comparison, into CUDA. */
        assert_int_equal(strstr(ncclxGetLastError(), "on loopback rank"), NULL);
    }
}

/* A loopback config's fields are refused by name before the GPU is touched. */
static void test_loopback_config_checked(void **state)
{
    ncclxPlan_t plan = small_plan();
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    ncclxContext_t ctx[8] = {NULL};
    (void)state;
    group.num_experts = 32;
    assert_ncclx_error(ncclxLoopbackInitConfig(&plan, NULL, ctx), ncclxInvalidArgument,
                       "config is NULL");
    config.num_ranks = 6;
    config.num_nodes = 4;
    assert_ncclx_error(ncclxLoopbackInitConfig(&plan, &config, ctx), ncclxInvalidArgument,
                       "config->num_nodes=4 must be 0 (no shape) or divide config->num_ranks=6");
    config.num_nodes = 2;
    config.reserved0 = 1;
    assert_ncclx_error(ncclxLoopbackInitConfig(&plan, &config, ctx), ncclxInvalidArgument,
                       "config->reserved0=1 must be 0");
    config.reserved0 = 0;
    config.num_ranks = 0;
    assert_ncclx_error(ncclxLoopbackInitConfig(&plan, &config, ctx), ncclxInvalidArgument,
                       "num_ranks=0 is outside [1, 1024]");
    assert_null(ctx[0]);
}

/* The memory policy mode of the calling thread (MPOL_*), or -1. */
static int mempolicy_mode(void)
{
    int mode = -1;
    unsigned long mask[16];
    if (syscall(SYS_get_mempolicy, &mode, mask, sizeof(mask) * 8, NULL, 0) != 0) {
        return -1;
    }
    return mode;
}

static int captured_line(const char *needle)
{
    for (int i = 0; i < captured.count; i++) {
        if (strstr(captured.lines[i], needle) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* ncclxInit on fake GPU 1 with the recorded topology, failing when it makes the communicator. */
static void init_fails_after_placement(void)
{
    ncclxPlan_t plan = small_plan();
    ncclxInitConfig_t config = NCCLX_INIT_CONFIG_INIT;
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    config.cuda_device = 1;
    fake_gpu.on = 1;
    assert_ncclx_error(ncclxInit(&plan, &config, &ctx), ncclxNcclError, "ncclCommInitRankConfig");
    fake_gpu.on = 0;
    assert_ptr_equal(ctx, (ncclxContext_t)0x1);
}

static void test_failed_init_restores_placement(void **state)
{
    cpu_set_t before, after;
    int have_two_cpus = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    int mode_before;
    (void)state;
    /* The recorded machine, taken for this one (binding applies), restricted to the CPUs this
     * process may use: the GPU's socket holds the odd ones. */
    setenv("HWLOC_XMLFILE", NCCLX_TEST_TOPOLOGY_DIR "/topo-interleaved.xml", 1);
    setenv("HWLOC_THISSYSTEM", "1", 1);
    setenv("HWLOC_THISSYSTEM_ALLOWED_RESOURCES", "1", 1);
    unsetenv("NCCL_IB_HCA");
    assert_int_equal(sched_getaffinity(0, sizeof(before), &before), 0);
    mode_before = mempolicy_mode();
    memset(&fake_gpu, 0, sizeof(fake_gpu));

    init_fails_after_placement();
    /* Placement did run: device 1 made current, the process bound near it, its NIC exported. */
    assert_true(fake_gpu.set_calls >= 2);
    assert_true(captured_line("NCCL_IB_HCA==mlx5_4"));
    if (have_two_cpus) {
        assert_true(captured_line("bound to CPUs"));
    }
    /* And was undone. */
    assert_null(getenv("NCCL_IB_HCA"));
    assert_int_equal(fake_gpu.current, 0);
    assert_int_equal(sched_getaffinity(0, sizeof(after), &after), 0);
    assert_true(CPU_EQUAL(&after, &before));
    assert_int_equal(mempolicy_mode(), mode_before);

    /* A user's NCCL_IB_HCA is left alone; an empty one is set back to empty. */
    setenv("NCCL_IB_HCA", "mlx5_7", 1);
    init_fails_after_placement();
    assert_string_equal(getenv("NCCL_IB_HCA"), "mlx5_7");
    setenv("NCCL_IB_HCA", "", 1);
    captured.count = 0;
    init_fails_after_placement();
    assert_true(captured_line("NCCL_IB_HCA==mlx5_4"));
    assert_non_null(getenv("NCCL_IB_HCA"));
    assert_string_equal(getenv("NCCL_IB_HCA"), "");

    unsetenv("NCCL_IB_HCA");
    unsetenv("HWLOC_XMLFILE");
    unsetenv("HWLOC_THISSYSTEM");
    unsetenv("HWLOC_THISSYSTEM_ALLOWED_RESOURCES");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_instance_not_drawn_by_init_with_comm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loopback_plans_differ, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loopback_config_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_init_restores_placement, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
