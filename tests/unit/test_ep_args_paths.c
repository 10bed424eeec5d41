/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Which kernels a valid LL dispatch or combine takes (lib/ep/ep_ll_args.c), on the fixture of
 * ep_ll_args_fixture.h, without a GPU: the dispatch's wait in the send's last block, the small
 * combine reduced there, the receive launched early, the zero-copy dispatch (in place or
 * with one more copy, and its refusals, its boards in the send), the pulled combine's signal
 * from its receive, a team of one's reduce of its own rows; and the dispatch's grids, cut to
 * its work.  The argument checks themselves are tests/unit/test_ep_args.c.
 */
#include "ep_ll_args_fixture.h"

/* The flag of a receive in the send, for the fixture as it stands: the dispatch's wait_in_send
 * or the combine's reduce_in_send of its valid call, send_only or not. */
typedef int (*receive_in_send_flag_t)(fixture_t *f, uint32_t send_only);

static int dispatch_wait_in_send(fixture_t *f, uint32_t send_only)
{
    ncclx_ep_ll_dispatch_desc_t d;
    ncclxEpDispatchArgs_t a = valid_dispatch(f, NONE);
    a.send_only = send_only;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
    return d.wait_in_send;
}

static int combine_reduce_in_send(fixture_t *f, uint32_t send_only)
{
    ncclx_ep_ll_combine_desc_t c;
    ncclxEpCombineArgs_t a = valid_combine(f);
    a.send_only = send_only;
    assert_ncclx_ok(ncclx_ep_combine_desc(&f->handle, &a, &c));
    return c.reduce_in_send;
}

/* The conditions both share, on a fixture of R ranks: not send_only, one load/store domain (no
 * emulated or GIN network), at most NCCLX_EP_THREADS ranks.  Leaves the fixture at
 * NCCLX_EP_THREADS ranks without a network. */
static void check_receive_in_send(fixture_t *f, receive_in_send_flag_t flag)
{
    f->group.desc.ranks = R;
    assert_int_equal(flag(f, 0), 1);
    assert_int_equal(flag(f, 1), 0);
    f->group.desc.net.kind = NCCLX_NET_EMULATED;
    assert_int_equal(flag(f, 0), 0);
    f->group.desc.net.kind = NCCLX_NET_GIN;
    assert_int_equal(flag(f, 0), 0);
    f->group.desc.net.kind = NCCLX_NET_NONE;
    f->group.desc.ranks = NCCLX_EP_THREADS;
    assert_int_equal(flag(f, 0), 1);
    f->group.desc.ranks = NCCLX_EP_THREADS + 1;
    assert_int_equal(flag(f, 0), 0);
    f->group.desc.ranks = NCCLX_EP_THREADS;
}

/* The dispatch's wait moves into the send's last block only where that cannot block or
 * slow the send: not send_only (its send must end without waiting for peers), not across
 * load/store domains (the network kernel enqueued after the send signals remote ranks, so a
 * send that waited would never see them), not past one block's threads (one per source). */
static void test_wait_in_send(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        make_fixture(&f, layouts[l]);
        check_receive_in_send(&f, dispatch_wait_in_send);
    }
}

/* A combine is reduced by its send's last block under the dispatch's conditions (not send_only,
 * one load/store domain, at most one block's threads of ranks), and only while its receive is at
 * most NCCLX_EP_LL_REDUCE_IN_SEND_UNITS (token, 256-element) units, counted with a partial unit
 * as a whole one: at hidden 1024 (4 units a token) 8 tokens are; at hidden 1032 (5 units) 6 are
 * and 7 are not; 0 tokens are (the block still waits for every source). */
static void test_reduce_in_send(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    static const struct {
        uint32_t hidden;
        int num_tokens, want;
    } sizes[] = {{H, 0, 1}, {1024, T, 1}, {1032, 6, 1}, {1032, 7, 0}};
    for (int l = 0; l < 2; l++) {
        fixture_t f;
        ncclx_ep_ll_combine_desc_t c;
        ncclxEpCombineArgs_t a;
        make_fixture(&f, layouts[l]);
        check_receive_in_send(&f, combine_reduce_in_send);
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            f.group.plan.hidden = sizes[i].hidden;
            replan(&f);
            f.handle.desc.num_tokens = sizes[i].num_tokens;
            a = valid_combine(&f);
            a.expert_out.shape[2] = a.out.shape[1] = sizes[i].hidden;
            memset(&c, 0x5a, sizeof(c));
            assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &c));
            assert_int_equal(c.reduce_in_send, sizes[i].want);
        }
    }
}

