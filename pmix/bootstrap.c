/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * PMIx bootstrap: PMIx_Init (reference-counted), the job layout, and the team shape.
 * Key exchanges are in bootstrap_exchange.c.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pmix.h>

#include "bootstrap.h"
#include "bootstrap_internal.h"
#include "error.h"
#include "log.h"

_Static_assert(NCCLX_BOOTSTRAP_NAME_MAX >= PMIX_MAX_NSLEN + 1, "nspace must fit");

/*
 * PMIx is one per process.  Bootstraps count references, but PMIx itself stays initialized
 * until the process exits (atexit): PMIx 4.2 re-initialized after PMIx_Finalize answers
 * NOT-FOUND for every per-process key (PMIX_LOCAL_RANK, PMIX_NODEID, PMIX_HOSTNAME), so
 * init -> finalize -> init could not work with a real finalize in between.
 */
static struct {
    pthread_mutex_t lock;
    unsigned refs; /* live bootstraps */
    int up;        /* our PMIx_Init succeeded and PMIx_Finalize has not run */
    int atexit_set;
    pmix_proc_t me;
    int singleton;
} ncclx_pmix = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define NCCLX_SINGLETON_NSPACE_PREFIX "singleton."

static void ncclx_pmix_finalize_at_exit(void)
{
    pthread_mutex_lock(&ncclx_pmix.lock);
    if (ncclx_pmix.up) {
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            NCCLX_WARN("PMIx_Finalize at exit failed: %s", PMIx_Error_string(rc));
        }
        ncclx_pmix.up = 0;
    }
    pthread_mutex_unlock(&ncclx_pmix.lock);
}

static ncclxResult_t ncclx_pmix_init_locked(void)
{
    pmix_proc_t me;
    PMIX_PROC_CONSTRUCT(&me);
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (rc != PMIX_SUCCESS && rc != PMIX_ERR_UNREACH) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Init failed: %s", PMIx_Error_string(rc));
    }
    /* PMIx 4 answers UNREACH when no server is around but still sets itself up as a
     * singleton ("singleton.<host>.<pid>", rank 0); some versions return success for it. */
    ncclx_pmix.singleton =
        rc == PMIX_ERR_UNREACH || strncmp(me.nspace, NCCLX_SINGLETON_NSPACE_PREFIX,
                                          strlen(NCCLX_SINGLETON_NSPACE_PREFIX)) == 0;
    if (ncclx_pmix.singleton) {
        NCCLX_INFO("PMIx_Init: %s, namespace %s: no PMIx server, running as rank 0 of 1",
                   PMIx_Error_string(rc), me.nspace);
    }
    if (!ncclx_pmix.atexit_set && atexit(ncclx_pmix_finalize_at_exit) != 0) {
        NCCLX_WARN("atexit failed: PMIx_Finalize will not run at exit");
    }
    ncclx_pmix.atexit_set = 1;
    ncclx_pmix.me = me;
    ncclx_pmix.up = 1;
    return ncclxSuccess;
}

static ncclxResult_t ncclx_pmix_acquire(pmix_proc_t *me, int *singleton)
{
    ncclxResult_t res = ncclxSuccess;
    pthread_mutex_lock(&ncclx_pmix.lock);
    if (!ncclx_pmix.up) {
        NCCLX_CHECK_GOTO(ncclx_pmix_init_locked(), res, out_unlock);
    }
    ncclx_pmix.refs++;
    *me = ncclx_pmix.me;
    *singleton = ncclx_pmix.singleton;
out_unlock:
    pthread_mutex_unlock(&ncclx_pmix.lock);
    return res;
}

static ncclxResult_t ncclx_pmix_release(void)
{
    ncclxResult_t res = ncclxSuccess;
    pthread_mutex_lock(&ncclx_pmix.lock);
    if (ncclx_pmix.refs == 0) {
        res = NCCLX_ERROR(ncclxInternalError, "PMIx released more often than acquired");
    } else {
        ncclx_pmix.refs--;
    }
    pthread_mutex_unlock(&ncclx_pmix.lock);
    return res;
}

