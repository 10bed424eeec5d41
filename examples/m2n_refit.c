/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Trainer -> generator weight refit with M2N resharding, on a loopback team (all ranks
 * emulated on one GPU).  Four trainer ranks (0-3) hold the weights of a small transformer in
 * a [DP2 x TP2] mesh: column-parallel weights (q, k, v, gate, up) sharded on dim 0 over the
 * TP axis, row-parallel ones (o, down) on dim 1, norms replicated.  N generator ranks (4 ..
 * 4 + N - 1) each hold a full copy (a 1-axis mesh that replicates).  Every refit is one M2N
 * group per rank: all weights of the model move in a few kernel launches, with no allocation
 * and no host synchronization inside.  Copy it as a starting point for an RL loop.
 *
 *     examples/m2n_refit                   # 4 trainers + 4 generators, 3 refits, eager
 *     examples/m2n_refit --generators 8 --graph
 *
 * --graph captures each rank's group once in a CUDA graph and replays it at every refit: a
 * replay moves the bytes the tiles hold when it runs.  In a real job each process is one rank
 * (ncclxInit under a launcher) and passes only its own tiles; the calls are the same.
 *
 * Trainer weights of refit s are bytes computed from (tensor, global byte index, s); at the
 * end every byte of every generator tile is compared with the last refit's weights.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

#define TRAINERS       4  /* mesh [DP2 x TP2] on ranks 0-3 */
#define MAX_GENERATORS 28 /* a loopback team stays within 32 ranks (one GPU's stream queues) */
#define MAX_RANKS      (TRAINERS + MAX_GENERATORS)
#define LAYERS         2
#define REFITS         3
#define HIDDEN         256
#define FFN            512
#define KV             64

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

/* How the trainers hold a weight. */
typedef enum { COLUMN, ROW, NORM } kind_t;

typedef struct {
    char name[32];
    kind_t kind;
    uint64_t rows, cols;     /* BF16 elements; a norm is 1-D [rows] (cols 1) */
    void *tile[MAX_RANKS];   /* device: a trainer's shard or a generator's full copy */
    uint8_t *host[TRAINERS]; /* the trainers' next weights, staged on the host */
} weight_t;

static weight_t weights[LAYERS * 9];
static int num_weights;

static void add(int layer, const char *name, kind_t kind, uint64_t rows, uint64_t cols)
{
    weight_t *w = &weights[num_weights++];
    snprintf(w->name, sizeof(w->name), "layers.%d.%s", layer, name);
    w->kind = kind;
    w->rows = rows;
    w->cols = cols;
}

/* A trainer's tile: the TP axis (mesh axis 1) cuts dim 0 (COLUMN) or dim 1 (ROW). */
static void trainer_shape(const weight_t *w, uint64_t *rows, uint64_t *cols)
{
    *rows = w->kind == COLUMN ? w->rows / 2 : w->rows;
    *cols = w->kind == ROW ? w->cols / 2 : w->cols;
}

/* The bytes of weight e at refit s: any function of the global byte index will do. */
static uint8_t weight_byte(int e, uint64_t g, int s)
{
    uint64_t x = g * 0x9e3779b97f4a7c15ull + (uint64_t)e * 0x632be59bd9b4e019ull + (uint64_t)s;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint8_t)(x >> 56);
}

/* The descriptors: trainers [DP2 x TP2] on ranks 0-3, generators replicas on 4 .. 4 + n - 1.
 * Every rank passes the same descriptors; data is its tile, or NULL off the mesh. */
static ncclxM2nTensor_t trainer_side(const weight_t *w, int rank)
{
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    uint64_t rows, cols;
    trainer_shape(w, &rows, &cols);
    t.data = rank < TRAINERS ? w->tile[rank] : NULL;
    t.dtype = NCCLX_BFLOAT16;
    t.ndims = w->kind == NORM ? 1 : 2;
    t.local_shape[0] = rows;
    t.local_shape[1] = w->kind == NORM ? 0 : cols;
    t.mesh.ndims = 2;
    t.mesh.dims[0] = 2; /* DP */
    t.mesh.dims[1] = 2; /* TP */
    t.mesh.start_rank = 0;
    t.placements[0] = NCCLX_M2N_REPLICATE;
    t.placements[1] = w->kind == COLUMN ? NCCLX_M2N_SHARD(0)
                      : w->kind == ROW  ? NCCLX_M2N_SHARD(1)
                                        : NCCLX_M2N_REPLICATE;
    return t;
}

