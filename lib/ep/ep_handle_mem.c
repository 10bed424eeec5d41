/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The split handle lifecycle: the size of one handle's device memory for a shape, and handles
 * initialized on caller memory without routing (ncclxEpHandleUpdate routes them).  Pure host
 * code: nothing is enqueued, nothing allocates (the host struct comes from the group's pool).
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "ep_algo.h"
#include "ep_group.h"
#include "gpu_check.h"
#include "ep_mask.h"
#include "ep_tensor.h"
#include "error.h"
#include "struct.h"

/* topk 0 is the group's max_topk; a layout the group's algorithm and plan allow.  Errors say
 * which call the bad value came to. */
static ncclxResult_t ncclx_check_shape(const ncclx_ep_group_t *g, uint32_t layout, uint32_t *topk,
                                       const char *call)
{
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    char prefix[64];
    c.layout = layout;
    c.topk = *topk == 0 ? g->plan.max_topk : *topk;
    snprintf(prefix, sizeof(prefix), "%s: config->", call);
    NCCLX_CHECK(ncclx_ep_check_config_named(g, &c, prefix));
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

/* handle_mem: a 1-D UINT8 device tensor of at least one handle of cfg's shape (Init: memory for
 * it; Import: a snapshot of such memory, so a shorter one is truncated). */
static ncclxResult_t ncclx_check_handle_mem(const ncclx_ep_group_t *g,
                                            const ncclxEpHandleConfig_t *cfg,
                                            const ncclxTensor_t *handle_mem, const char *call)
{
    ncclx_ep_ll_handle_layout_t ll;
    ncclx_ep_ht_handle_layout_t ht;
    char what[64];
    const size_t bytes = ncclx_ep_handle_layouts(g, cfg->layout, cfg->topk, &ll, &ht);
    const int64_t any[1] = {NCCLX_ANY_DIM};
    snprintf(what, sizeof(what), "%s: handle_mem", call);
    NCCLX_CHECK(ncclx_tensor_check(handle_mem, what, NCCLX_DTYPE_BIT(NCCLX_UINT8), 1, any,
                                   "[bytes] of device memory (ncclxEpHandleMemSize)"));
    if (handle_mem->shape[0] < (int64_t)bytes) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s.shape[0]=%lld bytes, but a handle of layout 0x%x and topk %u needs "
                           "%zu (ncclxEpHandleMemSize)%s",
                           what, (long long)handle_mem->shape[0], cfg->layout, cfg->topk, bytes,
                           strstr(call, "Import") != NULL ? ": the snapshot is truncated" : "");
    }
    return ncclxSuccess;
}

ncclxResult_t ncclxEpHandleInit(ncclxEpGroup_t g, const ncclxEpHandleConfig_t *config,
                                const ncclxTensor_t *handle_mem, ncclxStream_t stream,
                                ncclxEpHandle_t *handle)
{
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclx_ep_handle_t *h = NULL;
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
    NCCLX_CHECK(ncclx_check_handle_mem(g, &cfg, handle_mem, "ncclxEpHandleInit"));
    NCCLX_CHECK(ncclx_ep_async_check(g, "ncclxEpHandleInit"));
    NCCLX_CHECK(ncclx_ep_handle_take(g, &cfg, handle_mem->data, &h));
    h->live = 1;
    *handle = h;
    return ncclxSuccess;
}

/* Where the import check's verdict and step land: the group's mapped status block, past the
 * error word (host view; the device view is at the same offset of the mapped arena). */
#define NCCLX_IMPORT_VERDICT_OFFSET 16u
#define NCCLX_IMPORT_STEP_OFFSET    24u

ncclxResult_t ncclx_ep_ht_import_refusal(unsigned verdict, const ncclxEpHandleState_t *st)
{
    if (verdict & (NCCLX_EP_HT_IMPORT_MAGIC | NCCLX_EP_HT_IMPORT_VERSION)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: handle_mem does not start with the header of a "
                           "libncclx HT handle of this format (not a snapshot, or one of another "
                           "version)");
    }
    if (verdict & NCCLX_EP_HT_IMPORT_GEOMETRY) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: handle_mem is a snapshot for another group "
                           "geometry, rank, layout or top-k than this import's");
    }
    if (verdict & NCCLX_EP_HT_IMPORT_OVERFLOW) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: handle_mem is a snapshot of a routing that "
                           "overflowed max_recv_tokens_per_rank under the TRAP policy");
    }
    if (verdict & NCCLX_EP_HT_IMPORT_STATE) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: state (num_tokens=%u, topk=%u, topk_idx_dtype=%d) "
                           "differs from the routing the snapshot holds",
                           st->num_tokens, st->topk, (int)st->topk_idx_dtype);
    }
    return NCCLX_ERROR(ncclxInvalidArgument,
                       "ncclxEpHandleImport: handle_mem's checksum differs from its header's: the "
                       "snapshot is corrupted or incomplete");
}

