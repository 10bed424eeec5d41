/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The public constants the EP kernels need (include/ncclx/plan.h, include/ncclx/ep.h), as
 * constexpr names of namespace ncclx: recipes, data types, and the asynchronous error bits.
 * Shared by the LL and HT kernels, so that neither folder includes the other's headers.
 */
#ifndef NCCLX_KERNELS_DEV_CONSTS_CUH_
#define NCCLX_KERNELS_DEV_CONSTS_CUH_

#include <ncclx/ep.h>
#include <ncclx/plan.h>

namespace ncclx
{

constexpr int kRecipeQuantFwd = NCCLX_EP_RECIPE_QUANT_FWD;
constexpr int kRecipeFp8 = NCCLX_EP_RECIPE_FP8;
constexpr int kBf16 = NCCLX_BFLOAT16, kFp16 = NCCLX_FLOAT16, kFp32 = NCCLX_FLOAT32;
constexpr unsigned kErrorTimeout = NCCLX_EP_ERROR_TIMEOUT;
constexpr unsigned kErrorBadExpert = NCCLX_EP_ERROR_BAD_EXPERT;
constexpr unsigned kErrorMismatch = NCCLX_EP_ERROR_MISMATCH;
constexpr unsigned kErrorEvicted = NCCLX_EP_ERROR_EVICTED;

} // namespace ncclx

#endif /* NCCLX_KERNELS_DEV_CONSTS_CUH_ */
