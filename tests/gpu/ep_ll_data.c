/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL test inputs: routings, token rows, scales, weights and expert outputs drawn at
 * random, the reference's expected outputs, and the upload to every rank's device buffers.
 * Nothing here allocates (tests count allocations around it).
 */
#include <math.h>
#include <stdio.h>

#include "gpu/ep_ll_harness.h"

ep_routing_t ep_routing_default(void)
{
    ep_routing_t rt;
    memset(&rt, 0, sizeof(rt));
    rt.kind = EP_ROUTE_RANDOM;
    rt.unrouted = 0.1f;
    return rt;
}

static int has_expert(const int64_t *row, uint32_t n, int64_t e)
{
    for (uint32_t k = 0; k < n; k++) {
        if (row[k] == e) {
            return 1;
        }
    }
    return 0;
}

/* An expert in [first, first + n) that row[0 .. k) does not name yet, or any if none is left. */
static int64_t fresh_expert(const int64_t *row, uint32_t k, uint32_t first, uint32_t n)
{
    int64_t e = first + ep_rand_below(n);
    if (k >= n) {
        return e; /* every expert of the range is taken: repeat one */
    }
    while (has_expert(row, k, e)) {
        e = first + ep_rand_below(n);
    }
    return e;
}

static void route_token(const ep_run_t *run, const ep_routing_t *rt, uint32_t t, int64_t *row)
{
    const uint32_t K = run->c.topk, E = run->c.experts, L = E / run->c.ranks;
    const uint32_t d = ep_rand_below(run->c.ranks);
    for (uint32_t k = 0; k < K; k++) {
        switch (rt->kind) {
        case EP_ROUTE_ONE_EXPERT:
            row[k] = k == t % K ? (int64_t)rt->expert : -1;
            break;
        case EP_ROUTE_ONE_RANK:
            row[k] = fresh_expert(row, k, d * L, L);
            break;
        case EP_ROUTE_REPEATS:
            /* With replacement, and the last entry always repeats the first. */
            row[k] = k > 0 && k == K - 1 ? row[0] : (int64_t)ep_rand_below(E);
            break;
        default:
            row[k] = fresh_expert(row, k, 0, E);
            break;
        }
    }
    for (uint32_t k = 0; k < K; k++) {
        if (rt->unrouted > 0.0f && ep_rand_unit() < rt->unrouted) {
            row[k] = -1;
        }
    }
}

/* Ids outside [-1, E) in the first two tokens; the reference sees -1 there. */
static void spoil_routing(const ep_run_t *run, ep_rank_t *b)
{
    const uint32_t K = run->c.topk;
    const int64_t huge = run->k.idx_dtype == NCCLX_INT64 ? (int64_t)1 << 40 : INT32_MIN;
    if (b->num_tokens >= 1) {
        b->idx[0] = run->c.experts; /* one past the last expert */
        if (K >= 2) {
            b->idx[K - 1] = -2;
        }
    }
    if (b->num_tokens >= 2) {
        b->idx[K] = huge;
    }
}

static void fill_routing(ep_run_t *run, const ep_routing_t *rt, uint32_t r)
{
    ep_rank_t *b = &run->r[r];
    const uint32_t T = run->c.max_tokens, K = run->c.topk;
    if (rt->empty_ranks & (1u << r)) {
        b->num_tokens = 0;
    } else if (!rt->keep_tokens) {
        b->num_tokens = rt->full ? T : 1 + ep_rand_below(T);
    }
    for (uint32_t t = 0; t < b->num_tokens; t++) {
        route_token(run, rt, t, b->idx + (size_t)t * K);
    }
    for (size_t i = (size_t)b->num_tokens * K; i < (size_t)T * K; i++) {
        b->idx[i] = -1; /* never read: past num_tokens */
    }
    if (rt->bad_ranks & (1u << r)) {
        spoil_routing(run, b);
    }
    for (size_t i = 0; i < (size_t)T * K; i++) {
        int64_t e = b->idx[i];
        const int valid = e >= 0 && e < (int64_t)run->c.experts;
        const int64_t owner = valid ? e / (int64_t)(run->c.experts / run->team->ranks) : 0;
        b->ref_idx[i] = valid && !((run->masked >> owner) & 1u) ? e : -1;
        if (run->k.idx_dtype == NCCLX_INT64) {
            ((int64_t *)b->idx_upload)[i] = e;
        } else {
            ((int32_t *)b->idx_upload)[i] = (int32_t)e;
        }
    }
}

