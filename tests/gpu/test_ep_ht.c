/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * GPU tests of EP HT (high-throughput) routing, dispatch and combine, forward and backward,
 * on loopback teams of 1, 2, 4 and 8 ranks and on the real 1-rank communicator.  Every output
 * is compared element by element with the CPU reference (tests/ref/ep_ht_ref.h), bit for bit,
 * on fresh random data, with the outputs poisoned (0xff) first: rows past the delivered ones
 * must still be poison.  Also: overflow under DROP and TRAP, out-of-range expert ids, repeated
 * experts, empty ranks, the MXFP8 combine, graph replays with new routing each replay, and
 * allocator counters at zero after setup.  TEST_SEED replays a run; TEST_HT_REPLAYS sets the
 * replays (default 100); TEST_FILTER=pattern runs the matching tests alone; TEST_SM_BUDGET=N
 * runs every kernel on N blocks per rank (under a sanitizer).  TEST_NODES=N shapes every loopback
 * team that N divides as N emulated nodes (tests/gpu/run_ep_ht_nodes.sh): the MXFP8 cases are
 * then skipped (refused across load/store domains) and the direct-path expectations give way
 * to the staged path's (a shaped team never reaches peers' caller buffers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ep_ht_harness.h"

/* Whether a case of `ranks` ranks cannot run on the team TEST_NODES makes of it: the MXFP8
 * combine is refused across load/store domains (ncclxUnsupported at init).  Prints why. */
static int mxfp8_shaped(const char *test, uint32_t ranks)
{
    if (ht_test_nodes(ranks) < 2) {
        return 0;
    }
    printf("# %s: the MXFP8 case on %u ranks skipped: TEST_NODES=%u makes its team span %u "
           "load/store domains, where an MXFP8 combine is refused (ncclxUnsupported)\n",
           test, ranks, ht_test_nodes(ranks), ht_test_nodes(ranks));
    fflush(stdout);
    return 1;
}

/* ---- the matrix ---- */

static void test_flat_teams(void **state)
{
    (void)state;
    ep_rng_reset("test_flat_teams");
    const uint32_t ranks[] = {1, 2, 4, 8};
    for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
        ht_case_t c = base_case(ranks[i], NCCLX_EP_LAYOUT_FLAT);
        ht_case(&c, HT_RANDOM, 0, 2);
    }
}

static void test_expert_major_teams(void **state)
{
    (void)state;
    ep_rng_reset("test_expert_major_teams");
    const uint32_t ranks[] = {1, 2, 4, 8};
    const uint32_t align[] = {1, 4, 16, 3};
    for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
        ht_case_t c = base_case(ranks[i], NCCLX_EP_LAYOUT_EXPERT_MAJOR);
        c.alignment = align[i];
        c.recv = ranks[i] * c.tokens * c.topk + c.experts * align[i];
        ht_case(&c, HT_RANDOM, 0, 2);
    }
}

static void test_topk_and_dtypes(void **state)
{
    (void)state;
    ep_rng_reset("test_topk_and_dtypes");
    const uint32_t topk[] = {1, 2, 8, 16, 32};
    const ncclxDataType_t dt[] = {NCCLX_FLOAT16, NCCLX_FLOAT32, NCCLX_BFLOAT16, NCCLX_FLOAT32,
                                  NCCLX_BFLOAT16};
    for (size_t i = 0; i < sizeof(topk) / sizeof(topk[0]); i++) {
        for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
             layout <<= 2) {
            ht_case_t c = base_case(4, layout);
            c.experts = 64;
            c.topk = topk[i];
            c.dtype = dt[i];
            c.idx_dtype = i % 2 ? NCCLX_INT32 : NCCLX_INT64;
            c.count_dtype = i % 2 ? NCCLX_INT64 : NCCLX_INT32;
            c.global_ids = (uint32_t)(i % 2);
            c.hidden = 136; /* not a multiple of 128 */
            c.alignment = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? 4 : 1;
            c.recv = 4 * c.tokens * c.topk + 64 * 4;
            ht_case(&c, HT_RANDOM, 0, 1);
        }
    }
}

