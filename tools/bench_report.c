/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench rows against their physical ceiling, and where they are written.
 *
 * %roof compares an operation with a device copy of its logical bytes, but a copy moves two
 * bytes of HBM traffic per counted byte while dispatch reads a token once for several
 * destinations and combine writes one output for several rows, so one path can read above 100%
 * and another far below with the same efficiency.  %hbm instead counts the least HBM traffic
 * the operation's path must make (each token read once, each row written once per pass,
 * metadata and scales included; docs/performance.md, "How the ceiling is counted") and
 * compares it with the bandwidth the same run's copy reached.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

/* HT's direct path: every rank of the group on this GPU and not forced onto the staged path
 * (lib/ep/ep_ht.c; the library's rule, read from the same inputs). */
static int bench_ht_direct(const bench_team_t *t)
{
    const char *path = getenv("NCCLX_EP_HT_PATH");
    const int staged = path != NULL && strcasecmp(path, "STAGED") == 0;
    return !t->o.comm && t->o.nodes == 0 && !staged && t->ranks <= 64;
}

const char *bench_path_name(const bench_team_t *t, bench_op_t op)
{
    const bench_options_t *o = &t->o;
    if (op == BENCH_ROUTE) {
        return "routing";
    }
    if (op == BENCH_LAYER) {
        return "routing+dispatch+combine";
    }
    if (o->algo == NCCLX_EP_ALGO_LL) {
        if (o->zero_copy && op == BENCH_DISPATCH) {
            return "ll zero-copy";
        }
        if (op == BENCH_COMBINE && bench_ll_expert_out_in_rows(t)) {
            return "ll zero-copy pull"; /* the tokens' ranks read the expert rows in place */
        }
        return o->nodes > 1 ? "ll two-pass, network" : "ll two-pass";
    }
    if (op == BENCH_COMBINE && o->recipe == NCCLX_EP_RECIPE_MXFP8) {
        return "ht mxfp8 two-pass";
    }
    if (o->zero_copy) {
        return "ht zero-copy";
    }
    if (o->nodes > 1) {
        return "ht staged + relays, network";
    }
    return bench_ht_direct(t) ? "ht direct" : "ht staged";
}

/* Passes over the rows: 1 where each row is written once where it ends up, 3 where it is
 * written to the group's rows, read back and written again. */
static uint64_t bench_passes(const bench_team_t *t, bench_op_t op)
{
    if (t->o.algo == NCCLX_EP_ALGO_LL) {
        return op == BENCH_COMBINE && bench_ll_expert_out_in_rows(t) ? 1 : 3;
    }
    if (op == BENCH_COMBINE && t->o.recipe == NCCLX_EP_RECIPE_MXFP8) {
        return 3;
    }
    return t->o.zero_copy || bench_ht_direct(t) ? 1 : 3;
}

/* The least HBM bytes one local rank's operation reads and writes on its path. */
static uint64_t bench_rank_hbm(const bench_team_t *t, const bench_inputs_t *in, uint32_t rank,
                               uint32_t n, bench_op_t op)
{
    const bench_options_t *o = &t->o;
    const uint64_t H = o->hidden, K = o->topk, T = n, elem = bench_dtype_size(o->dtype);
    const uint64_t row = H * elem, passes = bench_passes(t, op);
    /* Rows per (token, destination rank) and per (token, expert) of this rank's tokens. */
    const uint64_t per_rank = bench_ht_sent_rows(in, NCCLX_EP_LAYOUT_FLAT, rank, n);
    const uint64_t per_expert = bench_valid_entries(in, rank, n);
    if (o->algo == NCCLX_EP_ALGO_LL) {
        const int expert_major = o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
        const uint64_t wire = o->recipe == NCCLX_EP_RECIPE_FP8 ? H + H / 128 * 4 : row;
        if (op == BENCH_DISPATCH) {
            /* Tokens and ids read; one message per (token, rank) written and read back; the
             * output rows (expert-major: per expert; rank-major: per rank, with ids and
             * weights) written.  Zero copy (either layout): each row written once, in place,
             * with no message in between. */
            const uint64_t out = expert_major ? per_expert * wire : per_rank * (wire + K * 8);
            return T * (row + K * 8) + (o->zero_copy ? 0 : 2 * per_rank * wire) + out;
        }
        /* Expert outputs read and written into the sources' combine rows, read back, one row
         * per token written; expert-major reads the weights.  Pulled (zero copy, expert_out in
         * the rows): each expert row read once, where the expert wrote it. */
        const uint64_t rows = expert_major ? per_expert : per_rank;
        return passes * rows * row + T * row + (expert_major ? T * K * 4 : 0);
    }
    const int flat = o->layout == NCCLX_EP_LAYOUT_FLAT;
    const int forward = o->pass == NCCLX_EP_PASS_FORWARD;
    const uint64_t rows = flat ? per_rank : per_expert;
    const uint64_t meta = forward ? (flat ? K * 8 : 4) : 0; /* received ids and weights */
    if (op == BENCH_DISPATCH) {
        return T * (row + (forward ? K * 4 : 0)) + passes * rows * row + rows * meta;
    }
    const uint64_t grads = forward ? 0 : rows * (flat ? K * 4 : 4) + T * K * 4;
    if (o->recipe == NCCLX_EP_RECIPE_MXFP8) {
        /* Expert rows read, one packed row per (token, rank) written and read, outputs. */
        return rows * row + 2 * per_rank * (H + H / 32) + T * row;
    }
    return passes * rows * row + T * row + grads;
}

