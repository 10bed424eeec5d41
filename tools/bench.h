/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench internals: the options, the ranks this process drives (every rank of a loopback
 * team, or its own rank of a communicator), inputs derived from the seed alone (so any process
 * can compute what any rank sends, receives and returns), the checker and the timed loops.
 */
#ifndef NCCLX_TOOLS_BENCH_H_
#define NCCLX_TOOLS_BENCH_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

typedef struct {
    int comm;                /* 1: one rank of a communicator from ncclxInit; 0: loopback team */
    uint32_t loopback;       /* ranks of the loopback team */
    uint32_t nodes;          /* loopback: emulated nodes (0: no shape; ncclxLoopbackConfig_t) */
    ncclxEpAlgorithm_t algo; /* NCCLX_EP_ALGO_LL or _HT */
    uint32_t layout;         /* LL: NCCLX_EP_LAYOUT_EXPERT_MAJOR or _RANK_MAJOR; HT: _FLAT or
                                _EXPERT_MAJOR */
    uint32_t pass;           /* HT: NCCLX_EP_PASS_FORWARD or _BACKWARD */
    uint32_t recv;           /* HT: receive rows per rank S (0: the plan's default, R x T) */
    int recv_from_routing;   /* HT: recv is the most rows a rank needs with the seed's routing */
    uint32_t alignment;      /* HT expert-major: zones padded to a multiple of this (1: none) */
    uint32_t tokens;         /* tokens per rank; with sweep, the largest */
    uint32_t hidden, topk, experts;
    ncclxDataType_t dtype; /* tokens and expert outputs: BF16, FP16 or FP32 */
    uint32_t recipe;       /* NCCLX_EP_RECIPE_NONE or _FP8 */
    uint32_t iters, warmup;
    uint32_t timeout_s; /* GPU wait timeout of the group */
    uint32_t sm_budget; /* blocks per data-moving kernel (0: the library's default) */
    uint32_t device;    /* CUDA device of a loopback team */
    int graph;          /* 0 eager, 1 one CUDA graph per rank and operation, 2 one per operation
                         * for the whole loopback team (--team-graph) */
    int check, sweep;
    int zero_copy;   /* outputs and expert outputs in the group's buffers (no copy); LL: the
                        group planned with zero_copy, either layout */
    int no_gate;     /* enqueue timed work without holding it behind the gate */
    int rank_starts; /* also time when each rank's stream gets to each operation */
    int mask;        /* plan the group with an active mask (fault tolerance on) */
    int peer_copy;   /* roofline: a copy to the next GPU (cudaMemcpyPeerAsync) */
    int layer;       /* also time routing alone and routing + dispatch + combine */
    const char *csv; /* append one line per measured operation to this file (NULL: none) */
    uint64_t seed;
} bench_options_t;

/* ---- inputs (bench_data.c) ---- */

/* Every rank's routing, generated from the seed; token values come from bench_token_value. */
typedef struct {
    uint32_t ranks, tokens, topk, experts, hidden;
    uint64_t seed;
    int64_t *topk_idx; /* [ranks][tokens][topk]: distinct experts, uniform */
    float *weights;    /* [ranks][tokens][topk] in [0.05, 1) */
} bench_inputs_t;

int bench_inputs_make(const bench_options_t *o, uint32_t ranks, bench_inputs_t *in);
void bench_inputs_free(bench_inputs_t *in);

/* Element col of token `token` of rank `rank`: a multiple of 1/64 in [-2, 2), exact in every
 * token dtype. */
float bench_token_value(const bench_inputs_t *in, uint32_t rank, uint32_t token, uint32_t col);

/* Top-k entries (expert id >= 0) of rank's first n tokens. */
uint64_t bench_valid_entries(const bench_inputs_t *in, uint32_t rank, uint32_t n);
/* Rows rank must send to ranks of other nodes (per_node ranks per node) with n tokens each:
 * dispatch, its tokens once per remote destination rank; combine, the rows it returns to remote
 * sources (expert-major: one per entry it served; rank-major: one per token). */
void bench_remote_rows(const bench_inputs_t *in, uint32_t rank, uint32_t n, uint32_t per_node,
                       int expert_major, uint64_t *dispatch, uint64_t *combine);
/** HT across nodes: (token, other node holding >= 1 of its experts) pairs of rank's first n
 *  tokens, each the least that must cross once in dispatch (the token) and once in combine (the
 *  node's partial). */
void bench_remote_nodes(const bench_inputs_t *in, uint32_t rank, uint32_t n, uint32_t per_node,
                        uint64_t *pairs);

