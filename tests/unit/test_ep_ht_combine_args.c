/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT combine argument checks and HT handle config checks on the CPU (the group and handle of
 * ep_ht_args_fixture.h): each broken field fails with ncclxInvalidArgument naming it.
 */
#include "ep_ht_args_fixture.h"

/* ---- 3. each broken combine field ---- */

typedef struct {
    const char *name;
    uint32_t layout, pass;
    void (*breaker)(fixture_t *f, ncclxEpCombineArgs_t *a);
    const char *needle, *needle2;
} combine_case_t;

static void c_send_only(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->send_only = 1;
}
static void c_pass_2(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->pass = 2;
}
static void c_pass_huge(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->pass = 0xffffffffu;
}
static void c_expert_uint8(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.dtype = a->out.dtype = NCCLX_UINT8;
}
static void c_expert_fp32_not_planned(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    f->group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    replan(f);
    a->expert_out.dtype = a->out.dtype = NCCLX_FLOAT32;
}
static void c_expert_bad_dtype(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.dtype = NCCLX_NUM_DATA_TYPES;
}
static void c_expert_absent(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out = absent();
}
static void c_expert_ll_shape(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.ndim = 3;
    a->expert_out.shape[0] = E / R;
    a->expert_out.shape[1] = R * T;
    a->expert_out.shape[2] = H;
}
static void c_expert_rows(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.shape[0] = R * T;
}
static void c_expert_hidden(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.shape[1] = H * 2;
}
static void c_expert_null(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.data = NULL;
}
static void c_expert_misaligned(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->expert_out.data = (char *)a->expert_out.data + 2;
}
static void c_out_dtype(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out.dtype = NCCLX_FLOAT32;
}
static void c_out_absent(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out = absent();
}
static void c_out_rows(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out.shape[0] = N + 1;
}
static void c_out_hidden(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out.shape[1] = H - 8;
}
static void c_out_null(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out.data = NULL;
}
static void c_out_misaligned(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out.data = (char *)a->out.data + 8;
}
/* FP32 tokens in the plan, hidden 20: 80-byte FP32 rows, 40-byte BF16 rows. */
static void c_rows_not_16(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    f->group.plan.hidden = 20;
    f->group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    replan(f);
    a->expert_out.shape[1] = a->out.shape[1] = 20;
}
static void c_fwd_weights(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights = tensor(13, NCCLX_FLOAT32, 2, S, K);
}
static void c_fwd_weights_data_only(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.data = PTR(13);
}
static void c_fwd_out_weights(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights = tensor(14, NCCLX_FLOAT32, 2, N, K);
}
static void c_fwd_out_weights_shape_only(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights = tensor(14, NCCLX_FLOAT32, 2, N, K);
    a->out_topk_weights.data = NULL;
}
static void c_bwd_weights_absent(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights = absent();
}
static void c_bwd_weights_1d(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.ndim = 1;
}
static void c_bwd_weights_2d(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights = tensor(13, NCCLX_FLOAT32, 2, S, K);
}
static void c_bwd_weights_token_rows(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.shape[0] = N; /* the caller's [num_tokens, K] of the forward pass */
}
static void c_bwd_weights_topk(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.shape[1] = K + 1;
}
static void c_bwd_weights_bf16(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.dtype = NCCLX_BFLOAT16;
}
static void c_bwd_weights_null(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->topk_weights.data = NULL;
}
static void c_bwd_out_weights_absent(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights = absent();
}
static void c_bwd_out_weights_rows(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights.shape[0] = S;
}
static void c_bwd_out_weights_topk(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights.shape[1] = K - 1;
}
static void c_bwd_out_weights_1d(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights.ndim = 1;
}
static void c_bwd_out_weights_int64(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights.dtype = NCCLX_INT64;
}
static void c_bwd_out_weights_misaligned(fixture_t *f, ncclxEpCombineArgs_t *a)
{
    (void)f;
    a->out_topk_weights.data = (char *)a->out_topk_weights.data + 4;
}

