/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The versioned-struct ABI (include/ncclx/struct.h): *_INIT macros, structs from a newer
 * release (larger size, unknown tail), sizes below the first released layout, bad magics,
 * output structs, and the internal import/export on two synthetic struct versions.  The walk
 * of every struct through its entry points is test_abi_walk.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "context.h"
#include "ep_group.h"
#include "struct.h"
#include "unit/abi_fixture.h"

/*
 * The sizes 0.1 shipped (x86-64), written out here independently of lib/core/struct.h.  #if also
 * proves the constants are plain numbers: a sizeof() there would grow with the struct and
 * refuse every application built against 0.1.
 */
#if NCCLX_PLAN_SIZE_V1 != 56 || NCCLX_EP_GROUP_PLAN_SIZE_V1 != 88 || NCCLX_TEAM_SIZE_V1 != 32 || \
    NCCLX_PLAN_SIZES_SIZE_V1 != 88 || NCCLX_PLACEMENT_QUERY_SIZE_V1 != 56 ||                     \
    NCCLX_PLACEMENT_SIZE_V1 != 2728 || NCCLX_INIT_CONFIG_SIZE_V1 != 32 ||                        \
    NCCLX_CONTEXT_INFO_SIZE_V1 != 88 || NCCLX_EP_HANDLE_CONFIG_SIZE_V1 != 32 ||                  \
    NCCLX_EP_DISPATCH_ARGS_SIZE_V1 != 416 || NCCLX_EP_COMBINE_ARGS_SIZE_V1 != 168
#error "a v1 size changed: the sizes of released layouts are fixed forever"
#endif

#define TAIL_BYTES 40

/* A struct as a newer release would compile it: ours, then fields this library never saw. */
typedef struct {
    ncclxPlan_t plan;
    unsigned char tail[TAIL_BYTES];
} newer_plan_t;

typedef struct {
    ncclxEpGroupPlan_t group;
    unsigned char tail[TAIL_BYTES];
} newer_group_t;

typedef struct {
    ncclxTeam_t team;
    unsigned char tail[TAIL_BYTES];
} newer_team_t;

typedef struct {
    ncclxPlanSizes_t sizes;
    unsigned char tail[TAIL_BYTES];
} newer_sizes_t;

