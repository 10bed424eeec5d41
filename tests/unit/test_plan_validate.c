/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plan validation: starting from a valid LL and a valid HT plan, each row of the table changes
 * one field to a bad value and checks that ncclxPlanValidate() rejects it with
 * ncclxInvalidArgument and a message naming that field and quoting the value written.  Boundary
 * rows check that the last good value is still accepted, so that an over-strict check fails as
 * well.
 *
 * What this release does not implement (on a team spanning several load/store domains: the
 * MXFP8 combine, or HT on domains whose size is not a power of two) is checked all the same, and
 * a plan whose fields are all valid but that asks for it is refused with ncclxUnsupported (after
 * every field check, so a bad field is still named first; test_ht_across_domains_rules).  An HT
 * group validates like an LL group on one load/store team or several, and M2N staging has its
 * own rules (test_m2n_plan_rules).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

typedef enum { BASE_LL, BASE_HT } base_t;
typedef enum { IN_GROUP, IN_TEAM, IN_PLAN } target_t;

typedef struct {
    const char *label;
    base_t base;
    target_t target;
    const char *field; /* member name, as the message must spell it */
    size_t offset;
    size_t width;
    uint64_t value;
    const char *reason; /* second substring of the message; "" = every field is valid (see
                           assert_plan_valid) */
} field_case_t;

#define MEMBER_SIZE(type, member) sizeof(((type *)0)->member)
#define FIELD(target, type, member) \
    target, #member, offsetof(type, member), MEMBER_SIZE(type, member)
#define GROUP(member) FIELD(IN_GROUP, ncclxEpGroupPlan_t, member)
#define TEAM(member)  FIELD(IN_TEAM, ncclxTeam_t, member)
#define PLAN(member)  FIELD(IN_PLAN, ncclxPlan_t, member)
#define VALID         "" /* reason of a boundary row: the plan must still pass */

#define BF16   NCCLX_DTYPE_BIT(NCCLX_BFLOAT16)
#define FP8    NCCLX_DTYPE_BIT(NCCLX_FP8_E4M3)
#define FP4    NCCLX_DTYPE_BIT(NCCLX_FP4X2_E2M1)
#define EXPERT NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define RANK   NCCLX_EP_LAYOUT_RANK_MAJOR
#define FLAT   NCCLX_EP_LAYOUT_FLAT

/* The bases (see make_ll/make_ht): 256 experts on 8 ranks (one load/store team), hidden 7168,
 * top-8.  LL carries BF16 + FP4x2 tokens and the FP8 recipe; HT carries BF16 + FP8 tokens and
 * QUANT_FWD (the MXFP8 combine's own rules: test_mxfp8_plan_rules).  Hidden
 * values are picked so exactly one rule breaks: 7169 (BF16 row not 16 bytes), 7184 (FP4 row
 * of 3592 bytes: not 16-byte; fine for BF16/FP8), 7200 and 7232 (multiples of 32 and 64, not
 * of 128), 7176 (FP8 row of 7176 bytes).  max_topk is bounded by 16 for LL, 32 for HT. */
