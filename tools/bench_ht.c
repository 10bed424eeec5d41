/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench HT expectations: what each rank sends and receives with the seed's routing
 * (include/ncclx/ep.h, "High throughput (HT)"), and nccl_ep's symmetric memory for the same
 * config.  As in bench_data.c, everything derives from the inputs, so one process can compute
 * any rank's rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* The token's distinct experts in [0, experts), in top-k order, each with the k of its first
 * listing (e and k_of hold NCCLX_EP_MAX_HT_TOPK entries); returns how many. */
static uint32_t bench_ht_experts(const bench_inputs_t *in, uint32_t src, uint32_t token,
                                 uint32_t *e, uint32_t *k_of)
{
    const int64_t *idx = in->topk_idx + ((size_t)src * in->tokens + token) * in->topk;
    uint32_t n = 0;
    for (uint32_t k = 0; k < in->topk && k < NCCLX_EP_MAX_HT_TOPK; k++) {
        int seen = idx[k] < 0 || idx[k] >= (int64_t)in->experts;
        for (uint32_t i = 0; i < n && !seen; i++) {
            seen = e[i] == (uint32_t)idx[k];
        }
        if (!seen) {
            e[n] = (uint32_t)idx[k];
            k_of[n++] = k;
        }
    }
    return n;
}

uint32_t bench_ht_token_rows(const bench_inputs_t *in, uint32_t layout, uint32_t src,
                             uint32_t token)
{
    const uint32_t L = in->experts / in->ranks;
    uint32_t e[NCCLX_EP_MAX_HT_TOPK], k_of[NCCLX_EP_MAX_HT_TOPK], rows = 0;
    uint32_t n = bench_ht_experts(in, src, token, e, k_of);
    if (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        return n;
    }
    for (uint32_t i = 0; i < n; i++) { /* count each destination rank at its first expert */
        int first = 1;
        for (uint32_t j = 0; j < i; j++) {
            first &= e[j] / L != e[i] / L;
        }
        rows += (uint32_t)first;
    }
    return rows;
}

uint64_t bench_ht_sent_rows(const bench_inputs_t *in, uint32_t layout, uint32_t rank, uint32_t n)
{
    uint64_t rows = 0;
    for (uint32_t t = 0; t < n; t++) {
        rows += bench_ht_token_rows(in, layout, rank, t);
    }
    return rows;
}

/* counts[a] (zeroed by the caller, [L]) += the tokens hitting local expert a of rank; returns
 * the tokens with at least one expert on rank. */
static uint64_t bench_ht_count(const bench_inputs_t *in, uint32_t rank, uint32_t n, int64_t *counts)
{
    const uint32_t L = in->experts / in->ranks;
    uint64_t tokens = 0;
    for (uint32_t s = 0; s < in->ranks; s++) {
        for (uint32_t t = 0; t < n; t++) {
            uint32_t e[NCCLX_EP_MAX_HT_TOPK], k_of[NCCLX_EP_MAX_HT_TOPK], here = 0;
            uint32_t ne = bench_ht_experts(in, s, t, e, k_of);
            for (uint32_t i = 0; i < ne; i++) {
                if (e[i] / L == rank) {
                    counts[e[i] - rank * L]++;
                    here = 1;
                }
            }
            tokens += here;
        }
    }
    return tokens;
}

static int64_t bench_ht_pad(int64_t rows, uint32_t alignment)
{
    const int64_t a = alignment > 1 ? alignment : 1;
    return (rows + a - 1) / a * a;
}

uint64_t bench_ht_recv_rows(const bench_inputs_t *in, uint32_t layout, uint32_t alignment,
                            uint32_t rank, uint32_t n)
{
    const uint32_t L = in->experts / in->ranks;
    int64_t *counts = calloc(L, sizeof(*counts));
    uint64_t rows;
    if (counts == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the receive counts\n");
        return UINT64_MAX;
    }
    rows = bench_ht_count(in, rank, n, counts);
    if (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        rows = 0;
        for (uint32_t a = 0; a < L; a++) {
            rows += (uint64_t)bench_ht_pad(counts[a], alignment);
        }
    }
    free(counts);
    return rows;
}

/* Expert-major rows: each (token, local expert) pair at its zone's next row; pads stay. */
static void bench_ht_fill_zones(const bench_inputs_t *in, uint32_t rank, uint32_t n,
                                bench_ht_map_t *map, int64_t *next)
{
    const uint32_t L = in->experts / in->ranks;
    for (uint32_t j = 0; j < map->rows; j++) {
        map->src[j] = BENCH_HT_PAD;
        map->weights[j] = 0.0f;
    }
    memcpy(next, map->offsets, L * sizeof(*next));
    for (uint32_t s = 0; s < in->ranks; s++) {
        for (uint32_t t = 0; t < n; t++) {
            const float *w = in->weights + ((size_t)s * in->tokens + t) * in->topk;
            uint32_t e[NCCLX_EP_MAX_HT_TOPK], k_of[NCCLX_EP_MAX_HT_TOPK];
            uint32_t ne = bench_ht_experts(in, s, t, e, k_of);
            for (uint32_t i = 0; i < ne; i++) {
                if (e[i] / L == rank) {
                    int64_t j = next[e[i] - rank * L]++;
                    map->src[j] = s * in->tokens + t;
                    map->weights[j] = w[k_of[i]];
                }
            }
        }
    }
}

