/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench: EP low-latency dispatch and combine, timed, in an nccl-tests-style table.
 * Without a launcher it runs a loopback team of 8 ranks on one GPU; under srun/mpirun/prterun
 * (PMIX_RANK set) each process is one rank of a communicator from ncclxInit.  Every row also
 * times a device-to-device copy of the same bytes in the same run (the roofline) and, with
 * --check, compares one iteration with values computed on the host.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "no_gpu.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ncclx-bench [options]\n"
            "Times EP low-latency dispatch and combine (nccl-tests-style table).\n"
            "  --algo ll           algorithm (only ll runs in this release)\n"
            "  --layout L          expert (expert-major, default) or rank (rank-major)\n"
            "  --tokens N          tokens per rank (128; with --sweep, the largest, 256)\n"
            "  --hidden N          hidden size (7168)\n"
            "  --topk N            top-k (8)\n"
            "  --experts N         global experts, divisible by the ranks (256)\n"
            "  --dtype T           bf16 (default), fp16 or fp32: tokens and expert outputs\n"
            "  --recipe R          none (default) or fp8 (BF16 in, E4M3 + scales on the wire)\n"
            "  --iters N           timed iterations (200)\n"
            "  --warmup N          untimed iterations first (20)\n"
            "  --graph             capture each rank's dispatch and combine in CUDA graphs\n"
            "  --loopback N        a loopback team of N ranks on one GPU (default: 8 when\n"
            "                      PMIX_RANK is unset)\n"
            "  --comm              one rank of a communicator from ncclxInit (default under a\n"
            "                      launcher; alone: a singleton, rank 0 of 1)\n"
            "  --device D          CUDA device of a loopback team (0)\n"
            "  --check             check one iteration against values computed on the host\n"
            "  --sweep             one row per token count 1, 2, 4, ... up to --tokens\n"
            "  --seed N            routing and token values (1)\n"
            "  --no-gate           do not hold timed work until it is all enqueued (see\n"
            "                      docs/performance.md)\n"
            "  --timeout S         GPU wait timeout in seconds (10 loopback, 60 with --comm)\n"
            "  --sm-budget N       blocks per data-moving kernel (default: the library's)\n"
            "  --peer-copy         roofline: copy to the next GPU (cudaMemcpyPeerAsync, over\n"
            "                      NVLink where there is one) instead of within this GPU\n"
            "  --mask              plan the group with an active mask (the fault-tolerant\n"
            "                      path: every wait and send checks the mask)\n"
            "  --help\n");
}

static int parse_u64(const char *name, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    unsigned long long value;
    errno = 0;
    value = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' || value < min ||
        value > max) {
        fprintf(stderr, "ncclx-bench: --%s '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]\n",
                name, text, min, max);
        return 0;
    }
    *out = value;
    return 1;
}

/* text must be one of names[0..n-1]; *out gets its index. */
static int parse_word(const char *name, const char *text, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(text, names[i]) == 0) {
            *out = i;
            return 1;
        }
    }
    fprintf(stderr, "ncclx-bench: --%s '%s' is not one of:", name, text);
    for (int i = 0; i < n; i++) {
        fprintf(stderr, " %s", names[i]);
    }
    fprintf(stderr, "\n");
    return 0;
}

static int parse_choice(int c, const char *arg, bench_options_t *o)
{
    static const char *const algos[] = {"ll", "ht"}, *const layouts[] = {"expert", "rank"};
    static const char *const dtypes[] = {"bf16", "fp16", "fp32"}, *const recipes[] = {"none",
                                                                                      "fp8"};
    static const ncclxDataType_t dtype_values[] = {NCCLX_BFLOAT16, NCCLX_FLOAT16, NCCLX_FLOAT32};
    int i;
    switch (c) {
    case 'a':
        if (!parse_word("algo", arg, algos, 2, &i)) {
            return 0;
        }
        if (i == 1) {
            fprintf(stderr, "ncclx-bench: --algo ht: the high-throughput algorithm is not "
                            "implemented in this release; only --algo ll runs\n");
            return 0;
        }
        return 1;
    case 'l':
        if (!parse_word("layout", arg, layouts, 2, &i)) {
            return 0;
        }
        o->layout = i == 0 ? NCCLX_EP_LAYOUT_EXPERT_MAJOR : NCCLX_EP_LAYOUT_RANK_MAJOR;
        return 1;
    case 'd':
        if (!parse_word("dtype", arg, dtypes, 3, &i)) {
            return 0;
        }
        o->dtype = dtype_values[i];
        return 1;
    default: /* 'r' */
        if (!parse_word("recipe", arg, recipes, 2, &i)) {
            return 0;
        }
        o->recipe = i == 0 ? NCCLX_EP_RECIPE_NONE : NCCLX_EP_RECIPE_FP8;
        return 1;
    }
}

