/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * One high-throughput (HT) MoE layer with libncclx on a loopback team (N ranks emulated on one
 * GPU): plan an HT group, route random tokens on the GPU, read the receive layout, dispatch to
 * the FLAT layout (one row per token and destination rank, with the token's experts on that
 * rank and their weights), run a stand-in expert that pre-reduces each row over its experts,
 * combine, check.  Copy it as a starting point for training or prefill.
 *
 *     examples/moe_layer_ht                # a loopback team of 2 ranks on one GPU
 *     examples/moe_layer_ht --loopback 4
 *
 * The stand-in expert e multiplies a row by (e + 1) / NUM_EXPERTS; the caller applies the
 * top-k weights (HT combine only sums), so combine returns x * sum_k w_k (e_k + 1) / E.
 * Tokens are FP32 so that the host side stays plain C.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

#define NUM_EXPERTS 32
#define HIDDEN      1024
#define TOPK        4
#define TOKENS      512 /* per rank */
#define MAX_RANKS   16

#define CHECK_NCCLX(call)                                                     \
    do {                                                                      \
        ncclxResult_t res_ = (call);                                          \
        if (res_ != ncclxSuccess) {                                           \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, \
                    ncclxGetErrorString(res_), ncclxGetLastError());          \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define CHECK_CUDA(call)                                                  \
    do {                                                                  \
        cudaError_t err_ = (call);                                        \
        if (err_ != cudaSuccess) {                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(err_));                            \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, bytes));
    return p;
}

static ncclxTensor_t tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
                            int64_t d1)
{
    ncclxTensor_t t = NCCLX_TENSOR_INIT;
    t.data = data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.shape[0] = d0;
    t.shape[1] = d1;
    return t;
}

/* One rank's routing, inputs and buffers. */
typedef struct {
    ncclxContext_t ctx;
    ncclxEpGroup_t group;
    ncclxEpHandle_t handle;
    cudaStream_t stream;
    int64_t idx[TOKENS * TOPK];
    float weights[TOKENS * TOPK];
    float *tokens; /* host [TOKENS, HIDDEN] */
    void *d_idx, *d_weights, *d_tokens, *d_recv, *d_recv_idx, *d_recv_w, *d_expert_out, *d_out;
    int64_t *d_total; /* the receive total (ncclxEpHandleGetLayout) */
} rank_t;

