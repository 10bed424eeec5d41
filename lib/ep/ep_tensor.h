/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Checking the tensors passed to EP calls against what the group and handle expect; every
 * error names the call, the argument and the dimension.
 */
#ifndef NCCLX_LIB_EP_TENSOR_H_
#define NCCLX_LIB_EP_TENSOR_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/ep.h>

#define NCCLX_ANY_DIM (-1)

/** Bits of one element of dtype (FP4x2: 4 per value). */
uint32_t ncclx_tensor_elem_bits(ncclxDataType_t dtype);

/**
 * t must be present (non-NULL data unless it has no element), of `dtype_mask` (NCCLX_DTYPE_BIT
 * set), with ndim dimensions equal to shape (NCCLX_ANY_DIM matches any size >= 0).  what:
 * "ncclxEpDispatch: args->out_tokens".  why: explains the expected shape, e.g. "[local_experts,
 * ranks * max_tokens, hidden]".
 */
ncclxResult_t ncclx_tensor_check(const ncclxTensor_t *t, const char *what, uint32_t dtype_mask,
                                 uint32_t ndim, const int64_t *shape, const char *why);

/** ncclx_tensor_check with data aligned to align bytes instead of 16 (tensors that kernels
 *  only touch element by element). */
ncclxResult_t ncclx_tensor_check_aligned(const ncclxTensor_t *t, const char *what,
                                         uint32_t dtype_mask, uint32_t ndim, const int64_t *shape,
                                         const char *why, uint32_t align);

/** Whether t's first byte lies in [base, base + bytes) (a group's own buffers: HT's zero-copy
 *  buffers, LL's zero-copy rows). */
int ncclx_tensor_starts_in(const ncclxTensor_t *t, const void *base, size_t bytes);

/** Bytes of one row (the innermost dimension) of t. */
uint64_t ncclx_tensor_row_bytes(const ncclxTensor_t *t);

#endif /* NCCLX_LIB_EP_TENSOR_H_ */
