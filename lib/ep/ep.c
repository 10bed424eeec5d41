/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP front end: the public calls on groups and handles, dispatch, combine, complete and the
 * error word, the one-stream rule, and the checks every algorithm shares.  What differs
 * between LL and HT is behind their tables of functions (lib/ep/ep_algo.h), chosen by the
 * group's planned algorithm; this file names neither.  Nothing here allocates or synchronizes
 * with the host.
 */
#include <string.h>

#include "context.h"
#include "ep_algo.h"
#include "env.h"
#include "ep_group.h"
#include "ep_mask.h"
#include "ep_tensor.h"
#include "error.h"
#include "gpu_check.h"
#include "log.h"
#include "struct.h"

#define BIT(t)         NCCLX_DTYPE_BIT(t)
#define COMBINE_DTYPES (BIT(NCCLX_BFLOAT16) | BIT(NCCLX_FLOAT16) | BIT(NCCLX_FLOAT32))
#define IDX_DTYPES     (BIT(NCCLX_INT32) | BIT(NCCLX_INT64))

/* Whether stream is being captured into a graph (*capturing).  The error names call: a stream
 * CUDA cannot answer for (the legacy stream while another thread captures in global mode) is
 * refused rather than taken for an eager one. */
static ncclxResult_t ncclx_ep_stream_capturing(ncclxStream_t stream, const char *call,
                                               int *capturing)
{
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaError_t err = cudaStreamIsCapturing((cudaStream_t)stream, &capture);
    if (err != cudaSuccess) {
        return NCCLX_ERROR(ncclxCudaError, "%s: cudaStreamIsCapturing(stream %p): %s", call,
                           (void *)stream, cudaGetErrorString(err));
    }
    *capturing = capture != cudaStreamCaptureStatusNone;
    return ncclxSuccess;
}

/*
 * One stream per group, for eager work: an eager operation on a stream other than the last
 * eager one's is refused until the group's earlier eager work is known complete (its event
 * has fired), because two streams would race on the group's sequence numbers and receive
 * buffers.  Captures are neither checked nor remembered: a graph's launches run only when the
 * caller replays it, ordered by the stream it is replayed on, so the caller orders replays
 * against eager calls (docs/ep-ll.md, "Streams and graphs").  Remembering a capture would
 * also break the group: CUDA refuses to query an event last recorded inside a capture, so
 * every later eager call on another stream would fail (the PyTorch pattern: warm up and
 * capture on a side stream, then keep calling eagerly on the program's own streams).
 */
ncclxResult_t ncclx_ep_check_stream(ncclx_ep_group_t *g, ncclxStream_t stream, const char *call)
{
    int capturing = 0;
    if (g->op_done == NULL || stream == g->last_stream || g->last_stream == NULL) {
        return ncclxSuccess;
    }
    NCCLX_CHECK(ncclx_ep_stream_capturing(stream, call, &capturing));
    if (capturing) {
        return ncclxSuccess;
    }
    cudaError_t err = cudaEventQuery(g->op_done);
    if (err == cudaErrorNotReady) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: stream %p differs from the stream %p of EP group %u's previous "
                           "operation, which is not complete: a group runs on one stream "
                           "(synchronize the previous stream first)",
                           call, (void *)stream, (void *)g->last_stream, g->index);
    }
    if (err != cudaSuccess) {
        return NCCLX_ERROR(ncclxCudaError, "%s: cudaEventQuery: %s", call, cudaGetErrorString(err));
    }
    return ncclxSuccess;
}

/* After a successful enqueue: an eager operation's stream is remembered and the end of the
 * group's work marked by the event; a captured one changes nothing (see above). */
