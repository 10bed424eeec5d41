/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The context: one initialized library instance and everything it allocated at init.
 */
#ifndef NCCLX_LIB_CONTEXT_H_
#define NCCLX_LIB_CONTEXT_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <ncclx/init.h>
#include <ncclx/placement.h>

#include "ep_group.h"
#include "kernels.h"
#include "plan_internal.h"

/** The four arenas' memory, allocated once. */
typedef struct {
    void *base[NCCLX_MEM_NUM_CLASSES]; /* host view; NULL when the class is empty */
    size_t bytes[NCCLX_MEM_NUM_CLASSES];
    void *mapped_device;  /* device view of the mapped-host arena */
    ncclWindow_t window;  /* the symmetric arena's window */
    int host_owned;       /* the host block was allocated by us */
    int symmetric_shared; /* base[SYMMETRIC] is a loopback team's slice */
} ncclx_arenas_t;

struct ncclx_loopback;

struct ncclxContext {
    ncclx_plan_norm_t norm;
    ncclx_plan_regions_t regions;
    ncclx_arenas_t arenas;
    ncclComm_t comm;
    int comm_owned; /* created by ncclxInit: destroyed at finalize */
    int cuda_device;
    cudaStream_t stream; /* init/finalize work, non-blocking */
    _Alignas(16) unsigned char devcomm[NCCLX_DEVCOMM_STORAGE_BYTES];
    int devcomm_created;
    void **peer_table; /* device: lsa_size pointers into the window */
    ncclx_ep_group_t *groups[NCCLX_MAX_EP_GROUPS];
    ncclxContextInfo_t info;
    void *bootstrap;            /* pmix/bootstrap state when ncclxInit made it */
    ncclxPlacement_t placement; /* what ncclxInit decided and applied */
    int has_placement;
    int rank;                        /* this context's rank in the team */
    int blocks;                      /* default grid size of data-moving kernels */
    struct ncclx_loopback *loopback; /* shared symmetric block of a loopback team */
};

/**
 * Allocates the arenas for the layout measured in norm/regions: symmetric (ncclMemAlloc +
 * symmetric window on comm, collective), private device, mapped host, host (plan's block or
 * ours).  Fails with ncclxOutOfMemory naming the bytes needed and free.
 */
ncclxResult_t ncclx_arenas_alloc(ncclx_arenas_t *arenas, const size_t bytes[],
                                 const ncclxPlan_t *plan, ncclComm_t comm);

/** Frees what ncclx_arenas_alloc allocated, in reverse order (collective: deregisters). */
ncclxResult_t ncclx_arenas_free(ncclx_arenas_t *arenas, ncclComm_t comm);

/** Address of region offset in class c (device view for device classes). */
void *ncclx_arena_ptr(const ncclx_arenas_t *arenas, ncclxMemClass_t c, size_t offset);

/** Builds the host group objects and their handle pools inside the host arena. */
void ncclx_context_build_groups(struct ncclxContext *ctx);

/**
 * On ctx->comm (set by the caller): device communicator, team (from team, or from the
 * communicator when NULL), plan import and layout, arenas, peer table, groups, a barrier.
 * Undoes everything it did on failure.
 */
ncclxResult_t ncclx_context_setup(struct ncclxContext *ctx, const ncclxPlan_t *plan,
                                  const ncclxTeam_t *team);

/** Sets ctx->blocks from the GPU's SM count shared by ranks_on_gpu ranks. */
ncclxResult_t ncclx_context_default_blocks(struct ncclxContext *ctx, int ranks_on_gpu);

/** Zeroes the device arenas, resolves the peer table (NCCL window), loads the kernels. */
ncclxResult_t ncclx_context_prepare_device(struct ncclxContext *ctx);

/** Fills ctx->info from the team and the arenas. */
void ncclx_context_fill_info(struct ncclxContext *ctx);

/** Drops a context's reference on its loopback team's shared block (frees the last). */
ncclxResult_t ncclx_loopback_release(struct ncclx_loopback *team);

/** Undoes ncclx_context_setup (not the communicator); reports the first failure. */
ncclxResult_t ncclx_context_teardown(struct ncclxContext *ctx);

#endif /* NCCLX_LIB_CONTEXT_H_ */
