/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * CPU reference of EP LL dispatch and combine.  Written as the plainest loops over (source
 * rank, source token, top-k entry) that follow the contract of include/ncclx/ep.h, with no
 * routing tables: the GPU builds those, and the point here is to compute the same answer by
 * another road.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ep_ref.h"

static size_t dtype_bytes(ncclxDataType_t dtype)
{
    switch (dtype) {
    case NCCLX_BFLOAT16:
    case NCCLX_FLOAT16:
        return 2;
    case NCCLX_FLOAT32:
    case NCCLX_INT32:
        return 4;
    case NCCLX_INT64:
        return 8;
    default:
        return 1; /* FP8, UINT8; FP4X2 is handled by its callers */
    }
}

static uint32_t local_experts(const ncclx_ref_case_t *c)
{
    return c->experts / c->ranks;
}

size_t ncclx_ref_token_row_bytes(const ncclx_ref_case_t *c)
{
    if (c->recipe == NCCLX_EP_RECIPE_FP8) {
        return c->hidden;
    }
    if (c->dtype == NCCLX_FP4X2_E2M1) {
        return c->hidden / 2;
    }
    return (size_t)c->hidden * dtype_bytes(c->dtype);
}

size_t ncclx_ref_scale_row_bytes(const ncclx_ref_case_t *c)
{
    if (c->recipe == NCCLX_EP_RECIPE_FP8) {
        return (size_t)(c->hidden / 128) * sizeof(float);
    }
    return c->recipe == NCCLX_EP_RECIPE_QUANT_FWD ? c->scale_bytes : 0;
}

size_t ncclx_ref_out_rows(const ncclx_ref_case_t *c)
{
    size_t per_source = (size_t)c->ranks * c->max_tokens;
    return c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? local_experts(c) * per_source : per_source;
}

/* Bytes of one input token row: the output row, except FP8 which reads BF16. */
static size_t input_row_bytes(const ncclx_ref_case_t *c)
{
    return c->recipe == NCCLX_EP_RECIPE_FP8 ? (size_t)c->hidden * 2 : ncclx_ref_token_row_bytes(c);
}

static size_t num_counts(const ncclx_ref_case_t *c)
{
    return c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? local_experts(c) : c->ranks;
}

static int64_t expert_at(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t t,
                         uint32_t k)
{
    return in->topk_idx[(size_t)t * c->topk + k];
}

/* Whether entry k is the first of token t naming its expert (a repeated expert gets one row). */
static int first_of_expert(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t t,
                           uint32_t k)
{
    for (uint32_t j = 0; j < k; j++) {
        if (expert_at(c, in, t, j) == expert_at(c, in, t, k)) {
            return 0;
        }
    }
    return 1;
}

/* Whether rank d owns one of token t's experts. */
static int goes_to(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t t,
                   uint32_t d)
{
    for (uint32_t k = 0; k < c->topk; k++) {
        int64_t e = expert_at(c, in, t, k);
        if (e >= 0 && (uint64_t)e / local_experts(c) == d) {
            return 1;
        }
    }
    return 0;
}

static int check_shape(const ncclx_ref_case_t *c, char *why, size_t len)
{
    if (c->ranks == 0 || c->experts == 0 || c->experts % c->ranks != 0 ||
        c->experts > NCCLX_EP_MAX_EXPERTS) {
        snprintf(why, len,
                 "experts=%u, ranks=%u: experts must be a nonzero multiple of ranks, "
                 "at most %u",
                 c->experts, c->ranks, NCCLX_EP_MAX_EXPERTS);
    } else if (c->topk == 0 || c->topk > NCCLX_EP_MAX_TOPK) {
        snprintf(why, len, "topk=%u: not in 1 .. %u", c->topk, NCCLX_EP_MAX_TOPK);
    } else if (c->hidden == 0 || c->max_tokens == 0) {
        snprintf(why, len, "hidden=%u, max_tokens=%u: must be nonzero", c->hidden, c->max_tokens);
    } else if (c->layout != NCCLX_EP_LAYOUT_EXPERT_MAJOR &&
               c->layout != NCCLX_EP_LAYOUT_RANK_MAJOR) {
        snprintf(why, len, "layout=%u: not EXPERT_MAJOR or RANK_MAJOR", c->layout);
    } else {
        return 0;
    }
    return -1;
}

