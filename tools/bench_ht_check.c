/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench --check for HT: one dispatch + combine of the bench's pass on outputs first
 * filled with a sentinel (0xff bytes), compared with bench_ht.c's expectations.  Layout query:
 * every expert count (expert-major: every offset) and the receive total.  Dispatch: every
 * received row byte for byte (pad rows zero), rows past the received ones untouched; forward
 * flat ids and weights, expert-major row weights.  Combine: identity experts (expert_out = the
 * received rows as they are), so out[t] = the token times its number of rows, summed in FP32
 * and rounded once: exact (with --recipe mxfp8: within the quantizer's error bound; the GPU
 * tests check those bits against the reference).  Backward combine, fed the forward receive weights
 * as gradients, must return each top-k entry's own weight.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BENCH_HT_CHUNK 1024u /* rows copied between host and GPU at once */

static void bench_ht_report(uint64_t *wrong, uint32_t rank, const char *what, size_t i, size_t c,
                            double got, double want)
{
    if ((*wrong)++ == 0) {
        fprintf(stderr, "ncclx-bench: rank %u: %s [%zu, %zu]: got %.8g, expected %.8g\n", rank,
                what, i, c, got, want);
    }
}

/* The bytes of received row src (BENCH_HT_PAD: zeros) in the tokens' dtype. */
static void bench_ht_expected_row(const bench_team_t *t, const bench_inputs_t *in, uint32_t src,
                                  void *row)
{
    if (src == BENCH_HT_PAD) {
        memset(row, 0, t->out_row_bytes);
        return;
    }
    for (uint32_t c = 0; c < t->o.hidden; c++) {
        bench_store(row, c, t->o.dtype,
                    bench_token_value(in, src / t->max_tokens, src % t->max_tokens, c));
    }
}

/* One rank's expert_out rows (and, backward, its combine's topk_weights) from map. */
static int bench_ht_fill_rank(const bench_team_t *t, const bench_inputs_t *in,
                              const bench_rank_t *r, const bench_ht_map_t *map, unsigned char *buf)
{
    const size_t row_bytes = t->out_row_bytes;
    const size_t per_row = t->o.layout == NCCLX_EP_LAYOUT_FLAT ? t->o.topk : 1;
    for (uint32_t j0 = 0; j0 < map->rows; j0 += BENCH_HT_CHUNK) {
        const uint32_t rows = map->rows - j0 < BENCH_HT_CHUNK ? map->rows - j0 : BENCH_HT_CHUNK;
        for (uint32_t j = 0; j < rows; j++) {
            bench_ht_expected_row(t, in, map->src[j0 + j], buf + (size_t)j * row_bytes);
        }
        BENCH_CUDA(cudaMemcpy((char *)r->expert_out + (size_t)j0 * row_bytes, buf,
                              (size_t)rows * row_bytes, cudaMemcpyHostToDevice),
                   "cudaMemcpy (expert_out)", r->rank);
    }
    if (t->o.pass == NCCLX_EP_PASS_BACKWARD && map->rows > 0) {
        BENCH_CUDA(cudaMemcpy(r->out_topk_weights, map->weights,
                              (size_t)map->rows * per_row * sizeof(float), cudaMemcpyHostToDevice),
                   "cudaMemcpy (received weights)", r->rank);
    }
    return 0;
}

int bench_ht_fill(bench_team_t *t, const bench_inputs_t *in)
{
    unsigned char *buf = malloc((size_t)BENCH_HT_CHUNK * t->out_row_bytes);
    int rc = 0;
    if (buf == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the expert outputs\n");
        return -1;
    }
    for (uint32_t i = 0; i < t->nlocal && rc == 0; i++) {
        const bench_rank_t *r = &t->r[i];
        bench_ht_map_t map;
        if (bench_ht_map_build(in, t->o.layout, t->o.alignment, r->rank, t->tokens, &map) != 0) {
            rc = -1;
            break;
        }
        if (map.rows > t->recv_rows) {
            fprintf(stderr, "ncclx-bench: rank %u receives %u rows, more than S = %u\n", r->rank,
                    map.rows, t->recv_rows);
            rc = -1;
        } else {
            rc = bench_ht_fill_rank(t, in, r, &map, buf);
        }
        bench_ht_map_free(&map);
    }
    free(buf);
    /* The copies ran on the legacy stream, which the ranks' streams do not wait for. */
    if (rc == 0) {
        BENCH_CUDA(cudaDeviceSynchronize(), "cudaDeviceSynchronize (expert_out)", -1);
    }
    return rc;
}