static const field_case_t cases[] = {
    {"LL algorithm=0", BASE_LL, GROUP(algorithm), 0, "NCCLX_EP_ALGO_LL or"},
    {"HT algorithm=3", BASE_HT, GROUP(algorithm), 3, "NCCLX_EP_ALGO_LL or"},
    {"LL num_experts=0", BASE_LL, GROUP(num_experts), 0, "outside [1, 4096]"},
    {"LL num_experts=4104", BASE_LL, GROUP(num_experts), 4104, "outside [1, 4096]"},
    /* One past the bound: named as out of range, not as indivisible by the 8 ranks. */
    {"LL num_experts=4097", BASE_LL, GROUP(num_experts), 4097, "outside [1, 4096]"},
    {"HT num_experts=4096 ok", BASE_HT, GROUP(num_experts), 4096, VALID},
    {"LL num_experts=252 not /8", BASE_LL, GROUP(num_experts), 252, "divisible by team.num_ranks"},
    {"HT num_experts=260 not /8", BASE_HT, GROUP(num_experts), 260, "divisible by team.num_ranks"},
    {"LL max_topk=0", BASE_LL, GROUP(max_topk), 0, "outside"},
    {"LL max_topk=16 ok", BASE_LL, GROUP(max_topk), 16, VALID},
    {"LL max_topk=17", BASE_LL, GROUP(max_topk), 17,
     "outside [1, min(16, num_experts=256)] for LL"},
    {"LL max_topk=32", BASE_LL, GROUP(max_topk), 32,
     "outside [1, min(16, num_experts=256)] for LL"},
    {"HT max_topk=0", BASE_HT, GROUP(max_topk), 0, "outside [1, min(32, num_experts=256)] for HT"},
    {"HT max_topk=17 ok", BASE_HT, GROUP(max_topk), 17, VALID},
    {"HT max_topk=32 ok", BASE_HT, GROUP(max_topk), 32, VALID},
    {"HT max_topk=33", BASE_HT, GROUP(max_topk), 33,
     "outside [1, min(32, num_experts=256)] for HT"},
    {"LL hidden=0", BASE_LL, GROUP(hidden), 0, "outside [1, 65536]"},
    {"HT hidden=65664", BASE_HT, GROUP(hidden), 65664, "outside [1, 65536]"},
    {"HT hidden=65536 ok", BASE_HT, GROUP(hidden), 65536, VALID},
    /* One past the bound: named as out of range, not by the row rule it breaks as well. */
    {"HT hidden=65537", BASE_HT, GROUP(hidden), 65537, "outside [1, 65536]"},
    /* 1 is in range: refused by the row rule (a BF16 row of 2 bytes), not by the bound. */
    {"LL hidden=1 BF16 row", BASE_LL, GROUP(hidden), 1, "dtype 0"},
    {"LL hidden=7169 BF16 row", BASE_LL, GROUP(hidden), 7169, "dtype 0"},
    {"HT hidden=7169 BF16 row", BASE_HT, GROUP(hidden), 7169, "dtype 0"},
    {"LL hidden=7184 FP4x2 row", BASE_LL, GROUP(hidden), 7184, "dtype 5"},
    {"HT hidden=7176 FP8 row", BASE_HT, GROUP(hidden), 7176, "dtype 3"},
    {"LL hidden=7200 FP8 recipe /128", BASE_LL, GROUP(hidden), 7200, "FP8 recipe"},
    {"LL hidden=7232 FP8 recipe /128", BASE_LL, GROUP(hidden), 7232, "FP8 recipe"},
    {"LL hidden=7296 ok", BASE_LL, GROUP(hidden), 7296, VALID},
    {"HT hidden=7184 ok", BASE_HT, GROUP(hidden), 7184, VALID},
    {"HT hidden=7200 ok", BASE_HT, GROUP(hidden), 7200, VALID},
    {"LL token_dtypes=0", BASE_LL, GROUP(token_dtypes), 0, "non-empty"},
    {"HT token_dtypes+INT32", BASE_HT, GROUP(token_dtypes), BF16 | NCCLX_DTYPE_BIT(NCCLX_INT32),
     "non-empty"},
    {"LL token_dtypes unknown bit", BASE_LL, GROUP(token_dtypes), BF16 | (1u << 20), "non-empty"},
    {"LL token_dtypes FP4 only, FP8 recipe", BASE_LL, GROUP(token_dtypes), FP4, "takes BF16"},
    {"LL layouts=0", BASE_LL, GROUP(layouts), 0, "for LL groups"},
    {"LL layouts=FLAT", BASE_LL, GROUP(layouts), FLAT, "for LL groups"},
    {"LL layouts unknown bit", BASE_LL, GROUP(layouts), EXPERT | 0x10u, "for LL groups"},
    {"HT layouts=RANK_MAJOR", BASE_HT, GROUP(layouts), RANK, "for HT groups"},
    {"HT layouts=0", BASE_HT, GROUP(layouts), 0, "for HT groups"},
    {"LL recipes=0", BASE_LL, GROUP(recipes), 0, "for LL groups"},
    {"LL recipes=MXFP8", BASE_LL, GROUP(recipes), NCCLX_EP_RECIPE_MXFP8, "for LL groups"},
    {"HT recipes=FP8", BASE_HT, GROUP(recipes), NCCLX_EP_RECIPE_FP8, "for HT groups"},
    {"HT recipes unknown bit", BASE_HT, GROUP(recipes), NCCLX_EP_RECIPE_NONE | 0x10u,
     "for HT groups"},
    {"HT QUANT_FWD max_token_bytes=0", BASE_HT, GROUP(max_token_bytes), 0, "non-zero multiple"},
    {"HT QUANT_FWD max_token_bytes=7170", BASE_HT, GROUP(max_token_bytes), 7170,
     "non-zero multiple"},
    /* A multiple of 8 only: the rule is 16 bytes. */
    {"HT QUANT_FWD max_token_bytes=7176", BASE_HT, GROUP(max_token_bytes), 7176,
     "non-zero multiple"},
    /* The upper bounds (NCCLX_EP_MAX_TOKEN_BYTES, NCCLX_EP_MAX_SCALE_BYTES) come before the
     * multiple-of-16 rule: one past the bound is named as past it, and so is the next multiple
     * of 16, so that a bound moved by one fails a row. */
    {"HT max_token_bytes=262144 ok", BASE_HT, GROUP(max_token_bytes), NCCLX_EP_MAX_TOKEN_BYTES,
     VALID},
    {"HT max_token_bytes=262145", BASE_HT, GROUP(max_token_bytes), NCCLX_EP_MAX_TOKEN_BYTES + 1,
     "=262145 exceeds 262144 (NCCLX_EP_MAX_TOKEN_BYTES"},
    {"HT max_token_bytes=262160", BASE_HT, GROUP(max_token_bytes), NCCLX_EP_MAX_TOKEN_BYTES + 16,
     "=262160 exceeds 262144"},
    {"HT max_token_bytes=2^32-16", BASE_HT, GROUP(max_token_bytes), UINT32_MAX - 15,
     "=4294967280 exceeds 262144"},
    {"HT max_scale_bytes=0 ok", BASE_HT, GROUP(max_scale_bytes), 0, VALID},
    {"HT max_scale_bytes=65536 ok", BASE_HT, GROUP(max_scale_bytes), NCCLX_EP_MAX_SCALE_BYTES,
     VALID},
    {"HT max_scale_bytes=65537", BASE_HT, GROUP(max_scale_bytes), NCCLX_EP_MAX_SCALE_BYTES + 1,
     "=65537 exceeds 65536 (NCCLX_EP_MAX_SCALE_BYTES)"},
    {"HT max_scale_bytes=2^32-1", BASE_HT, GROUP(max_scale_bytes), UINT32_MAX,
     "=4294967295 exceeds 65536"},
    {"LL max_token_bytes without QUANT_FWD", BASE_LL, GROUP(max_token_bytes), 7168,
     "only meaningful with NCCLX_EP_RECIPE_QUANT_FWD"},
    {"LL max_scale_bytes without QUANT_FWD", BASE_LL, GROUP(max_scale_bytes), 224,
     "only meaningful with NCCLX_EP_RECIPE_QUANT_FWD"},
    /* Any non-zero value, the smallest too. */
    {"LL max_token_bytes=1 without QUANT_FWD", BASE_LL, GROUP(max_token_bytes), 1,
     "only meaningful with NCCLX_EP_RECIPE_QUANT_FWD"},
    {"LL max_scale_bytes=1 without QUANT_FWD", BASE_LL, GROUP(max_scale_bytes), 1,
     "only meaningful with NCCLX_EP_RECIPE_QUANT_FWD"},
    {"LL max_dispatch_tokens_per_rank=0", BASE_LL, GROUP(max_dispatch_tokens_per_rank), 0,
     "outside [1, 1024] for LL"},
    {"LL max_dispatch_tokens_per_rank=1025", BASE_LL, GROUP(max_dispatch_tokens_per_rank), 1025,
     "outside [1, 1024] for LL"},
    {"LL max_dispatch_tokens_per_rank=1024 ok", BASE_LL, GROUP(max_dispatch_tokens_per_rank), 1024,
     VALID},
    {"LL max_dispatch_tokens_per_rank=1 ok", BASE_LL, GROUP(max_dispatch_tokens_per_rank), 1,
     VALID},
    {"HT max_dispatch_tokens_per_rank=1 ok", BASE_HT, GROUP(max_dispatch_tokens_per_rank), 1,
     VALID},
    {"HT max_dispatch_tokens_per_rank=0", BASE_HT, GROUP(max_dispatch_tokens_per_rank), 0,
     "outside [1, 1048576] for HT"},
    {"HT max_dispatch_tokens_per_rank=1048577", BASE_HT, GROUP(max_dispatch_tokens_per_rank),
     1048577, "outside [1, 1048576] for HT"},
    {"HT max_dispatch_tokens_per_rank=1048576 ok", BASE_HT, GROUP(max_dispatch_tokens_per_rank),
     1048576, VALID},
    {"LL max_recv_tokens_per_rank=1", BASE_LL, GROUP(max_recv_tokens_per_rank), 1, "leave 0"},
    {"HT max_recv_tokens_per_rank=1 ok", BASE_HT, GROUP(max_recv_tokens_per_rank), 1, VALID},
    {"HT max_recv_tokens_per_rank=2^31-1 ok", BASE_HT, GROUP(max_recv_tokens_per_rank), INT32_MAX,
     VALID},
    {"HT overflow_policy=DROP ok", BASE_HT, GROUP(overflow_policy), NCCLX_EP_OVERFLOW_DROP, VALID},
    {"HT overflow_policy=2", BASE_HT, GROUP(overflow_policy), 2,
     "NCCLX_EP_OVERFLOW_TRAP (0) or NCCLX_EP_OVERFLOW_DROP (1)"},
    {"HT overflow_policy=UINT32_MAX", BASE_HT, GROUP(overflow_policy), UINT32_MAX,
     "NCCLX_EP_OVERFLOW_TRAP (0) or NCCLX_EP_OVERFLOW_DROP (1)"},
    {"LL overflow_policy=DROP", BASE_LL, GROUP(overflow_policy), NCCLX_EP_OVERFLOW_DROP,
     "an HT feature"},
    {"LL overflow_policy=2", BASE_LL, GROUP(overflow_policy), 2, "an HT feature"},
    {"HT enable_mask=1", BASE_HT, GROUP(enable_mask), 1, "LL feature"},
    {"LL enable_mask=2", BASE_LL, GROUP(enable_mask), 2, "must be 0 or 1"},
    {"LL zero_copy=1 with enable_mask", BASE_LL, GROUP(zero_copy), 1, "not with enable_mask"},
    {"LL zero_copy=2", BASE_LL, GROUP(zero_copy), 2, "must be 0 or 1"},
    {"HT zero_copy=1", BASE_HT, GROUP(zero_copy), 1, "an LL field"},
    {"LL expert_alignment=2", BASE_LL, GROUP(expert_alignment), 2, "HT expert-major"},
    {"LL expert_alignment=1 ok", BASE_LL, GROUP(expert_alignment), 1, VALID},
    {"HT expert_alignment=1025", BASE_HT, GROUP(expert_alignment), 1025, "outside [0, 1024]"},
    {"HT expert_alignment=1024 ok", BASE_HT, GROUP(expert_alignment), 1024, VALID},
    {"LL sm_budget=1025", BASE_LL, GROUP(sm_budget), 1025, "outside [0, 1024]"},
    {"HT sm_budget=132 ok", BASE_HT, GROUP(sm_budget), 132, VALID},
    {"LL sm_budget=1024 ok", BASE_LL, GROUP(sm_budget), 1024, VALID},
    {"HT sm_budget=1025", BASE_HT, GROUP(sm_budget), 1025, "outside [0, 1024]"},
    {"LL num_handles=0", BASE_LL, GROUP(num_handles), 0, "outside [1, 4096]"},
    {"HT num_handles=4097", BASE_HT, GROUP(num_handles), 4097, "outside [1, 4096]"},
    {"HT num_handles=4096 ok", BASE_HT, GROUP(num_handles), 4096, VALID},
    {"team num_ranks=0", BASE_LL, TEAM(num_ranks), 0, "outside [1, 65536]"},
    {"team num_ranks=65537", BASE_HT, TEAM(num_ranks), 65537, "outside [1, 65536]"},
    {"team num_nodes=0", BASE_LL, TEAM(num_nodes), 0, "divide team.num_ranks"},
    {"team num_nodes=3", BASE_HT, TEAM(num_nodes), 3, "divide team.num_ranks"},
    {"team num_nodes=2 ok (lsa_size 8: one load/store team)", BASE_HT, TEAM(num_nodes), 2, VALID},
    {"team lsa_size=0", BASE_LL, TEAM(lsa_size), 0, "divide team.num_ranks"},
    {"team lsa_size=3", BASE_HT, TEAM(lsa_size), 3, "divide team.num_ranks"},
    {"team lsa_size=4 ok", BASE_LL, TEAM(lsa_size), 4, VALID},
    {"plan num_ep_groups=65", BASE_LL, PLAN(num_ep_groups), NCCLX_MAX_EP_GROUPS + 1, "exceeds 64"},
    {"plan host_block_bytes without block", BASE_HT, PLAN(host_block_bytes), 4096,
     "plan.host_block is NULL"},
    {"plan host_block_bytes=1 without block", BASE_LL, PLAN(host_block_bytes), 1,
     "plan.host_block is NULL"},
    /* M2N: staging of at least 16384 bytes per rank of the team (8 here). */
    {"plan m2n_staging_bytes=1", BASE_LL, PLAN(m2n_staging_bytes), 1,
     "a team of 8 ranks needs at least 131072"},
    {"plan m2n_staging_bytes=131071", BASE_HT, PLAN(m2n_staging_bytes), 131071,
     "a team of 8 ranks needs at least 131072"},
    {"plan m2n_staging_bytes=131072 ok", BASE_LL, PLAN(m2n_staging_bytes), 131072, VALID},
    {"plan m2n_staging_bytes=1 GiB ok", BASE_HT, PLAN(m2n_staging_bytes), 1ull << 30, VALID},
    {"plan m2n_max_group_entries without staging", BASE_LL, PLAN(m2n_max_group_entries), 1,
     "but plan.m2n_staging_bytes is 0 (no M2N)"},
};

