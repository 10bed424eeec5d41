/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Host-side EP group and handle objects.  Both live in the host arena: groups where the plan
 * put them, handles in each group's pool, so creating a handle never allocates.
 */
#ifndef NCCLX_LIB_EP_GROUP_H_
#define NCCLX_LIB_EP_GROUP_H_

#include <stdint.h>

#include <ncclx/ep.h>

#include "ep_ht.h"
#include "ep_ll.h"
#include "plan_internal.h"
#include "pool.h"
#include "rooms.h"

struct ncclxContext;

typedef enum {
    NCCLX_EP_PENDING_NONE = 0,
    NCCLX_EP_PENDING_DISPATCH = 1, /* send_only dispatch awaiting ncclxEpComplete */
    NCCLX_EP_PENDING_COMBINE = 2   /* send_only combine awaiting ncclxEpComplete */
} ncclx_ep_pending_t;

struct ncclxEpHandle {
    struct ncclxEpGroup *group;
    uint32_t index;         /* slot in the group's pool */
    uint32_t live;          /* between create and destroy */
    uint32_t routed;        /* the last routing launch succeeded: dispatch may follow */
    uint32_t dispatched;    /* a dispatch completed: combine may follow */
    uint32_t route_gen;     /* HT: the group's route_gen when this handle was routed */
    uint32_t caller_memory; /* its device memory is the caller's (ncclxEpHandleInit) */
    ncclx_ep_pending_t pending;
    ncclxEpHandleConfig_t config;
    ncclx_ep_ll_handle_desc_t desc;
    ncclx_ep_ll_dispatch_desc_t pending_dispatch;
    ncclx_ep_ll_combine_desc_t pending_combine;
    ncclx_ep_ht_handle_desc_t ht; /* HT groups: what the HT kernels see */
};
typedef struct ncclxEpHandle ncclx_ep_handle_t;

struct ncclxEpGroup {
    ncclxEpGroupPlan_t plan;
    ncclx_ep_dims_t dims;
    ncclx_ep_group_regions_t regions;
    ncclx_ep_ll_handle_layout_t handle_layout;
    uint32_t index;
    ncclx_pool_t handles;
    struct ncclxContext *ctx;
    ncclx_ep_ll_group_desc_t desc; /* what the LL kernels see */
    ncclx_ep_ht_group_desc_t ht;   /* what the HT kernels see (HT groups) */
    char *ht_dispatch_rows;        /* HT: this rank's dispatch rows (local address) */
    char *ht_combine_rows;         /* HT: this rank's combine rows (local address) */
    char *zero_copy_tokens;        /* LL zero_copy: this rank's zero-copy rows (local address) */
    char *zero_copy_scales;        /* LL zero_copy: its scale rows (NULL without scales) */
    char *zero_copy_rm_tokens;     /* LL zero_copy, rank-major in the plan: its rank-major rows */
    char *zero_copy_rm_scales;     /* and their scale rows (NULL without scales) */
    ncclx_ep_ht_handle_layout_t ht_handle_layout;
    char *handle_memory;       /* device: num_handles * handle_layout.bytes */
    volatile uint32_t *status; /* host view of the mapped status (error bits) */
    ncclx_ep_handle_t *send_in_flight;
    /* HT: advanced when an overflow is cleared; a handle routed before it must be routed again
     * (its routing overflowed, or was skipped while the group was stopped). */
    uint32_t route_gen;
    uint32_t broken; /* HT: a launch failed after a step's first kernel: the group is unusable */
    uint8_t *masked_by_update; /* host [R] (enable_mask): ranks this rank masked by update */
    /* One stream per group: the stream of the last operation and an event recorded after it
     * (NULL until the group is bound), so a call on another stream can tell whether the
     * group's earlier work is known complete. */
    ncclxStream_t last_stream;
    struct CUevent_st *op_done;
    /* The stream of the send_only send in flight (send_in_flight): its ncclxEpComplete must
     * come on the same stream, eager or captured alike. */
    ncclxStream_t send_stream;
};
typedef struct ncclxEpGroup ncclx_ep_group_t;

/** EP's room in the context's build sequence (lib/ep/ep_groups.c). */
extern const ncclx_room_t ncclx_ep_room;

/** Fills group->desc and friends once the context's arenas exist (context setup), and creates
 *  the group's event; ncclx_ep_group_unbind destroys it. */
ncclxResult_t ncclx_ep_group_bind(ncclx_ep_group_t *group, struct ncclxContext *ctx, int rank,
                                  int blocks);
ncclxResult_t ncclx_ep_group_unbind(ncclx_ep_group_t *group);

