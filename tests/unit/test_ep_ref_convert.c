/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP reference's number conversions (tests/ref/ep_ref_convert.c) at their edges: E4M3,
 * BF16 and FP16 rounding (ties to even, saturation or overflow, subnormals, NaN), the FP8
 * recipe's scale, and the one-ulp comparison.  Expected codes are worked out from the
 * formats' definitions in the comments beside them.
 *
 * Then the three float conversions against an independent formulation (below) on every code
 * boundary and on a stride through all floats; `test_ep_ref_convert --all-floats` checks every
 * one of the 2^32 floats instead, on every CPU (about 5 minutes on a busy 2-core machine: too
 * slow for make check).
 */
#include "ncclx_test.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* ---- against an independent formulation ------------------------------------------------ */

/*
 * A float format described by its numbers, not its bits: p significand bits (the leading one
 * included), emin the exponent of the smallest normal, max the largest finite value, and what
 * happens beyond it.  The expected result of a conversion is computed by the FPU in double:
 * for |x| in [2^(e-1), 2^e) the format's spacing is q = 2^(e-p) (2^(emin+1-p) below the
 * normals), and with s = 2^(e-p+52), |x| + s lands in [s, 2s) where doubles are q apart, so
 * the hardware rounds it to a multiple of q, to nearest, ties to an even multiple (s / q =
 * 2^52 is even); subtracting s again is exact.  The reference's result is decoded with the
 * formats' textbook definition (ldexp of sign, exponent and mantissa fields) and compared as
 * a value plus the sign bit, which for non-NaN codes is the same as comparing codes.
 */
typedef struct {
    const char *name;
    int p, emin;
    double max;
    int saturate;      /* 1: beyond max gives +-max (E4M3 SATFINITE); 0: +-infinity */
    unsigned nan_code; /* what every NaN converts to */
    unsigned bits, exp_bits, man_bits, bias;
    int ieee_specials; /* all-ones exponent: infinity / NaN (FP16, BF16); else S.1111.111 NaN */
    unsigned (*convert)(float x);
} fmt_t;

static unsigned cvt_e4m3(float x)
{
    return ncclx_ref_float_to_e4m3(x);
}

static unsigned cvt_bf16(float x)
{
    return ncclx_ref_float_to_bf16(x);
}

static unsigned cvt_fp16(float x)
{
    return ncclx_ref_float_to_fp16(x);
}

static const fmt_t fmt_e4m3 = {"E4M3", 4, -6, 448.0, 1, 0x7f, 8, 4, 3, 7, 0, cvt_e4m3};
static const fmt_t fmt_bf16 = {"BF16", 8, -126, 0x1.fep127, 0, 0x7fff, 16, 8, 7, 127, 1, cvt_bf16};
static const fmt_t fmt_fp16 = {"FP16", 11, -14, 65504.0, 0, 0x7fff, 16, 5, 10, 15, 1, cvt_fp16};

/* The value of code v (without its sign); NaN for NaN codes. */
static double fmt_decode(const fmt_t *f, unsigned v)
{
    unsigned e = (v >> f->man_bits) & ((1u << f->exp_bits) - 1u);
    unsigned m = v & ((1u << f->man_bits) - 1u);
    unsigned e_max = (1u << f->exp_bits) - 1u;
    if (f->ieee_specials && e == e_max) {
        return m == 0 ? INFINITY : NAN;
    }
    if (!f->ieee_specials && e == e_max && m == (1u << f->man_bits) - 1u) {
        return NAN;
    }
    if (e == 0) {
        return ldexp((double)m, 1 - (int)f->bias - (int)f->man_bits);
    }
    return ldexp((double)((1u << f->man_bits) + m), (int)e - (int)f->bias - (int)f->man_bits);
}

/* 2^k for the k fmt_expected needs (52 - 126 - 24 .. 52 + 128), from a table because
 * --all-floats asks 2^32 times per format; fmt_pow2_init fills it before any thread runs. */
static double fmt_pow2_table[512];

static void fmt_pow2_init(void)
{
    for (int i = 0; i < 512; i++) {
        fmt_pow2_table[i] = ldexp(1.0, i - 256);
    }
}

static double fmt_pow2(int k)
{
    return fmt_pow2_table[k + 256];
}

