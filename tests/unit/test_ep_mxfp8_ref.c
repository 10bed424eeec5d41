/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The MXFP8 quantizer reference (tests/ref/ep_mxfp8_ref.c) against expectations worked out by
 * hand from the rules in ../shared/specs/ht-facts.md section 11 and the host-model cases of
 * section 14 (IntegerRounding, ScaleInvariance, UnderflowFloor, DynamicRange, SignSymmetry),
 * plus non-finite, subnormal and zero blocks.
 *
 * Facts the expectations use:
 *  - c = fl(1/448): 1/448 = 2^-9 * 8/7 = 2^-9 * 1.001001001...b; the bits after the 23rd
 *    fraction bit are 1001..., above half an ulp, so c rounds up: c = (1 + d) / 448 with
 *    0 < d < 2^-24.  Hence fl(448 * 2^k * c) = 2^k (2^k (1 + d) is within half an ulp above),
 *    while the next float above 448 * 2^k, times c, lands above 2^k.
 *  - E4M3 steps: 2^-9 (subnormals, below 2^-6), then 8 values per binade (step 2 in [16, 32),
 *    4 in [32, 64), 16 in [128, 256), 32 in [256, 448]).
 */
#include "ncclx_test.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "ref/ep_mxfp8_ref.h"
#include "ref/ep_ref.h"

#define BLOCK NCCLX_REF_MXFP8_BLOCK

/* A block of zeros with v[0 .. count - 1] in front. */
static void fill_block(float *x, const float *v, size_t count)
{
    for (size_t i = 0; i < BLOCK; i++) {
        x[i] = i < count ? v[i] : 0.0f;
    }
}

/* Quantizes one block and decodes it again. */
static uint8_t quantize_one(const float *x, uint8_t *codes, float *out)
{
    uint8_t e;
    ncclx_ref_mxfp8_quantize(x, BLOCK, codes, &e);
    ncclx_ref_mxfp8_dequantize(codes, &e, BLOCK, out);
    return e;
}

static int same_bits(float a, float b)
{
    return ncclx_ref_float_bits(a) == ncclx_ref_float_bits(b);
}

