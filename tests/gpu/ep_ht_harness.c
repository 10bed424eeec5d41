/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP HT GPU test machinery (ep_ht_harness.h says what it offers).  TEST_HT_TRACE=1 prints
 * one line per step of an iteration (where a hang is).
 */
#include "ep_ht_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc_counter.h"

/* TEST_HT_TRACE=1: one line per step on stderr (where a hang is). */
static void trace(const char *step, int a)
{
    static int on = -1;
    if (on < 0) {
        on = getenv("TEST_HT_TRACE") != NULL;
    }
    if (on) {
        fprintf(stderr, "# trace: %s %d\n", step, a);
        fflush(stderr);
    }
}

/* Allocator calls made by library calls after setup (the CPU reference allocates, so only the
 * stretches of library calls are counted: lib_begin / lib_end around them). */
size_t lib_allocs;
static char lib_first[64];

void lib_begin(void)
{
    ncclx_test_alloc_arm();
}

void lib_end(void)
{
    const size_t n = ncclx_test_alloc_disarm();
    if (n != 0 && lib_allocs == 0) {
        snprintf(lib_first, sizeof(lib_first), "%s", ncclx_test_alloc_first());
    }
    lib_allocs += n;
}

void lib_assert_none(const char *where)
{
    if (lib_allocs != 0) {
        fail_msg("%s: %zu allocator calls by library calls after setup (first: %s)", where,
                 lib_allocs, lib_first);
    }
}

size_t dtype_size(ncclxDataType_t t)
{
    return t == NCCLX_FLOAT32 || t == NCCLX_INT32 ? 4
           : t == NCCLX_INT64                     ? 8
           : t == NCCLX_UINT8                     ? 1
                                                  : 2;
}

void *dmalloc(size_t bytes)
{
    void *p = NULL;
    assert_cuda_ok(cudaMalloc(&p, bytes > 0 ? bytes : 16));
    return p;
}

void *hmalloc(size_t bytes)
{
    void *p = calloc(1, bytes > 0 ? bytes : 16);
    assert_non_null(p);
    return p;
}

float ht_to_float(const uint8_t *p, ncclxDataType_t t)
{
    uint16_t h;
    float f;
    if (t == NCCLX_FLOAT32) {
        memcpy(&f, p, 4);
        return f;
    }
    memcpy(&h, p, 2);
    return t == NCCLX_BFLOAT16 ? ncclx_ref_bf16_to_float(h) : ncclx_ref_fp16_to_float(h);
}

void ht_from_float(float f, uint8_t *p, ncclxDataType_t t)
{
    uint16_t h;
    if (t == NCCLX_FLOAT32) {
        memcpy(p, &f, 4);
        return;
    }
    h = t == NCCLX_BFLOAT16 ? ncclx_ref_float_to_bf16(f) : ncclx_ref_float_to_fp16(f);
    memcpy(p, &h, 2);
}

/* Layout tensors (counts, offsets, total) are 16-byte aligned like every tensor: each gets
 * L + 1 int64 slots rounded up to 16 bytes. */
size_t ht_layout_stride(const ht_run_t *run)
{
    return ((size_t)(run->L + 1) * 8 + 15) / 16 * 16;
}

