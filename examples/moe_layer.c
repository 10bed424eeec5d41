/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * One MoE layer with libncclx, start to finish: plan, init, route random tokens, dispatch them
 * to the ranks that own their experts (expert-major layout), run a stand-in expert, combine the
 * expert outputs with the top-k weights, check the result.  Copy it as a starting point.
 *
 *     examples/moe_layer                   # no launcher: a loopback team of 2 ranks on one GPU
 *     examples/moe_layer --loopback 4      # 4 ranks emulated on one GPU
 *     mpirun -n 4 examples/moe_layer       # one rank per process (srun --mpi=pmix, prterun)
 *     examples/moe_layer --comm            # a real communicator; alone: rank 0 of 1
 *
 * The stand-in expert e multiplies its tokens by (e + 1) / NUM_EXPERTS.  It runs on the host
 * (copy the rows out, scale, copy back) so that this file stays plain C; a real layer runs its
 * expert GEMMs on the GPU, on the same stream, between dispatch and combine.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

#define NUM_EXPERTS     48 /* divisible by 1, 2, 3, 4, 6, 8, 12, 16 ranks */
#define HIDDEN          2048
#define TOPK            4
#define TOKENS          32 /* per rank */
#define MAX_LOCAL_RANKS 64

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

/* One rank: its context, stream, handle, and device tensors. */
typedef struct {
    int rank, ranks;
    ncclxContext_t ctx;
    ncclxEpGroup_t group;
    ncclxEpHandle_t handle;
    cudaStream_t stream;
    uint16_t *tokens;     /* [TOKENS, HIDDEN] bf16 */
    int64_t *topk_idx;    /* [TOKENS, TOPK] */
    float *topk_weights;  /* [TOKENS, TOPK] */
    uint16_t *recv;       /* [local experts, ranks * TOKENS, HIDDEN] bf16: dispatch output */
    int32_t *recv_counts; /* [local experts] */
    uint16_t *expert_out; /* same shape as recv: the experts' outputs */
    uint16_t *out;        /* [TOKENS, HIDDEN] bf16: combine output */
    uint16_t host_tokens[TOKENS * HIDDEN];
    int64_t host_idx[TOKENS * TOPK];
    float host_weights[TOKENS * TOPK];
} moe_rank_t;

