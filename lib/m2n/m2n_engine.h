/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The context's M2N engine (include/ncclx/m2n.h): what the plan gave it, the recorded group,
 * and the launch being built.  Lives in the host arena; bound once by ncclx_m2n_bind.
 */
#ifndef NCCLX_LIB_M2N_ENGINE_H_
#define NCCLX_LIB_M2N_ENGINE_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/m2n.h>

#include "m2n.h" /* kernels/: the launch */
#include "m2n_plan.h"
#include "rooms.h"

struct ncclxContext;

/* A recorded group entry: the descriptors, imported (so the caller's may die), and its stream. */
typedef struct {
    ncclxM2nTensor_t src, dst;
    ncclxStream_t stream;
} ncclx_m2n_entry_t;

/* One tensor of a call, checked: its two sides in planner form. */
typedef struct {
    ncclx_m2n_side_t side[2];
    ncclx_m2n_geom_t geom[2];
    void *data[2];
} ncclx_m2n_checked_t;

struct ncclx_m2n {
    struct ncclxContext *ctx;
    uint64_t slice;    /* bytes of a round of a channel (kernels/m2n/m2n_ring.h) */
    uint32_t channels; /* of one source's ring */
    int direct;        /* tile to tile: every rank on this GPU and NCCLX_M2N_PATH=AUTO */
    uint32_t ranks, rank;
    uint32_t node_size; /* ranks per load/store domain (the team's lsa_size) */
    uint32_t max_entries, num_entries;
    uint32_t depth;            /* group nesting */
    ncclxResult_t group_error; /* a record that failed: End refuses the whole group */
    char group_message[256];
    ncclx_m2n_entry_t *entries;
    volatile unsigned *status; /* host view of the mapped status */
    unsigned *status_device;
    ncclx_m2n_state_t *state;
    cudaEvent_t done; /* the last eager call's end */
    int have_done;    /* done was recorded (a stream handle, NULL included, says nothing) */
    int broken;       /* a launch failed after others of its call were enqueued */
    ncclx_m2n_checked_t checked[NCCLX_M2N_MAX_TRANSFERS]; /* one launch's tensors */
    ncclx_m2n_geom_t src_geom[NCCLX_M2N_MAX_TRANSFERS], dst_geom[NCCLX_M2N_MAX_TRANSFERS];
    ncclx_m2n_edge_t edges[NCCLX_M2N_MAX_TRANSFERS];
    ncclx_m2n_rank_plan_t plan;
    ncclx_m2n_launch_t launch;
};

/** M2N's room in the context's build sequence (lib/m2n/m2n_engine.c). */
extern const ncclx_room_t ncclx_m2n_room;

/** Bytes of the engine struct (a host region of the plan). */
size_t ncclx_m2n_engine_bytes(void);

/** Bytes of one recorded group entry. */
size_t ncclx_m2n_entry_bytes(void);

/** Fills the engine in its host region from ctx's plan and regions, touching no GPU (what
 *  ncclx_m2n_bind does before it creates the engine's event; tests build a CPU context with
 *  it).  NULL without M2N staging. */
struct ncclx_m2n *ncclx_m2n_bind_host(struct ncclxContext *ctx);

/** Binds the engine to its regions (ctx->m2n); leaves ctx->m2n NULL without M2N staging. */
ncclxResult_t ncclx_m2n_bind(struct ncclxContext *ctx);

/** Undoes ncclx_m2n_bind (its event). */
ncclxResult_t ncclx_m2n_unbind(struct ncclxContext *ctx);

/** Bytes of one element of dtype t as M2N moves it (FP4x2: a byte of two values); 0 for a
 *  dtype M2N does not take. */
uint32_t ncclx_m2n_dtype_bytes(ncclxDataType_t t);

#endif /* NCCLX_LIB_M2N_ENGINE_H_ */
