/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The CPU reference of EP dispatch/combine (tests/ref) against hand-computed values: a 2-rank
 * routing worked out on paper for both layouts, the recipes, invariants over random routings,
 * and the helpers that judge GPU outputs.  The GPU tests trust this reference, so every
 * expectation here is written down independently of its code (test_ep_ref_convert.c checks
 * the number conversions).
 */
#include "ncclx_test.h"

#include <math.h>
#include <stdlib.h>

#include "ref/ep_ref.h"

/* A case with round_scales, global_expert_ids and scale_bytes 0. */
static ncclx_ref_case_t make_case(uint32_t R, uint32_t E, uint32_t T, uint32_t K, uint32_t H,
                                  uint32_t layout, uint32_t recipe, ncclxDataType_t dtype)
{
    return (ncclx_ref_case_t){R, E, T, K, H, layout, recipe, 0, 0, dtype, 0};
}

/* ---- the 2-rank case worked out by hand ----
 * R=2, E=4 (rank 0: experts 0,1; rank 1: experts 2,3), T=3, K=2, H=8, FP32.
 *   rank 0: t0 -> {1, 3} (ranks 0, 1); t1 -> {2, 2} (rank 1, expert 2 twice); t2 -> none
 *   rank 1: t0 -> {0, -1} (rank 0);     t1 -> {3, 0} (ranks 1, 0)
 * Token (s, t) holds 100 s + 10 t + h at element h. */
enum { HR = 2, HE = 4, HT = 3, HK = 2, HH = 8 };
static const int64_t hand_idx0[] = {1, 3, 2, 2, -1, -1};
static const int64_t hand_idx1[] = {0, -1, 3, 0};
static const float hand_w0[] = {0.5f, 0.25f, 0.125f, 2.0f, 1.0f, 1.0f};
static const float hand_w1[] = {0.75f, 3.0f, 1.5f, -0.5f};
static float hand_tok0[3 * HH], hand_tok1[2 * HH];

static ncclx_ref_case_t hand_case(uint32_t layout, uint32_t global_ids,
                                  ncclx_ref_rank_input_t in[HR])
{
    ncclx_ref_case_t c = make_case(HR, HE, HT, HK, HH, layout, NCCLX_EP_RECIPE_NONE, NCCLX_FLOAT32);
    c.global_expert_ids = global_ids;
    for (int h = 0; h < HH; h++) {
        for (int t = 0; t < 3; t++) {
            hand_tok0[t * HH + h] = (float)(10 * t + h);
        }
        for (int t = 0; t < 2; t++) {
            hand_tok1[t * HH + h] = (float)(100 + 10 * t + h);
        }
    }
    in[0] = (ncclx_ref_rank_input_t){3, hand_idx0, hand_w0, hand_tok0, NULL};
    in[1] = (ncclx_ref_rank_input_t){2, hand_idx1, hand_w1, hand_tok1, NULL};
    return c;
}

/* Allocates a rank's outputs with every token byte set to 0xaa (the "untouched" mark). */
static void alloc_marked(const ncclx_ref_case_t *c, ncclx_ref_rank_dispatch_t *out)
{
    assert_int_equal(ncclx_ref_dispatch_alloc(c, out), 0);
    memset(out->out_tokens, 0xaa, ncclx_ref_out_rows(c) * ncclx_ref_token_row_bytes(c));
}

/* Row `row` of out holds token (s, t); or, with s < 0, was left untouched. */
static void check_row(const ncclx_ref_rank_dispatch_t *out, size_t row, int s, int t)
{
    const float *tok = (const float *)out->out_tokens + row * HH;
    for (int h = 0; h < HH; h++) {
        if (s < 0) {
            uint32_t bits;
            memcpy(&bits, &tok[h], sizeof(bits));
            assert_int_equal(bits, 0xaaaaaaaau);
        } else {
            assert_true(tok[h] == (float)(100 * s + 10 * t + h));
        }
    }
    assert_int_equal(out->row_valid[row], s >= 0);
}

static void check_topk(const ncclx_ref_rank_dispatch_t *out, size_t row, int64_t i0, int64_t i1,
                       float w0, float w1)
{
    assert_int_equal(out->out_topk_idx[row * HK], i0);
    assert_int_equal(out->out_topk_idx[row * HK + 1], i1);
    assert_true(out->out_topk_weights[row * HK] == w0);
    assert_true(out->out_topk_weights[row * HK + 1] == w1);
}

