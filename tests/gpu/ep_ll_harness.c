/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL test harness: random numbers, teams, run buffers, call arguments and operations on
 * every rank (tests/gpu/ep_ll_harness.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "alloc_counter.h"
#include "gpu/ep_ll_harness.h"

/* ---- random numbers (splitmix64) ---- */

static uint64_t base_seed;
static uint64_t rng_state;

void ep_seed_init(const char *program)
{
    const char *fixed = getenv("TEST_SEED");
    base_seed = fixed != NULL ? strtoull(fixed, NULL, 10)
                              : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
    printf("%s: seed %llu (rerun with TEST_SEED=%llu)\n", program, (unsigned long long)base_seed,
           (unsigned long long)base_seed);
    fflush(stdout);
}

void ep_rng_reset(const char *test_name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the name, so tests do not share draws */
    for (const char *p = test_name; *p != '\0'; p++) {
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    rng_state = base_seed ^ h;
}

uint64_t ep_rand_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t ep_rand_below(uint32_t n)
{
    return (uint32_t)(ep_rand_u64() % n);
}

float ep_rand_unit(void)
{
    return (float)(ep_rand_u64() >> 40) * 0x1p-24f;
}

/* ---- teams ---- */

void ep_team_plan(ep_team_t *t, uint32_t experts, uint32_t max_topk, uint32_t hidden,
                  uint32_t max_tokens)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_LL;
    g.num_experts = experts;
    g.max_topk = max_topk;
    g.hidden = hidden;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT16) |
                     NCCLX_DTYPE_BIT(NCCLX_FLOAT32) | NCCLX_DTYPE_BIT(NCCLX_FP8_E4M3) |
                     NCCLX_DTYPE_BIT(NCCLX_FP4X2_E2M1) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    g.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | NCCLX_EP_RECIPE_FP8;
    g.max_dispatch_tokens_per_rank = max_tokens;
    g.max_token_bytes = 2 * hidden;
    g.max_scale_bytes = 64;
    g.num_handles = 4;
    g.timeout_ns = 20000000000ull; /* a lost signal fails the test instead of hanging it */
    t->group_plan = g;
    t->nodes = 0;
    t->group_plans[0] = &t->group_plan;
    plan.num_ep_groups = 1;
    plan.ep_groups = t->group_plans;
    t->plan = plan;
}

void ep_team_open(ep_team_t *t, uint32_t ranks)
{
    assert_true(ranks <= EP_MAX_RANKS);
    t->singleton = ranks == 0;
    t->ranks = ranks == 0 ? 1 : ranks;
    t->group_plans[0] = &t->group_plan;
    t->plan.ep_groups = t->group_plans;
    if (t->singleton) {
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        assert_ncclx_ok(ncclxInit(&t->plan, NULL, &t->ctx[0]));
        assert_ncclx_ok(ncclxContextGetInfo(t->ctx[0], &info));
        assert_int_equal(info.num_ranks, 1);
    } else {
        ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
        const char *nodes = getenv("TEST_NODES");
        config.num_ranks = ranks;
        config.num_nodes = t->nodes;
        /* TEST_NODES=N runs a program's loopback teams as N emulated nodes where N divides the
         * team (the same assertions, across load/store domains). */
        if (config.num_nodes == 0 && nodes != NULL && atoi(nodes) > 0 &&
            ranks % (uint32_t)atoi(nodes) == 0) {
            config.num_nodes = (uint32_t)atoi(nodes);
        }
        assert_ncclx_ok(ncclxLoopbackInitConfig(&t->plan, &config, t->ctx));
    }
    /* Created back to back, so that each rank's stream gets its own hardware queue. */
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaStreamCreateWithFlags(&t->stream[r], cudaStreamNonBlocking));
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpGroupGet(t->ctx[r], 0, &t->group[r]));
    }
}

void ep_team_close(ep_team_t *t)
{
    ep_team_sync_only(t);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaStreamDestroy(t->stream[r]));
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxFinalize(t->ctx[r]));
    }
}

void ep_team_sync_only(const ep_team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        cudaError_t err = cudaStreamSynchronize(t->stream[r]);
        if (err != cudaSuccess) {
            fail_msg("rank %u of %u: cudaStreamSynchronize: %s", r, t->ranks,
                     cudaGetErrorString(err));
        }
    }
}

void ep_team_assert_no_async_error(const ep_team_t *t)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        uint32_t error = 0xffffffffu;
        assert_ncclx_ok(ncclxEpGetAsyncError(t->group[r], &error));
        if (error != 0) {
            fail_msg("rank %u of %u: ncclxEpGetAsyncError = 0x%x (1: timeout, 2: bad expert)", r,
                     t->ranks, error);
        }
    }
}

