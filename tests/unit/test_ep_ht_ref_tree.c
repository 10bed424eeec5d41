/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The summation order of the HT reference's combine (ncclx_ht_ref_combine): a binary tree over
 * ranks [0, P), P the smallest power of two >= R, of per-rank leaves (0.0f plus the rank's kept
 * rows, ascending expert), absent leaves skipped, +0.0f when none.  Each case is worked out by
 * hand on values (1, 1e8, -1e8: 1e8 + 1 rounds to 1e8 in float) where the tree and a
 * left-to-right fold over ranks differ, and the fold's value is checked to differ too.
 */
#include "ncclx_test.h"

#include <math.h>
#include <stdlib.h>

#include "ep_ht_ref_fixture.h"

#define ABSENT NAN /* a rank holding no row of the token */

/* 0.0f plus the present values, left to right (the order the tree replaces). */
static float fold(uint32_t R, const float *v)
{
    volatile float acc = 0.0f;
    for (uint32_t j = 0; j < R; j++) {
        if (!isnan(v[j])) {
            acc = acc + v[j];
        }
    }
    return acc;
}

/*
 * FLAT, E = R (expert j on rank j), hidden 2: rank 0's one token lists the experts of the ranks
 * whose v[j] is not ABSENT (descending, so that k order is not rank order); every other rank
 * has no token, so the token's row on rank j is row 0, which holds {v[j], 2 v[j]}.  Returns
 * rank 0's combined value, after checking that column 1 is twice it (bit for bit).
 */
static float flat_tree(uint32_t R, const float *v)
{
    float rows[MAX_R][2 * MAX_R], out[2] = {-1.0f, -1.0f};
    const float *expert_out[MAX_R];
    uint32_t n[MAX_R] = {1}, K = 0;
    for (uint32_t j = 0; j < R; j++) {
        K += !isnan(v[j]);
    }
    make_fixture(&fx, R, R, 1, 0, K > 0 ? K : 1, NCCLX_EP_LAYOUT_FLAT, n);
    for (uint32_t j = R, k = 0; j-- > 0;) {
        if (!isnan(v[j])) {
            fx.idx[0][k++] = j;
        }
    }
    for (uint32_t j = 0; j < R; j++) {
        for (uint32_t i = 0; i < 2 * MAX_R; i++) {
            rows[j][i] = 99.0f; /* never read */
        }
        rows[j][0] = isnan(v[j]) ? 99.0f : v[j];
        rows[j][1] = 2.0f * rows[j][0];
        expert_out[j] = rows[j];
    }
    route_all(&fx);
    for (uint32_t j = 0; j < R; j++) {
        assert_int_equal(fx.lay[j].rows, isnan(v[j]) ? 0 : 1);
    }
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 2, 0, out), 0);
    free_all(&fx);
    assert_true(out[1] == 2.0f * out[0] && signbit(out[1]) == signbit(out[0]));
    return out[0];
}

/* out is want, sign included; the fold over ranks gives something else. */
static void check_tree(uint32_t R, const float *v, float want)
{
    float got = flat_tree(R, v);
    if (got != want || signbit(got) != signbit(want)) {
        fail_msg("R=%u: got %.9g, want %.9g", R, (double)got, (double)want);
    }
    assert_true(fold(R, v) != want);
}

/* ((1 + 1e8) + (-1e8 + 1)) = 1e8 - 1e8 = 0; the fold gives ((1e8) - 1e8) + 1 = 1. */
static void test_tree_four_ranks(void **state)
{
    static const float v[4] = {1.0f, 1e8f, -1e8f, 1.0f};
    (void)state;
    check_tree(4, v, 0.0f);
}

