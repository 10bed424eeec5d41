/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The CPU reference of EP HT dispatch/combine (tests/ref/ep_ht_ref.c) against hand-computed
 * layouts and sums: small routings worked out on paper for both layouts, the combine order, weight
 * gradients (repeated and invalid experts), empty ranks, and invariants over a random routing
 * (drops and a full receive area: test_ep_ht_ref_drop.c; the MXFP8 combine:
 * test_ep_ht_ref_mxfp8.c). The GPU tests trust this reference, so every expectation here is written
 * down independently of its code.
 */
#include "ncclx_test.h"

#include <stdlib.h>

#include "ep_ht_ref_fixture.h"

#include "ep_ht_ref_checks.h"

/* ---- fixture 1: R=4, E=8 (L=2), T=4, K=1; token i of rank r -> expert (4 r + i) % 8 ---- */

static const int flat_values[4][4] = {
    {1, 2, 9, 10}, {3, 4, 11, 12}, {5, 6, 13, 14}, {7, 8, 15, 16}};

static void fixture_one(fixture_t *f, uint32_t layout, uint32_t alignment)
{
    make_fixture(f, 4, 8, 4, 32, 1, layout, NULL);
    f->c.alignment = alignment;
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t i = 0; i < 4; i++) {
            f->idx[r][i] = (4 * r + i) % 8;
        }
    }
    route_all(f);
}

static void test_flat_by_hand(void **state)
{
    (void)state;
    for (uint32_t global = 0; global <= 1; global++) {
        make_fixture(&fx, 4, 8, 4, 32, 1, NCCLX_EP_LAYOUT_FLAT, NULL);
        for (uint32_t r = 0; r < 4; r++) {
            for (uint32_t i = 0; i < 4; i++) {
                fx.idx[r][i] = (4 * r + i) % 8;
            }
        }
        fx.c.global_ids = global;
        route_all(&fx);
        for (uint32_t m = 0; m < 4; m++) {
            const ncclx_ht_ref_layout_t *l = &fx.lay[m];
            assert_int_equal(l->recv_total, 4);
            assert_int_equal(l->rows, 4);
            assert_int_equal(l->overflow, 0);
            assert_int_equal(l->expert_counts[0], 2);
            assert_int_equal(l->expert_counts[1], 2);
            for (uint32_t row = 0; row < 4; row++) {
                check_source(l, row, flat_values[m][row]);
                /* Rows alternate between the rank's two experts: 2m, 2m+1 (local 0, 1). */
                assert_int_equal(l->row_ids[row], (global ? 2 * m : 0) + row % 2);
                assert_int_equal(l->row_expert[row], -1);
            }
            check_source(l, 4, 0);
            assert_int_equal(l->row_ids[4], -1);
            assert_true(l->row_weights[4] == 0.0f);
        }
        /* Rank 0's rows: tokens (0,0), (0,1), (2,0), (2,1). */
        assert_true(fx.lay[0].row_weights[0] == 13.75f);
        assert_true(fx.lay[0].row_weights[1] == 15.0f);
        assert_true(fx.lay[0].row_weights[2] == 38.75f);
        assert_true(fx.lay[0].row_weights[3] == 40.0f);
        free_all(&fx);
    }
}