ncclxResult_t ncclx_ep_mark_stream(ncclx_ep_group_t *g, ncclxStream_t stream)
{
    int capturing = 0;
    if (g->op_done == NULL) { /* a group without CUDA state (host-only tests) */
        g->last_stream = stream;
        return ncclxSuccess;
    }
    NCCLX_CHECK(ncclx_ep_stream_capturing(stream, "ncclx_ep_mark_stream", &capturing));
    if (capturing) {
        return ncclxSuccess;
    }
    g->last_stream = stream;
    return NCCLX_CUDA_STATUS(cudaEventRecord(g->op_done, (cudaStream_t)stream));
}

ncclxResult_t ncclxEpGroupGet(ncclxContext_t ctx, uint32_t index, ncclxEpGroup_t *group)
{
    if (ctx == NULL || group == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpGroupGet: %s is NULL",
                           ctx == NULL ? "ctx" : "group");
    }
    if (index >= ctx->norm.num_groups) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpGroupGet: index=%u but the plan declares %u EP group(s)", index,
                           ctx->norm.num_groups);
    }
    *group = ctx->groups[index];
    return ncclxSuccess;
}

/* ---- handles ---- */

const ncclx_ep_algo_t *ncclx_ep_algo(const ncclx_ep_group_t *g)
{
    return g->plan.algorithm == NCCLX_EP_ALGO_HT ? &ncclx_ep_ht_algo : &ncclx_ep_ll_algo;
}

ncclxResult_t ncclx_ep_handle_take(ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *cfg,
                                   char *caller_memory, ncclx_ep_handle_t **out)
{
    ncclx_ep_handle_t *h = NULL;
    uint32_t index;
    NCCLX_CHECK(ncclx_pool_acquire(&g->handles, (void **)&h, &index));
    /* A slot may hold what its previous handle left: every field a call reads is set here. */
    h->group = g;
    h->index = index;
    h->config = *cfg;
    h->pending = NCCLX_EP_PENDING_NONE;
    h->routed = 0;
    h->dispatched = 0;
    h->desc.num_tokens = h->ht.num_tokens = 0;
    ncclx_ep_handle_bind(h, caller_memory);
    *out = h;
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_check_config_named(const ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *c,
                                          const char *prefix)
{
    const ncclx_ep_algo_t *algo = ncclx_ep_algo(g);
    if (c->layout != NCCLX_EP_LAYOUT_EXPERT_MAJOR && c->layout != algo->second_layout) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%slayout=0x%x: %s", prefix, c->layout,
                           algo->layouts_text);
    }
    if (!(g->plan.layouts & c->layout)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%slayout=0x%x is not in the group's plan layouts 0x%x", prefix,
                           c->layout, g->plan.layouts);
    }
    if (c->topk < 1 || c->topk > g->plan.max_topk) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%stopk=%u is outside [1, max_topk=%u]", prefix,
                           c->topk, g->plan.max_topk);
    }
    if (c->global_expert_ids > 1) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%sglobal_expert_ids=%u: must be 0 or 1", prefix,
                           c->global_expert_ids);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_check_config(const ncclx_ep_group_t *g, const ncclxEpHandleConfig_t *c)
{
    return ncclx_ep_check_config_named(g, c, "config->");
}