/* PMIx servers differ in the integer type of a key (uint16 local rank, uint32 sizes, ...). */
static int ncclx_pmix_value_u32(const pmix_value_t *val, uint32_t *out)
{
    pmix_status_t rc;
    int64_t number = -1;
    PMIX_VALUE_GET_NUMBER(rc, val, number, int64_t);
    if (rc != PMIX_SUCCESS || number < 0 || number > (int64_t)UINT32_MAX) {
        return 0;
    }
    *out = (uint32_t)number;
    return 1;
}

/*
 * Reads an integer key of rank (or PMIX_RANK_WILDCARD for job-level keys).  *found = 0 when
 * the server does not know the key, so the caller can fall back; other failures are errors.
 */
static ncclxResult_t ncclx_pmix_get_u32(const char *nspace, pmix_rank_t rank, const char *key,
                                        uint32_t *value, int *found)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, nspace, rank);
    pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, &val);
    *found = 0;
    if (rc == PMIX_ERR_NOT_FOUND) {
        return ncclxSuccess;
    }
    if (rc != PMIX_SUCCESS) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Get(%s) failed: %s", key, PMIx_Error_string(rc));
    }
    int ok = ncclx_pmix_value_u32(val, value);
    pmix_data_type_t type = val->type;
    PMIX_VALUE_RELEASE(val);
    if (!ok) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Get(%s): value of type %s is not a 32-bit count",
                           key, PMIx_Data_type_string(type));
    }
    *found = 1;
    return ncclxSuccess;
}

static void ncclx_bootstrap_read_hostname(ncclx_bootstrap_t *bs)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, bs->nspace, bs->rank);
    pmix_status_t rc = PMIx_Get(&proc, PMIX_HOSTNAME, NULL, 0, &val);
    if (rc == PMIX_SUCCESS && val->type == PMIX_STRING && val->data.string != NULL) {
        snprintf(bs->hostname, sizeof(bs->hostname), "%s", val->data.string);
    } else {
        NCCLX_INFO("PMIx has no %s (%s): using gethostname()", PMIX_HOSTNAME,
                   rc == PMIX_SUCCESS ? "not a string" : PMIx_Error_string(rc));
        if (gethostname(bs->hostname, sizeof(bs->hostname)) != 0) {
            snprintf(bs->hostname, sizeof(bs->hostname), "unknown");
        }
        bs->hostname[sizeof(bs->hostname) - 1] = '\0';
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
}

/* Comma-separated names of the job's nodes (free() it), or NULL (logged at INFO) if PMIx
 * cannot say. */
static char *ncclx_bootstrap_node_list(const ncclx_bootstrap_t *bs)
{
    char *nodes = NULL;
    pmix_status_t rc = PMIx_Resolve_nodes(bs->nspace, &nodes);
    if (rc != PMIX_SUCCESS || nodes == NULL || nodes[0] == '\0') {
        NCCLX_INFO("PMIx_Resolve_nodes(%s): %s, no node list", bs->nspace,
                   rc == PMIX_SUCCESS ? "empty" : PMIx_Error_string(rc));
        free(nodes);
        return NULL;
    }
    return nodes;
}

/* Position of name in a comma-separated list, or -1. */
static long ncclx_list_index(const char *list, const char *name)
{
    size_t len = strlen(name);
    long index = 0;
    for (const char *p = list; p != NULL; index++) {
        const char *comma = strchr(p, ',');
        size_t item = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (item == len && strncmp(p, name, len) == 0) {
            return index;
        }
        p = comma != NULL ? comma + 1 : NULL;
    }
    return -1;
}

static uint32_t ncclx_list_count(const char *list)
{
    uint32_t count = 1;
    for (const char *p = strchr(list, ','); p != NULL; p = strchr(p + 1, ',')) {
        count++;
    }
    return count;
}