static void test_expert_major_by_hand(void **state)
{
    /* Rank m: zone 0 (expert 2m) = {2m+1, 2m+9}, zone 1 (expert 2m+1) = {2m+2, 2m+10}. */
    static const int zones[4][4] = {{1, 9, 2, 10}, {3, 11, 4, 12}, {5, 13, 6, 14}, {7, 15, 8, 16}};
    (void)state;
    fixture_one(&fx, NCCLX_EP_LAYOUT_EXPERT_MAJOR, 0);
    for (uint32_t m = 0; m < 4; m++) {
        const ncclx_ht_ref_layout_t *l = &fx.lay[m];
        static const int32_t offsets[3] = {0, 2, 4};
        assert_int_equal(l->recv_total, 4);
        assert_int_equal(l->rows, 4);
        assert_int_equal(l->overflow, 0);
        for (uint32_t e = 0; e < 2; e++) {
            assert_int_equal(l->expert_counts[e], 2);
        }
        for (uint32_t e = 0; e < 3; e++) {
            assert_int_equal(l->expert_offsets[e], offsets[e]);
        }
        for (uint32_t row = 0; row < 4; row++) {
            check_source(l, row, zones[m][row]);
            assert_int_equal(l->row_expert[row], row / 2);
            assert_int_equal(l->row_ids[row], -1);
        }
    }
    /* Rank 0: (0,0) 13.75, (2,0) 38.75 | (0,1) 15, (2,1) 40. */
    assert_true(fx.lay[0].row_weights[0] == 13.75f);
    assert_true(fx.lay[0].row_weights[1] == 38.75f);
    assert_true(fx.lay[0].row_weights[2] == 15.0f);
    assert_true(fx.lay[0].row_weights[3] == 40.0f);
    free_all(&fx);

    /* Alignment 4: zones of 4 rows, the last two of each are zero pads. */
    fixture_one(&fx, NCCLX_EP_LAYOUT_EXPERT_MAJOR, 4);
    for (uint32_t m = 0; m < 4; m++) {
        const ncclx_ht_ref_layout_t *l = &fx.lay[m];
        static const int32_t offsets[3] = {0, 4, 8};
        const int values[8] = {zones[m][0], zones[m][1], 0, 0, zones[m][2], zones[m][3], 0, 0};
        assert_int_equal(l->recv_total, 8);
        assert_int_equal(l->rows, 8);
        assert_int_equal(l->overflow, 0);
        assert_int_equal(l->expert_counts[0], 4);
        assert_int_equal(l->expert_counts[1], 4);
        for (uint32_t e = 0; e < 3; e++) {
            assert_int_equal(l->expert_offsets[e], offsets[e]);
        }
        for (uint32_t row = 0; row < 8; row++) {
            check_source(l, row, values[row]);
            assert_int_equal(l->row_expert[row], row / 4);
            if (values[row] == 0) {
                assert_true(l->row_weights[row] == 0.0f);
            }
        }
        check_source(l, 8, 0);
        assert_int_equal(l->row_expert[8], -1);
    }
    free_all(&fx);
}

static void test_fixture_combine(void **state)
{
    static const uint32_t layouts[3] = {NCCLX_EP_LAYOUT_FLAT, NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                                        NCCLX_EP_LAYOUT_EXPERT_MAJOR};
    static const uint32_t aligns[3] = {0, 0, 4};
    (void)state;
    for (uint32_t i = 0; i < 3; i++) {
        fixture_one(&fx, layouts[i], aligns[i]);
        combine_identity(&fx);
        weights_round_trip(&fx);
        for (uint32_t r = 0; r < 4; r++) {
            for (uint32_t t = 0; t < 4; t++) {
                check_combined(&fx, r, t, 1.0f);
                assert_true(grad_out[r][t] == weight_of(r, t, 0));
            }
        }
        free_all(&fx);
    }
}

/* ---- K=2: T0 -> E0,E1; T1 -> E2,E3; T2 -> E4,E6; T3 -> E5,E7 on every rank ---- */

static void fixture_topk2(fixture_t *f, uint32_t layout)
{
    static const int64_t idx[8] = {0, 1, 2, 3, 4, 6, 5, 7};
    make_fixture(f, 4, 8, 4, 32, 2, layout, NULL);
    f->c.global_ids = 1;
    for (uint32_t r = 0; r < 4; r++) {
        memcpy(f->idx[r], idx, sizeof(idx));
    }
    route_all(f);
}

