/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * LL dispatch/combine argument checks on the CPU (lib/ep/ep_ll_args.c), on the fixture of
 * ep_ll_args_fixture.h: valid arguments fill the descriptors, the operation word changes with
 * every field ranks must agree on, each field of valid arguments broken in turn (one table row
 * per refusal) makes the call fail with the expected code, name that field and leave its
 * output untouched, and zero tokens take NULL data.  Which kernels a valid call takes is
 * tests/unit/test_ep_args_paths.c; the entry points' own refusals are
 * tests/unit/test_ep_entry.c.
 */
#include "ep_ll_args_fixture.h"

/* ---- 1. valid arguments fill the descriptors ---- */

static void test_valid_dispatch(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    static const uint32_t recipes[] = {NONE, FP8, QUANT};
    for (int l = 0; l < 2; l++) {
        for (int r = 0; r < 3; r++) {
            fixture_t f;
            ncclx_ep_ll_dispatch_desc_t d;
            const int em = layouts[l] == EM, rm = !em;
            make_fixture(&f, layouts[l]);
            ncclxEpDispatchArgs_t a = valid_dispatch(&f, recipes[r]);
            memset(&d, 0x5a, sizeof(d));
            assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
            assert_int_equal(d.row_bytes, recipes[r] == QUANT ? H : H * 2);
            assert_int_equal(d.out_row_bytes, recipes[r] == FP8     ? H
                                              : recipes[r] == QUANT ? H
                                                                    : H * 2);
            assert_int_equal(d.scale_bytes, recipes[r] == FP8     ? H / 128 * 4
                                            : recipes[r] == QUANT ? SC * 4
                                                                  : 0);
            assert_int_equal(d.recipe, (int)recipes[r]);
            assert_int_equal(d.round_scales, 0);
            assert_ptr_equal(d.tokens, PTR(1));
            assert_ptr_equal(d.out_tokens, PTR(2));
            assert_ptr_equal(d.scales, recipes[r] == QUANT ? PTR(3) : NULL);
            assert_ptr_equal(d.out_scales, recipes[r] != NONE ? PTR(4) : NULL);
            assert_ptr_equal(d.out_counts, PTR(5));
            assert_ptr_equal(d.topk_weights, rm ? PTR(6) : NULL);
            assert_ptr_equal(d.out_topk_idx, rm ? PTR(7) : NULL);
            assert_ptr_equal(d.out_topk_weights, rm ? PTR(8) : NULL);
            assert_int_equal(d.out_idx_int64, rm);
            assert_true(d.op < (1u << NCCLX_EP_OP_BITS));
            /* 1 is the largest round_scales and send_only: accepted. */
            a.round_scales = a.send_only = 1;
            assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
            assert_int_equal(d.round_scales, 1);
            if (rm) {
                a.out_topk_idx.dtype = NCCLX_INT32;
                assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
                assert_int_equal(d.out_idx_int64, 0);
            }
        }
    }
}

/* QUANT_FWD takes any planned dtype (FLOAT16 rows within max_token_bytes), scales of any
 * dtype and size up to max_scale_bytes, or none at all. */
static void test_valid_quant_fwd_variants(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_fixture(&f, RM);
    ncclxEpDispatchArgs_t a = valid_dispatch(&f, QUANT);
    a.scales = absent();
    a.out_scales = absent();
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, 0);
    assert_null(d.scales);
    assert_null(d.out_scales);
    /* 16 UINT8 scales: the same bytes as SC FLOAT32 ones; out_scales follows the dtype. */
    a = valid_dispatch(&f, QUANT);
    a.scales = tensor(3, NCCLX_UINT8, 2, N, SC * 4, 0);
    a.out_scales = out_tensor(&f, 4, NCCLX_UINT8, SC * 4);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, SC * 4);
    /* 32 FP4 values: 16 whole bytes. */
    a.scales = tensor(3, NCCLX_FP4X2_E2M1, 2, N, 32, 0);
    a.out_scales = out_tensor(&f, 4, NCCLX_FP4X2_E2M1, 32);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, 16);
    /* A plan dtype other than UINT8 with rows within max_token_bytes. */
    f.group.plan.max_token_bytes = H * 2;
    replan(&f);
    a = valid_dispatch(&f, QUANT);
    a.tokens.dtype = a.out_tokens.dtype = NCCLX_FLOAT16;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.row_bytes, H * 2);
    assert_int_equal(d.out_row_bytes, H * 2);
}

static void test_valid_combine(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        ncclx_ep_ll_combine_desc_t c;
        make_fixture(&f, layouts[l]);
        ncclxEpCombineArgs_t a = valid_combine(&f);
        memset(&c, 0x5a, sizeof(c));
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
        assert_int_equal(c.dtype, NCCLX_BFLOAT16);
        assert_ptr_equal(c.expert_out, PTR(11));
        assert_ptr_equal(c.out, PTR(12));
        assert_ptr_equal(c.topk_weights, layouts[l] == EM ? PTR(13) : NULL);
        assert_true(c.op < (1u << NCCLX_EP_OP_BITS));
        a.send_only = 1;
        a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT16;
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
        assert_int_equal(c.dtype, NCCLX_FLOAT16);
        /* FP32 rows once the plan holds FP32 tokens (the wider combine slots). */
        f.group.plan.token_dtypes |= NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
        replan(&f);
        a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT32;
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
        assert_int_equal(c.dtype, NCCLX_FLOAT32);
    }
}

/* ---- 2. the operation word ---- */

static uint32_t dispatch_word(const fixture_t *f, const ncclxEpDispatchArgs_t *a)
{
    ncclx_ep_ll_dispatch_desc_t d;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, a, &d));
    assert_true(d.op < (1u << NCCLX_EP_OP_BITS)); /* fits the signal word's field */
    return d.op;
}

