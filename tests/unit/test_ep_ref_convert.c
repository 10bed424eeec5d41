/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP reference's number conversions (tests/ref/ep_ref_convert.c) at their edges: E4M3,
 * BF16 and FP16 rounding (ties to even, saturation or overflow, subnormals, NaN), the FP8
 * recipe's scale, and the one-ulp comparison.  Expected codes are worked out from the
 * formats' definitions in the comments beside them.
 */
#include "ncclx_test.h"

#include <float.h>
#include <math.h>

#include "ref/ep_ref.h"

static void test_e4m3_known_values(void **state)
{
    (void)state;
    assert_int_equal(ncclx_ref_float_to_e4m3(0.0f), 0x00);
    assert_int_equal(ncclx_ref_float_to_e4m3(-0.0f), 0x80);
    assert_int_equal(ncclx_ref_float_to_e4m3(1.0f), 0x38);   /* exp 7 (bias 7), mant 0 */
    assert_int_equal(ncclx_ref_float_to_e4m3(-3.0f), 0xc4);  /* 1.5 * 2^1: exp 8, mant 4 */
    assert_int_equal(ncclx_ref_float_to_e4m3(448.0f), 0x7e); /* the largest finite */
    assert_int_equal(ncclx_ref_float_to_e4m3(-448.0f), 0xfe);
    assert_int_equal(ncclx_ref_float_to_e4m3(449.0f), 0x7e); /* saturates */
    assert_int_equal(ncclx_ref_float_to_e4m3(464.0f), 0x7e); /* midpoint 448/480: even */
    assert_int_equal(ncclx_ref_float_to_e4m3(470.0f), 0x7e); /* nearer 480 = the NaN code */
    assert_int_equal(ncclx_ref_float_to_e4m3(-479.0f), 0xfe);
    assert_int_equal(ncclx_ref_float_to_e4m3(1e9f), 0x7e);
    assert_int_equal(ncclx_ref_float_to_e4m3(-1e9f), 0xfe);
    assert_int_equal(ncclx_ref_float_to_e4m3(INFINITY), 0x7e);
    assert_int_equal(ncclx_ref_float_to_e4m3(0.001953125f), 0x01); /* 2^-9, min subnormal */
    assert_int_equal(ncclx_ref_float_to_e4m3(0x1p-6f), 0x08);      /* min normal */
    /* Halfway cases round to the even code. */
    assert_int_equal(ncclx_ref_float_to_e4m3(0x1p-10f), 0x00);  /* 0 | 2^-9 */
    assert_int_equal(ncclx_ref_float_to_e4m3(-0x1p-10f), 0x80); /* keeps the sign */
    assert_int_equal(ncclx_ref_float_to_e4m3(0x3p-10f), 0x02);  /* 1 | 2 (x 2^-9) */
    assert_int_equal(ncclx_ref_float_to_e4m3(0xfp-10f), 0x08);  /* 7 | 8: into the normals */
    assert_int_equal(ncclx_ref_float_to_e4m3(1.0625f), 0x38);   /* 1.0 | 1.125 */
    assert_int_equal(ncclx_ref_float_to_e4m3(1.1875f), 0x3a);   /* 1.125 | 1.25 */
    assert_int_equal(ncclx_ref_float_to_e4m3(15.5f), 0x58);     /* 15 | 16: carries exp */
    assert_int_equal(ncclx_ref_float_to_e4m3(nextafterf(1.0625f, 2.0f)), 0x39);
    assert_int_equal(ncclx_ref_float_to_e4m3(nextafterf(0x1p-10f, 1.0f)), 0x01);
    assert_int_equal(ncclx_ref_float_to_e4m3(NAN), 0x7f);
    assert_int_equal(ncclx_ref_float_to_e4m3(-NAN), 0x7f); /* the one NaN code, any sign */
}

