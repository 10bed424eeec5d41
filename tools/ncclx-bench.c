/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench: EP dispatch and combine, low latency (LL, the default) or high throughput (HT,
 * --algo ht), timed, in an nccl-tests-style table.  Without a launcher it runs a loopback team
 * of 8 ranks on one GPU; under srun/mpirun/prterun (PMIX_RANK set) each process is one rank of
 * a communicator from ncclxInit.  Every row also times a device-to-device copy of the same
 * bytes in the same run (the roofline) and, with --check, compares one iteration with values
 * computed on the host.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "no_gpu.h"
#include "tools/source_id.h" /* the build folder's, made at make: NCCLX_SOURCE_ID (source_id.sh) */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ncclx-bench [options]\n"
            "Times EP dispatch and combine (nccl-tests-style table): low latency (ll) or high\n"
            "throughput (ht).  Where they differ, defaults are given as ll / ht.\n"
            "  --algo A            ll (default) or ht\n"
            "  --layout L          ll: expert (expert-major, default) or rank (rank-major);\n"
            "                      ht: flat (default) or expert (expert-major)\n"
            "  --tokens N          tokens per rank (128 / 4096; ll --sweep: the largest, 256)\n"
            "  --hidden N          hidden size (7168)\n"
            "  --topk N            top-k (8; at most 16 / 32)\n"
            "  --experts N         global experts, divisible by the ranks (256)\n"
            "  --dtype T           bf16 (default), fp16 or fp32: tokens and expert outputs\n"
            "  --recipe R          none (default); fp8 (ll only: BF16 in, E4M3 + scales on\n"
            "                      the wire); mxfp8 (ht expert-major bf16 only: the combine\n"
            "                      sends E4M3 + one E8M0 scale per 32 elements; --check then\n"
            "                      bounds the error instead of matching bits)\n"
            "  --pass P            ht: fwd (default) or bwd (backward dispatch and combine)\n"
            "  --recv N            ht: receive rows per rank S (flat: the plan's default,\n"
            "                      ranks x tokens; expert: the most any rank needs with this\n"
            "                      routing, which --comm cannot know before init: give --recv)\n"
            "  --alignment N       ht expert-major: each expert's rows padded to a multiple of N\n"
            "                      (1)\n"
            "  --zero-copy         ll: plan the group with zero_copy (each dispatch row written\n"
            "                      once, into its receiver's zero-copy rows) and pass those rows\n"
            "                      (ncclxEpGroupGetLlBuffers) as out_tokens, out_scales (fp8)\n"
            "                      and combine's expert_out: rows received in place (either\n"
            "                      layout, one load/store domain, no --mask);\n"
            "                      ht: receive rows and expert outputs in the group's own buffers\n"
            "                      (ncclxEpGroupGetHtBuffers): no copy-out, no staging copy\n"
            "  --iters N           timed iterations (200 / 50)\n"
            "  --warmup N          untimed iterations first (20 / 10)\n"
            "  --graph             capture each rank's dispatch and combine in CUDA graphs\n"
            "  --team-graph        loopback: capture each operation of all the team's ranks in\n"
            "                      one CUDA graph, one launch for the team instead of one per\n"
            "                      rank (an experiment on the emulation's start stagger: see\n"
            "                      docs/performance.md)\n"
            "  --loopback N        a loopback team of N ranks on one GPU (default: 8 when\n"
            "                      PMIX_RANK is unset)\n"
            "  --comm              one rank of a communicator from ncclxInit (default under a\n"
            "                      launcher; alone: a singleton, rank 0 of 1)\n"
            "  --nodes N           a loopback team shaped as N nodes of loopback / N ranks\n"
            "                      (an emulated cluster: ranks of one node reach each other\n"
            "                      through symmetric memory, other nodes through the emulated\n"
            "                      network; docs/multi-node.md); 0: no shape (default)\n"
            "  --device D          CUDA device of a loopback team (0)\n"
            "  --check             check one iteration against values computed on the host\n"
            "  --sweep             one row per token count 1, 2, 4, ... up to --tokens\n"
            "  --seed N            routing and token values (1)\n"
            "  --no-gate           do not hold timed work until it is all enqueued (see\n"
            "                      docs/performance.md); needed under Nsight Compute, which\n"
            "                      runs each kernel at its launch\n"
            "  --rank-starts       also report when the first and the last rank's stream got to\n"
            "                      each operation and when the first rank's ended (medians, us\n"
            "                      after the operation's start): how far a team's ranks start\n"
            "                      apart\n"
            "  --timeout S         GPU wait timeout in seconds (10 loopback, 60 with --comm)\n"
            "  --sm-budget N       blocks per data-moving kernel (default: the library's)\n"
            "  --peer-copy         roofline: copy to the next GPU (cudaMemcpyPeerAsync, over\n"
            "                      NVLink where there is one) instead of within this GPU\n"
            "  --mask              ll: plan the group with an active mask (the fault-tolerant\n"
            "                      path: every wait and send checks the mask)\n"
            "  --layer             also time the routing alone (ncclxEpHandleUpdate) and a whole\n"
            "                      layer: routing, dispatch and combine in one stream order\n"
            "  --csv FILE          append one line per measured operation to FILE (a header\n"
            "                      first when it is empty); tools/plot_bench.py draws them\n"
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
    static const char *const algos[] = {"ll", "ht"}, *const passes[] = {"fwd", "bwd"};
    static const char *const layouts[] = {"expert", "rank", "flat"};
    static const uint32_t layout_values[] = {NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                                             NCCLX_EP_LAYOUT_RANK_MAJOR, NCCLX_EP_LAYOUT_FLAT};
    static const char *const dtypes[] = {"bf16", "fp16", "fp32"};
    static const char *const recipes[] = {"none", "fp8", "mxfp8"};
    static const uint32_t recipe_values[] = {NCCLX_EP_RECIPE_NONE, NCCLX_EP_RECIPE_FP8,
                                             NCCLX_EP_RECIPE_MXFP8};
    static const ncclxDataType_t dtype_values[] = {NCCLX_BFLOAT16, NCCLX_FLOAT16, NCCLX_FLOAT32};
    int i;
    switch (c) {
    case 'a':
        if (!parse_word("algo", arg, algos, 2, &i)) {
            return 0;
        }
        o->algo = i == 0 ? NCCLX_EP_ALGO_LL : NCCLX_EP_ALGO_HT;
        return 1;
    case 'l':
        if (!parse_word("layout", arg, layouts, 3, &i)) {
            return 0;
        }
        o->layout = layout_values[i];
        return 1;
    case 'p':
        if (!parse_word("pass", arg, passes, 2, &i)) {
            return 0;
        }
        o->pass = i == 0 ? NCCLX_EP_PASS_FORWARD : NCCLX_EP_PASS_BACKWARD;
        return 1;
    case 'd':
        if (!parse_word("dtype", arg, dtypes, 3, &i)) {
            return 0;
        }
        o->dtype = dtype_values[i];
        return 1;
    default: /* 'r' */
        if (!parse_word("recipe", arg, recipes, 3, &i)) {
            return 0;
        }
        o->recipe = recipe_values[i];
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
        /* tokens and topk: the HT bounds here, LL's in check_ll_options */
        {'t', "tokens", 1, NCCLX_EP_MAX_HT_TOKENS_PER_RANK, &o->tokens},
        {'H', "hidden", 1, NCCLX_EP_MAX_HIDDEN, &o->hidden},
        {'k', "topk", 1, NCCLX_EP_MAX_HT_TOPK, &o->topk},
        {'e', "experts", 1, NCCLX_EP_MAX_EXPERTS, &o->experts},
        {'i', "iters", 1, 1000000, &o->iters},
        {'w', "warmup", 0, 1000000, &o->warmup},
        {'L', "loopback", 1, 1024, &o->loopback},
        {'N', "nodes", 0, 1024, &o->nodes},
        {'D', "device", 0, 1023, &o->device},
        {'T', "timeout", 1, 3600, &o->timeout_s},
        {'B', "sm-budget", 0, NCCLX_EP_MAX_SM_BUDGET, &o->sm_budget},
        {'R', "recv", 0, INT32_MAX, &o->recv},
        {'A', "alignment", 1, NCCLX_EP_MAX_EXPERT_ALIGNMENT, &o->alignment},
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

/* Options given on the command line, whose defaults depend on --algo. */
typedef struct {
    int tokens, iters, warmup, pass, recv, alignment;
} given_t;

static int refuse(const char *what)
{
    fprintf(stderr, "ncclx-bench: %s\n", what);
    return 0;
}

static int check_ll_options(bench_options_t *o, const given_t *given)
{
    if (o->sweep && !given->tokens) {
        o->tokens = 256;
    }
    if (o->layout == NCCLX_EP_LAYOUT_FLAT) {
        return refuse("--layout flat is an HT layout (--algo ht); LL takes expert or rank");
    }
    if (given->pass || given->recv || given->alignment) {
        return refuse("--pass, --recv and --alignment are HT options (--algo ht)");
    }
    if (o->zero_copy && o->mask) {
        return refuse("--zero-copy and --mask: an LL group planned with zero_copy has no active "
                      "mask");
    }
    if (o->zero_copy && o->nodes > 1) {
        return refuse("--zero-copy needs one load/store domain: --algo ll takes it without "
                      "--nodes (or with --nodes 1)");
    }
    if (o->tokens > NCCLX_EP_MAX_LL_TOKENS_PER_RANK) {
        fprintf(stderr, "ncclx-bench: --tokens %u: --algo ll takes at most %u tokens per rank\n",
                o->tokens, NCCLX_EP_MAX_LL_TOKENS_PER_RANK);
        return 0;
    }
    if (o->topk > NCCLX_EP_MAX_TOPK) {
        fprintf(stderr, "ncclx-bench: --topk %u: --algo ll takes at most top-%u\n", o->topk,
                NCCLX_EP_MAX_TOPK);
        return 0;
    }
    if (o->recipe == NCCLX_EP_RECIPE_FP8 && o->dtype != NCCLX_BFLOAT16) {
        return refuse("--recipe fp8 takes --dtype bf16 tokens");
    }
    if (o->recipe == NCCLX_EP_RECIPE_MXFP8) {
        return refuse("--recipe mxfp8 is an HT combine (--algo ht --layout expert)");
    }
    return 1;
}

/* HT defaults (DeepSeek-V3 prefill: 4096 tokens per rank) and the LL-only features. */
static int check_ht_options(bench_options_t *o, const given_t *given)
{
    o->tokens = given->tokens ? o->tokens : 4096;
    o->iters = given->iters ? o->iters : 50;
    o->warmup = given->warmup ? o->warmup : 10;
    if (o->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
        return refuse("--layout rank is an LL layout; --algo ht takes flat or expert");
    }
    if (o->recipe == NCCLX_EP_RECIPE_FP8) {
        return refuse("--recipe fp8 is LL only: HT moves tokens in their own dtype");
    }
    if (o->recipe == NCCLX_EP_RECIPE_MXFP8 &&
        (o->layout != NCCLX_EP_LAYOUT_EXPERT_MAJOR || o->dtype != NCCLX_BFLOAT16 || o->zero_copy ||
         o->hidden % 32 != 0)) {
        return refuse("--recipe mxfp8 needs --layout expert, --dtype bf16, a hidden multiple "
                      "of 32, and no --zero-copy");
    }
    if (o->mask) {
        return refuse("--mask is LL only: HT groups have no active mask");
    }
    if (o->alignment > 1 && o->layout == NCCLX_EP_LAYOUT_FLAT) {
        return refuse("--alignment pads expert-major zones: use it with --layout expert");
    }
    if (o->comm && o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR && o->recv == 0) {
        return refuse("--algo ht --layout expert with a communicator needs --recv N (receive "
                      "rows per rank: ranks x tokens x topk + experts / ranks x (alignment - 1) "
                      "always suffices)");
    }
    return 1;
}

/* Cross-option rules the library would otherwise report less directly. */
static int check_options(bench_options_t *o, const given_t *given)
{
    const int ht = o->algo == NCCLX_EP_ALGO_HT;
    if (o->layout == 0) {
        o->layout = ht ? NCCLX_EP_LAYOUT_FLAT : NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    }
    if (!(ht ? check_ht_options(o, given) : check_ll_options(o, given))) {
        return 0;
    }
    if (o->topk > o->experts) {
        fprintf(stderr, "ncclx-bench: --topk %u exceeds --experts %u\n", o->topk, o->experts);
        return 0;
    }
    if (o->graph == 2 && o->comm) {
        return refuse("--team-graph is a loopback option: a rank of a communicator is alone in "
                      "its process (use --graph)");
    }
    if (o->graph == 2 && o->rank_starts) {
        return refuse("--team-graph times the team's one graph: it has no per-rank starts to "
                      "report (--rank-starts takes --graph)");
    }
    return 1;
}

static int parse_options(int argc, char **argv, bench_options_t *o)
{
    static const struct option longopts[] = {
        {"algo", 1, NULL, 'a'},        {"layout", 1, NULL, 'l'},     {"tokens", 1, NULL, 't'},
        {"hidden", 1, NULL, 'H'},      {"topk", 1, NULL, 'k'},       {"experts", 1, NULL, 'e'},
        {"dtype", 1, NULL, 'd'},       {"recipe", 1, NULL, 'r'},     {"iters", 1, NULL, 'i'},
        {"warmup", 1, NULL, 'w'},      {"graph", 0, NULL, 'g'},      {"loopback", 1, NULL, 'L'},
        {"nodes", 1, NULL, 'N'},       {"comm", 0, NULL, 'C'},       {"device", 1, NULL, 'D'},
        {"check", 0, NULL, 'c'},       {"sweep", 0, NULL, 'S'},      {"seed", 1, NULL, 's'},
        {"timeout", 1, NULL, 'T'},     {"no-gate", 0, NULL, 'G'},    {"help", 0, NULL, 'h'},
        {"sm-budget", 1, NULL, 'B'},   {"mask", 0, NULL, 'M'},       {"peer-copy", 0, NULL, 'P'},
        {"pass", 1, NULL, 'p'},        {"recv", 1, NULL, 'R'},       {"alignment", 1, NULL, 'A'},
        {"zero-copy", 0, NULL, 'Z'},   {"layer", 0, NULL, 'Y'},      {"csv", 1, NULL, 'V'},
        {"rank-starts", 0, NULL, 'K'}, {"team-graph", 0, NULL, 'E'}, {NULL, 0, NULL, 0}};
    given_t given;
    int c, ok = 1;
    memset(&given, 0, sizeof(given));
    while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            exit(0);
        } else if (c == 'V') {
            o->csv = optarg;
        } else if (c == 'g' || c == 'c' || c == 'S' || c == 'G' || c == 'M' || c == 'P' ||
                   c == 'Z' || c == 'Y' || c == 'K') {
            o->rank_starts |= c == 'K';
            o->layer |= c == 'Y';
            o->zero_copy |= c == 'Z';
            o->mask |= c == 'M';
            o->peer_copy |= c == 'P';
            o->graph = c == 'g' && o->graph == 0 ? 1 : o->graph;
            o->check |= c == 'c';
            o->sweep |= c == 'S';
            o->no_gate |= c == 'G';
        } else if (c == 'E') {
            o->graph = 2;
        } else if (c == 'C' || c == 'L') { /* the last of --comm and --loopback wins */
            o->comm = c == 'C';
            ok = c == 'C' || parse_number(c, optarg, o);
        } else if (c == 'a' || c == 'l' || c == 'd' || c == 'r' || c == 'p') {
            given.pass |= c == 'p';
            ok = parse_choice(c, optarg, o);
        } else if (c != '?') {
            given.tokens |= c == 't';
            given.iters |= c == 'i';
            given.warmup |= c == 'w';
            given.recv |= c == 'R';
            given.alignment |= c == 'A';
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
    return ok && check_options(o, &given);
}

/* HT: the shape, S and what the plan costs next to nccl_ep. */
static int print_ht_config(const bench_team_t *t)
{
    const bench_options_t *o = &t->o;
    const double mib = 1024.0 * 1024.0;
    uint64_t ours, theirs;
    if (bench_team_symmetric_bytes(t, &ours) != 0) {
        return -1;
    }
    theirs =
        bench_ht_nccl_ep_bytes(t->ranks, o->tokens, o->experts, t->recv_rows, t->out_row_bytes);
    printf("# experts %u (%u per rank), hidden %u, top-k %u, layout %s, dtype %s, pass %s, "
           "combine %s, seed %" PRIu64 "\n",
           o->experts, t->local_experts, o->hidden, o->topk,
           o->layout == NCCLX_EP_LAYOUT_FLAT ? "flat" : "expert-major", bench_dtype_name(o->dtype),
           o->pass == NCCLX_EP_PASS_BACKWARD ? "backward" : "forward",
           o->recipe == NCCLX_EP_RECIPE_MXFP8 ? "mxfp8 (E4M3 + E8M0 per 32 on the wire)"
                                              : "in the dtype",
           o->seed);
    printf("# receive rows per rank S = %u (%s)", t->recv_rows,
           o->recv == 0           ? "the plan's default, ranks x tokens"
           : o->recv_from_routing ? "the most any rank needs with this routing, rounded up"
                                  : "--recv");
    if (o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        printf(", expert alignment %u", o->alignment);
    }
    if (o->zero_copy) {
        printf(", zero-copy (outputs in the group's buffers)");
    }
    printf("\n# symmetric memory per rank: %.1f MiB (nccl_ep's formula for this config: %.1f "
           "MiB)\n",
           (double)ours / mib, (double)theirs / mib);
    if (ours > theirs) {
        fprintf(stderr, "ncclx-bench: the plan's symmetric memory exceeds nccl_ep's for this "
                        "config\n");
    }
    return 0;
}

/* LL --zero-copy: where the rows land and what the plan costs. */
static int print_ll_zero_copy(const bench_team_t *t)
{
    uint64_t bytes;
    if (bench_team_symmetric_bytes(t, &bytes) != 0) {
        return -1;
    }
    printf("# zero-copy: dispatch rows received in place in the group's zero-copy rows (%s "
           "= %u per rank), combine reads expert_out %s; symmetric memory per rank: %.1f MiB "
           "(the plan's, zero-copy rows included)\n",
           t->o.layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? "rank-major, R x T" : "L x R x T",
           t->slabs * t->slab_rows,
           bench_ll_expert_out_in_rows(t) ? "there"
                                          : "from a buffer of its own (the rows hold E4M3, the "
                                            "expert outputs are BF16)",
           (double)bytes / (1024.0 * 1024.0));
    return 0;
}

static int print_header(const bench_team_t *t)
{
    const bench_options_t *o = &t->o;
    const int ht = o->algo == NCCLX_EP_ALGO_HT;
    ncclxVersionInfo_t v;
    struct cudaDeviceProp prop;
    memset(&v, 0, sizeof(v));
    memset(&prop, 0, sizeof(prop));
    (void)ncclxGetVersionInfo(&v);
    if (cudaGetDeviceProperties(&prop, t->cuda_device) != cudaSuccess) {
        snprintf(prop.name, sizeof(prop.name), "unknown");
    }
    printf("# ncclx-bench: EP %s dispatch and combine\n", ht ? "high-throughput" : "low-latency");
    printf("# libncclx %d.%d.%d, NCCL %d.%d.%d, CUDA runtime %d.%d\n", v.ncclx / 10000,
           v.ncclx / 100 % 100, v.ncclx % 100, v.nccl / 10000, v.nccl / 100 % 100, v.nccl % 100,
           v.cuda_runtime / 1000, v.cuda_runtime % 1000 / 10);
    printf("# source: %s\n", NCCLX_SOURCE_ID);
    printf("# GPU %d: %s, %d SMs, %.1f GiB\n", t->cuda_device, prop.name, prop.multiProcessorCount,
           (double)prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    if (o->comm) {
        printf("# ranks: %u, one per process, communicator from ncclxInit (rank 0 shown)\n",
               t->ranks);
    } else {
        if (o->nodes != 0) {
            printf("# ranks: loopback team of %u on one GPU shaped as %u nodes x %u (one-GPU "
                   "emulation of a cluster: the emulated network between nodes)\n",
                   t->ranks, o->nodes, t->ranks / o->nodes);
        } else {
            printf("# ranks: loopback team of %u on one GPU (one-GPU emulation; "
                   "ncclxLoopbackInit)\n",
                   t->ranks);
        }
    }
    if (ht) {
        if (print_ht_config(t) != 0) {
            return -1;
        }
    } else {
        printf("# experts %u (%u per rank), hidden %u, top-k %u, layout %s-major, dtype %s, "
               "recipe %s, seed %" PRIu64 "\n",
               o->experts, t->local_experts, o->hidden, o->topk,
               o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? "expert" : "rank",
               bench_dtype_name(o->dtype), o->recipe == NCCLX_EP_RECIPE_FP8 ? "fp8" : "none",
               o->seed);
        if (o->zero_copy && print_ll_zero_copy(t) != 0) {
            return -1;
        }
    }
    printf("# %s; %u warm-up + %u timed iterations%s; time: common start event -> last rank's "
           "end event\n",
           o->graph == 2 ? "CUDA graphs (one per operation for the whole team)"
           : o->graph    ? "CUDA graphs (one per rank and operation)"
                         : "eager calls",
           o->warmup, o->iters, o->no_gate ? " (no gate: includes host launch gaps)" : "");
    if (ht) {
        printf("# bytes per rank: rows sent x hidden x element bytes, one row per token and "
               "destination %s; GB/s = bytes / median\n",
               o->layout == NCCLX_EP_LAYOUT_FLAT ? "rank" : "expert");
        if (o->recipe == NCCLX_EP_RECIPE_MXFP8) {
            printf("# mxfp8 combine bytes: its bytes on the wire, one packed row of hidden x "
                   "33/32 bytes per token and destination rank\n");
        }
    } else {
        printf("# bytes per rank: valid top-k entries x hidden x element bytes (FP8: 1 + 4/128); "
               "GB/s = bytes / median\n");
    }
    if (t->copy_device != t->cuda_device) {
        printf("# %%roof = time of a cudaMemcpyPeerAsync of the rank's bytes from GPU %d to GPU "
               "%d / median; %%hbm not measured (the copy is not within HBM)\n",
               t->cuda_device, t->copy_device);
    } else {
        printf("# %%roof = time of a device-to-device copy of the %s bytes / median\n",
               t->nlocal > 1 ? "team's (ranks x bytes)" : "rank's");
        printf("# %%hbm = the least HBM bytes the path must read and write (each token read "
               "once, each row written once per pass; docs/performance.md) at the bandwidth "
               "the same copy reached (2 bytes of traffic per copied byte) / median\n");
    }
    {
        char label[96];
        bench_label(t, label, sizeof(label));
        printf("# rows: %s; paths: dispatch %s, combine %s\n", label,
               bench_path_name(t, BENCH_DISPATCH), bench_path_name(t, BENCH_COMBINE));
    }
    printf("#\n#%45s%65s\n", "dispatch", "combine");
    printf("# %6s  %12s %9s %9s %9s %8s %6s %5s  %12s %9s %9s %9s %8s %6s %5s  %7s\n", "tokens",
           "bytes", "med_us", "min_us", "max_us", "GB/s", "%roof", "%hbm", "bytes", "med_us",
           "min_us", "max_us", "GB/s", "%roof", "%hbm", "#wrong");
    fflush(stdout);
    return 0;
}

typedef struct {
    uint64_t bytes[BENCH_NUM_OPS]; /* per rank */
    bench_stats_t stats[BENCH_NUM_OPS];
    double copy_us[BENCH_NUM_OPS];
    uint64_t team_bytes[BENCH_NUM_OPS]; /* what the copy moved */
    uint64_t hbm_bytes[BENCH_NUM_OPS];  /* the path's least HBM traffic, local ranks */
    uint64_t wrong;
} bench_row_t;

static double pct_roof(const bench_row_t *row, int op)
{
    return row->copy_us[op] / row->stats[op].median_us * 100.0;
}

/* The least traffic at the copy's bandwidth (2 x team bytes in copy_us) over the median; < 0
 * when the copy went to another GPU. */
static double pct_hbm(const bench_team_t *t, const bench_row_t *row, int op)
{
    if (t->copy_device != t->cuda_device || row->team_bytes[op] == 0) {
        return -1.0;
    }
    const double bytes_per_us = 2.0 * (double)row->team_bytes[op] / row->copy_us[op];
    return (double)row->hbm_bytes[op] / bytes_per_us / row->stats[op].median_us * 100.0;
}

static void print_row(const bench_team_t *t, const bench_row_t *row)
{
    char wrong[24];
    if (t->o.check) {
        snprintf(wrong, sizeof(wrong), "%" PRIu64, row->wrong);
    } else {
        snprintf(wrong, sizeof(wrong), "-");
    }
    printf("  %6u ", t->tokens);
    for (int op = 0; op < BENCH_DATA_OPS; op++) {
        const bench_stats_t *s = &row->stats[op];
        const double hbm = pct_hbm(t, row, op);
        printf(" %12" PRIu64 " %9.2f %9.2f %9.2f %8.2f %6.1f ", row->bytes[op], s->median_us,
               s->min_us, s->max_us, (double)row->bytes[op] / (s->median_us * 1e3),
               pct_roof(row, op));
        if (hbm >= 0) {
            printf("%5.1f ", hbm);
        } else {
            printf("%5s ", "-");
        }
    }
    printf(" %7s\n", wrong);
    for (int op = 0; t->o.rank_starts && op < BENCH_DATA_OPS; op++) {
        const bench_stats_t *s = &row->stats[op];
        printf("#   rank starts, %s: the ranks' streams got to it %.2f to %.2f us after its "
               "start; the first rank ended at %.2f us, the last at %.2f (medians)\n",
               op == BENCH_DISPATCH ? "dispatch" : "combine", s->first_start_us, s->last_start_us,
               s->first_end_us, s->median_us);
    }
    if (t->o.layer) {
        const bench_stats_t *route = &row->stats[BENCH_ROUTE], *layer = &row->stats[BENCH_LAYER];
        printf("#   layer (routing, dispatch, combine in one stream order): med %.2f us (min "
               "%.2f, max %.2f); routing alone: med %.2f us (min %.2f, max %.2f); dispatch + "
               "combine timed apart: %.2f us\n",
               layer->median_us, layer->min_us, layer->max_us, route->median_us, route->min_us,
               route->max_us,
               row->stats[BENCH_DISPATCH].median_us + row->stats[BENCH_COMBINE].median_us);
    }
}

/* --csv: one line per measured operation. */
static int write_csv(const bench_team_t *t, const bench_row_t *row)
{
    static const char *const names[BENCH_NUM_OPS] = {"dispatch", "combine", "routing", "layer"};
    char wrong[24];
    if (t->o.check) {
        snprintf(wrong, sizeof(wrong), "%" PRIu64, row->wrong);
    } else {
        snprintf(wrong, sizeof(wrong), "-");
    }
    for (int op = 0; op < bench_num_ops(t); op++) {
        const int data = op < BENCH_DATA_OPS;
        bench_csv_t line = {names[op],
                            bench_path_name(t, (bench_op_t)op),
                            data ? row->bytes[op] : 0,
                            row->stats[op],
                            data ? pct_roof(row, op) : -1.0,
                            data ? pct_hbm(t, row, op) : -1.0,
                            data ? row->hbm_bytes[op] : 0,
                            wrong};
        if (bench_csv_row(t, &line) != 0) {
            return -1;
        }
    }
    return 0;
    fflush(stdout);
}

/* Bytes every local rank put across the network so far (the emulated network counts them). */
static int bench_net_bytes(const bench_team_t *t, uint64_t *bytes)
{
    *bytes = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        ncclxNetStats_t stats = NCCLX_NET_STATS_INIT;
        BENCH_NCCLX(ncclxContextGetNetStats(t->r[i].ctx, &stats), "ncclxContextGetNetStats",
                    t->r[i].rank);
        *bytes += stats.bytes;
    }
    return 0;
}

/* A shaped team: what crossed the emulated network per rank and dispatch + combine, next to
 * the least that must (each token's row once per remote destination rank, each combine row
 * once) and the time it would take at 50 GB/s, one 400 Gb/s NIC per GPU. */
static void print_network(const bench_team_t *t, const bench_inputs_t *in, uint32_t n,
                          const uint64_t entry[BENCH_NUM_OPS], uint64_t crossed)
{
    const bench_options_t *o = &t->o;
    const uint64_t ops = (uint64_t)o->warmup + o->iters;
    uint64_t least = 0;
    const int ht = o->algo == NCCLX_EP_ALGO_HT;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        uint64_t dispatch, combine;
        if (ht) {
            /* HT: a token crosses once per other node keeping a row of it, and one partial
             * row per (token, node) comes back. */
            bench_remote_nodes(in, t->r[i].rank, n, t->ranks / o->nodes, &dispatch);
            combine = dispatch;
        } else {
            bench_remote_rows(in, t->r[i].rank, n, t->ranks / o->nodes,
                              o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR, &dispatch, &combine);
        }
        least += dispatch * entry[BENCH_DISPATCH] + combine * entry[BENCH_COMBINE];
    }
    const double per_rank = (double)crossed / ops / t->nlocal;
    const double least_per_rank = (double)least / t->nlocal;
    printf("#   emulated network, per rank and dispatch + combine: %.0f bytes crossed, least "
           "possible %.0f (%.3fx: %s), %.1f us at 50 GB/s\n",
           per_rank, least_per_rank, least_per_rank > 0 ? per_rank / least_per_rank : 0.0,
           ht ? "routing maps, top-k entries, signal words, and FP32 node partials (2x a 16-bit "
                "row) so that the sum is the same bits on every team shape"
              : "message headers and signal words",
           per_rank / 50e3);
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
    const int ht = o->algo == NCCLX_EP_ALGO_HT;
    /* LL zero copy, recipe none: expert_out is the rows dispatch receives, which are the identity
     * experts' outputs (rank-major: unweighted; bench_combine_value knows). */
    const int fill = o->check && !bench_ll_expert_out_in_rows(t);
    bench_row_t row;
    uint64_t net_before = 0, net_after = 0;
    memset(&row, 0, sizeof(row));
    if (bench_team_route(t, n) != 0 ||
        (fill && (ht ? bench_ht_fill(t, in) : bench_fill_expert_out(t, in)) != 0) ||
        (o->graph && bench_team_capture(t) != 0) || bench_net_bytes(t, &net_before) != 0 ||
        bench_time_ops(t, row.stats) != 0 || bench_net_bytes(t, &net_after) != 0) {
        return -1;
    }
    for (int op = 0; op < BENCH_DATA_OPS; op++) {
        /* The MXFP8 combine moves one packed row (hidden x 33/32 bytes) per token and
         * destination rank, whatever the layout: its bytes on the wire. */
        const int packed = op == BENCH_COMBINE && o->recipe == NCCLX_EP_RECIPE_MXFP8;
        uint64_t team = 0;
        for (uint32_t i = 0; i < t->nlocal; i++) {
            /* HT: rows sent (flat: per destination rank; expert-major: per expert) */
            team += (ht ? bench_ht_sent_rows(in, packed ? NCCLX_EP_LAYOUT_FLAT : o->layout,
                                             t->r[i].rank, n)
                        : bench_valid_entries(in, t->r[i].rank, n)) *
                    (packed ? o->hidden + o->hidden / 32u : entry[op]);
        }
        row.bytes[op] = team / t->nlocal;
        row.team_bytes[op] = team;
        row.hbm_bytes[op] = bench_hbm_bytes(t, in, n, (bench_op_t)op);
        if (team > 0 && bench_time_copy(t, (size_t)team, &row.copy_us[op]) != 0) {
            return -1;
        }
    }
    if (o->check &&
        (ht ? bench_ht_check(t, in, &row.wrong) : bench_check(t, in, &row.wrong)) != 0) {
        return -1;
    }
    *wrong += row.wrong;
    if (leader) {
        print_row(t, &row);
        if (o->nodes > 1 && !o->comm) {
            /* With --layer every iteration runs dispatch and combine twice. */
            print_network(t, in, n, entry, (net_after - net_before) / (o->layer ? 2 : 1));
        }
        if (write_csv(t, &row) != 0) {
            return -1;
        }
    }
    return 0;
}

