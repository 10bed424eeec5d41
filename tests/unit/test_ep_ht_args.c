/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT dispatch argument checks on the CPU: an HT group and handle are built from a plan without a
 * GPU (ep_ht_args_fixture.h), then each field of valid arguments is broken in turn; the call must
 * fail with ncclxInvalidArgument naming that field and leave its output untouched.  Combine and
 * handle config checks: test_ep_ht_combine_args.c; the dispatch's buffer bounds:
 * test_ep_ht_buffers.c.
 */
#include "ep_ht_args_fixture.h"

/* ---- 1. valid arguments fill the descriptors ---- */

static void test_valid_dispatch(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {FLAT, EM};
    static const uint32_t recipes[] = {NONE, QUANT};
    static const uint32_t passes[] = {FWD, BWD};
    static const ncclxDataType_t ids[] = {NCCLX_INT32, NCCLX_INT64};
    int checked = 0;
    for (int l = 0; l < 2; l++) {
        for (int r = 0; r < 2; r++) {
            for (int p = 0; p < 2; p++) {
                for (int i = 0; i < 2; i++) {
                    fixture_t f;
                    ncclx_ep_ht_dispatch_desc_t d;
                    make_fixture(&f, layouts[l]);
                    ncclxEpDispatchArgs_t a = valid_dispatch(&f, recipes[r], passes[p], ids[i]);
                    const int fwd = passes[p] == FWD, flat = layouts[l] == FLAT;
                    memset(&d, 0x5a, sizeof(d));
                    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
                    assert_int_equal(d.row_bytes, recipes[r] == QUANT ? H : H * 2);
                    assert_int_equal(d.scale_bytes, recipes[r] == QUANT ? SC * 4 : 0);
                    assert_int_equal(d.backward, !fwd);
                    assert_int_equal(d.out_idx_int64, fwd && flat && ids[i] == NCCLX_INT64);
                    assert_ptr_equal(d.tokens, PTR(1));
                    assert_ptr_equal(d.out_tokens, PTR(2));
                    assert_ptr_equal(d.scales, recipes[r] == QUANT ? PTR(3) : NULL);
                    assert_ptr_equal(d.out_scales, recipes[r] == QUANT ? PTR(4) : NULL);
                    assert_ptr_equal(d.topk_weights, fwd ? PTR(5) : NULL);
                    assert_ptr_equal(d.out_topk_idx, fwd && flat ? PTR(6) : NULL);
                    assert_ptr_equal(d.out_topk_weights, fwd ? PTR(7) : NULL);
                    /* The word carries the scale row size: ranks that disagree on it (or on
                     * the recipe) must not read each other's rows. */
                    assert_int_equal(d.op, ncclx_ep_ht_op_word(l, !fwd, K, recipes[r] == QUANT,
                                                               d.row_bytes, d.scale_bytes, 0));
                    checked++;
                }
            }
        }
    }
    assert_int_equal(checked, 16);
}

/* The direct path (a group whose ranks share this GPU): a dispatch into the caller's outputs
 * has peers push rows straight into them, so outputs may not share memory with the inputs
 * there; a group without it never takes it and allows that. */
static void test_direct_dispatch(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++) {
        for (int r = 0; r < 2; r++) {
            fixture_t f;
            ncclx_ep_ht_dispatch_desc_t d;
            make_fixture(&f, r ? EM : FLAT);
            f.group.ht.direct = direct;
            ncclxEpDispatchArgs_t a = valid_dispatch(&f, r ? QUANT : NONE, FWD, NCCLX_INT32);
            memset(&d, 0x5a, sizeof(d));
            assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
            assert_int_equal(d.direct, direct);
            assert_int_equal(d.in_place, 0);
            /* Outputs that share memory with the inputs: peers would write them while this
             * rank still reads its tokens (or scales). */
            a.out_tokens.data = (char *)a.tokens.data + H; /* row 0's second half */
            if (direct) {
                assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d),
                                   ncclxInvalidArgument,
                                   "args->out_tokens, which peers write during the call on this "
                                   "group's direct path (every rank on one GPU), overlaps "
                                   "args->tokens");
            } else {
                assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
            }
            a.out_tokens.data = (char *)a.tokens.data + (size_t)T * d.row_bytes; /* just after */
            assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
            if (r) {
                a.out_scales.data = a.scales.data;
                if (direct) {
                    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d),
                                       ncclxInvalidArgument, "args->out_scales, which peers write");
                } else {
                    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
                }
            }
        }
    }
}

