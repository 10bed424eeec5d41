/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench team: the contexts (a loopback team on one GPU, or this process's rank of a
 * communicator), one stream, handle and set of buffers per rank driven here, and the calls
 * (eager, or replayed from a CUDA graph captured per rank and operation).  Every buffer is
 * allocated here, before anything is timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int bench_fail_ncclx(ncclxResult_t res, const char *what, int rank)
{
    if (rank >= 0) {
        fprintf(stderr, "ncclx-bench: rank %d: %s failed: %s: %s\n", rank, what,
                ncclxGetErrorString(res), ncclxGetLastError());
    } else {
        fprintf(stderr, "ncclx-bench: %s failed: %s: %s\n", what, ncclxGetErrorString(res),
                ncclxGetLastError());
    }
    return -1;
}

int bench_fail_cuda(cudaError_t err, const char *what, int rank)
{
    if (rank >= 0) {
        fprintf(stderr, "ncclx-bench: rank %d: %s failed: %s\n", rank, what,
                cudaGetErrorString(err));
    } else {
        fprintf(stderr, "ncclx-bench: %s failed: %s\n", what, cudaGetErrorString(err));
    }
    return -1;
}

static ncclxTensor_t bench_tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
                                  int64_t d1, int64_t d2)
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

static void bench_group_plan(const bench_options_t *o, ncclxEpGroupPlan_t *g)
{
    *g = (ncclxEpGroupPlan_t)NCCLX_EP_GROUP_PLAN_INIT;
    g->algorithm = o->algo;
    g->num_experts = o->experts;
    g->max_topk = o->topk;
    g->hidden = o->hidden;
    g->token_dtypes = NCCLX_DTYPE_BIT(o->dtype);
    g->layouts = o->layout;
    g->recipes = o->recipe;
    g->max_dispatch_tokens_per_rank = o->tokens;
    g->num_handles = 1;
    g->sm_budget = o->sm_budget;
    g->enable_mask = o->mask != 0;
    g->zero_copy = o->algo == NCCLX_EP_ALGO_LL && o->zero_copy;
    if (o->algo == NCCLX_EP_ALGO_HT) {
        g->layouts = NCCLX_EP_LAYOUT_FLAT | NCCLX_EP_LAYOUT_EXPERT_MAJOR;
        g->recipes = NCCLX_EP_RECIPE_NONE | (o->recipe & NCCLX_EP_RECIPE_MXFP8);
        g->max_recv_tokens_per_rank = o->recv;
        g->expert_alignment = o->alignment;
    }
    /* Ranks of a communicator may start an operation seconds apart (host-side checks, a
     * busy node); a loopback team starts together, and a lost signal should fail fast. */
    g->timeout_ns = (uint64_t)(o->timeout_s != 0 ? o->timeout_s
                               : o->comm         ? 60
                                                 : 10) *
                    1000000000ull;
}

/* The contexts: every rank of a loopback team, or this process's rank. */
static int bench_team_contexts(bench_team_t *t, const ncclxPlan_t *plan)
{
    uint32_t n = t->o.comm ? 1 : t->o.loopback;
    t->r = calloc(n, sizeof(*t->r));
    if (t->r == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory\n");
        return -1;
    }
    if (!t->o.comm) {
        ncclxContext_t *ctxs = calloc(n, sizeof(*ctxs));
        ncclxResult_t res;
        if (ctxs == NULL) {
            fprintf(stderr, "ncclx-bench: out of host memory\n");
            return -1;
        }
        ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
        config.num_ranks = n;
        config.cuda_device = (int32_t)t->o.device;
        config.num_nodes = t->o.nodes;
        res = ncclxLoopbackInitConfig(plan, &config, ctxs);
        for (uint32_t i = 0; i < n && res == ncclxSuccess; i++) {
            t->r[i].ctx = ctxs[i];
            t->r[i].rank = i;
        }
        free(ctxs);
        BENCH_NCCLX(res, "ncclxLoopbackInitConfig", -1);
        t->ranks = t->nlocal = n;
        t->cuda_device = (int)t->o.device;
    } else {
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        BENCH_NCCLX(ncclxInit(plan, NULL, &t->r[0].ctx), "ncclxInit", -1);
        t->nlocal = 1;
        BENCH_NCCLX(ncclxContextGetInfo(t->r[0].ctx, &info), "ncclxContextGetInfo", -1);
        t->r[0].rank = (uint32_t)info.rank;
        t->ranks = (uint32_t)info.num_ranks;
        t->cuda_device = info.cuda_device;
    }
    BENCH_CUDA(cudaSetDevice(t->cuda_device), "cudaSetDevice", -1);
    return 0;
}

