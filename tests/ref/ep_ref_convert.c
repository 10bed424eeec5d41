/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Number conversions of the EP reference, written from the formats' definitions on the float
 * bits so that they do not depend on the host's rounding mode or on libm's approximations:
 * they must give, bit for bit, what the GPU's conversion instructions give.
 */
#include <math.h>
#include <string.h>

#include "ref/ep_ref.h"

uint32_t ncclx_ref_float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

float ncclx_ref_bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

/* Rounds the integer m / 2^shift to nearest, ties to even (shift in 1 .. 31). */
static uint32_t round_shift_rne(uint32_t m, uint32_t shift)
{
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) {
        q++;
    }
    return q;
}

/*
 * E4M3: bias 7, 3 mantissa bits, no infinity, S.1111.111 is NaN, 448 the largest finite.
 * Saturating: anything above 448 (infinity included) becomes +-448; every NaN becomes 0x7f,
 * whatever its sign, as __nv_cvt_float_to_fp8 does.
 */
uint8_t ncclx_ref_float_to_e4m3(float x)
{
    uint32_t u = ncclx_ref_float_bits(x);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    uint32_t exp = a >> 23;
    uint32_t sig = (a & 0x7fffffu) | 0x800000u;
    if (a > 0x7f800000u) {
        return 0x7fu;
    }
    if (a > ncclx_ref_float_bits(448.0f)) {
        return (uint8_t)(sign | 0x7eu);
    }
    if (exp >= 127 - 6) {
        /* Normal (2^-6 <= |x| <= 448): keep 3 of the 23 fraction bits; a carry out of the
         * mantissa bumps the exponent, which the code's layout does by itself. */
        uint32_t code = ((exp - 127 + 7) << 3) + round_shift_rne(a & 0x7fffffu, 20);
        return (uint8_t)(sign | code);
    }
    /* Subnormal: code = |x| / 2^-9 rounded; |x| < 2^-6 so code <= 8 (8 = the smallest
     * normal, which the layout encodes as 0x08).  |x| = sig * 2^(exp - 150), so code =
     * sig * 2^(exp - 141).  Below 2^-10 (exp < 117), half the smallest subnormal: 0. */
    if (exp < 117) {
        return sign;
    }
    return (uint8_t)(sign | round_shift_rne(sig, 141 - exp));
}

float ncclx_ref_e4m3_to_float(uint8_t v)
{
    uint32_t exp = (v >> 3) & 0xfu, mant = v & 0x7u;
    float mag;
    if (exp == 0xfu && mant == 0x7u) {
        mag = NAN;
    } else if (exp == 0) {
        mag = ldexpf((float)mant, -9);
    } else {
        mag = ldexpf((float)(8u + mant), (int)exp - 7 - 3);
    }
    return (v & 0x80u) ? -mag : mag;
}

/* BF16 = the high half of a float, rounded to nearest even; NaN becomes the canonical 0x7fff
 * as CUDA's __float2bfloat16_rn gives.  Overflow rounds to infinity by itself. */
