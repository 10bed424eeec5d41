/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-m2n-bench: times M2N reshards on a loopback team of one GPU (docs/performance.md,
 * "M2N").  Patterns: a 1 -> 1 copy, a cross-dim all-to-all (S0 over 4 ranks -> S1 over 4), a
 * fan-out (one source, 8 replicas), and the qwen3-32b refit TP2 x DP2 -> TP1 x DP16 of whole
 * decoder layers at their real shapes.  Each row: the bytes a destination rank receives, the
 * time of one reshard (median; start event to the slowest rank's end, every iteration enqueued
 * behind a gate so that the host's launches are not timed), GB/s per destination rank and for
 * all of them, and the time of a device copy of all destination bytes in the same run
 * (cudaMemcpyAsync) as a percentage of the reshard's.  --check fills every source tile from
 * its global byte index and checks every destination byte after the timed loop.  --nodes N
 * shapes the team as N emulated nodes (one-GPU emulation, docs/multi-node.md): the line under
 * the row gives the bytes that crossed the emulated network per reshard, the least possible
 * (each destination byte that no source rank of its own node holds, once) and the time the
 * busiest rank's bytes would take at 50 GB/s, one 400 Gb/s NIC per GPU.
 *
 * %hbm: the least HBM traffic of the path (direct: each destination byte read from its source
 * tile and written once; the ring: also written into and read from staging; across emulated
 * nodes: also written into network staging and read by the put) at the bandwidth the same
 * run's copy reached (2 bytes of traffic per copied byte), over the median.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <ncclx.h>

#include "m2n_ring.h" /* kernels/: the ring a plan gets, for the header */
#include "no_gpu.h"

#define MAX_RANKS   24
#define MAX_TENSORS 1024

typedef struct {
    const char *pattern;
    double mb;         /* tile MiB (copy, cross, fanout) */
    double staging_mb; /* plan staging per source rank, MiB */
    uint32_t layers, iters, warmup;
    int graph, check;
    uint32_t nodes;  /* emulated nodes of the loopback team; 0: no shape */
    const char *csv; /* append the row to this file (NULL: none) */
} options_t;

/* A 1-D or 2-D tensor [rows, cols] of elem-byte elements; each side shards one dim (or none)
 * over `shards` ranks and has `replicas` replicas; mesh [replicas, shards] from start. */
typedef struct {
    int dim; /* -1: replicated */
    uint32_t shards, replicas, start;
} bside_t;

typedef struct {
    uint64_t rows, cols; /* elements */
    uint32_t elem;
    bside_t side[2];
    uint8_t *tile[2][MAX_RANKS];
} btensor_t;

static btensor_t tensors[MAX_TENSORS];
static uint32_t num_tensors, world;

static void add(uint64_t rows, uint64_t cols, uint32_t elem, bside_t s, bside_t d)
{
    btensor_t *t = &tensors[num_tensors++];
    memset(t, 0, sizeof(*t));
    t->rows = rows;
    t->cols = cols;
    t->elem = elem;
    t->side[0] = s;
    t->side[1] = d;
}

static bside_t bside(int dim, uint32_t shards, uint32_t replicas, uint32_t start)
{
    bside_t s = {dim, shards, replicas, start};
    return s;
}

static uint64_t local_bytes(const btensor_t *t, int k, uint64_t *lrows, uint64_t *lcols)
{
    const bside_t *s = &t->side[k];
    *lrows = t->rows / (s->dim == 0 ? s->shards : 1);
    *lcols = t->cols / (s->dim == 1 ? s->shards : 1);
    return *lrows * *lcols * t->elem;
}

static ncclxM2nTensor_t descriptor(const btensor_t *t, int k, void *data)
{
    const bside_t *s = &t->side[k];
    ncclxM2nTensor_t d = NCCLX_M2N_TENSOR_INIT;
    uint64_t lr, lc;
    (void)local_bytes(t, k, &lr, &lc);
    d.data = data;
    d.dtype = t->elem == 1 ? NCCLX_UINT8 : t->elem == 2 ? NCCLX_BFLOAT16 : NCCLX_FLOAT32;
    d.ndims = t->cols == 1 ? 1 : 2;
    d.local_shape[0] = lr;
    d.local_shape[1] = t->cols == 1 ? 1 : lc;
    d.mesh.ndims = 2;
    d.mesh.dims[0] = s->replicas;
    d.mesh.dims[1] = s->shards;
    d.mesh.start_rank = s->start;
    d.placements[0] = NCCLX_M2N_REPLICATE;
    d.placements[1] = s->dim < 0 ? NCCLX_M2N_REPLICATE : NCCLX_M2N_SHARD(s->dim);
    return d;
}

/* Shard of rank on side k, or -1 off the mesh (mesh [replicas, shards], shards inner). */
static int shard_of(const btensor_t *t, int k, uint32_t rank)
{
    const bside_t *s = &t->side[k];
    if (rank < s->start || rank >= s->start + s->replicas * s->shards) {
        return -1;
    }
    return (int)((rank - s->start) % s->shards);
}

/* Elements [lo, hi) of dimension d (0 rows, 1 columns) that shard i of side k holds. */
static void span(const btensor_t *t, int k, int i, int d, uint64_t *lo, uint64_t *hi)
{
    const bside_t *s = &t->side[k];
    const uint64_t n = d == 0 ? t->rows : t->cols;
    const uint64_t part = s->dim == d ? n / s->shards : n;
    *lo = s->dim == d ? (uint64_t)i * part : 0;
    *hi = *lo + part;
}

/* Bytes of destination shard j that source shard i holds. */
static uint64_t overlap(const btensor_t *t, int i, int j)
{
    uint64_t b = t->elem;
    for (int d = 0; d < 2; d++) {
        uint64_t slo, shi, dlo, dhi;
        span(t, 0, i, d, &slo, &shi);
        span(t, 1, j, d, &dlo, &dhi);
        const uint64_t lo = slo > dlo ? slo : dlo, hi = shi < dhi ? shi : dhi;
        b *= hi > lo ? hi - lo : 0;
    }
    return b;
}

/* The least that must cross between nodes of per_node ranks in one reshard: every destination
 * byte that no source rank on the destination's node holds (source shards are disjoint). */
static uint64_t least_crossing(uint32_t per_node)
{
    uint64_t least = 0;
    for (uint32_t e = 0; e < num_tensors; e++) {
        const btensor_t *t = &tensors[e];
        const bside_t *s = &t->side[0];
        for (uint32_t r = 0; r < world; r++) {
            const int j = shard_of(t, 1, r);
            for (uint32_t i = 0; j >= 0 && i < s->shards; i++) {
                int on_node = 0;
                for (uint32_t q = 0; q < s->replicas; q++) {
                    on_node |= (s->start + q * s->shards + i) / per_node == r / per_node;
                }
                least += on_node ? 0 : overlap(t, (int)i, j);
            }
        }
    }
    return least;
}

static uint8_t byte_value(uint64_t g)
{
    uint64_t x = g * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    return (uint8_t)(x >> 56);
}

/* The global byte index of local byte (a, b) (b in bytes) of shard i on side k. */
static uint64_t global_index(const btensor_t *t, int k, int i, uint64_t a, uint64_t b)
{
    uint64_t lr, lc;
    const bside_t *s = &t->side[k];
    (void)local_bytes(t, k, &lr, &lc);
    if (s->dim == 0) {
        a += (uint64_t)i * lr;
    } else if (s->dim == 1) {
        b += (uint64_t)i * lc * t->elem;
    }
    return a * t->cols * t->elem + b;
}

/* Source tiles from the global index (with check), destinations poisoned; or both zeroed. */
static int fill(int check)
{
    for (uint32_t e = 0; e < num_tensors; e++) {
        btensor_t *t = &tensors[e];
        for (int k = 0; k < 2; k++) {
            uint64_t lr, lc;
            const uint64_t n = local_bytes(t, k, &lr, &lc);
            uint8_t *h = check ? malloc(n) : NULL;
            for (uint32_t r = 0; r < world; r++) {
                const int i = shard_of(t, k, r);
                if (i < 0) {
                    continue;
                }
                if (!check) {
                    if (cudaMemset(t->tile[k][r], 0, n) != cudaSuccess) {
                        return -1;
                    }
                    continue;
                }
                if (h == NULL) {
                    return -1;
                }
                for (uint64_t a = 0; a < lr; a++) {
                    for (uint64_t b = 0; b < lc * t->elem; b++) {
                        h[a * lc * t->elem + b] =
                            k == 0 ? byte_value(global_index(t, k, i, a, b)) : 0xDE;
                    }
                }
                if (cudaMemcpy(t->tile[k][r], h, n, cudaMemcpyHostToDevice) != cudaSuccess) {
                    free(h);
                    return -1;
                }
            }
            free(h);
        }
    }
    return 0;
}

static uint64_t verify(void)
{
    uint64_t wrong = 0;
    for (uint32_t e = 0; e < num_tensors; e++) {
        btensor_t *t = &tensors[e];
        uint64_t lr, lc;
        const uint64_t n = local_bytes(t, 1, &lr, &lc);
        uint8_t *h = malloc(n);
        for (uint32_t r = 0; h != NULL && r < world; r++) {
            const int i = shard_of(t, 1, r);
            if (i < 0) {
                continue;
            }
            if (cudaMemcpy(h, t->tile[1][r], n, cudaMemcpyDeviceToHost) != cudaSuccess) {
                wrong += n;
                continue;
            }
            for (uint64_t a = 0; a < lr; a++) {
                for (uint64_t b = 0; b < lc * t->elem; b++) {
                    wrong += h[a * lc * t->elem + b] != byte_value(global_index(t, 1, i, a, b));
                }
            }
        }
        wrong += h == NULL ? n : 0;
        free(h);
    }
    return wrong;
}

static void CUDART_CB gate(void *arg)
{
    const int *open = arg;
    const struct timespec pause = {0, 2000};
    while (!__atomic_load_n(open, __ATOMIC_ACQUIRE)) {
        nanosleep(&pause, NULL);
    }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define CHECK_CUDA(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "ncclx-m2n-bench: %s: %s\n", #call, cudaGetErrorString(err_)); \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)
#define CHECK_NCCLX(call)                                                             \
    do {                                                                              \
        ncclxResult_t res_ = (call);                                                  \
        if (res_ != ncclxSuccess) {                                                   \
            fprintf(stderr, "ncclx-m2n-bench: %s: %s\n", #call, ncclxGetLastError()); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static ncclxContext_t ctx[MAX_RANKS];
static cudaStream_t stream[MAX_RANKS];

/* Bytes each rank put across the emulated network so far, their sum, and the most of one. */
static int net_bytes(uint64_t *sum, uint64_t *per_rank)
{
    *sum = 0;
    for (uint32_t r = 0; r < world; r++) {
        ncclxNetStats_t s = NCCLX_NET_STATS_INIT;
        CHECK_NCCLX(ncclxContextGetNetStats(ctx[r], &s));
        per_rank[r] = s.bytes;
        *sum += s.bytes;
    }
    return 0;
}

/* Every rank's calls (one group when there are several tensors). */
static int enqueue(void)
{
    for (uint32_t r = 0; r < world; r++) {
        if (num_tensors > 1) {
            CHECK_NCCLX(ncclxM2nGroupStart(ctx[r]));
        }
        for (uint32_t e = 0; e < num_tensors; e++) {
            const ncclxM2nTensor_t s = descriptor(&tensors[e], 0, tensors[e].tile[0][r]);
            const ncclxM2nTensor_t d = descriptor(&tensors[e], 1, tensors[e].tile[1][r]);
            CHECK_NCCLX(ncclxM2nReshard(ctx[r], &s, &d, (ncclxStream_t)stream[r]));
        }
        if (num_tensors > 1) {
            CHECK_NCCLX(ncclxM2nGroupEnd(ctx[r]));
        }
    }
    return 0;
}

static int build_pattern(const options_t *o)
{
    const uint64_t tile = (uint64_t)(o->mb * 1048576.0) / 256 * 256;
    num_tensors = 0;
    if (strcmp(o->pattern, "copy") == 0) {
        world = 2;
        add(tile / 2, 1, 2, bside(-1, 1, 1, 0), bside(-1, 1, 1, 1));
    } else if (strcmp(o->pattern, "cross") == 0) {
        /* [R, C] bf16, S0 over ranks 0-3 -> S1 over ranks 4-7, tiles of `tile` bytes. */
        const uint64_t cols = 8192, rows = tile * 4 / (cols * 2);
        world = 8;
        add(rows / 16 * 16, cols, 2, bside(0, 4, 1, 0), bside(1, 4, 1, 4));
    } else if (strcmp(o->pattern, "fanout") == 0) {
        world = 9;
        add(tile / 2, 1, 2, bside(-1, 1, 1, 0), bside(-1, 1, 8, 1));
    } else if (strcmp(o->pattern, "refit") == 0) {
        /* qwen3-32b: hidden 5120, FFN 25600, q 8192, kv 1024, head 128; trainer mesh
         * [DP2, TP2] on ranks 0-3 (column-parallel S0, row-parallel S1, norms replicated),
         * generator 16 replicas on ranks 4-19. */
        const bside_t col = bside(0, 2, 2, 0), row = bside(1, 2, 2, 0), rep = bside(-1, 1, 4, 0);
        const bside_t gen = bside(-1, 1, 16, 4);
        world = 20;
        for (uint32_t l = 0; l < o->layers; l++) {
            add(8192, 5120, 2, col, gen);  /* q */
            add(1024, 5120, 2, col, gen);  /* k */
            add(1024, 5120, 2, col, gen);  /* v */
            add(5120, 8192, 2, row, gen);  /* o */
            add(25600, 5120, 2, col, gen); /* gate */
            add(25600, 5120, 2, col, gen); /* up */
            add(5120, 25600, 2, row, gen); /* down */
            add(128, 1, 2, rep, gen);      /* q norm */
            add(128, 1, 2, rep, gen);      /* k norm */
            add(5120, 1, 2, rep, gen);     /* input norm */
            add(5120, 1, 2, rep, gen);     /* post-attention norm */
        }
    } else {
        fprintf(stderr, "ncclx-m2n-bench: --pattern %s: copy, cross, fanout or refit\n",
                o->pattern);
        return 1;
    }
    return 0;
}

static void usage(void)
{
    printf("usage: ncclx-m2n-bench [--pattern copy|cross|fanout|refit] [--mb MIB] [--layers N]\n"
           "                       [--staging-mb MIB] [--iters N] [--warmup N] [--graph]\n"
           "                       [--check] [--nodes N]\n"
           "  --pattern P  copy: 1 -> 1 (2 ranks); cross: S0 over 4 -> S1 over 4 (8 ranks);\n"
           "               fanout: 1 -> 8 replicas (9 ranks); refit: qwen3-32b decoder layers\n"
           "               TP2 x DP2 -> TP1 x DP16 at their real shapes (20 ranks)  [copy]\n"
           "  --mb MIB     bytes a destination rank receives (copy, cross, fanout)   [64]\n"
           "  --layers N   refit: decoder layers (the model has 64)                  [2]\n"
           "  --staging-mb MIB  plan.m2n_staging_bytes per rank of the team         [16]\n"
           "  --iters N, --warmup N  timed and untimed reshards                      [20, 3]\n"
           "  --graph      replay one CUDA graph per rank instead of calling\n"
           "  --check      fill sources from global indices, check every destination byte\n"
           "  --nodes N    the loopback team shaped as N emulated nodes (N divides the ranks):\n"
           "               ranks of other nodes only through the emulated network, whose bytes\n"
           "               per reshard are printed next to the least possible       [no shape]\n"
           "  --csv FILE   append the row to FILE (a header line first when it is empty)\n");
}

int main(int argc, char **argv)
{
    options_t o = {"copy", 64.0, 16.0, 2, 20, 3, 0, 0, 0, NULL};
    const struct option longs[] = {
        {"pattern", 1, NULL, 'p'}, {"mb", 1, NULL, 'm'},         {"layers", 1, NULL, 'l'},
        {"iters", 1, NULL, 'i'},   {"warmup", 1, NULL, 'w'},     {"graph", 0, NULL, 'g'},
        {"check", 0, NULL, 'c'},   {"staging-mb", 1, NULL, 's'}, {"nodes", 1, NULL, 'N'},
        {"help", 0, NULL, 'h'},    {"csv", 1, NULL, 'V'},        {NULL, 0, NULL, 0}};
    int c, open_gate = 0;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'p':
            o.pattern = optarg;
            break;
        case 'm':
            o.mb = atof(optarg);
            break;
        case 'l':
            o.layers = (uint32_t)atoi(optarg);
            break;
        case 'i':
            o.iters = (uint32_t)atoi(optarg);
            break;
        case 'w':
            o.warmup = (uint32_t)atoi(optarg);
            break;
        case 'g':
            o.graph = 1;
            break;
        case 'c':
            o.check = 1;
            break;
        case 's':
            o.staging_mb = atof(optarg);
            break;
        case 'V':
            o.csv = optarg;
            break;
        case 'N':
            o.nodes = (uint32_t)atoi(optarg);
            if (o.nodes == 0) {
                fprintf(stderr, "ncclx-m2n-bench: --nodes %s: a number of nodes >= 1\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage();
            return 0;
        default:
            usage();
            return 2;
        }
    }
    if (o.mb <= 0 || o.staging_mb * 1048576.0 < NCCLX_M2N_MIN_STAGING_PER_RANK || o.iters == 0 ||
        o.iters > 1000 || o.layers == 0 || o.layers * 11 > MAX_TENSORS) {
        fprintf(stderr,
                "ncclx-m2n-bench: --mb > 0, --staging-mb >= %g, 1 <= --iters <= 1000, "
                "1 <= --layers <= %d\n",
                NCCLX_M2N_MIN_STAGING_PER_RANK / 1048576.0, MAX_TENSORS / 11);
        return 2;
    }
    if (ncclx_tool_no_gpu() != NULL) {
        ncclx_tool_explain_no_gpu("ncclx-m2n-bench", "a CUDA GPU", ncclx_tool_no_gpu());
        return 1;
    }
    if (build_pattern(&o)) {
        return 2;
    }
    if (o.nodes != 0 && world % o.nodes != 0) {
        fprintf(stderr,
                "ncclx-m2n-bench: --nodes %u does not divide the %u ranks of --pattern %s\n",
                o.nodes, world, o.pattern);
        return 2;
    }
    /* Staging: --staging-mb for every source rank (16 MiB: the most channels, 32 KiB slices). */
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    plan.m2n_staging_bytes = (uint64_t)(o.staging_mb * 1048576.0) / 16 * 16 * world;
    plan.m2n_max_group_entries = MAX_TENSORS;
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    config.num_ranks = world;
    config.num_nodes = o.nodes;
    CHECK_NCCLX(ncclxLoopbackInitConfig(&plan, &config, ctx));
    uint64_t dst_bytes = 0, max_local = 0;
    for (uint32_t e = 0; e < num_tensors; e++) {
        for (int k = 0; k < 2; k++) {
            uint64_t lr, lc;
            const uint64_t n = local_bytes(&tensors[e], k, &lr, &lc);
            for (uint32_t r = 0; r < world; r++) {
                if (shard_of(&tensors[e], k, r) >= 0) {
                    CHECK_CUDA(cudaMalloc((void **)&tensors[e].tile[k][r], n));
                    dst_bytes += k == 1 ? n : 0;
                }
            }
        }
    }
    for (uint32_t r = 0; r < world; r++) {
        CHECK_CUDA(cudaStreamCreateWithFlags(&stream[r], cudaStreamNonBlocking));
    }
    /* Every destination rank holds one tile of each tensor in these patterns. */
    for (uint32_t e = 0; e < num_tensors; e++) {
        uint64_t lr, lc;
        max_local += local_bytes(&tensors[e], 1, &lr, &lc);
    }
    const int check = o.check && dst_bytes <= (4ull << 30);
    if (fill(check)) {
        fprintf(stderr, "ncclx-m2n-bench: filling the tiles failed\n");
        return 1;
    }
    /* Graphs: each rank's calls captured once. */
    cudaGraphExec_t exec[MAX_RANKS];
    if (o.graph) {
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaStreamBeginCapture(stream[r], cudaStreamCaptureModeThreadLocal));
        }
        if (enqueue()) {
            return 1;
        }
        /* Every capture ends before any graph is instantiated (not allowed while this thread
         * captures). */
        cudaGraph_t g[MAX_RANKS];
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaStreamEndCapture(stream[r], &g[r]));
        }
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaGraphInstantiate(&exec[r], g[r], 0));
            CHECK_CUDA(cudaGraphDestroy(g[r]));
        }
    }
    cudaStream_t timer;
    cudaEvent_t *start = calloc(o.iters, sizeof(cudaEvent_t));
    cudaEvent_t *end = calloc((size_t)o.iters * world, sizeof(cudaEvent_t));
    double *ms = calloc(o.iters, sizeof(double));
    if (start == NULL || end == NULL || ms == NULL) {
        return 1;
    }
    CHECK_CUDA(cudaStreamCreateWithFlags(&timer, cudaStreamNonBlocking));
    for (uint32_t i = 0; i < o.iters; i++) {
        CHECK_CUDA(cudaEventCreate(&start[i]));
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaEventCreate(&end[(size_t)i * world + r]));
        }
    }
    for (uint32_t i = 0; i < o.warmup; i++) {
        for (uint32_t r = 0; o.graph && r < world; r++) {
            CHECK_CUDA(cudaGraphLaunch(exec[r], stream[r]));
        }
        if (!o.graph && enqueue()) {
            return 1;
        }
    }
    for (uint32_t r = 0; r < world; r++) {
        CHECK_CUDA(cudaStreamSynchronize(stream[r]));
    }
    uint64_t net_before = 0, net_after = 0, rank_before[MAX_RANKS], rank_after[MAX_RANKS];
    if (net_bytes(&net_before, rank_before)) {
        return 1;
    }
    /* Every timed reshard behind the gate: start on the timer stream, each rank waits for it
     * and records its end; the next start waits for every end. */
    CHECK_CUDA(cudaLaunchHostFunc(timer, gate, &open_gate));
    for (uint32_t i = 0; i < o.iters; i++) {
        for (uint32_t r = 0; i > 0 && r < world; r++) {
            CHECK_CUDA(cudaStreamWaitEvent(timer, end[(size_t)(i - 1) * world + r], 0));
        }
        CHECK_CUDA(cudaEventRecord(start[i], timer));
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaStreamWaitEvent(stream[r], start[i], 0));
        }
        for (uint32_t r = 0; o.graph && r < world; r++) {
            CHECK_CUDA(cudaGraphLaunch(exec[r], stream[r]));
        }
        if (!o.graph && enqueue()) {
            return 1;
        }
        for (uint32_t r = 0; r < world; r++) {
            CHECK_CUDA(cudaEventRecord(end[(size_t)i * world + r], stream[r]));
        }
    }
    __atomic_store_n(&open_gate, 1, __ATOMIC_RELEASE);
    for (uint32_t r = 0; r < world; r++) {
        CHECK_CUDA(cudaStreamSynchronize(stream[r]));
    }
    CHECK_CUDA(cudaStreamSynchronize(timer));
    if (net_bytes(&net_after, rank_after)) {
        return 1;
    }
    for (uint32_t i = 0; i < o.iters; i++) {
        ms[i] = 0;
        for (uint32_t r = 0; r < world; r++) {
            float t = 0;
            CHECK_CUDA(cudaEventElapsedTime(&t, start[i], end[(size_t)i * world + r]));
            ms[i] = t > ms[i] ? t : ms[i];
        }
    }
    qsort(ms, o.iters, sizeof(double), cmp_double);
    /* The roofline: one device copy of every destination byte, in one buffer pair. */
    void *a = NULL, *b = NULL;
    float copy_ms = 0;
    const uint64_t copy_bytes = dst_bytes > (8ull << 30) ? (8ull << 30) : dst_bytes;
    CHECK_CUDA(cudaMalloc(&a, copy_bytes));
    CHECK_CUDA(cudaMalloc(&b, copy_bytes));
    CHECK_CUDA(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, timer));
    CHECK_CUDA(cudaEventRecord(start[0], timer));
    for (int k = 0; k < 5; k++) {
        CHECK_CUDA(cudaMemcpyAsync(b, a, copy_bytes, cudaMemcpyDeviceToDevice, timer));
    }
    CHECK_CUDA(cudaEventRecord(end[0], timer));
    CHECK_CUDA(cudaEventSynchronize(end[0]));
    CHECK_CUDA(cudaEventElapsedTime(&copy_ms, start[0], end[0]));
    const double copy_per_byte = copy_ms / 5.0 / (double)copy_bytes;
    const double med = ms[o.iters / 2];
    const double roof_ms = copy_per_byte * (double)dst_bytes;
    uint64_t wrong = check ? verify() : 0;
    uint32_t async_error = 0;
    for (uint32_t r = 0; r < world; r++) {
        uint32_t err = 0;
        CHECK_NCCLX(ncclxM2nGetAsyncError(ctx[r], &err));
        async_error |= err;
    }
    uint64_t slice;
    uint32_t channels;
    ncclx_m2n_ring_shape(plan.m2n_staging_bytes, world, &slice, &channels);
    /* The path (the library's rule: tile to tile when every rank is on this GPU, unshaped,
     * and not forced STAGED) and its least HBM traffic. */
    const char *path_env = getenv("NCCLX_M2N_PATH");
    const int direct = o.nodes == 0 && (path_env == NULL || strcasecmp(path_env, "STAGED") != 0);
    const uint32_t per_node = o.nodes != 0 ? world / o.nodes : world;
    const uint64_t votes = (uint64_t)world * (world - per_node) * 8u;
    const uint64_t crossed = o.nodes > 1 ? (net_after - net_before) / o.iters : 0;
    const uint64_t payload = crossed > votes ? crossed - votes : 0;
    const uint64_t hbm = (direct ? 2 : 4) * dst_bytes + 2 * payload;
    const double hbm_pct = 100.0 * copy_per_byte / 2.0 * (double)hbm / med;
    char label[96];
    if (o.nodes != 0) {
        snprintf(label, sizeof(label), "one-GPU emulation: loopback %u as %u nodes x %u", world,
                 o.nodes, per_node);
    } else {
        snprintf(label, sizeof(label), "one-GPU emulation: loopback %u", world);
    }
    const char *path = direct ? "m2n direct" : o.nodes > 1 ? "m2n ring, network" : "m2n ring";
    printf("# ncclx-m2n-bench --pattern %s: %u ranks, %u tensor(s)%s; staging %.2f MiB per source "
           "rank: %u channels of %u x %llu-byte slices\n",
           o.pattern, world, num_tensors, o.graph ? ", graph replay" : "", o.staging_mb, channels,
           NCCLX_M2N_DEPTH, (unsigned long long)slice);
    printf("# rows: %s; path: %s%s\n", label, path,
           o.nodes > 1 ? " (other nodes only through the emulated network)" : "");
    printf("# %%hbm: the path's least HBM traffic (%s%s) at the copy's bandwidth / median\n",
           direct ? "2 x destination bytes" : "4 x destination bytes",
           o.nodes > 1 ? " + 2 x the payload that crossed nodes" : "");
    printf("# %14s %14s %10s %10s %10s %12s %8s %10s %6s\n", "dst_bytes/rank", "all_dst_bytes",
           "med_us", "min_us", "max_us", "GB/s/rank", "GB/s", "%roof", "%hbm");
    printf("  %14llu %14llu %10.2f %10.2f %10.2f %12.2f %8.2f %10.1f %6.1f\n",
           (unsigned long long)max_local, (unsigned long long)dst_bytes, med * 1e3, ms[0] * 1e3,
           ms[o.iters - 1] * 1e3, (double)max_local / (med * 1e6), (double)dst_bytes / (med * 1e6),
           100.0 * roof_ms / med, hbm_pct);
    if (o.csv != NULL) {
        FILE *f = fopen(o.csv, "a");
        if (f == NULL) {
            perror(o.csv);
            return 1;
        }
        fseek(f, 0, SEEK_END);
        if (ftell(f) == 0) {
            fprintf(f, "tool,label,ranks,nodes,pattern,tensors,graph,staging_mb,path,"
                       "dst_bytes_per_rank,all_dst_bytes,med_us,min_us,max_us,gbps_per_rank,"
                       "pct_roof,hbm_bytes,pct_hbm,crossed_bytes,wrong\n");
        }
        /* The label and the path are quoted: they may hold commas. */
        fprintf(
            f,
            "ncclx-m2n-bench,\"%s\",%u,%u,%s,%u,%d,%.2f,\"%s\",%llu,%llu,%.2f,%.2f,%.2f,%.2f,%.1f,"
            "%llu,%.1f,%llu,%s\n",
            label, world, o.nodes, o.pattern, num_tensors, o.graph, o.staging_mb, path,
            (unsigned long long)max_local, (unsigned long long)dst_bytes, med * 1e3, ms[0] * 1e3,
            ms[o.iters - 1] * 1e3, (double)max_local / (med * 1e6), 100.0 * roof_ms / med,
            (unsigned long long)hbm, hbm_pct, (unsigned long long)crossed,
            check ? (wrong == 0 ? "0" : "wrong") : "-");
        if (fclose(f) != 0) {
            perror(o.csv);
            return 1;
        }
    }
    printf("# check: %s; async errors: 0x%x\n",
           !o.check ? "off"
           : check  ? (wrong == 0 ? "every destination byte exact" : "WRONG BYTES")
                    : "skipped (over 4 GiB of destination tiles; tests/gpu/"
                      "test_m2n checks these shapes scaled down)",
           async_error);
    if (wrong != 0) {
        printf("# %llu destination bytes wrong\n", (unsigned long long)wrong);
    }
    if (o.nodes > 1) {
        /* votes: every launch of every rank puts its 8-byte vote to each rank of another
         * node. */
        uint64_t busiest = 0;
        for (uint32_t r = 0; r < world; r++) {
            const uint64_t sent = (rank_after[r] - rank_before[r]) / o.iters;
            busiest = sent > busiest ? sent : busiest;
        }
        const uint64_t least = least_crossing(per_node);
        printf("#   emulated network per reshard: %llu bytes crossed (%llu of them votes), least "
               "possible %llu (%.4fx); busiest rank %llu bytes, %.1f us at 50 GB/s\n",
               (unsigned long long)crossed, (unsigned long long)votes, (unsigned long long)least,
               least > 0 ? (double)crossed / (double)least : 0.0, (unsigned long long)busiest,
               (double)busiest / 50e3);
    }
    for (uint32_t r = 0; r < world; r++) {
        CHECK_NCCLX(ncclxFinalize(ctx[r]));
    }
    return wrong != 0 || async_error != 0;
}