/* Zero copy is each rank's own choice on every path: a dispatch into the group's dispatch rows
 * takes the group's path (on the direct path the rank publishes them as its out_tokens) and
 * carries the same operation word as a dispatch into the caller's buffers, so ranks that mix
 * the two agree.  (The word once left the direct path out for zero copy: a MISMATCH between
 * a zero-copy rank and its peers on one GPU, while the staged path allowed the mix.) */
static void test_zero_copy_word_matches(void **state)
{
    (void)state;
    for (int direct = 0; direct < 2; direct++) {
        for (int l = 0; l < 2; l++) {
            for (int p = 0; p < 2; p++) {
                fixture_t f;
                ncclx_ep_ht_dispatch_desc_t caller, zero;
                make_fixture(&f, l ? EM : FLAT);
                /* One token dtype, no QUANT_FWD: dispatch rows are exactly the token rows. */
                f.group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16);
                f.group.plan.recipes = NONE;
                f.group.plan.max_token_bytes = 0;
                f.group.plan.max_scale_bytes = 0;
                replan(&f);
                assert_int_equal(f.group.dims.payload_bytes, H * 2);
                f.group.ht.direct = direct;
                f.group.ht_dispatch_rows = PTR(30);
                ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE, p ? BWD : FWD, NCCLX_INT32);
                memset(&caller, 0x5a, sizeof(caller));
                assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &caller));
                a.out_tokens.data = f.group.ht_dispatch_rows;
                memset(&zero, 0xa5, sizeof(zero));
                assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &zero));
                assert_int_equal(caller.in_place, 0);
                assert_int_equal(zero.in_place, 1);
                assert_int_equal(caller.direct, direct);
                assert_int_equal(zero.direct, direct);
                assert_ptr_equal(zero.out_tokens, PTR(30));
                assert_int_equal(zero.op, caller.op);
                assert_int_equal(caller.op, ncclx_ep_ht_op_word(l, p, K, 0, H * 2, 0, direct));
            }
        }
    }
}

/* NONE takes every float token dtype of the plan; QUANT_FWD also takes a plan dtype other than
 * UINT8 (rows within max_token_bytes) and may leave both scale tensors absent. */
static void test_valid_dispatch_dtypes(void **state)
{
    (void)state;
    static const ncclxDataType_t floats[] = {NCCLX_BFLOAT16, NCCLX_FLOAT16, NCCLX_FLOAT32};
    static const size_t bytes[] = {H * 2, H * 2, H * 4};
    fixture_t f;
    ncclx_ep_ht_dispatch_desc_t d;
    make_fixture(&f, FLAT);
    for (int i = 0; i < 3; i++) {
        ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE, FWD, NCCLX_INT32);
        a.tokens.dtype = a.out_tokens.dtype = floats[i];
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
        assert_int_equal(d.row_bytes, bytes[i]);
    }
    ncclxEpDispatchArgs_t a = valid_dispatch(&f, QUANT, FWD, NCCLX_INT32);
    a.tokens.dtype = a.out_tokens.dtype = NCCLX_FLOAT16;
    f.group.plan.max_token_bytes = H * 2;
    replan(&f);
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.row_bytes, H * 2);
    a = valid_dispatch(&f, QUANT, FWD, NCCLX_INT32);
    a.scales = absent();
    a.out_scales = absent();
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, 0);
    assert_null(d.scales);
    assert_null(d.out_scales);
    /* Scales of another dtype: out_scales follows it. */
    a = valid_dispatch(&f, QUANT, FWD, NCCLX_INT32);
    a.scales = tensor(3, NCCLX_UINT8, 2, N, 16);
    a.out_scales = tensor(4, NCCLX_UINT8, 2, S, 16);
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.scale_bytes, 16);
}