uint16_t ncclx_ref_float_to_bf16(float x)
{
    uint32_t u = ncclx_ref_float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return 0x7fffu;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float ncclx_ref_bf16_to_float(uint16_t v)
{
    return ncclx_ref_bits_float((uint32_t)v << 16);
}

/* FP16: bias 15, 10 mantissa bits, largest finite 65504; |x| >= 65520 (the midpoint to the
 * next power of two, a tie that goes to the even infinity) overflows.  NaN -> 0x7fff. */
uint16_t ncclx_ref_float_to_fp16(float x)
{
    uint32_t u = ncclx_ref_float_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    uint32_t exp = a >> 23;
    if (a > 0x7f800000u) {
        return 0x7fffu;
    }
    if (a >= ncclx_ref_float_bits(65520.0f)) {
        return (uint16_t)(sign | 0x7c00u);
    }
    if (exp >= 127 - 14) {
        uint32_t code = ((exp - 127 + 15) << 10) + round_shift_rne(a & 0x7fffffu, 13);
        return (uint16_t)(sign | code);
    }
    /* Subnormal: code = |x| / 2^-24 = sig * 2^(exp - 126); 2^-25 and below round to 0. */
    if (a <= ncclx_ref_float_bits(0x1p-25f)) {
        return sign;
    }
    return (uint16_t)(sign | round_shift_rne((a & 0x7fffffu) | 0x800000u, 126 - exp));
}

float ncclx_ref_fp16_to_float(uint16_t v)
{
    uint32_t exp = (v >> 10) & 0x1fu, mant = v & 0x3ffu;
    float mag;
    if (exp == 0x1fu) {
        mag = mant ? NAN : INFINITY;
    } else if (exp == 0) {
        mag = ldexpf((float)mant, -24);
    } else {
        mag = ldexpf((float)(0x400u + mant), (int)exp - 15 - 10);
    }
    return (v & 0x8000u) ? -mag : mag;
}

/* max(amax, 1e-4) / 448; rounding up to a power of two clears the fraction bits and bumps the
 * exponent (the scale is a positive normal float, at least 1e-4 / 448). */
float ncclx_ref_fp8_scale(float amax, int round_scales)
{
    float scale = fmaxf(amax, 1e-4f) / 448.0f;
    uint32_t u = ncclx_ref_float_bits(scale);
    if (round_scales && (u & 0x7fffffu) != 0) {
        u = (u & 0xff800000u) + 0x800000u;
    }
    return ncclx_ref_bits_float(u);
}

static int significand_bits(ncclxDataType_t dtype, int *min_exp)
{
    switch (dtype) {
    case NCCLX_BFLOAT16:
        *min_exp = -126;
        return 8;
    case NCCLX_FLOAT16:
        *min_exp = -14;
        return 11;
    case NCCLX_FLOAT32:
        *min_exp = -126;
        return 24;
    default:
        return 0;
    }
}

/* ulp(m) = 2^(floor(log2 m) - (p - 1)) with m = max(|ref|, smallest normal); frexp gives
 * m = f * 2^e, f in [0.5, 1), so floor(log2 m) = e - 1.  Other dtypes: exact equality. */
int ncclx_ref_within_ulp(double got, double ref, ncclxDataType_t dtype)
{
    int min_exp = 0, e;
    int p = significand_bits(dtype, &min_exp);
    double m = fabs(ref);
    if (isnan(got) || isnan(ref)) {
        return isnan(got) && isnan(ref);
    }
    if (got == ref || p == 0 || isinf(ref)) {
        return got == ref;
    }
    if (m < ldexp(1.0, min_exp)) {
        m = ldexp(1.0, min_exp);
    }
    (void)frexp(m, &e);
    return fabs(got - ref) <= ldexp(1.0, e - p);
}

/* Rounds to nearest, ties to even, once: |x| = n * 2^q with q the exponent of one unit in the
 * last place of the target at |x|'s magnitude (never below the subnormal quantum), so that
 * n = |x| / 2^q is split exactly into its integer part and a fraction (scaling by a power of
 * two, floor and the subtraction are all exact in double).  Needs no rounding mode. */
double ncclx_ref_round_to_dtype(double x, ncclxDataType_t dtype)
{
    int min_exp = 0, max_exp, e;
    int p = significand_bits(dtype, &min_exp);
    if (p == 0 || isnan(x) || isinf(x) || x == 0.0) {
        return x;
    }
    max_exp = dtype == NCCLX_FLOAT16 ? 15 : 127;
    (void)frexp(fabs(x), &e); /* |x| = f * 2^e, f in [0.5, 1): leading bit 2^(e - 1) */
    int q = (e - 1 > min_exp ? e - 1 : min_exp) - (p - 1);
    double scaled = ldexp(fabs(x), -q); /* below 2^p */
    double n = floor(scaled), rest = scaled - n;
    if (rest > 0.5 || (rest == 0.5 && fmod(n, 2.0) != 0.0)) {
        n += 1.0;
    }
    double r = ldexp(n, q);
    if (r > ldexp(2.0 - ldexp(1.0, 1 - p), max_exp)) {
        r = INFINITY; /* past the largest finite: rounding went up to 2^(max_exp + 1) */
    }
    return copysign(r, x);
}
