/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL dispatch and combine against the CPU reference (tests/ref), on loopback teams of 2, 4
 * and 8 ranks and on the real 1-rank communicator: both layouts (rank-major with local and
 * global out_topk_idx, INT32 and INT64), recipes NONE (BF16, FP16, FP32), QUANT_FWD (FP8,
 * FP4x2, UINT8 and BF16 rows with scales of several dtypes) and FP8 (with and without
 * round_scales), INT32 and INT64 topk_idx, -1 entries, ranks without tokens (with and without
 * NULL data), top-k above the number of ranks, every expert of a token on one rank, repeated
 * experts, all tokens to one expert, the largest top-k, and a DeepSeek-sized case.  Each case
 * dispatches and combines twice (the second combine must be bitwise equal), then reroutes its
 * handles with fresh data.  Nothing may allocate after the buffers exist.  TEST_SEED=n
 * replays a run's random data.
 */
#include <stdio.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_short.h"

/* {topk (0: max), layout, recipe, round_scales, global ids, dtype, scale dtype, scales per
 *  token, topk_idx dtype, out_topk_idx dtype, combine dtype} */
static const ep_case_t matrix[] = {
    {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {1, EM, NONE, 0, 0, F16, U8, 0, I32, I64, F16, 0},
    {0, EM, NONE, 0, 0, F32, U8, 0, I64, I64, F32, 0},
    {0, RM, NONE, 0, 0, BF16, U8, 0, I32, I32, BF16, 0},
    {2, RM, NONE, 0, 1, F32, U8, 0, I64, I64, F32, 0},
    {0, RM, NONE, 0, 1, F16, U8, 0, I64, I32, F16, 0},
    {0, EM, FP8, 0, 0, BF16, U8, 0, I32, I64, BF16, 0},
    {0, EM, FP8, 1, 0, BF16, U8, 0, I64, I64, F16, 0},
    {0, RM, FP8, 1, 0, BF16, U8, 0, I32, I64, BF16, 0},
    {0, RM, FP8, 0, 1, BF16, U8, 0, I64, I32, F32, 0},
    {0, EM, QFWD, 0, 0, E4M3, F32, 4, I64, I64, BF16, 0},
    {0, RM, QFWD, 0, 1, U8, U8, 7, I32, I32, F32, 0},
    {3, EM, QFWD, 0, 0, U8, U8, 0, I32, I64, F16, 0},
    {0, RM, QFWD, 0, 0, BF16, BF16, 5, I64, I64, BF16, 0},
    {0, EM, QFWD, 0, 0, NCCLX_FP4X2_E2M1, E4M3, 16, I64, I64, BF16, 0},
};
#define MATRIX_CASES (sizeof(matrix) / sizeof(matrix[0]))

/* Every matrix case, with some ranks empty or full in turn. */
static void run_matrix(uint32_t ranks, uint32_t experts, uint32_t max_topk, uint32_t hidden,
                       uint32_t max_tokens)
{
    ep_team_t t;
    ep_team_plan(&t, experts, max_topk, hidden, max_tokens);
    ep_team_open(&t, ranks);
    for (size_t i = 0; i < MATRIX_CASES; i++) {
        ep_routing_t rt = ep_routing_default();
        if (i % 3 == 1 && t.ranks > 1) {
            rt.empty_ranks = 1u << (t.ranks - 1);
        } else if (i % 3 == 2) {
            rt.full = 1;
        }
        ep_run_case(&t, &matrix[i], &rt, "dispatch/combine case");
    }
    ep_team_close(&t);
}

/* Top-k above the number of ranks everywhere: K = 4 > 1, 6 > 2, 8 > 4, 12 > 8. */

static void test_singleton_communicator(void **state)
{
    (void)state;
    ep_rng_reset("singleton");
    run_matrix(0, 8, 4, 1024, 32);
}

static void test_loopback_2_ranks(void **state)
{
    (void)state;
    ep_rng_reset("loopback2");
    run_matrix(2, 8, 6, 2048, 64);
}

static void test_loopback_4_ranks(void **state)
{
    (void)state;
    ep_rng_reset("loopback4");
    run_matrix(4, 32, 8, 1024, 48);
}

static void test_loopback_8_ranks(void **state)
{
    (void)state;
    ep_rng_reset("loopback8");
    run_matrix(8, 64, 12, 384, 24);
}

/* ---- routing edge cases on 4 ranks, E = 16 (L = 4), K up to 6 ---- */

static const ep_case_t edge_em = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t edge_rm = {0, RM, FP8, 0, 1, BF16, U8, 0, I32, I32, F16, 0};

static void open_edge_team(ep_team_t *t)
{
    ep_team_plan(t, 16, 6, 512, 32);
    ep_team_open(t, 4);
}

static void run_both_layouts(ep_team_t *t, uint32_t topk, const ep_routing_t *rt)
{
    ep_case_t em = edge_em, rm = edge_rm;
    em.topk = rm.topk = topk;
    ep_run_case(t, &em, rt, "dispatch/combine case");
    ep_run_case(t, &rm, rt, "dispatch/combine case");
}

static void test_all_tokens_to_one_expert(void **state)
{
    const uint32_t experts[] = {15, 0, 9}; /* last rank's last, first rank's first, rank 2 */
    ep_team_t t;
    (void)state;
    ep_rng_reset("one_expert");
    open_edge_team(&t);
    for (size_t i = 0; i < sizeof(experts) / sizeof(experts[0]); i++) {
        ep_routing_t rt = ep_routing_default();
        rt.kind = EP_ROUTE_ONE_EXPERT;
        rt.expert = experts[i];
        rt.unrouted = 0.0f;
        rt.full = 1; /* the expert receives ranks * max_tokens rows: its whole capacity */
        run_both_layouts(&t, 0, &rt);
        run_both_layouts(&t, 1, &rt);
    }
    ep_team_close(&t);
}

/* QUANT_FWD with scales on 4 ranks, global ids in out_topk_idx. */
static const ep_case_t edge_qfwd = {0, RM, QFWD, 0, 1, E4M3, U8, 7, I32, I64, BF16, 0};

/* Ranks without tokens, passing their [0, ...] tensors with real buffers and then with NULL
 * data (a tensor without elements needs none): they still receive everything. */
static void test_ranks_without_tokens(void **state)
{
    const uint32_t masks[] = {0x5, 0x7, 0xf, 0x1};
    ep_team_t t;
    (void)state;
    ep_rng_reset("empty_ranks");
    open_edge_team(&t);
    for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
        ep_routing_t rt = ep_routing_default();
        ep_case_t em = edge_em, rm = edge_rm;
        rt.empty_ranks = masks[i]; /* 0xf: nobody sends anything */
        ep_run_case(&t, &edge_qfwd, &rt, "dispatch/combine case");
        for (uint32_t null_data = 0; null_data < 2; null_data++) {
            em.null_when_empty = rm.null_when_empty = null_data;
            ep_run_case(&t, &em, &rt, "dispatch/combine case");
            ep_run_case(&t, &rm, &rt, "dispatch/combine case");
        }
    }
    ep_team_close(&t);
}

