/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The context: one initialized library instance and everything it allocated at init.
 */
#ifndef NCCLX_LIB_CONTEXT_H_
#define NCCLX_LIB_CONTEXT_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <ncclx/ep.h> /* the loopback config */
#include <ncclx/init.h>
#include <ncclx/placement.h>

#include "env.h"
#include "kernels.h"
#include "net.h"
#include "plan_internal.h"

/** The four arenas' memory, allocated once. */
typedef struct {
    void *base[NCCLX_MEM_NUM_CLASSES]; /* host view; NULL when the class is empty */
    size_t bytes[NCCLX_MEM_NUM_CLASSES];
    void *mapped_device; /* device view of the mapped-host arena */
    ncclWindow_t window; /* the symmetric arena's window (NCCL contexts) */
    int host_owned;      /* the host block was allocated by us */
} ncclx_arenas_t;

struct ncclxContext;
struct ncclx_loopback;

/**
 * Where a context's symmetric memory and its peers' views of it come from: the NCCL window of
 * a communicator (ncclx_window_ops), or a slice of a loopback team's block
 * (ncclx_loopback_ops).  Everything else about building a context is shared
 * (ncclx_context_build); a new kind of team is a new table, not a new build sequence.
 */
typedef struct {
    const char *name;
    /** Allocates and registers bytes of symmetric memory into ctx->arenas (collective). */
    ncclxResult_t (*alloc)(struct ncclxContext *ctx, size_t bytes);
    /** Writes the device peer table (lsa_size base pointers) on ctx->stream. */
    ncclxResult_t (*resolve_peers)(struct ncclxContext *ctx);
    /** Returns once every rank's arenas are ready for its peers' writes (collective). */
    ncclxResult_t (*barrier)(struct ncclxContext *ctx);
    /** Undoes alloc (collective); does nothing when alloc has not run or failed. */
    ncclxResult_t (*free)(struct ncclxContext *ctx);
    /** Writes every rank's arena into the device table world [num_ranks] (the emulated
     *  network's one view of the other ranks); NULL where the network is a real one. */
    ncclxResult_t (*resolve_world)(struct ncclxContext *ctx, void **world);
} ncclx_symmetric_ops_t;

extern const ncclx_symmetric_ops_t ncclx_window_ops;   /* lib/context/context.c */
extern const ncclx_symmetric_ops_t ncclx_loopback_ops; /* lib/context/loopback.c */

/**
 * The collectives that keep the ranks of an init in step: PMIx for ncclxInit (it works before
 * the communicator exists and whatever becomes of it), the caller's communicator for
 * ncclxInitWithComm.  A loopback team needs none: one process builds every rank.
 */
typedef struct ncclx_init_coll {
    uint32_t rank, size;
    /** Every rank's bytes at mine land in all[rank * bytes]; step names the exchange. */
    ncclxResult_t (*allgather)(struct ncclx_init_coll *coll, const char *step, const void *mine,
                               void *all, size_t bytes);
    /** root's bytes at data land in every rank's data. */
    ncclxResult_t (*broadcast)(struct ncclx_init_coll *coll, const char *step, uint32_t root,
                               void *data, size_t bytes);
    void *state;
} ncclx_init_coll_t;

/**
 * Ends a step of init on every rank at once, so that no rank goes on into a collective that a
 * failed rank will never join.  mine is this rank's result of the step.  Any failure fails every
 * rank: a failed rank returns its own error, the others ncclxRemoteError naming the first
 * failed rank, the step and that rank's message.  With norm (the first step), every rank must
 * also hold the same plan and team and, when instance is not 0, the same PMIx key instance:
 * otherwise every rank returns ncclxInvalidArgument naming the first differing group and field
 * with both ranks' values.  coll NULL: returns mine.
 */
ncclxResult_t ncclx_init_agree(ncclx_init_coll_t *coll, const char *step, ncclxResult_t mine,
                               const ncclx_plan_norm_t *norm, uint32_t instance);