/*
 * Ranks that pass different scale rows to one QUANT_FWD dispatch must not read each other's
 * messages (ep.h: every rank passes the same ... scale row size; the receiver writes each
 * row's scales with its own row size and type): two argument sets that differ only in the
 * scale row bytes, or only in the scale dtype, give different words; so does each other field
 * of the word.  Identical arguments give the same word.
 */
static void test_op_word_fields(void **state)
{
    (void)state;
    fixture_t f;
    make_fixture(&f, RM);
    const ncclxEpDispatchArgs_t base = valid_dispatch(&f, QUANT);
    const uint32_t w = dispatch_word(&f, &base);
    assert_int_equal(dispatch_word(&f, &base), w);

    /* Scale row bytes: 8 instead of 16 FLOAT32 bytes. */
    ncclxEpDispatchArgs_t a = base;
    a.scales.shape[1] = a.out_scales.shape[2] = SC / 2;
    const uint32_t w_bytes = dispatch_word(&f, &a);
    assert_int_not_equal(w_bytes, w);
    /* Scale dtype: 16 bytes of INT32, UINT8 or FP8 scales instead of FLOAT32. */
    static const struct {
        ncclxDataType_t dtype;
        int64_t n;
    } same_bytes[] = {{NCCLX_INT32, SC}, {NCCLX_UINT8, SC * 4}, {NCCLX_FP8_E4M3, SC * 4}};
    uint32_t seen[4] = {w, 0, 0, 0};
    for (int i = 0; i < 3; i++) {
        a = base;
        a.scales.dtype = a.out_scales.dtype = same_bytes[i].dtype;
        a.scales.shape[1] = a.out_scales.shape[2] = same_bytes[i].n;
        seen[i + 1] = dispatch_word(&f, &a);
        for (int j = 0; j <= i; j++) {
            assert_int_not_equal(seen[i + 1], seen[j]);
        }
    }
    /* No scales at all (absent) differs from scales of any size, and from zero-width ones. */
    a = base;
    a.scales = a.out_scales = absent();
    const uint32_t w_none = dispatch_word(&f, &a);
    assert_int_not_equal(w_none, w);
    assert_int_not_equal(w_none, w_bytes);
    /* Zero-width scales ([N, 0] with data) are scales of their dtype, not absent ones. */
    a = base;
    a.scales.shape[1] = a.out_scales.shape[2] = 0;
    const uint32_t w_zero_width = dispatch_word(&f, &a);
    assert_int_not_equal(w_zero_width, w_none);
    /* A rank without tokens passes [0, SC] scales without data: the same word as its peers. */
    fixture_t empty;
    make_fixture(&empty, RM);
    empty.handle.desc.num_tokens = 0;
    a = valid_dispatch(&empty, QUANT);
    a.tokens.data = a.scales.data = a.topk_weights.data = NULL;
    assert_int_equal(dispatch_word(&empty, &a), w);
    /* So does one whose peers forward zero-width rows: its [0, 0] without data is their
     * operation (the word once took "scales present" from the data pointer, and such a rank
     * dropped every peer's messages as another operation). */
    a.scales.shape[1] = a.out_scales.shape[2] = 0;
    assert_int_equal(dispatch_word(&empty, &a), w_zero_width);

    /* The other fields: token dtype, recipe, layout, top-k. */
    f.group.plan.max_token_bytes = H * 2;
    replan(&f);
    a = base;
    a.tokens.dtype = a.out_tokens.dtype = NCCLX_FLOAT16;
    assert_int_not_equal(dispatch_word(&f, &a), w);
    a = valid_dispatch(&f, NONE);
    const uint32_t w_none_recipe = dispatch_word(&f, &a);
    a.tokens.dtype = a.out_tokens.dtype = NCCLX_FLOAT16;
    assert_int_not_equal(dispatch_word(&f, &a), w_none_recipe);
    a = valid_dispatch(&f, FP8);
    const uint32_t w_fp8 = dispatch_word(&f, &a);
    assert_int_not_equal(w_fp8, w_none_recipe);
    /* NONE and FP8 take no scales input: whatever a rank leaves in args->scales, its word stays
     * its peers' (a word taken from the ignored tensor would drop their messages). */
    a = valid_dispatch(&f, NONE);
    a.scales = tensor(3, NCCLX_FLOAT32, 2, N, SC, 0);
    assert_int_equal(dispatch_word(&f, &a), w_none_recipe);
    a = valid_dispatch(&f, FP8);
    a.scales = tensor(3, NCCLX_UINT8, 2, N, SC, 0);
    assert_int_equal(dispatch_word(&f, &a), w_fp8);
    fixture_t em;
    make_fixture(&em, EM);
    a = valid_dispatch(&em, NONE);
    assert_int_not_equal(dispatch_word(&em, &a), w_none_recipe);
    fixture_t k1;
    make_fixture(&k1, RM);
    k1.handle.desc.topk = k1.handle.config.topk = 1;
    a = valid_dispatch(&k1, NONE);
    a.topk_weights.shape[1] = 1;
    a.out_topk_idx.shape[2] = a.out_topk_weights.shape[2] = 1;
    assert_int_not_equal(dispatch_word(&k1, &a), w_none_recipe);
}

/* A combine's word: the dispatch's word and the combine dtype, each of which changes it. */
static void test_combine_op_word(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_combine_desc_t c;
    make_fixture(&f, EM);
    ncclxEpDispatchArgs_t da = valid_dispatch(&f, QUANT);
    ncclxEpCombineArgs_t a = valid_combine(&f);
    uint32_t words[3];
    for (int i = 0; i < 2; i++) {
        /* Two dispatches that differ only in their scale rows. */
        da.scales.shape[1] = da.out_scales.shape[2] = i == 0 ? SC : SC / 2;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &da, &f.handle.pending_dispatch));
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
        words[i] = c.op;
        assert_true(c.op < (1u << NCCLX_EP_OP_BITS));
    }
    assert_int_not_equal(words[0], words[1]);
    a.expert_out.dtype = a.out.dtype = NCCLX_FLOAT16;
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
    words[2] = c.op;
    assert_int_not_equal(words[2], words[1]);
    assert_int_not_equal(words[2], words[0]);
}