/* The receive kernel is launched early (a programmatic dependent of the send, early_recv) only
 * when it follows the send at once and the rank has its GPU to itself: a dispatch that waits in
 * its send, a combine that is not reduced there, both only with the group's early_launch (never
 * on a loopback team of several ranks, whose peers' kernels need the SMs). */
static void test_early_recv(void **state)
{
    (void)state;
    static const uint32_t layouts[] = {EM, RM};
    for (int l = 0; l < 2; l++) {
        fixture_t f, fc;
        ncclx_ep_ll_dispatch_desc_t d;
        ncclx_ep_ll_combine_desc_t c;
        make_fixture(&f, layouts[l]);
        make_fixture(&fc, layouts[l]);
        f.group.desc.ranks = fc.group.desc.ranks = R;
        fc.group.plan.hidden = 1032; /* 5 units a token: 6 tokens reduce in the send, 7 do not */
        replan(&fc);
        for (int alone = 0; alone < 2; alone++) {
            f.group.desc.early_launch = fc.group.desc.early_launch = alone;
            for (uint32_t send_only = 0; send_only < 2; send_only++) {
                ncclxEpDispatchArgs_t da = valid_dispatch(&f, NONE);
                da.send_only = send_only;
                assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &da, &d));
                assert_int_equal(d.early_recv, alone && !send_only);
                for (int tokens = 6; tokens <= 7; tokens++) {
                    fc.handle.desc.num_tokens = tokens;
                    ncclxEpCombineArgs_t ca = valid_combine(&fc);
                    ca.send_only = send_only;
                    ca.expert_out.shape[2] = ca.out.shape[1] = 1032;
                    assert_ncclx_ok(ncclx_ep_combine_desc(&fc.handle, &ca, &c));
                    assert_int_equal(c.reduce_in_send, !send_only && tokens == 6);
                    assert_int_equal(c.early_recv, alone && !send_only && tokens == 7);
                    /* Across load/store domains the network kernels come between. */
                    fc.group.desc.net.kind = NCCLX_NET_EMULATED;
                    assert_ncclx_ok(ncclx_ep_combine_desc(&fc.handle, &ca, &c));
                    assert_int_equal(c.early_recv, 0);
                    fc.group.desc.net.kind = NCCLX_NET_NONE;
                }
                f.group.desc.net.kind = NCCLX_NET_GIN;
                assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &da, &d));
                assert_int_equal(d.early_recv, 0);
                f.group.desc.net.kind = NCCLX_NET_NONE;
            }
        }
    }
}

/* An expert-major handle of a group planned with zero_copy (hidden 0: the fixture's), its
 * zero-copy rows at PTR(20) and scale rows at PTR(21), as ncclxEpGroupGetLlBuffers gives them. */
static void make_zero_copy_fixture(fixture_t *f, uint32_t hidden)
{
    make_fixture(f, EM);
    f->group.plan.zero_copy = 1;
    if (hidden != 0) {
        f->group.plan.hidden = hidden;
    }
    replan(f);
    f->group.desc.zero_copy = 1;
    f->group.zero_copy_tokens = PTR(20);
    f->group.zero_copy_scales = PTR(21);
}

/* The zero-copy rules of a dispatch of f's handle whose layout's rows are at rows / scales,
 * for every recipe: in place exactly at them, one copy from anywhere else (other_rows: the
 * other layout's rows, a buffer like any other for this one; NULL: none), refused for outputs
 * that start inside them anywhere but their first row and for inputs inside them; field: the
 * ncclxEpLlBuffers_t field the errors name. */
