/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL zero copy (a group planned with zero_copy: ncclx/plan.h, ncclxEpGroupGetLlBuffers in
 * ncclx/ep.h) against the CPU reference (tests/ref), on loopback teams of 1, 4 and 8 ranks
 * (4 also shaped as one node, as a real team) and on the real 1-rank communicator: the
 * expert-major dispatch received in place (out_tokens, and out_scales for FP8, are the rank's
 * zero-copy rows), into the caller's own buffers (one more copy), and both mixed over the ranks
 * of one operation; combine reading expert_out from the zero-copy rows (the expert outputs
 * written there after the dispatch, as an expert computing in place would) or from the
 * caller's buffer, mixed as well (a rank combining from its rows stores none: its peers read
 * them there, docs/ep-ll.md "Zero copy").  Recipes NONE (BF16), FP8 (in place and mixed, with and
 * without round_scales, special values once) and QUANT_FWD (caller buffers).  Every iteration
 * draws new data and a new routing (ncclxEpHandleUpdate), poisons every output and every rank's
 * zero-copy rows (from that rank's stream) first, and checks every count and row of every
 * expert and every combine result bit for bit.  Also: update + dispatch + combine captured in a
 * CUDA graph per rank and replayed with new routings and data, rank-major handles of a
 * zero-copy group (rows R x T of their own: in place, caller buffers and mixed, BF16 and FP8,
 * combines pulled and sent, on 1, 4 and 8 ranks; and between an expert-major dispatch and its
 * combine: the expert-major rows stay valid until the next expert-major dispatch), two expert-major
 * handles dispatched one after the other and the first combined from the rows, the kernels a
 * captured dispatch and combine hold and which of them a rank alone on its GPU launches early (a
 * pulled combine: one kernel), and ncclxEpGroupGetLlBuffers (the rows' shape; refused without
 * zero_copy).  Nothing may allocate after the buffers.  TEST_SEED=n replays a run's random data.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_launches.h"
#include "gpu/ep_ll_short.h"

#define ALL_RANKS 0xffffu

/* {topk (0: max), layout, recipe, round_scales, global ids, dtype, scale dtype, scales per
 *  token, topk_idx dtype, out_topk_idx dtype, combine dtype} */
static const ep_case_t bf16_em = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t fp8_em = {0, EM, FP8, 0, 0, BF16, U8, 0, I32, I64, BF16, 0};
static const ep_case_t fp8_em_round = {4, EM, FP8, 1, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t qfwd_em = {0, EM, QFWD, 0, 0, E4M3, F32, 4, I64, I64, BF16, 0};
static const ep_case_t bf16_rm = {0, RM, NONE, 0, 1, BF16, U8, 0, I32, I32, BF16, 0};
static const ep_case_t fp8_rm = {0, RM, FP8, 1, 0, BF16, U8, 0, I64, I64, BF16, 0};

/* A zero-copy group: LL, BF16 tokens (and E4M3 for QUANT_FWD), every recipe, QUANT_FWD rows
 * no wider than a BF16 row and scale rows no wider than the FP8 recipe's, so that every
 * layout of the rows is the contiguous [L, R*T, ...] of the call's dtype (row_bytes = 2 x
 * hidden, scale_bytes = hidden / 128 x 4).  hidden >= 512: QUANT_FWD cases carry 16 scale
 * bytes. */
static void zc_plan(ep_team_t *t, uint32_t experts, uint32_t max_topk, uint32_t hidden,
                    uint32_t max_tokens, uint32_t layouts)
{
    ep_team_plan(t, experts, max_topk, hidden, max_tokens);
    t->group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FP8_E4M3);
    t->group_plan.layouts = layouts;
    t->group_plan.recipes = NONE | QFWD | FP8;
    t->group_plan.max_token_bytes = hidden;
    t->group_plan.max_scale_bytes = hidden / 128 * 4;
    t->group_plan.zero_copy = 1;
}

/* ranks 1 .. 16: a loopback team (nodes 1: shaped as one node of a real team, where ranks reach
 * each other only through symmetric memory); 0: the real 1-rank communicator.  16 experts (4
 * per rank of 4, all 16 on one rank), 4 per rank from 8 ranks on; top-6 at most. */
static void open_zc_team(ep_team_t *t, uint32_t ranks, uint32_t nodes)
{
    zc_plan(t, ranks >= 8 ? 4 * ranks : 16, 6, 512, ranks >= 8 ? 24 : 32, EM);
    t->nodes = nodes;
    ep_team_open(t, ranks);
}

/* Which ranks receive in place and which combine from their zero-copy rows, per iteration. */
typedef struct {
    uint32_t dispatch, combine;
} zc_masks_t;

/* Iteration i's routing: random, then ranks full, a rank without tokens, every expert of a
 * token on one rank, all tokens to one expert (its L x R x T rows' whole zone), and repeated
 * experts; values: FP8 special blocks and signed weights once. */
static ep_routing_t routing_of(uint32_t i, uint32_t ranks, uint32_t experts)
{
    ep_routing_t rt = ep_routing_default();
    switch (i % 6) {
    case 1:
        rt.full = 1;
        rt.values = EP_VALUES_SPECIAL_TOKENS | EP_VALUES_SIGNED_WEIGHTS;
        break;
    case 2:
        rt.empty_ranks = ranks > 1 ? 1u << (ranks - 1) : 0;
        break;
    case 3:
        rt.kind = EP_ROUTE_ONE_RANK;
        rt.unrouted = 0.0f;
        break;
    case 4:
        rt.kind = EP_ROUTE_ONE_EXPERT;
        rt.expert = (i * 7u) % experts;
        rt.unrouted = 0.0f;
        rt.full = 1;
        break;
    case 5:
        rt.kind = EP_ROUTE_REPEATS;
        break;
    default:
        break;
    }
    return rt;
}

/* One case on team t for n iterations: new data and a new routing each time (created first,
 * then rerouted by ncclxEpHandleUpdate), iteration i with masks[i % num_masks]; dispatch
 * checked (every third one send_only: boards and rows at the send, the receive at
 * ncclxEpComplete), then two combines checked (the second bitwise equal to the first; every
 * other one send_only: a rank combining from its rows only signals at the send, and its peers
 * read the rows at ncclxEpComplete). */
static void zc_iterations(ep_team_t *t, const ep_case_t *k, const zc_masks_t *masks,
                          size_t num_masks, uint32_t n, const char *where)
{
    ep_run_t run;
    ep_run_alloc(&run, t, k);
    ep_run_zero_copy(&run, masks[0].dispatch, masks[0].combine);
    ep_alloc_arm();
    for (uint32_t i = 0; i < n; i++) {
        ep_routing_t rt = routing_of(i, t->ranks, run.c.experts);
        run.zc_dispatch = masks[i % num_masks].dispatch;
        run.zc_combine = masks[i % num_masks].combine;
        ep_run_fill(&run, &rt);
        if (i == 0) {
            ep_run_create(&run);
        } else {
            ep_run_update(&run);
        }
        ep_run_dispatch_and_check(&run, i % 3 == 2);
        ep_run_combine_and_check(&run, 0);
        ep_run_combine_and_check(&run, i % 2);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none(where);
    ep_run_free(&run);
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- in place ---- */

static const zc_masks_t in_place[] = {{ALL_RANKS, ALL_RANKS}};

static void in_place_team(uint32_t ranks, uint32_t nodes)
{
    ep_team_t t;
    open_zc_team(&t, ranks, nodes);
    zc_iterations(&t, &bf16_em, in_place, COUNT(in_place), 8, "in place, BF16");
    ep_team_close(&t);
}

static void test_in_place_4_ranks(void **state)
{
    (void)state;
    ep_rng_reset("in_place4");
    in_place_team(4, 0);
}

/* The same team shaped as one node: peers reach the rows only as a real team's ranks would. */
static void test_in_place_4_ranks_one_node(void **state)
{
    (void)state;
    ep_rng_reset("in_place4_node");
    in_place_team(4, 1);
}

static void test_in_place_8_ranks(void **state)
{
    (void)state;
    ep_rng_reset("in_place8");
    in_place_team(8, 0);
}

/* ---- the caller's buffers, and ranks mixing both ---- */

/* Caller out_tokens with expert_out from the zero-copy rows, then caller buffers both ways;
 * then mixes of in place and caller buffers among the ranks of one operation (every rank
 * takes both roles over the iterations). */
static const zc_masks_t caller_4[] = {{0, ALL_RANKS}, {0, 0}};
static const zc_masks_t mixed_4[] = {{0x5, 0x3}, {0xa, 0x6}, {0x1, 0xe}, {0xe, 0x0}};
static const zc_masks_t caller_8[] = {{0, 0}, {0, ALL_RANKS}};
static const zc_masks_t mixed_8[] = {{0x5a, 0xc3}, {0xa5, 0x3c}, {0x01, 0xfe}, {0xfe, 0x01}};

static void test_caller_buffers_4_ranks(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("caller4");
    open_zc_team(&t, 4, 0);
    zc_iterations(&t, &bf16_em, caller_4, COUNT(caller_4), 6, "caller buffers, BF16");
    zc_iterations(&t, &bf16_em, mixed_4, COUNT(mixed_4), 8, "mixed ranks, BF16");
    ep_team_close(&t);
}

static void test_caller_buffers_8_ranks(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("caller8");
    open_zc_team(&t, 8, 0);
    zc_iterations(&t, &bf16_em, caller_8, COUNT(caller_8), 4, "caller buffers, BF16");
    zc_iterations(&t, &bf16_em, mixed_8, COUNT(mixed_8), 8, "mixed ranks, BF16");
    ep_team_close(&t);
}

/* ---- recipes ---- */

/* FP8: in place (out_scales the zero-copy scale rows), then mixed; QUANT_FWD: the caller's
 * out_tokens and out_scales (expert_out from the zero-copy rows on some ranks). */
static const zc_masks_t fp8_masks[] = {{ALL_RANKS, ALL_RANKS}, {0x5, 0x9}, {ALL_RANKS, 0}};
static const zc_masks_t qfwd_masks[] = {{0, ALL_RANKS}, {0, 0x5}, {0, 0}};

static void test_recipes_4_ranks(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("recipes4");
    open_zc_team(&t, 4, 0);
    zc_iterations(&t, &fp8_em, fp8_masks, COUNT(fp8_masks), 6, "FP8");
    zc_iterations(&t, &fp8_em_round, fp8_masks, COUNT(fp8_masks), 3, "FP8, round_scales");
    zc_iterations(&t, &qfwd_em, qfwd_masks, COUNT(qfwd_masks), 6, "QUANT_FWD, caller buffers");
    ep_team_close(&t);
}

static void test_recipes_8_ranks(void **state)
{
    static const zc_masks_t fp8_8[] = {{ALL_RANKS, ALL_RANKS}, {0x0f, 0x3c}};
    ep_team_t t;
    (void)state;
    ep_rng_reset("recipes8");
    open_zc_team(&t, 8, 0);
    zc_iterations(&t, &fp8_em, fp8_8, COUNT(fp8_8), 4, "FP8");
    zc_iterations(&t, &qfwd_em, qfwd_masks, COUNT(qfwd_masks), 3, "QUANT_FWD, caller buffers");
    ep_team_close(&t);
}

/* ---- one rank ---- */

static void singleton(uint32_t ranks)
{
    ep_team_t t;
    open_zc_team(&t, ranks, 0);
    zc_iterations(&t, &bf16_em, in_place, COUNT(in_place), 6, "singleton, BF16 in place");
    zc_iterations(&t, &fp8_em, in_place, COUNT(in_place), 3, "singleton, FP8 in place");
    zc_iterations(&t, &bf16_em, caller_4, COUNT(caller_4), 2, "singleton, caller buffers");
    ep_team_close(&t);
}

static void test_loopback_singleton(void **state)
{
    (void)state;
    ep_rng_reset("loopback1");
    singleton(1);
}

static void test_singleton_communicator(void **state)
{
    (void)state;
    ep_rng_reset("singleton");
    singleton(0);
}

/* ---- CUDA graphs ---- */

/* Ranks that receive in place and also combine from their rows (both bits set): in one graph
 * the expert outputs overwrite the received rows before the host can look, so the graph keeps
 * a copy of the rows as the dispatch left them (all L x R x T: rows past the counts still
 * poison) in the rank's own out_tokens / out_scales buffers, where the dispatch check reads
 * them (check_graph_dispatch). */
static uint32_t overwritten(const ep_run_t *run)
{
    return run->zc_dispatch & run->zc_combine;
}

static void keep_received_rows(const ep_run_t *run, uint32_t r)
{
    const ep_rank_t *b = &run->r[r];
    const cudaStream_t s = run->team->stream[r];
    if (!((overwritten(run) >> r) & 1u)) {
        return;
    }
    assert_cuda_ok(cudaMemcpyAsync(b->d_out_tokens, b->zc_tokens, run->out_rows * run->out_row,
                                   cudaMemcpyDeviceToDevice, s));
    if (run->out_scale_row > 0) {
        assert_cuda_ok(cudaMemcpyAsync(b->d_out_scales, b->zc_scales,
                                       run->out_rows * run->out_scale_row, cudaMemcpyDeviceToDevice,
                                       s));
    }
}

static void check_graph_dispatch(ep_run_t *run)
{
    const uint32_t received_in_place = run->zc_dispatch;
    run->zc_dispatch &= ~overwritten(run); /* those ranks' rows: the copies */
    ep_run_check_dispatch(run);
    run->zc_dispatch = received_in_place;
}

/* Rank r's update, dispatch, expert outputs written into its rows (zc_combine), combine. */
static void capture_rank(ep_run_t *run, uint32_t r, cudaGraphExec_t *exec)
{
    const ep_team_t *t = run->team;
    const ncclxTensor_t idx = ep_idx_tensor(run, r);
    const ncclxEpDispatchArgs_t da = ep_dispatch_args(run, r, 0);
    const ncclxEpCombineArgs_t ca = ep_combine_args(run, r, 0);
    cudaGraph_t graph = NULL;
    assert_cuda_ok(cudaStreamBeginCapture(t->stream[r], cudaStreamCaptureModeThreadLocal));
    assert_ncclx_ok(ncclxEpHandleUpdate(run->handle[r], &idx, t->stream[r]));
    assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &da, t->stream[r]));
    keep_received_rows(run, r);
    ep_run_stage_expert_out(run, r);
    assert_ncclx_ok(ncclxEpCombine(run->handle[r], &ca, t->stream[r]));
    assert_cuda_ok(cudaStreamEndCapture(t->stream[r], &graph));
    assert_non_null(graph);
    assert_cuda_ok(cudaGraphInstantiate(exec, graph, 0));
    assert_cuda_ok(cudaGraphDestroy(graph));
}

/* Each rank's graph replayed `replays` times; before each replay, new tokens, weights, expert
 * outputs and routings (same token counts: they are part of the captured calls) written into
 * the captured buffers, and every output and zero-copy row poisoned. */
static void graph_case(ep_team_t *t, const ep_case_t *k, zc_masks_t masks, int replays)
{
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    cudaGraphExec_t exec[EP_MAX_RANKS];
    ep_run_alloc(&run, t, k);
    ep_run_zero_copy(&run, masks.dispatch, masks.combine);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(t);
    for (uint32_t r = 0; r < t->ranks; r++) {
        capture_rank(&run, r, &exec[r]);
    }
    rt.keep_tokens = 1;
    for (int i = 0; i < replays; i++) {
        if (i > 0) {
            ep_run_fill(&run, &rt);
        }
        ep_run_poison_dispatch(&run);
        ep_run_poison_combine(&run);
        for (uint32_t r = 0; r < t->ranks; r++) {
            assert_cuda_ok(cudaGraphLaunch(exec[r], t->stream[r]));
        }
        ep_team_sync(t);
        check_graph_dispatch(&run);
        ep_run_check_combine(&run);
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    /* Eager again after the replays, on a new routing. */
    rt.keep_tokens = 0;
    ep_run_fill(&run, &rt);
    ep_run_update(&run);
    ep_run_dispatch_and_check(&run, 0);
    ep_run_combine_and_check(&run, 0);
    ep_run_destroy(&run);
    ep_alloc_assert_none("CUDA graph replays");
    ep_run_free(&run);
}

static void test_graph_capture(void **state)
{
    const zc_masks_t all = {ALL_RANKS, ALL_RANKS}, mixed = {0x9, 0x3},
                     in_place_only = {ALL_RANKS, 0};
    ep_team_t t;
    (void)state;
    ep_rng_reset("graph");
    open_zc_team(&t, 4, 0);
    graph_case(&t, &bf16_em, all, 20);
    graph_case(&t, &bf16_em, in_place_only, 5);
    graph_case(&t, &fp8_em, mixed, 10);
    ep_team_close(&t);
    open_zc_team(&t, 0, 0);
    graph_case(&t, &bf16_em, all, 10);
    ep_team_close(&t);
}

/* ---- kernels per zero-copy dispatch ---- */

/* A zero-copy dispatch that receives at once is three kernels on a loopback team: the boards,
 * the send (which waits for the sources in its last block) and the receive's bookkeeping; a rank
 * alone on its GPU exchanges the boards in the send (board_in_send) and launches the receive
 * early: two kernels, one programmatic edge.  In a team of one (the singleton) the send also
 * records the messages, all its own, and ends the operation (recv_in_send): one kernel, no edge.
 * A send_only one is four everywhere (boards, send; then the wait and the receive at
 * ncclxEpComplete), a lone rank's send launched early after its boards (one edge).  A loopback
 * team launches nothing early.  Every graph replayed on every rank must give the exact
 * outputs. */
static void zc_launches_case(ep_team_t *t, const ep_case_t *k)
{
    static const size_t team_kernels[2][2] = {{3, 4}, {2, 4}}, team_early[2] = {1, 1};
    static const size_t one_kernels[2][2] = {{2, 4}, {1, 4}}, one_early[2] = {0, 1};
    const int one = t->ranks == 1;
    const size_t(*kernels)[2] = one ? one_kernels : team_kernels;
    const size_t *early = one ? one_early : team_early;
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    ep_run_alloc(&run, t, k);
    ep_run_zero_copy(&run, ALL_RANKS, 0);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(t);
    ep_check_dispatch_launches(&run, kernels, early);
    ep_run_destroy(&run);
    ep_alloc_assert_none("zero-copy dispatch launches");
    ep_run_free(&run);
}

static void test_dispatch_launches(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("zc_launches");
    open_zc_team(&t, 4, 0);
    zc_launches_case(&t, &bf16_em);
    ep_team_close(&t);
    open_zc_team(&t, 0, 0);
    zc_launches_case(&t, &bf16_em);
    zc_launches_case(&t, &fp8_em);
    ep_team_close(&t);
}

/* ---- kernels per zero-copy combine ---- */

/* A pulled combine (the rank's expert outputs in its zero-copy rows) too large to reduce in its
 * send is one kernel on a rank alone on its GPU (the singleton): the receive, whose first block
 * signals; on a loopback team two (the one-block signalling send, the receive).  A combine of the
 * caller's expert_out is two kernels, the receive launched early on the singleton.  send_only:
 * two kernels (the send; the receive at ncclxEpComplete), nothing early.  `pulled`: bit r, rank
 * r's expert outputs are in its rows (the others' in their own buffers).  24 tokens a rank: 48
 * units, past what a send reduces.  Every graph replayed on every rank must give the exact
 * outputs, and an eager combine of each kind after the replays too. */
static void zc_combine_launches_case(ep_team_t *t, uint32_t pulled)
{
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    cudaGraphExec_t exec[EP_MAX_RANKS];
    rt.keep_tokens = 1;
    ep_run_alloc(&run, t, &bf16_em);
    for (uint32_t r = 0; r < t->ranks; r++) {
        run.r[r].num_tokens = 24;
    }
    ep_run_zero_copy(&run, ALL_RANKS, pulled);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(t);
    ep_run_dispatch_and_check(&run, 0);
    for (uint32_t r = 0; r < t->ranks; r++) {
        ep_run_stage_expert_out(&run, r);
    }
    ep_team_sync(t);
    for (uint32_t send_only = 0; send_only < 2; send_only++) {
        for (uint32_t r = 0; r < t->ranks; r++) {
            const int alone = ep_launches_early(t, r), pulls = (pulled >> r) & 1u;
            size_t early = 0;
            assert_int_equal(ep_capture_op(&run, r, 1, send_only, &exec[r], &early),
                             alone && pulls && !send_only ? 1 : 2);
            assert_int_equal(early, alone && !pulls && !send_only);
        }
        ep_replay_and_check(&run, exec, 1);
        ep_run_combine_and_check(&run, send_only);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("zero-copy combine launches");
    ep_run_free(&run);
}

static void test_combine_launches(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("zc_combine_launches");
    open_zc_team(&t, 4, 0);
    zc_combine_launches_case(&t, ALL_RANKS);
    zc_combine_launches_case(&t, 0x5u);
    ep_team_close(&t);
    open_zc_team(&t, 0, 0);
    zc_combine_launches_case(&t, ALL_RANKS);
    zc_combine_launches_case(&t, 0);
    ep_team_close(&t);
}

/* ---- rank-major handles of a zero-copy group ---- */

/* An expert-major handle receiving in place and a rank-major one, alternating: dispatch em,
 * dispatch rm, then both checked (em's rows, still in the zero-copy rows after the rank-major
 * dispatch: the rank-major rows are others), combine em from its rows and combine rm, both
 * checked; rerouted each round.  rm_in_place: the ranks whose rank-major dispatch receives in
 * its rank-major rows and whose rank-major combine is pulled from them. */
static void em_rm_rounds(ep_team_t *t, const ep_case_t *krm, int rounds, uint32_t rm_in_place)
{
    ep_run_t em, rm;
    ep_run_alloc(&em, t, &bf16_em);
    ep_run_alloc(&rm, t, krm);
    ep_run_zero_copy(&em, ALL_RANKS, ALL_RANKS);
    ep_run_zero_copy(&rm, rm_in_place, rm_in_place);
    ep_alloc_arm();
    for (int i = 0; i < rounds; i++) {
        ep_routing_t rt = routing_of((uint32_t)i, t->ranks, em.c.experts);
        ep_run_fill(&em, &rt);
        ep_run_fill(&rm, &rt);
        if (i == 0) {
            ep_run_create(&em);
            ep_run_create(&rm);
        } else {
            ep_run_update(&em);
            ep_run_update(&rm);
        }
        ep_run_poison_dispatch(&em);
        ep_run_enqueue_dispatch(&em, 0);
        ep_run_poison_dispatch(&rm);
        ep_run_enqueue_dispatch(&rm, 0);
        ep_team_sync(t);
        ep_run_check_dispatch(&em);
        ep_run_check_dispatch(&rm);
        ep_run_poison_combine(&em);
        ep_run_enqueue_combine(&em, 0);
        ep_run_poison_combine(&rm);
        ep_run_enqueue_combine(&rm, 0);
        ep_team_sync(t);
        ep_run_check_combine(&em);
        ep_run_check_combine(&rm);
    }
    ep_run_destroy(&em);
    ep_run_destroy(&rm);
    ep_alloc_assert_none("expert-major and rank-major handles");
    ep_run_free(&em);
    ep_run_free(&rm);
}

static void test_rank_major_handle(void **state)
{
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("rank_major");
    zc_plan(&t, 16, 6, 512, 32, EM | RM);
    ep_team_open(&t, 4);
    /* Alone, into the caller's buffers (one more copy, from its rank-major rows). */
    ep_run_case(&t, &bf16_rm, &rt, "rank-major handle of a zero-copy group");
    ep_run_case(&t, &fp8_rm, &rt, "rank-major handle of a zero-copy group");
    em_rm_rounds(&t, &bf16_rm, 4, 0);
    em_rm_rounds(&t, &fp8_rm, 2, 0);
    /* In place and pulled: the expert-major rows survive the rank-major dispatch and combine. */
    em_rm_rounds(&t, &bf16_rm, 4, ALL_RANKS);
    em_rm_rounds(&t, &bf16_rm, 2, 0x5);
    ep_team_close(&t);
}

/* ---- rank-major zero copy ---- */

/* Rank-major handles of a group planned with zero_copy and RANK_MAJOR alone (rows R x T, no
 * expert-major rows): each row stored once, at (source, slot) of its receiver's rank-major
 * rows; received in place, into the caller's buffers, mixed over the ranks; combines pulled
 * from the rows or sent, mixed; BF16 and FP8 (in place: out_scales the rank-major scale rows). */
static void rank_major_team(uint32_t ranks, uint32_t nodes)
{
    static const zc_masks_t rm_masks[] = {
        {ALL_RANKS, ALL_RANKS}, {0, 0}, {0x5, 0x3}, {0xa, 0x6}, {0, ALL_RANKS}, {ALL_RANKS, 0}};
    ep_team_t t;
    zc_plan(&t, ranks >= 8 ? 4 * ranks : 16, 6, 512, ranks >= 8 ? 24 : 32, RM);
    t.nodes = nodes;
    ep_team_open(&t, ranks);
    zc_iterations(&t, &bf16_rm, rm_masks, COUNT(rm_masks), ranks >= 8 ? 6 : 12, "rank-major, BF16");
    zc_iterations(&t, &fp8_rm, rm_masks, COUNT(rm_masks), 6, "rank-major, FP8");
    ep_team_close(&t);
}

static void test_rank_major_4_ranks(void **state)
{
    (void)state;
    ep_rng_reset("rank_major4");
    rank_major_team(4, 0);
    rank_major_team(4, 1);
}

static void test_rank_major_8_ranks(void **state)
{
    (void)state;
    ep_rng_reset("rank_major8");
    rank_major_team(8, 0);
}

/* The real 1-rank communicator (boards in the send, a one-kernel pulled combine). */
static void test_rank_major_singleton(void **state)
{
    (void)state;
    ep_rng_reset("rank_major1");
    rank_major_team(0, 0);
}

/* ---- two expert-major handles ---- */

/* Two expert-major handles of one group, both dispatched into the caller's buffers, one after
 * the other, then combined in the same order: the first from the zero-copy rows (its expert
 * outputs written there after the second dispatch), the second from the caller's buffer.  The
 * first handle's rows are read where its own dispatch put them (the handle keeps them), not
 * where the second dispatch, with another routing, put its rows; the roles alternate. */
static void two_handle_rounds(ep_team_t *t, int rounds)
{
    ep_run_t x, y;
    ep_run_alloc(&x, t, &bf16_em);
    ep_run_alloc(&y, t, &bf16_em);
    ep_run_zero_copy(&x, 0, 0);
    ep_run_zero_copy(&y, 0, 0);
    ep_alloc_arm();
    for (int i = 0; i < rounds; i++) {
        ep_run_t *first = i % 2 == 0 ? &x : &y, *second = i % 2 == 0 ? &y : &x;
        ep_routing_t rt = routing_of((uint32_t)i, t->ranks, x.c.experts);
        ep_routing_t other = ep_routing_default();
        ep_run_fill(first, &rt);
        ep_run_fill(second, &other);
        if (i == 0) {
            ep_run_create(&x);
            ep_run_create(&y);
        } else {
            ep_run_update(&x);
            ep_run_update(&y);
        }
        first->zc_combine = ALL_RANKS;
        second->zc_combine = 0;
        ep_run_poison_dispatch(first);
        ep_run_enqueue_dispatch(first, 0);
        ep_run_poison_dispatch(second);
        ep_run_enqueue_dispatch(second, 0);
        ep_team_sync(t);
        ep_run_check_dispatch(first);
        ep_run_check_dispatch(second);
        ep_run_poison_combine(first);
        ep_run_enqueue_combine(first, 0);
        ep_run_poison_combine(second);
        ep_run_enqueue_combine(second, 0);
        ep_team_sync(t);
        ep_run_check_combine(first);
        ep_run_check_combine(second);
    }
    ep_run_destroy(&x);
    ep_run_destroy(&y);
    ep_alloc_assert_none("two expert-major handles");
    ep_run_free(&x);
    ep_run_free(&y);
}

static void test_two_handles(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("two_handles");
    open_zc_team(&t, 4, 0);
    two_handle_rounds(&t, 6);
    ep_team_close(&t);
    open_zc_team(&t, 0, 0);
    two_handle_rounds(&t, 4);
    ep_team_close(&t);
}

/* ---- ncclxEpGroupGetLlBuffers ---- */

/* Every rank's rows: L x R x T of the plan's largest rows, each rank its own. */
/* Every rank's buffers: the rows of each layout the plan has (L x R x T expert-major, R x T
 * rank-major, NULL and 0 for a layout it lacks), of the plan's largest rows, each rank's own,
 * the two layouts' rows apart. */
static void expect_buffers(const ep_team_t *t, uint64_t row_bytes, uint64_t scale_bytes)
{
    const ncclxEpGroupPlan_t *g = &t->group_plan;
    const int em = (g->layouts & EM) != 0, rm = (g->layouts & RM) != 0;
    const uint32_t rows = em ? g->num_experts * g->max_dispatch_tokens_per_rank : 0;
    const uint32_t rm_rows = rm ? t->ranks * g->max_dispatch_tokens_per_rank : 0;
    void *seen[EP_MAX_RANKS];
    for (uint32_t r = 0; r < t->ranks; r++) {
        ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
        assert_ncclx_ok(ncclxEpGroupGetLlBuffers(t->group[r], &b));
        assert_int_equal(b.rows, rows);
        assert_int_equal(b.rank_major_rows, rm_rows);
        assert_int_equal(b.row_bytes, row_bytes);
        assert_int_equal(b.scale_bytes, scale_bytes);
        assert_true((b.tokens != NULL) == em);
        assert_true((b.scales != NULL) == (em && scale_bytes != 0));
        assert_true((b.rank_major_tokens != NULL) == rm);
        assert_true((b.rank_major_scales != NULL) == (rm && scale_bytes != 0));
        assert_true(b.tokens == NULL || b.tokens != b.rank_major_tokens);
        void *own = em ? b.tokens : b.rank_major_tokens;
        for (uint32_t q = 0; q < r; q++) {
            assert_ptr_not_equal(seen[q], own);
        }
        seen[r] = own;
    }
}

static void test_get_ll_buffers(void **state)
{
    const uint32_t hidden = 1024;
    ep_team_t t;
    ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
    (void)state;
    /* BF16 only, no scales. */
    ep_team_plan(&t, 16, 4, hidden, 32);
    t.group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    t.group_plan.layouts = EM;
    t.group_plan.recipes = NONE;
    t.group_plan.max_token_bytes = 0;
    t.group_plan.max_scale_bytes = 0;
    t.group_plan.zero_copy = 1;
    ep_team_open(&t, 4);
    expect_buffers(&t, (uint64_t)hidden * 2, 0);
    ep_team_close(&t);
    /* Every recipe: scale rows of the FP8 recipe; each layout alone and both. */
    const uint32_t layouts[3] = {EM, RM, EM | RM};
    for (int i = 0; i < 3; i++) {
        zc_plan(&t, 16, 4, hidden, 32, layouts[i]);
        ep_team_open(&t, 4);
        expect_buffers(&t, (uint64_t)hidden * 2, hidden / 128 * 4);
        ep_team_close(&t);
    }
    /* Refused without zero_copy; the output untouched. */
    ep_team_plan(&t, 16, 4, hidden, 32);
    ep_team_open(&t, 2);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_error(ncclxEpGroupGetLlBuffers(t.group[r], &b), ncclxInvalidUsage,
                           "zero_copy");
        assert_null(b.tokens);
        assert_null(b.scales);
        assert_int_equal(b.rows, 0);
        assert_int_equal(b.row_bytes, 0);
    }
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_ll_buffers),
        cmocka_unit_test(test_in_place_4_ranks),
        cmocka_unit_test(test_in_place_4_ranks_one_node),
        cmocka_unit_test(test_in_place_8_ranks),
        cmocka_unit_test(test_caller_buffers_4_ranks),
        cmocka_unit_test(test_caller_buffers_8_ranks),
        cmocka_unit_test(test_recipes_4_ranks),
        cmocka_unit_test(test_recipes_8_ranks),
        cmocka_unit_test(test_loopback_singleton),
        cmocka_unit_test(test_singleton_communicator),
        cmocka_unit_test(test_graph_capture),
        cmocka_unit_test(test_dispatch_launches),
        cmocka_unit_test(test_combine_launches),
        cmocka_unit_test(test_rank_major_handle),
        cmocka_unit_test(test_rank_major_4_ranks),
        cmocka_unit_test(test_rank_major_8_ranks),
        cmocka_unit_test(test_rank_major_singleton),
        cmocka_unit_test(test_two_handles),
    };
    /* Zero copy needs one load/store domain: every team here is shaped explicitly (no shape, or
     * one node), so TEST_NODES, which shapes unset teams, must not touch them. */
    unsetenv("TEST_NODES");
    ep_seed_init("test_ep_ll_zero_copy");
    return ncclx_run_tests("gpu_ep_ll_zero_copy", tests);
}
