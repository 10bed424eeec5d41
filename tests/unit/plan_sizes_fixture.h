/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the plan-sizing tests share: DeepSeek-V3 LL and HT groups, a team of N nodes, a plan's
 * sizes, the 16- and 256-byte roundings of docs/plan-sizing.md, one region of a group as a
 * layout reports it, and an LL group of a given shape.
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

/* One region of a group as a layout reports it: its bytes and how often it was reserved. */
typedef struct {
    int group;
    const char *name;
    uint64_t bytes;
    uint32_t seen;
} named_region_t;

static inline void capture_named(const ncclx_region_t *r, void *ctx)
{
    named_region_t *c = ctx;
    if (r->group == c->group && strcmp(r->name, c->name) == 0) {
        assert_int_equal(r->mem_class, NCCLX_MEM_SYMMETRIC);
        c->bytes = r->bytes;
        c->seen++;
    }
}

/* Lays out groups on team; returns group gi's regions and fills *c for the region c->name. */
static inline ncclx_ep_group_regions_t layout_group(const ncclxEpGroupPlan_t *const *groups,
                                                    uint32_t n, const ncclxTeam_t *team,
                                                    uint32_t gi, named_region_t *c)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
    ncclx_layout_t layout;
    ncclx_ep_group_regions_t r;
    assert_non_null(norm);
    assert_non_null(regions);
    plan.num_ep_groups = n;
    plan.ep_groups = groups;
    c->group = (int)gi;
    c->bytes = 0;
    c->seen = 0;
    assert_ncclx_ok(ncclx_plan_import(&plan, team, norm));
    ncclx_layout_init_measure(&layout, capture_named, c);
    assert_ncclx_ok(ncclx_plan_layout(&layout, norm, regions));
    r = regions->groups[gi];
    free(norm);
    free(regions);
    return r;
}

/* An LL group of one plan (no M2N) by its shape; test_plan_sizes_ll.c gives what it costs by
 * the documented formulas. */
typedef struct {
    uint32_t R, T, K, H, E, N;
    int expert_major, rank_major, mask, fp32, none, fp8;
    uint32_t quant_token_bytes, quant_scale_bytes; /* QUANT_FWD when quant_token_bytes > 0 */
} ll_shape_t;

static inline ncclxEpGroupPlan_t ll_plan_of(const ll_shape_t *x)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_LL;
    g.num_experts = x->E;
    g.max_topk = x->K;
    g.hidden = x->H;
    g.token_dtypes =
        NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | (x->fp32 ? NCCLX_DTYPE_BIT(NCCLX_FLOAT32) : 0u);
    g.layouts = (x->expert_major ? NCCLX_EP_LAYOUT_EXPERT_MAJOR : 0u) |
                (x->rank_major ? NCCLX_EP_LAYOUT_RANK_MAJOR : 0u);
    g.recipes = (x->none ? NCCLX_EP_RECIPE_NONE : 0u) | (x->fp8 ? NCCLX_EP_RECIPE_FP8 : 0u) |
                (x->quant_token_bytes ? NCCLX_EP_RECIPE_QUANT_FWD : 0u);
    g.max_token_bytes = x->quant_token_bytes;
    g.max_scale_bytes = x->quant_scale_bytes;
    g.max_dispatch_tokens_per_rank = x->T;
    g.enable_mask = (uint32_t)x->mask;
    g.num_handles = x->N;
    return g;
}

/* ncclxPlanPrint of plan on team into buf (size bytes, cleared first, so always terminated). */
static inline void print_plan(const ncclxPlan_t *plan, const ncclxTeam_t *team, char *buf,
                              size_t size)
{
    memset(buf, 0, size);
    FILE *out = fmemopen(buf, size - 1, "w");
    assert_non_null(out);
    assert_ncclx_ok(ncclxPlanPrint(plan, team, out));
    fclose(out);
}

#endif