/* The same for QUANT_FWD scales: a rank without tokens passes scales [0, S] with NULL data,
 * and must still receive the other ranks' scales into out_scales. */
static void test_empty_rank_null_scales(void **state)
{
    const uint32_t masks[] = {0x1, 0x5};
    ep_case_t q = edge_qfwd;
    ep_team_t t;
    (void)state;
    ep_rng_reset("empty_rank_null_scales");
    open_edge_team(&t);
    q.null_when_empty = 1;
    for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
        ep_routing_t rt = ep_routing_default();
        rt.empty_ranks = masks[i];
        ep_run_case(&t, &q, &rt, "dispatch/combine case");
    }
    ep_team_close(&t);
}

static void test_unrouted_entries(void **state)
{
    const float fractions[] = {1.0f, 0.5f, 0.0f};
    ep_team_t t;
    (void)state;
    ep_rng_reset("unrouted");
    open_edge_team(&t);
    for (size_t i = 0; i < sizeof(fractions) / sizeof(fractions[0]); i++) {
        ep_routing_t rt = ep_routing_default();
        rt.unrouted = fractions[i]; /* 1.0: every entry -1, nothing moves */
        rt.full = 1;
        run_both_layouts(&t, 0, &rt);
    }
    ep_team_close(&t);
}

