/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Judging what every rank received: dispatch outputs bit for bit against the reference
 * (counts, token bytes, scales, forwarded top-k, NaN codes included), rows past the counts
 * still holding the poison the test wrote, and combine results bit for bit equal to the
 * reference's float64 result rounded once to nearest even (the kernels compute the same
 * float64 in the same order: tests/ref/ep_ref.h) and to an earlier combine of the same inputs.
 */
#include <stdio.h>

#include "gpu/ep_ll_harness.h"

/* "R=4 expert-major FP8 K=6 ..." for failure messages. */
static void case_name(const ep_run_t *run, char *buf, size_t len)
{
    const ncclx_ref_case_t *c = &run->c;
    const char *recipe = c->recipe == NCCLX_EP_RECIPE_FP8         ? "FP8"
                         : c->recipe == NCCLX_EP_RECIPE_QUANT_FWD ? "QUANT_FWD"
                                                                  : "NONE";
    snprintf(buf, len,
             "R=%u E=%u T=%u K=%u H=%u %s %s round=%u global=%u dtype=%d scales=%u idx=%d "
             "out_idx=%d combine=%d",
             c->ranks, c->experts, c->max_tokens, c->topk, c->hidden,
             c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? "expert-major" : "rank-major", recipe,
             c->round_scales, c->global_expert_ids, (int)c->dtype, c->scale_bytes,
             (int)run->k.idx_dtype, (int)run->k.out_idx_dtype, (int)run->k.combine_dtype);
}

/* Index of the first byte of p[0 .. n) that is not 0xff, or n. */
static size_t first_not_poison(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != 0xff) {
            return i;
        }
    }
    return n;
}

static void download(ep_run_t *run, uint32_t r)
{
    ep_rank_t *b = &run->r[r];
    const size_t rows = run->out_rows, K = run->c.topk;
    ncclx_ref_rank_dispatch_t *g = &b->got;
    assert_cuda_ok(cudaMemcpy(g->out_counts, b->d_counts, run->counts * sizeof(int32_t),
                              cudaMemcpyDeviceToHost));
    assert_cuda_ok(cudaMemcpy(g->out_tokens, ep_out_tokens(run, r), rows * run->out_row,
                              cudaMemcpyDeviceToHost));
    if (run->out_scale_row > 0) {
        assert_cuda_ok(cudaMemcpy(g->out_scales, ep_out_scales(run, r), rows * run->out_scale_row,
                                  cudaMemcpyDeviceToHost));
    }
    if (run->c.layout != NCCLX_EP_LAYOUT_RANK_MAJOR) {
        return;
    }
    size_t isize = run->k.out_idx_dtype == NCCLX_INT64 ? 8 : 4;
    assert_cuda_ok(
        cudaMemcpy(b->got_idx_raw, b->d_out_idx, rows * K * isize, cudaMemcpyDeviceToHost));
    assert_cuda_ok(cudaMemcpy(g->out_topk_weights, b->d_out_weights, rows * K * sizeof(float),
                              cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < rows * K; i++) {
        g->out_topk_idx[i] = isize == 8 ? ((const int64_t *)b->got_idx_raw)[i]
                                        : ((const int32_t *)b->got_idx_raw)[i];
    }
}

/* The bytes of row `row` of an output of `bytes` per row, if it is not all poison. */
static void expect_poison_row(const ep_run_t *run, uint32_t r, const char *what, const void *base,
                              size_t bytes, size_t row)
{
    size_t at = first_not_poison((const uint8_t *)base + row * bytes, bytes);
    if (at < bytes) {
        char name[256];
        case_name(run, name, sizeof(name));
        fail_msg("rank %u: %s row %zu (past the counts) was written at byte %zu (0x%02x) [%s]", r,
                 what, row, at, ((const uint8_t *)base)[row * bytes + at], name);
    }
}

static void check_untouched_rows(const ep_run_t *run, uint32_t r)
{
    const ep_rank_t *b = &run->r[r];
    const size_t K = run->c.topk;
    const size_t isize = run->k.out_idx_dtype == NCCLX_INT64 ? 8 : 4;
    for (size_t row = 0; row < run->out_rows; row++) {
        if (b->want.row_valid[row]) {
            continue;
        }
        expect_poison_row(run, r, "out_tokens", b->got.out_tokens, run->out_row, row);
        if (run->out_scale_row > 0) {
            expect_poison_row(run, r, "out_scales", b->got.out_scales, run->out_scale_row, row);
        }
        if (run->c.layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
            expect_poison_row(run, r, "out_topk_idx", b->got_idx_raw, K * isize, row);
            expect_poison_row(run, r, "out_topk_weights", b->got.out_topk_weights,
                              K * sizeof(float), row);
        }
    }
}

void ep_run_check_dispatch(ep_run_t *run)
{
    char why[512], name[256];
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        if ((run->masked >> r) & 1u) {
            continue;
        }
        ep_rank_t *b = &run->r[r];
        download(run, r);
        size_t bad = ncclx_ref_dispatch_diff_exact(&run->c, &b->want, &b->got, why, sizeof(why));
        if (bad != 0) {
            case_name(run, name, sizeof(name));
            fail_msg("rank %u: %zu dispatch mismatches, first: %s [%s]", r, bad, why, name);
        }
        check_untouched_rows(run, r);
    }
}

