/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Checks shared by the HT reference's hand-worked CPU tests (test_ep_ht_ref.c,
 * test_ep_ht_ref_drop.c): token values, an identity combine and its sums, the weight-gradient
 * round trip, a row's source.  Header only, after ep_ht_ref_fixture.h; each program includes
 * it once.
 */
#ifndef NCCLX_TEST_EP_HT_REF_CHECKS_H_
#define NCCLX_TEST_EP_HT_REF_CHECKS_H_

#include "ep_ht_ref_fixture.h"

/* The token value of source s * T + t: s T + t + 1 (the 4-rank fixtures' 4 r + i + 1). */
static float value_of(int32_t src)
{
    return (float)(src + 1);
}

/* Identity experts: expert_out[j][row, h] = (h + 1) * the row's token value (pads: 0); then
 * out[r] = rank r's combine, [n_r, MAX_H]. */
static float expert_rows[MAX_R][4 * MAX_R * MAX_T * MAX_H];
static float combined[MAX_R][MAX_T * MAX_H];

static void combine_identity(fixture_t *f)
{
    const float *rows[MAX_R];
    for (uint32_t j = 0; j < f->c.ranks; j++) {
        for (uint32_t row = 0; row < ncclx_ht_ref_slots(&f->c); row++) {
            int32_t src = row < f->lay[j].rows ? f->lay[j].row_source[row] : -1;
            for (uint32_t h = 0; h < MAX_H; h++) {
                expert_rows[j][row * MAX_H + h] = src < 0 ? 0.0f : value_of(src) * (float)(h + 1);
            }
        }
        rows[j] = expert_rows[j];
    }
    for (uint32_t r = 0; r < f->c.ranks; r++) {
        assert_int_equal(ncclx_ht_ref_combine(&f->c, f->rt, f->lay, rows, MAX_H, r, combined[r]),
                         0);
    }
}

/* Token t of rank r combined to times * its value. */
static void check_combined(const fixture_t *f, uint32_t r, uint32_t t, float times)
{
    float v = value_of((int32_t)(r * f->c.max_tokens + t));
    for (uint32_t h = 0; h < MAX_H; h++) {
        assert_true(combined[r][t * MAX_H + h] == times * v * (float)(h + 1));
    }
}

/* Backward combine's weights with the forward row weights fed back as gradients. */
static float grad_out[MAX_R][MAX_T * MAX_K];

static void weights_round_trip(fixture_t *f)
{
    const float *grad[MAX_R];
    for (uint32_t j = 0; j < f->c.ranks; j++) {
        grad[j] = f->lay[j].row_weights;
    }
    for (uint32_t r = 0; r < f->c.ranks; r++) {
        assert_int_equal(ncclx_ht_ref_combine_weights(&f->c, f->rt, f->lay, grad, r, grad_out[r]),
                         0);
    }
}

/* Row `row` of layout l holds the token of value v (0: a pad or unwritten row). */
static void check_source(const ncclx_ht_ref_layout_t *l, uint32_t row, int v)
{
    assert_int_equal(l->row_source[row], v - 1);
}

#endif /* NCCLX_TEST_EP_HT_REF_CHECKS_H_ */