void ht_open(ht_run_t *run, const ht_case_t *c)
{
    ep_team_t *t = &run->team;
    memset(run, 0, sizeof(*run));
    run->c = *c;
    run->R = c->ranks == 0 ? 1 : c->ranks;
    run->L = c->experts / run->R;
    run->K = c->topk;
    run->S = c->recv != 0 ? c->recv : run->R * c->tokens;
    run->esize = c->quant ? 1 : dtype_size(c->dtype);
    run->row = (size_t)c->hidden * run->esize;
    run->srow = c->quant ? 16 : 0;
    run->crow = (size_t)c->hidden * dtype_size(c->quant ? NCCLX_BFLOAT16 : c->dtype);
    run->isize = dtype_size(c->idx_dtype);
    ep_team_plan(t, c->experts, c->max_topk != 0 ? c->max_topk : c->topk, c->hidden, c->tokens);
    t->nodes = c->nodes; /* 0: ep_team_open applies TEST_NODES */
    t->group_plan.algorithm = NCCLX_EP_ALGO_HT;
    t->group_plan.layouts = NCCLX_EP_LAYOUT_FLAT | NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    t->group_plan.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD;
    t->group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT16) |
                                 NCCLX_DTYPE_BIT(NCCLX_FLOAT32) |
                                 (c->quant ? NCCLX_DTYPE_BIT(NCCLX_UINT8) : 0u);
    t->group_plan.max_token_bytes = c->hidden * 4;
    t->group_plan.max_scale_bytes = 16;
    if (c->zero_copy) {
        /* Buffer rows of exactly one token row: one dtype, no QUANT_FWD. */
        t->group_plan.token_dtypes = NCCLX_DTYPE_BIT(c->dtype);
        t->group_plan.recipes = NCCLX_EP_RECIPE_NONE;
        t->group_plan.max_token_bytes = 0;
        t->group_plan.max_scale_bytes = 0;
    }
    if (c->mxfp8) {
        t->group_plan.recipes |= NCCLX_EP_RECIPE_MXFP8;
    }
    t->group_plan.max_recv_tokens_per_rank = c->recv;
    t->group_plan.expert_alignment = c->alignment;
    t->group_plan.overflow_policy = c->drop ? NCCLX_EP_OVERFLOW_DROP : NCCLX_EP_OVERFLOW_TRAP;
    t->group_plan.timeout_ns = 5000000000ull; /* a lost signal fails within seconds */
    /* TEST_SM_BUDGET=N: N blocks per kernel and rank instead of the library's 2 x SMs / ranks,
     * which needs two blocks of every rank resident per SM at once (a sanitizer's instrumented
     * kernels may not fit that: ranks then wait on peers that cannot start). */
    if (getenv("TEST_SM_BUDGET") != NULL) {
        t->group_plan.sm_budget = (uint32_t)atoi(getenv("TEST_SM_BUDGET"));
    }
    ep_team_open(t, c->ranks);
    run->rc.ranks = run->R;
    run->rc.experts = c->experts;
    run->rc.max_tokens = c->tokens;
    run->rc.recv_slots = run->S;
    run->rc.topk = c->topk;
    run->rc.alignment = c->alignment;
    run->rc.layout = c->layout;
    run->rc.global_ids = c->global_ids;
    const size_t T = c->tokens, K = c->topk, S = run->S;
    run->want = hmalloc(T * c->hidden * 4);
    run->want_w = hmalloc(T * K * 4);
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        x->idx = hmalloc(T * K * 8);
        x->idx_upload = hmalloc(T * K * 8);
        x->weights = hmalloc(T * K * 4);
        x->grad_w = hmalloc(S * K * 4);
        x->expert_out_f = hmalloc(S * c->hidden * 4);
        x->tokens = hmalloc(T * run->row);
        x->scales = hmalloc(T * 16);
        x->grads = hmalloc(T * run->row);
        x->expert_out = hmalloc(S * run->crow);
        x->got = hmalloc(S * run->row);
        x->got_scales = hmalloc(S * 16);
        x->got_idx = hmalloc(S * K * 8);
        x->got_w = hmalloc(S * K * 4);
        x->got_out = hmalloc(T * run->crow);
        x->got_gw = hmalloc(T * K * 4);
        x->d_idx = dmalloc(T * K * 8);
        x->d_w = dmalloc(T * K * 4);
        x->d_tokens = dmalloc(T * run->row);
        x->d_grads = dmalloc(T * run->row);
        x->d_scales = dmalloc(T * 16);
        x->d_out_tokens = dmalloc(S * run->row);
        x->d_out_scales = dmalloc(S * 16);
        x->d_out_idx = dmalloc(S * K * 8);
        x->d_out_w = dmalloc(S * K * 4);
        x->d_expert_out = dmalloc(S * run->crow);
        x->d_out = dmalloc(T * run->crow);
        x->d_grad_w = dmalloc(S * K * 4);
        x->d_out_gw = dmalloc(T * K * 4);
        x->d_layout = dmalloc(3 * ht_layout_stride(run));
        assert_int_equal(ncclx_ht_ref_layout_alloc(&run->rc, &run->lay[r]), 0);
        if (ht_zero_copy_rank(run, r)) {
            ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
            assert_ncclx_ok(ncclxEpGroupGetHtBuffers(t->group[r], &b));
            assert_int_equal(b.dispatch_row_bytes, run->row);
            assert_int_equal(b.combine_row_bytes, run->crow);
            assert_int_equal(b.rows, run->S);
            assert_cuda_ok(cudaFree(x->d_out_tokens));
            assert_cuda_ok(cudaFree(x->d_expert_out));
            x->d_out_tokens = b.dispatch_rows;
            x->d_expert_out = b.combine_rows;
        }
    }
}