static void test_topk2(void **state)
{
    (void)state;
    fixture_topk2(&fx, NCCLX_EP_LAYOUT_FLAT);
    /* Ranks 0, 1: T0 resp. T1 of every rank (both experts in one row); ranks 2, 3: T2, T3. */
    assert_int_equal(fx.lay[0].rows, 4);
    assert_int_equal(fx.lay[1].rows, 4);
    assert_int_equal(fx.lay[2].rows, 8);
    assert_int_equal(fx.lay[3].rows, 8);
    assert_int_equal(fx.lay[0].expert_counts[0], 4);
    assert_int_equal(fx.lay[0].expert_counts[1], 4);
    assert_int_equal(fx.lay[2].expert_counts[0], 4);
    assert_int_equal(fx.lay[2].expert_counts[1], 4);
    for (uint32_t row = 0; row < 4; row++) {
        check_source(&fx.lay[0], row, 4 * (int)row + 1);
        check_source(&fx.lay[1], row, 4 * (int)row + 2);
        assert_int_equal(fx.lay[0].row_ids[row * 2], 0);
        assert_int_equal(fx.lay[0].row_ids[row * 2 + 1], 1);
        assert_int_equal(fx.lay[1].row_ids[row * 2], 2);
        assert_int_equal(fx.lay[1].row_ids[row * 2 + 1], 3);
    }
    for (uint32_t row = 0; row < 8; row++) { /* (0,2), (0,3), (1,2), (1,3), ... */
        int v = 4 * (int)(row / 2) + 3 + (int)(row % 2);
        check_source(&fx.lay[2], row, v);
        check_source(&fx.lay[3], row, v);
        assert_int_equal(fx.lay[2].row_ids[row * 2], row % 2 ? 5 : 4);
        assert_int_equal(fx.lay[3].row_ids[row * 2], row % 2 ? 7 : 6);
        assert_int_equal(fx.lay[2].row_ids[row * 2 + 1], -1);
        assert_true(fx.lay[2].row_weights[row * 2 + 1] == 0.0f);
    }
    /* Rank 0 row 0 = (0,0): w(0,0,0), w(0,0,1); rank 2 row 0 = (0,2) via k 0, rank 3's via k 1. */
    assert_true(fx.lay[0].row_weights[0] == 13.75f);
    assert_true(fx.lay[0].row_weights[1] == 13.875f);
    assert_true(fx.lay[2].row_weights[0] == 16.25f);
    assert_true(fx.lay[3].row_weights[0] == 16.375f);
    combine_identity(&fx);
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t t = 0; t < 4; t++) {
            check_combined(&fx, r, t, t < 2 ? 1.0f : 2.0f); /* T2, T3 meet two ranks */
        }
    }
    free_all(&fx);

    fixture_topk2(&fx, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    for (uint32_t m = 0; m < 4; m++) {
        assert_int_equal(fx.lay[m].recv_total, 8);
        assert_int_equal(fx.lay[m].expert_counts[0], 4);
        assert_int_equal(fx.lay[m].expert_counts[1], 4);
        assert_int_equal(fx.lay[m].expert_offsets[1], 4);
        assert_int_equal(fx.lay[m].expert_offsets[2], 8);
    }
    combine_identity(&fx);
    for (uint32_t r = 0; r < 4; r++) {
        for (uint32_t t = 0; t < 4; t++) {
            check_combined(&fx, r, t, 2.0f); /* two experts each */
        }
    }
    free_all(&fx);
}

/* ---- combine order: ascending rank (expert), not k order ---- */

/* One token listing experts 1, 2, 0 whose rows are 1e8, -1e8, 1: ascending order gives
 * (0 + 1 + 1e8) - 1e8 = 0 in float (1e8 + 1 rounds to 1e8); k order or descending order
 * would give 1. */
static void test_combine_order(void **state)
{
    static const float rows[3] = {1.0f, 1e8f, -1e8f}; /* expert 0, 1, 2 */
    const float *expert_out[3] = {&rows[0], &rows[1], &rows[2]};
    float out = -1.0f;
    (void)state;
    /* FLAT: R=3, E=3, one expert per rank; ranks 1 and 2 have no tokens. */
    make_fixture(&fx, 3, 3, 1, 0, 3, NCCLX_EP_LAYOUT_FLAT, (const uint32_t[]){1, 0, 0});
    fx.idx[0][0] = 1;
    fx.idx[0][1] = 2;
    fx.idx[0][2] = 0;
    route_all(&fx);
    assert_int_equal(ncclx_ht_ref_slots(&fx.c), 3);
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 1, 0, &out), 0);
    assert_true(out == 0.0f);
    free_all(&fx);
    /* EM: R=1, E=3: the zones of experts 0, 1, 2 are rows 0, 1, 2. */
    make_fixture(&fx, 1, 3, 1, 0, 3, NCCLX_EP_LAYOUT_EXPERT_MAJOR, NULL);
    fx.idx[0][0] = 1;
    fx.idx[0][1] = 2;
    fx.idx[0][2] = 0;
    route_all(&fx);
    assert_int_equal(fx.lay[0].rows, 1); /* S = R T = 1: experts 1, 2 dropped */
    fx.c.recv_slots = 3;
    free_all(&fx);
    route_all(&fx);
    assert_int_equal(fx.lay[0].rows, 3);
    expert_out[0] = rows;
    out = -1.0f;
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, 1, 0, &out), 0);
    assert_true(out == 0.0f);
    free_all(&fx);
}

