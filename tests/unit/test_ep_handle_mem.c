/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The split handle lifecycle on the CPU (lib/ep_handle_mem.c): ncclxEpHandleMemSize against the
 * plan's per-handle bytes and hand-computed layouts, its refusals, ncclxEpHandleInit's refusals
 * (each naming the field, nothing taken from the pool), handles initialized on fake device
 * memory (every descriptor piece inside it), dispatch refused until the first update, the
 * group's handle pool, ncclxEpHandleImport's host refusals (everything refused before its verify
 * kernel would be launched: nothing taken from the pool) and ncclxEpGroupGetHtBuffers.  Groups
 * are built from a plan as context setup does, without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "ep_group.h"
#include "plan_internal.h"
#include "pool.h"

/* R ranks, E experts (L = E / R local experts), top-K, hidden H, T tokens per rank. */
enum { R = 4, E = 16, L = E / R, K = 4, H = 256, T = 64, NUM_HANDLES = 3 };

#define LL   NCCLX_EP_ALGO_LL
#define HT   NCCLX_EP_ALGO_HT
#define EM   NCCLX_EP_LAYOUT_EXPERT_MAJOR
#define RM   NCCLX_EP_LAYOUT_RANK_MAJOR
#define FLAT NCCLX_EP_LAYOUT_FLAT

/* A fake device pointer on cudaMalloc's 256-byte alignment: nothing here dereferences it. */
#define MEM ((char *)(uintptr_t)0x10000000u)

/* What a failed call must leave alone. */
#define SENTINEL_HANDLE ((ncclxEpHandle_t)(uintptr_t)0x5a5a5a5au)
#define SENTINEL_BYTES  ((size_t)0xa5a5a5a5u)

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handles[NUM_HANDLES]; /* the pool's objects (host arena) */
    uint32_t bookkeeping[2 * NUM_HANDLES];  /* >= ncclx_pool_bookkeeping_bytes */
    uint32_t status;                        /* the mapped status word: no error */
    size_t plan_per_handle;                 /* ncclxPlanComputeSizes, device */
} fixture_t;

/* A group as context setup builds it from a validated plan (ncclx_context_build_groups and
 * ncclx_ep_group_bind), minus everything that needs a GPU: no arenas, no event. */
static void make_fixture(fixture_t *f, ncclxEpAlgorithm_t algorithm, uint32_t layouts)
{
    ncclxEpGroupPlan_t gp = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[1] = {&gp};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxPlanSizes_t sizes = NCCLX_PLAN_SIZES_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_ep_group_t *g = &f->group;
    assert_non_null(norm);
    memset(f, 0, sizeof(*f));
    gp.algorithm = algorithm;
    gp.num_experts = E;
    gp.max_topk = K;
    gp.hidden = H;
    gp.layouts = layouts;
    gp.max_dispatch_tokens_per_rank = T;
    gp.num_handles = NUM_HANDLES;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    team.num_ranks = team.lsa_size = R;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, &team, &sizes));
    f->plan_per_handle = sizes.per_handle[NCCLX_MEM_DEVICE];
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    g->plan = norm->groups[0];
    assert_ncclx_ok(ncclx_ep_dims_compute(&g->plan, &norm->team, 0, &g->dims));
    free(norm);
    ncclx_ep_ll_handle_layout(&g->dims, (layouts & EM) != 0, &g->handle_layout);
    ncclx_ep_ht_handle_layout(&g->dims, &g->ht_handle_layout);
    g->status = &f->status;
    assert_true(sizeof(f->bookkeeping) >= ncclx_pool_bookkeeping_bytes(NUM_HANDLES));
    ncclx_pool_init(&g->handles, "EP group 0 handles", "raise num_handles in the group's plan",
                    f->handles, sizeof(ncclx_ep_handle_t), NUM_HANDLES, f->bookkeeping);
}

static size_t mem_size(fixture_t *f, uint32_t layout, uint32_t topk)
{
    size_t bytes = SENTINEL_BYTES;
    assert_ncclx_ok(ncclxEpHandleMemSize(&f->group, layout, topk, &bytes));
    assert_true(bytes != SENTINEL_BYTES);
    assert_int_equal(bytes % NCCLX_DEVICE_ALIGN, 0);
    return bytes;
}

static ncclxTensor_t handle_mem(void *data, int64_t bytes)
{
    ncclxTensor_t t = {data, NCCLX_UINT8, 1, {bytes, 0, 0, 0}};
    return t;
}

static ncclxEpHandleConfig_t config_of(uint32_t layout, uint32_t topk)
{
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    c.layout = layout;
    c.topk = topk;
    return c;
}

/* Init on MEM with exactly ncclxEpHandleMemSize bytes. */
static ncclxEpHandle_t init_handle(fixture_t *f, uint32_t layout, uint32_t topk)
{
    const ncclxEpHandleConfig_t c = config_of(layout, topk);
    const ncclxTensor_t mem = handle_mem(MEM, (int64_t)mem_size(f, layout, topk));
    ncclxEpHandle_t h = NULL;
    assert_ncclx_ok(ncclxEpHandleInit(&f->group, &c, &mem, NULL, &h));
    assert_non_null(h);
    return h;
}

/* ---- 1. sizes ---- */

/*
 * R = 4, T = 64, L = 4; every piece is rounded to 16 bytes, the handle to 256.
 *   LL idx, route   T * K * 4 each      (K = 4: 1024)
 *      send, recv   R * 4 each          = 16
 *      recv_tok     R * T * 4           = 1024
 *      recv_pos     R * T * K * 4       (K = 4: 4096; expert-major only)
 *   EM K=4: 1024 + 1024 + 16 + 16 + 1024 + 4096 = 7200 -> 7424
 *   EM K=2:  512 +  512 + 16 + 16 + 1024 + 2048 = 4128 -> 4352
 *   RM K=4: 1024 + 1024 + 16 + 16 + 1024        = 3104 -> 3328
 *   RM K=1:  256 +  256 + 16 + 16 + 1024        = 1568 -> 1792
 *   HT header 64; idx, em_row  T * K * 4 each; flat_row T * R * 4 = 1024; totals 16;
 *      counts 16; offsets (L + 1) * 4 = 20 -> 32; zone_count 16; zone_base 16 (fixed 160)
 *   K=4: 1024 + 1024 + 1024 + 160 = 3232 -> 3328;  K=1: 256 + 1024 + 256 + 160 = 1696 -> 1792
 */