static void zero_copy_dispatch_rules(fixture_t *f, void *rows, void *scales, void *other_rows,
                                     const char *field)
{
    static const uint32_t recipes[] = {NONE, FP8, QUANT};
    ncclx_ep_ll_dispatch_desc_t d;
    char why[160];
    for (int r = 0; r < 3; r++) {
        const int scaled = recipes[r] != NONE;
        ncclxEpDispatchArgs_t a = valid_dispatch(f, recipes[r]);
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
        assert_int_equal(d.zero_copy, 1);
        assert_int_equal(d.copy_rows, 1);
        assert_int_equal(d.copy_scales, scaled);
        if (other_rows != NULL) {
            a.out_tokens.data = other_rows;
            assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
            assert_int_equal(d.copy_rows, 1);
        }
        a.out_tokens.data = rows;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
        assert_int_equal(d.copy_rows, 0);
        assert_int_equal(d.copy_scales, scaled);
        if (scaled) {
            a.out_scales.data = scales;
            assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
            assert_int_equal(d.copy_scales, 0);
            /* A scale view one row in. */
            a.out_scales.data = (char *)scales + SC * 4;
            memset(&d, 0x5a, sizeof(d));
            assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument,
                               "args->out_scales starts inside the group's zero-copy rows");
            a.out_scales.data = PTR(4);
        }
        /* A row view one row in, and the tokens inside the rows. */
        a.out_tokens.data = (char *)rows + H * 2;
        snprintf(why, sizeof(why), "not at their first row (ncclxEpGroupGetLlBuffers %s)", field);
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument, why);
        a.out_tokens.data = rows;
        a.tokens.data = (char *)rows + 4096;
        snprintf(why, sizeof(why),
                 "args->tokens lies in the group's zero-copy rows (ncclxEpGroupGetLlBuffers %s",
                 field);
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument, why);
        /* The rows end after the layout's count of them (L x R x T expert-major, R x T
         * rank-major): their last row is inside, the byte after them is a buffer like any other;
         * so for the scale rows, which are SC * 4 bytes each, not a token row's. */
        const size_t n = f->handle.desc.expert_major ? (size_t)L * R * T : (size_t)R * T;
        a.tokens.data = (char *)rows + (n - 1) * H * 2;
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument, why);
        a.tokens.data = (char *)rows + n * H * 2;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
        a.tokens.data = (char *)scales + (n - 1) * SC * 4;
        assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument, why);
        a.tokens.data = (char *)scales + n * SC * 4;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f->handle, &a, &d));
        a.tokens.data = PTR(1);
        if (recipes[r] == QUANT) {
            a.scales.data = scales;
            assert_ncclx_error(ncclx_ep_dispatch_desc(&f->handle, &a, &d), ncclxInvalidArgument,
                               "args->scales lies in the group's zero-copy rows");
        }
    }
}

/* Zero copy (a group planned with zero_copy): an expert-major dispatch stores its rows straight
 * into the receivers' zero-copy rows; it receives in place when out_tokens / out_scales are
 * exactly this rank's zero-copy rows and copies once more otherwise.  Inputs inside the rows
 * (peers write them during the dispatch) and outputs that start inside them anywhere but their
 * first row are refused, naming the argument; rank-major handles use rows of their own (R x T),
 * under the same rules; groups without zero_copy are untouched. */
