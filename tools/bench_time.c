/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-bench timing.  An operation is timed from one start event, recorded on a timer stream
 * that every rank's stream then waits on, to each rank's end event; its time is that of the
 * slowest rank.  The timer stream waits on every end event before the next start, so
 * operations never overlap.  Iterations are enqueued in chunks behind a gate (a host function
 * on the timer stream that returns once the whole chunk is enqueued), so the GPU never waits
 * for the host in a timed interval: with a loopback team, the ranks' launches follow one
 * another on the host and would otherwise be measured as well.  With --rank-starts an event on
 * each rank's stream just before its operation also says when that stream got to it, and each
 * operation's first and last rank starts and first end are kept besides its time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define BENCH_CHUNK 16u /* iterations enqueued behind one gate */

typedef struct {
    cudaEvent_t start[BENCH_CHUNK][BENCH_NUM_OPS];
    cudaEvent_t *end;   /* [BENCH_CHUNK][BENCH_NUM_OPS][nlocal] */
    cudaEvent_t *begin; /* --rank-starts: as end, recorded before each rank's operation */
    size_t num_end;
    int open; /* the gate, read by bench_gate on CUDA's callback thread */
} bench_events_t;

static void CUDART_CB bench_gate(void *arg)
{
    const int *open = arg;
    const struct timespec pause = {0, 2000};
    while (!__atomic_load_n(open, __ATOMIC_ACQUIRE)) {
        nanosleep(&pause, NULL);
    }
}

static void bench_events_destroy(bench_events_t *ev)
{
    for (uint32_t s = 0; s < BENCH_CHUNK; s++) {
        for (int op = 0; op < BENCH_NUM_OPS; op++) {
            if (ev->start[s][op] != NULL) {
                (void)cudaEventDestroy(ev->start[s][op]);
            }
        }
    }
    for (size_t e = 0; ev->end != NULL && e < ev->num_end; e++) {
        if (ev->end[e] != NULL) {
            (void)cudaEventDestroy(ev->end[e]);
        }
        if (ev->begin != NULL && ev->begin[e] != NULL) {
            (void)cudaEventDestroy(ev->begin[e]);
        }
    }
    free(ev->end);
    free(ev->begin);
    memset(ev, 0, sizeof(*ev));
}

static int bench_events_create(const bench_team_t *t, bench_events_t *ev)
{
    memset(ev, 0, sizeof(*ev));
    ev->num_end = (size_t)BENCH_CHUNK * BENCH_NUM_OPS * t->nlocal;
    ev->end = calloc(ev->num_end, sizeof(*ev->end));
    ev->begin = t->o.rank_starts ? calloc(ev->num_end, sizeof(*ev->begin)) : NULL;
    if (ev->end == NULL || (t->o.rank_starts && ev->begin == NULL)) {
        fprintf(stderr, "ncclx-bench: out of host memory for events\n");
        return -1;
    }
    for (uint32_t s = 0; s < BENCH_CHUNK; s++) {
        for (int op = 0; op < BENCH_NUM_OPS; op++) {
            BENCH_CUDA(cudaEventCreate(&ev->start[s][op]), "cudaEventCreate", -1);
        }
    }
    for (size_t e = 0; e < ev->num_end; e++) {
        BENCH_CUDA(cudaEventCreate(&ev->end[e]), "cudaEventCreate", -1);
        if (ev->begin != NULL) {
            BENCH_CUDA(cudaEventCreate(&ev->begin[e]), "cudaEventCreate", -1);
        }
    }
    return 0;
}

static cudaEvent_t *bench_ends(bench_events_t *ev, const bench_team_t *t, uint32_t slot, int op)
{
    return ev->end + ((size_t)slot * BENCH_NUM_OPS + (size_t)op) * t->nlocal;
}

/* --rank-starts: the events before each rank's operation (NULL without the option). */
static cudaEvent_t *bench_begins(bench_events_t *ev, const bench_team_t *t, uint32_t slot, int op)
{
    return ev->begin == NULL ? NULL
                             : ev->begin + ((size_t)slot * BENCH_NUM_OPS + (size_t)op) * t->nlocal;
}