static void test_mem_size_ll(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, LL, EM | RM);
    /* The largest shape is what the plan reserves per handle. */
    assert_int_equal(f.plan_per_handle, 7424);
    assert_int_equal(f.group.dims.handle_bytes, 7424);
    assert_int_equal(mem_size(&f, EM, 0), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, K), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, 2), 4352);
    assert_int_equal(mem_size(&f, RM, K), 3328);
    assert_int_equal(mem_size(&f, RM, 0), mem_size(&f, RM, K));
    assert_int_equal(mem_size(&f, RM, 1), 1792);
    /* Fewer top-k entries, fewer bytes; rank-major has no recv_pos. */
    for (uint32_t k = 1; k < K; k++) {
        assert_true(mem_size(&f, EM, k) < mem_size(&f, EM, k + 1));
        assert_true(mem_size(&f, RM, k) < mem_size(&f, RM, k + 1));
    }
    for (uint32_t k = 1; k <= K; k++) {
        assert_true(mem_size(&f, RM, k) < mem_size(&f, EM, k));
    }
    /* A rank-major-only plan reserves the rank-major size. */
    make_fixture(&f, LL, RM);
    assert_int_equal(f.plan_per_handle, 3328);
    assert_int_equal(mem_size(&f, RM, 0), f.plan_per_handle);
}

static void test_mem_size_ht(void **state)
{
    fixture_t f;
    (void)state;
    make_fixture(&f, HT, EM | FLAT);
    assert_int_equal(f.plan_per_handle, 3328);
    assert_int_equal(f.group.dims.handle_bytes, 3328);
    /* Every HT handle holds both layouts' row maps: the layout does not change the size. */
    assert_int_equal(mem_size(&f, EM, 0), f.plan_per_handle);
    assert_int_equal(mem_size(&f, FLAT, 0), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, K), f.plan_per_handle);
    assert_int_equal(mem_size(&f, FLAT, K), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, 1), 1792);
    for (uint32_t k = 1; k < K; k++) {
        assert_true(mem_size(&f, EM, k) < mem_size(&f, EM, k + 1));
        assert_int_equal(mem_size(&f, FLAT, k), mem_size(&f, EM, k));
    }
    /* One layout in the plan: same per-handle bytes. */
    make_fixture(&f, HT, FLAT);
    assert_int_equal(mem_size(&f, FLAT, 0), f.plan_per_handle);
    assert_int_equal(f.plan_per_handle, 3328);
}

/* ---- 2. MemSize refusals ---- */

/* The call fails with InvalidArgument, names needle, starts with the call's name, and leaves
 * *bytes alone. */
static void expect_mem_size_refused(ncclxEpGroup_t g, uint32_t layout, uint32_t topk,
                                    const char *needle)
{
    size_t bytes = SENTINEL_BYTES;
    assert_ncclx_error(ncclxEpHandleMemSize(g, layout, topk, &bytes), ncclxInvalidArgument, needle);
    assert_true(strncmp(ncclxGetLastError(), "ncclxEpHandleMemSize: ", 22) == 0);
    assert_true(bytes == SENTINEL_BYTES);
}

static void test_mem_size_refused(void **state)
{
    fixture_t f;
    char needle[160];
    (void)state;
    make_fixture(&f, LL, EM | RM);
    expect_mem_size_refused(NULL, EM, 0, "ncclxEpHandleMemSize: group is NULL");
    assert_ncclx_error(ncclxEpHandleMemSize(&f.group, EM, 0, NULL), ncclxInvalidArgument,
                       "ncclxEpHandleMemSize: bytes is NULL");
    /* A layout of the other algorithm. */
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->layout=0x%x: an LL handle is "
             "NCCLX_EP_LAYOUT_EXPERT_MAJOR or NCCLX_EP_LAYOUT_RANK_MAJOR",
             FLAT);
    expect_mem_size_refused(&f.group, FLAT, 0, needle);
    expect_mem_size_refused(&f.group, 0, 0, "ncclxEpHandleMemSize: config->layout=0x0");
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->topk=%u is outside [1, max_topk=%u]", K + 1, K);
    expect_mem_size_refused(&f.group, EM, K + 1, needle);
    expect_mem_size_refused(&f.group, RM, 1000, "ncclxEpHandleMemSize: config->topk=1000");
    /* A layout the algorithm allows but the plan does not. */
    make_fixture(&f, LL, EM);
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->layout=0x%x is not in the group's plan layouts 0x%x",
             RM, EM);
    expect_mem_size_refused(&f.group, RM, 0, needle);

    make_fixture(&f, HT, EM | FLAT);
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->layout=0x%x: an HT handle is NCCLX_EP_LAYOUT_FLAT or "
             "NCCLX_EP_LAYOUT_EXPERT_MAJOR",
             RM);
    expect_mem_size_refused(&f.group, RM, 0, needle);
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->topk=%u is outside [1, max_topk=%u]", K + 1, K);
    expect_mem_size_refused(&f.group, FLAT, K + 1, needle);
    make_fixture(&f, HT, FLAT);
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleMemSize: config->layout=0x%x is not in the group's plan layouts 0x%x",
             EM, FLAT);
    expect_mem_size_refused(&f.group, EM, 0, needle);
}

/* ---- 3. Init refusals ---- */

/* The call fails naming needle, leaves *handle alone and takes nothing from the pool. */
static void expect_init_refused(fixture_t *f, ncclxEpGroup_t g, const ncclxEpHandleConfig_t *c,
                                const ncclxTensor_t *mem, ncclxResult_t expected,
                                const char *needle)
{
    ncclxEpHandle_t h = SENTINEL_HANDLE;
    assert_ncclx_error(ncclxEpHandleInit(g, c, mem, NULL, &h), expected, needle);
    assert_ptr_equal(h, SENTINEL_HANDLE);
    assert_int_equal(ncclx_pool_in_use(&f->group.handles), 0);
}

