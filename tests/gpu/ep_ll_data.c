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

static void fill_tokens(ep_run_t *run, uint32_t r)
{
    ep_rank_t *b = &run->r[r];
    const uint32_t K = run->c.topk;
    for (uint32_t t = 0; t < b->num_tokens; t++) {
        uint8_t *row = b->tokens + (size_t)t * run->in_row;
        if (run->c.recipe == NCCLX_EP_RECIPE_FP8) {
            fill_bf16_blocks(row, run->c.hidden);
        } else {
            fill_random_bytes(row, run->in_row); /* forwarded untouched: any bits */
        }
    }
    fill_random_bytes(b->scales, (size_t)b->num_tokens * run->scale_row);
    for (size_t i = 0; i < (size_t)run->c.max_tokens * K; i++) {
        b->weights[i] = ep_rand_unit();
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

/* Expert outputs: values in [-2, 2) in the rows the dispatch fills, NaN (0xff bytes) in every
 * other row, so that a combine reading a row it should not turns the result into NaN. */
static void fill_expert_out(ep_run_t *run, uint32_t r)
{
    ep_rank_t *b = &run->r[r];
    const ncclxDataType_t dt = run->k.combine_dtype;
    const size_t esize = run->combine_row / run->c.hidden;
    memset(b->expert_out, 0xff, run->out_rows * run->combine_row);
    for (size_t row = 0; row < run->out_rows; row++) {
        if (!b->want.row_valid[row]) {
            continue;
        }
        for (uint32_t h = 0; h < run->c.hidden; h++) {
            store_value(dt, b->expert_out + row * run->combine_row + h * esize,
                        4.0f * ep_rand_unit() - 2.0f);
        }
    }
}

static void reference(ep_run_t *run)
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
        fill_expert_out(run, r);
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
        fill_tokens(run, r);
        run->r[r].have_prev = 0;
    }
    reference(run);
    for (uint32_t r = 0; r < R; r++) {
        upload(run, r);
    }
    /* Copies from pageable memory may still be in flight on the legacy stream, which the
     * ranks' non-blocking streams do not wait for. */
    assert_cuda_ok(cudaDeviceSynchronize());
}