static void test_repeats_bad_ids_empty_ranks(void **state)
{
    (void)state;
    ep_rng_reset("test_repeats_bad_ids_empty_ranks");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_case_t c = base_case(4, layout);
        c.recv = 4 * c.tokens * c.topk;
        ht_case(&c, HT_REPEATS, 0x2, 2);
        ht_case(&c, HT_BAD_IDS, 0x9, 1);
    }
}

static void test_drop(void **state)
{
    (void)state;
    ep_rng_reset("test_drop");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        /* Hot experts on rank 0 overflow it; the others receive little or nothing. */
        ht_case_t c = base_case(4, layout);
        c.drop = 1;
        c.recv = 40;
        c.alignment = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? 16 : 1;
        ht_case(&c, HT_HOT, 0, 2);
        ht_case(&c, HT_RANDOM, 0, 1);
        c.ranks = 8;
        c.experts = 64;
        ht_case(&c, HT_RANDOM, 0, 1);
    }
}

/* The MXFP8 combine (expert-major, BF16) against the reference's quantize-per-rank sums, bit
 * for bit, forward and backward: teams of 1 to 8 ranks and the real communicator, top-k 1, 4
 * and 8, alignments 1, 4 and 16, a hidden of
 * three blocks (lanes left idle), long chains (top-8 over few ranks, repeated experts), and
 * drops (a dropped row leaves its token's other rows on that rank to be summed). */
static void test_mxfp8_combine(void **state)
{
    (void)state;
    ep_rng_reset("test_mxfp8_combine");
    /* (ranks, top-k, alignment); token counts differ per rank (ht_fill). */
    const uint32_t cases[][3] = {{0, 4, 1},  {1, 1, 16}, {2, 4, 1},
                                 {4, 8, 16}, {8, 4, 4},  {8, 1, 1}};
    int skipped = 0;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (mxfp8_shaped("test_mxfp8_combine", cases[i][0])) {
            skipped = 1;
            continue;
        }
        ht_case_t c = base_case(cases[i][0], NCCLX_EP_LAYOUT_EXPERT_MAJOR);
        const uint32_t R = cases[i][0] == 0 ? 1 : cases[i][0];
        c.mxfp8 = 1;
        c.topk = cases[i][1];
        c.alignment = cases[i][2];
        c.recv = R * c.tokens * c.topk + c.experts * c.alignment;
        ht_case(&c, HT_RANDOM, 0, 2);
    }
    ht_case_t c = base_case(2, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    if (!mxfp8_shaped("test_mxfp8_combine", 2)) {
        c.mxfp8 = 1;
        c.hidden = 96;
        c.topk = 8;
        c.experts = 32;
        c.recv = 2 * c.tokens * c.topk;
        ht_case(&c, HT_RANDOM, 0, 1);
        ht_case(&c, HT_REPEATS, 0x2, 1);
    } else {
        skipped = 1;
    }
    c = base_case(4, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    if (!mxfp8_shaped("test_mxfp8_combine", 4)) {
        c.mxfp8 = 1;
        c.drop = 1;
        c.recv = 40;
        c.alignment = 8;
        ht_case(&c, HT_HOT, 0, 2);
        ht_case(&c, HT_RANDOM, 0, 1);
    } else {
        skipped = 1;
    }
    if (skipped) {
        skip(); /* the cases that apply passed; the others cannot run on these shapes */
    }
}

static void test_singleton(void **state)
{
    (void)state;
    ep_rng_reset("test_singleton");
    ht_case_t c = base_case(0, NCCLX_EP_LAYOUT_FLAT);
    ht_case(&c, HT_RANDOM, 0, 2);
    c.layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    c.alignment = 8;
    c.recv = c.tokens * c.topk + c.experts * 8;
    ht_case(&c, HT_REPEATS, 0, 1);
}

static void test_quant_fwd(void **state)
{
    (void)state;
    ep_rng_reset("test_quant_fwd");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_case_t c = base_case(4, layout);
        c.quant = 1;
        c.alignment = 4;
        c.recv = 4 * c.tokens * c.topk + c.experts * 4;
        ht_case(&c, HT_RANDOM, 0, 1);
    }
}

