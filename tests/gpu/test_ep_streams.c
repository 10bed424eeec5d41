/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The PyTorch graph pattern, for LL and HT groups: eager calls on the program's stream A, a
 * warm-up and a capture on a side stream C (what torch.cuda.graph does), then eager calls again
 * on A and on a third stream B, graph replays on A and on B, and eager calls once more.  Every
 * result is checked element by element against the CPU reference, outputs poisoned first.
 * Before the stream rule ignored captures, the first eager call after the capture failed
 * ("cudaEventQuery: invalid argument"): the group's event had last been recorded inside the
 * capture.  (M2N's run of the same pattern is test_m2n's test_stream_pattern.)
 * TEST_SEED=n replays a run; TEST_FILTER picks tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ht_harness.h"
#include "ep_ll_harness.h"

typedef struct {
    cudaStream_t s[EP_MAX_RANKS];
} streams_t;

static void streams_create(streams_t *x, uint32_t ranks)
{
    for (uint32_t r = 0; r < ranks; r++) {
        assert_cuda_ok(cudaStreamCreateWithFlags(&x->s[r], cudaStreamNonBlocking));
    }
}

static void streams_destroy(streams_t *x, uint32_t ranks)
{
    for (uint32_t r = 0; r < ranks; r++) {
        assert_cuda_ok(cudaStreamSynchronize(x->s[r]));
        assert_cuda_ok(cudaStreamDestroy(x->s[r]));
    }
}

/* The harness enqueues every rank's calls on t->stream[rank]: pointing those at another set of
 * streams moves the team's next calls there. */
static void use_streams(ep_team_t *t, const streams_t *x)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        t->stream[r] = x->s[r];
    }
}

/* Every rank's mask, queried in stream order on its current stream: all active. */
static void ll_check_mask_all_active(const ep_team_t *t, int32_t *const *d_mask)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        int32_t got[EP_MAX_RANKS];
        ncclxTensor_t m = ep_tensor(d_mask[r], NCCLX_INT32, 1, t->ranks, 0, 0);
        assert_cuda_ok(cudaMemsetAsync(d_mask[r], 0x7f, t->ranks * sizeof(int32_t), t->stream[r]));
        assert_ncclx_ok(ncclxEpMaskQuery(t->group[r], &m, t->stream[r]));
        assert_cuda_ok(cudaMemcpyAsync(got, d_mask[r], t->ranks * sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, t->stream[r]));
        assert_cuda_ok(cudaStreamSynchronize(t->stream[r]));
        for (uint32_t s = 0; s < t->ranks; s++) {
            if (got[s] != 1) {
                fail_msg("rank %u: mask[%u] = %d, want 1 (active)", r, s, got[s]);
            }
        }
    }
}

/* Eager LL work on the team's current streams, every call of the group checked: new data,
 * handle update, dispatch and combine whole and send_only + complete, a mask update that keeps
 * everyone, a mask query and a clear of the (empty) error word. */
static void ll_eager(ep_run_t *run, ep_routing_t *rt, int32_t *const *d_mask, const char *where)
{
    ep_team_t *t = run->team;
    int32_t all[EP_MAX_RANKS];
    for (uint32_t r = 0; r < t->ranks; r++) {
        all[r] = 1;
    }
    printf("# LL eager on %s\n", where);
    fflush(stdout);
    ep_run_fill(run, rt);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpMaskUpdate(t->group[r], all, t->ranks, t->stream[r]));
    }
    ep_run_update(run);
    ep_run_dispatch_and_check(run, 0);
    ep_run_combine_and_check(run, 0);
    ep_run_dispatch_and_check(run, 1);
    ep_run_combine_and_check(run, 1);
    ll_check_mask_all_active(t, d_mask);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_ncclx_ok(ncclxEpClearAsyncError(t->group[r], t->stream[r]));
    }
    ep_team_sync(t);
}

/* Captures on each rank's current stream what a decode step's graph holds: update, dispatch,
 * combine, a send_only dispatch with its complete and a second combine, a mask query. */