/* ---- weight gradients ---- */

static void test_weights_round_trip(void **state)
{
    (void)state;
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;; layout = NCCLX_EP_LAYOUT_FLAT) {
        for (uint32_t K = 1; K <= 2; K++) {
            if (K == 1) {
                fixture_one(&fx, layout, 0);
            } else {
                fixture_topk2(&fx, layout);
            }
            weights_round_trip(&fx);
            for (uint32_t r = 0; r < 4; r++) {
                for (uint32_t i = 0; i < 4 * K; i++) {
                    assert_true(grad_out[r][i] == weight_of(r, i / K, i % K));
                }
            }
            free_all(&fx);
        }
        if (layout == NCCLX_EP_LAYOUT_FLAT) {
            break;
        }
    }
}

/*
 * R=2, E=8 (rank 0: experts 0..3, rank 1: 4..7), T=4, K=2.
 *   rank 0: t0 [3, 3]; t1 [-1, 5]; t2 [8, 2]; t3 [1000, 6]
 *   rank 1: t0 [6, 1]; t1 [5, 4]; t2 [-1, -1]  (3 tokens)
 * FLAT rank 0: (0,0) [3], (0,2) [2], (1,0) [1]; rank 1: (0,1) [5], (0,3) [6], (1,0) [6],
 * (1,1) [4, 5].  EM rank 0: e1 {(1,0)}, e2 {(0,2)}, e3 {(0,0)}: rows 0, 1, 2; rank 1: e4
 * {(1,1)} row 0, e5 {(0,1), (1,1)} rows 1, 2, e6 {(0,3), (1,0)} rows 3, 4.
 * Gradients G(j, row, p) = 1000 (j + 1) + 10 row + p.
 */
static void fixture_odd(fixture_t *f, uint32_t layout)
{
    static const int64_t idx0[8] = {3, 3, -1, 5, 8, 2, 1000, 6}, idx1[6] = {6, 1, 5, 4, -1, -1};
    make_fixture(f, 2, 8, 4, 0, 2, layout, (const uint32_t[]){4, 3});
    memcpy(f->idx[0], idx0, sizeof(idx0));
    memcpy(f->idx[1], idx1, sizeof(idx1));
    route_all(f);
}

static void grad_by_formula(fixture_t *f, float grad[2][16])
{
    const float *g[2] = {grad[0], grad[1]};
    uint32_t K = f->c.layout == NCCLX_EP_LAYOUT_FLAT ? 2 : 1;
    for (uint32_t j = 0; j < 2; j++) {
        for (uint32_t i = 0; i < 16; i++) {
            grad[j][i] = (float)(1000 * (j + 1) + 10 * (i / K) + i % K);
        }
    }
    for (uint32_t r = 0; r < 2; r++) {
        assert_int_equal(ncclx_ht_ref_combine_weights(&f->c, f->rt, f->lay, g, r, grad_out[r]), 0);
    }
}

static void check_grads(const float *got, const float *want, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            fail_msg("entry %u: got %g, want %g", i, (double)got[i], (double)want[i]);
        }
    }
}