static ncclxResult_t ncclx_route(ncclx_ep_handle_t *h, const ncclxTensor_t *topk_idx,
                                 const char *call, ncclxStream_t stream)
{
    ncclx_ep_group_t *g = h->group;
    const ncclx_ep_algo_t *algo = ncclx_ep_algo(g);
    const int64_t shape[2] = {NCCLX_ANY_DIM, h->config.topk};
    char what[96];
    ncclxResult_t res = ncclxSuccess;
    snprintf(what, sizeof(what), "%s: topk_idx", call);
    NCCLX_CHECK(ncclx_tensor_check(topk_idx, what, IDX_DTYPES, 2, shape, "[num_tokens, topk]"));
    if (topk_idx->shape[0] > (int64_t)g->dims.tokens) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s.shape[0]=%lld tokens exceeds the group's "
                           "max_dispatch_tokens_per_rank=%u",
                           what, (long long)topk_idx->shape[0], g->dims.tokens);
    }
    NCCLX_CHECK(algo->route_ready(g, call));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, call));
    /* Whatever happens next, the previous routing and its dispatch are gone. */
    h->routed = 0;
    h->dispatched = 0;
    h->desc.num_tokens = h->ht.num_tokens = (int)topk_idx->shape[0];
    ncclx_clear_stale_cuda_error(call);
    const int idx64 = topk_idx->dtype == NCCLX_INT64;
    const cudaError_t err = algo->launch_route(h, topk_idx->data, idx64, (cudaStream_t)stream);
    if (err != cudaSuccess) {
        algo->route_failed(g); /* the handle has no routing; the group as its algorithm says */
        res = NCCLX_ERROR(ncclxCudaError, "%s: the %s routing launch failed: %s (%s)", call,
                          algo->name, cudaGetErrorName(err), cudaGetErrorString(err));
        goto out;
    }
    h->routed = 1;
    h->route_gen = g->route_gen;
    NCCLX_CHECK_GOTO(ncclx_ep_mark_stream(g, stream), res, out);
out:
    return res;
}

size_t ncclx_ep_handle_layouts(const ncclx_ep_group_t *g, uint32_t layout, uint32_t topk,
                               ncclx_ep_ll_handle_layout_t *ll, ncclx_ep_ht_handle_layout_t *ht)
{
    ncclx_ep_dims_t d = g->dims;
    d.topk = topk;
    return ncclx_ep_algo(g)->handle_layouts(&d, layout, ll, ht);
}

void ncclx_ep_handle_bind(ncclx_ep_handle_t *h, char *caller_memory)
{
    h->caller_memory = caller_memory != NULL;
    ncclx_ep_algo(h->group)->handle_bind(h, caller_memory);
}

ncclxResult_t ncclxEpHandleCreate(ncclxEpGroup_t g, const ncclxEpHandleConfig_t *config,
                                  const ncclxTensor_t *topk_idx, ncclxStream_t stream,
                                  ncclxEpHandle_t *handle)
{
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclx_ep_handle_t *h = NULL;
    ncclxResult_t res;
    if (g == NULL || handle == NULL || topk_idx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpHandleCreate: %s is NULL",
                           g == NULL        ? "group"
                           : handle == NULL ? "handle"
                                            : "topk_idx");
    }
    NCCLX_CHECK(ncclx_struct_import(&cfg, sizeof(cfg), config, NCCLX_MAGIC_EP_HANDLE_CONFIG,
                                    NCCLX_EP_HANDLE_CONFIG_SIZE_V1, "config"));
    NCCLX_CHECK(ncclx_ep_check_config(g, &cfg));
    NCCLX_CHECK(ncclx_ep_async_check(g, "ncclxEpHandleCreate"));
    NCCLX_CHECK(ncclx_ep_handle_take(g, &cfg, NULL, &h));
    NCCLX_CHECK_GOTO(ncclx_route(h, topk_idx, "ncclxEpHandleCreate", stream), res, err_release);
    h->live = 1;
    *handle = h;
    return ncclxSuccess;
err_release:
    (void)ncclx_pool_release(&g->handles, h);
    return res;
}

ncclxResult_t ncclx_ep_check_live(const ncclx_ep_handle_t *h, const char *call)
{
    if (h == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: handle is NULL", call);
    }
    if (!h->live) {
        return NCCLX_ERROR(ncclxInvalidUsage, "%s: the handle was destroyed", call);
    }
    return ncclxSuccess;
}