size_t bench_dtype_size(ncclxDataType_t dtype);
const char *bench_dtype_name(ncclxDataType_t dtype);
/* Stores v rounded to nearest even in dtype (BF16, FP16, FP32) at element i of p. */
void bench_store(void *p, size_t i, ncclxDataType_t dtype, double v);
double bench_load(const void *p, size_t i, ncclxDataType_t dtype);
/* v rounded to dtype and back. */
double bench_round(double v, ncclxDataType_t dtype);
float bench_e4m3_to_float(uint8_t v);

/*
 * The rows one rank receives with n tokens per rank: out_tokens is [slabs, slab_rows, hidden];
 * slab a holds count[a] rows, row j coming from src[a * slab_rows + j] = source rank * tokens +
 * token.  Expert-major: one slab per local expert, rows in (source rank, token) order;
 * rank-major: one slab per source rank, rows in token order.
 */
typedef struct {
    uint32_t slabs, slab_rows;
    int32_t *count;
    uint32_t *src;
} bench_map_t;

int bench_map_build(const bench_inputs_t *in, uint32_t layout, uint32_t rank, uint32_t n,
                    bench_map_t *map);
void bench_map_free(bench_map_t *map);

/* Column col of the expert output row that rank `rank` returns for token (src, token): the
 * token itself (expert-major, identity experts) or the token weighted by its top-k weights of
 * the experts on `rank` (rank-major), rounded to dtype. */
double bench_expert_value(const bench_inputs_t *in, uint32_t layout, ncclxDataType_t dtype,
                          uint32_t rank, uint32_t src, uint32_t token, uint32_t col);

/* What combine must return for element col of token `token` of rank src; *mag gets the sum
 * of the magnitudes of its terms (for the tolerance).  rows_are_outputs: the expert outputs are
 * the rows dispatch received, as they came (LL zero copy, recipe none, expert_out the rows):
 * rank-major rows then carry no weights (expert-major rows never do). */
double bench_combine_value(const bench_inputs_t *in, uint32_t layout, int rows_are_outputs,
                           ncclxDataType_t dtype, uint32_t src, uint32_t token, uint32_t col,
                           double *mag);

/* ---- HT expectations (bench_ht.c) ---- */

/* Rows rank `rank` sends with its first n tokens: per token, its distinct destination ranks
 * (FLAT) or its distinct experts (EXPERT_MAJOR).  Rows of one token: bench_ht_token_rows. */
uint64_t bench_ht_sent_rows(const bench_inputs_t *in, uint32_t layout, uint32_t rank, uint32_t n);
uint32_t bench_ht_token_rows(const bench_inputs_t *in, uint32_t layout, uint32_t src,
                             uint32_t token);

/* Receive rows rank `rank` needs with n tokens per rank (FLAT: tokens received; EXPERT_MAJOR:
 * the zones, each padded to a multiple of alignment). */
uint64_t bench_ht_recv_rows(const bench_inputs_t *in, uint32_t layout, uint32_t alignment,
                            uint32_t rank, uint32_t n);

#define BENCH_HT_PAD UINT32_MAX /* bench_ht_map_t.src of an expert-major pad row */

/*
 * What one rank receives with n tokens per rank (ncclx/ep.h, "High throughput").  Row j comes
 * from token src[j] = source rank * tokens + token (BENCH_HT_PAD: a zero pad row).  FLAT: one
 * row per (token, destination rank) in (source rank, token) order; EXPERT_MAJOR: one row per
 * (token, local expert), one zone per expert in expert order, each in (source rank, token)
 * order and padded to a multiple of the alignment.
 */
typedef struct {
    uint32_t rows;    /* rows delivered: FLAT tokens received, EXPERT_MAJOR padded total */
    int64_t *counts;  /* [L]: FLAT rows that hit the expert; EXPERT_MAJOR its padded zone */
    int64_t *offsets; /* [L + 1] EXPERT_MAJOR: first row of each zone, then rows; FLAT: 0 */
    uint32_t *src;    /* [rows] */
    int32_t *ids;     /* FLAT [rows, K]: the token's experts here (local ids) ascending, then -1 */
    float *weights;   /* FLAT [rows, K]: their weights, then 0; EXPERT_MAJOR [rows]: the row's
                         weight (0 on pads) */
} bench_ht_map_t;

int bench_ht_map_build(const bench_inputs_t *in, uint32_t layout, uint32_t alignment, uint32_t rank,
                       uint32_t n, bench_ht_map_t *map);
void bench_ht_map_free(bench_ht_map_t *map);

/* What backward combine returns in out_topk_weights[token][k] when fed the forward receive
 * weights: the entry's weight (0 for an entry outside [0, experts) or a repeated expert). */