#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

static void make_ll(ncclxEpGroupPlan_t *g)
{
    const ncclxEpGroupPlan_t init = NCCLX_EP_GROUP_PLAN_INIT;
    *g = init;
    g->algorithm = NCCLX_EP_ALGO_LL;
    g->num_experts = 256;
    g->max_topk = 8;
    g->hidden = 7168;
    g->token_dtypes = BF16 | FP4;
    g->layouts = EXPERT | RANK;
    g->recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_FP8;
    g->max_dispatch_tokens_per_rank = 128;
    g->enable_mask = 1;
    g->num_handles = 4;
}

static void make_ht(ncclxEpGroupPlan_t *g)
{
    const ncclxEpGroupPlan_t init = NCCLX_EP_GROUP_PLAN_INIT;
    *g = init;
    g->algorithm = NCCLX_EP_ALGO_HT;
    g->num_experts = 256;
    g->max_topk = 8;
    g->hidden = 7168;
    g->token_dtypes = BF16 | FP8;
    g->layouts = EXPERT | FLAT;
    g->recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD;
    g->max_dispatch_tokens_per_rank = 4096;
    g->max_token_bytes = 7168;
    g->max_scale_bytes = 7168 / 128 * 4;
    g->expert_alignment = 128;
    g->num_handles = 4;
}