static ncclxM2nTensor_t generator_side(const weight_t *w, int rank, int generators)
{
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    t.data = rank >= TRAINERS ? w->tile[rank] : NULL;
    t.dtype = NCCLX_BFLOAT16;
    t.ndims = w->kind == NORM ? 1 : 2;
    t.local_shape[0] = w->rows;
    t.local_shape[1] = w->kind == NORM ? 0 : w->cols;
    t.mesh.ndims = 1;
    t.mesh.dims[0] = (uint32_t)generators;
    t.mesh.start_rank = TRAINERS;
    t.placements[0] = NCCLX_M2N_REPLICATE;
    return t;
}

/* One refit on one rank: every weight of the model in one group. */
static void refit(ncclxContext_t ctx, int rank, int generators, cudaStream_t stream)
{
    CHECK_NCCLX(ncclxM2nGroupStart(ctx));
    for (int e = 0; e < num_weights; e++) {
        const ncclxM2nTensor_t src = trainer_side(&weights[e], rank);
        const ncclxM2nTensor_t dst = generator_side(&weights[e], rank, generators);
        CHECK_NCCLX(ncclxM2nReshard(ctx, &src, &dst, (ncclxStream_t)stream));
    }
    CHECK_NCCLX(ncclxM2nGroupEnd(ctx));
}

/* The trainers' weights of refit s, uploaded on each trainer's stream (a real trainer would
 * have written them in its optimizer step). */
static void train_step(int s, cudaStream_t *streams)
{
    for (int e = 0; e < num_weights; e++) {
        weight_t *w = &weights[e];
        uint64_t rows, cols;
        trainer_shape(w, &rows, &cols);
        for (int r = 0; r < TRAINERS; r++) {
            const uint64_t tp = (uint64_t)(r % 2), row_bytes = cols * 2;
            for (uint64_t a = 0; a < rows; a++) {
                for (uint64_t b = 0; b < row_bytes; b++) {
                    const uint64_t ga = w->kind == COLUMN ? tp * rows + a : a;
                    const uint64_t gb = w->kind == ROW ? tp * row_bytes + b : b;
                    w->host[r][a * row_bytes + b] = weight_byte(e, ga * w->cols * 2 + gb, s);
                }
            }
            CHECK_CUDA(cudaMemcpyAsync(w->tile[r], w->host[r], rows * row_bytes,
                                       cudaMemcpyHostToDevice, streams[r]));
        }
    }
}

