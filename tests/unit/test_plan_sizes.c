/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plan sizing against hand-computed values (the arithmetic is spelled out next to each
 * number; docs/plan-sizing.md gives the formulas).  HT groups and M2N staging are planned, not
 * implemented: the public calls refuse them (checked here), and their sizing formulas are
 * checked through the internal layout so that they hold when the features land.
 */
#include <stdlib.h>

#include "ncclx_test.h"

#include "ep_group.h"
#include "plan_internal.h"
#include "pool.h"

/* DeepSeek-V3 decode: 256 experts, hidden 7168, top-8, 128 tokens per rank, BF16 + FP8. */
static ncclxEpGroupPlan_t ll_group(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_LL;
    g.num_experts = 256;
    g.max_topk = 8;
    g.hidden = 7168;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    g.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_FP8;
    g.max_dispatch_tokens_per_rank = 128;
    g.enable_mask = 1;
    g.num_handles = 4;
    return g;
}

/* DeepSeek-V3 prefill: 4096 tokens per rank, receive slots bounded at 16384 (planned). */
static ncclxEpGroupPlan_t ht_group(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_HT;
    g.num_experts = 256;
    g.max_topk = 8;
    g.hidden = 7168;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    g.layouts = NCCLX_EP_LAYOUT_FLAT | NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    g.recipes = NCCLX_EP_RECIPE_NONE;
    g.max_dispatch_tokens_per_rank = 4096;
    g.max_recv_tokens_per_rank = 16384;
    g.expert_alignment = 128;
    g.num_handles = 2;
    return g;
}

static ncclxTeam_t team_of(uint32_t ranks, uint32_t nodes)
{
    ncclxTeam_t t = NCCLX_TEAM_INIT;
    t.num_ranks = ranks;
    t.num_nodes = nodes;
    t.lsa_size = ranks / nodes;
    return t;
}

static ncclxPlanSizes_t sizes_of(const ncclxEpGroupPlan_t *const *groups, uint32_t n, uint64_t m2n,
                                 const ncclxTeam_t *team)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    plan.num_ep_groups = n;
    plan.ep_groups = groups;
    plan.m2n_staging_bytes = m2n;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, team, &sizes));
    return sizes;
}

/* Sizes of a plan with planned features (HT groups, M2N staging): the public calls refuse it
 * with ncclxUnsupported, naming the field; the internal layout still sizes it. */
static ncclxPlanSizes_t planned_sizes_of(const ncclxEpGroupPlan_t *const *groups, uint32_t n,
                                         uint64_t m2n, const ncclxTeam_t *team,
                                         const char *refused_field)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
    ncclx_layout_t layout;
    assert_non_null(norm);
    assert_non_null(regions);
    plan.num_ep_groups = n;
    plan.ep_groups = groups;
    plan.m2n_staging_bytes = m2n;
    assert_ncclx_error(ncclxPlanComputeSizes(&plan, team, &sizes), ncclxUnsupported, refused_field);
    assert_ncclx_error(ncclxPlanValidate(&plan, team), ncclxUnsupported,
                       "is not implemented in this release");
    assert_int_equal(sizes.total[NCCLX_MEM_SYMMETRIC], 0); /* untouched */
    assert_ncclx_error(ncclx_plan_import(&plan, team, norm), ncclxUnsupported, refused_field);
    ncclx_layout_init_measure(&layout, NULL, NULL);
    assert_ncclx_ok(ncclx_plan_layout(&layout, norm, regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        sizes.total[c] = layout.arena[c].used;
        sizes.per_handle[c] = layout.per_handle[c];
    }
    sizes.num_regions = layout.num_regions;
    free(regions);
    free(norm);
    return sizes;
}

static size_t align64(size_t v)
{
    return (v + 63) & ~(size_t)63;
}

/* Host class: group struct, handle structs, pool bookkeeping and, for LL groups with a mask,
 * one byte per rank (ranks masked by update), each 64-byte aligned. */
static size_t host_bytes_of_group(uint32_t handles, uint32_t mask_ranks, size_t start)
{
    size_t off = align64(start) + sizeof(ncclx_ep_group_t);
    off = align64(off) + handles * sizeof(ncclx_ep_handle_t);
    off = align64(off) + handles * (sizeof(uint32_t) + 1);
    if (mask_ranks > 0) {
        off = align64(off) + mask_ranks;
    }
    return off;
}

