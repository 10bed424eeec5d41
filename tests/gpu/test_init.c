/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Contexts on a real GPU and NCCL: singleton (or mpirun -n 1) init with symmetric windows and
 * their peer table, init -> finalize -> init, the caller's communicator, two live contexts, a
 * caller-supplied host block, a plan that does not fit, and allocator counters at zero
 * across every call an application makes between init and finalize (EP groups, handles,
 * dispatch, combine, complete, masks, the error word, the getters).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "alloc_counter.h"
#include "context.h"
#include "gpu/fill_kernel.h"
#include "kernels.h"
#include "ncclx_test.h"

static ncclxEpGroupPlan_t small_ll_group(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.algorithm = NCCLX_EP_ALGO_LL;
    g.num_experts = 8;
    g.max_topk = 2;
    g.hidden = 1024;
    g.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_FP8;
    g.max_dispatch_tokens_per_rank = 16;
    g.enable_mask = 1;
    g.num_handles = 2;
    return g;
}

static ncclxEpGroupPlan_t group;
static const ncclxEpGroupPlan_t *groups[1] = {&group};

static ncclxPlan_t small_plan(void)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    group = small_ll_group();
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    return plan;
}

static ncclxPlanSizes_t sizes_for_one_rank(const ncclxPlan_t *plan)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    assert_ncclx_ok(ncclxPlanComputeSizes(plan, &team, &sizes));
    return sizes;
}

/* Under a launcher (mpirun -n 1) PMIx is there; run plainly, it is a singleton. */
static int under_launcher(void)
{
    return getenv("PMIX_NAMESPACE") != NULL || getenv("PMIX_RANK") != NULL;
}

static void test_init_finalize_twice(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxPlanSizes_t sizes = sizes_for_one_rank(&plan);
    for (int round = 0; round < 2; round++) {
        ncclxContext_t ctx = NULL;
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
        assert_non_null(ctx);
        assert_ncclx_ok(ncclxContextGetInfo(ctx, &info));
        assert_int_equal(info.rank, 0);
        assert_int_equal(info.num_ranks, 1);
        assert_int_equal(info.local_rank, 0);
        assert_int_equal(info.local_size, 1);
        assert_int_equal(info.lsa_size, 1);
        assert_int_equal(info.from_pmix, 1);
        assert_int_equal(info.singleton, under_launcher() ? 0 : 1);
        for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
            assert_int_equal(info.bytes[c], sizes.total[c]);
        }
        assert_ncclx_ok(ncclxFinalize(ctx));
    }
}

/* The counters see the test's own allocations and, through --wrap, the library's: init
 * allocates, so a count of zero later means the library did not, not that nobody looked. */
static void test_allocator_counter_sees_allocations(void **state)
{
    (void)state;
    void *p = NULL;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = NULL;
    ncclx_test_alloc_arm();
    p = malloc(16);
    free(p);
    assert_int_equal(cudaMalloc(&p, 256), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(ncclx_test_alloc_disarm(), 2);
    ncclx_test_alloc_arm();
    assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
    assert_true(ncclx_test_alloc_disarm() > 0);
    assert_ncclx_ok(ncclxFinalize(ctx));
}

/* Device buffers of one LL round trip on the small plan (1 rank: L = 8 local experts). */
enum { AT = 16, AK = 2, AH = 1024, AL = 8 };

typedef struct {
    int64_t *topk_idx[2]; /* two routings: create, then update */
    float *topk_weights;
    uint16_t *tokens, *out_tokens, *out;
    int32_t *out_counts, *mask;
} alloc_bufs_t;

static void alloc_bufs_make(alloc_bufs_t *b)
{
    int64_t idx[2][AT * AK];
    float weights[AT * AK];
    uint16_t *tokens = malloc(sizeof(uint16_t) * AT * AH);
    assert_non_null(tokens);
    for (int t = 0; t < AT; t++) {
        for (int k = 0; k < AK; k++) {
            idx[0][t * AK + k] = (t + k) % AL;         /* two distinct experts per token */
            idx[1][t * AK + k] = (t + 3 + 2 * k) % AL; /* another routing, still distinct */
            weights[t * AK + k] = 0.5f;                /* so the combine gives the token back */
        }
        for (int h = 0; h < AH; h++) {
            float v = (float)((t * 7 + h) % 64 - 32); /* small integers: exact in BF16 */
            uint32_t bits;
            memcpy(&bits, &v, sizeof(bits));
            tokens[t * AH + h] = (uint16_t)(bits >> 16);
        }
    }
    for (int r = 0; r < 2; r++) {
        assert_int_equal(cudaMalloc((void **)&b->topk_idx[r], sizeof(idx[r])), cudaSuccess);
        assert_int_equal(cudaMemcpy(b->topk_idx[r], idx[r], sizeof(idx[r]), cudaMemcpyHostToDevice),
                         cudaSuccess);
    }
    assert_int_equal(cudaMalloc((void **)&b->topk_weights, sizeof(weights)), cudaSuccess);
    assert_int_equal(cudaMemcpy(b->topk_weights, weights, sizeof(weights), cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b->tokens, sizeof(uint16_t) * AT * AH), cudaSuccess);
    assert_int_equal(
        cudaMemcpy(b->tokens, tokens, sizeof(uint16_t) * AT * AH, cudaMemcpyHostToDevice),
        cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b->out_tokens, sizeof(uint16_t) * AL * AT * AH),
                     cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b->out, sizeof(uint16_t) * AT * AH), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b->out_counts, sizeof(int32_t) * AL), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&b->mask, sizeof(int32_t)), cudaSuccess);
    free(tokens);
}