/* 1. Every E8M0 code that a finite amax can give, its edges, 0, infinity and NaN. */
static void test_scale_codes(void **state)
{
    (void)state;
    /* e = 1 .. 246: 448 * 2^(e - 127) = 1.75 * 2^(e - 119) is a normal float up to 2^127. */
    for (int e = 1; e <= 246; e++) {
        float amax = ldexpf(448.0f, e - 127);
        assert_int_equal(ncclx_ref_mxfp8_scale(amax), e);
        assert_int_equal(ncclx_ref_mxfp8_scale(nextafterf(amax, INFINITY)), e + 1);
        assert_int_equal(ncclx_ref_mxfp8_scale(nextafterf(amax, 0.0f)), e); /* below: still e */
        assert_int_equal(ncclx_ref_mxfp8_scale(-amax), e);                  /* sign ignored */
    }
    /* 247 .. 254: FLT_MAX / 448 ~ 2^119.2, so 2^120 (e = 247) is the largest finite case;
     * only infinity reaches the cap. */
    assert_int_equal(ncclx_ref_mxfp8_scale(FLT_MAX), 247);
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1.fep127f), 247); /* largest BF16 */
    assert_int_equal(ncclx_ref_mxfp8_scale(INFINITY), 254);    /* field 255 capped */
    assert_int_equal(ncclx_ref_mxfp8_scale(-INFINITY), 254);
    assert_int_equal(ncclx_ref_mxfp8_scale(NAN), 254); /* bit rule; a block never gives it */
    assert_int_equal(ncclx_ref_mxfp8_scale(0.0f), 0);
    assert_int_equal(ncclx_ref_mxfp8_scale(-0.0f), 0);
    /* x subnormal (exponent field 0, fraction != 0) -> 1. */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1.cp-119f), 1);  /* 448 * 2^-127: x = 2^-127 */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1.cp-120f), 1);  /* x = 2^-128 */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1p-126f), 1);    /* smallest normal float */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1p-133f), 1);    /* smallest BF16 subnormal */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1.cp-142f), 1);  /* 224 * 2^-149: x = 2^-149 */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1.bep-142f), 0); /* 223 * 2^-149: x rounds to 0 */
    assert_int_equal(ncclx_ref_mxfp8_scale(0x1p-149f), 0);
    /* Powers of two between the edges: 1 / 448 -> 2^-8, 256 -> 1, 449 -> 2. */
    assert_int_equal(ncclx_ref_mxfp8_scale(1.0f), 119);
    assert_int_equal(ncclx_ref_mxfp8_scale(256.0f), 127);
    assert_int_equal(ncclx_ref_mxfp8_scale(224.0f), 126);
    assert_int_equal(ncclx_ref_mxfp8_scale(nextafterf(224.0f, INFINITY)), 127);
    assert_int_equal(ncclx_ref_mxfp8_scale(449.0f), 128);
    assert_int_equal(ncclx_ref_mxfp8_scale(512.0f), 128);

    /* amax over a block: NaN ignored, infinity wins, signs dropped. */
    {
        float x[BLOCK], nan_only[BLOCK];
        for (size_t i = 0; i < BLOCK; i++) {
            nan_only[i] = (i & 1) ? NAN : -NAN;
        }
        assert_true(same_bits(ncclx_ref_mxfp8_block_amax(nan_only, BLOCK), 0.0f));
        fill_block(x, (const float[]){NAN, -3.0f, 2.0f, NAN}, 4);
        assert_true(ncclx_ref_mxfp8_block_amax(x, BLOCK) == 3.0f);
        fill_block(x, (const float[]){NAN, -INFINITY, 2.0f}, 3);
        assert_true(ncclx_ref_mxfp8_block_amax(x, BLOCK) == INFINITY);
        fill_block(x, (const float[]){-0.0f}, 1);
        assert_true(same_bits(ncclx_ref_mxfp8_block_amax(x, BLOCK), 0.0f));
        assert_true(ncclx_ref_mxfp8_block_amax(x, 0) == 0.0f);
    }
}

/* The multipliers and decode scales on their bits. */
static void test_scale_floats(void **state)
{
    (void)state;
    assert_int_equal(ncclx_ref_float_bits(ncclx_ref_mxfp8_multiplier(254)),
                     0x00400000u); /* 2^-127 */
    assert_true(ncclx_ref_mxfp8_multiplier(253) == 0x1p-126f);
    assert_true(ncclx_ref_mxfp8_multiplier(127) == 1.0f);
    assert_true(ncclx_ref_mxfp8_multiplier(1) == 0x1p126f);
    assert_true(ncclx_ref_mxfp8_multiplier(0) == 0x1p127f);
    assert_true(same_bits(ncclx_ref_mxfp8_scale_float(0), 0.0f)); /* not 2^-127 */
    assert_true(ncclx_ref_mxfp8_scale_float(1) == 0x1p-126f);
    assert_true(ncclx_ref_mxfp8_scale_float(127) == 1.0f);
    assert_true(ncclx_ref_mxfp8_scale_float(254) == 0x1p127f);
    for (int e = 1; e <= 254; e++) { /* multiplier * scale = 1 exactly */
        assert_true((double)ncclx_ref_mxfp8_multiplier((uint8_t)e) *
                        (double)ncclx_ref_mxfp8_scale_float((uint8_t)e) ==
                    1.0);
    }
}

/* The scale code from its definition in exact arithmetic (double), on a stride through all
 * positive floats: e - 127 = the smallest k with amax <= 448 * 2^k, at least -126, and 0
 * when amax * c rounds to 0 (amax <= 223 * 2^-149, see test_scale_codes). */
static uint8_t scale_exact(float amax)
{
    int ex, k;
    if (amax <= 0x1.bep-142f) {
        return 0;
    }
    (void)frexp((double)amax, &ex);
    for (k = ex - 10; ldexp(448.0, k) < (double)amax; k++) {
    }
    return (uint8_t)(k + 127 < 1 ? 1 : k + 127);
}