/* ---- 3. each broken dispatch field ---- */

typedef struct {
    const char *name;
    uint32_t layout, recipe;
    void (*breaker)(fixture_t *f, ncclxEpDispatchArgs_t *a);
    const char *needle, *needle2; /* needle2: NULL or a second substring of the message */
} dispatch_case_t;

#define BREAK(fn, stmt)                                    \
    static void fn(fixture_t *f, ncclxEpDispatchArgs_t *a) \
    {                                                      \
        (void)f;                                           \
        (void)a;                                           \
        stmt;                                              \
    }

/* call-level fields */
BREAK(d_recipe_mxfp8, a->recipe = NCCLX_EP_RECIPE_MXFP8)
BREAK(d_recipe_zero, a->recipe = 0)
BREAK(d_recipe_none_quant, a->recipe = NONE | QUANT)
BREAK(d_recipe_none_fp8, a->recipe = NONE | FP8)
BREAK(d_recipe_high, a->recipe = 0x10)
BREAK(d_recipe_fp8_unplanned, f->group.plan.recipes = NONE | QUANT)
BREAK(d_recipe_quant_unplanned, f->group.plan.recipes = NONE | FP8)
BREAK(d_round_scales_2, a->round_scales = 2)
BREAK(d_round_scales_max, a->round_scales = UINT32_MAX)
BREAK(d_send_only_2, a->send_only = 2)
/* tokens */
BREAK(d_tokens_fp32, a->tokens.dtype = NCCLX_FLOAT32)
BREAK(d_tokens_uint8, a->tokens.dtype = a->out_tokens.dtype = NCCLX_UINT8)
BREAK(d_tokens_fp16, a->tokens.dtype = NCCLX_FLOAT16)
BREAK(d_tokens_range, a->tokens.dtype = NCCLX_NUM_DATA_TYPES)
BREAK(d_tokens_negative_dtype, a->tokens.dtype = (ncclxDataType_t)-1)
BREAK(d_tokens_ndim, a->tokens.ndim = 3; a->tokens.shape[2] = 1)
BREAK(d_tokens_rows_more, a->tokens.shape[0] = N + 1)
BREAK(d_tokens_rows_fewer, a->tokens.shape[0] = N - 1)
BREAK(d_tokens_rows_t, a->tokens.shape[0] = T)
BREAK(d_tokens_hidden, a->tokens.shape[1] = H / 2)
BREAK(d_tokens_negative, a->tokens.shape[1] = -H)
BREAK(d_tokens_null, a->tokens.data = NULL)
BREAK(d_tokens_misaligned, a->tokens.data = (char *)a->tokens.data + 8)
BREAK(d_quant_wide, a->tokens.dtype = a->out_tokens.dtype = NCCLX_BFLOAT16)
/* out_tokens */
BREAK(d_out_fp16, a->out_tokens.dtype = NCCLX_FLOAT16)
BREAK(d_out_bf16, a->out_tokens.dtype = NCCLX_BFLOAT16)
BREAK(d_out_e5m2, a->out_tokens.dtype = NCCLX_FP8_E5M2)
BREAK(d_out_absent, a->out_tokens = absent())
BREAK(d_out_ndim, a->out_tokens.ndim = 2)
BREAK(d_out_dim0_r, a->out_tokens.shape[0] = R)
BREAK(d_out_dim0_l, a->out_tokens.shape[0] = L)
BREAK(d_out_dim1_t, a->out_tokens.shape[1] = T)
BREAK(d_out_dim1_rt, a->out_tokens.shape[1] = R * T)
BREAK(d_out_hidden, a->out_tokens.shape[2] = H + 8)
BREAK(d_out_null, a->out_tokens.data = NULL)
BREAK(d_out_misaligned, a->out_tokens.data = (char *)a->out_tokens.data + 4)
/* scales (QUANT_FWD) and out_scales (both) */
BREAK(d_scales_ndim, a->scales.ndim = 1)
BREAK(d_scales_shape_only, a->scales.ndim = 0)
BREAK(d_scales_rows, a->scales.shape[0] = N - 1)
BREAK(d_scales_rows_t, a->scales.shape[0] = T)
BREAK(d_scales_negative, a->scales.shape[1] = -SC)
BREAK(d_scales_range, a->scales.dtype = NCCLX_NUM_DATA_TYPES)
BREAK(d_scales_null, a->scales.data = NULL)
BREAK(d_scales_misaligned, a->scales.data = (char *)a->scales.data + 8)
BREAK(d_scales_fp4_odd, a->scales.dtype = a->out_scales.dtype = NCCLX_FP4X2_E2M1;
      a->scales.shape[1] = a->out_scales.shape[2] = 31)
BREAK(d_scales_fp4_one, a->scales.dtype = a->out_scales.dtype = NCCLX_FP4X2_E2M1;
      a->scales.shape[1] = a->out_scales.shape[2] = 1)
BREAK(d_scales_20_bytes, a->scales.shape[1] = a->out_scales.shape[2] = SC + 1)
BREAK(d_scales_17_bytes, a->scales.dtype = a->out_scales.dtype = NCCLX_UINT8;
      a->scales.shape[1] = a->out_scales.shape[2] = SC * 4 + 1)
