/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-plan: what a plan costs per rank, before anything runs.  Without arguments it prints
 * the DeepSeek-V3-sized decode plan (one LL group) for 8 to 64 ranks.  An HT group
 * (--ht-tokens) on a team of several load/store domains (lsa < ranks, as the default --nodes
 * gives from 16 ranks on) adds the network regions of docs/plan-sizing.md, "HT across load/store
 * domains", shown beside the reference implementation's inter-node buffer for the same group.
 * M2N staging (--m2n, --m2n-entries) on several adds the network staging and signals of
 * docs/m2n.md, "Across nodes".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncclx.h>

#include "m2n_ring.h" /* kernels/: the ring a plan gets */

typedef struct {
    uint32_t experts, hidden, topk, ll_tokens, ht_tokens, ht_recv, handles, nodes;
    uint32_t ranks; /* 0: sweep 8..64 */
    uint64_t m2n_bytes;
    uint32_t m2n_entries;
    int fp8, mask, regions;
} plan_options_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ncclx-plan [options]\n"
            "Prints the bytes per rank and memory class that libncclx would allocate at init.\n"
            "Defaults are DeepSeek-V3 sized: one LL group (decode).\n"
            "  --experts N      global experts (256)\n"
            "  --hidden N       hidden size (7168)\n"
            "  --topk N         top-k (8)\n"
            "  --ll-tokens N    LL tokens per rank, 0 = no LL group (128)\n"
            "  --ht-tokens N    HT tokens per rank, 0 = no HT group (0; with nodes > 1, lsa =\n"
            "                   ranks / nodes, its network regions; lsa must be a power of two)\n"
            "  --ht-recv N      HT receive rows per rank (0 = ranks * ht-tokens, the worst case;\n"
            "                   at most 2^31-1)\n"
            "  --handles N      handles per group (4)\n"
            "  --ranks N        ranks; default: a sweep over 8, 16, 32, 64\n"
            "  --nodes N        nodes (ranks / 8, at least 1)\n"
            "  --m2n BYTES      M2N staging bytes per rank (0 = no M2N; at least ranks * 16384;\n"
            "                   with nodes > 1 also its network staging and signals)\n"
            "  --m2n-entries N  M2N tensors one group may record (0 = 128 with --m2n)\n"
            "  --no-fp8         LL without the FP8 recipe\n"
            "  --no-mask        LL without the active mask\n"
            "  --regions        list every region (for one --ranks value)\n"
            "  --help\n");
}

static int parse_u64(const char *name, const char *text, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' || value > max) {
        fprintf(stderr, "ncclx-plan: --%s '%s' is not an integer in [0, %" PRIu64 "]\n", name, text,
                max);
        return 0;
    }
    *out = value;
    return 1;
}

static const char *option_name(const struct option *longopts, int val)
{
    for (; longopts->name != NULL; longopts++) {
        if (longopts->val == val) {
            return longopts->name;
        }
    }
    return "?";
}

static int parse_options(int argc, char **argv, plan_options_t *o)
{
    static const struct option longopts[] = {
        {"experts", 1, NULL, 'e'},   {"hidden", 1, NULL, 'H'},      {"topk", 1, NULL, 'k'},
        {"ll-tokens", 1, NULL, 'l'}, {"ht-tokens", 1, NULL, 't'},   {"ht-recv", 1, NULL, 'r'},
        {"handles", 1, NULL, 'h'},   {"ranks", 1, NULL, 'n'},       {"nodes", 1, NULL, 'N'},
        {"m2n", 1, NULL, 'm'},       {"m2n-entries", 1, NULL, 'E'}, {"no-fp8", 0, NULL, 'F'},
        {"no-mask", 0, NULL, 'M'},   {"regions", 0, NULL, 'R'},     {"help", 0, NULL, '?'},
        {NULL, 0, NULL, 0}};
    uint32_t *targets[128] = {0};
    int c;
    targets['e'] = &o->experts;
    targets['H'] = &o->hidden;
    targets['k'] = &o->topk;
    targets['l'] = &o->ll_tokens;
    targets['t'] = &o->ht_tokens;
    targets['r'] = &o->ht_recv;
    targets['h'] = &o->handles;
    targets['n'] = &o->ranks;
    targets['N'] = &o->nodes;
    targets['E'] = &o->m2n_entries;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        uint64_t value;
        if (c == 'F') {
            o->fp8 = 0;
        } else if (c == 'M') {
            o->mask = 0;
        } else if (c == 'R') {
            o->regions = 1;
        } else if (c == 'm') {
            if (!parse_u64("m2n", optarg, UINT64_MAX, &o->m2n_bytes)) {
                return 0;
            }
        } else if (c > 0 && c < 128 && targets[c] != NULL) {
            if (!parse_u64(option_name(longopts, c), optarg, UINT32_MAX, &value)) {
                return 0;
            }
            *targets[c] = (uint32_t)value;
        } else {
            usage(c == '?' && strcmp(argv[optind - 1], "--help") == 0 ? stdout : stderr);
            return 0;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ncclx-plan: unexpected argument '%s'\n", argv[optind]);
        return 0;
    }
    return 1;
}