static void test_dispatch_rank_major_by_hand(void **state)
{
    (void)state;
    for (uint32_t global = 0; global <= 1; global++) {
        ncclx_ref_rank_input_t in[HR];
        ncclx_ref_rank_dispatch_t out[HR];
        ncclx_ref_case_t c = hand_case(NCCLX_EP_LAYOUT_RANK_MAJOR, global, in);
        int64_t g1 = global ? 2 : 0; /* rank 1's experts 2, 3 number 0, 1 locally */
        assert_int_equal(ncclx_ref_out_rows(&c), HR * HT);
        alloc_marked(&c, &out[0]);
        alloc_marked(&c, &out[1]);
        ncclx_ref_dispatch(&c, in, out);
        /* Rank 0 gets 0:t0 and 1:t0, 1:t1.  Rows are (source, i) = source * T + i. */
        assert_int_equal(out[0].out_counts[0], 1);
        assert_int_equal(out[0].out_counts[1], 2);
        check_row(&out[0], 0, 0, 0);
        check_row(&out[0], 1, -1, 0);
        check_row(&out[0], 2, -1, 0);
        check_row(&out[0], 3, 1, 0);
        check_row(&out[0], 4, 1, 1);
        check_row(&out[0], 5, -1, 0);
        check_topk(&out[0], 0, 1, -1, 0.5f, 0.0f);
        check_topk(&out[0], 3, 0, -1, 0.75f, 0.0f); /* the -1 entry: weight 0 */
        check_topk(&out[0], 4, -1, 0, 0.0f, -0.5f);
        /* Rank 1 gets 0:t0, 0:t1 (once, though it names expert 2 twice) and 1:t1. */
        assert_int_equal(out[1].out_counts[0], 2);
        assert_int_equal(out[1].out_counts[1], 1);
        check_row(&out[1], 0, 0, 0);
        check_row(&out[1], 1, 0, 1);
        check_row(&out[1], 2, -1, 0);
        check_row(&out[1], 3, 1, 1);
        check_row(&out[1], 4, -1, 0);
        check_topk(&out[1], 0, -1, g1 + 1, 0.0f, 0.25f);
        check_topk(&out[1], 1, g1, g1, 0.125f, 2.0f);
        check_topk(&out[1], 3, g1 + 1, -1, 1.5f, 0.0f);
        ncclx_ref_dispatch_free(&out[0]);
        ncclx_ref_dispatch_free(&out[1]);
    }
}

static void test_dispatch_expert_major_by_hand(void **state)
{
    ncclx_ref_rank_input_t in[HR];
    ncclx_ref_rank_dispatch_t out[HR];
    ncclx_ref_case_t c = hand_case(NCCLX_EP_LAYOUT_EXPERT_MAJOR, 0, in);
    (void)state;
    assert_int_equal(ncclx_ref_out_rows(&c), 2 * HR * HT); /* [L, R*T]: expert e at e * 6 */
    alloc_marked(&c, &out[0]);
    alloc_marked(&c, &out[1]);
    ncclx_ref_dispatch(&c, in, out);
    /* Expert 0: 1:t0, 1:t1.  Expert 1: 0:t0. */
    assert_int_equal(out[0].out_counts[0], 2);
    assert_int_equal(out[0].out_counts[1], 1);
    check_row(&out[0], 0, 1, 0);
    check_row(&out[0], 1, 1, 1);
    check_row(&out[0], 2, -1, 0);
    check_row(&out[0], 6, 0, 0);
    check_row(&out[0], 7, -1, 0);
    /* Expert 2: 0:t1 once (named twice).  Expert 3: 0:t0, 1:t1 in (source, token) order. */
    assert_int_equal(out[1].out_counts[0], 1);
    assert_int_equal(out[1].out_counts[1], 2);
    check_row(&out[1], 0, 0, 1);
    check_row(&out[1], 1, -1, 0);
    check_row(&out[1], 6, 0, 0);
    check_row(&out[1], 7, 1, 1);
    check_row(&out[1], 8, -1, 0);
    for (size_t row = 0; row < ncclx_ref_out_rows(&c); row++) {
        size_t valid = out[0].row_valid[row] + out[1].row_valid[row];
        assert_true(valid <= 2);
    }
    ncclx_ref_dispatch_free(&out[0]);
    ncclx_ref_dispatch_free(&out[1]);
}

