/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plans as a caller builds them, from the fuzzer's bytes: the plan, the team and up to 64 EP
 * groups, each struct of a chosen size and magic.  Every entry point that takes a plan
 * (ncclxPlanValidate, ncclxPlanComputeSizes, ncclxPlanPrint) must agree on it, and an accepted
 * plan must import.  Then the cross-rank comparison: a plan against itself and against a copy
 * with one byte changed (ncclx_plan_hash, ncclx_plan_diff, ncclx_plan_difference_name).
 *
 * Input: flags, num_ep_groups, team fields, plan fields, then one record per group; when the
 * input ends before a group, the group repeats the one before it (so a short input can plan
 * 64 groups), then the mutation (scope, byte offset, xor).
 */
#include "fuzz_common.h"

#include "plan_internal.h"
#include "struct.h"

enum {
    F_TEAM = 0x1,           /* pass a team (else NULL: one rank) */
    F_BAD_PLAN_MAGIC = 0x2, /* the plan's magic is wrong */
    F_BAD_TEAM_MAGIC = 0x4,
    F_HOST_BLOCK = 0x8, /* a host block (aligned unless F_MISALIGNED) */
    F_MISALIGNED = 0x10,
    F_NULL_GROUPS = 0x20, /* ep_groups is NULL */
    F_NULL_GROUP = 0x40,  /* one entry of ep_groups is NULL */
    F_BAD_SIZES = 0x80    /* the sizes output struct has a wrong magic */
};

static FILE *devnull(void)
{
    static FILE *out;
    if (out == NULL) {
        out = fopen("/dev/null", "w");
        if (out == NULL) {
            perror("fuzz_plan: /dev/null");
            abort();
        }
    }
    return out;
}

static void read_group(fuzz_input_t *in, ncclxEpGroupPlan_t *g)
{
    const ncclxEpGroupPlan_t init = NCCLX_EP_GROUP_PLAN_INIT;
    *g = init;
    g->size = fuzz_struct_size(in, NCCLX_EP_GROUP_PLAN_SIZE_V1, sizeof(*g));
    if (fuzz_u8(in) & 1u) {
        g->magic ^= 0x100u;
    }
    g->algorithm = (ncclxEpAlgorithm_t)fuzz_u8(in);
    g->num_experts = fuzz_u32(in);
    g->max_topk = fuzz_u32(in);
    g->hidden = fuzz_u32(in);
    g->token_dtypes = fuzz_u32(in);
    g->layouts = fuzz_u32(in);
    g->recipes = fuzz_u32(in);
    g->max_dispatch_tokens_per_rank = fuzz_u32(in);
    g->max_recv_tokens_per_rank = fuzz_u32(in);
    g->max_token_bytes = fuzz_u32(in);
    g->max_scale_bytes = fuzz_u32(in);
    g->expert_alignment = fuzz_u32(in);
    g->enable_mask = fuzz_u32(in);
    g->num_handles = fuzz_u32(in);
    g->sm_budget = fuzz_u32(in);
    g->timeout_ns = fuzz_u64(in);
    g->overflow_policy = fuzz_u32(in);
}

/* diff(a, b) and diff(b, a) find the same field with the values swapped; no difference means
 * equal hashes; the name of a difference is a C string that fits. */
static void check_diff(const ncclx_plan_norm_t *a, const ncclx_plan_norm_t *b)
{
    ncclx_plan_difference_t ab, ba;
    char name[96];
    const int found = ncclx_plan_diff(a, b, &ab);
    FUZZ_CHECK(found == ncclx_plan_diff(b, a, &ba));
    if (!found) {
        FUZZ_CHECK(ncclx_plan_hash(a) == ncclx_plan_hash(b));
        return;
    }
    FUZZ_CHECK(ab.a != ab.b);
    FUZZ_CHECK(ab.group == ba.group && strcmp(ab.field, ba.field) == 0 &&
               strcmp(ab.scope, ba.scope) == 0 && ab.a == ba.b && ab.b == ba.a);
    ncclx_plan_difference_name(&ab, name, sizeof(name));
    FUZZ_CHECK(strlen(name) < sizeof(name) && strstr(name, ab.field) != NULL);
    ncclx_plan_difference_name(&ab, name, 8); /* truncated, still terminated */
    FUZZ_CHECK(strlen(name) < 8);
}

/* One changed byte of the team, the plan, or one group (the group count as is, or the whole
 * walk: every group the count reaches, imported or not, is compared). */
