/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The split handle lifecycle on the CPU (lib/ep/ep_handle_mem.c): ncclxEpHandleMemSize against the
 * plan's per-handle bytes and hand-computed layouts, its refusals, ncclxEpHandleInit's refusals
 * (each naming the field, nothing taken from the pool), handles initialized on fake device
 * memory (every descriptor piece inside it), dispatch refused until the first update, the
 * group's handle pool, and LL handles in the group's own memory.  Import and the zero-copy
 * buffers: test_ep_handle_import.c.
 */
#include "ep_handle_fixture.h"

/* ---- 1. sizes ---- */

/*
 * R = 4, T = 64, L = 4, E = 16; every piece is rounded to 16 bytes, the handle to 256.
 *   LL idx, route   T * K * 4 each      (K = 4: 1024)
 *      send, recv   R * 4 each          = 16
 *      recv_tok     R * T * 4           = 1024
 *      recv_pos     R * T * K * 4       (K = 4: 4096; expert-major only)
 *      expert_slot  T * K * 4           (K = 4: 1024; expert-major only)
 *      expert_count E * 4               = 64 (expert-major only)
 *   EM K=4: 1024 + 1024 + 16 + 16 + 1024 + 4096 + 1024 + 64 = 8288 -> 8448
 *   EM K=2:  512 +  512 + 16 + 16 + 1024 + 2048 +  512 + 64 = 4704 -> 4864
 *   RM K=4: 1024 + 1024 + 16 + 16 + 1024                    = 3104 -> 3328
 *   RM K=1:  256 +  256 + 16 + 16 + 1024                    = 1568 -> 1792
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
    assert_int_equal(f.plan_per_handle, 8448);
    assert_int_equal(f.group.dims.handle_bytes, 8448);
    assert_int_equal(mem_size(&f, EM, 0), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, K), f.plan_per_handle);
    assert_int_equal(mem_size(&f, EM, 2), 4864);
    assert_int_equal(mem_size(&f, RM, K), 3328);
    assert_int_equal(mem_size(&f, RM, 0), mem_size(&f, RM, K));
    assert_int_equal(mem_size(&f, RM, 1), 1792);
    /* Fewer top-k entries, fewer bytes; rank-major has no recv_pos, expert_slot or
     * expert_count. */
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

/* The pieces of an LL handle on [base, base + bytes). */
static void check_ll_handle(const ncclx_ep_handle_t *h, uint32_t layout, uint32_t k,
                            const char *base, size_t bytes)
{
    const ncclx_ep_ll_handle_desc_t *d = &h->desc;
    const piece_t pieces[] = {
        {"idx", d->idx, (size_t)T * k * 4},
        {"route", d->route, (size_t)T * k * 4},
        {"send_count", d->send_count, (size_t)R * 4},
        {"recv_count", d->recv_count, (size_t)R * 4},
        {"recv_tok", d->recv_tok, (size_t)R * T * 4},
        {"recv_pos", d->recv_pos, (size_t)R * T * k * 4},
        {"expert_slot", d->expert_slot, (size_t)T * k * 4},
        {"expert_count", d->expert_count, (size_t)E * 4},
    };
    check_pieces(pieces, layout == EM ? 8 : 5, base, bytes);
    if (layout != EM) {
        assert_null(d->recv_pos);
        assert_null(d->expert_slot);
        assert_null(d->expert_count);
    }
    assert_null(d->zero_copy_starts); /* the fixture's plan has no zero_copy */
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
                check_ll_handle(h, layouts[l], k, MEM, bytes);
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

/* ---- 7. handles in the group's own memory ---- */

/* Without caller memory (ncclxEpHandleCreate) an LL handle lives in the group's device memory:
 * slot i at i strides of the plan's per-handle bytes (the largest shape), whatever its own
 * layout and top-k, so that no two slots overlap and the last ends where the memory does; and
 * it keeps its config's global_expert_ids (the kernels' routing reads it from the descriptor). */
static void test_group_memory_ll(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_handle_t *h[NUM_HANDLES];
    make_fixture(&f, LL, EM | RM);
    f.group.handle_memory = MEM;
    const size_t stride = f.plan_per_handle;
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        const uint32_t layout = i % 2 ? RM : EM, k = i + 1;
        ncclxEpHandleConfig_t c = config_of(layout, k);
        c.global_expert_ids = i % 2;
        assert_ncclx_ok(ncclx_ep_handle_take(&f.group, &c, NULL, &h[i]));
        assert_int_equal(h[i]->index, i);
        assert_int_equal(h[i]->caller_memory, 0);
        check_ll_handle(h[i], layout, k, MEM + i * stride, stride);
        assert_int_equal(h[i]->desc.global_ids, i % 2);
    }
    for (uint32_t i = 0; i < NUM_HANDLES; i++) {
        assert_ncclx_ok(ncclx_pool_release(&f.group.handles, h[i]));
    }
    assert_int_equal(ncclx_pool_in_use(&f.group.handles), 0);
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
        cmocka_unit_test(test_group_memory_ll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
