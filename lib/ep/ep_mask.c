/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Active-mask calls of LL groups (query, update, clean) and the host side of asynchronous
 * errors: which groups may use masks, what an update or clean does to the handles, and the
 * error a group without masking returns once one of its GPU waits has timed out.  The GPU
 * side is kernels/ep_ll/ep_ll_mask.cu; nothing here allocates or waits for the GPU.
 */
#include "ep_algo.h"
#include "ep_mask.h"

#include <string.h>

#include "context.h"
#include "ep_tensor.h"
#include "error.h"
#include "gpu_check.h"

ncclxResult_t ncclx_ep_mask_check(const ncclx_ep_group_t *g, const char *call)
{
    if (g == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: group is NULL", call);
    }
    if (!ncclx_ep_algo(g)->has_masks) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "%s: EP group %u is %s; active masks are an LL feature", call, g->index,
                           ncclx_ep_algo(g)->name);
    }
    if (!g->plan.enable_mask) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: EP group %u was planned without an active mask (set "
                           "enable_mask in its ncclxEpGroupPlan_t)",
                           call, g->index);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_mask_values_check(const ncclx_ep_group_t *g, const int32_t *mask,
                                         uint32_t num_ranks)
{
    if (mask == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpMaskUpdate: mask is NULL");
    }
    if (num_ranks != g->dims.ranks) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclxEpMaskUpdate: num_ranks=%u but EP group %u has %u ranks",
                           num_ranks, g->index, g->dims.ranks);
    }
    for (uint32_t r = 0; r < num_ranks; r++) {
        if (mask[r] != 0 && mask[r] != 1) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpMaskUpdate: mask[%u]=%d: entries are 1 (active) or 0 "
                               "(masked)",
                               r, mask[r]);
        }
        if (mask[r] == 1 && g->masked_by_update != NULL && g->masked_by_update[r]) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "ncclxEpMaskUpdate: mask[%u]=1 would re-activate rank %u, which "
                               "an earlier update of this rank masked: only ncclxEpMaskClean "
                               "re-admits a rank (its sequence numbers must be reset)",
                               r, r);
        }
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_ep_mask_change_check(const ncclx_ep_group_t *g, const char *call)
{
    if (g->send_in_flight != NULL) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: a send_only operation of handle %u is in flight in EP group %u: "
                           "call ncclxEpComplete on it first",
                           call, g->send_in_flight->index, g->index);
    }
    return ncclxSuccess;
}

void ncclx_ep_mask_changed(ncclx_ep_group_t *g)
{
    const ncclx_pool_t *pool = &g->handles;
    for (uint32_t i = 0; i < pool->capacity; i++) {
        ncclx_ep_handle_t *h = (ncclx_ep_handle_t *)(pool->objects + (size_t)i * pool->stride);
        if (pool->in_use[i]) {
            h->dispatched = 0;
        }
    }
}

ncclxResult_t ncclx_ep_async_check(const ncclx_ep_group_t *g, const char *call)
{
    const uint32_t error = g->status != NULL ? *g->status : 0;
    if (error & NCCLX_EP_ERROR_OVERFLOW) {
        return NCCLX_ERROR(ncclxInvalidUsage,
                           "%s: a routing of EP group %u needed more receive rows than its "
                           "max_recv_tokens_per_rank=%u on some rank (asynchronous error 0x%x, "
                           "overflow policy TRAP): the group's kernels do nothing until "
                           "ncclxEpClearAsyncError, after which every handle must be routed "
                           "again; raise max_recv_tokens_per_rank or plan overflow_policy "
                           "NCCLX_EP_OVERFLOW_DROP",
                           call, g->index, g->dims.recv_slots, error);
    }
    if (g->plan.enable_mask || !(error & NCCLX_EP_ERROR_TIMEOUT)) {
        return ncclxSuccess;
    }
    return NCCLX_ERROR(ncclxTimeout,
                       "%s: a GPU wait of an earlier operation in EP group %u timed out "
                       "(asynchronous error 0x%x) and the group has no active mask: its results "
                       "are undefined; finalize the context (or plan the group with enable_mask "
                       "to survive lost ranks)",
                       call, g->index, error);
}

ncclxResult_t ncclxEpMaskQuery(ncclxEpGroup_t g, const ncclxTensor_t *mask, ncclxStream_t stream)
{
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_mask_check(g, "ncclxEpMaskQuery"));
    if (mask == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEpMaskQuery: mask is NULL");
    }
    const int64_t shape[1] = {g->dims.ranks};
    NCCLX_CHECK(ncclx_tensor_check(mask, "ncclxEpMaskQuery: mask", NCCLX_DTYPE_BIT(NCCLX_INT32), 1,
                                   shape, "[num_ranks]"));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpMaskQuery"));
    ncclx_clear_stale_cuda_error("ncclxEpMaskQuery");
    NCCLX_CUDA_CHECK_GOTO(
        ncclx_ep_ll_launch_mask_query(&g->desc, (int32_t *)mask->data, (cudaStream_t)stream), res,
        out);
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}

ncclxResult_t ncclxEpMaskUpdate(ncclxEpGroup_t g, const int32_t *mask, uint32_t num_ranks,
                                ncclxStream_t stream)
{
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_mask_check(g, "ncclxEpMaskUpdate"));
    NCCLX_CHECK(ncclx_ep_mask_values_check(g, mask, num_ranks));
    NCCLX_CHECK(ncclx_ep_mask_change_check(g, "ncclxEpMaskUpdate"));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpMaskUpdate"));
    /* Before the launches: a failure after the first of several (over 1024 ranks) has already
     * changed part of the mask. */
    ncclx_ep_mask_changed(g);
    for (uint32_t r = 0; r < num_ranks && g->masked_by_update != NULL; r++) {
        if (mask[r] == 0) {
            g->masked_by_update[r] = 1;
        }
    }
    ncclx_clear_stale_cuda_error("ncclxEpMaskUpdate");
    NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ll_launch_mask_update(&g->desc, mask, (cudaStream_t)stream), res,
                          out);
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}

ncclxResult_t ncclxEpMaskClean(ncclxEpGroup_t g, ncclxStream_t stream)
{
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CHECK(ncclx_ep_mask_check(g, "ncclxEpMaskClean"));
    NCCLX_CHECK(ncclx_ep_mask_change_check(g, "ncclxEpMaskClean"));
    NCCLX_CHECK(ncclx_ep_check_stream(g, stream, "ncclxEpMaskClean"));
    ncclx_ep_mask_changed(g);
    /* Clean decides on the GPU who is back; a rank that stays out stays masked there. */
    if (g->masked_by_update != NULL) {
        memset(g->masked_by_update, 0, g->dims.ranks);
    }
    ncclx_clear_stale_cuda_error("ncclxEpMaskClean");
    NCCLX_CUDA_CHECK_GOTO(ncclx_ep_ll_launch_mask_clean(&g->desc, (cudaStream_t)stream), res, out);
    res = ncclx_ep_mark_stream(g, stream);
out:
    return res;
}
