/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Holding and judging a rank's EP outputs against the reference: allocation of the expected
 * buffers, and element-by-element comparison that reports the first difference by name.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ep_ref.h"

int ncclx_ref_dispatch_alloc(const ncclx_ref_case_t *c, ncclx_ref_rank_dispatch_t *out)
{
    ncclx_ref_rank_dispatch_t b;
    size_t rows = ncclx_ref_out_rows(c), scale_bytes = ncclx_ref_scale_row_bytes(c);
    int rank_major = c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR;
    size_t counts = rank_major ? c->ranks : c->experts / c->ranks;
    memset(&b, 0, sizeof(b));
    /* +1: calloc(0) may return NULL, which would read as a failure. */
    b.out_tokens = calloc(rows * ncclx_ref_token_row_bytes(c) + 1, 1);
    b.out_scales = scale_bytes > 0 ? calloc(rows * scale_bytes, 1) : NULL;
    b.out_counts = calloc(counts + 1, sizeof(int32_t));
    b.out_topk_idx = rank_major ? calloc(rows * c->topk, sizeof(int64_t)) : NULL;
    b.out_topk_weights = rank_major ? calloc(rows * c->topk, sizeof(float)) : NULL;
    b.row_valid = calloc(rows + 1, 1);
    if (b.out_tokens == NULL || (scale_bytes > 0 && b.out_scales == NULL) || b.out_counts == NULL ||
        (rank_major && b.out_topk_idx == NULL) || (rank_major && b.out_topk_weights == NULL) ||
        b.row_valid == NULL) {
        ncclx_ref_dispatch_free(&b);
        return -1;
    }
    *out = b;
    return 0;
}

void ncclx_ref_dispatch_free(ncclx_ref_rank_dispatch_t *out)
{
    free(out->out_tokens);
    free(out->out_scales);
    free(out->out_counts);
    free(out->out_topk_idx);
    free(out->out_topk_weights);
    free(out->row_valid);
    memset(out, 0, sizeof(*out));
}

typedef struct {
    char *why;
    size_t len;
    size_t mismatches;
    int exact; /* 1: NaNs must match bit for bit too */
} diff_t;

/* Counts one mismatch; the first one is described. */
__attribute__((format(printf, 2, 3))) static void mismatch(diff_t *d, const char *fmt, ...)
{
    if (d->mismatches++ == 0 && d->len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->why, d->len, fmt, ap);
        va_end(ap);
    }
}

static int same_float(const diff_t *d, float a, float b)
{
    return (!d->exact && isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof(a)) == 0;
}

/* "row 7 (expert 1, slot 2)" or "row 7 (source 1, slot 2)". */
static void row_name(const ncclx_ref_case_t *c, size_t row, char *buf, size_t len)
{
    size_t block =
        c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? c->max_tokens : (size_t)c->ranks * c->max_tokens;
    snprintf(buf, len, "row %zu (%s %zu, slot %zu)", row,
             c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? "source" : "local expert", row / block,
             row % block);
}

static void diff_tokens(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                        const ncclx_ref_rank_dispatch_t *got, size_t row, diff_t *d)
{
    size_t bytes = ncclx_ref_token_row_bytes(c);
    const uint8_t *a = (const uint8_t *)got->out_tokens + row * bytes;
    const uint8_t *b = (const uint8_t *)ref->out_tokens + row * bytes;
    int fp8 = c->recipe == NCCLX_EP_RECIPE_FP8;
    char name[96];
    for (size_t i = 0; i < bytes; i++) {
        int both_nan = !d->exact && fp8 && (a[i] & 0x7fu) == 0x7fu && (b[i] & 0x7fu) == 0x7fu;
        if (a[i] != b[i] && !both_nan) {
            row_name(c, row, name, sizeof(name));
            mismatch(d, "out_tokens %s byte %zu: 0x%02x, expected 0x%02x", name, i, a[i], b[i]);
        }
    }
}

static void diff_scales(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                        const ncclx_ref_rank_dispatch_t *got, size_t row, diff_t *d)
{
    size_t bytes = ncclx_ref_scale_row_bytes(c);
    const uint8_t *a = (const uint8_t *)got->out_scales + row * bytes;
    const uint8_t *b = (const uint8_t *)ref->out_scales + row * bytes;
    char name[96];
    for (size_t i = 0; i < bytes;) {
        size_t step = c->recipe == NCCLX_EP_RECIPE_FP8 ? sizeof(float) : 1;
        float fa = 0.0f, fb = 0.0f;
        if (step == sizeof(float)) {
            memcpy(&fa, a + i, sizeof(fa));
            memcpy(&fb, b + i, sizeof(fb));
        }
        if (step == sizeof(float) ? !same_float(d, fa, fb) : a[i] != b[i]) {
            row_name(c, row, name, sizeof(name));
            mismatch(d, "out_scales %s byte %zu: %a (0x%02x), expected %a (0x%02x)", name, i,
                     (double)fa, a[i], (double)fb, b[i]);
        }
        i += step;
    }
}

