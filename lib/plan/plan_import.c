/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plan import and validation: every field is checked, and the error names the first bad one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "plan_internal.h"
#include "struct.h"

#define NCCLX_KNOWN_DTYPES ((1u << NCCLX_NUM_DATA_TYPES) - 1u)
#define NCCLX_TOKEN_DTYPES                                                 \
    (NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT16) |    \
     NCCLX_DTYPE_BIT(NCCLX_FLOAT32) | NCCLX_DTYPE_BIT(NCCLX_FP8_E4M3) |    \
     NCCLX_DTYPE_BIT(NCCLX_FP8_E5M2) | NCCLX_DTYPE_BIT(NCCLX_FP4X2_E2M1) | \
     NCCLX_DTYPE_BIT(NCCLX_UINT8))
#define NCCLX_LL_LAYOUTS (NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR)
#define NCCLX_HT_LAYOUTS (NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_FLAT)
#define NCCLX_LL_RECIPES (NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_FP8)
#define NCCLX_HT_RECIPES (NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_MXFP8)

uint32_t ncclx_dtype_bits(ncclxDataType_t dtype)
{
    switch (dtype) {
    case NCCLX_BFLOAT16:
    case NCCLX_FLOAT16:
        return 16;
    case NCCLX_FLOAT32:
    case NCCLX_INT32:
        return 32;
    case NCCLX_INT64:
        return 64;
    case NCCLX_FP4X2_E2M1:
        return 4; /* hidden counts FP4 values; two share a byte */
    case NCCLX_FP8_E4M3:
    case NCCLX_FP8_E5M2:
    case NCCLX_UINT8:
    default:
        return 8;
    }
}

#define GROUP_FIELD_ERROR(gi, field, fmt, ...) \
    NCCLX_ERROR(ncclxInvalidArgument, "plan.ep_groups[%u]->" field fmt, (gi), __VA_ARGS__)

static ncclxResult_t ncclx_check_team(const ncclxTeam_t *team)
{
    if (team->num_ranks < 1 || team->num_ranks > NCCLX_MAX_RANKS) {
        return NCCLX_ERROR(ncclxInvalidArgument, "team.num_ranks=%u is outside [1, %u]",
                           team->num_ranks, NCCLX_MAX_RANKS);
    }
    if (team->num_nodes < 1 || team->num_ranks % team->num_nodes != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "team.num_nodes=%u must be >= 1 and divide team.num_ranks=%u",
                           team->num_nodes, team->num_ranks);
    }
    if (team->lsa_size < 1 || team->num_ranks % team->lsa_size != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "team.lsa_size=%u must be >= 1 and divide team.num_ranks=%u",
                           team->lsa_size, team->num_ranks);
    }
    return ncclxSuccess;
}