static int check_recipe(const ncclx_ref_case_t *c, char *why, size_t len)
{
    int plain =
        c->dtype == NCCLX_BFLOAT16 || c->dtype == NCCLX_FLOAT16 || c->dtype == NCCLX_FLOAT32;
    if (c->recipe == NCCLX_EP_RECIPE_NONE && !plain) {
        snprintf(why, len, "dtype=%d: recipe NONE takes BF16, FP16 or FP32", (int)c->dtype);
    } else if (c->recipe == NCCLX_EP_RECIPE_FP8 &&
               (c->dtype != NCCLX_BFLOAT16 || c->hidden % 128 != 0)) {
        snprintf(why, len, "dtype=%d, hidden=%u: recipe FP8 takes BF16 and hidden %% 128 == 0",
                 (int)c->dtype, c->hidden);
    } else if (c->recipe == NCCLX_EP_RECIPE_QUANT_FWD &&
               ((unsigned)c->dtype >= NCCLX_NUM_DATA_TYPES ||
                (c->dtype == NCCLX_FP4X2_E2M1 && c->hidden % 2 != 0))) {
        snprintf(why, len, "dtype=%d, hidden=%u: not a QUANT_FWD row", (int)c->dtype, c->hidden);
    } else if (c->recipe != NCCLX_EP_RECIPE_NONE && c->recipe != NCCLX_EP_RECIPE_FP8 &&
               c->recipe != NCCLX_EP_RECIPE_QUANT_FWD) {
        snprintf(why, len, "recipe=%u: not NONE, FP8 or QUANT_FWD", c->recipe);
    } else {
        return 0;
    }
    return -1;
}

static int check_input(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t r,
                       char *why, size_t len)
{
    if (in->num_tokens > c->max_tokens) {
        snprintf(why, len, "in[%u].num_tokens=%u: above max_tokens=%u", r, in->num_tokens,
                 c->max_tokens);
        return -1;
    }
    for (uint32_t t = 0; t < in->num_tokens; t++) {
        for (uint32_t k = 0; k < c->topk; k++) {
            int64_t e = expert_at(c, in, t, k);
            if (e < -1 || e >= (int64_t)c->experts) {
                snprintf(why, len, "in[%u].topk_idx[%u][%u]=%lld: not in [-1, %u)", r, t, k,
                         (long long)e, c->experts);
                return -1;
            }
        }
    }
    return 0;
}

int ncclx_ref_case_check(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, char *why,
                         size_t why_len)
{
    if (check_shape(c, why, why_len) != 0 || check_recipe(c, why, why_len) != 0) {
        return -1;
    }
    for (uint32_t r = 0; in != NULL && r < c->ranks; r++) {
        if (check_input(c, &in[r], r, why, why_len) != 0) {
            return -1;
        }
    }
    return 0;
}

static void check_or_abort(const char *who, const ncclx_ref_case_t *c,
                           const ncclx_ref_rank_input_t *in)
{
    char why[256];
    if (ncclx_ref_case_check(c, in, why, sizeof(why)) != 0) {
        fprintf(stderr, "%s: bad test case: %s\n", who, why);
        abort();
    }
}

/* FP8 recipe of one BF16 token row: per block of 128, scale from the block's |max| (NaN never
 * wins the comparison, as in fmaxf), then each value / scale to E4M3. */
static void quantize_fp8(const ncclx_ref_case_t *c, const uint8_t *src, uint8_t *codes,
                         uint8_t *scales)
{
    for (uint32_t b = 0; b < c->hidden / 128; b++) {
        float x[128], amax = 0.0f, scale;
        for (uint32_t i = 0; i < 128; i++) {
            uint16_t v;
            memcpy(&v, src + ((size_t)b * 128 + i) * 2, sizeof(v));
            x[i] = ncclx_ref_bf16_to_float(v);
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        }
        scale = ncclx_ref_fp8_scale(amax, (int)c->round_scales);
        for (uint32_t i = 0; i < 128; i++) {
            codes[(size_t)b * 128 + i] = ncclx_ref_float_to_e4m3(x[i] / scale);
        }
        memcpy(scales + (size_t)b * sizeof(float), &scale, sizeof(scale));
    }
}

