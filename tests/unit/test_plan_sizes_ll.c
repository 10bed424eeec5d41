/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL plan sizing against docs/plan-sizing.md's formulas alone (not lib/plan/ep_dims.c): the
 * payload and message of each recipe, the combine rows of each layout, the dispatch expert
 * counts, the handle, and the symmetric and device totals of odd and bound shapes.
 */
#include "plan_sizes_fixture.h"

/* ---- Expectations from docs/plan-sizing.md alone (not from lib/plan/ep_dims.c) ---- */

/* What an LL group of one plan (no M2N) costs, by the documented formulas (its shape,
 * ll_shape_t, and the plan of it, ll_plan_of, are in plan_sizes_fixture.h). */
typedef struct {
    uint64_t P, M, rows, slot, counts, handle, symmetric, device;
} ll_expect_t;

static ll_expect_t ll_expect(const ll_shape_t *x)
{
    ll_expect_t e;
    uint64_t p = 0, off;
    const uint64_t S = (uint64_t)x->R * x->T;
    /* P: the widest of the enabled recipes' rows, a 16-byte multiple. */
    if (x->none) {
        p = (uint64_t)x->H * (x->fp32 ? 4 : 2);
    }
    if (x->quant_token_bytes > 0) {
        uint64_t q = a16(x->quant_token_bytes) + a16(x->quant_scale_bytes);
        p = q > p ? q : p;
    }
    if (x->fp8) {
        uint64_t f = a16(x->H) + a16((uint64_t)x->H / 128 * 4);
        p = f > p ? f : p;
    }
    e.P = a16(p);
    e.M = 16 + a16((uint64_t)x->K * 8) + e.P;
    e.rows = x->expert_major ? x->K : (x->K < x->R ? x->K : x->R);
    e.slot = a16((uint64_t)x->H * (x->fp32 ? 4 : 2));
    /* Expert-major: the dispatch expert counts, 2 buffers * R sources * L local experts int32. */
    e.counts = x->expert_major ? 2 * (uint64_t)x->R * (x->E / x->R) * 4 : 0;
    /* Symmetric: dispatch, combine, signals, mask words, dispatch expert counts, each on 256
     * bytes. */
    off = 2 * S * e.M;
    off = a256(off) + 2 * (uint64_t)x->T * e.rows * e.slot;
    off = a256(off) + 2 * (uint64_t)x->R * 16;
    if (x->mask) {
        off = a256(off) + (uint64_t)x->R * 20;
    }
    if (x->expert_major) {
        off = a256(off) + e.counts;
    }
    e.symmetric = off;
    /* Handle: idx, route, send and receive counts, received tokens; expert-major also the
     * expert rows, each entry's slot among the rank's tokens to its expert, and the rank's
     * tokens per expert. */
    e.handle = 2 * a16((uint64_t)x->T * x->K * 4) + 2 * a16((uint64_t)x->R * 4) + a16(S * 4) +
               (x->expert_major
                    ? a16(S * x->K * 4) + a16((uint64_t)x->T * x->K * 4) + a16((uint64_t)x->E * 4)
                    : 0);
    e.handle = a256(e.handle);
    /* Device (a one-node team: A = R): peer table, scratch, state, decisions, mask, handles. */
    off = (uint64_t)x->R * 8;
    off = a256(off) + 256;
    off = a256(off) + 256;
    if (x->mask) {
        off = a256(off) + 2 * (uint64_t)x->R * 8;
        off = a256(off) + (uint64_t)x->R * 4;
    }
    e.device = a256(off) + x->N * e.handle;
    return e;
}