static void init_refusals(ncclxEpAlgorithm_t algorithm, uint32_t other_layout)
{
    fixture_t f;
    char needle[256];
    make_fixture(&f, algorithm, EM | other_layout);
    const ncclxEpHandleConfig_t c = config_of(EM, K);
    const size_t bytes = mem_size(&f, EM, K);
    const ncclxTensor_t ok = handle_mem(MEM, (int64_t)bytes);
    ncclxTensor_t t;
    ncclxEpHandle_t h = SENTINEL_HANDLE;

    /* NULL arguments. */
    expect_init_refused(&f, NULL, &c, &ok, ncclxInvalidArgument,
                        "ncclxEpHandleInit: group is NULL");
    assert_ncclx_error(ncclxEpHandleInit(&f.group, &c, &ok, NULL, NULL), ncclxInvalidArgument,
                       "ncclxEpHandleInit: handle is NULL");
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), 0);
    expect_init_refused(&f, &f.group, &c, NULL, ncclxInvalidArgument,
                        "ncclxEpHandleInit: handle_mem is NULL");
    expect_init_refused(&f, &f.group, NULL, &ok, ncclxInvalidArgument, "config is NULL");

    /* The tensor: dtype, rank, data. */
    t = ok;
    t.dtype = NCCLX_INT32;
    snprintf(needle, sizeof(needle), "ncclxEpHandleInit: handle_mem.dtype=%d is not allowed",
             (int)NCCLX_INT32);
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, needle);
    t = ok;
    t.ndim = 2;
    t.shape[1] = 1;
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument,
                        "ncclxEpHandleInit: handle_mem.ndim=2, expected 1");
    t = ok;
    t.data = NULL;
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument,
                        "ncclxEpHandleInit: handle_mem.data is NULL");
    t = ok;
    t.data = MEM + 8;
    snprintf(needle, sizeof(needle), "ncclxEpHandleInit: handle_mem.data=%p is not 16-byte aligned",
             (void *)(MEM + 8));
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, needle);
    t = ok;
    t.shape[0] = -1;
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument,
                        "ncclxEpHandleInit: handle_mem.shape[0]=-1");

    /* One byte short, and memory sized for a smaller top-k: the message gives what is needed. */
    t = ok;
    t.shape[0] = (int64_t)bytes - 1;
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleInit: handle_mem.shape[0]=%lld bytes, but a handle of layout 0x%x and "
             "topk %u needs %zu (ncclxEpHandleMemSize)",
             (long long)bytes - 1, EM, K, bytes);
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, needle);
    t.shape[0] = (int64_t)mem_size(&f, EM, 1);
    snprintf(needle, sizeof(needle),
             "handle_mem.shape[0]=%lld bytes, but a handle of layout 0x%x "
             "and topk %u needs %zu",
             (long long)t.shape[0], EM, K, bytes);
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, needle);
    t.shape[0] = 0;
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, "handle_mem.shape[0]=0 bytes");
    t.data = NULL; /* an empty tensor may have no data: still too small */
    expect_init_refused(&f, &f.group, &c, &t, ncclxInvalidArgument, "handle_mem.shape[0]=0 bytes");

    /* The config: top-k 0 (MemSize's "max" is not a handle's top-k), above max, a layout the
     * algorithm refuses, a layout outside the plan, global_expert_ids. */
    ncclxEpHandleConfig_t bad = config_of(EM, 0);
    snprintf(needle, sizeof(needle), "config->topk=0 is outside [1, max_topk=%u]", K);
    expect_init_refused(&f, &f.group, &bad, &ok, ncclxInvalidArgument, needle);
    bad = config_of(EM, K + 1);
    snprintf(needle, sizeof(needle), "config->topk=%u is outside [1, max_topk=%u]", K + 1, K);
    expect_init_refused(&f, &f.group, &bad, &ok, ncclxInvalidArgument, needle);
    bad = config_of(algorithm == HT ? RM : FLAT, 1);
    snprintf(needle, sizeof(needle), "config->layout=0x%x: an %s handle is", bad.layout,
             algorithm == HT ? "HT" : "LL");
    expect_init_refused(&f, &f.group, &bad, &ok, ncclxInvalidArgument, needle);
    bad = config_of(EM, 1);
    bad.global_expert_ids = 2;
    expect_init_refused(&f, &f.group, &bad, &ok, ncclxInvalidArgument,
                        "config->global_expert_ids=2: must be 0 or 1");
    make_fixture(&f, algorithm, other_layout);
    bad = config_of(EM, 1);
    snprintf(needle, sizeof(needle), "config->layout=0x%x is not in the group's plan layouts 0x%x",
             EM, other_layout);
    expect_init_refused(&f, &f.group, &bad, &ok, ncclxInvalidArgument, needle);

    /* An asynchronous error of the group (overflow) refuses it too. */
    make_fixture(&f, algorithm, EM | other_layout);
    f.status = NCCLX_EP_ERROR_OVERFLOW;
    expect_init_refused(&f, &f.group, &c, &ok, ncclxInvalidUsage,
                        "ncclxEpHandleInit: a routing of EP group 0 needed more receive rows");
    f.status = 0;
    assert_ncclx_ok(ncclxEpHandleInit(&f.group, &c, &ok, NULL, &h));
    assert_ncclx_ok(ncclxEpHandleDestroy(h));
}

static void test_init_refused_ll(void **state)
{
    (void)state;
    init_refusals(LL, RM);
}

static void test_init_refused_ht(void **state)
{
    (void)state;
    init_refusals(HT, FLAT);
}

/* ---- 4. Init on caller memory ---- */

typedef struct {
    const char *name;
    const void *p;
    size_t bytes; /* what the layout comments say the piece holds */
} piece_t;

/* Every piece lies inside [base, base + bytes), is 8-byte aligned, and overlaps no other. */
static void check_pieces(const piece_t *pieces, int n, const char *base, size_t bytes)
{
    for (int i = 0; i < n; i++) {
        const uintptr_t p = (uintptr_t)pieces[i].p, b = (uintptr_t)base;
        if (pieces[i].p == NULL || p < b || p + pieces[i].bytes > b + bytes || p % 8 != 0) {
            fail_msg("%s=%p (%zu bytes) is not an aligned piece of [%p, %p)", pieces[i].name,
                     pieces[i].p, pieces[i].bytes, (const void *)base,
                     (const void *)(base + bytes));
        }
        for (int j = 0; j < i; j++) {
            const uintptr_t q = (uintptr_t)pieces[j].p;
            if (p < q + pieces[j].bytes && q < p + pieces[i].bytes) {
                fail_msg("%s and %s overlap", pieces[i].name, pieces[j].name);
            }
        }
    }
}