void ep_run_check_combine(ep_run_t *run)
{
    char why[512], name[256];
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        if ((run->masked >> r) & 1u) {
            continue;
        }
        ep_rank_t *b = &run->r[r];
        const size_t bytes = b->num_tokens * run->combine_row;
        assert_cuda_ok(cudaMemcpy(b->got_out, b->d_out, bytes, cudaMemcpyDeviceToHost));
        size_t bad =
            ncclx_ref_combine_diff_exact(run->k.combine_dtype, b->got_out, b->want_out,
                                         (size_t)b->num_tokens * run->c.hidden, why, sizeof(why));
        if (bad != 0) {
            case_name(run, name, sizeof(name));
            fail_msg("rank %u: %zu combine mismatches, first: %s [%s]", r, bad, why, name);
        }
        if (b->have_prev && memcmp(b->got_out, b->prev_out, bytes) != 0) {
            case_name(run, name, sizeof(name));
            fail_msg("rank %u: two combines of the same inputs differ bitwise [%s]", r, name);
        }
        memcpy(b->prev_out, b->got_out, bytes);
        b->have_prev = 1;
    }
}

static void expect_all_poison(const ep_run_t *run, uint32_t r, const char *what, const void *dev,
                              void *host, size_t bytes)
{
    assert_cuda_ok(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    size_t at = first_not_poison(host, bytes);
    if (at < bytes) {
        char name[256];
        case_name(run, name, sizeof(name));
        fail_msg("rank %u: %s was written (byte %zu) before ncclxEpComplete [%s]", r, what, at,
                 name);
    }
}

void ep_run_check_dispatch_untouched(const ep_run_t *run)
{
    const size_t rows = run->out_rows, K = run->c.topk;
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        const ep_rank_t *b = &run->r[r];
        const ncclx_ref_rank_dispatch_t *g = &b->got;
        expect_all_poison(run, r, "out_counts", b->d_counts, g->out_counts,
                          run->counts * sizeof(int32_t));
        expect_all_poison(run, r, "out_tokens", ep_out_tokens(run, r), g->out_tokens,
                          rows * run->out_row);
        if (run->out_scale_row > 0) {
            expect_all_poison(run, r, "out_scales", ep_out_scales(run, r), g->out_scales,
                              rows * run->out_scale_row);
        }
        if (run->c.layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
            expect_all_poison(run, r, "out_topk_weights", b->d_out_weights, g->out_topk_weights,
                              rows * K * sizeof(float));
        }
    }
}

void ep_run_check_combine_untouched(const ep_run_t *run)
{
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        const ep_rank_t *b = &run->r[r];
        expect_all_poison(run, r, "out", b->d_out, b->got_out, b->num_tokens * run->combine_row);
    }
}
