/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Contexts.  ncclxInit bootstraps from PMIx (rank, size, node layout; a plain ./app without a
 * PMIx server runs as rank 0 of 1), chooses and binds the GPU, creates the NCCL communicator
 * and allocates every arena of the plan, once.  Applications that already own an NCCL
 * communicator call ncclxInitWithComm instead and PMIx is not involved.  After init returns,
 * nothing in the library allocates until ncclxFinalize.
 *
 * Threads.  libncclx takes no lock around contexts or groups; the rules are:
 *  - ncclxInit, ncclxInitWithComm, ncclxLoopbackInit and ncclxFinalize are collective: every
 *    rank makes these calls in the same order, and one process never runs two of them at once
 *    (serialize them across threads).  The PMIx key instance and fence epoch they use are
 *    process-wide and must advance in the same order on every rank.
 *  - ncclxInit may set NCCL_IB_HCA (and undoes it if it fails): no other thread may call
 *    setenv/putenv/unsetenv, or getenv on that name, while it runs.
 *  - A live context may be used from several threads: ncclxContextGetInfo and
 *    ncclxContextGetPlacement only read it; each EP group (and its handles) needs external
 *    synchronization between threads, different groups may run in different threads (see
 *    ncclx/ep.h).  Nothing may use a context while, or after, ncclxFinalize runs on it.
 *  - Plan functions (ncclx/plan.h), placement queries, ncclxGetErrorString, ncclxGetLastError
 *    (per thread) and the logging calls (ncclx/log.h) are thread-safe.
 */
#ifndef NCCLX_INIT_H_
#define NCCLX_INIT_H_

#include <stdint.h>

#include <ncclx/placement.h>
#include <ncclx/plan.h>
#include <ncclx/result.h>
#include <ncclx/struct.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A CUDA stream (cudaStream_t), declared here so that the headers need no CUDA header. */
typedef struct CUstream_st *ncclxStream_t;

/** An initialized library instance (opaque). */
typedef struct ncclxContext *ncclxContext_t;

/** NCCL's communicator, declared here so that this header does not need nccl.h. */
struct ncclComm;

#define NCCLX_MAGIC_INIT_CONFIG  0x6e786963u /* 'nxic' */
#define NCCLX_MAGIC_CONTEXT_INFO 0x6e786369u /* 'nxci' */
#define NCCLX_MAGIC_NET_STATS    0x6e786e73u /* 'nxns' */

typedef struct {
    NCCLX_STRUCT_HEADER;
    int32_t cuda_device; /**< -1: NCCLX_CUDA_DEVICE, else the local rank among visible GPUs */
    uint32_t instance;   /**< tells apart ncclxInit contexts of one job in PMIx keys; 0: the
                              number of this ncclxInit call in the process (1, 2, ...) */
    uint32_t bind;       /**< 1: bind CPUs/memory near the GPU (NCCLX_BIND=NONE overrides) */
    uint32_t reserved0;
} ncclxInitConfig_t;

#define NCCLX_INIT_CONFIG_INIT                                                            \
    {                                                                                     \
        NCCLX_STRUCT_HEADER_INIT(ncclxInitConfig_t, NCCLX_MAGIC_INIT_CONFIG), -1, 0, 1, 0 \
    }

/** What a context runs on. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    int32_t rank, num_ranks;
    int32_t local_rank, local_size;
    int32_t node_id, num_nodes;
    int32_t cuda_device;
    int32_t lsa_size;
    uint64_t bytes[NCCLX_MEM_NUM_CLASSES]; /**< arena bytes actually allocated, per class */
    int32_t from_pmix;                     /**< 1: bootstrapped by PMIx, 0: caller's comm */
    int32_t singleton;                     /**< 1: no PMIx server, rank 0 of 1 */
} ncclxContextInfo_t;

#define NCCLX_CONTEXT_INFO_INIT                                                                   \
    {                                                                                             \
        NCCLX_STRUCT_HEADER_INIT(ncclxContextInfo_t, NCCLX_MAGIC_CONTEXT_INFO), 0, 0, 0, 0, 0, 0, \
            0, 0, {0}, 0, 0                                                                       \
    }