/* PMIX_NUM_NODES missing: 1 if every rank is on this node, else count the node list. */
static ncclxResult_t ncclx_bootstrap_guess_num_nodes(ncclx_bootstrap_t *bs)
{
    if (bs->local_size == bs->size) {
        bs->num_nodes = 1;
    } else {
        char *nodes = ncclx_bootstrap_node_list(bs);
        if (nodes == NULL) {
            return NCCLX_ERROR(ncclxPmixError,
                               "PMIx gives neither %s nor a node list, and %u of %u ranks "
                               "are on this node",
                               PMIX_NUM_NODES, bs->local_size, bs->size);
        }
        bs->num_nodes = ncclx_list_count(nodes);
        free(nodes);
    }
    NCCLX_INFO("PMIx has no %s: the job spans %u node(s)", PMIX_NUM_NODES, bs->num_nodes);
    return ncclxSuccess;
}

/* PMIX_NODEID missing: 0 on one node, else this host's position in the node list. */
static ncclxResult_t ncclx_bootstrap_guess_node_id(ncclx_bootstrap_t *bs)
{
    long index = bs->num_nodes == 1 ? 0 : -1;
    if (index < 0) {
        char *nodes = ncclx_bootstrap_node_list(bs);
        index = nodes != NULL ? ncclx_list_index(nodes, bs->hostname) : -1;
        free(nodes);
    }
    if (index < 0) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx gives no %s and host %s is not in its node list",
                           PMIX_NODEID, bs->hostname);
    }
    bs->node_id = (uint32_t)index;
    NCCLX_INFO("PMIx has no %s: this node is node %u", PMIX_NODEID, bs->node_id);
    return ncclxSuccess;
}

/* Reads a count that may be derived when the server does not provide it: *value = fallback
 * when allowed (logged at INFO), an error naming the key otherwise. */