/* The expert output of rank d at (row, h): exact in BF16, FP16 and FP32 (<= 8 bits). */
static double expert_value(int d, size_t row, int h)
{
    return 16.0 * d + (double)row + 0.25 * h;
}

static void fill_expert_out(ncclxDataType_t dtype, size_t rows, int d, void *buf)
{
    for (size_t row = 0; row < rows; row++) {
        for (int h = 0; h < HH; h++) {
            float v = (float)expert_value(d, row, h);
            size_t i = row * HH + h;
            if (dtype == NCCLX_FLOAT32) {
                ((float *)buf)[i] = v;
            } else {
                ((uint16_t *)buf)[i] = dtype == NCCLX_BFLOAT16 ? ncclx_ref_float_to_bf16(v)
                                                               : ncclx_ref_float_to_fp16(v);
            }
        }
    }
}

/* Expected sums, from the routing above (rows in brackets).  X_d(row) = expert_value. */
static double expected_combine(uint32_t layout, int s, int t, int h)
{
#define X(d, row) expert_value(d, row, h)
    if (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        switch (s * 10 + t) {
        case 0: /* expert 1 [1*6 + 0] on rank 0, expert 3 [6 + 0] on rank 1 */
            return fma(0.25, X(1, 6), 0.5 * X(0, 6));
        case 1: /* expert 2 [0] on rank 1, named twice */
            return fma(2.0, X(1, 0), 0.125 * X(1, 0));
        case 10: /* expert 0 [0] on rank 0 */
            return 0.75 * X(0, 0);
        case 11: /* expert 3 [6 + 1] on rank 1, then expert 0 [1] on rank 0 */
            return fma(-0.5, X(0, 1), 1.5 * X(1, 7));
        default:
            return 0.0;
        }
    }
    switch (s * 10 + t) {
    case 0: /* rank 0 [0*3 + 0], rank 1 [0*3 + 0] */
        return X(0, 0) + X(1, 0);
    case 1: /* rank 1 [0*3 + 1] */
        return X(1, 1);
    case 10: /* rank 0 [1*3 + 0] */
        return X(0, 3);
    case 11: /* rank 0 [1*3 + 1], rank 1 [1*3 + 0] */
        return X(0, 4) + X(1, 3);
    default:
        return 0.0;
    }
#undef X
}

static void test_combine_by_hand(void **state)
{
    static const uint32_t layouts[] = {NCCLX_EP_LAYOUT_EXPERT_MAJOR, NCCLX_EP_LAYOUT_RANK_MAJOR};
    static const ncclxDataType_t dtypes[] = {NCCLX_FLOAT32, NCCLX_BFLOAT16, NCCLX_FLOAT16};
    static float expert_out[HR][2 * HR * HT * HH];
    double result0[3 * HH], result1[2 * HH];
    double *const results[HR] = {result0, result1};
    (void)state;
    for (int l = 0; l < 2; l++) {
        for (int di = 0; di < 3; di++) {
            ncclx_ref_rank_input_t in[HR];
            ncclx_ref_case_t c = hand_case(layouts[l], 1, in);
            const void *const eo[HR] = {expert_out[0], expert_out[1]};
            for (int d = 0; d < HR; d++) {
                fill_expert_out(dtypes[di], ncclx_ref_out_rows(&c), d, expert_out[d]);
            }
            for (size_t i = 0; i < 3 * HH; i++) {
                result0[i] = NAN;
            }
            for (size_t i = 0; i < 2 * HH; i++) {
                result1[i] = NAN;
            }
            ncclx_ref_combine(&c, dtypes[di], in, eo, results);
            for (int s = 0; s < HR; s++) {
                for (int t = 0; t < (int)in[s].num_tokens; t++) {
                    for (int h = 0; h < HH; h++) {
                        double want = expected_combine(layouts[l], s, t, h);
                        assert_true(results[s][t * HH + h] == want);
                    }
                }
            }
            assert_true(result0[2 * HH] == 0.0); /* the token sent nowhere */
        }
    }
}