static void test_zero_copy(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_zero_copy_fixture(&f, 0);
    /* Rows of 512 bytes (BF16, the largest row), scale rows of 16 (QUANT_FWD's 4 floats). */
    assert_int_equal(f.group.dims.zero_copy_row_bytes, H * 2);
    assert_int_equal(f.group.dims.zero_copy_scale_bytes, SC * 4);
    /* The rows as ncclxEpGroupGetLlBuffers gives them; refused on a group without zero_copy. */
    ncclxEpLlBuffers_t b = NCCLX_EP_LL_BUFFERS_INIT;
    assert_ncclx_ok(ncclxEpGroupGetLlBuffers(&f.group, &b));
    assert_ptr_equal(b.tokens, PTR(20));
    assert_ptr_equal(b.scales, PTR(21));
    assert_int_equal(b.row_bytes, H * 2);
    assert_int_equal(b.scale_bytes, SC * 4);
    assert_int_equal(b.rows, L * R * T);
    f.group.plan.zero_copy = 0;
    assert_ncclx_error(ncclxEpGroupGetLlBuffers(&f.group, &b), ncclxInvalidUsage,
                       "was planned without zero_copy");
    f.group.plan.zero_copy = 1;
    assert_ncclx_error(ncclxEpGroupGetLlBuffers(NULL, &b), ncclxInvalidArgument,
                       "ncclxEpGroupGetLlBuffers: group is NULL");
    assert_ncclx_error(ncclxEpGroupGetLlBuffers(&f.group, NULL), ncclxInvalidArgument,
                       "ncclxEpGroupGetLlBuffers: buffers is NULL");
    zero_copy_dispatch_rules(&f, PTR(20), PTR(21), NULL, ".tokens");
    /* Scale rows of one byte (QUANT_FWD, UINT8 [N, 1]) are rows like any other: received in
     * place at the group's scale rows, and refused for a view 16 of them in (still inside the
     * group's scale rows, whatever the call's own row size). */
    ncclxEpDispatchArgs_t q = valid_dispatch(&f, QUANT);
    q.scales = tensor(3, NCCLX_UINT8, 2, N, 1, 0);
    q.out_scales = out_tensor(&f, 4, NCCLX_UINT8, 1);
    q.out_scales.data = PTR(21);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &q, &d));
    assert_int_equal(d.scale_bytes, 1);
    assert_int_equal(d.copy_scales, 0);
    q.out_scales.data = (char *)PTR(21) + 16;
    assert_ncclx_error(ncclx_ep_dispatch_desc(&f.handle, &q, &d), ncclxInvalidArgument,
                       "args->out_scales starts inside the group's zero-copy rows");
    /* Rank-major handles of a group without rank-major rows (its plan's layouts lack
     * RANK_MAJOR: not a handle a real group could make, but the rows are the test), and groups
     * without zero_copy, take the receive area. */
    fixture_t rm;
    make_fixture(&rm, RM);
    rm.group = f.group;
    rm.handle.group = &rm.group;
    ncclxEpDispatchArgs_t a = valid_dispatch(&rm, NONE);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&rm.handle, &a, &d));
    assert_int_equal(d.zero_copy, 0);
    /* With rank-major rows of their own (R x T), as the expert-major ones, at their address. */
    rm.group.zero_copy_rm_tokens = PTR(22);
    rm.group.zero_copy_rm_scales = PTR(23);
    assert_ncclx_ok(ncclxEpGroupGetLlBuffers(&rm.group, &b));
    assert_ptr_equal(b.rank_major_tokens, PTR(22));
    assert_ptr_equal(b.rank_major_scales, PTR(23));
    assert_int_equal(b.rank_major_rows, R * T);
    assert_ptr_equal(b.tokens, PTR(20));
    zero_copy_dispatch_rules(&rm, PTR(22), PTR(23), PTR(20), ".rank_major_tokens");
    f.group.desc.zero_copy = 0;
    a = valid_dispatch(&f, NONE);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.copy_rows + d.copy_scales, 0);
}

/* Zero copy, combine: an expert-major combine of a zero_copy group may read its sources' rows
 * where they are (zero_copy), and leaves its own to be read there (pull) exactly when expert_out
 * is the group's zero-copy rows: a view one row in, or a buffer of the caller's, is sent as on any
 * group.  expert_out at the rows but wider than them (rows sized for FP8 alone) is refused;
 * rank-major handles pull from their own rows; groups without zero_copy send. */
