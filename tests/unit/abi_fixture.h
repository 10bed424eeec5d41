/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A valid plan (two LL groups) and team shared by the ABI tests (test_abi, test_abi_walk).
 */
#ifndef NCCLX_TEST_UNIT_ABI_FIXTURE_H_
#define NCCLX_TEST_UNIT_ABI_FIXTURE_H_

#include <ncclx.h>

static inline void make_group(ncclxEpGroupPlan_t *g, ncclxEpAlgorithm_t algorithm)
{
    const ncclxEpGroupPlan_t init = NCCLX_EP_GROUP_PLAN_INIT;
    *g = init;
    g->algorithm = algorithm;
    g->num_experts = 256;
    g->max_topk = 8;
    g->hidden = 7168;
    g->max_dispatch_tokens_per_rank = algorithm == NCCLX_EP_ALGO_LL ? 128 : 4096;
    g->layouts = algorithm == NCCLX_EP_ALGO_LL
                     ? NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR
                     : NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_FLAT;
    g->enable_mask = algorithm == NCCLX_EP_ALGO_LL;
    g->num_handles = 4;
}

static inline void make_team(ncclxTeam_t *team)
{
    const ncclxTeam_t init = NCCLX_TEAM_INIT;
    *team = init;
    team->num_ranks = 8;
    team->lsa_size = 8;
}

/* Normal structs, everything as this library compiled it. */
typedef struct {
    ncclxEpGroupPlan_t groups[2];
    const ncclxEpGroupPlan_t *ptrs[2];
    ncclxPlan_t plan;
    ncclxTeam_t team;
} fixture_t;

static inline void make_fixture(fixture_t *f)
{
    const ncclxPlan_t init = NCCLX_PLAN_INIT;
    /* Two LL groups. */
    make_group(&f->groups[0], NCCLX_EP_ALGO_LL);
    make_group(&f->groups[1], NCCLX_EP_ALGO_LL);
    f->groups[1].max_dispatch_tokens_per_rank = 512;
    f->ptrs[0] = &f->groups[0];
    f->ptrs[1] = &f->groups[1];
    f->plan = init;
    f->plan.num_ep_groups = 2;
    f->plan.ep_groups = f->ptrs;
    make_team(&f->team);
}

#endif /* NCCLX_TEST_UNIT_ABI_FIXTURE_H_ */