/* Whether rank r's out_tokens and expert_out are the group's own buffers. */
int ht_zero_copy_rank(const ht_run_t *run, uint32_t r)
{
    return run->c.zero_copy && ((run->c.zero_copy_skip >> r) & 1u) == 0;
}

void ht_close(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        if (run->have_handles) {
            assert_ncclx_ok(ncclxEpHandleDestroy(run->h[r]));
        }
        if (run->have_other) {
            assert_ncclx_ok(ncclxEpHandleDestroy(run->h_other[r]));
        }
        if (x->d_handle_mem != NULL) { /* destroy left the caller's memory alone */
            assert_cuda_ok(cudaFree(x->d_handle_mem));
        }
        void *host[] = {x->idx,        x->idx_upload, x->weights, x->grad_w,     x->expert_out_f,
                        x->tokens,     x->scales,     x->grads,   x->expert_out, x->got,
                        x->got_scales, x->got_idx,    x->got_w,   x->got_out,    x->got_gw};
        void *dev[] = {x->d_idx,        x->d_w,          x->d_tokens,  x->d_grads, x->d_scales,
                       x->d_out_tokens, x->d_out_scales, x->d_out_idx, x->d_out_w, x->d_expert_out,
                       x->d_out,        x->d_grad_w,     x->d_out_gw,  x->d_layout};
        for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) {
            free(host[i]);
        }
        for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++) {
            if (!ht_zero_copy_rank(run, r) ||
                (dev[i] != x->d_out_tokens && dev[i] != x->d_expert_out)) {
                assert_cuda_ok(cudaFree(dev[i])); /* not the group's own buffers */
            }
        }
        ncclx_ht_ref_layout_free(&run->lay[r]);
    }
    free(run->want);
    free(run->want_w);
    ep_team_close(&run->team);
}

/* Uploads every rank's routing (x->n, x->idx, x->weights) and routes the reference with it. */
void ht_set_routing(ht_run_t *run)
{
    const size_t K = run->K;
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        for (size_t i = 0; i < (size_t)x->n * K; i++) {
            if (run->c.idx_dtype == NCCLX_INT64) {
                ((int64_t *)x->idx_upload)[i] = x->idx[i];
            } else {
                ((int32_t *)x->idx_upload)[i] = (int32_t)x->idx[i];
            }
        }
        assert_cuda_ok(cudaMemcpy(x->d_idx, x->idx_upload, (size_t)x->n * K * run->isize,
                                  cudaMemcpyHostToDevice));
        assert_cuda_ok(
            cudaMemcpy(x->d_w, x->weights, (size_t)x->n * K * 4, cudaMemcpyHostToDevice));
        run->routing[r].num_tokens = x->n;
        run->routing[r].topk_idx = x->idx;
        run->routing[r].topk_weights = x->weights;
    }
    for (uint32_t r = 0; r < run->R; r++) {
        assert_int_equal(ncclx_ht_ref_route(&run->rc, run->routing, r, &run->lay[r]), 0);
    }
}

/* Draws routing, weights, tokens, gradients and expert outputs; uploads; routes the reference. */
/* An expert output for the MXFP8 combine, element i (blocks of 32): each block draws a kind
 * (all zero, tiny values around 2^-135 that sum to subnormal scales, huge values, one +Inf
 * (never -Inf: sums stay free of NaN), or a wide spread over 2^-20 .. 2^20), so that codes
 * and scales across the range are exercised; rounded to BF16 by the caller. */
static float mx_value(size_t i)
{
    static int kind;
    const float m = ((float)ep_rand_below(256) - 128.0f) / 64.0f;
    if (i % 32 == 0) {
        const uint32_t d = ep_rand_below(64);
        kind = d < 4 ? 0 : d < 8 ? 1 : d < 11 ? 2 : d < 13 ? 3 : 4;
    }
    switch (kind) {
    case 0:
        return 0.0f;
    case 1:
        return ldexpf(m, -128 - (int)ep_rand_below(12));
    case 2:
        return ldexpf(m, 100 + (int)ep_rand_below(20));
    case 3:
        return ep_rand_below(32) == 0 ? INFINITY : m;
    default:
        return ldexpf(m, (int)ep_rand_below(41) - 20);
    }
}