static void check_ll_shape(const ll_shape_t *x, const char *what)
{
    ncclxEpGroupPlan_t g = ll_plan_of(x);
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(x->R, 1);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    ll_expect_t e = ll_expect(x);
    named_region_t c = {0, "dispatch expert counts", 0, 0};
    ncclx_ep_group_regions_t r = layout_group(groups, 1, &team, 0, &c);
    /* The dispatch expert counts: expert-major only, the group's last symmetric region. */
    if (c.bytes != e.counts || c.seen != (e.counts != 0) ||
        (e.counts == 0) != (r.dispatch_counts == NCCLX_NO_REGION) ||
        (e.counts != 0 && r.dispatch_counts + e.counts != e.symmetric)) {
        fail_msg("%s: dispatch expert counts %llu bytes (reserved %u times, offset %zu); the "
                 "documented formula gives %llu, ending at %llu",
                 what, (unsigned long long)c.bytes, c.seen, r.dispatch_counts,
                 (unsigned long long)e.counts, (unsigned long long)e.symmetric);
    }
    if (s.total[NCCLX_MEM_SYMMETRIC] != e.symmetric || s.total[NCCLX_MEM_DEVICE] != e.device ||
        s.per_handle[NCCLX_MEM_DEVICE] != e.handle) {
        fail_msg("%s: symmetric %llu device %llu handle %llu; the documented formulas give "
                 "%llu, %llu, %llu (P %llu, M %llu, %llu combine rows of %llu)",
                 what, (unsigned long long)s.total[NCCLX_MEM_SYMMETRIC],
                 (unsigned long long)s.total[NCCLX_MEM_DEVICE],
                 (unsigned long long)s.per_handle[NCCLX_MEM_DEVICE],
                 (unsigned long long)e.symmetric, (unsigned long long)e.device,
                 (unsigned long long)e.handle, (unsigned long long)e.P, (unsigned long long)e.M,
                 (unsigned long long)e.rows, (unsigned long long)e.slot);
    }
}

/* FP8 as the only recipe: the wire row is E4M3 bytes plus float32 scales, never the BF16 row
 * (NONE is off), and FP32 tokens widen the combine slot but not the payload. */
static void test_ll_fp8_only(void **state)
{
    (void)state;
    /* H = 7168: P = 7168 + a16(56 * 4 = 224) = 7392 (the BF16 row would be 14336);
     * M = 16 + 64 + 7392 = 7472; dispatch 2 * 8 * 128 * 7472 = 15302656;
     * combine 2 * 128 * 8 * 14336 = 29360128 at 15302656; signals 256 at 44662784;
     * dispatch expert counts 2 * 8 * 32 * 4 = 2048 at 44663040.  Handle: 4096 + 4096 + 2 * 32
     * + 4096 + recv_pos 32768 + expert_slot 4096 + expert_count 1024 = 50240 -> 50432. */
    ll_shape_t x = {
        .R = 8, .T = 128, .K = 8, .H = 7168, .E = 256, .N = 2, .expert_major = 1, .fp8 = 1};
    ll_expect_t e = ll_expect(&x);
    assert_int_equal(e.P, 7392);
    assert_int_equal(e.M, 7472);
    assert_int_equal(e.counts, 2ull * 8 * 32 * 4);
    assert_int_equal(e.symmetric, 15302656ull + 29360128ull + 256ull + 2048ull);
    assert_int_equal(e.handle, 50432);
    check_ll_shape(&x, "FP8 only, H 7168");
    /* H = 640: 5 scales of 4 bytes pad to 32: P = 672; K = 3: entries a16(24) = 32, M = 720;
     * dispatch expert counts 2 * 4 * 2 local experts * 4 = 64; handle 2 * 192 + 2 * 16 + 256
     * + recv_pos 768 + expert_slot 192 + expert_count 32 = 1664 -> 1792. */
    x = (ll_shape_t){
        .R = 4, .T = 16, .K = 3, .H = 640, .E = 8, .N = 1, .expert_major = 1, .fp8 = 1};
    e = ll_expect(&x);
    assert_int_equal(e.P, 672);
    assert_int_equal(e.M, 720);
    assert_int_equal(e.counts, 64);
    assert_int_equal(e.handle, 1792);
    check_ll_shape(&x, "FP8 only, H 640");
    /* With FP32 tokens enabled: the payload is still the FP8 row (672), the slot 640 * 4. */
    x.fp32 = 1;
    e = ll_expect(&x);
    assert_int_equal(e.P, 672);
    assert_int_equal(e.slot, 2560);
    check_ll_shape(&x, "FP8 only with FP32 tokens, H 640");
    /* Rank-major, with a mask, on 2 ranks: the other regions follow the same rules. */
    x = (ll_shape_t){
        .R = 2, .T = 5, .K = 7, .H = 1152, .E = 16, .N = 3, .rank_major = 1, .mask = 1, .fp8 = 1};
    check_ll_shape(&x, "FP8 only, rank-major, mask");
    /* FP8 and NONE: the wider BF16 row wins (P = 2304). */
    x.none = 1;
    e = ll_expect(&x);
    assert_int_equal(e.P, 2304);
    check_ll_shape(&x, "FP8 and NONE");
}

