/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the plan-sizing tests share: DeepSeek-V3 LL and HT groups, a team of N nodes, a plan's
 * sizes, and the 16- and 256-byte roundings of docs/plan-sizing.md.
 */
#ifndef NCCLX_TESTS_UNIT_PLAN_SIZES_FIXTURE_H_
#define NCCLX_TESTS_UNIT_PLAN_SIZES_FIXTURE_H_

#include "ncclx_test.h"

#include "plan_internal.h"

/* DeepSeek-V3 decode: 256 experts, hidden 7168, top-8, 128 tokens per rank, BF16 + FP8. */
static inline ncclxEpGroupPlan_t ll_group(void)
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

/* DeepSeek-V3 prefill: 4096 tokens per rank, the default receive budget S = ranks * 4096. */
static inline ncclxEpGroupPlan_t ht_group(void)
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
    g.expert_alignment = 128;
    g.num_handles = 2;
    return g;
}

static inline ncclxTeam_t team_of(uint32_t ranks, uint32_t nodes)
{
    ncclxTeam_t t = NCCLX_TEAM_INIT;
    t.num_ranks = ranks;
    t.num_nodes = nodes;
    t.lsa_size = ranks / nodes;
    return t;
}

static inline ncclxPlanSizes_t sizes_of(const ncclxEpGroupPlan_t *const *groups, uint32_t n,
                                        uint64_t m2n, const ncclxTeam_t *team)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    plan.num_ep_groups = n;
    plan.ep_groups = groups;
    plan.m2n_staging_bytes = m2n;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, team, &sizes));
    return sizes;
}

static inline uint64_t a16(uint64_t v)
{
    return (v + 15) / 16 * 16;
}

static inline uint64_t a256(uint64_t v)
{
    return (v + 255) / 256 * 256;
}

#endif