int main(int argc, char **argv)
{
    int generators = 4, graph = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--generators") == 0 && i + 1 < argc) {
            generators = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--graph") == 0) {
            graph = 1;
        } else {
            generators = 0;
            break;
        }
    }
    if (generators < 1 || generators > MAX_GENERATORS) {
        fprintf(stderr, "usage: %s [--generators N] [--graph], N in 1..%d (default 4)\n", argv[0],
                MAX_GENERATORS);
        return 2;
    }
    const int ranks = TRAINERS + generators;

    /* The model: per layer q, k, v, gate, up (column-parallel), o, down (row-parallel) and two
     * norms. */
    for (int l = 0; l < LAYERS; l++) {
        add(l, "q_proj", COLUMN, HIDDEN, HIDDEN);
        add(l, "k_proj", COLUMN, KV, HIDDEN);
        add(l, "v_proj", COLUMN, KV, HIDDEN);
        add(l, "o_proj", ROW, HIDDEN, HIDDEN);
        add(l, "gate_proj", COLUMN, FFN, HIDDEN);
        add(l, "up_proj", COLUMN, FFN, HIDDEN);
        add(l, "down_proj", ROW, HIDDEN, FFN);
        add(l, "input_norm", NORM, HIDDEN, 1);
        add(l, "post_attention_norm", NORM, HIDDEN, 1);
    }

    /* The plan: M2N staging of 256 KiB from every source rank (two channels of four 32 KiB
     * slices on the ring, docs/m2n.md "Memory": a tensor larger than that moves in several
     * rounds; 16 MiB per source gives the ring its full 128 channels), and room for the whole
     * model in one group. */
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    plan.m2n_staging_bytes = (uint64_t)ranks * (256u << 10);
    plan.m2n_max_group_entries = (uint32_t)num_weights;
    ncclxContext_t ctx[MAX_RANKS];
    cudaStream_t stream[MAX_RANKS];
    CHECK_NCCLX(ncclxLoopbackInit(&plan, (uint32_t)ranks, 0, ctx));
    for (int r = 0; r < ranks; r++) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
    }
    uint64_t model_bytes = 0;
    for (int e = 0; e < num_weights; e++) {
        weight_t *w = &weights[e];
        uint64_t rows, cols;
        trainer_shape(w, &rows, &cols);
        model_bytes += w->rows * w->cols * 2;
        for (int r = 0; r < ranks; r++) {
            const uint64_t bytes = r < TRAINERS ? rows * cols * 2 : w->rows * w->cols * 2;
            CHECK_CUDA(cudaMalloc(&w->tile[r], bytes));
            CHECK_CUDA(cudaMemset(w->tile[r], 0, bytes));
            if (r < TRAINERS && (w->host[r] = malloc(bytes)) == NULL) {
                return 1;
            }
        }
    }
    CHECK_CUDA(cudaDeviceSynchronize()); /* the zeroing, before the ranks' streams write */
    printf("m2n_refit: %d trainers [DP2 x TP2] -> %d generator replicas, %d weights, "
           "%llu bytes per model copy, %s\n",
           TRAINERS, generators, num_weights, (unsigned long long)model_bytes,
           graph ? "graph replay" : "eager");

    /* --graph: each rank's group captured once (nothing allocates: it is all in the plan). */
    cudaGraphExec_t exec[MAX_RANKS] = {NULL};
    if (graph) {
        for (int r = 0; r < ranks; r++) {
            cudaGraph_t g;
            CHECK_CUDA(cudaStreamBeginCapture(stream[r], cudaStreamCaptureModeThreadLocal));
            refit(ctx[r], r, generators, stream[r]);
            CHECK_CUDA(cudaStreamEndCapture(stream[r], &g));
            CHECK_CUDA(cudaGraphInstantiate(&exec[r], g, 0));
            CHECK_CUDA(cudaGraphDestroy(g));
        }
    }

    /* The RL loop: train, refit, generate.  Every rank enqueues its refit before any waits. */
    for (int s = 0; s < REFITS; s++) {
        train_step(s, stream);
        for (int r = 0; r < ranks; r++) {
            if (graph) {
                CHECK_CUDA(cudaGraphLaunch(exec[r], stream[r]));
            } else {
                refit(ctx[r], r, generators, stream[r]);
            }
        }
        /* The generators would now generate with the new weights (on their streams); the
         * host waits here only because train_step rewrites its staging next. */
        for (int r = 0; r < ranks; r++) {
            CHECK_CUDA(cudaStreamSynchronize(stream[r]));
        }
        printf("refit %d done\n", s);
    }

    /* Check: every byte of every generator tile is the last refit's weight. */
    int failed = 0;
    uint8_t *h = malloc((size_t)FFN * HIDDEN * 2);
    if (h == NULL) {
        return 1;
    }
    for (int r = 0; r < ranks; r++) {
        uint64_t wrong = 0;
        uint32_t err = 0;
        CHECK_NCCLX(ncclxM2nGetAsyncError(ctx[r], &err));
        for (int e = 0; r >= TRAINERS && e < num_weights; e++) {
            const weight_t *w = &weights[e];
            const uint64_t bytes = w->rows * w->cols * 2;
            CHECK_CUDA(cudaMemcpy(h, w->tile[r], bytes, cudaMemcpyDeviceToHost));
            uint64_t bad = 0;
            for (uint64_t g = 0; g < bytes; g++) {
                bad += h[g] != weight_byte(e, g, REFITS - 1);
            }
            if (bad != 0) {
                printf("rank %d: %s: %llu of %llu bytes wrong\n", r, w->name,
                       (unsigned long long)bad, (unsigned long long)bytes);
            }
            wrong += bad;
        }
        if (r >= TRAINERS || err != 0) {
            printf("rank %d (%s): %s (%llu wrong bytes, async error 0x%x)\n", r,
                   r < TRAINERS ? "trainer" : "generator", wrong == 0 && err == 0 ? "PASS" : "FAIL",
                   (unsigned long long)wrong, err);
        }
        failed |= wrong != 0 || err != 0;
    }
    printf("m2n_refit: %s\n", failed ? "FAIL" : "PASS");

    free(h);
    for (int r = 0; r < ranks; r++) {
        if (graph) {
            CHECK_CUDA(cudaGraphExecDestroy(exec[r]));
        }
        CHECK_NCCLX(ncclxFinalize(ctx[r]));
        CHECK_CUDA(cudaStreamDestroy(stream[r]));
    }
    for (int e = 0; e < num_weights; e++) {
        for (int r = 0; r < ranks; r++) {
            CHECK_CUDA(cudaFree(weights[e].tile[r]));
            if (r < TRAINERS) {
                free(weights[e].host[r]);
            }
        }
    }
    return failed;
}