static void test_weights_odd_flat(void **state)
{
    static const float want0[8] = {1000, 0, 0, 2000, 0, 1010, 0, 2010};
    static const float want1[6] = {2020, 1020, 2031, 2030, 0, 0};
    static const int32_t ids1[8] = {1, -1, 2, -1, 2, -1, 0, 1}; /* local ids on rank 1 */
    float grad[2][16];
    (void)state;
    fixture_odd(&fx, NCCLX_EP_LAYOUT_FLAT);
    assert_int_equal(fx.lay[0].rows, 3);
    assert_int_equal(fx.lay[1].rows, 4);
    check_source(&fx.lay[0], 0, 1);
    check_source(&fx.lay[0], 1, 3);
    check_source(&fx.lay[0], 2, 5); /* (1, 0) = 1 * 4 + 0 */
    assert_int_equal(fx.lay[0].row_ids[0], 3);
    assert_int_equal(fx.lay[0].row_ids[1], -1); /* the repeat of 3 takes no place */
    assert_true(fx.lay[0].row_weights[0] == weight_of(0, 0, 0));
    assert_true(fx.lay[0].row_weights[1] == 0.0f);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(fx.lay[1].row_ids[i], ids1[i]);
    }
    /* (1,1) lists 5 then 4: ids ascending [4, 5], weights follow their experts. */
    assert_true(fx.lay[1].row_weights[6] == weight_of(1, 1, 1));
    assert_true(fx.lay[1].row_weights[7] == weight_of(1, 1, 0));
    assert_int_equal(fx.lay[1].expert_counts[0], 1);
    assert_int_equal(fx.lay[1].expert_counts[1], 2);
    assert_int_equal(fx.lay[1].expert_counts[2], 2);
    assert_int_equal(fx.lay[1].expert_counts[3], 0);
    grad_by_formula(&fx, grad);
    check_grads(grad_out[0], want0, 8);
    check_grads(grad_out[1], want1, 6);
    /* Combine with rows G(j, row, 0): rank 1's t0 meets rank 0 row 2 and rank 1 row 2. */
    {
        static const float want_c0[4] = {1000, 2000, 1010, 2010}, want_c1[3] = {3040, 2030, 0};
        float rows[2][8], out[2][4];
        const float *g[2] = {rows[0], rows[1]};
        for (uint32_t j = 0; j < 2; j++) {
            for (uint32_t row = 0; row < 8; row++) {
                rows[j][row] = (float)(1000 * (j + 1) + 10 * row);
            }
        }
        for (uint32_t r = 0; r < 2; r++) {
            assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, g, 1, r, out[r]), 0);
        }
        check_grads(out[0], want_c0, 4);
        check_grads(out[1], want_c1, 3);
    }
    free_all(&fx);
}

static void test_weights_odd_expert_major(void **state)
{
    static const float want0[8] = {1020, 0, 0, 2010, 0, 1010, 0, 2030};
    static const float want1[6] = {2040, 1000, 2020, 2000, 0, 0};
    static const int32_t counts0[4] = {0, 1, 1, 1}, offsets0[5] = {0, 0, 1, 2, 3};
    static const int32_t counts1[4] = {1, 2, 2, 0}, offsets1[5] = {0, 1, 3, 5, 5};
    static const int sources1[5] = {6, 2, 6, 4, 5}; /* (1,1), (0,1), (1,1), (0,3), (1,0) */
    static const int32_t experts1[5] = {0, 1, 1, 2, 2};
    float grad[2][16];
    (void)state;
    fixture_odd(&fx, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    assert_int_equal(fx.lay[0].recv_total, 3);
    assert_int_equal(fx.lay[1].recv_total, 5);
    for (uint32_t e = 0; e < 4; e++) {
        assert_int_equal(fx.lay[0].expert_counts[e], counts0[e]);
        assert_int_equal(fx.lay[1].expert_counts[e], counts1[e]);
    }
    for (uint32_t e = 0; e < 5; e++) {
        assert_int_equal(fx.lay[0].expert_offsets[e], offsets0[e]);
        assert_int_equal(fx.lay[1].expert_offsets[e], offsets1[e]);
    }
    check_source(&fx.lay[0], 0, 5);
    check_source(&fx.lay[0], 1, 3);
    check_source(&fx.lay[0], 2, 1);
    assert_true(fx.lay[0].row_weights[2] == weight_of(0, 0, 0)); /* the first listing of 3 */
    for (uint32_t row = 0; row < 5; row++) {
        check_source(&fx.lay[1], row, sources1[row]);
        assert_int_equal(fx.lay[1].row_expert[row], experts1[row]);
    }
    assert_true(fx.lay[1].row_weights[0] == weight_of(1, 1, 1)); /* (1,1) listed 4 at k 1 */
    grad_by_formula(&fx, grad);
    check_grads(grad_out[0], want0, 8);
    check_grads(grad_out[1], want1, 6);
    /* Combine with rows G(j, row): rank 1's t0 = expert 1 (1000) + expert 6 (2040), t1 =
     * expert 4 (2000) + expert 5 (2020). */
    {
        static const float want_c0[4] = {1020, 2010, 1010, 2030}, want_c1[3] = {3040, 4020, 0};
        const float *g[2] = {grad[0], grad[1]};
        float out[2][4];
        for (uint32_t r = 0; r < 2; r++) {
            assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, g, 1, r, out[r]), 0);
        }
        check_grads(out[0], want_c0, 4);
        check_grads(out[1], want_c1, 3);
    }
    free_all(&fx);
}