static void ll_capture(ep_run_t *run, int32_t *const *d_mask, cudaGraphExec_t *exec)
{
    ep_team_t *t = run->team;
    for (uint32_t r = 0; r < t->ranks; r++) {
        cudaGraph_t graph = NULL;
        cudaStream_t s = t->stream[r];
        ncclxTensor_t idx = ep_idx_tensor(run, r);
        ncclxTensor_t m = ep_tensor(d_mask[r], NCCLX_INT32, 1, t->ranks, 0, 0);
        ncclxEpDispatchArgs_t da = ep_dispatch_args(run, r, 0);
        ncclxEpDispatchArgs_t ds = ep_dispatch_args(run, r, 1);
        ncclxEpCombineArgs_t ca = ep_combine_args(run, r, 0);
        assert_cuda_ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        assert_ncclx_ok(ncclxEpHandleUpdate(run->handle[r], &idx, s));
        assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &da, s));
        assert_ncclx_ok(ncclxEpCombine(run->handle[r], &ca, s));
        assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &ds, s));
        assert_ncclx_ok(ncclxEpComplete(run->handle[r], s));
        assert_ncclx_ok(ncclxEpCombine(run->handle[r], &ca, s));
        assert_ncclx_ok(ncclxEpMaskQuery(t->group[r], &m, s));
        assert_ncclx_ok(ncclxEpClearAsyncError(t->group[r], s));
        assert_cuda_ok(cudaStreamEndCapture(s, &graph));
        assert_non_null(graph);
        assert_cuda_ok(cudaGraphInstantiate(&exec[r], graph, 0));
        assert_cuda_ok(cudaGraphDestroy(graph));
    }
}

/* New data into the captured buffers (same token counts), outputs poisoned, each rank's graph
 * replayed on its current stream, every output checked. */
static void ll_replay(ep_run_t *run, ep_routing_t *rt, cudaGraphExec_t *exec, const char *where)
{
    ep_team_t *t = run->team;
    printf("# LL graph replay on %s\n", where);
    fflush(stdout);
    ep_run_fill(run, rt);
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaGraphLaunch(exec[r], t->stream[r]));
    }
    ep_team_sync(t);
    ep_run_check_dispatch(run);
    ep_run_check_combine(run);
}

static void test_ll_pytorch_pattern(void **state)
{
    (void)state;
    const ep_case_t k = {4,
                         NCCLX_EP_LAYOUT_EXPERT_MAJOR,
                         NCCLX_EP_RECIPE_NONE,
                         0,
                         0,
                         NCCLX_BFLOAT16,
                         NCCLX_UINT8,
                         0,
                         NCCLX_INT64,
                         NCCLX_INT64,
                         NCCLX_BFLOAT16,
                         0};
    const uint32_t ranks = 2;
    ep_team_t t;
    ep_run_t run;
    streams_t a, b, c;
    int32_t *d_mask[EP_MAX_RANKS];
    cudaGraphExec_t exec[EP_MAX_RANKS];
    ep_routing_t rt = ep_routing_default();
    ep_rng_reset("test_ll_pytorch_pattern");
    memset(&t, 0, sizeof(t));
    ep_team_plan(&t, 16, 4, 512, 32);
    t.group_plan.enable_mask = 1;
    ep_team_open(&t, ranks);
    for (uint32_t r = 0; r < ranks; r++) {
        a.s[r] = t.stream[r]; /* the team's own streams are A (ep_team_close destroys them) */
        assert_cuda_ok(cudaMalloc((void **)&d_mask[r], EP_MAX_RANKS * sizeof(int32_t)));
    }
    streams_create(&b, ranks);
    streams_create(&c, ranks);
    ep_run_alloc(&run, &t, &k);
    ep_alloc_arm();

    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    ep_team_sync(&t);
    rt.keep_tokens = 1; /* the graph holds the token counts */
    ll_eager(&run, &rt, d_mask, "stream A");
    use_streams(&t, &c);
    ll_eager(&run, &rt, d_mask, "side stream C (warm-up)");
    ll_capture(&run, d_mask, exec);
    assert_cuda_ok(cudaDeviceSynchronize());
    use_streams(&t, &a);
    ll_eager(&run, &rt, d_mask, "stream A after the capture");
    use_streams(&t, &b);
    ll_eager(&run, &rt, d_mask, "third stream B");
    use_streams(&t, &a);
    ll_replay(&run, &rt, exec, "stream A");
    use_streams(&t, &b);
    ll_replay(&run, &rt, exec, "stream B");
    use_streams(&t, &a);
    ll_eager(&run, &rt, d_mask, "stream A after the replays");
    ep_alloc_assert_none("the PyTorch graph pattern (LL)");

    for (uint32_t r = 0; r < ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
        assert_cuda_ok(cudaFree(d_mask[r]));
    }
    ep_run_destroy(&run);
    ep_run_free(&run);
    streams_destroy(&b, ranks);
    streams_destroy(&c, ranks);
    ep_team_close(&t);
}