float bench_ht_weight_grad(const bench_inputs_t *in, uint32_t src, uint32_t token, uint32_t k);

/* nccl_ep's symmetric bytes per rank for its intra-team buffers of the same config (row_bytes
 * = hidden x element bytes, recv_rows = S); docs/performance.md gives the formula. */
uint64_t bench_ht_nccl_ep_bytes(uint32_t ranks, uint32_t tokens, uint32_t experts,
                                uint32_t recv_rows, size_t row_bytes);

/* ---- the team (bench_team.c) ---- */

/* Dispatch and combine always; with --layer also the routing (ncclxEpHandleUpdate) alone and
 * a whole layer (update, dispatch, combine in one stream order). */
typedef enum {
    BENCH_DISPATCH = 0,
    BENCH_COMBINE = 1,
    BENCH_DATA_OPS = 2,
    BENCH_ROUTE = 2,
    BENCH_LAYER = 3,
    BENCH_NUM_OPS = 4
} bench_op_t;

typedef struct {
    uint32_t rank; /* global */
    ncclxContext_t ctx;
    ncclxEpGroup_t group;
    ncclxEpHandle_t handle;
    cudaStream_t stream;
    void *topk_idx, *topk_weights, *tokens; /* inputs for the largest token count */
    /* HT: out_tokens [S, hidden]; out_counts the layout query's INT64 expert counts [L],
     * expert offsets [L + 1] and receive total [1]; out_topk_idx [S, K] INT32 (flat, forward);
     * out_topk_weights flat [S, K], expert-major [S]: forward dispatch writes it, backward
     * combine reads it (the gradients of the received weights). */
    void *out_tokens, *out_scales, *out_counts, *out_topk_idx, *out_topk_weights;
    void *expert_out, *out;
    void *grad_weights;                    /* HT backward combine: out_topk_weights [T, K] */
    cudaGraphExec_t graphs[BENCH_NUM_OPS]; /* NULL: eager */
    int borrowed;                          /* out_tokens (and LL out_scales) are the group's buffers
                                              (--zero-copy) */
    int borrowed_expert_out; /* expert_out too (LL: where its rows fit in the zero-copy rows) */
} bench_rank_t;

typedef struct {
    bench_options_t o;
    uint32_t ranks;         /* R of the job */
    uint32_t nlocal;        /* ranks driven here: R for a loopback team, else 1 */
    uint32_t local_experts; /* L */
    uint32_t max_tokens;    /* T of the plan */
    uint32_t tokens;        /* n of the current configuration */
    int cuda_device;
    uint32_t slabs, slab_rows; /* out_tokens [slabs, slab_rows, hidden] (HT: [1, S, hidden]) */
    uint32_t recv_rows;        /* HT: S, receive rows per rank */
    size_t out_row_bytes;      /* bytes of an out_tokens row */
    bench_rank_t *r;           /* [nlocal] */
    cudaStream_t timer;        /* common start of every timed operation */
    void *copy_src, *copy_dst; /* roofline copies */
    size_t copy_bytes;
    int copy_device; /* the device of copy_dst (the next GPU with --peer-copy) */
    /* --team-graph: every local rank's operation in one graph, launched on r[0].stream */
    cudaGraphExec_t team_graphs[BENCH_NUM_OPS];
} bench_team_t;

/* Prints the failing call and the library's or CUDA's message; returns -1. */
int bench_fail_ncclx(ncclxResult_t res, const char *what, int rank);
int bench_fail_cuda(cudaError_t err, const char *what, int rank);

#define BENCH_NCCLX(call, what, rank)                                 \
    do {                                                              \
        ncclxResult_t bench_res_ = (call);                            \
        if (bench_res_ != ncclxSuccess) {                             \
            return bench_fail_ncclx(bench_res_, (what), (int)(rank)); \
        }                                                             \
    } while (0)

#define BENCH_CUDA(call, what, rank)                                 \
    do {                                                             \
        cudaError_t bench_err_ = (call);                             \
        if (bench_err_ != cudaSuccess) {                             \
            return bench_fail_cuda(bench_err_, (what), (int)(rank)); \
        }                                                            \
    } while (0)

/* The operations each timed iteration runs: BENCH_DATA_OPS, or BENCH_NUM_OPS with --layer. */
static inline int bench_num_ops(const bench_team_t *t)
{
    return t->o.layer ? BENCH_NUM_OPS : BENCH_DATA_OPS;
}

/* Contexts, streams, handles and buffers for o (0 on success; on failure what was made is
 * released). */