/* ---- empty ranks, uneven token counts ---- */

/*
 * R=4, E=4 (one expert per rank), T=4, K=2, S=0 (R T = 16), n = [0, 3, 0, 2]:
 *   rank 1: t0 [0, 3]; t1 [-1, -1]; t2 [2, 2]      rank 3: t0 [1, -1]; t1 [3, 0]
 * Rank 0 gets (1,0), (3,1); rank 1 (3,0); rank 2 (1,2); rank 3 (1,0), (3,1).
 */
static void test_empty_ranks(void **state)
{
    static const int64_t idx1[6] = {0, 3, -1, -1, 2, 2}, idx3[4] = {1, -1, 3, 0};
    static const int first[4][2] = {{5, 14}, {13, 0}, {7, 0}, {5, 14}};
    static const uint32_t totals[4] = {2, 1, 1, 2};
    (void)state;
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;; layout = NCCLX_EP_LAYOUT_FLAT) {
        make_fixture(&fx, 4, 4, 4, 0, 2, layout, (const uint32_t[]){0, 3, 0, 2});
        memcpy(fx.idx[1], idx1, sizeof(idx1));
        memcpy(fx.idx[3], idx3, sizeof(idx3));
        route_all(&fx);
        assert_int_equal(ncclx_ht_ref_slots(&fx.c), 16);
        for (uint32_t m = 0; m < 4; m++) {
            assert_int_equal(fx.lay[m].recv_total, totals[m]);
            assert_int_equal(fx.lay[m].rows, totals[m]);
            assert_int_equal(fx.lay[m].expert_counts[0], totals[m]);
            check_source(&fx.lay[m], 0, first[m][0]);
            check_source(&fx.lay[m], 1, first[m][1]);
        }
        combine_identity(&fx);
        weights_round_trip(&fx);
        check_combined(&fx, 1, 0, 2.0f);
        check_combined(&fx, 1, 1, 0.0f); /* all -1 */
        check_combined(&fx, 1, 2, 1.0f); /* expert 2 twice: one row */
        check_combined(&fx, 3, 0, 1.0f);
        check_combined(&fx, 3, 1, 2.0f);
        {
            const float want1[6] = {
                weight_of(1, 0, 0), weight_of(1, 0, 1), 0, 0, weight_of(1, 2, 0), 0};
            const float want3[4] = {weight_of(3, 0, 0), 0, weight_of(3, 1, 0), weight_of(3, 1, 1)};
            check_grads(grad_out[1], want1, 6);
            check_grads(grad_out[3], want3, 4);
        }
        free_all(&fx);
        if (layout == NCCLX_EP_LAYOUT_FLAT) {
            break;
        }
    }
}

/* ---- a random routing: invariants ---- */

/* Whether token (s, t) of f names expert e (or, with e < 0, any expert of rank m). */
static int names(const fixture_t *f, uint32_t s, uint32_t t, uint32_t m, int64_t e)
{
    for (uint32_t k = 0; k < 8; k++) {
        int64_t x = f->idx[s][t * 8 + k];
        if (e >= 0 ? x == e : x >= 0 && x < 64 && x / 8 == m) {
            return 1;
        }
    }
    return 0;
}

static void check_random_flat(const fixture_t *f, uint32_t m, uint32_t S)
{
    const ncclx_ht_ref_layout_t *l = &f->lay[m];
    int64_t total = 0, last = -1, ids = 0, counted = 0;
    for (uint32_t s = 0; s < 8; s++) {
        for (uint32_t t = 0; t < f->rt[s].num_tokens; t++) {
            total += names(f, s, t, m, -1);
        }
    }
    assert_int_equal(l->recv_total, total);
    assert_int_equal(l->overflow, total > S);
    assert_int_equal(l->rows, total < S ? total : S);
    for (uint32_t row = 0; row < S; row++) {
        int32_t src = l->row_source[row];
        int64_t last_id = -1;
        if (row >= l->rows) {
            assert_int_equal(src, -1);
            continue;
        }
        assert_true(src > last);
        last = src;
        assert_true(names(f, (uint32_t)src / 128, (uint32_t)src % 128, m, -1));
        for (uint32_t p = 0; p < 8 && l->row_ids[row * 8 + p] >= 0; p++) {
            int64_t id = l->row_ids[row * 8 + p] + (int64_t)m * 8; /* local ids */
            assert_true(id > last_id);
            last_id = id;
            assert_true(names(f, (uint32_t)src / 128, (uint32_t)src % 128, m, id));
            ids++;
        }
    }
    for (uint32_t e = 0; e < 8; e++) {
        counted += f->lay[m].expert_counts[e];
    }
    assert_int_equal(counted, ids);
}

