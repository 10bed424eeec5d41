/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL algorithm behind the EP front end (lib/ep/ep_algo.h): its handle memory, routing,
 * dispatch and combine in two halves (send, then receive; send_only leaves the receive to
 * ncclxEpComplete), and the clear of its error word.  Arguments are checked by
 * lib/ep/ep_ll_args.c; nothing here allocates or synchronizes with the host.
 */
#include <string.h>

#include "ep_algo.h"
#include "ep_group.h"
#include "ep_mask.h"
#include "error.h"
#include "gpu_check.h"
#include "struct.h"

static size_t ncclx_ll_handle_layouts(const ncclx_ep_dims_t *d, uint32_t layout,
                                      ncclx_ep_ll_handle_layout_t *ll,
                                      ncclx_ep_ht_handle_layout_t *ht)
{
    (void)ht;
    ncclx_ep_ll_handle_layout(d, layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR, ll);
    return ll->bytes;
}

static void ncclx_ll_handle_bind(ncclx_ep_handle_t *h, char *caller_memory)
{
    const ncclx_ep_group_t *g = h->group;
    ncclx_ep_ll_handle_layout_t ll = g->handle_layout;
    char *base;
    if (caller_memory != NULL) { /* laid out for this handle's shape alone */
        ncclx_ep_dims_t d = g->dims;
        d.topk = h->config.topk;
        (void)ncclx_ll_handle_layouts(&d, h->config.layout, &ll, NULL);
        base = caller_memory;
    } else { /* the group's pool: every handle has the stride of the largest shape */
        base = g->handle_memory + (size_t)h->index * ll.bytes;
    }
    ncclx_ep_ll_handle_desc_t *d = &h->desc;
    d->idx = (int32_t *)(base + ll.idx);
    d->route = (int32_t *)(base + ll.route);
    d->send_count = (int32_t *)(base + ll.send_count);
    d->recv_count = (int32_t *)(base + ll.recv_count);
    d->recv_tok = (int32_t *)(base + ll.recv_tok);
    const int expert_major = h->config.layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    d->recv_pos = expert_major ? (int32_t *)(base + ll.recv_pos) : NULL;
    d->expert_slot = expert_major ? (int32_t *)(base + ll.expert_slot) : NULL;
    d->expert_count = expert_major ? (int32_t *)(base + ll.expert_count) : NULL;
    /* Present exactly where the layout reserved it (a zero_copy plan's handles). */
    d->zero_copy_starts = ll.zero_copy_starts != 0 ? (int32_t *)(base + ll.zero_copy_starts) : NULL;
    d->topk = (int)h->config.topk;
    d->expert_major = expert_major;
    d->global_ids = (int)h->config.global_expert_ids;
}

/* An LL group may always route: a routing is local to the rank. */
static ncclxResult_t ncclx_ll_route_ready(const ncclx_ep_group_t *g, const char *call)
{
    (void)g;
    (void)call;
    return ncclxSuccess;
}

static cudaError_t ncclx_ll_launch_route(ncclx_ep_handle_t *h, const void *topk_idx, int idx64,
                                         cudaStream_t stream)
{
    return ncclx_ep_ll_launch_route(&h->group->desc, &h->desc, topk_idx, idx64, stream);
}

/* A failed LL routing leaves the handle without routing, and the group as it was. */
static void ncclx_ll_route_failed(ncclx_ep_group_t *g)
{
    (void)g;
}

/*
 * The receive half of a dispatch or combine whose send was enqueued.  If its launch fails,
 * the operation stays pending (the send already ran: sending again would put two operations
 * on one sequence number) and ncclxEpComplete retries the receive; the receive kernels are
 * safe to run again because only the last one ends the operation.  A pulled combine whose
 * receive posts its signal (signal_in_recv) had no send kernel: until the retry, its peers wait
 * for that signal (and time out if it never comes).
 */