BREAK(d_out_scales_absent, a->out_scales = absent())
BREAK(d_out_scales_fp16, a->out_scales.dtype = NCCLX_FLOAT16)
BREAK(d_out_scales_int32, a->out_scales.dtype = NCCLX_INT32)
BREAK(d_out_scales_ndim, a->out_scales.ndim = 2)
BREAK(d_out_scales_dim0_r, a->out_scales.shape[0] = R)
BREAK(d_out_scales_dim0_l, a->out_scales.shape[0] = L)
BREAK(d_out_scales_dim1_t, a->out_scales.shape[1] = T)
BREAK(d_out_scales_dim1_rt, a->out_scales.shape[1] = R * T)
BREAK(d_out_scales_fp8_cols, a->out_scales.shape[2] = H / 128 + 1)
BREAK(d_out_scales_quant_cols, a->out_scales.shape[2] = SC * 2)
BREAK(d_out_scales_null, a->out_scales.data = NULL)
BREAK(d_out_scales_misaligned, a->out_scales.data = (char *)a->out_scales.data + 4)
/* out_counts */
BREAK(d_counts_absent, a->out_counts = absent())
BREAK(d_counts_int64, a->out_counts.dtype = NCCLX_INT64)
BREAK(d_counts_ndim, a->out_counts.ndim = 2; a->out_counts.shape[1] = 1)
BREAK(d_counts_r, a->out_counts.shape[0] = R)
BREAK(d_counts_l, a->out_counts.shape[0] = L)
BREAK(d_counts_null, a->out_counts.data = NULL)
BREAK(d_counts_misaligned, a->out_counts.data = (char *)a->out_counts.data + 4)
/* rank-major weights and ids */
BREAK(d_weights_absent, a->topk_weights = absent())
BREAK(d_weights_fp16, a->topk_weights.dtype = NCCLX_FLOAT16)
BREAK(d_weights_ndim, a->topk_weights.ndim = 1)
BREAK(d_weights_rows, a->topk_weights.shape[0] = T)
BREAK(d_weights_topk, a->topk_weights.shape[1] = K + 1)
BREAK(d_weights_null, a->topk_weights.data = NULL)
BREAK(d_weights_misaligned, a->topk_weights.data = (char *)a->topk_weights.data + 4)
BREAK(d_idx_absent, a->out_topk_idx = absent())
BREAK(d_idx_float, a->out_topk_idx.dtype = NCCLX_FLOAT32)
BREAK(d_idx_uint8, a->out_topk_idx.dtype = NCCLX_UINT8)
BREAK(d_idx_ndim, a->out_topk_idx.ndim = 2)
BREAK(d_idx_dim0, a->out_topk_idx.shape[0] = L)
BREAK(d_idx_dim1, a->out_topk_idx.shape[1] = R * T)
BREAK(d_idx_topk, a->out_topk_idx.shape[2] = K + 1)
BREAK(d_idx_null, a->out_topk_idx.data = NULL)
BREAK(d_out_weights_absent, a->out_topk_weights = absent())
BREAK(d_out_weights_int32, a->out_topk_weights.dtype = NCCLX_INT32)
BREAK(d_out_weights_dim0, a->out_topk_weights.shape[0] = L)
BREAK(d_out_weights_dim1, a->out_topk_weights.shape[1] = R * T)
BREAK(d_out_weights_topk, a->out_topk_weights.shape[2] = 1)
BREAK(d_out_weights_null, a->out_topk_weights.data = NULL)
/* rows that are not 16-byte multiples: plans the plan checks would refuse, to reach the
 * dispatch's own check.  BF16 rows of hidden 20 are 40 bytes; FP8 rows of hidden 136 are 136
 * bytes (their BF16 input rows, 272, are whole pieces). */
BREAK(d_rows_40, f->group.plan.hidden = 20; a->tokens.shape[1] = 20; a->out_tokens.shape[2] = 20)
BREAK(d_fp8_rows_136, f->group.plan.hidden = 136; a->tokens.shape[1] = 136;
      a->out_tokens.shape[2] = 136; a->out_scales.shape[2] = 1)

#define A_ "ncclxEpDispatch: args->"

