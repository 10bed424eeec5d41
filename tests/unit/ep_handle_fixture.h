/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A group and its handle pool built from a plan as context setup builds them, without a GPU, for
 * the CPU tests of the handle lifecycle (test_ep_handle_mem, test_ep_handle_import).  Header
 * only: each test program includes it once.
 */
#ifndef NCCLX_TEST_EP_HANDLE_FIXTURE_H_
#define NCCLX_TEST_EP_HANDLE_FIXTURE_H_

#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "ep_group.h"
#include "plan_internal.h"
#include "pool.h"

/* R ranks, E experts (L = E / R local experts), top-K, hidden H, T tokens per rank. */
enum { R = 4, E = 16, L = E / R, K = 4, H = 256, T = 64, NUM_HANDLES = 3 };

#define LL   NCCLX_EP_ALGO_LL
#define HT   NCCLX_EP_ALGO_HT
#define EM   NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define RM   NCCLX_EP_LAYOUT_RANK_MAJOR
#define FLAT NCCLX_EP_LAYOUT_FLAT

/* A fake device pointer on cudaMalloc's 256-byte alignment: nothing here dereferences it. */
#define MEM ((char *)(uintptr_t)0x10000000u)

/* What a failed call must leave alone. */
#define SENTINEL_HANDLE ((ncclxEpHandle_t)(uintptr_t)0x5a5a5a5au)
#define SENTINEL_BYTES  ((size_t)0xa5a5a5a5u)

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handles[NUM_HANDLES]; /* the pool's objects (host arena) */
    uint32_t bookkeeping[2 * NUM_HANDLES];  /* >= ncclx_pool_bookkeeping_bytes */
    uint32_t status;                        /* the mapped status word: no error */
    size_t plan_per_handle;                 /* ncclxPlanComputeSizes, device */
} fixture_t;

/* A group as context setup builds it from a validated plan (EP's room, lib/ep/ep_groups.c,
 * and ncclx_ep_group_bind), minus everything that needs a GPU: no arenas, no event. */
static inline void make_fixture(fixture_t *f, ncclxEpAlgorithm_t algorithm, uint32_t layouts)
{
    ncclxEpGroupPlan_t gp = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[1] = {&gp};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_ep_group_t *g = &f->group;
    assert_non_null(norm);
    memset(f, 0, sizeof(*f));
    gp.algorithm = algorithm;
    gp.num_experts = E;
    gp.max_topk = K;
    gp.hidden = H;
    gp.layouts = layouts;
    gp.max_dispatch_tokens_per_rank = T;
    gp.num_handles = NUM_HANDLES;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    team.num_ranks = team.lsa_size = R;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, &team, &sizes));
    f->plan_per_handle = sizes.per_handle[NCCLX_MEM_DEVICE];
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    g->plan = norm->groups[0];
    assert_ncclx_ok(ncclx_ep_dims_compute(&g->plan, &norm->team, 0, &g->dims));
    free(norm);
    ncclx_ep_ll_handle_layout(&g->dims, (layouts & EM) != 0, &g->handle_layout);
    ncclx_ep_ht_handle_layout(&g->dims, &g->ht_handle_layout);
    g->status = &f->status;
    assert_true(sizeof(f->bookkeeping) >= ncclx_pool_bookkeeping_bytes(NUM_HANDLES));
    ncclx_pool_init(&g->handles, "EP group 0 handles", "raise num_handles in the group's plan",
                    f->handles, sizeof(ncclx_ep_handle_t), NUM_HANDLES, f->bookkeeping);
}

static inline size_t mem_size(fixture_t *f, uint32_t layout, uint32_t topk)
{
    size_t bytes = SENTINEL_BYTES;
    assert_ncclx_ok(ncclxEpHandleMemSize(&f->group, layout, topk, &bytes));
    assert_true(bytes != SENTINEL_BYTES);
    assert_int_equal(bytes % NCCLX_DEVICE_ALIGN, 0);
    return bytes;
}

static inline ncclxTensor_t handle_mem(void *data, int64_t bytes)
{
    ncclxTensor_t t = {data, NCCLX_UINT8, 1, {bytes, 0, 0, 0}};
    return t;
}

static inline ncclxEpHandleConfig_t config_of(uint32_t layout, uint32_t topk)
{
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    c.layout = layout;
    c.topk = topk;
    return c;
}

/* Init on MEM with exactly ncclxEpHandleMemSize bytes. */
static inline ncclxEpHandle_t init_handle(fixture_t *f, uint32_t layout, uint32_t topk)
{
    const ncclxEpHandleConfig_t c = config_of(layout, topk);
    const ncclxTensor_t mem = handle_mem(MEM, (int64_t)mem_size(f, layout, topk));
    ncclxEpHandle_t h = NULL;
    assert_ncclx_ok(ncclxEpHandleInit(&f->group, &c, &mem, NULL, &h));
    assert_non_null(h);
    return h;
}

#endif /* NCCLX_TEST_EP_HANDLE_FIXTURE_H_ */
