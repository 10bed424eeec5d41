/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Active masks against real failures on loopback teams of 4 and 8 ranks, element by element
 * against the CPU reference:
 *  - a straggler: rank k is held (its stream sleeps in a host function) through one
 *    operation, the survivors time out and mask it, then k is let go while the survivors run
 *    50 more operations (alternating two routings while k's late operation can still run,
 *    then a new routing each time): no survivor ever sums a stale row, k learns that it is
 *    out (NCCLX_EP_ERROR_EVICTED, its own mask entry 0, dispatch counts 0, combine output 0),
 *    a clean by every rank re-admits it and everything is exact again;
 *  - 20 straggle/clean cycles in a row;
 *  - a clean missed by one rank (it cleans later, alone: it must not believe it rejoined);
 *  - a clean started by only two ranks (their generations run ahead; the next clean by all
 *    agrees anyway);
 *  - a timeout during CUDA graph replays, with a mask (later replays skip the lost rank and
 *    are exact) and without one (later replays wait for nothing and exchange nothing);
 *  - late rows: a straggler whose combine send had begun (and passed its eviction check)
 *    before the survivors timed out on it stores its rows only during their next operation;
 *    the operation after that, of the same parity and with another routing, must be exact.
 *    The straggler's combine send launcher is replaced at link time (-Wl,--wrap, see
 *    gpu_ep.am): it marks the send begun, then holds it behind a host gate and runs it with
 *    the eviction hidden from its checks, as a warp descheduled between check and store would.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ep_group.h"
#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_mask_steps.h"
#include "gpu/ep_ll_short.h"

static const ep_case_t em_case = {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0};
static const ep_case_t rm_case = {0, RM, NONE, 0, 0, BF16, U8, 0, I32, I64, F32, 0};

/* Runs in a CUDA host function on the held rank's stream: everything enqueued behind it on
 * that stream waits until it returns. */
static void CUDART_CB hold_stream(void *microseconds)
{
    usleep(*(const useconds_t *)microseconds);
}

static uint32_t all_ranks(const ep_team_t *t)
{
    return (1u << t->ranks) - 1;
}

static void sync_ranks(const ep_team_t *t, uint32_t who)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((who >> r) & 1u) {
            assert_cuda_ok(cudaStreamSynchronize(t->stream[r]));
        }
    }
}

/* Poison every rank's outputs (the absent ones too), wait. */
static void poison_all(ep_run_t *run)
{
    const uint32_t absent = run->absent;
    run->absent = 0;
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    ep_team_sync_only(run->team);
    run->absent = absent;
}

/* The surviving ranks (not absent) run dispatch + combine and are checked. */
static void survivors_iterate(ep_run_t *run)
{
    const uint32_t live = all_ranks(run->team) & ~run->absent;
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    ep_run_enqueue_dispatch(run, 0);
    ep_run_enqueue_combine(run, 0);
    sync_ranks(run->team, live);
    ep_run_check_dispatch(run);
    ep_run_check_combine(run);
}

/* Rank r of run exchanged nothing: every count 0 and a zero combine output for its `tokens`
 * tokens (the token count of the operation it ran). */