static void test_scale_independent(void **state)
{
    (void)state;
    for (uint32_t u = 1; u < 0x7f800000u; u += 1021u) {
        float amax = ncclx_ref_bits_float(u);
        if (ncclx_ref_mxfp8_scale(amax) != scale_exact(amax)) {
            fail_msg("amax %a: code %u, exact %u", (double)amax, ncclx_ref_mxfp8_scale(amax),
                     scale_exact(amax));
        }
    }
    for (int k = -160; k <= 119; k++) { /* every boundary and its neighbours */
        float b = ldexpf(448.0f, k);
        float around[4] = {b, nextafterf(b, 0.0f), nextafterf(b, INFINITY),
                           nextafterf(nextafterf(b, INFINITY), INFINITY)};
        for (int i = 0; i < 4; i++) {
            assert_int_equal(ncclx_ref_mxfp8_scale(around[i]), scale_exact(around[i]));
        }
    }
}

/* A deterministic generator (xorshift32). */
static uint32_t next_random(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* 2. The scaled amax lies in (224, 448]; decoded values stay within 448 * scale and within
 * half an E4M3 step of their inputs. */
static void test_scaled_amax_range(void **state)
{
    uint32_t seed = 0x2545f491u;
    (void)state;
    for (int it = 0; it < 20000; it++) {
        float x[BLOCK], out[BLOCK];
        uint8_t codes[BLOCK], e;
        int spread = 1 + (int)(next_random(&seed) % 30u);
        int top = (int)(next_random(&seed) % 200u) - 90; /* 2^-90 .. 2^109 */
        for (size_t i = 0; i < BLOCK; i++) {
            uint32_t r = next_random(&seed);
            int ex = top - (int)(r % (uint32_t)spread);
            float m = 1.0f + (float)((r >> 8) & 0x7fu) / 128.0f; /* BF16 significand */
            x[i] = ldexpf((r >> 31) ? -m : m, ex);
        }
        e = quantize_one(x, codes, out);
        float amax = ncclx_ref_mxfp8_block_amax(x, BLOCK);
        float scale = ldexpf(1.0f, e - 127), scaled = amax / scale; /* exact */
        assert_true(e >= 1 && e <= 247);
        assert_true(scaled > 224.0f && scaled <= 448.0f);
        for (size_t i = 0; i < BLOCK; i++) {
            float q = out[i] / scale, v = x[i] / scale; /* exact: powers of two */
            /* half a step: 2^-10 below 2^-6, else 2^-4 of the value's binade */
            float half = fabsf(v) < 0x1p-6f ? 0x1p-10f : ldexpf(1.0f, ilogbf(v) - 4);
            assert_true(fabsf(q) <= 448.0f);
            assert_true(fabsf(q - v) <= half);
            if (fabsf(x[i]) == amax) { /* rounds to 224 at worst (224 is a code) */
                assert_true(fabsf(q) >= 224.0f);
            }
        }
    }
}

/* 3a. IntegerRounding: 17 .. 48, ties to the even code (step 2 below 32, 4 above). */
static const float integer_rounding[32] = {16, 18, 20, 20, 20, 22, 24, 24, 24, 26, 28,
                                           28, 28, 30, 32, 32, 32, 32, 36, 36, 36, 40,
                                           40, 40, 40, 40, 44, 44, 44, 48, 48, 48};

static void test_integer_rounding(void **state)
{
    float x[BLOCK], out[BLOCK];
    uint8_t codes[BLOCK], e;
    (void)state;
    for (int v = 17; v <= 48; v++) {
        /* With 448 beside it: e = 127, scale 1, the value is encoded as it is. */
        fill_block(x, (const float[]){448.0f, (float)v}, 2);
        e = quantize_one(x, codes, out);
        assert_int_equal(e, 127);
        assert_true(out[0] == 448.0f);
        assert_true(out[1] == integer_rounding[v - 17]);
        /* Alone: 17 .. 28 -> 2^-4 (e 123; 28/448 = 2^-4 exactly), 29 .. 48 -> 2^-3 (e 124);
         * the scaled value sits in the same place of a higher binade: same result. */
        fill_block(x, (const float[]){(float)v}, 1);
        e = quantize_one(x, codes, out);
        assert_int_equal(e, v <= 28 ? 123 : 124);
        assert_true(out[0] == integer_rounding[v - 17]);
        assert_true(same_bits(out[1], 0.0f));
    }
    /* All 32 in one block: amax 48 -> e 124 (x 8: 136 .. 384). */
    for (int i = 0; i < 32; i++) {
        x[i] = (float)(17 + i);
    }
    e = quantize_one(x, codes, out);
    assert_int_equal(e, 124);
    for (int i = 0; i < 32; i++) {
        assert_true(out[i] == integer_rounding[i]);
    }
    assert_int_equal(codes[0], 0x70);  /* 17 * 8 = 136 -> 128 = 2^7: exp 14, mant 0 */
    assert_int_equal(codes[31], 0x7c); /* 48 * 8 = 384 = 1.5 * 2^8: exp 15, mant 4 */
}

/* 3b. ScaleInvariance: x * 2^k gives the same codes with e + k, k in [-6, 6]. */
static void test_scale_invariance(void **state)
{
    float base[BLOCK], x[BLOCK], out[BLOCK];
    uint8_t base_codes[BLOCK], codes[BLOCK], e;
    (void)state;
    for (int i = 0; i < 32; i++) {
        base[i] = (i % 2) ? -(float)(17 + i) : (float)(17 + i); /* +-17 .. +-48 */
    }
    uint8_t e0 = quantize_one(base, base_codes, out);
    assert_int_equal(e0, 124); /* amax 48 */
    for (int k = -6; k <= 6; k++) {
        for (int i = 0; i < 32; i++) {
            x[i] = ldexpf(base[i], k);
        }
        e = quantize_one(x, codes, out);
        assert_int_equal(e, e0 + k);
        assert_memory_equal(codes, base_codes, BLOCK);
    }
}

/* 3c. UnderflowFloor: under amax 448 (scale 1), 1.5 * 2^-10 = 0.75 * 2^-9 rounds up to the
 * smallest subnormal 2^-9; under amax 512 (scale 2) it is 0.375 * 2^-9 and rounds to 0. */
static void test_underflow_floor(void **state)
{
    float x[BLOCK], out[BLOCK];
    uint8_t codes[BLOCK];
    (void)state;
    fill_block(x, (const float[]){448.0f, 0x3p-11f, -0x3p-11f}, 3);
    assert_int_equal(quantize_one(x, codes, out), 127);
    assert_int_equal(codes[1], 0x01);
    assert_int_equal(codes[2], 0x81);
    assert_true(out[1] == 0x1p-9f && out[2] == -0x1p-9f);
    fill_block(x, (const float[]){512.0f, 0x3p-11f, -0x3p-11f}, 3);
    assert_int_equal(quantize_one(x, codes, out), 128);
    assert_int_equal(codes[0], 0x78); /* 256 = 2^8: exp 15, mant 0 */
    assert_int_equal(codes[1], 0x00);
    assert_int_equal(codes[2], 0x80);
    assert_true(out[0] == 512.0f && same_bits(out[1], 0.0f) && same_bits(out[2], -0.0f));
}

/* 3d. SignSymmetry: -x has the same scale, codes with the sign bit flipped, -decoded. */
static void test_sign_symmetry(void **state)
{
    uint32_t seed = 0x9e3779b9u;
    (void)state;
    for (int it = 0; it < 2000; it++) {
        float x[BLOCK], y[BLOCK], out_x[BLOCK], out_y[BLOCK];
        uint8_t cx[BLOCK], cy[BLOCK];
        int top = (int)(next_random(&seed) % 60u) - 30;
        for (size_t i = 0; i < BLOCK; i++) {
            uint32_t r = next_random(&seed);
            x[i] = ldexpf((float)(r & 0xffu) - 128.0f, top - (int)((r >> 8) % 16u));
            y[i] = -x[i];
        }
        assert_int_equal(quantize_one(x, cx, out_x), quantize_one(y, cy, out_y));
        for (size_t i = 0; i < BLOCK; i++) {
            assert_int_equal(cy[i], cx[i] ^ 0x80);
            assert_true(same_bits(out_y[i], -out_x[i]));
        }
    }
}

/* 3e. DynamicRange: a spread of 2^10 (~1000) between representable values is exact; 2^20
 * flushes the small ones.  960 = 15 * 2^6 and 0.9375 = 15 * 2^-4: amax 960 -> scale 4
 * (960/448 = 2.14), 240 and 0.234375 = 1.875 * 2^-3 are codes.  Under amax 1 (scale 2^-8),
 * 2^-17 -> 2^-9 (a code), 2^-18 -> 2^-10 (tie with 0: 0), 2^-20 -> 2^-12 (0). */
static void test_dynamic_range(void **state)
{
    float x[BLOCK], out[BLOCK];
    uint8_t codes[BLOCK];
    (void)state;
    fill_block(x, (const float[]){960.0f, 0.9375f, -0.9375f, 480.0f, 1.875f, 0x1p-1f}, 6);
    assert_int_equal(quantize_one(x, codes, out), 129);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_true(same_bits(out[i], x[i]));
    }
    /* 2^17.8: 448 (scale 1) keeps every code down to 2^-9. */
    fill_block(x, (const float[]){448.0f, 0x1p-9f, 0x7p-9f, 0x1p-6f}, 4);
    assert_int_equal(quantize_one(x, codes, out), 127);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_true(same_bits(out[i], x[i]));
    }
    fill_block(x, (const float[]){1.0f, 0x1p-17f, 0x1p-18f, 0x1p-20f, -0x1p-20f}, 5);
    assert_int_equal(quantize_one(x, codes, out), 119);
    assert_true(out[0] == 1.0f);
    assert_true(out[1] == 0x1p-17f);
    assert_true(same_bits(out[2], 0.0f));
    assert_true(same_bits(out[3], 0.0f));
    assert_true(same_bits(out[4], -0.0f));
}