#undef A_
#define A_ "ncclxEpCombine: args->"

static const combine_case_t combine_cases[] = {
    {"send_only", FLAT, FWD, c_send_only, A_ "send_only=1", "leave 0"},
    {"pass 2", EM, FWD, c_pass_2, A_ "pass=2", NULL},
    {"pass ~0", FLAT, BWD, c_pass_huge, A_ "pass=4294967295", NULL},
    {"UINT8 rows", FLAT, FWD, c_expert_uint8, A_ "expert_out.dtype=6", NULL},
    {"FP32 rows without FP32 tokens", EM, FWD, c_expert_fp32_not_planned, A_ "expert_out.dtype=2",
     NULL},
    {"expert_out dtype out of range", FLAT, FWD, c_expert_bad_dtype, A_ "expert_out.dtype=9", NULL},
    {"expert_out absent", FLAT, FWD, c_expert_absent, A_ "expert_out.ndim=0, expected 2", NULL},
    {"expert_out LL shape", EM, FWD, c_expert_ll_shape, A_ "expert_out.ndim=3", NULL},
    {"expert_out R*T rows", FLAT, BWD, c_expert_rows, A_ "expert_out.shape[0]=32, expected 48",
     NULL},
    {"expert_out hidden", EM, BWD, c_expert_hidden, A_ "expert_out.shape[1]=512", NULL},
    {"expert_out NULL", FLAT, FWD, c_expert_null, A_ "expert_out.data is NULL", NULL},
    {"expert_out misaligned", FLAT, FWD, c_expert_misaligned,
     A_ "expert_out.data=", "not 16-byte aligned"},
    {"out dtype", EM, FWD, c_out_dtype, A_ "out.dtype=2", NULL},
    {"out absent", FLAT, FWD, c_out_absent, A_ "out.ndim=0", NULL},
    {"out rows", FLAT, FWD, c_out_rows, A_ "out.shape[0]=6, expected 5", NULL},
    {"out hidden", EM, BWD, c_out_hidden, A_ "out.shape[1]=248", NULL},
    {"out NULL", FLAT, BWD, c_out_null, A_ "out.data is NULL", NULL},
    {"out misaligned", EM, FWD, c_out_misaligned, A_ "out.data=", "not 16-byte aligned"},
    {"rows not 16-byte multiples", FLAT, FWD, c_rows_not_16,
     A_ "expert_out rows of 40 bytes (hidden=20) are not 16-byte multiples", NULL},
    /* forward: no weights */
    {"forward topk_weights", FLAT, FWD, c_fwd_weights, A_ "topk_weights must be absent",
     "already weighted"},
    {"forward EXPERT_MAJOR topk_weights", EM, FWD, c_fwd_weights, A_ "topk_weights must be absent",
     NULL},
    {"forward topk_weights data only", EM, FWD, c_fwd_weights_data_only,
     A_ "topk_weights must be absent", NULL},
    {"forward out_topk_weights", FLAT, FWD, c_fwd_out_weights, A_ "out_topk_weights must be absent",
     "only a backward combine"},
    {"forward out_topk_weights shape only", EM, FWD, c_fwd_out_weights_shape_only,
     A_ "out_topk_weights must be absent", NULL},
    /* backward: weight gradients in and out */
    {"backward without topk_weights", FLAT, BWD, c_bwd_weights_absent, A_ "topk_weights.dtype=0",
     NULL},
    {"backward FLAT 1-D topk_weights", FLAT, BWD, c_bwd_weights_1d,
     A_ "topk_weights.ndim=1, expected 2", "(flat)"},
    {"backward EXPERT_MAJOR 2-D topk_weights", EM, BWD, c_bwd_weights_2d,
     A_ "topk_weights.ndim=2, expected 1", "(expert-major)"},
    {"backward FLAT topk_weights token rows", FLAT, BWD, c_bwd_weights_token_rows,
     A_ "topk_weights.shape[0]=5, expected 48", NULL},
    {"backward EXPERT_MAJOR topk_weights token rows", EM, BWD, c_bwd_weights_token_rows,
     A_ "topk_weights.shape[0]=5, expected 48", NULL},
    {"backward FLAT topk_weights topk", FLAT, BWD, c_bwd_weights_topk, A_ "topk_weights.shape[1]=3",
     NULL},
    {"backward topk_weights BF16", EM, BWD, c_bwd_weights_bf16, A_ "topk_weights.dtype=0", NULL},
    {"backward topk_weights NULL", FLAT, BWD, c_bwd_weights_null, A_ "topk_weights.data is NULL",
     NULL},
    {"backward without out_topk_weights", EM, BWD, c_bwd_out_weights_absent,
     A_ "out_topk_weights.dtype=0", NULL},
    {"backward out_topk_weights rows", FLAT, BWD, c_bwd_out_weights_rows,
     A_ "out_topk_weights.shape[0]=48, expected 5", NULL},
    {"backward out_topk_weights topk", EM, BWD, c_bwd_out_weights_topk,
     A_ "out_topk_weights.shape[1]=1, expected 2", NULL},
    {"backward 1-D out_topk_weights", EM, BWD, c_bwd_out_weights_1d,
     A_ "out_topk_weights.ndim=1, expected 2", NULL},
    {"backward out_topk_weights int64", FLAT, BWD, c_bwd_out_weights_int64,
     A_ "out_topk_weights.dtype=8", NULL},
    {"backward out_topk_weights misaligned", FLAT, BWD, c_bwd_out_weights_misaligned,
     A_ "out_topk_weights.data=", "not 16-byte aligned"},
};