static void test_zero_copy_combine(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_combine_desc_t d;
    make_zero_copy_fixture(&f, 0);
    ncclxEpCombineArgs_t a = valid_combine(&f);
    memset(&d, 0x5a, sizeof(d));
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy, 1);
    assert_int_equal(d.pull, 0);
    a.expert_out.data = PTR(20);
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy, 1);
    assert_int_equal(d.pull, 1);
    /* Its own results may not land in the rows its peers read: out, topk_weights. */
    a.out.data = (char *)PTR(20) + 4096;
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->out lies in the group's zero-copy rows");
    a.out.data = PTR(12);
    a.topk_weights.data = PTR(20);
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->topk_weights lies in the group's zero-copy rows");
    a.topk_weights.data = PTR(13);
    /* send_only too: the rows wait for the tokens' ranks to read them. */
    a.send_only = 1;
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.pull, 1);
    a.send_only = 0;
    a.expert_out.data = (char *)PTR(20) + H * 2;
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.pull, 0);
    /* Rows of H bytes (FP8 alone): a BF16 expert_out at them would run past them. */
    f.group.plan.recipes = FP8;
    replan(&f);
    assert_int_equal(f.group.dims.zero_copy_row_bytes, H);
    a.expert_out.data = PTR(20);
    assert_ncclx_error(ncclx_ep_combine_desc(&f.handle, &a, &d), ncclxInvalidArgument,
                       "args->expert_out is the group's zero-copy rows");
    a.expert_out.data = PTR(11);
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.pull, 1);
    f.group.plan.recipes = NONE | FP8 | QUANT;
    replan(&f);
    /* A rank-major handle of the group, and a group without zero_copy. */
    fixture_t rm;
    make_fixture(&rm, RM);
    rm.group = f.group;
    rm.handle.group = &rm.group;
    a = valid_combine(&rm);
    assert_ncclx_ok(ncclx_ep_combine_desc(&rm.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.pull, 0);
    /* With rank-major rows: pulled exactly from them (not from the expert-major rows). */
    rm.group.zero_copy_rm_tokens = PTR(22);
    assert_ncclx_ok(ncclx_ep_combine_desc(&rm.handle, &a, &d));
    assert_int_equal(d.zero_copy, 1);
    assert_int_equal(d.pull, 0);
    a.expert_out.data = PTR(20);
    assert_ncclx_ok(ncclx_ep_combine_desc(&rm.handle, &a, &d));
    assert_int_equal(d.pull, 0);
    a.expert_out.data = PTR(22);
    assert_ncclx_ok(ncclx_ep_combine_desc(&rm.handle, &a, &d));
    assert_int_equal(d.pull, 1);
    a.out.data = (char *)PTR(22) + 64;
    assert_ncclx_error(ncclx_ep_combine_desc(&rm.handle, &a, &d), ncclxInvalidArgument,
                       "args->out lies in the group's zero-copy rows");
    f.group.desc.zero_copy = 0;
    a = valid_combine(&f);
    a.expert_out.data = PTR(20);
    assert_ncclx_ok(ncclx_ep_combine_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.pull, 0);
}

/* A zero-copy dispatch exchanges its count boards in its send (board_in_send, no board kernel)
 * exactly on a rank alone on its GPU and not send_only (the send's whole grid waits for a late
 * peer's board then), received in place or into the caller's rows alike; never without
 * zero_copy, and never across load/store domains (early_recv's conditions). */
static void test_board_in_send(void **state)
{
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_zero_copy_fixture(&f, 0);
    f.group.desc.ranks = R;
    for (int alone = 0; alone < 2; alone++) {
        f.group.desc.early_launch = alone;
        for (uint32_t send_only = 0; send_only < 2; send_only++) {
            for (int in_place = 0; in_place < 2; in_place++) {
                ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE);
                a.send_only = send_only;
                a.out_tokens.data = in_place ? PTR(20) : a.out_tokens.data;
                memset(&d, 0x5a, sizeof(d));
                assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
                assert_int_equal(d.zero_copy, 1);
                assert_int_equal(d.board_in_send, alone && !send_only);
            }
        }
    }
    f.group.desc.early_launch = 1;
    f.group.desc.zero_copy = 0;
    ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.board_in_send, 0);
}

/* A zero-copy dispatch has no receive kernel (recv_in_send: the send records its own messages
 * and ends the operation) exactly in a team of one that receives at once (wait_in_send: not
 * send_only, no network), into its rows in place, and, with scales, into its scale rows in place;
 * in a team of two, or with either output the caller's (the receive copies it), the receive
 * kernel stays.  Whether the rank is alone on its GPU does not matter (a loopback team of one
 * has its boards in a kernel of their own, and its send still knows every row). */
