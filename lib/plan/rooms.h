/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The rooms above the context (EP, M2N) as the layers below them see them, so that the plan and
 * the context name no room: the plan places the rooms' host objects by the bytes they report,
 * and the context's build sequence loads each room's kernels and binds and unbinds it through
 * its table.  lib/rooms.c, the one file that sees every room, answers both (the dependency
 * points down: a room implements this header, the layers below only call through it).
 */
#ifndef NCCLX_LIB_ROOMS_H_
#define NCCLX_LIB_ROOMS_H_

#include <stddef.h>

#include <cuda_runtime_api.h>

#include <ncclx/result.h>

struct ncclxContext;

/** The host-arena objects the plan places for the rooms. */
typedef enum {
    NCCLX_HOST_EP_GROUP,   /* one per EP group */
    NCCLX_HOST_EP_HANDLE,  /* num_handles per EP group */
    NCCLX_HOST_M2N_ENGINE, /* one per context with M2N staging */
    NCCLX_HOST_M2N_ENTRY,  /* m2n_max_group_entries per context */
} ncclx_host_object_t;

/** Bytes of one host object of kind (lib/rooms.c). */
size_t ncclx_host_object_bytes(ncclx_host_object_t kind);

/** A room's part in the context's build sequence (ncclx_context_build). */
typedef struct {
    const char *name;
    /** Loads the room's kernel modules now, so no launch after init loads one lazily (which
     *  allocates device memory). */
    cudaError_t (*kernels_load)(void);
    /** Binds the room to the context's regions, after the arenas are zeroed and the peer
     *  table written; may create CUDA objects (events).  Not collective. */
    ncclxResult_t (*bind)(struct ncclxContext *ctx);
    /** Undoes bind, also after a bind that failed part way; idempotent. */
    ncclxResult_t (*unbind)(struct ncclxContext *ctx);
} ncclx_room_t;

/** Every room, in build order, NULL-terminated (lib/rooms.c); unbound in reverse order. */
extern const ncclx_room_t *const ncclx_rooms[];

#endif /* NCCLX_LIB_ROOMS_H_ */