/* TRAP: an overflow on any rank is reported on every rank; the group's kernels then do
 * nothing, the next call names the overflow, a clear lets the group go on, and a handle routed
 * before the clear must be routed again.  The routing and a dispatch are replayed from graphs,
 * so the dispatch is enqueued before any host can have seen the overflow: it must do nothing
 * (outputs untouched) on every rank. */
static void test_trap(void **state)
{
    (void)state;
    ep_rng_reset("test_trap");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(4, NCCLX_EP_LAYOUT_FLAT);
    c.recv = 40;
    ht_open(run, &c);
    /* A routing that fits (one routed token per rank), with T tokens: the graphs' shape. */
    for (uint32_t r = 0; r < run->R; r++) {
        run->r[r].n = c.tokens;
        for (size_t i = 0; i < (size_t)c.tokens * run->K; i++) {
            run->r[r].idx[i] = i == 0 ? 0 : -1;
            run->r[r].weights[i] = 1.0f;
        }
    }
    ht_set_routing(run);
    ht_route(run);
    ep_team_sync(&run->team);
    cudaGraphExec_t exec[EP_MAX_RANKS];
    ht_capture(run, 0, exec);
    ht_fill(run, HT_HOT, 0, 1); /* hot experts on rank 0: it needs more than 40 rows */
    int overflowed = 0;
    for (uint32_t r = 0; r < run->R; r++) {
        overflowed |= run->lay[r].overflow;
    }
    assert_true(overflowed);
    ht_poison(run);
    for (uint32_t r = 0; r < run->R; r++) {
        assert_cuda_ok(cudaGraphLaunch(exec[r], run->team.stream[r]));
    }
    ep_team_sync_only(&run->team);
    ht_check_untouched_dispatch(run);
    for (uint32_t r = 0; r < run->R; r++) {
        uint32_t err = 0;
        assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
        assert_int_equal(err, NCCLX_EP_ERROR_OVERFLOW); /* every rank, not only rank 0 */
        ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
        assert_ncclx_error(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]), ncclxInvalidUsage,
                           "max_recv_tokens_per_rank=40");
        assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
    }
    ep_team_sync(&run->team);
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
        assert_ncclx_error(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]), ncclxInvalidUsage,
                           "route it again");
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
    /* A routing that fits: at most 8 tokens per rank, so at most 32 rows on any rank. */
    for (uint32_t r = 0; r < run->R; r++) {
        run->r[r].n = 8;
    }
    ht_fill(run, HT_RANDOM, 0, 1);
    ht_route(run);
    ep_team_sync(&run->team);
    ht_forward_checked(run);
    ht_close(run);
    free(run);
}

/* Ranks that disagree on one operation (rank 1 dispatches backward while the others dispatch
 * forward) read none of each other's rows: every rank reports a mismatch, outputs stay
 * untouched, and the next agreeing operations are exact. */
static void test_mismatched_operation(void **state)
{
    (void)state;
    ep_rng_reset("test_mismatched_operation");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(4, NCCLX_EP_LAYOUT_FLAT);
    ht_open(run, &c);
    ht_route_full_batches(run);
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, r == 1);
        assert_ncclx_ok(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]));
    }
    ep_team_sync_only(&run->team);
    ht_check_untouched_dispatch(run);
    for (uint32_t r = 0; r < run->R; r++) {
        uint32_t err = 0;
        assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
        assert_int_equal(err, NCCLX_EP_ERROR_MISMATCH);
        assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
    }
    ep_team_sync(&run->team);
    ht_forward_checked(run);
    ht_close(run);
    free(run);
}

/* Graph replay: each rank's update, forward dispatch and combine captured once, replayed with
 * new routing, tokens and expert outputs uploaded before every replay (same token counts). */