/* |x| rounded into the format, as the FPU rounds (see above). */
static double fmt_expected(const fmt_t *f, float x)
{
    double a = fabs((double)x), r;
    int e;
    if (isinf(a)) {
        r = a;
    } else if (a == 0.0) {
        r = 0.0;
    } else {
        (void)frexp(a, &e); /* a in [2^(e-1), 2^e) */
        if (e - 1 < f->emin) {
            e = f->emin + 1; /* below the normals: the spacing of the subnormals */
        }
        const double s = fmt_pow2(e - f->p + 52);
        r = (a + s) - s;
    }
    if (r > f->max) {
        r = f->saturate ? f->max : INFINITY;
    }
    return r;
}

/* One pass over a range of floats; several run in parallel for --all-floats. */
typedef struct {
    const fmt_t *f;
    const double *decoded; /* fmt_decode of every code */
    uint64_t begin, end, step;
    uint64_t checked, wrong;
} fmt_pass_t;

static void fmt_check_one(fmt_pass_t *c, uint32_t u)
{
    const fmt_t *f = c->f;
    float x;
    unsigned code;
    int ok;
    memcpy(&x, &u, sizeof(x));
    code = f->convert(x);
    if (isnan(x)) {
        ok = code == f->nan_code;
    } else {
        ok = code < (1u << f->bits) && c->decoded[code] == fmt_expected(f, x) &&
             ((code >> (f->bits - 1)) != 0) == (signbit(x) != 0);
    }
    c->checked++;
    if (!ok && c->wrong++ < 5) {
        print_message("%s: float 0x%08x (%a) converts to 0x%x, expected %s%a\n", f->name, u,
                      (double)x, code, signbit(x) ? "-" : "+", fmt_expected(f, x));
    }
}

static void *fmt_check_range(void *arg)
{
    fmt_pass_t *c = arg;
    for (uint64_t u = c->begin; u < c->end; u += c->step) {
        fmt_check_one(c, (uint32_t)u);
    }
    return NULL;
}

/* Floats within 4 ulps of x, both signs. */
static void fmt_check_around(fmt_pass_t *c, double x)
{
    float center = (float)x; /* every boundary of these formats is a float */
    uint32_t u;
    memcpy(&u, &center, sizeof(u));
    for (int d = -4; d <= 4; d++) {
        uint32_t v = u + (uint32_t)d;
        if ((int64_t)u + d < 0 || ((v >> 23) & 0xffu) == 0xffu) {
            continue;
        }
        fmt_check_one(c, v);
        fmt_check_one(c, v | 0x80000000u);
    }
}

/* Every code's value and every tie between neighbours, the one past the largest finite
 * included; the extremes of float; infinities and NaNs. */
static void fmt_check_boundaries(fmt_pass_t *c)
{
    const fmt_t *f = c->f;
    const unsigned positive = 1u << (f->bits - 1);
    for (unsigned v = 0; v < positive; v++) {
        double value = c->decoded[v], next;
        if (isnan(value) || isinf(value)) {
            continue;
        }
        /* The next code up; past max, the value the format would have there. */
        next = value == f->max ? 2.0 * f->max - c->decoded[v - 1] : c->decoded[v + 1];
        fmt_check_around(c, value);
        fmt_check_around(c, (value + next) / 2.0);
    }
    fmt_check_around(c, FLT_MAX);
    fmt_check_around(c, FLT_MIN);
    fmt_check_one(c, 0x00000001u);
    fmt_check_one(c, 0x7f800000u);
    fmt_check_one(c, 0xff800000u);
    fmt_check_one(c, 0x7fc00000u);
    fmt_check_one(c, 0xffc00000u);
    fmt_check_one(c, 0x7f800001u);
    fmt_check_one(c, 0xffffffffu);
}

static int all_floats; /* --all-floats */

/* All 2^32 floats, split over the machine's CPUs. */
static void fmt_check_all(fmt_pass_t *total)
{
    enum { MAX_THREADS = 64 };
    pthread_t threads[MAX_THREADS];
    fmt_pass_t passes[MAX_THREADS];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : (int)cpus;
    const uint64_t chunk = ((1ull << 32) + (uint64_t)n - 1) / (uint64_t)n;
    for (int t = 0; t < n; t++) {
        passes[t] = *total;
        passes[t].begin = (uint64_t)t * chunk;
        passes[t].end =
            passes[t].begin + chunk < (1ull << 32) ? passes[t].begin + chunk : 1ull << 32;
        passes[t].step = 1;
        assert_int_equal(pthread_create(&threads[t], NULL, fmt_check_range, &passes[t]), 0);
    }
    for (int t = 0; t < n; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        total->checked += passes[t].checked;
        total->wrong += passes[t].wrong;
    }
    assert_int_equal(total->checked, 1ull << 32);
}