void ep_team_sync(const ep_team_t *t)
{
    ep_team_sync_only(t);
    ep_team_assert_no_async_error(t);
}

/* ---- run buffers ---- */

static size_t dtype_size(ncclxDataType_t dtype)
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
        return 1;
    }
}

static void *host_alloc(size_t bytes)
{
    void *p = calloc(bytes + 16, 1);
    assert_non_null(p);
    return p;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    assert_cuda_ok(cudaMalloc(&p, bytes + 16));
    return p;
}

static void run_sizes(ep_run_t *run)
{
    const ep_team_t *t = run->team;
    const ncclxEpGroupPlan_t *g = &t->group_plan;
    ncclx_ref_case_t c = {0};
    char why[256];
    c.ranks = t->ranks;
    c.experts = g->num_experts;
    c.max_tokens = g->max_dispatch_tokens_per_rank;
    c.topk = run->k.topk != 0 ? run->k.topk : g->max_topk;
    c.hidden = g->hidden;
    c.layout = run->k.layout;
    c.recipe = run->k.recipe;
    c.round_scales = run->k.round_scales;
    c.global_expert_ids = run->k.global_ids;
    c.dtype = run->k.recipe == NCCLX_EP_RECIPE_FP8 ? NCCLX_BFLOAT16 : run->k.dtype;
    c.scale_bytes = run->k.recipe == NCCLX_EP_RECIPE_QUANT_FWD
                        ? run->k.scale_elems * (uint32_t)dtype_size(run->k.scale_dtype)
                        : 0;
    if (ncclx_ref_case_check(&c, NULL, why, sizeof(why)) != 0) {
        fail_msg("bad test case: %s", why);
    }
    run->k.topk = c.topk;
    run->c = c;
    run->in_row =
        c.recipe == NCCLX_EP_RECIPE_FP8 ? (size_t)c.hidden * 2 : ncclx_ref_token_row_bytes(&c);
    run->scale_row = c.scale_bytes;
    run->out_rows = ncclx_ref_out_rows(&c);
    run->out_row = ncclx_ref_token_row_bytes(&c);
    run->out_scale_row = ncclx_ref_scale_row_bytes(&c);
    run->counts = c.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? c.experts / c.ranks : c.ranks;
    run->combine_row = (size_t)c.hidden * dtype_size(run->k.combine_dtype);
}

static void rank_alloc(ep_run_t *run, ep_rank_t *b)
{
    const size_t T = run->c.max_tokens, K = run->c.topk, rows = run->out_rows;
    b->idx = host_alloc(T * K * sizeof(int64_t));
    b->ref_idx = host_alloc(T * K * sizeof(int64_t));
    b->idx_upload = host_alloc(T * K * sizeof(int64_t));
    b->weights = host_alloc(T * K * sizeof(float));
    b->tokens = host_alloc(T * run->in_row);
    b->scales = host_alloc(T * run->scale_row);
    b->expert_out = host_alloc(rows * run->combine_row);
    b->got_idx_raw = host_alloc(rows * K * sizeof(int64_t));
    b->want_out = host_alloc(T * run->c.hidden * sizeof(double));
    b->got_out = host_alloc(T * run->combine_row);
    b->prev_out = host_alloc(T * run->combine_row);
    assert_int_equal(ncclx_ref_dispatch_alloc(&run->c, &b->want), 0);
    assert_int_equal(ncclx_ref_dispatch_alloc(&run->c, &b->got), 0);
    b->d_idx = dev_alloc(T * K * sizeof(int64_t));
    b->d_weights = dev_alloc(T * K * sizeof(float));
    b->d_tokens = dev_alloc(T * run->in_row);
    b->d_scales = dev_alloc(T * run->scale_row);
    b->d_expert_out = dev_alloc(rows * run->combine_row);
    b->d_out_tokens = dev_alloc(rows * run->out_row);
    b->d_out_scales = dev_alloc(rows * run->out_scale_row);
    b->d_counts = dev_alloc(run->counts * sizeof(int32_t));
    b->d_out_idx = dev_alloc(rows * K * dtype_size(run->k.out_idx_dtype));
    b->d_out_weights = dev_alloc(rows * K * sizeof(float));
    b->d_out = dev_alloc(T * run->combine_row);
}

void ep_run_alloc(ep_run_t *run, ep_team_t *t, const ep_case_t *k)
{
    memset(run, 0, sizeof(*run));
    run->team = t;
    run->k = *k;
    run_sizes(run);
    for (uint32_t r = 0; r < t->ranks; r++) {
        rank_alloc(run, &run->r[r]);
    }
}