static void check_ll_handle(const ncclx_ep_handle_t *h, uint32_t layout, uint32_t k, size_t bytes)
{
    const ncclx_ep_ll_handle_desc_t *d = &h->desc;
    const piece_t pieces[] = {
        {"idx", d->idx, (size_t)T * k * 4},
        {"route", d->route, (size_t)T * k * 4},
        {"send_count", d->send_count, (size_t)R * 4},
        {"recv_count", d->recv_count, (size_t)R * 4},
        {"recv_tok", d->recv_tok, (size_t)R * T * 4},
        {"recv_pos", d->recv_pos, (size_t)R * T * k * 4},
    };
    check_pieces(pieces, layout == EM ? 6 : 5, MEM, bytes);
    if (layout != EM) {
        assert_null(d->recv_pos);
    }
    assert_int_equal(d->topk, k);
    assert_int_equal(d->expert_major, layout == EM);
    assert_int_equal(d->num_tokens, 0);
}

static void check_ht_handle(const ncclx_ep_handle_t *h, uint32_t layout, uint32_t k, size_t bytes)
{
    const ncclx_ep_ht_handle_desc_t *d = &h->ht;
    const piece_t pieces[] = {
        {"idx", d->idx, (size_t)T * k * 4},
        {"flat_row", d->flat_row, (size_t)T * R * 4},
        {"totals", d->totals, 2 * 8},
        {"counts", d->counts, (size_t)L * 4},
        {"offsets", d->offsets, (size_t)(L + 1) * 4},
        {"zone_count", d->zone_count, (size_t)L * 4},
        {"zone_base", d->zone_base, (size_t)L * 4},
        {"em_row", d->em_row, (size_t)T * k * 4},
    };
    check_pieces(pieces, layout == EM ? 8 : 7, MEM, bytes);
    if (layout != EM) {
        assert_null(d->em_row);
    }
    assert_int_equal(d->topk, k);
    assert_int_equal(d->expert_major, layout == EM);
    assert_int_equal(d->num_tokens, 0);
}

static void init_success(ncclxEpAlgorithm_t algorithm, uint32_t other_layout)
{
    fixture_t f;
    make_fixture(&f, algorithm, EM | other_layout);
    const uint32_t layouts[2] = {EM, other_layout};
    for (int l = 0; l < 2; l++) {
        for (uint32_t k = 1; k <= K; k++) {
            const size_t bytes = mem_size(&f, layouts[l], k);
            ncclxEpHandle_t h = init_handle(&f, layouts[l], k);
            print_message("%s %s top-%u: %zu bytes\n", algorithm == HT ? "HT" : "LL",
                          layouts[l] == EM   ? "EM"
                          : layouts[l] == RM ? "RM"
                                             : "FLAT",
                          k, bytes);
            assert_ptr_equal(h->group, &f.group);
            assert_int_equal(h->live, 1);
            assert_int_equal(h->routed, 0);
            assert_int_equal(h->dispatched, 0);
            assert_int_equal(h->caller_memory, 1);
            assert_int_equal(h->pending, NCCLX_EP_PENDING_NONE);
            assert_int_equal(h->config.layout, layouts[l]);
            assert_int_equal(h->config.topk, k);
            if (algorithm == HT) {
                check_ht_handle(h, layouts[l], k, bytes);
            } else {
                check_ll_handle(h, layouts[l], k, bytes);
            }
            assert_int_equal(ncclx_pool_in_use(&f.group.handles), 1);
            assert_ncclx_ok(ncclxEpHandleDestroy(h));
            assert_int_equal(ncclx_pool_in_use(&f.group.handles), 0);
        }
    }
    /* More memory than needed is fine ("at least"). */
    const ncclxEpHandleConfig_t c = config_of(EM, K);
    const ncclxTensor_t big = handle_mem(MEM, (int64_t)mem_size(&f, EM, K) + 4096);
    ncclxEpHandle_t h = NULL;
    assert_ncclx_ok(ncclxEpHandleInit(&f.group, &c, &big, NULL, &h));
    assert_int_equal(h->caller_memory, 1);
    assert_ncclx_ok(ncclxEpHandleDestroy(h));
}

static void test_init_ll(void **state)
{
    (void)state;
    init_success(LL, RM);
}

static void test_init_ht(void **state)
{
    (void)state;
    init_success(HT, FLAT);
}

/* ---- 5. no dispatch before the first update ---- */

static void no_dispatch_before_update(ncclxEpAlgorithm_t algorithm, uint32_t other_layout)
{
    fixture_t f;
    make_fixture(&f, algorithm, EM | other_layout);
    const uint32_t layouts[2] = {EM, other_layout};
    for (int l = 0; l < 2; l++) {
        ncclxEpHandle_t h = init_handle(&f, layouts[l], K);
        /* Default arguments: the routing check comes before the argument checks. */
        const ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
        const ncclxEpCombineArgs_t c = NCCLX_EP_COMBINE_ARGS_INIT;
        assert_ncclx_error(ncclxEpDispatch(h, &a, NULL), ncclxInvalidUsage,
                           "ncclxEpHandleInit gave it none");
        assert_ncclx_error(ncclxEpDispatch(h, &a, NULL), ncclxInvalidUsage,
                           "ncclxEpDispatch: handle 0 has no routing");
        assert_ncclx_error(ncclxEpCombine(h, &c, NULL), ncclxInvalidUsage,
                           "ncclxEpCombine: handle 0 has no completed dispatch");
        if (algorithm == HT) {
            const ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
            assert_ncclx_error(ncclxEpHandleGetLayout(h, &info, NULL), ncclxInvalidUsage,
                               "ncclxEpHandleGetLayout: handle 0 has no routing");
        }
        /* Nothing was enqueued, the handle is as Init left it. */
        assert_int_equal(h->routed, 0);
        assert_int_equal(h->dispatched, 0);
        assert_int_equal(h->pending, NCCLX_EP_PENDING_NONE);
        assert_null(f.group.send_in_flight);
        assert_null(f.group.last_stream);
        assert_ncclx_ok(ncclxEpHandleDestroy(h));
    }
}

static void test_no_dispatch_before_update_ll(void **state)
{
    (void)state;
    no_dispatch_before_update(LL, RM);
}

static void test_no_dispatch_before_update_ht(void **state)
{
    (void)state;
    no_dispatch_before_update(HT, FLAT);
}

/* ---- 6. the group's handle pool ---- */