static const dispatch_case_t dispatch_cases[] = {
    /* call-level fields */
    {"recipe MXFP8", EM, NONE, d_recipe_mxfp8, A_ "recipe=0x8", "LL takes"},
    {"recipe 0", RM, NONE, d_recipe_zero, A_ "recipe=0x0", "LL takes"},
    {"recipe NONE|QUANT_FWD", EM, QUANT, d_recipe_none_quant, A_ "recipe=0x3", "LL takes"},
    {"recipe NONE|FP8", RM, FP8, d_recipe_none_fp8, A_ "recipe=0x5", "LL takes"},
    {"recipe 0x10", EM, NONE, d_recipe_high, A_ "recipe=0x10", "LL takes"},
    {"FP8 not planned", EM, FP8, d_recipe_fp8_unplanned, A_ "recipe=0x4",
     "not in the group's plan recipes 0x3"},
    {"QUANT_FWD not planned", RM, QUANT, d_recipe_quant_unplanned, A_ "recipe=0x2",
     "not in the group's plan recipes 0x5"},
    {"round_scales 2", EM, FP8, d_round_scales_2, A_ "round_scales must be 0 or 1", NULL},
    {"round_scales max", RM, NONE, d_round_scales_max, A_ "round_scales must be 0 or 1", NULL},
    {"send_only 2", EM, NONE, d_send_only_2, A_ "send_only must be 0 or 1", NULL},
    /* tokens */
    {"NONE FP32 tokens not planned", EM, NONE, d_tokens_fp32, A_ "tokens.dtype=2", NULL},
    {"NONE UINT8 tokens", RM, NONE, d_tokens_uint8, A_ "tokens.dtype=6", NULL},
    {"FP8 FP16 tokens", EM, FP8, d_tokens_fp16, A_ "tokens.dtype=1", NULL},
    {"FP8 UINT8 tokens", RM, FP8, d_tokens_uint8, A_ "tokens.dtype=6", NULL},
    {"QUANT_FWD FP32 tokens not planned", EM, QUANT, d_tokens_fp32, A_ "tokens.dtype=2", NULL},
    {"tokens dtype out of range", RM, QUANT, d_tokens_range, A_ "tokens.dtype=9", NULL},
    {"tokens dtype -1", EM, NONE, d_tokens_negative_dtype, A_ "tokens.dtype=-1", NULL},
    {"tokens ndim", EM, NONE, d_tokens_ndim, A_ "tokens.ndim=3, expected 2", NULL},
    {"tokens rows N + 1", EM, NONE, d_tokens_rows_more, A_ "tokens.shape[0]=6, expected 5", NULL},
    {"tokens rows N - 1", RM, QUANT, d_tokens_rows_fewer, A_ "tokens.shape[0]=4, expected 5", NULL},
    {"tokens rows T", EM, FP8, d_tokens_rows_t, A_ "tokens.shape[0]=8, expected 5", NULL},
    {"tokens hidden", RM, NONE, d_tokens_hidden, A_ "tokens.shape[1]=128, expected 256", NULL},
    {"tokens negative hidden", EM, NONE, d_tokens_negative, A_ "tokens.shape[1]=-256", NULL},
    {"tokens NULL", RM, FP8, d_tokens_null, A_ "tokens.data is NULL", NULL},
    {"tokens misaligned", EM, NONE, d_tokens_misaligned, A_ "tokens.data=", "not 16-byte aligned"},
    {"QUANT_FWD rows over max_token_bytes", EM, QUANT, d_quant_wide, A_ "tokens rows are 512",
     "max_token_bytes=256"},
    /* out_tokens */
    {"NONE out_tokens of another dtype", EM, NONE, d_out_fp16, A_ "out_tokens.dtype=1", NULL},
    {"FP8 out_tokens BF16", RM, FP8, d_out_bf16, A_ "out_tokens.dtype=0", NULL},
    {"FP8 out_tokens E5M2", EM, FP8, d_out_e5m2, A_ "out_tokens.dtype=4", NULL},
    {"QUANT_FWD out_tokens BF16", RM, QUANT, d_out_bf16, A_ "out_tokens.dtype=0", NULL},
    {"out_tokens absent", EM, NONE, d_out_absent, A_ "out_tokens.ndim=0, expected 3", NULL},
    {"out_tokens 2-D", RM, NONE, d_out_ndim, A_ "out_tokens.ndim=2, expected 3", NULL},
    {"EM out_tokens [R, ...]", EM, NONE, d_out_dim0_r, A_ "out_tokens.shape[0]=4, expected 6",
     "(expert-major)"},
    {"EM out_tokens [L, T, ...]", EM, QUANT, d_out_dim1_t, A_ "out_tokens.shape[1]=8, expected 32",
     "(expert-major)"},
    {"RM out_tokens [L, ...]", RM, NONE, d_out_dim0_l, A_ "out_tokens.shape[0]=6, expected 4",
     "(rank-major)"},
    {"RM out_tokens [R, R*T, ...]", RM, FP8, d_out_dim1_rt, A_ "out_tokens.shape[1]=32, expected 8",
     "(rank-major)"},
    {"out_tokens hidden", EM, FP8, d_out_hidden, A_ "out_tokens.shape[2]=264, expected 256", NULL},
    {"out_tokens NULL", RM, QUANT, d_out_null, A_ "out_tokens.data is NULL", NULL},
    {"out_tokens misaligned", EM, NONE, d_out_misaligned,
     A_ "out_tokens.data=", "not 16-byte aligned"},
    /* FP8 out_scales: FLOAT32 [.., hidden / 128] */
    {"FP8 out_scales absent", EM, FP8, d_out_scales_absent, A_ "out_scales.dtype=0", NULL},
    {"FP8 out_scales FP16", RM, FP8, d_out_scales_fp16, A_ "out_scales.dtype=1", NULL},
    {"FP8 out_scales ndim", EM, FP8, d_out_scales_ndim, A_ "out_scales.ndim=2, expected 3", NULL},
    {"FP8 EM out_scales [R, ...]", EM, FP8, d_out_scales_dim0_r,
     A_ "out_scales.shape[0]=4, expected 6", NULL},
    {"FP8 RM out_scales [R, R*T, ...]", RM, FP8, d_out_scales_dim1_rt,
     A_ "out_scales.shape[1]=32, expected 8", NULL},
    {"FP8 out_scales columns", EM, FP8, d_out_scales_fp8_cols,
     A_ "out_scales.shape[2]=3, expected 2", NULL},
    {"FP8 out_scales NULL", RM, FP8, d_out_scales_null, A_ "out_scales.data is NULL", NULL},
    {"FP8 out_scales misaligned", EM, FP8, d_out_scales_misaligned,
     A_ "out_scales.data=", "not 16-byte aligned"},
    /* QUANT_FWD scales and out_scales */
    {"scales 1-D", EM, QUANT, d_scales_ndim, A_ "scales.ndim=1, expected 2", NULL},
    {"scales data without shape", RM, QUANT, d_scales_shape_only, A_ "scales.ndim=0, expected 2",
     NULL},
    {"scales rows N - 1", EM, QUANT, d_scales_rows, A_ "scales.shape[0]=4, expected 5", NULL},
    {"scales rows T", RM, QUANT, d_scales_rows_t, A_ "scales.shape[0]=8, expected 5", NULL},
    {"scales negative width", EM, QUANT, d_scales_negative, A_ "scales.shape[1]=-4", NULL},
    {"scales dtype out of range", RM, QUANT, d_scales_range, A_ "scales.dtype=9", NULL},
    {"scales NULL", EM, QUANT, d_scales_null, A_ "scales.data is NULL", NULL},
    {"scales misaligned", RM, QUANT, d_scales_misaligned, A_ "scales.data=", "not 16-byte aligned"},
    {"scales of 31 FP4 values", EM, QUANT, d_scales_fp4_odd, A_ "scales rows of 31 values",
     "124 bits: not whole bytes"},
    {"scales of 1 FP4 value", RM, QUANT, d_scales_fp4_one, A_ "scales rows of 1 values",
     "4 bits: not whole bytes"},
    {"scales 20 bytes", EM, QUANT, d_scales_20_bytes, A_ "scales rows are 20 bytes",
     "max_scale_bytes=16"},
    {"scales 17 bytes", RM, QUANT, d_scales_17_bytes, A_ "scales rows are 17 bytes",
     "max_scale_bytes=16"},
    {"QUANT_FWD out_scales absent", EM, QUANT, d_out_scales_absent, A_ "out_scales.dtype=0", NULL},
    {"QUANT_FWD out_scales of another dtype", RM, QUANT, d_out_scales_int32,
     A_ "out_scales.dtype=7", NULL},
    {"QUANT_FWD out_scales ndim", RM, QUANT, d_out_scales_ndim, A_ "out_scales.ndim=2", NULL},
    {"QUANT_FWD RM out_scales [L, ...]", RM, QUANT, d_out_scales_dim0_l,
     A_ "out_scales.shape[0]=6, expected 4", NULL},
    {"QUANT_FWD EM out_scales [L, T, ...]", EM, QUANT, d_out_scales_dim1_t,
     A_ "out_scales.shape[1]=8, expected 32", NULL},
    {"QUANT_FWD out_scales columns", EM, QUANT, d_out_scales_quant_cols,
     A_ "out_scales.shape[2]=8, expected 4", NULL},
    {"QUANT_FWD out_scales NULL", RM, QUANT, d_out_scales_null, A_ "out_scales.data is NULL", NULL},
    /* out_counts */
    {"out_counts absent", EM, NONE, d_counts_absent, A_ "out_counts.dtype=0", NULL},
    {"out_counts INT64", RM, NONE, d_counts_int64, A_ "out_counts.dtype=8", NULL},
    {"out_counts 2-D", EM, FP8, d_counts_ndim, A_ "out_counts.ndim=2, expected 1", NULL},
    {"EM out_counts [R]", EM, NONE, d_counts_r, A_ "out_counts.shape[0]=4, expected 6", NULL},
    {"RM out_counts [L]", RM, QUANT, d_counts_l, A_ "out_counts.shape[0]=6, expected 4", NULL},
    {"out_counts NULL", EM, NONE, d_counts_null, A_ "out_counts.data is NULL", NULL},
    {"out_counts misaligned", RM, NONE, d_counts_misaligned,
     A_ "out_counts.data=", "not 16-byte aligned"},
    /* rank-major: forwarded weights, returned ids and weights */
    {"RM without topk_weights", RM, NONE, d_weights_absent, A_ "topk_weights.dtype=0", NULL},
    {"RM FP16 topk_weights", RM, QUANT, d_weights_fp16, A_ "topk_weights.dtype=1", NULL},
    {"RM 1-D topk_weights", RM, NONE, d_weights_ndim, A_ "topk_weights.ndim=1, expected 2", NULL},
    {"RM topk_weights rows T", RM, FP8, d_weights_rows, A_ "topk_weights.shape[0]=8, expected 5",
     NULL},
    {"RM topk_weights topk", RM, NONE, d_weights_topk, A_ "topk_weights.shape[1]=3, expected 2",
     NULL},
    {"RM topk_weights NULL", RM, NONE, d_weights_null, A_ "topk_weights.data is NULL", NULL},
    {"RM topk_weights misaligned", RM, NONE, d_weights_misaligned,
     A_ "topk_weights.data=", "not 16-byte aligned"},
    {"RM without out_topk_idx", RM, NONE, d_idx_absent, A_ "out_topk_idx.dtype=0", NULL},
    {"RM float out_topk_idx", RM, NONE, d_idx_float, A_ "out_topk_idx.dtype=2", NULL},
    {"RM UINT8 out_topk_idx", RM, QUANT, d_idx_uint8, A_ "out_topk_idx.dtype=6", NULL},
    {"RM 2-D out_topk_idx", RM, NONE, d_idx_ndim, A_ "out_topk_idx.ndim=2, expected 3", NULL},
    {"RM out_topk_idx [L, ...]", RM, NONE, d_idx_dim0, A_ "out_topk_idx.shape[0]=6, expected 4",
     NULL},
    {"RM out_topk_idx [R, R*T, ...]", RM, FP8, d_idx_dim1,
     A_ "out_topk_idx.shape[1]=32, expected 8", NULL},
    {"RM out_topk_idx topk", RM, NONE, d_idx_topk, A_ "out_topk_idx.shape[2]=3, expected 2", NULL},
    {"RM out_topk_idx NULL", RM, NONE, d_idx_null, A_ "out_topk_idx.data is NULL", NULL},
    {"RM without out_topk_weights", RM, NONE, d_out_weights_absent, A_ "out_topk_weights.dtype=0",
     NULL},
    {"RM INT32 out_topk_weights", RM, NONE, d_out_weights_int32, A_ "out_topk_weights.dtype=7",
     NULL},
    {"RM out_topk_weights [L, ...]", RM, QUANT, d_out_weights_dim0,
     A_ "out_topk_weights.shape[0]=6, expected 4", NULL},
    {"RM out_topk_weights [R, R*T, ...]", RM, NONE, d_out_weights_dim1,
     A_ "out_topk_weights.shape[1]=32, expected 8", NULL},
    {"RM out_topk_weights topk", RM, NONE, d_out_weights_topk,
     A_ "out_topk_weights.shape[2]=1, expected 2", NULL},
    {"RM out_topk_weights NULL", RM, NONE, d_out_weights_null, A_ "out_topk_weights.data is NULL",
     NULL},
    /* 16-byte pieces */
    {"BF16 rows of 40 bytes", EM, NONE, d_rows_40,
     A_ "tokens rows of 40 bytes are not 16-byte multiples", NULL},
    {"FP8 rows of 136 bytes", RM, FP8, d_fp8_rows_136,
     A_ "out_tokens rows of 136 bytes are not 16-byte multiples", NULL},
};