static void test_e4m3_round_trip(void **state)
{
    float previous = -1.0f;
    (void)state;
    for (unsigned v = 0; v < 256; v++) {
        float x = ncclx_ref_e4m3_to_float((uint8_t)v);
        if ((v & 0x7f) == 0x7f) {
            assert_true(isnan(x));
            continue;
        }
        assert_int_equal(ncclx_ref_float_to_e4m3(x), v);
        assert_int_equal(signbit(x) != 0, (v & 0x80) != 0);
        if (v < 0x80) { /* positive codes increase with their value */
            assert_true(x > previous);
            previous = x;
        }
    }
    assert_true(ncclx_ref_e4m3_to_float(0x7e) == 448.0f);
    assert_true(ncclx_ref_e4m3_to_float(0x01) == 0x1p-9f);
    assert_true(ncclx_ref_e4m3_to_float(0x07) == 0x7p-9f);
    assert_true(ncclx_ref_e4m3_to_float(0xc4) == -3.0f);
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    assert_int_equal(ncclx_ref_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(ncclx_ref_float_to_bf16(1.0f + 0x1p-8f), 0x3f80); /* halfway: even */
    assert_int_equal(ncclx_ref_float_to_bf16(1.0f + 0x3p-8f), 0x3f82); /* halfway: even */
    assert_int_equal(ncclx_ref_float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    assert_int_equal(ncclx_ref_float_to_bf16(-2.0f), 0xc000);
    assert_int_equal(ncclx_ref_float_to_bf16(FLT_MAX), 0x7f80); /* overflows to infinity */
    assert_int_equal(ncclx_ref_float_to_bf16(-FLT_MAX), 0xff80);
    assert_int_equal(ncclx_ref_float_to_bf16(0x1.fep127f), 0x7f7f); /* largest finite bf16 */
    assert_int_equal(ncclx_ref_float_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(ncclx_ref_float_to_bf16(0x1p-130f), 0x0008); /* subnormal */
    assert_int_equal(ncclx_ref_float_to_bf16(0x1p-134f), 0x0000); /* half of 2^-133: even */
    assert_int_equal(ncclx_ref_float_to_bf16(0x3p-134f), 0x0002);
    assert_int_equal(ncclx_ref_float_to_bf16(NAN), 0x7fff);
    assert_true(ncclx_ref_bf16_to_float(0x3f81) == 1.0078125f);
    assert_true(isinf(ncclx_ref_bf16_to_float(0xff80)));
    assert_true(isnan(ncclx_ref_bf16_to_float(0x7fc0)));
    for (uint32_t v = 0; v < 0x10000; v++) {
        if ((v & 0x7fff) <= 0x7f80) { /* every non-NaN code survives the round trip */
            assert_int_equal(ncclx_ref_float_to_bf16(ncclx_ref_bf16_to_float((uint16_t)v)), v);
        }
    }
}

static void test_fp16_rounding(void **state)
{
    (void)state;
    assert_int_equal(ncclx_ref_float_to_fp16(1.0f), 0x3c00);
    assert_int_equal(ncclx_ref_float_to_fp16(1.0f + 0x1p-11f), 0x3c00); /* halfway: even */
    assert_int_equal(ncclx_ref_float_to_fp16(1.0f + 0x3p-11f), 0x3c02);
    assert_int_equal(ncclx_ref_float_to_fp16(-2.5f), 0xc100);
    assert_int_equal(ncclx_ref_float_to_fp16(65504.0f), 0x7bff);
    assert_int_equal(ncclx_ref_float_to_fp16(65519.0f), 0x7bff);
    assert_int_equal(ncclx_ref_float_to_fp16(65520.0f), 0x7c00); /* halfway to 2^16: inf */
    assert_int_equal(ncclx_ref_float_to_fp16(-1e6f), 0xfc00);
    assert_int_equal(ncclx_ref_float_to_fp16(INFINITY), 0x7c00);
    assert_int_equal(ncclx_ref_float_to_fp16(NAN), 0x7fff);
    assert_int_equal(ncclx_ref_float_to_fp16(0x1p-14f), 0x0400);   /* min normal */
    assert_int_equal(ncclx_ref_float_to_fp16(0x3ffp-24f), 0x03ff); /* max subnormal */
    assert_int_equal(ncclx_ref_float_to_fp16(0x1p-24f), 0x0001);   /* min subnormal */
    assert_int_equal(ncclx_ref_float_to_fp16(0x1p-25f), 0x0000);   /* halfway: even */
    assert_int_equal(ncclx_ref_float_to_fp16(-0x1p-25f), 0x8000);
    assert_int_equal(ncclx_ref_float_to_fp16(0x3p-25f), 0x0002); /* halfway: even */
    assert_int_equal(ncclx_ref_float_to_fp16(0x1.000002p-25f), 0x0001);
    assert_int_equal(ncclx_ref_float_to_fp16(0x7ffp-25f), 0x0400); /* rounds up to normal */
    assert_true(ncclx_ref_fp16_to_float(0x0001) == 0x1p-24f);
    assert_true(ncclx_ref_fp16_to_float(0x7bff) == 65504.0f);
    assert_true(isinf(ncclx_ref_fp16_to_float(0xfc00)));
    assert_true(isnan(ncclx_ref_fp16_to_float(0x7e00)));
    for (uint32_t v = 0; v < 0x10000; v++) {
        if ((v & 0x7fff) <= 0x7c00) {
            assert_int_equal(ncclx_ref_float_to_fp16(ncclx_ref_fp16_to_float((uint16_t)v)), v);
        }
    }
}

static void test_fp8_scale(void **state)
{
    (void)state;
    assert_true(ncclx_ref_fp8_scale(0.0f, 0) == 1e-4f / 448.0f);
    assert_true(ncclx_ref_fp8_scale(0.0f, 1) == 0x1p-22f); /* 2.23e-7 up to 2.38e-7 */
    assert_true(ncclx_ref_fp8_scale(448.0f, 0) == 1.0f);
    assert_true(ncclx_ref_fp8_scale(448.0f, 1) == 1.0f); /* a power of two stays */
    assert_true(ncclx_ref_fp8_scale(56.0f, 1) == 0.125f);
    assert_true(ncclx_ref_fp8_scale(300.0f, 0) == 300.0f / 448.0f);
    assert_true(ncclx_ref_fp8_scale(300.0f, 1) == 1.0f);
    assert_true(ncclx_ref_fp8_scale(449.0f, 1) == 2.0f);
    assert_true(ncclx_ref_fp8_scale(-5.0f, 0) == 1e-4f / 448.0f);
    for (float amax = 1e-3f; amax < 1e5f; amax *= 1.37f) {
        float plain = ncclx_ref_fp8_scale(amax, 0), rounded = ncclx_ref_fp8_scale(amax, 1);
        int e;
        assert_true(frexpf(rounded, &e) == 0.5f);
        assert_true(rounded >= plain && rounded < 2.0f * plain);
    }
}

static void test_within_ulp(void **state)
{
    (void)state;
    assert_true(ncclx_ref_within_ulp(1.0 + 0x1p-7, 1.0, NCCLX_BFLOAT16));
    assert_true(ncclx_ref_within_ulp(1.0 - 0x1p-7, 1.0, NCCLX_BFLOAT16));
    assert_false(ncclx_ref_within_ulp(1.0 + 0x1p-6, 1.0, NCCLX_BFLOAT16));
    assert_true(ncclx_ref_within_ulp(0x1p-133, 0.0, NCCLX_BFLOAT16)); /* smallest normal's */
    assert_false(ncclx_ref_within_ulp(0x1p-132, 0.0, NCCLX_BFLOAT16));
    assert_true(ncclx_ref_within_ulp(1000.5, 1000.0, NCCLX_FLOAT16)); /* ulp 2^9 * 2^-10 */
    assert_false(ncclx_ref_within_ulp(1001.0, 1000.0, NCCLX_FLOAT16));
    assert_true(ncclx_ref_within_ulp(-0x1p-24, 0.0, NCCLX_FLOAT16));
    assert_false(ncclx_ref_within_ulp(0x1p-23, 0.0, NCCLX_FLOAT16));
    assert_true(ncclx_ref_within_ulp(1.0 + 0x1p-23, 1.0, NCCLX_FLOAT32));
    assert_false(ncclx_ref_within_ulp(1.0 + 0x1p-22, 1.0, NCCLX_FLOAT32));
    assert_true(ncclx_ref_within_ulp(NAN, NAN, NCCLX_FLOAT32));
    assert_false(ncclx_ref_within_ulp(NAN, 1.0, NCCLX_FLOAT32));
    assert_false(ncclx_ref_within_ulp(1.0, NAN, NCCLX_FLOAT32));
    assert_true(ncclx_ref_within_ulp(INFINITY, INFINITY, NCCLX_FLOAT32));
    assert_false(ncclx_ref_within_ulp(FLT_MAX, INFINITY, NCCLX_FLOAT32));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_known_values), cmocka_unit_test(test_e4m3_round_trip),
        cmocka_unit_test(test_bf16_rounding),     cmocka_unit_test(test_fp16_rounding),
        cmocka_unit_test(test_fp8_scale),         cmocka_unit_test(test_within_ulp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