static void test_graph_replay(void **state)
{
    (void)state;
    ep_rng_reset("test_graph_replay");
    const char *env = getenv("TEST_HT_REPLAYS");
    const int replays = env != NULL ? atoi(env) : 100;
    /* (layout, ranks, MXFP8 combine): both layouts on 4 ranks, then expert-major on 8 and
     * flat on 2, then the MXFP8 combine on 4 (its row links are routed inside the graph), then
     * both layouts on the real 1-rank communicator (ranks 0). */
    const uint32_t cases[7][3] = {
        {NCCLX_EP_LAYOUT_EXPERT_MAJOR, 4, 0}, {NCCLX_EP_LAYOUT_FLAT, 4, 0},
        {NCCLX_EP_LAYOUT_EXPERT_MAJOR, 8, 0}, {NCCLX_EP_LAYOUT_FLAT, 2, 0},
        {NCCLX_EP_LAYOUT_EXPERT_MAJOR, 4, 1}, {NCCLX_EP_LAYOUT_FLAT, 0, 0},
        {NCCLX_EP_LAYOUT_EXPERT_MAJOR, 0, 1}};
    int skipped = 0;
    for (int k = 0; k < 7; k++) {
        const uint32_t layout = cases[k][0], ranks = cases[k][1], R = ranks == 0 ? 1 : ranks;
        if (cases[k][2] && mxfp8_shaped("test_graph_replay", ranks)) {
            skipped = 1;
            continue;
        }
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = base_case(ranks, layout);
        c.mxfp8 = cases[k][2];
        c.recv = R * c.tokens * c.topk + c.experts * 4;
        c.alignment = 4;
        cudaGraphExec_t exec[EP_MAX_RANKS];
        ht_open(run, &c);
        ht_fill(run, HT_RANDOM, 0, 0);
        if (layout == NCCLX_EP_LAYOUT_FLAT) {
            ht_init_caller_handles(run); /* init before capture: the split lifecycle */
        }
        ht_route(run);
        ep_team_sync(&run->team);
        ht_capture(run, 1, exec);
        printf("# %s%s graphs captured\n", layout == NCCLX_EP_LAYOUT_FLAT ? "flat" : "expert-major",
               c.mxfp8 ? " MXFP8" : "");
        fflush(stdout);
        lib_allocs = 0;
        for (int i = 0; i < replays; i++) {
            ht_fill(run, i % 3 == 2 ? HT_REPEATS : HT_RANDOM, 0, 1);
            lib_begin();
            ht_poison(run);
            for (uint32_t r = 0; r < run->R; r++) {
                assert_cuda_ok(cudaGraphLaunch(exec[r], run->team.stream[r]));
            }
            ep_team_sync(&run->team);
            lib_end();
            ht_check_dispatch(run, 0);
            ht_check_combine(run, 0);
            if (i == 0 || i + 1 == replays) {
                printf("# %s%s on %u rank%s: graph replay %d of %d checked\n",
                       layout == NCCLX_EP_LAYOUT_FLAT ? "flat" : "expert-major",
                       c.mxfp8 ? " MXFP8" : "", R, ranks == 0 ? " (communicator)" : "s", i + 1,
                       replays);
                fflush(stdout);
            }
        }
        lib_assert_none("graph replays");
        for (uint32_t r = 0; r < run->R; r++) {
            assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
        }
        ht_close(run);
        free(run);
    }
    if (skipped) {
        skip(); /* the cases that apply passed; the MXFP8 one cannot run on this shape */
    }
}

