/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Launcher probe for the PMIx bootstrap: run it under mpirun, srun --mpi=pmix, or alone.
 * Every rank checks what PMIx told every other rank (through an allgather), the exchange of
 * an NCCL unique id from rank 0, that two instances under one key name do not collide, that a
 * key re-exchanged with new data is not served stale, that two bootstraps coexist, and that
 * finalize -> init works.  Each rank prints one PASS or FAIL line and exits non-zero on FAIL.
 *
 *   bootstrap_probe [--size N] [--nodes N] [--singleton]   expected job shape
 *   bootstrap_probe --straggler S ...   only this: the last rank stays away from a barrier
 *                                       for S + 4 seconds; with NCCLX_FENCE_TIMEOUT_S=S the
 *                                       others must get ncclxTimeout after about S seconds
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <nccl.h>
#include <ncclx.h>

#include "bootstrap.h"

#define PROBE_ID_BYTES 128 /* sizeof(ncclUniqueId) */
#define PROBE_HOST_MAX 64

typedef struct {
    uint32_t rank, size, local_rank, local_size, node_id, num_nodes;
    int64_t pid;
    char host[PROBE_HOST_MAX];
} probe_info_t;

typedef struct {
    long size, nodes; /* -1: not checked */
    int singleton;
    long straggler_s; /* > 0: run only the timeout check */
} probe_expect_t;

static int probe_failures;
static char probe_first_failure[512];