/*
 * The order of the sums shows where double rounding is not associative: one token of rank 0
 * names experts {2, 0, 1} (one per rank) and expert d's row holds X[d], all weights 1.
 * EXPERT_MAJOR adds in k order: (X2 + X0) + X1 = (1 + 2^60) - 2^60 = 0.  RANK_MAJOR adds in
 * rank order: (X0 + X1) + X2 = 0 + 1 = 1.
 */
static void test_combine_order(void **state)
{
    static const int64_t idx[] = {2, 0, 1};
    static const float w[] = {1.0f, 1.0f, 1.0f}, tok[] = {0.0f},
                       X[3][3] = {{0x1p60f, 0x1p60f, 0x1p60f},
                                  {-0x1p60f, -0x1p60f, -0x1p60f},
                                  {1.0f, 1.0f, 1.0f}};
    const void *const eo[3] = {X[0], X[1], X[2]};
    (void)state;
    for (uint32_t layout = 1; layout <= 2; layout++) {
        ncclx_ref_rank_input_t in[3] = {
            {1, idx, w, tok, NULL}, {0, idx, w, tok, NULL}, {0, idx, w, tok, NULL}};
        ncclx_ref_case_t c = make_case(3, 3, 1, 3, 1, layout, NCCLX_EP_RECIPE_NONE, NCCLX_FLOAT32);
        double r0 = NAN, r1 = NAN, r2 = NAN;
        double *const res[3] = {&r0, &r1, &r2};
        ncclx_ref_combine(&c, NCCLX_FLOAT32, in, eo, res);
        assert_true(r0 == (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? 0.0 : 1.0));
    }
}

/* ---- recipes ---- */

static void test_dispatch_fp8(void **state)
{
    enum { H = 512 };
    static const int64_t idx[] = {1, -1};
    static const float w[] = {1.0f, 1.0f};
    static uint16_t tok[2 * H];
    (void)state;
    /* Block 0: amax 448 (scale 1).  Block 1: amax 300 (scale 300/448, or 1 rounded up).
     * Block 2: zeros (scale 1e-4 / 448, codes 0).  Block 3: amax |-224| (scale 0.5). */
    memset(tok, 0, sizeof(tok));
    tok[0] = ncclx_ref_float_to_bf16(1.0f);
    tok[1] = ncclx_ref_float_to_bf16(-3.0f);
    tok[2] = ncclx_ref_float_to_bf16(448.0f);
    tok[128] = ncclx_ref_float_to_bf16(300.0f);
    tok[129] = ncclx_ref_float_to_bf16(-0x1p-9f);
    tok[384] = ncclx_ref_float_to_bf16(1.0f);
    tok[385] = ncclx_ref_float_to_bf16(-224.0f);
    for (uint32_t rounding = 0; rounding <= 1; rounding++) {
        ncclx_ref_case_t c = make_case(1, 2, 2, 1, H, NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                                       NCCLX_EP_RECIPE_FP8, NCCLX_BFLOAT16);
        ncclx_ref_rank_input_t in = {2, idx, w, tok, NULL};
        ncclx_ref_rank_dispatch_t out;
        const uint8_t *q;
        float scales[4];
        c.round_scales = rounding;
        assert_int_equal(ncclx_ref_token_row_bytes(&c), H);
        assert_int_equal(ncclx_ref_scale_row_bytes(&c), 4 * sizeof(float));
        assert_int_equal(ncclx_ref_dispatch_alloc(&c, &out), 0);
        ncclx_ref_dispatch(&c, &in, &out);
        assert_int_equal(out.out_counts[0], 0);
        assert_int_equal(out.out_counts[1], 1);      /* token 1 goes nowhere */
        q = (const uint8_t *)out.out_tokens + 2 * H; /* expert 1, slot 0: row 1 * R*T */
        memcpy(scales, (const uint8_t *)out.out_scales + 2 * sizeof(scales), sizeof(scales));
        assert_true(scales[0] == 1.0f);
        assert_true(scales[1] == (rounding ? 1.0f : 300.0f / 448.0f));
        assert_true(scales[2] == (rounding ? 0x1p-22f : 1e-4f / 448.0f));
        assert_true(scales[3] == 0.5f);
        assert_int_equal(q[0], 0x38);
        assert_int_equal(q[1], 0xc4);
        assert_int_equal(q[2], 0x7e);
        assert_int_equal(q[3], 0x00);
        assert_int_equal(q[128], rounding ? 0x79 : 0x7e); /* 300 -> 288 | 448 */
        /* -2^-9 / 1 is code -1; -2^-9 / (300/448) = -1.49 x 2^-9 rounds to code -1 too. */
        assert_int_equal(q[129], 0x81);
        assert_int_equal(q[256], 0x00);
        assert_int_equal(q[384], 0x40); /* 1 / 0.5 = 2 */
        assert_int_equal(q[385], 0xfe); /* -448 */
        assert_int_equal(out.row_valid[2], 1);
        ncclx_ref_dispatch_free(&out);
    }
}

