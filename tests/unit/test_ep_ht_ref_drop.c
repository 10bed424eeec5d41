/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The CPU reference of EP HT dispatch/combine (tests/ref/ep_ht_ref.c) past and at its receive
 * budget, against hand-computed layouts: drops of every token sent to one rank, drops in the
 * expert-major zone, and a receive area of exactly S rows (S - 1, S, S + 1 received) in both
 * layouts, with the true count reported and the dropped tokens' combine and weight gradients
 * zero.  Every expectation is written down independently of the reference's code.
 */
#include "ncclx_test.h"

#include <stdlib.h>

#include "ep_ht_ref_checks.h"

/* ---- drops ---- */

/* R=4, E=8, T=4, K=1, S=8: every token -> expert 0 (rank 0): 16 candidates, the first 8
 * (ranks 0 and 1) kept. */
static void test_drop_all_to_one(void **state)
{
    (void)state;
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;; layout = NCCLX_EP_LAYOUT_FLAT) {
        int expert_major = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
        make_fixture(&fx, 4, 8, 4, 8, 1, layout, NULL);
        for (uint32_t r = 0; r < 4; r++) {
            memset(fx.idx[r], 0, 4 * sizeof(int64_t));
        }
        route_all(&fx);
        assert_int_equal(fx.lay[0].recv_total, 16);
        assert_int_equal(fx.lay[0].rows, 8);
        assert_int_equal(fx.lay[0].overflow, 1);
        assert_int_equal(fx.lay[0].expert_counts[0], 8);
        assert_int_equal(fx.lay[0].expert_counts[1], 0);
        if (expert_major) { /* offsets [0, 8 (clamped 16), 8 (clamped 16)] */
            assert_int_equal(fx.lay[0].expert_offsets[0], 0);
            assert_int_equal(fx.lay[0].expert_offsets[1], 8);
            assert_int_equal(fx.lay[0].expert_offsets[2], 8);
        }
        for (uint32_t row = 0; row < 8; row++) {
            check_source(&fx.lay[0], row, (int)row + 1);
            assert_int_equal(fx.lay[0].row_expert[row], expert_major ? 0 : -1);
        }
        for (uint32_t m = 1; m < 4; m++) {
            assert_int_equal(fx.lay[m].recv_total, 0);
            assert_int_equal(fx.lay[m].rows, 0);
            assert_int_equal(fx.lay[m].overflow, 0);
            assert_int_equal(fx.lay[m].expert_counts[0], 0);
            check_source(&fx.lay[m], 0, 0);
        }
        combine_identity(&fx);
        weights_round_trip(&fx);
        for (uint32_t r = 0; r < 4; r++) {
            for (uint32_t t = 0; t < 4; t++) {
                check_combined(&fx, r, t, r < 2 ? 1.0f : 0.0f);
                assert_true(grad_out[r][t] == (r < 2 ? weight_of(r, t, 0) : 0.0f));
            }
        }
        free_all(&fx);
        if (!expert_major) {
            break;
        }
    }
}

/* EM, S=16, alignment 16: token i -> expert i % 2 (both on rank 0).  Expert 0's 8 tokens
 * pad to 16 rows (all of S); expert 1's zone (rows 16 .. 31) is dropped whole. */
static void test_drop_expert_major_zone(void **state)
{
    static const int zone0[8] = {1, 3, 5, 7, 9, 11, 13, 15};
    const ncclx_ht_ref_layout_t *l = &fx.lay[0];
    (void)state;
    make_fixture(&fx, 4, 8, 4, 16, 1, NCCLX_EP_LAYOUT_EXPERT_MAJOR, NULL);
    fx.c.alignment = 16;
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t i = 0; i < 4; i++) {
            fx.idx[r][i] = i % 2;
        }
    }
    route_all(&fx);
    assert_int_equal(l->recv_total, 32);
    assert_int_equal(l->rows, 16);
    assert_int_equal(l->overflow, 1);
    assert_int_equal(l->expert_counts[0], 16);
    assert_int_equal(l->expert_counts[1], 0);
    assert_int_equal(l->expert_offsets[0], 0);
    assert_int_equal(l->expert_offsets[1], 16);
    assert_int_equal(l->expert_offsets[2], 16);
    for (uint32_t row = 0; row < 16; row++) {
        check_source(l, row, row < 8 ? zone0[row] : 0);
        assert_int_equal(l->row_expert[row], 0);
        assert_true(l->row_weights[row] == (row < 8 ? weight_of(row / 2, row % 2 * 2, 0) : 0.0f));
    }
    for (uint32_t m = 1; m < 4; m++) {
        assert_int_equal(fx.lay[m].recv_total, 0);
        assert_int_equal(fx.lay[m].expert_offsets[2], 0);
    }
    combine_identity(&fx);
    weights_round_trip(&fx);
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t t = 0; t < 4; t++) {
            check_combined(&fx, r, t, t % 2 == 0 ? 1.0f : 0.0f);
            assert_true(grad_out[r][t] == (t % 2 == 0 ? weight_of(r, t, 0) : 0.0f));
        }
    }
    free_all(&fx);
}