static void test_valid_combine(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {FLAT, EM};
    static const uint32_t passes[] = {FWD, BWD};
    static const ncclxDataType_t dtypes[] = {NCCLX_BFLOAT16, NCCLX_FLOAT16, NCCLX_FLOAT32};
    static const size_t bytes[] = {H * 2, H * 2, H * 4};
    for (int l = 0; l < 2; l++) {
        for (int p = 0; p < 2; p++) {
            for (int t = 0; t < 3; t++) {
                fixture_t f;
                ncclx_ep_ht_combine_desc_t c;
                make_fixture(&f, layouts[l]);
                ncclxEpCombineArgs_t a = valid_combine(&f, passes[p], dtypes[t]);
                const int bwd = passes[p] == BWD;
                memset(&c, 0x5a, sizeof(c));
                assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &a, &c));
                assert_int_equal(c.row_bytes, bytes[t]);
                assert_int_equal(c.dtype, dtypes[t]);
                assert_int_equal(c.backward, bwd);
                assert_ptr_equal(c.expert_out, PTR(11));
                assert_ptr_equal(c.out, PTR(12));
                assert_ptr_equal(c.topk_weights, bwd ? PTR(13) : NULL);
                assert_ptr_equal(c.out_topk_weights, bwd ? PTR(14) : NULL);
                /* The dtype is in the word: BF16 and FP16 rows have one size, but a receiver
                 * sums them. */
                assert_int_equal(c.op, ncclx_ep_ht_op_word(l, bwd, K, dtypes[t], bytes[t], 0, 0));
            }
        }
    }
}

/* ---- 2. each broken dispatch field ---- */

typedef struct {
    const char *name;
    uint32_t layout, recipe, pass;
    void (*breaker)(fixture_t *f, ncclxEpDispatchArgs_t *a);
    const char *needle, *needle2; /* needle2: NULL or a second substring of the message */
} dispatch_case_t;

