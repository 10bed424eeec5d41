/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * PMIx bootstrap (internal): who this process is in the job, and small collective key
 * exchanges through the PMIx server (put / commit / fence / get).  ncclxInit uses it to learn
 * rank, size and node layout before touching a GPU, and to share the NCCL unique id.
 *
 * Without a PMIx server (a plain ./app), PMIx_Init reports PMIX_ERR_UNREACH and sets up a
 * singleton: the process runs as rank 0 of 1, and exchanges return the caller's own data,
 * unless the environment says a launcher started several tasks (then ncclxPmixError).
 *
 * PMIx_Init is called once per process by this module; bootstraps are reference-counted, so
 * several (one per context) may be alive at once, and init -> finalize -> init works.  PMIx
 * itself is finalized at process exit, not by the last ncclx_bootstrap_finalize(): PMIx 4.2
 * re-initialized after PMIx_Finalize has lost every per-process key.
 * pmix.h is not included here: callers see plain integers and strings only.
 */
#ifndef NCCLX_PMIX_BOOTSTRAP_H_
#define NCCLX_PMIX_BOOTSTRAP_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/plan.h>
#include <ncclx/result.h>

#define NCCLX_BOOTSTRAP_NAME_MAX 256 /* PMIX_MAX_NSLEN + 1; also bounds the host name */

/** What PMIx says about this process.  Read-only for callers. */
typedef struct {
    uint32_t rank;       /**< rank in the job (PMIx namespace) */
    uint32_t size;       /**< ranks in the job (PMIX_JOB_SIZE) */
    uint32_t local_rank; /**< rank among the job's processes on this node (PMIX_LOCAL_RANK) */
    uint32_t local_size; /**< the job's processes on this node (PMIX_LOCAL_SIZE) */
    uint32_t node_id;    /**< this node, 0..num_nodes-1 (PMIX_NODEID) */
    uint32_t num_nodes;  /**< nodes the job spans (PMIX_NUM_NODES) */
    int singleton;       /**< 1: no PMIx server, running as rank 0 of 1 */
    int initialized;     /**< 1 between a successful init and its finalize */
    char hostname[NCCLX_BOOTSTRAP_NAME_MAX]; /**< PMIX_HOSTNAME */
    char nspace[NCCLX_BOOTSTRAP_NAME_MAX];   /**< PMIx namespace of the job */
} ncclx_bootstrap_t;

/**
 * Initializes PMIx (or takes one more reference on it) and reads the job layout.  *bs is
 * written only on success.  A missing optional key (PMIX_NUM_NODES, PMIX_NODEID,
 * PMIX_HOSTNAME, ...) is derived from the others when that is unambiguous, logged at INFO;
 * otherwise ncclxPmixError names the key.
 */
ncclxResult_t ncclx_bootstrap_init(ncclx_bootstrap_t *bs);

/**
 * The launcher variable that says this process is one of several tasks, or NULL: PMIX_NAMESPACE
 * or PMIX_RANK set, or SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE, PMI_SIZE (or SLURM_NTASKS
 * inside a Slurm step) above 1; detail receives "NAME=value".  Without a PMIx server,
 * ncclx_bootstrap_init() fails with ncclxPmixError naming it instead of running a singleton.
 */
const char *ncclx_bootstrap_launcher_tasks(char *detail, size_t len);

/** Drops the reference taken by init and clears *bs (PMIx_Finalize runs at exit). */
ncclxResult_t ncclx_bootstrap_finalize(ncclx_bootstrap_t *bs);

/*
 * Collective exchanges.  Every rank of the job must call them (and every other fence of this
 * module) in the same order with the same key, instance and sizes.  The PMIx key is
 * "ncclx.<instance>.<epoch>.<key>": two contexts (two instances) of one job never see each
 * other's data even under the same key name, and the epoch (fences completed by this process,
 * equal on every rank) lets a key be exchanged again with new data, which PMIx alone does not
 * guarantee.  timeout_s bounds the fence: 0 means NCCLX_FENCE_TIMEOUT_S; expiry returns
 * ncclxTimeout.
 */

/** Root's `bytes` bytes at data are copied into every rank's data (a broadcast). */
ncclxResult_t ncclx_bootstrap_exchange(const ncclx_bootstrap_t *bs, const char *key,
                                       uint32_t instance, uint32_t root, void *data, size_t bytes,
                                       int timeout_s);

/** Every rank's `bytes` bytes at mine land in all[rank * bytes] on every rank. */
ncclxResult_t ncclx_bootstrap_allgather(const ncclx_bootstrap_t *bs, const char *key,
                                        uint32_t instance, const void *mine, void *all,
                                        size_t bytes, int timeout_s);

/** Waits until every rank has reached it (a fence without data). */
ncclxResult_t ncclx_bootstrap_barrier(const ncclx_bootstrap_t *bs, int timeout_s);

/*
 * Split phases, for several values in flight at once: put any number of keys, one fence
 * (which also commits), then get them.  A get reads what was put before the latest fence.
 * ncclx_bootstrap_exchange() is put (root) + fence + get (root).
 */

/** Publishes bytes at data as this rank's value of key, for the next fence. */
ncclxResult_t ncclx_bootstrap_put(const ncclx_bootstrap_t *bs, const char *key, uint32_t instance,
                                  const void *data, size_t bytes);

/** Commits this rank's puts and waits until every rank's are visible. */
ncclxResult_t ncclx_bootstrap_fence(const ncclx_bootstrap_t *bs, int timeout_s);

/** Reads rank's value of key put before the latest fence; it must be exactly `bytes` long. */
ncclxResult_t ncclx_bootstrap_get(const ncclx_bootstrap_t *bs, const char *key, uint32_t instance,
                                  uint32_t rank, void *data, size_t bytes, int timeout_s);

/**
 * The team shape for plan sizing: num_ranks = size, num_nodes, lsa_size = ranks per node.
 * Checks with PMIx that every node runs the same number of ranks of the job (when the server
 * can list them) and returns ncclxUnsupported naming the odd node otherwise.  Touches no GPU.
 * *team is fully written (NCCLX_TEAM_INIT header included) only on success.
 */
ncclxResult_t ncclx_bootstrap_team(const ncclx_bootstrap_t *bs, ncclxTeam_t *team);

/** One node of the job as PMIx lists it (PMIx_Resolve_nodes, PMIx_Resolve_peers). */
typedef struct {
    const char *name;    /**< host name; may be NULL */
    uint32_t ranks;      /**< the job's ranks on it */
    uint32_t first_rank; /**< the lowest of them */
    uint32_t last_rank;  /**< the highest of them */
} ncclx_bootstrap_node_t;

/**
 * The pure part of ncclx_bootstrap_team(): nodes[0..num_listed-1] as PMIx lists them (NULL / 0
 * when the server cannot list nodes).  Besides equal node sizes it checks the placement the
 * library's rank arithmetic rests on (node of rank r = r / ranks per node, NCCL's load/store
 * team of consecutive ranks): every node's ranks are consecutive and start at a multiple of
 * the node size, and this rank's local rank is rank % node size.  A cyclic placement (srun
 * --distribution=cyclic, mpirun --map-by node) fails with ncclxUnsupported naming the ranks.
 */
ncclxResult_t ncclx_bootstrap_team_from_nodes(const ncclx_bootstrap_t *bs,
                                              const ncclx_bootstrap_node_t *nodes,
                                              uint32_t num_listed, ncclxTeam_t *team);

#endif /* NCCLX_PMIX_BOOTSTRAP_H_ */