static void pool_reuse(ncclxEpAlgorithm_t algorithm, uint32_t other_layout)
{
    fixture_t f;
    char needle[160];
    ncclxEpHandle_t h[NUM_HANDLES];
    ncclxEpHandle_t extra = SENTINEL_HANDLE;
    make_fixture(&f, algorithm, EM | other_layout);
    const ncclxEpHandleConfig_t c = config_of(EM, K);
    const ncclxTensor_t mem = handle_mem(MEM, (int64_t)mem_size(&f, EM, K));
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        h[i] = init_handle(&f, i % 2 ? other_layout : EM, K);
        assert_int_equal(h[i]->index, i); /* lowest free slot first */
    }
    snprintf(needle, sizeof(needle), "EP group 0 handles: all %u are in use (raise num_handles",
             NUM_HANDLES);
    assert_ncclx_error(ncclxEpHandleInit(&f.group, &c, &mem, NULL, &extra), ncclxResourceExhausted,
                       needle);
    assert_ptr_equal(extra, SENTINEL_HANDLE);
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), NUM_HANDLES);

    /* The middle slot, routed and dispatched as if updates and a dispatch had run: its next
     * handle starts with nothing. */
    ncclx_ep_handle_t *old = h[1];
    old->routed = 1;
    old->dispatched = 1;
    old->route_gen = 7;
    assert_ncclx_ok(ncclxEpHandleDestroy(old));
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), NUM_HANDLES - 1);
    assert_ncclx_error(ncclxEpHandleDestroy(old), ncclxInvalidUsage,
                       "ncclxEpHandleDestroy: the handle was destroyed");
    assert_ncclx_ok(ncclxEpHandleInit(&f.group, &c, &mem, NULL, &extra));
    assert_ptr_equal(extra, old); /* the slot was reused */
    assert_int_equal(extra->index, 1);
    assert_int_equal(extra->live, 1);
    assert_int_equal(extra->routed, 0);
    assert_int_equal(extra->dispatched, 0);
    assert_int_equal(extra->caller_memory, 1);
    assert_int_equal(extra->config.layout, EM);
    const ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    assert_ncclx_error(ncclxEpDispatch(extra, &a, NULL), ncclxInvalidUsage,
                       "ncclxEpDispatch: handle 1 has no routing (ncclxEpHandleInit gave it none");
    assert_ncclx_error(ncclxEpHandleInit(&f.group, &c, &mem, NULL, &extra), ncclxResourceExhausted,
                       needle);

    assert_ncclx_ok(ncclxEpHandleDestroy(h[0]));
    assert_ncclx_ok(ncclxEpHandleDestroy(extra));
    assert_ncclx_ok(ncclxEpHandleDestroy(h[2]));
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), 0);
}

static void test_pool_ll(void **state)
{
    (void)state;
    pool_reuse(LL, RM);
}

static void test_pool_ht(void **state)
{
    (void)state;
    pool_reuse(HT, FLAT);
}

/* ---- 7. Import refusals (all on the host, before the verify kernel) ---- */

/* Every slot of the pool is free: num_handles Inits succeed, each on its own slot, and the
 * next one is refused; all are destroyed again (in reverse, restoring the pool's order). */
static void expect_pool_free(fixture_t *f, uint32_t layout)
{
    ncclxEpHandle_t h[NUM_HANDLES];
    ncclxEpHandle_t extra = SENTINEL_HANDLE;
    uint32_t slots = 0;
    assert_int_equal(ncclx_pool_in_use(&f->group.handles), 0);
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        h[i] = init_handle(f, layout, K);
        assert_true(h[i]->index < NUM_HANDLES);
        assert_false(slots & (1u << h[i]->index));
        slots |= 1u << h[i]->index;
    }
    const ncclxEpHandleConfig_t c = config_of(layout, K);
    const ncclxTensor_t mem = handle_mem(MEM, (int64_t)mem_size(f, layout, K));
    assert_ncclx_error(ncclxEpHandleInit(&f->group, &c, &mem, NULL, &extra), ncclxResourceExhausted,
                       "all 3 are in use");
    assert_ptr_equal(extra, SENTINEL_HANDLE);
    for (uint32_t i = NUM_HANDLES; i-- > 0;) {
        assert_ncclx_ok(ncclxEpHandleDestroy(h[i]));
    }
    assert_int_equal(ncclx_pool_in_use(&f->group.handles), 0);
}

/* The call fails naming needle, leaves *handle alone and takes nothing from the pool (checked
 * by filling the pool with Inits of pool_layout, unless the group's status refuses them). */
static void expect_import_refused(fixture_t *f, ncclxEpGroup_t g, uint32_t layout,
                                  const ncclxEpHandleState_t *st, const ncclxTensor_t *mem,
                                  ncclxResult_t expected, const char *needle, uint32_t pool_layout)
{
    ncclxEpHandle_t h = SENTINEL_HANDLE;
    assert_ncclx_error(ncclxEpHandleImport(g, layout, st, mem, NULL, &h), expected, needle);
    assert_ptr_equal(h, SENTINEL_HANDLE);
    assert_int_equal(ncclx_pool_in_use(&f->group.handles), 0);
    if (f->status == 0) {
        expect_pool_free(f, pool_layout);
    }
}

static ncclxEpHandleState_t state_of(uint32_t num_tokens, uint32_t topk)
{
    ncclxEpHandleState_t s = NCCLX_EP_HANDLE_STATE_INIT;
    s.num_tokens = num_tokens;
    s.topk = topk;
    return s;
}

