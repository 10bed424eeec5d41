/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL dispatch/combine argument checks on the CPU: a group and handle are built from a plan
 * without a GPU, then each field of valid arguments is broken in turn; the call must fail
 * with ncclxInvalidArgument naming that field.
 */
#include "ncclx_test.h"

#include "ep_group.h"

enum { R = 4, E = 16, T = 8, K = 2, H = 256 };

/* Fake device pointers: the checks only look at their alignment. */
#define PTR(n) ((void *)(uintptr_t)(0x100000u * (n)))

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handle;
} fixture_t;

static void make_fixture(fixture_t *f, uint32_t layout)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    memset(f, 0, sizeof(*f));
    team.num_ranks = team.lsa_size = R;
    g.num_experts = E;
    g.max_topk = K;
    g.hidden = H;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    g.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_FP8 | NCCLX_EP_RECIPE_QUANT_FWD;
    g.max_token_bytes = H;
    g.max_scale_bytes = 16;
    g.max_dispatch_tokens_per_rank = T;
    f->group.plan = g;
    assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 0, &f->group.dims));
    f->handle.group = &f->group;
    f->handle.live = 1;
    f->handle.config.layout = layout;
    f->handle.config.topk = K;
    f->handle.desc.num_tokens = T;
    f->handle.desc.topk = K;
    f->handle.desc.expert_major = layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
}

static ncclxTensor_t tensor(int n, ncclxDataType_t dtype, uint32_t ndim, int64_t d0, int64_t d1,
                            int64_t d2)
{
    ncclxTensor_t t = {PTR(n), dtype, ndim, {d0, d1, d2, 0}};
    return t;
}

static ncclxEpDispatchArgs_t valid_dispatch(const fixture_t *f)
{
    ncclxEpDispatchArgs_t a = NCCLX_EP_DISPATCH_ARGS_INIT;
    const int em = f->handle.desc.expert_major;
    a.tokens = tensor(1, NCCLX_BFLOAT16, 2, T, H, 0);
    a.out_tokens =
        em ? tensor(2, NCCLX_BFLOAT16, 3, E / R, R * T, H) : tensor(2, NCCLX_BFLOAT16, 3, R, T, H);
    a.out_counts = tensor(3, NCCLX_INT32, 1, em ? E / R : R, 0, 0);
    if (!em) {
        a.topk_weights = tensor(4, NCCLX_FLOAT32, 2, T, K, 0);
        a.out_topk_idx = tensor(5, NCCLX_INT64, 3, R, T, K);
        a.out_topk_weights = tensor(6, NCCLX_FLOAT32, 3, R, T, K);
    }
    return a;
}

static void test_valid_dispatch_and_combine(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {NCCLX_EP_LAYOUT_EXPERT_MAJOR, NCCLX_EP_LAYOUT_RANK_MAJOR};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        ncclx_ep_ll_dispatch_desc_t d;
        ncclx_ep_ll_combine_desc_t c;
        make_fixture(&f, layouts[l]);
        ncclxEpDispatchArgs_t a = valid_dispatch(&f);
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
        assert_int_equal(d.row_bytes, H * 2);
        assert_int_equal(d.out_row_bytes, H * 2);
        assert_ptr_equal(d.out_tokens, PTR(2));
        ncclxEpCombineArgs_t ca = NCCLX_EP_COMBINE_ARGS_INIT;
        ca.expert_out = a.out_tokens;
        ca.out = tensor(7, NCCLX_BFLOAT16, 2, T, H, 0);
        ca.topk_weights = tensor(8, NCCLX_FLOAT32, 2, T, K, 0);
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &ca, &c));
        assert_int_equal(c.dtype, NCCLX_BFLOAT16);
    }
}

static void test_fp8_recipe_shapes(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_fixture(&f, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    ncclxEpDispatchArgs_t a = valid_dispatch(&f);
    a.recipe = NCCLX_EP_RECIPE_FP8;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_tokens.dtype");
    a.out_tokens.dtype = NCCLX_FP8_E4M3;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_scales");
    a.out_scales = tensor(9, NCCLX_FLOAT32, 3, E / R, R * T, H / 128 + 1);
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_scales.shape[2]");
    a.out_scales.shape[2] = H / 128;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.out_row_bytes, H);
    assert_int_equal(d.scale_bytes, H / 128 * 4);
    a.tokens.dtype = NCCLX_UINT8;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->tokens.dtype");
}