static void d_recipe_fp8(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->recipe = NCCLX_EP_RECIPE_FP8;
}
static void d_recipe_mxfp8(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->recipe = NCCLX_EP_RECIPE_MXFP8;
}
static void d_recipe_zero(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->recipe = 0;
}
static void d_recipe_two(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->recipe = NONE | QUANT;
}
static void d_recipe_not_planned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)a;
    f->group.plan.recipes = NONE;
    replan(f);
}
static void d_send_only(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->send_only = 1;
}
static void d_round_scales(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->round_scales = 1;
}
static void d_pass_2(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->pass = 2;
}
static void d_out_counts(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_counts = tensor(9, NCCLX_INT32, 1, E / R, 0);
}
static void d_out_counts_shape_only(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_counts = tensor(9, NCCLX_INT32, 1, E / R, 0);
    a->out_counts.data = NULL;
}
static void d_tokens_not_planned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    f->group.plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT16) | NCCLX_DTYPE_BIT(NCCLX_UINT8);
    replan(f);
    (void)a; /* BF16 tokens */
}
static void d_tokens_uint8_none(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.dtype = a->out_tokens.dtype = NCCLX_UINT8;
}
static void d_tokens_bad_dtype(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.dtype = NCCLX_NUM_DATA_TYPES;
}
static void d_tokens_ndim(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.ndim = 3;
    a->tokens.shape[2] = 1;
}
static void d_tokens_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.shape[0] = N + 1;
}
static void d_tokens_max_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.shape[0] = T; /* the group's T, not the handle's num_tokens */
}
static void d_tokens_negative(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.shape[1] = -H;
}
static void d_tokens_hidden(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.shape[1] = H / 2;
}
static void d_tokens_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.data = NULL;
}
static void d_tokens_misaligned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.data = (char *)a->tokens.data + 8;
}
static void d_out_dtype(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.dtype = NCCLX_FLOAT16;
}
static void d_out_absent(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens = absent(); /* BF16 tokens: the absent tensor's BF16 dtype passes */
}
static void d_out_ll_shape(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.ndim = 3; /* [L, R*T, H] of LL */
    a->out_tokens.shape[0] = E / R;
    a->out_tokens.shape[1] = R * T;
    a->out_tokens.shape[2] = H;
}
static void d_out_default_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.shape[0] = R * T; /* S without max_recv_tokens_per_rank */
}
static void d_out_hidden(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.shape[1] = H + 8;
}
static void d_out_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.data = NULL;
}
static void d_out_misaligned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_tokens.data = (char *)a->out_tokens.data + 4;
}
/* A plan the plan checks would refuse (BF16 rows of 40 bytes): the dispatch check still holds. */
static void d_rows_not_16(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    f->group.plan.hidden = 20;
    replan(f);
    a->tokens.shape[1] = a->out_tokens.shape[1] = 20;
}
static void d_scales_with_none(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales = tensor(3, NCCLX_FLOAT32, 2, N, SC);
}
static void d_out_scales_with_none(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales = tensor(4, NCCLX_FLOAT32, 2, S, SC);
}
static void d_scales_data_only_with_none(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.data = PTR(3); /* ndim 0 but data set: not absent */
}
static void d_scales_data_only_with_quant(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.ndim = 0; /* data set but no shape: not absent, and not a valid tensor */
}
static void d_scales_fp4_odd(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    /* 33 FP4 values = 132 bits: not whole bytes (16.5), let alone 16-byte rows. */
    a->scales.dtype = a->out_scales.dtype = NCCLX_FP4X2_E2M1;
    a->scales.shape[1] = a->out_scales.shape[1] = 33;
}
static void d_quant_wide_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->tokens.dtype = a->out_tokens.dtype = NCCLX_BFLOAT16; /* 512 > max_token_bytes 256 */
}
static void d_out_scales_without_scales(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales = absent();
}
static void d_scales_ndim(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.ndim = 1;
}
static void d_scales_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.shape[0] = N - 1;
}
static void d_scales_bad_dtype(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.dtype = (ncclxDataType_t)-1;
}
static void d_scales_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.data = NULL;
}
static void d_scales_misaligned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.data = (char *)a->scales.data + 8;
}
static void d_scales_8_bytes(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.shape[1] = a->out_scales.shape[1] = 2;
}
static void d_scales_32_bytes(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.shape[1] = a->out_scales.shape[1] = 8;
}
static void d_scales_24_bytes(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->scales.dtype = a->out_scales.dtype = NCCLX_UINT8;
    a->scales.shape[1] = a->out_scales.shape[1] = 24;
    f->group.plan.max_scale_bytes = 32;
    replan(f);
}
static void d_out_scales_absent(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales = absent();
}
static void d_out_scales_dtype(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales.dtype = NCCLX_INT32;
}
static void d_out_scales_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales.shape[0] = N;
}
static void d_out_scales_cols(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales.shape[1] = SC * 2;
}
static void d_out_scales_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_scales.data = NULL;
}
static void d_weights_absent(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights = absent();
}
static void d_weights_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights.data = NULL;
}
static void d_weights_bf16(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights.dtype = NCCLX_BFLOAT16;
}
static void d_weights_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights.shape[0] = N - 1;
}
static void d_weights_topk(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights.shape[1] = K + 1;
}
static void d_weights_misaligned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights.data = (char *)a->topk_weights.data + 4;
}
static void d_idx_absent(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx = absent();
}
static void d_idx_float(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.dtype = NCCLX_FLOAT32;
}
static void d_idx_ndim(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.ndim = 3; /* [R, T, K] of LL */
    a->out_topk_idx.shape[0] = R;
    a->out_topk_idx.shape[1] = T;
    a->out_topk_idx.shape[2] = K;
}
static void d_idx_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.shape[0] = S - 1;
}
static void d_idx_topk(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.shape[1] = K + 1;
}
static void d_idx_null(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.data = NULL;
}
static void d_out_weights_int32(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights.dtype = NCCLX_INT32;
}
static void d_out_weights_1d(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights.ndim = 1;
}
static void d_out_weights_topk(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights.shape[1] = 1;
}
static void d_out_weights_absent(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights = absent();
}
static void d_em_idx_present(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx = tensor(6, NCCLX_INT32, 2, S, K);
}
static void d_em_out_weights_2d(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights = tensor(7, NCCLX_FLOAT32, 2, S, K);
}
static void d_em_out_weights_rows(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights.shape[0] = S + 1;
}
static void d_em_out_weights_misaligned(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights.data = (char *)a->out_topk_weights.data + 4;
}
static void d_bwd_weights(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->topk_weights = tensor(5, NCCLX_FLOAT32, 2, N, K);
}
static void d_bwd_idx(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx = tensor(6, NCCLX_INT64, 2, S, K);
}
static void d_bwd_idx_data_only(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_idx.data = PTR(6);
}
static void d_bwd_out_weights(fixture_t *f, ncclxEpDispatchArgs_t *a)
{
    (void)f;
    a->out_topk_weights = tensor(7, NCCLX_FLOAT32, 1, S, 0);
}

