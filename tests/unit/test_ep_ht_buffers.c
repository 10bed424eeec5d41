/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT dispatch buffer bounds on the CPU (ep_ht_args_fixture.h): where the caller's buffers may
 * lie against each other on the direct path, against the group's own buffers, and the group's
 * dispatch rows taken as zero copy, each bound tested on both sides.  The other dispatch
 * argument checks: test_ep_ht_args.c.
 */
#include "ep_ht_args_fixture.h"

/* The direct path's overlap checks cover each buffer's whole rows and no more: num_tokens
 * input rows, S output rows.  Buffers that touch end to end are accepted; one shared row (first
 * or last) is refused.  Tokens and scales alike (QUANT_FWD: 256-byte rows, 16-byte scales). */
static void test_direct_overlap_bounds(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_dispatch_desc_t d;
    make_fixture(&f, FLAT);
    f.group.ht.direct = 1;
    const ncclxEpDispatchArgs_t valid = valid_dispatch(&f, QUANT, FWD, NCCLX_INT32);
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &valid, &d));
    const size_t row = d.row_bytes, scale = d.scale_bytes;
    assert_int_equal(row, H);
    assert_int_equal(scale, SC * 4);
    char *const tokens = valid.tokens.data, *const scales = valid.scales.data;

    ncclxEpDispatchArgs_t a = valid;
    a.out_tokens.data = tokens + (size_t)N * row; /* right after the last token row */
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    a.out_tokens.data = tokens - (size_t)S * row; /* ends where the tokens start */
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    a.out_tokens.data = tokens + (size_t)(N - 1) * row; /* on the last token row */
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_tokens, which peers write");
    a.out_tokens.data = tokens - (size_t)(S - 1) * row; /* its last row on the first token */
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_tokens, which peers write");

    a = valid;
    a.out_scales.data = scales + (size_t)N * scale;
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    a.out_scales.data = scales - (size_t)S * scale;
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    a.out_scales.data = scales + (size_t)(N - 1) * scale;
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_scales, which peers write");
    a.out_scales.data = scales - (size_t)(S - 1) * scale;
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_scales, which peers write");

    /* A rank without tokens reads no input byte: its empty tokens and scales may point
     * anywhere, into its outputs too (empty views of one buffer). */
    f.handle.ht.num_tokens = 0;
    a = valid_dispatch(&f, QUANT, FWD, NCCLX_INT32);
    a.tokens.data = (char *)a.out_tokens.data + row;
    a.scales.data = (char *)a.out_scales.data + scale;
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
}

/* Peers write both of the group's buffers during a dispatch: tokens may start nowhere in
 * either (up to its last 16 bytes), and anywhere after. */
static void test_tokens_in_group_buffers(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_dispatch_desc_t d;
    make_buffers_fixture(&f);
    char *const rows[2] = {f.group.ht_dispatch_rows, f.group.ht_combine_rows};
    const size_t bytes[2] = {(size_t)S * f.group.dims.payload_bytes,
                             (size_t)S * f.group.dims.combine_slot_bytes};
    for (int b = 0; b < 2; b++) {
        ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE, FWD, NCCLX_INT32);
        a.tokens.data = rows[b];
        assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->tokens lies in the group's own buffers");
        a.tokens.data = rows[b] + bytes[b] - 16;
        assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                           "args->tokens lies in the group's own buffers");
        a.tokens.data = rows[b] + bytes[b];
        assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    }
}

/* Zero copy only at the start of the dispatch rows and with rows of exactly their size: an
 * out_tokens elsewhere in them, or with smaller rows, would have peers' rows land where the
 * caller does not look.  Just past them it is an ordinary output. */
static void test_zero_copy_dispatch_bounds(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ht_dispatch_desc_t d;
    make_buffers_fixture(&f);
    char *const rows = f.group.ht_dispatch_rows;
    const size_t P = f.group.dims.payload_bytes;
    ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE, FWD, NCCLX_INT32);
    a.out_tokens.data = rows + (size_t)S * f.group.dims.combine_slot_bytes + 16;
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out_tokens points into the group's dispatch rows");
    a.out_tokens.data = rows + (size_t)S * P;
    assert_ncclx_ok(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.in_place, 0);
    a.out_tokens.data = rows; /* BF16 rows of 512 bytes, not 1040 */
    assert_ncclx_error(ncclx_ep_ht_dispatch_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "rows of exactly 1040 bytes (here 512)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_direct_overlap_bounds),
        cmocka_unit_test(test_tokens_in_group_buffers),
        cmocka_unit_test(test_zero_copy_dispatch_bounds),
    };
    return cmocka_run_group_tests_name("ep_ht_buffers", tests, NULL, NULL);
}
