/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP HT across load/store domains, on loopback teams shaped as clusters (ncclxLoopbackConfig_t:
 * nodes x ranks per node on one GPU; docs/multi-node.md): a rank reaches the ranks of its node
 * through symmetric memory and every other rank only through the emulated network, so dispatch
 * and combine take the hierarchical path (each token put once to its rail peer on every node
 * that keeps a row of it, which relays it; each node's FP32 partial sum put once back).  Every
 * output is compared bit for bit with the CPU reference (tests/ref/ep_ht_ref.h), outputs
 * poisoned first, expert outputs spread over many binades (ht_wide_expert_out) so that the
 * combine's summation tree shows in the bits:
 *  - shapes 2x2, 2x4, 4x2 and 8x1: FLAT and EXPERT_MAJOR, forward and backward, BF16 (and one
 *    FP32 case on 2x4), DROP with a small receive budget, QUANT_FWD scales, zero copy (on some
 *    ranks only, too); no allocator call after init;
 *  - the same routing and data on an unshaped team of 8, on 2x4 and on 4x2: the raw output
 *    bytes of dispatch and combine, forward and backward, are identical;
 *  - (the bytes that cross the emulated network: test_ep_ht_net_bytes.c);
 *  - 20 graph replays with new routing each on 2x4; a rank of another node that never
 *    dispatches (the others report TIMEOUT within the group timeout, outputs untouched); the
 *    emulator holding unsignalled puts back with a delay per signal (NCCLX_NET_EMU_CHAOS,
 *    NCCLX_NET_EMU_DELAY_NS); export and import of handles on 2x4; the plans refused across
 *    domains (MXFP8, a load/store domain whose size is not a power of two).
 * TEST_SEED=n replays a run's random data; TEST_FILTER=pattern runs the matching tests alone.
 * TEST_NODES is ignored (every team here is shaped explicitly, or deliberately unshaped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ep_ht_harness.h"

#include "context.h" /* the emulator's settings and held-put counter (chaos mode) */

#include "ep_ht_nodes_fixture.h"

/* One case on its own team: `iterations` times fresh routing (draw first, then random), data
 * and wide expert outputs, then route, layout, forward and backward dispatch and combine, all
 * checked (ht_iteration); no allocator call after the team's init.  A DROP case must drop rows
 * in some iteration (else the budget tested nothing). */
static void run_case(const ht_case_t *c, ht_draw_t draw, uint32_t empty_ranks, int iterations,
                     const char *what)
{
    ht_run_t *run = hmalloc(sizeof(*run));
    int dropped = 0;
    ht_open(run, c);
    check_shape(run);
    lib_allocs = 0;
    for (int it = 0; it < iterations; it++) {
        ht_fill(run, it == 0 ? draw : HT_RANDOM, empty_ranks, 0);
        ht_wide_expert_out(run);
        for (uint32_t r = 0; r < run->R; r++) {
            dropped |= run->lay[r].overflow;
        }
        ht_iteration(run, 0);
    }
    lib_assert_none(what);
    if (c->drop && !dropped) {
        fail_msg("%s: the DROP case dropped no row (max_recv_tokens_per_rank=%u)", what, c->recv);
    }
    printf("# %s: %ux%u %s %s%s%s%s, hidden %u: %d iteration%s exact\n", what, c->nodes,
           c->ranks / c->nodes, layout_name(c->layout), c->dtype == NCCLX_FLOAT32 ? "FP32" : "BF16",
           c->quant ? " QUANT_FWD" : "", c->drop ? " DROP" : "", c->zero_copy ? " zero-copy" : "",
           c->hidden, iterations, iterations > 1 ? "s" : "");
    fflush(stdout);
    ht_close(run);
    free(run);
}

/* ---- a: the shapes ---- */

/* Four teams of the shape: layout A (flat on variant 0, expert-major on 1) with a rank of the
 * last node sending nothing, INT32 ids and global ids on variant 1; layout B with QUANT_FWD;
 * layout A with DROP and 48 receive rows (hot experts, then random); layout B with zero copy
 * (on every rank for variant 0, on ranks 1 and 3 only for variant 1).  The shapes alternate
 * the variants, so every feature runs in both layouts. */
static void run_shape(uint32_t nodes, uint32_t per_node, uint32_t hidden, int variant)
{
    char name[32];
    const uint32_t R = nodes * per_node;
    const uint32_t a = variant ? EM : FLAT, b = variant ? FLAT : EM;
    snprintf(name, sizeof(name), "%ux%u", nodes, per_node);
    ep_rng_reset(name);

    ht_case_t c = shape_case(nodes, per_node, a, hidden);
    if (variant) {
        c.idx_dtype = NCCLX_INT32;
        c.count_dtype = NCCLX_INT32;
        c.global_ids = 1;
    }
    run_case(&c, HT_RANDOM, 1u << (R - 1), 2, name);

    c = shape_case(nodes, per_node, b, hidden);
    c.quant = 1;
    run_case(&c, HT_REPEATS, 0, 1, name);

    c = shape_case(nodes, per_node, a, 256);
    c.drop = 1;
    c.recv = 48;
    c.alignment = c.layout == EM ? 8 : 1;
    run_case(&c, HT_HOT, 0, 2, name);

    c = shape_case(nodes, per_node, b, hidden);
    c.zero_copy = 1;
    c.zero_copy_skip = variant ? 0x5u : 0u;
    run_case(&c, HT_RANDOM, 0, 1, name);
}

static void test_shape_2x2(void **state)
{
    (void)state;
    run_shape(2, 2, 1024, 0);
}

/* And the FP32 case. */
static void test_shape_2x4(void **state)
{
    (void)state;
    run_shape(2, 4, 512, 1);
    ht_case_t c = shape_case(2, 4, EM, 512);
    c.dtype = NCCLX_FLOAT32;
    c.topk = 8;
    fit_recv(&c);
    run_case(&c, HT_RANDOM, 0, 1, "2x4");
}

static void test_shape_4x2(void **state)
{
    (void)state;
    run_shape(4, 2, 768, 0);
}

/* A hidden size that is no multiple of 128 (columns left over in the last step). */
static void test_shape_8x1(void **state)
{
    (void)state;
    run_shape(8, 1, 336, 1);
}

/* ---- b: bit identity across shapes ---- */

/* Rank r's output tensors, in the order they are compared: forward dispatch (tokens, scales,
 * ids, weights), forward combine, backward dispatch tokens, backward combine and its weight
 * gradients.  The whole buffers, poison past the delivered rows included. */
#define IDENTITY_PARTS 8

static void identity_parts(const ht_run_t *run, uint32_t r, void *dev[IDENTITY_PARTS],
                           size_t bytes[IDENTITY_PARTS], const char *names[IDENTITY_PARTS])
{
    const ht_rank_t *x = &run->r[r];
    const size_t S = run->S, K = run->K, T = run->c.tokens;
    static const char *const n[IDENTITY_PARTS] = {
        "forward dispatch out_tokens",   "forward dispatch out_scales",
        "forward dispatch out_topk_idx", "forward dispatch out_topk_weights",
        "forward combine out",           "backward dispatch out_tokens",
        "backward combine out",          "backward combine out_topk_weights"};
    void *const d[IDENTITY_PARTS] = {x->d_out_tokens, x->d_out_scales, x->d_out_idx, x->d_out_w,
                                     x->d_out,        x->d_out_tokens, x->d_out,     x->d_out_gw};
    const size_t b[IDENTITY_PARTS] = {S * run->row,  S * 16,       S * K * 8,     S * K * 4,
                                      T * run->crow, S * run->row, T * run->crow, T * K * 4};
    for (int i = 0; i < IDENTITY_PARTS; i++) {
        dev[i] = d[i];
        bytes[i] = b[i];
        names[i] = n[i];
    }
}

/* Copies parts [first, last) of every rank's outputs to the host, appended at *at. */
static void grab(const ht_run_t *run, int first, int last, uint8_t *out, size_t *at)
{
    for (uint32_t r = 0; r < run->R; r++) {
        void *dev[IDENTITY_PARTS];
        size_t bytes[IDENTITY_PARTS];
        const char *names[IDENTITY_PARTS];
        identity_parts(run, r, dev, bytes, names);
        for (int i = first; i < last; i++) {
            assert_cuda_ok(cudaMemcpy(out + *at, dev[i], bytes[i], cudaMemcpyDeviceToHost));
            *at += bytes[i];
        }
    }
}

/* One run of the identity case on `nodes` nodes of 8 ranks (0: unshaped): the same routing and
 * data every time (the generator restarted), forward then backward, each checked against the
 * reference; the raw outputs in *out (allocated), their size in *n. */
static void identity_run(uint32_t layout, ncclxDataType_t dtype, uint32_t nodes, uint8_t **out,
                         size_t *n)
{
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = shape_case(1, 8, layout, 256);
    c.nodes = nodes;
    c.topk = 8;
    c.dtype = dtype;
    fit_recv(&c);
    ht_open(run, &c);
    check_shape(run);
    size_t total = 0;
    for (uint32_t r = 0; r < run->R; r++) {
        void *dev[IDENTITY_PARTS];
        size_t bytes[IDENTITY_PARTS];
        const char *names[IDENTITY_PARTS];
        identity_parts(run, r, dev, bytes, names);
        for (int i = 0; i < IDENTITY_PARTS; i++) {
            total += bytes[i];
        }
    }
    *out = hmalloc(total);
    *n = 0;
    ep_rng_reset(layout == FLAT ? "identity flat" : "identity expert-major");
    ht_fill(run, HT_RANDOM, 0, 0);
    ht_wide_expert_out(run);
    lib_allocs = 0;
    lib_begin();
    ht_poison(run);
    ht_route(run);
    ht_enqueue(run, 1, 0);
    ht_enqueue(run, 0, 0);
    ep_team_sync(&run->team);
    lib_end();
    ht_check_dispatch(run, 0);
    ht_check_combine(run, 0);
    grab(run, 0, 5, *out, n);
    lib_begin();
    ht_poison(run);
    ht_enqueue(run, 1, 1);
    ht_enqueue(run, 0, 1);
    ep_team_sync(&run->team);
    lib_end();
    ht_check_dispatch(run, 1);
    ht_check_combine(run, 1);
    grab(run, 5, IDENTITY_PARTS, *out, n);
    lib_assert_none("identity run");
    assert_int_equal(*n, total);
    ht_close(run);
    free(run);
}

/* Names the first byte where b differs from a (the layout of grab: per part, every rank). */
static void compare_runs(uint32_t layout, ncclxDataType_t dtype, const uint8_t *a, const uint8_t *b,
                         size_t n, const char *shape)
{
    if (memcmp(a, b, n) == 0) {
        return;
    }
    size_t at = 0;
    while (a[at] == b[at]) {
        at++;
    }
    /* Walk the sections as grab laid them out: parts [0, 5) per rank, then [5, 8) per rank. */
    ht_run_t *run = hmalloc(sizeof(*run)); /* only for the sizes: not opened */
    ht_case_t c = shape_case(1, 8, layout, 256);
    c.topk = 8;
    c.dtype = dtype;
    fit_recv(&c);
    run->R = 8;
    run->S = c.recv != 0 ? c.recv : 8 * c.tokens;
    run->K = c.topk;
    run->c = c;
    run->row = (size_t)c.hidden * dtype_size(dtype);
    run->crow = run->row;
    size_t pos = 0;
    for (int half = 0; half < 2; half++) {
        for (uint32_t r = 0; r < 8; r++) {
            void *dev[IDENTITY_PARTS];
            size_t bytes[IDENTITY_PARTS];
            const char *names[IDENTITY_PARTS];
            identity_parts(run, r, dev, bytes, names);
            for (int i = half ? 5 : 0; i < (half ? IDENTITY_PARTS : 5); i++) {
                if (at < pos + bytes[i]) {
                    const size_t off = at - pos;
                    free(run);
                    fail_msg("%s %s: rank %u's %s differs from the unshaped team's at byte %zu "
                             "(0x%02x, unshaped 0x%02x)",
                             shape, layout_name(layout), r, names[i], off, b[at], a[at]);
                }
                pos += bytes[i];
            }
        }
    }
    free(run);
    fail_msg("%s: outputs differ at byte %zu", shape, at);
}

/* The same routing and data on an unshaped 8-rank team (the direct path on one GPU), on 2x4
 * and on 4x2: every output byte identical, both layouts (FP32 FLAT, where any other summation
 * order shows in the last bits, and BF16 EXPERT_MAJOR). */
static void test_bit_identity_across_shapes(void **state)
{
    (void)state;
    const uint32_t layouts[2] = {FLAT, EM};
    const ncclxDataType_t dtypes[2] = {NCCLX_FLOAT32, NCCLX_BFLOAT16};
    for (int i = 0; i < 2; i++) {
        uint8_t *unshaped = NULL, *two = NULL, *four = NULL;
        size_t n0 = 0, n2 = 0, n4 = 0;
        identity_run(layouts[i], dtypes[i], 0, &unshaped, &n0);
        identity_run(layouts[i], dtypes[i], 2, &two, &n2);
        identity_run(layouts[i], dtypes[i], 4, &four, &n4);
        assert_int_equal(n0, n2);
        assert_int_equal(n0, n4);
        compare_runs(layouts[i], dtypes[i], unshaped, two, n0, "2x4");
        compare_runs(layouts[i], dtypes[i], unshaped, four, n0, "4x2");
        printf("# %s %s: an unshaped team of 8, 2x4 and 4x2 give the same %zu output bytes\n",
               layout_name(layouts[i]), dtypes[i] == NCCLX_FLOAT32 ? "FP32" : "BF16", n0);
        fflush(stdout);
        free(unshaped);
        free(two);
        free(four);
    }
}

/* ---- d: graph replays ---- */

/* Update, dispatch and combine captured once per rank on 2x4, replayed 20 times with new
 * routing, tokens and expert outputs each time (the same token counts), each replay checked;
 * FLAT on handles of caller memory, EXPERT_MAJOR on the group's. */
static void test_graph_replay_2x4(void **state)
{
    (void)state;
    const int replays = 20;
    for (uint32_t layout = EM; layout <= FLAT; layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = shape_case(2, 4, layout, 256);
        cudaGraphExec_t exec[EP_MAX_RANKS];
        c.tokens = 96; /* 21 draws of every rank's data: kept small */
        fit_recv(&c);
        ep_rng_reset(layout == FLAT ? "graph flat" : "graph expert-major");
        ht_open(run, &c);
        check_shape(run);
        ht_fill(run, HT_RANDOM, 0, 0);
        if (layout == FLAT) {
            ht_init_caller_handles(run);
        }
        ht_route(run);
        ep_team_sync(&run->team);
        ht_capture(run, 1, exec);
        lib_allocs = 0;
        for (int i = 0; i < replays; i++) {
            ht_fill(run, i % 3 == 2 ? HT_REPEATS : HT_RANDOM, 0, 1);
            ht_wide_expert_out(run);
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
        lib_assert_none("graph replays on 2x4");
        printf("# 2x4 %s: %d graph replays exact\n", layout_name(layout), replays);
        fflush(stdout);
        for (uint32_t r = 0; r < run->R; r++) {
            assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
        }
        ht_close(run);
        free(run);
    }
}

/* ---- e: a rank of another node that never dispatches ---- */

/* Opens run's team with a GPU timeout of `ms` (NCCLX_TIMEOUT_MS, read at init, wins over the
 * plan's), then puts the variable back as it was. */
static void open_with_timeout(ht_run_t *run, const ht_case_t *c, const char *ms)
{
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", ms, 1), 0);
    ht_open(run, c);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* 2x4, a 300 ms group timeout: one exact forward iteration of every rank, then a dispatch of
 * ranks 0 .. 6 only (rank 7, on node 1, never calls it, while every rank sends to every other).
 * Every caller reports NCCLX_EP_ERROR_TIMEOUT, all within a few timeouts (not a hang), their
 * outputs untouched (no wrong result), and the group's next call fails with ncclxTimeout. */
static void test_offnode_rank_never_dispatches(void **state)
{
    (void)state;
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = shape_case(2, 4, FLAT, 256);
    const uint32_t absent = 7;
    ep_rng_reset("absent rank");
    open_with_timeout(run, &c, "300");
    check_shape(run);
    ht_fill(run, HT_RANDOM, 0, 0);
    for (uint32_t r = 0; r < run->R; r++) {
        run->r[r].n = c.tokens;
    }
    ht_fill(run, HT_RANDOM, 0, 1); /* full batches: every rank sends to every node */
    ht_route(run);
    ep_team_sync(&run->team);
    ht_forward_checked(run);
    ht_poison(run);
    ep_team_sync(&run->team);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint32_t r = 0; r < run->R; r++) {
        if (r != absent) {
            ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
            assert_ncclx_ok(ncclxEpDispatch(run->h[r], &a, run->team.stream[r]));
        }
    }
    ep_team_sync_only(&run->team);
    const double waited = seconds_since(&t0);
    for (uint32_t r = 0; r < run->R; r++) {
        uint32_t err = 0;
        assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
        if (r != absent && (err & NCCLX_EP_ERROR_TIMEOUT) == 0) {
            fail_msg("rank %u (node %u) reported 0x%x, not TIMEOUT, though rank %u never "
                     "dispatched",
                     r, r / 4, err, absent);
        }
    }
    if (waited > 5.0) {
        fail_msg("the dispatch of ranks 0 .. 6 took %.2f s to give up with a 300 ms timeout",
                 waited);
    }
    ht_check_untouched_dispatch(run); /* no rank copied anything out */
    ncclxEpDispatchArgs_t a = ht_dispatch_args(run, 0, 0);
    assert_ncclx_error(ncclxEpDispatch(run->h[0], &a, run->team.stream[0]), ncclxTimeout,
                       "timed out");
    printf("# 2x4: ranks 0 .. 6 reported TIMEOUT after %.3f s (timeout 0.3 s) without rank 7\n",
           waited);
    fflush(stdout);
    ht_close(run);
    free(run);
}

/* ---- f: the emulator's chaos mode ---- */

/* The emulator holding every unsignalled put back until a signal or a flush of its (context,
 * peer) and applying the held puts latest first, with a 20 us delay per signal, on 2x4: both
 * layouts stay exact (HT reads nothing that no signal guarded), and puts were held indeed. */
static void test_chaos_and_delay_2x4(void **state)
{
    (void)state;
    assert_int_equal(setenv("NCCLX_NET_EMU_CHAOS", "1", 1), 0);
    assert_int_equal(setenv("NCCLX_NET_EMU_DELAY_NS", "20000", 1), 0);
    ep_rng_reset("chaos");
    for (uint32_t layout = EM; layout <= FLAT; layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = shape_case(2, 4, layout, 512);
        unsigned long long held = 0;
        ht_open(run, &c);
        check_shape(run);
        for (uint32_t r = 0; r < run->R; r++) {
            assert_int_equal(run->team.ctx[r]->net.chaos, 1);
            assert_int_equal(run->team.ctx[r]->net.delay_ns, 20000);
        }
        lib_allocs = 0;
        for (int it = 0; it < 2; it++) {
            ht_fill(run, HT_RANDOM, 0, 0);
            ht_wide_expert_out(run);
            ht_iteration(run, 0);
        }
        lib_assert_none("chaos");
        for (uint32_t r = 0; r < run->R; r++) {
            ncclx_net_stats_t stats;
            assert_ncclx_ok(ncclx_net_read_stats(run->team.ctx[r], &stats));
            held += stats.held;
        }
        assert_true(held > 0); /* puts were held back indeed */
        printf("# 2x4 %s under chaos: exact, %llu puts held back\n", layout_name(layout), held);
        fflush(stdout);
        ht_close(run);
        free(run);
    }
    assert_int_equal(unsetenv("NCCLX_NET_EMU_CHAOS"), 0);
    assert_int_equal(unsetenv("NCCLX_NET_EMU_DELAY_NS"), 0);
}

/* ---- g: export and import ---- */

/* On 2x4, both layouts: a byte copy of every rank's routed handle (caller memory), imported on
 * every rank, dispatches and combines exactly as the original, forward and backward; rank 5 (of
 * node 1) keeping its imported handle of the older routing step while the others are rerouted
 * makes every rank, on both nodes, report a mismatch with its outputs untouched; the originals
 * are exact again after the clear. */
static void test_export_import_2x4(void **state)
{
    (void)state;
    ep_rng_reset("export import");
    for (uint32_t layout = EM; layout <= FLAT; layout <<= 2) {
        ht_run_t *run = hmalloc(sizeof(*run));
        ht_case_t c = shape_case(2, 4, layout, 256);
        const uint32_t old = 5;
        ht_open(run, &c);
        check_shape(run);
        ht_init_caller_handles(run);
        ht_fill(run, HT_RANDOM, 0, 0);
        ht_wide_expert_out(run);
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
        assert_cuda_ok(cudaDeviceSynchronize());
        for (uint32_t r = 0; r < run->R; r++) {
            ncclxEpHandleState_t st = NCCLX_EP_HANDLE_STATE_INIT;
            const ncclxTensor_t m = ep_tensor(snap[r], NCCLX_UINT8, 1, (int64_t)bytes, 0, 0);
            st.topk = run->K;
            st.topk_idx_dtype = c.idx_dtype;
            st.global_expert_ids = c.global_ids;
            st.num_tokens = run->r[r].n;
            assert_ncclx_ok(ncclxEpHandleImport(run->team.group[r], layout, &st, &m,
                                                run->team.stream[r], &run->h_other[r]));
        }
        run->have_other = 1;
        ht_swap_handles(run); /* the imported handles */
        ht_forward_checked(run);
        ht_poison(run);
        ht_enqueue(run, 1, 1);
        ht_enqueue(run, 0, 1);
        ep_team_sync(&run->team);
        ht_check_dispatch(run, 1);
        ht_check_combine(run, 1);
        /* A new routing of the originals (another step); rank `old` keeps its imported one. */
        ht_swap_handles(run);
        ht_fill(run, HT_RANDOM, 0, 1);
        ht_route(run);
        ep_team_sync(&run->team);
        ht_poison(run);
        for (uint32_t r = 0; r < run->R; r++) {
            ncclxEpDispatchArgs_t a = ht_dispatch_args(run, r, 0);
            assert_ncclx_ok(
                ncclxEpDispatch(r == old ? run->h_other[old] : run->h[r], &a, run->team.stream[r]));
        }
        ep_team_sync_only(&run->team);
        ht_check_untouched_dispatch(run);
        for (uint32_t r = 0; r < run->R; r++) {
            uint32_t err = 0;
            assert_ncclx_ok(ncclxEpGetAsyncError(run->team.group[r], &err));
            if (err != NCCLX_EP_ERROR_MISMATCH) {
                fail_msg("%s: rank %u reported 0x%x, want MISMATCH (rank %u dispatched a handle "
                         "of the older routing step)",
                         layout_name(layout), r, err, old);
            }
            assert_ncclx_ok(ncclxEpClearAsyncError(run->team.group[r], run->team.stream[r]));
        }
        ep_team_sync(&run->team);
        ht_forward_checked(run); /* the originals, in step again */
        printf("# 2x4 %s: imported handles exact, a stale step refused on both nodes\n",
               layout_name(layout));
        fflush(stdout);
        ht_close(run);
        for (uint32_t r = 0; r < run->R; r++) {
            assert_cuda_ok(cudaFree(snap[r]));
        }
        free(run);
    }
}

/* ---- plans refused across domains ---- */

/* Opens (and finalizes at once) a loopback team of `ranks` in `nodes` nodes with an HT group
 * (BF16, both layouts, NONE | QUANT_FWD, and MXFP8 when asked); returns what init said. */
static ncclxResult_t try_plan(uint32_t ranks, uint32_t nodes, int mxfp8)
{
    ep_team_t *t = hmalloc(sizeof(*t));
    ncclxLoopbackConfig_t config = NCCLX_LOOPBACK_CONFIG_INIT;
    ep_team_plan(t, 4 * ranks, 4, 256, 64);
    t->group_plan.algorithm = NCCLX_EP_ALGO_HT;
    t->group_plan.layouts = FLAT | EM;
    t->group_plan.recipes =
        NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD | (mxfp8 ? NCCLX_EP_RECIPE_MXFP8 : 0u);
    t->group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    t->group_plan.max_token_bytes = 256 * 4;
    t->group_plan.max_scale_bytes = 16;
    t->group_plan.timeout_ns = 5000000000ull;
    config.num_ranks = ranks;
    config.num_nodes = nodes;
    const ncclxResult_t res = ncclxLoopbackInitConfig(&t->plan, &config, t->ctx);
    for (uint32_t r = 0; res == ncclxSuccess && r < ranks; r++) {
        assert_ncclx_ok(ncclxFinalize(t->ctx[r]));
    }
    free(t);
    return res;
}

/* Fails unless res is ncclxUnsupported with a last error naming one of the two words. */
static void assert_refused(ncclxResult_t res, const char *word, const char *other, const char *what)
{
    const char *msg = ncclxGetLastError();
    if (res != ncclxUnsupported ||
        (strstr(msg, word) == NULL && (other == NULL || strstr(msg, other) == NULL))) {
        fail_msg("%s: init returned %d (%s), last error '%s'; expected ncclxUnsupported naming "
                 "'%s'%s%s",
                 what, (int)res, ncclxGetErrorString(res), msg, word, other ? " or " : "",
                 other ? other : "");
    }
}

/* The MXFP8 combine is refused on a team of several load/store domains (2x2) while the same
 * plan opens on one (1x4); an HT group on load/store domains of 3 ranks (2x3: not a power of
 * two) is refused, while the plan without MXFP8 opens on 2x2. */
static void test_refused_across_domains(void **state)
{
    (void)state;
    assert_refused(try_plan(4, 2, 1), "recipes", "MXFP8", "MXFP8 on 2x2");
    assert_ncclx_ok(try_plan(4, 1, 1));
    assert_ncclx_ok(try_plan(4, 2, 0));
    assert_refused(try_plan(6, 2, 0), "lsa_size", "power of two", "HT on 2x3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_across_domains),
        cmocka_unit_test(test_shape_2x2),
        cmocka_unit_test(test_shape_2x4),
        cmocka_unit_test(test_shape_4x2),
        cmocka_unit_test(test_shape_8x1),
        cmocka_unit_test(test_bit_identity_across_shapes),
        cmocka_unit_test(test_graph_replay_2x4),
        cmocka_unit_test(test_export_import_2x4),
        cmocka_unit_test(test_offnode_rank_never_dispatches),
        cmocka_unit_test(test_chaos_and_delay_2x4),
    };
    /* Every team here has its shape set (c.nodes), or is unshaped on purpose (the identity
     * test's reference team): TEST_NODES, which shapes unset teams, must not touch them. */
    unsetenv("TEST_NODES");
    ep_seed_init("test_ep_ht_nodes");
    return ncclx_run_tests("gpu_ep_ht_nodes", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
