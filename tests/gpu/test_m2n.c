/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N resharding on loopback teams of one GPU, byte for byte: every source tile is filled from
 * a function of the global byte index, every destination tile poisoned (with canaries on both
 * sides of every tile), and after the reshard every destination byte must be the function of
 * its global index, every canary and source byte untouched, and ranks outside both meshes
 * untouched too.  The expected bytes are computed here from the mesh rules of
 * include/ncclx/m2n.h alone (not from the library's planner).  Each case runs three times back
 * to back with new data and no host synchronization in between.  Covered: dims 1-3, 1/2/4/8-byte
 * elements, (M, N) from (1, 1) to (4, 16), same-dim and cross-dim, replicate <-> shard, 2-axis
 * meshes both ways, destination mesh first, ranks outside both meshes, uneven replica counts,
 * staging far smaller than a tensor (hundreds of rounds), model-shaped patterns, a group of 100
 * tensors, graph capture replayed 50 times with new data, the PyTorch graph pattern, and no
 * allocation (the machinery: tests/gpu/m2n_harness.h; refusals, failed launches, the clear,
 * vote collisions and a late destination: tests/gpu/test_m2n_faults.c).
 * TEST_SEED=n replays a run; TEST_FILTER picks tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "alloc_counter.h"
#include "m2n_harness.h"

/* ---- the tests ---- */

static void test_matrix(void **state)
{
    (void)state;
    rng_reset("matrix");
    const uint64_t g1[3] = {8192, 1, 1}, g2[3] = {200, 200, 1}, g2b[3] = {240, 240, 1};
    const uint64_t g2c[3] = {360, 840, 1}, g3[3] = {64, 128, 128}, g3b[3] = {128, 64, 64};
    const uint64_t g2d[3] = {128, 512, 1}, g1t[3] = {4, 1, 1};
    tensor_t x;
    /* (1, 1): a plain copy, 1-D bytes. */
    x = tensor(side1(1, g1, 1, 1, 0, -1), side1(1, g1, 1, 1, 1, -1));
    run_tensors(2, STAGING, &x, 1, "(1,1) 1-D u8 R -> R");
    /* (2, 2): cross-dim, bf16. */
    x = tensor(side1(2, g2, 2, 2, 0, 0), side1(2, g2, 2, 2, 2, 1));
    run_tensors(4, STAGING, &x, 1, "(2,2) 2-D bf16 S0 -> S1");
    /* (2, 4): same dim onto a 2 x 2 mesh (shards outer, replicas inner), f32. */
    x = tensor(side1(2, g2b, 4, 2, 0, 0), side2(2, g2b, 4, 2, 2, 2, 0, -1));
    run_tensors(6, STAGING, &x, 1, "(2,4) 2-D f32 S0 -> [S0 x R]");
    /* (4, 2): 3-D, innermost dim to outermost. */
    x = tensor(side1(3, g3, 2, 4, 0, 2), side1(3, g3, 2, 2, 4, 0));
    run_tensors(6, STAGING, &x, 1, "(4,2) 3-D bf16 S2 -> S0");
    /* (3, 5): odd counts, f64, cross-dim. */
    x = tensor(side1(2, g2c, 8, 3, 0, 0), side1(2, g2c, 8, 5, 3, 1));
    run_tensors(8, STAGING, &x, 1, "(3,5) 2-D f64 S0 -> S1");
    /* (4, 16): [R x S1] (replicas outer, TP inner) to 16 replicas: the refit pattern. */
    x = tensor(side2(2, g2d, 2, 2, 2, 0, -1, 1), side1(2, g2d, 2, 16, 4, -1));
    run_tensors(20, STAGING, &x, 1, "(4,16) 2-D bf16 [R x S1] -> R[16]");
    /* Destination mesh first, a rank outside both meshes at the end. */
    x = tensor(side1(3, g3b, 4, 2, 2, 1), side2(3, g3b, 4, 2, 1, 0, 0, -1));
    run_tensors(6, STAGING, &x, 1, "dst first, ranks 4 and 5 outside: 3-D f32 S1 -> S0");
    /* A rank outside both meshes in the middle; 1-byte tiny tensor, 1 -> 3 replicas. */
    x = tensor(side1(1, g1t, 1, 1, 0, -1), side1(1, g1t, 1, 3, 2, -1));
    run_tensors(5, STAGING, &x, 1, "4-byte tensor R[1] -> R[3], rank 1 outside");
    /* Uneven replicas: 3 source replicas to 2 (one idles), and 2 to 5. */
    x = tensor(side2(2, g2, 2, 3, 2, 0, -1, 0), side2(2, g2, 2, 2, 2, 6, -1, 1));
    run_tensors(10, STAGING, &x, 1, "[R3 x S0] -> [R2 x S1]");
    x = tensor(side2(3, g3b, 1, 2, 2, 0, -1, 2), side2(3, g3b, 1, 5, 1, 4, -1, 1));
    run_tensors(9, STAGING, &x, 1, "[R2 x S2] -> [R5 x S1], 3-D u8");
    /* Every dtype size and ndims over one mesh pair, random shard dims. */
    for (uint32_t elem = 1; elem <= 8; elem *= 2) {
        for (uint32_t nd = 1; nd <= 3; nd++) {
            const uint64_t g[3] = {48, nd > 1 ? 40 : 1, nd > 2 ? 24 : 1};
            const int32_t sd = (int32_t)(rnd() % nd), dd = (int32_t)(rnd() % nd);
            char name[96];
            x = tensor(side1(nd, g, elem, 4, 0, sd), side2(nd, g, elem, 2, 4, 4, -1, dd));
            snprintf(name, sizeof(name), "%u-D, %u-byte elements, S%d -> [R2 x S%d]", nd, elem, sd,
                     dd);
            run_tensors(12, STAGING, &x, 1, name);
        }
    }
}

/* Staging of 16 KiB per rank: one channel of 4 KiB rounds, so a 1.2 MiB tile takes hundreds of
 * them.  Then channels (kernels/m2n/m2n_ring.h) that each go round their ring twice: 1 MiB per
 * source is 8 channels of 32 KiB slices, on 4 ranks a block per channel; 512 KiB is 4
 * channels, on 24 ranks (11 blocks each, 8 pairs) one block works all 4 in turn. */
static void test_rounds(void **state)
{
    (void)state;
    rng_reset("rounds");
    const uint64_t g[3] = {512, 640, 1}, g3[3] = {510, 640, 1}; /* 510 rows: cut in 3 */
    tensor_t x = tensor(side1(2, g, 4, 2, 0, 0), side1(2, g, 4, 2, 2, 1));
    run_tensors(4, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1, "16 KiB staging per rank, S0 -> S1");
    x = tensor(side1(2, g3, 2, 1, 0, -1), side1(2, g3, 2, 3, 1, 0));
    run_tensors(4, NCCLX_M2N_MIN_STAGING_PER_RANK, &x, 1, "16 KiB staging per rank, R -> S0");
    const uint64_t big[3] = {2048, 1024, 1}, wide[3] = {4096, 4096, 1};
    x = tensor(side1(2, big, 4, 2, 0, 0), side1(2, big, 4, 2, 2, 1));
    run_tensors(4, 1u << 20, &x, 1, "8 channels x 8 rounds per pair, S0 -> S1");
    x = tensor(side1(2, wide, 4, 8, 0, 0), side1(2, wide, 4, 8, 8, 1));
    run_tensors(24, 512u << 10, &x, 1, "4 channels x 8 rounds, 1 block per pair, S0 -> S1");
}

/* Model shapes scaled to one GPU, same meshes and placements (docs/m2n.md). */
static void test_models(void **state)
{
    (void)state;
    rng_reset("models");
    /* qwen3-32b TP2 x DP2 -> 16 replicas: q [8192, 5120] scaled by 8 (column parallel S0),
     * o (row parallel S1), a norm (replicated). */
    const uint64_t q[3] = {1024, 640, 1}, o[3] = {640, 1024, 1}, nrm[3] = {640, 1, 1};
    tensor_t x[3];
    x[0] = tensor(side2(2, q, 2, 2, 2, 0, -1, 0), side1(2, q, 2, 16, 4, -1));
    x[1] = tensor(side2(2, o, 2, 2, 2, 0, -1, 1), side1(2, o, 2, 16, 4, -1));
    x[2] = tensor(side2(1, nrm, 2, 2, 2, 0, -1, -1), side1(1, nrm, 2, 16, 4, -1));
    run_tensors(20, STAGING, x, 3, "qwen3-32b layer TP2xDP2 -> TP1xDP16 (group)");
    /* DeepSeek-V3 experts EP16 -> TP8 x DP2, scaled to E = 32, [32, 256, 896] fp8 (1 byte):
     * S0 on 8 ranks -> [R2 x S1] and [R2 x S2]: every pair overlaps (all to all). */
    const uint64_t ex[3] = {32, 256, 896};
    x[0] = tensor(side1(3, ex, 1, 8, 0, 0), side2(3, ex, 1, 2, 8, 8, -1, 1));
    x[1] = tensor(side1(3, ex, 1, 8, 0, 0), side2(3, ex, 1, 2, 8, 8, -1, 2));
    run_tensors(24, STAGING, x, 2, "DeepSeek-V3 experts EP8 -> TP8 x DP2 (group)");
    /* Qwen-235B shared experts, scaled: [S0 over 4 x R2] -> [R2 x S0 over 8], same dim, shard
     * and replica counts both change. */
    const uint64_t sh[3] = {1024, 768, 1};
    x[0] = tensor(side2(2, sh, 2, 4, 2, 0, 0, -1), side2(2, sh, 2, 2, 8, 8, -1, 0));
    run_tensors(24, STAGING, x, 1, "Qwen-235B shared experts [S0(4) x R2] -> [R2 x S0(8)]");
}

/* 100 tensors of several shapes and meshes in one group (several launches). */
static void test_group_of_100(void **state)
{
    (void)state;
    rng_reset("group100");
    static tensor_t x[MAX_TENSORS];
    for (uint32_t e = 0; e < MAX_TENSORS; e++) {
        const uint32_t elem = 1u << (rnd() % 4);
        const uint64_t g[3] = {8 * (1 + rnd() % 8), 4 * (1 + rnd() % 8), 1};
        switch (e % 4) {
        case 0:
            x[e] = tensor(side1(2, g, elem, 4, 0, 0), side1(2, g, elem, 4, 4, 1));
            break;
        case 1:
            x[e] = tensor(side1(2, g, elem, 2, 0, 1), side2(2, g, elem, 2, 2, 4, 0, -1));
            break;
        case 2:
            x[e] = tensor(side1(1, g, elem, 4, 0, -1), side1(1, g, elem, 4, 4, 0));
            break;
        default: /* the other way round: ranks 4.. are sources, 0.. destinations */
            x[e] = tensor(side1(2, g, elem, 4, 4, 0), side1(2, g, elem, 2, 0, 1));
            break;
        }
    }
    run_tensors(8, STAGING, x, MAX_TENSORS, "group of 100 tensors, both directions");
}

/* One call and a group of two captured per rank, replayed 50 times with new data. */
static void test_graph_replay(void **state)
{
    (void)state;
    rng_reset("graph");
    const uint64_t g[3] = {96, 160, 1};
    tensor_t x[2];
    x[0] = tensor(side1(2, g, 2, 4, 0, 0), side1(2, g, 2, 4, 4, 1));
    x[1] = tensor(side2(2, g, 4, 2, 2, 0, -1, 1), side1(2, g, 4, 4, 4, -1));
    team_t t;
    tiles_t tl[2];
    cudaGraph_t graph[MAX_RANKS];
    cudaGraphExec_t exec[MAX_RANKS];
    team_open(&t, 8, STAGING);
    tiles_alloc(&t, &x[0], &tl[0]);
    tiles_alloc(&t, &x[1], &tl[1]);
    ncclx_test_alloc_arm();
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamBeginCapture(t.stream[r], cudaStreamCaptureModeThreadLocal),
                         cudaSuccess);
    }
    /* A single call of tensor 0, then a group of both. */
    reshard_all(&t, &x[0], &tl[0], 1);
    reshard_all(&t, x, tl, 2);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaStreamEndCapture(t.stream[r], &graph[r]), cudaSuccess);
    }
    assert_int_equal(ncclx_test_alloc_disarm(), 0);
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaGraphInstantiate(&exec[r], graph[r], 0), cudaSuccess);
    }
    for (int replay = 0; replay < 50; replay++) {
        uint8_t *keep[4 * MAX_RANKS];
        int kept = 0;
        const uint64_t salt = rnd();
        upload(&t, &tl[0], salt, keep, &kept);
        upload(&t, &tl[1], salt + 1, keep, &kept);
        for (uint32_t r = 0; r < t.ranks; r++) {
            assert_int_equal(cudaGraphLaunch(exec[r], t.stream[r]), cudaSuccess);
        }
        team_sync(&t);
        check(&t, &tl[0], salt, 1, "graph replay, tensor 0");
        check(&t, &tl[1], salt + 1, 1, "graph replay, tensor 1");
        for (int i = 0; i < kept; i++) {
            free(keep[i]);
        }
    }
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_int_equal(cudaGraphExecDestroy(exec[r]), cudaSuccess);
        assert_int_equal(cudaGraphDestroy(graph[r]), cudaSuccess);
    }
    team_close(&t);
    tiles_free(&tl[0]);
    tiles_free(&tl[1]);
    printf("# graph replay: 50 replays of a call and a group on 8 ranks, exact\n");
}