static int bench_alloc(void **p, size_t bytes, uint32_t rank)
{
    if (bytes == 0) {
        return 0;
    }
    BENCH_CUDA(cudaMalloc(p, bytes), "cudaMalloc", rank);
    BENCH_CUDA(cudaMemset(*p, 0, bytes), "cudaMemset", rank);
    return 0;
}

/* The roofline's destination: on this GPU, or with --peer-copy on the next visible one (peer
 * access enabled, so the copy goes over the GPUs' link: NVLink where there is one). */
static int bench_copy_target(bench_team_t *t)
{
    int count = 1, rc;
    t->copy_device = t->cuda_device;
    if (t->o.peer_copy) {
        BENCH_CUDA(cudaGetDeviceCount(&count), "cudaGetDeviceCount", -1);
        t->copy_device = (t->cuda_device + 1) % count;
    }
    if (t->copy_device == t->cuda_device) {
        return bench_alloc(&t->copy_dst, t->copy_bytes, 0);
    }
    BENCH_CUDA(cudaSetDevice(t->copy_device), "cudaSetDevice (peer)", -1);
    rc = bench_alloc(&t->copy_dst, t->copy_bytes, 0);
    BENCH_CUDA(cudaSetDevice(t->cuda_device), "cudaSetDevice", -1);
    if (rc == 0) {
        cudaError_t err = cudaDeviceEnablePeerAccess(t->copy_device, 0);
        if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled) {
            return bench_fail_cuda(err, "cudaDeviceEnablePeerAccess", -1);
        }
        (void)cudaGetLastError();
    }
    return rc;
}

/* HT: inputs [T, ...], receive rows [S, ...] (bench.h says which call uses which). */
static int bench_ht_rank_buffers(bench_team_t *t, bench_rank_t *r)
{
    const bench_options_t *o = &t->o;
    const size_t T = o->tokens, H = o->hidden, K = o->topk, elt = bench_dtype_size(o->dtype);
    const size_t S = t->recv_rows, L = t->local_experts;
    const int flat = o->layout == NCCLX_EP_LAYOUT_FLAT, bwd = o->pass == NCCLX_EP_PASS_BACKWARD;
    if (o->zero_copy) {
        /* Receive rows and expert outputs live in the group's own symmetric buffers. */
        ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
        BENCH_NCCLX(ncclxEpGroupGetHtBuffers(r->group, &b), "ncclxEpGroupGetHtBuffers", r->rank);
        if (b.dispatch_row_bytes != H * elt || b.combine_row_bytes != H * elt || b.rows < S) {
            fprintf(stderr,
                    "ncclx-bench: rank %u: --zero-copy: the group's buffers have rows of %llu "
                    "and %llu bytes (%u rows), the tokens %zu bytes (%zu rows)\n",
                    r->rank, (unsigned long long)b.dispatch_row_bytes,
                    (unsigned long long)b.combine_row_bytes, b.rows, H * elt, S);
            return -1;
        }
        r->out_tokens = b.dispatch_rows;
        r->expert_out = b.combine_rows;
        r->borrowed = r->borrowed_expert_out = 1;
    } else if (bench_alloc(&r->out_tokens, S * H * elt, r->rank) != 0 ||
               bench_alloc(&r->expert_out, S * H * elt, r->rank) != 0) {
        return -1;
    }
    if (bench_alloc(&r->topk_idx, T * K * sizeof(int64_t), r->rank) != 0 ||
        bench_alloc(&r->topk_weights, T * K * sizeof(float), r->rank) != 0 ||
        bench_alloc(&r->tokens, T * H * elt, r->rank) != 0 ||
        bench_alloc(&r->out_counts, (2 * L + 2) * sizeof(int64_t), r->rank) != 0 ||
        bench_alloc(&r->out_topk_idx, flat && !bwd ? S * K * sizeof(int32_t) : 0, r->rank) != 0 ||
        bench_alloc(&r->out_topk_weights, (flat ? S * K : S) * sizeof(float), r->rank) != 0 ||
        bench_alloc(&r->grad_weights, bwd ? T * K * sizeof(float) : 0, r->rank) != 0 ||
        bench_alloc(&r->out, T * H * elt, r->rank) != 0) {
        return -1;
    }
    return 0;
}

/* LL --zero-copy: out_tokens and out_scales (FP8) are the group's zero-copy rows of the
 * layout, [L, R*T, ...] expert-major or [R*T, ...] rank-major, of the call's dtype.  Recipe none:
 * expert_out is the same rows (the bench's identity experts' outputs are the received rows, as
 * dispatch leaves them: rank-major rows then carry no weights, which --check expects,
 * bench_combine_value).  FP8: the received rows are E4M3, not expert outputs, and the rows of the
 * bench's FP8-only plan are half a BF16 row: expert_out is a buffer of the bench's own. */