/* Flat rows: one per token that hits rank, its experts here ascending (local ids). */
static void bench_ht_fill_flat(const bench_inputs_t *in, uint32_t rank, uint32_t n,
                               bench_ht_map_t *map)
{
    const uint32_t L = in->experts / in->ranks, K = in->topk;
    uint32_t j = 0;
    for (uint32_t s = 0; s < in->ranks; s++) {
        for (uint32_t t = 0; t < n; t++) {
            const float *w = in->weights + ((size_t)s * in->tokens + t) * K;
            uint32_t e[NCCLX_EP_MAX_HT_TOPK], k_of[NCCLX_EP_MAX_HT_TOPK], here = 0;
            uint32_t ne = bench_ht_experts(in, s, t, e, k_of);
            int32_t *ids = map->ids + (size_t)j * K;
            float *ws = map->weights + (size_t)j * K;
            for (uint32_t i = 0; i < ne; i++) {
                const int32_t id = (int32_t)e[i] - (int32_t)(rank * L);
                uint32_t at;
                if (e[i] / L != rank) {
                    continue;
                }
                for (at = here++; at > 0 && ids[at - 1] > id; at--) { /* ascending ids */
                    ids[at] = ids[at - 1];
                    ws[at] = ws[at - 1];
                }
                ids[at] = id;
                ws[at] = w[k_of[i]];
            }
            if (here == 0) {
                continue;
            }
            for (uint32_t k = here; k < K; k++) {
                ids[k] = -1;
                ws[k] = 0.0f;
            }
            map->src[j++] = s * in->tokens + t;
        }
    }
}

int bench_ht_map_build(const bench_inputs_t *in, uint32_t layout, uint32_t alignment, uint32_t rank,
                       uint32_t n, bench_ht_map_t *map)
{
    const uint32_t L = in->experts / in->ranks;
    const int em = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    const size_t per_row = em ? 1 : in->topk;
    int64_t *next = NULL;
    uint64_t rows;
    memset(map, 0, sizeof(*map));
    map->counts = calloc(L, sizeof(*map->counts));
    map->offsets = calloc((size_t)L + 1, sizeof(*map->offsets));
    if (map->counts == NULL || map->offsets == NULL) {
        goto err_free;
    }
    rows = bench_ht_count(in, rank, n, map->counts);
    if (em) {
        rows = 0;
        for (uint32_t a = 0; a < L; a++) {
            map->counts[a] = bench_ht_pad(map->counts[a], alignment);
            map->offsets[a] = (int64_t)rows;
            rows += (uint64_t)map->counts[a];
        }
        map->offsets[L] = (int64_t)rows;
    }
    if (rows > INT32_MAX) {
        fprintf(stderr, "ncclx-bench: rank %u would receive %llu rows\n", rank,
                (unsigned long long)rows);
        bench_ht_map_free(map);
        return -1;
    }
    map->rows = (uint32_t)rows;
    map->src = malloc(((size_t)rows + 1) * sizeof(*map->src));
    map->weights = malloc(((size_t)rows + 1) * per_row * sizeof(*map->weights));
    map->ids = em ? NULL : malloc(((size_t)rows + 1) * in->topk * sizeof(*map->ids));
    next = em ? malloc(L * sizeof(*next)) : NULL;
    if (map->src == NULL || map->weights == NULL || (em ? next == NULL : map->ids == NULL)) {
        goto err_free;
    }
    if (em) {
        bench_ht_fill_zones(in, rank, n, map, next);
    } else {
        bench_ht_fill_flat(in, rank, n, map);
    }
    free(next);
    return 0;
err_free:
    fprintf(stderr, "ncclx-bench: out of host memory for the expected rows\n");
    free(next);
    bench_ht_map_free(map);
    return -1;
}

void bench_ht_map_free(bench_ht_map_t *map)
{
    free(map->counts);
    free(map->offsets);
    free(map->src);
    free(map->ids);
    free(map->weights);
    memset(map, 0, sizeof(*map));
}

float bench_ht_weight_grad(const bench_inputs_t *in, uint32_t src, uint32_t token, uint32_t k)
{
    uint32_t e[NCCLX_EP_MAX_HT_TOPK], k_of[NCCLX_EP_MAX_HT_TOPK];
    uint32_t ne = bench_ht_experts(in, src, token, e, k_of);
    for (uint32_t i = 0; i < ne; i++) {
        if (k_of[i] == k) { /* a first listing: its weight came back */
            return in->weights[((size_t)src * in->tokens + token) * in->topk + k];
        }
    }
    return 0.0f;
}

static uint64_t bench_a256(uint64_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/*
 * nccl_ep's intra-team (NVLink) HT buffers, each rounded up to 256 bytes, with B = row_bytes
 * and every expert in the one load/store team: dispatch staging R*T*B, dispatch
 * probabilities S*E*4, dispatch scale staging S*B, combine staging R*T*B, combine
 * probabilities S*E*4.
 */
uint64_t bench_ht_nccl_ep_bytes(uint32_t ranks, uint32_t tokens, uint32_t experts,
                                uint32_t recv_rows, size_t row_bytes)
{
    const uint64_t staging = bench_a256((uint64_t)ranks * tokens * row_bytes);
    const uint64_t prob = bench_a256((uint64_t)recv_rows * experts * 4);
    return staging + prob + bench_a256((uint64_t)recv_rows * row_bytes) + staging + prob;
}
