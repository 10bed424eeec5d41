/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The per-rank bounds of M2N launch plans: ncclx_m2n_transfer_bound is exact against the
 * worst rank of random reshards, and the direct path's blocks per pair.
 */
#include "m2n_plan_fixture.h"

enum { SIM_WORLD = 12 }; /* the largest context of the random reshards (as test_m2n_launch) */

static ncclx_m2n_edge_t plan_scratch[NCCLX_M2N_MAX_TRANSFERS];

/* The most edges any rank has, and the most sends and receives. */
static uint32_t worst_rank(const ncclx_m2n_geom_t *s, const ncclx_m2n_geom_t *d, uint32_t world,
                           uint32_t *sends, uint32_t *recvs)
{
    uint32_t worst = 0;
    *sends = *recvs = 0;
    for (uint32_t r = 0; r < world; r++) {
        ncclx_m2n_schedule_t w;
        assert_ncclx_ok(
            ncclx_m2n_schedule(s, d, r, plan_scratch, NCCLX_M2N_MAX_TRANSFERS, "cap", &w));
        worst = w.num_edges > worst ? w.num_edges : worst;
        *sends = w.num_sends > *sends ? w.num_sends : *sends;
        *recvs = w.num_edges - w.num_sends > *recvs ? w.num_edges - w.num_sends : *recvs;
    }
    return worst;
}

/* The bound is exactly the most transfers any rank has (ranks that send and ranks that
 * receive are different ranks, except in a self copy, which has one of each). */
static uint32_t check_bound(const ncclx_m2n_side_t *src, const ncclx_m2n_side_t *dst,
                            uint32_t world, uint32_t *worst)
{
    ncclx_m2n_geom_t s, d;
    uint32_t sends, recvs, bound;
    assert_ncclx_ok(ncclx_m2n_geom(src, "src", world, &s));
    assert_ncclx_ok(ncclx_m2n_geom(dst, "dst", world, &d));
    bound = ncclx_m2n_transfer_bound(&s, &d);
    *worst = worst_rank(&s, &d, world, &sends, &recvs);
    assert_int_equal(bound, *worst);
    assert_true(bound <= sends + recvs);
    return bound;
}

static void test_transfer_bound(void **state)
{
    (void)state;
    uint32_t worst;
    for (int n = 0; n < 600; n++) {
        ncclx_m2n_side_t src, dst;
        const uint32_t world = n % 8 == 0 ? 1 : 2 + below(SIM_WORLD - 1);
        random_in_world(&src, &dst, world);
        (void)check_bound(&src, &dst, world, &worst);
    }
    /* Meshes over several nodes (replicas on a destination's node serve it first): the bound
     * still covers every rank's transfers. */
    for (int n = 0; n < 300; n++) {
        ncclx_m2n_side_t src, dst;
        ncclx_m2n_geom_t s, d;
        uint32_t sends, recvs;
        const uint32_t world = 2 + below(SIM_WORLD - 1);
        random_in_world(&src, &dst, world);
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", world, &s));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", world, &d));
        s.node_size = d.node_size = 1 + below(4);
        assert_true(ncclx_m2n_transfer_bound(&s, &d) >= worst_rank(&s, &d, world, &sends, &recvs));
    }
    /* Copies on ranks 3 (node 0) and 4 (node 1), 3 replicas on ranks 5-7 (node 1), nodes of 4:
     * rank 4 serves all 3, more than the block rule's ceil(3 / 2). */
    {
        const ncclx_m2n_side_t src = line_side(3, 2, 0), dst = line_side(5, 3, 0);
        ncclx_m2n_geom_t s, d;
        uint32_t sends, recvs;
        assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 8, &s));
        assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 8, &d));
        s.node_size = d.node_size = 4;
        assert_int_equal(worst_rank(&s, &d, 8, &sends, &recvs), 3);
        assert_true(ncclx_m2n_transfer_bound(&s, &d) >= 3);
    }
    /* One source replicated to 4: it sends 4 times. */
    {
        const ncclx_m2n_side_t src = line_side(0, 1, 0), dst = line_side(1, 4, 0);
        assert_true(check_bound(&src, &dst, 5, &worst) >= 4);
        assert_int_equal(worst, 4);
    }
    /* Dim 0 cut in 4, then in 2: each destination receives from 2 sources. */
    {
        const ncclx_m2n_side_t src = line_side(0, 4, 1), dst = line_side(4, 2, 1);
        assert_true(check_bound(&src, &dst, 6, &worst) >= 2);
        assert_int_equal(worst, 2);
    }
    /* Cut in 2, then in 4: each source sends to 2 destinations. */
    {
        const ncclx_m2n_side_t src = line_side(0, 2, 1), dst = line_side(2, 4, 1);
        assert_true(check_bound(&src, &dst, 6, &worst) >= 2);
        assert_int_equal(worst, 2);
    }
    /* 30 bytes cut in 5 (of 6), then in 3 (of 10): the middle destination receives from 3
     * sources, its neighbours from 2; the sources send to 1 or 2.  The bound is the largest
     * count, wherever it lies. */
    {
        ncclx_m2n_side_t src = line_side(0, 5, 1), dst = line_side(5, 3, 1);
        src.local_shape[0] = 6;
        dst.local_shape[0] = 10;
        assert_int_equal(check_bound(&src, &dst, 8, &worst), 3);
        assert_int_equal(worst, 3);
    }
    /* A self copy: one send and one receive on rank 0. */
    {
        const ncclx_m2n_side_t one = line_side(0, 1, 0);
        assert_int_equal(check_bound(&one, &one, 1, &worst), 2);
        assert_int_equal(worst, 2);
    }
}