/* Two runs of the same inputs give bitwise-identical outputs (no atomics decide an order). */
static void test_deterministic(void **state)
{
    (void)state;
    ep_rng_reset("test_deterministic");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(8, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    c.recv = 8 * c.tokens * c.topk;
    ht_open(run, &c);
    ht_fill(run, HT_RANDOM, 0, 0);
    ht_iteration(run, 0);
    uint8_t *first = hmalloc((size_t)run->R * c.tokens * run->crow);
    for (uint32_t r = 0; r < run->R; r++) {
        memcpy(first + (size_t)r * c.tokens * run->crow, run->r[r].got_out,
               (size_t)c.tokens * run->crow);
    }
    ht_iteration(run, 0);
    for (uint32_t r = 0; r < run->R; r++) {
        assert_memory_equal(first + (size_t)r * c.tokens * run->crow, run->r[r].got_out,
                            (size_t)run->r[r].n * run->crow);
    }
    free(first);
    ht_close(run);
    free(run);
}

/* The anchor's "stale routing map" regression: a routing with fewer tokens after a full one
 * must not keep any bit of the earlier rows (every rank counts exactly what the new routing
 * sends it, and dispatch writes nothing past it). */
static void test_stale_routing_tail(void **state)
{
    (void)state;
    ep_rng_reset("test_stale_routing_tail");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = base_case(4, layout);
        c.recv = 4 * c.tokens * c.topk;
        ht_open(run, &c);
        /* Iteration 1: every rank's T tokens, each to K experts spread over every rank. */
        for (uint32_t r = 0; r < run->R; r++) {
            ht_rank_t *x = &run->r[r];
            x->n = c.tokens;
            for (size_t t = 0; t < x->n; t++) {
                for (size_t k = 0; k < run->K; k++) {
                    x->idx[t * run->K + k] = (int64_t)((t + k * run->L) % c.experts);
                    x->weights[t * run->K + k] = 1.0f;
                }
            }
        }
        ht_set_routing(run);
        ht_route(run);
        ep_team_sync(&run->team);
        ht_forward_checked(run);
        /* Iteration 2: one token per rank, to expert 0 only. */
        for (uint32_t r = 0; r < run->R; r++) {
            ht_rank_t *x = &run->r[r];
            x->n = 1;
            x->idx[0] = 0;
            for (size_t k = 1; k < run->K; k++) {
                x->idx[k] = -1;
            }
        }
        ht_set_routing(run);
        ht_poison(run);
        ht_route(run);
        ht_layout(run);
        ep_team_sync(&run->team);
        for (uint32_t r = 0; r < run->R; r++) {
            assert_int_equal(run->lay[r].recv_total, r == 0 ? (int64_t)run->R : 0);
            ht_check_layout(run, r);
        }
        ht_forward_checked(run);
        ht_close(run);
        free(run);
    }
}

/* Several live handles per group: routing handle B leaves handle A's rows alone (A's
 * dispatch and combine after B's update still follow A's routing). */
static void test_two_live_handles(void **state)
{
    (void)state;
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = base_case(4, layout);
        c.recv = 4 * c.tokens * c.topk;
        ht_open(run, &c);
        ep_rng_reset("test_two_live_handles A");
        ht_fill(run, HT_RANDOM, 0, 0);
        ht_route(run); /* handles A */
        ep_team_sync(&run->team);
        ht_swap_handles(run);
        ep_rng_reset("test_two_live_handles B");
        ht_fill(run, HT_REPEATS, 0x4, 0);
        ht_route(run); /* handles B, another routing */
        ep_team_sync(&run->team);
        ht_forward_checked(run);
        ht_swap_handles(run);
        ep_rng_reset("test_two_live_handles A");
        ht_fill(run, HT_RANDOM, 0, 0); /* A's data and reference again; A is not rerouted */
        ht_forward_checked(run);
        ht_close(run);
        free(run);
    }
}

/* Zero copy: out_tokens and expert_out are the group's own buffers (ncclxEpGroupGetHtBuffers):
 * rows arrive in place and combine reads expert outputs in place; results as with the
 * caller's buffers.  A view that starts inside the buffer but not at its start is refused.
 * (The expert outputs are uploaded before each iteration's dispatch: allowed here because
 * every rank is synchronized between iterations, so no peer still reads the last combine.) */