/* A plan of up to two groups, a team of 8 ranks on 1 node, all in one place. */
typedef struct {
    ncclxEpGroupPlan_t groups[2];
    const ncclxEpGroupPlan_t *ptrs[2];
    ncclxPlan_t plan;
    ncclxTeam_t team;
} fixture_t;

static void make_fixture(fixture_t *f, uint32_t num_groups, base_t first, base_t second)
{
    const ncclxPlan_t plan = NCCLX_PLAN_INIT;
    const ncclxTeam_t team = NCCLX_TEAM_INIT;
    (first == BASE_LL ? make_ll : make_ht)(&f->groups[0]);
    (second == BASE_LL ? make_ll : make_ht)(&f->groups[1]);
    f->ptrs[0] = &f->groups[0];
    f->ptrs[1] = &f->groups[1];
    f->plan = plan;
    f->plan.num_ep_groups = num_groups;
    f->plan.ep_groups = f->ptrs;
    f->team = team;
    f->team.num_ranks = 8;
    f->team.num_nodes = 1;
    f->team.lsa_size = 8;
}

/* The two refusals of HT across load/store domains (ncclxUnsupported). */
#define MXFP8_ACROSS                                                                            \
    "the MXFP8 combine (NCCLX_EP_RECIPE_MXFP8) runs inside one load/store domain only in this " \
    "release"
#define LSA_NOT_POW2 "is not a power of two: HT across load/store domains"

/* A plan whose fields are all valid, on one load/store team or several (the bases hold no
 * MXFP8 combine, and every lsa_size dividing 8 ranks is a power of two): accepted.  A NULL
 * team is 1 rank: one load/store team. */
static void assert_plan_valid(const fixture_t *f, const ncclxTeam_t *team)
{
    assert_ncclx_ok(ncclxPlanValidate(&f->plan, team));
}

static void write_field(void *object, const field_case_t *c)
{
    unsigned char *at = (unsigned char *)object + c->offset;
    if (c->width == sizeof(uint32_t)) {
        uint32_t v = (uint32_t)c->value;
        memcpy(at, &v, sizeof(v));
    } else {
        assert_int_equal(c->width, sizeof(uint64_t));
        memcpy(at, &c->value, sizeof(c->value));
    }
}

static void test_field_case(void **state)
{
    const field_case_t *c = *state;
    fixture_t f;
    char needle[96];
    void *object[] = {[IN_GROUP] = &f.groups[0], [IN_TEAM] = &f.team, [IN_PLAN] = &f.plan};
    const char *prefix[] = {
        [IN_GROUP] = "plan.ep_groups[0]->", [IN_TEAM] = "team.", [IN_PLAN] = "plan."};

    make_fixture(&f, 1, c->base, c->base);
    assert_plan_valid(&f, &f.team);
    write_field(object[c->target], c);
    if (c->reason[0] == '\0') {
        assert_plan_valid(&f, &f.team);
        return;
    }
    snprintf(needle, sizeof(needle), "%s%s=", prefix[c->target], c->field);
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, needle);
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, c->reason);
    /* The message quotes the value that was written, whole (the bit sets in hex): a message
     * that printed a neighbouring field's value would send the reader to the wrong place. */
    {
        const int hex = strcmp(c->field, "token_dtypes") == 0 || strcmp(c->field, "layouts") == 0 ||
                        strcmp(c->field, "recipes") == 0;
        const uint64_t written = c->width == sizeof(uint32_t) ? (uint32_t)c->value : c->value;
        const char *at;
        snprintf(needle, sizeof(needle), hex ? "%s%s=0x%" PRIx64 : "%s%s=%" PRIu64,
                 prefix[c->target], c->field, written);
        assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, needle);
        at = strstr(ncclxGetLastError(), needle) + strlen(needle);
        if (isxdigit((unsigned char)*at)) {
            fail_msg("'%s' quotes another value than %s", ncclxGetLastError(), needle);
        }
    }
}