static void fill_random_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = ep_rand_u64();
        size_t m = n - i < 8 ? n - i : 8;
        memcpy(p + i, &v, m);
    }
}

/* FP8 recipe input: finite BF16 with a random magnitude per 128-element block, 1 block in 16
 * all zeros (the scale's 1e-4 floor). */
static void fill_bf16_blocks(uint8_t *row, uint32_t hidden)
{
    for (uint32_t b = 0; b < hidden / 128; b++) {
        int zero = ep_rand_below(16) == 0;
        float magnitude = ldexpf(1.0f, (int)ep_rand_below(21) - 10);
        for (uint32_t i = 0; i < 128; i++) {
            float x = zero ? 0.0f : (2.0f * ep_rand_unit() - 1.0f) * magnitude;
            uint16_t v = ncclx_ref_float_to_bf16(x);
            memcpy(row + ((size_t)b * 128 + i) * 2, &v, sizeof(v));
        }
    }
}

/* ---- EP_VALUES_SPECIAL_TOKENS: BF16 codes at the edges of the FP8 recipe ---- */

static uint16_t rand_sign16(void)
{
    return ep_rand_below(2) ? 0x8000u : 0;
}

/* A NaN: exponent all ones, a random nonzero fraction (signalling when its top bit is clear). */
static uint16_t bf16_nan(void)
{
    return (uint16_t)(rand_sign16() | 0x7f80u | (1u + ep_rand_below(127)));
}

/* A BF16 subnormal: exponent 0, nonzero fraction. */
static uint16_t bf16_subnormal(void)
{
    return (uint16_t)(rand_sign16() | (1u + ep_rand_below(127)));
}

/* A value of magnitude below 2^e (ordinary values: both signs, 24 random bits). */
static uint16_t bf16_below(int e)
{
    float x = ldexpf((float)(ep_rand_u64() >> 40), e - 24);
    return (uint16_t)(rand_sign16() | ncclx_ref_float_to_bf16(x));
}

/* An E4M3 rounding tie times 2^e: a 4-bit significand 1.xxx1 (halfway between two normal
 * codes) or an odd multiple of 2^-10 (halfway between two subnormal codes). */
static uint16_t bf16_e4m3_tie(int e)
{
    float tie = ep_rand_below(4) == 0 ? ldexpf((float)(2u * ep_rand_below(8) + 1u), -10)
                                      : ldexpf((float)(16u + 2u * ep_rand_below(8) + 1u),
                                               (int)ep_rand_below(14) - 10);
    return (uint16_t)(rand_sign16() | ncclx_ref_float_to_bf16(ldexpf(tie, e)));
}

enum {
    BLOCK_ORDINARY,
    BLOCK_ZEROS,       /* +0 and -0: amax 0, the 1e-4 floor */
    BLOCK_ALL_NAN,     /* amax ignores NaN: the floor again, every code NaN */
    BLOCK_SOME_NAN,    /* NaN among ordinary values */
    BLOCK_INF,         /* one +Inf: scale Inf, finite values to +-0, Inf / Inf = NaN */
    BLOCK_INF_NAN,     /* -Inf and NaN among ordinary values */
    BLOCK_SUBNORMALS,  /* only BF16 subnormals */
    BLOCK_TINY,        /* subnormals and the smallest normals */
    BLOCK_BELOW_FLOOR, /* amax below 1e-4 */
    BLOCK_HUGE,        /* near the largest BF16 (scale near 2^120) */
    BLOCK_HUGE_TINY,   /* 1e38 next to values of magnitude 1 (those quantize to 0) */
    BLOCK_TIES,        /* amax 2^k and E4M3 ties times 2^(k - 8): exact ties with round_scales */
    BLOCK_KINDS
};

