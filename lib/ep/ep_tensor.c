/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <inttypes.h>

#include "ep_tensor.h"
#include "error.h"
#include "plan_internal.h"

uint32_t ncclx_tensor_elem_bits(ncclxDataType_t dtype)
{
    return ncclx_dtype_bits(dtype);
}

uint64_t ncclx_tensor_row_bytes(const ncclxTensor_t *t)
{
    if (t->ndim == 0) {
        return 0;
    }
    return (uint64_t)t->shape[t->ndim - 1] * ncclx_tensor_elem_bits(t->dtype) / 8;
}

ncclxResult_t ncclx_tensor_check(const ncclxTensor_t *t, const char *what, uint32_t dtype_mask,
                                 uint32_t ndim, const int64_t *shape, const char *why)
{
    return ncclx_tensor_check_aligned(t, what, dtype_mask, ndim, shape, why, 16);
}

ncclxResult_t ncclx_tensor_check_aligned(const ncclxTensor_t *t, const char *what,
                                         uint32_t dtype_mask, uint32_t ndim, const int64_t *shape,
                                         const char *why, uint32_t align)
{
    if ((unsigned)t->dtype >= NCCLX_NUM_DATA_TYPES || !(dtype_mask & NCCLX_DTYPE_BIT(t->dtype))) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s.dtype=%d is not allowed here (allowed set 0x%x of ncclxDataType_t "
                           "bits)",
                           what, (int)t->dtype, dtype_mask);
    }
    if (t->ndim != ndim) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.ndim=%u, expected %u: %s", what, t->ndim, ndim,
                           why);
    }
    for (uint32_t i = 0; i < ndim; i++) {
        if (t->shape[i] < 0 || (shape[i] != NCCLX_ANY_DIM && t->shape[i] != shape[i])) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "%s.shape[%u]=%" PRId64 ", expected %" PRId64 ": %s", what, i,
                               t->shape[i], shape[i], why);
        }
    }
    uint64_t elements = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        elements *= (uint64_t)t->shape[i];
    }
    if (t->data == NULL && elements > 0) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.data is NULL: the tensor is required", what);
    }
    if (((uintptr_t)t->data % align) != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s.data=%p is not %u-byte aligned", what, t->data,
                           align);
    }
    return ncclxSuccess;
}

int ncclx_tensor_starts_in(const ncclxTensor_t *t, const void *base, size_t bytes)
{
    const char *p = t->data, *b = base;
    return b != NULL && p != NULL && p >= b && p < b + bytes;
}
