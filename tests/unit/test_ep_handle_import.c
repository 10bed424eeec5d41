/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclxEpHandleImport's host refusals on the CPU (everything refused before its verify kernel
 * would be launched: each names the field, nothing is taken from the pool) and
 * ncclxEpGroupGetHtBuffers.  Groups come from ep_handle_fixture.h, without a GPU.
 */
#include "ep_handle_fixture.h"

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

/* ---- 7b. the verify kernel's verdict: each bit maps to its error ---- */

#define IMP_ "ncclxEpHandleImport: "
#define MSG_FORMAT                                                                                 \
    IMP_                                                                                           \
        "handle_mem does not start with the header of a libncclx HT handle of this format (not a " \
        "snapshot, or one of another version)"
#define MSG_GEOMETRY                                                                        \
    IMP_ "handle_mem is a snapshot for another group geometry, rank, layout or top-k than " \
         "this import's"
#define MSG_OVERFLOW                                                                       \
    IMP_ "handle_mem is a snapshot of a routing that overflowed max_recv_tokens_per_rank " \
         "under the TRAP policy"
#define MSG_CHECKSUM IMP_ "handle_mem's checksum differs from its header's"

/* The verdict bits are distinct single bits: a table row per bit means something. */
_Static_assert((NCCLX_EP_HT_IMPORT_MAGIC | NCCLX_EP_HT_IMPORT_VERSION |
                NCCLX_EP_HT_IMPORT_GEOMETRY | NCCLX_EP_HT_IMPORT_STATE |
                NCCLX_EP_HT_IMPORT_CHECKSUM | NCCLX_EP_HT_IMPORT_OVERFLOW) == 0x3f,
               "six distinct verdict bits");

/*
 * One row per verdict bit, then combinations: the first cause in the order header format,
 * geometry, overflow, state, checksum is the one named (a header of another format says
 * nothing trustworthy about the rest; a snapshot for another geometry or an overflowed routing
 * also differs in its state and checksum, which would hide the real cause).  Every refusal is
 * ncclxInvalidArgument.
 */
static void test_import_verdicts(void **state)
{
    (void)state;
    static const struct {
        unsigned verdict;
        const char *needle;
    } rows[] = {
        {NCCLX_EP_HT_IMPORT_MAGIC, MSG_FORMAT},
        {NCCLX_EP_HT_IMPORT_VERSION, MSG_FORMAT},
        {NCCLX_EP_HT_IMPORT_GEOMETRY, MSG_GEOMETRY},
        {NCCLX_EP_HT_IMPORT_STATE,
         IMP_ "state (num_tokens=37, topk=3, topk_idx_dtype=7) differs from the routing the "
              "snapshot holds"},
        {NCCLX_EP_HT_IMPORT_CHECKSUM, MSG_CHECKSUM},
        {NCCLX_EP_HT_IMPORT_OVERFLOW, MSG_OVERFLOW},
        /* the order of causes */
        {~0u, MSG_FORMAT}, /* what the host writes before the kernel: never a pass */
        {NCCLX_EP_HT_IMPORT_MAGIC | NCCLX_EP_HT_IMPORT_GEOMETRY | NCCLX_EP_HT_IMPORT_CHECKSUM,
         MSG_FORMAT},
        {NCCLX_EP_HT_IMPORT_VERSION | NCCLX_EP_HT_IMPORT_OVERFLOW, MSG_FORMAT},
        {NCCLX_EP_HT_IMPORT_GEOMETRY | NCCLX_EP_HT_IMPORT_STATE | NCCLX_EP_HT_IMPORT_CHECKSUM |
             NCCLX_EP_HT_IMPORT_OVERFLOW,
         MSG_GEOMETRY},
        {NCCLX_EP_HT_IMPORT_OVERFLOW | NCCLX_EP_HT_IMPORT_STATE | NCCLX_EP_HT_IMPORT_CHECKSUM,
         MSG_OVERFLOW},
        {NCCLX_EP_HT_IMPORT_STATE | NCCLX_EP_HT_IMPORT_CHECKSUM, IMP_ "state (num_tokens=37"},
    };
    ncclxEpHandleState_t st = state_of(37, 3);
    st.topk_idx_dtype = NCCLX_INT32;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        ncclxResult_t res = ncclx_ep_ht_import_refusal(rows[i].verdict, &st);
        if (res != ncclxInvalidArgument || strstr(ncclxGetLastError(), rows[i].needle) == NULL) {
            fail_msg("verdict 0x%x: got %d '%s', expected '%s'", rows[i].verdict, (int)res,
                     ncclxGetLastError(), rows[i].needle);
        }
    }
    /* Each single bit names a different cause than every other bit (but magic and version,
     * both the header's format). */
    static const unsigned causes[] = {NCCLX_EP_HT_IMPORT_MAGIC, NCCLX_EP_HT_IMPORT_GEOMETRY,
                                      NCCLX_EP_HT_IMPORT_STATE, NCCLX_EP_HT_IMPORT_CHECKSUM,
                                      NCCLX_EP_HT_IMPORT_OVERFLOW};
    char seen[5][512];
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ncclx_ep_ht_import_refusal(causes[i], &st), ncclxInvalidArgument);
        snprintf(seen[i], sizeof(seen[i]), "%s", ncclxGetLastError());
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(seen[i], seen[j]);
        }
    }
}