static void check_random_expert_major(const fixture_t *f, uint32_t m, uint32_t S, uint32_t A)
{
    const ncclx_ht_ref_layout_t *l = &f->lay[m];
    int64_t padded_total = 0, counted = 0;
    for (uint32_t e = 0; e < 8; e++) {
        int64_t count = 0, last = -1;
        int32_t off = l->expert_offsets[e], n = l->expert_counts[e];
        for (uint32_t s = 0; s < 8; s++) {
            for (uint32_t t = 0; t < f->rt[s].num_tokens; t++) {
                count += names(f, s, t, m, m * 8 + e);
            }
        }
        padded_total += (count + A - 1) / A * A;
        assert_int_equal(off, counted);
        assert_true(off + n <= (int32_t)S);
        for (int32_t row = off; row < off + n; row++) {
            int32_t src = l->row_source[row];
            assert_int_equal(l->row_expert[row], e);
            if (row - off >= count) {
                assert_int_equal(src, -1); /* a pad row */
                continue;
            }
            assert_true(src > last);
            last = src;
            assert_true(names(f, (uint32_t)src / 128, (uint32_t)src % 128, m, m * 8 + e));
        }
        if (off + n < (int32_t)S) {
            assert_int_equal(n, (count + A - 1) / A * A); /* not clamped */
        }
        counted += n;
    }
    assert_int_equal(l->expert_offsets[8], counted);
    assert_int_equal(l->rows, counted);
    assert_int_equal(l->recv_total, padded_total);
    assert_int_equal(l->overflow, padded_total > S);
    for (uint32_t row = l->rows; row < S; row++) {
        assert_int_equal(l->row_source[row], -1);
    }
}

static void test_random_invariants(void **state)
{
    static const uint32_t layouts[3] = {NCCLX_EP_LAYOUT_FLAT, NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                                        NCCLX_EP_LAYOUT_EXPERT_MAJOR};
    static const uint32_t Ss[3] = {600, 1000, 1000}, aligns[3] = {1, 1, 8};
    (void)state;
    for (uint32_t i = 0; i < 3; i++) {
        uint32_t overflows = 0;
        make_random(&fx, layouts[i], Ss[i], 2026);
        fx.c.alignment = aligns[i];
        route_all(&fx);
        for (uint32_t m = 0; m < 8; m++) {
            if (layouts[i] == NCCLX_EP_LAYOUT_FLAT) {
                check_random_flat(&fx, m, Ss[i]);
            } else {
                check_random_expert_major(&fx, m, Ss[i], aligns[i]);
            }
            overflows += (uint32_t)fx.lay[m].overflow;
        }
        /* The case exercises both: some ranks drop, some do not. */
        assert_true(overflows > 0 && overflows < 8);
        /* Fed back, each weight gradient is the entry's own weight or 0 (invalid, repeated or
         * dropped); an entry with a unique valid expert on a rank with no drop is its weight. */
        weights_round_trip(&fx);
        for (uint32_t r = 0; r < 8; r++) {
            for (uint32_t i2 = 0; i2 < fx.rt[r].num_tokens * 8; i2++) {
                int64_t e = fx.idx[r][i2];
                int kept = e >= 0 && e < 64 && !fx.lay[e / 8].overflow;
                for (uint32_t k = 0; kept && k < i2 % 8; k++) {
                    kept = fx.idx[r][i2 - i2 % 8 + k] != e;
                }
                assert_true(grad_out[r][i2] == fx.w[r][i2] || grad_out[r][i2] == 0.0f);
                if (kept) {
                    assert_true(grad_out[r][i2] == fx.w[r][i2]);
                }
            }
        }
        free_all(&fx);
    }
}