static void check_mutation(fuzz_input_t *in, const ncclx_plan_norm_t *a, ncclx_plan_norm_t *b)
{
    const uint8_t scope = fuzz_u8(in);
    const uint16_t at = fuzz_u16(in);
    uint8_t flip = fuzz_u8(in);
    unsigned char *bytes;
    size_t size;
    *b = *a;
    if ((scope & 3u) == 0) {
        bytes = (unsigned char *)&b->team;
        size = sizeof(b->team);
    } else if ((scope & 3u) == 1) {
        bytes = (unsigned char *)&b->plan;
        size = sizeof(b->plan);
    } else if ((scope & 3u) == 2) {
        bytes = (unsigned char *)&b->groups[(scope >> 2) % NCCLX_MAX_EP_GROUPS];
        size = sizeof(b->groups[0]);
    } else {
        /* Another group count, as import sets it: the norm's and the plan's alike. */
        b->num_groups = b->plan.num_ep_groups = (scope >> 2) % (NCCLX_MAX_EP_GROUPS + 1u);
        bytes = (unsigned char *)&b->num_groups;
        size = 0;
    }
    if (size > 0) {
        bytes[at % size] ^= flip == 0 ? 1u : flip;
    }
    check_diff(a, b);
    /* One byte changes one field at most: a difference found is one field, and two plans
     * that differ in exactly one field always hash differently (lib/plan/plan.c). */
    if (size > 0) {
        ncclx_plan_difference_t d;
        if (ncclx_plan_diff(a, b, &d)) {
            FUZZ_CHECK(ncclx_plan_hash(a) != ncclx_plan_hash(b));
        }
    }
    check_diff(b, b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = fuzz_input(data, size);
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclx_plan_norm_t *norm = calloc(2, sizeof(*norm));
    ncclxEpGroupPlan_t **groups = NULL;
    uint32_t num_groups;
    uint8_t flags;
    static _Alignas(64) unsigned char host_block[128];
    fuzz_silence_log();
    if (norm == NULL) {
        abort();
    }
    flags = fuzz_u8(&in);
    num_groups = fuzz_u8(&in);
    team.size = fuzz_struct_size(&in, NCCLX_TEAM_SIZE_V1, sizeof(team));
    team.magic ^= (flags & F_BAD_TEAM_MAGIC) ? 0x1000u : 0u;
    team.num_ranks = fuzz_u32(&in);
    team.num_nodes = fuzz_u32(&in);
    team.lsa_size = fuzz_u32(&in);
    plan.size = fuzz_struct_size(&in, NCCLX_PLAN_SIZE_V1, sizeof(plan));
    plan.magic ^= (flags & F_BAD_PLAN_MAGIC) ? 0x1000u : 0u;
    plan.m2n_staging_bytes = fuzz_u64(&in);
    plan.m2n_max_group_entries = fuzz_u32(&in);
    plan.host_block_bytes = fuzz_u32(&in);
    if (flags & F_HOST_BLOCK) {
        plan.host_block = host_block + ((flags & F_MISALIGNED) ? 8 : 0);
    }
    plan.num_ep_groups = num_groups;
    /* Exactly num_groups pointers: a read past them is the library's bug, and ASan's. */
    groups = calloc(num_groups + 1u, sizeof(*groups));
    if (groups == NULL) {
        abort();
    }
    for (uint32_t gi = 0; gi < num_groups; gi++) {
        groups[gi] = malloc(sizeof(ncclxEpGroupPlan_t));
        if (groups[gi] == NULL) {
            abort();
        }
        if (gi > 0 && !fuzz_left(&in)) {
            *groups[gi] = *groups[gi - 1];
        } else {
            read_group(&in, groups[gi]);
        }
    }
    if ((flags & F_NULL_GROUP) && num_groups > 0) {
        free(groups[num_groups - 1]);
        groups[num_groups - 1] = NULL;
    }
    plan.ep_groups = (flags & F_NULL_GROUPS) ? NULL : (const ncclxEpGroupPlan_t *const *)groups;
    if (flags & F_BAD_SIZES) {
        sizes.magic ^= 0x1000u;
    }

    const ncclxTeam_t *t = (flags & F_TEAM) ? &team : NULL;
    const ncclxResult_t valid = ncclxPlanValidate(&plan, t);
    const ncclxResult_t sized = ncclxPlanComputeSizes(&plan, t, &sizes);
    const ncclxResult_t printed = ncclxPlanPrint(&plan, t, devnull());
    FUZZ_CHECK(printed == valid);
    if (!(flags & F_BAD_SIZES)) {
        FUZZ_CHECK(sized == valid);
    }
    if (sized == ncclxSuccess) {
        FUZZ_CHECK(sizes.num_regions > 0);
        for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
            FUZZ_CHECK(sizes.per_handle[c] <= sizes.total[c]);
        }
    }
    const ncclxResult_t imported = ncclx_plan_import(&plan, t, &norm[0]);
    if (valid == ncclxSuccess) {
        FUZZ_CHECK(imported == ncclxSuccess);
    }
    /* Rank 0's plan against this one, as init compares them: whatever was imported. */
    if (imported != ncclxSuccess) {
        /* Import stopped part way: keep what it copied, with the invariant it keeps (the
         * walk compares plan.num_ep_groups and walks num_groups groups). */
        norm[0].num_groups = norm[0].plan.num_ep_groups % (NCCLX_MAX_EP_GROUPS + 1u);
        norm[0].plan.num_ep_groups = norm[0].num_groups;
    }
    check_diff(&norm[0], &norm[0]);
    norm[1] = norm[0];
    check_diff(&norm[0], &norm[1]);
    FUZZ_CHECK(ncclx_plan_hash(&norm[0]) == ncclx_plan_hash(&norm[1]));
    check_mutation(&in, &norm[0], &norm[1]);

    for (uint32_t gi = 0; gi < num_groups; gi++) {
        free(groups[gi]);
    }
    free(groups);
    free(norm);
    return 0;
}