/* LL zero copy: accepted on an LL group without a mask inside one load/store domain, with rows
 * sized L x R x T for the expert-major layout and R x T for the rank-major one (each planned
 * layout its own, plus the count boards); refused, naming the field and why, across load/store
 * domains. */
static void test_zero_copy_plans(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t off = NCCLX_PLAN_SIZES_INIT, on = NCCLX_PLAN_SIZES_INIT;
    (void)state;
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].enable_mask = 0;
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &off));
    f.groups[0].zero_copy = 1;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &on));
    /* BF16 rows (the largest NONE row: FP4 is smaller) and FP8 scale rows, 32 experts x 8
     * ranks x 128 tokens expert-major and 8 x 128 more rank-major (both layouts planned: each
     * has rows of its own), and two parities of 8 boards of 16 + 256 x 4 bytes. */
    const size_t rows = (size_t)32 * 8 * 128, rm_rows = (size_t)8 * 128;
    const size_t row = 7168 * 2 + 7168 / 128 * 4, boards = 2 * 8 * (16 + 256 * 4);
    const size_t extra = (rows + rm_rows) * row + boards;
    assert_true(on.total[NCCLX_MEM_SYMMETRIC] >= off.total[NCCLX_MEM_SYMMETRIC] + extra);
    assert_true(on.total[NCCLX_MEM_SYMMETRIC] <= off.total[NCCLX_MEM_SYMMETRIC] + extra + 4096);
    assert_int_equal(on.total[NCCLX_MEM_DEVICE] - off.total[NCCLX_MEM_DEVICE] >= 256 * 4, 1);
    /* One layout planned: only its rows. */
    const uint32_t one_layout[2] = {NCCLX_EP_LAYOUT_EXPERT_MAJOR, NCCLX_EP_LAYOUT_RANK_MAJOR};
    for (int i = 0; i < 2; i++) {
        ncclxPlanSizes_t off1 = NCCLX_PLAN_SIZES_INIT, on1 = NCCLX_PLAN_SIZES_INIT;
        const size_t extra1 = (i == 0 ? rows : rm_rows) * row + boards;
        f.groups[0].layouts = one_layout[i];
        f.groups[0].zero_copy = 0;
        assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &off1));
        f.groups[0].zero_copy = 1;
        assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
        assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &on1));
        assert_true(on1.total[NCCLX_MEM_SYMMETRIC] >= off1.total[NCCLX_MEM_SYMMETRIC] + extra1);
        assert_true(on1.total[NCCLX_MEM_SYMMETRIC] <=
                    off1.total[NCCLX_MEM_SYMMETRIC] + extra1 + 4096);
    }
    f.groups[0].layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    f.team.num_nodes = 2;
    f.team.lsa_size = 4;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "the team must be one load/store domain (team.lsa_size=4, num_ranks=8)");
}

static void test_valid_plans(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    (void)state;
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    make_fixture(&f, 2, BASE_LL, BASE_LL);
    f.groups[1].max_dispatch_tokens_per_rank = 1024;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    /* No groups at all is a valid (empty) plan; a NULL team means 1 rank on 1 node. */
    f.plan.num_ep_groups = 0;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].num_experts = 8;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, NULL));
    /* HT inside one load/store team: alone, next to an LL group, with the DROP policy and the
     * largest HT top-k, and on the NULL team (1 rank). */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    assert_true(sizes.total[NCCLX_MEM_SYMMETRIC] > 0);
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    f.groups[1].overflow_policy = NCCLX_EP_OVERFLOW_DROP;
    f.groups[1].max_topk = NCCLX_EP_MAX_HT_TOPK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].num_experts = 8;
    f.groups[1].num_experts = 32;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, NULL));
    /* 16 ranks on 2 nodes that reach each other by load/store (one NVLink domain). */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.num_ranks = 16;
    f.team.num_nodes = 2;
    f.team.lsa_size = 16;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
}

/* The MXFP8 combine on an HT group: accepted with expert-major BF16 rows, a dispatch recipe
 * and hidden % 32 == 0; each missing piece refused, naming its field; sized like any HT group
 * plus each handle's row links (S int32 + S bytes, 16-byte aligned pieces). */
static void test_mxfp8_plan_rules(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t plain = NCCLX_PLAN_SIZES_INIT, mx = NCCLX_PLAN_SIZES_INIT;
    (void)state;
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &plain));
    f.groups[1].recipes |= NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &mx));
    {
        /* S = R T = 8 * 4096 rows: S * 4 + S bytes more per handle (both 256-byte multiples),
         * num_handles handles; nothing else changes. */
        const uint64_t S = 8u * 4096u, per_handle = S * 4 + S;
        assert_int_equal(mx.total[NCCLX_MEM_DEVICE] - plain.total[NCCLX_MEM_DEVICE],
                         per_handle * f.groups[1].num_handles);
        assert_int_equal(mx.total[NCCLX_MEM_SYMMETRIC], plain.total[NCCLX_MEM_SYMMETRIC]);
        assert_int_equal(mx.total[NCCLX_MEM_MAPPED_HOST], plain.total[NCCLX_MEM_MAPPED_HOST]);
    }
    f.groups[1].hidden = 7184; /* BF16 and FP8 rows are 16-byte multiples, not a multiple of 32 */
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->hidden=7184: the MXFP8 recipe needs a multiple of 32");
    f.groups[1].hidden = 7200;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[1].recipes = NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->recipes=0x8: MXFP8 is a combine recipe");
    f.groups[1].recipes = NCCLX_EP_RECIPE_MXFP8 | NCCLX_EP_RECIPE_QUANT_FWD;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[1].layouts = FLAT;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->layouts=0x4: the MXFP8 combine works on expert-major");
    f.groups[1].layouts = EXPERT;
    f.groups[1].token_dtypes = FP8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->token_dtypes=0x");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "the MXFP8 combine takes BF16 expert outputs");
}

