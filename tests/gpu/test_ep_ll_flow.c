/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL call sequences on a loopback team of 4 ranks (and the 1-rank communicator): send_only
 * dispatch and combine finished by ncclxEpComplete (outputs untouched until then, the group
 * refusing other work meanwhile), two handles alternating (dispatch h1, dispatch h2, combine
 * h1, combine h2), 1000 back-to-back iterations rerouting one handle between two routings
 * and recipes, and update + dispatch + combine captured in a CUDA graph on every rank and
 * replayed 100 times with new tokens, weights and routings written between replays, and
 * handles on caller memory (ncclxEpHandleInit) routed by updates, and the kernels a captured
 * dispatch holds (two, three when send_only) and a captured combine (one when the send reduces
 * a small combine, two otherwise), ranks of one team taking either kind.
 * Allocation counters stay at zero from the end of buffer allocation to the end of each
 * test.  TEST_SEED=n replays a run's random data.
 */
#include <stdio.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_launches.h"
#include "gpu/ep_ll_short.h"

static void open_team(ep_team_t *t, uint32_t ranks)
{
    ep_team_plan(t, 16, 6, 512, 32);
    ep_team_open(t, ranks);
}

/* ---- send_only ---- */

/* While rank 0's group has a send in flight, its other calls are refused. */
static void expect_group_busy(ep_run_t *run, ncclxEpHandle_t spare, const char *what)
{
    const ep_team_t *t = run->team;
    ncclxEpDispatchArgs_t da = ep_dispatch_args(run, 0, 0);
    ncclxEpCombineArgs_t ca = ep_combine_args(run, 0, 0);
    ncclxTensor_t idx = ep_idx_tensor(run, 0);
    assert_ncclx_error(ncclxEpDispatch(spare, &da, t->stream[0]), ncclxInvalidUsage, what);
    assert_ncclx_error(ncclxEpHandleUpdate(spare, &idx, t->stream[0]), ncclxInvalidUsage,
                       "in flight");
    assert_ncclx_error(ncclxEpCombine(run->handle[0], &ca, t->stream[0]), ncclxInvalidUsage,
                       "in flight");
    assert_ncclx_error(ncclxEpHandleDestroy(run->handle[0]), ncclxInvalidUsage,
                       "call ncclxEpComplete first");
}

/* Send phases alone reach no output; ncclxEpComplete then produces all of it. */
static void send_only_round(ep_run_t *run, ncclxEpHandle_t spare)
{
    const ep_team_t *t = run->team;
    ep_run_poison_dispatch(run);
    ep_run_enqueue_dispatch(run, 1);
    ep_team_sync(t);
    ep_run_check_dispatch_untouched(run);
    expect_group_busy(run, spare, "send_only dispatch of handle");
    ep_run_enqueue_complete(run);
    ep_team_sync(t);
    ep_run_check_dispatch(run);
    assert_ncclx_error(ncclxEpComplete(run->handle[0], t->stream[0]), ncclxInvalidUsage,
                       "no send_only dispatch or combine in flight");

    ep_run_poison_combine(run);
    ep_run_enqueue_combine(run, 1);
    ep_team_sync(t);
    ep_run_check_combine_untouched(run);
    expect_group_busy(run, spare, "send_only combine of handle");
    ep_run_enqueue_complete(run);
    ep_team_sync(t);
    ep_run_check_combine(run);
    /* Plain and send_only give the same bits. */
    ep_run_combine_and_check(run, 0);
    ep_run_combine_and_check(run, 1);
}

