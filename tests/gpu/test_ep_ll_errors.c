/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL misuse on a loopback team of 2 ranks (experts 8, so 4 local experts != 2 ranks and
 * the two layouts' shapes differ): every invalid argument is refused with the field named
 * (shapes, dtypes, layout mismatches, recipes, handle configs, struct headers), the handle
 * pool runs out with ncclxResourceExhausted, combine before dispatch and calls on destroyed
 * handles are ncclxInvalidUsage, and expert ids out of range are reported through
 * ncclxEpGetAsyncError as NCCLX_EP_ERROR_BAD_EXPERT without crashing, the other entries
 * still delivered; a rank that never joins makes the other's wait end with
 * NCCLX_EP_ERROR_TIMEOUT instead of a hang.  Refused calls must not allocate either.
 */
#include <stdio.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_short.h"

#define R 2
#define E 8
#define L (E / R)
#define K 4
#define H 256
#define T 16

static const ep_case_t em_case = {K, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {K, RM, NONE, 0, 0, BF16, U8, 0, I32, I64, BF16, 0};

/* No FP32 tokens (so no FP32 combine), QUANT_FWD rows of at most H bytes + 32 scale bytes,
 * 2 handles per group. */
static void open_team(ep_team_t *t, uint32_t layouts)
{
    ep_team_plan(t, E, K, H, T);
    t->group_plan.token_dtypes =
        NCCLX_DTYPE_BIT(BF16) | NCCLX_DTYPE_BIT(F16) | NCCLX_DTYPE_BIT(E4M3) | NCCLX_DTYPE_BIT(U8);
    t->group_plan.layouts = layouts;
    t->group_plan.max_token_bytes = H;
    t->group_plan.max_scale_bytes = 32;
    t->group_plan.num_handles = 2;
    ep_team_open(t, R);
}

/* A run with at least one token on rank 0 (so that num_tokens-sized shapes can be wrong). */
static void start_run(ep_run_t *run, ep_team_t *t, const ep_case_t *k)
{
    ep_routing_t rt = ep_routing_default();
    rt.full = 1;
    ep_run_alloc(run, t, k);
    ep_alloc_arm();
    ep_run_fill(run, &rt);
}

static void finish_run(ep_run_t *run, const char *where)
{
    ep_run_destroy(run);
    ep_team_sync(run->team);
    ep_alloc_assert_none(where);
    ep_run_free(run);
}

static void test_group_and_handle_config(void **state)
{
    ep_team_t t, em_only;
    ep_run_t run;
    ncclxEpGroup_t g = NULL;
    ncclxEpHandle_t h = (ncclxEpHandle_t)0x1;
    ncclxEpHandleConfig_t cfg;
    ncclxTensor_t idx;
    uint32_t error = 0;
    (void)state;
    ep_rng_reset("config");
    open_team(&t, EM | RM);
    start_run(&run, &t, &em_case);
    assert_ncclx_error(ncclxEpGroupGet(t.ctx[0], 1, &g), ncclxInvalidArgument, "index=1");
    assert_ncclx_error(ncclxEpGroupGet(NULL, 0, &g), ncclxInvalidArgument, "ctx is NULL");
    assert_ncclx_error(ncclxEpGroupGet(t.ctx[0], 0, NULL), ncclxInvalidArgument, "group is NULL");
    assert_null(g);
    assert_ncclx_error(ncclxEpGetAsyncError(NULL, &error), ncclxInvalidArgument, "group is NULL");
    assert_ncclx_error(ncclxEpGetAsyncError(t.group[0], NULL), ncclxInvalidArgument,
                       "error is NULL");

#define EXPECT_CREATE_ERROR(mutation, code, needle)                                            \
    do {                                                                                       \
        cfg = ep_handle_config(&run);                                                          \
        idx = ep_idx_tensor(&run, 0);                                                          \
        mutation;                                                                              \
        assert_ncclx_error(ncclxEpHandleCreate(t.group[0], &cfg, &idx, t.stream[0], &h), code, \
                           needle);                                                            \
        assert_ptr_equal(h, (ncclxEpHandle_t)0x1); /* written only on success */               \
    } while (0)
    EXPECT_CREATE_ERROR(cfg.topk = 0, ncclxInvalidArgument, "config->topk=0");
    EXPECT_CREATE_ERROR(cfg.topk = K + 1, ncclxInvalidArgument, "config->topk=5");
    EXPECT_CREATE_ERROR(cfg.layout = NCCLX_EP_LAYOUT_FLAT, ncclxInvalidArgument,
                        "config->layout=0x4");
    EXPECT_CREATE_ERROR(cfg.layout = EM | RM, ncclxInvalidArgument, "config->layout=0x3");
    EXPECT_CREATE_ERROR(cfg.global_expert_ids = 2, ncclxInvalidArgument,
                        "config->global_expert_ids=2");
    EXPECT_CREATE_ERROR(cfg.magic = 0, ncclxInvalidArgument, "config->magic");
    EXPECT_CREATE_ERROR(idx.dtype = F32, ncclxInvalidArgument, "topk_idx.dtype=2");
    EXPECT_CREATE_ERROR(idx.shape[1] = K - 1, ncclxInvalidArgument, "topk_idx.shape[1]=3");
    EXPECT_CREATE_ERROR(idx.ndim = 1, ncclxInvalidArgument, "topk_idx.ndim=1");
    EXPECT_CREATE_ERROR(idx.shape[0] = T + 1, ncclxInvalidArgument,
                        "max_dispatch_tokens_per_rank=16");
    EXPECT_CREATE_ERROR(idx.data = NULL, ncclxInvalidArgument, "topk_idx.data is NULL");
    EXPECT_CREATE_ERROR(idx.data = (char *)idx.data + 4, ncclxInvalidArgument,
                        "not 16-byte aligned");
    assert_ncclx_error(ncclxEpHandleCreate(t.group[0], &cfg, NULL, t.stream[0], &h),
                       ncclxInvalidArgument, "topk_idx is NULL");
    assert_ncclx_error(ncclxEpHandleCreate(NULL, &cfg, &idx, t.stream[0], &h), ncclxInvalidArgument,
                       "group is NULL");
    assert_ncclx_error(ncclxEpHandleCreate(t.group[0], NULL, &idx, t.stream[0], &h),
                       ncclxInvalidArgument, "config is NULL");
    finish_run(&run, "handle config errors");
    ep_team_close(&t);

    /* A group planned for expert-major only refuses a rank-major handle. */
    open_team(&em_only, EM);
    start_run(&run, &em_only, &rm_case);
    cfg = ep_handle_config(&run);
    idx = ep_idx_tensor(&run, 0);
    assert_ncclx_error(ncclxEpHandleCreate(em_only.group[0], &cfg, &idx, em_only.stream[0], &h),
                       ncclxInvalidArgument, "not in the group's plan layouts 0x1");
    finish_run(&run, "layout not planned");
    ep_team_close(&em_only);
}

#define EXPECT_DISPATCH_ERROR(run, mutation, code, needle)                                      \
    do {                                                                                        \
        ncclxEpDispatchArgs_t a = ep_dispatch_args((run), 0, 0);                                \
        mutation;                                                                               \
        assert_ncclx_error(ncclxEpDispatch((run)->handle[0], &a, (run)->team->stream[0]), code, \
                           needle);                                                             \
    } while (0)

/* Expert-major handle: shapes [L, R*T, ..]; recipes; struct header. */
static void expert_major_dispatch_errors(ep_run_t *run)
{
    const ep_rank_t *b = &run->r[0];
    EXPECT_DISPATCH_ERROR(run, a.tokens.shape[1] = H - 16, ncclxInvalidArgument,
                          "args->tokens.shape[1]=240, expected 256");
    EXPECT_DISPATCH_ERROR(run, a.tokens.shape[0] += 1, ncclxInvalidArgument,
                          "args->tokens.shape[0]=17, expected 16");
    EXPECT_DISPATCH_ERROR(run, a.tokens.ndim = 3, ncclxInvalidArgument, "args->tokens.ndim=3");
    EXPECT_DISPATCH_ERROR(run, a.tokens.dtype = I32, ncclxInvalidArgument, "args->tokens.dtype=7");
    /* FP32 tokens are not in this plan's token_dtypes. */
    EXPECT_DISPATCH_ERROR(run, a.tokens.dtype = a.out_tokens.dtype = F32, ncclxInvalidArgument,
                          "args->tokens.dtype=2");
    EXPECT_DISPATCH_ERROR(run, a.out_tokens.dtype = F16, ncclxInvalidArgument,
                          "args->out_tokens.dtype=1");
    /* The rank-major shape [R, T, H] on an expert-major handle. */
    EXPECT_DISPATCH_ERROR(run, (a.out_tokens.shape[0] = R, a.out_tokens.shape[1] = T),
                          ncclxInvalidArgument, "args->out_tokens.shape[0]=2, expected 4");
    assert_non_null(strstr(ncclxGetLastError(), "expert-major"));
    EXPECT_DISPATCH_ERROR(run, a.out_tokens.shape[1] = T, ncclxInvalidArgument,
                          "args->out_tokens.shape[1]=16, expected 32");
    EXPECT_DISPATCH_ERROR(run, a.out_tokens.shape[2] = H / 2, ncclxInvalidArgument,
                          "args->out_tokens.shape[2]=128");
    EXPECT_DISPATCH_ERROR(run, a.out_counts.shape[0] = R, ncclxInvalidArgument,
                          "args->out_counts.shape[0]=2, expected 4");
    EXPECT_DISPATCH_ERROR(run, a.out_counts.dtype = I64, ncclxInvalidArgument,
                          "args->out_counts.dtype=8");
    EXPECT_DISPATCH_ERROR(run, a.out_counts.data = NULL, ncclxInvalidArgument,
                          "args->out_counts.data is NULL");
    EXPECT_DISPATCH_ERROR(run, a.out_tokens.data = (char *)b->d_out_tokens + 8,
                          ncclxInvalidArgument, "args->out_tokens.data");
    assert_non_null(strstr(ncclxGetLastError(), "16-byte aligned"));
    EXPECT_DISPATCH_ERROR(run, a.recipe = NCCLX_EP_RECIPE_MXFP8, ncclxInvalidArgument,
                          "args->recipe=0x8");
    EXPECT_DISPATCH_ERROR(run, a.recipe = NONE | FP8, ncclxInvalidArgument, "args->recipe=0x5");
    EXPECT_DISPATCH_ERROR(run, a.round_scales = 2, ncclxInvalidArgument,
                          "args->round_scales must be 0 or 1");
    EXPECT_DISPATCH_ERROR(run, a.send_only = 2, ncclxInvalidArgument,
                          "args->send_only must be 0 or 1");
    EXPECT_DISPATCH_ERROR(run, a.magic = 0x12345678u, ncclxInvalidArgument, "args->magic");
    EXPECT_DISPATCH_ERROR(run, a.size = 8, ncclxInvalidArgument, "args->size=8");
    assert_ncclx_error(ncclxEpDispatch(run->handle[0], NULL, run->team->stream[0]),
                       ncclxInvalidArgument, "args is NULL");
    {
        ncclxEpDispatchArgs_t a = ep_dispatch_args(run, 0, 0);
        assert_ncclx_error(ncclxEpDispatch(NULL, &a, run->team->stream[0]), ncclxInvalidArgument,
                           "handle is NULL");
    }
}

/* FP8 and QUANT_FWD specifics on the expert-major handle. */
static void recipe_dispatch_errors(ep_run_t *run)
{
    const ep_rank_t *b = &run->r[0];
    const int64_t nt = b->num_tokens;
    /* FP8 without out_scales, with FP16 tokens, with a BF16 output. */
    EXPECT_DISPATCH_ERROR(run, (a.recipe = FP8, a.out_tokens.dtype = E4M3), ncclxInvalidArgument,
                          "args->out_scales");
    EXPECT_DISPATCH_ERROR(run, (a.recipe = FP8, a.tokens.dtype = F16, a.out_tokens.dtype = E4M3),
                          ncclxInvalidArgument, "args->tokens.dtype=1");
    EXPECT_DISPATCH_ERROR(
        run, (a.recipe = FP8, a.out_scales = ep_tensor(b->d_out_scales, F32, 3, L, R * T, H / 128)),
        ncclxInvalidArgument, "args->out_tokens.dtype=0");
    EXPECT_DISPATCH_ERROR(run,
                          (a.recipe = FP8, a.out_tokens.dtype = E4M3,
                           a.out_scales = ep_tensor(b->d_out_scales, F32, 3, L, R * T, H / 64)),
                          ncclxInvalidArgument, "args->out_scales.shape[2]=4, expected 2");
    /* QUANT_FWD: BF16 rows are 2 * H bytes, more than max_token_bytes = H. */
    EXPECT_DISPATCH_ERROR(run, a.recipe = QFWD, ncclxInvalidArgument, "max_token_bytes=256");
    /* UINT8 rows fit; 40 scale bytes do not (max_scale_bytes = 32). */
    EXPECT_DISPATCH_ERROR(run,
                          (a.recipe = QFWD, a.tokens.dtype = a.out_tokens.dtype = U8,
                           a.scales = ep_tensor(b->d_scales, U8, 2, nt, 40, 0),
                           a.out_scales = ep_tensor(b->d_out_scales, U8, 3, L, R * T, 40)),
                          ncclxInvalidArgument, "max_scale_bytes=32");
    EXPECT_DISPATCH_ERROR(run,
                          (a.recipe = QFWD, a.tokens.dtype = a.out_tokens.dtype = U8,
                           a.scales = ep_tensor(b->d_scales, U8, 2, nt, 8, 0),
                           a.out_scales = ep_tensor(b->d_out_scales, F32, 3, L, R * T, 8)),
                          ncclxInvalidArgument, "args->out_scales.dtype=2");
    EXPECT_DISPATCH_ERROR(run,
                          (a.recipe = QFWD, a.tokens.dtype = a.out_tokens.dtype = U8,
                           a.scales = ep_tensor(b->d_scales, U8, 2, nt + 1, 8, 0),
                           a.out_scales = ep_tensor(b->d_out_scales, U8, 3, L, R * T, 8)),
                          ncclxInvalidArgument, "args->scales.shape[0]");
}

/* Rank-major handle: forwarded weights and top-k outputs, shapes [R, T, ..]. */
static void rank_major_dispatch_errors(ep_run_t *run)
{
    EXPECT_DISPATCH_ERROR(run, a.topk_weights = (ncclxTensor_t)NCCLX_TENSOR_INIT,
                          ncclxInvalidArgument, "args->topk_weights");
    EXPECT_DISPATCH_ERROR(run, a.topk_weights.shape[1] = K + 1, ncclxInvalidArgument,
                          "args->topk_weights.shape[1]=5");
    EXPECT_DISPATCH_ERROR(run, a.out_topk_idx.dtype = F32, ncclxInvalidArgument,
                          "args->out_topk_idx.dtype=2");
    EXPECT_DISPATCH_ERROR(run, a.out_topk_idx.shape[2] = K + 1, ncclxInvalidArgument,
                          "args->out_topk_idx.shape[2]=5");
    EXPECT_DISPATCH_ERROR(run, a.out_topk_weights = (ncclxTensor_t)NCCLX_TENSOR_INIT,
                          ncclxInvalidArgument, "args->out_topk_weights");
    EXPECT_DISPATCH_ERROR(run, a.out_topk_weights.dtype = F16, ncclxInvalidArgument,
                          "args->out_topk_weights.dtype=1");
    /* The expert-major shape [L, R*T, H] on a rank-major handle. */
    EXPECT_DISPATCH_ERROR(run, (a.out_tokens.shape[0] = L, a.out_tokens.shape[1] = R * T),
                          ncclxInvalidArgument, "args->out_tokens.shape[0]=4, expected 2");
    assert_non_null(strstr(ncclxGetLastError(), "rank-major"));
    EXPECT_DISPATCH_ERROR(run, a.out_counts.shape[0] = L, ncclxInvalidArgument,
                          "args->out_counts.shape[0]=4, expected 2");
}

static void test_dispatch_arguments(void **state)
{
    ep_team_t t;
    ep_run_t em, rm;
    ep_routing_t full = ep_routing_default();
    (void)state;
    full.full = 1;
    ep_rng_reset("dispatch_args");
    open_team(&t, EM | RM);
    ep_run_alloc(&rm, &t, &rm_case);
    start_run(&em, &t, &em_case); /* arms the allocation counter */
    ep_run_fill(&rm, &full);
    ep_run_create(&em);
    ep_run_create(&rm);
    expert_major_dispatch_errors(&em);
    recipe_dispatch_errors(&em);
    rank_major_dispatch_errors(&rm);
    /* Nothing was enqueued by the refused calls: both handles still work. */
    ep_run_dispatch_and_check(&em, 0);
    ep_run_dispatch_and_check(&rm, 0);
    ep_run_combine_and_check(&em, 0);
    ep_run_combine_and_check(&rm, 0);
    ep_run_destroy(&rm);
    finish_run(&em, "dispatch argument errors");
    ep_run_free(&rm);
    ep_team_close(&t);
}

#define EXPECT_COMBINE_ERROR(run, mutation, code, needle)                                      \
    do {                                                                                       \
        ncclxEpCombineArgs_t a = ep_combine_args((run), 0, 0);                                 \
        mutation;                                                                              \
        assert_ncclx_error(ncclxEpCombine((run)->handle[0], &a, (run)->team->stream[0]), code, \
                           needle);                                                            \
    } while (0)

static void test_combine_arguments_and_order(void **state)
{
    ep_team_t t;
    ep_run_t run;
    (void)state;
    ep_rng_reset("combine_args");
    open_team(&t, EM | RM);
    start_run(&run, &t, &em_case);
    ep_run_create(&run);
    EXPECT_COMBINE_ERROR(&run, (void)a, ncclxInvalidUsage, "no completed dispatch");
    assert_ncclx_error(ncclxEpComplete(run.handle[0], t.stream[0]), ncclxInvalidUsage,
                       "no send_only dispatch or combine in flight");
    ep_run_dispatch_and_check(&run, 0);
    EXPECT_COMBINE_ERROR(&run, a.expert_out.dtype = a.out.dtype = F32, ncclxInvalidArgument,
                         "args->expert_out.dtype=2"); /* no FP32 tokens in the plan */
    EXPECT_COMBINE_ERROR(&run, a.expert_out.dtype = a.out.dtype = U8, ncclxInvalidArgument,
                         "args->expert_out.dtype=6");
    EXPECT_COMBINE_ERROR(&run, a.out.dtype = F16, ncclxInvalidArgument, "args->out.dtype=1");
    EXPECT_COMBINE_ERROR(&run, a.expert_out.shape[2] = H / 2, ncclxInvalidArgument,
                         "args->expert_out.shape[2]=128");
    EXPECT_COMBINE_ERROR(&run, (a.expert_out.shape[0] = R, a.expert_out.shape[1] = T),
                         ncclxInvalidArgument, "args->expert_out.shape[0]=2, expected 4");
    EXPECT_COMBINE_ERROR(&run, a.out.shape[0] += 1, ncclxInvalidArgument, "args->out.shape[0]=17");
    EXPECT_COMBINE_ERROR(&run, a.topk_weights = (ncclxTensor_t)NCCLX_TENSOR_INIT,
                         ncclxInvalidArgument, "args->topk_weights");
    EXPECT_COMBINE_ERROR(&run, a.topk_weights.shape[1] = K - 1, ncclxInvalidArgument,
                         "args->topk_weights.shape[1]=3");
    EXPECT_COMBINE_ERROR(&run, a.send_only = 2, ncclxInvalidArgument,
                         "args->send_only must be 0 or 1");
    EXPECT_COMBINE_ERROR(&run, a.magic = 0, ncclxInvalidArgument, "args->magic");
    assert_ncclx_error(ncclxEpCombine(run.handle[0], NULL, t.stream[0]), ncclxInvalidArgument,
                       "args is NULL");
    /* The refused calls changed nothing: a real combine works, twice the same. */
    ep_run_combine_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    /* A new routing needs a new dispatch before the next combine. */
    ep_run_update(&run);
    EXPECT_COMBINE_ERROR(&run, (void)a, ncclxInvalidUsage, "no completed dispatch");
    finish_run(&run, "combine argument errors");
    ep_team_close(&t);
}

static void test_handle_pool_and_lifetime(void **state)
{
    ep_team_t t;
    ep_run_t run;
    ncclxEpHandle_t extra = NULL, more = (ncclxEpHandle_t)0x1;
    ncclxEpHandleConfig_t cfg;
    ncclxTensor_t idx;
    (void)state;
    ep_rng_reset("pool");
    open_team(&t, EM | RM);
    start_run(&run, &t, &em_case);
    ep_run_create(&run); /* one of the two handles of each rank */
    cfg = ep_handle_config(&run);
    idx = ep_idx_tensor(&run, 0);
    assert_ncclx_ok(ncclxEpHandleCreate(t.group[0], &cfg, &idx, t.stream[0], &extra));
    assert_ncclx_error(ncclxEpHandleCreate(t.group[0], &cfg, &idx, t.stream[0], &more),
                       ncclxResourceExhausted, "all 2 are in use");
    assert_non_null(strstr(ncclxGetLastError(), "num_handles"));
    assert_ptr_equal(more, (ncclxEpHandle_t)0x1);
    /* Rank 1's pool is its own: it still has one. */
    idx = ep_idx_tensor(&run, 1);
    assert_ncclx_ok(ncclxEpHandleCreate(t.group[1], &cfg, &idx, t.stream[1], &more));
    assert_ncclx_ok(ncclxEpHandleDestroy(more));
    /* A destroyed handle is refused, and its slot is free again. */
    assert_ncclx_ok(ncclxEpHandleDestroy(extra));
    assert_ncclx_error(ncclxEpHandleDestroy(extra), ncclxInvalidUsage, "destroyed");
    {
        ncclxEpDispatchArgs_t a = ep_dispatch_args(&run, 0, 0);
        assert_ncclx_error(ncclxEpDispatch(extra, &a, t.stream[0]), ncclxInvalidUsage, "destroyed");
        assert_ncclx_error(ncclxEpHandleUpdate(extra, &idx, t.stream[0]), ncclxInvalidUsage,
                           "destroyed");
        assert_ncclx_error(ncclxEpComplete(extra, t.stream[0]), ncclxInvalidUsage, "destroyed");
    }
    idx = ep_idx_tensor(&run, 0);
    assert_ncclx_ok(ncclxEpHandleCreate(t.group[0], &cfg, &idx, t.stream[0], &extra));
    assert_ncclx_ok(ncclxEpHandleDestroy(extra));
    /* The run's handles were not disturbed. */
    ep_run_dispatch_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    finish_run(&run, "handle pool");
    ep_team_close(&t);
}

/* Out-of-range ids on one rank: the error bit on that rank's group only, no CUDA error, and
 * every other entry delivered as if the bad ones were -1.  A fresh team per case: the error
 * word is sticky. */
static void bad_expert_case(const ep_case_t *k, uint32_t bad_rank)
{
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    rt.full = 1;
    rt.bad_ranks = 1u << bad_rank;
    open_team(&t, EM | RM);
    ep_run_alloc(&run, &t, k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_run_poison_dispatch(&run);
    ep_run_enqueue_dispatch(&run, 0);
    ep_team_sync_only(&t);
    for (uint32_t r = 0; r < R; r++) {
        uint32_t error = 0xffffffffu;
        assert_ncclx_ok(ncclxEpGetAsyncError(t.group[r], &error));
        assert_int_equal(error, r == bad_rank ? NCCLX_EP_ERROR_BAD_EXPERT : 0);
    }
    ep_run_check_dispatch(&run);
    ep_run_poison_combine(&run);
    ep_run_enqueue_combine(&run, 0);
    ep_team_sync_only(&t);
    ep_run_check_combine(&run);
    ep_run_destroy(&run);
    ep_team_sync_only(&t);
    ep_alloc_assert_none("bad expert ids");
    ep_run_free(&run);
    ep_team_close(&t);
}

static void test_expert_out_of_range(void **state)
{
    const ep_case_t em = {K, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t rm = {K, RM, FP8, 0, 1, BF16, U8, 0, I32, I64, F16, 0};
    (void)state;
    ep_rng_reset("bad_expert");
    bad_expert_case(&em, 1);
    bad_expert_case(&rm, 0);
}

/* A rank that never joins: the other rank's wait gives up after the group's timeout with
 * NCCLX_EP_ERROR_TIMEOUT, and its stream still completes (no hang, no CUDA error). */
static void test_wait_timeout(void **state)
{
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    ncclxEpDispatchArgs_t a;
    uint32_t error = 0;
    (void)state;
    ep_rng_reset("timeout");
    ep_team_plan(&t, E, K, H, T);
    t.group_plan.timeout_ns = 100000000ull; /* 100 ms */
    ep_team_open(&t, R);
    rt.full = 1;
    ep_run_alloc(&run, &t, &em_case);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    a = ep_dispatch_args(&run, 0, 0);
    assert_ncclx_ok(ncclxEpDispatch(run.handle[0], &a, t.stream[0])); /* rank 1 never does */
    assert_cuda_ok(cudaStreamSynchronize(t.stream[0]));
    assert_ncclx_ok(ncclxEpGetAsyncError(t.group[0], &error));
    assert_int_equal(error, NCCLX_EP_ERROR_TIMEOUT);
    assert_ncclx_ok(ncclxEpGetAsyncError(t.group[1], &error));
    assert_int_equal(error, 0);
    ep_run_destroy(&run);
    ep_team_sync_only(&t);
    ep_alloc_assert_none("wait timeout");
    ep_run_free(&run);
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_and_handle_config),
        cmocka_unit_test(test_dispatch_arguments),
        cmocka_unit_test(test_combine_arguments_and_order),
        cmocka_unit_test(test_handle_pool_and_lifetime),
        cmocka_unit_test(test_expert_out_of_range),
        cmocka_unit_test(test_wait_timeout),
    };
    ep_seed_init("test_ep_ll_errors");
    return cmocka_run_group_tests_name("gpu_ep_ll_errors", tests, NULL, NULL);
}
