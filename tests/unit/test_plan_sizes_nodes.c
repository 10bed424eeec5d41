/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plan sizing of HT across load/store domains against docs/plan-sizing.md's formulas: the
 * network regions, the handle's relay piece and the signals, and nothing on one domain.
 */
#include <stdlib.h>

#include "plan_sizes_fixture.h"

#include "ep_group.h"

/* ---- HT across load/store domains (docs/plan-sizing.md), from the documented formulas ---- */

/* An HT group of BF16 tokens and the NONE recipe (P = H * 2) with both layouts. */
typedef struct {
    uint32_t R, A, T, K, H, E;
} ht_net_shape_t;

typedef struct {
    uint64_t relay_row, partial, maps, stage, relay, partial_out, partial_in, words, signals;
    uint64_t handle;
} ht_net_expect_t;

static ht_net_expect_t ht_net_expect(const ht_net_shape_t *x)
{
    ht_net_expect_t e;
    const uint64_t nodes = x->R / x->A, T = x->T, K = x->K, L = x->E / x->R;
    const uint64_t P = a16((uint64_t)x->H * 2), across = nodes > 1;
    e.relay_row = across ? a16(P + K * 8) : 0;
    e.partial = across ? a16((uint64_t)x->H * 4 + K * 4) : 0;
    e.maps = across * x->R * T * ((x->E + 31) / 32) * 4;
    e.stage = T * e.relay_row;
    e.relay = across * (nodes - 1) * T * e.relay_row;
    e.partial_out = across * (nodes - 1) * T * e.partial;
    e.partial_in = e.partial_out;
    e.words = across * 2 * x->R * 8;
    e.signals = across * 6 * x->R;
    /* The one-domain handle, then the relay entries [nodes - 1][T][K] {row, expert}. */
    e.handle = 64 + a16(T * K * 4) + a16(T * x->R * 4) + a16(T * K * 4) + 16 + a16(L * 4) +
               a16((L + 1) * 4) + a16(L * 4) + a16(L * 4);
    e.handle = a256(e.handle + (across ? a16((nodes - 1) * T * K * 8) : 0));
    return e;
}

/* The bytes of each region of one group, by name, as a layout reports them. */
typedef struct {
    int group;
    const char *names[6];
    uint64_t bytes[6];
    uint32_t seen[6];
} ht_net_capture_t;

static void capture_region(const ncclx_region_t *r, void *ctx)
{
    ht_net_capture_t *c = ctx;
    for (int i = 0; i < 6; i++) {
        if (r->group == c->group && strcmp(r->name, c->names[i]) == 0) {
            assert_int_equal(r->mem_class, NCCLX_MEM_SYMMETRIC);
            c->bytes[i] = r->bytes;
            c->seen[i]++;
        }
    }
}

/* Lays out groups on the team of x (the HT group at index gi) and checks the HT group's network
 * regions, its dimensions, handle and signals against the formulas. */