static void test_quant_fwd_bounds(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_fixture(&f, NCCLX_EP_LAYOUT_RANK_MAJOR);
    ncclxEpDispatchArgs_t a = valid_dispatch(&f);
    a.recipe = NCCLX_EP_RECIPE_QUANT_FWD;
    a.tokens.dtype = NCCLX_UINT8;
    a.out_tokens.dtype = NCCLX_UINT8;
    a.scales = tensor(10, NCCLX_FLOAT32, 2, T, 8, 0); /* 32 bytes > max_scale_bytes 16 */
    a.out_scales = tensor(11, NCCLX_FLOAT32, 3, R, T, 8);
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "max_scale_bytes");
    a.scales.shape[1] = 4;
    a.out_scales.shape[2] = 4;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, 16);
    a.out_scales.dtype = NCCLX_INT32;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_scales.dtype");
    /* Scales with data but no shape are not "absent": refused, never silently dropped. */
    a.out_scales.dtype = NCCLX_FLOAT32;
    a.scales.ndim = 0;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->scales.ndim=0");
}

typedef struct {
    const char *name;
    uint32_t layout;
    void (*breaker)(ncclxEpDispatchArgs_t *a);
    const char *needle;
} dispatch_case_t;

static void no_out_tokens(ncclxEpDispatchArgs_t *a)
{
    a->out_tokens.data = NULL;
}
static void tokens_rows(ncclxEpDispatchArgs_t *a)
{
    a->tokens.shape[0] = T + 1;
}
static void tokens_hidden(ncclxEpDispatchArgs_t *a)
{
    a->tokens.shape[1] = H / 2;
}
static void tokens_fp32(ncclxEpDispatchArgs_t *a)
{
    a->tokens.dtype = NCCLX_FLOAT32; /* not in the plan's token_dtypes */
}
static void out_layout(ncclxEpDispatchArgs_t *a)
{
    a->out_tokens.shape[0] = R + 1;
}
static void out_ndim(ncclxEpDispatchArgs_t *a)
{
    a->out_tokens.ndim = 2;
}
static void counts_dtype(ncclxEpDispatchArgs_t *a)
{
    a->out_counts.dtype = NCCLX_INT64;
}
static void misaligned(ncclxEpDispatchArgs_t *a)
{
    a->out_counts.data = (char *)a->out_counts.data + 4;
}
static void recipe_mxfp8(ncclxEpDispatchArgs_t *a)
{
    a->recipe = NCCLX_EP_RECIPE_MXFP8;
}
static void no_weights(ncclxEpDispatchArgs_t *a)
{
    a->topk_weights.data = NULL;
}
static void idx_float(ncclxEpDispatchArgs_t *a)
{
    a->out_topk_idx.dtype = NCCLX_FLOAT32;
}
static void weights_topk(ncclxEpDispatchArgs_t *a)
{
    a->out_topk_weights.shape[2] = K + 1;
}
static void send_only_2(ncclxEpDispatchArgs_t *a)
{
    a->send_only = 2;
}

static const dispatch_case_t dispatch_cases[] = {
    {"out_tokens missing", NCCLX_EP_LAYOUT_EXPERT_MAJOR, no_out_tokens, "args->out_tokens.data"},
    {"too many tokens", NCCLX_EP_LAYOUT_EXPERT_MAJOR, tokens_rows, "args->tokens.shape[0]"},
    {"wrong hidden", NCCLX_EP_LAYOUT_RANK_MAJOR, tokens_hidden, "args->tokens.shape[1]"},
    {"dtype not planned", NCCLX_EP_LAYOUT_EXPERT_MAJOR, tokens_fp32, "args->tokens.dtype"},
    {"rank-major shape on expert-major", NCCLX_EP_LAYOUT_EXPERT_MAJOR, out_layout,
     "args->out_tokens.shape[0]"},
    {"out ndim", NCCLX_EP_LAYOUT_RANK_MAJOR, out_ndim, "args->out_tokens.ndim"},
    {"counts int64", NCCLX_EP_LAYOUT_EXPERT_MAJOR, counts_dtype, "args->out_counts.dtype"},
    {"misaligned counts", NCCLX_EP_LAYOUT_EXPERT_MAJOR, misaligned, "16-byte aligned"},
    {"HT recipe", NCCLX_EP_LAYOUT_EXPERT_MAJOR, recipe_mxfp8, "args->recipe"},
    {"rank-major without weights", NCCLX_EP_LAYOUT_RANK_MAJOR, no_weights,
     "args->topk_weights.data"},
    {"float topk idx", NCCLX_EP_LAYOUT_RANK_MAJOR, idx_float, "args->out_topk_idx.dtype"},
    {"weights shape", NCCLX_EP_LAYOUT_RANK_MAJOR, weights_topk, "args->out_topk_weights.shape[2]"},
    {"send_only=2", NCCLX_EP_LAYOUT_EXPERT_MAJOR, send_only_2, "send_only"},
};