static void test_ll_deepseek_8_ranks(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(8, 1);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);

    /* Payload P = max(NONE: 7168 * 2 = 14336, FP8: 7168 + 56 * 4 = 7392) = 14336.
     * Message M = 16 header + 8 * 8 top-k entries (64) + 14336 = 14416.
     * Dispatch receive = 2 buffers * 8 ranks * 128 tokens * 14416 = 29523968.
     * Combine receive = 2 * 128 tokens * 8 slots (expert-major: top-k) * 14336 = 29360128.
     * Signals = 2 * 8 * 16 = 256.  All offsets are 256-aligned already. */
    /* + the mask words: 8 ranks * (two clean slots of 8 bytes + an evicted word of 4). */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 29523968ull + 29360128ull + 256ull + 160ull);

    /* Device: peer table 8 * 8 = 64 at 0; context scratch 256 at 256; state 256 at 512;
     * arrival decisions 2 * 8 * 8 = 128 at 768; mask 8 * 4 = 32 at 1024;
     * handle = idx 128*8*4 = 4096 + route 4096 + counts 2 * 32 + recv_tok 8*128*4 = 4096
     *          + recv_pos (expert-major) 8*128*8*4 = 32768 = 45120 -> 256-aligned 45312;
     *          4 handles = 181248 at 1280. */
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 1280ull + 4 * 45312ull);
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 45312);

    /* Mapped host: context status 64 + group status 64. */
    assert_int_equal(s.total[NCCLX_MEM_MAPPED_HOST], 128);
    assert_int_equal(s.total[NCCLX_MEM_HOST], host_bytes_of_group(4, 8, 0));
    assert_int_equal(s.per_handle[NCCLX_MEM_HOST], sizeof(ncclx_ep_handle_t));
    /* peer table, scratch, status, 4 symmetric + state + decisions + mask + handles + status
     * + 4 host. */
    assert_int_equal(s.num_regions, 16);
}

static void test_ll_scales_with_ranks(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(64, 8);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    /* 64 ranks on 8 nodes of 8: dispatch = 2 * 64 * 128 * 14416 = 236191744; combine and
     * signals as before except signals = 2 * 64 * 16 = 2048. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC],
                     236191744ull + 29360128ull + 2048ull + 64ull * 20ull);
    /* Device: peer table 8 lsa peers * 8 = 64; scratch at 256; state at 512;
     * decisions 2 * 64 * 8 = 1024 at 768; mask 64 * 4 = 256 at 1792;
     * handle = 4096 + 4096 + 2 * 256 + recv_tok 64*128*4 = 32768
     *        + recv_pos 64*128*8*4 = 262144 = 303616 (256-aligned); handles at 2048. */
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 2048ull + 4 * 303616ull);
}

static void test_ht_deepseek_16_ranks_2_nodes(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(16, 2);
    ncclxPlanSizes_t s = planned_sizes_of(groups, 1, 0, &team, "plan.ep_groups[0]->algorithm");
    /* HT is single-buffered.  Dispatch = 16384 slots * 14416 = 236191744.
     * Combine = 4096 tokens * min(8, 16) rows * 14336 = 469762048.  Signals = 16 * 16 = 256. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 236191744ull + 469762048ull + 256ull);
    /* Device: peer table 8 * 8 at 0; scratch at 256; state at 512; no mask;
     * handle = route 4096*8*4 = 131072
     * + counts 2 * 64 + experts 16 * 4 = 64 + receive map 16384 * 4 = 65536 + offsets
     * 17 * 4 = 68 -> 80, map total 65616 -> 65616 (16-aligned) => 196880 -> 197120;
     * 2 handles at 768. */
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 768ull + 2 * 197120ull);
    assert_int_equal(s.total[NCCLX_MEM_HOST], host_bytes_of_group(2, 0, 0));
}

static void test_two_groups_and_m2n(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t ll = ll_group();
    ncclxEpGroupPlan_t ht = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&ll, &ht};
    ncclxTeam_t team = team_of(16, 2);
    ncclxPlanSizes_t both =
        planned_sizes_of(groups, 2, 1000, &team, "plan.ep_groups[1]->algorithm");
    ncclxPlanSizes_t only_ll = sizes_of(groups, 1, 0, &team);
    const ncclxEpGroupPlan_t *ht_only[] = {&ht};
    ncclxPlanSizes_t only_ht =
        planned_sizes_of(ht_only, 1, 0, &team, "plan.ep_groups[0]->algorithm");
    /* M2N staging (1000 -> 1024 with the next region's alignment) comes first; every region
     * size is a multiple of 256 except the staging and the LL group's mask words (16 ranks *
     * 20 = 320 bytes, padded to 512 before the HT group's regions), so the totals add up. */
    assert_int_equal(both.total[NCCLX_MEM_SYMMETRIC], 1024 + 192 +
                                                          only_ll.total[NCCLX_MEM_SYMMETRIC] +
                                                          only_ht.total[NCCLX_MEM_SYMMETRIC]);
    /* Device: the context's peer table and scratch (512 bytes) once. */
    assert_int_equal(both.total[NCCLX_MEM_DEVICE],
                     only_ll.total[NCCLX_MEM_DEVICE] + only_ht.total[NCCLX_MEM_DEVICE] - 512);
    assert_int_equal(both.total[NCCLX_MEM_MAPPED_HOST], 64 * 3);
    assert_int_equal(both.total[NCCLX_MEM_HOST],
                     host_bytes_of_group(2, 0, host_bytes_of_group(4, 16, 0)));
    assert_int_equal(both.per_handle[NCCLX_MEM_DEVICE], only_ht.per_handle[NCCLX_MEM_DEVICE]);
}

