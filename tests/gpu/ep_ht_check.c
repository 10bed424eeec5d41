/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP HT GPU tests' checks of one operation against the CPU reference (tests/ref/ep_ht_ref.h):
 * the layout query, dispatch rows and metadata (rows past the delivered ones still poison), and
 * combine outputs, element by element (ep_ht_harness.h declares them).
 */
#include "ep_ht_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t read_count(const ht_run_t *run, const uint8_t *p, size_t i)
{
    if (run->c.count_dtype == NCCLX_INT64) {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

void ht_check_layout(ht_run_t *run, uint32_t r)
{
    const ncclx_ht_ref_layout_t *want = &run->lay[r];
    const size_t L = run->L, stride = ht_layout_stride(run);
    uint8_t buf[3 * 8 * 4112];
    assert_true(3 * stride <= sizeof(buf));
    assert_cuda_ok(cudaMemcpy(buf, run->r[r].d_layout, 3 * stride, cudaMemcpyDeviceToHost));
    for (size_t e = 0; e < L; e++) {
        if (read_count(run, buf, e) != want->expert_counts[e]) {
            fail_msg("rank %u: expert_counts[%zu] = %lld, want %d", r, e,
                     (long long)read_count(run, buf, e), want->expert_counts[e]);
        }
    }
    if (run->c.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        const uint8_t *off = buf + stride;
        for (size_t e = 0; e <= L; e++) {
            if (read_count(run, off, e) != want->expert_offsets[e]) {
                fail_msg("rank %u: expert_offsets[%zu] = %lld, want %d", r, e,
                         (long long)read_count(run, off, e), want->expert_offsets[e]);
            }
        }
    }
    const int64_t total = read_count(run, buf + 2 * stride, 0);
    if (total != want->recv_total) {
        fail_msg("rank %u: recv_total = %lld, want %lld", r, (long long)total,
                 (long long)want->recv_total);
    }
}

static int all_poison(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0xff) {
            return 0;
        }
    }
    return 1;
}

/* Fails unless every rank's dispatch token output is still poison. */
void ht_check_untouched_dispatch(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        assert_cuda_ok(
            cudaMemcpy(x->got, x->d_out_tokens, (size_t)run->S * run->row, cudaMemcpyDeviceToHost));
        if (!all_poison(x->got, (size_t)run->S * run->row)) {
            fail_msg("rank %u: a stopped or mismatched dispatch wrote its outputs", r);
        }
    }
}

/* Dispatch outputs of every rank: each delivered row is its source row (pad rows zero),
 * FLAT ids and weights or EM weights as the reference says, rows past them untouched. */
void ht_check_dispatch(ht_run_t *run, int backward)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ht_check_dispatch_rank(run, r, backward);
    }
}

/* Rank r's out_tokens rows whose token comes from a source rank in `sources` (bit s) are
 * exactly that token's row (forward), whatever else the dispatch left undone. */