static int bench_ll_zero_copy_buffers(const bench_team_t *t, bench_rank_t *r)
{
    const bench_options_t *o = &t->o;
    const size_t rows = (size_t)t->slabs * t->slab_rows, H = o->hidden;
    const size_t scale_row = o->recipe == NCCLX_EP_RECIPE_FP8 ? H / 128 * sizeof(float) : 0;
    const size_t expert_row = H * bench_dtype_size(o->dtype);
    ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
    BENCH_NCCLX(ncclxEpGroupGetLlBuffers(r->group, &b), "ncclxEpGroupGetLlBuffers", r->rank);
    const int rm = o->layout == NCCLX_EP_LAYOUT_RANK_MAJOR;
    void *tokens = rm ? b.rank_major_tokens : b.tokens;
    void *scales = rm ? b.rank_major_scales : b.scales;
    const uint32_t have = rm ? b.rank_major_rows : b.rows;
    if (tokens == NULL || have != rows || b.row_bytes < t->out_row_bytes ||
        b.scale_bytes < scale_row || (scale_row > 0 && scales == NULL)) {
        fprintf(stderr,
                "ncclx-bench: rank %u: --zero-copy: the group's %s zero-copy rows are %u of "
                "%llu bytes (scales %llu), the bench needs %zu of %zu (scales %zu)\n",
                r->rank, rm ? "rank-major" : "expert-major", have, (unsigned long long)b.row_bytes,
                (unsigned long long)b.scale_bytes, rows, t->out_row_bytes, scale_row);
        return -1;
    }
    r->out_tokens = tokens;
    r->out_scales = scale_row > 0 ? scales : NULL;
    r->borrowed = 1;
    if (o->recipe == NCCLX_EP_RECIPE_NONE && b.row_bytes >= expert_row) {
        r->expert_out = tokens;
        r->borrowed_expert_out = 1;
        return 0;
    }
    return bench_alloc(&r->expert_out, rows * expert_row, r->rank);
}

int bench_ll_expert_out_in_rows(const bench_team_t *t)
{
    return t->o.algo == NCCLX_EP_ALGO_LL && t->o.zero_copy && t->r[0].expert_out != NULL &&
           t->r[0].expert_out == t->r[0].out_tokens;
}