/* Rank-major combine: one pre-reduced row per (token, rank), min(K, R) rows per token; with
 * the expert-major layout also enabled, K rows (the expert-major receive needs them). */
static void test_ll_rank_major_rows(void **state)
{
    (void)state;
    /* K = 8 > R = 2: 2 rows.  T = 16, H = 1024 BF16 (slot 2048): combine 2 * 16 * 2 * 2048 =
     * 131072; M = 16 + 64 + 2048 = 2128, dispatch 2 * 2 * 16 * 2128 = 136192 (a multiple of
     * 256), signals 64. */
    ll_shape_t x = {.R = 2, .T = 16, .K = 8, .H = 1024, .E = 8, .N = 1, .rank_major = 1, .none = 1};
    ll_expect_t e = ll_expect(&x);
    assert_int_equal(e.rows, 2);
    assert_int_equal(e.counts, 0); /* no dispatch expert counts without expert-major */
    assert_int_equal(e.symmetric, 136192ull + 131072ull + 64ull);
    check_ll_shape(&x, "rank-major K 8 > R 2");
    /* K = 16 > R = 4, and R = 1 (one row whatever K). */
    x = (ll_shape_t){.R = 4,
                     .T = 32,
                     .K = 16,
                     .H = 2048,
                     .E = 64,
                     .N = 2,
                     .rank_major = 1,
                     .mask = 1,
                     .none = 1};
    check_ll_shape(&x, "rank-major K 16 > R 4");
    x = (ll_shape_t){.R = 1,
                     .T = 32,
                     .K = 16,
                     .H = 2048,
                     .E = 64,
                     .N = 2,
                     .rank_major = 1,
                     .fp32 = 1,
                     .none = 1};
    assert_int_equal(ll_expect(&x).rows, 1);
    check_ll_shape(&x, "rank-major K 16 > R 1");
    /* K = R and K < R: K rows. */
    x = (ll_shape_t){
        .R = 8, .T = 16, .K = 8, .H = 1024, .E = 64, .N = 1, .rank_major = 1, .none = 1};
    check_ll_shape(&x, "rank-major K 8 = R 8");
    x = (ll_shape_t){
        .R = 8, .T = 16, .K = 3, .H = 1024, .E = 64, .N = 1, .rank_major = 1, .none = 1};
    assert_int_equal(ll_expect(&x).rows, 3);
    check_ll_shape(&x, "rank-major K 3 < R 8");
    /* Both layouts, K > R: the expert-major K rows (combine 2 * 16 * 8 * 2048 = 524288 at
     * 136192), signals 64 at 660480, the dispatch expert counts 2 * 2 * 4 local experts * 4 = 64
     * at 660736; and the handle's expert rows, slots and counts: 512 + 512 + 16 + 16 + 128
     * + recv_pos 1024 + expert_slot 512 + expert_count 32 = 2752 -> 2816. */
    x = (ll_shape_t){.R = 2,
                     .T = 16,
                     .K = 8,
                     .H = 1024,
                     .E = 8,
                     .N = 1,
                     .expert_major = 1,
                     .rank_major = 1,
                     .none = 1};
    e = ll_expect(&x);
    assert_int_equal(e.rows, 8);
    assert_int_equal(e.counts, 64);
    assert_int_equal(e.symmetric, 136192ull + 524288ull + 256ull + 64ull);
    assert_int_equal(e.handle, 2816);
    check_ll_shape(&x, "both layouts K 8 > R 2");
    /* QUANT_FWD at both bounds (rank-major, K > R): P = 262144 + 65536 = 327680. */
    x = (ll_shape_t){.R = 2,
                     .T = 1024,
                     .K = 16,
                     .H = 65536,
                     .E = 16,
                     .N = 4,
                     .rank_major = 1,
                     .mask = 1,
                     .fp32 = 1,
                     .none = 1,
                     .quant_token_bytes = NCCLX_EP_MAX_TOKEN_BYTES,
                     .quant_scale_bytes = NCCLX_EP_MAX_SCALE_BYTES};
    e = ll_expect(&x);
    assert_int_equal(e.P, 327680);
    check_ll_shape(&x, "QUANT_FWD at the bounds, rank-major K 16 > R 2");
}