int bench_team_create(const bench_options_t *o, bench_team_t *t);
int bench_team_destroy(bench_team_t *t);

/* Uploads every local rank's tokens, top-k ids and weights (max_tokens rows). */
int bench_team_upload(bench_team_t *t, const bench_inputs_t *in);

/* Routes every handle for n tokens per rank (their first n rows); drops captured graphs. */
int bench_team_route(bench_team_t *t, uint32_t n);

/* Enqueues op on local rank i: the library call, or its captured graph.  With --team-graph the
 * call for the last local rank runs the team's graph after every rank's stream is idle, and
 * returns once it ended (the untimed checks use this; the timed loop launches it itself). */
int bench_team_enqueue(bench_team_t *t, uint32_t i, bench_op_t op);

/* Captures each rank's dispatch and combine into graphs (after bench_team_route); with
 * --team-graph, each operation of every local rank into one graph (t->team_graphs). */
int bench_team_capture(bench_team_t *t);

/* 0 when every group's asynchronous error word is clear. */
int bench_team_async_errors(bench_team_t *t);

/* HT: enqueues local rank i's layout query (ncclxEpHandleGetLayout) into its out_counts. */
int bench_team_layout(bench_team_t *t, uint32_t i);

/* LL --zero-copy: 1 when expert_out is the zero-copy rows dispatch receives into (recipe none:
 * the identity experts' outputs are the received rows). */
int bench_ll_expert_out_in_rows(const bench_team_t *t);

/* HT: symmetric bytes per rank of the bench's plan on this team (ncclxPlanComputeSizes). */
int bench_team_symmetric_bytes(const bench_team_t *t, uint64_t *bytes);

/* ---- checks (bench_check.c) ---- */

/* Writes every local rank's expert_out (the rows combine will read) for n tokens. */
int bench_fill_expert_out(bench_team_t *t, const bench_inputs_t *in);

/* Runs one dispatch + combine on outputs filled with a sentinel and counts the wrong elements
 * of every local rank (each rank's first is described on stderr). */
int bench_check(bench_team_t *t, const bench_inputs_t *in, uint64_t *wrong);

/* HT (bench_ht_check.c): writes every local rank's expert_out (identity experts: each
 * received row as it is, pad rows zero) and, for a backward pass, the forward receive weights
 * that backward combine takes as topk_weights. */
int bench_ht_fill(bench_team_t *t, const bench_inputs_t *in);

/* HT: as bench_check, plus the layout query's counts and total. */
int bench_ht_check(bench_team_t *t, const bench_inputs_t *in, uint64_t *wrong);

/* ---- timing (bench_time.c) ---- */

typedef struct {
    double median_us, min_us, max_us;
    /* --rank-starts (else -1): medians over the timed iterations, in us after the operation's
     * start, of when the first and the last rank's stream got to the operation and when the
     * first rank's ended (the last rank's end is median_us's sample). */
    double first_start_us, last_start_us, first_end_us;
} bench_stats_t;

/* Warm-up then timed iterations of dispatch then combine (then, with --layer, routing and a
 * layer), each from a common start to the last rank's end. */
int bench_time_ops(bench_team_t *t, bench_stats_t stats[BENCH_NUM_OPS]);

/* Median time of a device-to-device copy of bytes on this GPU. */
int bench_time_copy(bench_team_t *t, size_t bytes, double *median_us);

/* ---- rows against their ceiling (bench_report.c) ---- */

/* The path op takes on this team ("ll two-pass", "ht direct", "ht staged", ...). */
const char *bench_path_name(const bench_team_t *t, bench_op_t op);

/* The least HBM bytes a data op (dispatch or combine) reads and writes on its path with n
 * tokens per rank, summed over the local ranks. */
uint64_t bench_hbm_bytes(const bench_team_t *t, const bench_inputs_t *in, uint32_t n,
                         bench_op_t op);

/* What the rows measure: "one-GPU emulation: loopback 8 [as N nodes x M]" or "real
 * communicator: R GPU(s), R process(es)". */
void bench_label(const bench_team_t *t, char *buf, size_t len);

/* One measured operation, for --csv. */
typedef struct {
    const char *op, *path;
    uint64_t bytes; /* per rank; 0 where not counted (routing, a layer) */
    bench_stats_t stats;
    double pct_roof, pct_hbm; /* negative: not measured */
    uint64_t hbm_bytes;
    const char *wrong;
} bench_csv_t;

/* Appends row to --csv FILE (a header line first when the file is empty); 0 without --csv. */
int bench_csv_row(const bench_team_t *t, const bench_csv_t *row);

#endif /* NCCLX_TOOLS_BENCH_H_ */