static void test_zero_copy(void **state)
{
    (void)state;
    ep_rng_reset("test_zero_copy");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_case_t c = base_case(4, layout);
        c.zero_copy = 1;
        c.alignment = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? 4 : 1;
        c.recv = 4 * c.tokens * c.topk + c.experts * 4;
        ht_case(&c, HT_RANDOM, 0x4, 2);
        c.dtype = NCCLX_FLOAT16;
        c.ranks = 8;
        c.experts = 64;
        c.recv = 8 * c.tokens * c.topk + c.experts * 4;
        ht_case(&c, HT_REPEATS, 0, 1);
    }
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(2, NCCLX_EP_LAYOUT_FLAT);
    c.zero_copy = 1;
    ht_open(run, &c);
    ht_fill(run, HT_RANDOM, 0, 0);
    ht_route(run);
    ep_team_sync(&run->team);
    ncclxEpDispatchArgs_t a = ht_dispatch_args(run, 0, 0);
    a.out_tokens.data = (char *)a.out_tokens.data + run->row;
    a.out_tokens.shape[0] = run->S; /* the right shape, one row off */
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, run->team.stream[0]), ncclxInvalidArgument,
                       "must start there");
    ht_close(run);
    free(run);
}

/* The split lifecycle: handles on caller memory (initialized before any routing, then routed
 * by two updates, each checked forward and backward), and a destroy that leaves the caller's
 * memory to the caller. */
static void test_caller_memory(void **state)
{
    (void)state;
    ep_rng_reset("test_caller_memory");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = base_case(4, layout);
        c.topk = 2; /* below the group's bound: the memory is sized for this handle alone */
        c.max_topk = 4;
        c.recv = 4 * c.tokens * c.topk;
        ht_open(run, &c);
        ht_init_caller_handles(run);
        for (int it = 0; it < 2; it++) {
            ht_fill(run, HT_RANDOM, 0, 0);
            ht_iteration(run, 0);
        }
        ht_close(run);
        free(run);
    }
}

/* Export and import: a byte copy of a routed handle's caller memory, imported on every rank,
 * dispatches and combines exactly as the original; a truncated, corrupted or mismatched
 * snapshot is refused by name; ranks whose handles come from different routing steps exchange
 * nothing and report a mismatch. */