static void check_ht_net(const ht_net_shape_t *x, const ncclxEpGroupPlan_t *const *groups,
                         uint32_t n, uint32_t gi, uint32_t signals_before, const char *what)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(x->R, x->R / x->A);
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
    ht_net_capture_t c = {(int)gi,
                          {"HT network maps", "HT network staging", "HT relay rows",
                           "HT partials out", "HT partials in", "HT network words"},
                          {0},
                          {0}};
    ncclx_layout_t layout;
    ncclx_ep_dims_t d;
    ncclx_ep_ht_handle_layout_t h;
    ncclxPlanSizes_t s;
    const ht_net_expect_t e = ht_net_expect(x);
    const uint64_t want[6] = {e.maps, e.stage, e.relay, e.partial_out, e.partial_in, e.words};
    assert_non_null(norm);
    assert_non_null(regions);
    plan.num_ep_groups = n;
    plan.ep_groups = groups;
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    ncclx_layout_init_measure(&layout, capture_region, &c);
    assert_ncclx_ok(ncclx_plan_layout(&layout, norm, regions));
    const ncclx_ep_group_regions_t *r = &regions->groups[gi];
    const size_t offsets[6] = {r->ht_net_maps,        r->ht_net_stage,      r->ht_net_relay,
                               r->ht_net_partial_out, r->ht_net_partial_in, r->ht_net_words};
    for (int i = 0; i < 6; i++) {
        if (c.bytes[i] != want[i] || c.seen[i] != (want[i] != 0) ||
            (want[i] == 0) != (offsets[i] == NCCLX_NO_REGION)) {
            fail_msg("%s: %s is %llu bytes (reserved %u times, offset %zu); the formula gives "
                     "%llu",
                     what, c.names[i], (unsigned long long)c.bytes[i], c.seen[i], offsets[i],
                     (unsigned long long)want[i]);
        }
    }
    /* Its network signals follow those counted before it (6 kinds x peer). */
    assert_int_equal(r->net_signal_base, signals_before);
    assert_int_equal(regions->net_num_signals, signals_before + e.signals);
    /* Dimensions and the handle. */
    assert_ncclx_ok(ncclx_ep_dims_compute(&norm->groups[gi], &norm->team, gi, &d));
    assert_int_equal(d.lsa, x->A);
    assert_int_equal(d.nodes, x->R / x->A);
    assert_int_equal(d.relay_row_bytes, e.relay_row);
    assert_int_equal(d.partial_bytes, e.partial);
    assert_int_equal(d.handle_bytes, e.handle);
    ncclx_ep_ht_handle_layout(&d, &h);
    assert_int_equal(h.bytes, e.handle);
    if (d.nodes > 1) {
        assert_int_equal(h.relay % 16, 0);
        assert_int_equal(a256(h.relay + (uint64_t)(d.nodes - 1) * x->T * x->K * 8), e.handle);
    } else {
        assert_int_equal(h.relay, 0);
    }
    s = sizes_of(groups, n, 0, &team); /* the largest handle of the plan's groups */
    assert_true(s.per_handle[NCCLX_MEM_DEVICE] >= e.handle);
    if (n == 1) {
        assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], e.handle);
    }
    free(norm);
    free(regions);
}

/* HT across load/store domains: each rank holds every remote rank's routing map, its own tokens
 * packed once as relay rows, the rows it relays for each source node, the FP32 node partials it
 * sums (by source node) and receives (by relay node), and 2 * R operation words; 6 * R network
 * signals; each handle the relay entries [nodes - 1][T][K] of 8 bytes.  On one domain all of it is
 * 0 and the plan is byte for byte the one-domain plan (test_ht_deepseek_prefill_8_ranks). */