static void check_format(const fmt_t *f)
{
    double *decoded = malloc(sizeof(double) << f->bits);
    fmt_pass_t c = {f, decoded, 0, 1ull << 32, 251, 0, 0};
    assert_non_null(decoded);
    fmt_pow2_init();
    for (unsigned v = 0; v < (1u << f->bits); v++) {
        decoded[v] = fmt_decode(f, v);
    }
    if (all_floats) {
        fmt_check_all(&c);
    } else {
        fmt_check_boundaries(&c);
        (void)fmt_check_range(&c); /* a stride through every exponent, varied low bits */
    }
    print_message("%s: %llu floats checked, %llu wrong\n", f->name, (unsigned long long)c.checked,
                  (unsigned long long)c.wrong);
    assert_int_equal(c.wrong, 0);
    free(decoded);
}

static void test_e4m3_independent(void **state)
{
    (void)state;
    check_format(&fmt_e4m3);
}

static void test_bf16_independent(void **state)
{
    (void)state;
    check_format(&fmt_bf16);
}

static void test_fp16_independent(void **state)
{
    (void)state;
    check_format(&fmt_fp16);
}

/* The formulation itself, on values worked out by hand: a wrong expectation would otherwise
 * agree with a wrong reference only by chance, but it should not need that chance. */
static void test_independent_formulation(void **state)
{
    (void)state;
    fmt_pow2_init();
    assert_true(fmt_expected(&fmt_e4m3, 464.0f) == 448.0);      /* tie 448 | 480: even */
    assert_true(fmt_expected(&fmt_e4m3, 1.0625f) == 1.0);       /* tie 1 | 1.125: even */
    assert_true(fmt_expected(&fmt_e4m3, 1.1875f) == 1.25);      /* tie 1.125 | 1.25: even */
    assert_true(fmt_expected(&fmt_e4m3, 0x3p-10f) == 0x1p-8);   /* subnormal tie 1 | 2 */
    assert_true(fmt_expected(&fmt_e4m3, INFINITY) == 448.0);    /* saturates */
    assert_true(fmt_expected(&fmt_fp16, 65520.0f) == INFINITY); /* tie 65504 | 2^16 */
    assert_true(fmt_expected(&fmt_fp16, 65519.0f) == 65504.0);
    assert_true(fmt_expected(&fmt_fp16, 0x1p-25f) == 0.0); /* tie 0 | 2^-24 */
    assert_true(fmt_expected(&fmt_fp16, 0x1.000002p-25f) == 0x1p-24);
    assert_true(fmt_expected(&fmt_bf16, 1.0f + 0x3p-8f) == 1.0 + 0x1p-6);
    assert_true(fmt_expected(&fmt_bf16, 0x1p-134f) == 0.0); /* tie 0 | 2^-133 */
    assert_true(fmt_expected(&fmt_bf16, FLT_MAX) == INFINITY);
    assert_true(fmt_decode(&fmt_e4m3, 0x7e) == 448.0);
    assert_true(isnan(fmt_decode(&fmt_e4m3, 0x7f)));
    assert_true(fmt_decode(&fmt_e4m3, 0x01) == 0x1p-9);
    assert_true(fmt_decode(&fmt_fp16, 0x7bff) == 65504.0);
    assert_true(isinf(fmt_decode(&fmt_fp16, 0x7c00)));
    assert_true(fmt_decode(&fmt_bf16, 0x3f81) == 1.0078125);
    assert_true(fmt_decode(&fmt_bf16, 0x0001) == 0x1p-133);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_known_values),
        cmocka_unit_test(test_e4m3_round_trip),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_fp16_rounding),
        cmocka_unit_test(test_fp8_scale),
        cmocka_unit_test(test_within_ulp),
        cmocka_unit_test(test_independent_formulation),
        cmocka_unit_test(test_e4m3_independent),
        cmocka_unit_test(test_bf16_independent),
        cmocka_unit_test(test_fp16_independent),
    };
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all-floats") == 0) {
            all_floats = 1;
        } else {
            fprintf(stderr, "usage: %s [--all-floats]\n", argv[0]);
            return 2;
        }
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