/* BF16 <-> float on the host (round to nearest even). */
static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float from_bf16(uint16_t v)
{
    uint32_t x = (uint32_t)v << 16;
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static float expert_scale(int64_t expert)
{
    return (float)(expert + 1) / NUM_EXPERTS;
}

static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

static ncclxTensor_t tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
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

/* Random tokens and top-k routing (distinct experts, weights in (0, 1]). */
static void make_inputs(moe_rank_t *r)
{
    uint64_t state = 12345u + (uint64_t)r->rank;
    for (int i = 0; i < TOKENS * HIDDEN; i++) {
        r->host_tokens[i] = to_bf16((float)(next_random(&state) % 2001) / 1000.0f - 1.0f);
    }
    for (int t = 0; t < TOKENS; t++) {
        for (int k = 0; k < TOPK; k++) {
            int64_t e;
            int taken;
            do {
                e = (int64_t)(next_random(&state) % NUM_EXPERTS);
                taken = 0;
                for (int j = 0; j < k; j++) {
                    taken |= r->host_idx[t * TOPK + j] == e;
                }
            } while (taken);
            r->host_idx[t * TOPK + k] = e;
            r->host_weights[t * TOPK + k] = (float)(1 + next_random(&state) % 1000) / 1000.0f;
        }
    }
}

/* Buffers sized for the plan's bounds, allocated once: dispatch and combine never allocate. */
static void setup_rank(moe_rank_t *r)
{
    const size_t local_experts = NUM_EXPERTS / r->ranks;
    const size_t recv_rows = local_experts * r->ranks * TOKENS;
    CHECK_NCCLX(ncclxEpGroupGet(r->ctx, 0, &r->group));
    CHECK_CUDA(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc((void **)&r->tokens, sizeof(uint16_t) * TOKENS * HIDDEN));
    CHECK_CUDA(cudaMalloc((void **)&r->topk_idx, sizeof(int64_t) * TOKENS * TOPK));
    CHECK_CUDA(cudaMalloc((void **)&r->topk_weights, sizeof(float) * TOKENS * TOPK));
    CHECK_CUDA(cudaMalloc((void **)&r->recv, sizeof(uint16_t) * recv_rows * HIDDEN));
    CHECK_CUDA(cudaMalloc((void **)&r->recv_counts, sizeof(int32_t) * local_experts));
    CHECK_CUDA(cudaMalloc((void **)&r->expert_out, sizeof(uint16_t) * recv_rows * HIDDEN));
    CHECK_CUDA(cudaMalloc((void **)&r->out, sizeof(uint16_t) * TOKENS * HIDDEN));
    make_inputs(r);
    CHECK_CUDA(
        cudaMemcpy(r->tokens, r->host_tokens, sizeof(r->host_tokens), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(r->topk_idx, r->host_idx, sizeof(r->host_idx), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(r->topk_weights, r->host_weights, sizeof(r->host_weights),
                          cudaMemcpyHostToDevice));
}

/* Routes the tokens (on the GPU) and sends them to their experts' ranks. */
static void dispatch(moe_rank_t *r)
{
    const int64_t local_experts = NUM_EXPERTS / r->ranks;
    ncclxEpHandleConfig_t config = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclxEpDispatchArgs_t args = NCCLX_EP_DISPATCH_ARGS_INIT;
    ncclxTensor_t idx = tensor(r->topk_idx, NCCLX_INT64, 2, TOKENS, TOPK, 0);
    config.layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    config.topk = TOPK;
    CHECK_NCCLX(ncclxEpHandleCreate(r->group, &config, &idx, (ncclxStream_t)r->stream, &r->handle));
    args.tokens = tensor(r->tokens, NCCLX_BFLOAT16, 2, TOKENS, HIDDEN, 0);
    args.out_tokens =
        tensor(r->recv, NCCLX_BFLOAT16, 3, local_experts, (int64_t)r->ranks * TOKENS, HIDDEN);
    args.out_counts = tensor(r->recv_counts, NCCLX_INT32, 1, local_experts, 0, 0);
    CHECK_NCCLX(ncclxEpDispatch(r->handle, &args, (ncclxStream_t)r->stream));
}

/* The stand-in expert, on the host: expert_out row = recv row * expert_scale(global id). */
static void run_experts(moe_rank_t *r)
{
    const int local_experts = NUM_EXPERTS / r->ranks;
    const size_t slab = (size_t)r->ranks * TOKENS * HIDDEN; /* elements per local expert */
    int32_t counts[NUM_EXPERTS];
    uint16_t *rows = malloc(sizeof(uint16_t) * slab);
    if (rows == NULL) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    CHECK_CUDA(cudaMemcpy(counts, r->recv_counts, sizeof(int32_t) * local_experts,
                          cudaMemcpyDeviceToHost));
    for (int e = 0; e < local_experts; e++) {
        const size_t n = (size_t)counts[e] * HIDDEN;
        const float scale = expert_scale((int64_t)r->rank * local_experts + e);
        CHECK_CUDA(
            cudaMemcpy(rows, r->recv + e * slab, sizeof(uint16_t) * n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) {
            rows[i] = to_bf16(from_bf16(rows[i]) * scale);
        }
        CHECK_CUDA(cudaMemcpy(r->expert_out + e * slab, rows, sizeof(uint16_t) * n,
                              cudaMemcpyHostToDevice));
    }
    free(rows);
}

/* Brings the expert outputs back: out[t] = sum over k of weight[t][k] * expert output. */
static void combine(moe_rank_t *r)
{
    const int64_t local_experts = NUM_EXPERTS / r->ranks;
    ncclxEpCombineArgs_t args = NCCLX_EP_COMBINE_ARGS_INIT;
    args.expert_out =
        tensor(r->expert_out, NCCLX_BFLOAT16, 3, local_experts, (int64_t)r->ranks * TOKENS, HIDDEN);
    args.topk_weights = tensor(r->topk_weights, NCCLX_FLOAT32, 2, TOKENS, TOPK, 0);
    args.out = tensor(r->out, NCCLX_BFLOAT16, 2, TOKENS, HIDDEN, 0);
    CHECK_NCCLX(ncclxEpCombine(r->handle, &args, (ncclxStream_t)r->stream));
}

/* out[t] must be sum_k w_k * scale(e_k) * x_t, within BF16 rounding. */
static int check(moe_rank_t *r)
{
    static uint16_t out[TOKENS * HIDDEN];
    int wrong = 0;
    CHECK_CUDA(cudaMemcpy(out, r->out, sizeof(out), cudaMemcpyDeviceToHost));
    for (int t = 0; t < TOKENS; t++) {
        for (int c = 0; c < HIDDEN; c++) {
            double x = from_bf16(r->host_tokens[t * HIDDEN + c]), want = 0.0, mag = 0.0;
            for (int k = 0; k < TOPK; k++) {
                double term = r->host_weights[t * TOPK + k] *
                              (double)expert_scale(r->host_idx[t * TOPK + k]) * x;
                want += term;
                mag += fabs(term);
            }
            if (fabs(from_bf16(out[t * HIDDEN + c]) - want) > 0x1p-7 * (fabs(want) + mag)) {
                if (wrong++ == 0) {
                    fprintf(stderr, "rank %d: token %d column %d: got %g, expected %g\n", r->rank,
                            t, c, from_bf16(out[t * HIDDEN + c]), want);
                }
            }
        }
    }
    printf("rank %d of %d: %s\n", r->rank, r->ranks, wrong == 0 ? "PASS" : "FAIL");
    return wrong == 0;
}

static void release_rank(moe_rank_t *r)
{
    CHECK_NCCLX(ncclxEpHandleDestroy(r->handle));
    CHECK_CUDA(cudaFree(r->tokens));
    CHECK_CUDA(cudaFree(r->topk_idx));
    CHECK_CUDA(cudaFree(r->topk_weights));
    CHECK_CUDA(cudaFree(r->recv));
    CHECK_CUDA(cudaFree(r->recv_counts));
    CHECK_CUDA(cudaFree(r->expert_out));
    CHECK_CUDA(cudaFree(r->out));
    CHECK_CUDA(cudaStreamDestroy(r->stream));
    CHECK_NCCLX(ncclxFinalize(r->ctx));
}

/* --loopback N, --comm; default: loopback 2 alone, a communicator under a launcher. */
static int parse_args(int argc, char **argv, int *loopback)
{
    *loopback = getenv("PMIX_RANK") != NULL ? 0 : 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--comm") == 0) {
            *loopback = 0;
        } else if (strcmp(argv[i], "--loopback") == 0 && i + 1 < argc) {
            *loopback = atoi(argv[++i]);
            if (*loopback < 1 || *loopback > MAX_LOCAL_RANKS) {
                fprintf(stderr, "--loopback takes 1 to %d ranks\n", MAX_LOCAL_RANKS);
                return 0;
            }
        } else {
            fprintf(stderr, "usage: %s [--loopback N | --comm]\n", argv[0]);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    ncclxEpGroupPlan_t layer = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[] = {&layer};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxContext_t ctxs[MAX_LOCAL_RANKS];
    static moe_rank_t ranks[MAX_LOCAL_RANKS];
    int loopback, nlocal, passed = 0;

    if (!parse_args(argc, argv, &loopback)) {
        return 2;
    }
    /* 1. The plan: one LL group; everything it needs is allocated by init, once. */
    layer.algorithm = NCCLX_EP_ALGO_LL;
    layer.num_experts = NUM_EXPERTS;
    layer.max_topk = TOPK;
    layer.hidden = HIDDEN;
    layer.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    layer.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    layer.recipes = NCCLX_EP_RECIPE_NONE;
    layer.max_dispatch_tokens_per_rank = TOKENS;
    layer.num_handles = 1;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;

    /* 2. Init: N emulated ranks on GPU 0, or this process's rank of the launcher's job. */
    if (loopback > 0) {
        nlocal = loopback;
        CHECK_NCCLX(ncclxLoopbackInit(&plan, (uint32_t)loopback, 0, ctxs));
    } else {
        nlocal = 1;
        CHECK_NCCLX(ncclxInit(&plan, NULL, &ctxs[0]));
    }
    for (int i = 0; i < nlocal; i++) {
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        CHECK_NCCLX(ncclxContextGetInfo(ctxs[i], &info));
        ranks[i].ctx = ctxs[i];
        ranks[i].rank = loopback > 0 ? i : info.rank;
        ranks[i].ranks = loopback > 0 ? loopback : info.num_ranks;
        if (loopback == 0) {
            CHECK_CUDA(cudaSetDevice(info.cuda_device));
        }
        setup_rank(&ranks[i]);
    }

    /* 3. Dispatch on every rank (a loopback team needs all of them enqueued), then wait. */
    for (int i = 0; i < nlocal; i++) {
        dispatch(&ranks[i]);
    }
    for (int i = 0; i < nlocal; i++) {
        CHECK_CUDA(cudaStreamSynchronize(ranks[i].stream));
    }
    /* 4. The experts, 5. combine, 6. check. */
    for (int i = 0; i < nlocal; i++) {
        run_experts(&ranks[i]);
    }
    for (int i = 0; i < nlocal; i++) {
        combine(&ranks[i]);
    }
    for (int i = 0; i < nlocal; i++) {
        CHECK_CUDA(cudaStreamSynchronize(ranks[i].stream));
    }
    for (int i = 0; i < nlocal; i++) {
        passed += check(&ranks[i]);
    }
    for (int i = 0; i < nlocal; i++) {
        release_rank(&ranks[i]);
    }
    return passed == nlocal ? 0 : 1;
}