static uint16_t special_value(int kind, uint32_t i, uint32_t marked, int e)
{
    switch (kind) {
    case BLOCK_ZEROS:
        return rand_sign16();
    case BLOCK_ALL_NAN:
        return bf16_nan();
    case BLOCK_SOME_NAN:
        return ep_rand_below(8) == 0 ? bf16_nan() : bf16_below(e);
    case BLOCK_INF:
        return i == marked ? 0x7f80u : bf16_below(e);
    case BLOCK_INF_NAN:
        return i == marked ? 0xff80u : i == (marked + 1) % 128 ? bf16_nan() : bf16_below(e);
    case BLOCK_SUBNORMALS:
        return bf16_subnormal();
    case BLOCK_TINY:
        return ep_rand_below(2) ? bf16_subnormal() : bf16_below(-125);
    case BLOCK_BELOW_FLOOR:
        return bf16_below(-14);
    case BLOCK_HUGE:
        return (uint16_t)(rand_sign16() | 0x7f00u | ep_rand_below(128));
    case BLOCK_HUGE_TINY:
        return i == marked ? (uint16_t)(rand_sign16() | 0x7e96u) : bf16_below(1);
    case BLOCK_TIES:
        return i == marked ? ncclx_ref_float_to_bf16(ldexpf(1.0f, e)) : bf16_e4m3_tie(e - 8);
    default:
        return bf16_below(e);
    }
}

/* One row of 128-element blocks, each of a random kind. */
static void fill_bf16_special(uint8_t *row, uint32_t hidden)
{
    for (uint32_t b = 0; b < hidden / 128; b++) {
        const int kind = (int)ep_rand_below(BLOCK_KINDS);
        const uint32_t marked = ep_rand_below(128);
        const int e = (int)ep_rand_below(21) - 10;
        for (uint32_t i = 0; i < 128; i++) {
            uint16_t v = special_value(kind, i, marked, e);
            memcpy(row + ((size_t)b * 128 + i) * 2, &v, sizeof(v));
        }
    }
}

/* ---- EP_VALUES_SIGNED_WEIGHTS ---- */

/* Token t's weights: one magnitude class per token, so that whole sums land where the combine
 * dtypes round: below 2^-137 (float subnormal weights: BF16 and FP16 results +-0), near
 * 2^-127 (float and BF16 subnormals), near 2^-15 (FP16 subnormals), near 1, near 2^17 (FP16
 * overflow), or powers of two 2^-3 .. 2^3 (sums of few significant bits: exact ties).  1 in 8
 * entries is +0 and 1 in 8 is -0; the others have either sign. */
static void signed_weights(float *w, uint32_t K)
{
    static const int class_exp[] = {-140, -128, -16, 0, 15};
    const uint32_t cls = ep_rand_below(6);
    for (uint32_t k = 0; k < K; k++) {
        const uint32_t pick = ep_rand_below(8);
        const float sign = ep_rand_below(2) ? -1.0f : 1.0f;
        const int j = (int)ep_rand_below(4);
        if (pick < 2) {
            w[k] = pick == 0 ? 0.0f : -0.0f;
        } else if (cls == 5) {
            w[k] = sign * ldexpf(1.0f, (int)ep_rand_below(7) - 3);
        } else {
            w[k] = sign * ldexpf((float)(ep_rand_u64() >> 40), class_exp[cls] + j - 24);
        }
    }
}

static void fill_tokens(ep_run_t *run, uint32_t r, uint32_t values)
{
    ep_rank_t *b = &run->r[r];
    const uint32_t K = run->c.topk;
    for (uint32_t t = 0; t < b->num_tokens; t++) {
        uint8_t *row = b->tokens + (size_t)t * run->in_row;
        if (run->c.recipe == NCCLX_EP_RECIPE_FP8 && (values & EP_VALUES_SPECIAL_TOKENS)) {
            fill_bf16_special(row, run->c.hidden);
        } else if (run->c.recipe == NCCLX_EP_RECIPE_FP8) {
            fill_bf16_blocks(row, run->c.hidden);
        } else {
            fill_random_bytes(row, run->in_row); /* forwarded untouched: any bits */
        }
    }
    fill_random_bytes(b->scales, (size_t)b->num_tokens * run->scale_row);
    for (size_t t = 0; t < run->c.max_tokens; t++) {
        for (size_t k = 0; k < K; k++) {
            b->weights[t * K + k] = ep_rand_unit();
        }
        if (values & EP_VALUES_SIGNED_WEIGHTS) {
            signed_weights(b->weights + t * K, K);
        }
    }
}

static void store_value(ncclxDataType_t dtype, uint8_t *p, float x)
{
    if (dtype == NCCLX_FLOAT32) {
        memcpy(p, &x, sizeof(x));
    } else {
        uint16_t v =
            dtype == NCCLX_BFLOAT16 ? ncclx_ref_float_to_bf16(x) : ncclx_ref_float_to_fp16(x);
        memcpy(p, &v, sizeof(v));
    }
}

/* A row's magnitude for EP_VALUES_WIDE_EXPERT_OUT: 2^e over the dtype's range (values stay
 * finite: FP16 rows below 2^15). */
