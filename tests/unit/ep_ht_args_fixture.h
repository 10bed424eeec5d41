/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * An HT group and handle built from a plan without a GPU, and valid dispatch/combine arguments
 * for it, shared by the CPU tests of the HT argument checks (test_ep_ht_args,
 * test_ep_ht_combine_args).  Header only: each test program includes it once.
 */
#ifndef NCCLX_TEST_EP_HT_ARGS_FIXTURE_H_
#define NCCLX_TEST_EP_HT_ARGS_FIXTURE_H_

#include "ncclx_test.h"

#include "ep_group.h"

/* N: the handle's num_tokens; S: max_recv_tokens_per_rank; SC: FLOAT32 scales per token. */
enum { R = 4, E = 16, T = 8, K = 2, H = 256, S = 48, N = 5, SC = 4 };

#define FLAT  NCCLX_EP_LAYOUT_FLAT
#define EM    NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define QUANT NCCLX_EP_RECIPE_QUANT_FWD
#define NONE  NCCLX_EP_RECIPE_NONE
#define FWD   NCCLX_EP_PASS_FORWARD
#define BWD   NCCLX_EP_PASS_BACKWARD

/* Fake device pointers: the checks only look at their alignment. */
#define PTR(n) ((void *)(uintptr_t)(0x100000u * (n)))

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handle;
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
    g.algorithm = NCCLX_EP_ALGO_HT;
    g.num_experts = E;
    g.max_topk = K;
    g.hidden = H;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT16) |
                     NCCLX_DTYPE_BIT(NCCLX_FLOAT32) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    g.layouts = FLAT | EM;
    g.recipes = NONE | QUANT;
    g.max_token_bytes = H;
    g.max_scale_bytes = 16;
    g.max_dispatch_tokens_per_rank = T;
    g.max_recv_tokens_per_rank = S;
    f->group.plan = g;
    replan(f);
    assert_int_equal(f->group.dims.recv_slots, S);
    f->handle.group = &f->group;
    f->handle.live = 1;
    f->handle.config.layout = layout;
    f->handle.config.topk = K;
    f->handle.ht.num_tokens = N;
    f->handle.ht.topk = K;
    f->handle.ht.expert_major = layout == EM;
    f->handle.ht.global_ids = 0;
}

static inline ncclxTensor_t tensor(int n, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
                                   int64_t d1)
{
    ncclxTensor_t t = {PTR(n), dtype, ndim, {d0, d1, 0, 0}};
    return t;
}

static inline ncclxTensor_t absent(void)
{
    ncclxTensor_t t = NCCLX_TENSOR_INIT;
    return t;
}

/* Valid dispatch arguments: QUANT_FWD moves UINT8 rows and 16-byte FLOAT32 scales, NONE moves
 * BF16 rows; FLAT forward returns ids of idx_dtype. */
static inline ncclxEpDispatchArgs_t valid_dispatch(const fixture_t *f, uint32_t recipe,
                                                   uint32_t pass, ncclxDataType_t idx_dtype)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const ncclxDataType_t dtype = recipe == QUANT ? NCCLX_UINT8 : NCCLX_BFLOAT16;
    const int64_t n = f->handle.ht.num_tokens;
    a.recipe = recipe;
    a.pass = pass;
    a.tokens = tensor(1, dtype, 2, n, H);
    a.out_tokens = tensor(2, dtype, 2, S, H);
    if (recipe == QUANT) {
        a.scales = tensor(3, NCCLX_FLOAT32, 2, n, SC);
        a.out_scales = tensor(4, NCCLX_FLOAT32, 2, S, SC);
    }
    if (pass == FWD) {
        a.topk_weights = tensor(5, NCCLX_FLOAT32, 2, n, K);
        if (f->handle.ht.expert_major) {
            a.out_topk_weights = tensor(7, NCCLX_FLOAT32, 1, S, 0);
        } else {
            a.out_topk_idx = tensor(6, idx_dtype, 2, S, K);
            a.out_topk_weights = tensor(7, NCCLX_FLOAT32, 2, S, K);
        }
    }
    return a;
}

static inline ncclxEpCombineArgs_t valid_combine(const fixture_t *f, uint32_t pass,
                                                 ncclxDataType_t dtype)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    const int64_t n = f->handle.ht.num_tokens;
    a.pass = pass;
    a.expert_out = tensor(11, dtype, 2, S, H);
    a.out = tensor(12, dtype, 2, n, H);
    if (pass == BWD) {
        a.topk_weights = f->handle.ht.expert_major ? tensor(13, NCCLX_FLOAT32, 1, S, 0)
                                                   : tensor(13, NCCLX_FLOAT32, 2, S, K);
        a.out_topk_weights = tensor(14, NCCLX_FLOAT32, 2, n, K);
    }
    return a;
}

/* A plan whose dispatch rows (QUANT_FWD rows of up to 1024 bytes plus 16 of scales: 1040) are
 * larger than its combine rows (FP32: 1024), so that each buffer's extent is told apart; the
 * group's dispatch rows at PTR(30), its combine rows at PTR(40). */
static inline void make_buffers_fixture(fixture_t *f)
{
    make_fixture(f, FLAT);
    f->group.plan.max_token_bytes = 4 * H;
    replan(f);
    assert_int_equal(f->group.dims.payload_bytes, 4 * H + 16);
    assert_int_equal(f->group.dims.combine_slot_bytes, 4 * H);
    f->group.ht_dispatch_rows = PTR(30);
    f->group.ht_combine_rows = PTR(40);
}

#endif /* NCCLX_TEST_EP_HT_ARGS_FIXTURE_H_ */