/* Sentinel in every output of the pass (backward: out_topk_weights is combine's input). */
static int bench_ht_poison(bench_team_t *t, bench_rank_t *r)
{
    const size_t S = t->recv_rows, K = t->o.topk, L = t->local_experts, T = t->max_tokens;
    const int flat = t->o.layout == NCCLX_EP_LAYOUT_FLAT;
    const int bwd = t->o.pass == NCCLX_EP_PASS_BACKWARD;
    struct {
        void *p;
        size_t bytes;
    } outs[] = {
        {r->out_tokens, S * t->out_row_bytes},
        {r->out_counts, (2 * L + 2) * sizeof(int64_t)},
        {r->out_topk_idx, S * K * sizeof(int32_t)}, /* flat forward only */
        {bwd ? NULL : r->out_topk_weights, (flat ? S * K : S) * sizeof(float)},
        {r->out, T * t->o.hidden * bench_dtype_size(t->o.dtype)},
        {r->grad_weights, T * K * sizeof(float)}, /* backward only */
    };
    for (size_t b = 0; b < sizeof(outs) / sizeof(outs[0]); b++) {
        if (outs[b].p != NULL) {
            BENCH_CUDA(cudaMemsetAsync(outs[b].p, 0xff, outs[b].bytes, r->stream),
                       "cudaMemsetAsync (sentinel)", r->rank);
        }
    }
    return 0;
}