static void diff_topk(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                      const ncclx_ref_rank_dispatch_t *got, size_t row, diff_t *d)
{
    char name[96];
    for (size_t k = 0; k < c->topk; k++) {
        size_t i = row * c->topk + k;
        if (got->out_topk_idx[i] != ref->out_topk_idx[i]) {
            row_name(c, row, name, sizeof(name));
            mismatch(d, "out_topk_idx %s [%zu]: %lld, expected %lld", name, k,
                     (long long)got->out_topk_idx[i], (long long)ref->out_topk_idx[i]);
        }
        if (!same_float(d, got->out_topk_weights[i], ref->out_topk_weights[i])) {
            row_name(c, row, name, sizeof(name));
            mismatch(d, "out_topk_weights %s [%zu]: %a, expected %a", name, k,
                     (double)got->out_topk_weights[i], (double)ref->out_topk_weights[i]);
        }
    }
}

static size_t dispatch_diff(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                            const ncclx_ref_rank_dispatch_t *got, diff_t d)
{
    size_t counts = c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR ? c->ranks : c->experts / c->ranks;
    if (d.len > 0) {
        d.why[0] = '\0';
    }
    for (size_t i = 0; i < counts; i++) {
        if (got->out_counts[i] != ref->out_counts[i]) {
            mismatch(&d, "out_counts[%zu] = %d, expected %d", i, got->out_counts[i],
                     ref->out_counts[i]);
        }
    }
    for (size_t row = 0; row < ncclx_ref_out_rows(c); row++) {
        if (!ref->row_valid[row]) {
            continue;
        }
        diff_tokens(c, ref, got, row, &d);
        if (ncclx_ref_scale_row_bytes(c) > 0) {
            diff_scales(c, ref, got, row, &d);
        }
        if (c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
            diff_topk(c, ref, got, row, &d);
        }
    }
    return d.mismatches;
}

size_t ncclx_ref_dispatch_diff(const ncclx_ref_case_t *c, const ncclx_ref_rank_dispatch_t *ref,
                               const ncclx_ref_rank_dispatch_t *got, char *why, size_t why_len)
{
    diff_t d = {why, why_len, 0, 0};
    return dispatch_diff(c, ref, got, d);
}

size_t ncclx_ref_dispatch_diff_exact(const ncclx_ref_case_t *c,
                                     const ncclx_ref_rank_dispatch_t *ref,
                                     const ncclx_ref_rank_dispatch_t *got, char *why,
                                     size_t why_len)
{
    diff_t d = {why, why_len, 0, 1};
    return dispatch_diff(c, ref, got, d);
}

/* One combined value of dtype (BF16/FP16/FP32) at index i of got, exactly, as a double. */
static double combined_value(ncclxDataType_t dtype, const void *got, size_t i)
{
    if (dtype == NCCLX_FLOAT32) {
        float f;
        memcpy(&f, (const uint8_t *)got + i * 4, sizeof(f));
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)got + i * 2, sizeof(h));
    return dtype == NCCLX_BFLOAT16 ? ncclx_ref_bf16_to_float(h) : ncclx_ref_fp16_to_float(h);
}

size_t ncclx_ref_combine_diff(ncclxDataType_t dtype, const void *got, const double *ref, size_t n,
                              char *why, size_t why_len)
{
    diff_t d = {why, why_len, 0, 0};
    if (why_len > 0) {
        why[0] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        double v = combined_value(dtype, got, i);
        if (!ncclx_ref_within_ulp(v, ref[i], dtype)) {
            mismatch(&d, "element %zu: %.9g, expected %.17g (one ulp of dtype %d)", i, v, ref[i],
                     (int)dtype);
        }
    }
    return d.mismatches;
}

size_t ncclx_ref_combine_diff_exact(ncclxDataType_t dtype, const void *got, const double *ref,
                                    size_t n, char *why, size_t why_len)
{
    diff_t d = {why, why_len, 0, 1};
    if (why_len > 0) {
        why[0] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        double v = combined_value(dtype, got, i);
        double want = ncclx_ref_round_to_dtype(ref[i], dtype);
        int same = isnan(v) ? isnan(want) : v == want && signbit(v) == signbit(want);
        if (!same) {
            mismatch(&d, "element %zu: %a, expected %a (the float64 sum %a rounded to dtype %d)", i,
                     v, want, ref[i], (int)dtype);
        }
    }
    return d.mismatches;
}