void ht_fill(ht_run_t *run, ht_draw_t draw, uint32_t empty_ranks, int keep_counts)
{
    const ht_case_t *c = &run->c;
    const uint32_t E = c->experts, K = c->topk, T = c->tokens;
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        if (!keep_counts) {
            x->n = (empty_ranks >> r) & 1u ? 0 : (ep_rand_below(4) == 0 ? T : ep_rand_below(T + 1));
        }
        for (uint32_t t = 0; t < x->n; t++) {
            int64_t *row = &x->idx[(size_t)t * K];
            for (uint32_t k = 0; k < K; k++) {
                int64_t e;
                int fresh;
                do {
                    e = draw == HT_HOT ? (int64_t)ep_rand_below(K < 2 ? 2 : K) : ep_rand_below(E);
                    fresh = 1;
                    for (uint32_t j = 0; j < k && draw != HT_REPEATS; j++) {
                        fresh &= row[j] != e;
                    }
                } while (!fresh && draw != HT_HOT);
                if (ep_rand_below(10) == 0) {
                    e = -1;
                }
                if (draw == HT_BAD_IDS && ep_rand_below(8) == 0) {
                    const int64_t bad[] = {E, E + 7, 1000000, -2, INT32_MIN};
                    e = bad[ep_rand_below(5)];
                }
                row[k] = e;
                x->weights[(size_t)t * K + k] = (float)(ep_rand_below(4096) + 1) / 1024.0f;
            }
        }
        for (size_t i = 0; i < (size_t)x->n * run->row; i++) {
            x->tokens[i] = (uint8_t)ep_rand_below(256);
            x->grads[i] = (uint8_t)ep_rand_below(256);
        }
        for (size_t i = 0; i < (size_t)x->n * 16; i++) {
            x->scales[i] = (uint8_t)ep_rand_below(256);
        }
        /* Expert outputs: multiples of 1/64 in [-2, 2), exact in every dtype; MXFP8: see
         * mx_value. */
        const ncclxDataType_t cd = c->quant ? NCCLX_BFLOAT16 : c->dtype;
        for (size_t i = 0; i < (size_t)run->S * c->hidden; i++) {
            const float v = c->mxfp8 ? mx_value(i) : ((float)ep_rand_below(256) - 128.0f) / 64.0f;
            ht_from_float(v, x->expert_out + i * dtype_size(cd), cd);
            x->expert_out_f[i] = ht_to_float(x->expert_out + i * dtype_size(cd), cd);
        }
        /* Weight gradients in: arbitrary values, checked where combine puts them. */
        for (size_t i = 0; i < (size_t)run->S * K; i++) {
            x->grad_w[i] = (float)ep_rand_below(100000) / 1000.0f - 50.0f;
        }
        assert_cuda_ok(
            cudaMemcpy(x->d_tokens, x->tokens, (size_t)x->n * run->row, cudaMemcpyHostToDevice));
        assert_cuda_ok(
            cudaMemcpy(x->d_grads, x->grads, (size_t)x->n * run->row, cudaMemcpyHostToDevice));
        assert_cuda_ok(
            cudaMemcpy(x->d_scales, x->scales, (size_t)x->n * 16, cudaMemcpyHostToDevice));
        assert_cuda_ok(cudaMemcpy(x->d_expert_out, x->expert_out, (size_t)run->S * run->crow,
                                  cudaMemcpyHostToDevice));
        assert_cuda_ok(
            cudaMemcpy(x->d_grad_w, x->grad_w, (size_t)run->S * K * 4, cudaMemcpyHostToDevice));
    }
    ht_set_routing(run);
}

ncclxTensor_t tensor2(void *data, ncclxDataType_t dt, int64_t d0, int64_t d1)
{
    return ep_tensor(d0 == 0 ? NULL : data, dt, 2, d0, d1, 0);
}

ncclxTensor_t ht_idx(const ht_run_t *run, uint32_t r)
{
    return tensor2(run->r[r].d_idx, run->c.idx_dtype, run->r[r].n, run->K);
}