#define A_ "ncclxEpDispatch: args->"

static const dispatch_case_t dispatch_cases[] = {
    /* call-level fields */
    {"recipe FP8", FLAT, NONE, FWD, d_recipe_fp8, A_ "recipe=0x4", "HT dispatch takes"},
    {"recipe MXFP8", EM, NONE, FWD, d_recipe_mxfp8, A_ "recipe=0x8", NULL},
    {"recipe 0", FLAT, NONE, FWD, d_recipe_zero, A_ "recipe=0x0", NULL},
    {"two recipes", FLAT, NONE, FWD, d_recipe_two, A_ "recipe=0x3", NULL},
    {"recipe not planned", FLAT, QUANT, FWD, d_recipe_not_planned, A_ "recipe=0x2",
     "not in the group's plan recipes 0x1"},
    {"send_only", FLAT, NONE, FWD, d_send_only, A_ "send_only=1", "leave 0"},
    {"round_scales", EM, QUANT, FWD, d_round_scales, A_ "round_scales=1", NULL},
    {"pass 2", FLAT, NONE, FWD, d_pass_2, A_ "pass=2", NULL},
    {"out_counts", EM, NONE, FWD, d_out_counts, A_ "out_counts must be absent",
     "ncclxEpHandleGetLayout"},
    {"out_counts without data", FLAT, NONE, BWD, d_out_counts_shape_only,
     A_ "out_counts must be absent", NULL},
    /* tokens and out_tokens */
    {"tokens dtype not planned", FLAT, NONE, FWD, d_tokens_not_planned, A_ "tokens.dtype=0", NULL},
    {"UINT8 tokens without QUANT_FWD", FLAT, NONE, FWD, d_tokens_uint8_none, A_ "tokens.dtype=6",
     NULL},
    {"tokens dtype out of range", EM, QUANT, FWD, d_tokens_bad_dtype, A_ "tokens.dtype=9", NULL},
    {"tokens ndim", FLAT, NONE, FWD, d_tokens_ndim, A_ "tokens.ndim=3", NULL},
    {"tokens rows", FLAT, NONE, FWD, d_tokens_rows, A_ "tokens.shape[0]=6, expected 5", NULL},
    {"tokens rows = T", EM, QUANT, BWD, d_tokens_max_rows, A_ "tokens.shape[0]=8", NULL},
    {"tokens negative hidden", FLAT, NONE, FWD, d_tokens_negative, A_ "tokens.shape[1]=-256", NULL},
    {"tokens hidden", EM, NONE, BWD, d_tokens_hidden, A_ "tokens.shape[1]=128, expected 256", NULL},
    {"tokens NULL", FLAT, QUANT, FWD, d_tokens_null, A_ "tokens.data is NULL", NULL},
    {"tokens misaligned", FLAT, NONE, FWD, d_tokens_misaligned,
     A_ "tokens.data=", "not 16-byte aligned"},
    {"out_tokens dtype", FLAT, NONE, FWD, d_out_dtype, A_ "out_tokens.dtype=1", NULL},
    {"out_tokens absent", EM, NONE, FWD, d_out_absent, A_ "out_tokens.ndim=0, expected 2", NULL},
    {"out_tokens LL shape", EM, NONE, FWD, d_out_ll_shape, A_ "out_tokens.ndim=3", NULL},
    {"out_tokens R*T rows", FLAT, NONE, FWD, d_out_default_rows,
     A_ "out_tokens.shape[0]=32, expected 48", NULL},
    {"out_tokens hidden", FLAT, QUANT, BWD, d_out_hidden, A_ "out_tokens.shape[1]=264", NULL},
    {"out_tokens NULL", EM, QUANT, FWD, d_out_null, A_ "out_tokens.data is NULL", NULL},
    {"out_tokens misaligned", FLAT, NONE, FWD, d_out_misaligned,
     A_ "out_tokens.data=", "not 16-byte aligned"},
    {"rows not 16-byte multiples", FLAT, NONE, FWD, d_rows_not_16,
     A_ "tokens rows of 40 bytes are not 16-byte multiples", NULL},
    /* scales */
    {"scales with NONE", FLAT, NONE, FWD, d_scales_with_none, A_ "scales must be absent",
     "NCCLX_EP_RECIPE_QUANT_FWD"},
    {"out_scales with NONE", EM, NONE, FWD, d_out_scales_with_none, A_ "out_scales must be absent",
     "NCCLX_EP_RECIPE_QUANT_FWD"},
    {"scales data without shape with NONE", FLAT, NONE, BWD, d_scales_data_only_with_none,
     A_ "scales must be absent", NULL},
    {"QUANT_FWD rows over max_token_bytes", FLAT, QUANT, FWD, d_quant_wide_rows,
     A_ "tokens rows are 512 bytes", "max_token_bytes=256"},
    {"out_scales without scales", FLAT, QUANT, FWD, d_out_scales_without_scales,
     A_ "out_scales must be absent", "args->scales is absent"},
    {"scales data without shape with QUANT_FWD", FLAT, QUANT, FWD, d_scales_data_only_with_quant,
     A_ "scales.ndim=0", NULL},
    {"scales of 33 FP4 values", EM, QUANT, FWD, d_scales_fp4_odd, A_ "scales rows are 16 bytes",
     "16-byte multiple"},
    {"scales ndim", EM, QUANT, FWD, d_scales_ndim, A_ "scales.ndim=1", NULL},
    {"scales rows", FLAT, QUANT, FWD, d_scales_rows, A_ "scales.shape[0]=4, expected 5", NULL},
    {"scales dtype out of range", FLAT, QUANT, FWD, d_scales_bad_dtype, A_ "scales.dtype=-1", NULL},
    {"scales NULL", FLAT, QUANT, BWD, d_scales_null, A_ "scales.data is NULL", NULL},
    {"scales misaligned", EM, QUANT, FWD, d_scales_misaligned,
     A_ "scales.data=", "not 16-byte aligned"},
    {"scales 8 bytes", FLAT, QUANT, FWD, d_scales_8_bytes, A_ "scales rows are 8 bytes",
     "16-byte multiple"},
    {"scales 32 bytes", FLAT, QUANT, FWD, d_scales_32_bytes, A_ "scales rows are 32 bytes",
     "max_scale_bytes=16"},
    {"scales 24 bytes", EM, QUANT, FWD, d_scales_24_bytes, A_ "scales rows are 24 bytes",
     "max_scale_bytes=32"},
    {"out_scales absent", FLAT, QUANT, FWD, d_out_scales_absent, A_ "out_scales.dtype=0", NULL},
    {"out_scales dtype", EM, QUANT, BWD, d_out_scales_dtype, A_ "out_scales.dtype=7", NULL},
    {"out_scales rows", FLAT, QUANT, FWD, d_out_scales_rows,
     A_ "out_scales.shape[0]=5, expected 48", NULL},
    {"out_scales columns", FLAT, QUANT, FWD, d_out_scales_cols,
     A_ "out_scales.shape[1]=8, expected 4", NULL},
    {"out_scales NULL", EM, QUANT, FWD, d_out_scales_null, A_ "out_scales.data is NULL", NULL},
    /* forward weights and ids */
    {"forward without topk_weights", FLAT, NONE, FWD, d_weights_absent, A_ "topk_weights.dtype=0",
     NULL},
    {"topk_weights NULL", EM, NONE, FWD, d_weights_null, A_ "topk_weights.data is NULL", NULL},
    {"topk_weights BF16", FLAT, QUANT, FWD, d_weights_bf16, A_ "topk_weights.dtype=0", NULL},
    {"topk_weights rows", EM, NONE, FWD, d_weights_rows, A_ "topk_weights.shape[0]=4", NULL},
    {"topk_weights topk", FLAT, NONE, FWD, d_weights_topk, A_ "topk_weights.shape[1]=3", NULL},
    {"topk_weights misaligned", FLAT, NONE, FWD, d_weights_misaligned,
     A_ "topk_weights.data=", "not 16-byte aligned"},
    {"FLAT without out_topk_idx", FLAT, NONE, FWD, d_idx_absent, A_ "out_topk_idx.dtype=0", NULL},
    {"FLAT float out_topk_idx", FLAT, NONE, FWD, d_idx_float, A_ "out_topk_idx.dtype=2", NULL},
    {"FLAT LL out_topk_idx", FLAT, NONE, FWD, d_idx_ndim, A_ "out_topk_idx.ndim=3", NULL},
    {"FLAT out_topk_idx rows", FLAT, QUANT, FWD, d_idx_rows,
     A_ "out_topk_idx.shape[0]=47, expected 48", NULL},
    {"FLAT out_topk_idx topk", FLAT, NONE, FWD, d_idx_topk, A_ "out_topk_idx.shape[1]=3", NULL},
    {"FLAT out_topk_idx NULL", FLAT, NONE, FWD, d_idx_null, A_ "out_topk_idx.data is NULL", NULL},
    {"FLAT out_topk_weights int32", FLAT, NONE, FWD, d_out_weights_int32,
     A_ "out_topk_weights.dtype=7", NULL},
    {"FLAT 1-D out_topk_weights", FLAT, NONE, FWD, d_out_weights_1d,
     A_ "out_topk_weights.ndim=1, expected 2", NULL},
    {"FLAT out_topk_weights topk", FLAT, NONE, FWD, d_out_weights_topk,
     A_ "out_topk_weights.shape[1]=1", NULL},
    {"FLAT without out_topk_weights", FLAT, NONE, FWD, d_out_weights_absent,
     A_ "out_topk_weights.dtype=0", NULL},
    {"EXPERT_MAJOR out_topk_idx", EM, NONE, FWD, d_em_idx_present, A_ "out_topk_idx must be absent",
     "zone names its expert"},
    {"EXPERT_MAJOR 2-D out_topk_weights", EM, NONE, FWD, d_em_out_weights_2d,
     A_ "out_topk_weights.ndim=2, expected 1", "(expert-major)"},
    {"EXPERT_MAJOR out_topk_weights rows", EM, QUANT, FWD, d_em_out_weights_rows,
     A_ "out_topk_weights.shape[0]=49, expected 48", NULL},
    {"EXPERT_MAJOR without out_topk_weights", EM, NONE, FWD, d_out_weights_absent,
     A_ "out_topk_weights.dtype=0", NULL},
    {"EXPERT_MAJOR out_topk_weights misaligned", EM, NONE, FWD, d_em_out_weights_misaligned,
     A_ "out_topk_weights.data=", "not 16-byte aligned"},
    /* backward: no weights or ids */
    {"backward topk_weights", FLAT, NONE, BWD, d_bwd_weights, A_ "topk_weights must be absent",
     "moves gradients only"},
    {"backward EXPERT_MAJOR topk_weights", EM, QUANT, BWD, d_bwd_weights,
     A_ "topk_weights must be absent", NULL},
    {"backward out_topk_idx", FLAT, NONE, BWD, d_bwd_idx, A_ "out_topk_idx must be absent",
     "moves gradients only"},
    {"backward out_topk_idx data only", FLAT, NONE, BWD, d_bwd_idx_data_only,
     A_ "out_topk_idx must be absent", NULL},
    {"backward out_topk_weights", EM, NONE, BWD, d_bwd_out_weights,
     A_ "out_topk_weights must be absent", "moves gradients only"},
};