void ep_run_free(ep_run_t *run)
{
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        ep_rank_t *b = &run->r[r];
        void *host[] = {b->idx,      b->ref_idx, b->idx_upload, b->weights,
                        b->tokens,   b->scales,  b->expert_out, b->got_idx_raw,
                        b->want_out, b->got_out, b->prev_out};
        void *dev[] = {b->d_idx,        b->d_weights,     b->d_tokens,     b->d_scales,
                       b->d_expert_out, b->d_out_tokens,  b->d_out_scales, b->d_counts,
                       b->d_out_idx,    b->d_out_weights, b->d_out};
        for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) {
            free(host[i]);
        }
        for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++) {
            assert_cuda_ok(cudaFree(dev[i]));
        }
        ncclx_ref_dispatch_free(&b->want);
        ncclx_ref_dispatch_free(&b->got);
    }
    memset(run, 0, sizeof(*run));
}

void ep_run_share_handles(ep_run_t *run, const ep_run_t *other)
{
    assert_int_equal(run->k.layout, other->k.layout);
    assert_int_equal(run->c.topk, other->c.topk);
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        run->handle[r] = other->handle[r];
    }
    run->own_handles = 0;
}

void ep_run_zero_copy(ep_run_t *run, uint32_t dispatch_ranks, uint32_t combine_ranks)
{
    const ep_team_t *t = run->team;
    const size_t tokens = run->out_rows * run->out_row, scales = run->out_rows * run->out_scale_row;
    const size_t expert_out = run->out_rows * run->combine_row;
    const int rm = run->c.layout == NCCLX_EP_LAYOUT_RANK_MAJOR;
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
        ep_rank_t *x = &run->r[r];
        assert_ncclx_ok(ncclxEpGroupGetLlBuffers(t->group[r], &b));
        /* The layout's own rows: L x R x T expert-major, R x T rank-major. */
        const uint32_t rows = rm ? b.rank_major_rows : b.rows;
        x->zc_tokens = rm ? b.rank_major_tokens : b.tokens;
        x->zc_scales = rm ? b.rank_major_scales : b.scales;
        assert_non_null(x->zc_tokens);
        assert_int_equal(rows, run->out_rows);
        x->zc_token_bytes = (size_t)rows * b.row_bytes;
        x->zc_scale_bytes = x->zc_scales != NULL ? (size_t)rows * b.scale_bytes : 0;
        if ((dispatch_ranks != 0 && (x->zc_token_bytes < tokens || x->zc_scale_bytes < scales)) ||
            (combine_ranks != 0 && x->zc_token_bytes < expert_out)) {
            fail_msg("rank %u: zero-copy rows of %llu (scales %llu) bytes x %u cannot hold the "
                     "case's rows: tokens %zu, scales %zu, expert_out %zu bytes",
                     r, (unsigned long long)b.row_bytes, (unsigned long long)b.scale_bytes, rows,
                     tokens, scales, expert_out);
        }
    }
    run->zc_dispatch = dispatch_ranks;
    run->zc_combine = combine_ranks;
}

void *ep_out_tokens(const ep_run_t *run, uint32_t r)
{
    return (run->zc_dispatch >> r) & 1u ? run->r[r].zc_tokens : run->r[r].d_out_tokens;
}

void *ep_out_scales(const ep_run_t *run, uint32_t r)
{
    return (run->zc_dispatch >> r) & 1u ? run->r[r].zc_scales : run->r[r].d_out_scales;
}

void *ep_expert_out(const ep_run_t *run, uint32_t r)
{
    return (run->zc_combine >> r) & 1u ? run->r[r].zc_tokens : run->r[r].d_expert_out;
}

/* ---- arguments ---- */

ncclxTensor_t ep_tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0, int64_t d1,
                        int64_t d2)
{
    ncclxTensor_t t = NCCLX_TENSOR_INIT;
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.shape[2] = d2;
    return t;
}

/* The buffer of a [num_tokens, ...] tensor of rank r (NULL when empty, if the case says so). */
static void *input(const ep_run_t *run, uint32_t r, void *data)
{
    return run->k.null_when_empty && run->r[r].num_tokens == 0 ? NULL : data;
}

ncclxTensor_t ep_idx_tensor(const ep_run_t *run, uint32_t r)
{
    return ep_tensor(input(run, r, run->r[r].d_idx), run->k.idx_dtype, 2, run->r[r].num_tokens,
                     run->c.topk, 0);
}

ncclxEpHandleConfig_t ep_handle_config(const ep_run_t *run)
{
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    cfg.layout = run->k.layout;
    cfg.topk = run->c.topk;
    cfg.global_expert_ids = run->k.global_ids;
    return cfg;
}