static void test_each_broken_dispatch_field(void **state)
{
    (void)state;
    const size_t n = sizeof(dispatch_cases) / sizeof(dispatch_cases[0]);
    for (size_t i = 0; i < n; i++) {
        const dispatch_case_t *c = &dispatch_cases[i];
        fixture_t f;
        ncclx_ep_ll_dispatch_desc_t d, before;
        make_fixture(&f, c->layout);
        ncclxEpDispatchArgs_t a = valid_dispatch(&f, c->recipe);
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d)); /* valid before */
        c->breaker(&f, &a);
        replan(&f);
        memset(&d, 0x5a, sizeof(d));
        before = d;
        ncclxResult_t res = ncclx_ep_dispatch_desc(&f.handle, &a, &d);
        const char *msg = ncclxGetLastError();
        if (res != ncclxInvalidArgument || strstr(msg, c->needle) == NULL ||
            (c->needle2 != NULL && strstr(msg, c->needle2) == NULL)) {
            fail_msg("dispatch case '%s': got %d '%s', expected '%s'%s%s", c->name, (int)res, msg,
                     c->needle, c->needle2 ? " and '" : "", c->needle2 ? c->needle2 : "");
        }
        assert_memory_equal(&d, &before, sizeof(d)); /* outputs only on success */
    }
    assert_true(n >= 90);
}