/* One send_only operation may be in flight per group; only its handle may complete it. */
static ncclxResult_t ncclx_check_no_send_in_flight(const ncclx_ep_handle_t *h, const char *call)
{
    if (h->group->send_in_flight != NULL) {
        return NCCLX_ERROR(
            ncclxInvalidUsage,
            "%s: a send_only %s of handle %u is in flight in "
            "this group: call ncclxEpComplete on it first",
            call,
            h->group->send_in_flight->pending == NCCLX_EP_PENDING_DISPATCH ? "dispatch" : "combine",
            h->group->send_in_flight->index);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclxEpHandleUpdate(ncclxEpHandle_t h, const ncclxTensor_t *topk_idx,
                                  ncclxStream_t stream)
{
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpHandleUpdate"));
    NCCLX_CHECK(ncclx_ep_async_check(h->group, "ncclxEpHandleUpdate"));
    NCCLX_CHECK(ncclx_check_no_send_in_flight(h, "ncclxEpHandleUpdate"));
    if (topk_idx == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpHandleUpdate: topk_idx is NULL");
    }
    return ncclx_route(h, topk_idx, "ncclxEpHandleUpdate", stream);
}

ncclxResult_t ncclxEpHandleDestroy(ncclxEpHandle_t h)
{
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpHandleDestroy"));
    if (h->pending != NCCLX_EP_PENDING_NONE) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleDestroy: handle %u has a send_only "
                           "operation in flight: call ncclxEpComplete first",
                           h->index);
    }
    h->live = 0;
    return ncclx_pool_release(&h->group->handles, h);
}

ncclxResult_t ncclxEpGetAsyncError(ncclxEpGroup_t g, uint32_t *error)
{
    if (g == NULL || error == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpGetAsyncError: %s is NULL",
                           g == NULL ? "group" : "error");
    }
    *error = *g->status;
    return ncclxSuccess;
}

ncclxResult_t ncclxEpClearAsyncError(ncclxEpGroup_t g, ncclxStream_t stream)
{
    if (g == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpClearAsyncError: group is NULL");
    }
    /* Only the bits seen now: a bit a kernel reports after this read survives the clear.  Some
     * bits stay for good (HT: a timeout leaves its ranks' step numbers out of step). */
    const uint32_t seen = *g->status & ~ncclx_ep_algo(g)->clear_keeps;
    if (seen == 0) {
        return ncclxSuccess;
    }
    return ncclx_ep_algo(g)->clear(g, seen, stream);
}

/* ---- dispatch / combine / complete ---- */

ncclxResult_t ncclxEpDispatch(ncclxEpHandle_t h, const ncclxEpDispatchArgs_t *args,
                              ncclxStream_t stream)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpDispatch"));
    NCCLX_CHECK(ncclx_ep_async_check(h->group, "ncclxEpDispatch"));
    NCCLX_CHECK(ncclx_check_no_send_in_flight(h, "ncclxEpDispatch"));
    NCCLX_CHECK(ncclx_struct_import(&a, sizeof(a), args, NCCLX_MAGIC_EP_DISPATCH_ARGS,
                                    NCCLX_EP_DISPATCH_ARGS_SIZE_V1, "args"));
    return ncclx_ep_algo(h->group)->dispatch(h, &a, stream);
}

ncclxResult_t ncclxEpCombine(ncclxEpHandle_t h, const ncclxEpCombineArgs_t *args,
                             ncclxStream_t stream)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpCombine"));
    NCCLX_CHECK(ncclx_ep_async_check(h->group, "ncclxEpCombine"));
    NCCLX_CHECK(ncclx_check_no_send_in_flight(h, "ncclxEpCombine"));
    if (!h->dispatched) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpCombine: handle %u has no completed "
                           "dispatch since its last routing",
                           h->index);
    }
    NCCLX_CHECK(ncclx_struct_import(&a, sizeof(a), args, NCCLX_MAGIC_EP_COMBINE_ARGS,
                                    NCCLX_EP_COMBINE_ARGS_SIZE_V1, "args"));
    return ncclx_ep_algo(h->group)->combine(h, &a, stream);
}

ncclxResult_t ncclxEpComplete(ncclxEpHandle_t h, ncclxStream_t stream)
{
    NCCLX_CHECK(ncclx_ep_check_live(h, "ncclxEpComplete"));
    return ncclx_ep_algo(h->group)->complete(h, stream);
}