static void test_recv_in_send(void **state)
{
    static const uint32_t recipes[] = {NONE, FP8, QUANT};
    (void)state;
    fixture_t f;
    ncclx_ep_ll_dispatch_desc_t d;
    make_zero_copy_fixture(&f, 0);
    for (uint32_t ranks = 1; ranks <= 2; ranks++) {
        f.group.desc.ranks = ranks;
        for (int alone = 0; alone < 2; alone++) {
            f.group.desc.early_launch = alone;
            for (int r = 0; r < 3; r++) {
                for (uint32_t send_only = 0; send_only < 2; send_only++) {
                    /* in_place: bit 0 the rows, bit 1 the scales */
                    for (int in_place = 0; in_place < 4; in_place++) {
                        ncclxEpDispatchArgs_t a = valid_dispatch(&f, recipes[r]);
                        const int scaled = recipes[r] != NONE;
                        const int rows_in = in_place & 1, scales_in = !scaled || (in_place & 2);
                        a.send_only = send_only;
                        a.out_tokens.data = rows_in ? PTR(20) : a.out_tokens.data;
                        a.out_scales.data = scaled && scales_in ? PTR(21) : a.out_scales.data;
                        memset(&d, 0x5a, sizeof(d));
                        assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
                        assert_int_equal(d.recv_in_send,
                                         ranks == 1 && !send_only && rows_in && scales_in);
                    }
                }
            }
        }
    }
    /* No network: its kernel, after the send, is what signals remote ranks. */
    f.group.desc.ranks = 1;
    ncclxEpDispatchArgs_t a = valid_dispatch(&f, NONE);
    a.out_tokens.data = PTR(20);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.recv_in_send, 1);
    f.group.desc.net.kind = NCCLX_NET_EMULATED;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.recv_in_send, 0);
    f.group.desc.net.kind = NCCLX_NET_NONE;
    /* Not without zero copy. */
    f.group.desc.zero_copy = 0;
    a = valid_dispatch(&f, NONE);
    assert_ncclx_ok(ncclx_ep_dispatch_desc(&f.handle, &a, &d));
    assert_int_equal(d.zero_copy + d.recv_in_send, 0);
}

/* The hidden size of the pulled-combine fixtures: 5 reduce units a token, so that 6 tokens (30
 * units) reduce in the send and 7 (35) do not. */
#define PULL_HIDDEN 1032

/* The combine descriptor of a valid call on a zero-copy fixture of PULL_HIDDEN: `tokens` tokens,
 * send_only or not, expert_out the group's zero-copy rows (pulled) or the caller's. */
static ncclx_ep_ll_combine_desc_t pull_case(fixture_t *f, uint32_t send_only, int tokens,
                                            int pulled)
{
    ncclx_ep_ll_combine_desc_t c;
    f->handle.desc.num_tokens = tokens;
    ncclxEpCombineArgs_t a = valid_combine(f);
    a.send_only = send_only;
    a.expert_out.shape[2] = a.out.shape[1] = PULL_HIDDEN;
    a.expert_out.data = pulled ? PTR(20) : PTR(11);
    memset(&c, 0x5a, sizeof(c));
    assert_ncclx_ok(ncclx_ep_combine_desc(&f->handle, &a, &c));
    return c;
}

/* A pulled combine (expert_out the group's zero-copy rows) has no send kernel exactly where a
 * combine's receive would be launched early: its receive's first block signals (signal_in_recv)
 * and nothing is launched early.  Not on a loopback team of several ranks (no early_launch), not
 * send_only, not for a combine reduced in its send, and never for a combine that sends its rows
 * (the caller's expert_out), which keeps its early receive. */
static void test_signal_in_recv(void **state)
{
    (void)state;
    fixture_t f;
    make_zero_copy_fixture(&f, PULL_HIDDEN);
    f.group.desc.ranks = R;
    for (int alone = 0; alone < 2; alone++) {
        f.group.desc.early_launch = alone;
        for (uint32_t send_only = 0; send_only < 2; send_only++) {
            for (int tokens = 6; tokens <= 7; tokens++) {
                for (int pulled = 0; pulled < 2; pulled++) {
                    const ncclx_ep_ll_combine_desc_t c = pull_case(&f, send_only, tokens, pulled);
                    const int large = !send_only && tokens == 7;
                    assert_int_equal(c.pull, pulled);
                    assert_int_equal(c.signal_in_recv, alone && large && pulled);
                    assert_int_equal(c.early_recv, alone && large && !pulled);
                }
            }
        }
    }
}

/* A pulled combine of a team of one that receives at once (reduced in its send, or signalled by
 * its receive) reduces its own rows as they lie (reduce_own): no signal to itself, no wait.  Not
 * in a team of two, not send_only, not for a combine that sends its rows (the caller's
 * expert_out), not across load/store domains, and not for a receive that is not launched at once
 * (a loopback team of one has no early_launch: its large combine keeps the send's signal). */