/* Writes token t of in as output row `row` of out (token bytes, scales, valid flag). */
static void write_row(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t t,
                      ncclx_ref_rank_dispatch_t *out, size_t row)
{
    size_t row_bytes = ncclx_ref_token_row_bytes(c), scale_bytes = ncclx_ref_scale_row_bytes(c);
    const uint8_t *src = (const uint8_t *)in->tokens + t * input_row_bytes(c);
    uint8_t *dst = (uint8_t *)out->out_tokens + row * row_bytes;
    if (c->recipe == NCCLX_EP_RECIPE_FP8) {
        quantize_fp8(c, src, dst, (uint8_t *)out->out_scales + row * scale_bytes);
    } else {
        memcpy(dst, src, row_bytes);
    }
    if (c->recipe == NCCLX_EP_RECIPE_QUANT_FWD && scale_bytes > 0) {
        memcpy((uint8_t *)out->out_scales + row * scale_bytes,
               (const uint8_t *)in->scales + t * scale_bytes, scale_bytes);
    }
    if (out->row_valid != NULL) {
        out->row_valid[row] = 1;
    }
}

/* RANK_MAJOR: the token's top-k as seen by rank d (experts elsewhere: -1 and weight 0). */
static void write_topk(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t t,
                       uint32_t d, ncclx_ref_rank_dispatch_t *out, size_t row)
{
    uint32_t L = local_experts(c);
    for (uint32_t k = 0; k < c->topk; k++) {
        int64_t e = expert_at(c, in, t, k);
        size_t i = row * c->topk + k;
        int here = e >= 0 && (uint64_t)e / L == d;
        out->out_topk_idx[i] = !here ? -1 : c->global_expert_ids ? e : e - (int64_t)d * L;
        out->out_topk_weights[i] = here ? in->topk_weights[(size_t)t * c->topk + k] : 0.0f;
    }
}

/* What rank d receives; out_counts serve as the running row counters. */
static void dispatch_rank(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in, uint32_t d,
                          ncclx_ref_rank_dispatch_t *out)
{
    uint32_t L = local_experts(c);
    size_t per_source = (size_t)c->ranks * c->max_tokens;
    if (out->row_valid != NULL) {
        memset(out->row_valid, 0, ncclx_ref_out_rows(c));
    }
    memset(out->out_counts, 0, num_counts(c) * sizeof(int32_t));
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (uint32_t t = 0; t < in[s].num_tokens; t++) {
            if (c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
                if (goes_to(c, &in[s], t, d)) {
                    size_t row = (size_t)s * c->max_tokens + (size_t)out->out_counts[s]++;
                    write_row(c, &in[s], t, out, row);
                    write_topk(c, &in[s], t, d, out, row);
                }
                continue;
            }
            for (uint32_t k = 0; k < c->topk; k++) {
                int64_t e = expert_at(c, &in[s], t, k);
                if (e >= 0 && (uint64_t)e / L == d && first_of_expert(c, &in[s], t, k)) {
                    uint32_t local = (uint32_t)(e - (int64_t)d * L);
                    size_t row = local * per_source + (size_t)out->out_counts[local]++;
                    write_row(c, &in[s], t, out, row);
                }
            }
        }
    }
}

void ncclx_ref_dispatch(const ncclx_ref_case_t *c, const ncclx_ref_rank_input_t *in,
                        ncclx_ref_rank_dispatch_t *out)
{
    check_or_abort("ncclx_ref_dispatch", c, in);
    for (uint32_t d = 0; d < c->ranks; d++) {
        dispatch_rank(c, in, d, &out[d]);
    }
}