static ncclxResult_t ncclx_launch_pending(ncclx_ep_handle_t *h, ncclxStream_t stream,
                                          const char *call)
{
    ncclx_ep_group_t *g = h->group;
    const int dispatch = h->pending == NCCLX_EP_PENDING_DISPATCH;
    cudaError_t err;
    ncclx_clear_stale_cuda_error(call);
    err = dispatch ? ncclx_ep_ll_launch_dispatch_recv(&g->desc, &h->desc, &h->pending_dispatch,
                                                      (cudaStream_t)stream)
                   : ncclx_ep_ll_launch_combine_recv(&g->desc, &h->desc, &h->pending_combine,
                                                     (cudaStream_t)stream);
    if (err != cudaSuccess) {
        g->send_in_flight = h;
        return NCCLX_ERROR(ncclxCudaError,
                           "%s: the receive of handle %u's %s failed to launch (%s) after its "
                           "send was enqueued; the operation stays in flight (its peers wait "
                           "for it): call ncclxEpComplete to retry it",
                           call, h->index, dispatch ? "dispatch" : "combine",
                           cudaGetErrorString(err));
    }
    h->dispatched = dispatch ? 1 : h->dispatched;
    h->pending = NCCLX_EP_PENDING_NONE;
    g->send_in_flight = NULL;
    return ncclx_ep_mark_stream(g, stream);
}

/* The send half; on success the operation is pending until its receive is enqueued. */
static ncclxResult_t ncclx_launch_send(ncclx_ep_handle_t *h, ncclx_ep_pending_t what,
                                       ncclxStream_t stream, const char *call)
{
    ncclx_ep_group_t *g = h->group;
    ncclxResult_t res = ncclxSuccess;
    ncclx_clear_stale_cuda_error(call);
    if (what == NCCLX_EP_PENDING_DISPATCH) {
        NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ll_launch_dispatch_send(
                                  &g->desc, &h->desc, &h->pending_dispatch, (cudaStream_t)stream),
                              res, out);
    } else {
        NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ll_launch_combine_send(
                                  &g->desc, &h->desc, &h->pending_combine, (cudaStream_t)stream),
                              res, out);
    }
    h->pending = what;
    g->send_in_flight = h;
    g->send_stream = stream;
out:
    return res;
}

static ncclxResult_t ncclx_ll_dispatch(ncclx_ep_handle_t *h, const ncclxEpDispatchArgs_t *a,
                                       ncclxStream_t stream)
{
    if (a->pass != NCCLX_EP_PASS_FORWARD) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpDispatch: args->pass=%u: LL dispatch is forward only "
                           "(NCCLX_EP_PASS_FORWARD)",
                           a->pass);
    }
    if (!h->routed) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpDispatch: handle %u has no routing (ncclxEpHandleInit gave "
                           "it none, or its last routing launch failed): call "
                           "ncclxEpHandleUpdate",
                           h->index);
    }
    /* Checked into a copy: a call the stream rule refuses leaves the handle's descriptor of its
     * last dispatch (whose operation word a combine derives) as it was. */
    ncclx_ep_ll_dispatch_desc_t desc;
    NCCLX_CHECK(ncclx_ep_dispatch_desc(h, a, &desc));
    NCCLX_CHECK(ncclx_ep_check_stream(h->group, stream, "ncclxEpDispatch"));
    h->pending_dispatch = desc;
    /* A new dispatch replaces the handle's received routing, whatever happens next. */
    h->dispatched = 0;
    NCCLX_CHECK(ncclx_launch_send(h, NCCLX_EP_PENDING_DISPATCH, stream, "ncclxEpDispatch"));
    if (!a->send_only) {
        return ncclx_launch_pending(h, stream, "ncclxEpDispatch");
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_ll_combine(ncclx_ep_handle_t *h, const ncclxEpCombineArgs_t *a,
                                      ncclxStream_t stream)
{
    if (a->pass != NCCLX_EP_PASS_FORWARD || a->out_topk_weights.ndim != 0 ||
        a->out_topk_weights.data != NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpCombine: args->%s: LL combine is forward only (pass "
                           "NCCLX_EP_PASS_FORWARD, no out_topk_weights)",
                           a->pass != NCCLX_EP_PASS_FORWARD ? "pass" : "out_topk_weights");
    }
    NCCLX_CHECK(ncclx_ep_check_stream(h->group, stream, "ncclxEpCombine"));
    NCCLX_CHECK(ncclx_ep_combine_desc(h, a, &h->pending_combine));
    NCCLX_CHECK(ncclx_launch_send(h, NCCLX_EP_PENDING_COMBINE, stream, "ncclxEpCombine"));
    if (!a->send_only) {
        return ncclx_launch_pending(h, stream, "ncclxEpCombine");
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_ll_complete(ncclx_ep_handle_t *h, ncclxStream_t stream)
{
    NCCLX_CHECK(ncclx_ep_async_check(h->group, "ncclxEpComplete"));
    if (h->pending == NCCLX_EP_PENDING_NONE) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpComplete: handle %u has no send_only "
                           "dispatch or combine in flight",
                           h->index);
    }
    if (stream != h->group->send_stream) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpComplete: stream %p is not the stream %p of handle %u's send: "
                           "a group runs on one stream",
                           (void *)stream, (void *)h->group->send_stream, h->index);
    }
    return ncclx_launch_pending(h, stream, "ncclxEpComplete");
}

