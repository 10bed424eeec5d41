/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Contexts on a real GPU and NCCL: singleton (or mpirun -n 1) init with windows and the device
 * communicator, init -> finalize -> init, the caller's communicator, two live contexts, a
 * caller-supplied host block, a plan that does not fit, and allocator counters at zero
 * between init and finalize.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "alloc_counter.h"
#include "context.h"
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
    plan.m2n_staging_bytes = 1 << 20;
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

static void test_allocator_counter_sees_allocations(void **state)
{
    (void)state;
    void *p = NULL;
    ncclx_test_alloc_arm();
    p = malloc(16);
    free(p);
    assert_int_equal(cudaMalloc(&p, 256), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(ncclx_test_alloc_disarm(), 2);
}

static void test_no_allocation_between_init_and_finalize(void **state)
{
    (void)state;
    ncclxPlan_t plan = small_plan();
    ncclxContext_t ctx = NULL;
    ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
    assert_ncclx_ok(ncclxInit(&plan, NULL, &ctx));
    ncclx_test_alloc_arm();
    assert_ncclx_ok(ncclxContextGetInfo(ctx, &info));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    size_t calls = ncclx_test_alloc_disarm();
    if (calls != 0) {
        fail_msg("%zu allocator calls after init (first: %s)", calls, ncclx_test_alloc_first());
    }
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
    /* HT, 1M tokens of 64K BF16: one receive area alone is ~130 GB per 1M slots; ask 4M. */
    group.algorithm = NCCLX_EP_ALGO_HT;
    group.layouts = NCCLX_EP_LAYOUT_FLAT;
    group.recipes = NCCLX_EP_RECIPE_NONE;
    group.enable_mask = 0;
    group.hidden = NCCLX_EP_MAX_HIDDEN;
    group.max_dispatch_tokens_per_rank = NCCLX_EP_MAX_HT_TOKENS_PER_RANK;
    group.max_recv_tokens_per_rank = 4u << 20;
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
    };
    srand((unsigned)time(NULL));
    return cmocka_run_group_tests_name("gpu_init", tests, NULL, NULL);
}