ncclxEpDispatchArgs_t ht_dispatch_args(const ht_run_t *run, uint32_t r, int backward)
{
    const ht_rank_t *x = &run->r[r];
    const ht_case_t *c = &run->c;
    const ncclxDataType_t dt = c->quant ? NCCLX_UINT8 : c->dtype;
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    a.recipe = c->quant ? NCCLX_EP_RECIPE_QUANT_FWD : NCCLX_EP_RECIPE_NONE;
    a.pass = backward ? NCCLX_EP_PASS_BACKWARD : NCCLX_EP_PASS_FORWARD;
    a.tokens = tensor2(backward ? x->d_grads : x->d_tokens, dt, x->n, c->hidden);
    a.out_tokens = tensor2(x->d_out_tokens, dt, run->S, c->hidden);
    if (c->quant) {
        a.scales = tensor2(x->d_scales, NCCLX_FLOAT32, x->n, 4);
        a.out_scales = tensor2(x->d_out_scales, NCCLX_FLOAT32, run->S, 4);
    }
    if (!backward) {
        a.topk_weights = tensor2(x->d_w, NCCLX_FLOAT32, x->n, run->K);
        if (c->layout == NCCLX_EP_LAYOUT_FLAT) {
            a.out_topk_idx = tensor2(x->d_out_idx, c->idx_dtype, run->S, run->K);
            a.out_topk_weights = tensor2(x->d_out_w, NCCLX_FLOAT32, run->S, run->K);
        } else {
            a.out_topk_weights = ep_tensor(x->d_out_w, NCCLX_FLOAT32, 1, run->S, 0, 0);
        }
    }
    return a;
}

ncclxEpCombineArgs_t ht_combine_args(const ht_run_t *run, uint32_t r, int backward)
{
    const ht_rank_t *x = &run->r[r];
    const ncclxDataType_t cd = run->c.quant ? NCCLX_BFLOAT16 : run->c.dtype;
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    a.pass = backward ? NCCLX_EP_PASS_BACKWARD : NCCLX_EP_PASS_FORWARD;
    a.recipe = run->c.mxfp8 ? NCCLX_EP_RECIPE_MXFP8 : NCCLX_EP_RECIPE_NONE;
    a.expert_out = tensor2(x->d_expert_out, cd, run->S, run->c.hidden);
    a.out = tensor2(x->d_out, cd, x->n, run->c.hidden);
    if (backward) {
        a.topk_weights = run->c.layout == NCCLX_EP_LAYOUT_FLAT
                             ? tensor2(x->d_grad_w, NCCLX_FLOAT32, run->S, run->K)
                             : ep_tensor(x->d_grad_w, NCCLX_FLOAT32, 1, run->S, 0, 0);
        a.out_topk_weights = tensor2(x->d_out_gw, NCCLX_FLOAT32, x->n, run->K);
    }
    return a;
}

void ht_route(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxTensor_t idx = ht_idx(run, r);
        if (!run->have_handles) {
            ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
            cfg.layout = run->c.layout;
            cfg.topk = run->K;
            cfg.global_expert_ids = run->c.global_ids;
            assert_ncclx_ok(ncclxEpHandleCreate(run->team.group[r], &cfg, &idx, run->team.stream[r],
                                                &run->h[r]));
        } else {
            assert_ncclx_ok(ncclxEpHandleUpdate(run->h[r], &idx, run->team.stream[r]));
        }
    }
    run->have_handles = 1;
}

void ht_layout(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        char *base = run->r[r].d_layout;
        const size_t stride = ht_layout_stride(run);
        ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
        info.expert_counts = ep_tensor(base, run->c.count_dtype, 1, run->L, 0, 0);
        if (run->c.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
            info.expert_offsets = ep_tensor(base + stride, run->c.count_dtype, 1, run->L + 1, 0, 0);
        }
        info.recv_total = ep_tensor(base + 2 * stride, run->c.count_dtype, 1, 1, 0, 0);
        assert_ncclx_ok(ncclxEpHandleGetLayout(run->h[r], &info, run->team.stream[r]));
    }
}

void ht_poison(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        const size_t S = run->S, K = run->K;
        cudaStream_t s = run->team.stream[r];
        assert_cuda_ok(cudaMemsetAsync(x->d_out_tokens, 0xff, S * run->row, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_out_scales, 0xff, S * 16, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_out_idx, 0xff, S * K * 8, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_out_w, 0xff, S * K * 4, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_out, 0xff, (size_t)run->c.tokens * run->crow, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_out_gw, 0xff, (size_t)run->c.tokens * K * 4, s));
        assert_cuda_ok(cudaMemsetAsync(x->d_layout, 0xff, 3 * ht_layout_stride(run), s));
    }
}