/* --rank-starts: per operation and timed iteration, the first and last rank's start and the
 * first rank's end, in us after the operation's start. */
typedef struct {
    double *first_begin[BENCH_NUM_OPS], *last_begin[BENCH_NUM_OPS], *first_end[BENCH_NUM_OPS];
} bench_rank_samples_t;

/* Holds the timer stream (and so every rank's next operation) until bench_gate_open. */
static int bench_gate_close(bench_team_t *t, bench_events_t *ev)
{
    if (t->o.no_gate) {
        return 0;
    }
    __atomic_store_n(&ev->open, 0, __ATOMIC_RELEASE);
    BENCH_CUDA(cudaLaunchHostFunc(t->timer, bench_gate, &ev->open), "cudaLaunchHostFunc", -1);
    return 0;
}

static void bench_gate_open(bench_events_t *ev)
{
    __atomic_store_n(&ev->open, 1, __ATOMIC_RELEASE);
}

/* One operation on every local rank, between the common start and the ranks' ends. */
static int bench_enqueue_op(bench_team_t *t, bench_events_t *ev, uint32_t slot, bench_op_t op)
{
    cudaEvent_t start = ev->start[slot][op];
    cudaEvent_t *end = bench_ends(ev, t, slot, op), *begin = bench_begins(ev, t, slot, op);
    BENCH_CUDA(cudaEventRecord(start, t->timer), "cudaEventRecord", -1);
    if (t->team_graphs[op] != NULL) { /* --team-graph: every rank ends with the graph */
        BENCH_CUDA(cudaStreamWaitEvent(t->r[0].stream, start, 0), "cudaStreamWaitEvent",
                   t->r[0].rank);
        BENCH_CUDA(cudaGraphLaunch(t->team_graphs[op], t->r[0].stream), "cudaGraphLaunch",
                   t->r[0].rank);
        for (uint32_t i = 0; i < t->nlocal; i++) {
            BENCH_CUDA(cudaEventRecord(end[i], t->r[0].stream), "cudaEventRecord", t->r[0].rank);
        }
    }
    for (uint32_t i = 0; t->team_graphs[op] == NULL && i < t->nlocal; i++) {
        BENCH_CUDA(cudaStreamWaitEvent(t->r[i].stream, start, 0), "cudaStreamWaitEvent",
                   t->r[i].rank);
        if (begin != NULL) {
            BENCH_CUDA(cudaEventRecord(begin[i], t->r[i].stream), "cudaEventRecord", t->r[i].rank);
        }
        if (bench_team_enqueue(t, i, op) != 0) {
            return -1;
        }
        BENCH_CUDA(cudaEventRecord(end[i], t->r[i].stream), "cudaEventRecord", t->r[i].rank);
    }
    for (uint32_t i = 0; i < t->nlocal; i++) {
        BENCH_CUDA(cudaStreamWaitEvent(t->timer, end[i], 0), "cudaStreamWaitEvent", -1);
    }
    return 0;
}

/* --rank-starts: iteration `at`'s first and last rank start and first rank end of slot's op. */
static int bench_rank_sample(bench_team_t *t, bench_events_t *ev, uint32_t slot, int op,
                             bench_rank_samples_t *rs, uint32_t at)
{
    cudaEvent_t *end = bench_ends(ev, t, slot, op), *begin = bench_begins(ev, t, slot, op);
    double first_begin = 0, last_begin = 0, first_end = 0;
    for (uint32_t i = 0; i < t->nlocal; i++) {
        float b = 0.0f, e = 0.0f;
        BENCH_CUDA(cudaEventElapsedTime(&b, ev->start[slot][op], begin[i]), "cudaEventElapsedTime",
                   t->r[i].rank);
        BENCH_CUDA(cudaEventElapsedTime(&e, ev->start[slot][op], end[i]), "cudaEventElapsedTime",
                   t->r[i].rank);
        first_begin = i == 0 || b * 1e3 < first_begin ? b * 1e3 : first_begin;
        last_begin = i == 0 || b * 1e3 > last_begin ? b * 1e3 : last_begin;
        first_end = i == 0 || e * 1e3 < first_end ? e * 1e3 : first_end;
    }
    rs->first_begin[op][at] = first_begin;
    rs->last_begin[op][at] = last_begin;
    rs->first_end[op][at] = first_end;
    return 0;
}