static void test_import_refused_args(void **state)
{
    fixture_t f;
    char needle[256];
    (void)state;
    make_fixture(&f, HT, EM | FLAT);
    const ncclxEpHandleState_t st = state_of(T, K);
    const ncclxTensor_t ok = handle_mem(MEM, (int64_t)mem_size(&f, EM, K));
    ncclxEpHandleState_t bad;

    /* NULL arguments: group, handle and handle_mem first, then the state struct. */
    expect_import_refused(&f, NULL, EM, &st, &ok, ncclxInvalidArgument,
                          "ncclxEpHandleImport: group is NULL", EM);
    assert_ncclx_error(ncclxEpHandleImport(&f.group, EM, &st, &ok, NULL, NULL),
                       ncclxInvalidArgument, "ncclxEpHandleImport: handle is NULL");
    expect_pool_free(&f, EM);
    expect_import_refused(&f, &f.group, EM, &st, NULL, ncclxInvalidArgument,
                          "ncclxEpHandleImport: handle_mem is NULL", EM);
    expect_import_refused(&f, NULL, EM, NULL, NULL, ncclxInvalidArgument,
                          "ncclxEpHandleImport: group is NULL", EM);
    expect_import_refused(&f, &f.group, EM, NULL, &ok, ncclxInvalidArgument, "state is NULL", EM);

    /* The state struct's header. */
    bad = st;
    bad.magic = NCCLX_MAGIC_EP_HANDLE_CONFIG;
    snprintf(needle, sizeof(needle), "state->magic=0x%08x, expected 0x%08x",
             NCCLX_MAGIC_EP_HANDLE_CONFIG, NCCLX_MAGIC_EP_HANDLE_STATE);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, needle, EM);
    bad.magic = 0;
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, "state->magic=0x0",
                          EM);
    bad = st;
    bad.size = 16;
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument,
                          "state->size=16 is smaller than the first released layout (32 bytes)",
                          EM);

    /* The layout: one HT refuses, none at all. */
    snprintf(needle, sizeof(needle),
             "config->layout=0x%x: an HT handle is NCCLX_EP_LAYOUT_FLAT or "
             "NCCLX_EP_LAYOUT_EXPERT_MAJOR",
             RM);
    expect_import_refused(&f, &f.group, RM, &st, &ok, ncclxInvalidArgument, needle, EM);
    expect_import_refused(&f, &f.group, 0, &st, &ok, ncclxInvalidArgument,
                          "config->layout=0x0:", EM);
    expect_import_refused(&f, &f.group, EM | FLAT, &st, &ok, ncclxInvalidArgument,
                          "config->layout=", EM);

    /* state->topk 0 and above max_topk, state->global_expert_ids 2: the config's checks. */
    bad = state_of(T, 0);
    snprintf(needle, sizeof(needle), "config->topk=0 is outside [1, max_topk=%u]", K);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, needle, EM);
    bad = state_of(T, K + 1);
    snprintf(needle, sizeof(needle), "config->topk=%u is outside [1, max_topk=%u]", K + 1, K);
    expect_import_refused(&f, &f.group, FLAT, &bad, &ok, ncclxInvalidArgument, needle, EM);
    bad = state_of(T, K);
    bad.global_expert_ids = 2;
    expect_import_refused(&f, &f.group, FLAT, &bad, &ok, ncclxInvalidArgument,
                          "config->global_expert_ids=2: must be 0 or 1", EM);

    /* state->num_tokens above T (T itself passes this check: the next one refuses). */
    bad = state_of(T + 1, K);
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleImport: state->num_tokens=%u exceeds the group's "
             "max_dispatch_tokens_per_rank=%u",
             T + 1, T);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, needle, EM);
    bad = state_of(UINT32_MAX, K);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument,
                          "state->num_tokens=4294967295 exceeds", EM);

    /* state->topk_idx_dtype: only the routing's integer types. */
    bad = state_of(T, K);
    bad.topk_idx_dtype = NCCLX_FLOAT32;
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleImport: state->topk_idx_dtype=%d: NCCLX_INT32 or NCCLX_INT64",
             (int)NCCLX_FLOAT32);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, needle, EM);
    bad.topk_idx_dtype = NCCLX_UINT8;
    bad.num_tokens = 0;
    expect_import_refused(&f, &f.group, FLAT, &bad, &ok, ncclxInvalidArgument,
                          "state->topk_idx_dtype=", EM);
}

/* handle_mem of an import: the tensor checks and a snapshot shorter than a handle of the state's
 * top-k (truncated), for both HT layouts. */
static void test_import_refused_mem(void **state)
{
    fixture_t f;
    char needle[320];
    (void)state;
    make_fixture(&f, HT, EM | FLAT);
    const uint32_t layouts[2] = {EM, FLAT};
    for (int l = 0; l < 2; l++) {
        const uint32_t layout = layouts[l];
        const ncclxEpHandleState_t st = state_of(T, K);
        const size_t bytes = mem_size(&f, layout, K);
        const ncclxTensor_t ok = handle_mem(MEM, (int64_t)bytes);
        ncclxTensor_t t;

        t = ok;
        t.dtype = NCCLX_INT32;
        snprintf(needle, sizeof(needle), "ncclxEpHandleImport: handle_mem.dtype=%d is not allowed",
                 (int)NCCLX_INT32);
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument, needle, EM);
        t.dtype = NCCLX_FLOAT32;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "ncclxEpHandleImport: handle_mem.dtype=", EM);
        t = ok;
        t.ndim = 2;
        t.shape[1] = 1;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "ncclxEpHandleImport: handle_mem.ndim=2, expected 1", EM);
        t = ok;
        t.data = NULL;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "ncclxEpHandleImport: handle_mem.data is NULL", EM);
        t = ok;
        t.data = MEM + 8;
        snprintf(needle, sizeof(needle),
                 "ncclxEpHandleImport: handle_mem.data=%p is not 16-byte aligned",
                 (void *)(MEM + 8));
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument, needle, EM);
        t = ok;
        t.shape[0] = -1;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "ncclxEpHandleImport: handle_mem.shape[0]=-1", EM);

        /* One byte short of MemSize(layout, state->topk): a truncated snapshot. */
        t = ok;
        t.shape[0] = (int64_t)bytes - 1;
        snprintf(needle, sizeof(needle),
                 "ncclxEpHandleImport: handle_mem.shape[0]=%lld bytes, but a handle of layout "
                 "0x%x and topk %u needs %zu (ncclxEpHandleMemSize): the snapshot is truncated",
                 (long long)bytes - 1, layout, K, bytes);
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument, needle, EM);
        /* The size follows state->topk: a snapshot of a top-2 handle is shorter. */
        const ncclxEpHandleState_t st2 = state_of(T, 2);
        const size_t bytes2 = mem_size(&f, layout, 2);
        assert_true(bytes2 < bytes);
        t.shape[0] = (int64_t)bytes2 - 1;
        snprintf(needle, sizeof(needle),
                 "handle_mem.shape[0]=%lld bytes, but a handle of layout 0x%x and topk 2 needs "
                 "%zu (ncclxEpHandleMemSize): the snapshot is truncated",
                 (long long)bytes2 - 1, layout, bytes2);
        expect_import_refused(&f, &f.group, layout, &st2, &t, ncclxInvalidArgument, needle, EM);
        /* A top-2 snapshot is too short for a top-K state. */
        t.shape[0] = (int64_t)bytes2;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "the snapshot is truncated", EM);
        t.shape[0] = 0;
        expect_import_refused(&f, &f.group, layout, &st, &t, ncclxInvalidArgument,
                              "handle_mem.shape[0]=0 bytes", EM);
    }
}