/* Token rows must be whole 16-byte vectors in every enabled dtype. */
static ncclxResult_t ncclx_check_token_dtypes(const ncclxEpGroupPlan_t *g, uint32_t gi)
{
    if (g->token_dtypes == 0 || (g->token_dtypes & ~NCCLX_TOKEN_DTYPES) != 0) {
        return GROUP_FIELD_ERROR(gi, "token_dtypes",
                                 "=0x%x: must be a non-empty set of "
                                 "NCCLX_DTYPE_BIT() of token types (BF16, FP16, FP32, FP8, FP4x2, "
                                 "UINT8)",
                                 g->token_dtypes);
    }
    for (int t = 0; t < NCCLX_NUM_DATA_TYPES; t++) {
        uint64_t row_bits = (uint64_t)g->hidden * ncclx_dtype_bits((ncclxDataType_t)t);
        if ((g->token_dtypes & NCCLX_DTYPE_BIT(t)) && row_bits % 128 != 0) {
            return GROUP_FIELD_ERROR(gi, "hidden",
                                     "=%u: a row of dtype %d is %" PRIu64
                                     " bits, not a multiple of 16 bytes",
                                     g->hidden, t, row_bits);
        }
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_check_recipes(const ncclxEpGroupPlan_t *g, uint32_t gi, int ll)
{
    uint32_t allowed = ll ? NCCLX_LL_RECIPES : NCCLX_HT_RECIPES;
    if (g->recipes == 0 || (g->recipes & ~allowed) != 0) {
        return GROUP_FIELD_ERROR(gi, "recipes",
                                 "=0x%x: must be a non-empty subset of 0x%x for "
                                 "%s groups",
                                 g->recipes, allowed, ll ? "LL" : "HT");
    }
    if ((g->recipes & NCCLX_EP_RECIPE_FP8) && g->hidden % 128 != 0) {
        return GROUP_FIELD_ERROR(gi, "hidden",
                                 "=%u: the FP8 recipe needs a multiple of 128 "
                                 "(one scale per 128 elements)",
                                 g->hidden);
    }
    if ((g->recipes & NCCLX_EP_RECIPE_FP8) &&
        !(g->token_dtypes & NCCLX_DTYPE_BIT(NCCLX_BFLOAT16))) {
        return GROUP_FIELD_ERROR(gi, "token_dtypes",
                                 "=0x%x: the FP8 recipe takes BF16 tokens; "
                                 "add NCCLX_DTYPE_BIT(NCCLX_BFLOAT16)",
                                 g->token_dtypes);
    }
    if ((g->recipes & NCCLX_EP_RECIPE_MXFP8) && g->hidden % 32 != 0) {
        return GROUP_FIELD_ERROR(gi, "hidden",
                                 "=%u: the MXFP8 recipe needs a multiple of 32 "
                                 "(one scale per 32 elements)",
                                 g->hidden);
    }
    /* MXFP8 is a combine recipe of expert-major BF16 rows; the dispatch needs its own. */
    if ((g->recipes & NCCLX_EP_RECIPE_MXFP8) &&
        !(g->recipes & (NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD))) {
        return GROUP_FIELD_ERROR(gi, "recipes",
                                 "=0x%x: MXFP8 is a combine recipe; add a dispatch recipe "
                                 "(NCCLX_EP_RECIPE_NONE or _QUANT_FWD)",
                                 g->recipes);
    }
    if ((g->recipes & NCCLX_EP_RECIPE_MXFP8) && !(g->layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR)) {
        return GROUP_FIELD_ERROR(gi, "layouts",
                                 "=0x%x: the MXFP8 combine works on expert-major rows; add "
                                 "NCCLX_EP_LAYOUT_EXPERT_MAJOR",
                                 g->layouts);
    }
    if ((g->recipes & NCCLX_EP_RECIPE_MXFP8) &&
        !(g->token_dtypes & NCCLX_DTYPE_BIT(NCCLX_BFLOAT16))) {
        return GROUP_FIELD_ERROR(gi, "token_dtypes",
                                 "=0x%x: the MXFP8 combine takes BF16 expert outputs; add "
                                 "NCCLX_DTYPE_BIT(NCCLX_BFLOAT16)",
                                 g->token_dtypes);
    }
    if (g->recipes & NCCLX_EP_RECIPE_QUANT_FWD) {
        /* The bounds come first, so that a value past them is named as such whatever its
         * other faults; they keep every product of the sizing far inside 64 bits. */
        if (g->max_token_bytes > NCCLX_EP_MAX_TOKEN_BYTES) {
            return GROUP_FIELD_ERROR(gi, "max_token_bytes",
                                     "=%u exceeds %u (NCCLX_EP_MAX_TOKEN_BYTES: an FP32 row of "
                                     "the largest hidden size)",
                                     g->max_token_bytes, NCCLX_EP_MAX_TOKEN_BYTES);
        }
        if (g->max_scale_bytes > NCCLX_EP_MAX_SCALE_BYTES) {
            return GROUP_FIELD_ERROR(gi, "max_scale_bytes",
                                     "=%u exceeds %u (NCCLX_EP_MAX_SCALE_BYTES)",
                                     g->max_scale_bytes, NCCLX_EP_MAX_SCALE_BYTES);
        }
        if (g->max_token_bytes == 0 || g->max_token_bytes % 16 != 0) {
            return GROUP_FIELD_ERROR(gi, "max_token_bytes",
                                     "=%u: QUANT_FWD needs the row size in "
                                     "bytes, a non-zero multiple of 16",
                                     g->max_token_bytes);
        }
    } else if (g->max_token_bytes != 0) {
        return GROUP_FIELD_ERROR(gi, "max_token_bytes",
                                 "=%u: only meaningful with "
                                 "NCCLX_EP_RECIPE_QUANT_FWD; leave 0",
                                 g->max_token_bytes);
    } else if (g->max_scale_bytes != 0) {
        return GROUP_FIELD_ERROR(gi, "max_scale_bytes",
                                 "=%u: only meaningful with "
                                 "NCCLX_EP_RECIPE_QUANT_FWD; leave 0",
                                 g->max_scale_bytes);
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_check_algorithm_bounds(const ncclxEpGroupPlan_t *g, uint32_t gi, int ll)
{
    uint32_t layouts = ll ? NCCLX_LL_LAYOUTS : NCCLX_HT_LAYOUTS;
    uint32_t max_tokens = ll ? NCCLX_EP_MAX_LL_TOKENS_PER_RANK : NCCLX_EP_MAX_HT_TOKENS_PER_RANK;
    if (g->layouts == 0 || (g->layouts & ~layouts) != 0) {
        return GROUP_FIELD_ERROR(gi, "layouts",
                                 "=0x%x: must be a non-empty subset of 0x%x for "
                                 "%s groups",
                                 g->layouts, layouts, ll ? "LL" : "HT");
    }
    if (g->max_dispatch_tokens_per_rank < 1 || g->max_dispatch_tokens_per_rank > max_tokens) {
        return GROUP_FIELD_ERROR(gi, "max_dispatch_tokens_per_rank",
                                 "=%u is outside [1, %u] "
                                 "for %s groups",
                                 g->max_dispatch_tokens_per_rank, max_tokens, ll ? "LL" : "HT");
    }
    if (ll && g->max_recv_tokens_per_rank != 0) {
        return GROUP_FIELD_ERROR(gi, "max_recv_tokens_per_rank",
                                 "=%u: LL groups receive at "
                                 "most ranks * max_dispatch_tokens_per_rank; leave 0",
                                 g->max_recv_tokens_per_rank);
    }
    if (!ll && g->enable_mask) {
        return GROUP_FIELD_ERROR(gi, "enable_mask", "=%u: active masks are an LL feature",
                                 g->enable_mask);
    }
    if (g->overflow_policy != NCCLX_EP_OVERFLOW_TRAP &&
        (ll || g->overflow_policy != NCCLX_EP_OVERFLOW_DROP)) {
        return GROUP_FIELD_ERROR(gi, "overflow_policy", "=%u: %s", g->overflow_policy,
                                 ll ? "an HT feature (LL receives at most ranks * "
                                      "max_dispatch_tokens_per_rank); leave 0"
                                    : "NCCLX_EP_OVERFLOW_TRAP (0) or NCCLX_EP_OVERFLOW_DROP (1)");
    }
    if (ll && g->expert_alignment > 1) {
        return GROUP_FIELD_ERROR(gi, "expert_alignment",
                                 "=%u: expert padding is an HT "
                                 "expert-major feature; leave 0",
                                 g->expert_alignment);
    }
    return ncclxSuccess;
}

/* LL zero copy (peers write each dispatch row at its final place in the receiver's symmetric
 * rows, of either layout): a rank of another load/store domain cannot store there, and a masked
 * (evicted) rank's late stores could land in rows the receiver already handed out. */
static ncclxResult_t ncclx_check_zero_copy(const ncclxEpGroupPlan_t *g, uint32_t gi,
                                           const ncclxTeam_t *team)
{
    if (g->zero_copy == 0) {
        return ncclxSuccess;
    }
    if (g->zero_copy > 1) {
        return GROUP_FIELD_ERROR(gi, "zero_copy", "=%u: must be 0 or 1", g->zero_copy);
    }
    if (g->algorithm != NCCLX_EP_ALGO_LL) {
        return GROUP_FIELD_ERROR(gi, "zero_copy",
                                 "=%u: an LL field (HT's zero-copy buffers need no plan: "
                                 "ncclxEpGroupGetHtBuffers); leave 0",
                                 g->zero_copy);
    }
    if (g->enable_mask) {
        return GROUP_FIELD_ERROR(gi, "zero_copy",
                                 "=%u: not with enable_mask (a rank evicted after a timeout "
                                 "could still store rows into the receivers' zero-copy rows)",
                                 g->zero_copy);
    }
    if (NCCLX_TEAM_MULTI_DOMAIN(team)) {
        return GROUP_FIELD_ERROR(gi, "zero_copy",
                                 "=%u: peers store into the zero-copy rows, so the team must be "
                                 "one load/store domain (team.lsa_size=%u, num_ranks=%u)",
                                 g->zero_copy, team->lsa_size, team->num_ranks);
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_check_group(const ncclxEpGroupPlan_t *g, uint32_t gi,
                                       const ncclxTeam_t *team)
{
    int ll = g->algorithm == NCCLX_EP_ALGO_LL;
    if (g->algorithm != NCCLX_EP_ALGO_LL && g->algorithm != NCCLX_EP_ALGO_HT) {
        return GROUP_FIELD_ERROR(gi, "algorithm",
                                 "=%d: must be NCCLX_EP_ALGO_LL or "
                                 "NCCLX_EP_ALGO_HT",
                                 (int)g->algorithm);
    }
    if (g->num_experts < 1 || g->num_experts > NCCLX_EP_MAX_EXPERTS) {
        return GROUP_FIELD_ERROR(gi, "num_experts", "=%u is outside [1, %u]", g->num_experts,
                                 NCCLX_EP_MAX_EXPERTS);
    }
    if (g->num_experts % team->num_ranks != 0) {
        return GROUP_FIELD_ERROR(gi, "num_experts", "=%u is not divisible by team.num_ranks=%u",
                                 g->num_experts, team->num_ranks);
    }
    const uint32_t max_topk = ll ? NCCLX_EP_MAX_TOPK : NCCLX_EP_MAX_HT_TOPK;
    if (g->max_topk < 1 || g->max_topk > max_topk || g->max_topk > g->num_experts) {
        return GROUP_FIELD_ERROR(gi, "max_topk",
                                 "=%u is outside [1, min(%u, num_experts=%u)] for %s groups",
                                 g->max_topk, max_topk, g->num_experts, ll ? "LL" : "HT");
    }
    if (g->hidden < 1 || g->hidden > NCCLX_EP_MAX_HIDDEN) {
        return GROUP_FIELD_ERROR(gi, "hidden", "=%u is outside [1, %u]", g->hidden,
                                 NCCLX_EP_MAX_HIDDEN);
    }
    NCCLX_CHECK(ncclx_check_token_dtypes(g, gi));
    NCCLX_CHECK(ncclx_check_algorithm_bounds(g, gi, ll));
    NCCLX_CHECK(ncclx_check_recipes(g, gi, ll));
    if (g->num_handles < 1 || g->num_handles > NCCLX_EP_MAX_HANDLES) {
        return GROUP_FIELD_ERROR(gi, "num_handles", "=%u is outside [1, %u]", g->num_handles,
                                 NCCLX_EP_MAX_HANDLES);
    }
    if (g->expert_alignment > NCCLX_EP_MAX_EXPERT_ALIGNMENT) {
        return GROUP_FIELD_ERROR(gi, "expert_alignment", "=%u is outside [0, %u]",
                                 g->expert_alignment, NCCLX_EP_MAX_EXPERT_ALIGNMENT);
    }
    if (g->sm_budget > NCCLX_EP_MAX_SM_BUDGET) {
        return GROUP_FIELD_ERROR(gi, "sm_budget", "=%u is outside [0, %u] (0: automatic)",
                                 g->sm_budget, NCCLX_EP_MAX_SM_BUDGET);
    }
    if (g->enable_mask > 1) {
        return GROUP_FIELD_ERROR(gi, "enable_mask", "=%u: must be 0 or 1", g->enable_mask);
    }
    return ncclx_check_zero_copy(g, gi, team);
}

/* Features whose fields are defined (and checked above, so that the rules hold when they land)
 * but that this release does not implement.  They are refused here, once a plan is otherwise
 * valid, rather than sized, allocated and refused at first use.  HT across load/store domains
 * (docs/ep-ht.md) sums each node's rows on a relay as one subtree of a binary tree over ranks,
 * so the domains must be aligned power-of-two blocks; and the MXFP8 combine stays inside one. */
static ncclxResult_t ncclx_check_supported(const ncclx_plan_norm_t *norm)
{
    const ncclxTeam_t *team = &norm->team;
    if (!NCCLX_TEAM_MULTI_DOMAIN(team)) {
        return ncclxSuccess;
    }
    for (uint32_t gi = 0; gi < norm->num_groups; gi++) {
        const ncclxEpGroupPlan_t *g = &norm->groups[gi];
        if (g->algorithm != NCCLX_EP_ALGO_HT) {
            continue;
        }
        if ((team->lsa_size & (team->lsa_size - 1)) != 0) {
            return NCCLX_ERROR(ncclxUnsupported,
                               "team.lsa_size=%u is not a power of two: HT across load/store "
                               "domains (plan.ep_groups[%u], %u ranks) sums each node's rows as "
                               "one subtree of a binary tree over ranks, so nodes must be "
                               "aligned power-of-two blocks of ranks in this release",
                               team->lsa_size, gi, team->num_ranks);
        }
        if (g->recipes & NCCLX_EP_RECIPE_MXFP8) {
            return NCCLX_ERROR(ncclxUnsupported,
                               "plan.ep_groups[%u]->recipes=0x%x: the MXFP8 combine "
                               "(NCCLX_EP_RECIPE_MXFP8) runs inside one load/store domain only "
                               "in this release (its packed partials are per rank, while the "
                               "network hop carries one FP32 partial per node); the team has %u "
                               "ranks of which %u reach each other by load/store",
                               gi, g->recipes, team->num_ranks, team->lsa_size);
        }
    }
    return ncclxSuccess;
}

/* The M2N budget: a ring of NCCLX_M2N_MIN_STAGING_PER_RANK bytes at least per source rank,
 * and group entries only with staging. */
static ncclxResult_t ncclx_check_m2n(const ncclxPlan_t *plan, const ncclxTeam_t *team)
{
    const uint64_t least = (uint64_t)team->num_ranks * NCCLX_M2N_MIN_STAGING_PER_RANK;
    if (plan->m2n_staging_bytes == 0) {
        if (plan->m2n_max_group_entries != 0) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "plan.m2n_max_group_entries=%u but plan.m2n_staging_bytes is 0 "
                               "(no M2N)",
                               plan->m2n_max_group_entries);
        }
        return ncclxSuccess;
    }
    if (plan->m2n_staging_bytes < least) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "plan.m2n_staging_bytes=%" PRIu64 ": a team of %u ranks needs at least "
                           "%" PRIu64 " (%u bytes per rank: a ring of 4 slices of 4 KiB from "
                           "each source)",
                           (uint64_t)plan->m2n_staging_bytes, team->num_ranks, least,
                           NCCLX_M2N_MIN_STAGING_PER_RANK);
    }
    if (plan->m2n_max_group_entries > NCCLX_M2N_MAX_GROUP_ENTRIES) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan.m2n_max_group_entries=%u exceeds %u",
                           plan->m2n_max_group_entries, NCCLX_M2N_MAX_GROUP_ENTRIES);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_plan_check(const ncclx_plan_norm_t *norm)
{
    NCCLX_CHECK(ncclx_check_team(&norm->team));
    NCCLX_CHECK(ncclx_check_m2n(&norm->plan, &norm->team));
    if (norm->plan.host_block != NULL && ((uintptr_t)norm->plan.host_block % NCCLX_HOST_ALIGN)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan.host_block=%p is not aligned to %u bytes",
                           norm->plan.host_block, NCCLX_HOST_ALIGN);
    }
    if (norm->plan.host_block == NULL && norm->plan.host_block_bytes != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "plan.host_block_bytes=%zu but plan.host_block "
                           "is NULL",
                           norm->plan.host_block_bytes);
    }
    for (uint32_t gi = 0; gi < norm->num_groups; gi++) {
        NCCLX_CHECK(ncclx_check_group(&norm->groups[gi], gi, &norm->team));
    }
    return ncclx_check_supported(norm);
}