/* n iterations behind one gate; their times (us, slowest rank) go to samples[op][first..], and
 * with --rank-starts the ranks' starts and first end to rs. */
static int bench_run_chunk(bench_team_t *t, bench_events_t *ev, uint32_t n, double **samples,
                           bench_rank_samples_t *rs, uint32_t first)
{
    int rc = bench_gate_close(t, ev);
    for (uint32_t slot = 0; slot < n && rc == 0; slot++) {
        for (int op = 0; op < bench_num_ops(t) && rc == 0; op++) {
            rc = bench_enqueue_op(t, ev, slot, (bench_op_t)op);
        }
    }
    bench_gate_open(ev); /* also after a failure */
    BENCH_CUDA(cudaStreamSynchronize(t->timer), "timed iterations", -1);
    if (rc != 0 || bench_team_async_errors(t) != 0) {
        return -1;
    }
    for (uint32_t slot = 0; samples != NULL && slot < n; slot++) {
        for (int op = 0; op < bench_num_ops(t); op++) {
            cudaEvent_t *end = bench_ends(ev, t, slot, op);
            float slowest = 0.0f;
            for (uint32_t i = 0; i < t->nlocal; i++) {
                float ms = 0.0f;
                BENCH_CUDA(cudaEventElapsedTime(&ms, ev->start[slot][op], end[i]),
                           "cudaEventElapsedTime", t->r[i].rank);
                slowest = ms > slowest ? ms : slowest;
            }
            samples[op][first + slot] = (double)slowest * 1000.0;
            if (rs != NULL && bench_rank_sample(t, ev, slot, op, rs, first + slot) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_stats(double *samples, uint32_t n, bench_stats_t *s)
{
    qsort(samples, n, sizeof(*samples), bench_cmp_double);
    s->min_us = samples[0];
    s->max_us = samples[n - 1];
    s->median_us = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

/* warmup untimed then iters timed iterations, chunk by chunk. */
static int bench_loop(bench_team_t *t, bench_events_t *ev, double **samples,
                      bench_rank_samples_t *rs)
{
    for (uint32_t done = 0; done < t->o.warmup;) {
        uint32_t n = t->o.warmup - done < BENCH_CHUNK ? t->o.warmup - done : BENCH_CHUNK;
        if (bench_run_chunk(t, ev, n, NULL, NULL, 0) != 0) {
            return -1;
        }
        done += n;
    }
    for (uint32_t done = 0; done < t->o.iters;) {
        uint32_t n = t->o.iters - done < BENCH_CHUNK ? t->o.iters - done : BENCH_CHUNK;
        if (bench_run_chunk(t, ev, n, samples, rs, done) != 0) {
            return -1;
        }
        done += n;
    }
    return 0;
}

static double bench_median(double *samples, uint32_t n)
{
    bench_stats_t s;
    bench_stats(samples, n, &s);
    return s.median_us;
}

int bench_time_ops(bench_team_t *t, bench_stats_t stats[BENCH_NUM_OPS])
{
    bench_events_t ev;
    double *samples[BENCH_NUM_OPS] = {NULL};
    bench_rank_samples_t rs;
    int rc = -1;
    memset(&rs, 0, sizeof(rs));
    if (bench_events_create(t, &ev) != 0) {
        goto out;
    }
    for (int op = 0; op < bench_num_ops(t); op++) {
        samples[op] = malloc(t->o.iters * sizeof(double));
        if (t->o.rank_starts) {
            rs.first_begin[op] = malloc(t->o.iters * sizeof(double));
            rs.last_begin[op] = malloc(t->o.iters * sizeof(double));
            rs.first_end[op] = malloc(t->o.iters * sizeof(double));
        }
        if (samples[op] == NULL ||
            (t->o.rank_starts && (rs.first_begin[op] == NULL || rs.last_begin[op] == NULL ||
                                  rs.first_end[op] == NULL))) {
            fprintf(stderr, "ncclx-bench: out of host memory for samples\n");
            goto out;
        }
    }
    if (bench_loop(t, &ev, samples, t->o.rank_starts ? &rs : NULL) == 0) {
        for (int op = 0; op < bench_num_ops(t); op++) {
            bench_stats(samples[op], t->o.iters, &stats[op]);
            stats[op].first_start_us = stats[op].last_start_us = stats[op].first_end_us = -1.0;
            if (t->o.rank_starts) {
                stats[op].first_start_us = bench_median(rs.first_begin[op], t->o.iters);
                stats[op].last_start_us = bench_median(rs.last_begin[op], t->o.iters);
                stats[op].first_end_us = bench_median(rs.first_end[op], t->o.iters);
            }
        }
        rc = 0;
    }
out:
    bench_events_destroy(&ev);
    for (int op = 0; op < BENCH_NUM_OPS; op++) {
        free(samples[op]);
        free(rs.first_begin[op]);
        free(rs.last_begin[op]);
        free(rs.first_end[op]);
    }
    return rc;
}

/* n copies behind one gate. */
static int bench_copy_chunk(bench_team_t *t, bench_events_t *ev, size_t bytes, uint32_t n,
                            double *samples)
{
    int rc = bench_gate_close(t, ev);
    for (uint32_t s = 0; s < n && rc == 0; s++) {
        cudaError_t err = cudaEventRecord(ev->start[s][0], t->timer);
        if (err == cudaSuccess) {
            err = cudaMemcpyPeerAsync(t->copy_dst, t->copy_device, t->copy_src, t->cuda_device,
                                      bytes, t->timer);
        }
        if (err == cudaSuccess) {
            err = cudaEventRecord(ev->start[s][1], t->timer);
        }
        rc = err == cudaSuccess ? 0 : bench_fail_cuda(err, "roofline copy", -1);
    }
    bench_gate_open(ev);
    BENCH_CUDA(cudaStreamSynchronize(t->timer), "roofline copies", -1);
    for (uint32_t s = 0; rc == 0 && samples != NULL && s < n; s++) {
        float ms = 0.0f;
        BENCH_CUDA(cudaEventElapsedTime(&ms, ev->start[s][0], ev->start[s][1]),
                   "cudaEventElapsedTime", -1);
        samples[s] = (double)ms * 1000.0;
    }
    return rc;
}

int bench_time_copy(bench_team_t *t, size_t bytes, double *median_us)
{
    bench_events_t ev;
    double *samples = malloc(t->o.iters * sizeof(double));
    bench_stats_t s;
    int rc = 0;
    if (samples == NULL) {
        fprintf(stderr, "ncclx-bench: out of host memory for samples\n");
        return -1;
    }
    if (bytes > t->copy_bytes) {
        fprintf(stderr, "ncclx-bench: roofline copy of %zu bytes exceeds its buffers (%zu)\n",
                bytes, t->copy_bytes);
        free(samples);
        return -1;
    }
    rc = bench_events_create(t, &ev);
    if (rc == 0) {
        rc = bench_copy_chunk(t, &ev, bytes, BENCH_CHUNK, NULL); /* warm-up */
    }
    for (uint32_t done = 0; rc == 0 && done < t->o.iters;) {
        uint32_t n = t->o.iters - done < BENCH_CHUNK ? t->o.iters - done : BENCH_CHUNK;
        rc = bench_copy_chunk(t, &ev, bytes, n, samples + done);
        done += n;
    }
    if (rc == 0) {
        bench_stats(samples, t->o.iters, &s);
        *median_us = s.median_us;
    }
    bench_events_destroy(&ev);
    free(samples);
    return rc;
}
