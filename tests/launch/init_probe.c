/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclxInit under a launcher.  Without a GPU (CI), every rank must get a clear CUDA error from
 * ncclxInit — not a crash, not a hang — with its context untouched.  With a GPU per rank, init
 * must succeed, report the launcher's rank and size, and finalize.
 * Prints "init_probe: rank R of N (host): PASS|FAIL: why" once per rank.
 *
 *   init_probe N                              as above
 *   init_probe N --odd-rank R --odd-env V=X   rank R sets V=X before ncclxInit
 *   init_probe N --odd-rank R --odd-hidden H  rank R plans hidden=H in group 0
 *   init_probe N ... --expect CODE:TEXT       ncclxInit must fail on every rank with CODE (as
 *                                             ncclxGetErrorString names it) and a message
 *                                             containing TEXT
 *   init_probe N ... --expect-odd CODE:TEXT   the same for rank R (default: --expect's)
 *   init_probe N --odd-rank R --odd-delay S   rank R calls ncclxInit S seconds late; every other
 *                                             rank's ncclxInit must then last about S seconds
 *                                             (no rank returns, and may exit and finalize PMIx,
 *                                             before every rank finished PMIx_Init)
 *
 * The rank comes from the launcher's variables (PMIX_RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID):
 * a failed ncclxInit cannot tell it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

typedef struct {
    int size;
    int odd_rank; /* -1: none */
    const char *odd_env;
    unsigned odd_hidden;
    unsigned odd_delay_s;
    const char *expect;     /* "CODE:TEXT" or NULL */
    const char *expect_odd; /* for odd_rank; NULL: expect */
} probe_args_t;

static int report(int rank, int size, int ok, const char *why)
{
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    printf("init_probe: rank %d of %d (%s): %s%s%s\n", rank, size, host, ok ? "PASS" : "FAIL",
           ok ? "" : ": ", ok ? "" : why);
    fflush(stdout);
    return ok ? 0 : 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int launcher_rank(void)
{
    static const char *const vars[] = {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *value = getenv(vars[i]);
        if (value != NULL && value[0] != '\0') {
            return atoi(value);
        }
    }
    return 0;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s N [--odd-rank R [--odd-env VAR=VALUE] [--odd-hidden H] [--odd-delay S]] "
            "[--expect CODE:TEXT] [--expect-odd CODE:TEXT]\n",
            argv0);
    exit(2);
}

static void parse(int argc, char **argv, probe_args_t *a)
{
    memset(a, 0, sizeof(*a));
    a->odd_rank = -1;
    if (argc < 2) {
        usage(argv[0]);
    }
    a->size = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) {
            usage(argv[0]);
        }
        if (strcmp(opt, "--odd-rank") == 0) {
            a->odd_rank = atoi(argv[++i]);
        } else if (strcmp(opt, "--odd-env") == 0 && strchr(argv[i + 1], '=') != NULL) {
            a->odd_env = argv[++i];
        } else if (strcmp(opt, "--odd-hidden") == 0) {
            a->odd_hidden = (unsigned)atoi(argv[++i]);
        } else if (strcmp(opt, "--odd-delay") == 0) {
            a->odd_delay_s = (unsigned)atoi(argv[++i]);
        } else if (strcmp(opt, "--expect") == 0 && strchr(argv[i + 1], ':') != NULL) {
            a->expect = argv[++i];
        } else if (strcmp(opt, "--expect-odd") == 0 && strchr(argv[i + 1], ':') != NULL) {
            a->expect_odd = argv[++i];
        } else {
            usage(argv[0]);
        }
    }
}

/* An expected failure: CODE is the status's name, TEXT part of the message. */
static int expected_failure(ncclxResult_t res, const char *expect, char *why, size_t len)
{
    const char *colon = strchr(expect, ':');
    size_t code_len = (size_t)(colon - expect);
    const char *name = ncclxGetErrorString(res);
    int ok = res != ncclxSuccess && strlen(name) == code_len &&
             strncmp(name, expect, code_len) == 0 && strstr(ncclxGetLastError(), colon + 1) != NULL;
    snprintf(why, len, "expected '%.*s' with '%s', got '%s': %s", (int)code_len, expect, colon + 1,
             name, ncclxGetLastError());
    return ok;
}

int main(int argc, char **argv)
{
    ncclxEpGroupPlan_t group = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[] = {&group};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
    probe_args_t a;
    int rank = launcher_rank();
    int devices = 0;
    int have_gpu;
    ncclxResult_t res;
    char why[1024];
    double start, took;

    parse(argc, argv, &a);
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    group.num_experts = 8 * (unsigned)a.size;
    group.max_topk = 2;
    group.hidden = 256;
    group.max_dispatch_tokens_per_rank = 8;
    if (rank == a.odd_rank) {
        if (a.odd_env != NULL && putenv((char *)a.odd_env) != 0) {
            return report(rank, a.size, 0, "putenv failed");
        }
        if (a.odd_hidden != 0) {
            group.hidden = a.odd_hidden;
        }
        sleep(a.odd_delay_s);
    }
    start = now_s();
    res = ncclxInit(&plan, NULL, &ctx);
    took = now_s() - start;
    if (a.odd_delay_s > 0 && rank != a.odd_rank && took < (double)a.odd_delay_s - 0.5) {
        snprintf(why, sizeof(why),
                 "ncclxInit returned (%s) after %.2f s, before rank %d had called it %u s late",
                 ncclxGetErrorString(res), took, a.odd_rank, a.odd_delay_s);
        if (res == ncclxSuccess) {
            (void)ncclxFinalize(ctx);
        }
        return report(rank, a.size, 0, why);
    }
    if (a.expect != NULL) {
        const char *expect = rank == a.odd_rank && a.expect_odd != NULL ? a.expect_odd : a.expect;
        int ok = expected_failure(res, expect, why, sizeof(why)) && ctx == (ncclxContext_t)0x1;
        printf("init_probe: rank %d: %s: %s\n", rank, ncclxGetErrorString(res),
               ncclxGetLastError());
        if (res == ncclxSuccess) {
            (void)ncclxFinalize(ctx);
        }
        return report(rank, a.size, ok, why);
    }
    have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    if (!have_gpu) {
        snprintf(why, sizeof(why), "expected a CUDA error, got %s: %s", ncclxGetErrorString(res),
                 ncclxGetLastError());
        int ok = res == ncclxCudaError && strstr(ncclxGetLastError(), "CUDA") != NULL &&
                 ctx == (ncclxContext_t)0x1;
        printf("init_probe: no GPU: %s: %s\n", ncclxGetErrorString(res), ncclxGetLastError());
        return report(rank, a.size, ok, why);
    }
    if (res != ncclxSuccess) {
        snprintf(why, sizeof(why), "ncclxInit: %s: %s", ncclxGetErrorString(res),
                 ncclxGetLastError());
        return report(rank, a.size, 0, why);
    }
    res = ncclxContextGetInfo(ctx, &info);
    snprintf(why, sizeof(why), "info: %s, rank %d (expected %d), size %d (expected %d)",
             ncclxGetErrorString(res), info.rank, rank, info.num_ranks, a.size);
    int ok = res == ncclxSuccess && info.num_ranks == a.size && info.rank == rank;
    res = ncclxFinalize(ctx);
    return report(info.rank, a.size, ok && res == ncclxSuccess, why);
}