/* One eager reshard of x (then a group of it and itself) on the team's current streams, on new
 * data, checked byte for byte; also an M2N async error clear on each stream. */
static void stream_pattern_eager(team_t *t, const tensor_t *x, const tiles_t *tl, const char *where)
{
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    const uint64_t salt = rnd();
    upload(t, tl, salt, keep, &kept);
    reshard_all(t, x, tl, 1);
    team_sync(t);
    check(t, tl, salt, 1, where);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

static void stream_pattern_replay(team_t *t, const tiles_t *tl, cudaGraphExec_t *exec,
                                  const char *where)
{
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    const uint64_t salt = rnd();
    upload(t, tl, salt, keep, &kept);
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_int_equal(cudaGraphLaunch(exec[r], t->stream[r]), cudaSuccess);
    }
    team_sync(t);
    check(t, tl, salt, 1, where);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* The PyTorch graph pattern (tests/gpu/test_ep_streams.c runs it for EP): eager on stream A, a
 * warm-up and a capture on a side stream C, eager on A again and on a third stream B, replays
 * on A and on B, eager once more; every byte checked each time. */
static void test_stream_pattern(void **state)
{
    (void)state;
    rng_reset("stream_pattern");
    const uint64_t g[3] = {64, 96, 1};
    tensor_t x = tensor(side1(2, g, 2, 2, 0, 0), side1(2, g, 2, 2, 2, 1));
    team_t t;
    tiles_t tl;
    cudaStream_t a[MAX_RANKS], b[MAX_RANKS], c[MAX_RANKS];
    cudaGraphExec_t exec[MAX_RANKS];
    team_open(&t, 4, STAGING);
    tiles_alloc(&t, &x, &tl);
    for (uint32_t r = 0; r < t.ranks; r++) {
        a[r] = t.stream[r];
        assert_int_equal(cudaStreamCreateWithFlags(&b[r], cudaStreamNonBlocking), cudaSuccess);
        assert_int_equal(cudaStreamCreateWithFlags(&c[r], cudaStreamNonBlocking), cudaSuccess);
    }
    stream_pattern_eager(&t, &x, &tl, "eager on stream A");
    memcpy(t.stream, c, sizeof(c));
    stream_pattern_eager(&t, &x, &tl, "eager warm-up on side stream C");
    for (uint32_t r = 0; r < t.ranks; r++) {
        cudaGraph_t graph = NULL;
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        assert_int_equal(cudaStreamBeginCapture(c[r], cudaStreamCaptureModeThreadLocal),
                         cudaSuccess);
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)c[r]));
        assert_int_equal(cudaStreamEndCapture(c[r], &graph), cudaSuccess);
        assert_int_equal(cudaGraphInstantiate(&exec[r], graph, 0), cudaSuccess);
        assert_int_equal(cudaGraphDestroy(graph), cudaSuccess);
    }
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_eager(&t, &x, &tl, "eager on stream A after the capture");
    memcpy(t.stream, b, sizeof(b));
    stream_pattern_eager(&t, &x, &tl, "eager on a third stream B");
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_replay(&t, &tl, exec, "graph replay on stream A");
    memcpy(t.stream, b, sizeof(b));
    stream_pattern_replay(&t, &tl, exec, "graph replay on stream B");
    memcpy(t.stream, a, sizeof(a));
    stream_pattern_eager(&t, &x, &tl, "eager on stream A after the replays");
    for (uint32_t r = 0; r < t.ranks; r++) {
        uint32_t err = 1;
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
        assert_int_equal(cudaGraphExecDestroy(exec[r]), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(b[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(b[r]), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(c[r]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(c[r]), cudaSuccess);
    }
    team_close(&t);
    tiles_free(&tl);
    printf("# stream pattern: eager A, capture C, eager A and B, replays A and B, exact\n");
}

/* A context planned without M2N refuses every M2N call. */
static void test_not_planned(void **state)
{
    (void)state;
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxContext_t ctx[2];
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    assert_ncclx_ok(ncclxLoopbackInit(&plan, 2, 0, ctx));
    assert_ncclx_error(ncclxM2nReshard(ctx[0], &t, &t, NULL), ncclxInvalidUsage,
                       "m2n_staging_bytes");
    assert_ncclx_error(ncclxM2nGroupStart(ctx[0]), ncclxInvalidUsage, "m2n_staging_bytes");
    assert_ncclx_ok(ncclxFinalize(ctx[0]));
    assert_ncclx_ok(ncclxFinalize(ctx[1]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_planned),    cmocka_unit_test(test_matrix),
        cmocka_unit_test(test_rounds),         cmocka_unit_test(test_models),
        cmocka_unit_test(test_group_of_100),   cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_stream_pattern),
    };
    return ncclx_run_tests("gpu_m2n", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