static void alloc_bufs_free(alloc_bufs_t *b)
{
    void *all[] = {b->topk_idx[0], b->topk_idx[1], b->topk_weights, b->tokens,
                   b->out_tokens,  b->out,         b->out_counts,   b->mask};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        assert_int_equal(cudaFree(all[i]), cudaSuccess);
    }
}

static ncclxTensor_t tensor(void *data, ncclxDataType_t dtype, uint32_t ndim, int64_t d0,
                            int64_t d1, int64_t d2)
{
    ncclxTensor_t t = {data, dtype, ndim, {d0, d1, d2, 0}};
    return t;
}

/* Dispatch (eager, or send_only + complete), then combine the dispatched rows back with
 * weights 0.5 + 0.5: out must equal the tokens, which the caller checks after the round. */
static void round_trip(ncclxEpHandle_t h, const alloc_bufs_t *b, int send_only, cudaStream_t stream)
{
    ncclxEpDispatchArgs_t d = NCCLX_EP_DISPATCH_ARGS_INIT;
    ncclxEpCombineArgs_t c = NCCLX_EP_COMBINE_ARGS_INIT;
    d.send_only = (uint32_t)send_only;
    d.tokens = tensor(b->tokens, NCCLX_BFLOAT16, 2, AT, AH, 0);
    d.out_tokens = tensor(b->out_tokens, NCCLX_BFLOAT16, 3, AL, AT, AH);
    d.out_counts = tensor(b->out_counts, NCCLX_INT32, 1, AL, 0, 0);
    assert_ncclx_ok(ncclxEpDispatch(h, &d, (ncclxStream_t)stream));
    if (send_only) {
        assert_ncclx_ok(ncclxEpComplete(h, (ncclxStream_t)stream));
    }
    c.send_only = (uint32_t)send_only;
    c.expert_out = d.out_tokens;
    c.topk_weights = tensor(b->topk_weights, NCCLX_FLOAT32, 2, AT, AK, 0);
    c.out = tensor(b->out, NCCLX_BFLOAT16, 2, AT, AH, 0);
    assert_ncclx_ok(ncclxEpCombine(h, &c, (ncclxStream_t)stream));
    if (send_only) {
        assert_ncclx_ok(ncclxEpComplete(h, (ncclxStream_t)stream));
    }
}