static void probe_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void probe_fail(const char *fmt, ...)
{
    va_list ap;
    if (probe_failures++ == 0) {
        va_start(ap, fmt);
        vsnprintf(probe_first_failure, sizeof(probe_first_failure), fmt, ap);
        va_end(ap);
    }
    va_start(ap, fmt);
    fprintf(stderr, "bootstrap_probe: check failed: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* A bootstrap call failed: the collectives that follow cannot work, so stop here. */
static void probe_check(ncclxResult_t res, const char *what)
{
    if (res != ncclxSuccess) {
        printf("bootstrap_probe: FAIL: %s: %s: %s\n", what, ncclxGetErrorString(res),
               ncclxGetLastError());
        fflush(stdout);
        exit(1);
    }
}

static void probe_random(void *buf, size_t bytes)
{
    if (getrandom(buf, bytes, 0) != (ssize_t)bytes) {
        probe_fail("getrandom(%zu) failed", bytes);
    }
}

static void probe_short_host(const char *name, char *out)
{
    snprintf(out, PROBE_HOST_MAX, "%s", name);
    out[strcspn(out, ".")] = '\0';
}

/* Collective: every rank's copy of buf must equal root's. */
static void probe_same_everywhere(const ncclx_bootstrap_t *bs, const char *label, const void *buf,
                                  size_t bytes, uint32_t root)
{
    char key[64];
    unsigned char *all = malloc(bytes * bs->size);
    if (all == NULL) {
        probe_fail("%s: out of memory", label);
        exit(1);
    }
    snprintf(key, sizeof(key), "probe.check.%s", label);
    probe_check(ncclx_bootstrap_allgather(bs, key, 0, buf, all, bytes, 0), key);
    for (uint32_t r = 0; r < bs->size; r++) {
        if (memcmp(all + (size_t)r * bytes, all + (size_t)root * bytes, bytes) != 0) {
            probe_fail("%s: rank %u holds different bytes than rank %u", label, r, root);
        }
    }
    free(all);
}

static void probe_check_self(const ncclx_bootstrap_t *bs, const probe_expect_t *expect)
{
    char mine[PROBE_HOST_MAX], theirs[PROBE_HOST_MAX], host[256] = "";
    if (expect->size >= 0 && bs->size != (uint32_t)expect->size) {
        probe_fail("size %u, expected %ld", bs->size, expect->size);
    }
    if (expect->nodes >= 0 && bs->num_nodes != (uint32_t)expect->nodes) {
        probe_fail("num_nodes %u, expected %ld", bs->num_nodes, expect->nodes);
    }
    if (bs->singleton != expect->singleton) {
        probe_fail("singleton=%d, expected %d", bs->singleton, expect->singleton);
    }
    if (bs->singleton && (bs->rank != 0 || bs->size != 1 || bs->local_rank != 0 ||
                          bs->local_size != 1 || bs->node_id != 0 || bs->num_nodes != 1)) {
        probe_fail("singleton is not rank 0 of 1 on node 0 of 1");
    }
    gethostname(host, sizeof(host) - 1);
    probe_short_host(bs->hostname, theirs);
    probe_short_host(host, mine);
    if (strcmp(mine, theirs) != 0) {
        probe_fail("PMIx host name %s is not this host (%s)", bs->hostname, host);
    }
}

/* Every rank on node k agrees on the host, and their local ranks are 0..local_size-1. */
static void probe_check_node(const probe_info_t *all, uint32_t n, uint32_t node)
{
    uint32_t count = 0, local_size = 0;
    uint64_t seen = 0; /* local ranks seen, for the first 64 */
    const char *host = NULL;
    for (uint32_t r = 0; r < n; r++) {
        if (all[r].node_id != node) {
            continue;
        }
        count++;
        local_size = all[r].local_size;
        host = host != NULL ? host : all[r].host;
        if (strcmp(host, all[r].host) != 0) {
            probe_fail("node %u: rank %u is on %s, another on %s", node, r, all[r].host, host);
        }
        if (all[r].local_rank < 64 && (seen & (1ull << all[r].local_rank))) {
            probe_fail("node %u: local rank %u appears twice", node, all[r].local_rank);
        }
        seen |= all[r].local_rank < 64 ? 1ull << all[r].local_rank : 0;
        if (all[r].local_rank >= all[r].local_size || all[r].local_size != local_size) {
            probe_fail("node %u: rank %u has local rank %u of %u", node, r, all[r].local_rank,
                       all[r].local_size);
        }
    }
    if (count == 0 || count != local_size) {
        probe_fail("node %u: %u ranks, but they report local size %u", node, count, local_size);
    }
}

/* Collective: what PMIx told each rank, checked by every rank. */
static void probe_check_layout(const ncclx_bootstrap_t *bs)
{
    probe_info_t mine = {.rank = bs->rank,
                         .size = bs->size,
                         .local_rank = bs->local_rank,
                         .local_size = bs->local_size,
                         .node_id = bs->node_id,
                         .num_nodes = bs->num_nodes,
                         .pid = (int64_t)getpid()};
    probe_info_t *all = calloc(bs->size, sizeof(*all));
    if (all == NULL) {
        probe_fail("out of memory");
        exit(1);
    }
    probe_short_host(bs->hostname, mine.host);
    probe_check(ncclx_bootstrap_allgather(bs, "probe.info", 0, &mine, all, sizeof(mine), 0),
                "allgather of the layout");
    for (uint32_t r = 0; r < bs->size; r++) {
        if (all[r].rank != r || all[r].size != bs->size || all[r].num_nodes != bs->num_nodes ||
            all[r].node_id >= bs->num_nodes) {
            probe_fail("rank %u reports rank %u of %u, node %u of %u", r, all[r].rank, all[r].size,
                       all[r].node_id, all[r].num_nodes);
        }
        for (uint32_t q = 0; q < r; q++) {
            int same_host = strcmp(all[q].host, all[r].host) == 0;
            if (same_host && all[q].pid == all[r].pid) {
                probe_fail("ranks %u and %u are the same process", q, r);
            }
            if (same_host && all[q].node_id != all[r].node_id) {
                probe_fail("ranks %u and %u share host %s but not a node id", q, r, all[r].host);
            }
        }
    }
    for (uint32_t node = 0; node < bs->num_nodes; node++) {
        probe_check_node(all, bs->size, node);
    }
    free(all);
}

static void probe_check_team(const ncclx_bootstrap_t *bs)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    probe_check(ncclx_bootstrap_team(bs, &team), "ncclx_bootstrap_team");
    if (team.num_ranks != bs->size || team.num_nodes != bs->num_nodes ||
        team.lsa_size != bs->local_size) {
        probe_fail("team %u ranks, %u nodes, lsa %u; job %u ranks, %u nodes, %u per node",
                   team.num_ranks, team.num_nodes, team.lsa_size, bs->size, bs->num_nodes,
                   bs->local_size);
    }
}

/* Rank 0's NCCL unique id reaches every rank byte for byte. */
static void probe_check_unique_id(const ncclx_bootstrap_t *bs)
{
    unsigned char id[PROBE_ID_BYTES], before[PROBE_ID_BYTES];
    _Static_assert(sizeof(ncclUniqueId) == PROBE_ID_BYTES, "ncclUniqueId is 128 bytes");
    memset(id, 0xa5, sizeof(id));
    if (bs->rank == 0) {
        ncclResult_t nres = ncclGetUniqueId((ncclUniqueId *)id);
        if (nres != ncclSuccess) {
            fprintf(stderr, "bootstrap_probe: ncclGetUniqueId: %s; using random bytes\n",
                    ncclGetErrorString(nres));
            probe_random(id, sizeof(id));
        }
    }
    memcpy(before, id, sizeof(id));
    probe_check(ncclx_bootstrap_exchange(bs, "uid", 1, 0, id, sizeof(id), 0), "uid exchange");
    if (bs->rank == 0 && memcmp(id, before, sizeof(id)) != 0) {
        probe_fail("the root's unique id changed during the exchange");
    }
    if (bs->rank != 0 && memcmp(id, before, sizeof(id)) == 0) {
        probe_fail("the unique id was not received");
    }
    probe_same_everywhere(bs, "uid", id, sizeof(id), 0);
}

/* Two exchanges of different data under the same key name in two instances. */
static void probe_check_sequential_instances(const ncclx_bootstrap_t *bs)
{
    unsigned char got[2][PROBE_ID_BYTES];
    uint32_t root = bs->size - 1;
    probe_random(got, sizeof(got));
    probe_check(ncclx_bootstrap_exchange(bs, "blob", 2, root, got[0], PROBE_ID_BYTES, 0),
                "exchange of blob, instance 2");
    probe_check(ncclx_bootstrap_exchange(bs, "blob", 3, root, got[1], PROBE_ID_BYTES, 0),
                "exchange of blob, instance 3");
    if (memcmp(got[0], got[1], PROBE_ID_BYTES) == 0) {
        probe_fail("instances 2 and 3 of 'blob' delivered the same bytes");
    }
    probe_same_everywhere(bs, "seq", got, sizeof(got), root);
}

/* Both instances in flight at once (one fence): a shared PMIx key would overwrite one. */
static void probe_check_concurrent_instances(const ncclx_bootstrap_t *bs)
{
    unsigned char sent[2][PROBE_ID_BYTES], got[2][PROBE_ID_BYTES];
    probe_random(sent, sizeof(sent));
    if (bs->rank == 0) {
        probe_check(ncclx_bootstrap_put(bs, "blob", 4, sent[0], PROBE_ID_BYTES), "put inst 4");
        probe_check(ncclx_bootstrap_put(bs, "blob", 5, sent[1], PROBE_ID_BYTES), "put inst 5");
    }
    probe_check(ncclx_bootstrap_fence(bs, 0), "fence");
    probe_check(ncclx_bootstrap_get(bs, "blob", 4, 0, got[0], PROBE_ID_BYTES, 0), "get inst 4");
    probe_check(ncclx_bootstrap_get(bs, "blob", 5, 0, got[1], PROBE_ID_BYTES, 0), "get inst 5");
    if (bs->rank == 0 && memcmp(sent, got, sizeof(got)) != 0) {
        probe_fail("rank 0 read back other bytes than it put in instances 4 and 5");
    }
    if (memcmp(got[0], got[1], PROBE_ID_BYTES) == 0) {
        probe_fail("instances 4 and 5 of 'blob' collided");
    }
    probe_same_everywhere(bs, "concurrent", got, sizeof(got), 0);
}

/* The same key and instance exchanged again with new data: no rank may see the old value. */
static void probe_check_reexchange(const ncclx_bootstrap_t *bs)
{
    unsigned char first[PROBE_ID_BYTES], second[PROBE_ID_BYTES];
    probe_random(first, sizeof(first));
    probe_random(second, sizeof(second));
    probe_check(ncclx_bootstrap_exchange(bs, "again", 6, 0, first, sizeof(first), 0), "again 1");
    probe_check(ncclx_bootstrap_exchange(bs, "again", 6, 0, second, sizeof(second), 0), "again 2");
    if (memcmp(first, second, sizeof(first)) == 0) {
        probe_fail("re-exchanged key 'again' served the old value");
    }
    probe_same_everywhere(bs, "again", second, sizeof(second), 0);
}

static void probe_check_same_job(const ncclx_bootstrap_t *a, const ncclx_bootstrap_t *b,
                                 const char *what)
{
    if (a->rank != b->rank || a->size != b->size || a->local_rank != b->local_rank ||
        a->local_size != b->local_size || a->node_id != b->node_id ||
        a->num_nodes != b->num_nodes || a->singleton != b->singleton ||
        strcmp(a->nspace, b->nspace) != 0 || strcmp(a->hostname, b->hostname) != 0) {
        probe_fail("%s: rank %u of %u in %s, was rank %u of %u in %s", what, b->rank, b->size,
                   b->nspace, a->rank, a->size, a->nspace);
    }
}

/* A second bootstrap while the first lives, then finalize -> init of the first. */
static void probe_check_lifecycle(ncclx_bootstrap_t *bs)
{
    ncclx_bootstrap_t second, again, saved = *bs;
    unsigned char data[PROBE_ID_BYTES];
    probe_check(ncclx_bootstrap_init(&second), "second bootstrap init");
    probe_check_same_job(bs, &second, "second bootstrap");
    probe_random(data, sizeof(data));
    probe_check(ncclx_bootstrap_exchange(&second, "ctx", 7, 0, data, sizeof(data), 0), "ctx");
    probe_same_everywhere(&second, "ctx", data, sizeof(data), 0);
    probe_check(ncclx_bootstrap_finalize(&second), "second bootstrap finalize");
    /* The first still holds PMIx. */
    probe_check(ncclx_bootstrap_barrier(bs, 0), "barrier after the second's finalize");
    probe_check(ncclx_bootstrap_finalize(bs), "finalize");
    ncclxLogLevel_t level = ncclxGetLogLevel();
    ncclxSetLogLevel(NCCLX_LOG_NONE); /* the error below is expected: keep the log clean */
    if (ncclx_bootstrap_barrier(bs, 0) != ncclxInvalidUsage) {
        probe_fail("a finalized bootstrap was usable");
    }
    ncclxSetLogLevel(level);
    probe_check(ncclx_bootstrap_init(&again), "init after finalize");
    probe_check_same_job(&saved, &again, "init after finalize");
    probe_random(data, sizeof(data));
    probe_check(ncclx_bootstrap_exchange(&again, "reinit", 8, 0, data, sizeof(data), 0),
                "exchange after re-init");
    probe_same_everywhere(&again, "reinit", data, sizeof(data), 0);
    *bs = again;
}

static double probe_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The last rank misses a barrier: the others' fence must time out, not hang. */
static void probe_check_straggler(const ncclx_bootstrap_t *bs, long timeout_s)
{
    if (bs->size < 2) {
        probe_fail("--straggler needs at least 2 ranks");
        return;
    }
    if (bs->rank == bs->size - 1) {
        sleep((unsigned)timeout_s + 4);
        return;
    }
    ncclxLogLevel_t level = ncclxGetLogLevel();
    ncclxSetLogLevel(NCCLX_LOG_NONE); /* the timeout is expected */
    double start = probe_now();
    ncclxResult_t res = ncclx_bootstrap_barrier(bs, 0); /* 0: NCCLX_FENCE_TIMEOUT_S */
    double elapsed = probe_now() - start;
    ncclxSetLogLevel(level);
    if (res != ncclxTimeout) {
        probe_fail("barrier without the last rank returned %s (%s), expected a timeout",
                   ncclxGetErrorString(res), ncclxGetLastError());
    } else if (elapsed < (double)timeout_s - 0.5 || elapsed > (double)timeout_s + 10) {
        probe_fail("barrier timed out after %.1f s, expected about %ld s", elapsed, timeout_s);
    } else {
        printf("bootstrap_probe: rank %u: barrier timed out after %.1f s as expected: %s\n",
               bs->rank, elapsed, ncclxGetLastError());
    }
}

static void probe_parse(int argc, char **argv, probe_expect_t *expect)
{
    expect->size = -1;
    expect->nodes = -1;
    expect->singleton = 0;
    expect->straggler_s = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            expect->size = atol(argv[++i]);
        } else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc) {
            expect->nodes = atol(argv[++i]);
        } else if (strcmp(argv[i], "--singleton") == 0) {
            expect->singleton = 1;
        } else if (strcmp(argv[i], "--straggler") == 0 && i + 1 < argc && atol(argv[i + 1]) > 0) {
            expect->straggler_s = atol(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--size N] [--nodes N] [--singleton] [--straggler S]\n",
                    argv[0]);
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    ncclx_bootstrap_t bs;
    probe_expect_t expect;
    probe_parse(argc, argv, &expect);
    probe_check(ncclx_bootstrap_init(&bs), "ncclx_bootstrap_init");
    probe_check_self(&bs, &expect);
    if (expect.straggler_s > 0) {
        probe_check_straggler(&bs, expect.straggler_s);
    } else {
        probe_check_layout(&bs);
        probe_check_team(&bs);
        probe_check_unique_id(&bs);
        probe_check_sequential_instances(&bs);
        probe_check_concurrent_instances(&bs);
        probe_check_reexchange(&bs);
        probe_check_lifecycle(&bs);
    }
    printf("bootstrap_probe: rank %u of %u (local %u of %u, node %u of %u, host %s, "
           "namespace %s%s): %s%s\n",
           bs.rank, bs.size, bs.local_rank, bs.local_size, bs.node_id, bs.num_nodes, bs.hostname,
           bs.nspace, bs.singleton ? ", singleton" : "", probe_failures ? "FAIL: " : "PASS",
           probe_failures ? probe_first_failure : "");
    fflush(stdout);
    probe_check(ncclx_bootstrap_finalize(&bs), "ncclx_bootstrap_finalize");
    return probe_failures ? 1 : 0;
}