#undef A_

static void test_each_broken_combine_field(void **state)
{
    (void)state;
    const size_t n = sizeof(combine_cases) / sizeof(combine_cases[0]);
    for (size_t i = 0; i < n; i++) {
        const combine_case_t *c = &combine_cases[i];
        fixture_t f;
        ncclx_ep_ht_combine_desc_t d, before;
        make_fixture(&f, c->layout);
        ncclxEpCombineArgs_t a = valid_combine(&f, c->pass, NCCLX_BFLOAT16);
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d)); /* valid before */
        c->breaker(&f, &a);
        memset(&d, 0x5a, sizeof(d));
        before = d;
        ncclxResult_t res = ncclx_ep_ht_combine_desc(&f.handle, &a, &d);
        const char *msg = ncclxGetLastError();
        if (res != ncclxInvalidArgument || strstr(msg, c->needle) == NULL ||
            (c->needle2 != NULL && strstr(msg, c->needle2) == NULL)) {
            fail_msg("combine case '%s': got %d '%s', expected '%s'%s%s", c->name, (int)res, msg,
                     c->needle, c->needle2 ? " and '" : "", c->needle2 ? c->needle2 : "");
        }
        assert_memory_equal(&d, &before, sizeof(d)); /* outputs only on success */
    }
    assert_true(n >= 35);
}

/* The 40-byte BF16 rows refused above pass as FP32 (80 bytes) when the plan has FP32 tokens. */
static void test_combine_rows_16_byte_multiples(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_combine_desc_t c;
    make_fixture(&f, EM);
    f.group.plan.hidden = 20;
    f.group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    replan(&f);
    ncclxEpCombineArgs_t a = valid_combine(&f, BWD, NCCLX_BFLOAT16);
    a.expert_out.shape[1] = a.out.shape[1] = 20;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->expert_out rows of 40 bytes (hidden=20) are not 16-byte multiples");
    a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT32;
    assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &c));
    assert_int_equal(c.row_bytes, 80);
    assert_int_equal(c.dtype, NCCLX_FLOAT32);
}