/* Outer dimensions of the outputs: [L, R*T, ..] expert-major, [R, T, ..] rank-major. */
static void out_dims(const ep_run_t *run, int64_t *d0, int64_t *d1)
{
    const ncclx_ref_case_t *c = &run->c;
    int em = c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    *d0 = em ? c->experts / c->ranks : c->ranks;
    *d1 = em ? (int64_t)c->ranks * c->max_tokens : c->max_tokens;
}

ncclxEpDispatchArgs_t ep_dispatch_args(const ep_run_t *run, uint32_t r, uint32_t send_only)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const ep_rank_t *b = &run->r[r];
    const ncclx_ref_case_t *c = &run->c;
    const int64_t nt = b->num_tokens, H = c->hidden, K = c->topk;
    int64_t d0, d1;
    int fp8 = c->recipe == NCCLX_EP_RECIPE_FP8;
    out_dims(run, &d0, &d1);
    a.recipe = c->recipe;
    a.round_scales = c->round_scales;
    a.send_only = send_only;
    a.tokens = ep_tensor(input(run, r, b->d_tokens), c->dtype, 2, nt, H, 0);
    a.out_tokens = ep_tensor(ep_out_tokens(run, r), fp8 ? NCCLX_FP8_E4M3 : c->dtype, 3, d0, d1, H);
    if (fp8) {
        a.out_scales = ep_tensor(ep_out_scales(run, r), NCCLX_FLOAT32, 3, d0, d1, H / 128);
    } else if (c->recipe == NCCLX_EP_RECIPE_QUANT_FWD && run->k.scale_elems > 0) {
        a.scales =
            ep_tensor(input(run, r, b->d_scales), run->k.scale_dtype, 2, nt, run->k.scale_elems, 0);
        a.out_scales =
            ep_tensor(ep_out_scales(run, r), run->k.scale_dtype, 3, d0, d1, run->k.scale_elems);
    }
    a.out_counts = ep_tensor(b->d_counts, NCCLX_INT32, 1, (int64_t)run->counts, 0, 0);
    if (c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
        a.topk_weights = ep_tensor(input(run, r, b->d_weights), NCCLX_FLOAT32, 2, nt, K, 0);
        a.out_topk_idx = ep_tensor(b->d_out_idx, run->k.out_idx_dtype, 3, d0, d1, K);
        a.out_topk_weights = ep_tensor(b->d_out_weights, NCCLX_FLOAT32, 3, d0, d1, K);
    }
    return a;
}

ncclxEpCombineArgs_t ep_combine_args(const ep_run_t *run, uint32_t r, uint32_t send_only)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    const ep_rank_t *b = &run->r[r];
    const ncclxDataType_t dt = run->k.combine_dtype;
    const int64_t nt = b->num_tokens, H = run->c.hidden;
    int64_t d0, d1;
    out_dims(run, &d0, &d1);
    a.send_only = send_only;
    a.expert_out = ep_tensor(ep_expert_out(run, r), dt, 3, d0, d1, H);
    if (run->c.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        a.topk_weights =
            ep_tensor(input(run, r, b->d_weights), NCCLX_FLOAT32, 2, nt, run->c.topk, 0);
    }
    a.out = ep_tensor(input(run, r, b->d_out), dt, 2, nt, H, 0);
    return a;
}

/* ---- operations ---- */

void ep_run_create(ep_run_t *run)
{
    const ep_team_t *t = run->team;
    ncclxEpHandleConfig_t cfg = ep_handle_config(run);
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclxTensor_t idx = ep_idx_tensor(run, r);
        assert_ncclx_ok(
            ncclxEpHandleCreate(t->group[r], &cfg, &idx, t->stream[r], &run->handle[r]));
    }
    run->own_handles = 1;
}

void ep_run_update(ep_run_t *run)
{
    const ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclxTensor_t idx = ep_idx_tensor(run, r);
        assert_ncclx_ok(ncclxEpHandleUpdate(run->handle[r], &idx, t->stream[r]));
    }
}

void ep_run_destroy(ep_run_t *run)
{
    for (uint32_t r = 0; run->own_handles && r < run->team->ranks; r++) {
        assert_ncclx_ok(ncclxEpHandleDestroy(run->handle[r]));
        run->handle[r] = NULL;
    }
    run->own_handles = 0;
}

