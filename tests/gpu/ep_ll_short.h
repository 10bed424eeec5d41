/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Short names for the EP LL test tables (test files only; never include from the harness).
 */
#ifndef NCCLX_TEST_EP_LL_SHORT_H_
#define NCCLX_TEST_EP_LL_SHORT_H_

#define EM   NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define RM   NCCLX_EP_LAYOUT_RANK_MAJOR
#define NONE NCCLX_EP_RECIPE_NONE
#define QFWD NCCLX_EP_RECIPE_QUANT_FWD
#define FP8  NCCLX_EP_RECIPE_FP8
#define BF16 NCCLX_BFLOAT16
#define F16  NCCLX_FLOAT16
#define F32  NCCLX_FLOAT32
#define E4M3 NCCLX_FP8_E4M3
#define U8   NCCLX_UINT8
#define I32  NCCLX_INT32
#define I64  NCCLX_INT64

#endif /* NCCLX_TEST_EP_LL_SHORT_H_ */