static void test_dispatch_quant_fwd(void **state)
{
    enum { H = 32, S = 4 }; /* FP4X2: 16 bytes per row */
    static const int64_t idx[] = {0, 1, 1, 1};
    static const float w[] = {0.5f, 0.25f, 1.0f, 2.0f};
    uint8_t tok[2 * 16], sc[2 * S];
    ncclx_ref_case_t c = make_case(2, 2, 2, 2, H, NCCLX_EP_LAYOUT_RANK_MAJOR,
                                   NCCLX_EP_RECIPE_QUANT_FWD, NCCLX_FP4X2_E2M1);
    ncclx_ref_rank_input_t in[2] = {{2, idx, w, tok, sc}, {0, idx, w, tok, sc}};
    ncclx_ref_rank_dispatch_t out[2];
    (void)state;
    c.global_expert_ids = 1;
    c.scale_bytes = S;
    for (int i = 0; i < 32; i++) {
        tok[i] = (uint8_t)(7 * i + 1);
    }
    for (int i = 0; i < 2 * S; i++) {
        sc[i] = (uint8_t)(0xf0 + i);
    }
    assert_int_equal(ncclx_ref_token_row_bytes(&c), 16);
    assert_int_equal(ncclx_ref_scale_row_bytes(&c), S);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &out[0]), 0);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &out[1]), 0);
    ncclx_ref_dispatch(&c, in, out);
    assert_int_equal(out[0].out_counts[0], 1); /* t0 */
    assert_int_equal(out[1].out_counts[0], 2); /* t0 and t1 */
    assert_int_equal(out[1].out_counts[1], 0);
    assert_memory_equal(out[0].out_tokens, tok, 16);
    assert_memory_equal(out[0].out_scales, sc, S);
    assert_memory_equal(out[1].out_tokens, tok, 32);
    assert_memory_equal(out[1].out_scales, sc, 2 * S);
    assert_int_equal(out[1].out_topk_idx[2], 1);
    assert_int_equal(out[1].out_topk_idx[3], 1);
    assert_true(out[1].out_topk_weights[3] == 2.0f);
    ncclx_ref_dispatch_free(&out[0]);
    ncclx_ref_dispatch_free(&out[1]);
}

/* ---- random routings ---- */