/* ---- 7c. the geometry hash: every input changes it ---- */

/* The geometry of handle h after bind, laid out as l. */
static uint64_t geometry_of(ncclx_ep_handle_t *h, const ncclx_ep_ht_handle_layout_t *l)
{
    ncclx_ep_ht_handle_desc(h, MEM, l);
    return h->ht.geometry;
}

typedef struct {
    const char *name;
    void *field;  /* the input, in the group, the handle or the layout */
    size_t bytes; /* its size: 4 or 8 */
} geometry_input_t;

static uint64_t load_field(const geometry_input_t *in)
{
    if (in->bytes == 8) {
        uint64_t v;
        memcpy(&v, in->field, 8);
        return v;
    }
    uint32_t v;
    memcpy(&v, in->field, 4);
    return v;
}

static void store_field(const geometry_input_t *in, uint64_t v)
{
    if (in->bytes == 8) {
        memcpy(in->field, &v, 8);
    } else {
        uint32_t w = (uint32_t)v;
        memcpy(in->field, &w, 4);
    }
}

/*
 * A snapshot must be refused by a group, rank or handle that differs in anything its rows
 * depend on (ep.h: the group's geometry and this rank, the layout and top-k; the memory
 * layout).  Each input is changed alone, in its lowest bit, in a bit of each higher byte and
 * (64-bit inputs) in the high half; each change gives another hash, and restoring the input
 * restores the hash.
 */
static void test_geometry_hash_inputs(void **state)
{
    (void)state;
    fixture_t f;
    make_fixture(&f, HT, EM | FLAT);
    f.group.ht.rank = 2;
    f.group.plan.expert_alignment = 4;
    ncclxEpHandle_t h = init_handle(&f, EM, K);
    ncclx_ep_ht_handle_layout_t l = f.group.ht_handle_layout;
    ncclx_ep_group_t *g = &f.group;
    const geometry_input_t inputs[] = {
        {"dims.ranks", &g->dims.ranks, sizeof(g->dims.ranks)},
        {"ht.rank", &g->ht.rank, sizeof(g->ht.rank)},
        {"plan.num_experts", &g->plan.num_experts, sizeof(g->plan.num_experts)},
        {"plan.hidden", &g->plan.hidden, sizeof(g->plan.hidden)},
        {"dims.tokens", &g->dims.tokens, sizeof(g->dims.tokens)},
        {"dims.recv_slots", &g->dims.recv_slots, sizeof(g->dims.recv_slots)},
        {"plan.max_topk", &g->plan.max_topk, sizeof(g->plan.max_topk)},
        {"plan.expert_alignment", &g->plan.expert_alignment, sizeof(g->plan.expert_alignment)},
        {"plan.overflow_policy", &g->plan.overflow_policy, sizeof(g->plan.overflow_policy)},
        {"config.layout", &h->config.layout, sizeof(h->config.layout)},
        {"config.topk", &h->config.topk, sizeof(h->config.topk)},
        {"config.global_expert_ids", &h->config.global_expert_ids,
         sizeof(h->config.global_expert_ids)},
        {"layout bytes", &l.bytes, sizeof(l.bytes)},
    };
    const uint64_t base = geometry_of(h, &l);
    assert_int_equal(geometry_of(h, &l), base); /* a function of its inputs */
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
        const geometry_input_t *in = &inputs[i];
        assert_true(in->bytes == 4 || in->bytes == 8);
        const uint64_t v = load_field(in);
        for (unsigned bit = 0; bit < 8 * in->bytes; bit += bit < 8 ? 1 : 8) {
            store_field(in, v ^ (1ull << bit));
            const uint64_t changed = geometry_of(h, &l);
            if (changed == base) {
                fail_msg("geometry input %s: flipping bit %u leaves the hash 0x%016llx", in->name,
                         bit, (unsigned long long)base);
            }
            store_field(in, v);
        }
        assert_int_equal(geometry_of(h, &l), base);
    }
    /* Two inputs that swap values still differ (the hash is not a sum of fields). */
    const uint32_t tokens = g->dims.tokens, slots = g->dims.recv_slots;
    assert_int_not_equal(tokens, slots);
    g->dims.tokens = slots;
    g->dims.recv_slots = tokens;
    assert_int_not_equal(geometry_of(h, &l), base);
    g->dims.tokens = tokens;
    g->dims.recv_slots = slots;
    /* The handle's own memory layout: a top-2 handle on its own memory has other bytes. */
    ncclxEpHandle_t h2 = init_handle(&f, EM, 2);
    assert_int_not_equal(h2->ht.geometry, h->ht.geometry);
    assert_ncclx_ok(ncclxEpHandleDestroy(h2));
    assert_ncclx_ok(ncclxEpHandleDestroy(h));
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
        cmocka_unit_test(test_import_refused_args),  cmocka_unit_test(test_import_refused_mem),
        cmocka_unit_test(test_import_refused_group), cmocka_unit_test(test_import_verdicts),
        cmocka_unit_test(test_geometry_hash_inputs), cmocka_unit_test(test_ht_buffers_refused),
        cmocka_unit_test(test_ht_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