void ep_run_poison_dispatch(const ep_run_t *run)
{
    const ep_team_t *t = run->team;
    const size_t rows = run->out_rows, K = run->c.topk;
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((run->absent >> r) & 1u) {
            continue;
        }
        const ep_rank_t *b = &run->r[r];
        cudaStream_t s = t->stream[r];
        assert_cuda_ok(cudaMemsetAsync(b->d_out_tokens, 0xff, rows * run->out_row, s));
        assert_cuda_ok(cudaMemsetAsync(b->d_out_scales, 0xff, rows * run->out_scale_row, s));
        assert_cuda_ok(cudaMemsetAsync(b->d_counts, 0xff, run->counts * sizeof(int32_t), s));
        assert_cuda_ok(
            cudaMemsetAsync(b->d_out_idx, 0xff, rows * K * dtype_size(run->k.out_idx_dtype), s));
        assert_cuda_ok(cudaMemsetAsync(b->d_out_weights, 0xff, rows * K * sizeof(float), s));
        /* Zero copy: the rows peers write into, whether this rank receives in place or not
         * (its own stream, before its dispatch: peers write them only after it started). */
        if (b->zc_tokens != NULL) {
            assert_cuda_ok(cudaMemsetAsync(b->zc_tokens, 0xff, b->zc_token_bytes, s));
        }
        if (b->zc_scales != NULL) {
            assert_cuda_ok(cudaMemsetAsync(b->zc_scales, 0xff, b->zc_scale_bytes, s));
        }
    }
}

void ep_run_poison_combine(const ep_run_t *run)
{
    const ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((run->absent >> r) & 1u) {
            continue;
        }
        assert_cuda_ok(cudaMemsetAsync(run->r[r].d_out, 0xff, run->c.max_tokens * run->combine_row,
                                       t->stream[r]));
    }
}

void ep_run_enqueue_dispatch(ep_run_t *run, uint32_t send_only)
{
    const ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((run->absent >> r) & 1u) {
            continue;
        }
        ncclxEpDispatchArgs_t a = ep_dispatch_args(run, r, send_only);
        assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &a, t->stream[r]));
    }
}

void ep_run_enqueue_combine(ep_run_t *run, uint32_t send_only)
{
    const ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((run->absent >> r) & 1u) {
            continue;
        }
        ncclxEpCombineArgs_t a = ep_combine_args(run, r, send_only);
        ep_run_stage_expert_out(run, r);
        assert_ncclx_ok(ncclxEpCombine(run->handle[r], &a, t->stream[r]));
    }
}

void ep_run_stage_expert_out(const ep_run_t *run, uint32_t r)
{
    if ((run->zc_combine >> r) & 1u) {
        assert_cuda_ok(cudaMemcpyAsync(run->r[r].zc_tokens, run->r[r].d_expert_out,
                                       run->out_rows * run->combine_row, cudaMemcpyDeviceToDevice,
                                       run->team->stream[r]));
    }
}

void ep_run_enqueue_complete(ep_run_t *run)
{
    const ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((run->absent >> r) & 1u) {
            continue;
        }
        assert_ncclx_ok(ncclxEpComplete(run->handle[r], t->stream[r]));
    }
}

void ep_run_case(ep_team_t *t, const ep_case_t *k, const ep_routing_t *rt, const char *where)
{
    ep_run_t run;
    ep_run_alloc(&run, t, k);
    ep_alloc_arm();
    ep_run_fill(&run, rt);
    ep_run_create(&run);
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            ep_run_fill(&run, rt);
            ep_run_update(&run);
        }
        ep_run_dispatch_and_check(&run, 0);
        ep_run_combine_and_check(&run, 0);
        ep_run_combine_and_check(&run, 0);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none(where);
    ep_run_free(&run);
}

void ep_run_dispatch_and_check(ep_run_t *run, uint32_t send_only)
{
    ep_run_poison_dispatch(run);
    ep_run_enqueue_dispatch(run, send_only);
    if (send_only) {
        ep_run_enqueue_complete(run);
    }
    ep_team_sync(run->team);
    ep_run_check_dispatch(run);
}

void ep_run_combine_and_check(ep_run_t *run, uint32_t send_only)
{
    ep_run_poison_combine(run);
    ep_run_enqueue_combine(run, send_only);
    if (send_only) {
        ep_run_enqueue_complete(run);
    }
    ep_team_sync(run->team);
    ep_run_check_combine(run);
}

/* ---- allocation counting ---- */

void ep_alloc_arm(void)
{
    ncclx_test_alloc_arm();
}

void ep_alloc_assert_none(const char *where)
{
    size_t calls = ncclx_test_alloc_disarm();
    if (calls != 0) {
        fail_msg("%s: %zu allocator calls while armed (first: %s)", where, calls,
                 ncclx_test_alloc_first());
    }
}
