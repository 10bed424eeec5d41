/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP algorithms behind the front end (lib/ep/ep.c).  The front end owns the public calls,
 * groups, handles, the stream rule and the checks common to every algorithm; what differs
 * between LL (lib/ep/ep_ll.c) and HT (lib/ep/ep_ht.c) is one table of functions each, found
 * from the group's planned algorithm (the anchors' way: UCX uct_iface_ops_t, libfabric fi_ops).
 * The front end never names an algorithm, and neither algorithm calls the other.
 */
#ifndef NCCLX_LIB_EP_ALGO_H_
#define NCCLX_LIB_EP_ALGO_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ep_group.h"

struct ncclxContext;

typedef struct ncclx_ep_algo {
    const char *name;         /* "LL" or "HT", in messages */
    uint32_t second_layout;   /* the handle layout besides expert-major (RANK_MAJOR or FLAT) */
    const char *layouts_text; /* what a handle config error says of the layouts */
    uint32_t clear_keeps;     /* error bits ncclxEpClearAsyncError never clears */
    int has_masks;            /* the active-mask calls apply */
    int imports_handles;      /* ncclxEpHandleImport applies */
    /** After the front end's bind of the group (its common descriptor): the algorithm's own
     *  view of the group; NULL when it needs none. */
    void (*bind)(ncclx_ep_group_t *g, struct ncclxContext *ctx);
    /** Bytes of one handle of dims d (d->topk set) in layout, with the layout of its pieces
     *  written to ll or ht (the other is left alone). */
    size_t (*handle_layouts)(const ncclx_ep_dims_t *d, uint32_t layout,
                             ncclx_ep_ll_handle_layout_t *ll, ncclx_ep_ht_handle_layout_t *ht);
    /** Points h's kernel descriptor at caller_memory (laid out for h's shape) or, when NULL,
     *  at h's slot of the group's pool. */
    void (*handle_bind)(ncclx_ep_handle_t *h, char *caller_memory);
    /** Whether the group may route now (call names the entry point in the error). */
    ncclxResult_t (*route_ready)(const ncclx_ep_group_t *g, const char *call);
    /** Enqueues h's routing from topk_idx (h->config and the token count set). */
    cudaError_t (*launch_route)(ncclx_ep_handle_t *h, const void *topk_idx, int idx64,
                                cudaStream_t stream);
    /** A routing launch failed: what it leaves of the group. */
    void (*route_failed)(ncclx_ep_group_t *g);
    /** Dispatch and combine past the front end's checks (live handle, async error, no send in
     *  flight, args imported; combine: a completed dispatch). */
    ncclxResult_t (*dispatch)(ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                              ncclxStream_t stream);
    ncclxResult_t (*combine)(ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                             ncclxStream_t stream);
    /** ncclxEpComplete past the live-handle check. */
    ncclxResult_t (*complete)(ncclx_ep_handle_t *h, ncclxStream_t stream);
    /** Clears the error bits seen (nonzero, clear_keeps left out) in stream order. */
    ncclxResult_t (*clear)(ncclx_ep_group_t *g, uint32_t seen, ncclxStream_t stream);
} ncclx_ep_algo_t;

extern const ncclx_ep_algo_t ncclx_ep_ll_algo; /* lib/ep/ep_ll.c */
extern const ncclx_ep_algo_t ncclx_ep_ht_algo; /* lib/ep/ep_ht.c */

/** The algorithm of g's plan (validated at import: LL or HT). */
const ncclx_ep_algo_t *ncclx_ep_algo(const ncclx_ep_group_t *g);

#endif /* NCCLX_LIB_EP_ALGO_H_ */