static void test_init_macros(void **state)
{
    const ncclxPlan_t plan = NCCLX_PLAN_INIT;
    const ncclxEpGroupPlan_t group = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxTeam_t team = NCCLX_TEAM_INIT;
    const ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    const ncclxM2nTensor_t tensor = NCCLX_M2N_TENSOR_INIT;
    const uint32_t magics[] = {NCCLX_MAGIC_PLAN, NCCLX_MAGIC_EP_GROUP_PLAN, NCCLX_MAGIC_TEAM,
                               NCCLX_MAGIC_PLAN_SIZES};
    int version = 0;
    (void)state;
    assert_int_equal(plan.size, sizeof(ncclxPlan_t));
    assert_int_equal(plan.magic, NCCLX_MAGIC_PLAN);
    assert_int_equal(plan.version, NCCLX_VERSION_CODE);
    assert_int_equal(group.size, sizeof(ncclxEpGroupPlan_t));
    assert_int_equal(group.magic, NCCLX_MAGIC_EP_GROUP_PLAN);
    assert_int_equal(group.version, NCCLX_VERSION_CODE);
    assert_int_equal(team.size, sizeof(ncclxTeam_t));
    assert_int_equal(team.magic, NCCLX_MAGIC_TEAM);
    assert_int_equal(team.version, NCCLX_VERSION_CODE);
    assert_int_equal(sizes.size, sizeof(ncclxPlanSizes_t));
    assert_int_equal(sizes.magic, NCCLX_MAGIC_PLAN_SIZES);
    assert_int_equal(sizes.version, NCCLX_VERSION_CODE);
    /* The released layouts, which must never shrink. */
    assert_true(sizeof(ncclxPlan_t) >= NCCLX_PLAN_SIZE_V1);
    assert_true(sizeof(ncclxEpGroupPlan_t) >= NCCLX_EP_GROUP_PLAN_SIZE_V1);
    assert_true(sizeof(ncclxTeam_t) >= NCCLX_TEAM_SIZE_V1);
    assert_true(sizeof(ncclxPlanSizes_t) >= NCCLX_PLAN_SIZES_SIZE_V1);
    /* Magics are distinct, so one struct can never pass for another. */
    assert_int_not_equal(NCCLX_MAGIC_PLAN, NCCLX_MAGIC_EP_GROUP_PLAN);
    assert_int_not_equal(NCCLX_MAGIC_PLAN, NCCLX_MAGIC_TEAM);
    assert_int_not_equal(NCCLX_MAGIC_PLAN, NCCLX_MAGIC_PLAN_SIZES);
    assert_int_not_equal(NCCLX_MAGIC_EP_GROUP_PLAN, NCCLX_MAGIC_TEAM);
    assert_int_not_equal(NCCLX_MAGIC_EP_GROUP_PLAN, NCCLX_MAGIC_PLAN_SIZES);
    assert_int_not_equal(NCCLX_MAGIC_TEAM, NCCLX_MAGIC_PLAN_SIZES);
    /* The M2N tensor (include/ncclx/m2n.h, since 0.2). */
    assert_int_equal(tensor.size, sizeof(ncclxM2nTensor_t));
    assert_int_equal(tensor.magic, NCCLX_MAGIC_M2N_TENSOR);
    assert_int_equal(tensor.version, NCCLX_VERSION_CODE);
    assert_true(sizeof(ncclxM2nTensor_t) >= NCCLX_M2N_TENSOR_SIZE_V1);
    for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
        assert_int_not_equal(NCCLX_MAGIC_M2N_TENSOR, magics[i]);
    }
    assert_null(tensor.data);
    assert_int_equal(tensor.dtype, NCCLX_UINT8);
    assert_int_equal(tensor.ndims, 1);
    assert_int_equal(tensor.mesh.ndims, 1);
    assert_int_equal(tensor.mesh.dims[0], 1);
    assert_int_equal(tensor.mesh.start_rank, 0);
    assert_int_equal(tensor.placements[0], NCCLX_M2N_REPLICATE);
    assert_int_equal(tensor.placements[1], NCCLX_M2N_REPLICATE);
    /* No M2N unless asked for; its group entries then default (plan.h). */
    assert_int_equal(plan.m2n_staging_bytes, 0);
    assert_int_equal(plan.m2n_max_group_entries, 0);
    /* Defaults documented in plan.h. */
    assert_int_equal(group.algorithm, NCCLX_EP_ALGO_LL);
    assert_int_equal(group.max_topk, 1);
    assert_int_equal(group.token_dtypes, NCCLX_DTYPE_BIT(NCCLX_BFLOAT16));
    assert_int_equal(group.layouts, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    assert_int_equal(group.recipes, NCCLX_EP_RECIPE_NONE);
    assert_int_equal(group.num_handles, 1);
    assert_int_equal(group.timeout_ns, 0);
    assert_int_equal(plan.num_ep_groups, 0);
    assert_null(plan.ep_groups);
    assert_null(plan.host_block);
    assert_int_equal(team.num_ranks, 1);
    assert_int_equal(team.num_nodes, 1);
    assert_int_equal(team.lsa_size, 1);
    assert_ncclx_ok(ncclxGetVersion(&version));
    assert_int_equal(version, NCCLX_VERSION_CODE);
}

/* A 0.1 caller's plan (NCCLX_PLAN_SIZE_V1 bytes) with M2N staging: m2n_max_group_entries,
 * added since, lies past its struct and is never read (garbage there); the plan gets the
 * default and is sized as this release's struct with 0 there. */
static void test_plan_v1_m2n_defaults(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t now = NCCLX_PLAN_SIZES_INIT, v1 = NCCLX_PLAN_SIZES_INIT;
    union {
        ncclxPlan_t plan;
        unsigned char bytes[sizeof(ncclxPlan_t) + TAIL_BYTES];
    } old;
    (void)state;
    make_fixture(&f);
    f.plan.m2n_staging_bytes = 8 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &now));
    memset(old.bytes, 0xa5, sizeof(old.bytes));
    memcpy(old.bytes, &f.plan, NCCLX_PLAN_SIZE_V1);
    old.plan.size = NCCLX_PLAN_SIZE_V1;
    assert_ncclx_ok(ncclxPlanValidate(&old.plan, &f.team));
    assert_ncclx_ok(ncclxPlanComputeSizes(&old.plan, &f.team, &v1));
    assert_memory_equal(&now, &v1, sizeof(v1));
    /* The same bytes as this release's struct: 0xa5a5a5a5 entries, refused. */
    old.plan.size = sizeof(ncclxPlan_t);
    assert_ncclx_error(ncclxPlanValidate(&old.plan, &f.team), ncclxInvalidArgument,
                       "plan.m2n_max_group_entries=2779096485 exceeds 65536");
}

