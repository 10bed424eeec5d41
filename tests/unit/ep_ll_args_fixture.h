/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL argument tests' fixture (tests/unit/test_ep_args.c, test_ep_args_paths.c,
 * test_ep_entry.c): a group and a handle built from a plan without a GPU, and valid dispatch and
 * combine arguments for them. The shapes are chosen so that no two expected sizes coincide (L = 6
 * local experts, R = 4 ranks, T = 8 tokens per rank, a handle of N = 5 tokens, K = 2, R * T = 32):
 * a check that compares against the wrong dimension fails a row.
 */
#ifndef NCCLX_TEST_EP_LL_ARGS_FIXTURE_H_
#define NCCLX_TEST_EP_LL_ARGS_FIXTURE_H_

#include "ncclx_test.h"

#include "ep_group.h"

enum { R = 4, E = 24, L = E / R, T = 8, N = 5, K = 2, H = 256, SC = 4 };

#define EM    NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define RM    NCCLX_EP_LAYOUT_RANK_MAJOR
#define NONE  NCCLX_EP_RECIPE_NONE
#define QUANT NCCLX_EP_RECIPE_QUANT_FWD
#define FP8   NCCLX_EP_RECIPE_FP8

/* Fake device pointers: the checks only look at their alignment. */
#define PTR(n) ((void *)(uintptr_t)(0x100000u * (n)))

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handle;
    ncclx_ep_handle_t other; /* a second handle of the group (send_only in flight) */
    uint32_t status;         /* the group's mapped status word */
} fixture_t;

/* Recomputes the group's dims after a test changed its plan. */
static inline void replan(fixture_t *f)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    team.num_ranks = team.lsa_size = R;
    assert_ncclx_ok(ncclx_ep_dims_compute(&f->group.plan, &team, 0, &f->group.dims));
}

static inline void make_fixture(fixture_t *f, uint32_t layout)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    memset(f, 0, sizeof(*f));
    g.num_experts = E;
    g.max_topk = K;
    g.hidden = H;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT16) |
                     NCCLX_DTYPE_BIT(NCCLX_UINT8);
    g.layouts = EM | RM;
    g.recipes = NONE | FP8 | QUANT;
    g.max_token_bytes = H;
    g.max_scale_bytes = SC * 4;
    g.max_dispatch_tokens_per_rank = T;
    f->group.plan = g;
    replan(f);
    assert_int_equal(f->group.dims.local_experts, L);
    assert_int_equal(f->group.dims.tokens, T);
    f->group.status = &f->status;
    f->handle.group = &f->group;
    f->handle.live = 1;
    f->handle.routed = 1;
    f->handle.config.layout = layout;
    f->handle.config.topk = K;
    f->handle.desc.num_tokens = N;
    f->handle.desc.topk = K;
    f->handle.desc.expert_major = layout == EM;
    f->other = f->handle;
    f->other.index = 1;
}

static inline ncclxTensor_t tensor(int n, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
                                   int64_t d1, int64_t d2)
{
    ncclxTensor_t t = {PTR(n), dtype, ndim, {d0, d1, d2, 0}};
    return t;
}

static inline ncclxTensor_t absent(void)
{
    ncclxTensor_t t = NCCLX_TENSOR_INIT;
    return t;
}

/* A received-side tensor of the handle's layout: [L, R*T, inner] or [R, T, inner]. */
static inline ncclxTensor_t out_tensor(const fixture_t *f, int n, ncclxDataType_t dtype,
                                       int64_t inner)
{
    return f->handle.desc.expert_major ? tensor(n, dtype, 3, L, R * T, inner)
                                       : tensor(n, dtype, 3, R, T, inner);
}

/* Valid dispatch arguments: NONE moves BF16 rows; FP8 BF16 in, E4M3 and FLOAT32 scales out;
 * QUANT_FWD UINT8 rows (max_token_bytes exactly) and SC FLOAT32 scales (max_scale_bytes
 * exactly).  Rank-major handles also forward weights and return ids and weights. */
static inline ncclxEpDispatchArgs_t valid_dispatch(const fixture_t *f, uint32_t recipe)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const int em = f->handle.desc.expert_major;
    const ncclxDataType_t dtype = recipe == QUANT ? NCCLX_UINT8 : NCCLX_BFLOAT16;
    const int64_t n = f->handle.desc.num_tokens;
    a.recipe = recipe;
    a.tokens = tensor(1, dtype, 2, n, H, 0);
    a.out_tokens = out_tensor(f, 2, recipe == FP8 ? NCCLX_FP8_E4M3 : dtype, H);
    if (recipe == QUANT) {
        a.scales = tensor(3, NCCLX_FLOAT32, 2, n, SC, 0);
        a.out_scales = out_tensor(f, 4, NCCLX_FLOAT32, SC);
    } else if (recipe == FP8) {
        a.out_scales = out_tensor(f, 4, NCCLX_FLOAT32, H / 128);
    }
    a.out_counts = tensor(5, NCCLX_INT32, 1, em ? L : R, 0, 0);
    if (!em) {
        a.topk_weights = tensor(6, NCCLX_FLOAT32, 2, n, K, 0);
        a.out_topk_idx = out_tensor(f, 7, NCCLX_INT64, K);
        a.out_topk_weights = out_tensor(f, 8, NCCLX_FLOAT32, K);
    }
    return a;
}

static inline ncclxEpCombineArgs_t valid_combine(const fixture_t *f)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    a.expert_out = out_tensor(f, 11, NCCLX_BFLOAT16, H);
    a.out = tensor(12, NCCLX_BFLOAT16, 2, f->handle.desc.num_tokens, H, 0);
    if (f->handle.desc.expert_major) {
        a.topk_weights = tensor(13, NCCLX_FLOAT32, 2, f->handle.desc.num_tokens, K, 0);
    }
    return a;
}

#endif /* NCCLX_TEST_EP_LL_ARGS_FIXTURE_H_ */