static void test_export_import(void **state)
{
    (void)state;
    ep_rng_reset("test_export_import");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = base_case(4, layout);
        c.recv = 4 * c.tokens * c.topk;
        c.idx_dtype = layout == NCCLX_EP_LAYOUT_FLAT ? NCCLX_INT32 : NCCLX_INT64;
        ht_open(run, &c);
        ht_init_caller_handles(run);
        ht_fill(run, HT_RANDOM, 0, 0);
        ht_route(run);
        ep_team_sync(&run->team);
        ht_forward_checked(run);
        void *snap[EP_MAX_RANKS];
        size_t bytes = 0;
        assert_ncclx_ok(ncclxEpHandleMemSize(run->team.group[0], layout, run->K, &bytes));
        for (uint32_t r = 0; r < run->R; r++) {
            snap[r] = dmalloc(bytes);
            assert_cuda_ok(
                cudaMemcpy(snap[r], run->r[r].d_handle_mem, bytes, cudaMemcpyDeviceToDevice));
        }
        assert_cuda_ok(cudaDeviceSynchronize()); /* the copies ran on the legacy stream */
        ncclxEpHandleState_t st = NCCLX_EP_HANDLE_STATE_INIT;
        st.topk = run->K;
        st.topk_idx_dtype = c.idx_dtype;
        st.global_expert_ids = c.global_ids;
        st.num_tokens = run->r[0].n;
        ncclxEpHandle_t bad = NULL;
        ncclxEpGroup_t g0 = run->team.group[0];
        cudaStream_t s0 = run->team.stream[0];
        const ncclxTensor_t whole = ep_tensor(snap[0], NCCLX_UINT8, 1, (int64_t)bytes, 0, 0);
        const ncclxTensor_t cut = ep_tensor(snap[0], NCCLX_UINT8, 1, (int64_t)bytes - 16, 0, 0);
        assert_ncclx_error(ncclxEpHandleImport(g0, layout, &st, &cut, s0, &bad),
                           ncclxInvalidArgument, "truncated");
        ncclxEpHandleState_t other = st;
        other.num_tokens = st.num_tokens < c.tokens ? st.num_tokens + 1 : st.num_tokens - 1;
        assert_ncclx_error(ncclxEpHandleImport(g0, layout, &other, &whole, s0, &bad),
                           ncclxInvalidArgument, "differs from the routing the snapshot holds");
        other = st;
        other.topk = st.topk - 1;
        assert_ncclx_error(ncclxEpHandleImport(g0, layout, &other, &whole, s0, &bad),
                           ncclxInvalidArgument, "another group geometry");
        other = st;
        other.topk_idx_dtype = c.idx_dtype == NCCLX_INT64 ? NCCLX_INT32 : NCCLX_INT64;
        assert_ncclx_error(ncclxEpHandleImport(g0, layout, &other, &whole, s0, &bad),
                           ncclxInvalidArgument, "differs from the routing the snapshot holds");
        assert_ncclx_error(
            ncclxEpHandleImport(g0, layout ^ (NCCLX_EP_LAYOUT_FLAT | NCCLX_EP_LAYOUT_EXPERT_MAJOR),
                                &st, &whole, s0, &bad),
            ncclxInvalidArgument, "another group geometry");
        /* One byte flipped in the middle of the snapshot: the checksum says so. */
        uint8_t byte = 0;
        char *mid = (char *)snap[0] + bytes / 2;
        assert_cuda_ok(cudaMemcpy(&byte, mid, 1, cudaMemcpyDeviceToHost));
        byte = (uint8_t)~byte;
        assert_cuda_ok(cudaMemcpy(mid, &byte, 1, cudaMemcpyHostToDevice));
        assert_cuda_ok(cudaDeviceSynchronize());
        assert_ncclx_error(ncclxEpHandleImport(g0, layout, &st, &whole, s0, &bad),
                           ncclxInvalidArgument, "checksum");
        byte = (uint8_t)~byte;
        assert_cuda_ok(cudaMemcpy(mid, &byte, 1, cudaMemcpyHostToDevice));
        assert_cuda_ok(cudaDeviceSynchronize());
        /* Every rank imports its own snapshot: the copies work as the originals did. */
        for (uint32_t r = 0; r < run->R; r++) {
            const ncclxTensor_t m = ep_tensor(snap[r], NCCLX_UINT8, 1, (int64_t)bytes, 0, 0);
            st.num_tokens = run->r[r].n;
            assert_ncclx_ok(ncclxEpHandleImport(run->team.group[r], layout, &st, &m,
                                                run->team.stream[r], &run->h_other[r]));
        }
        run->have_other = 1;
        ht_swap_handles(run); /* the imported handles */
        ht_forward_checked(run);
        /* A new routing of the originals (another step); rank 0 keeps its imported handle. */
        ht_swap_handles(run);
        ht_fill(run, HT_RANDOM, 0, 1);
        ht_route(run);
        ep_team_sync(&run->team);
        ht_poison(run);
        for (uint32_t r = 0; r < run->R; r++) {
            ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
            assert_ncclx_ok(
                ncclxEpDispatch(r == 0 ? run->h_other[0] : run->h[r], &a, run->team.stream[r]));
        }
        ep_team_sync_only(&run->team);
        ht_check_untouched_dispatch(run);
        for (uint32_t r = 0; r < run->R; r++) {
            uint32_t err = 0;
            assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
            assert_int_equal(err, NCCLX_EP_ERROR_MISMATCH);
            assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
        }
        ep_team_sync(&run->team);
        ht_forward_checked(run); /* the originals, in step again */
        ht_close(run);
        for (uint32_t r = 0; r < run->R; r++) {
            assert_cuda_ok(cudaFree(snap[r]));
        }
        free(run);
    }
}