/* Structs of a newer release, with garbage where their new fields are: accepted, and the
 * result identical to the normal structs' (the tail is never read). */
static void test_larger_structs(void **state)
{
    fixture_t f;
    newer_plan_t plan;
    newer_group_t groups[2];
    newer_team_t team;
    const ncclxEpGroupPlan_t *ptrs[2] = {&groups[0].group, &groups[1].group};
    ncclxPlanSizes_t expected = NCCLX_PLAN_SIZES_INIT;
    ncclxPlanSizes_t got = NCCLX_PLAN_SIZES_INIT;
    (void)state;

    make_fixture(&f);
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &expected));
    for (int round = 0; round < 2; round++) {
        int fill = round == 0 ? 0xff : 0x5a;
        memset(&plan, fill, sizeof(plan));
        memset(groups, fill, sizeof(groups));
        memset(&team, fill, sizeof(team));
        plan.plan = f.plan;
        plan.plan.size = sizeof(plan);
        plan.plan.ep_groups = ptrs;
        for (int g = 0; g < 2; g++) {
            groups[g].group = f.groups[g];
            groups[g].group.size = sizeof(groups[g]);
        }
        team.team = f.team;
        team.team.size = sizeof(team);
        assert_ncclx_ok(ncclxPlanValidate(&plan.plan, &team.team));
        assert_ncclx_ok(ncclxPlanComputeSizes(&plan.plan, &team.team, &got));
        assert_memory_equal(&expected, &got, sizeof(got));
        /* Inputs are const: the library wrote nothing back, size included. */
        assert_int_equal(plan.plan.size, sizeof(plan));
        assert_int_equal(groups[1].group.size, sizeof(groups[1]));
    }
}

/* Each struct below its first released layout is refused, and the message names it. */
static void test_too_small(void **state)
{
    fixture_t f;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    (void)state;

    make_fixture(&f);
    f.plan.size = NCCLX_PLAN_SIZE_V1 - 8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan->size=48 is smaller than the first released layout");
    make_fixture(&f);
    f.groups[1].size = NCCLX_EP_GROUP_PLAN_SIZE_V1 - 8;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[1]->size=80 is smaller");
    make_fixture(&f);
    f.team.size = 16;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "team->size=16 is smaller");
    f.team.size = 0;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument, "team->size=0");
    make_fixture(&f);
    sizes.size = NCCLX_PLAN_SIZES_SIZE_V1 - 1;
    assert_ncclx_error(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), ncclxInvalidArgument,
                       "sizes->size=87 is smaller");
    assert_int_equal(sizes.num_regions, 0);
}

/* Checks that a struct whose magic was overwritten with magic is refused, naming it. */
#define CHECK_BAD_MAGIC(call, field, own, what)                                              \
    do {                                                                                     \
        fixture_t f;                                                                         \
        ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;                                      \
        make_fixture(&f);                                                                    \
        (void)sizes;                                                                         \
        if (magic != (own)) {                                                                \
            field = magic;                                                                   \
            assert_ncclx_error(call, ncclxInvalidArgument, what "->magic=");                 \
            assert_ncclx_error(call, ncclxInvalidArgument, "initialize it with its *_INIT"); \
        }                                                                                    \
    } while (0)

/* A struct not started from its *_INIT macro: zero, garbage or another struct's magic. */
static void check_bad_magic(uint32_t magic)
{
    CHECK_BAD_MAGIC(ncclxPlanValidate(&f.plan, &f.team), f.plan.magic, NCCLX_MAGIC_PLAN, "plan");
    CHECK_BAD_MAGIC(ncclxPlanValidate(&f.plan, &f.team), f.groups[0].magic,
                    NCCLX_MAGIC_EP_GROUP_PLAN, "plan.ep_groups[0]");
    CHECK_BAD_MAGIC(ncclxPlanValidate(&f.plan, &f.team), f.groups[1].magic,
                    NCCLX_MAGIC_EP_GROUP_PLAN, "plan.ep_groups[1]");
    CHECK_BAD_MAGIC(ncclxPlanValidate(&f.plan, &f.team), f.team.magic, NCCLX_MAGIC_TEAM, "team");
    CHECK_BAD_MAGIC(ncclxPlanComputeSizes(&f.plan, &f.team, &sizes), sizes.magic,
                    NCCLX_MAGIC_PLAN_SIZES, "sizes");
}