struct ncclxContext {
    ncclx_plan_norm_t norm; /* the plan, imported once per context */
    ncclx_plan_regions_t regions;
    ncclx_arenas_t arenas;
    const ncclx_symmetric_ops_t *sym; /* set by ncclx_context_build */
    ncclComm_t comm;
    int comm_owned; /* created by ncclxInit: destroyed at finalize */
    int cuda_device;
    cudaStream_t stream;  /* init/finalize work, non-blocking */
    void **peer_table;    /* device: lsa_size pointers into the symmetric arenas */
    ncclx_net_desc_t net; /* the network transport (lib/context/net.c) */
    void *net_gin_state;  /* GIN: NCCL's device communicator (host object) */
    struct ncclxEpGroup *groups[NCCLX_MAX_EP_GROUPS]; /* bound by EP's room (lib/ep/ep_groups.c) */
    struct ncclx_m2n *m2n; /* the M2N engine (lib/m2n/m2n.c), NULL without M2N staging */
    ncclxContextInfo_t info;
    void *bootstrap;            /* pmix/bootstrap state when ncclxInit made it */
    ncclxPlacement_t placement; /* what ncclxInit decided and applied */
    int has_placement;
    int rank;                        /* this context's rank in the team */
    int blocks;                      /* default grid size of data-moving kernels */
    int blocks_masked;               /* the same for groups with an active mask */
    int early_launch;                /* receive kernels may start before their send ended: the
                                        rank has a GPU of compute capability >= 9.0 to itself */
    struct ncclx_loopback *loopback; /* loopback team: the shared symmetric block */
    int all_buffers_reachable;       /* an unshaped loopback team: every rank can address every
                                        rank's caller buffers (the one-GPU direct paths) */
    int loopback_ref;                /* this context holds a reference on it */
    ncclx_init_coll_t *coll;         /* during init: agreement between build steps, or NULL */
};

/**
 * Allocates the private arenas for the measured bytes (device, mapped host, host: the plan's
 * block or ours) after checking that the whole plan, symmetric class included, fits in the
 * GPU's free memory (ncclxOutOfMemory naming needed and free bytes).  Records every class's
 * bytes; the symmetric class itself is the ops table's.
 */
ncclxResult_t ncclx_arenas_alloc(ncclx_arenas_t *arenas, const size_t bytes[],
                                 const ncclxPlan_t *plan);

/** Frees what ncclx_arenas_alloc allocated (not the symmetric class). */
ncclxResult_t ncclx_arenas_free(ncclx_arenas_t *arenas);

/** Address of region offset in class c (device view for device classes). */
void *ncclx_arena_ptr(const ncclx_arenas_t *arenas, ncclxMemClass_t c, size_t offset);

/** cudaSetDevice(ctx->cuda_device) and ctx->stream; ncclx_context_teardown undoes it. */
ncclxResult_t ncclx_context_open(struct ncclxContext *ctx);

/** Sets ctx->blocks and ctx->blocks_masked from the GPU's SM count shared by ranks_on_gpu
 *  ranks, and ctx->early_launch. */
ncclxResult_t ncclx_context_default_blocks(struct ncclxContext *ctx, int ranks_on_gpu);

/** Whether a capability with a direct path on one GPU takes it on this context: every rank is
 * on this GPU in a loopback team without an emulated shape (one process, so every rank can
 * address every caller buffer and every rank reads the same environment) and `path_var`
 * (NCCLX_M2N_PATH, NCCLX_EP_HT_PATH, validated at init) is AUTO rather than STAGED. */
int ncclx_context_direct_path(const struct ncclxContext *ctx, ncclx_env_id_t path_var);

/**
 * The one build sequence of every context, after ncclx_context_open and with ctx->norm (the
 * imported plan and team), rank, cuda_device, blocks and coll set: region layout, private
 * arenas, symmetric memory through sym, zeroed arenas, peer table, kernel modules, groups, a
 * barrier, info.  The ranks agree (ctx->coll) after each step that can fail on one rank alone,
 * before the next collective.  On failure ncclx_context_teardown undoes what it did; nothing
 * collective is left half done.
 */
ncclxResult_t ncclx_context_build(struct ncclxContext *ctx, const ncclx_symmetric_ops_t *sym);

/** Undoes ncclx_context_build (when it succeeded) and ncclx_context_open; first failure. */
ncclxResult_t ncclx_context_teardown(struct ncclxContext *ctx);

/**
 * ncclxLoopbackInit with one plan per rank (plans[r] for rank r): every plan is imported and
 * compared with rank 0's before the GPU is touched, and a difference fails with
 * ncclxInvalidArgument naming the first differing group and field.  ncclxLoopbackInit passes
 * its one plan for every rank.
 */
ncclxResult_t ncclx_loopback_init(const ncclxPlan_t *const plans[],
                                  const ncclxLoopbackConfig_t *config, ncclxContext_t contexts[]);

/** Sets up ctx->net in its regions (after the arenas are zeroed); collective with GIN. */
ncclxResult_t ncclx_net_setup(struct ncclxContext *ctx);

/** Undoes ncclx_net_setup (collective with GIN); nothing when it did nothing. */
ncclxResult_t ncclx_net_teardown(struct ncclxContext *ctx);

/** What crossed the emulated network from this rank so far (zeros for any other network). */
ncclxResult_t ncclx_net_read_stats(struct ncclxContext *ctx, ncclx_net_stats_t *stats);

/** The LSA (load/store) team size NCCL found for comm, or ncclxNcclError. */
ncclxResult_t ncclx_comm_lsa_size(ncclComm_t comm, uint32_t *lsa_size);

#endif /* NCCLX_LIB_CONTEXT_H_ */
