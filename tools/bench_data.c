/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench inputs and expected values.  Everything derives from the seed, so one process
 * of a multi-process job can compute what every other rank sends without talking to it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static uint64_t bench_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t bench_next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return bench_mix64(*state);
}

/* Top-k distinct experts of one token, uniform (rejection: K is small next to E). */
static void bench_route_token(uint64_t *state, uint32_t experts, uint32_t topk, int64_t *idx,
                              float *w)
{
    for (uint32_t k = 0; k < topk; k++) {
        int64_t e;
        int again;
        do {
            e = (int64_t)(bench_next(state) % experts);
            again = 0;
            for (uint32_t j = 0; j < k; j++) {
                again |= idx[j] == e;
            }
        } while (again);
        idx[k] = e;
        w[k] = 0.05f + 0.95f * (float)(bench_next(state) >> 40) / (float)(1ull << 24);
    }
}

int bench_inputs_make(const bench_options_t *o, uint32_t ranks, bench_inputs_t *in)
{
    size_t entries = (size_t)ranks * o->tokens * o->topk;
    memset(in, 0, sizeof(*in));
    in->ranks = ranks;
    in->tokens = o->tokens;
    in->topk = o->topk;
    in->experts = o->experts;
    in->hidden = o->hidden;
    in->seed = o->seed;
    in->topk_idx = malloc(entries * sizeof(*in->topk_idx));
    in->weights = malloc(entries * sizeof(*in->weights));
    if (in->topk_idx == NULL || in->weights == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the routing\n");
        bench_inputs_free(in);
        return -1;
    }
    for (uint32_t s = 0; s < ranks; s++) {
        /* One stream of numbers per rank: a rank's first n tokens do not depend on T. */
        uint64_t state = bench_mix64(o->seed ^ bench_mix64(s + 1));
        for (uint32_t t = 0; t < o->tokens; t++) {
            size_t at = ((size_t)s * o->tokens + t) * o->topk;
            bench_route_token(&state, o->experts, o->topk, in->topk_idx + at, in->weights + at);
        }
    }
    return 0;
}

void bench_inputs_free(bench_inputs_t *in)
{
    free(in->topk_idx);
    free(in->weights);
    in->topk_idx = NULL;
    in->weights = NULL;
}

float bench_token_value(const bench_inputs_t *in, uint32_t rank, uint32_t token, uint32_t col)
{
    uint64_t key = ((uint64_t)rank << 40) ^ ((uint64_t)token << 20) ^ col;
    int k = (int)(bench_mix64(in->seed * 0x2545f4914f6cdd1dull + key) >> 56) - 128;
    return (float)k / 64.0f;
}

uint64_t bench_valid_entries(const bench_inputs_t *in, uint32_t rank, uint32_t n)
{
    const int64_t *idx = in->topk_idx + (size_t)rank * in->tokens * in->topk;
    uint64_t valid = 0;
    for (size_t i = 0; i < (size_t)n * in->topk; i++) {
        valid += idx[i] >= 0;
    }
    return valid;
}

/* Whether one of token t's entries (first n tokens of rank) has its expert on rank d. */
static uint32_t bench_entries_on(const bench_inputs_t *in, uint32_t rank, uint32_t t, uint32_t d)
{
    const int64_t *idx = in->topk_idx + ((size_t)rank * in->tokens + t) * in->topk;
    const uint32_t per_rank = in->experts / in->ranks;
    uint32_t on = 0;
    for (uint32_t k = 0; k < in->topk; k++) {
        on += idx[k] >= 0 && (uint32_t)idx[k] / per_rank == d;
    }
    return on;
}

void bench_remote_rows(const bench_inputs_t *in, uint32_t rank, uint32_t n, uint32_t per_node,
                       int expert_major, uint64_t *dispatch, uint64_t *combine)
{
    *dispatch = *combine = 0;
    for (uint32_t d = 0; d < in->ranks; d++) {
        if (d / per_node == rank / per_node) {
            continue;
        }
        for (uint32_t t = 0; t < n; t++) {
            const uint32_t to = bench_entries_on(in, rank, t, d);
            const uint32_t back = bench_entries_on(in, d, t, rank);
            *dispatch += to > 0;
            *combine += expert_major ? back : back > 0;
        }
    }
}