void ht_check_rows_from(ht_run_t *run, uint32_t r, uint32_t sources)
{
    const size_t T = run->c.tokens;
    ht_rank_t *x = &run->r[r];
    const ncclx_ht_ref_layout_t *want = &run->lay[r];
    size_t checked = 0;
    assert_cuda_ok(
        cudaMemcpy(x->got, x->d_out_tokens, (size_t)run->S * run->row, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < want->rows; i++) {
        const int32_t src = want->row_source[i];
        if (src < 0 || ((sources >> (src / T)) & 1u) == 0) {
            continue;
        }
        const uint8_t *row = run->r[src / T].tokens + (size_t)(src % T) * run->row;
        for (size_t b = 0; b < run->row; b++) {
            if (x->got[i * run->row + b] != row[b]) {
                fail_msg("rank %u: row %zu (source rank %d, token %d) byte %zu = 0x%02x, want "
                         "0x%02x",
                         r, i, (int)(src / T), (int)(src % T), b, x->got[i * run->row + b], row[b]);
            }
        }
        checked++;
    }
    if (checked == 0) {
        fail_msg("rank %u: no row from sources 0x%x to check (the routing sends none)", r, sources);
    }
}

/* Dispatch outputs of rank r (see ht_check_dispatch). */
void ht_check_dispatch_rank(ht_run_t *run, uint32_t r, int backward)
{
    const size_t S = run->S, K = run->K, T = run->c.tokens;
    {
        ht_rank_t *x = &run->r[r];
        const ncclx_ht_ref_layout_t *want = &run->lay[r];
        const int flat = run->c.layout == NCCLX_EP_LAYOUT_FLAT;
        assert_cuda_ok(cudaMemcpy(x->got, x->d_out_tokens, S * run->row, cudaMemcpyDeviceToHost));
        assert_cuda_ok(cudaMemcpy(x->got_scales, x->d_out_scales, S * 16, cudaMemcpyDeviceToHost));
        assert_cuda_ok(
            cudaMemcpy(x->got_idx, x->d_out_idx, S * K * run->isize, cudaMemcpyDeviceToHost));
        assert_cuda_ok(cudaMemcpy(x->got_w, x->d_out_w, S * K * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < S; i++) {
            const uint8_t *got = x->got + i * run->row;
            if (i >= want->rows) {
                if (!all_poison(got, run->row)) {
                    fail_msg("rank %u: row %zu past the %u delivered rows was written", r, i,
                             want->rows);
                }
                continue;
            }
            const int32_t src = want->row_source[i];
            const uint8_t *rows = NULL, *srows = NULL;
            if (src >= 0) {
                const ht_rank_t *s = &run->r[src / T];
                rows = (backward ? s->grads : s->tokens) + (size_t)(src % T) * run->row;
                srows = s->scales + (size_t)(src % T) * 16;
            }
            for (size_t b = 0; b < run->row; b++) {
                const uint8_t w = rows != NULL ? rows[b] : 0;
                if (got[b] != w) {
                    fail_msg("rank %u: %s dispatch row %zu (source %d) byte %zu = 0x%02x, want "
                             "0x%02x",
                             r, backward ? "backward" : "forward", i, src, b, got[b], w);
                }
            }
            if (run->c.quant) {
                for (size_t b = 0; b < 16; b++) {
                    if (x->got_scales[i * 16 + b] != (srows != NULL ? srows[b] : 0)) {
                        fail_msg("rank %u: scale row %zu byte %zu differs", r, i, b);
                    }
                }
            }
            if (backward) {
                continue;
            }
            for (size_t k = 0; k < (flat ? K : 1); k++) {
                const float gw = ((const float *)x->got_w)[flat ? i * K + k : i];
                const float ww = want->row_weights[flat ? i * K + k : i];
                if (memcmp(&gw, &ww, 4) != 0) {
                    fail_msg("rank %u: out_topk_weights[%zu][%zu] = %g, want %g", r, i, k, gw, ww);
                }
                if (flat) {
                    const int64_t gi = run->isize == 8 ? ((const int64_t *)x->got_idx)[i * K + k]
                                                       : ((const int32_t *)x->got_idx)[i * K + k];
                    if (gi != want->row_ids[i * K + k]) {
                        fail_msg("rank %u: out_topk_idx[%zu][%zu] = %lld, want %d", r, i, k,
                                 (long long)gi, want->row_ids[i * K + k]);
                    }
                }
            }
        }
    }
}

/* Combine outputs: the reference's float sums rounded once to the dtype, bit for bit; rows
 * past num_tokens untouched; backward weight gradients exact. */
void ht_check_combine(ht_run_t *run, int backward)
{
    const size_t H = run->c.hidden, K = run->K;
    const ncclxDataType_t cd = run->c.quant ? NCCLX_BFLOAT16 : run->c.dtype;
    const float *eo[EP_MAX_RANKS];
    const float *gw[EP_MAX_RANKS];
    float *want = run->want, *want_w = run->want_w;
    for (uint32_t r = 0; r < run->R; r++) {
        eo[r] = run->r[r].expert_out_f;
        gw[r] = run->r[r].grad_w;
    }
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        assert_int_equal(run->c.mxfp8 ? ncclx_ht_ref_combine_mxfp8(&run->rc, run->routing, run->lay,
                                                                   eo, (uint32_t)H, r, want)
                                      : ncclx_ht_ref_combine(&run->rc, run->routing, run->lay, eo,
                                                             (uint32_t)H, r, want),
                         0);
        assert_cuda_ok(cudaMemcpy(x->got_out, x->d_out, (size_t)run->c.tokens * run->crow,
                                  cudaMemcpyDeviceToHost));
        for (size_t t = 0; t < x->n; t++) {
            for (size_t h = 0; h < H; h++) {
                uint8_t w[4];
                const size_t es = dtype_size(cd);
                ht_from_float(want[t * H + h], w, cd);
                if (memcmp(w, x->got_out + (t * H + h) * es, es) != 0) {
                    fail_msg("rank %u: %s combine out[%zu][%zu] = %g, want %g", r,
                             backward ? "backward" : "forward", t, h,
                             (double)ht_to_float(x->got_out + (t * H + h) * es, cd),
                             (double)want[t * H + h]);
                }
            }
        }
        if (!all_poison(x->got_out + (size_t)x->n * run->crow,
                        (size_t)(run->c.tokens - x->n) * run->crow)) {
            fail_msg("rank %u: combine wrote rows past num_tokens=%u", r, x->n);
        }
        if (!backward) {
            continue;
        }
        assert_int_equal(
            ncclx_ht_ref_combine_weights(&run->rc, run->routing, run->lay, gw, r, want_w), 0);
        assert_cuda_ok(
            cudaMemcpy(x->got_gw, x->d_out_gw, (size_t)x->n * K * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < (size_t)x->n * K; i++) {
            if (memcmp(&want_w[i], x->got_gw + 4 * i, 4) != 0) {
                float g;
                memcpy(&g, x->got_gw + 4 * i, 4);
                fail_msg("rank %u: out_topk_weights[%zu][%zu] = %g, want %g", r, i / K, i % K,
                         (double)g, (double)want_w[i]);
            }
        }
    }
}