/* ---- an exactly full receive area ---- */

/*
 * R=4, E=8 (L=2), T=4, K=1, S=8.  Rank 0 (experts 0 and 1) receives `hits` tokens, taken in
 * (source, token) order: the first 8 are all tokens of ranks 0 and 1, the 9th is rank 2's
 * token 0.  Token i of ranks 0 and 1 goes to expert
 * i % 2 (FLAT) or 0 (EXPERT_MAJOR, one zone).  The other tokens alternate between ranks 2 and
 * 3 (experts 4 and 6: never full).  hits = S - 1, S, S + 1: exactly at S nothing is
 * dropped and nothing is reported (TRAP has nothing to report, DROP nothing to drop); one
 * more is dropped, reported, and the true count says 9.
 */
static void fixture_full(fixture_t *f, uint32_t layout, uint32_t hits)
{
    make_fixture(f, 4, 8, 4, 8, 1, layout, NULL);
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t t = 0; t < 4; t++) {
            const uint32_t order = r * 4 + t; /* (source, token) order of the candidates */
            const int em = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
            f->idx[r][t] = order < hits ? (em ? 0 : t % 2) : 4 + 2 * (order % 2);
        }
    }
    route_all(f);
}

/* Routes rank m again into arrays with one guard entry past each documented size (S rows,
 * S * K, L, L + 1): a reference that writes past the receive area changes a guard. */
#define GUARD 0x5a5a5a5a
static void route_guarded(fixture_t *f, uint32_t m)
{
    const uint32_t S = ncclx_ht_ref_slots(&f->c), L = f->c.experts / f->c.ranks, K = f->c.topk;
    static int32_t counts[MAX_R * MAX_T + 1], offsets[MAX_R * MAX_T + 2];
    static int32_t source[MAX_R * MAX_T + 1], expert[MAX_R * MAX_T + 1];
    static int32_t ids[MAX_R * MAX_T * MAX_K + 1];
    static float weights[MAX_R * MAX_T * MAX_K + 1];
    const float wguard = -12345.0f;
    ncclx_ht_ref_layout_t g = {0, 0, 0, counts, offsets, source, expert, ids, weights};
    assert_true(S <= MAX_R * MAX_T && L <= MAX_R * MAX_T);
    counts[L] = offsets[L + 1] = source[S] = expert[S] = ids[S * K] = GUARD;
    weights[S * K] = wguard;
    assert_int_equal(ncclx_ht_ref_route(&f->c, f->rt, m, &g), 0);
    assert_int_equal(counts[L], GUARD);
    assert_int_equal(offsets[L + 1], GUARD);
    assert_int_equal(source[S], GUARD);
    assert_int_equal(expert[S], GUARD);
    assert_int_equal(ids[S * K], GUARD);
    assert_true(weights[S * K] == wguard);
    /* the same layout as the reference's own arrays */
    const ncclx_ht_ref_layout_t *l = &f->lay[m];
    assert_int_equal(g.recv_total, l->recv_total);
    assert_int_equal(g.rows, l->rows);
    assert_int_equal(g.overflow, l->overflow);
    assert_memory_equal(source, l->row_source, S * sizeof(int32_t));
    assert_memory_equal(expert, l->row_expert, S * sizeof(int32_t));
}