static uint32_t lcg(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

typedef struct {
    ncclx_ref_case_t c;
    ncclx_ref_rank_input_t in[8];
    int64_t idx[8][16 * 8];
    float w[8][16 * 8];
    float tok[8][16 * 4];
    size_t rank_pairs, expert_pairs; /* (token, destination rank), (token, distinct expert) */
} random_case_t;

static void make_random(random_case_t *rc, uint32_t R, uint32_t L, uint32_t T, uint32_t K,
                        uint64_t *seed)
{
    rc->c = make_case(R, R * L, T, K, 4, NCCLX_EP_LAYOUT_EXPERT_MAJOR, NCCLX_EP_RECIPE_NONE,
                      NCCLX_FLOAT32);
    rc->rank_pairs = rc->expert_pairs = 0;
    for (uint32_t s = 0; s < R; s++) {
        uint32_t n = lcg(seed) % (T + 1);
        for (uint32_t t = 0; t < n; t++) {
            uint8_t rank_seen[8] = {0}, expert_seen[24] = {0};
            for (uint32_t k = 0; k < K; k++) {
                int64_t e = (int64_t)(lcg(seed) % (R * L + 1)) - 1;
                rc->idx[s][t * K + k] = e;
                rc->w[s][t * K + k] = (float)(lcg(seed) % 16) * 0.125f;
                if (e >= 0) {
                    rc->rank_pairs += !rank_seen[e / L];
                    rc->expert_pairs += !expert_seen[e];
                    rank_seen[e / L] = expert_seen[e] = 1;
                }
            }
            for (uint32_t h = 0; h < 4; h++) {
                rc->tok[s][t * 4 + h] = (float)(s * 1000 + t * 10 + h);
            }
        }
        rc->in[s] = (ncclx_ref_rank_input_t){n, rc->idx[s], rc->w[s], rc->tok[s], NULL};
    }
}

/* Every valid row is a token routed there, in strictly increasing (source, token) order. */
static void check_random_rows(const random_case_t *rc, const ncclx_ref_rank_dispatch_t *out,
                              uint32_t d)
{
    const ncclx_ref_case_t *c = &rc->c;
    uint32_t L = c->experts / c->ranks, lists = c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? 1 : L;
    size_t per_list = (size_t)c->ranks * c->max_tokens;
    for (uint32_t list = 0; list < lists; list++) {
        int64_t last = -1;
        for (size_t i = 0; i < per_list; i++) {
            size_t row = list * per_list + i;
            const float *tok = (const float *)out->out_tokens + row * 4;
            uint32_t s, t, hit = 0;
            if (!out->row_valid[row]) {
                continue;
            }
            s = (uint32_t)tok[0] / 1000;
            t = ((uint32_t)tok[0] % 1000) / 10;
            assert_true((int64_t)(s * 1000 + t) > last);
            last = s * 1000 + t;
            for (uint32_t k = 0; k < c->topk; k++) {
                int64_t e = rc->idx[s][t * c->topk + k];
                hit |= c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? e >= 0 && e / L == d
                                                               : e == (int64_t)(d * L + list);
            }
            assert_true(hit);
        }
    }
}

static void test_random_counts(void **state)
{
    static random_case_t rc;
    static const uint32_t Rs[] = {1, 2, 3, 8}, Ls[] = {1, 3}, Ts[] = {1, 5, 16}, Ks[] = {1, 3, 8};
    uint64_t seed = 12345;
    (void)state;
    for (uint32_t cfg = 0; cfg < 4 * 2 * 3 * 3 * 2; cfg++) { /* every (R, L, T, K, layout) */
        uint32_t R = Rs[cfg % 4], L = Ls[cfg / 4 % 2], layout = 1 + cfg / 72;
        ncclx_ref_rank_dispatch_t out[8];
        size_t total = 0, n_counts = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? L : R;
        make_random(&rc, R, L, Ts[cfg / 8 % 3], Ks[cfg / 24 % 3], &seed);
        rc.c.layout = layout;
        for (uint32_t d = 0; d < R; d++) {
            assert_int_equal(ncclx_ref_dispatch_alloc(&rc.c, &out[d]), 0);
        }
        ncclx_ref_dispatch(&rc.c, rc.in, out);
        for (uint32_t d = 0; d < R; d++) {
            for (size_t i = 0; i < n_counts; i++) {
                assert_true(out[d].out_counts[i] >= 0);
                total += (size_t)out[d].out_counts[i];
            }
            check_random_rows(&rc, &out[d], d);
            ncclx_ref_dispatch_free(&out[d]);
        }
        assert_int_equal(total,
                         layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? rc.expert_pairs : rc.rank_pairs);
    }
}

/* Combining the dispatched tokens themselves: EXPERT_MAJOR gives x * (sum of the routed
 * weights, in k order), RANK_MAJOR x * (number of destination ranks). */
static void test_random_round_trip(void **state)
{
    static random_case_t rc;
    static double results[8][16 * 4];
    uint64_t seed = 777;
    (void)state;
    for (int iter = 0; iter < 40; iter++) {
        uint32_t R = 1 + lcg(&seed) % 8, L = 1 + lcg(&seed) % 3, K = 1 + lcg(&seed) % 8;
        for (uint32_t layout = 1; layout <= 2; layout++) {
            ncclx_ref_rank_dispatch_t out[8];
            const void *eo[8];
            double *res[8];
            make_random(&rc, R, L, 16, K, &seed);
            rc.c.layout = layout;
            for (uint32_t d = 0; d < R; d++) {
                assert_int_equal(ncclx_ref_dispatch_alloc(&rc.c, &out[d]), 0);
                eo[d] = out[d].out_tokens;
                res[d] = results[d];
            }
            ncclx_ref_dispatch(&rc.c, rc.in, out);
            ncclx_ref_combine(&rc.c, NCCLX_FLOAT32, rc.in, eo, res);
            for (uint32_t s = 0; s < R; s++) {
                for (uint32_t t = 0; t < rc.in[s].num_tokens; t++) {
                    double factor = 0.0;
                    uint8_t seen[8] = {0};
                    for (uint32_t k = 0; k < K; k++) {
                        int64_t e = rc.idx[s][t * K + k];
                        if (e >= 0 && layout == 1) {
                            factor += rc.w[s][t * K + k];
                        } else if (e >= 0 && !seen[e / L]) {
                            factor += 1.0;
                            seen[e / L] = 1;
                        }
                    }
                    for (uint32_t h = 0; h < 4; h++) {
                        assert_true(results[s][t * 4 + h] == factor * rc.tok[s][t * 4 + h]);
                    }
                }
            }
            for (uint32_t d = 0; d < R; d++) {
                ncclx_ref_dispatch_free(&out[d]);
            }
        }
    }
}

/* ---- checks and comparisons ---- */

/* The check rejects c (with in) and names the field. */
static void expect_rejected(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in,
                            const char *needle)
{
    char why[200];
    assert_int_equal(ncclx_ref_case_check(c, in, why, sizeof(why)), -1);
    if (strstr(why, needle) == NULL) {
        fail_msg("'%s' does not name '%s'", why, needle);
    }
}

static void test_case_check(void **state)
{
    ncclx_ref_rank_input_t in[HR];
    ncclx_ref_case_t c = hand_case(NCCLX_EP_LAYOUT_RANK_MAJOR, 1, in), bad;
    static const int64_t out_of_range[] = {1, 4, 2, 2, -1, -1};
    (void)state;
    assert_int_equal(ncclx_ref_case_check(&c, in, NULL, 0), 0);
    bad = c;
    bad.experts = 5;
    expect_rejected(&bad, NULL, "experts=5");
    bad = c;
    bad.topk = 0;
    expect_rejected(&bad, NULL, "topk=0");
    bad = c;
    bad.recipe = NCCLX_EP_RECIPE_FP8; /* FP32 tokens, hidden 8 */
    expect_rejected(&bad, NULL, "recipe FP8");
    bad = c;
    bad.layout = NCCLX_EP_LAYOUT_FLAT;
    expect_rejected(&bad, NULL, "layout=4");
    in[1].num_tokens = 4;
    expect_rejected(&c, in, "in[1].num_tokens=4");
    in[1].num_tokens = 2;
    in[0].topk_idx = out_of_range;
    expect_rejected(&c, in, "in[0].topk_idx[0][1]=4");
}

static void copy_outputs(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *from,
                         ncclx_ref_rank_dispatch_t *to)
{
    size_t rows = ncclx_ref_out_rows(c);
    memcpy(to->out_tokens, from->out_tokens, rows * ncclx_ref_token_row_bytes(c));
    memcpy(to->out_counts, from->out_counts, HR * sizeof(int32_t));
    memcpy(to->out_topk_idx, from->out_topk_idx, rows * c->topk * sizeof(int64_t));
    memcpy(to->out_topk_weights, from->out_topk_weights, rows * c->topk * sizeof(float));
}

static void test_dispatch_diff(void **state)
{
    ncclx_ref_rank_input_t in[HR];
    ncclx_ref_case_t c = hand_case(NCCLX_EP_LAYOUT_RANK_MAJOR, 1, in);
    ncclx_ref_rank_dispatch_t ref[HR], got;
    char why[200];
    (void)state;
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &ref[0]), 0);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &ref[1]), 0);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &got), 0);
    ncclx_ref_dispatch(&c, in, ref);
    copy_outputs(&c, &ref[1], &got);
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref[1], &got, why, sizeof(why)), 0);
    ((uint8_t *)got.out_tokens)[2 * HH * 4] ^= 1; /* row 2: past source 0's count */
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref[1], &got, why, sizeof(why)), 0);
    ((uint8_t *)got.out_tokens)[HH * 4 + 5] ^= 1; /* row 1 (source 0, slot 1) byte 5 */
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref[1], &got, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "out_tokens row 1 (source 0, slot 1) byte 5"));
    got.out_counts[1] = 2;
    got.out_topk_idx[3 * HK] = 0;
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref[1], &got, why, sizeof(why)), 3);
    assert_non_null(strstr(why, "out_counts[1] = 2, expected 1"));
    copy_outputs(&c, &ref[1], &got);
    got.out_topk_weights[1] = -0.25f;
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref[1], &got, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "out_topk_weights row 0"));
    ncclx_ref_dispatch_free(&got);
    ncclx_ref_dispatch_free(&ref[0]);
    ncclx_ref_dispatch_free(&ref[1]);
}