static int bench_rank_buffers(bench_team_t *t, bench_rank_t *r)
{
    const bench_options_t *o = &t->o;
    const size_t T = o->tokens, H = o->hidden, K = o->topk, elt = bench_dtype_size(o->dtype);
    const size_t rows = (size_t)t->slabs * t->slab_rows;
    const int rm = o->layout == NCCLX_EP_LAYOUT_RANK_MAJOR;
    const int fp8 = o->recipe == NCCLX_EP_RECIPE_FP8;
    BENCH_NCCLX(ncclxEpGroupGet(r->ctx, 0, &r->group), "ncclxEpGroupGet", r->rank);
    BENCH_CUDA(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags", r->rank);
    if (o->algo == NCCLX_EP_ALGO_HT) {
        return bench_ht_rank_buffers(t, r);
    }
    if (o->zero_copy) {
        if (bench_ll_zero_copy_buffers(t, r) != 0) {
            return -1;
        }
    } else if (bench_alloc(&r->out_tokens, rows * t->out_row_bytes, r->rank) != 0 ||
               bench_alloc(&r->out_scales, fp8 ? rows * (H / 128) * sizeof(float) : 0, r->rank) !=
                   0 ||
               bench_alloc(&r->expert_out, rows * H * elt, r->rank) != 0) {
        return -1;
    }
    if (bench_alloc(&r->topk_idx, T * K * sizeof(int64_t), r->rank) != 0 ||
        bench_alloc(&r->topk_weights, T * K * sizeof(float), r->rank) != 0 ||
        bench_alloc(&r->tokens, T * H * elt, r->rank) != 0 ||
        bench_alloc(&r->out_counts, t->slabs * sizeof(int32_t), r->rank) != 0 ||
        bench_alloc(&r->out_topk_idx, rm ? t->ranks * T * K * sizeof(int32_t) : 0, r->rank) != 0 ||
        bench_alloc(&r->out_topk_weights, rm ? t->ranks * T * K * sizeof(float) : 0, r->rank) !=
            0 ||
        bench_alloc(&r->out, T * H * elt, r->rank) != 0) {
        return -1;
    }
    return 0;
}

int bench_team_create(const bench_options_t *o, bench_team_t *t)
{
    ncclxEpGroupPlan_t group;
    const ncclxEpGroupPlan_t *groups[1] = {&group};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    uint32_t rows_per_token = o->topk;
    memset(t, 0, sizeof(*t));
    t->o = *o;
    bench_group_plan(o, &group);
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    if (bench_team_contexts(t, &plan) != 0) {
        goto err_destroy;
    }
    t->max_tokens = o->tokens;
    t->local_experts = o->experts / t->ranks;
    t->slabs = o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? t->local_experts : t->ranks;
    t->slab_rows = o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? t->ranks * o->tokens : o->tokens;
    if (o->algo == NCCLX_EP_ALGO_HT) { /* S as the plan resolves it */
        t->recv_rows = o->recv != 0 ? o->recv : t->ranks * o->tokens;
        t->slabs = 1;
        t->slab_rows = t->recv_rows;
        /* Rows one token sends: one per destination rank (flat) or per expert. */
        rows_per_token =
            o->layout == NCCLX_EP_LAYOUT_FLAT && t->ranks < o->topk ? t->ranks : o->topk;
    }
    t->out_row_bytes =
        o->recipe == NCCLX_EP_RECIPE_FP8 ? o->hidden : o->hidden * bench_dtype_size(o->dtype);
    for (uint32_t i = 0; i < t->nlocal; i++) {
        if (bench_rank_buffers(t, &t->r[i]) != 0) {
            goto err_destroy;
        }
    }
    if (cudaStreamCreateWithFlags(&t->timer, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "ncclx-bench: cudaStreamCreateWithFlags failed for the timer stream\n");
        goto err_destroy;
    }
    /* Roofline copies: the largest payload of every local rank (combine, all entries valid). */
    t->copy_bytes =
        (size_t)t->nlocal * o->tokens * rows_per_token * o->hidden * bench_dtype_size(o->dtype);
    if (bench_alloc(&t->copy_src, t->copy_bytes, 0) != 0 || bench_copy_target(t) != 0) {
        goto err_destroy;
    }
    /* The zero fills ran on the legacy stream, which the ranks' streams do not wait for. */
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fprintf(stderr, "ncclx-bench: cudaDeviceSynchronize failed after allocating buffers\n");
        goto err_destroy;
    }
    return 0;
err_destroy:
    (void)bench_team_destroy(t);
    return -1;
}

int bench_team_upload(bench_team_t *t, const bench_inputs_t *in)
{
    const size_t T = t->max_tokens, H = t->o.hidden, K = t->o.topk;
    void *rows = malloc(T * H * bench_dtype_size(t->o.dtype));
    int rc = 0;
    if (rows == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the tokens\n");
        return -1;
    }
    for (uint32_t i = 0; i < t->nlocal && rc == 0; i++) {
        bench_rank_t *r = &t->r[i];
        cudaError_t err;
        for (size_t tok = 0; tok < T; tok++) {
            for (size_t c = 0; c < H; c++) {
                bench_store(rows, tok * H + c, t->o.dtype,
                            bench_token_value(in, r->rank, (uint32_t)tok, (uint32_t)c));
            }
        }
        err = cudaMemcpy(r->tokens, rows, T * H * bench_dtype_size(t->o.dtype),
                         cudaMemcpyHostToDevice);
        if (err == cudaSuccess) {
            err = cudaMemcpy(r->topk_idx, in->topk_idx + (size_t)r->rank * T * K,
                             T * K * sizeof(int64_t), cudaMemcpyHostToDevice);
        }
        if (err == cudaSuccess) {
            err = cudaMemcpy(r->topk_weights, in->weights + (size_t)r->rank * T * K,
                             T * K * sizeof(float), cudaMemcpyHostToDevice);
        }
        rc = err == cudaSuccess ? 0 : bench_fail_cuda(err, "cudaMemcpy (inputs)", (int)r->rank);
    }
    free(rows);
    return rc;
}

static void bench_drop_graphs(bench_rank_t *r)
{
    for (int op = 0; op < BENCH_NUM_OPS; op++) {
        if (r->graphs[op] != NULL) {
            (void)cudaGraphExecDestroy(r->graphs[op]);
            r->graphs[op] = NULL;
        }
    }
}

static void bench_drop_team_graphs(bench_team_t *t)
{
    for (int op = 0; op < BENCH_NUM_OPS; op++) {
        if (t->team_graphs[op] != NULL) {
            (void)cudaGraphExecDestroy(t->team_graphs[op]);
            t->team_graphs[op] = NULL;
        }
    }
}