/* ---- MXFP8 combine ---- */

/* Accepted on an EXPERT_MAJOR handle with BF16 rows of a group planned with it (forward and
 * backward); each missing condition refused naming its field, the descriptor untouched. */
static void test_mxfp8_recipe(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_combine_desc_t d, before;
    make_fixture(&f, EM);
    f.group.plan.recipes |= NCCLX_EP_RECIPE_MXFP8;
    replan(&f);
    assert_int_equal(f.group.dims.mxfp8_combine, 1);
    for (uint32_t pass = FWD; pass <= BWD; pass++) {
        ncclxEpCombineArgs_t a = valid_combine(&f, pass, NCCLX_BFLOAT16);
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        assert_int_equal(d.mxfp8, 0);
        a.recipe = NCCLX_EP_RECIPE_MXFP8;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        assert_int_equal(d.mxfp8, 1);
        assert_int_equal(d.backward, pass == BWD);
        assert_int_equal(d.row_bytes, H * 2);
        /* Packed rows of H codes and H / 32 scales: a word of its own, never a plain BF16
         * combine's (whose rows peers would read as packed). */
        assert_int_equal(d.op,
                         ncclx_ep_ht_op_word(1, pass == BWD, K, NCCLX_BFLOAT16, H * 2, H / 32, 0));
        assert_int_not_equal(d.op,
                             ncclx_ep_ht_op_word(1, pass == BWD, K, NCCLX_BFLOAT16, H * 2, 0, 0));
    }
    ncclxEpCombineArgs_t a = valid_combine(&f, FWD, NCCLX_BFLOAT16);
    memset(&d, 0x5a, sizeof(d));
    before = d;
    a.recipe = QUANT;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "ncclxEpCombine: args->recipe=0x2: an HT combine takes "
                       "NCCLX_EP_RECIPE_NONE or NCCLX_EP_RECIPE_MXFP8");
    a.recipe = NCCLX_EP_RECIPE_MXFP8 | NONE;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->recipe=0x9");
    a.recipe = NCCLX_EP_RECIPE_MXFP8;
    a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT16;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->expert_out.dtype=1: the MXFP8 combine takes BF16 rows");
    /* The rows' dtype decides, not the output's. */
    a.out.dtype = NCCLX_BFLOAT16;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->expert_out.dtype=1: the MXFP8 combine takes BF16 rows");
    a.expert_out.dtype = a.out.dtype = NCCLX_BFLOAT16;
    f.handle.ht.expert_major = 0;
    f.handle.config.layout = FLAT;
    f.handle.index = 3;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->recipe=NCCLX_EP_RECIPE_MXFP8 needs an EXPERT_MAJOR handle; handle "
                       "3 is FLAT");
    f.handle.ht.expert_major = 1;
    f.handle.config.layout = EM;
    f.group.plan.recipes = NONE | QUANT;
    f.group.index = 2;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->recipe=NCCLX_EP_RECIPE_MXFP8 is not in EP group 2's plan recipes "
                       "0x3");
    assert_memory_equal(&d, &before, sizeof(d));
}

/* An expert-major group of BF16 rows only with the MXFP8 recipe: combine rows of exactly the
 * expert rows (so zero copy applies), at PTR(40). */
static void make_bf16_mxfp8_fixture(fixture_t *f)
{
    make_fixture(f, EM);
    f->group.plan.recipes = NONE | NCCLX_EP_RECIPE_MXFP8;
    f->group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
    f->group.plan.max_token_bytes = 0;
    f->group.plan.max_scale_bytes = 0;
    replan(f);
    assert_int_equal(f->group.dims.combine_slot_bytes, H * 2);
    f->group.ht_combine_rows = PTR(40);
}

/* Zero copy (expert_out = the group's combine rows) is refused with MXFP8: the stage writes a
 * token's packed row over rows it is still reading.  Without MXFP8 the same args are in place. */