/**
 * Bootstraps from PMIx and allocates the plan.  config may be NULL (defaults).  On success
 * *context is set; on failure it is left untouched and everything done so far is undone: the
 * communicator is aborted, and the calling thread's CPU and memory binding, NCCL_IB_HCA and
 * the current CUDA device are put back as they were.
 *
 * Every rank fails together.  Init runs in steps (arguments and plan; placement; the
 * communicator; private memory; symmetric memory; device setup) and the ranks vote through
 * PMIx at the end of each, before the next collective: when one rank fails a step alone (a bad
 * NCCLX_* value, less free GPU memory), it returns its own error and every other rank returns
 * ncclxRemoteError naming that rank, the step and its message, instead of waiting in a
 * collective it will never join.  Right after the bootstrap (before the GPU is touched) the
 * ranks also compare their plans and team shapes (a hash, then the first difference): any
 * difference fails every rank with ncclxInvalidArgument naming the first differing group and
 * field and both ranks' values ("plan.ep_groups[0]->hidden is 4096 on rank 2 but 2048 on rank
 * 0").  A rank that dies or never calls ncclxInit turns into ncclxTimeout on the others after
 * NCCLX_FENCE_TIMEOUT_S.
 *
 * Without a PMIx server the process runs as rank 0 of 1, unless the environment says that a
 * launcher started several tasks (PMIX_RANK set, SLURM_STEP_NUM_TASKS, OMPI_COMM_WORLD_SIZE or
 * PMI_SIZE above 1): then ncclxPmixError names the variable.
 *
 * Errors: ncclxInvalidArgument (plan, config, environment, plans that differ between ranks),
 * ncclxRemoteError (another rank failed), ncclxPmixError, ncclxTimeout, ncclxCudaError (no
 * usable GPU), ncclxOutOfMemory (the plan does not fit: the message gives needed and free
 * bytes), ncclxNcclError.
 */
ncclxResult_t ncclxInit(const ncclxPlan_t *plan, const ncclxInitConfig_t *config,
                        ncclxContext_t *context);

/**
 * Same on a communicator the caller owns (and keeps owning: finalize does not destroy it).
 * The current CUDA device must be the communicator's.  Collective over comm: the ranks vote
 * and compare plans as ncclxInit does, through small NCCL collectives on comm before any
 * memory is registered, so one rank's failure fails every rank (ncclxRemoteError on the
 * others).  On failure comm is left to the caller, not aborted; a failure inside NCCL's own
 * window registration on some ranks only may leave comm unusable (ncclCommAbort it).
 * NCCL collectives have no timeout: a rank that never calls ncclxInitWithComm, or passes no
 * communicator, leaves the others waiting.
 */
ncclxResult_t ncclxInitWithComm(const ncclxPlan_t *plan, struct ncclComm *comm,
                                const ncclxInitConfig_t *config, ncclxContext_t *context);

/** Releases everything in reverse order of creation.  Collective (window deregistration). */
ncclxResult_t ncclxFinalize(ncclxContext_t context);

/**
 * The placement ncclxInit decided and applied (GPU, binding, NIC); start from
 * NCCLX_PLACEMENT_INIT.  ncclxInvalidUsage for a context from ncclxInitWithComm.
 */
ncclxResult_t ncclxContextGetPlacement(ncclxContext_t context, ncclxPlacement_t *placement);

/** Fills *info (start from NCCLX_CONTEXT_INFO_INIT). */
ncclxResult_t ncclxContextGetInfo(ncclxContext_t context, ncclxContextInfo_t *info);

/** The network between load/store domains of a context (docs/multi-node.md). */
typedef enum {
    NCCLX_NET_KIND_NONE = 0,     /**< one load/store domain: no network */
    NCCLX_NET_KIND_EMULATED = 1, /**< a loopback team shaped as several nodes */
    NCCLX_NET_KIND_GIN = 2,      /**< NCCL GIN (GPU-initiated networking) */
} ncclxNetKind_t;

/** What this rank sent across the network so far. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t kind;    /**< ncclxNetKind_t */
    uint32_t counted; /**< 1: the counters below are kept (the emulated network only) */
    uint64_t bytes;   /**< payload bytes put to ranks of other load/store domains */
    uint64_t puts;    /**< put operations, those carrying a signal included */
    uint64_t signals; /**< signals sent */
} ncclxNetStats_t;

#define NCCLX_NET_STATS_INIT                                                            \
    {                                                                                   \
        NCCLX_STRUCT_HEADER_INIT(ncclxNetStats_t, NCCLX_MAGIC_NET_STATS), 0, 0, 0, 0, 0 \
    }

/** Fills *stats (start from NCCLX_NET_STATS_INIT).  Waits for nothing: counters of work still
 *  running on the GPU may be partial (synchronize the ranks' streams first). */
ncclxResult_t ncclxContextGetNetStats(ncclxContext_t context, ncclxNetStats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_INIT_H_ */