/* ---- 4. each broken combine field ---- */

typedef struct {
    const char *name;
    uint32_t layout;
    void (*breaker)(fixture_t *f, ncclxEpCombineArgs_t *a);
    const char *needle, *needle2;
} combine_case_t;

#define CBREAK(fn, stmt)                                  \
    static void fn(fixture_t *f, ncclxEpCombineArgs_t *a) \
    {                                                     \
        (void)f;                                          \
        (void)a;                                          \
        stmt;                                             \
    }

CBREAK(c_send_only_2, a->send_only = 2)
CBREAK(c_recipe_mxfp8, a->recipe = NCCLX_EP_RECIPE_MXFP8)
CBREAK(c_recipe_fp8, a->recipe = FP8)
CBREAK(c_recipe_quant, a->recipe = QUANT)
CBREAK(c_recipe_zero, a->recipe = 0)
CBREAK(c_expert_fp32, a->expert_out.dtype = a->out.dtype = NCCLX_FLOAT32)
CBREAK(c_expert_uint8, a->expert_out.dtype = a->out.dtype = NCCLX_UINT8)
CBREAK(c_expert_range, a->expert_out.dtype = NCCLX_NUM_DATA_TYPES)
CBREAK(c_expert_absent, a->expert_out = absent())
CBREAK(c_expert_ndim, a->expert_out.ndim = 2)
CBREAK(c_expert_dim0_r, a->expert_out.shape[0] = R)
CBREAK(c_expert_dim0_l, a->expert_out.shape[0] = L)
CBREAK(c_expert_dim1_t, a->expert_out.shape[1] = T)
CBREAK(c_expert_dim1_rt, a->expert_out.shape[1] = R * T)
CBREAK(c_expert_hidden, a->expert_out.shape[2] = H / 2)
CBREAK(c_expert_null, a->expert_out.data = NULL)
CBREAK(c_expert_misaligned, a->expert_out.data = (char *)a->expert_out.data + 8)
CBREAK(c_out_fp16, a->out.dtype = NCCLX_FLOAT16)
CBREAK(c_out_absent, a->out = absent())
CBREAK(c_out_ndim, a->out.ndim = 3; a->out.shape[2] = 1)
CBREAK(c_out_rows_t, a->out.shape[0] = T)
CBREAK(c_out_rows_fewer, a->out.shape[0] = N - 1)
CBREAK(c_out_hidden, a->out.shape[1] = H * 2)
CBREAK(c_out_null, a->out.data = NULL)
CBREAK(c_out_misaligned, a->out.data = (char *)a->out.data + 4)
CBREAK(c_weights_absent, a->topk_weights = absent())
CBREAK(c_weights_fp16, a->topk_weights.dtype = NCCLX_FLOAT16)
CBREAK(c_weights_rows, a->topk_weights.shape[0] = T)
CBREAK(c_weights_topk, a->topk_weights.shape[1] = K + 1)
CBREAK(c_weights_null, a->topk_weights.data = NULL)
CBREAK(c_weights_misaligned, a->topk_weights.data = (char *)a->topk_weights.data + 4)
/* An FP32-token plan of hidden 20: 80-byte token rows, 40-byte BF16 expert rows. */
CBREAK(c_rows_40, f->group.plan.hidden = 20;
       f->group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32); a->expert_out.shape[2] = 20;
       a->out.shape[1] = 20)

#define C_ "ncclxEpCombine: args->"