static ncclxResult_t ncclx_bootstrap_read_or(const ncclx_bootstrap_t *bs, pmix_rank_t rank,
                                             const char *key, int can_fall_back, uint32_t fallback,
                                             uint32_t *value)
{
    int found = 0;
    NCCLX_CHECK(ncclx_pmix_get_u32(bs->nspace, rank, key, value, &found));
    if (!found && !can_fall_back) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Get(%s): %s", key,
                           PMIx_Error_string(PMIX_ERR_NOT_FOUND));
    }
    if (!found) {
        NCCLX_INFO("PMIx has no %s: using %u", key, fallback);
        *value = fallback;
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_bootstrap_check_layout(const ncclx_bootstrap_t *bs)
{
    if (bs->size == 0 || bs->rank >= bs->size || bs->local_size == 0 || bs->local_size > bs->size ||
        bs->local_rank >= bs->local_size || bs->num_nodes == 0 || bs->num_nodes > bs->size ||
        bs->node_id >= bs->num_nodes) {
        return NCCLX_ERROR(ncclxPmixError,
                           "PMIx layout is inconsistent: rank %u of %u, local rank %u of %u, "
                           "node %u of %u",
                           bs->rank, bs->size, bs->local_rank, bs->local_size, bs->node_id,
                           bs->num_nodes);
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_bootstrap_query(ncclx_bootstrap_t *bs)
{
    int found = 0;
    NCCLX_CHECK(ncclx_bootstrap_read_or(bs, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, bs->singleton, 1,
                                        &bs->size));
    NCCLX_CHECK(ncclx_bootstrap_read_or(bs, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, bs->size == 1, 1,
                                        &bs->local_size));
    NCCLX_CHECK(ncclx_bootstrap_read_or(bs, bs->rank, PMIX_LOCAL_RANK, bs->local_size == 1, 0,
                                        &bs->local_rank));
    ncclx_bootstrap_read_hostname(bs);
    NCCLX_CHECK(
        ncclx_pmix_get_u32(bs->nspace, PMIX_RANK_WILDCARD, PMIX_NUM_NODES, &bs->num_nodes, &found));
    if (!found) {
        NCCLX_CHECK(ncclx_bootstrap_guess_num_nodes(bs));
    }
    NCCLX_CHECK(ncclx_pmix_get_u32(bs->nspace, bs->rank, PMIX_NODEID, &bs->node_id, &found));
    if (!found) {
        NCCLX_CHECK(ncclx_bootstrap_guess_node_id(bs));
    }
    return ncclx_bootstrap_check_layout(bs);
}

/* A variable that is a task count: set to an integer above 1. */
static int ncclx_env_count_above_one(const char *name, char *detail, size_t len)
{
    const char *value = getenv(name);
    char *end = NULL;
    unsigned long long count;
    if (value == NULL || value[0] == '\0') {
        return 0;
    }
    count = strtoull(value, &end, 10);
    if (*end != '\0' || count <= 1) {
        return 0;
    }
    snprintf(detail, len, "%s=%s", name, value);
    return 1;
}

static int ncclx_env_set(const char *name, char *detail, size_t len)
{
    const char *value = getenv(name);
    if (value == NULL) {
        return 0;
    }
    snprintf(detail, len, "%s=%s", name, value);
    return 1;
}

const char *ncclx_bootstrap_launcher_tasks(char *detail, size_t len)
{
    /* A PMIx launcher's own variables: the server exists but could not be reached. */
    static const char *const pmix_vars[] = {"PMIX_NAMESPACE", "PMIX_RANK"};
    /* Task counts of launchers that may run without PMIx.  SLURM_NTASKS alone does not count:
     * a batch script carries the allocation's task count while it runs one process; srun
     * sets SLURM_STEP_NUM_TASKS (and SLURM_STEP_ID) for the tasks of a step. */
    static const char *const count_vars[] = {"SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE",
                                             "PMI_SIZE"};
    for (size_t i = 0; i < sizeof(pmix_vars) / sizeof(pmix_vars[0]); i++) {
        if (ncclx_env_set(pmix_vars[i], detail, len)) {
            return pmix_vars[i];
        }
    }
    for (size_t i = 0; i < sizeof(count_vars) / sizeof(count_vars[0]); i++) {
        if (ncclx_env_count_above_one(count_vars[i], detail, len)) {
            return count_vars[i];
        }
    }
    if (getenv("SLURM_STEP_ID") != NULL && ncclx_env_count_above_one("SLURM_NTASKS", detail, len)) {
        return "SLURM_NTASKS";
    }
    return NULL;
}

/* No PMIx server, yet a launcher says it started this process among others: running as a
 * singleton would make N independent rank-0-of-1 jobs, all on GPU 0. */
static ncclxResult_t ncclx_bootstrap_check_singleton(void)
{
    char detail[128];
    const char *name = ncclx_bootstrap_launcher_tasks(detail, sizeof(detail));
    if (name == NULL) {
        return ncclxSuccess;
    }
    return NCCLX_ERROR(ncclxPmixError,
                       "no PMIx server could be reached, but %s says a launcher started this "
                       "process as one of several tasks: running it alone as rank 0 of 1 would "
                       "run every task as its own job on GPU 0; launch with PMIx (srun "
                       "--mpi=pmix, or the mpirun of a PMIx-enabled MPI), or unset %s to run "
                       "one process alone",
                       detail, name);
}

ncclxResult_t ncclx_bootstrap_init(ncclx_bootstrap_t *bs)
{
    ncclx_bootstrap_t local;
    pmix_proc_t me;
    ncclxResult_t res;
    if (bs == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclx_bootstrap_init: bs is NULL");
    }
    memset(&local, 0, sizeof(local));
    NCCLX_CHECK(ncclx_pmix_acquire(&me, &local.singleton));
    if (local.singleton) {
        NCCLX_CHECK_GOTO(ncclx_bootstrap_check_singleton(), res, err_release);
    }
    snprintf(local.nspace, sizeof(local.nspace), "%s", me.nspace);
    local.rank = me.rank;
    NCCLX_CHECK_GOTO(ncclx_bootstrap_query(&local), res, err_release);
    local.initialized = 1;
    ncclx_log_set_rank((int)local.rank);
    NCCLX_INFO("PMIx bootstrap: rank %u of %u, local rank %u of %u, node %u of %u (%s), "
               "namespace %s%s",
               local.rank, local.size, local.local_rank, local.local_size, local.node_id,
               local.num_nodes, local.hostname, local.nspace,
               local.singleton ? " (singleton)" : "");
    *bs = local;
    return ncclxSuccess;
err_release:
    (void)ncclx_pmix_release(); /* the first error is the one to report */
    return res;
}

ncclxResult_t ncclx_bootstrap_finalize(ncclx_bootstrap_t *bs)
{
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_finalize"));
    memset(bs, 0, sizeof(*bs));
    return ncclx_pmix_release();
}

ncclxResult_t ncclx_bootstrap_check_init(const ncclx_bootstrap_t *bs, const char *what)
{
    if (bs == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: bs is NULL", what);
    }
    if (!bs->initialized) {
        return NCCLX_ERROR(ncclxInvalidUsage, "%s: bootstrap is not initialized (or was finalized)",
                           what);
    }
    return ncclxSuccess;
}

/* The placement every rank's arithmetic assumes: node k holds ranks k*L .. k*L+L-1 (L ranks per
 * node), local rank = rank % L.  A job placed otherwise would have LL and the network transport
 * treat ranks of two hosts as load/store peers. */
static ncclxResult_t ncclx_bootstrap_check_blocks(const ncclx_bootstrap_t *bs,
                                                  const ncclx_bootstrap_node_t *nodes,
                                                  uint32_t num_listed)
{
    static const char hint[] = "libncclx needs each node's ranks consecutive (srun "
                               "--distribution=block, mpirun --map-by slot or core)";
    uint32_t per_node = bs->local_size;
    if (bs->local_rank != bs->rank % per_node) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "rank %u has local rank %u on node %u (%s), not rank %% %u = %u: %s",
                           bs->rank, bs->local_rank, bs->node_id, bs->hostname, per_node,
                           bs->rank % per_node, hint);
    }
    for (uint32_t i = 0; i < num_listed; i++) {
        const ncclx_bootstrap_node_t *n = &nodes[i];
        if (n->first_rank % per_node != 0 || n->last_rank - n->first_rank + 1 != n->ranks) {
            return NCCLX_ERROR(ncclxUnsupported,
                               "node %s runs ranks %u to %u, %u of them, not a block of %u "
                               "consecutive ranks starting at a multiple of %u: %s",
                               n->name != NULL ? n->name : "?", n->first_rank, n->last_rank,
                               n->ranks, per_node, per_node, hint);
        }
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_team_from_nodes(const ncclx_bootstrap_t *bs,
                                              const ncclx_bootstrap_node_t *nodes,
                                              uint32_t num_listed, ncclxTeam_t *team)
{
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_team"));
    if (team == NULL || (num_listed > 0 && nodes == NULL)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclx_bootstrap_team: %s is NULL",
                           team == NULL ? "team" : "nodes");
    }
    if (num_listed > 0 && num_listed != bs->num_nodes) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx lists %u nodes but %s is %u", num_listed,
                           PMIX_NUM_NODES, bs->num_nodes);
    }
    for (uint32_t i = 0; i < num_listed; i++) {
        if (nodes[i].ranks != bs->local_size) {
            return NCCLX_ERROR(ncclxUnsupported,
                               "node %s runs %u ranks but this node (%s) runs %u: libncclx "
                               "needs the same number of ranks on every node",
                               nodes[i].name != NULL ? nodes[i].name : "?", nodes[i].ranks,
                               bs->hostname, bs->local_size);
        }
    }
    if ((uint64_t)bs->num_nodes * bs->local_size != bs->size) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "%u ranks on %u nodes with %u on this node (%s): libncclx needs "
                           "the same number of ranks on every node",
                           bs->size, bs->num_nodes, bs->local_size, bs->hostname);
    }
    NCCLX_CHECK(ncclx_bootstrap_check_blocks(bs, nodes, num_listed));
    ncclxTeam_t shape = NCCLX_TEAM_INIT;
    shape.num_ranks = bs->size;
    shape.num_nodes = bs->num_nodes;
    shape.lsa_size = bs->local_size;
    *team = shape;
    return ncclxSuccess;
}