static void test_ht_across_nodes(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    /* DeepSeek-V3 prefill on 16 ranks in 2 nodes of 8 (T = 4096, K = 8, H = 7168, E = 256):
     *   relay row a16(14336 + 8 * 8) = 14400, partial a16(7168 * 4 + 8 * 4) = 28704;
     *   maps 16 * 4096 * 8 * 4 = 2097152, staging 4096 * 14400 = 58982400,
     *   relay rows and partials for the 1 other node: relay rows 4096 * 14400 = 58982400,
     *   partials out and in 4096 * 28704 = 117571584 each, words 2 * 16 * 8 = 256; 96 signals
     *   (4 contexts * 8 bytes each: 3072); handle 524576 (one domain) + 4096 * 8 * 8 = 786720
     *   -> 256-aligned 786944. */
    ht_net_shape_t x = {.R = 16, .A = 8, .T = 4096, .K = 8, .H = 7168, .E = 256};
    ht_net_expect_t e = ht_net_expect(&x);
    assert_int_equal(e.relay_row, 14400);
    assert_int_equal(e.partial, 28704);
    assert_int_equal(e.maps, 2097152);
    assert_int_equal(e.stage, 58982400);
    assert_int_equal(e.relay, 58982400);
    assert_int_equal(e.partial_out, 117571584);
    assert_int_equal(e.words, 256);
    assert_int_equal(e.handle, 786944);
    check_ht_net(&x, groups, 1, 0, 0, "R 16, 2 nodes of 8");
    {
        /* The symmetric total: the one-domain regions (1885471744 = the same 16 ranks in one
         * domain), then the new ones (each a 256 multiple) and the network signals. */
        ncclxTeam_t nodes = team_of(16, 2), one = team_of(16, 2);
        one.lsa_size = 16;
        ncclxPlanSizes_t across = sizes_of(groups, 1, 0, &nodes);
        ncclxPlanSizes_t inside = sizes_of(groups, 1, 0, &one);
        assert_int_equal(inside.total[NCCLX_MEM_SYMMETRIC],
                         131072ull + 1024ull + 1879048192ull + 4194304ull + 2097152ull);
        assert_int_equal(inside.per_handle[NCCLX_MEM_DEVICE], 524800);
        assert_int_equal(across.total[NCCLX_MEM_SYMMETRIC],
                         1885471744ull + 2097152ull + 58982400ull + 58982400ull + 2 * 117571584ull +
                             256ull + 96ull * 4 * 8);
        assert_int_equal(across.total[NCCLX_MEM_SYMMETRIC], 2240680192ull);
    }
    /* 8 ranks in 4 nodes of 2: relay rows and partials for the 3 other nodes; maps 8 * 4096 *
     * 32 = 1048576, staging 58982400, relay rows 3 * 58982400 = 176947200, partials 3 * 4096 *
     * 28704 = 352714752 each, words 128; 48 signals; handle 393824 + 3 * 4096 * 64 = 1180256 ->
     * 1180416. */
    x = (ht_net_shape_t){.R = 8, .A = 2, .T = 4096, .K = 8, .H = 7168, .E = 256};
    e = ht_net_expect(&x);
    assert_int_equal(e.maps, 1048576);
    assert_int_equal(e.relay, 176947200);
    assert_int_equal(e.partial_in, 352714752);
    assert_int_equal(e.words, 128);
    assert_int_equal(e.handle, 1180416);
    check_ht_net(&x, groups, 1, 0, 0, "R 8, 4 nodes of 2");
    /* 8 domains of one rank. */
    x.A = 1;
    check_ht_net(&x, groups, 1, 0, 0, "R 8, 8 nodes of 1");
    /* An odd shape: K = 3, H = 640, T = 5, E = 8 (L = 1): relay row a16(1280 + 24) = 1312,
     * partial a16(2560 + 12) = 2576; the relay piece 1 * 5 * 3 * 8 = 120. */
    g.max_dispatch_tokens_per_rank = 5;
    g.max_topk = 3;
    g.hidden = 640;
    g.num_experts = 8;
    g.expert_alignment = 0;
    x = (ht_net_shape_t){.R = 8, .A = 4, .T = 5, .K = 3, .H = 640, .E = 8};
    e = ht_net_expect(&x);
    assert_int_equal(e.relay_row, 1312);
    assert_int_equal(e.partial, 2576);
    check_ht_net(&x, groups, 1, 0, 0, "odd shape, 2 nodes of 4");
    /* After an LL group with a mask on the same team: its 6 * R signals come first. */
    {
        ncclxEpGroupPlan_t ll = ll_group();
        const ncclxEpGroupPlan_t *both[] = {&ll, &g};
        ll.num_experts = 8;
        check_ht_net(&x, both, 2, 1, 6 * 8, "after an LL group");
    }
    /* One domain: no network region, no relay piece, no signal; the group's offsets are
     * NCCLX_NO_REGION and the dimensions say lsa = R, nodes = 1. */
    g = ht_group();
    x = (ht_net_shape_t){.R = 8, .A = 8, .T = 4096, .K = 8, .H = 7168, .E = 256};
    e = ht_net_expect(&x);
    assert_int_equal(e.handle, 393984); /* test_ht_deepseek_prefill_8_ranks */
    check_ht_net(&x, groups, 1, 0, 0, "one domain of 8");
    {
        ncclxTeam_t one = team_of(8, 1);
        ncclxPlan_t plan = NCCLX_PLAN_INIT;
        char buf[8192] = {0};
        ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &one);
        assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 942801408ull);
        assert_int_equal(s.total[NCCLX_MEM_DEVICE], 797184ull);
        assert_int_equal(s.num_regions, 16);
        plan.num_ep_groups = 1;
        plan.ep_groups = groups;
        print_plan(&plan, &one, buf, sizeof(buf));
        assert_null(strstr(buf, "HT network"));
        assert_null(strstr(buf, "HT relay"));
        assert_null(strstr(buf, "HT partials"));
        /* Across nodes the print lists them, with their bytes. */
        one = team_of(16, 2);
        print_plan(&plan, &one, buf, sizeof(buf));
        assert_non_null(strstr(buf, "HT network maps"));
        assert_non_null(strstr(buf, "HT network staging"));
        assert_non_null(strstr(buf, "HT relay rows"));
        assert_non_null(strstr(buf, "58982400"));
        assert_non_null(strstr(buf, "HT partials out"));
        assert_non_null(strstr(buf, "HT partials in"));
        assert_non_null(strstr(buf, "117571584"));
        assert_non_null(strstr(buf, "HT network words"));
        assert_non_null(strstr(buf, "(2 x 786944)"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ht_across_nodes),
    };
    return cmocka_run_group_tests_name("plan_sizes_nodes", tests, NULL, NULL);
}