/** One stream per group: refuses stream when the group's last operation ran on another
 *  stream and is not known complete (the error names call). */
/** A handle a call may use: not NULL (ncclxInvalidArgument), not destroyed
 *  (ncclxInvalidUsage); call names the entry point in the message. */
ncclxResult_t ncclx_ep_check_live(const ncclx_ep_handle_t *h, const char *call);

ncclxResult_t ncclx_ep_check_stream(ncclx_ep_group_t *group, ncclxStream_t stream,
                                    const char *call);

/** Records that the group's latest operation was enqueued on stream. */
ncclxResult_t ncclx_ep_mark_stream(ncclx_ep_group_t *group, ncclxStream_t stream);

/* ---- HT (lib/ep/ep_ht.c) ---- */

/** Fills the HT kernels' view of group g from its LL view (ncclx_ep_group_bind calls it for HT
 *  groups, after filling that). */
void ncclx_ep_ht_group_bind(ncclx_ep_group_t *g, struct ncclxContext *ctx);

/** Points the handle's HT descriptor at device memory base laid out as l (config set). */
void ncclx_ep_ht_handle_desc(ncclx_ep_handle_t *h, char *base,
                             const ncclx_ep_ht_handle_layout_t *l);

/* ---- handles of both algorithms (lib/ep/ep.c) ---- */

/** Bytes of one handle of g for (layout, topk), and the layout of its pieces (ll for LL
 *  groups, ht for HT groups; the other is left alone). */
size_t ncclx_ep_handle_layouts(const ncclx_ep_group_t *g, uint32_t layout, uint32_t topk,
                               ncclx_ep_ll_handle_layout_t *ll, ncclx_ep_ht_handle_layout_t *ht);

/** Points h's kernel descriptor at its device memory: caller_memory laid out for h's own
 *  (layout, topk), or (NULL) its slot of the group's pool.  h->config must be set. */
void ncclx_ep_handle_bind(ncclx_ep_handle_t *h, char *caller_memory);

/** Takes a handle from g's pool for config cfg, unrouted, bound to caller_memory (or its pool
 *  slot when NULL); ncclxResourceExhausted when all are in use.  Not yet live. */
ncclxResult_t ncclx_ep_handle_take(ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *cfg,
                                   char *caller_memory, ncclx_ep_handle_t **out);

/** Checks a handle config against the group (LL or HT); errors name "config->field". */
ncclxResult_t ncclx_ep_check_config(const ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *c);

/** The same, with the fields named prefix + "field" in errors. */
ncclxResult_t ncclx_ep_check_config_named(const ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *c,
                                          const char *prefix);

/** HT argument checks (naming the field) that fill the kernels' call descriptors; pure host
 *  code (tests/unit/test_ep_ht_args.c runs them without a GPU). */
ncclxResult_t ncclx_ep_ht_dispatch_desc(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                        ncclx_ep_ht_dispatch_desc_t *d);
ncclxResult_t ncclx_ep_ht_combine_desc(const ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                       ncclx_ep_ht_combine_desc_t *d);

/** ncclxEpHandleImport's error for a nonzero verdict of its check kernel (NCCLX_EP_HT_IMPORT_*
 *  bits; the first of header format, geometry, overflow, state and checksum names the cause);
 *  st is the caller's state.  Pure host code (test_ep_handle_import runs it). */
ncclxResult_t ncclx_ep_ht_import_refusal(unsigned verdict, const ncclxEpHandleState_t *st);

/** HT dispatch / combine: checks the arguments (naming the field), then launches. */
ncclxResult_t ncclx_ep_ht_dispatch(ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                   ncclxStream_t stream);
ncclxResult_t ncclx_ep_ht_combine(ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                  ncclxStream_t stream);

/** LL zero_copy: the rows of the group's zero-copy rows (and scale rows) of a layout: L x R x T
 *  expert-major, R x T rank-major. */
static inline size_t ncclx_ep_zero_copy_rows(const ncclx_ep_group_t *g, int expert_major)
{
    return (expert_major ? (size_t)g->dims.local_experts : 1) * g->dims.ranks * g->dims.tokens;
}

/** Checks dispatch arguments against the handle and fills the kernels' call descriptor. */
ncclxResult_t ncclx_ep_dispatch_desc(const ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                     ncclx_ep_ll_dispatch_desc_t *d);

/** Checks combine arguments against the handle and fills the kernels' call descriptor. */
ncclxResult_t ncclx_ep_combine_desc(const ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                    ncclx_ep_ll_combine_desc_t *d);

#endif /* NCCLX_LIB_EP_GROUP_H_ */