ncclxResult_t ncclxEpGroupGetLlBuffers(ncclxEpGroup_t g, ncclxEpLlBuffers_t *buffers)
{
    ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
    if (g == NULL || buffers == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpGroupGetLlBuffers: %s is NULL",
                           g == NULL ? "group" : "buffers");
    }
    NCCLX_CHECK(ncclx_struct_check_output(buffers, NCCLX_MAGIC_EP_LL_BUFFERS,
                                          NCCLX_EP_LL_BUFFERS_SIZE_V1, "buffers"));
    if (g->plan.algorithm != NCCLX_EP_ALGO_LL || !g->plan.zero_copy) {
        return NCCLX_ERROR(ncclxInvalidUsage, "ncclxEpGroupGetLlBuffers: EP group %u %s", g->index,
                           g->plan.algorithm != NCCLX_EP_ALGO_LL
                               ? "is HT (ncclxEpGroupGetHtBuffers gives its zero-copy buffers)"
                               : "was planned without zero_copy (set zero_copy = 1 in its "
                                 "ncclxEpGroupPlan_t)");
    }
    b.tokens = g->zero_copy_tokens;
    b.scales = g->zero_copy_scales;
    b.row_bytes = g->dims.zero_copy_row_bytes;
    b.scale_bytes = g->dims.zero_copy_scale_bytes;
    b.rows = g->zero_copy_tokens != NULL ? (uint32_t)ncclx_ep_zero_copy_rows(g, 1) : 0;
    b.rank_major_tokens = g->zero_copy_rm_tokens;
    b.rank_major_scales = g->zero_copy_rm_scales;
    b.rank_major_rows =
        g->zero_copy_rm_tokens != NULL ? (uint32_t)ncclx_ep_zero_copy_rows(g, 0) : 0;
    ncclx_struct_export(buffers, &b, sizeof(b));
    return ncclxSuccess;
}

/* LL kernels read the error word as they go: the clear needs no stream rule. */
static ncclxResult_t ncclx_ll_clear(ncclx_ep_group_t *g, uint32_t seen, ncclxStream_t stream)
{
    ncclx_clear_stale_cuda_error("ncclxEpClearAsyncError");
    return NCCLX_CUDA_STATUS(ncclx_ep_ll_launch_clear_error(&g->desc, seen, (cudaStream_t)stream));
}

const ncclx_ep_algo_t ncclx_ep_ll_algo = {
    .name = "LL",
    .second_layout = NCCLX_EP_LAYOUT_RANK_MAJOR,
    .layouts_text = "an LL handle is NCCLX_EP_LAYOUT_EXPERT_MAJOR or NCCLX_EP_LAYOUT_RANK_MAJOR",
    .clear_keeps = 0,
    .has_masks = 1,
    .imports_handles = 0,
    .bind = NULL,
    .handle_layouts = ncclx_ll_handle_layouts,
    .handle_bind = ncclx_ll_handle_bind,
    .route_ready = ncclx_ll_route_ready,
    .launch_route = ncclx_ll_launch_route,
    .route_failed = ncclx_ll_route_failed,
    .dispatch = ncclx_ll_dispatch,
    .combine = ncclx_ll_combine,
    .complete = ncclx_ll_complete,
    .clear = ncclx_ll_clear,
};