static void test_each_broken_dispatch_field(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(dispatch_cases) / sizeof(dispatch_cases[0]); i++) {
        fixture_t f;
        ncclx_ep_ll_dispatch_desc_t d, before;
        make_fixture(&f, dispatch_cases[i].layout);
        ncclxEpDispatchArgs_t a = valid_dispatch(&f);
        dispatch_cases[i].breaker(&a);
        memset(&d, 0x5a, sizeof(d));
        before = d;
        ncclxResult_t res = ncclx_ep_dispatch_desc(&f.handle, &a, &d);
        if (res != ncclxInvalidArgument ||
            strstr(ncclxGetLastError(), dispatch_cases[i].needle) == NULL) {
            fail_msg("case '%s': got %d '%s', expected '%s'", dispatch_cases[i].name, (int)res,
                     ncclxGetLastError(), dispatch_cases[i].needle);
        }
        assert_memory_equal(&d, &before, sizeof(d)); /* outputs only on success */
    }
}

static void test_broken_combine_fields(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_combine_desc_t c;
    make_fixture(&f, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    a.expert_out = tensor(1, NCCLX_FLOAT32, 3, E / R, R * T, H);
    a.out = tensor(2, NCCLX_FLOAT32, 2, T, H, 0);
    a.topk_weights = tensor(3, NCCLX_FLOAT32, 2, T, K, 0);
    /* FP32 rows need FP32 in the plan's token_dtypes (wider combine slots). */
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->expert_out.dtype");
    a.expert_out.dtype = NCCLX_BFLOAT16;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->out.dtype");
    a.out.dtype = NCCLX_BFLOAT16;
    a.topk_weights.shape[1] = K + 1;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->topk_weights.shape[1]");
    a.topk_weights.shape[1] = K;
    a.out.shape[0] = T - 1;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->out.shape[0]");
    a.out.shape[0] = T;
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
    /* The MXFP8 combine is HT's: an LL combine takes RECIPE_NONE alone. */
    a.recipe = NCCLX_EP_RECIPE_MXFP8;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "ncclxEpCombine: args->recipe=0x8: an LL combine takes "
                       "NCCLX_EP_RECIPE_NONE");
    a.recipe = NCCLX_EP_RECIPE_FP8;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->recipe=0x4");
}

/* Combine moves 16-byte pieces: a hidden whose BF16 rows are not 16-byte multiples (an FP32
 * token plan with hidden = 20: 80-byte token rows, 40-byte BF16 expert rows) is refused. */
static void test_combine_rows_16_byte_multiples(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_combine_desc_t c;
    make_fixture(&f, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    f.group.plan.hidden = 20;
    f.group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    a.expert_out = tensor(1, NCCLX_BFLOAT16, 3, E / R, R * T, 20);
    a.out = tensor(2, NCCLX_BFLOAT16, 2, T, 20, 0);
    a.topk_weights = tensor(3, NCCLX_FLOAT32, 2, T, K, 0);
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &c), ncclxInvalidArgument,
                       "args->expert_out rows of 40 bytes (hidden=20) are not 16-byte multiples");
    a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT32; /* 80-byte rows */
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
}

static void test_zero_tokens_accept_null_data(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_fixture(&f, NCCLX_EP_LAYOUT_EXPERT_MAJOR);
    f.handle.desc.num_tokens = 0;
    ncclxEpDispatchArgs_t a = valid_dispatch(&f);
    a.tokens = tensor(0, NCCLX_BFLOAT16, 2, 0, H, 0);
    a.tokens.data = NULL;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_dispatch_and_combine),
        cmocka_unit_test(test_fp8_recipe_shapes),
        cmocka_unit_test(test_quant_fwd_bounds),
        cmocka_unit_test(test_each_broken_dispatch_field),
        cmocka_unit_test(test_broken_combine_fields),
        cmocka_unit_test(test_combine_rows_16_byte_multiples),
        cmocka_unit_test(test_zero_tokens_accept_null_data),
    };
    return cmocka_run_group_tests_name("ep_args", tests, NULL, NULL);
}
