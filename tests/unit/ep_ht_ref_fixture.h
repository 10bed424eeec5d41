/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The cases of the HT reference's CPU tests (test_ep_ht_ref, test_ep_ht_ref_mxfp8): one case
 * with every rank's routing and layout, built by hand or drawn at random.  Header only: each
 * test program includes it once.
 */
#ifndef NCCLX_TEST_EP_HT_REF_FIXTURE_H_
#define NCCLX_TEST_EP_HT_REF_FIXTURE_H_

#include "ncclx_test.h"

#include <stdlib.h>

#include "ref/ep_ht_ref.h"

enum { MAX_R = 8, MAX_T = 128, MAX_K = 8, MAX_H = 2 };

/* One case: its routing and every rank's layout. */
typedef struct {
    ncclx_ht_ref_case_t c;
    ncclx_ht_ref_routing_t rt[MAX_R];
    int64_t idx[MAX_R][MAX_T * MAX_K];
    float w[MAX_R][MAX_T * MAX_K];
    ncclx_ht_ref_layout_t lay[MAX_R];
} fixture_t;

static fixture_t fx;

/* w(r, t, k) = 0.125 ((r + 1) 100 + (t + 1) 10 + k): exact in float, distinct per entry. */
static inline float weight_of(uint32_t r, uint32_t t, uint32_t k)
{
    return 0.125f * (float)((r + 1) * 100 + (t + 1) * 10 + k);
}

/* A case of R ranks with n[r] tokens each (T when n is NULL), weights w(r, t, k), topk_idx
 * all -1 (the test fills them in). */
static inline void make_fixture(fixture_t *f, uint32_t R, uint32_t E, uint32_t T, uint32_t S,
                                uint32_t K, uint32_t layout, const uint32_t *n)
{
    memset(f, 0, sizeof(*f));
    f->c = (ncclx_ht_ref_case_t){R, E, T, S, K, 0, layout, 0};
    for (uint32_t r = 0; r < R; r++) {
        for (uint32_t i = 0; i < T * K; i++) {
            f->idx[r][i] = -1;
            f->w[r][i] = weight_of(r, i / K, i % K);
        }
        f->rt[r] = (ncclx_ht_ref_routing_t){n != NULL ? n[r] : T, f->idx[r], f->w[r]};
    }
}

static inline void route_all(fixture_t *f)
{
    for (uint32_t r = 0; r < f->c.ranks; r++) {
        assert_int_equal(ncclx_ht_ref_layout_alloc(&f->c, &f->lay[r]), 0);
        assert_int_equal(ncclx_ht_ref_route(&f->c, f->rt, r, &f->lay[r]), 0);
    }
}

static inline void free_all(fixture_t *f)
{
    for (uint32_t r = 0; r < f->c.ranks; r++) {
        ncclx_ht_ref_layout_free(&f->lay[r]);
    }
}

static inline uint32_t lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

/* R=8, E=64, T=128, K=8; experts skewed toward low ids (the min of two draws) so that the
 * low ranks receive more than S and the high ranks less; 1 entry in 16 is invalid. */
static inline void make_random(fixture_t *f, uint32_t layout, uint32_t S, uint64_t seed)
{
    make_fixture(f, 8, 64, 128, S, 8, layout, NULL);
    for (uint32_t r = 0; r < 8; r++) {
        f->rt[r].num_tokens = 64 + lcg(&seed) % 65;
        for (uint32_t i = 0; i < f->rt[r].num_tokens * 8; i++) {
            int64_t a = lcg(&seed) % 64, b = lcg(&seed) % 64;
            if (lcg(&seed) % 16 == 0) {
                a = b = lcg(&seed) % 2 ? -1 : 64; /* invalid */
            }
            f->idx[r][i] = a < b ? a : b;
            f->w[r][i] = (float)(lcg(&seed) % 64) * 0.125f;
        }
    }
}

#endif /* NCCLX_TEST_EP_HT_REF_FIXTURE_H_ */
