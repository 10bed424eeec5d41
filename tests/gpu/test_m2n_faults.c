/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N under faults, on loopback teams of one GPU (the machinery: tests/gpu/m2n_harness.h):
 * refusals (a descriptor error on every rank, a tile error on one), a launch that fails on one
 * rank, the stream-ordered and capturable clear, vote words that collide over different
 * descriptors (the exact plan check), and a destination held past its source's timeout while
 * the source's caller reuses its tile.  TEST_SEED=n replays a run; TEST_FILTER picks tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "alloc_counter.h"
#include "m2n_harness.h"
#include "m2n.h" /* kernels/: the launch, to fail one on demand */

/* ---- launch failures on demand (the launcher is replaced at link time) ---- */

static int fail_launch_of_rank = -1; /* the next launch of this rank fails */
/* Nonzero: every launch votes with this word (and its own refusal bit), as if every call's
 * hash collided with every other's. */
static unsigned force_vote_word;

cudaError_t __real_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);
cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);

cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream)
{
    if (l->rank == fail_launch_of_rank) {
        fail_launch_of_rank = -1;
        return cudaErrorLaunchOutOfResources; /* as a launch that could not start would */
    }
    if (force_vote_word != 0) {
        static ncclx_m2n_launch_t forced; /* passed by value at the launch: reused at once */
        forced = *l;
        forced.word =
            (l->word & NCCLX_M2N_VOTE_REFUSE) | (force_vote_word & ~NCCLX_M2N_VOTE_REFUSE);
        return __real_ncclx_m2n_launch(&forced, stream);
    }
    return __real_ncclx_m2n_launch(l, stream);
}

/* Refusals: a descriptor error on every rank moves nothing; a tile error on one rank makes
 * that rank fail and every other rank skip the call (REFUSED), and nothing moves; after a
 * clear the next call is exact. */
static void test_refusals(void **state)
{
    (void)state;
    rng_reset("refusals");
    const uint64_t g[3] = {64, 96, 1};
    tensor_t x = tensor(side1(2, g, 2, 2, 0, 0), side1(2, g, 2, 2, 2, 1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err;
    team_open(&t, 5, STAGING);
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 7, keep, &kept);
    team_sync(&t);
    for (uint32_t r = 0; r < t.ranks; r++) {
        ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        ncclxM2nTensor_t bad;
        /* Global shapes that differ. */
        bad = dst;
        bad.local_shape[0] += 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "both sides must describe one tensor");
        /* Overlapping meshes. */
        bad = dst;
        bad.mesh.start_rank = 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "overlap");
        /* Two shard axes. */
        bad = dst;
        bad.mesh.ndims = 2;
        bad.mesh.dims[0] = 1;
        bad.mesh.dims[1] = 2;
        bad.placements[0] = 0;
        bad.placements[1] = 1;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "second shard axis");
        /* Not a data type; a dtype that differs from the other side's. */
        bad = src;
        bad.dtype = (ncclxDataType_t)(NCCLX_FLOAT16 + 100);
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "src.dtype");
        bad = src;
        bad.dtype = NCCLX_INT8;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "converts nothing");
        bad = src;
        bad.ndims = 4;
        assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &bad, &dst, (ncclxStream_t)t.stream[r]),
                           ncclxInvalidArgument, "src.ndims");
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after descriptor errors (nothing may move)");
    /* A tile error on rank 2 (a destination member with NULL data): rank 2 fails at once,
     * the others enqueue, every rank skips. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst =
            descriptor(&x.dst, x.dtype, r == 2 ? NULL : tile_ptr(&tl, 1, r));
        if (r == 2) {
            assert_ncclx_error(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]),
                               ncclxInvalidArgument, "dst.data is NULL");
        } else {
            assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        }
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after a tile error on rank 2 (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, r == 2 ? 0u : NCCLX_M2N_ERROR_REFUSED);
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
        assert_int_equal(cudaStreamSynchronize(t.stream[r]), cudaSuccess);
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, 0);
    }
    /* Data on a non-member (rank 4 is in neither mesh). */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src =
            descriptor(&x.src, x.dtype, r == 4 ? tile_ptr(&tl, 0, 0) : tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        const ncclxResult_t res = ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]);
        assert_int_equal(res, r == 4 ? ncclxInvalidArgument : ncclxSuccess);
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after data on a non-member (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
    }
    /* Groups: End without Start, an entry error names its entry, Abort drops everything. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        ncclxM2nTensor_t bad = dst;
        bad.local_shape[1] = 7;
        assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidUsage, "without");
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &bad, (ncclxStream_t)t.stream[r]));
        assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidArgument, "entry 1 of 2");
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nGroupAbort(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nGroupEnd(t.ctx[r])); /* empty */
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after group errors and an abort (nothing may move)");
    /* A group whose entry 1 is on another stream on rank 1 only: rank 1 fails, every rank
     * skips the group. */
    for (uint32_t r = 0; r < t.ranks; r++) {
        const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        const ncclxM2nTensor_t dst = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
        const cudaStream_t second = r == 1 ? t.stream[0] : t.stream[r];
        assert_ncclx_ok(ncclxM2nGroupStart(t.ctx[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)t.stream[r]));
        assert_ncclx_ok(ncclxM2nReshard(t.ctx[r], &src, &dst, (ncclxStream_t)second));
        if (r == 1) {
            assert_ncclx_error(ncclxM2nGroupEnd(t.ctx[r]), ncclxInvalidArgument,
                               "one group runs on one stream");
        } else {
            assert_ncclx_ok(ncclxM2nGroupEnd(t.ctx[r]));
        }
    }
    team_sync(&t);
    check(&t, &tl, 7, 0, "after a group on two streams on rank 1 (nothing may move)");
    for (uint32_t r = 0; r < t.ranks; r++) {
        assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[r], &err));
        assert_int_equal(err, r == 1 ? 0u : NCCLX_M2N_ERROR_REFUSED);
        assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[r], (ncclxStream_t)t.stream[r]));
    }
    /* And a good call now moves everything. */
    upload(&t, &tl, 8, keep, &kept);
    reshard_all(&t, &x, &tl, 1);
    team_sync(&t);
    check(&t, &tl, 8, 1, "a call after the refusals");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* Rank 0's launch fails (its peer's goes out): rank 0's call returns the CUDA error and every
 * later M2N call of rank 0 is refused as out of step; rank 1 waits for rank 0's vote until the
 * timeout (300 ms here), reports TIMEOUT, moves nothing, and refuses every later call with
 * ncclxTimeout.  A rank must never go on as if the call had happened. */