/* HT across load/store domains (hierarchical: a token crosses the network once per destination
 * node, docs/ep-ht.md): valid and sized on any team (its network regions: test_plan_sizes.c),
 * next to LL groups and M2N staging.  Refused there with ncclxUnsupported, once every field is
 * valid, by every public entry point, sizing nothing: the MXFP8 combine (naming the group's
 * recipes) and domains whose size is not a power of two (naming team.lsa_size). */
static void test_ht_across_domains_rules(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclxPlanSizes_t before;
    char buf[256] = {0};
    FILE *out;
    (void)state;
    memcpy(&before, &sizes, sizeof(before));
    /* HT on 8 ranks of which 4 reach each other by load/store: valid and sized. */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.lsa_size = 4;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    assert_true(sizes.total[NCCLX_MEM_SYMMETRIC] > 0);
    sizes = before;
    /* Two nodes of 8; 8 domains of one rank; the HT group second, next to an LL group. */
    f.team.num_ranks = 16;
    f.team.num_nodes = 2;
    f.team.lsa_size = 8;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.lsa_size = 1;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    f.team.lsa_size = 2;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));

    /* The MXFP8 combine across domains: refused, naming the group's recipes (wherever the group
     * is); every entry point alike, nothing sized or printed.  On one domain it is valid. */
    f.groups[1].recipes |= NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "plan.ep_groups[1]->recipes=0xb: " MXFP8_ACROSS);
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "its packed partials are per rank, while the network hop carries one FP32 "
                       "partial per node");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "the team has 8 ranks of which 2 reach each other by load/store");
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxUnsupported,
                       MXFP8_ACROSS);
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    out = fmemopen(buf, sizeof(buf) - 1, "w");
    assert_non_null(out);
    assert_ncclx_error(ncclxPlanPrint(&f.plan, &f.team, out), ncclxUnsupported, MXFP8_ACROSS);
    fclose(out);
    assert_null(strstr(buf, "symmetric")); /* no region printed */
    f.team.lsa_size = 8;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    /* The HT group first; a bad field anywhere is reported before the refusal. */
    make_fixture(&f, 2, BASE_HT, BASE_LL);
    f.groups[0].recipes |= NCCLX_EP_RECIPE_MXFP8;
    f.team.lsa_size = 4;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "plan.ep_groups[0]->recipes=0xb: " MXFP8_ACROSS);
    f.groups[1].num_handles = 0;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->num_handles=0");

    /* Domains that are not a power of two: 12 ranks (96 experts, 8 per rank) in 2 domains of 6
     * and 4 of 3 are refused for an HT group, naming team.lsa_size; 12 ranks in one domain, and
     * an LL group on 2 of 6, are valid. */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.groups[0].num_experts = 96;
    f.team.num_ranks = 12;
    f.team.num_nodes = 2;
    f.team.lsa_size = 6;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "team.lsa_size=6 " LSA_NOT_POW2 " (plan.ep_groups[0], 12 ranks)");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "as one subtree of a binary tree over ranks, so nodes must be aligned "
                       "power-of-two blocks");
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxUnsupported,
                       "team.lsa_size=6 " LSA_NOT_POW2);
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    /* With the MXFP8 combine besides, the team is named first. */
    f.groups[0].recipes |= NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "team.lsa_size=6 " LSA_NOT_POW2);
    f.groups[0].recipes &= ~NCCLX_EP_RECIPE_MXFP8;
    f.team.num_nodes = 4;
    f.team.lsa_size = 3;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxUnsupported,
                       "team.lsa_size=3 " LSA_NOT_POW2);
    f.team.num_nodes = 1;
    f.team.lsa_size = 12;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    sizes = before;
    make_ll(&f.groups[0]);
    f.groups[0].num_experts = 96;
    f.team.num_nodes = 2;
    f.team.lsa_size = 6;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));

    /* M2N staging on 16 ranks of which 8 reach each other by load/store (two nodes), with or
     * without EP groups: M2N crosses domains through the network transport, so the plan is
     * valid and sized (its network regions: test_plan_sizes.c). */
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.team.num_ranks = 16;
    f.team.num_nodes = 2;
    f.team.lsa_size = 8;
    f.plan.m2n_staging_bytes = 16 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    assert_true(sizes.total[NCCLX_MEM_SYMMETRIC] > 0);
    sizes = before;
    f.plan.num_ep_groups = 0;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    /* With an HT group too; a staging too small is an invalid argument. */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.lsa_size = 4;
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.m2n_staging_bytes = 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=1: a team of 8 ranks needs at least 131072");
    /* ... also before an HT refusal. */
    f.groups[0].recipes |= NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=1");
    /* A bad team is still an invalid argument. */
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    f.team.lsa_size = 3;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, "team.lsa_size");
}

/* M2N staging inside one load/store team: at least NCCLX_M2N_MIN_STAGING_PER_RANK bytes per
 * rank (a ring of slices from every source), with or without EP groups; group entries only
 * with staging (0 there: the default), at most NCCLX_M2N_MAX_GROUP_ENTRIES.  Each refusal
 * names its field, on every public entry point. */