/* HT expert-major without --recv (a loopback team, whose ranks are known before init): S = the
 * most receive rows any rank needs with the seed's routing at the largest token count (fewer
 * tokens need no more), rounded up to 256 rows. */
static int resolve_recv(bench_options_t *o)
{
    bench_inputs_t in;
    uint64_t most = 1;
    if (o->algo != NCCLX_EP_ALGO_HT || o->layout != NCCLX_EP_LAYOUT_EXPERT_MAJOR || o->recv != 0 ||
        o->comm || o->experts % o->loopback != 0) { /* the library names a bad team */
        return 0;
    }
    if (bench_inputs_make(o, o->loopback, &in) != 0) {
        return -1;
    }
    for (uint32_t r = 0; r < o->loopback && most != UINT64_MAX; r++) {
        uint64_t rows = bench_ht_recv_rows(&in, o->layout, o->alignment, r, o->tokens);
        most = rows > most ? rows : most;
    }
    bench_inputs_free(&in);
    most = most == UINT64_MAX ? most : (most + 255) / 256 * 256;
    if (most > INT32_MAX) {
        fprintf(stderr, "ncclx-bench: cannot size the expert-major receive rows; give --recv\n");
        return -1;
    }
    o->recv = (uint32_t)most;
    o->recv_from_routing = 1;
    return 0;
}