static void ncclx_group_defaults(ncclxEpGroupPlan_t *group)
{
    const ncclxEpGroupPlan_t defaults = NCCLX_EP_GROUP_PLAN_INIT;
    *group = defaults;
}

ncclxResult_t ncclx_plan_import(const ncclxPlan_t *plan, const ncclxTeam_t *team,
                                ncclx_plan_norm_t *norm)
{
    const ncclxPlan_t plan_defaults = NCCLX_PLAN_INIT;
    const ncclxTeam_t team_defaults = NCCLX_TEAM_INIT;
    norm->plan = plan_defaults;
    norm->team = team_defaults;
    NCCLX_CHECK(ncclx_struct_import(&norm->plan, sizeof(norm->plan), plan, NCCLX_MAGIC_PLAN,
                                    NCCLX_PLAN_SIZE_V1, "plan"));
    if (team != NULL) {
        NCCLX_CHECK(ncclx_struct_import(&norm->team, sizeof(norm->team), team, NCCLX_MAGIC_TEAM,
                                        NCCLX_TEAM_SIZE_V1, "team"));
    }
    if (norm->plan.num_ep_groups > NCCLX_MAX_EP_GROUPS) {
        return NCCLX_ERROR(ncclxInvalidArgument, "plan.num_ep_groups=%u exceeds %u",
                           norm->plan.num_ep_groups, NCCLX_MAX_EP_GROUPS);
    }
    if (norm->plan.num_ep_groups > 0 && norm->plan.ep_groups == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "plan.num_ep_groups=%u but plan.ep_groups is "
                           "NULL",
                           norm->plan.num_ep_groups);
    }
    if (norm->plan.m2n_staging_bytes != 0 && norm->plan.m2n_max_group_entries == 0) {
        norm->plan.m2n_max_group_entries = NCCLX_M2N_DEFAULT_GROUP_ENTRIES;
    }
    norm->num_groups = norm->plan.num_ep_groups;
    for (uint32_t gi = 0; gi < norm->num_groups; gi++) {
        char what[48];
        snprintf(what, sizeof(what), "plan.ep_groups[%u]", gi);
        ncclx_group_defaults(&norm->groups[gi]);
        NCCLX_CHECK(ncclx_struct_import(&norm->groups[gi], sizeof(norm->groups[gi]),
                                        norm->plan.ep_groups[gi], NCCLX_MAGIC_EP_GROUP_PLAN,
                                        NCCLX_EP_GROUP_PLAN_SIZE_V1, what));
        if (norm->groups[gi].timeout_ns == 0) {
            norm->groups[gi].timeout_ns = NCCLX_DEFAULT_TIMEOUT_NS;
        }
    }
    return ncclx_plan_check(norm);
}