static void test_m2n_plan_rules(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclxPlanSizes_t before;
    (void)state;
    memcpy(&before, &sizes, sizeof(before));
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    /* The least staging: 8 ranks * 16384; one byte less is refused. */
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    memcpy(&sizes, &before, sizeof(sizes));
    f.plan.m2n_staging_bytes--;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=131071: a team of 8 ranks needs at least 131072 "
                       "(16384 bytes per rank");
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=131071");
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    /* The least grows with the team: 16 ranks on 2 nodes of one load/store domain. */
    f.team.num_ranks = 16;
    f.team.num_nodes = 2;
    f.team.lsa_size = 16;
    f.plan.m2n_staging_bytes = 16 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=131072: a team of 16 ranks needs at least 262144");
    /* No EP group, and the NULL team (1 rank). */
    f.plan.num_ep_groups = 0;
    f.plan.m2n_staging_bytes = NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, NULL));
    f.plan.m2n_staging_bytes = NCCLX_M2N_MIN_STAGING_PER_RANK - 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, NULL), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=16383: a team of 1 ranks needs at least 16384");

    /* Group entries: refused without staging, whatever the count. */
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.plan.m2n_max_group_entries = 5;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=5 but plan.m2n_staging_bytes is 0");
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=5");
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    f.plan.m2n_max_group_entries = NCCLX_M2N_MAX_GROUP_ENTRIES + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=65537 but plan.m2n_staging_bytes is 0");
    /* With staging: 1 to NCCLX_M2N_MAX_GROUP_ENTRIES, or 0 for the default. */
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=65537 exceeds 65536");
    f.plan.m2n_max_group_entries = UINT32_MAX;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=4294967295 exceeds 65536");
    f.plan.m2n_max_group_entries = NCCLX_M2N_MAX_GROUP_ENTRIES;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.m2n_max_group_entries = 1;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    /* 0 is the default, 128: sized exactly as 128 given. */
    {
        ncclxPlanSizes_t dflt = NCCLX_PLAN_SIZES_INIT, given = NCCLX_PLAN_SIZES_INIT;
        f.plan.m2n_max_group_entries = 0;
        assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
        assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &dflt));
        f.plan.m2n_max_group_entries = NCCLX_M2N_DEFAULT_GROUP_ENTRIES;
        assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &given));
        assert_memory_equal(&dflt, &given, sizeof(given));
        f.plan.m2n_max_group_entries = NCCLX_M2N_DEFAULT_GROUP_ENTRIES + 1;
        assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &given));
        assert_true(given.total[NCCLX_MEM_HOST] > dflt.total[NCCLX_MEM_HOST]);
    }
    /* Staging off one load/store domain: valid, with the same staging and entry checks. */
    f.team.lsa_size = 4;
    f.plan.m2n_max_group_entries = 0;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK - 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_staging_bytes=131071");
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    f.plan.m2n_max_group_entries = NCCLX_M2N_MAX_GROUP_ENTRIES + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=65537 exceeds 65536");
}

static void test_second_group_named(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    assert_plan_valid(&f, &f.team);
    f.groups[1].hidden = 7176;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->hidden=7176");
    /* With both groups bad, the first one is reported. */
    f.groups[0].num_handles = 0;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->num_handles=0");
}

static void test_null_pointers(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    assert_ncclx_error(ncclxPlanValidate(NULL, &f.team), ncclxInvalidArgument, "plan is NULL");
    f.plan.ep_groups = NULL;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups is NULL");
    make_fixture(&f, 2, BASE_LL, BASE_HT);
    f.ptrs[1] = NULL;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1] is NULL");
}

static void test_host_block(void **state)
{
    fixture_t f;
    unsigned char *block = aligned_alloc(4096, 8192);
    (void)state;
    assert_non_null(block);
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.plan.host_block = block;
    f.plan.host_block_bytes = 8192;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.host_block = block + 64;
    f.plan.host_block_bytes = 4096;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.plan.host_block = block + 32;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.host_block=");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "not aligned to 64 bytes");
    free(block);
}

/* The QUANT_FWD bounds hold for LL groups as for HT (the HT rows are in the table), both
 * together at their largest, and the sizes at the bounds are exact (test_plan_sizes). */
static void test_quant_fwd_bounds_ll(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    (void)state;
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD;
    f.groups[0].max_token_bytes = NCCLX_EP_MAX_TOKEN_BYTES;
    f.groups[0].max_scale_bytes = NCCLX_EP_MAX_SCALE_BYTES;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    f.groups[0].max_token_bytes = NCCLX_EP_MAX_TOKEN_BYTES + 16;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->max_token_bytes=262160 exceeds 262144");
    f.groups[0].max_token_bytes = NCCLX_EP_MAX_TOKEN_BYTES;
    f.groups[0].max_scale_bytes = NCCLX_EP_MAX_SCALE_BYTES + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->max_scale_bytes=65537 exceeds 65536");
    /* Both past their bounds: the row bytes are named first. */
    f.groups[0].max_token_bytes = UINT32_MAX;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->max_token_bytes=4294967295 exceeds 262144");
}

/* Top-k cannot exceed the experts there are, even under NCCLX_EP_MAX_TOPK / _HT_TOPK. */
static void test_topk_above_experts(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].num_experts = 8;
    f.groups[0].max_topk = 8;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].max_topk = 9;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->max_topk=9");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, "num_experts=8");
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.groups[0].num_experts = 24;
    f.groups[0].max_topk = 24;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].max_topk = 25;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->max_topk=25 is outside [1, min(32, num_experts=24)]");
}

/* The receive budget S (max_recv_tokens_per_rank, or ranks * max_dispatch_tokens_per_rank when
 * 0) is at most 2^31-1 rows.  Checked by validation too (it sizes the plan). */
static void test_recv_rows_limit(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.num_ranks = f.team.lsa_size = 2048;
    f.groups[0].num_experts = 4096;
    f.groups[0].max_dispatch_tokens_per_rank = NCCLX_EP_MAX_HT_TOKENS_PER_RANK;
    /* The default: 2048 * 2^20 = 2^31 rows, one too many. */
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]: ranks * max_dispatch_tokens_per_rank = 2147483648 "
                       "receive rows exceeds 2^31-1");
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "set max_recv_tokens_per_rank");
    f.groups[0].max_recv_tokens_per_rank = INT32_MAX;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].max_recv_tokens_per_rank = (uint32_t)INT32_MAX + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "2147483648 receive rows exceeds 2^31-1");
    f.groups[0].max_recv_tokens_per_rank = UINT32_MAX;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "4294967295 receive rows exceeds 2^31-1");
    /* The default just under the limit: 1024 * 2^20 = 2^30. */
    f.groups[0].max_recv_tokens_per_rank = 0;
    f.team.num_ranks = f.team.lsa_size = 1024;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
}

/* The edges the table cannot reach with its 8-rank team: the largest team (no group: 256
 * experts would not divide it), one expert on the 1-rank NULL team, experts that divide the
 * load/store domain but not the team, a team whose rank count is not a power of two around
 * power-of-two domains, and one group given without its array. */