/* Numeric options: bounds and target by option character. */
static int parse_number(int c, const char *arg, bench_options_t *o)
{
    const struct {
        int c;
        const char *name;
        uint64_t min, max;
        uint32_t *target;
    } numbers[] = {
        {'t', "tokens", 1, NCCLX_EP_MAX_LL_TOKENS_PER_RANK, &o->tokens},
        {'H', "hidden", 1, NCCLX_EP_MAX_HIDDEN, &o->hidden},
        {'k', "topk", 1, NCCLX_EP_MAX_TOPK, &o->topk},
        {'e', "experts", 1, NCCLX_EP_MAX_EXPERTS, &o->experts},
        {'i', "iters", 1, 1000000, &o->iters},
        {'w', "warmup", 0, 1000000, &o->warmup},
        {'L', "loopback", 1, 1024, &o->loopback},
        {'D', "device", 0, 1023, &o->device},
        {'T', "timeout", 1, 3600, &o->timeout_s},
        {'B', "sm-budget", 0, NCCLX_EP_MAX_SM_BUDGET, &o->sm_budget},
    };
    uint64_t v;
    if (c == 's') {
        return parse_u64("seed", arg, 0, UINT64_MAX, &o->seed);
    }
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        if (numbers[i].c == c) {
            if (!parse_u64(numbers[i].name, arg, numbers[i].min, numbers[i].max, &v)) {
                return 0;
            }
            *numbers[i].target = (uint32_t)v;
            return 1;
        }
    }
    return 0;
}

/* Cross-option rules the library would otherwise report less directly. */
static int check_options(bench_options_t *o, int tokens_given)
{
    if (o->sweep && !tokens_given) {
        o->tokens = 256;
    }
    if (o->recipe == NCCLX_EP_RECIPE_FP8 && o->dtype != NCCLX_BFLOAT16) {
        fprintf(stderr, "ncclx-bench: --recipe fp8 takes --dtype bf16 tokens\n");
        return 0;
    }
    if (o->topk > o->experts) {
        fprintf(stderr, "ncclx-bench: --topk %u exceeds --experts %u\n", o->topk, o->experts);
        return 0;
    }
    return 1;
}

static int parse_options(int argc, char **argv, bench_options_t *o)
{
    static const struct option longopts[] = {
        {"algo", 1, NULL, 'a'},    {"layout", 1, NULL, 'l'},    {"tokens", 1, NULL, 't'},
        {"hidden", 1, NULL, 'H'},  {"topk", 1, NULL, 'k'},      {"experts", 1, NULL, 'e'},
        {"dtype", 1, NULL, 'd'},   {"recipe", 1, NULL, 'r'},    {"iters", 1, NULL, 'i'},
        {"warmup", 1, NULL, 'w'},  {"graph", 0, NULL, 'g'},     {"loopback", 1, NULL, 'L'},
        {"comm", 0, NULL, 'C'},    {"device", 1, NULL, 'D'},    {"check", 0, NULL, 'c'},
        {"sweep", 0, NULL, 'S'},   {"seed", 1, NULL, 's'},      {"timeout", 1, NULL, 'T'},
        {"no-gate", 0, NULL, 'G'}, {"help", 0, NULL, 'h'},      {"sm-budget", 1, NULL, 'B'},
        {"mask", 0, NULL, 'M'},    {"peer-copy", 0, NULL, 'P'}, {NULL, 0, NULL, 0}};
    int c, tokens_given = 0, ok = 1;
    while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            exit(0);
        } else if (c == 'g' || c == 'c' || c == 'S' || c == 'G' || c == 'M' || c == 'P') {
            o->mask |= c == 'M';
            o->peer_copy |= c == 'P';
            o->graph |= c == 'g';
            o->check |= c == 'c';
            o->sweep |= c == 'S';
            o->no_gate |= c == 'G';
        } else if (c == 'C' || c == 'L') { /* the last of --comm and --loopback wins */
            o->comm = c == 'C';
            ok = c == 'C' || parse_number(c, optarg, o);
        } else if (c == 'a' || c == 'l' || c == 'd' || c == 'r') {
            ok = parse_choice(c, optarg, o);
        } else if (c != '?') {
            tokens_given |= c == 't';
            ok = parse_number(c, optarg, o);
        } else {
            usage(stderr);
            return 0;
        }
    }
    if (ok && optind < argc) {
        fprintf(stderr, "ncclx-bench: unexpected argument '%s'\n", argv[optind]);
        return 0;
    }
    return ok && check_options(o, tokens_given);
}