void ht_enqueue(ht_run_t *run, int dispatch, int backward)
{
    for (uint32_t r = 0; r < run->R; r++) {
        if (dispatch) {
            ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, backward);
            assert_ncclx_ok(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]));
        } else {
            ncclxEpCombineArgs_t a = ht_combine_args(run, r, backward);
            assert_ncclx_ok(ncclxEpCombine(run->h[r], &a, run->team.stream[r]));
        }
    }
}

/* Handles on caller memory (ncclxEpHandleMemSize bytes each, ncclxEpHandleInit): no routing
 * yet, so a dispatch is refused until the first ht_route (an update). */
void ht_init_caller_handles(ht_run_t *run)
{
    assert_false(run->have_handles);
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        size_t bytes = 0;
        ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
        cfg.layout = run->c.layout;
        cfg.topk = run->K;
        cfg.global_expert_ids = run->c.global_ids;
        assert_ncclx_ok(ncclxEpHandleMemSize(run->team.group[r], cfg.layout, cfg.topk, &bytes));
        x->d_handle_mem = dmalloc(bytes);
        const ncclxTensor_t mem = ep_tensor(x->d_handle_mem, NCCLX_UINT8, 1, (int64_t)bytes, 0, 0);
        const ncclxTensor_t short_mem =
            ep_tensor(x->d_handle_mem, NCCLX_UINT8, 1, (int64_t)bytes - 1, 0, 0);
        assert_ncclx_error(ncclxEpHandleInit(run->team.group[r], &cfg, &short_mem,
                                             run->team.stream[r], &run->h[r]),
                           ncclxInvalidArgument, "handle_mem.shape[0]");
        assert_ncclx_ok(
            ncclxEpHandleInit(run->team.group[r], &cfg, &mem, run->team.stream[r], &run->h[r]));
        ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
        assert_ncclx_error(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]), ncclxInvalidUsage,
                           "ncclxEpHandleInit gave it none");
    }
    run->have_handles = 1;
}

/* The calls go to the other set of handles from now on (a new set is created at the next
 * ht_route when it has none). */
void ht_swap_handles(ht_run_t *run)
{
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxEpHandle_t tmp = run->h[r];
        run->h[r] = run->h_other[r];
        run->h_other[r] = tmp;
    }
    const int tmp = run->have_handles;
    run->have_handles = run->have_other;
    run->have_other = tmp;
}

/* Forward dispatch and combine with the current handles (no routing), checked. */
void ht_forward_checked(ht_run_t *run)
{
    ht_poison(run);
    ht_enqueue(run, 1, 0);
    ht_enqueue(run, 0, 0);
    ep_team_sync(&run->team);
    ht_check_dispatch(run, 0);
    ht_check_combine(run, 0);
}

/* One iteration: route (create or update), layout, forward dispatch and combine, backward
 * dispatch and combine, each checked. */
void ht_iteration(ht_run_t *run, int expect_bad)
{
    trace("route", 0);
    lib_begin();
    ht_poison(run);
    ht_route(run);
    ep_team_sync_only(&run->team);
    trace("layout", 0);
    ht_layout(run);
    trace("dispatch", 0);
    ht_enqueue(run, 1, 0);
    ep_team_sync_only(&run->team);
    trace("combine", 0);
    ht_enqueue(run, 0, 0);
    if (expect_bad) {
        ep_team_sync_only(&run->team);
        for (uint32_t r = 0; r < run->R; r++) {
            uint32_t err = 0;
            assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
            if (run->r[r].n > 0 && (err & NCCLX_EP_ERROR_BAD_EXPERT) == 0) {
                uint32_t bad = 0;
                for (size_t i = 0; i < (size_t)run->r[r].n * run->K; i++) {
                    bad |= run->r[r].idx[i] < -1 || run->r[r].idx[i] >= run->c.experts;
                }
                assert_false(bad);
            }
            assert_true((err & ~NCCLX_EP_ERROR_BAD_EXPERT) == 0);
            assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
        }
    }
    ep_team_sync(&run->team);
    lib_end();
    trace("check", 0);
    for (uint32_t r = 0; r < run->R; r++) {
        ht_check_layout(run, r);
    }
    ht_check_dispatch(run, 0);
    ht_check_combine(run, 0);
    trace("backward", 0);
    lib_begin();
    ht_poison(run);
    ht_enqueue(run, 1, 1);
    ht_enqueue(run, 0, 1);
    ep_team_sync(&run->team);
    lib_end();
    ht_check_dispatch(run, 1);
    ht_check_combine(run, 1);
}