static void test_bad_magic(void **state)
{
    (void)state;
    check_bad_magic(0);
    check_bad_magic(0x12345678u);
    /* Real magics of other structs. */
    check_bad_magic(NCCLX_MAGIC_PLAN);
    check_bad_magic(NCCLX_MAGIC_TEAM);
}

/* A team struct passed where a group is expected (a classic pointer mix-up). */
static void test_swapped_struct(void **state)
{
    fixture_t f;
    const ncclxEpGroupPlan_t *ptrs[1];
    (void)state;
    make_fixture(&f);
    ptrs[0] = (const ncclxEpGroupPlan_t *)(const void *)&f.team;
    f.plan.num_ep_groups = 1;
    f.plan.ep_groups = ptrs;
    assert_ncclx_error(ncclxPlanValidate(&f.plan, &f.team), ncclxInvalidArgument,
                       "plan.ep_groups[0]->magic=0x6e78746d, expected 0x6e786770");
}

/* An output struct from a newer release: filled up to the library's layout, the caller's
 * size and tail kept. */
static void test_output_sizes(void **state)
{
    fixture_t f;
    newer_sizes_t big;
    ncclxPlanSizes_t normal = NCCLX_PLAN_SIZES_INIT;
    const ncclxPlanSizes_t init = NCCLX_PLAN_SIZES_INIT;
    unsigned char tail[TAIL_BYTES];
    (void)state;

    make_fixture(&f);
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &normal));
    assert_int_equal(normal.size, sizeof(normal));
    assert_int_not_equal(normal.num_regions, 0);
    memset(&big, 0x77, sizeof(big));
    big.sizes = init;
    big.sizes.size = sizeof(big);
    memcpy(tail, big.tail, sizeof(tail));
    assert_ncclx_ok(ncclxPlanComputeSizes(&f.plan, &f.team, &big.sizes));
    assert_int_equal(big.sizes.size, sizeof(big));
    assert_memory_equal(big.sizes.total, normal.total, sizeof(normal.total));
    assert_memory_equal(big.sizes.per_handle, normal.per_handle, sizeof(normal.per_handle));
    assert_int_equal(big.sizes.num_regions, normal.num_regions);
    assert_memory_equal(big.tail, tail, sizeof(tail));
}

/* ---- the internal import/export, on two synthetic versions of one struct --------------- */

#define TEST_MAGIC 0x6e787478u /* 'nxtx': a test-only struct */

typedef struct { /* as released first */
    NCCLX_STRUCT_HEADER;
    uint32_t a;
    uint32_t b;
} test_v1_t;

typedef struct { /* a later release: two fields appended */
    NCCLX_STRUCT_HEADER;
    uint32_t a;
    uint32_t b;
    uint64_t c;
    uint32_t d;
    uint32_t reserved;
} test_v2_t;

#define TEST_V1_INIT                             \
    {                                            \
        sizeof(test_v1_t), TEST_MAGIC, 100, 1, 2 \
    }
#define TEST_V2_INIT                                                 \
    {                                                                \
        sizeof(test_v2_t), TEST_MAGIC, 200, 1, 2, 0xc0ffeeull, 44, 0 \
    }

static void test_import_older_source(void **state)
{
    test_v1_t src = TEST_V1_INIT;
    test_v2_t dst = TEST_V2_INIT;
    (void)state;
    src.a = 10;
    src.b = 20;
    assert_ncclx_ok(
        ncclx_struct_import(&dst, sizeof(dst), &src, TEST_MAGIC, sizeof(test_v1_t), "test"));
    assert_int_equal(dst.size, sizeof(test_v2_t));
    assert_int_equal(dst.magic, TEST_MAGIC);
    assert_int_equal(dst.a, 10);
    assert_int_equal(dst.b, 20);
    assert_int_equal(dst.c, 0xc0ffeeull); /* v2's defaults for the fields v1 lacks */
    assert_int_equal(dst.d, 44);
    assert_int_equal(src.size, sizeof(test_v1_t));
}