/* The grid of the direct path: a sending pair keeps one block (it only signals) and the
 * receiving pairs take the rest by bytes; the ring's grid shares the budget by bytes among
 * every pair. */
static void test_direct_blocks(void **state)
{
    (void)state;
    static ncclx_m2n_geom_t s, d;
    static ncclx_m2n_rank_plan_t p;
    ncclx_m2n_side_t src = line_side(0, 1, 0), dst = line_side(1, 1, 0);
    src.local_shape[0] = dst.local_shape[0] = 1u << 20; /* 256 slices of 4 KiB: 128 channels */
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 2, &s));
    assert_ncclx_ok(ncclx_m2n_geom(&dst, "dst", 2, &d));
    for (int direct = 0; direct < 2; direct++) {
        /* A copy from rank 0 to rank 1, 132 blocks each. */
        assert_ncclx_ok(
            ncclx_m2n_plan_rank(&s, &d, 1, 0, 2, 4096, 128, 132, direct, plan_scratch, &p));
        assert_int_equal(p.num_pairs, 1);
        assert_int_equal(p.pairs[0].channels, 128);
        assert_int_equal(p.blocks, direct ? 1 : 128);
        assert_ncclx_ok(
            ncclx_m2n_plan_rank(&s, &d, 1, 1, 2, 4096, 128, 132, direct, plan_scratch, &p));
        assert_int_equal(p.blocks, 128);
    }
    /* A self copy (a one-rank context): a send and a receive on one rank. */
    src = line_side(0, 1, 0);
    src.local_shape[0] = 1u << 20;
    assert_ncclx_ok(ncclx_m2n_geom(&src, "src", 1, &s));
    for (int direct = 0; direct < 2; direct++) {
        assert_ncclx_ok(
            ncclx_m2n_plan_rank(&s, &s, 1, 0, 1, 4096, 128, 132, direct, plan_scratch, &p));
        assert_int_equal(p.num_pairs, 2);
        for (uint32_t k = 0; k < 2; k++) {
            /* Staged: 1 + 130 / 2 each; direct: the receive 1 + 130, at most its 128 channels. */
            const uint32_t want = direct ? (p.pairs[k].send ? 1 : 128) : 66;
            assert_int_equal(p.pairs[k].blocks, want);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_bound),
        cmocka_unit_test(test_direct_blocks),
    };
    return cmocka_run_group_tests_name("m2n_bounds", tests, NULL, NULL);
}
