/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclxInit under a launcher.  Without a GPU (CI), every rank must get a clear CUDA error from
 * ncclxInit — not a crash, not a hang — with its context untouched.  With a GPU per rank, init
 * must succeed, report the launcher's rank and size, and finalize.
 * Prints "init_probe: rank R of N (host): PASS|FAIL: why" once per rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

static ncclxPlan_t small_plan(const ncclxEpGroupPlan_t *const *groups)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    return plan;
}

static int report(int rank, int size, int ok, const char *why)
{
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    printf("init_probe: rank %d of %d (%s): %s%s%s\n", rank, size, host, ok ? "PASS" : "FAIL",
           ok ? "" : ": ", ok ? "" : why);
    fflush(stdout);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    ncclxEpGroupPlan_t group = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[] = {&group};
    ncclxPlan_t plan = small_plan(groups);
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
    int expected_size = argc > 1 ? atoi(argv[1]) : 1;
    int devices = 0;
    int have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    ncclxResult_t res;
    char why[700];

    group.num_experts = 8 * (unsigned)expected_size;
    group.max_topk = 2;
    group.hidden = 256;
    group.max_dispatch_tokens_per_rank = 8;
    res = ncclxInit(&plan, NULL, &ctx);
    if (!have_gpu) {
        /* The rank is unknown to us here: the library's log prefix has it; report -1. */
        snprintf(why, sizeof(why), "expected a CUDA error, got %s: %s", ncclxGetErrorString(res),
                 ncclxGetLastError());
        int ok = res == ncclxCudaError && strstr(ncclxGetLastError(), "CUDA") != NULL &&
                 ctx == (ncclxContext_t)0x1;
        printf("init_probe: no GPU: %s: %s\n", ncclxGetErrorString(res), ncclxGetLastError());
        return report(atoi(getenv("PMIX_RANK") ? getenv("PMIX_RANK") : "0"), expected_size, ok,
                      why);
    }
    if (res != ncclxSuccess) {
        snprintf(why, sizeof(why), "ncclxInit: %s: %s", ncclxGetErrorString(res),
                 ncclxGetLastError());
        return report(-1, expected_size, 0, why);
    }
    res = ncclxContextGetInfo(ctx, &info);
    snprintf(why, sizeof(why), "info: %s, size %d (expected %d)", ncclxGetErrorString(res),
             info.num_ranks, expected_size);
    int ok = res == ncclxSuccess && info.num_ranks == expected_size;
    res = ncclxFinalize(ctx);
    return report(info.rank, expected_size, ok && res == ncclxSuccess, why);
}