static void test_each_broken_dispatch_field(void **state)
{
    (void)state;
    const size_t n = sizeof(dispatch_cases) / sizeof(dispatch_cases[0]);
    for (size_t i = 0; i < n; i++) {
        const dispatch_case_t *c = &dispatch_cases[i];
        fixture_t f;
        ncclx_ep_ht_dispatch_desc_t d, before;
        make_fixture(&f, c->layout);
        ncclxEpDispatchArgs_t a = valid_dispatch(&f, c->recipe, c->pass, NCCLX_INT32);
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d)); /* valid before */
        c->breaker(&f, &a);
        memset(&d, 0x5a, sizeof(d));
        before = d;
        ncclxResult_t res = ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d);
        const char *msg = ncclxGetLastError();
        if (res != ncclxInvalidArgument || strstr(msg, c->needle) == NULL ||
            (c->needle2 != NULL && strstr(msg, c->needle2) == NULL)) {
            fail_msg("dispatch case '%s': got %d '%s', expected '%s'%s%s", c->name, (int)res, msg,
                     c->needle, c->needle2 ? " and '" : "", c->needle2 ? c->needle2 : "");
        }
        assert_memory_equal(&d, &before, sizeof(d)); /* outputs only on success */
    }
    assert_true(n >= 70);
}