static void test_reduce_own(void **state)
{
    (void)state;
    fixture_t f;
    make_zero_copy_fixture(&f, PULL_HIDDEN);
    for (uint32_t ranks = 1; ranks <= 2; ranks++) {
        f.group.desc.ranks = ranks;
        for (int alone = 0; alone < 2; alone++) {
            f.group.desc.early_launch = alone;
            for (uint32_t send_only = 0; send_only < 2; send_only++) {
                for (int tokens = 6; tokens <= 7; tokens++) {
                    for (int pulled = 0; pulled < 2; pulled++) {
                        const ncclx_ep_ll_combine_desc_t c =
                            pull_case(&f, send_only, tokens, pulled);
                        const int at_once = !send_only && (tokens == 6 || alone);
                        assert_int_equal(c.reduce_own, ranks == 1 && pulled && at_once);
                    }
                }
            }
        }
    }
    /* A network: the receive waits for what crossed it. */
    f.group.desc.ranks = 1;
    f.group.desc.early_launch = 1;
    assert_int_equal(pull_case(&f, 0, 6, 1).reduce_own, 1);
    f.group.desc.net.kind = NCCLX_NET_EMULATED;
    assert_int_equal(pull_case(&f, 0, 6, 1).reduce_own, 0);
}

/* The grids the dispatch launchers cut to their work (kernels/ep_ll/ep_ll_dispatch*.cu,
 * grid_for_units), without a GPU.  The send: a block per 4 (token, 4 KB chunk) units, so a
 * decode step of one token of 7168 BF16 elements (4 chunks) is one block, whose first- and
 * last-block elections then take no ticket (kernels/common/dev_sync.cuh); at most the group's
 * grid, at least one block.  The receive: the group's grid where it copies rows, and where it
 * leaves them in place (zero copy, out_tokens the group's rows) a block per 16 of its R x T
 * messages. */
static void test_grids(void **state)
{
    (void)state;
    fixture_t f;
    make_zero_copy_fixture(&f, 0);
    ncclx_ep_ll_group_desc_t *g = &f.group.desc;
    const size_t row = 7168 * 2; /* 3.5 chunks: 4 units a token */
    g->blocks = 264;
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 1, row), 1);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 0, row), 1);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 2, row), 2);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 128, row), 128);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 4, 4096), 1);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 5, 4096), 2);
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 4096, row), 264);
    /* Warps the units leave spare split each unit's bytes, at most 4 (1 KiB shares) and a power
     * of two (equal whole-KiB shares: 3 ways would leave a warp of every chunk nothing), in the
     * FP8 send; the BF16 copy keeps one warp a unit. */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 128, row, 0), 1);
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 1, row, 1), 4);   /* 4 units, 16 warps */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 128, row, 1), 4); /* 512 units, 128 blocks */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 300, row, 1),
                     2); /* 1200 units, 4224 warps: 3 to spare */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 700, row, 1),
                     1); /* 2800 units: 1 to spare */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 4096, row, 1),
                     1); /* more units than warps */
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 0, row, 1), 1);
    g->blocks = 1;
    assert_int_equal(ncclx_ep_ll_dispatch_send_blocks(g, 4096, row), 1);
    assert_int_equal(ncclx_ep_ll_dispatch_send_ways(g, 2, row, 1), 2); /* 8 units, 16 warps */

    ncclx_ep_ll_dispatch_desc_t d;
    memset(&d, 0, sizeof(d));
    g->blocks = 264;
    const struct {
        uint32_t ranks, max_tokens;
        int in_place_blocks;
    } cases[] = {{1, 1, 1}, {1, 16, 1},   {1, 17, 2},    {1, 128, 8},
                 {8, 1, 1}, {8, 128, 64}, {64, 128, 264}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        g->ranks = (int)cases[i].ranks;
        g->max_tokens = (int)cases[i].max_tokens;
        d.zero_copy = 1;
        d.copy_rows = 0;
        assert_int_equal(ncclx_ep_ll_dispatch_recv_blocks(g, &d), cases[i].in_place_blocks);
        d.copy_rows = 1;
        assert_int_equal(ncclx_ep_ll_dispatch_recv_blocks(g, &d), 264);
        d.zero_copy = 0;
        assert_int_equal(ncclx_ep_ll_dispatch_recv_blocks(g, &d), 264);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_in_send),      cmocka_unit_test(test_reduce_in_send),
        cmocka_unit_test(test_early_recv),        cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_zero_copy_combine), cmocka_unit_test(test_signal_in_recv),
        cmocka_unit_test(test_reduce_own),        cmocka_unit_test(test_board_in_send),
        cmocka_unit_test(test_recv_in_send),      cmocka_unit_test(test_grids),
    };
    return cmocka_run_group_tests_name("ep_args_paths", tests, NULL, NULL);
}