static void test_exactly_full_receive_area(void **state)
{
    (void)state;
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;; layout = NCCLX_EP_LAYOUT_FLAT) {
        const int em = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
        for (uint32_t hits = 7; hits <= 9; hits++) {
            const ncclx_ht_ref_layout_t *l = &fx.lay[0];
            fixture_full(&fx, layout, hits);
            assert_int_equal(ncclx_ht_ref_slots(&fx.c), 8);
            assert_int_equal(l->recv_total, hits); /* the true count, before any drop */
            assert_int_equal(l->rows, hits < 8 ? hits : 8);
            assert_int_equal(l->overflow, hits > 8); /* TRAP reports only past S */
            /* Every kept row in (source, token) order; an S - 1 area leaves its last row. */
            for (uint32_t row = 0; row < 8; row++) {
                check_source(l, row, row < hits ? (int)row + 1 : 0);
            }
            if (em) {
                assert_int_equal(l->expert_counts[0], hits < 8 ? hits : 8);
                assert_int_equal(l->expert_counts[1], 0);
                assert_int_equal(l->expert_offsets[1], hits < 8 ? hits : 8);
                assert_int_equal(l->expert_offsets[2], hits < 8 ? hits : 8);
            } else {
                /* rows 0 .. 7 alternate experts 0 and 1: 4 each once full */
                const uint32_t kept = hits < 8 ? hits : 8;
                assert_int_equal(l->expert_counts[0], (kept + 1) / 2);
                assert_int_equal(l->expert_counts[1], kept / 2);
            }
            /* Ranks 2 and 3 get the rest: never full. */
            assert_int_equal(fx.lay[2].recv_total + fx.lay[3].recv_total, 16 - hits);
            assert_int_equal(fx.lay[1].recv_total, 0);
            assert_int_equal(fx.lay[2].overflow | fx.lay[3].overflow, 0);
            route_guarded(&fx, 0);
            combine_identity(&fx);
            weights_round_trip(&fx);
            for (uint32_t r = 0; r < 4; r++) {
                for (uint32_t t = 0; t < 4; t++) {
                    /* Each token reaches one rank: kept (x 1) unless it is the 9th of rank 0. */
                    const int dropped = hits == 9 && r == 2 && t == 0;
                    check_combined(&fx, r, t, dropped ? 0.0f : 1.0f);
                    assert_true(grad_out[r][t] == (dropped ? 0.0f : weight_of(r, t, 0)));
                }
            }
            free_all(&fx);
        }
        if (!em) {
            break;
        }
    }
}

/* EXPERT_MAJOR padding exactly to S: alignment 4, expert 0 gets 3 tokens (a zone of 4 with one
 * pad row), expert 1 gets 4 or 5 (the rest alternate between ranks 2 and 3).  4: the padded total
 * is exactly S = 8, nothing is dropped or reported; 5: expert 1's zone pads to 8 rows, the true
 * count is 12, its rows past S are dropped and reported. */
static void test_expert_major_padding_to_full(void **state)
{
    (void)state;
    for (uint32_t e1 = 4; e1 <= 5; e1++) {
        const ncclx_ht_ref_layout_t *l = &fx.lay[0];
        make_fixture(&fx, 4, 8, 4, 8, 1, NCCLX_EP_LAYOUT_EXPERT_MAJOR, NULL);
        fx.c.alignment = 4;
        /* candidates in (source, token) order: 3 to expert 0, then e1 to expert 1 */
        for (uint32_t i = 0; i < 16; i++) {
            fx.idx[i / 4][i % 4] = i < 3 ? 0 : i < 3 + e1 ? 1 : 4 + 2 * (i % 2);
        }
        route_all(&fx);
        route_guarded(&fx, 0);
        assert_int_equal(l->recv_total, e1 == 4 ? 8 : 12);
        assert_int_equal(l->overflow, e1 == 5);
        assert_int_equal(l->rows, 8);
        assert_int_equal(l->expert_offsets[0], 0);
        assert_int_equal(l->expert_offsets[1], 4);
        assert_int_equal(l->expert_offsets[2], 8);
        assert_int_equal(l->expert_counts[0], 4);
        assert_int_equal(l->expert_counts[1], 4);
        for (uint32_t row = 0; row < 8; row++) {
            /* rows 0-2: tokens 1-3; row 3: expert 0's pad; rows 4-7: tokens 4-7 */
            check_source(l, row, row < 3 ? (int)row + 1 : row == 3 ? 0 : (int)row);
            assert_int_equal(l->row_expert[row], row < 4 ? 0 : 1);
        }
        combine_identity(&fx);
        for (uint32_t i = 0; i < 16; i++) {
            const int dropped = e1 == 5 && i == 7; /* the 5th token of expert 1: row 8 */
            check_combined(&fx, i / 4, i % 4, dropped ? 0.0f : 1.0f);
        }
        free_all(&fx);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drop_all_to_one),
        cmocka_unit_test(test_drop_expert_major_zone),
        cmocka_unit_test(test_exactly_full_receive_area),
        cmocka_unit_test(test_expert_major_padding_to_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