static void test_import_newer_source(void **state)
{
    struct {
        test_v2_t src;
        unsigned char beyond[16]; /* past even v2: must not be read as part of anything */
    } buf;
    struct {
        test_v1_t dst;
        unsigned char canary[32];
    } out;
    (void)state;
    memset(&buf, 0xee, sizeof(buf));
    buf.src.size = sizeof(test_v2_t);
    buf.src.magic = TEST_MAGIC;
    buf.src.version = 200;
    buf.src.a = 11;
    buf.src.b = 22;
    memset(&out, 0x33, sizeof(out));
    out.dst.a = 1;
    assert_ncclx_ok(ncclx_struct_import(&out.dst, sizeof(out.dst), &buf.src, TEST_MAGIC,
                                        sizeof(test_v1_t), "test"));
    assert_int_equal(out.dst.size, sizeof(test_v1_t));
    assert_int_equal(out.dst.a, 11);
    assert_int_equal(out.dst.b, 22);
    for (size_t i = 0; i < sizeof(out.canary); i++) {
        assert_int_equal(out.canary[i], 0x33); /* v2's tail did not spill past dst */
    }
}

static void test_import_errors(void **state)
{
    test_v1_t src = TEST_V1_INIT;
    test_v2_t dst = TEST_V2_INIT;
    const test_v2_t before = TEST_V2_INIT;
    (void)state;
    assert_ncclx_error(ncclx_struct_import(&dst, sizeof(dst), NULL, TEST_MAGIC, 8, "thing"),
                       ncclxInvalidArgument, "thing is NULL");
    src.magic = TEST_MAGIC + 1;
    assert_ncclx_error(ncclx_struct_import(&dst, sizeof(dst), &src, TEST_MAGIC, 8, "thing"),
                       ncclxInvalidArgument, "thing->magic=0x6e787479, expected 0x6e787478");
    src.magic = TEST_MAGIC;
    src.size = sizeof(test_v1_t) - 4;
    assert_ncclx_error(
        ncclx_struct_import(&dst, sizeof(dst), &src, TEST_MAGIC, sizeof(test_v1_t), "thing"),
        ncclxInvalidArgument, "thing->size=20 is smaller");
    assert_memory_equal(&dst, &before, sizeof(dst)); /* failed imports wrote nothing */
}

/* Export into a caller's struct of an older layout: only the caller's bytes are written. */
static void test_export_older_caller(void **state)
{
    struct {
        test_v1_t dst;
        unsigned char canary[32];
    } out;
    test_v2_t src = TEST_V2_INIT;
    test_v2_t big = TEST_V2_INIT;
    (void)state;
    memset(&out, 0x44, sizeof(out));
    out.dst.size = sizeof(test_v1_t);
    out.dst.magic = TEST_MAGIC;
    src.a = 7;
    src.b = 8;
    assert_ncclx_ok(ncclx_struct_check_output(&out.dst, TEST_MAGIC, sizeof(test_v1_t), "out"));
    ncclx_struct_export(&out.dst, &src, sizeof(src));
    assert_int_equal(out.dst.size, sizeof(test_v1_t));
    assert_int_equal(out.dst.a, 7);
    assert_int_equal(out.dst.b, 8);
    for (size_t i = 0; i < sizeof(out.canary); i++) {
        assert_int_equal(out.canary[i], 0x44);
    }
    /* Same-size export copies everything. */
    big.c = 0;
    big.d = 0;
    ncclx_struct_export(&big, &src, sizeof(src));
    assert_memory_equal(&big, &src, sizeof(src));
    out.dst.size = 12;
    assert_ncclx_error(ncclx_struct_check_output(&out.dst, TEST_MAGIC, sizeof(test_v1_t), "out"),
                       ncclxInvalidArgument, "out->size=12");
    assert_ncclx_error(ncclx_struct_check_output(NULL, TEST_MAGIC, sizeof(test_v1_t), "out"),
                       ncclxInvalidArgument, "out is NULL");
}

int main(void)
{
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_macros),
        cmocka_unit_test(test_larger_structs),
        cmocka_unit_test(test_plan_v1_m2n_defaults),
        cmocka_unit_test(test_too_small),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_swapped_struct),
        cmocka_unit_test(test_output_sizes),
        cmocka_unit_test(test_import_older_source),
        cmocka_unit_test(test_import_newer_source),
        cmocka_unit_test(test_import_errors),
        cmocka_unit_test(test_export_older_caller),
    };
    /* clang-format on */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