static float row_magnitude(ncclxDataType_t dt)
{
    return dt == NCCLX_FLOAT16 ? ldexpf(1.0f, (int)ep_rand_below(45) - 30)
                               : ldexpf(1.0f, (int)ep_rand_below(201) - 140);
}

/* Expert outputs: values in [-2, 2) (times a per-row magnitude with
 * EP_VALUES_WIDE_EXPERT_OUT) in the rows the dispatch fills, NaN (0xff bytes) in every other
 * row, so that a combine reading a row it should not turns the result into NaN. */
static void fill_expert_out(ep_run_t *run, uint32_t r, uint32_t values)
{
    ep_rank_t *b = &run->r[r];
    const ncclxDataType_t dt = run->k.combine_dtype;
    const size_t esize = run->combine_row / run->c.hidden;
    memset(b->expert_out, 0xff, run->out_rows * run->combine_row);
    for (size_t row = 0; row < run->out_rows; row++) {
        if (!b->want.row_valid[row]) {
            continue;
        }
        const float magnitude = (values & EP_VALUES_WIDE_EXPERT_OUT) ? row_magnitude(dt) : 1.0f;
        for (uint32_t h = 0; h < run->c.hidden; h++) {
            store_value(dt, b->expert_out + row * run->combine_row + h * esize,
                        (4.0f * ep_rand_unit() - 2.0f) * magnitude);
        }
    }
}

static void reference(ep_run_t *run, uint32_t values)
{
    const uint32_t R = run->team->ranks;
    ncclx_ref_rank_input_t in[EP_MAX_RANKS] = {{0}};
    ncclx_ref_rank_dispatch_t want[EP_MAX_RANKS];
    const void *expert_out[EP_MAX_RANKS];
    double *result[EP_MAX_RANKS];
    char why[256];
    for (uint32_t r = 0; r < R; r++) {
        ep_rank_t *b = &run->r[r];
        in[r].num_tokens = (run->masked >> r) & 1u ? 0 : b->num_tokens;
        in[r].topk_idx = b->ref_idx;
        in[r].topk_weights = b->weights;
        in[r].tokens = b->tokens;
        in[r].scales = b->scales;
        want[r] = b->want;
    }
    if (ncclx_ref_case_check(&run->c, in, why, sizeof(why)) != 0) {
        fail_msg("bad test input: %s", why);
    }
    ncclx_ref_dispatch(&run->c, in, want);
    for (uint32_t r = 0; r < R; r++) {
        fill_expert_out(run, r, values);
        expert_out[r] = run->r[r].expert_out;
        result[r] = run->r[r].want_out;
    }
    ncclx_ref_combine(&run->c, run->k.combine_dtype, in, expert_out, result);
}

static void upload(const ep_run_t *run, uint32_t r)
{
    const ep_rank_t *b = &run->r[r];
    const size_t T = run->c.max_tokens, K = run->c.topk;
    const size_t idx_bytes = run->k.idx_dtype == NCCLX_INT64 ? 8 : 4;
    assert_cuda_ok(cudaMemcpy(b->d_idx, b->idx_upload, T * K * idx_bytes, cudaMemcpyHostToDevice));
    assert_cuda_ok(
        cudaMemcpy(b->d_weights, b->weights, T * K * sizeof(float), cudaMemcpyHostToDevice));
    assert_cuda_ok(cudaMemcpy(b->d_tokens, b->tokens, T * run->in_row, cudaMemcpyHostToDevice));
    assert_cuda_ok(cudaMemcpy(b->d_scales, b->scales, T * run->scale_row, cudaMemcpyHostToDevice));
    assert_cuda_ok(cudaMemcpy(b->d_expert_out, b->expert_out, run->out_rows * run->combine_row,
                              cudaMemcpyHostToDevice));
}

void ep_run_fill(ep_run_t *run, const ep_routing_t *routing)
{
    const uint32_t R = run->team->ranks;
    for (uint32_t r = 0; r < R; r++) {
        fill_routing(run, routing, r);
        fill_tokens(run, r, routing->values);
        run->r[r].have_prev = 0;
    }
    reference(run, routing->values);
    for (uint32_t r = 0; r < R; r++) {
        upload(run, r);
    }
    /* Copies from pageable memory may still be in flight on the legacy stream, which the
     * ranks' non-blocking streams do not wait for. */
    assert_cuda_ok(cudaDeviceSynchronize());
}