int bench_team_route(bench_team_t *t, uint32_t n)
{
    t->tokens = n;
    bench_drop_team_graphs(t); /* they hold the previous token count */
    for (uint32_t i = 0; i < t->nlocal; i++) {
        bench_rank_t *r = &t->r[i];
        ncclxTensor_t idx = bench_tensor(r->topk_idx, NCCLX_INT64, 2, n, t->o.topk, 0);
        bench_drop_graphs(r); /* they hold the previous token count */
        if (r->handle == NULL) {
            ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
            cfg.layout = t->o.layout;
            cfg.topk = t->o.topk;
            BENCH_NCCLX(
                ncclxEpHandleCreate(r->group, &cfg, &idx, (ncclxStream_t)r->stream, &r->handle),
                "ncclxEpHandleCreate", r->rank);
        } else {
            BENCH_NCCLX(ncclxEpHandleUpdate(r->handle, &idx, (ncclxStream_t)r->stream),
                        "ncclxEpHandleUpdate", r->rank);
        }
    }
    for (uint32_t i = 0; i < t->nlocal; i++) {
        BENCH_CUDA(cudaStreamSynchronize(t->r[i].stream), "routing", t->r[i].rank);
    }
    return bench_team_async_errors(t);
}

static int bench_dispatch(const bench_team_t *t, bench_rank_t *r)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const bench_options_t *o = &t->o;
    const int fp8 = o->recipe == NCCLX_EP_RECIPE_FP8;
    const int64_t n = t->tokens, T = t->max_tokens, H = o->hidden, K = o->topk;
    a.recipe = o->recipe;
    a.tokens = bench_tensor(r->tokens, o->dtype, 2, n, H, 0);
    a.out_tokens =
        bench_tensor(r->out_tokens, fp8 ? NCCLX_FP8_E4M3 : o->dtype, 3, t->slabs, t->slab_rows, H);
    if (fp8) {
        a.out_scales =
            bench_tensor(r->out_scales, NCCLX_FLOAT32, 3, t->slabs, t->slab_rows, H / 128);
    }
    a.out_counts = bench_tensor(r->out_counts, NCCLX_INT32, 1, t->slabs, 0, 0);
    if (o->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
        a.topk_weights = bench_tensor(r->topk_weights, NCCLX_FLOAT32, 2, n, K, 0);
        a.out_topk_idx = bench_tensor(r->out_topk_idx, NCCLX_INT32, 3, t->ranks, T, K);
        a.out_topk_weights = bench_tensor(r->out_topk_weights, NCCLX_FLOAT32, 3, t->ranks, T, K);
    }
    BENCH_NCCLX(ncclxEpDispatch(r->handle, &a, (ncclxStream_t)r->stream), "ncclxEpDispatch",
                r->rank);
    return 0;
}

static int bench_combine(const bench_team_t *t, bench_rank_t *r)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    const bench_options_t *o = &t->o;
    const int64_t n = t->tokens, H = o->hidden, K = o->topk;
    a.expert_out = bench_tensor(r->expert_out, o->dtype, 3, t->slabs, t->slab_rows, H);
    if (o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        a.topk_weights = bench_tensor(r->topk_weights, NCCLX_FLOAT32, 2, n, K, 0);
    }
    a.out = bench_tensor(r->out, o->dtype, 2, n, H, 0);
    BENCH_NCCLX(ncclxEpCombine(r->handle, &a, (ncclxStream_t)r->stream), "ncclxEpCombine", r->rank);
    return 0;
}

/* A flat [S, K] or expert-major [S] FLOAT32 tensor of received weights. */
static ncclxTensor_t bench_ht_recv_weights(const bench_team_t *t, void *data)
{
    if (t->o.layout == NCCLX_EP_LAYOUT_FLAT) {
        return bench_tensor(data, NCCLX_FLOAT32, 2, t->recv_rows, t->o.topk, 0);
    }
    return bench_tensor(data, NCCLX_FLOAT32, 1, t->recv_rows, 0, 0);
}

/* Forward: tokens and weights in; rows, flat ids and weights (expert-major: one weight per row)
 * out.  Backward: gradient rows only. */