/* A nonzero M2N staging budget is refused (an LL-only plan otherwise valid), and sized by the
 * internal layout: 1000 bytes, first, then the LL group's regions at the next 256 bytes. */
static void test_m2n_staging_refused(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(8, 1);
    ncclxPlanSizes_t only_ll = sizes_of(groups, 1, 0, &team);
    ncclxPlanSizes_t with_m2n =
        planned_sizes_of(groups, 1, 1000, &team, "plan.m2n_staging_bytes=1000");
    assert_int_equal(with_m2n.total[NCCLX_MEM_SYMMETRIC],
                     1024 + only_ll.total[NCCLX_MEM_SYMMETRIC]);
    /* Refused even without any EP group; the message says what to do. */
    planned_sizes_of(groups, 0, 1, &team,
                     "M2N resharding is not implemented in this release; leave 0");
}

static void test_quant_fwd_and_fp32_widen_slots(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(2, 1);
    g.hidden = 1024;
    g.num_experts = 8;
    g.max_topk = 2;
    g.max_dispatch_tokens_per_rank = 4;
    g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD;
    g.max_token_bytes = 5008;
    g.max_scale_bytes = 33;
    /* P = max(NONE: 1024 * 4 = 4096, QUANT_FWD: 5008 + align16(33) = 5056) = 5056.
     * M = 16 + align16(2 * 8) + 5056 = 5088.  Dispatch = 2 * 2 * 4 * 5088 = 81408 (=318*256).
     * Rank-major combine: min(2, 2) = 2 rows per token of 1024 * 4 (FP32) = 4096:
     * 2 * 4 * 2 * 4096 = 65536.  Signals 2 * 2 * 16 = 64. */
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    /* + the mask words (2 ranks * 20 bytes) at the next 256-byte boundary. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 81408ull + 65536ull + 256ull + 40ull);
}

static void test_extreme_plan_sizes_or_fails_cleanly(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(NCCLX_MAX_RANKS, 1);
    ncclxPlanSizes_t s = NCCLX_PLAN_SIZES_INIT;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    g.num_experts = NCCLX_MAX_RANKS > NCCLX_EP_MAX_EXPERTS ? NCCLX_EP_MAX_EXPERTS : 4096;
    team = team_of(4096, 1);
    g.max_dispatch_tokens_per_rank = NCCLX_EP_MAX_HT_TOKENS_PER_RANK;
    g.max_recv_tokens_per_rank = 0; /* 4096 * 2^20 = 2^32 slots: refused, names the field */
    {
        /* Checked by the (internal) layout of the planned HT group. */
        ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
        ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
        ncclx_layout_t layout;
        assert_non_null(norm);
        assert_non_null(regions);
        assert_ncclx_error(ncclx_plan_import(&plan, &team, norm), ncclxUnsupported, "HT");
        ncclx_layout_init_measure(&layout, NULL, NULL);
        assert_ncclx_error(ncclx_plan_layout(&layout, norm, regions), ncclxInvalidArgument,
                           "max_recv_tokens_per_rank");
        free(regions);
        free(norm);
    }
    /* The public call refuses the HT group before sizing it. */
    assert_ncclx_error(ncclxPlanComputeSizes(&plan, &team, &s), ncclxUnsupported,
                       "plan.ep_groups[0]->algorithm=NCCLX_EP_ALGO_HT");
    g.max_recv_tokens_per_rank = UINT32_MAX;
    g.hidden = NCCLX_EP_MAX_HIDDEN;
    g.max_topk = NCCLX_EP_MAX_TOPK;
    /* 2^32 - 1 slots * (16 + 128 + 131072) bytes: large, but exact in 64 bits. */
    s = planned_sizes_of(groups, 1, 0, &team, "plan.ep_groups[0]->algorithm");
    assert_true(s.total[NCCLX_MEM_SYMMETRIC] > (uint64_t)UINT32_MAX * 131216ull);
}

static void test_plan_print_lists_regions(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(8, 1);
    char buf[8192] = {0};
    FILE *out = fmemopen(buf, sizeof(buf) - 1, "w");
    assert_non_null(out);
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    assert_ncclx_ok(ncclxPlanPrint(&plan, &team, out));
    fclose(out);
    assert_non_null(strstr(buf, "dispatch receive area"));
    assert_non_null(strstr(buf, "29523968"));
    assert_non_null(strstr(buf, "(4 x 45312)"));
    assert_non_null(strstr(buf, "symmetric"));
    assert_non_null(strstr(buf, "totals per rank"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_deepseek_8_ranks),
        cmocka_unit_test(test_ll_scales_with_ranks),
        cmocka_unit_test(test_ht_deepseek_16_ranks_2_nodes),
        cmocka_unit_test(test_two_groups_and_m2n),
        cmocka_unit_test(test_m2n_staging_refused),
        cmocka_unit_test(test_quant_fwd_and_fp32_widen_slots),
        cmocka_unit_test(test_extreme_plan_sizes_or_fails_cleanly),
        cmocka_unit_test(test_plan_print_lists_regions),
    };
    return cmocka_run_group_tests_name("plan_sizes", tests, NULL, NULL);
}