/* Eager HT work on the team's current streams: route, layout, forward and backward dispatch
 * and combine, all checked (ht_iteration), then a clear of the (empty) error word. */
static void ht_eager(ht_run_t *run, const char *where)
{
    printf("# HT eager on %s\n", where);
    fflush(stdout);
    ht_fill(run, HT_RANDOM, 0, 1);
    ht_iteration(run, 0);
    for (uint32_t r = 0; r < run->R; r++) {
        assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
    }
    ep_team_sync(&run->team);
}

static void ht_replay(ht_run_t *run, cudaGraphExec_t *exec, const char *where)
{
    printf("# HT graph replay on %s\n", where);
    fflush(stdout);
    ht_fill(run, HT_RANDOM, 0, 1);
    lib_begin();
    ht_poison(run);
    for (uint32_t r = 0; r < run->R; r++) {
        assert_cuda_ok(cudaGraphLaunch(exec[r], run->team.stream[r]));
    }
    ep_team_sync(&run->team);
    lib_end();
    ht_check_dispatch(run, 0);
    ht_check_combine(run, 0);
}

static void ht_pattern(uint32_t layout)
{
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(2, layout);
    streams_t a, b, side;
    cudaGraphExec_t exec[EP_MAX_RANKS];
    c.alignment = 4;
    c.recv = 2 * c.tokens * c.topk + c.experts * 4;
    ht_open(run, &c);
    for (uint32_t r = 0; r < run->R; r++) {
        a.s[r] = run->team.stream[r];
    }
    streams_create(&b, run->R);
    streams_create(&side, run->R);
    ht_fill(run, HT_RANDOM, 0, 0);
    lib_allocs = 0;
    ht_iteration(run, 0); /* creates the handles on A */
    ht_eager(run, "stream A");
    ep_team_t *t = &run->team;
    use_streams(t, &side);
    ht_eager(run, "side stream C (warm-up)");
    lib_begin();
    ht_capture(run, 1, exec);
    lib_end();
    assert_cuda_ok(cudaDeviceSynchronize());
    use_streams(t, &a);
    ht_eager(run, "stream A after the capture");
    use_streams(t, &b);
    ht_eager(run, "third stream B");
    use_streams(t, &a);
    ht_replay(run, exec, "stream A");
    use_streams(t, &b);
    ht_replay(run, exec, "stream B");
    use_streams(t, &a);
    ht_eager(run, "stream A after the replays");
    lib_assert_none("the PyTorch graph pattern (HT)");
    for (uint32_t r = 0; r < run->R; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    streams_destroy(&b, run->R);
    streams_destroy(&side, run->R);
    ht_close(run);
    free(run);
}

static void test_ht_pytorch_pattern(void **state)
{
    (void)state;
    ep_rng_reset("test_ht_pytorch_pattern");
    ht_pattern(NCCLX_EP_LAYOUT_FLAT);
    ht_pattern(NCCLX_EP_LAYOUT_EXPERT_MAJOR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_pytorch_pattern),
        cmocka_unit_test(test_ht_pytorch_pattern),
    };
    ep_seed_init("test_ep_streams");
    return ncclx_run_tests("gpu_ep_streams", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