static int bench_ht_dispatch(const bench_team_t *t, bench_rank_t *r)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const bench_options_t *o = &t->o;
    const int64_t n = t->tokens, S = t->recv_rows, H = o->hidden, K = o->topk;
    a.recipe = NCCLX_EP_RECIPE_NONE;
    a.pass = o->pass;
    a.tokens = bench_tensor(r->tokens, o->dtype, 2, n, H, 0);
    a.out_tokens = bench_tensor(r->out_tokens, o->dtype, 2, S, H, 0);
    if (o->pass == NCCLX_EP_PASS_FORWARD) {
        a.topk_weights = bench_tensor(r->topk_weights, NCCLX_FLOAT32, 2, n, K, 0);
        a.out_topk_weights = bench_ht_recv_weights(t, r->out_topk_weights);
        if (o->layout == NCCLX_EP_LAYOUT_FLAT) {
            a.out_topk_idx = bench_tensor(r->out_topk_idx, NCCLX_INT32, 2, S, K, 0);
        }
    }
    BENCH_NCCLX(ncclxEpDispatch(r->handle, &a, (ncclxStream_t)r->stream), "ncclxEpDispatch",
                r->rank);
    return 0;
}

/* Forward: the (already weighted) rows summed back.  Backward: also the received weights'
 * gradients in, the tokens' top-k weight gradients out. */
static int bench_ht_combine(const bench_team_t *t, bench_rank_t *r)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    const bench_options_t *o = &t->o;
    const int64_t n = t->tokens, H = o->hidden, K = o->topk;
    a.pass = o->pass;
    a.recipe = o->recipe == NCCLX_EP_RECIPE_MXFP8 ? NCCLX_EP_RECIPE_MXFP8 : NCCLX_EP_RECIPE_NONE;
    a.expert_out = bench_tensor(r->expert_out, o->dtype, 2, t->recv_rows, H, 0);
    a.out = bench_tensor(r->out, o->dtype, 2, n, H, 0);
    if (o->pass == NCCLX_EP_PASS_BACKWARD) {
        a.topk_weights = bench_ht_recv_weights(t, r->out_topk_weights);
        a.out_topk_weights = bench_tensor(r->grad_weights, NCCLX_FLOAT32, 2, n, K, 0);
    }
    BENCH_NCCLX(ncclxEpCombine(r->handle, &a, (ncclxStream_t)r->stream), "ncclxEpCombine", r->rank);
    return 0;
}

/* The routing of the current token count again (a training step's handle update). */
static int bench_update(const bench_team_t *t, bench_rank_t *r)
{
    ncclxTensor_t idx = bench_tensor(r->topk_idx, NCCLX_INT64, 2, t->tokens, t->o.topk, 0);
    BENCH_NCCLX(ncclxEpHandleUpdate(r->handle, &idx, (ncclxStream_t)r->stream),
                "ncclxEpHandleUpdate", r->rank);
    return 0;
}

static int bench_data_op(const bench_team_t *t, bench_rank_t *r, bench_op_t op)
{
    if (t->o.algo == NCCLX_EP_ALGO_HT) {
        return op == BENCH_DISPATCH ? bench_ht_dispatch(t, r) : bench_ht_combine(t, r);
    }
    return op == BENCH_DISPATCH ? bench_dispatch(t, r) : bench_combine(t, r);
}

static int bench_eager(const bench_team_t *t, bench_rank_t *r, bench_op_t op)
{
    switch (op) {
    case BENCH_ROUTE:
        return bench_update(t, r);
    case BENCH_LAYER:
        if (bench_update(t, r) != 0 || bench_data_op(t, r, BENCH_DISPATCH) != 0) {
            return -1;
        }
        return bench_data_op(t, r, BENCH_COMBINE);
    default:
        return bench_data_op(t, r, op);
    }
}

int bench_team_enqueue(bench_team_t *t, uint32_t i, bench_op_t op)
{
    bench_rank_t *r = &t->r[i];
    if (t->team_graphs[op] != NULL) {
        /* The team's one graph, once every rank's earlier work (its outputs' poisoning) is done:
         * enqueued with the last rank, and waited for, as the untimed checks need no more. */
        if (i + 1 < t->nlocal) {
            return 0;
        }
        for (uint32_t j = 0; j < t->nlocal; j++) {
            BENCH_CUDA(cudaStreamSynchronize(t->r[j].stream), "cudaStreamSynchronize",
                       t->r[j].rank);
        }
        BENCH_CUDA(cudaGraphLaunch(t->team_graphs[op], t->r[0].stream), "cudaGraphLaunch",
                   t->r[0].rank);
        BENCH_CUDA(cudaStreamSynchronize(t->r[0].stream), "the team's graph", t->r[0].rank);
        return 0;
    }
    if (r->graphs[op] != NULL) {
        BENCH_CUDA(cudaGraphLaunch(r->graphs[op], r->stream), "cudaGraphLaunch", r->rank);
        return 0;
    }
    return bench_eager(t, r, op);
}