void bench_remote_nodes(const bench_inputs_t *in, uint32_t rank, uint32_t n, uint32_t per_node,
                        uint64_t *pairs)
{
    *pairs = 0;
    for (uint32_t node = 0; node < in->ranks / per_node; node++) {
        if (node == rank / per_node) {
            continue;
        }
        for (uint32_t t = 0; t < n; t++) {
            uint32_t on = 0;
            for (uint32_t d = node * per_node; d < (node + 1) * per_node; d++) {
                on += bench_entries_on(in, rank, t, d);
            }
            *pairs += on > 0;
        }
    }
}

/* ---- element types ---- */

size_t bench_dtype_size(ncclxDataType_t dtype)
{
    return dtype == NCCLX_FLOAT32 ? 4 : dtype == NCCLX_FP8_E4M3 ? 1 : 2;
}

const char *bench_dtype_name(ncclxDataType_t dtype)
{
    return dtype == NCCLX_BFLOAT16 ? "bf16" : dtype == NCCLX_FLOAT16 ? "fp16" : "fp32";
}

static uint16_t bench_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((x >> 16) | 0x40u);
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static float bench_bf16_to_float(uint16_t v)
{
    uint32_t x = (uint32_t)v << 16;
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

/* kept plus the rounding of the dropped bits rest (half: their midpoint), to nearest even; the
 * carry may reach the exponent. */
static uint16_t bench_round_bits(uint32_t kept, uint32_t rest, uint32_t half)
{
    if (rest > half || (rest == half && (kept & 1u))) {
        kept++;
    }
    return (uint16_t)kept;
}

static uint16_t bench_float_to_fp16(float f)
{
    uint32_t x, sign, absx, mant;
    int e;
    memcpy(&x, &f, sizeof(x));
    sign = (x >> 16) & 0x8000u;
    absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) {
        return (uint16_t)(sign | 0x7e00u);
    }
    if (absx >= 0x477ff000u) { /* 65520 and above round to infinity */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (absx < 0x33000000u) { /* below 2^-25: zero */
        return (uint16_t)sign;
    }
    e = (int)(absx >> 23) - 127;
    mant = (absx & 0x7fffffu) | 0x800000u;
    if (e < -14) { /* subnormal: units of 2^-24 */
        uint32_t shift = (uint32_t)(-e - 1);
        return (uint16_t)(sign | bench_round_bits(mant >> shift, mant & ((1u << shift) - 1u),
                                                  1u << (shift - 1u)));
    }
    return (uint16_t)(sign | bench_round_bits(((uint32_t)(e + 15) << 10) | ((mant >> 13) & 0x3ffu),
                                              mant & 0x1fffu, 0x1000u));
}

static float bench_fp16_to_float(uint16_t h)
{
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24);
    } else if (exp == 31) {
        f = man != 0 ? NAN : INFINITY;
    } else {
        f = ldexpf((float)(man | 0x400u), (int)exp - 25);
    }
    return (h & 0x8000u) ? -f : f;
}

void bench_store(void *p, size_t i, ncclxDataType_t dtype, double v)
{
    if (dtype == NCCLX_BFLOAT16) {
        ((uint16_t *)p)[i] = bench_float_to_bf16((float)v);
    } else if (dtype == NCCLX_FLOAT16) {
        ((uint16_t *)p)[i] = bench_float_to_fp16((float)v);
    } else {
        ((float *)p)[i] = (float)v;
    }
}

double bench_load(const void *p, size_t i, ncclxDataType_t dtype)
{
    if (dtype == NCCLX_BFLOAT16) {
        return bench_bf16_to_float(((const uint16_t *)p)[i]);
    }
    if (dtype == NCCLX_FLOAT16) {
        return bench_fp16_to_float(((const uint16_t *)p)[i]);
    }
    return ((const float *)p)[i];
}

double bench_round(double v, ncclxDataType_t dtype)
{
    if (dtype == NCCLX_BFLOAT16) {
        return bench_bf16_to_float(bench_float_to_bf16((float)v));
    }
    if (dtype == NCCLX_FLOAT16) {
        return bench_fp16_to_float(bench_float_to_fp16((float)v));
    }
    return (float)v;
}