static void print_header(const bench_team_t *t)
{
    const bench_options_t *o = &t->o;
    ncclxVersionInfo_t v;
    struct cudaDeviceProp prop;
    memset(&v, 0, sizeof(v));
    memset(&prop, 0, sizeof(prop));
    (void)ncclxGetVersionInfo(&v);
    if (cudaGetDeviceProperties(&prop, t->cuda_device) != cudaSuccess) {
        snprintf(prop.name, sizeof(prop.name), "unknown");
    }
    printf("# ncclx-bench: EP low-latency dispatch and combine\n");
    printf("# libncclx %d.%d.%d, NCCL %d.%d.%d, CUDA runtime %d.%d\n", v.ncclx / 10000,
           v.ncclx / 100 % 100, v.ncclx % 100, v.nccl / 10000, v.nccl / 100 % 100, v.nccl % 100,
           v.cuda_runtime / 1000, v.cuda_runtime % 1000 / 10);
    printf("# GPU %d: %s, %d SMs, %.1f GiB\n", t->cuda_device, prop.name, prop.multiProcessorCount,
           (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    if (o->comm) {
        printf("# ranks: %u, one per process, communicator from ncclxInit (rank 0 shown)\n",
               t->ranks);
    } else {
        printf("# ranks: loopback team of %u on one GPU (ncclxLoopbackInit)\n", t->ranks);
    }
    printf("# experts %u (%u per rank), hidden %u, top-k %u, layout %s-major, dtype %s, "
           "recipe %s, seed %" PRIu64 "\n",
           o->experts, t->local_experts, o->hidden, o->topk,
           o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? "expert" : "rank",
           bench_dtype_name(o->dtype), o->recipe == NCCLX_EP_RECIPE_FP8 ? "fp8" : "none", o->seed);
    printf("# %s; %u warm-up + %u timed iterations%s; time: common start event -> last rank's "
           "end event\n",
           o->graph ? "CUDA graphs (one per rank and operation)" : "eager calls", o->warmup,
           o->iters, o->no_gate ? " (no gate: includes host launch gaps)" : "");
    printf("# bytes per rank: valid top-k entries x hidden x element bytes (FP8: 1 + 4/128); "
           "GB/s = bytes / median\n");
    if (t->copy_device != t->cuda_device) {
        printf("# %%roof = time of a cudaMemcpyPeerAsync of the rank's bytes from GPU %d to GPU "
               "%d / median\n",
               t->cuda_device, t->copy_device);
    } else {
        printf("# %%roof = time of a device-to-device copy of the %s bytes / median\n",
               t->nlocal > 1 ? "team's (ranks x bytes)" : "rank's");
    }
    printf("#\n#%42s%58s\n", "dispatch", "combine");
    printf("# %6s  %12s %9s %9s %9s %8s %6s  %12s %9s %9s %9s %8s %6s  %7s\n", "tokens", "bytes",
           "med_us", "min_us", "max_us", "GB/s", "%roof", "bytes", "med_us", "min_us", "max_us",
           "GB/s", "%roof", "#wrong");
    fflush(stdout);
}

typedef struct {
    uint64_t bytes[BENCH_NUM_OPS]; /* per rank */
    bench_stats_t stats[BENCH_NUM_OPS];
    double copy_us[BENCH_NUM_OPS];
    uint64_t wrong;
} bench_row_t;

static void print_row(const bench_team_t *t, const bench_row_t *row)
{
    char wrong[24];
    if (t->o.check) {
        snprintf(wrong, sizeof(wrong), "%" PRIu64, row->wrong);
    } else {
        snprintf(wrong, sizeof(wrong), "-");
    }
    printf("  %6u ", t->tokens);
    for (int op = 0; op < BENCH_NUM_OPS; op++) {
        const bench_stats_t *s = &row->stats[op];
        printf(" %12" PRIu64 " %9.2f %9.2f %9.2f %8.2f %6.1f ", row->bytes[op], s->median_us,
               s->min_us, s->max_us, (double)row->bytes[op] / (s->median_us * 1e3),
               row->copy_us[op] / s->median_us * 100.0);
    }
    printf(" %7s\n", wrong);
    fflush(stdout);
}

/* One configuration: n tokens per rank. */
static int run_row(bench_team_t *t, const bench_inputs_t *in, uint32_t n, int leader,
                   uint64_t *wrong)
{
    const bench_options_t *o = &t->o;
    const uint64_t entry[BENCH_NUM_OPS] = {o->recipe == NCCLX_EP_RECIPE_FP8
                                               ? o->hidden + o->hidden / 128 * 4
                                               : (uint64_t)o->hidden * bench_dtype_size(o->dtype),
                                           (uint64_t)o->hidden * bench_dtype_size(o->dtype)};
    bench_row_t row;
    memset(&row, 0, sizeof(row));
    if (bench_team_route(t, n) != 0 || (o->check && bench_fill_expert_out(t, in) != 0) ||
        (o->graph && bench_team_capture(t) != 0) || bench_time_ops(t, row.stats) != 0) {
        return -1;
    }
    for (int op = 0; op < BENCH_NUM_OPS; op++) {
        uint64_t team = 0;
        for (uint32_t i = 0; i < t->nlocal; i++) {
            team += bench_valid_entries(in, t->r[i].rank, n) * entry[op];
        }
        row.bytes[op] = team / t->nlocal;
        if (team > 0 && bench_time_copy(t, (size_t)team, &row.copy_us[op]) != 0) {
            return -1;
        }
    }
    if (o->check && bench_check(t, in, &row.wrong) != 0) {
        return -1;
    }
    *wrong += row.wrong;
    if (leader) {
        print_row(t, &row);
    }
    return 0;
}

static int run(const bench_options_t *o, uint64_t *wrong)
{
    bench_team_t t;
    bench_inputs_t in;
    int rc, leader;
    if (bench_team_create(o, &t) != 0) {
        return -1;
    }
    rc = bench_inputs_make(o, t.ranks, &in);
    if (rc != 0) {
        (void)bench_team_destroy(&t);
        return -1;
    }
    rc = bench_team_upload(&t, &in);
    leader = t.r[0].rank == 0;
    if (rc == 0 && leader) {
        print_header(&t);
    }
    for (uint32_t n = o->sweep ? 1 : o->tokens; rc == 0;) {
        rc = run_row(&t, &in, n, leader, wrong);
        if (n >= o->tokens) {
            break;
        }
        n = n * 2 < o->tokens ? n * 2 : o->tokens; /* 1, 2, 4, ..., then --tokens itself */
    }
    bench_inputs_free(&in);
    if (bench_team_destroy(&t) != 0) {
        rc = -1;
    }
    return rc;
}

int main(int argc, char **argv)
{
    bench_options_t o;
    uint64_t wrong = 0;
    const char *reason;
    memset(&o, 0, sizeof(o));
    o.comm = getenv("PMIX_RANK") != NULL; /* under a launcher: one rank per process */
    o.loopback = 8;
    o.layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    o.tokens = 128;
    o.hidden = 7168;
    o.topk = 8;
    o.experts = 256;
    o.dtype = NCCLX_BFLOAT16;
    o.recipe = NCCLX_EP_RECIPE_NONE;
    o.iters = 200;
    o.warmup = 20;
    o.timeout_s = 0; /* 10 s for a loopback team, 60 s with a communicator */
    o.seed = 1;
    if (!parse_options(argc, argv, &o)) {
        return 2;
    }
    /* Without a driver, say so before the library reports CUDA's words for it. */
    reason = ncclx_tool_no_driver();
    if (reason != NULL) {
        ncclx_tool_explain_no_gpu("ncclx-bench", "timing dispatch/combine", reason);
        return 1;
    }
    if (run(&o, &wrong) != 0) {
        /* A driver but no GPU visible (or one too old): the library has reported the CUDA
         * error; add what it means. */
        reason = ncclx_tool_no_gpu();
        if (reason != NULL) {
            ncclx_tool_explain_no_gpu("ncclx-bench", "timing dispatch/combine", reason);
        }
        return 1;
    }
    if (wrong > 0) {
        fprintf(stderr, "ncclx-bench: %" PRIu64 " wrong element(s)\n", wrong);
        return 1;
    }
    return 0;
}