/* NONE next to QUANT_FWD: P is the wider of the two rows, whichever recipe comes later in the
 * sizing (here the BF16 row, 4096 bytes, over 1024 + 64 quantized). */
static void test_ll_quant_fwd_under_none(void **state)
{
    (void)state;
    ll_shape_t x = {.R = 4,
                    .T = 16,
                    .K = 4,
                    .H = 2048,
                    .E = 16,
                    .N = 1,
                    .expert_major = 1,
                    .none = 1,
                    .quant_token_bytes = 1024,
                    .quant_scale_bytes = 64};
    assert_int_equal(ll_expect(&x).P, 4096);
    check_ll_shape(&x, "QUANT_FWD narrower than NONE");
    /* And the other way round: the quantized row wins (8192 + 64). */
    x.quant_token_bytes = 8192;
    assert_int_equal(ll_expect(&x).P, 8256);
    check_ll_shape(&x, "QUANT_FWD wider than NONE");
}

/* The zero-copy output rows (docs/ep-ll.md, "Zero copy"): the widest output token row and
 * scale row over the enabled recipes (NONE: the widest dtype's row; QUANT_FWD: the planned
 * bytes; FP8: E4M3 bytes and a float32 per 128), each on its own, and none without zero copy. */
static void test_ll_zero_copy_rows(void **state)
{
    static const struct {
        uint32_t recipes, token_bytes, scale_bytes;
        size_t row, scale;
    } cases[] = {
        {NCCLX_EP_RECIPE_NONE, 0, 0, 14336, 0},
        {NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_FP8, 0, 0, 14336, 224},
        {NCCLX_EP_RECIPE_FP8, 0, 0, 7168, 224},
        /* QUANT_FWD rows wider than BF16, scales narrower than FP8's: each the widest. */
        {NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_FP8, 16384, 96, 16384,
         224},
        /* QUANT_FWD rows narrower, scales wider. */
        {NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_FP8, 4096, 512, 14336,
         512},
        {NCCLX_EP_RECIPE_QUANT_FWD, 16384, 96, 16384, 96},
        {NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_FP8, 4096, 96, 7168, 224},
    };
    ncclxTeam_t team = team_of(8, 1);
    ncclx_ep_dims_t d;
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ll_shape_t x = {.R = 8, .T = 128, .K = 8, .H = 7168, .E = 256, .N = 1, .expert_major = 1};
        ncclxEpGroupPlan_t g = ll_plan_of(&x);
        g.recipes = cases[i].recipes;
        g.max_token_bytes = cases[i].token_bytes;
        g.max_scale_bytes = cases[i].scale_bytes;
        g.zero_copy = 1;
        assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 0, &d));
        if (d.zero_copy_row_bytes != cases[i].row || d.zero_copy_scale_bytes != cases[i].scale) {
            fail_msg("case %zu: zero-copy rows of %zu bytes, scales of %zu; expected %zu, %zu", i,
                     d.zero_copy_row_bytes, d.zero_copy_scale_bytes, cases[i].row, cases[i].scale);
        }
        g.zero_copy = 0;
        assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 0, &d));
        assert_int_equal(d.zero_copy_row_bytes, 0);
        assert_int_equal(d.zero_copy_scale_bytes, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_fp8_only),
        cmocka_unit_test(test_ll_rank_major_rows),
        cmocka_unit_test(test_ll_quant_fwd_under_none),
        cmocka_unit_test(test_ll_zero_copy_rows),
    };
    return cmocka_run_group_tests_name("plan_sizes_ll", tests, NULL, NULL);
}
