/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The split handle lifecycle: the size of one handle's device memory for a shape, and handles
 * initialized on caller memory without routing (ncclxEpHandleUpdate routes them).  Pure host
 * code: nothing is enqueued, nothing allocates (the host struct comes from the group's pool).
 */
#include <stdio.h>

#include "ep_group.h"
#include "ep_mask.h"
#include "ep_tensor.h"
#include "error.h"
#include "struct.h"

/* topk 0 is the group's max_topk; a layout the group's algorithm and plan allow. */
static ncclxResult_t ncclx_check_shape(const ncclx_ep_group_t *g, uint32_t layout, uint32_t *topk,
                                       const char *call)
{
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    c.layout = layout;
    c.topk = *topk == 0 ? g->plan.max_topk : *topk;
    if (ncclx_ep_check_config(g, &c) != ncclxSuccess) {
        /* The config check names config->...: say which call the bad value came from (from a
         * copy: the message is rewritten in place). */
        char why[256];
        snprintf(why, sizeof(why), "%s", ncclxGetLastError());
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: %s", call, why);
    }
    *topk = c.topk;
    return ncclxSuccess;
}

ncclxResult_t ncclxEpHandleMemSize(ncclxEpGroup_t g, uint32_t layout, uint32_t topk, size_t *bytes)
{
    ncclx_ep_ll_handle_layout_t ll;
    ncclx_ep_ht_handle_layout_t ht;
    if (g == NULL || bytes == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpHandleMemSize: %s is NULL",
                           g == NULL ? "group" : "bytes");
    }
    NCCLX_CHECK(ncclx_check_shape(g, layout, &topk, "ncclxEpHandleMemSize"));
    *bytes = ncclx_ep_handle_layouts(g, layout, topk, &ll, &ht);
    return ncclxSuccess;
}

ncclxResult_t ncclxEpHandleInit(ncclxEpGroup_t g, const ncclxEpHandleConfig_t *config,
                                const ncclxTensor_t *handle_mem, ncclxStream_t stream,
                                ncclxEpHandle_t *handle)
{
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclx_ep_ll_handle_layout_t ll;
    ncclx_ep_ht_handle_layout_t ht;
    ncclx_ep_handle_t *h = NULL;
    uint32_t index;
    (void)stream; /* nothing to enqueue: the first update writes everything the kernels read */
    if (g == NULL || handle == NULL || handle_mem == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpHandleInit: %s is NULL",
                           g == NULL        ? "group"
                           : handle == NULL ? "handle"
                                            : "handle_mem");
    }
    NCCLX_CHECK(ncclx_struct_import(&cfg, sizeof(cfg), config, NCCLX_MAGIC_EP_HANDLE_CONFIG,
                                    NCCLX_EP_HANDLE_CONFIG_SIZE_V1, "config"));
    NCCLX_CHECK(ncclx_ep_check_config(g, &cfg));
    const size_t bytes = ncclx_ep_handle_layouts(g, cfg.layout, cfg.topk, &ll, &ht);
    const int64_t any[1] = {NCCLX_ANY_DIM};
    NCCLX_CHECK(ncclx_tensor_check(handle_mem, "ncclxEpHandleInit: handle_mem",
                                   NCCLX_DTYPE_BIT(NCCLX_UINT8), 1, any,
                                   "[bytes] of device memory (ncclxEpHandleMemSize)"));
    if (handle_mem->shape[0] < (int64_t)bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleInit: handle_mem.shape[0]=%lld bytes, but a handle of "
                           "layout 0x%x and topk %u needs %zu (ncclxEpHandleMemSize)",
                           (long long)handle_mem->shape[0], cfg.layout, cfg.topk, bytes);
    }
    NCCLX_CHECK(ncclx_ep_async_check(g, "ncclxEpHandleInit"));
    NCCLX_CHECK(ncclx_pool_acquire(&g->handles, (void **)&h, &index));
    h->group = g;
    h->index = index;
    h->config = cfg;
    h->pending = NCCLX_EP_PENDING_NONE;
    h->routed = 0;
    h->dispatched = 0;
    h->desc.num_tokens = h->ht.num_tokens = 0;
    ncclx_ep_handle_bind(h, handle_mem->data);
    h->live = 1;
    *handle = h;
    return ncclxSuccess;
}