void ht_case(const ht_case_t *c, ht_draw_t draw, uint32_t empty_ranks, int iterations)
{
    ht_run_t *run = hmalloc(sizeof(*run));
    trace("open ranks", (int)c->ranks);
    ht_open(run, c);
    trace("opened", 0);
    lib_allocs = 0;
    for (int it = 0; it < iterations; it++) {
        trace("fill", it);
        ht_fill(run, draw, empty_ranks, 0);
        ht_iteration(run, draw == HT_BAD_IDS);
    }
    lib_assert_none("eager iterations");
    ht_close(run);
    free(run);
}

ht_case_t base_case(uint32_t ranks, uint32_t layout)
{
    ht_case_t c;
    memset(&c, 0, sizeof(c));
    c.ranks = ranks;
    c.experts = 8 * (ranks == 0 ? 1 : ranks);
    c.tokens = 64;
    c.topk = 4;
    c.hidden = 256;
    c.layout = layout;
    c.alignment = 1;
    c.dtype = NCCLX_BFLOAT16;
    c.idx_dtype = NCCLX_INT64;
    c.count_dtype = NCCLX_INT64;
    return c;
}

/* Captures, on every rank, an update of its handle and a forward dispatch (and, with_combine,
 * a forward combine) into exec[rank]: replayed, they take whatever routing and data the
 * buffers hold then. */
void ht_capture(ht_run_t *run, int with_combine, cudaGraphExec_t *exec)
{
    for (uint32_t r = 0; r < run->R; r++) {
        cudaGraph_t graph = NULL;
        ncclxTensor_t idx = ht_idx(run, r);
        ncclxEpDispatchArgs_t da = ht_dispatch_args(run, r, 0);
        ncclxEpCombineArgs_t ca = ht_combine_args(run, r, 0);
        cudaStream_t s = run->team.stream[r];
        assert_cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        assert_ncclx_ok(ncclxEpHandleUpdate(run->h[r], &idx, s));
        assert_ncclx_ok(ncclxEpDispatch(run->h[r], &da, s));
        if (with_combine) {
            assert_ncclx_ok(ncclxEpCombine(run->h[r], &ca, s));
        }
        assert_cuda_ok(cudaStreamEndCapture(s, &graph));
        assert_cuda_ok(cudaGraphInstantiate(&exec[r], graph, 0));
        assert_cuda_ok(cudaGraphDestroy(graph));
    }
}

uint32_t ht_test_nodes(uint32_t ranks)
{
    const char *env = getenv("TEST_NODES");
    const int n = env != NULL ? atoi(env) : 0;
    return ranks > 0 && n > 0 && ranks % (uint32_t)n == 0 ? (uint32_t)n : 0;
}

uint32_t ht_run_nodes(const ht_run_t *run)
{
    return run->c.ranks == 0 ? 0 : run->c.nodes != 0 ? run->c.nodes : ht_test_nodes(run->c.ranks);
}

int ht_direct_path(const ht_run_t *run)
{
    const char *path = getenv("NCCLX_EP_HT_PATH");
    return run->c.ranks > 0 && ht_run_nodes(run) == 0 &&
           (path == NULL || strcasecmp(path, "STAGED") != 0);
}

void ht_wide_expert_out(ht_run_t *run)
{
    const ncclxDataType_t cd = run->c.quant ? NCCLX_BFLOAT16 : run->c.dtype;
    const int lo = cd == NCCLX_FLOAT16 ? -10 : -20, span = cd == NCCLX_FLOAT16 ? 19 : 41;
    const size_t n = (size_t)run->S * run->c.hidden, es = dtype_size(cd);
    for (uint32_t r = 0; r < run->R; r++) {
        ht_rank_t *x = &run->r[r];
        for (size_t i = 0; i < n; i++) {
            const uint64_t b = ep_rand_u64();
            const float m = 1.0f + (float)(b & 0x7fffffu) * 0x1p-23f;
            const float v = ldexpf((b >> 23) & 1u ? -m : m, lo + (int)((b >> 24) % (uint64_t)span));
            ht_from_float(v, x->expert_out + i * es, cd);
            x->expert_out_f[i] = ht_to_float(x->expert_out + i * es, cd);
        }
        assert_cuda_ok(cudaMemcpy(x->d_expert_out, x->expert_out, n * es, cudaMemcpyHostToDevice));
    }
}