static void test_launch_failure(void **state)
{
    (void)state;
    rng_reset("launch failure");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err = 0;
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", "300", 1), 0);
    team_open(&t, 2, STAGING);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 5, keep, &kept);
    team_sync(&t);
    ncclxM2nTensor_t src[2], dst[2];
    for (uint32_t r = 0; r < 2; r++) {
        src[r] = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, r));
        dst[r] = descriptor(&x.dst, x.dtype, tile_ptr(&tl, 1, r));
    }
    fail_launch_of_rank = 0;
    assert_ncclx_error(ncclxM2nReshard(t.ctx[0], &src[0], &dst[0], (ncclxStream_t)t.stream[0]),
                       ncclxCudaError, "cudaErrorLaunchOutOfResources");
    assert_int_equal(fail_launch_of_rank, -1); /* the wrapper did fail it */
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[1], &src[1], &dst[1], (ncclxStream_t)t.stream[1]));
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err));
    assert_int_equal(err & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    check(&t, &tl, 5, 0, "after a failed launch (nothing may move)");
    assert_ncclx_error(ncclxM2nReshard(t.ctx[0], &src[0], &dst[0], (ncclxStream_t)t.stream[0]),
                       ncclxInvalidUsage, "out of step");
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src[1], &dst[1], (ncclxStream_t)t.stream[1]),
                       ncclxTimeout, "timed out");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* ---- a team with a short timeout, and a host gate in a stream ---- */

static void team_open_timeout(team_t *t, uint32_t ranks, const char *ms)
{
    const char *saved = getenv("NCCLX_TIMEOUT_MS");
    char *restore = saved != NULL ? strdup(saved) : NULL;
    assert_int_equal(setenv("NCCLX_TIMEOUT_MS", ms, 1), 0);
    team_open(t, ranks, STAGING);
    if (restore != NULL) {
        assert_int_equal(setenv("NCCLX_TIMEOUT_MS", restore, 1), 0);
        free(restore);
    } else {
        assert_int_equal(unsetenv("NCCLX_TIMEOUT_MS"), 0);
    }
}

/* A stream held behind a host function until the test opens the gate, or 60 s pass (a test
 * that failed before opening it must not hang the program). */
static int gate;

static void CUDART_CB wait_for_gate(void *arg)
{
    (void)arg;
    const struct timespec pause = {0, 1000000};
    for (int ms = 0; ms < 60000 && !__atomic_load_n(&gate, __ATOMIC_ACQUIRE); ms++) {
        nanosleep(&pause, NULL);
    }
}

static void gate_stream(cudaStream_t stream)
{
    __atomic_store_n(&gate, 0, __ATOMIC_RELEASE);
    assert_int_equal(cudaLaunchHostFunc(stream, wait_for_gate, NULL), cudaSuccess);
}