static int bench_capture_one(bench_team_t *t, bench_rank_t *r, bench_op_t op)
{
    cudaGraph_t graph = NULL;
    cudaError_t err;
    int rc;
    BENCH_CUDA(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture", r->rank);
    rc = bench_eager(t, r, op);
    err = cudaStreamEndCapture(r->stream, &graph); /* always: ends the capture */
    if (rc == 0 && err == cudaSuccess) {
        err = cudaGraphInstantiate(&r->graphs[op], graph, 0);
    }
    if (graph != NULL) {
        (void)cudaGraphDestroy(graph);
    }
    if (rc != 0) {
        return rc;
    }
    BENCH_CUDA(err,
               op == BENCH_DISPATCH  ? "capturing ncclxEpDispatch"
               : op == BENCH_COMBINE ? "capturing ncclxEpCombine"
               : op == BENCH_ROUTE   ? "capturing ncclxEpHandleUpdate"
                                     : "capturing a layer (update, dispatch, combine)",
               r->rank);
    return 0;
}

/* --team-graph: op of every local rank in one graph.  Rank 0's stream begins the capture, the
 * other ranks' streams join it through a fork event and rejoin rank 0's through their own
 * events, so that the graph's branches (one per rank, each the rank's calls on its stream as
 * when captured alone) are launched together by one cudaGraphLaunch. */
static int bench_capture_team_op(bench_team_t *t, bench_op_t op, cudaEvent_t *ev)
{
    cudaStream_t root = t->r[0].stream;
    cudaGraph_t graph = NULL;
    cudaError_t err;
    int rc = 0;
    BENCH_CUDA(cudaStreamBeginCapture(root, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture", t->r[0].rank);
    err = cudaEventRecord(ev[0], root);
    for (uint32_t i = 1; i < t->nlocal && err == cudaSuccess; i++) {
        err = cudaStreamWaitEvent(t->r[i].stream, ev[0], 0);
    }
    for (uint32_t i = 0; i < t->nlocal && err == cudaSuccess && rc == 0; i++) {
        rc = bench_eager(t, &t->r[i], op);
        if (rc == 0 && i > 0) {
            err = cudaEventRecord(ev[i], t->r[i].stream);
            err = err == cudaSuccess ? cudaStreamWaitEvent(root, ev[i], 0) : err;
        }
    }
    /* Always: ends the capture (a branch not joined back makes it fail, which is reported). */
    cudaError_t end = cudaStreamEndCapture(root, &graph);
    err = err == cudaSuccess ? end : err;
    if (rc == 0 && err == cudaSuccess) {
        err = cudaGraphInstantiate(&t->team_graphs[op], graph, 0);
    }
    if (graph != NULL) {
        (void)cudaGraphDestroy(graph);
    }
    if (rc != 0) {
        return rc;
    }
    BENCH_CUDA(err, "capturing the team's operation in one graph (--team-graph)", t->r[0].rank);
    return 0;
}

static int bench_capture_team(bench_team_t *t)
{
    cudaEvent_t *ev = calloc(t->nlocal, sizeof(*ev));
    uint32_t made = 0;
    int rc = ev == NULL ? -1 : 0;
    if (ev == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for %u capture events\n", t->nlocal);
    }
    for (; rc == 0 && made < t->nlocal; made++) {
        cudaError_t err = cudaEventCreateWithFlags(&ev[made], cudaEventDisableTiming);
        if (err != cudaSuccess) {
            rc = bench_fail_cuda(err, "cudaEventCreateWithFlags", (int)t->r[made].rank);
            break;
        }
    }
    /* Dispatch before combine: combine needs a dispatched handle, also when captured. */
    for (int op = 0; rc == 0 && op < bench_num_ops(t); op++) {
        rc = bench_capture_team_op(t, (bench_op_t)op, ev);
    }
    for (uint32_t i = 0; i < made; i++) {
        (void)cudaEventDestroy(ev[i]);
    }
    free(ev);
    return rc;
}

int bench_team_capture(bench_team_t *t)
{
    if (t->o.graph == 2) {
        return bench_capture_team(t);
    }
    /* Dispatch before combine: combine needs a dispatched handle, also when captured. */
    for (int op = 0; op < bench_num_ops(t); op++) {
        for (uint32_t i = 0; i < t->nlocal; i++) {
            if (bench_capture_one(t, &t->r[i], (bench_op_t)op) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

int bench_team_async_errors(bench_team_t *t)
{
    int rc = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        uint32_t error = 0;
        BENCH_NCCLX(ncclxEpGetAsyncError(t->r[i].group, &error), "ncclxEpGetAsyncError",
                    t->r[i].rank);
        if (error != 0) {
            fprintf(stderr, "ncclx-bench: rank %u: the GPU reported error 0x%x%s%s%s\n",
                    t->r[i].rank, error,
                    (error & NCCLX_EP_ERROR_TIMEOUT) ? " (a wait timed out)" : "",
                    (error & NCCLX_EP_ERROR_BAD_EXPERT) ? " (an expert id out of range)" : "",
                    (error & NCCLX_EP_ERROR_OVERFLOW)
                        ? " (more receive rows than max_recv_tokens_per_rank: raise --recv)"
                        : "");
            rc = -1;
        }
    }
    return rc;
}

int bench_team_layout(bench_team_t *t, uint32_t i)
{
    bench_rank_t *r = &t->r[i];
    const int64_t L = t->local_experts;
    int64_t *counts = r->out_counts;
    ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
    info.expert_counts = bench_tensor(counts, NCCLX_INT64, 1, L, 0, 0);
    if (t->o.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        info.expert_offsets = bench_tensor(counts + L, NCCLX_INT64, 1, L + 1, 0, 0);
    }
    info.recv_total = bench_tensor(counts + 2 * L + 1, NCCLX_INT64, 1, 1, 0, 0);
    BENCH_NCCLX(ncclxEpHandleGetLayout(r->handle, &info, (ncclxStream_t)r->stream),
                "ncclxEpHandleGetLayout", r->rank);
    return 0;
}

int bench_team_symmetric_bytes(const bench_team_t *t, uint64_t *bytes)
{
    ncclxEpGroupPlan_t group;
    const ncclxEpGroupPlan_t *groups[1] = {&group};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    bench_group_plan(&t->o, &group);
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    team.num_ranks = team.lsa_size = t->ranks; /* a loopback team: one node, or its shape */
    if (!t->o.comm && t->o.nodes != 0) {
        team.num_nodes = t->o.nodes;
        team.lsa_size = t->ranks / t->o.nodes;
    }
    if (t->o.comm) {
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        BENCH_NCCLX(ncclxContextGetInfo(t->r[0].ctx, &info), "ncclxContextGetInfo", -1);
        team.num_nodes = (uint32_t)info.num_nodes;
        team.lsa_size = (uint32_t)info.lsa_size;
    }
    BENCH_NCCLX(ncclxPlanComputeSizes(&plan, &team, &sizes), "ncclxPlanComputeSizes", -1);
    *bytes = sizes.total[NCCLX_MEM_SYMMETRIC];
    return 0;
}

static int bench_rank_destroy(bench_rank_t *r)
{
    void *buffers[] = {r->topk_idx,   r->topk_weights, r->tokens,       r->out_tokens,
                       r->out_scales, r->out_counts,   r->out_topk_idx, r->out_topk_weights,
                       r->expert_out, r->out,          r->grad_weights};
    int rc = 0;
    ncclxResult_t res;
    if (r->borrowed) { /* the group's own buffers: not ours to free */
        buffers[3] = NULL;
        buffers[4] = NULL; /* LL: the zero-copy scale rows (HT: never allocated) */
    }
    if (r->borrowed_expert_out) {
        buffers[8] = NULL;
    }
    bench_drop_graphs(r);
    if (r->handle != NULL && (res = ncclxEpHandleDestroy(r->handle)) != ncclxSuccess) {
        rc = bench_fail_ncclx(res, "ncclxEpHandleDestroy", (int)r->rank);
    }
    for (size_t b = 0; b < sizeof(buffers) / sizeof(buffers[0]); b++) {
        (void)cudaFree(buffers[b]);
    }
    if (r->stream != NULL) {
        (void)cudaStreamDestroy(r->stream);
    }
    if (r->ctx != NULL) {
        res = ncclxFinalize(r->ctx);
        if (res != ncclxSuccess) {
            rc = bench_fail_ncclx(res, "ncclxFinalize", (int)r->rank);
        }
    }
    memset(r, 0, sizeof(*r));
    return rc;
}

int bench_team_destroy(bench_team_t *t)
{
    int rc = 0;
    if (t->r != NULL) {
        (void)cudaDeviceSynchronize();
        bench_drop_team_graphs(t);
        for (uint32_t i = 0; i < (t->o.comm ? 1 : t->o.loopback); i++) {
            rc |= bench_rank_destroy(&t->r[i]);
        }
    }
    (void)cudaFree(t->copy_src);
    (void)cudaFree(t->copy_dst);
    if (t->timer != NULL) {
        (void)cudaStreamDestroy(t->timer);
    }
    free(t->r);
    memset(t, 0, sizeof(*t));
    return rc;
}