static void test_team_and_expert_edges(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 0, BASE_LL, BASE_LL);
    f.team.num_ranks = NCCLX_MAX_RANKS;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.team.num_ranks = NCCLX_MAX_RANKS + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "team.num_ranks=65537 is outside [1, 65536]");
    /* One expert, top-1, on one rank: the lower bounds of both. */
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].num_experts = 1;
    f.groups[0].max_topk = 1;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, NULL));
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.groups[0].num_experts = 1;
    f.groups[0].max_topk = 1;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, NULL));
    /* Experts are split over every rank of the team, not over one domain's: 260 experts divide
     * by 4 (lsa_size), not by 8. */
    make_fixture(&f, 1, BASE_HT, BASE_HT);
    f.team.num_nodes = 2;
    f.team.lsa_size = 4;
    f.groups[0].num_experts = 264;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].num_experts = 260;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->num_experts=260 is not divisible by team.num_ranks=8");
    /* HT across domains needs power-of-two domains, not a power-of-two team: 12 ranks in 3
     * domains of 4 are valid. */
    f.groups[0].num_experts = 96;
    f.team.num_ranks = 12;
    f.team.num_nodes = 3;
    f.team.lsa_size = 4;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    /* One group, no array: refused like two. */
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.plan.ep_groups = NULL;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.num_ep_groups=1 but plan.ep_groups is NULL");
}

/* An LL group spans at most NCCLX_EP_MAX_LL_RANKS ranks of the team, counted over the whole
 * team (not one load/store domain of it): 1024 is valid, 1025 refused, and so are 2048 ranks in
 * domains of 1024. */
static void test_ll_rank_limit(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, 1, BASE_LL, BASE_LL);
    f.groups[0].num_experts = NCCLX_EP_MAX_LL_RANKS;
    f.team.num_ranks = f.team.lsa_size = NCCLX_EP_MAX_LL_RANKS;
    assert_ncclx_ok(ncclxPlanValidate(&f.plan, &f.team));
    f.groups[0].num_experts = 2 * (NCCLX_EP_MAX_LL_RANKS + 1);
    f.team.num_ranks = f.team.lsa_size = NCCLX_EP_MAX_LL_RANKS + 1;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]: an LL group spans at most 1024 ranks (one load/store "
                       "domain); the team has 1025");
    f.groups[0].num_experts = 2 * NCCLX_EP_MAX_LL_RANKS;
    f.groups[0].enable_mask = 0;
    f.team.num_ranks = 2 * NCCLX_EP_MAX_LL_RANKS;
    f.team.num_nodes = 2;
    f.team.lsa_size = NCCLX_EP_MAX_LL_RANKS;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "an LL group spans at most 1024 ranks (one load/store domain); the team "
                       "has 2048");
}

/* A rejected plan must leave the caller's output struct exactly as it was. */
static void test_sizes_untouched_on_error(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclxPlanSizes_t before;
    (void)state;
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        sizes.total[c] = 0x1111111111111111ull * (uint64_t)(c + 1);
        sizes.per_handle[c] = 0xa5a5a5a5a5a5a5a5ull;
    }
    sizes.num_regions = 0xdeadbeefu;
    sizes.reserved0 = 0xfeedfaceu;
    memcpy(&before, &sizes, sizeof(before));

    make_fixture(&f, 2, BASE_LL, BASE_HT);
    f.groups[1].layouts = RANK;
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxInvalidArgument,
                       "plan.ep_groups[1]->layouts");
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    f.groups[1].layouts = FLAT;
    f.team.lsa_size = 5;
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxInvalidArgument,
                       "team.lsa_size");
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    /* A valid team of several load/store domains: the MXFP8 combine there is refused,
     * untouched too. */
    f.groups[1].layouts = EXPERT;
    f.groups[1].recipes |= NCCLX_EP_RECIPE_MXFP8;
    f.team.lsa_size = 4;
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxUnsupported,
                       "plan.ep_groups[1]->recipes=0xb: " MXFP8_ACROSS);
    assert_memory_equal(&before, &sizes, sizeof(sizes));
    /* One load/store team: the plan (LL + HT) is sized and the struct written. */
    f.team.lsa_size = 8;
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes));
    assert_int_not_equal(sizes.num_regions, 0xdeadbeefu);
}

int main(void)
{
    const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_quant_fwd_bounds_ll),
        cmocka_unit_test(test_valid_plans),
        cmocka_unit_test(test_zero_copy_plans),
        cmocka_unit_test(test_ht_across_domains_rules),
        cmocka_unit_test(test_m2n_plan_rules),
        cmocka_unit_test(test_mxfp8_plan_rules),
        cmocka_unit_test(test_second_group_named),
        cmocka_unit_test(test_null_pointers),
        cmocka_unit_test(test_host_block),
        cmocka_unit_test(test_topk_above_experts),
        cmocka_unit_test(test_recv_rows_limit),
        cmocka_unit_test(test_sizes_untouched_on_error),
        cmocka_unit_test(test_team_and_expert_edges),
        cmocka_unit_test(test_ll_rank_limit),
    };
    size_t num_fixed = sizeof(fixed) / sizeof(fixed[0]);
    struct CMUnitTest *tests = calloc(num_fixed + NUM_CASES, sizeof(*tests));
    int failed;

    if (tests == NULL) {
        return 1;
    }
    memcpy(tests, fixed, sizeof(fixed));
    /* One cmocka test per row, so that a report names the row that failed. */
    for (size_t i = 0; i < NUM_CASES; i++) {
        tests[num_fixed + i].name = cases[i].label;
        tests[num_fixed + i].test_func = test_field_case;
        tests[num_fixed + i].initial_state = (void *)&cases[i];
    }
    failed = _cmocka_run_group_tests("plan_validate", tests, num_fixed + NUM_CASES, NULL, NULL);
    free(tests);
    return failed;
}