static void send_only_case(ep_team_t *t, const ep_case_t *k)
{
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    ncclxEpHandle_t spare = NULL;
    ncclxEpHandleConfig_t cfg;
    ncclxTensor_t idx;
    ep_run_alloc(&run, t, k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    cfg = ep_handle_config(&run);
    idx = ep_idx_tensor(&run, 0);
    assert_ncclx_ok(ncclxEpHandleCreate(t->group[0], &cfg, &idx, t->stream[0], &spare));
    send_only_round(&run, spare);
    /* Again after new data and a reroute, and a plain dispatch in between. */
    ep_run_fill(&run, &rt);
    ep_run_update(&run);
    ep_run_dispatch_and_check(&run, 0);
    ep_run_combine_and_check(&run, 1);
    send_only_round(&run, spare);
    assert_ncclx_ok(ncclxEpHandleDestroy(spare));
    ep_run_destroy(&run);
    ep_alloc_assert_none("send_only");
    ep_run_free(&run);
}

static const ep_case_t send_only_cases[] = {
    {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, RM, FP8, 1, 1, BF16, U8, 0, I32, I64, F16, 0},
    {4, RM, QFWD, 0, 0, U8, F32, 3, I64, I32, F32, 0},
    {3, EM, FP8, 0, 0, BF16, U8, 0, I32, I32, F32, 0},
};

static void test_send_only(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("send_only");
    open_team(&t, 4);
    for (size_t i = 0; i < sizeof(send_only_cases) / sizeof(send_only_cases[0]); i++) {
        send_only_case(&t, &send_only_cases[i]);
    }
    ep_team_close(&t);
}

static void test_send_only_singleton(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("send_only_singleton");
    open_team(&t, 0);
    send_only_case(&t, &send_only_cases[0]);
    send_only_case(&t, &send_only_cases[1]);
    ep_team_close(&t);
}

/* ---- two handles ---- */

/* dispatch a, dispatch b, combine a, combine b, each enqueued on every rank. */
static void alternate(ep_run_t *a, ep_run_t *b)
{
    ep_run_poison_dispatch(a);
    ep_run_enqueue_dispatch(a, 0);
    ep_run_poison_dispatch(b);
    ep_run_enqueue_dispatch(b, 0);
    ep_run_poison_combine(a);
    ep_run_enqueue_combine(a, 0);
    ep_run_poison_combine(b);
    ep_run_enqueue_combine(b, 0);
    ep_team_sync(a->team);
    ep_run_check_dispatch(a);
    ep_run_check_dispatch(b);
    ep_run_check_combine(a);
    ep_run_check_combine(b);
}

/* The same with send_only: one send in flight per group, so each is completed before the
 * next operation of the group. */
static void alternate_send_only(ep_run_t *a, ep_run_t *b)
{
    ep_run_t *order[2] = {a, b};
    ep_run_poison_dispatch(a);
    ep_run_poison_dispatch(b);
    ep_run_poison_combine(a);
    ep_run_poison_combine(b);
    for (int i = 0; i < 2; i++) {
        ep_run_enqueue_dispatch(order[i], 1);
        ep_run_enqueue_complete(order[i]);
    }
    for (int i = 0; i < 2; i++) {
        ep_run_enqueue_combine(order[i], 1);
        ep_run_enqueue_complete(order[i]);
    }
    ep_team_sync(a->team);
    ep_run_check_dispatch(a);
    ep_run_check_dispatch(b);
    ep_run_check_combine(a);
    ep_run_check_combine(b);
}

static void test_two_handles_alternating(void **state)
{
    const ep_case_t ka = {4, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t kb = {6, RM, FP8, 0, 1, BF16, U8, 0, I32, I32, F16, 0};
    ep_team_t t;
    ep_run_t a, b;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("two_handles");
    open_team(&t, 4);
    ep_run_alloc(&a, &t, &ka);
    ep_run_alloc(&b, &t, &kb);
    ep_alloc_arm();
    ep_run_fill(&a, &rt);
    rt.empty_ranks = 0x2;
    ep_run_fill(&b, &rt);
    ep_run_create(&a);
    ep_run_create(&b);
    alternate(&a, &b);
    alternate_send_only(&a, &b); /* combines must equal the first ones bit for bit */
    alternate(&b, &a);
    /* New data and routings through ncclxEpHandleUpdate. */
    rt.empty_ranks = 0;
    rt.full = 1;
    ep_run_fill(&a, &rt);
    ep_run_fill(&b, &rt);
    ep_run_update(&a);
    ep_run_update(&b);
    alternate(&a, &b);
    alternate_send_only(&b, &a);
    ep_run_destroy(&a);
    ep_run_destroy(&b);
    ep_alloc_assert_none("two handles");
    ep_run_free(&a);
    ep_run_free(&b);
    ep_team_close(&t);
}

/* ---- back to back ---- */

static int is_checkpoint(int i, int n)
{
    return i < 4 || i == n / 2 || i == n / 2 + 1 || i >= n - 4;
}

/* One handle alternates between run a (FP8) and run b (NONE FP16, other routing and token
 * counts), rerouted every iteration; every third iteration uses send_only.  Nothing waits
 * between iterations except at the checkpoints. */
static void test_back_to_back_iterations(void **state)
{
    const ep_case_t ka = {6, EM, FP8, 1, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t kb = {6, EM, NONE, 0, 0, F16, U8, 0, I32, I64, F16, 0};
    const int iterations = 1000;
    ep_team_t t;
    ep_run_t a, b;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("back_to_back");
    open_team(&t, 4);
    ep_run_alloc(&a, &t, &ka);
    ep_run_alloc(&b, &t, &kb);
    ep_alloc_arm();
    ep_run_fill(&a, &rt);
    rt.empty_ranks = 0x4;
    ep_run_fill(&b, &rt);
    ep_run_create(&a);
    ep_run_share_handles(&b, &a);
    for (int i = 0; i < iterations; i++) {
        ep_run_t *run = i % 2 == 0 ? &a : &b;
        uint32_t send_only = i % 3 == 0;
        ep_run_update(run);
        ep_run_poison_dispatch(run);
        ep_run_enqueue_dispatch(run, send_only);
        if (send_only) {
            ep_run_enqueue_complete(run);
        }
        ep_run_poison_combine(run);
        ep_run_enqueue_combine(run, send_only);
        if (send_only) {
            ep_run_enqueue_complete(run);
        }
        if (is_checkpoint(i, iterations)) {
            ep_team_sync(&t);
            ep_run_check_dispatch(run);
            ep_run_check_combine(run); /* and bitwise equal to the last checkpoint's */
        }
    }
    ep_run_destroy(&a);
    ep_alloc_assert_none("back-to-back iterations");
    ep_run_free(&a);
    ep_run_free(&b);
    ep_team_close(&t);
}

/* ---- CUDA graphs ---- */

static void capture_rank(ep_run_t *a, ep_run_t *b, uint32_t r, cudaGraphExec_t *exec)
{
    const ep_team_t *t = a->team;
    ep_run_t *runs[2] = {a, b};
    cudaGraph_t graph = NULL;
    assert_cuda_ok(cudaStreamBeginCapture(t->stream[r], cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 2; i++) {
        ncclxTensor_t idx = ep_idx_tensor(runs[i], r);
        ncclxEpDispatchArgs_t da = ep_dispatch_args(runs[i], r, 0);
        ncclxEpCombineArgs_t ca = ep_combine_args(runs[i], r, 0);
        assert_ncclx_ok(ncclxEpHandleUpdate(runs[i]->handle[r], &idx, t->stream[r]));
        assert_ncclx_ok(ncclxEpDispatch(runs[i]->handle[r], &da, t->stream[r]));
        assert_ncclx_ok(ncclxEpCombine(runs[i]->handle[r], &ca, t->stream[r]));
    }
    assert_cuda_ok(cudaStreamEndCapture(t->stream[r], &graph));
    assert_non_null(graph);
    assert_cuda_ok(cudaGraphInstantiate(exec, graph, 0));
    assert_cuda_ok(cudaGraphDestroy(graph));
}

/* Moves each rank's new routing of run into a staging buffer and spoils the captured
 * topk_idx buffer (all -1), so that only the device-side copy enqueued before the replay
 * (restage) brings the routing back. */
static void stage_routing(ep_run_t *run, void *const *stage)
{
    const size_t bytes =
        (size_t)run->c.max_tokens * run->c.topk * (run->k.idx_dtype == NCCLX_INT64 ? 8 : 4);
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        assert_cuda_ok(cudaMemcpy(stage[r], run->r[r].d_idx, bytes, cudaMemcpyDeviceToDevice));
        assert_cuda_ok(cudaMemset(run->r[r].d_idx, 0xff, bytes));
    }
    assert_cuda_ok(cudaDeviceSynchronize());
}

static void restage_routing(const ep_run_t *run, void *const *stage, uint32_t r)
{
    const size_t bytes =
        (size_t)run->c.max_tokens * run->c.topk * (run->k.idx_dtype == NCCLX_INT64 ? 8 : 4);
    assert_cuda_ok(cudaMemcpyAsync(run->r[r].d_idx, stage[r], bytes, cudaMemcpyDeviceToDevice,
                                   run->team->stream[r]));
}

/* Each rank's graph holds update + dispatch + combine of two handles (expert-major NONE and
 * rank-major FP8).  Between replays the test writes new tokens, weights and expert outputs
 * into the captured buffers, and new routings (same token counts: they are part of the
 * captured calls) through a device-side copy into the captured topk_idx buffers. */
static void test_graph_capture(void **state)
{
    const ep_case_t ka = {4, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
    const ep_case_t kb = {6, RM, FP8, 1, 0, BF16, U8, 0, I32, I64, F32, 0};
    const int replays = 100;
    ep_team_t t;
    ep_run_t a, b;
    ep_routing_t rta = ep_routing_default(), rtb = ep_routing_default();
    cudaGraphExec_t exec[EP_MAX_RANKS];
    void *stage_a[EP_MAX_RANKS], *stage_b[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("graph");
    open_team(&t, 4);
    ep_run_alloc(&a, &t, &ka);
    ep_run_alloc(&b, &t, &kb);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_cuda_ok(cudaMalloc(&stage_a[r], (size_t)a.c.max_tokens * a.c.topk * 8));
        assert_cuda_ok(cudaMalloc(&stage_b[r], (size_t)b.c.max_tokens * b.c.topk * 8));
    }
    ep_alloc_arm();
    rtb.empty_ranks = 0x8;
    ep_run_fill(&a, &rta);
    ep_run_fill(&b, &rtb);
    ep_run_create(&a);
    ep_run_create(&b);
    ep_team_sync(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        capture_rank(&a, &b, r, &exec[r]);
    }
    rta.keep_tokens = rtb.keep_tokens = 1;
    for (int i = 0; i < replays; i++) {
        if (i > 0) {
            ep_run_fill(&a, &rta);
            ep_run_fill(&b, &rtb);
        }
        stage_routing(&a, stage_a);
        stage_routing(&b, stage_b);
        ep_run_poison_dispatch(&a);
        ep_run_poison_dispatch(&b);
        ep_run_poison_combine(&a);
        ep_run_poison_combine(&b);
        for (uint32_t r = 0; r < t.ranks; r++) {
            restage_routing(&a, stage_a, r);
            restage_routing(&b, stage_b, r);
            assert_cuda_ok(cudaGraphLaunch(exec[r], t.stream[r]));
        }
        ep_team_sync(&t);
        ep_run_check_dispatch(&a);
        ep_run_check_dispatch(&b);
        ep_run_check_combine(&a);
        ep_run_check_combine(&b);
    }
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    ep_run_destroy(&a);
    ep_run_destroy(&b);
    ep_alloc_assert_none("CUDA graph replays");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_cuda_ok(cudaFree(stage_a[r]));
        assert_cuda_ok(cudaFree(stage_b[r]));
    }
    ep_run_free(&a);
    ep_run_free(&b);
    ep_team_close(&t);
}

/* ---- kernels per dispatch ---- */

/* A dispatch that receives at once is two kernels on a team of one load/store domain: the
 * send, whose last block also waits for the sources, and the copy, which a rank alone on its GPU
 * (the singleton) launches early: one programmatic edge, none on a loopback team.  A send_only
 * dispatch keeps its wait for ncclxEpComplete (send alone, then wait and copy: three, none
 * early).  Both graphs replayed
 * on every rank of the team must give the exact outputs. */
static void dispatch_launches_case(ep_team_t *t, const ep_case_t *k)
{
    static const size_t kernels[2][2] = {{2, 3}, {2, 3}}, early[2] = {1, 0};
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    ep_run_alloc(&run, t, k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(t);
    ep_check_dispatch_launches(&run, kernels, early);
    ep_run_destroy(&run);
    ep_alloc_assert_none("dispatch launches");
    ep_run_free(&run);
}

static void test_dispatch_launches(void **state)
{
    ep_team_t t;
    (void)state;
    ep_rng_reset("dispatch_launches");
    open_team(&t, 4);
    dispatch_launches_case(&t, &send_only_cases[0]);
    dispatch_launches_case(&t, &send_only_cases[1]);
    ep_team_close(&t);
    open_team(&t, 0);
    dispatch_launches_case(&t, &send_only_cases[0]);
    ep_team_close(&t);
}

/* ---- kernels per combine ---- */

/* Whether rank r's combine is reduced by its send (NCCLX_EP_LL_REDUCE_IN_SEND_UNITS, 256-element
 * units: plan hidden 512 here, so up to 16 tokens). */
static int reduced_in_send(const ep_run_t *run, uint32_t r)
{
    const uint32_t units_per_token = (run->team->group_plan.hidden + 255) / 256;
    return run->r[r].num_tokens * units_per_token <= 32;
}

/* A small combine that receives at once is one kernel: the send, whose last block also waits
 * for the sources and reduces; a larger one, or a send_only one, is two (send, receive).  The
 * receive that follows the send at once is launched early by a rank alone on its GPU (one
 * programmatic edge).  The ranks of one team take either kind in one operation (each rank's own
 * token count decides): rank r has tokens[r % 4] tokens.  Every graph replayed on every rank
 * must give the exact outputs, and a combine of each kind eager after the replays too. */
static void combine_launches_case(ep_team_t *t, const ep_case_t *k, const uint32_t tokens[4])
{
    ep_run_t run;
    ep_routing_t rt = ep_routing_default();
    cudaGraphExec_t exec[EP_MAX_RANKS];
    rt.keep_tokens = 1;
    ep_run_alloc(&run, t, k);
    for (uint32_t r = 0; r < t->ranks; r++) {
        run.r[r].num_tokens = tokens[r % 4];
    }
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(t);
    ep_run_dispatch_and_check(&run, 0);
    for (uint32_t send_only = 0; send_only < 2; send_only++) {
        for (uint32_t r = 0; r < t->ranks; r++) {
            const size_t want = send_only || !reduced_in_send(&run, r) ? 2 : 1;
            size_t early = 0;
            assert_int_equal(ep_capture_op(&run, r, 1, send_only, &exec[r], &early), want);
            /* The receive kernel right after the send is launched early by a rank alone on its
             * GPU (the singleton). */
            assert_int_equal(early, ep_launches_early(t, r) && !send_only && want == 2);
        }
        ep_replay_and_check(&run, exec, 1);
        ep_run_combine_and_check(&run, send_only);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("combine launches");
    ep_run_free(&run);
}

static void test_combine_launches(void **state)
{
    static const uint32_t mixed[4] = {1, 16, 17, 32}, small[4] = {16, 16, 16, 16},
                          large[4] = {17, 17, 17, 17};
    ep_team_t t;
    (void)state;
    ep_rng_reset("combine_launches");
    open_team(&t, 4);
    combine_launches_case(&t, &send_only_cases[0], mixed);
    combine_launches_case(&t, &send_only_cases[1], mixed);
    ep_team_close(&t);
    open_team(&t, 0);
    combine_launches_case(&t, &send_only_cases[0], small);
    combine_launches_case(&t, &send_only_cases[1], large);
    ep_team_close(&t);
}

/* ---- the split lifecycle ---- */

/* Handles on caller memory (ncclxEpHandleMemSize bytes, ncclxEpHandleInit): refused until the
 * first update, then exact through two routings, eager and send_only; destroy leaves the
 * memory to the caller. */
static void test_caller_memory(void **state)
{
    const ep_case_t cases[2] = {{4, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
                                {6, RM, FP8, 0, 1, BF16, U8, 0, I32, I32, F16, 0}};
    ep_team_t t;
    ep_routing_t rt = ep_routing_default();
    (void)state;
    ep_rng_reset("caller_memory");
    open_team(&t, 4);
    for (int c = 0; c < 2; c++) {
        ep_run_t run;
        void *mem[EP_MAX_RANKS];
        ep_run_alloc(&run, &t, &cases[c]);
        const ncclxEpHandleConfig_t cfg = ep_handle_config(&run);
        for (uint32_t r = 0; r < t.ranks; r++) {
            size_t bytes = 0;
            assert_ncclx_ok(ncclxEpHandleMemSize(t.group[r], cfg.layout, cfg.topk, &bytes));
            assert_cuda_ok(cudaMalloc(&mem[r], bytes));
            const ncclxTensor_t m = ep_tensor(mem[r], NCCLX_UINT8, 1, (int64_t)bytes, 0, 0);
            assert_ncclx_ok(ncclxEpHandleInit(t.group[r], &cfg, &m, t.stream[r], &run.handle[r]));
        }
        run.own_handles = 1;
        ep_alloc_arm();
        ep_run_fill(&run, &rt);
        ncclxEpDispatchArgs_t da = ep_dispatch_args(&run, 0, 0);
        assert_ncclx_error(ncclxEpDispatch(run.handle[0], &da, t.stream[0]), ncclxInvalidUsage,
                           "ncclxEpHandleInit gave it none");
        for (uint32_t send_only = 0; send_only < 2; send_only++) {
            ep_run_update(&run);
            ep_run_dispatch_and_check(&run, send_only);
            ep_run_combine_and_check(&run, send_only);
            ep_run_fill(&run, &rt);
        }
        ep_run_destroy(&run);
        ep_alloc_assert_none("caller memory");
        for (uint32_t r = 0; r < t.ranks; r++) {
            assert_cuda_ok(cudaFree(mem[r])); /* still the caller's: destroy did not free it */
        }
        ep_run_free(&run);
    }
    ep_team_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_send_only),
        cmocka_unit_test(test_send_only_singleton),
        cmocka_unit_test(test_two_handles_alternating),
        cmocka_unit_test(test_back_to_back_iterations),
        cmocka_unit_test(test_graph_capture),
        cmocka_unit_test(test_dispatch_launches),
        cmocka_unit_test(test_combine_launches),
        cmocka_unit_test(test_caller_memory),
    };
    ep_seed_init("test_ep_ll_flow");
    return cmocka_run_group_tests_name("gpu_ep_ll_flow", tests, NULL, NULL);
}