static void gate_open(void)
{
    __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
}

/* Whether a team of `ranks` reads peers' tiles: not with NCCLX_M2N_PATH=STAGED, nor on a team
 * shaped as emulated nodes (no rank reaches a peer's caller memory there). */
static int direct_path(uint32_t ranks)
{
    const char *path = getenv("NCCLX_M2N_PATH");
    return (path == NULL || strcasecmp(path, "STAGED") != 0) && test_nodes(ranks) == 0;
}

/* ncclxM2nClearAsyncError(ctx, stream) runs in stream order and is capturable: behind a gated
 * stream it returns at once and the bit stays until the stream runs it; an M2N call that rank
 * 0 enqueues on another stream after the clear runs after it (its REFUSED survives); a clear
 * captured in a graph clears nothing until the graph runs; a call after the clears is exact. */
static void test_clear_stream_ordered(void **state)
{
    (void)state;
    rng_reset("clear stream ordered");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err = 0;
    cudaStream_t other;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    team_open(&t, 2, STAGING);
    assert_int_equal(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 3, keep, &kept);
    team_sync(&t);
    /* Rank 1 refuses (dst.data NULL on a member): rank 0 finds REFUSED. */
    const ncclxM2nTensor_t src = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, 0));
    const ncclxM2nTensor_t dst0 = descriptor(&x.dst, x.dtype, NULL);
    const ncclxM2nTensor_t src1 = descriptor(&x.src, x.dtype, NULL);
    const ncclxM2nTensor_t bad1 = descriptor(&x.dst, x.dtype, NULL);
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src, &dst0, (ncclxStream_t)t.stream[0]));
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src1, &bad1, (ncclxStream_t)t.stream[1]),
                       ncclxInvalidArgument, "dst.data is NULL");
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* The clear behind a gate: it returns without waiting, and the bit is still there. */
    gate_stream(t.stream[0]);
    assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[0], (ncclxStream_t)t.stream[0]));
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* A refused call of rank 0 on another stream: ordered after the clear, so its REFUSED is
     * reported after the clear ran and stays. */
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src, &dst0, (ncclxStream_t)other));
    assert_ncclx_error(ncclxM2nReshard(t.ctx[1], &src1, &bad1, (ncclxStream_t)t.stream[1]),
                       ncclxInvalidArgument, "dst.data is NULL");
    gate_open();
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(other), cudaSuccess);
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    /* Captured: nothing is cleared until the graph runs. */
    assert_int_equal(cudaStreamBeginCapture(t.stream[0], cudaStreamCaptureModeThreadLocal),
                     cudaSuccess);
    assert_ncclx_ok(ncclxM2nClearAsyncError(t.ctx[0], (ncclxStream_t)t.stream[0]));
    assert_int_equal(cudaStreamEndCapture(t.stream[0], &graph), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, NCCLX_M2N_ERROR_REFUSED);
    assert_int_equal(cudaGraphLaunch(exec, t.stream[0]), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, 0);
    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(graph), cudaSuccess);
    /* Nothing moved so far; a good call now moves everything. */
    check(&t, &tl, 3, 0, "after two refused calls and the clears (nothing may move)");
    reshard_all(&t, &x, &tl, 1);
    team_sync(&t);
    check(&t, &tl, 3, 1, "a call after the clears");
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err));
    assert_int_equal(err, 0);
    assert_int_equal(cudaStreamDestroy(other), cudaSuccess);
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* Two ranks whose vote words agree (forced here, as a hash collision would) but whose
 * descriptors differ: rank 0 sends a tensor of 8192 bytes, rank 1 expects one of 4096 (each
 * rank's tiles as its own descriptors say).  On the direct path rank 1 compares rank 0's
 * published plan with its own before it reads: it must copy nothing and report MISMATCH (and
 * TIMEOUT: M2N stops), and rank 0, whose destination never frees its tile, reports TIMEOUT.
 * Neither may return with the other's bytes silently copied. */
static void test_vote_collision(void **state)
{
    (void)state;
    if (!direct_path(2)) {
        printf("# test_vote_collision: the staged path reads no peer tile; skipped\n");
        return;
    }
    rng_reset("vote collision");
    const uint64_t big[3] = {8192, 1, 1}, small[3] = {4096, 1, 1};
    tensor_t x = tensor(side1(1, big, 1, 1, 0, -1), side1(1, big, 1, 1, 1, -1));
    const tensor_t y = tensor(side1(1, small, 1, 1, 0, -1), side1(1, small, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err0 = 0, err1 = 0;
    team_open_timeout(&t, 2, "300");
    tiles_alloc(&t, &x, &tl); /* rank 1's tile is 8192 bytes: it uses the first 4096 */
    upload(&t, &tl, 9, keep, &kept);
    team_sync(&t);
    const ncclxM2nTensor_t src0 = descriptor(&x.src, x.dtype, tile_ptr(&tl, 0, 0));
    const ncclxM2nTensor_t dst0 = descriptor(&x.dst, x.dtype, NULL);
    const ncclxM2nTensor_t src1 = descriptor(&y.src, y.dtype, NULL);
    const ncclxM2nTensor_t dst1 = descriptor(&y.dst, y.dtype, tile_ptr(&tl, 1, 1));
    force_vote_word = 0x2a5a2a5au;
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[0], &src0, &dst0, (ncclxStream_t)t.stream[0]));
    assert_ncclx_ok(ncclxM2nReshard(t.ctx[1], &src1, &dst1, (ncclxStream_t)t.stream[1]));
    force_vote_word = 0;
    team_sync(&t);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err0));
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err1));
    if ((err1 & NCCLX_M2N_ERROR_MISMATCH) == 0) {
        fail_msg("rank 1 read a peer tile described differently and reported 0x%x, not "
                 "MISMATCH",
                 err1);
    }
    assert_int_equal(err0 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    check(&t, &tl, 9, 0, "after a vote collision (nothing may move)");
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

/* A destination past its source's timeout (test_ep_ht.c's test_straggler_after_timeout for
 * M2N): rank 1's stream is held until rank 0's call has timed out and ended and rank 0's caller
 * has overwritten its source tile.  On the direct path rank 1 must then copy nothing (rank 0
 * closed its tiles on the way out) and report an error; never success with the new bytes.
 * On the staged path rank 1 reads only its own ring, which rank 0 never filled: it times out. */
static void test_straggler_after_timeout(void **state)
{
    (void)state;
    rng_reset("straggler after timeout");
    const uint64_t g[3] = {8192, 1, 1};
    tensor_t x = tensor(side1(1, g, 1, 1, 0, -1), side1(1, g, 1, 1, 1, -1));
    team_t t;
    tiles_t tl;
    uint8_t *keep[4 * MAX_RANKS];
    int kept = 0;
    uint32_t err0 = 0, err1 = 0;
    team_open_timeout(&t, 2, "300");
    tiles_alloc(&t, &x, &tl);
    upload(&t, &tl, 11, keep, &kept);
    team_sync(&t);
    gate_stream(t.stream[1]);
    reshard_all(&t, &x, &tl, 1);
    /* Rank 0 gives up (its vote wait, then its wait for rank 1, time out); its caller reuses
     * the tile. */
    assert_int_equal(cudaStreamSynchronize(t.stream[0]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[0], &err0));
    assert_int_equal(err0 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    assert_int_equal(cudaMemset(tile_ptr(&tl, 0, 0), 0x5a, tl.bytes[0]), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    gate_open();
    assert_int_equal(cudaStreamSynchronize(t.stream[1]), cudaSuccess);
    assert_ncclx_ok(ncclxM2nGetAsyncError(t.ctx[1], &err1));
    {
        uint8_t *h = malloc(tl.bytes[1]);
        uint64_t reused = 0, poison = 0;
        assert_non_null(h);
        assert_int_equal(cudaMemcpy(h, tile_ptr(&tl, 1, 1), tl.bytes[1], cudaMemcpyDeviceToHost),
                         cudaSuccess);
        for (uint64_t i = 0; i < tl.bytes[1]; i++) {
            reused += h[i] == 0x5a;
            poison += h[i] == 0xDE;
        }
        free(h);
        if (err1 == 0) {
            fail_msg("the straggler (rank 1) reported no error after its source had given up "
                     "(%llu of %llu destination bytes hold the source's reused tile)",
                     (unsigned long long)reused, (unsigned long long)tl.bytes[1]);
        }
        if (direct_path(t.ranks) && poison != tl.bytes[1]) {
            fail_msg("the straggler (rank 1) copied %llu bytes (%llu of the reused tile) from a "
                     "source that had closed its tiles",
                     (unsigned long long)(tl.bytes[1] - poison), (unsigned long long)reused);
        }
    }
    assert_int_equal(err1 & NCCLX_M2N_ERROR_TIMEOUT, NCCLX_M2N_ERROR_TIMEOUT);
    team_close(&t);
    tiles_free(&tl);
    for (int i = 0; i < kept; i++) {
        free(keep[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_launch_failure),
        cmocka_unit_test(test_clear_stream_ordered),
        cmocka_unit_test(test_vote_collision),
        cmocka_unit_test(test_straggler_after_timeout),
    };
    return ncclx_run_tests("gpu_m2n_faults", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