/* Fills the groups the options ask for; returns how many. */
static uint32_t build_groups(const plan_options_t *o, ncclxEpGroupPlan_t groups[2])
{
    uint32_t n = 0;
    const ncclxEpGroupPlan_t init = NCCLX_EP_GROUP_PLAN_INIT;
    if (o->ll_tokens > 0) {
        ncclxEpGroupPlan_t *g = &groups[n++];
        *g = init;
        g->algorithm = NCCLX_EP_ALGO_LL;
        g->layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR;
        g->recipes = NCCLX_EP_RECIPE_NONE | (o->fp8 ? NCCLX_EP_RECIPE_FP8 : 0);
        g->max_dispatch_tokens_per_rank = o->ll_tokens;
        g->enable_mask = (uint32_t)o->mask;
    }
    if (o->ht_tokens > 0) {
        ncclxEpGroupPlan_t *g = &groups[n++];
        *g = init;
        g->algorithm = NCCLX_EP_ALGO_HT;
        g->layouts = NCCLX_EP_LAYOUT_FLAT | NCCLX_EP_LAYOUT_EXPERT_MAJOR;
        g->recipes = NCCLX_EP_RECIPE_NONE;
        g->max_dispatch_tokens_per_rank = o->ht_tokens;
        g->max_recv_tokens_per_rank = o->ht_recv;
        g->expert_alignment = 128;
    }
    for (uint32_t i = 0; i < n; i++) {
        groups[i].num_experts = o->experts;
        groups[i].hidden = o->hidden;
        groups[i].max_topk = o->topk;
        groups[i].token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
        groups[i].num_handles = o->handles;
    }
    return n;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/* The reference implementation's LL buffer for the same group (NVIDIA's nccl_ep, its
 * LowLatencyLayout): one buffer serves load/store and GIN peers alike, two slots of
 * max(dispatch send + receive, combine send + receive) and two signal areas; expert-major (the
 * larger).  B = hidden x 2 (BF16 rows); E experts, T tokens, K top-k, R ranks. */
static uint64_t reference_ll_bytes(const plan_options_t *o, uint32_t ranks)
{
    const uint64_t B = (uint64_t)o->hidden * 2, T = o->ll_tokens, K = o->topk, E = o->experts;
    const uint64_t hdr = align_up(4 + K * 2, 16), dmsg = hdr + B, cmsg = B / 2 / 128 * 4 + B;
    const uint64_t dispatch = T * dmsg + (uint64_t)ranks * T * dmsg;
    const uint64_t combine = E * T * cmsg + T * cmsg * K;
    const uint64_t slot = dispatch > combine ? dispatch : combine, sig = align_up(4 * E, 128);
    return 2 * slot + 2 * sig;
}

/* The reference implementation's inter-node (GIN) buffer for the same HT group (NVIDIA's
 * nccl_ep, ../shared/specs/ht-facts.md section 9.2): one registered window whose regions are
 * each rounded up to 4 KiB, with C = 64 tokens per chunk across nodes, T_a = roundup(T, C) and
 * Q = T_a / C: combine RED tokens and RED prob (x2 each), dispatch and combine flags, RDMA
 * guards (x2), token staging, dense prob and RDMA send and receive staging.  B = hidden x 2
 * (BF16 rows), A = lsa, N_t = nodes, L = E / R; 0 on one node (no RDMA at all there). */
static uint64_t reference_ht_gin_bytes(const plan_options_t *o, uint32_t ranks, uint32_t nodes)
{
    const uint64_t B = (uint64_t)o->hidden * 2, T = o->ht_tokens, E = o->experts, N = nodes;
    const uint64_t LA = E / ranks * (ranks / nodes), C = 64, Ta = align_up(T, C), Q = Ta / C;
    const uint64_t page = 4096;
    if (nodes <= 1 || T == 0) {
        return 0;
    }
    return 2 * align_up(Ta * (N - 1) * B, page) + 2 * align_up(Ta * (N - 1) * LA * 4, page) +
           2 * align_up((N - 1) * Q * 8, page) + 2 * align_up(N * 8, page) + align_up(T * B, page) +
           align_up(T * E * 4, page) + 2 * align_up((N - 1) * T * (B + LA * 4), page);
}

/* ncclxPlanPrint's listing, printed as is; returns the bytes of the HT group's network regions
 * in it (0 when it has none), or UINT64_MAX when the plan could not be printed. */
static uint64_t print_regions(const ncclxPlan_t *plan, const ncclxTeam_t *team)
{
    static const char *const ht_net[] = {"HT network maps", "HT network staging",
                                         "HT relay rows",   "HT partials out",
                                         "HT partials in",  "HT network words"};
    char *text = NULL;
    size_t len = 0;
    uint64_t sum = 0;
    FILE *mem = open_memstream(&text, &len);
    ncclxResult_t res;
    if (mem == NULL) {
        return ncclxPlanPrint(plan, team, stdout) == ncclxSuccess ? 0 : UINT64_MAX;
    }
    res = ncclxPlanPrint(plan, team, mem);
    fclose(mem);
    fputs(text != NULL ? text : "", stdout);
    for (char *line = text; res == ncclxSuccess && line != NULL && *line != '\0';) {
        char *next = strchr(line, '\n');
        for (size_t i = 0; i < sizeof(ht_net) / sizeof(ht_net[0]); i++) {
            const char *at = strstr(line, ht_net[i]);
            unsigned long long offset, bytes;
            if (at != NULL && (next == NULL || at < next) &&
                sscanf(at + strlen(ht_net[i]), "%llu %llu", &offset, &bytes) == 2) {
                sum += bytes;
            }
        }
        line = next != NULL ? next + 1 : NULL;
    }
    free(text);
    return res == ncclxSuccess ? sum : UINT64_MAX;
}

static int report(const plan_options_t *o, uint32_t ranks, int header)
{
    ncclxEpGroupPlan_t groups[2];
    const ncclxEpGroupPlan_t *group_ptrs[2] = {&groups[0], &groups[1]};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclxResult_t res;
    plan.num_ep_groups = build_groups(o, groups);
    plan.ep_groups = group_ptrs;
    plan.m2n_staging_bytes = o->m2n_bytes;
    plan.m2n_max_group_entries = o->m2n_entries;
    team.num_ranks = ranks;
    team.num_nodes = o->nodes != 0 ? o->nodes : (ranks >= 8 ? ranks / 8 : 1);
    team.lsa_size = ranks / team.num_nodes;
    res = ncclxPlanComputeSizes(&plan, &team, &sizes);
    if (res != ncclxSuccess) {
        fprintf(stderr, "ncclx-plan: %s: %s\n", ncclxGetErrorString(res), ncclxGetLastError());
        return 0;
    }
    if (header) {
        printf("# libncclx plan: experts=%u hidden=%u topk=%u ll_tokens=%u ht_tokens=%u "
               "ht_recv=%u handles=%u m2n=%" PRIu64 " m2n_entries=%u (MiB per rank)\n",
               o->experts, o->hidden, o->topk, o->ll_tokens, o->ht_tokens, o->ht_recv, o->handles,
               o->m2n_bytes, o->m2n_entries);
        printf("# nccl_ep_ll: the reference implementation's LL buffer for the same LL group "
               "(its formula, expert-major), beside our symmetric bytes\n");
        printf("# nccl_ep_ht_gin: its inter-node (GIN) buffer for the same HT group across nodes "
               "(ht-facts.md 9.2), beside it\n");
        printf("%6s %6s %6s %12s %12s %12s %12s %12s %12s %15s\n", "ranks", "nodes", "lsa",
               "symmetric", "device", "mapped_host", "host", "per_handle", "nccl_ep_ll",
               "nccl_ep_ht_gin");
    }
    printf("%6u %6u %6u %12.2f %12.2f %12.4f %12.4f %12.4f", ranks, team.num_nodes, team.lsa_size,
           mib(sizes.total[NCCLX_MEM_SYMMETRIC]), mib(sizes.total[NCCLX_MEM_DEVICE]),
           mib(sizes.total[NCCLX_MEM_MAPPED_HOST]), mib(sizes.total[NCCLX_MEM_HOST]),
           mib(sizes.per_handle[NCCLX_MEM_DEVICE]));
    if (o->ll_tokens != 0) {
        printf(" %12.2f", mib(reference_ll_bytes(o, ranks)));
    } else {
        printf(" %12s", "-");
    }
    if (o->ht_tokens != 0 && team.num_nodes > 1) {
        printf(" %15.2f\n", mib(reference_ht_gin_bytes(o, ranks, team.num_nodes)));
    } else {
        printf(" %15s\n", "-");
    }
    if (o->regions) {
        printf("\n");
        if (o->m2n_bytes != 0) {
            uint64_t slice;
            uint32_t channels;
            ncclx_m2n_ring_shape(o->m2n_bytes, ranks, &slice, &channels);
            printf("# M2N ring per source rank: %u channel(s) of %u x %" PRIu64 "-byte slices "
                   "(%" PRIu64 " of the %" PRIu64 " staging bytes each source gets)\n",
                   channels, NCCLX_M2N_DEPTH, slice, (uint64_t)channels * NCCLX_M2N_DEPTH * slice,
                   o->m2n_bytes / ranks);
            if (team.lsa_size < ranks) {
                const uint64_t remote = ranks - team.lsa_size;
                printf("# M2N across load/store domains: network staging of %" PRIu64
                       " remote ranks x %u channel(s) x %u x %" PRIu64 " bytes = %" PRIu64
                       ", network signals %" PRIu64 " x (1 + 2 x %u) = %" PRIu64 "\n",
                       remote, channels, NCCLX_M2N_DEPTH, slice,
                       remote * channels * NCCLX_M2N_DEPTH * slice, remote, channels,
                       ncclx_m2n_net_signals((uint32_t)remote, channels));
            }
            /* nccl_m2n (../shared/specs/m2n-facts.md): staging per rank and call = max(source
             * tile, destination tile, 2048 B), allocated by the call, not by a plan. */
            printf("# nccl_m2n: the reference implementation stages max(source tile, destination "
                   "tile, 2048 B) per rank and call, allocated when the call runs; libncclx's ring "
                   "is fixed at init and streams tiles of any size through it\n");
        }
        const uint64_t ht_net = print_regions(&plan, &team);
        if (ht_net == UINT64_MAX) {
            return 0;
        }
        if (o->ht_tokens != 0 && team.num_nodes > 1) {
            const uint64_t ref = reference_ht_gin_bytes(o, ranks, team.num_nodes);
            printf("# HT across load/store domains: the HT network regions above hold %" PRIu64
                   " bytes (%.2f MiB) per rank; nccl_ep_ht_gin: the reference implementation's "
                   "inter-node (GIN) buffer for the same HT group holds %" PRIu64
                   " (%.2f MiB; ht-facts.md 9.2: RED tokens and prob x2, flags, guards, token "
                   "staging, dense prob, RDMA send and receive staging, each rounded to 4 KiB, 64 "
                   "tokens per chunk)\n",
                   ht_net, mib(ht_net), ref, mib(ref));
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    plan_options_t o = {256, 7168, 8, 128, 0, 0, 4, 0, 0, 0, 0, 1, 1, 0};
    static const uint32_t sweep[] = {8, 16, 32, 64};
    if (!parse_options(argc, argv, &o)) {
        return 2;
    }
    if (o.ranks != 0) {
        return report(&o, o.ranks, 1) ? 0 : 1;
    }
    for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++) {
        if (!report(&o, sweep[i], i == 0)) {
            return 1;
        }
    }
    return 0;
}