/* The size the GPU tests use: R=8, T=4096, K=8, E=256, every layout (well under a second). */
static void test_large_case(void **state)
{
    enum { R = 8, T = 4096, K = 8, E = 256 };
    ncclx_ht_ref_case_t c = {R, E, T, 0, K, 4, NCCLX_EP_LAYOUT_FLAT, 1};
    ncclx_ht_ref_routing_t rt[R];
    ncclx_ht_ref_layout_t lay[R];
    int64_t *idx = malloc(sizeof(int64_t) * R * T * K);
    float *w = malloc(sizeof(float) * R * T * K), *out = malloc(sizeof(float) * T * K);
    float *rows = calloc((size_t)R * T * K, sizeof(float)); /* FLAT grad_w is [S, K] */
    const float *expert_out[R];
    uint64_t seed = 99;
    (void)state;
    assert_non_null(idx);
    assert_non_null(w);
    assert_non_null(out);
    assert_non_null(rows);
    for (size_t i = 0; i < (size_t)R * T * K; i++) {
        idx[i] = lcg(&seed) % E;
        w[i] = 1.0f;
    }
    for (uint32_t r = 0; r < R; r++) {
        rt[r] = (ncclx_ht_ref_routing_t){T, idx + (size_t)r * T * K, w + (size_t)r * T * K};
        expert_out[r] = rows;
    }
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;; layout = NCCLX_EP_LAYOUT_FLAT) {
        int64_t rows_total = 0;
        c.layout = layout;
        for (uint32_t r = 0; r < R; r++) {
            assert_int_equal(ncclx_ht_ref_layout_alloc(&c, &lay[r]), 0);
            assert_int_equal(ncclx_ht_ref_route(&c, rt, r, &lay[r]), 0);
            rows_total += lay[r].rows;
        }
        assert_true(rows_total > 0);
        for (uint32_t r = 0; r < R; r++) {
            assert_int_equal(ncclx_ht_ref_combine(&c, rt, lay, expert_out, 1, r, out), 0);
            assert_int_equal(ncclx_ht_ref_combine_weights(&c, rt, lay, expert_out, r, out), 0);
        }
        for (uint32_t r = 0; r < R; r++) {
            ncclx_ht_ref_layout_free(&lay[r]);
        }
        if (layout == NCCLX_EP_LAYOUT_FLAT) {
            break;
        }
    }
    free(rows);
    free(out);
    free(w);
    free(idx);
}

static void test_bad_arguments(void **state)
{
    ncclx_ht_ref_layout_t l;
    char why[200];
    (void)state;
    make_fixture(&fx, 2, 8, 4, 0, 2, NCCLX_EP_LAYOUT_FLAT, NULL);
    assert_int_equal(ncclx_ht_ref_case_check(&fx.c, fx.rt, why, sizeof(why)), 0);
    assert_int_equal(ncclx_ht_ref_layout_alloc(&fx.c, &l), 0);
    assert_int_equal(ncclx_ht_ref_route(&fx.c, fx.rt, 2, &l), -1); /* rank out of range */
    fx.rt[1].num_tokens = 5;
    assert_int_equal(ncclx_ht_ref_case_check(&fx.c, fx.rt, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "routing[1].num_tokens=5"));
    assert_int_equal(ncclx_ht_ref_route(&fx.c, fx.rt, 0, &l), -1);
    fx.rt[1].num_tokens = 4;
    fx.c.experts = 7;
    assert_int_equal(ncclx_ht_ref_case_check(&fx.c, NULL, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "experts=7"));
    fx.c.experts = 8;
    fx.c.layout = NCCLX_EP_LAYOUT_RANK_MAJOR;
    assert_int_equal(ncclx_ht_ref_case_check(&fx.c, NULL, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "layout"));
    fx.c.layout = NCCLX_EP_LAYOUT_FLAT;
    fx.c.topk = NCCLX_HT_REF_MAX_TOPK + 1;
    assert_int_equal(ncclx_ht_ref_case_check(&fx.c, NULL, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "topk"));
    ncclx_ht_ref_layout_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_by_hand),     cmocka_unit_test(test_expert_major_by_hand),
        cmocka_unit_test(test_fixture_combine),  cmocka_unit_test(test_topk2),
        cmocka_unit_test(test_combine_order),    cmocka_unit_test(test_weights_round_trip),
        cmocka_unit_test(test_weights_odd_flat), cmocka_unit_test(test_weights_odd_expert_major),
        cmocka_unit_test(test_empty_ranks),      cmocka_unit_test(test_random_invariants),
        cmocka_unit_test(test_large_case),       cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
