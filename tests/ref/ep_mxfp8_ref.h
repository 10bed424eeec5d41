/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * CPU reference of the MXFP8 quantizer of the HT combine (NCCLX_EP_RECIPE_MXFP8; the fact
 * sheet ../shared/specs/ht-facts.md section 11 describes it): blocks of 32 consecutive
 * elements, one E8M0 scale code per block, one E4M3 code per element.  Bit for bit what the
 * GPU must produce, on IEEE single operations without flush-to-zero:
 *  - amax = the largest |x| of the block, NaN ignored (fmaxf from 0.0f): a NaN-only block has
 *    amax 0; an infinity makes it infinite.
 *  - e (E8M0, bias 127) from amax: x = amax * (1.0f / 448.0f) in float (round to nearest
 *    even); e = x's biased exponent field, plus 1 when x's fraction field is not 0, at most
 *    254.  So x = 0 gives 0, a subnormal x gives 1 and amax = Inf gives 254.  For every finite
 *    amax this is the smallest power of two 2^(e-127) >= amax / 448 computed exactly, but
 *    never below 2^-126 (e = 1), except that 0 < amax < about 448 * 2^-150 (x rounds to 0,
 *    float subnormals only) gives e = 0; a finite amax never gives more than 247.
 *  - Encoding: q = E4M3 (nearest even, saturating to +-448; NaN -> 0x7f whatever its sign,
 *    as ncclx_ref_float_to_e4m3) of the float product v * 2^(127-e), the multiplier an exact
 *    float (2^-127 = the subnormal 0x00400000 for e = 254, 2^127 for e = 0).  The product is
 *    exact wherever it can give a code other than +-0.
 *  - Decoding: float(q) * S(e) in float, S(e) the float whose bits are e << 23: e = 0 gives
 *    +-0.0 (not 2^-127), NaN codes give NaN, 448 * S(254) overflows to infinity.  Exact for
 *    every code and e in 0 .. 254.
 * Inputs are floats (the combine quantizes FP32 sums of BF16 rows); quantize_bf16 takes BF16
 * codes.  A length that is not a multiple of 32 is a bug of the calling test: abort().
 */
#ifndef NCCLX_TEST_EP_MXFP8_REF_H_
#define NCCLX_TEST_EP_MXFP8_REF_H_

#include <stddef.h>
#include <stdint.h>

/** Elements per MXFP8 block (one E8M0 scale each). */
#define NCCLX_REF_MXFP8_BLOCK 32u

/** The E8M0 code of a block whose absolute maximum is amax (its sign is ignored; a NaN amax
 * follows the bit rule and gives 254). */
uint8_t ncclx_ref_mxfp8_scale(float amax);

/** max |x[i]| over n values, NaN ignored (fmaxf from 0.0f); 0 for n = 0. */
float ncclx_ref_mxfp8_block_amax(const float *x, size_t n);

/** The float 2^(127 - e) that encoding multiplies by (2^-127 is subnormal), e in 0 .. 254. */
float ncclx_ref_mxfp8_multiplier(uint8_t e);

/** The float decoding multiplies by: bits e << 23 (0.0f for e = 0, infinity for e = 255). */
float ncclx_ref_mxfp8_scale_float(uint8_t e);

/** E4M3 code of one value v of a block whose scale code is e. */
uint8_t ncclx_ref_mxfp8_encode(float v, uint8_t e);

/** Value of code q in a block whose scale code is e. */
float ncclx_ref_mxfp8_decode(uint8_t q, uint8_t e);

/** Quantizes n values (n % 32 == 0): codes[n], scales[n / 32]. */
void ncclx_ref_mxfp8_quantize(const float *x, size_t n, uint8_t *codes, uint8_t *scales);

/** The same from n BF16 codes (converted exactly to float first). */
void ncclx_ref_mxfp8_quantize_bf16(const uint16_t *x, size_t n, uint8_t *codes, uint8_t *scales);

/** Decodes n codes (n % 32 == 0) with their n / 32 scale codes into out[n]. */
void ncclx_ref_mxfp8_dequantize(const uint8_t *codes, const uint8_t *scales, size_t n, float *out);

/** Bytes of one packed row of h values: h E4M3 codes (element i at byte i) then h / 32
 * E8M0 codes (block b at byte h + b). */
size_t ncclx_ref_mxfp8_row_bytes(size_t h);

/** Quantizes one row of h values (h % 32 == 0) into the packed layout above. */
void ncclx_ref_mxfp8_quantize_row(const float *x, size_t h, uint8_t *row);

/** Decodes one packed row of h values into out[h]. */
void ncclx_ref_mxfp8_dequantize_row(const uint8_t *row, size_t h, float *out);

#endif /* NCCLX_TEST_EP_MXFP8_REF_H_ */