static const combine_case_t combine_cases[] = {
    {"send_only 2", EM, c_send_only_2, C_ "send_only must be 0 or 1", NULL},
    {"recipe MXFP8", EM, c_recipe_mxfp8, C_ "recipe=0x8", "an LL combine takes"},
    {"recipe FP8", RM, c_recipe_fp8, C_ "recipe=0x4", "an LL combine takes"},
    {"recipe QUANT_FWD", EM, c_recipe_quant, C_ "recipe=0x2", NULL},
    {"recipe 0", RM, c_recipe_zero, C_ "recipe=0x0", NULL},
    {"FP32 rows without FP32 in the plan", EM, c_expert_fp32, C_ "expert_out.dtype=2", NULL},
    {"UINT8 rows", RM, c_expert_uint8, C_ "expert_out.dtype=6", NULL},
    {"expert_out dtype out of range", EM, c_expert_range, C_ "expert_out.dtype=9", NULL},
    {"expert_out absent", RM, c_expert_absent, C_ "expert_out.ndim=0, expected 3", NULL},
    {"expert_out 2-D", EM, c_expert_ndim, C_ "expert_out.ndim=2, expected 3", NULL},
    {"EM expert_out [R, ...]", EM, c_expert_dim0_r, C_ "expert_out.shape[0]=4, expected 6",
     "(expert-major)"},
    {"EM expert_out [L, T, ...]", EM, c_expert_dim1_t, C_ "expert_out.shape[1]=8, expected 32",
     NULL},
    {"RM expert_out [L, ...]", RM, c_expert_dim0_l, C_ "expert_out.shape[0]=6, expected 4",
     "(rank-major)"},
    {"RM expert_out [R, R*T, ...]", RM, c_expert_dim1_rt, C_ "expert_out.shape[1]=32, expected 8",
     NULL},
    {"expert_out hidden", EM, c_expert_hidden, C_ "expert_out.shape[2]=128, expected 256", NULL},
    {"expert_out NULL", RM, c_expert_null, C_ "expert_out.data is NULL", NULL},
    {"expert_out misaligned", EM, c_expert_misaligned,
     C_ "expert_out.data=", "not 16-byte aligned"},
    {"out of another dtype", EM, c_out_fp16, C_ "out.dtype=1", NULL},
    {"out absent", RM, c_out_absent, C_ "out.ndim=0, expected 2", NULL},
    {"out 3-D", EM, c_out_ndim, C_ "out.ndim=3, expected 2", NULL},
    {"out rows T", RM, c_out_rows_t, C_ "out.shape[0]=8, expected 5", NULL},
    {"out rows N - 1", EM, c_out_rows_fewer, C_ "out.shape[0]=4, expected 5", NULL},
    {"out hidden", RM, c_out_hidden, C_ "out.shape[1]=512, expected 256", NULL},
    {"out NULL", EM, c_out_null, C_ "out.data is NULL", NULL},
    {"out misaligned", RM, c_out_misaligned, C_ "out.data=", "not 16-byte aligned"},
    {"EM without topk_weights", EM, c_weights_absent, C_ "topk_weights.dtype=0", NULL},
    {"EM FP16 topk_weights", EM, c_weights_fp16, C_ "topk_weights.dtype=1", NULL},
    {"EM topk_weights rows T", EM, c_weights_rows, C_ "topk_weights.shape[0]=8, expected 5", NULL},
    {"EM topk_weights topk", EM, c_weights_topk, C_ "topk_weights.shape[1]=3, expected 2", NULL},
    {"EM topk_weights NULL", EM, c_weights_null, C_ "topk_weights.data is NULL", NULL},
    {"EM topk_weights misaligned", EM, c_weights_misaligned,
     C_ "topk_weights.data=", "not 16-byte aligned"},
    {"BF16 rows of 40 bytes", EM, c_rows_40,
     C_ "expert_out rows of 40 bytes (hidden=20) are not 16-byte multiples", NULL},
};

static void test_each_broken_combine_field(void **state)
{
    (void)state;
    const size_t n = sizeof(combine_cases) / sizeof(combine_cases[0]);
    for (size_t i = 0; i < n; i++) {
        const combine_case_t *c = &combine_cases[i];
        fixture_t f;
        ncclx_ep_ll_combine_desc_t d, before;
        make_fixture(&f, c->layout);
        ncclxEpCombineArgs_t a = valid_combine(&f);
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d)); /* valid before */
        c->breaker(&f, &a);
        replan(&f);
        memset(&d, 0x5a, sizeof(d));
        before = d;
        ncclxResult_t res = ncclx_ep_combine_desc(&f.handle, &a, &d);
        const char *msg = ncclxGetLastError();
        if (res != ncclxInvalidArgument || strstr(msg, c->needle) == NULL ||
            (c->needle2 != NULL && strstr(msg, c->needle2) == NULL)) {
            fail_msg("combine case '%s': got %d '%s', expected '%s'%s%s", c->name, (int)res, msg,
                     c->needle, c->needle2 ? " and '" : "", c->needle2 ? c->needle2 : "");
        }
        assert_memory_equal(&d, &before, sizeof(d));
    }
    assert_true(n >= 30);
}

/* ---- 6. zero tokens ---- */

static void test_zero_tokens_accept_null_data(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        ncclx_ep_ll_dispatch_desc_t d;
        ncclx_ep_ll_combine_desc_t c;
        make_fixture(&f, layouts[l]);
        f.handle.desc.num_tokens = 0;
        ncclxEpDispatchArgs_t a = valid_dispatch(&f, QUANT);
        assert_int_equal(a.tokens.shape[0], 0);
        a.tokens.data = a.scales.data = a.topk_weights.data = NULL;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
        assert_null(d.tokens);
        assert_null(d.scales);
        assert_int_equal(d.scale_bytes, SC * 4);
        /* The receive side still has rows: out_tokens stays required. */
        a.out_tokens.data = NULL;
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->out_tokens.data is NULL");
        /* A [1, H] tensor for zero tokens is still refused. */
        a = valid_dispatch(&f, NONE);
        a.tokens.shape[0] = 1;
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->tokens.shape[0]=1, expected 0");
        ncclxEpCombineArgs_t ca = valid_combine(&f);
        ca.out.data = NULL;
        ca.topk_weights.data = NULL;
        assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &ca, &c));
        assert_null(c.out);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_dispatch),
        cmocka_unit_test(test_valid_quant_fwd_variants),
        cmocka_unit_test(test_valid_combine),
        cmocka_unit_test(test_op_word_fields),
        cmocka_unit_test(test_combine_op_word),
        cmocka_unit_test(test_each_broken_dispatch_field),
        cmocka_unit_test(test_each_broken_combine_field),
        cmocka_unit_test(test_zero_tokens_accept_null_data),
    };
    return cmocka_run_group_tests_name("ep_args", tests, NULL, NULL);
}
