/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * CPU reference of EP LL dispatch and combine (include/ncclx/ep.h gives the semantics).  It
 * sees every rank's inputs at once and computes what each rank must receive and return.  All
 * tensors here are host arrays, row-major, in the same layouts as the library's outputs.
 *
 * Readings of the contract that the GPU kernels must share:
 *  - A token naming one expert twice gets ONE EXPERT_MAJOR row; in combine, each of the K
 *    entries still adds its own weight times that row (k order, fma in double).
 *  - RANK_MAJOR out_topk_idx/out_topk_weights keep all K entries of a received token: entries
 *    whose expert lives elsewhere (or is -1) read -1 and 0.0f; a repeated expert appears twice.
 *  - RANK_MAJOR combine adds the rows as they are (they are pre-weighted); tokens routed
 *    nowhere combine to 0 in both layouts.
 *  - FP8: a block's amax ignores NaN (as fmaxf does); a NaN element becomes code 0x7f;
 *    infinities saturate to +-448.  Scales are max(amax, 1e-4f) / 448.0f, rounded up to a power
 *    of two on their bits when round_scales.
 *  - BF16/FP16 conversions give the canonical NaN 0x7fff, as CUDA does.
 * tests/unit/test_ep_ref_convert.c checks the three float conversions bit for bit against an
 * independent formulation (the FPU's own rounding, in double): on every code boundary and a
 * stride through all floats in make check, and on every one of the 2^32 floats when run as
 * `test_ep_ref_convert --all-floats` (minutes; its threads use every CPU).  The GPU tests
 * compare the kernels' FP8 codes with the reference's byte for byte, NaN codes included
 * (ncclx_ref_dispatch_diff_exact).
 */
#ifndef NCCLX_TEST_EP_REF_H_
#define NCCLX_TEST_EP_REF_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx.h>

/** The shape of one test case (one group, one handle per rank). */
typedef struct {
    uint32_t ranks;      /* R */
    uint32_t experts;    /* E (L = E / R per rank) */
    uint32_t max_tokens; /* T: the group's max_dispatch_tokens_per_rank */
    uint32_t topk;       /* K */
    uint32_t hidden;     /* H */
    uint32_t layout;     /* NCCLX_EP_LAYOUT_EXPERT_MAJOR or _RANK_MAJOR */
    uint32_t recipe;     /* NCCLX_EP_RECIPE_NONE, _QUANT_FWD or _FP8 */
    uint32_t round_scales;
    uint32_t global_expert_ids; /* RANK_MAJOR out_topk_idx numbering */
    ncclxDataType_t dtype;      /* NONE: BF16/FP16/FP32; FP8: BF16; QUANT_FWD: any (row bytes
                                   = hidden * size; FP4X2 counts hidden values, 2 per byte) */
    uint32_t scale_bytes;       /* QUANT_FWD: bytes of scales per token row (S * size) */
} ncclx_ref_case_t;

/** One rank's inputs. */
typedef struct {
    uint32_t num_tokens;       /* <= max_tokens */
    const int64_t *topk_idx;   /* [num_tokens, K], -1 = not routed */
    const float *topk_weights; /* [num_tokens, K] */
    const void *tokens;        /* [num_tokens, row bytes] in case.dtype */
    const void *scales;        /* QUANT_FWD: [num_tokens, scale_bytes] */
} ncclx_ref_rank_input_t;

/**
 * One rank's expected dispatch outputs (buffers from ncclx_ref_dispatch_alloc, or sized by
 * ncclx_ref_out_rows and the row sizes below).  EXPERT_MAJOR leaves out_topk_idx and
 * out_topk_weights alone (they may be NULL); NONE leaves out_scales alone (may be NULL);
 * row_valid may be NULL.
 */
typedef struct {
    void *out_tokens;        /* EM [L, R*T, row] / RM [R, T, row]; FP8: E4M3 bytes */
    void *out_scales;        /* FP8: float [.., H/128]; QUANT_FWD: [.., scale_bytes] */
    int32_t *out_counts;     /* EM [L] / RM [R] */
    int64_t *out_topk_idx;   /* RM [R, T, K] (as int64; compare after widening) */
    float *out_topk_weights; /* RM [R, T, K] */
    uint8_t *row_valid;      /* [rows]: 1 where a row was written (rows past counts: 0) */
} ncclx_ref_rank_dispatch_t;

/** Bytes of one output token row, of one output scale row, and the number of output rows. */
size_t ncclx_ref_token_row_bytes(const ncclx_ref_case_t *c);
size_t ncclx_ref_scale_row_bytes(const ncclx_ref_case_t *c);
size_t ncclx_ref_out_rows(const ncclx_ref_case_t *c);

/**
 * Fills out[r] for every rank r from all ranks' inputs (in[0 .. R-1]).  Output buffers are
 * written only where the library writes (valid rows, counts, idx/weights of valid rows);
 * row_valid is written whole.  Neither this nor ncclx_ref_combine allocates, so both may run
 * while a test counts allocations.  A case or input that ncclx_ref_case_check rejects is a
 * bug of the calling test: both print why and abort().
 */
void ncclx_ref_dispatch(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in,
                        ncclx_ref_rank_dispatch_t *out);

/**
 * Combine reference in float64: expert_out[r] is rank r's expert output tensor (same shape as
 * its dispatch out_tokens, in `dtype`: BF16/FP16/FP32); result[r] receives rank r's
 * [num_tokens, H] combined rows in double.  Uses in[r].topk_idx / topk_weights for the
 * routing and (EXPERT_MAJOR) the weights; needs the dispatch reference's counts/positions,
 * so it recomputes them.
 */
void ncclx_ref_combine(const ncclx_ref_case_t *c, ncclxDataType_t dtype,
                       const ncclx_ref_rank_input_t *in, const void *const *expert_out,
                       double *const *result);

/** FP8 E4M3 (round to nearest even, saturating to +-448) of x, as the GPU converts it. */
/** The IEEE single bits of x, and the float of bits u (no conversion: a copy). */
uint32_t ncclx_ref_float_bits(float x);
float ncclx_ref_bits_float(uint32_t u);

uint8_t ncclx_ref_float_to_e4m3(float x);
float ncclx_ref_e4m3_to_float(uint8_t v);

/** BF16 / FP16 conversions (round to nearest even), as the GPU converts. */
uint16_t ncclx_ref_float_to_bf16(float x);
float ncclx_ref_bf16_to_float(uint16_t v);
uint16_t ncclx_ref_float_to_fp16(float x);
float ncclx_ref_fp16_to_float(uint16_t v);

/** The FP8 recipe's scale for a block whose absolute maximum is amax. */
float ncclx_ref_fp8_scale(float amax, int round_scales);

/** |a - b| <= one unit in the last place of dtype at the magnitude of the reference b. */
int ncclx_ref_within_ulp(double got, double ref, ncclxDataType_t dtype);

/*
 * Additions for the GPU tests: checking a case, allocating a rank's expected outputs, and
 * comparing what the library produced with them.
 */

/**
 * 0 when the case (and, if in is not NULL, every rank's input) is one the reference handles:
 * E a multiple of R and at most NCCLX_EP_MAX_EXPERTS, 1 <= K <= NCCLX_EP_MAX_TOPK, a known
 * layout and recipe, a dtype the recipe accepts (FP8: BF16 with H a multiple of 128; FP4X2: H
 * even), num_tokens <= T and topk_idx values in [-1, E).  Else -1, with the offending field
 * named in why (why_len bytes, may be 0).
 */
int ncclx_ref_case_check(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, char *why,
                         size_t why_len);

/** Allocates every buffer of out that the case uses, zeroed (0 on success, -1: no memory). */
int ncclx_ref_dispatch_alloc(const ncclx_ref_case_t *c, ncclx_ref_rank_dispatch_t *out);
void ncclx_ref_dispatch_free(ncclx_ref_rank_dispatch_t *out);

/**
 * Compares a rank's outputs got (copied to the host, out_topk_idx widened to int64) with the
 * reference ref: every count, then only the rows ref->row_valid marks.  Token bytes, scale
 * bytes and indices must be equal, except that FP8 NaN codes (0x7f, 0xff) match each other
 * and float scales / weights match when both are NaN.  Returns the number of mismatching
 * elements and describes the first in why.
 */
size_t ncclx_ref_dispatch_diff(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                               const ncclx_ref_rank_dispatch_t *got, char *why, size_t why_len);

/**
 * Compares n combined values got (in dtype: BF16/FP16/FP32) with the reference in double
 * through ncclx_ref_within_ulp; returns the number of mismatches, the first described in why.
 */
size_t ncclx_ref_combine_diff(ncclxDataType_t dtype, const void *got, const double *ref, size_t n,
                              char *why, size_t why_len);

/*
 * Exact checks.  The kernels promise more than the comparisons above ask for:
 *  - Dispatch moves bytes or computes each FP8 code and scale from the BF16 input alone with
 *    IEEE single operations (fabsf, fmaxf, one division, a saturating RNE conversion) that
 *    the reference repeats, so every byte is determined, NaN codes included (0x7f for every
 *    NaN, whatever its sign, as in CUDA's __nv_cvt_float_to_fp8, which canonicalizes NaN).
 *  - Combine computes, per element, the float64 fma chain of ncclx_ref_combine (expert-major:
 *    weight * row over the top-k entries in k order; rank-major: the rows in rank order, an
 *    fma with weight 1 being a correctly rounded addition), from the same float64 start 0.0,
 *    then rounds once to nearest even.  Identical operations in identical order give the
 *    identical float64 (whether or not the chain was exact), so the result is that float64
 *    rounded once: bit for bit, the sign of zero included.
 */

/** x rounded once to nearest, ties to even, to dtype (BF16, FP16 or FP32), as a double: the
 * subnormals of dtype, +-infinity past its largest finite, NaN and +-0 as they are.  Other
 * dtypes: x unchanged. */
double ncclx_ref_round_to_dtype(double x, ncclxDataType_t dtype);

/** ncclx_ref_dispatch_diff without its allowances: FP8 NaN codes, float scales and weights
 * must be equal bit for bit too. */
size_t ncclx_ref_dispatch_diff_exact(const ncclx_ref_case_t *c,
                                     const ncclx_ref_rank_dispatch_t *ref,
                                     const ncclx_ref_rank_dispatch_t *got, char *why,
                                     size_t why_len);

/** Compares n combined values got (BF16/FP16/FP32) with ncclx_ref_round_to_dtype of the
 * reference's float64 results: equal values with equal signs (so -0 differs from +0); a NaN
 * matches any NaN.  Returns the number of mismatches, the first described in why. */
size_t ncclx_ref_combine_diff_exact(ncclxDataType_t dtype, const void *got, const double *ref,
                                    size_t n, char *why, size_t why_len);

#endif /* NCCLX_TEST_EP_REF_H_ */