/* Splits a comma-separated list in place into names[0..count-1]. */
static void ncclx_list_split(char *list, char **names, uint32_t count)
{
    char *save = NULL;
    char *name = strtok_r(list, ",", &save);
    for (uint32_t i = 0; i < count; i++) {
        names[i] = name != NULL ? name : "";
        name = strtok_r(NULL, ",", &save);
    }
}

/* The job's ranks on each listed node: how many, the lowest and the highest (the server's own
 * answer, no fence: PMIx_Resolve_peers reads what the launcher registered). */
static ncclxResult_t ncclx_bootstrap_resolve_nodes(const ncclx_bootstrap_t *bs, char **names,
                                                   uint32_t count, ncclx_bootstrap_node_t *nodes)
{
    for (uint32_t i = 0; i < count; i++) {
        pmix_proc_t *procs = NULL;
        size_t nprocs = 0;
        pmix_status_t rc = PMIx_Resolve_peers(names[i], bs->nspace, &procs, &nprocs);
        if (rc != PMIX_SUCCESS) {
            return NCCLX_ERROR(ncclxPmixError, "PMIx_Resolve_peers(%s) failed: %s", names[i],
                               PMIx_Error_string(rc));
        }
        ncclx_bootstrap_node_t n = {.name = names[i], .first_rank = UINT32_MAX};
        for (size_t p = 0; p < nprocs; p++) {
            uint32_t r = procs[p].rank;
            n.first_rank = r < n.first_rank ? r : n.first_rank;
            n.last_rank = r > n.last_rank ? r : n.last_rank;
        }
        n.ranks = nprocs > UINT32_MAX ? UINT32_MAX : (uint32_t)nprocs;
        if (nprocs == 0) {
            n.first_rank = 0;
        }
        if (procs != NULL) {
            PMIX_PROC_FREE(procs, nprocs);
        }
        nodes[i] = n;
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_team(const ncclx_bootstrap_t *bs, ncclxTeam_t *team)
{
    ncclxResult_t res;
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_team"));
    char *list = bs->singleton ? NULL : ncclx_bootstrap_node_list(bs);
    if (list == NULL) {
        if (!bs->singleton) {
            NCCLX_INFO("cannot list the job's nodes: assuming each runs %u ranks like this one",
                       bs->local_size);
        }
        return ncclx_bootstrap_team_from_nodes(bs, NULL, 0, team);
    }
    uint32_t count = ncclx_list_count(list);
    char **names = calloc(count, sizeof(*names));
    ncclx_bootstrap_node_t *nodes = calloc(count, sizeof(*nodes));
    if (names == NULL || nodes == NULL) {
        res = NCCLX_ERROR(ncclxOutOfMemory, "node list of %u nodes", count);
        goto out_free;
    }
    ncclx_list_split(list, names, count);
    NCCLX_CHECK_GOTO(ncclx_bootstrap_resolve_nodes(bs, names, count, nodes), res, out_free);
    res = ncclx_bootstrap_team_from_nodes(bs, nodes, count, team);
out_free:
    free(nodes);
    free(names);
    free(list);
    return res;
}
