/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The private arenas of a context: one allocation per class, at init.  The symmetric class is
 * allocated by the context's symmetric-memory ops (lib/context/context.c, lib/context/loopback.c).
 */
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "gpu_check.h"

void *ncclx_arena_ptr(const ncclx_arenas_t *arenas, ncclxMemClass_t c, size_t offset)
{
    if (offset == NCCLX_NO_REGION || arenas->base[c] == NULL) {
        return NULL;
    }
    return (unsigned char *)arenas->base[c] + offset;
}

/* The plan must fit in what the GPU has free now: say how much was needed and free. */
static ncclxResult_t ncclx_check_fits(const size_t bytes[])
{
    size_t free_bytes = 0, total_bytes = 0;
    size_t needed = bytes[NCCLX_MEM_SYMMETRIC] + bytes[NCCLX_MEM_DEVICE];
    ncclxResult_t res = ncclxSuccess;
    NCCLX_CUDA_CHECK_GOTO(cudaMemGetInfo(&free_bytes, &total_bytes), res, out);
    if (needed > free_bytes) {
        res = NCCLX_ERROR(ncclxOutOfMemory,
                          "the plan needs %zu bytes of GPU memory (symmetric %zu + device %zu) "
                          "but the GPU has %zu free of %zu",
                          needed, bytes[NCCLX_MEM_SYMMETRIC], bytes[NCCLX_MEM_DEVICE], free_bytes,
                          total_bytes);
    }
out:
    return res;
}

static ncclxResult_t ncclx_host_block(ncclx_arenas_t *arenas, size_t bytes, const ncclxPlan_t *plan)
{
    if (plan->host_block != NULL) {
        if (plan->host_block_bytes < bytes) {
            return NCCLX_ERROR(ncclxResourceExhausted,
                               "plan.host_block_bytes=%zu but the plan's host structs need %zu",
                               plan->host_block_bytes, bytes);
        }
        arenas->base[NCCLX_MEM_HOST] = plan->host_block;
        return ncclxSuccess;
    }
    arenas->base[NCCLX_MEM_HOST] =
        aligned_alloc(NCCLX_HOST_ALIGN, ncclx_align_up(bytes, NCCLX_HOST_ALIGN));
    if (arenas->base[NCCLX_MEM_HOST] == NULL) {
        return NCCLX_ERROR(ncclxOutOfMemory, "host block of %zu bytes: out of host memory", bytes);
    }
    arenas->host_owned = 1;
    return ncclxSuccess;
}

ncclxResult_t ncclx_arenas_alloc(ncclx_arenas_t *arenas, const size_t bytes[],
                                 const ncclxPlan_t *plan)
{
    ncclxResult_t res = ncclxSuccess;
    memset(arenas, 0, sizeof(*arenas));
    NCCLX_CHECK(ncclx_check_fits(bytes));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        arenas->bytes[c] = bytes[c];
    }
    if (bytes[NCCLX_MEM_DEVICE] > 0) {
        NCCLX_CUDA_CHECK_GOTO(cudaMalloc(&arenas->base[NCCLX_MEM_DEVICE], bytes[NCCLX_MEM_DEVICE]),
                              res, err);
    }
    if (bytes[NCCLX_MEM_MAPPED_HOST] > 0) {
        NCCLX_CUDA_CHECK_GOTO(cudaHostAlloc(&arenas->base[NCCLX_MEM_MAPPED_HOST],
                                            bytes[NCCLX_MEM_MAPPED_HOST], cudaHostAllocMapped),
                              res, err_free_device);
        memset(arenas->base[NCCLX_MEM_MAPPED_HOST], 0, bytes[NCCLX_MEM_MAPPED_HOST]);
        NCCLX_CUDA_CHECK_GOTO(cudaHostGetDevicePointer(&arenas->mapped_device,
                                                       arenas->base[NCCLX_MEM_MAPPED_HOST], 0),
                              res, err_free_mapped);
    }
    NCCLX_CHECK_GOTO(ncclx_host_block(arenas, bytes[NCCLX_MEM_HOST], plan), res, err_free_mapped);
    return ncclxSuccess;

err_free_mapped:
    if (arenas->base[NCCLX_MEM_MAPPED_HOST] != NULL) {
        cudaFreeHost(arenas->base[NCCLX_MEM_MAPPED_HOST]);
    }
err_free_device:
    if (arenas->base[NCCLX_MEM_DEVICE] != NULL) {
        cudaFree(arenas->base[NCCLX_MEM_DEVICE]);
    }
err:
    memset(arenas, 0, sizeof(*arenas));
    return res;
}

ncclxResult_t ncclx_arenas_free(ncclx_arenas_t *arenas)
{
    ncclxResult_t first = ncclxSuccess;
    /* Keep going after a failure: release as much as possible, report the first error. */
    if (arenas->host_owned) {
        free(arenas->base[NCCLX_MEM_HOST]);
    }
    if (arenas->base[NCCLX_MEM_MAPPED_HOST] != NULL) {
        first = ncclx_first_error(
            first, NCCLX_CUDA_STATUS(cudaFreeHost(arenas->base[NCCLX_MEM_MAPPED_HOST])));
    }
    if (arenas->base[NCCLX_MEM_DEVICE] != NULL) {
        first =
            ncclx_first_error(first, NCCLX_CUDA_STATUS(cudaFree(arenas->base[NCCLX_MEM_DEVICE])));
    }
    arenas->base[NCCLX_MEM_HOST] = arenas->base[NCCLX_MEM_MAPPED_HOST] = NULL;
    arenas->base[NCCLX_MEM_DEVICE] = arenas->mapped_device = NULL;
    arenas->host_owned = 0;
    return first;
}