/* 4. Non-finite values, each block on its own. */
static void test_non_finite(void **state)
{
    float x[3 * BLOCK], out[3 * BLOCK];
    uint8_t codes[3 * BLOCK], e[3], alone_codes[BLOCK], alone_e;
    (void)state;
    /* Block 0: Inf -> e 254 (multiplier 2^-127): 1, -3, 2^116 (-> 2^-11) flush to +-0; 2^127
     * -> 1.0 is kept; Inf and -Inf saturate to +-448 and decode to +-448 * 2^127 = +-Inf. */
    fill_block(x, (const float[]){INFINITY, 1.0f, -3.0f, 0x1p116f, 0x1p127f, -INFINITY}, 6);
    /* Block 1: NaN; e from 100 (100/448 = 0.22 -> 2^-2, e 125): 100 * 4 = 400, a tie of
     * 384 | 416 -> 384 (even) -> 96; -7 * 4 = -28 is a code; NaN -> 0x7f -> NaN. */
    fill_block(x + BLOCK, (const float[]){NAN, 100.0f, -7.0f, -NAN}, 4);
    /* Block 2: ordinary values, unaffected by its neighbours. */
    fill_block(x + 2 * BLOCK, (const float[]){3.0f, -0.5f, 0.046875f}, 3);
    ncclx_ref_mxfp8_quantize(x, 3 * BLOCK, codes, e);
    ncclx_ref_mxfp8_dequantize(codes, e, 3 * BLOCK, out);

    assert_int_equal(e[0], 254);
    assert_int_equal(codes[0], 0x7e);
    assert_int_equal(codes[1], 0x00);
    assert_int_equal(codes[2], 0x80);
    assert_int_equal(codes[3], 0x00);
    assert_int_equal(codes[4], 0x38);
    assert_int_equal(codes[5], 0xfe);
    assert_true(out[0] == INFINITY && out[5] == -INFINITY);
    assert_true(same_bits(out[1], 0.0f) && same_bits(out[2], -0.0f) && out[4] == 0x1p127f);

    assert_int_equal(e[1], 125);
    assert_int_equal(codes[BLOCK], 0x7f);
    assert_int_equal(codes[BLOCK + 3], 0x7f); /* any NaN: 0x7f */
    assert_true(isnan(out[BLOCK]) && isnan(out[BLOCK + 3]));
    assert_true(out[BLOCK + 1] == 96.0f && out[BLOCK + 2] == -7.0f);

    /* Block 2: 3/448 -> 2^-7 (e 120): 384, -64, 6 are codes. */
    alone_e = 0;
    ncclx_ref_mxfp8_quantize(x + 2 * BLOCK, BLOCK, alone_codes, &alone_e);
    assert_int_equal(e[2], 120);
    assert_int_equal(alone_e, 120);
    assert_memory_equal(codes + 2 * BLOCK, alone_codes, BLOCK);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_true(same_bits(out[2 * BLOCK + i], x[2 * BLOCK + i]));
    }

    /* A NaN-only block: amax 0 -> e 0; codes 0x7f decode to NaN (NaN * 0). */
    for (size_t i = 0; i < BLOCK; i++) {
        x[i] = NAN;
    }
    assert_int_equal(quantize_one(x, codes, out), 0);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_int_equal(codes[i], 0x7f);
        assert_true(isnan(out[i]));
    }
}