static double load(ncclxDataType_t dtype, const void *base, size_t i)
{
    if (dtype == NCCLX_FLOAT32) {
        float v;
        memcpy(&v, (const uint8_t *)base + i * 4, sizeof(v));
        return v;
    }
    uint16_t v;
    memcpy(&v, (const uint8_t *)base + i * 2, sizeof(v));
    return dtype == NCCLX_BFLOAT16 ? ncclx_ref_bf16_to_float(v) : ncclx_ref_fp16_to_float(v);
}

/*
 * EXPERT_MAJOR: the row of (s, t) in expert e's list is the number of earlier tokens (in
 * (source, token) order) naming e, kept in rows_before[e] while walking tokens in that order.
 */
static void combine_expert_major(const ncclx_ref_case_t *c, ncclxDataType_t dtype,
                                 const ncclx_ref_rank_input_t *in, const void *const *expert_out,
                                 double *const *result)
{
    uint32_t rows_before[NCCLX_EP_MAX_EXPERTS] = {0};
    uint32_t L = local_experts(c);
    size_t per_source = (size_t)c->ranks * c->max_tokens;
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (uint32_t t = 0; t < in[s].num_tokens; t++) {
            size_t row[NCCLX_EP_MAX_TOPK];
            for (uint32_t k = 0; k < c->topk; k++) {
                int64_t e = expert_at(c, &in[s], t, k);
                row[k] = e < 0 ? 0 : (size_t)(e % L) * per_source + rows_before[e];
            }
            for (uint32_t h = 0; h < c->hidden; h++) {
                double acc = 0.0;
                for (uint32_t k = 0; k < c->topk; k++) {
                    int64_t e = expert_at(c, &in[s], t, k);
                    if (e >= 0) {
                        double w = in[s].topk_weights[(size_t)t * c->topk + k];
                        double x = load(dtype, expert_out[e / L], row[k] * c->hidden + h);
                        acc = fma(w, x, acc);
                    }
                }
                result[s][(size_t)t * c->hidden + h] = acc;
            }
            for (uint32_t k = 0; k < c->topk; k++) {
                int64_t e = expert_at(c, &in[s], t, k);
                if (e >= 0 && first_of_expert(c, &in[s], t, k)) {
                    rows_before[e]++;
                }
            }
        }
    }
}

/* RANK_MAJOR: walking destinations in increasing rank order adds each token's rows in that
 * order; the row of (s, t) on d counts s's earlier tokens sent to d. */
static void combine_rank_major(const ncclx_ref_case_t *c, ncclxDataType_t dtype,
                               const ncclx_ref_rank_input_t *in, const void *const *expert_out,
                               double *const *result)
{
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (size_t i = 0; i < (size_t)in[s].num_tokens * c->hidden; i++) {
            result[s][i] = 0.0;
        }
        for (uint32_t d = 0; d < c->ranks; d++) {
            size_t row = (size_t)s * c->max_tokens;
            for (uint32_t t = 0; t < in[s].num_tokens; t++) {
                if (!goes_to(c, &in[s], t, d)) {
                    continue;
                }
                for (uint32_t h = 0; h < c->hidden; h++) {
                    result[s][(size_t)t * c->hidden + h] +=
                        load(dtype, expert_out[d], row * c->hidden + h);
                }
                row++;
            }
        }
    }
}

void ncclx_ref_combine(const ncclx_ref_case_t *c, ncclxDataType_t dtype,
                       const ncclx_ref_rank_input_t *in, const void *const *expert_out,
                       double *const *result)
{
    check_or_abort("ncclx_ref_combine", c, in);
    if (dtype != NCCLX_BFLOAT16 && dtype != NCCLX_FLOAT16 && dtype != NCCLX_FLOAT32) {
        fprintf(stderr, "ncclx_ref_combine: bad test case: dtype=%d is not BF16/FP16/FP32\n",
                (int)dtype);
        abort();
    }
    if (c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        combine_expert_major(c, dtype, in, expert_out, result);
    } else {
        combine_rank_major(c, dtype, in, expert_out, result);
    }
}