static void test_dispatch_diff_fp8(void **state)
{
    static const int64_t idx[] = {0};
    static const float w[] = {1.0f};
    static uint16_t tok[128];
    ncclx_ref_case_t c = make_case(1, 1, 1, 1, 128, NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                                   NCCLX_EP_RECIPE_FP8, NCCLX_BFLOAT16);
    ncclx_ref_rank_input_t in = {1, idx, w, tok, NULL};
    ncclx_ref_rank_dispatch_t ref, got;
    char why[200];
    float scale;
    (void)state;
    tok[0] = 0x7fc0; /* NaN */
    tok[1] = ncclx_ref_float_to_bf16(2.0f);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &ref), 0);
    assert_int_equal(ncclx_ref_dispatch_alloc(&c, &got), 0);
    ncclx_ref_dispatch(&c, &in, &ref);
    assert_int_equal(((uint8_t *)ref.out_tokens)[0] & 0x7f, 0x7f);
    memcpy(got.out_tokens, ref.out_tokens, 128);
    memcpy(got.out_scales, ref.out_scales, sizeof(float));
    got.out_counts[0] = ref.out_counts[0];
    ((uint8_t *)got.out_tokens)[0] ^= 0x80; /* the other NaN code */
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref, &got, why, sizeof(why)), 0);
    ((uint8_t *)got.out_tokens)[1] = 0x7f; /* NaN where 2.0 / scale is expected */
    memcpy(&scale, got.out_scales, sizeof(scale));
    scale *= 2.0f;
    memcpy(got.out_scales, &scale, sizeof(scale));
    assert_int_equal(ncclx_ref_dispatch_diff(&c, &ref, &got, why, sizeof(why)), 2);
    assert_non_null(strstr(why, "out_tokens row 0 (local expert 0, slot 0) byte 1"));
    ncclx_ref_dispatch_free(&got);
    ncclx_ref_dispatch_free(&ref);
}