/* 5. BF16 subnormals (m * 2^-133, m = 1 .. 127): the block's x is subnormal, so e = 1 and the
 * multiplier is 2^126: m * 2^-7, exact when m has at most 4 significant bits. */
static void test_bf16_subnormals(void **state)
{
    uint16_t bf[BLOCK] = {0};
    uint8_t codes[BLOCK], e;
    float out[BLOCK];
    (void)state;
    /* 1, 3, 5, 9, 15, 0x78 = 120 = 15 * 8 (4 bits), 17 (5 bits: 1.0001b, a tie -> 16),
     * 0x7f = 127 (-> 128 = 2^7: 2^-126, the smallest normal float), -2, 0x8000 (-0). */
    static const uint16_t in[] = {0x0001, 0x0003, 0x0005, 0x0009, 0x000f,
                                  0x0078, 0x0011, 0x007f, 0x8002, 0x8000};
    static const float expect[] = {0x1p-133f,  0x3p-133f, 0x5p-133f, 0x9p-133f,  0xfp-133f,
                                   0x78p-133f, 0x1p-129f, 0x1p-126f, -0x2p-133f, -0.0f};
    memcpy(bf, in, sizeof(in));
    ncclx_ref_mxfp8_quantize_bf16(bf, BLOCK, codes, &e);
    ncclx_ref_mxfp8_dequantize(codes, &e, BLOCK, out);
    assert_int_equal(e, 1);
    assert_int_equal(codes[0], 0x04); /* 2^-7 = 4 * 2^-9, an E4M3 subnormal */
    assert_int_equal(codes[7], 0x38); /* 1.0 */
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        if (!same_bits(out[i], expect[i])) {
            fail_msg("bf16 0x%04x: %a, expected %a", in[i], (double)out[i], (double)expect[i]);
        }
    }
    /* The smallest BF16 alone: still e = 1 and exact. */
    memset(bf, 0, sizeof(bf));
    bf[5] = 0x0001;
    ncclx_ref_mxfp8_quantize_bf16(bf, BLOCK, codes, &e);
    ncclx_ref_mxfp8_dequantize(codes, &e, BLOCK, out);
    assert_int_equal(e, 1);
    assert_true(out[5] == 0x1p-133f);
    /* Beside a normal amax (1.0 -> e 119) they vanish: 2^-133 * 2^8 is far below 2^-10. */
    bf[0] = 0x3f80;
    ncclx_ref_mxfp8_quantize_bf16(bf, BLOCK, codes, &e);
    assert_int_equal(e, 119);
    assert_int_equal(codes[0], 0x78); /* 1.0 * 2^8 = 256 */
    assert_int_equal(codes[5], 0x00);
    /* Float subnormals below 224 * 2^-149 give e = 0: codes +-0 decode to +-0. */
    {
        float x[BLOCK];
        fill_block(x, (const float[]){0x1p-149f, -0x5p-149f}, 2);
        assert_int_equal(quantize_one(x, codes, out), 0);
        assert_int_equal(codes[0], 0x00);
        assert_int_equal(codes[1], 0x80);
        assert_true(same_bits(out[0], 0.0f) && same_bits(out[1], -0.0f));
    }
}

