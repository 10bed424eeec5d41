/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL across load/store domains, on loopback teams shaped as clusters (ncclxLoopbackConfig_t:
 * nodes x ranks per node on one GPU; docs/multi-node.md): a rank reaches the ranks of its node
 * through the symmetric memory of its peer table and every other rank only through the emulated
 * network.  Element by element against the CPU reference (tests/ref), fresh random data,
 * outputs poisoned first:
 *  - shapes 1x8 (a real one-node team's paths), 2x2, 2x4, 4x2 and 8x1: both layouts, BF16,
 *    FP16 and FP32 rows, FP8, QUANT_FWD; dispatch and combine twice, then rerouted;
 *  - send-only dispatch and combine completed later, and CUDA graph replays, on 2x4;
 *  - the emulator keeping only GIN's promise (NCCLX_NET_EMU_CHAOS=1: unsignalled puts held back
 *    and applied in reverse order) and a network delay (NCCLX_NET_EMU_DELAY_NS);
 *  - the bytes that crossed the network, counted by the emulator, equal to the minimum: each
 *    token once per remote destination rank, each combine row once, one signal word per remote
 *    rank and direction, and nothing between ranks of one node;
 *  - each rank's peer table holds exactly its node's ranks; a group with an active mask across
 *    nodes, cleaned and used again.
 * TEST_SEED=n replays a run's random data; TEST_FILTER=pattern runs the matching tests alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_mask_steps.h"
#include "gpu/ep_ll_short.h"

#include "context.h"
#include "ep_group.h"

static void open_shape(ep_team_t *t, uint32_t nodes, uint32_t per_node, uint32_t local_experts,
                       uint32_t topk, uint32_t hidden, uint32_t max_tokens)
{
    ep_team_plan(t, nodes * per_node * local_experts, topk, hidden, max_tokens);
    t->nodes = nodes;
    ep_team_open(t, nodes * per_node);
}

/* {topk (0: max), layout, recipe, round_scales, global ids, dtype, scale dtype, scales per
 *  token, topk_idx dtype, out_topk_idx dtype, combine dtype} */
static const ep_case_t cases[] = {
    {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, RM, NONE, 0, 1, F16, U8, 0, I32, I32, F16, 0},
    {0, EM, FP8, 1, 0, BF16, U8, 0, I32, I64, F32, 0},
    {0, RM, FP8, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, EM, QFWD, 0, 0, E4M3, F32, 3, I64, I64, F16, 0},
    {0, RM, NONE, 0, 0, F32, U8, 0, I64, I32, F32, 0},
};
#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

static void run_shape(uint32_t nodes, uint32_t per_node, const char *name)
{
    ep_team_t t;
    ep_rng_reset(name);
    open_shape(&t, nodes, per_node, 3, 6, 1024, 48);
    for (size_t i = 0; i < NUM_CASES; i++) {
        ep_routing_t rt = ep_routing_default();
        if (i % 3 == 2) {
            rt.full = 1;
        } else if (i % 3 == 1) {
            rt.empty_ranks = 1u << (t.ranks - 1); /* a rank of the last node sends nothing */
        }
        ep_run_case(&t, &cases[i], &rt, name);
    }
    ep_team_close(&t);
}

static void test_shape_1x8(void **state)
{
    (void)state;
    run_shape(1, 8, "1x8");
}
static void test_shape_2x2(void **state)
{
    (void)state;
    run_shape(2, 2, "2x2");
}
static void test_shape_2x4(void **state)
{
    (void)state;
    run_shape(2, 4, "2x4");
}
static void test_shape_4x2(void **state)
{
    (void)state;
    run_shape(4, 2, "4x2");
}
static void test_shape_8x1(void **state)
{
    (void)state;
    run_shape(8, 1, "8x1");
}

/* Send-only dispatch and combine, each completed by ncclxEpComplete after the other ranks'
 * sends, on 2x4. */