/* The group: LL, not in the plan's layouts, broken, an asynchronous error, its pool full. */
static void test_import_refused_group(void **state)
{
    fixture_t f;
    char needle[256];
    (void)state;
    const ncclxEpHandleState_t st = state_of(T, K);
    ncclxEpHandle_t h = SENTINEL_HANDLE;

    /* LL: refused whatever the layout, once the state struct is valid. */
    make_fixture(&f, LL, EM | RM);
    const ncclxTensor_t ll_mem = handle_mem(MEM, (int64_t)mem_size(&f, EM, K));
    const uint32_t ll_layouts[3] = {EM, RM, FLAT};
    for (int l = 0; l < 3; l++) {
        expect_import_refused(&f, &f.group, ll_layouts[l], &st, &ll_mem, ncclxInvalidUsage,
                              "ncclxEpHandleImport: EP group 0 is LL (snapshots are of HT handles)",
                              EM);
    }
    expect_import_refused(&f, &f.group, EM, NULL, &ll_mem, ncclxInvalidArgument, "state is NULL",
                          EM);

    /* An HT layout the plan does not hold. */
    make_fixture(&f, HT, FLAT);
    const ncclxTensor_t flat_mem = handle_mem(MEM, (int64_t)mem_size(&f, FLAT, K));
    snprintf(needle, sizeof(needle), "config->layout=0x%x is not in the group's plan layouts 0x%x",
             EM, FLAT);
    expect_import_refused(&f, &f.group, EM, &st, &flat_mem, ncclxInvalidArgument, needle, FLAT);

    /* Broken (a launch failed in the middle of a step): the arguments are checked first. */
    make_fixture(&f, HT, EM | FLAT);
    const ncclxTensor_t ok = handle_mem(MEM, (int64_t)mem_size(&f, EM, K));
    f.group.broken = 1;
    expect_import_refused(&f, &f.group, EM, &st, &ok, ncclxInvalidUsage,
                          "ncclxEpHandleImport: EP group 0 is unusable", EM);
    expect_import_refused(&f, &f.group, FLAT, &st, &ok, ncclxInvalidUsage, "unusable", EM);
    ncclxEpHandleState_t bad = state_of(T + 1, K);
    expect_import_refused(&f, &f.group, EM, &bad, &ok, ncclxInvalidArgument, "state->num_tokens",
                          EM);
    /* Broken wins over an asynchronous error. */
    f.status = NCCLX_EP_ERROR_OVERFLOW;
    expect_import_refused(&f, &f.group, EM, &st, &ok, ncclxInvalidUsage, "unusable", EM);
    f.status = 0;
    f.group.broken = 0;

    /* An overflow under TRAP: the asynchronous check refuses. */
    f.status = NCCLX_EP_ERROR_OVERFLOW;
    snprintf(needle, sizeof(needle),
             "ncclxEpHandleImport: a routing of EP group 0 needed more receive rows than its "
             "max_recv_tokens_per_rank=%u",
             f.group.dims.recv_slots);
    expect_import_refused(&f, &f.group, EM, &st, &ok, ncclxInvalidUsage, needle, EM);
    f.status |= NCCLX_EP_ERROR_MISMATCH;
    expect_import_refused(&f, &f.group, FLAT, &st, &ok, ncclxInvalidUsage,
                          "max_recv_tokens_per_rank", EM);
    f.status = 0;
    expect_pool_free(&f, EM);

    /* A timeout with no active mask: the group's results are undefined. */
    f.status = NCCLX_EP_ERROR_TIMEOUT;
    expect_import_refused(&f, &f.group, EM, &st, &ok, ncclxTimeout,
                          "ncclxEpHandleImport: a GPU wait of an earlier operation in EP group 0 "
                          "timed out",
                          EM);
    f.status = 0;
    expect_pool_free(&f, EM);

    /* Every handle in use: the pool refuses before anything is launched. */
    ncclxEpHandle_t held[NUM_HANDLES];
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        held[i] = init_handle(&f, EM, K);
    }
    snprintf(needle, sizeof(needle), "EP group 0 handles: all %u are in use", NUM_HANDLES);
    assert_ncclx_error(ncclxEpHandleImport(&f.group, EM, &st, &ok, NULL, &h),
                       ncclxResourceExhausted, needle);
    assert_ptr_equal(h, SENTINEL_HANDLE);
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), NUM_HANDLES);
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        assert_ncclx_ok(ncclxEpHandleDestroy(held[i]));
    }
    expect_pool_free(&f, EM);
}

/* ---- 8. HT zero-copy buffers ---- */

#define DISPATCH_ROWS ((char *)(uintptr_t)0x20000000u)
#define COMBINE_ROWS  ((char *)(uintptr_t)0x30000000u)

/* The call fails naming needle and leaves every byte of *b alone. */
static void expect_buffers_refused(ncclxEpGroup_t g, ncclxEpHtBuffers_t *b, ncclxResult_t expected,
                                   const char *needle)
{
    ncclxEpHtBuffers_t before;
    memcpy(&before, b, sizeof(before));
    assert_ncclx_error(ncclxEpGroupGetHtBuffers(g, b), expected, needle);
    assert_memory_equal(&before, b, sizeof(before));
}

static void check_buffers(const fixture_t *f, const ncclxEpHtBuffers_t *b)
{
    const ncclx_ep_group_t *g = &f->group;
    assert_int_equal(b->magic, NCCLX_MAGIC_EP_HT_BUFFERS);
    assert_ptr_equal(b->dispatch_rows, DISPATCH_ROWS);
    assert_ptr_equal(b->combine_rows, COMBINE_ROWS);
    assert_ptr_equal(b->dispatch_rows, g->ht_dispatch_rows);
    assert_ptr_equal(b->combine_rows, g->ht_combine_rows);
    assert_int_equal(b->dispatch_row_bytes, g->dims.payload_bytes);
    assert_int_equal(b->combine_row_bytes, g->dims.combine_slot_bytes);
    assert_int_equal(b->rows, g->dims.recv_slots);
    assert_int_equal(b->reserved0, 0);
    /* Sanity: the geometry is real (a bf16 row of H at least, whole 16-byte rows). */
    assert_true(b->rows > 0);
    assert_true(b->dispatch_row_bytes >= (uint64_t)H * 2);
    assert_true(b->combine_row_bytes >= (uint64_t)H * 2);
    assert_int_equal(b->dispatch_row_bytes % 16, 0);
    assert_int_equal(b->combine_row_bytes % 16, 0);
}