static void test_mxfp8_refuses_zero_copy(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_combine_desc_t d;
    make_bf16_mxfp8_fixture(&f);
    ncclxEpCombineArgs_t a = valid_combine(&f, FWD, NCCLX_BFLOAT16);
    a.expert_out.data = f.group.ht_combine_rows;
    assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.in_place, 1);
    a.recipe = NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->expert_out is the group's combine rows (zero copy), which the "
                       "MXFP8 combine overwrites");
}

/* Peers read both of the group's buffers during a combine: out may start nowhere in either (up
 * to its last 16 bytes), and anywhere after. */
static void test_out_in_group_buffers(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_combine_desc_t d;
    make_buffers_fixture(&f);
    char *const rows[2] = {f.group.ht_dispatch_rows, f.group.ht_combine_rows};
    const size_t bytes[2] = {(size_t)S * f.group.dims.payload_bytes,
                             (size_t)S * f.group.dims.combine_slot_bytes};
    for (int b = 0; b < 2; b++) {
        ncclxEpCombineArgs_t a = valid_combine(&f, FWD, NCCLX_FLOAT32);
        a.out.data = rows[b];
        assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->out lies in the group's own buffers");
        a.out.data = rows[b] + bytes[b] - 16;
        assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->out lies in the group's own buffers");
        a.out.data = rows[b] + bytes[b];
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
    }
}

/* Zero copy only at the start of the combine rows and with rows of exactly their size (BF16
 * rows of 512 bytes in 1024-byte FP32 rows would be read at the wrong stride); just past them,
 * expert_out is ordinary expert rows. */
static void test_zero_copy_combine_bounds(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_combine_desc_t d;
    make_buffers_fixture(&f);
    char *const rows = f.group.ht_combine_rows;
    const size_t C = f.group.dims.combine_slot_bytes;
    ncclxEpCombineArgs_t a = valid_combine(&f, FWD, NCCLX_FLOAT32);
    a.expert_out.data = rows;
    assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.in_place, 1);
    a.expert_out.data = rows + (size_t)S * C;
    assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.in_place, 0);
    a.expert_out.data = rows + C;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->expert_out points into the group's combine rows");
    a = valid_combine(&f, FWD, NCCLX_BFLOAT16);
    a.expert_out.data = rows;
    assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "rows of exactly 1024 bytes (here 512)");
}

/* ---- 4. handle config ---- */

static void test_config_checks(void **state)
{
    (void)state;
    fixture_t f;
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    make_fixture(&f, FLAT);
    const ncclx_ep_group_t *g = &f.group;
    static const uint32_t layouts[] = {FLAT, EM};
    for (int l = 0; l < 2; l++) {
        for (uint32_t k = 1; k <= K; k++) {
            for (uint32_t ids = 0; ids <= 1; ids++) {
                c.layout = layouts[l];
                c.topk = k;
                c.global_expert_ids = ids;
                assert_ncclx_ok(ncclx_ep_check_config(g, &c));
            }
        }
    }
    c.layout = FLAT;
    c.topk = K;
    c.global_expert_ids = 0;

    c.layout = NCCLX_EP_LAYOUT_RANK_MAJOR;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->layout=0x2: an HT handle is NCCLX_EP_LAYOUT_FLAT or "
                       "NCCLX_EP_LAYOUT_EXPERT_MAJOR");
    c.layout = FLAT | EM;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->layout=0x5: an HT handle");
    c.layout = 0;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->layout=0x0: an HT handle");

    f.group.plan.layouts = EM;
    c.layout = FLAT;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->layout=0x4 is not in the group's plan layouts 0x1");
    c.layout = EM;
    assert_ncclx_ok(ncclx_ep_check_config(g, &c));
    f.group.plan.layouts = FLAT;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->layout=0x1 is not in the group's plan layouts 0x4");
    f.group.plan.layouts = FLAT | EM;

    c.topk = 0;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->topk=0 is outside [1, max_topk=2]");
    c.topk = K + 1;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->topk=3 is outside [1, max_topk=2]");
    c.topk = 0xffffffffu;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument, "config->topk=");
    c.topk = K;

    c.global_expert_ids = 2;
    assert_ncclx_error(ncclx_ep_check_config(g, &c), ncclxInvalidArgument,
                       "config->global_expert_ids=2: must be 0 or 1");
    c.global_expert_ids = 1;
    assert_ncclx_ok(ncclx_ep_check_config(g, &c));
}