static void test_send_only_2x4(void **state)
{
    const ep_case_t k = {0, EM, FP8, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("send-only");
    open_shape(&t, 2, 4, 2, 4, 512, 32);
    ep_run_alloc(&run, &t, &k);
    ep_alloc_arm();
    for (int round = 0; round < 3; round++) {
        ep_run_fill(&run, &rt);
        if (round == 0) {
            ep_run_create(&run);
        } else {
            ep_run_update(&run);
        }
        ep_run_dispatch_and_check(&run, 1);
        ep_run_combine_and_check(&run, 1);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("send-only across nodes");
    ep_run_free(&run);
    ep_team_close(&t);
}

/* Update + dispatch + combine captured once per rank and replayed with fresh data each time
 * (new routings, tokens, weights and expert outputs in the captured buffers; the same token
 * counts, which the captured calls hold) on 2x4. */
static void test_graph_replay_2x4(void **state)
{
    const ep_case_t k = {0, RM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const int replays = 20;
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    cudaGraphExec_t exec[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("graph");
    open_shape(&t, 2, 4, 2, 4, 768, 40);
    ep_run_alloc(&run, &t, &k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        cudaGraph_t graph = NULL;
        ncclxTensor_t idx = ep_idx_tensor(&run, r);
        ncclxEpDispatchArgs_t da = ep_dispatch_args(&run, r, 0);
        ncclxEpCombineArgs_t ca = ep_combine_args(&run, r, 0);
        assert_cuda_ok(cudaStreamBeginCapture(t.stream[r], cudaStreamCaptureModeThreadLocal));
        assert_ncclx_ok(ncclxEpHandleUpdate(run.handle[r], &idx, t.stream[r]));
        assert_ncclx_ok(ncclxEpDispatch(run.handle[r], &da, t.stream[r]));
        assert_ncclx_ok(ncclxEpCombine(run.handle[r], &ca, t.stream[r]));
        assert_cuda_ok(cudaStreamEndCapture(t.stream[r], &graph));
        assert_cuda_ok(cudaGraphInstantiate(&exec[r], graph, 0));
        assert_cuda_ok(cudaGraphDestroy(graph));
    }
    rt.keep_tokens = 1;
    for (int i = 0; i < replays; i++) {
        if (i > 0) {
            ep_run_fill(&run, &rt);
        }
        ep_run_poison_dispatch(&run);
        ep_run_poison_combine(&run);
        for (uint32_t r = 0; r < t.ranks; r++) {
            assert_cuda_ok(cudaGraphLaunch(exec[r], t.stream[r]));
        }
        ep_team_sync(&t);
        ep_run_check_dispatch(&run);
        ep_run_check_combine(&run);
    }
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("graph replays across nodes");
    ep_run_free(&run);
    ep_team_close(&t);
}

/* The emulator holding every unsignalled put back until a signal or a flush of its (context,
 * peer) and applying the held puts latest first, with a 20 us network delay per signal: results
 * stay exact, so LL reads nothing that no signal guarded. */
static void test_chaos_and_delay_2x4(void **state)
{
    (void)state;
    assert_int_equal(setenv("NCCLX_NET_EMU_CHAOS", "1", 1), 0);
    assert_int_equal(setenv("NCCLX_NET_EMU_DELAY_NS", "20000", 1), 0);
    ep_team_t t;
    ep_rng_reset("chaos");
    open_shape(&t, 2, 4, 3, 6, 1024, 48);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(t.ctx[r]->net.chaos, 1);
        assert_int_equal(t.ctx[r]->net.delay_ns, 20000);
    }
    for (size_t i = 0; i < 4; i++) {
        ep_routing_t rt = ep_routing_default();
        rt.full = i % 2;
        ep_run_case(&t, &cases[i], &rt, "chaos");
    }
    ncclx_net_stats_t stats;
    assert_ncclx_ok(ncclx_net_read_stats(t.ctx[0], &stats));
    assert_true(stats.held > 0); /* puts were held back indeed */
    ep_team_close(&t);
    assert_int_equal(unsetenv("NCCLX_NET_EMU_CHAOS"), 0);
    assert_int_equal(unsetenv("NCCLX_NET_EMU_DELAY_NS"), 0);
}

/* Whether expert e (-1: none) is on rank r. */
static int on_rank(int64_t e, uint32_t r, uint32_t local_experts)
{
    return e >= 0 && (uint32_t)(e / local_experts) == r;
}

/* The least bytes rank r must put across the network in one dispatch and in one combine of
 * run: every token once per destination rank of another node (a whole message), every combine
 * row this rank computed for a source on another node once, one 8-byte signal word per remote
 * rank and direction, and expert-major the dispatch's row count per local expert of each
 * remote rank (L int32: the receiver places every row before it moves). */
static void minimum_bytes(const ep_run_t *run, uint32_t r, uint32_t per_node, size_t msg_bytes,
                          uint64_t *dispatch, uint64_t *combine)
{
    const ncclx_ref_case_t *c = &run->c;
    const uint32_t L = c->experts / c->ranks, K = c->topk;
    const size_t row = (size_t)c->hidden * (run->k.combine_dtype == NCCLX_FLOAT32 ? 4 : 2);
    *dispatch = *combine = 0;
    for (uint32_t d = 0; d < c->ranks; d++) {
        if (d / per_node == r / per_node) {
            continue;
        }
        *dispatch += 8;
        *combine += 8;
        if (c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
            *dispatch += (uint64_t)L * sizeof(int32_t);
        }
        /* r's tokens that go to d. */
        for (uint32_t t = 0; t < run->r[r].num_tokens; t++) {
            int goes = 0;
            for (uint32_t k = 0; k < K; k++) {
                goes |= on_rank(run->r[r].ref_idx[t * K + k], d, L);
            }
            *dispatch += goes ? msg_bytes : 0;
        }
        /* d's tokens that came to r: one row per entry served here (expert-major) or one. */
        for (uint32_t t = 0; t < run->r[d].num_tokens; t++) {
            uint32_t rows = 0;
            for (uint32_t k = 0; k < K; k++) {
                rows += on_rank(run->r[d].ref_idx[t * K + k], r, L);
            }
            if (c->layout == NCCLX_EP_LAYOUT_RANK_MAJOR) {
                rows = rows > 0;
            }
            *combine += rows * row;
        }
    }
}

/* The emulator's counters after one dispatch and one combine on 2x4 and on 4x2, both layouts,
 * against the minimum, rank by rank: a token sent twice to a rank, a row sent twice, or any
 * byte between two ranks of one node would show. */
static void check_bytes(uint32_t nodes, uint32_t per_node, const ep_case_t *k)
{
    ep_team_t t;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    ncclx_net_stats_t before[EP_MAX_RANKS], after[EP_MAX_RANKS];
    open_shape(&t, nodes, per_node, 2, 4, 512, 24);
    ep_run_alloc(&run, &t, k);
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclx_net_read_stats(t.ctx[r], &before[r]));
    }
    ep_run_dispatch_and_check(&run, 0);
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint64_t want_dispatch, want_combine;
        const ncclx_ep_group_t *g = (const ncclx_ep_group_t *)t.group[r];
        minimum_bytes(&run, r, per_node, g->desc.msg_bytes, &want_dispatch, &want_combine);
        assert_ncclx_ok(ncclx_net_read_stats(t.ctx[r], &after[r]));
        if (after[r].bytes - before[r].bytes != want_dispatch) {
            fail_msg("%ux%u rank %u: dispatch put %llu bytes across the network, the minimum is "
                     "%llu",
                     nodes, per_node, r, after[r].bytes - before[r].bytes,
                     (unsigned long long)want_dispatch);
        }
        assert_int_equal(after[r].signals - before[r].signals, t.ranks - per_node);
        before[r] = after[r];
    }
    ep_run_combine_and_check(&run, 0);
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint64_t want_dispatch, want_combine;
        const ncclx_ep_group_t *g = (const ncclx_ep_group_t *)t.group[r];
        minimum_bytes(&run, r, per_node, g->desc.msg_bytes, &want_dispatch, &want_combine);
        assert_ncclx_ok(ncclx_net_read_stats(t.ctx[r], &after[r]));
        if (after[r].bytes - before[r].bytes != want_combine) {
            fail_msg("%ux%u rank %u: combine put %llu bytes across the network, the minimum is "
                     "%llu",
                     nodes, per_node, r, after[r].bytes - before[r].bytes,
                     (unsigned long long)want_combine);
        }
    }
    ep_run_destroy(&run);
    ep_run_free(&run);
    ep_team_close(&t);
}