float bench_e4m3_to_float(uint8_t v)
{
    uint32_t exp = (v >> 3) & 0xfu, man = v & 7u;
    float f;
    if (exp == 0xfu && man == 7u) {
        return NAN;
    }
    f = exp == 0 ? ldexpf((float)man, -9) : ldexpf((float)(8u + man), (int)exp - 10);
    return (v & 0x80u) ? -f : f;
}

/* ---- what each rank receives and returns ---- */

int bench_map_build(const bench_inputs_t *in, uint32_t layout, uint32_t rank, uint32_t n,
                    bench_map_t *map)
{
    const uint32_t L = in->experts / in->ranks, T = in->tokens;
    const int em = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    map->slabs = em ? L : in->ranks;
    map->slab_rows = em ? in->ranks * T : T;
    map->count = calloc(map->slabs, sizeof(*map->count));
    map->src = malloc((size_t)map->slabs * map->slab_rows * sizeof(*map->src));
    if (map->count == NULL || map->src == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for the expected rows\n");
        bench_map_free(map);
        return -1;
    }
    for (uint32_t s = 0; s < in->ranks; s++) {
        for (uint32_t t = 0; t < n; t++) {
            const int64_t *idx = in->topk_idx + ((size_t)s * T + t) * in->topk;
            int here = 0;
            for (uint32_t k = 0; k < in->topk; k++) {
                if (idx[k] < 0 || (uint32_t)(idx[k] / L) != rank) {
                    continue;
                }
                here = 1;
                if (em) { /* (s, t) order: s outer, t inner */
                    uint32_t a = (uint32_t)idx[k] - rank * L;
                    map->src[(size_t)a * map->slab_rows + (uint32_t)map->count[a]++] = s * T + t;
                }
            }
            if (!em && here) {
                map->src[(size_t)s * map->slab_rows + (uint32_t)map->count[s]++] = s * T + t;
            }
        }
    }
    return 0;
}

void bench_map_free(bench_map_t *map)
{
    free(map->count);
    free(map->src);
    map->count = NULL;
    map->src = NULL;
}

double bench_expert_value(const bench_inputs_t *in, uint32_t layout, ncclxDataType_t dtype,
                          uint32_t rank, uint32_t src, uint32_t token, uint32_t col)
{
    const uint32_t L = in->experts / in->ranks;
    const size_t at = ((size_t)src * in->tokens + token) * in->topk;
    double x = bench_token_value(in, src, token, col), acc = 0.0;
    if (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        return x;
    }
    for (uint32_t k = 0; k < in->topk; k++) {
        if (in->topk_idx[at + k] >= 0 && (uint32_t)(in->topk_idx[at + k] / L) == rank) {
            acc += (double)in->weights[at + k] * x;
        }
    }
    return bench_round(acc, dtype);
}

double bench_combine_value(const bench_inputs_t *in, uint32_t layout, int rows_are_outputs,
                           ncclxDataType_t dtype, uint32_t src, uint32_t token, uint32_t col,
                           double *mag)
{
    const uint32_t L = in->experts / in->ranks;
    const size_t at = ((size_t)src * in->tokens + token) * in->topk;
    const int64_t *idx = in->topk_idx + at;
    uint32_t dests[NCCLX_EP_MAX_TOPK], nd = 0;
    double x = bench_token_value(in, src, token, col), sum = 0.0;
    *mag = 0.0;
    if (layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        for (uint32_t k = 0; k < in->topk; k++) {
            if (idx[k] >= 0) {
                sum += (double)in->weights[at + k] * x;
                *mag += fabs((double)in->weights[at + k] * x);
            }
        }
        return sum;
    }
    /* Rank-major: one pre-weighted row per destination rank, added in rank order. */
    for (uint32_t k = 0; k < in->topk; k++) {
        uint32_t d = idx[k] >= 0 ? (uint32_t)(idx[k] / L) : UINT32_MAX, j = nd;
        int seen = 0;
        for (uint32_t i = 0; i < nd; i++) {
            seen |= dests[i] == d;
        }
        if (d == UINT32_MAX || seen) {
            continue;
        }
        while (j > 0 && dests[j - 1] > d) {
            dests[j] = dests[j - 1];
            j--;
        }
        dests[j] = d;
        nd++;
    }
    for (uint32_t i = 0; i < nd; i++) {
        double v =
            rows_are_outputs ? x : bench_expert_value(in, layout, dtype, dests[i], src, token, col);
        sum += v;
        *mag += fabs(v);
    }
    return sum;
}