/* ---- 5. zero tokens ---- */

static void test_zero_tokens_accept_null_data(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {FLAT, EM};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        ncclx_ep_ht_dispatch_desc_t d;
        ncclx_ep_ht_combine_desc_t c;
        /* A peer with tokens in the same operation: a rank without tokens must compute the
         * same operation word from its empty (NULL) tensors, or every peer drops its rows. */
        fixture_t peer;
        ncclx_ep_ht_dispatch_desc_t pd;
        ncclx_ep_ht_combine_desc_t pc;
        make_fixture(&peer, layouts[l]);
        make_fixture(&f, layouts[l]);
        f.handle.ht.num_tokens = 0;

        ncclxEpDispatchArgs_t a = valid_dispatch(&f, QUANT, FWD, NCCLX_INT64);
        assert_int_equal(a.tokens.shape[0], 0);
        a.tokens.data = NULL;
        a.scales.data = NULL;
        a.topk_weights.data = NULL;
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
        assert_null(d.tokens);
        assert_null(d.scales);
        assert_null(d.topk_weights);
        assert_int_equal(d.row_bytes, H);
        assert_int_equal(d.scale_bytes, SC * 4);
        assert_int_equal(d.out_idx_int64, layouts[l] == FLAT);
        ncclxEpDispatchArgs_t pa = valid_dispatch(&peer, QUANT, FWD, NCCLX_INT64);
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&peer.handle, &pa, &pd));
        assert_int_equal(d.op, pd.op);
        /* The receive side still has S rows: out_tokens stays required. */
        a.out_tokens.data = NULL;
        assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->out_tokens.data is NULL");
        /* A [1, H] tensor for zero tokens is still refused. */
        a = valid_dispatch(&f, NONE, BWD, NCCLX_INT32);
        a.tokens.shape[0] = 1;
        assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->tokens.shape[0]=1, expected 0");
        a.tokens.shape[0] = 0;
        a.tokens.data = NULL;
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
        assert_int_equal(d.backward, 1);
        pa = valid_dispatch(&peer, NONE, BWD, NCCLX_INT32);
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&peer.handle, &pa, &pd));
        assert_int_equal(d.op, pd.op);

        ncclxEpCombineArgs_t ca = valid_combine(&f, BWD, NCCLX_FLOAT16);
        ca.out.data = NULL;
        ca.out_topk_weights.data = NULL;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &ca, &c));
        assert_null(c.out);
        assert_null(c.out_topk_weights);
        assert_int_equal(c.row_bytes, H * 2);
        ncclxEpCombineArgs_t pca = valid_combine(&peer, BWD, NCCLX_FLOAT16);
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&peer.handle, &pca, &pc));
        assert_int_equal(c.op, pc.op);
        ca = valid_combine(&f, FWD, NCCLX_BFLOAT16);
        ca.out.data = NULL;
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&f.handle, &ca, &c));
        pca = valid_combine(&peer, FWD, NCCLX_BFLOAT16);
        assert_ncclx_ok(ncclx_ep_ht_combine_desc(&peer.handle, &pca, &pc));
        assert_int_equal(c.op, pc.op);
        ca.expert_out.data = NULL;
        assert_ncclx_error(ncclx_ep_ht_combine_desc(&f.handle, &ca, &c), ncclxInvalidArgument,
                           "args->expert_out.data is NULL");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_dispatch),
        cmocka_unit_test(test_direct_dispatch),
        cmocka_unit_test(test_zero_copy_word_matches),
        cmocka_unit_test(test_valid_dispatch_dtypes),
        cmocka_unit_test(test_valid_combine),
        cmocka_unit_test(test_each_broken_dispatch_field),
        cmocka_unit_test(test_zero_tokens_accept_null_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
