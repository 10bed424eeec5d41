/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * MXFP8 quantizer of the HT combine, on the float bits (tests/ref/ep_mxfp8_ref.h gives the
 * rules).  Only IEEE single multiplications, fabsf and fmaxf touch values, so the host's
 * results equal the GPU's as long as neither flushes subnormals to zero.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ep_mxfp8_ref.h"
#include "ref/ep_ref.h"

#define E8M0_MAX_FINITE 254u

static void check_length(const char *who, size_t n)
{
    if (n % NCCLX_REF_MXFP8_BLOCK != 0) {
        fprintf(stderr, "%s: n=%zu is not a multiple of %u\n", who, n, NCCLX_REF_MXFP8_BLOCK);
        abort();
    }
}

uint8_t ncclx_ref_mxfp8_scale(float amax)
{
    uint32_t u = ncclx_ref_float_bits(fabsf(amax) * (1.0f / 448.0f)) & 0x7fffffffu;
    uint32_t e = (u >> 23) + ((u & 0x7fffffu) != 0 ? 1u : 0u);
    return (uint8_t)(e > E8M0_MAX_FINITE ? E8M0_MAX_FINITE : e);
}

float ncclx_ref_mxfp8_block_amax(const float *x, size_t n)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) {
        amax = fmaxf(amax, fabsf(x[i]));
    }
    return amax;
}

/* 2^(127 - e): exponent field 254 - e for e >= 1 (2^126 .. 2^-126); e = 254 is the
 * subnormal 2^-127 (fraction bit 22 alone); e = 0 gives 2^127 (field 254).  e = 255 (the
 * E8M0 NaN) is never produced; it gets the subnormal 2^-128. */
float ncclx_ref_mxfp8_multiplier(uint8_t e)
{
    if (e == 0) {
        return ncclx_ref_bits_float(254u << 23);
    }
    if (e >= E8M0_MAX_FINITE) {
        return ncclx_ref_bits_float(0x00400000u >> (e - E8M0_MAX_FINITE));
    }
    return ncclx_ref_bits_float((uint32_t)(254u - e) << 23);
}

float ncclx_ref_mxfp8_scale_float(uint8_t e)
{
    return ncclx_ref_bits_float((uint32_t)e << 23);
}

uint8_t ncclx_ref_mxfp8_encode(float v, uint8_t e)
{
    return ncclx_ref_float_to_e4m3(v * ncclx_ref_mxfp8_multiplier(e));
}

float ncclx_ref_mxfp8_decode(uint8_t q, uint8_t e)
{
    return ncclx_ref_e4m3_to_float(q) * ncclx_ref_mxfp8_scale_float(e);
}

static void quantize_blocks(const float *x, size_t n, uint8_t *codes, uint8_t *scales)
{
    for (size_t b = 0; b < n / NCCLX_REF_MXFP8_BLOCK; b++) {
        const float *v = x + b * NCCLX_REF_MXFP8_BLOCK;
        uint8_t e = ncclx_ref_mxfp8_scale(ncclx_ref_mxfp8_block_amax(v, NCCLX_REF_MXFP8_BLOCK));
        for (size_t i = 0; i < NCCLX_REF_MXFP8_BLOCK; i++) {
            codes[b * NCCLX_REF_MXFP8_BLOCK + i] = ncclx_ref_mxfp8_encode(v[i], e);
        }
        scales[b] = e;
    }
}

void ncclx_ref_mxfp8_quantize(const float *x, size_t n, uint8_t *codes, uint8_t *scales)
{
    check_length("ncclx_ref_mxfp8_quantize", n);
    quantize_blocks(x, n, codes, scales);
}

void ncclx_ref_mxfp8_quantize_bf16(const uint16_t *x, size_t n, uint8_t *codes, uint8_t *scales)
{
    check_length("ncclx_ref_mxfp8_quantize_bf16", n);
    for (size_t b = 0; b < n / NCCLX_REF_MXFP8_BLOCK; b++) {
        float v[NCCLX_REF_MXFP8_BLOCK];
        for (size_t i = 0; i < NCCLX_REF_MXFP8_BLOCK; i++) {
            v[i] = ncclx_ref_bf16_to_float(x[b * NCCLX_REF_MXFP8_BLOCK + i]);
        }
        quantize_blocks(v, NCCLX_REF_MXFP8_BLOCK, codes + b * NCCLX_REF_MXFP8_BLOCK, scales + b);
    }
}

void ncclx_ref_mxfp8_dequantize(const uint8_t *codes, const uint8_t *scales, size_t n, float *out)
{
    check_length("ncclx_ref_mxfp8_dequantize", n);
    for (size_t i = 0; i < n; i++) {
        out[i] = ncclx_ref_mxfp8_decode(codes[i], scales[i / NCCLX_REF_MXFP8_BLOCK]);
    }
}

size_t ncclx_ref_mxfp8_row_bytes(size_t h)
{
    return h + h / NCCLX_REF_MXFP8_BLOCK;
}

void ncclx_ref_mxfp8_quantize_row(const float *x, size_t h, uint8_t *row)
{
    check_length("ncclx_ref_mxfp8_quantize_row", h);
    quantize_blocks(x, h, row, row + h);
}

void ncclx_ref_mxfp8_dequantize_row(const uint8_t *row, size_t h, float *out)
{
    ncclx_ref_mxfp8_dequantize(row, row + h, h, out);
}