/* The direct path (a group whose ranks share this GPU): a combine reads each rank's expert
 * outputs in place at the peers, the caller's or (zero copy) the group's combine rows, with one
 * operation word for both so that ranks may mix them; MXFP8 (which stages packed rows) never
 * takes it, nor does any combine of a group without it. */
static void test_direct_combine(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++) {
        fixture_t f;
        ncclx_ep_ht_combine_desc_t d;
        make_bf16_mxfp8_fixture(&f);
        f.group.ht.direct = direct;
        ncclxEpCombineArgs_t a = valid_combine(&f, FWD, NCCLX_BFLOAT16);
        memset(&d, 0x5a, sizeof(d));
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        assert_int_equal(d.direct, direct);
        assert_int_equal(d.in_place, 0);
        /* An output that shares memory with the expert rows, which peers read in place. */
        void *const out = a.out.data;
        a.out.data = (char *)a.expert_out.data + (size_t)(S - 1) * d.row_bytes; /* last row */
        if (direct) {
            assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                               "args->expert_out, which peers read during the call on this "
                               "group's direct path (every rank on one GPU), overlaps args->out");
        } else {
            assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        }
        /* The overlap covers expert_out's S rows and out's num_tokens rows, no more: end to
         * end is fine, one shared row is not. */
        char *const rows = (char *)a.expert_out.data;
        a.out.data = rows + (size_t)S * d.row_bytes;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        a.out.data = rows - (size_t)N * d.row_bytes;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        a.out.data = rows - (size_t)(N - 1) * d.row_bytes; /* out's last row on the first */
        if (direct) {
            assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                               "args->expert_out, which peers read");
        } else {
            assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        }
        a.out.data = out;
        a.recipe = NCCLX_EP_RECIPE_MXFP8;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        assert_int_equal(d.direct, 0);
        a.recipe = NONE;
        ncclx_ep_ht_combine_desc_t caller;
        memset(&caller, 0x5a, sizeof(caller));
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &caller));
        a.expert_out.data = f.group.ht_combine_rows;
        memset(&d, 0xa5, sizeof(d));
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &d));
        assert_int_equal(d.in_place, 1);
        assert_int_equal(d.direct, direct);
        assert_ptr_equal(d.expert_out, f.group.ht_combine_rows);
        /* Zero copy or not, the same word: mixed ranks agree (on the direct path too). */
        assert_int_equal(d.op, caller.op);
        assert_int_equal(d.op, ncclx_ep_ht_op_word(1, 0, K, NCCLX_BFLOAT16, H * 2, 0, direct));
    }
    /* The path is part of the operation word: the two paths never read each other's rows. */
    assert_int_not_equal(ncclx_ep_ht_op_word(1, 0, K, NCCLX_BFLOAT16, H * 2, 0, 0),
                         ncclx_ep_ht_op_word(1, 0, K, NCCLX_BFLOAT16, H * 2, 0, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_broken_combine_field),
        cmocka_unit_test(test_combine_rows_16_byte_multiples),
        cmocka_unit_test(test_mxfp8_recipe),
        cmocka_unit_test(test_mxfp8_refuses_zero_copy),
        cmocka_unit_test(test_direct_combine),
        cmocka_unit_test(test_out_in_group_buffers),
        cmocka_unit_test(test_zero_copy_combine_bounds),
        cmocka_unit_test(test_config_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