/* What the last round left: every expert got AT * AK / AL tokens, and out == tokens. */
static void check_round(const alloc_bufs_t *b)
{
    int32_t counts[AL];
    uint16_t *got = malloc(sizeof(uint16_t) * AT * AH);
    uint16_t *want = malloc(sizeof(uint16_t) * AT * AH);
    assert_non_null(got);
    assert_non_null(want);
    assert_int_equal(cudaMemcpy(counts, b->out_counts, sizeof(counts), cudaMemcpyDeviceToHost),
                     cudaSuccess);
    for (int e = 0; e < AL; e++) {
        assert_int_equal(counts[e], AT * AK / AL);
    }
    assert_int_equal(cudaMemcpy(got, b->out, sizeof(uint16_t) * AT * AH, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_int_equal(
        cudaMemcpy(want, b->tokens, sizeof(uint16_t) * AT * AH, cudaMemcpyDeviceToHost),
        cudaSuccess);
    assert_memory_equal(got, want, sizeof(uint16_t) * AT * AH);
    free(got);
    free(want);
}

/*
 * Every call an application makes between init and finalize, on a live context, with the
 * counters armed from the first to the last (the GPU work included): groups, handles,
 * dispatch and combine eager and send_only, a rerouting update, the mask calls, the error
 * word and the context getters.  Each call must succeed and the data must arrive, so the zero
 * count is about real work; any allocator call in the library fails the test.
 */
static void test_no_allocation_between_init_and_finalize(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = NULL;
    ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
    ncclxPlacement_t placement = NCCLX_PLACEMENT_INIT;
    ncclxEpHandleConfig_t config = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclxEpGroup_t group_handle = NULL;
    ncclxEpHandle_t h = NULL;
    ncclxTensor_t idx[2], mask;
    const int32_t keep_all[1] = {1};
    uint32_t async_error = ~0u;
    alloc_bufs_t b;
    cudaStream_t stream = NULL;
    size_t calls;

    assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
    alloc_bufs_make(&b);
    assert_int_equal(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    for (int r = 0; r < 2; r++) {
        idx[r] = tensor(b.topk_idx[r], NCCLX_INT64, 2, AT, AK, 0);
    }
    mask = tensor(b.mask, NCCLX_INT32, 1, 1, 0, 0);
    config.topk = AK;

    ncclx_test_alloc_arm();
    assert_ncclx_ok(ncclxContextGetInfo(ctx, &info));
    assert_ncclx_ok(ncclxContextGetPlacement(ctx, &placement));
    assert_ncclx_ok(ncclxEpGroupGet(ctx, 0, &group_handle));
    assert_ncclx_ok(ncclxEpHandleCreate(group_handle, &config, &idx[0], (ncclxStream_t)stream, &h));
    round_trip(h, &b, 0, stream);
    round_trip(h, &b, 1, stream);
    assert_ncclx_ok(ncclxEpHandleUpdate(h, &idx[1], (ncclxStream_t)stream));
    round_trip(h, &b, 0, stream);
    assert_ncclx_ok(ncclxEpMaskQuery(group_handle, &mask, (ncclxStream_t)stream));
    assert_ncclx_ok(ncclxEpMaskUpdate(group_handle, keep_all, 1, (ncclxStream_t)stream));
    assert_ncclx_ok(ncclxEpMaskClean(group_handle, (ncclxStream_t)stream));
    round_trip(h, &b, 0, stream); /* update and clean voided the dispatch: dispatch again */
    assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
    assert_ncclx_ok(ncclxEpGetAsyncError(group_handle, &async_error));
    assert_ncclx_ok(ncclxEpHandleDestroy(h));
    calls = ncclx_test_alloc_disarm();
    if (calls != 0) {
        fail_msg("%zu allocator calls after init (first: %s)", calls, ncclx_test_alloc_first());
    }

    /* The calls did their work. */
    check_round(&b);
    assert_int_equal(async_error, 0);
    assert_int_equal(info.num_ranks, 1);
    assert_true(placement.gpu_busid[0] != '\0'); /* ncclxInit placed us on a GPU */
    {
        int32_t active = 0;
        assert_int_equal(cudaMemcpy(&active, b.mask, sizeof(active), cudaMemcpyDeviceToHost),
                         cudaSuccess);
        assert_int_equal(active, 1);
    }
    assert_int_equal(cudaStreamDestroy(stream), cudaSuccess);
    alloc_bufs_free(&b);
    assert_ncclx_ok(ncclxFinalize(ctx));
}

static void test_init_with_callers_comm(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclComm_t comm = NULL;
    int device = 0, count = 0;
    ncclxContext_t ctx = NULL;
    ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
    assert_int_equal(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
    assert_ncclx_ok(ncclxInitWithComm(&plan, comm, NULL, &ctx));
    assert_ncclx_ok(ncclxContextGetInfo(ctx, &info));
    assert_int_equal(info.from_pmix, 0);
    assert_int_equal(info.num_ranks, 1);
    assert_ncclx_ok(ncclxFinalize(ctx));
    /* The communicator is still the caller's and still works. */
    assert_int_equal(ncclCommCount(comm, &count), ncclSuccess);
    assert_int_equal(count, 1);
    assert_int_equal(ncclCommDestroy(comm), ncclSuccess);
}

static void test_two_live_contexts(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t a = NULL, b = NULL;
    assert_ncclx_ok(ncclxInit(&plan, NULL, &a));
    assert_ncclx_ok(ncclxInit(&plan, NULL, &b));
    assert_ptr_not_equal(a, b);
    assert_ncclx_ok(ncclxFinalize(b));
    assert_ncclx_ok(ncclxFinalize(a));
}

static void test_callers_host_block(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxPlanSizes_t sizes = sizes_for_one_rank(&plan);
    size_t bytes = (size_t)sizes.total[NCCLX_MEM_HOST];
    void *block = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    assert_non_null(block);
    plan.host_block = block;
    plan.host_block_bytes = bytes - 1;
    assert_ncclx_error(ncclxInit(&plan, NULL, &ctx), ncclxResourceExhausted, "host_block_bytes");
    assert_ptr_equal(ctx, (ncclxContext_t)0x1);
    plan.host_block_bytes = bytes;
    assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
    assert_ncclx_ok(ncclxFinalize(ctx));
    free(block);
}

static void test_plan_too_big_for_the_gpu(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = (ncclxContext_t)0x1;
    const ncclxEpGroupPlan_t *many[NCCLX_MAX_EP_GROUPS];
    /* LL groups at the plan's largest hidden size with FP32 tokens, 1024 tokens and top-16:
     * each group's combine receive area is 2 * 1024 * 16 rows of 256 KiB = 8 GiB, and the plan
     * asks for the most groups: about 550 GB, more than any one GPU holds. */
    group.hidden = NCCLX_EP_MAX_HIDDEN;
    group.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    group.recipes = NCCLX_EP_RECIPE_NONE;
    group.num_experts = NCCLX_EP_MAX_TOPK;
    group.max_topk = NCCLX_EP_MAX_TOPK;
    group.max_dispatch_tokens_per_rank = NCCLX_EP_MAX_LL_TOKENS_PER_RANK;
    for (uint32_t i = 0; i < NCCLX_MAX_EP_GROUPS; i++) {
        many[i] = &group;
    }
    plan.num_ep_groups = NCCLX_MAX_EP_GROUPS;
    plan.ep_groups = many;
    assert_ncclx_error(ncclxInit(&plan, NULL, &ctx), ncclxOutOfMemory, "free of");
    assert_ptr_equal(ctx, (ncclxContext_t)0x1);
}

/* The LSA peer table's entry for this rank maps the same memory as the symmetric arena. */
static void test_peer_table_reaches_the_window(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = NULL;
    void *self = NULL;
    uint32_t pattern = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
    uint32_t seen[64];
    assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
    assert_non_null(ctx->arenas.window);
    assert_int_equal(cudaMemcpy(&self, ctx->peer_table, sizeof(self), cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_non_null(self);
    /* Write through the arena's own pointer, read back through the peer table's. */
    assert_int_equal(
        ncclx_launch_fill(ctx->arenas.base[NCCLX_MEM_SYMMETRIC], sizeof(seen), pattern, 0),
        cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(seen, self, sizeof(seen), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
        assert_int_equal(seen[i], pattern);
    }
    assert_ncclx_ok(ncclxFinalize(ctx));
}

/* GIN setup on a 1-rank communicator (the only one a machine without an RDMA NIC can make): it
 * may come up or be refused, but never for how the requirements were built.  NCCL 2.29 and
 * later refuse a zeroed ncclDevCommRequirements by name, before GIN is tried. */
static void test_gin_setup_requirements(void **state)
{
    (void)state;
    ncclComm_t comm = NULL;
    int device = 0;
    void *device_copy = NULL, *gin = NULL;
    const char *what = NULL;
    assert_int_equal(ncclCommInitAll(&comm, 1, &device), ncclSuccess);
    assert_int_equal(cudaMalloc(&device_copy, NCCLX_NET_DEV_COMM_BYTES), cudaSuccess);
    ncclResult_t res =
        ncclx_gin_create(comm, 4, device_copy, NCCLX_NET_DEV_COMM_BYTES, 0, &gin, &what);
    assert_non_null(what);
    if (res == ncclSuccess) {
        assert_non_null(gin);
        assert_int_equal(ncclx_gin_destroy(comm, gin), ncclSuccess);
    } else {
        const char *last = ncclGetLastError(comm);
        print_message("GIN on 1 rank refused (expected without an RDMA NIC): %s: %s\n", what,
                      last != NULL ? last : "");
        assert_null(gin);
        assert_null(last != NULL ? strstr(last, "REQUIREMENTS_INITIALIZER") : NULL);
    }
    assert_int_equal(cudaFree(device_copy), cudaSuccess);
    assert_int_equal(ncclCommDestroy(comm), ncclSuccess);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_finalize_twice),
        cmocka_unit_test(test_allocator_counter_sees_allocations),
        cmocka_unit_test(test_no_allocation_between_init_and_finalize),
        cmocka_unit_test(test_init_with_callers_comm),
        cmocka_unit_test(test_two_live_contexts),
        cmocka_unit_test(test_callers_host_block),
        cmocka_unit_test(test_plan_too_big_for_the_gpu),
        cmocka_unit_test(test_peer_table_reaches_the_window),
        cmocka_unit_test(test_gin_setup_requirements),
    };
    srand((unsigned)time(NULL));
    return cmocka_run_group_tests_name("gpu_init", tests, NULL, NULL);
}