uint64_t bench_hbm_bytes(const bench_team_t *t, const bench_inputs_t *in, uint32_t n, bench_op_t op)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        sum += bench_rank_hbm(t, in, t->r[i].rank, n, op);
    }
    return sum;
}

void bench_label(const bench_team_t *t, char *buf, size_t len)
{
    if (t->o.comm) {
        snprintf(buf, len, "real communicator: %u GPU(s), %u process(es)", t->ranks, t->ranks);
    } else if (t->o.nodes != 0) {
        snprintf(buf, len, "one-GPU emulation: loopback %u as %u nodes x %u", t->ranks, t->o.nodes,
                 t->ranks / t->o.nodes);
    } else {
        snprintf(buf, len, "one-GPU emulation: loopback %u", t->ranks);
    }
}

int bench_csv_row(const bench_team_t *t, const bench_csv_t *row)
{
    const bench_options_t *o = &t->o;
    char label[96];
    FILE *f;
    long size;
    if (o->csv == NULL) {
        return 0;
    }
    f = fopen(o->csv, "a");
    if (f == NULL) {
        perror(o->csv);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    bench_label(t, label, sizeof(label));
    if (size == 0) {
        fprintf(f, "tool,label,ranks,nodes,algo,layout,pass,recipe,dtype,experts,hidden,topk,"
                   "graph,tokens,op,path,bytes_per_rank,med_us,min_us,max_us,gbps_per_rank,"
                   "pct_roof,hbm_bytes,pct_hbm,wrong\n");
    }
    /* The label and the path are quoted: they hold commas ("ht staged + relays, network"). */
    fprintf(f,
            "ncclx-bench,\"%s\",%u,%u,%s,%s,%s,%s,%s,%u,%u,%u,%d,%u,%s,\"%s\",%" PRIu64
            ",%.2f,%.2f,%.2f,%.2f,%.1f,%" PRIu64 ",%.1f,%s\n",
            label, t->ranks, o->nodes, o->algo == NCCLX_EP_ALGO_HT ? "ht" : "ll",
            o->layout == NCCLX_EP_LAYOUT_FLAT           ? "flat"
            : o->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? "expert"
                                                        : "rank",
            o->pass == NCCLX_EP_PASS_BACKWARD ? "bwd" : "fwd",
            o->recipe == NCCLX_EP_RECIPE_FP8     ? "fp8"
            : o->recipe == NCCLX_EP_RECIPE_MXFP8 ? "mxfp8"
                                                 : "none",
            bench_dtype_name(o->dtype), o->experts, o->hidden, o->topk, o->graph, t->tokens,
            row->op, row->path, row->bytes, row->stats.median_us, row->stats.min_us,
            row->stats.max_us,
            row->bytes > 0 ? (double)row->bytes / (row->stats.median_us * 1e3) : 0.0, row->pct_roof,
            row->hbm_bytes, row->pct_hbm, row->wrong);
    if (fclose(f) != 0) {
        perror(o->csv);
        return -1;
    }
    return 0;
}