/* 6. Zero blocks: e 0, codes 0, decoded +0.0 (0 * 0, not NaN); -0.0 keeps its sign bit. */
static void test_zero_block(void **state)
{
    float x[BLOCK], out[BLOCK];
    uint8_t codes[BLOCK];
    (void)state;
    fill_block(x, NULL, 0);
    memset(codes, 0xaa, sizeof(codes));
    assert_int_equal(quantize_one(x, codes, out), 0);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_int_equal(codes[i], 0x00);
        assert_true(same_bits(out[i], 0.0f));
    }
    for (size_t i = 0; i < BLOCK; i++) {
        x[i] = -0.0f;
    }
    assert_int_equal(quantize_one(x, codes, out), 0);
    for (size_t i = 0; i < BLOCK; i++) {
        assert_int_equal(codes[i], 0x80);
        assert_true(same_bits(out[i], -0.0f));
    }
}

/* The packed row: h codes, then h / 32 scale codes; bf16 input = float input. */
static void test_packed_row(void **state)
{
    enum { H = 512 };
    float x[H], out[H], out_row[H];
    uint16_t bf[H];
    uint8_t codes[H], scales[H / BLOCK], codes_bf[H], scales_bf[H / BLOCK];
    uint8_t row[H + H / BLOCK];
    uint32_t seed = 12345u;
    (void)state;
    assert_int_equal(ncclx_ref_mxfp8_row_bytes(H), 528);
    for (size_t i = 0; i < H; i++) {
        uint32_t r = next_random(&seed);
        bf[i] = (uint16_t)((r & 0x807fu) | (uint16_t)(((r >> 8) % 40u + 100u) << 7));
        x[i] = ncclx_ref_bf16_to_float(bf[i]);
    }
    ncclx_ref_mxfp8_quantize(x, H, codes, scales);
    ncclx_ref_mxfp8_quantize_bf16(bf, H, codes_bf, scales_bf);
    ncclx_ref_mxfp8_quantize_row(x, H, row);
    assert_memory_equal(codes, codes_bf, H);
    assert_memory_equal(scales, scales_bf, H / BLOCK);
    assert_memory_equal(row, codes, H);
    assert_memory_equal(row + H, scales, H / BLOCK);
    ncclx_ref_mxfp8_dequantize(codes, scales, H, out);
    ncclx_ref_mxfp8_dequantize_row(row, H, out_row);
    assert_memory_equal(out, out_row, sizeof(out));
    for (size_t b = 0; b < H / BLOCK; b++) { /* each block as if alone */
        uint8_t c[BLOCK], e;
        ncclx_ref_mxfp8_quantize(x + b * BLOCK, BLOCK, c, &e);
        assert_int_equal(e, scales[b]);
        assert_memory_equal(c, codes + b * BLOCK, BLOCK);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_codes),       cmocka_unit_test(test_scale_floats),
        cmocka_unit_test(test_scale_independent), cmocka_unit_test(test_scaled_amax_range),
        cmocka_unit_test(test_integer_rounding),  cmocka_unit_test(test_scale_invariance),
        cmocka_unit_test(test_underflow_floor),   cmocka_unit_test(test_sign_symmetry),
        cmocka_unit_test(test_dynamic_range),     cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_bf16_subnormals),   cmocka_unit_test(test_zero_block),
        cmocka_unit_test(test_packed_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