/* Host checks that name the field (nothing is enqueued). */
static void test_argument_errors(void **state)
{
    (void)state;
    ep_rng_reset("test_argument_errors");
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = base_case(2, NCCLX_EP_LAYOUT_FLAT);
    ht_open(run, &c);
    ht_fill(run, HT_RANDOM, 0, 0);
    ht_route(run);
    ep_team_sync(&run->team);
    cudaStream_t s = run->team.stream[0];
    ncclxEpDispatchArgs_t a = ht_dispatch_args(run, 0, 0);
    a.send_only = 1;
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, s), ncclxInvalidArgument, "send_only");
    a = ht_dispatch_args(run, 0, 0);
    a.pass = 2;
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, s), ncclxInvalidArgument, "args->pass=2");
    a = ht_dispatch_args(run, 0, 0);
    a.out_tokens.shape[0] = run->S - 1;
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, s), ncclxInvalidArgument,
                       "args->out_tokens.shape[0]");
    a = ht_dispatch_args(run, 0, 1);
    a.topk_weights = ht_dispatch_args(run, 0, 0).topk_weights;
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, s), ncclxInvalidArgument,
                       "args->topk_weights must be absent");
    a = ht_dispatch_args(run, 0, 0);
    a.recipe = NCCLX_EP_RECIPE_FP8;
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, s), ncclxInvalidArgument, "args->recipe");
    ncclxEpCombineArgs_t ca = ht_combine_args(run, 0, 0);
    assert_ncclx_error(ncclxEpCombine(run->h[0], &ca, s), ncclxInvalidUsage,
                       "no completed dispatch");
    ht_enqueue(run, 1, 0);
    ep_team_sync(&run->team);
    const ncclxTensor_t none = NCCLX_TENSOR_INIT;
    ca = ht_combine_args(run, 0, 1);
    ca.out_topk_weights = none;
    assert_ncclx_error(ncclxEpCombine(run->h[0], &ca, s), ncclxInvalidArgument,
                       "args->out_topk_weights.dtype");
    ca = ht_combine_args(run, 0, 0);
    ca.topk_weights = ht_combine_args(run, 0, 1).topk_weights;
    assert_ncclx_error(ncclxEpCombine(run->h[0], &ca, s), ncclxInvalidArgument,
                       "args->topk_weights must be absent");
    assert_ncclx_error(ncclxEpComplete(run->h[0], s), ncclxInvalidUsage, "HT");
    assert_ncclx_error(ncclxEpMaskClean(run->team.group[0], s), ncclxUnsupported, "HT");
    ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
    info.expert_offsets = ep_tensor(run->r[0].d_layout, NCCLX_INT64, 1, run->L + 1, 0, 0);
    assert_ncclx_error(ncclxEpHandleGetLayout(run->h[0], &info, s), ncclxInvalidArgument,
                       "expert_offsets");
    ht_close(run);
    free(run);
}

/* Zero copy is each rank's own choice on both paths: ranks 1 and 3 receive into and combine
 * from the group's buffers, ranks 0 and 2 use buffers of their own, forward and backward,
 * both layouts, every output exact and no error (the direct path once reported a MISMATCH). */
static void test_zero_copy_mixed_ranks(void **state)
{
    (void)state;
    ep_rng_reset("test_zero_copy_mixed_ranks");
    for (uint32_t layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR; layout <= NCCLX_EP_LAYOUT_FLAT;
         layout <<= 2) {
        ht_case_t c = base_case(4, layout);
        c.zero_copy = 1;
        c.zero_copy_skip = 0x5u;
        c.alignment = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR ? 4 : 1;
        c.recv = 4 * c.tokens * c.topk + c.experts * 4;
        ht_case(&c, HT_RANDOM, 0, 2);
        c.zero_copy_skip = 0xeu; /* rank 0 alone in place */
        ht_case(&c, HT_REPEATS, 0, 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flat_teams),
        cmocka_unit_test(test_expert_major_teams),
        cmocka_unit_test(test_topk_and_dtypes),
        cmocka_unit_test(test_repeats_bad_ids_empty_ranks),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_mxfp8_combine),
        cmocka_unit_test(test_singleton),
        cmocka_unit_test(test_quant_fwd),
        cmocka_unit_test(test_trap),
        cmocka_unit_test(test_mismatched_operation),
        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_caller_memory),
        cmocka_unit_test(test_export_import),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_stale_routing_tail),
        cmocka_unit_test(test_two_live_handles),
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_zero_copy_mixed_ranks),
    };
    ep_seed_init("test_ep_ht");
    return ncclx_run_tests("gpu_ep_ht", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