ncclxResult_t ncclxEpHandleImport(ncclxEpGroup_t g, uint32_t layout,
                                  const ncclxEpHandleState_t *state,
                                  const ncclxTensor_t *handle_mem, ncclxStream_t stream,
                                  ncclxEpHandle_t *handle)
{
    ncclxEpHandleState_t st = NCCLX_EP_HANDLE_STATE_INIT;
    ncclxEpHandleConfig_t cfg = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclx_ep_handle_t *h = NULL;
    ncclxResult_t res = ncclxSuccess;
    if (g == NULL || handle == NULL || handle_mem == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpHandleImport: %s is NULL",
                           g == NULL        ? "group"
                           : handle == NULL ? "handle"
                                            : "handle_mem");
    }
    NCCLX_CHECK(ncclx_struct_import(&st, sizeof(st), state, NCCLX_MAGIC_EP_HANDLE_STATE,
                                    NCCLX_EP_HANDLE_STATE_SIZE_V1, "state"));
    if (!ncclx_ep_algo(g)->imports_handles) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleImport: EP group %u is %s (snapshots are of HT handles)",
                           g->index, ncclx_ep_algo(g)->name);
    }
    cfg.layout = layout;
    cfg.topk = st.topk;
    cfg.global_expert_ids = st.global_expert_ids;
    NCCLX_CHECK(ncclx_ep_check_config(g, &cfg));
    if (st.num_tokens > g->dims.tokens) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: state->num_tokens=%u exceeds the group's "
                           "max_dispatch_tokens_per_rank=%u",
                           st.num_tokens, g->dims.tokens);
    }
    if (st.topk_idx_dtype != NCCLX_INT32 && st.topk_idx_dtype != NCCLX_INT64) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpHandleImport: state->topk_idx_dtype=%d: NCCLX_INT32 or "
                           "NCCLX_INT64",
                           (int)st.topk_idx_dtype);
    }
    NCCLX_CHECK(ncclx_check_handle_mem(g, &cfg, handle_mem, "ncclxEpHandleImport"));
    if (g->broken) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "ncclxEpHandleImport: EP group %u is unusable: a launch failed in the "
                           "middle of one of its steps (finalize the context)",
                           g->index);
    }
    NCCLX_CHECK(ncclx_ep_async_check(g, "ncclxEpHandleImport"));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpHandleImport"));
    NCCLX_CHECK(ncclx_ep_handle_take(g, &cfg, handle_mem->data, &h));
    h->ht.num_tokens = (int)st.num_tokens;
    {
        volatile unsigned *verdict =
            (volatile unsigned *)((char *)g->status + NCCLX_IMPORT_VERDICT_OFFSET);
        char *dev = (char *)g->ctx->arenas.mapped_device + g->regions.status;
        *verdict = ~0u; /* a kernel that did not run can never read as a pass */
        ncclx_clear_stale_cuda_error("ncclxEpHandleImport");
        NCCLX_CUDA_CHECK_GOTO(
            ncclx_ep_ht_launch_verify(&g->ht, &h->ht, st.topk_idx_dtype == NCCLX_INT64,
                                      (unsigned *)(dev + NCCLX_IMPORT_VERDICT_OFFSET),
                                      (unsigned long long *)(dev + NCCLX_IMPORT_STEP_OFFSET),
                                      (cudaStream_t)stream),
            res, err_release);
        NCCLX_CUDA_CHECK_GOTO(cudaStreamSynchronize((cudaStream_t)stream), res, err_release);
        if (*verdict != 0) {
            res = ncclx_ep_ht_import_refusal(*verdict, &st);
            goto err_release;
        }
    }
    NCCLX_CHECK_GOTO(ncclx_ep_mark_stream(g, stream), res, err_release);
    h->routed = 1;
    h->route_gen = g->route_gen;
    h->live = 1;
    *handle = h;
    return ncclxSuccess;
err_release:
    (void)ncclx_pool_release(&g->handles, h);
    return res;
}