/* A token's experts all on one rank: sent once there, one row per expert (K = L = 4), and
 * with K = 6 > L also repeated experts. */
static void test_topk_on_one_rank(void **state)
{
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("one_rank");
    open_edge_team(&t);
    rt.kind = EP_ROUTE_ONE_RANK;
    rt.unrouted = 0.0f;
    run_both_layouts(&t, 4, &rt);
    run_both_layouts(&t, 6, &rt);
    rt.unrouted = 0.2f;
    run_both_layouts(&t, 6, &rt);
    ep_team_close(&t);
}

/* The same expert twice in a token's top-k: one row, both weights applied in combine. */
static void test_repeated_experts(void **state)
{
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("repeats");
    open_edge_team(&t);
    rt.kind = EP_ROUTE_REPEATS;
    rt.unrouted = 0.0f;
    run_both_layouts(&t, 6, &rt);
    run_both_layouts(&t, 2, &rt);
    ep_team_close(&t);
}

/* K = NCCLX_EP_MAX_TOPK on 2 ranks. */
static void test_largest_topk(void **state)
{
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    const ep_case_t em = {NCCLX_EP_MAX_TOPK, EM, NONE, 0, 0, F16, U8, 0, I32, I64, F16, 0};
    const ep_case_t rm = {NCCLX_EP_MAX_TOPK, RM, FP8, 1, 0, BF16, U8, 0, I64, I64, BF16, 0};
    (void)state;
    ep_rng_reset("max_topk");
    ep_team_plan(&t, 32, NCCLX_EP_MAX_TOPK, 256, 16);
    ep_team_open(&t, 2);
    ep_run_case(&t, &em, &rt, "dispatch/combine case");
    ep_run_case(&t, &rm, &rt, "dispatch/combine case");
    ep_team_close(&t);
}

/* DeepSeek-V3-like: 8 ranks, hidden 7168, 256 experts, top-8, 128 tokens, FP8 with power-of-
 * two scales, expert-major, BF16 combine. */
static void test_deepseek_shape(void **state)
{
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    const ep_case_t k = {8, EM, FP8, 1, 0, BF16, U8, 0, I64, I64, BF16, 0};
    ep_run_t run;
    (void)state;
    ep_rng_reset("deepseek");
    ep_team_plan(&t, 256, 8, 7168, 128);
    t.group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    t.group_plan.layouts = EM;
    t.group_plan.recipes = NONE | FP8;
    t.group_plan.max_token_bytes = 0;
    t.group_plan.max_scale_bytes = 0;
    ep_team_open(&t, 8);
    rt.unrouted = 0.0f;
    rt.full = 1;
    ep_run_alloc(&run, &t, &k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_run_dispatch_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    ep_run_destroy(&run);
    ep_alloc_assert_none("DeepSeek-sized case");
    ep_run_free(&run);
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_singleton_communicator),
        cmocka_unit_test(test_loopback_2_ranks),
        cmocka_unit_test(test_loopback_4_ranks),
        cmocka_unit_test(test_loopback_8_ranks),
        cmocka_unit_test(test_all_tokens_to_one_expert),
        cmocka_unit_test(test_ranks_without_tokens),
        cmocka_unit_test(test_empty_rank_null_scales),
        cmocka_unit_test(test_unrouted_entries),
        cmocka_unit_test(test_topk_on_one_rank),
        cmocka_unit_test(test_repeated_experts),
        cmocka_unit_test(test_largest_topk),
        cmocka_unit_test(test_deepseek_shape),
    };
    ep_seed_init("test_ep_ll");
    return cmocka_run_group_tests_name("gpu_ep_ll", tests, NULL, NULL);
}