static void test_combine_diff(void **state)
{
    const double ref[3] = {1.0, 256.0, NAN};
    uint16_t got[3] = {0x3f81, 0x4380, 0x7fc0}; /* 1 + 2^-7 (one ulp), 256, NaN */
    float gotf[2] = {1.0f, 2.0f};
    char why[200];
    (void)state;
    assert_int_equal(ncclx_ref_combine_diff(NCCLX_BFLOAT16, got, ref, 3, why, sizeof(why)), 0);
    got[0] = 0x3f82; /* two ulps */
    got[2] = 0x3f80;
    assert_int_equal(ncclx_ref_combine_diff(NCCLX_BFLOAT16, got, ref, 3, why, sizeof(why)), 2);
    assert_non_null(strstr(why, "element 0"));
    assert_int_equal(ncclx_ref_combine_diff(NCCLX_FLOAT32, gotf, ref, 2, why, sizeof(why)), 1);
    assert_non_null(strstr(why, "element 1"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dispatch_rank_major_by_hand),
        cmocka_unit_test(test_dispatch_expert_major_by_hand),
        cmocka_unit_test(test_combine_by_hand),
        cmocka_unit_test(test_combine_order),
        cmocka_unit_test(test_dispatch_fp8),
        cmocka_unit_test(test_dispatch_quant_fwd),
        cmocka_unit_test(test_random_counts),
        cmocka_unit_test(test_random_round_trip),
        cmocka_unit_test(test_case_check),
        cmocka_unit_test(test_dispatch_diff),
        cmocka_unit_test(test_dispatch_diff_fp8),
        cmocka_unit_test(test_combine_diff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