/* (((1e8 + 1) + (-1e8 + 1)) + ((1 + 1) + (1 + 1))) = 0 + 4 = 4; the fold gives 5. */
static void test_tree_eight_ranks(void **state)
{
    static const float v[8] = {1e8f, 1.0f, -1e8f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
    (void)state;
    check_tree(8, v, 4.0f);
}

/* Absent leaves keep their places in the tree (the present leaves are not packed together). */
static void test_tree_absent_leaves(void **state)
{
    /* T(0,2) = 1, T(2,4) = 1e8 - 1e8 = 0: 1.  Fold, or a tree over the packed leaves
     * {1, 1e8, -1e8}: (1 + 1e8) - 1e8 = 0. */
    static const float v4[4] = {1.0f, ABSENT, 1e8f, -1e8f};
    /* T(0,4) = 1 (rank 1), T(4,8) = (1e8 + -1e8) + absent = 0: 1.  Fold: 0. */
    static const float v8[8] = {ABSENT, 1.0f, ABSENT, ABSENT, ABSENT, 1e8f, -1e8f, ABSENT};
    (void)state;
    check_tree(4, v4, 1.0f);
    check_tree(8, v8, 1.0f);
}

/* R not a power of two: the tree is over P = 8 ranks, ranks past R absent. */
static void test_tree_not_power_of_two(void **state)
{
    /* R=6: T(0,4) = 1, T(4,8) = (1e8 + -1e8) = 0: 1.  Fold: 0. */
    static const float v6[6] = {1.0f, ABSENT, ABSENT, ABSENT, 1e8f, -1e8f};
    /* R=7: T(0,4) = 1 + 1 = 2, T(4,8) = (1e8 + -1e8) + 3 = 3: 5.  Fold: 1e8 + 2 = 1e8, so 3. */
    static const float v7[7] = {1.0f, 1.0f, ABSENT, ABSENT, 1e8f, -1e8f, 3.0f};
    /* R=3 (P=4): (1e8 + 1) + -1e8 = 0, which the fold gives too. */
    static const float v3[3] = {1e8f, 1.0f, -1e8f};
    (void)state;
    check_tree(6, v6, 1.0f);
    check_tree(7, v7, 5.0f);
    assert_true(flat_tree(3, v3) == 0.0f);
}

/* One leaf is the result; a leaf starts from 0.0f, so a -0.0f row gives +0.0f. */
static void test_tree_single_leaf(void **state)
{
    static const float v4[4] = {ABSENT, ABSENT, 3.5f, ABSENT};
    static const float v1[1] = {-2.25f};
    static const float neg4[4] = {ABSENT, -0.0f, ABSENT, ABSENT};
    static const float neg2[2] = {-0.0f, -0.0f};
    float got;
    (void)state;
    assert_true(flat_tree(4, v4) == 3.5f);
    assert_true(flat_tree(1, v1) == -2.25f);
    got = flat_tree(4, neg4);
    assert_true(got == 0.0f && !signbit(got));
    got = flat_tree(2, neg2); /* +0.0f + +0.0f */
    assert_true(got == 0.0f && !signbit(got));
}

/* No leaf: +0.0f, whether the token routes nowhere or all its rows were dropped. */
static void test_tree_no_leaf(void **state)
{
    static const float none[4] = {ABSENT, ABSENT, ABSENT, ABSENT};
    float rows[2][2] = {{-5.0f, -5.0f}, {-5.0f, -5.0f}}, out = -1.0f;
    const float *expert_out[2] = {rows[0], rows[1]};
    float got;
    (void)state;
    got = flat_tree(4, none);
    assert_true(got == 0.0f && !signbit(got));
    /* R=2, E=2, S=1: both tokens hit expert 1; rank 0's takes rank 1's only row, rank 1's is
     * dropped, so rank 1's token has no leaf. */
    make_fixture(&fx, 2, 2, 1, 1, 1, NCCLX_EP_LAYOUT_FLAT, NULL);
    fx.idx[0][0] = 1;
    fx.idx[1][0] = 1;
    route_all(&fx);
    assert_int_equal(fx.lay[1].overflow, 1);
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 1, 1, &out), 0);
    assert_true(out == 0.0f && !signbit(out));
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 1, 0, &out), 0);
    assert_true(out == -5.0f);
    free_all(&fx);
}

/*
 * EXPERT_MAJOR, R=2, E=8 (L=4): a leaf sums its rank's rows from 0.0f one after another in
 * ascending expert, not as a tree over experts.  Rank 0's token lists experts 3, 0, 4, 2, 1
 * (rows 1e8, 4, 4, 4 on rank 0 by expert; -1e8 on rank 1).  leaf(0) = ((((0 + 1e8) + 4) + 4)
 * + 4) = 1e8 (each + 4 a tie to even), leaf(1) = -1e8: 0.  A tree over experts would give
 * (1e8 + 4) + (4 + 4) = 1e8 + 8 for leaf(0), so 8.
 */
static void test_tree_expert_major_leaf(void **state)
{
    static const int64_t list[5] = {3, 0, 4, 2, 1};
    float rows[2][8], out = -1.0f;
    const float *expert_out[2] = {rows[0], rows[1]};
    (void)state;
    make_fixture(&fx, 2, 8, 1, 8, 5, NCCLX_EP_LAYOUT_EXPERT_MAJOR, (const uint32_t[]){1, 0});
    for (uint32_t k = 0; k < 5; k++) {
        fx.idx[0][k] = list[k];
    }
    route_all(&fx);
    assert_int_equal(fx.lay[0].rows, 4); /* zones of experts 0..3: rows 0..3 */
    assert_int_equal(fx.lay[1].rows, 1); /* expert 4: row 0 */
    for (uint32_t i = 0; i < 8; i++) {
        rows[0][i] = rows[1][i] = 99.0f;
    }
    rows[0][0] = 1e8f;
    rows[0][1] = rows[0][2] = rows[0][3] = 4.0f;
    rows[1][0] = -1e8f;
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 1, 0, &out), 0);
    assert_true(out == 0.0f && !signbit(out));
    free_all(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_four_ranks),        cmocka_unit_test(test_tree_eight_ranks),
        cmocka_unit_test(test_tree_absent_leaves),     cmocka_unit_test(test_tree_not_power_of_two),
        cmocka_unit_test(test_tree_single_leaf),       cmocka_unit_test(test_tree_no_leaf),
        cmocka_unit_test(test_tree_expert_major_leaf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
