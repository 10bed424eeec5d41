/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The comparison of normalized plans across ranks: equal plans hash equally (local memory
 * aside), a change of any one field changes the hash, and the first difference is named with
 * its group and field.  Pure host code.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "plan_internal.h"

static ncclxEpGroupPlan_t ll_group(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.num_experts = 32;
    g.max_topk = 4;
    g.hidden = 2048;
    g.max_dispatch_tokens_per_rank = 64;
    g.num_handles = 2;
    return g;
}

/* A second LL group, different from the first (HT groups and M2N staging
 * are refused by import until implemented; the tests change those fields after import). */
static ncclxEpGroupPlan_t other_group(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_LL;
    g.num_experts = 16;
    g.max_topk = 2;
    g.hidden = 1024;
    g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.max_dispatch_tokens_per_rank = 512;
    return g;
}

/* A two-group plan on 8 ranks, imported; *norm is heap memory (free() it). */
static ncclx_plan_norm_t *imported(void *host_block, size_t host_block_bytes)
{
    static ncclxEpGroupPlan_t g[2];
    const ncclxEpGroupPlan_t *groups[2] = {&g[0], &g[1]};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    assert_non_null(norm);
    g[0] = ll_group();
    g[1] = other_group();
    plan.num_ep_groups = 2;
    plan.ep_groups = groups;
    plan.host_block = host_block;
    plan.host_block_bytes = host_block_bytes;
    team.num_ranks = 8;
    team.lsa_size = 8;
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    return norm;
}

typedef struct {
    const char *name; /* as ncclx_plan_difference_name spells it for group 1 */
    size_t offset, size;
} field_t;

#define GROUP_FIELD(f)                                             \
    {                                                              \
        "plan.ep_groups[1]->" #f, offsetof(ncclxEpGroupPlan_t, f), \
            sizeof(((ncclxEpGroupPlan_t *)0)->f)                   \
    }

/* Listed here by hand, not taken from the library: a field the library forgot would pass
 * unnoticed otherwise. */
static const field_t group_fields[] = {
    GROUP_FIELD(algorithm),
    GROUP_FIELD(num_experts),
    GROUP_FIELD(max_topk),
    GROUP_FIELD(hidden),
    GROUP_FIELD(token_dtypes),
    GROUP_FIELD(layouts),
    GROUP_FIELD(recipes),
    GROUP_FIELD(max_dispatch_tokens_per_rank),
    GROUP_FIELD(max_recv_tokens_per_rank),
    GROUP_FIELD(max_token_bytes),
    GROUP_FIELD(max_scale_bytes),
    GROUP_FIELD(expert_alignment),
    GROUP_FIELD(enable_mask),
    GROUP_FIELD(num_handles),
    GROUP_FIELD(sm_budget),
    GROUP_FIELD(timeout_ns),
};

/* Adds delta to the field (4 or 8 bytes) at base + offset. */
static void bump(void *base, size_t offset, size_t size, uint64_t delta)
{
    char *p = (char *)base + offset;
    if (size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        v += (uint32_t)delta;
        memcpy(p, &v, sizeof(v));
    } else {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        v += delta;
        memcpy(p, &v, sizeof(v));
    }
}

static void assert_first_difference(const ncclx_plan_norm_t *a, const ncclx_plan_norm_t *b,
                                    const char *name)
{
    ncclx_plan_difference_t d;
    char got[96];
    assert_int_not_equal(ncclx_plan_hash(a), ncclx_plan_hash(b));
    assert_int_equal(ncclx_plan_diff(a, b, &d), 1);
    ncclx_plan_difference_name(&d, got, sizeof(got));
    if (strcmp(got, name) != 0) {
        fail_msg("first difference named '%s', expected '%s'", got, name);
    }
    assert_true(d.a != d.b);
}

/* Two imports of the same plan: equal hash, no difference, whatever local memory they name. */
static void test_equal_plans(void **state)
{
    _Alignas(64) static unsigned char block[4096];
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = imported(block, sizeof(block));
    ncclx_plan_difference_t d;
    (void)state;
    assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
    assert_int_equal(ncclx_plan_diff(a, b, &d), 0);
    assert_int_equal(ncclx_plan_diff(b, a, &d), 0);
    /* The hash is a function of the plan, not of the memory it sits in. */
    memcpy(b, a, sizeof(*a));
    assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
    free(a);
    free(b);
}

/* Every single field, changed by 1 or by a high bit: a new hash, and that field named. */
static void test_each_group_field(void **state)
{
    static const uint64_t deltas[] = {1, 1u << 31};
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    (void)state;
    assert_non_null(b);
    for (size_t i = 0; i < sizeof(group_fields) / sizeof(group_fields[0]); i++) {
        for (size_t k = 0; k < 2; k++) {
            memcpy(b, a, sizeof(*a));
            bump(&b->groups[1], group_fields[i].offset, group_fields[i].size, deltas[k]);
            assert_first_difference(a, b, group_fields[i].name);
        }
    }
    free(a);
    free(b);
}

static void test_team_and_plan_fields(void **state)
{
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    (void)state;
    assert_non_null(b);
    memcpy(b, a, sizeof(*a));
    b->team.num_ranks = 16;
    assert_first_difference(a, b, "team.num_ranks");
    memcpy(b, a, sizeof(*a));
    b->team.num_nodes = 2;
    assert_first_difference(a, b, "team.num_nodes");
    memcpy(b, a, sizeof(*a));
    b->team.lsa_size = 4;
    assert_first_difference(a, b, "team.lsa_size");
    memcpy(b, a, sizeof(*a));
    b->plan.m2n_staging_bytes++;
    assert_first_difference(a, b, "plan.m2n_staging_bytes");
    /* One group fewer: named as the group count, not as some field of a missing group. */
    memcpy(b, a, sizeof(*a));
    b->plan.num_ep_groups = b->num_groups = 1;
    assert_first_difference(a, b, "plan.num_ep_groups");
    assert_first_difference(b, a, "plan.num_ep_groups");
    /* Local memory is not compared. */
    memcpy(b, a, sizeof(*a));
    b->plan.host_block = b;
    b->plan.host_block_bytes = 12345;
    assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
    free(a);
    free(b);
}

/* Several differences: the team comes first, then the plan, then groups in order. */
static void test_first_difference_order(void **state)
{
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    ncclx_plan_difference_t d;
    char name[96];
    (void)state;
    assert_non_null(b);
    memcpy(b, a, sizeof(*a));
    b->groups[1].hidden = 4096;
    b->groups[0].num_handles = 7;
    assert_first_difference(a, b, "plan.ep_groups[0]->num_handles");
    b->groups[0].max_topk = 3;
    assert_first_difference(a, b, "plan.ep_groups[0]->max_topk");
    b->team.lsa_size = 2;
    assert_first_difference(a, b, "team.lsa_size");
    memcpy(b, a, sizeof(*a));
    b->groups[0].hidden = 4096;
    assert_int_equal(ncclx_plan_diff(a, b, &d), 1);
    ncclx_plan_difference_name(&d, name, sizeof(name));
    assert_string_equal(name, "plan.ep_groups[0]->hidden");
    assert_int_equal(d.a, 2048);
    assert_int_equal(d.b, 4096);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_plans),
        cmocka_unit_test(test_each_group_field),
        cmocka_unit_test(test_team_and_plan_fields),
        cmocka_unit_test(test_first_difference_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