int main(int argc, char **argv)
{
    int ranks = 2;
    if (argc == 3 && strcmp(argv[1], "--loopback") == 0) {
        ranks = atoi(argv[2]);
    }
    if (ranks < 1 || ranks > MAX_RANKS || NUM_EXPERTS % ranks != 0) {
        fprintf(stderr, "usage: %s [--loopback N], N in 1..%d dividing %d\n", argv[0], MAX_RANKS,
                NUM_EXPERTS);
        return 2;
    }
    const int64_t S = (int64_t)ranks * TOKENS; /* FLAT never needs more rows than this */

    /* The plan: one HT group, FLAT layout, FP32 tokens, S receive rows per rank. */
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_HT;
    g.num_experts = NUM_EXPERTS;
    g.max_topk = TOPK;
    g.hidden = HIDDEN;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    g.layouts = NCCLX_EP_LAYOUT_FLAT;
    g.max_dispatch_tokens_per_rank = TOKENS;
    g.max_recv_tokens_per_rank = (uint32_t)S;
    g.num_handles = 1;
    const ncclxEpGroupPlan_t *groups[1] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;

    static rank_t r[MAX_RANKS];
    ncclxContext_t ctx[MAX_RANKS];
    CHECK_NCCLX(ncclxLoopbackInit(&plan, (uint32_t)ranks, 0, ctx));
    srand(1);
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        x->ctx = ctx[i];
        CHECK_NCCLX(ncclxEpGroupGet(x->ctx, 0, &x->group));
        CHECK_CUDA(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking));
        x->tokens = malloc(sizeof(float) * TOKENS * HIDDEN);
        if (x->tokens == NULL) {
            return 1;
        }
        for (int t = 0; t < TOKENS; t++) {
            for (int k = 0; k < TOPK; k++) { /* TOPK distinct experts */
                int64_t e;
                int fresh;
                do {
                    e = rand() % NUM_EXPERTS;
                    fresh = 1;
                    for (int j = 0; j < k; j++) {
                        fresh &= x->idx[t * TOPK + j] != e;
                    }
                } while (!fresh);
                x->idx[t * TOPK + k] = e;
                x->weights[t * TOPK + k] = (float)(rand() % 1000 + 1) / 1000.0f;
            }
            for (int h = 0; h < HIDDEN; h++) {
                x->tokens[(size_t)t * HIDDEN + h] = (float)(rand() % 256 - 128) / 64.0f;
            }
        }
        x->d_idx = dalloc(sizeof(x->idx));
        x->d_weights = dalloc(sizeof(x->weights));
        x->d_tokens = dalloc(sizeof(float) * TOKENS * HIDDEN);
        x->d_recv = dalloc(sizeof(float) * (size_t)S * HIDDEN);
        x->d_recv_idx = dalloc(sizeof(int32_t) * (size_t)S * TOPK);
        x->d_recv_w = dalloc(sizeof(float) * (size_t)S * TOPK);
        x->d_expert_out = dalloc(sizeof(float) * (size_t)S * HIDDEN);
        x->d_out = dalloc(sizeof(float) * TOKENS * HIDDEN);
        CHECK_CUDA(cudaMemcpy(x->d_idx, x->idx, sizeof(x->idx), cudaMemcpyHostToDevice));
        CHECK_CUDA(
            cudaMemcpy(x->d_weights, x->weights, sizeof(x->weights), cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(x->d_tokens, x->tokens, sizeof(float) * TOKENS * HIDDEN,
                              cudaMemcpyHostToDevice));
    }

    /* Routing (collective: every rank enqueues before any can finish) and the layout. */
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    cfg.layout = NCCLX_EP_LAYOUT_FLAT;
    cfg.topk = TOPK;
    cfg.global_expert_ids = 1;
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        const ncclxTensor_t idx = tensor(x->d_idx, NCCLX_INT64, 2, TOKENS, TOPK);
        CHECK_NCCLX(ncclxEpHandleCreate(x->group, &cfg, &idx, x->stream, &x->handle));
        x->d_total = dalloc(sizeof(int64_t));
        ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
        info.recv_total = tensor(x->d_total, NCCLX_INT64, 1, 1, 0);
        CHECK_NCCLX(ncclxEpHandleGetLayout(x->handle, &info, x->stream));
    }

    /* Dispatch: every rank's FLAT rows, with the token's experts here and their weights. */
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
        a.tokens = tensor(x->d_tokens, NCCLX_FLOAT32, 2, TOKENS, HIDDEN);
        a.topk_weights = tensor(x->d_weights, NCCLX_FLOAT32, 2, TOKENS, TOPK);
        a.out_tokens = tensor(x->d_recv, NCCLX_FLOAT32, 2, S, HIDDEN);
        a.out_topk_idx = tensor(x->d_recv_idx, NCCLX_INT32, 2, S, TOPK);
        a.out_topk_weights = tensor(x->d_recv_w, NCCLX_FLOAT32, 2, S, TOPK);
        CHECK_NCCLX(ncclxEpDispatch(x->handle, &a, x->stream));
    }

    /* The stand-in experts (on the host): each received row pre-reduced over its experts. */
    float *rows = malloc(sizeof(float) * (size_t)S * HIDDEN);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)S * TOPK);
    float *w = malloc(sizeof(float) * (size_t)S * TOPK);
    if (rows == NULL || ids == NULL || w == NULL) {
        return 1;
    }
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        int64_t total = 0;
        CHECK_CUDA(cudaStreamSynchronize(x->stream));
        CHECK_CUDA(cudaMemcpy(&total, x->d_total, sizeof(total), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(rows, x->d_recv, sizeof(float) * (size_t)total * HIDDEN,
                              cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(ids, x->d_recv_idx, sizeof(int32_t) * (size_t)total * TOPK,
                              cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(w, x->d_recv_w, sizeof(float) * (size_t)total * TOPK,
                              cudaMemcpyDeviceToHost));
        for (int64_t row = 0; row < total; row++) {
            float scale = 0.0f;
            for (int k = 0; k < TOPK && ids[row * TOPK + k] >= 0; k++) {
                scale += w[row * TOPK + k] * (float)(ids[row * TOPK + k] + 1) / NUM_EXPERTS;
            }
            for (int h = 0; h < HIDDEN; h++) {
                rows[row * HIDDEN + h] *= scale;
            }
        }
        CHECK_CUDA(cudaMemcpy(x->d_expert_out, rows, sizeof(float) * (size_t)total * HIDDEN,
                              cudaMemcpyHostToDevice));
        printf("rank %d of %d: received %lld rows\n", i, ranks, (long long)total);
    }

    /* Combine: each token's rows from its ranks, summed in a fixed order. */
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
        a.expert_out = tensor(x->d_expert_out, NCCLX_FLOAT32, 2, S, HIDDEN);
        a.out = tensor(x->d_out, NCCLX_FLOAT32, 2, TOKENS, HIDDEN);
        CHECK_NCCLX(ncclxEpCombine(x->handle, &a, x->stream));
    }

    /* Check: out[t] = x[t] * sum_k w_k (e_k + 1) / E. */
    int failed = 0;
    float *out = malloc(sizeof(float) * TOKENS * HIDDEN);
    if (out == NULL) {
        return 1;
    }
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        int wrong = 0;
        CHECK_CUDA(cudaStreamSynchronize(x->stream));
        CHECK_CUDA(
            cudaMemcpy(out, x->d_out, sizeof(float) * TOKENS * HIDDEN, cudaMemcpyDeviceToHost));
        for (int t = 0; t < TOKENS; t++) {
            double scale = 0.0;
            for (int k = 0; k < TOPK; k++) {
                scale +=
                    x->weights[t * TOPK + k] * (double)(x->idx[t * TOPK + k] + 1) / NUM_EXPERTS;
            }
            for (int h = 0; h < HIDDEN; h++) {
                const double want = x->tokens[(size_t)t * HIDDEN + h] * scale;
                wrong += fabs(out[(size_t)t * HIDDEN + h] - want) > 1e-4 * (1.0 + fabs(want));
            }
        }
        uint32_t err = 0;
        CHECK_NCCLX(ncclxEpGetAsyncError(x->group, &err));
        printf("rank %d of %d: %s\n", i, ranks, wrong == 0 && err == 0 ? "PASS" : "FAIL");
        failed |= wrong != 0 || err != 0;
    }
    for (int i = 0; i < ranks; i++) {
        rank_t *x = &r[i];
        void *bufs[] = {x->d_idx,    x->d_weights,    x->d_tokens, x->d_recv, x->d_recv_idx,
                        x->d_recv_w, x->d_expert_out, x->d_out,    x->d_total};
        CHECK_NCCLX(ncclxEpHandleDestroy(x->handle));
        CHECK_NCCLX(ncclxFinalize(x->ctx));
        CHECK_CUDA(cudaStreamDestroy(x->stream));
        for (size_t b = 0; b < sizeof(bufs) / sizeof(bufs[0]); b++) {
            CHECK_CUDA(cudaFree(bufs[b]));
        }
        free(x->tokens);
    }
    free(rows);
    free(ids);
    free(w);
    free(out);
    return failed;
}