static void expect_empty_outputs(const ep_run_t *run, uint32_t r, uint32_t tokens)
{
    const ep_rank_t *b = &run->r[r];
    int32_t counts[EP_MAX_RANKS * 64];
    assert_true(run->counts <= sizeof(counts) / sizeof(counts[0]));
    assert_cuda_ok(
        cudaMemcpy(counts, b->d_counts, run->counts * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < run->counts; i++) {
        if (counts[i] != 0) {
            fail_msg("rank %u is out of the group but out_counts[%zu] = %d", r, i, counts[i]);
        }
    }
    const size_t bytes = (size_t)tokens * run->combine_row;
    assert_cuda_ok(cudaMemcpy(b->got_out, b->d_out, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < bytes; i++) {
        if (b->got_out[i] != 0) {
            fail_msg("rank %u is out of the group but its combine output byte %zu is 0x%02x", r, i,
                     b->got_out[i]);
        }
    }
}

/*
 * One straggle: rank `slow` is held through operation 1 of run a; the survivors time out on
 * it; it is let go while they run `ops` more operations.  Afterwards a clean by everyone.
 */
static void straggle_once(ep_run_t *a, ep_run_t *b, int32_t *const d_mask[], uint32_t slow,
                          uint64_t timeout_ms, int ops)
{
    ep_team_t *t = a->team;
    const uint32_t bit = 1u << slow, live = all_ranks(t) & ~bit;
    ep_run_t *runs[2] = {a, b};
    useconds_t hold_us = (useconds_t)(timeout_ms + 30) * 1000u;
    mask_refill(a, bit, bit);
    mask_refill(b, bit, bit);
    poison_all(a);
    /* The straggler's operation waits behind the hold; the survivors' does not. */
    assert_cuda_ok(cudaLaunchHostFunc(t->stream[slow], hold_stream, &hold_us));
    const uint32_t slow_tokens = a->r[slow].num_tokens;
    ncclxEpDispatchArgs_t da = ep_dispatch_args(a, slow, 0);
    ncclxEpCombineArgs_t ca = ep_combine_args(a, slow, 0);
    assert_ncclx_ok(ncclxEpDispatch(a->handle[slow], &da, t->stream[slow]));
    assert_ncclx_ok(ncclxEpCombine(a->handle[slow], &ca, t->stream[slow]));
    const double start = mask_now_ms();
    ep_run_enqueue_dispatch(a, 0);
    ep_run_enqueue_combine(a, 0);
    sync_ranks(t, live);
    const double ms = mask_now_ms() - start;
    printf("# %u ranks: rank %u held, the survivors returned after %.1f ms\n", t->ranks, slow, ms);
    for (uint32_t r = 0; r < t->ranks; r++) {
        uint32_t error = 0;
        assert_ncclx_ok(ncclxEpGetAsyncError(t->group[r], &error));
        printf("#   rank %u: asynchronous error 0x%x\n", r, error);
    }
    if (ms < 0.9 * (double)timeout_ms) {
        fail_msg("survivors returned after %.1f ms, before the %llu ms timeout", ms,
                 (unsigned long long)timeout_ms);
    }
    ep_run_check_dispatch(a);
    ep_run_check_combine(a);
    mask_expect_async(t, live, NCCLX_EP_ERROR_TIMEOUT);
    /* The straggler is let go about now: first operations on two fixed routings (no device
     * synchronization, so its late kernels overlap them), then a new routing each time. */
    for (int i = 0; i < ops; i++) {
        ep_run_t *run = runs[i % 2];
        if (i >= 16) {
            mask_refill(run, bit, bit);
        }
        printf("# survivors' operation %d\n", i);
        survivors_iterate(run);
    }
    ep_team_sync_only(t);
    /* The straggler learnt that it is out and exchanged nothing. */
    mask_expect_async(t, bit, NCCLX_EP_ERROR_EVICTED);
    mask_expect_mask(t, d_mask, all_ranks(t), bit);
    expect_empty_outputs(a, slow, slow_tokens);
    /* Everyone cleans; exact again, on every rank. */
    mask_clean_all(t);
    mask_expect_mask(t, d_mask, all_ranks(t), 0);
    mask_expect_async(t, all_ranks(t), 0);
    for (int i = 0; i < 2; i++) {
        mask_refill(runs[i], 0, 0);
        mask_iterate(runs[i]);
        ep_team_assert_no_async_error(t);
    }
}

static void straggler(uint32_t ranks, uint64_t timeout_ms, int cycles, int ops, const ep_case_t *k)
{
    ep_team_t t;
    ep_run_t a, b;
    int32_t *d_mask[EP_MAX_RANKS];
    ep_routing_t rt = ep_routing_default();
    mask_open_team(&t, ranks, timeout_ms, 1);
    mask_alloc_masks(&t, d_mask);
    ep_run_alloc(&a, &t, k);
    ep_run_alloc(&b, &t, k);
    ep_alloc_arm();
    ep_run_fill(&a, &rt);
    ep_run_fill(&b, &rt);
    ep_run_create(&a);
    ep_run_create(&b);
    ep_team_sync(&t);
    mask_iterate(&a);
    printf("# %u ranks: first operation exact\n", ranks);
    for (int c = 0; c < cycles; c++) {
        straggle_once(&a, &b, d_mask, ep_rand_below(ranks), timeout_ms, ops);
    }
    ep_run_destroy(&a);
    ep_run_destroy(&b);
    ep_team_sync_only(&t);
    ep_alloc_assert_none("straggler");
    ep_run_free(&a);
    ep_run_free(&b);
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
}

static void test_straggler_4(void **state)
{
    (void)state;
    ep_rng_reset("straggler_4");
    straggler(4, 200, 1, 50, &em_case);
    straggler(4, 200, 1, 50, &rm_case);
}

static void test_straggler_8(void **state)
{
    (void)state;
    ep_rng_reset("straggler_8");
    straggler(8, 200, 1, 50, &em_case);
    straggler(8, 200, 1, 50, &rm_case);
}

static void test_straggle_cycles(void **state)
{
    (void)state;
    ep_rng_reset("straggle_cycles");
    straggler(4, 100, 20, 18, &em_case);
}

/* Clean on the ranks in `who` only. */
static void clean_some(ep_team_t *t, uint32_t who)
{
    for (uint32_t r = 0; r < t->ranks; r++) {
        if ((who >> r) & 1u) {
            assert_ncclx_ok(ncclxEpMaskClean(t->group[r], t->stream[r]));
        }
    }
    sync_ranks(t, who);
}

/* Ranks 0..2 clean while rank 3 does not; rank 3 cleans later, alone.  Old generations in the
 * barrier slots must not make rank 3 believe it rejoined: it finds nobody and masks everyone,
 * the others keep it masked, nothing is exchanged wrongly; a clean by all brings back one
 * group. */
static void test_clean_missed_by_one(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("clean_missed_by_one");
    mask_open_team(&t, 4, 100, 1);
    mask_alloc_masks(&t, d_mask);
    mask_start_run(&run, &t, &em_case);
    mask_iterate(&run);
    clean_some(&t, 0x7);
    mask_expect_mask(&t, d_mask, 0x7, 0x8);
    mask_expect_async(&t, 0x7, NCCLX_EP_ERROR_TIMEOUT);
    for (int i = 0; i < 3; i++) {
        mask_refill(&run, 0x8, 0x8);
        survivors_iterate(&run);
    }
    clean_some(&t, 0x8);
    mask_expect_async(&t, 0x8, NCCLX_EP_ERROR_TIMEOUT);
    mask_expect_mask(&t, d_mask, 0x8, 0x7); /* rank 3 alone: it did not rejoin */
    mask_expect_mask(&t, d_mask, 0x7, 0x8);
    /* Ranks 0..2 go on exact without it. */
    mask_refill(&run, 0x8, 0x8);
    survivors_iterate(&run);
    mask_recover(&run, d_mask, 3);
    mask_finish_run(&run, &t, "clean missed by one");
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* Ranks 0 and 1 clean twice without ranks 2 and 3 (their generations run ahead); then every
 * rank cleans: they must agree on one generation and all four must be back, exact. */
static void test_clean_by_two(void **state)
{
    ep_team_t t;
    ep_run_t run;
    int32_t *d_mask[EP_MAX_RANKS];
    (void)state;
    ep_rng_reset("clean_by_two");
    mask_open_team(&t, 4, 100, 1);
    mask_alloc_masks(&t, d_mask);
    mask_start_run(&run, &t, &rm_case);
    mask_iterate(&run);
    for (int i = 0; i < 2; i++) {
        clean_some(&t, 0x3);
        mask_expect_mask(&t, d_mask, 0x3, 0xc);
    }
    mask_expect_async(&t, 0x3, NCCLX_EP_ERROR_TIMEOUT);
    mask_recover(&run, d_mask, 3);
    mask_finish_run(&run, &t, "clean by two");
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
}

/* ---- late rows ---- */

/* The held rank's next combine send (armed by the test) and its gate: the stream waits in a
 * host function until the test opens it, or 60 s pass (a failed test must not hang). */
static int late_rank = -1;
static int late_gate;
static unsigned *late_dummy_evicted; /* device, zeroes: the checks never see the eviction */

static void CUDART_CB wait_for_late_gate(void *arg)
{
    (void)arg;
    const struct timespec pause = {0, 1000000};
    for (int ms = 0; ms < 60000 && !__atomic_load_n(&late_gate, __ATOMIC_ACQUIRE); ms++) {
        nanosleep(&pause, NULL);
    }
}

cudaError_t __real_ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream)
{
    if (g->rank != late_rank) {
        return __real_ncclx_ep_ll_launch_combine_send(g, h, a, stream);
    }
    late_rank = -1;
    /* The send has begun: its progress word (ep_ll_wire.h) says so before any survivor can
     * time out, as a real send's blocks say it before their first eviction check. */
    unsigned *progress =
        g->evicted + ncclx_ep_progress_index((uint32_t)g->rank, (uint32_t)g->ranks);
    cudaError_t err = cudaMemsetAsync(progress, 0x11, sizeof(*progress), stream);
    if (err == cudaSuccess) {
        err = cudaLaunchHostFunc(stream, wait_for_late_gate, NULL);
    }
    if (err != cudaSuccess) {
        return err;
    }
    /* Its warps passed their checks before the eviction: they store whatever happens. */
    ncclx_ep_ll_group_desc_t late = *g;
    late.evicted = late_dummy_evicted;
    if (!a->reduce_in_send) {
        return __real_ncclx_ep_ll_launch_combine_send(&late, h, a, stream);
    }
    /* A small combine reduces in its send's last block (reduce_in_send), which would then run
     * on the dummy word too and never see the eviction: the held send is launched without it,
     * and its receive as a kernel of its own on the real group (it must report the eviction);
     * the library's own receive launch then launches nothing. */
    ncclx_ep_ll_combine_desc_t split = *a;
    split.reduce_in_send = 0;
    err = __real_ncclx_ep_ll_launch_combine_send(&late, h, &split, stream);
    return err != cudaSuccess ? err : ncclx_ep_ll_launch_combine_recv(g, h, &split, stream);
}

/*
 * Operation 1 (run a): every rank dispatches; rank `slow`'s combine send is held after it
 * began, so the survivors time out on it in combine and evict it.  Operation 2 (run b): the
 * survivors run it; the test opens the gate while it is under way, and the straggler's rows
 * of operation 1 land in the survivors' combine area of operation 1's parity.  Operation 3
 * (run c, that parity, another routing): the survivors dispatch and send their combine rows
 * (send_only), then complete.  Operations 2 and 3 must be exact on every survivor.
 */
static void late_rows(uint32_t ranks, uint64_t timeout_ms, const ep_case_t *k)
{
    ep_team_t t;
    ep_run_t a, b, c;
    int32_t *d_mask[EP_MAX_RANKS];
    ep_routing_t rt = ep_routing_default();
    const uint32_t slow = ep_rand_below(ranks), bit = 1u << slow;
    const uint32_t all = (1u << ranks) - 1, live = all & ~bit;
    mask_open_team(&t, ranks, timeout_ms, 1);
    mask_alloc_masks(&t, d_mask);
    assert_cuda_ok(cudaMalloc((void **)&late_dummy_evicted, ranks * sizeof(unsigned)));
    assert_cuda_ok(cudaMemset(late_dummy_evicted, 0, ranks * sizeof(unsigned)));
    ep_run_alloc(&a, &t, k);
    ep_run_alloc(&b, &t, k);
    ep_run_alloc(&c, &t, k);
    ep_alloc_arm();
    ep_run_fill(&a, &rt);
    b.masked = bit;
    c.masked = bit;
    ep_run_fill(&b, &rt);
    ep_run_fill(&c, &rt);
    ep_run_create(&a);
    ep_run_create(&b);
    ep_run_create(&c);
    ep_team_sync(&t);
    b.absent = bit;
    c.absent = bit;
    mask_iterate(&a); /* operation 0: exact, everyone */
    /* Operation 1: the dispatch completes everywhere, the straggler's combine send is held. */
    ep_run_enqueue_dispatch(&a, 0);
    ep_team_sync(&t);
    __atomic_store_n(&late_gate, 0, __ATOMIC_RELEASE);
    late_rank = (int)slow;
    const double start = mask_now_ms();
    ep_run_enqueue_combine(&a, 0);
    assert_int_equal(late_rank, -1); /* the wrapper took the straggler's send */
    sync_ranks(&t, live);
    const double ms = mask_now_ms() - start;
    printf("# %u ranks: rank %u's combine send held, the survivors returned after %.1f ms\n", ranks,
           slow, ms);
    if (ms < 0.9 * (double)timeout_ms) {
        fail_msg("survivors returned after %.1f ms, before the %llu ms timeout", ms,
                 (unsigned long long)timeout_ms);
    }
    mask_expect_async(&t, live, NCCLX_EP_ERROR_TIMEOUT);
    /* Operations 2 and 3 on the survivors; the straggler's rows land during operation 2. */
    ep_run_poison_dispatch(&b);
    ep_run_poison_combine(&b);
    ep_run_poison_dispatch(&c);
    ep_run_poison_combine(&c);
    ep_run_enqueue_dispatch(&b, 0);
    ep_run_enqueue_combine(&b, 0);
    ep_run_enqueue_dispatch(&c, 0);
    ep_run_enqueue_combine(&c, 1);
    usleep((useconds_t)(timeout_ms * 1000 / 8));
    __atomic_store_n(&late_gate, 1, __ATOMIC_RELEASE);
    assert_cuda_ok(cudaStreamSynchronize(t.stream[slow]));
    ep_run_enqueue_complete(&c);
    sync_ranks(&t, live);
    printf("# survivors' operation 2\n");
    ep_run_check_dispatch(&b);
    ep_run_check_combine(&b);
    printf("# survivors' operation 3 (operation 1's parity, another routing)\n");
    ep_run_check_dispatch(&c);
    ep_run_check_combine(&c);
    mask_expect_async(&t, live, NCCLX_EP_ERROR_TIMEOUT);
    mask_expect_async(&t, bit, NCCLX_EP_ERROR_EVICTED);
    mask_expect_mask(&t, d_mask, live, bit);
    /* Everyone cleans; exact again, on every rank. */
    mask_clean_all(&t);
    mask_expect_mask(&t, d_mask, all, 0);
    a.absent = 0;
    a.masked = 0;
    ep_run_fill(&a, &rt);
    ep_run_update(&a);
    mask_iterate(&a);
    ep_team_assert_no_async_error(&t);
    ep_run_destroy(&a);
    ep_run_destroy(&b);
    ep_run_destroy(&c);
    ep_team_sync_only(&t);
    ep_alloc_assert_none("late rows");
    ep_run_free(&a);
    ep_run_free(&b);
    ep_run_free(&c);
    assert_cuda_ok(cudaFree(late_dummy_evicted));
    late_dummy_evicted = NULL;
    mask_free_masks(&t, d_mask);
    ep_team_close(&t);
}

static void test_late_rows(void **state)
{
    (void)state;
    ep_rng_reset("late_rows");
    late_rows(4, 200, &em_case);
    late_rows(4, 200, &rm_case);
}

/* Each rank's graph: dispatch + combine of the run's handle. */
static void capture(ep_run_t *run, uint32_t r, cudaGraphExec_t *exec)
{
    const ep_team_t *t = run->team;
    cudaGraph_t graph = NULL;
    ncclxEpDispatchArgs_t da = ep_dispatch_args(run, r, 0);
    ncclxEpCombineArgs_t ca = ep_combine_args(run, r, 0);
    assert_cuda_ok(cudaStreamBeginCapture(t->stream[r], cudaStreamCaptureModeThreadLocal));
    assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &da, t->stream[r]));
    assert_ncclx_ok(ncclxEpCombine(run->handle[r], &ca, t->stream[r]));
    assert_cuda_ok(cudaStreamEndCapture(t->stream[r], &graph));
    assert_cuda_ok(cudaGraphInstantiate(exec, graph, 0));
    assert_cuda_ok(cudaGraphDestroy(graph));
}