static int bench_ht_check_layout(const bench_team_t *t, const bench_ht_map_t *map,
                                 const bench_rank_t *r, uint64_t *wrong)
{
    const size_t L = t->local_experts;
    int64_t *got = malloc((2 * L + 2) * sizeof(*got));
    cudaError_t err;
    if (got == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    err = cudaMemcpy(got, r->out_counts, (2 * L + 2) * sizeof(*got), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        free(got);
        return bench_fail_cuda(err, "cudaMemcpy (layout)", (int)r->rank);
    }
    for (size_t a = 0; a < L; a++) {
        if (got[a] != map->counts[a]) {
            bench_ht_report(wrong, r->rank, "layout expert_counts", 0, a, (double)got[a],
                            (double)map->counts[a]);
        }
    }
    for (size_t a = 0; t->o.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR && a <= L; a++) {
        if (got[L + a] != map->offsets[a]) {
            bench_ht_report(wrong, r->rank, "layout expert_offsets", 0, a, (double)got[L + a],
                            (double)map->offsets[a]);
        }
    }
    if (got[2 * L + 1] != (int64_t)map->rows) {
        bench_ht_report(wrong, r->rank, "layout recv_total", 0, 0, (double)got[2 * L + 1],
                        (double)map->rows);
    }
    free(got);
    return 0;
}

/* Row `row` of out_tokens: the expected bytes while row < map->rows, else the sentinel. */
static void bench_ht_check_row(const bench_team_t *t, const bench_inputs_t *in,
                               const bench_ht_map_t *map, uint32_t rank, uint32_t row,
                               const unsigned char *got, unsigned char *want, uint64_t *wrong)
{
    const size_t elt = bench_dtype_size(t->o.dtype);
    const int delivered = row < map->rows;
    if (delivered) {
        bench_ht_expected_row(t, in, map->src[row], want);
    } else {
        memset(want, 0xff, t->out_row_bytes);
    }
    if (memcmp(got, want, t->out_row_bytes) == 0) {
        return;
    }
    for (size_t c = 0; c < t->o.hidden; c++) {
        if (memcmp(got + c * elt, want + c * elt, elt) != 0) {
            bench_ht_report(wrong, rank,
                            delivered ? "dispatch out_tokens"
                                      : "dispatch out_tokens past the received rows (0xff)",
                            row, c, bench_load(got, c, t->o.dtype),
                            bench_load(want, c, t->o.dtype));
        }
    }
}

static int bench_ht_check_rows(const bench_team_t *t, const bench_inputs_t *in,
                               const bench_ht_map_t *map, const bench_rank_t *r, uint64_t *wrong)
{
    const size_t row_bytes = t->out_row_bytes;
    unsigned char *got = malloc((size_t)BENCH_HT_CHUNK * row_bytes), *want = malloc(row_bytes);
    cudaError_t err = cudaSuccess;
    if (got == NULL || want == NULL) {
        free(got);
        free(want);
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    for (uint32_t j0 = 0; j0 < t->recv_rows && err == cudaSuccess; j0 += BENCH_HT_CHUNK) {
        const uint32_t rows =
            t->recv_rows - j0 < BENCH_HT_CHUNK ? t->recv_rows - j0 : BENCH_HT_CHUNK;
        err = cudaMemcpy(got, (const char *)r->out_tokens + (size_t)j0 * row_bytes,
                         (size_t)rows * row_bytes, cudaMemcpyDeviceToHost);
        for (uint32_t j = 0; j < rows && err == cudaSuccess; j++) {
            bench_ht_check_row(t, in, map, r->rank, j0 + j, got + (size_t)j * row_bytes, want,
                               wrong);
        }
    }
    free(got);
    free(want);
    if (err != cudaSuccess) {
        return bench_fail_cuda(err, "cudaMemcpy (out_tokens)", (int)r->rank);
    }
    return 0;
}

/* Forward dispatch: flat [rows, K] ids and weights, expert-major [rows] weights. */
static int bench_ht_check_weights(const bench_team_t *t, const bench_ht_map_t *map,
                                  const bench_rank_t *r, uint64_t *wrong)
{
    const int flat = t->o.layout == NCCLX_EP_LAYOUT_FLAT;
    const size_t per_row = flat ? t->o.topk : 1, n = (size_t)map->rows * per_row;
    float *w = malloc((n + 1) * sizeof(*w));
    int32_t *ids = malloc((n + 1) * sizeof(*ids));
    cudaError_t err;
    if (w == NULL || ids == NULL) {
        free(w);
        free(ids);
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    err = cudaMemcpy(w, r->out_topk_weights, n * sizeof(*w), cudaMemcpyDeviceToHost);
    if (err == cudaSuccess && flat) {
        err = cudaMemcpy(ids, r->out_topk_idx, n * sizeof(*ids), cudaMemcpyDeviceToHost);
    }
    for (size_t i = 0; i < n && err == cudaSuccess; i++) {
        if (!(w[i] == map->weights[i])) {
            bench_ht_report(wrong, r->rank, "dispatch out_topk_weights", i / per_row, i % per_row,
                            w[i], map->weights[i]);
        }
        if (flat && ids[i] != map->ids[i]) {
            bench_ht_report(wrong, r->rank, "dispatch out_topk_idx", i / per_row, i % per_row,
                            ids[i], map->ids[i]);
        }
    }
    free(w);
    free(ids);
    if (err != cudaSuccess) {
        return bench_fail_cuda(err, "cudaMemcpy (out_topk_weights / out_topk_idx)", (int)r->rank);
    }
    return 0;
}

/* out[t] = (rows of token t) x token, exact in FP32, rounded once to the dtype. */
static int bench_ht_check_combine(const bench_team_t *t, const bench_inputs_t *in,
                                  const bench_rank_t *r, uint64_t *wrong)
{
    const size_t n = t->tokens, H = t->o.hidden;
    const ncclxDataType_t dtype = t->o.dtype;
    const int mxfp8 = t->o.recipe == NCCLX_EP_RECIPE_MXFP8;
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
        const double rows = bench_ht_token_rows(in, t->o.layout, r->rank, (uint32_t)tok);
        double block_max = 0.0;
        for (size_t c = 0; c < H; c++) {
            double x = bench_token_value(in, r->rank, (uint32_t)tok, (uint32_t)c);
            double want = bench_round(rows * x, dtype), got = bench_load(out, tok * H + c, dtype);
            if (mxfp8 && c % 32 == 0) {
                block_max = 0.0;
                for (size_t i = c; i < c + 32 && i < H; i++) {
                    block_max =
                        fmax(block_max,
                             fabs(bench_token_value(in, r->rank, (uint32_t)tok, (uint32_t)i)));
                }
            }
            /* MXFP8: each rank's partial sum p is off by at most its block's amax / 14 (half
             * an E4M3 step at the top binade, the scale up to 2 amax / 448); the output is
             * rounded to BF16 once more. */
            if (mxfp8 ? !(fabs(got - want) <= rows * block_max / 14.0 + fabs(want) / 128.0)
                      : !(got == want)) {
                bench_ht_report(wrong, r->rank, "combine out", tok, c, got, want);
            }
        }
    }
    free(out);
    return 0;
}

/* Backward combine: out_topk_weights[t][k] = entry k's weight (0 for a dropped entry). */
static int bench_ht_check_grads(const bench_team_t *t, const bench_inputs_t *in,
                                const bench_rank_t *r, uint64_t *wrong)
{
    const size_t n = t->tokens, K = t->o.topk;
    float *got = malloc(n * K * sizeof(*got));
    cudaError_t err;
    if (got == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the check\n");
        return -1;
    }
    err = cudaMemcpy(got, r->grad_weights, n * K * sizeof(*got), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        free(got);
        return bench_fail_cuda(err, "cudaMemcpy (out_topk_weights)", (int)r->rank);
    }
    for (size_t tok = 0; tok < n; tok++) {
        for (size_t k = 0; k < K; k++) {
            float want = bench_ht_weight_grad(in, r->rank, (uint32_t)tok, (uint32_t)k);
            if (!(got[tok * K + k] == want)) {
                bench_ht_report(wrong, r->rank, "backward combine out_topk_weights", tok, k,
                                got[tok * K + k], want);
            }
        }
    }
    free(got);
    return 0;
}

static int bench_ht_check_rank(const bench_team_t *t, const bench_inputs_t *in,
                               const bench_rank_t *r, uint64_t *wrong)
{
    const int bwd = t->o.pass == NCCLX_EP_PASS_BACKWARD;
    bench_ht_map_t map;
    int rc;
    if (bench_ht_map_build(in, t->o.layout, t->o.alignment, r->rank, t->tokens, &map) != 0) {
        return -1;
    }
    rc = bench_ht_check_layout(t, &map, r, wrong);
    if (rc == 0 && map.rows > t->recv_rows) {
        fprintf(stderr, "ncclx-bench: rank %u receives %u rows, more than S = %u\n", r->rank,
                map.rows, t->recv_rows);
        rc = -1;
    }
    if (rc == 0) {
        rc = bench_ht_check_rows(t, in, &map, r, wrong);
    }
    if (rc == 0 && !bwd) {
        rc = bench_ht_check_weights(t, &map, r, wrong);
    }
    bench_ht_map_free(&map);
    if (rc == 0) {
        rc = bench_ht_check_combine(t, in, r, wrong);
    }
    if (rc == 0 && bwd) {
        rc = bench_ht_check_grads(t, in, r, wrong);
    }
    return rc;
}

int bench_ht_check(bench_team_t *t, const bench_inputs_t *in, uint64_t *wrong)
{
    *wrong = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        if (bench_ht_poison(t, &t->r[i]) != 0 || bench_team_layout(t, i) != 0) {
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
        uint64_t rank_wrong = 0;
        if (bench_ht_check_rank(t, in, &t->r[i], &rank_wrong) != 0) {
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