static void test_ht_buffers_refused(void **state)
{
    fixture_t f;
    char needle[160];
    ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
    (void)state;
    make_fixture(&f, HT, EM | FLAT);
    f.group.ht_dispatch_rows = DISPATCH_ROWS;
    f.group.ht_combine_rows = COMBINE_ROWS;

    expect_buffers_refused(NULL, &b, ncclxInvalidArgument,
                           "ncclxEpGroupGetHtBuffers: group is NULL");
    assert_ncclx_error(ncclxEpGroupGetHtBuffers(&f.group, NULL), ncclxInvalidArgument,
                       "ncclxEpGroupGetHtBuffers: buffers is NULL");
    assert_ncclx_error(ncclxEpGroupGetHtBuffers(NULL, NULL), ncclxInvalidArgument,
                       "ncclxEpGroupGetHtBuffers: group is NULL");

    /* The output struct: a foreign or zero magic, a size below v1. */
    b.magic = NCCLX_MAGIC_EP_LAYOUT_INFO;
    snprintf(needle, sizeof(needle), "buffers->magic=0x%08x, expected 0x%08x",
             NCCLX_MAGIC_EP_LAYOUT_INFO, NCCLX_MAGIC_EP_HT_BUFFERS);
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument, needle);
    b.magic = 0;
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument, "buffers->magic=0x00000000");
    b = (ncclxEpHtBuffers_t)NCCLX_EP_HT_BUFFERS_INIT;
    assert_int_equal(b.size, 56);
    b.size = 55;
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument,
                           "buffers->size=55 is smaller than the first released layout (56 bytes)");
    b.size = 0;
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument, "buffers->size=0 is smaller");
    b.size = 16;
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument, "buffers->size=16 is smaller");

    /* LL: no zero-copy buffers (even with the fields set). */
    make_fixture(&f, LL, EM | RM);
    f.group.ht_dispatch_rows = DISPATCH_ROWS;
    f.group.ht_combine_rows = COMBINE_ROWS;
    b = (ncclxEpHtBuffers_t)NCCLX_EP_HT_BUFFERS_INIT;
    expect_buffers_refused(&f.group, &b, ncclxInvalidUsage,
                           "ncclxEpGroupGetHtBuffers: EP group 0 is LL (zero-copy buffers are an "
                           "HT feature)");
    /* The struct check comes first. */
    b.magic = 0;
    expect_buffers_refused(&f.group, &b, ncclxInvalidArgument, "buffers->magic");
}

static void test_ht_buffers(void **state)
{
    fixture_t f;
    (void)state;
    const uint32_t plans[2] = {EM | FLAT, FLAT};
    for (int p = 0; p < 2; p++) {
        make_fixture(&f, HT, plans[p]);
        f.group.ht_dispatch_rows = DISPATCH_ROWS;
        f.group.ht_combine_rows = COMBINE_ROWS;
        print_message("HT plan layouts 0x%x: %u rows of %zu dispatch, %zu combine bytes\n",
                      plans[p], f.group.dims.recv_slots, f.group.dims.payload_bytes,
                      f.group.dims.combine_slot_bytes);

        /* Exactly the library's struct, its output fields preset to garbage. */
        ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
        b.dispatch_rows = b.combine_rows = MEM;
        b.dispatch_row_bytes = b.combine_row_bytes = 1;
        b.rows = b.reserved0 = 7;
        assert_ncclx_ok(ncclxEpGroupGetHtBuffers(&f.group, &b));
        assert_int_equal(b.size, sizeof(ncclxEpHtBuffers_t));
        check_buffers(&f, &b);
        /* Repeatable. */
        assert_ncclx_ok(ncclxEpGroupGetHtBuffers(&f.group, &b));
        check_buffers(&f, &b);

        /* A caller compiled against a larger struct: its tail is not the library's. */
        struct {
            ncclxEpHtBuffers_t b;
            unsigned char tail[16];
        } big;
        unsigned char expected_tail[16];
        memset(&big, 0xa5, sizeof(big));
        memset(expected_tail, 0xa5, sizeof(expected_tail));
        big.b = (ncclxEpHtBuffers_t)NCCLX_EP_HT_BUFFERS_INIT;
        big.b.size = sizeof(ncclxEpHtBuffers_t) + 16;
        assert_int_equal(sizeof(big), sizeof(ncclxEpHtBuffers_t) + 16);
        assert_ncclx_ok(ncclxEpGroupGetHtBuffers(&f.group, &big.b));
        assert_int_equal(big.b.size, sizeof(ncclxEpHtBuffers_t) + 16);
        check_buffers(&f, &big.b);
        assert_memory_equal(big.tail, expected_tail, sizeof(expected_tail));
    }

    /* NULL buffer pointers (a group without symmetric rows) come back as they are. */
    make_fixture(&f, HT, EM | FLAT);
    ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
    b.dispatch_rows = b.combine_rows = MEM;
    assert_ncclx_ok(ncclxEpGroupGetHtBuffers(&f.group, &b));
    assert_null(b.dispatch_rows);
    assert_null(b.combine_rows);
    assert_int_equal(b.rows, f.group.dims.recv_slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mem_size_ll),
        cmocka_unit_test(test_mem_size_ht),
        cmocka_unit_test(test_mem_size_refused),
        cmocka_unit_test(test_init_refused_ll),
        cmocka_unit_test(test_init_refused_ht),
        cmocka_unit_test(test_init_ll),
        cmocka_unit_test(test_init_ht),
        cmocka_unit_test(test_no_dispatch_before_update_ll),
        cmocka_unit_test(test_no_dispatch_before_update_ht),
        cmocka_unit_test(test_pool_ll),
        cmocka_unit_test(test_pool_ht),
        cmocka_unit_test(test_import_refused_args),
        cmocka_unit_test(test_import_refused_mem),
        cmocka_unit_test(test_import_refused_group),
        cmocka_unit_test(test_ht_buffers_refused),
        cmocka_unit_test(test_ht_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