/* HT: every rank's receive rows fit in S (under the plan's TRAP policy an overflow fails the
 * run on the GPU; this says it first, with the numbers). */
static int check_recv(const bench_team_t *t, const bench_inputs_t *in)
{
    for (uint32_t r = 0; t->o.algo == NCCLX_EP_ALGO_HT && r < t->ranks; r++) {
        uint64_t rows = bench_ht_recv_rows(in, t->o.layout, t->o.alignment, r, t->max_tokens);
        if (rows > t->recv_rows) {
            fprintf(stderr,
                    "ncclx-bench: rank %u needs %" PRIu64 " receive rows with this "
                    "routing, more than S = %u (--recv)\n",
                    r, rows, t->recv_rows);
            return -1;
        }
    }
    return 0;
}

static int run(const bench_options_t *options, uint64_t *wrong)
{
    bench_options_t o = *options;
    bench_team_t t;
    bench_inputs_t in;
    int rc, leader;
    if (resolve_recv(&o) != 0 || bench_team_create(&o, &t) != 0) {
        return -1;
    }
    rc = bench_inputs_make(&o, t.ranks, &in);
    if (rc != 0) {
        (void)bench_team_destroy(&t);
        return -1;
    }
    rc = bench_team_upload(&t, &in);
    if (rc == 0) {
        rc = check_recv(&t, &in);
    }
    leader = t.r[0].rank == 0;
    if (rc == 0 && leader) {
        rc = print_header(&t);
    }
    for (uint32_t n = o.sweep ? 1 : o.tokens; rc == 0;) {
        rc = run_row(&t, &in, n, leader, wrong);
        if (n >= o.tokens) {
            break;
        }
        n = n * 2 < o.tokens ? n * 2 : o.tokens; /* 1, 2, 4, ..., then --tokens itself */
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
    o.algo = NCCLX_EP_ALGO_LL;
    o.layout = 0; /* LL: expert-major, HT: flat (check_options) */
    o.pass = NCCLX_EP_PASS_FORWARD;
    o.alignment = 1;
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
