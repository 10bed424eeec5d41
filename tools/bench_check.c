/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench --check: one dispatch + combine on outputs first filled with a sentinel (0xff
 * bytes: NaN rows, counts of -1), compared with values computed on the host from the seed.
 * Dispatch: every count and every received row (exact bytes; FP8: the scale exactly and each
 * element within E4M3 rounding of the token), rank-major top-k ids and weights.  Combine:
 * identity experts (expert-major: the token itself; rank-major: the token times its weights on
 * that rank), so the result is sum_k w_k * token, within a unit in the last place of the dtype.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Host copies of one rank's received rows, one slab at a time. */
typedef struct {
    int32_t *counts;
    unsigned char *rows;
    float *scales;
    int32_t *idx;
    float *weights;
} bench_host_slab_t;

static void bench_host_slab_free(bench_host_slab_t *h)
{
    free(h->counts);
    free(h->rows);
    free(h->scales);
    free(h->idx);
    free(h->weights);
}

static int bench_host_slab_alloc(const bench_team_t *t, bench_host_slab_t *h)
{
    const size_t rows = t->slab_rows, K = t->o.topk;
    memset(h, 0, sizeof(*h));
    h->counts = malloc(t->slabs * sizeof(int32_t));
    h->rows = malloc(rows * t->out_row_bytes);
    h->scales = malloc(rows * (t->o.hidden / 128 + 1) * sizeof(float));
    h->idx = malloc(rows * K * sizeof(int32_t));
    h->weights = malloc(rows * K * sizeof(float));
    if (h->counts == NULL || h->rows == NULL || h->scales == NULL || h->idx == NULL ||
        h->weights == NULL) {
        bench_host_slab_free(h);
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    return 0;
}

int bench_fill_expert_out(bench_team_t *t, const bench_inputs_t *in)
{
    const size_t H = t->o.hidden, elt = bench_dtype_size(t->o.dtype);
    void *buf = malloc((size_t)t->slab_rows * H * elt);
    int rc = 0;
    if (buf == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the expert outputs\n");
        return -1;
    }
    for (uint32_t i = 0; i < t->nlocal && rc == 0; i++) {
        const bench_rank_t *r = &t->r[i];
        bench_map_t map;
        if (bench_map_build(in, t->o.layout, r->rank, t->tokens, &map) != 0) {
            rc = -1;
            break;
        }
        for (uint32_t a = 0; a < map.slabs && rc == 0; a++) {
            const uint32_t *src = map.src + (size_t)a * map.slab_rows;
            cudaError_t err;
            for (uint32_t j = 0; j < (uint32_t)map.count[a]; j++) {
                uint32_t s = src[j] / t->max_tokens, tok = src[j] % t->max_tokens;
                for (size_t c = 0; c < H; c++) {
                    bench_store(buf, j * H + c, t->o.dtype,
                                bench_expert_value(in, t->o.layout, t->o.dtype, r->rank, s, tok,
                                                   (uint32_t)c));
                }
            }
            err = cudaMemcpy((char *)r->expert_out + (size_t)a * map.slab_rows * H * elt, buf,
                             (size_t)map.count[a] * H * elt, cudaMemcpyHostToDevice);
            rc = err == cudaSuccess ? 0
                                    : bench_fail_cuda(err, "cudaMemcpy (expert_out)", (int)r->rank);
        }
        bench_map_free(&map);
    }
    free(buf);
    return rc;
}

static int bench_fill_sentinel(bench_team_t *t, bench_rank_t *r)
{
    const size_t rows = (size_t)t->slabs * t->slab_rows, H = t->o.hidden, K = t->o.topk;
    struct {
        void *p;
        size_t bytes;
    } outs[] = {
        {r->out_tokens, rows * t->out_row_bytes},
        {r->out_scales, rows * (H / 128) * sizeof(float)},
        {r->out_counts, t->slabs * sizeof(int32_t)},
        {r->out_topk_idx, (size_t)t->ranks * t->max_tokens * K * sizeof(int32_t)},
        {r->out_topk_weights, (size_t)t->ranks * t->max_tokens * K * sizeof(float)},
        {r->out, (size_t)t->max_tokens * H * bench_dtype_size(t->o.dtype)},
    };
    for (size_t b = 0; b < sizeof(outs) / sizeof(outs[0]); b++) {
        if (outs[b].p != NULL) {
            BENCH_CUDA(cudaMemsetAsync(outs[b].p, 0xff, outs[b].bytes, r->stream),
                       "cudaMemsetAsync (sentinel)", r->rank);
        }
    }
    return 0;
}

static void bench_report(uint64_t *wrong, uint32_t rank, const char *what, uint32_t a, uint32_t j,
                         size_t c, double got, double want)
{
    if ((*wrong)++ == 0) {
        fprintf(stderr, "ncclx-bench: rank %u: %s [%u, %u, %zu]: got %.8g, expected %.8g\n", rank,
                what, a, j, c, got, want);
    }
}

/* One received row: token (s, tok) in the tokens' dtype, or FP8 with its scales. */
static void bench_check_row(const bench_team_t *t, const bench_inputs_t *in,
                            const bench_host_slab_t *h, uint32_t rank, uint32_t a, uint32_t j,
                            uint32_t s, uint32_t tok, uint64_t *wrong)
{
    const size_t H = t->o.hidden;
    const unsigned char *row = h->rows + (size_t)j * t->out_row_bytes;
    if (t->o.recipe != NCCLX_EP_RECIPE_FP8) {
        for (size_t c = 0; c < H; c++) {
            double want = bench_token_value(in, s, tok, (uint32_t)c);
            double got = bench_load(row, c, t->o.dtype);
            if (!(got == want)) {
                bench_report(wrong, rank, "dispatch out_tokens", a, j, c, got, want);
            }
        }
        return;
    }
    for (size_t b = 0; b < H / 128; b++) {
        float amax = 0.0f, want_scale, scale = h->scales[(size_t)j * (H / 128) + b];
        for (size_t c = b * 128; c < (b + 1) * 128; c++) {
            amax = fmaxf(amax, fabsf(bench_token_value(in, s, tok, (uint32_t)c)));
        }
        want_scale = fmaxf(amax, 1e-4f) / 448.0f; /* the recipe's scale, as the GPU computes it */
        if (!(scale == want_scale)) {
            bench_report(wrong, rank, "dispatch out_scales", a, j, b, scale, want_scale);
            continue;
        }
        for (size_t c = b * 128; c < (b + 1) * 128; c++) {
            double want = bench_token_value(in, s, tok, (uint32_t)c);
            double got = (double)bench_e4m3_to_float(row[c]) * scale;
            double tol = fabs(want) * (0.0625 + 1e-6) + (double)scale / 1024.0 * 1.001;
            if (!(fabs(got - want) <= tol)) {
                bench_report(wrong, rank, "dispatch out_tokens (FP8, dequantized)", a, j, c, got,
                             want);
            }
        }
    }
}

/* Rank-major: the token's top-k as this rank sees it (local ids, -1 and 0 elsewhere). */
static void bench_check_topk(const bench_team_t *t, const bench_inputs_t *in,
                             const bench_host_slab_t *h, uint32_t rank, uint32_t a, uint32_t j,
                             uint32_t s, uint32_t tok, uint64_t *wrong)
{
    const size_t K = t->o.topk, at = ((size_t)s * in->tokens + tok) * K;
    for (size_t k = 0; k < K; k++) {
        int64_t e = in->topk_idx[at + k];
        int here = e >= 0 && (uint32_t)(e / t->local_experts) == rank;
        int32_t want_idx = here ? (int32_t)(e - (int64_t)rank * t->local_experts) : -1;
        float want_w = here ? in->weights[at + k] : 0.0f;
        if (h->idx[(size_t)j * K + k] != want_idx) {
            bench_report(wrong, rank, "dispatch out_topk_idx", a, j, k, h->idx[(size_t)j * K + k],
                         want_idx);
        }
        if (!(h->weights[(size_t)j * K + k] == want_w)) {
            bench_report(wrong, rank, "dispatch out_topk_weights", a, j, k,
                         h->weights[(size_t)j * K + k], want_w);
        }
    }
}

static int bench_copy_slab(const bench_team_t *t, const bench_rank_t *r, uint32_t a, uint32_t rows,
                           bench_host_slab_t *h)
{
    const size_t first = (size_t)a * t->slab_rows, H = t->o.hidden, K = t->o.topk;
    BENCH_CUDA(cudaMemcpy(h->rows, (char *)r->out_tokens + first * t->out_row_bytes,
                          rows * t->out_row_bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy (out_tokens)", r->rank);
    if (t->o.recipe == NCCLX_EP_RECIPE_FP8) {
        BENCH_CUDA(cudaMemcpy(h->scales, (float *)r->out_scales + first * (H / 128),
                              rows * (H / 128) * sizeof(float), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (out_scales)", r->rank);
    }
    if (t->o.layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
        BENCH_CUDA(cudaMemcpy(h->idx, (int32_t *)r->out_topk_idx + first * K,
                              rows * K * sizeof(int32_t), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (out_topk_idx)", r->rank);
        BENCH_CUDA(cudaMemcpy(h->weights, (float *)r->out_topk_weights + first * K,
                              rows * K * sizeof(float), cudaMemcpyDeviceToHost),
                   "cudaMemcpy (out_topk_weights)", r->rank);
    }
    return 0;
}

static int bench_check_dispatch(const bench_team_t *t, const bench_inputs_t *in,
                                const bench_map_t *map, const bench_rank_t *r, uint64_t *wrong)
{
    bench_host_slab_t h;
    cudaError_t err;
    int rc = 0;
    if (bench_host_slab_alloc(t, &h) != 0) {
        return -1;
    }
    err = cudaMemcpy(h.counts, r->out_counts, t->slabs * sizeof(int32_t), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        rc = bench_fail_cuda(err, "cudaMemcpy (out_counts)", (int)r->rank);
    }
    for (uint32_t a = 0; a < t->slabs && rc == 0; a++) {
        const uint32_t rows = (uint32_t)map->count[a];
        if (h.counts[a] != map->count[a]) {
            bench_report(wrong, r->rank, "dispatch out_counts", a, 0, 0, h.counts[a], rows);
        }
        if (rows == 0 || (rc = bench_copy_slab(t, r, a, rows, &h)) != 0) {
            continue;
        }
        for (uint32_t j = 0; j < rows; j++) {
            const uint32_t src = map->src[(size_t)a * map->slab_rows + j];
            const uint32_t s = src / t->max_tokens, tok = src % t->max_tokens;
            bench_check_row(t, in, &h, r->rank, a, j, s, tok, wrong);
            if (t->o.layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
                bench_check_topk(t, in, &h, r->rank, a, j, s, tok, wrong);
            }
        }
    }
    bench_host_slab_free(&h);
    return rc;
}

static double bench_ulp(ncclxDataType_t dtype)
{
    return dtype == NCCLX_BFLOAT16 ? 0x1p-7 : dtype == NCCLX_FLOAT16 ? 0x1p-10 : 0x1p-22;
}

static int bench_check_combine(const bench_team_t *t, const bench_inputs_t *in,
                               const bench_rank_t *r, uint64_t *wrong)
{
    const size_t n = t->tokens, H = t->o.hidden;
    const ncclxDataType_t dtype = t->o.dtype;
    const int rows_are_outputs = bench_ll_expert_out_in_rows(t);
    void *out = malloc(n * H * bench_dtype_size(dtype));
    cudaError_t err;
    if (out == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    err = cudaMemcpy(out, r->out, n * H * bench_dtype_size(dtype), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        free(out);
        return bench_fail_cuda(err, "cudaMemcpy (combine out)", (int)r->rank);
    }
    for (size_t tok = 0; tok < n; tok++) {
        for (size_t c = 0; c < H; c++) {
            double mag, want = bench_combine_value(in, t->o.layout, rows_are_outputs, dtype,
                                                   r->rank, (uint32_t)tok, (uint32_t)c, &mag);
            double got = bench_load(out, tok * H + c, dtype);
            /* FP32 accumulation of up to K terms, then one rounding to dtype. */
            double tol = bench_ulp(dtype) * fabs(want) + t->o.topk * 0x1p-22 * mag +
                         (dtype == NCCLX_FLOAT16 ? 0x1p-24 : 0.0);
            if (!(fabs(got - want) <= tol)) {
                bench_report(wrong, r->rank, "combine out", 0, (uint32_t)tok, c, got, want);
            }
        }
    }
    free(out);
    return 0;
}

int bench_check(bench_team_t *t, const bench_inputs_t *in, uint64_t *wrong)
{
    *wrong = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        if (bench_fill_sentinel(t, &t->r[i]) != 0) {
            return -1;
        }
    }
    /* Every rank's dispatch is enqueued before any combine: a loopback team needs them all. */
    for (int op = 0; op < BENCH_DATA_OPS; op++) {
        for (uint32_t i = 0; i < t->nlocal; i++) {
            if (bench_team_enqueue(t, i, (bench_op_t)op) != 0) {
                return -1;
            }
        }
    }
    for (uint32_t i = 0; i < t->nlocal; i++) {
        BENCH_CUDA(cudaStreamSynchronize(t->r[i].stream), "the checked iteration", t->r[i].rank);
    }
    if (bench_team_async_errors(t) != 0) {
        return -1;
    }
    for (uint32_t i = 0; i < t->nlocal; i++) {
        bench_map_t map;
        uint64_t rank_wrong = 0;
        int rc;
        if (bench_map_build(in, t->o.layout, t->r[i].rank, t->tokens, &map) != 0) {
            return -1;
        }
        rc = bench_check_dispatch(t, in, &map, &t->r[i], &rank_wrong);
        bench_map_free(&map);
        if (rc != 0 || bench_check_combine(t, in, &t->r[i], &rank_wrong) != 0) {
            return -1;
        }
        if (rank_wrong > 0) {
            fprintf(stderr, "ncclx-bench: rank %u: %llu wrong element(s)\n", t->r[i].rank,
                    (unsigned long long)rank_wrong);
        }
        *wrong += rank_wrong;
    }
    return 0;
}