/* Poison, replay on every rank not absent, wait for them; returns the milliseconds taken. */
static double replay(ep_run_t *run, cudaGraphExec_t *exec)
{
    const uint32_t live = all_ranks(run->team) & ~run->absent;
    ep_run_poison_dispatch(run);
    ep_run_poison_combine(run);
    sync_ranks(run->team, live);
    const double start = mask_now_ms();
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        if ((live >> r) & 1u) {
            assert_cuda_ok(cudaGraphLaunch(exec[r], run->team->stream[r]));
        }
    }
    sync_ranks(run->team, live);
    return mask_now_ms() - start;
}

static void graph_timeout(uint32_t enable_mask)
{
    const uint64_t timeout_ms = 100;
    ep_team_t t;
    ep_run_t run;
    cudaGraphExec_t exec[EP_MAX_RANKS];
    ep_routing_t rt = ep_routing_default();
    const uint32_t lost = 3, bit = 1u << lost, live = 0x7;
    mask_open_team(&t, 4, timeout_ms, enable_mask);
    mask_start_run(&run, &t, &em_case);
    for (uint32_t r = 0; r < t.ranks; r++) {
        capture(&run, r, &exec[r]);
    }
    replay(&run, exec);
    ep_run_check_dispatch(&run);
    ep_run_check_combine(&run);
    ep_team_assert_no_async_error(&t);
    /* Rank 3 stops replaying.  New inputs with the same routing sizes (captured calls). */
    rt.keep_tokens = 1;
    run.masked = bit;
    run.absent = 0;
    ep_run_fill(&run, &rt);
    ep_run_update(&run);
    ep_team_sync_only(&t);
    run.absent = bit;
    double ms = replay(&run, exec);
    printf("# graph replay, mask %u: the survivors returned after %.1f ms (timeout %llu ms)\n",
           enable_mask, ms, (unsigned long long)timeout_ms);
    mask_expect_async(&t, live, NCCLX_EP_ERROR_TIMEOUT);
    if (enable_mask) {
        ep_run_check_dispatch(&run);
        ep_run_check_combine(&run);
    }
    /* Later replays wait for nothing. */
    for (int i = 0; i < 3; i++) {
        ms = replay(&run, exec);
        if (ms > 0.5 * (double)timeout_ms) {
            fail_msg("replay %d after the timeout took %.1f ms: it waited again", i, ms);
        }
        if (enable_mask) {
            /* Exact without the lost rank. */
            ep_run_check_dispatch(&run);
            ep_run_check_combine(&run);
        } else {
            /* A group without a mask exchanges nothing once it timed out: no stale rows. */
            for (uint32_t r = 0; r < t.ranks; r++) {
                if ((live >> r) & 1u) {
                    expect_empty_outputs(&run, r, run.r[r].num_tokens);
                }
            }
        }
    }
    ep_team_sync_only(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    mask_finish_run(&run, &t, "graph timeout");
    ep_team_close(&t);
}

static void test_graph_timeout_with_mask(void **state)
{
    (void)state;
    ep_rng_reset("graph_timeout_with_mask");
    graph_timeout(1);
}

static void test_graph_timeout_without_mask(void **state)
{
    (void)state;
    ep_rng_reset("graph_timeout_without_mask");
    graph_timeout(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_straggler_4),
        cmocka_unit_test(test_straggler_8),
        cmocka_unit_test(test_straggle_cycles),
        cmocka_unit_test(test_clean_missed_by_one),
        cmocka_unit_test(test_clean_by_two),
        cmocka_unit_test(test_graph_timeout_with_mask),
        cmocka_unit_test(test_graph_timeout_without_mask),
        cmocka_unit_test(test_late_rows),
    };
    setvbuf(stdout, NULL, _IONBF, 0);
    ep_seed_init("test_ep_ll_straggler");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