static void test_network_bytes_minimal(void **state)
{
    const ep_case_t em = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t rm = {0, RM, FP8, 0, 0, BF16, U8, 0, I64, I64, F32, 0};
    (void)state;
    ep_rng_reset("bytes");
    check_bytes(2, 4, &em);
    check_bytes(4, 2, &rm);
    check_bytes(2, 4, &rm);
}

/* One node (1x8): the same team as a real one-node communicator; nothing crosses a network. */
static void test_one_node_has_no_network(void **state)
{
    ep_team_t t;
    ncclx_net_stats_t stats;
    (void)state;
    ep_rng_reset("one-node");
    open_shape(&t, 1, 8, 2, 4, 512, 16);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(t.ctx[r]->net.kind, NCCLX_NET_NONE);
        assert_ncclx_ok(ncclx_net_read_stats(t.ctx[r], &stats));
        assert_int_equal(stats.bytes, 0);
    }
    ep_team_close(&t);
}

/* Each rank's device peer table: its node's ranks' arenas, lsa_size of them, and nothing of any
 * other node (the plan reserves room for lsa_size pointers only). */
static void test_peer_table_holds_the_node(void **state)
{
    ep_team_t t;
    void *world[EP_MAX_RANKS], *peers[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("peers");
    open_shape(&t, 4, 2, 2, 4, 512, 16);
    assert_cuda_ok(cudaMemcpy(world, (const void *)t.ctx[0]->net.world, t.ranks * sizeof(void *),
                              cudaMemcpyDeviceToHost));
    for (uint32_t r = 0; r < t.ranks; r++) {
        const struct ncclxContext *ctx = t.ctx[r];
        assert_int_equal(ctx->norm.team.lsa_size, 2);
        assert_int_equal(ctx->norm.team.num_nodes, 4);
        assert_int_equal(ctx->net.kind, NCCLX_NET_EMULATED);
        assert_int_equal(ctx->info.node_id, r / 2);
        assert_cuda_ok(
            cudaMemcpy(peers, ctx->peer_table, 2 * sizeof(void *), cudaMemcpyDeviceToHost));
        for (uint32_t p = 0; p < 2; p++) {
            assert_ptr_equal(peers[p], world[r / 2 * 2 + p]);
        }
        assert_ptr_equal(world[r], ctx->arenas.base[NCCLX_MEM_SYMMETRIC]);
    }
    ep_team_close(&t);
}

/* A group with an active mask across nodes: operations exact (remote combine rows land by
 * source and are copied in once their source counts), then a clean of every rank (counted
 * through network signals, with new bases for the operation signals) and exact again.  Dead
 * ranks, stragglers and lone cleans across nodes: test_ep_ll_mask and test_ep_ll_straggler with
 * TEST_NODES (tests/gpu/run_ll_masks_nodes.sh, in make check-gpu). */
static void test_mask_group_across_nodes(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("mask");
    ep_team_plan(&t, 16, 4, 512, 16);
    t.group_plan.enable_mask = 1;
    t.nodes = 2;
    ep_team_open(&t, 4);
    for (int clean = 0; clean < 3; clean++) {
        for (size_t i = 0; i < 2; i++) {
            ep_routing_t rt = ep_routing_default();
            rt.full = (int)i;
            ep_run_case(&t, &cases[i], &rt, "mask across nodes");
        }
        mask_clean_all(&t);
    }
    ep_team_assert_no_async_error(&t);
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peer_table_holds_the_node),
        cmocka_unit_test(test_one_node_has_no_network),
        cmocka_unit_test(test_mask_group_across_nodes),
        cmocka_unit_test(test_network_bytes_minimal),
        cmocka_unit_test(test_shape_2x2),
        cmocka_unit_test(test_shape_2x4),
        cmocka_unit_test(test_shape_4x2),
        cmocka_unit_test(test_shape_8x1),
        cmocka_unit_test(test_shape_1x8),
        cmocka_unit_test(test_send_only_2x4),
        cmocka_unit_test(test_graph_replay_2x4),
        cmocka_unit_test(test_chaos_and_delay_2x4),
    };
    ep_seed_init("test_ep_ll_nodes");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
