/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Plan sizing against hand-computed values (the arithmetic is spelled out next to each
 * number; docs/plan-sizing.md gives the formulas); HT across load/store domains is in
 * test_plan_sizes_nodes.c, LL shapes against the documented formulas alone in
 * test_plan_sizes_ll.c.  M2N staging is sized with its control words (lib/plan/plan_layout.c
 * ncclx_layout_m2n).
 */
#include <stdlib.h>

#include "ncclx_test.h"

#include "ep_group.h"
#include "m2n_engine.h"
#include "net.h"
#include "plan_internal.h"
#include "plan_sizes_fixture.h"
#include "pool.h"

static size_t align64(size_t v)
{
    return (v + 63) & ~(size_t)63;
}

/* Host class: group struct, handle structs, pool bookkeeping and, for LL groups with a mask,
 * one byte per rank (ranks masked by update), each 64-byte aligned. */
static size_t host_bytes_of_group(uint32_t handles, uint32_t mask_ranks, size_t start)
{
    size_t off = align64(start) + sizeof(ncclx_ep_group_t);
    off = align64(off) + handles * sizeof(ncclx_ep_handle_t);
    off = align64(off) + handles * (sizeof(uint32_t) + 1);
    if (mask_ranks > 0) {
        off = align64(off) + mask_ranks;
    }
    return off;
}

static void test_ll_deepseek_8_ranks(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(8, 1);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);

    /* Payload P = max(NONE: 7168 * 2 = 14336, FP8: 7168 + 56 * 4 = 7392) = 14336.
     * Message M = 16 header + 8 * 8 top-k entries (64) + 14336 = 14416.
     * Dispatch receive = 2 buffers * 8 ranks * 128 tokens * 14416 = 29523968.
     * Combine receive = 2 * 128 tokens * 8 slots (expert-major: top-k) * 14336 = 29360128.
     * Signals = 2 * 8 * 16 = 256.  Each region on the next 256 bytes:
     *   dispatch receive area   29523968 at 0
     *   combine receive area    29360128 at 29523968
     *   signals                      256 at 58884096
     *   mask words                   160 at 58884352 (8 ranks * (two clean slots of 8 bytes
     *                                    + an evicted word of 4)), padded to 256
     *   dispatch expert counts      2048 at 58884608 (expert-major: 2 buffers * 8 ranks
     *                                    * 32 local experts * 4)
     * total 58886656. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC],
                     29523968ull + 29360128ull + 256ull + a256(8 * 20) + 2ull * 8 * 32 * 4);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 58886656ull);

    /* Device: peer table 8 * 8 = 64 at 0; context scratch 256 at 256; state 256 at 512;
     * arrival decisions 2 * 8 * 8 = 128 at 768; mask 8 * 4 = 32 at 1024;
     * handle = idx 128*8*4 = 4096 + route 4096 + counts 2 * 32 + recv_tok 8*128*4 = 4096
     *          + recv_pos (expert-major) 8*128*8*4 = 32768
     *          + expert_slot (expert-major) 128*8*4 = 4096 + expert_count 256*4 = 1024
     *          = 50240 -> 256-aligned 50432;
     *          4 handles = 201728 at 1280. */
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE],
                     a256(4096 + 4096 + 2 * 32 + 4096 + 32768 + 4096 + 1024));
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 50432);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 1280ull + 4 * 50432ull);

    /* Mapped host: context status 64 + group status 64. */
    assert_int_equal(s.total[NCCLX_MEM_MAPPED_HOST], 128);
    assert_int_equal(s.total[NCCLX_MEM_HOST], host_bytes_of_group(4, 8, 0));
    assert_int_equal(s.per_handle[NCCLX_MEM_HOST], sizeof(ncclx_ep_handle_t));
    /* peer table, scratch, status, 5 symmetric (dispatch, combine, signals, mask words,
     * dispatch expert counts) + state + decisions + mask + handles + status + 4 host. */
    assert_int_equal(s.num_regions, 17);
    {
        /* The expert counts region where the comment above puts it, with its formula's bytes. */
        named_region_t c = {0, "dispatch expert counts", 0, 0};
        ncclx_ep_group_regions_t r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(r.dispatch_counts, 58884608);
        assert_int_equal(c.seen, 1);
        assert_int_equal(c.bytes, 2ull * 8 * 32 * 4);
        assert_int_equal(r.net_dispatch_counts, NCCLX_NO_REGION); /* one domain */
    }

    /* Rank-major alone: no dispatch expert counts, and the handle loses recv_pos, expert_slot
     * and expert_count: 4096 + 4096 + 2 * 32 + 4096 = 12352 -> 12544.  The combine rows are
     * min(K 8, R 8) = 8 as before, so only the counts leave the symmetric total. */
    g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
    s = sizes_of(groups, 1, 0, &team);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 29523968ull + 29360128ull + 256ull + 8ull * 20);
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], a256(4096 + 4096 + 2 * 32 + 4096));
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 12544);
    assert_int_equal(s.num_regions, 16);
    {
        named_region_t c = {0, "dispatch expert counts", 0, 0};
        ncclx_ep_group_regions_t r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(r.dispatch_counts, NCCLX_NO_REGION);
        assert_int_equal(c.seen, 0);
    }
}

static void test_ll_scales_with_ranks(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(64, 8);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    /* 64 ranks on 8 nodes of 8 (4 local experts): each region on the next 256 bytes,
     *   dispatch receive area    2 * 64 * 128 * 14416 = 236191744 at 0
     *   combine receive area     as before            =  29360128 at 236191744
     *   signals                  2 * 64 * 16          =      2048 at 265551872
     *   mask words               64 * 20              =      1280 at 265553920
     *   dispatch expert counts   2 * 64 * 4 * 4       =      2048 at 265555200
     * What goes to the 56 ranks of other nodes is staged:
     *   dispatch network staging 56 * 128 * 14416    = 103333888 at 265557248
     *   dispatch count staging   56 * 4 local experts * 4 = 896 at 368891136, padded to 1024
     *   combine network staging  56 * 128 messages * min(top-k 8, 4 local experts) rows
     *                            * 14336              = 411041792 at 368892160
     *   combine network arrivals with the mask, remote sources' combine rows land by source
     *                            (as much again)      = 411041792 at 779933952
     * and the emulator's network signals, 4 contexts * (6 * 64 signals: operations and clean
     * rounds) * 8 = 12288 at 1190975744. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC],
                     236191744ull + 29360128ull + 2048ull + 64ull * 20ull + 2ull * 64 * 4 * 4 +
                         103333888ull + a256(56 * 4 * 4) + 411041792ull + 411041792ull + 12288ull);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 1190988032ull);
    /* Device: peer table 8 lsa peers * 8 = 64; scratch at 256; the clean's network counters
     * and bases 6 * 64 * 8 = 3072 at 512; state 256; decisions 2 * 64 * 8 = 1024; mask
     * 64 * 4 = 256, so the handles start at 2048 + 3072;
     * handle = 4096 + 4096 + 2 * 256 + recv_tok 64*128*4 = 32768
     *        + recv_pos 64*128*8*4 = 262144 + expert_slot 128*8*4 = 4096
     *        + expert_count 256*4 = 1024 = 308736 (256-aligned);
     * then the network's: held puts 64 * 4 * 16 * 32 = 131072, their cursors 64 * 4 * 4 = 1024,
     * counters 64 (256-aligned), the arena table 64 * 8 = 512, the device communicator 4096. */
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE],
                     4096 + 4096 + 2 * 256 + 32768 + 262144 + 4096 + 1024);
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 308736);
    assert_int_equal(sizeof(ncclx_net_held_t), 32);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 2048ull + 3072ull + 4 * 308736ull + 131072ull +
                                                    1024ull + 256ull + 512ull + 4096ull);
    {
        /* Both count regions where the comment above puts them, with their formulas' bytes. */
        named_region_t c = {0, "dispatch count staging", 0, 0};
        ncclx_ep_group_regions_t r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(r.dispatch_counts, 265555200);
        assert_int_equal(r.net_dispatch_counts, 368891136);
        assert_int_equal(c.seen, 1);
        assert_int_equal(c.bytes, 56ull * 4 * 4);
        c.name = "dispatch expert counts";
        r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(c.seen, 1);
        assert_int_equal(c.bytes, 2ull * 64 * 4 * 4);
        /* Rank-major alone: neither (the network staging of the rows stays). */
        g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
        r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(r.dispatch_counts, NCCLX_NO_REGION);
        assert_int_equal(c.seen, 0);
        c.name = "dispatch count staging";
        r = layout_group(groups, 1, &team, 0, &c);
        assert_int_equal(r.net_dispatch_counts, NCCLX_NO_REGION);
        assert_int_equal(c.seen, 0);
        assert_true(r.net_dispatch_out != NCCLX_NO_REGION);
    }
}

/* HT, DeepSeek-V3 prefill on 8 ranks of one node: R = 8, E = 256, L = 32, K = 8, H = 7168 BF16,
 * T = 4096, S = R * T = 32768 (max_recv_tokens_per_rank 0), 2 handles. */
static void test_ht_deepseek_prefill_8_ranks(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(8, 1);
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    char buf[8192] = {0};

    /* Payload P = 7168 * 2 = 14336; combine row = a16(7168 * 2) = 14336.  Symmetric, each
     * region at the next 256 bytes:
     *   HT routing map       T * ceil(E / 32) * 4 = 4096 * 8 * 4     =    131072 at 0
     *   HT signals           (6 * R + 16) * 8     = (6 * 8 + 16) * 8 =       512 at 131072
     *   HT dispatch rows     S * P                = 32768 * 14336    = 469762048 at 131584
     *   HT dispatch metadata S * K * 8            = 32768 * 8 * 8    =   2097152 at 469893632
     *   HT combine rows      S * 14336                               = 469762048 at 471990784
     *   HT weight gradients  S * K * 4            = 32768 * 8 * 4    =   1048576 at 941752832
     * total 942801408 (899.1 MiB). */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC],
                     131072ull + 512ull + 469762048ull + 2097152ull + 469762048ull + 1048576ull);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 942801408ull);

    /* Device: peer table 8 * 8 = 64 at 0; scratch 256 at 256; group state 256 at 512; no
     * decisions, no mask; HT routing counts R * (E + R) * 4 = 8 * 264 * 4 = 8448 at 768;
     * handles at 9216.  Handle, pieces rounded up to 16:
     *   idx T * K * 4 = 131072, flat_row T * R * 4 = 131072, em_row T * K * 4 = 131072,
     *   totals 16, counts L * 4 = 128, offsets (L + 1) * 4 = 132 -> 144,
     *   zone_count 128, zone_base 128   = 393760 -> 256-aligned 393984;
     * 2 handles = 787968. */
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 393984);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 9216ull + 2 * 393984ull);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 797184ull);

    /* Mapped host: context status 64 + group status 64; host: no mask. */
    assert_int_equal(s.total[NCCLX_MEM_MAPPED_HOST], 128);
    assert_int_equal(s.total[NCCLX_MEM_HOST], host_bytes_of_group(2, 0, 0));
    assert_int_equal(s.per_handle[NCCLX_MEM_HOST], sizeof(ncclx_ep_handle_t));
    /* peer table, scratch, status, 6 symmetric + state + counts + handles + status + 3 host. */
    assert_int_equal(s.num_regions, 16);

    /* The print names the HT regions with the same numbers. */
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    print_plan(&plan, &team, buf, sizeof(buf));
    assert_non_null(strstr(buf, "HT routing map"));
    assert_non_null(strstr(buf, "HT dispatch rows"));
    assert_non_null(strstr(buf, "469762048"));
    assert_non_null(strstr(buf, "HT routing counts"));
    assert_non_null(strstr(buf, "(2 x 393984)"));
    assert_null(strstr(buf, "mask"));

    /* A receive budget S = 16384 halves the per-row regions; the handles do not depend on S:
     * 131072 + 512 + 16384 * 14336 (234881024) + 16384 * 64 (1048576) + 234881024
     * + 16384 * 32 (524288) = 471466496. */
    g.max_recv_tokens_per_rank = 16384;
    s = sizes_of(groups, 1, 0, &team);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 471466496ull);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 797184ull);

    /* max_topk 32 (the HT bound) and FP32 tokens: P = combine row = 7168 * 4 = 28672, S = 32768;
     * map 131072 + signals 512 + S * 28672 (939524096) + S * 32 * 8 (8388608) + 939524096
     * + S * 32 * 4 (4194304) = 1891762688.  Handle: idx 4096 * 32 * 4 = 524288, flat_row
     * 131072, em_row 524288, then 16 + 128 + 144 + 128 + 128 = 1180192 -> 256-aligned 1180416. */
    g.max_recv_tokens_per_rank = 0;
    g.max_topk = 32;
    g.token_dtypes |= NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    s = sizes_of(groups, 1, 0, &team);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 1891762688ull);
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], 1180416);
    assert_int_equal(s.total[NCCLX_MEM_DEVICE], 9216ull + 2 * 1180416ull);
}

/* M2N on 16 ranks of 2 nodes (8 per load/store domain), 1 MiB of staging per rank: slices of
 * 32768 bytes (1 MiB / (4 * 128) = 2048 is raised to the preferred 32768) on 256 KiB / 32768 = 8
 * channels.  Across domains each rank also holds the network staging of its 8 remote
 * destinations, 8 * 8 channels * DEPTH 4 * 32768 = 8 MiB, and the network signals: per remote
 * rank a vote and filled and freed per channel, 8 * (1 + 2 * 8) = 136 signals in each of the 4
 * contexts, 136 * 4 * 8 = 4352 bytes, after the one-domain total padded to 256 (the next
 * region's start).  Nothing else in the symmetric class changes. */
static void test_m2n_across_nodes(void **state)
{
    (void)state;
    ncclxTeam_t nodes = team_of(16, 2), one = team_of(16, 1);
    ncclxPlanSizes_t across = sizes_of(NULL, 0, 16u << 20, &nodes);
    ncclxPlanSizes_t inside = sizes_of(NULL, 0, 16u << 20, &one);
    const uint64_t padded = (inside.total[NCCLX_MEM_SYMMETRIC] + 255) / 256 * 256;
    assert_int_equal(across.total[NCCLX_MEM_SYMMETRIC] - padded, 8ull * 8 * 4 * 32768 + 4352);
    /* 4 nodes of 4: 12 remote destinations, 16 MiB / 16 = 1 MiB per source as before. */
    nodes = team_of(16, 4);
    across = sizes_of(NULL, 0, 16u << 20, &nodes);
    assert_int_equal(across.total[NCCLX_MEM_SYMMETRIC] - padded,
                     12ull * 8 * 4 * 32768 + 12 * (1 + 2 * 8) * 4 * 8);
}

/* M2N's host regions, first in the host class: the engine, then the group entries (128 by
 * default), each 64-byte aligned. */
static size_t host_bytes_of_m2n(uint32_t entries)
{
    return align64(ncclx_m2n_engine_bytes()) + entries * ncclx_m2n_entry_bytes();
}

static void test_two_groups_and_m2n(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t ll = ll_group();
    ncclxEpGroupPlan_t ht = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&ll, &ht};
    ncclxTeam_t team = team_of(8, 1);
    /* The least staging of 8 ranks: 8 * 16384. */
    ncclxPlanSizes_t both = sizes_of(groups, 2, 131072, &team);
    ncclxPlanSizes_t only_ll = sizes_of(groups, 1, 0, &team);
    const ncclxEpGroupPlan_t *ht_only[] = {&ht};
    ncclxPlanSizes_t only_ht = sizes_of(ht_only, 1, 0, &team);
    /* M2N comes first: staging 131072, then its signals (4 * 8 ranks + 256 tile pointers + the
     * direct path's 2179 table words) * 8 = 19736, padded to 19968; every region
     * starts on 256 bytes and the LL group ends with its dispatch expert counts (2 * 8 ranks
     * * 32 local experts * 4 = 2048 bytes after the mask words padded to 256: a 256 multiple,
     * so no padding before the HT group's regions); the HT group's total is its own. */
    assert_int_equal(only_ll.total[NCCLX_MEM_SYMMETRIC] % 256, 0);
    assert_int_equal(both.total[NCCLX_MEM_SYMMETRIC], 131072 + 19968 +
                                                          only_ll.total[NCCLX_MEM_SYMMETRIC] +
                                                          only_ht.total[NCCLX_MEM_SYMMETRIC]);
    /* Device: M2N's state (NCCLX_M2N_STATE_BYTES) and round counts (2 * 8 ranks * 8 = 128,
     * padded to 256), then the context's peer table and scratch (512 bytes) once. */
    assert_int_equal(both.total[NCCLX_MEM_DEVICE], NCCLX_M2N_STATE_BYTES + 256 +
                                                       only_ll.total[NCCLX_MEM_DEVICE] +
                                                       only_ht.total[NCCLX_MEM_DEVICE] - 512);
    /* M2N status, context status, one per group. */
    assert_int_equal(both.total[NCCLX_MEM_MAPPED_HOST], 64 * 4);
    assert_int_equal(both.total[NCCLX_MEM_HOST],
                     host_bytes_of_group(2, 0, host_bytes_of_group(4, 8, host_bytes_of_m2n(128))));
    /* The larger handle of the two groups (HT 393984, LL 50432). */
    assert_int_equal(both.per_handle[NCCLX_MEM_DEVICE], 393984);
    /* Seven regions more: staging, signals, state, round counts, status, engine, entries. */
    assert_int_equal(both.num_regions, only_ll.num_regions + only_ht.num_regions - 3 + 7);
}

/* Staging S on R ranks reserves S + (4 R + 256 + 2179) 8 symmetric bytes at the least staging
 * (the ring, then vote[2][R], filled[R] and freed[R] of one channel, then 256 source-tile
 * pointers and the direct path's table, NCCLX_M2N_DIRECT_WORDS)
 * and more words with more channels,
 * exactly when S is a multiple of 256 and no region follows; a region
 * after them (the LL group's) starts on the next 256 bytes, so that R not a multiple of 8
 * pads the signals; an S off 256 pads the ring before the signals. */
static void test_m2n_staging_sizes(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    static const uint32_t ranks[] = {1, 2, 8, 16, 24};
    for (size_t k = 0; k < sizeof(ranks) / sizeof(ranks[0]); k++) {
        const uint32_t r = ranks[k];
        ncclxTeam_t team = team_of(r, 1);
        const uint64_t least = (uint64_t)r * NCCLX_M2N_MIN_STAGING_PER_RANK;
        /* + the direct path's tile table and its open, claims and plan table words */
        const uint64_t signals = (4ull * r + 256 + 2179) * 8;
        ncclxPlanSizes_t none = sizes_of(groups, 0, 0, &team);
        ncclxPlanSizes_t m2n = sizes_of(groups, 0, least, &team);
        assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                         least + signals);
        assert_int_equal(m2n.num_regions - none.num_regions, 7);
        m2n = sizes_of(groups, 0, 3 * least, &team);
        assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                         3 * least + signals);
        m2n = sizes_of(groups, 0, least + 100, &team);
        assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                         least + 256 + signals);
        /* 1 MiB per source: 8 channels of 32 KiB slices (kernels/m2n/m2n_ring.h), so vote[2][R],
         * filled[R][8], freed[R][8]: 18 R words; 16 MiB: 128 channels, 258 R words; the
         * device's round counts are sent[R][channels] and received[R][channels]. */
        m2n = sizes_of(groups, 0, (uint64_t)r << 20, &team);
        assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                         ((uint64_t)r << 20) + (18ull * r + 256 + 2179) * 8);
        m2n = sizes_of(groups, 0, (uint64_t)r << 24, &team);
        assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                         ((uint64_t)r << 24) + (258ull * r + 256 + 2179) * 8);
        assert_int_equal(m2n.total[NCCLX_MEM_DEVICE] - none.total[NCCLX_MEM_DEVICE],
                         NCCLX_M2N_STATE_BYTES + (2ull * 128 * r * 8 + 255) / 256 * 256);
        /* Followed by the LL group. */
        if (256 % r == 0) { /* the LL group's 256 experts need ranks dividing them */
            none = sizes_of(groups, 1, 0, &team);
            m2n = sizes_of(groups, 1, least, &team);
            assert_int_equal(m2n.total[NCCLX_MEM_SYMMETRIC] - none.total[NCCLX_MEM_SYMMETRIC],
                             least + (signals + 255) / 256 * 256);
        }
    }
}

/* M2N group entries: 128 by default (the same sizes as 128 given), each of
 * ncclx_m2n_entry_bytes() in the host class. */
static void test_m2n_group_entries_sizes(void **state)
{
    (void)state;
    ncclxTeam_t team = team_of(8, 1);
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxPlanSizes_t dflt = NCCLX_PLAN_SIZES_INIT, given = NCCLX_PLAN_SIZES_INIT;
    plan.m2n_staging_bytes = 131072;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, &team, &dflt));
    assert_int_equal(dflt.total[NCCLX_MEM_HOST],
                     host_bytes_of_m2n(NCCLX_M2N_DEFAULT_GROUP_ENTRIES));
    plan.m2n_max_group_entries = NCCLX_M2N_DEFAULT_GROUP_ENTRIES;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, &team, &given));
    assert_memory_equal(&dflt, &given, sizeof(given));
    plan.m2n_max_group_entries = 1000;
    assert_ncclx_ok(ncclxPlanComputeSizes(&plan, &team, &given));
    assert_int_equal(given.total[NCCLX_MEM_HOST], host_bytes_of_m2n(1000));
    assert_int_equal(given.total[NCCLX_MEM_SYMMETRIC], dflt.total[NCCLX_MEM_SYMMETRIC]);
}

static void test_quant_fwd_and_fp32_widen_slots(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxTeam_t team = team_of(2, 1);
    g.hidden = 1024;
    g.num_experts = 8;
    g.max_topk = 2;
    g.max_dispatch_tokens_per_rank = 4;
    g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
    g.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_BFLOAT16) | NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
    g.recipes = NCCLX_EP_RECIPE_NONE | NCCLX_EP_RECIPE_QUANT_FWD;
    g.max_token_bytes = 5008;
    g.max_scale_bytes = 33;
    /* P = max(NONE: 1024 * 4 = 4096, QUANT_FWD: 5008 + align16(33) = 5056) = 5056.
     * M = 16 + align16(2 * 8) + 5056 = 5088.  Dispatch = 2 * 2 * 4 * 5088 = 81408 (=318*256).
     * Rank-major combine: min(2, 2) = 2 rows per token of 1024 * 4 (FP32) = 4096:
     * 2 * 4 * 2 * 4096 = 65536.  Signals 2 * 2 * 16 = 64. */
    ncclxPlanSizes_t s = sizes_of(groups, 1, 0, &team);
    /* + the mask words (2 ranks * 20 bytes) at the next 256-byte boundary. */
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 81408ull + 65536ull + 256ull + 40ull);
}

/* ---- Expectations from docs/plan-sizing.md alone (not from lib/plan/ep_dims.c) ---- */

/* Each piece of a handle starts on 16 bytes, in the documented order and size, and the whole
 * is a multiple of 256 (so every handle of a group's array starts on 256 too).  Odd shapes
 * make an unaligned piece show. */
static void test_handle_piece_alignment(void **state)
{
    static const uint32_t shapes[][4] = {
        /* R, T, K, L */
        {1, 1, 1, 1}, {3, 5, 7, 3}, {2, 9, 3, 5}, {7, 13, 5, 1}, {8, 128, 8, 32}, {5, 3, 16, 9},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        ncclx_ep_dims_t d;
        ncclx_ep_ll_handle_layout_t ll;
        ncclx_ep_ht_handle_layout_t ht;
        memset(&d, 0, sizeof(d));
        d.ranks = shapes[i][0];
        d.tokens = shapes[i][1];
        d.topk = shapes[i][2];
        d.local_experts = shapes[i][3];
        d.num_experts = d.ranks * d.local_experts;
        d.recv_slots = d.ranks * d.tokens + 1; /* an HT budget of its own, odd */
        for (int v = 0; v < 4; v++) {          /* expert-major or not, zero_copy or not */
            const int em = v & 1, zc = v >> 1;
            const uint64_t tk = (uint64_t)d.tokens * d.topk, rt = (uint64_t)d.ranks * d.tokens;
            uint64_t off = 0;
            d.zero_copy_row_bytes = zc ? 64 : 0;
            ncclx_ep_ll_handle_layout(&d, em, &ll);
            const size_t got[] = {ll.idx, ll.route, ll.send_count, ll.recv_count, ll.recv_tok};
            const uint64_t each[] = {tk * 4, tk * 4, d.ranks * 4ull, d.ranks * 4ull, rt * 4};
            for (size_t k = 0; k < 5; k++) {
                assert_int_equal(got[k] % 16, 0);
                assert_int_equal(got[k], off);
                off += a16(each[k]);
            }
            if (em) { /* recv_pos [R, T, K], expert_slot [T, K], expert_count [E] */
                const size_t em_got[] = {ll.recv_pos, ll.expert_slot, ll.expert_count};
                const uint64_t em_each[] = {rt * d.topk * 4, tk * 4, d.num_experts * 4ull};
                for (size_t k = 0; k < 3; k++) {
                    assert_int_equal(em_got[k] % 16, 0);
                    assert_int_equal(em_got[k], off);
                    off += a16(em_each[k]);
                }
            } else { /* rank-major: none of them, offset 0 */
                assert_int_equal(ll.recv_pos, 0);
                assert_int_equal(ll.expert_slot, 0);
                assert_int_equal(ll.expert_count, 0);
            }
            if (zc) { /* zero copy: where the dispatch put the rows (rank-major: whether), [E] */
                assert_int_equal(ll.zero_copy_starts, off);
                off += a16(d.num_experts * 4ull);
            } else {
                assert_int_equal(ll.zero_copy_starts, 0);
            }
            assert_int_equal(ll.bytes % 256, 0);
            assert_int_equal(ll.bytes, a256(off));
        }
        for (uint32_t mx = 0; mx < 4; mx++) {
            /* MXFP8 row links or not; one node or 3 (the relay entries across domains) */
            const uint64_t tk = (uint64_t)d.tokens * d.topk, L = d.local_experts;
            uint64_t off = 0;
            d.mxfp8_combine = mx & 1;
            d.nodes = mx & 2 ? 3 : 1;
            ncclx_ep_ht_handle_layout(&d, &ht);
            const size_t got[] = {ht.header,    ht.idx,     ht.flat_row, ht.em_row,
                                  ht.totals,    ht.counts,  ht.offsets,  ht.zone_count,
                                  ht.zone_base, ht.em_next, ht.em_head,  ht.relay};
            const uint64_t each[] = {
                64,                               /* header */
                tk * 4,                           /* idx */
                (uint64_t)d.tokens * d.ranks * 4, /* flat_row */
                tk * 4,                           /* em_row */
                16,                               /* totals */
                L * 4,                            /* counts */
                (L + 1) * 4,                      /* offsets */
                L * 4,                            /* zone_count */
                L * 4,                            /* zone_base */
                d.recv_slots * 4ull,              /* em_next (MXFP8) */
                d.recv_slots,                     /* em_head (MXFP8) */
                (uint64_t)(d.nodes - 1) * tk * 8, /* relay (across domains) */
            };
            for (size_t k = 0; k < 12; k++) {
                const int absent = (k == 9 || k == 10) ? !(mx & 1) : k == 11 ? !(mx & 2) : 0;
                if (absent) { /* the MXFP8 row links only with the MXFP8 recipe, the relay
                                 entries only across domains: offset 0 */
                    assert_int_equal(got[k], 0);
                    continue;
                }
                if (got[k] % 16 != 0 || got[k] != off) {
                    fail_msg("HT handle piece %zu of shape %zu (MXFP8 %u, nodes %u) at %zu, "
                             "expected %llu (16-aligned)",
                             k, i, mx & 1, d.nodes, got[k], (unsigned long long)off);
                }
                off += a16(each[k]);
            }
            assert_int_equal(ht.bytes % 256, 0);
            assert_int_equal(ht.bytes, a256(off));
        }
    }
}

/* Every region of a plan starts on its class's alignment (256 device and symmetric, 64 host
 * and mapped host), after the previous one of its class, and the handle arrays hold whole
 * 256-byte handles. */
typedef struct {
    size_t end[NCCLX_MEM_NUM_CLASSES];
    uint32_t count;
} region_check_t;

static void check_region(const ncclx_region_t *r, void *ctx)
{
    region_check_t *c = ctx;
    const size_t align =
        r->mem_class == NCCLX_MEM_DEVICE || r->mem_class == NCCLX_MEM_SYMMETRIC ? 256 : 64;
    if (r->offset % align != 0 || r->offset < c->end[r->mem_class]) {
        fail_msg("region %s of group %d at %zu: not on %zu bytes, or before the end %zu of the "
                 "previous one",
                 r->name, r->group, r->offset, align, c->end[r->mem_class]);
    }
    assert_true(r->offset - c->end[r->mem_class] < align); /* no gap past the alignment */
    if (strcmp(r->name, "handle routing") == 0) {
        assert_int_equal(r->each % 256, 0);
    }
    assert_int_equal(r->bytes, r->each * r->count);
    c->end[r->mem_class] = r->offset + r->bytes;
    c->count++;
}

static void test_region_alignment(void **state)
{
    ncclxEpGroupPlan_t ll = ll_group(), ht = ht_group();
    ll_shape_t odd = {
        .R = 8, .T = 5, .K = 3, .H = 640, .E = 8, .N = 3, .rank_major = 1, .mask = 1, .fp8 = 1};
    ncclxEpGroupPlan_t fp8 = ll_plan_of(&odd);
    const ncclxEpGroupPlan_t *groups[] = {&fp8, &ll, &ht, &fp8};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(8, 1);
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
    ncclx_layout_t layout;
    region_check_t check;
    (void)state;
    assert_non_null(norm);
    assert_non_null(regions);
    fp8.num_experts = 16; /* 2 local experts on 8 ranks */
    ht.recipes |= NCCLX_EP_RECIPE_MXFP8;
    ht.max_recv_tokens_per_rank = 1001; /* odd S: the MXFP8 row flags are S bytes */
    plan.num_ep_groups = 4;
    plan.ep_groups = groups;
    plan.m2n_staging_bytes = 131072 + 100; /* the ring itself is not a 256 multiple */
    memset(&check, 0, sizeof(check));
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    ncclx_layout_init_measure(&layout, check_region, &check);
    assert_ncclx_ok(ncclx_plan_layout(&layout, norm, regions));
    assert_int_equal(check.count, layout.num_regions);
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        assert_int_equal(layout.arena[c].used, check.end[c]);
    }
    free(norm);
    free(regions);
}

/* The largest HT plan: 4096 ranks of one load/store team, 4096 experts, 2^20 tokens per rank.
 * The receive budget S must stay <= 2^31-1 rows; within it every size is exact in 64 bits,
 * far past 2^32. */
static void test_extreme_plan_sizes_or_fails_cleanly(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ht_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(4096, 1);
    ncclxPlanSizes_t s = NCCLX_PLAN_SIZES_INIT;
    ncclxPlanSizes_t before = s;
    const uint64_t S = INT32_MAX; /* 2^31 - 1 */
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    g.num_experts = NCCLX_EP_MAX_EXPERTS; /* 4096: L = 1 */
    g.max_dispatch_tokens_per_rank = NCCLX_EP_MAX_HT_TOKENS_PER_RANK;
    /* The default S = 4096 * 2^20 = 2^32 rows: refused, naming the field to set; untouched. */
    g.max_recv_tokens_per_rank = 0;
    assert_ncclx_error(ncclxPlanComputeSizes(&plan, &team, &s), ncclxInvalidArgument,
                       "4294967296 receive rows exceeds 2^31-1; set max_recv_tokens_per_rank");
    assert_memory_equal(&before, &s, sizeof(s));
    /* One row past the limit, and the largest value the field holds. */
    g.max_recv_tokens_per_rank = (uint32_t)S + 1;
    assert_ncclx_error(ncclxPlanComputeSizes(&plan, &team, &s), ncclxInvalidArgument,
                       "2147483648 receive rows exceeds 2^31-1");
    g.max_recv_tokens_per_rank = UINT32_MAX;
    assert_ncclx_error(ncclxPlanComputeSizes(&plan, &team, &s), ncclxInvalidArgument,
                       "4294967295 receive rows exceeds 2^31-1");
    assert_memory_equal(&before, &s, sizeof(s));

    /* S = 2^31 - 1 with the widest rows (H = 65536 BF16: P = combine row = 131072) and the HT
     * top-k bound K = 32.  Symmetric:
     *   map T * ceil(4096 / 32) * 4 = 2^20 * 128 * 4 = 536870912 at 0
     *   signals (6 * 4096 + 16) * 8 = 196736 -> 196864 at 536870912
     *   then S * (131072 dispatch + 32 * 8 metadata + 131072 combine + 32 * 4 gradients)
     *   = S * 262528 at 537067776 (each of the first three a multiple of 256). */
    g.max_recv_tokens_per_rank = (uint32_t)S;
    g.hidden = NCCLX_EP_MAX_HIDDEN;
    g.max_topk = NCCLX_EP_MAX_HT_TOPK;
    s = sizes_of(groups, 1, 0, &team);
    assert_int_equal(s.total[NCCLX_MEM_SYMMETRIC], 537067776ull + S * 262528ull);
    assert_true(s.total[NCCLX_MEM_SYMMETRIC] > (uint64_t)UINT32_MAX * 131072ull);
    /* Handle: idx 2^20 * 32 * 4 = 2^27, flat_row T * R * 4 = 2^34, em_row 2^27, then
     * totals 16, counts 4 -> 16, offsets 8 -> 16, zone_count 16, zone_base 16 = 80,
     * 2^34 + 2^28 + 80 -> 256-aligned 2^34 + 2^28 + 256. */
    assert_int_equal(s.per_handle[NCCLX_MEM_DEVICE], (1ull << 34) + (1ull << 28) + 256ull);
    /* Device: peer table 4096 * 8 = 32768 at 0; scratch at 32768; state at 33024; HT routing
     * counts 4096 * (4096 + 4096) * 4 = 2^27 at 33280; 2 handles at 33280 + 2^27. */
    assert_int_equal(s.total[NCCLX_MEM_DEVICE],
                     33280ull + (1ull << 27) + 2 * ((1ull << 34) + (1ull << 28) + 256ull));
}

/* The offset and bytes the print gives for the region called name (its first row). */
static void printed_region(const char *buf, const char *name, size_t *offset, size_t *bytes)
{
    const char *row = strstr(buf, name);
    if (row == NULL) {
        fail_msg("the print lists no %s", name);
    }
    assert_int_equal(sscanf(row + strlen(name), "%zu %zu", offset, bytes), 2);
}

static void test_plan_print_lists_regions(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(8, 1);
    char buf[8192] = {0};
    size_t offset, bytes;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    print_plan(&plan, &team, buf, sizeof(buf));
    assert_non_null(strstr(buf, "dispatch receive area"));
    assert_non_null(strstr(buf, "29523968"));
    /* The expert-major group's counts, at their offset (test_ll_deepseek_8_ranks). */
    printed_region(buf, "dispatch expert counts", &offset, &bytes);
    assert_int_equal(offset, 58884608);
    assert_int_equal(bytes, 2 * 8 * 32 * 4);
    assert_non_null(strstr(buf, "(4 x 50432)"));
    assert_non_null(strstr(buf, "symmetric"));
    assert_non_null(strstr(buf, "totals per rank"));
    assert_non_null(strstr(buf, "58886656"));
    assert_null(strstr(buf, "M2N"));     /* no staging, no M2N region */
    assert_null(strstr(buf, "network")); /* one domain: no network region */
    /* Rank-major alone: no counts. */
    g.layouts = NCCLX_EP_LAYOUT_RANK_MAJOR;
    print_plan(&plan, &team, buf, sizeof(buf));
    assert_non_null(strstr(buf, "dispatch receive area"));
    assert_null(strstr(buf, "dispatch expert counts"));
    assert_non_null(strstr(buf, "(4 x 12544)"));
    g.layouts = ll_group().layouts;
    /* Across nodes (8 ranks in 2 nodes of 4): the network staging of the counts, 4 remote ranks
     * * 32 local experts * 4 bytes. */
    team = team_of(8, 2);
    print_plan(&plan, &team, buf, sizeof(buf));
    printed_region(buf, "dispatch expert counts", &offset, &bytes);
    assert_int_equal(bytes, 2 * 8 * 32 * 4);
    printed_region(buf, "dispatch count staging", &offset, &bytes);
    assert_int_equal(bytes, 4 * 32 * 4);
    team = team_of(8, 1);
    /* With staging: its regions by name, the ring's bytes among them. */
    plan.m2n_staging_bytes = 131072;
    print_plan(&plan, &team, buf, sizeof(buf));
    assert_non_null(strstr(buf, "M2N staging"));
    assert_non_null(strstr(buf, "131072"));
    assert_non_null(strstr(buf, "M2N signals"));
    assert_non_null(strstr(buf, "M2N group entries"));
}

/* The HT routing map: one bit per expert, whole 32-bit words per token (1, 32, 33 and 4096
 * experts: 1, 1, 2 and 128 words). */
static void test_ht_map_words(void **state)
{
    ncclx_ep_dims_t d = {0};
    (void)state;
    d.tokens = 3;
    assert_int_equal(ncclx_ep_ht_map_bytes(&d, 1), 3 * 4);
    assert_int_equal(ncclx_ep_ht_map_bytes(&d, 32), 3 * 4);
    assert_int_equal(ncclx_ep_ht_map_bytes(&d, 33), 3 * 2 * 4);
    assert_int_equal(ncclx_ep_ht_map_bytes(&d, NCCLX_EP_MAX_EXPERTS), 3 * 128 * 4);
}

/* The print's row for the region called name (its first), without its newline. */
static void printed_row(const char *buf, const char *name, char *row, size_t len)
{
    const char *at = strstr(buf, name);
    size_t n;
    if (at == NULL) {
        fail_msg("the print lists no %s", name);
    }
    while (at > buf && at[-1] != '\n') {
        at--;
    }
    n = strcspn(at, "\n");
    assert_true(n < len);
    memcpy(row, at, n);
    row[n] = '\0';
}

/* Whether row ends with tail. */
static int ends_with(const char *row, const char *tail)
{
    const size_t n = strlen(row), t = strlen(tail);
    return n >= t && strcmp(row + n - t, tail) == 0;
}

/* The print's columns beyond the numbers: the owner (the context, or the group by index, the
 * first group included), "(count x each)" only for arrays of several objects, the human size
 * in the unit that keeps it under 1024 (whole bytes without decimals, 1024 bytes already
 * 1.00 KiB, TiB the largest unit), and a total line for every memory class, its human size
 * from the total. */
static void test_plan_print_columns(void **state)
{
    (void)state;
    ncclxEpGroupPlan_t g = ll_group();
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = team_of(8, 1);
    char buf[8192] = {0}, row[256], cls[32], owner[32];
    const char *totals;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    print_plan(&plan, &team, buf, sizeof(buf));
    printed_row(buf, "context scratch", row, sizeof(row));
    assert_int_equal(sscanf(row, "%31s %31s", cls, owner), 2);
    assert_string_equal(cls, "device");
    assert_string_equal(owner, "context");
    assert_true(ends_with(row, " 256  256 B"));
    printed_row(buf, "dispatch receive area", row, sizeof(row));
    assert_int_equal(sscanf(row, "%31s %31s", cls, owner), 2);
    assert_string_equal(owner, "ep_group[0]");
    assert_true(ends_with(row, " 29523968  28.16 MiB"));
    printed_row(buf, "handle routing", row, sizeof(row));
    assert_true(ends_with(row, " 201728  197.00 KiB  (4 x 50432)"));
    /* Regions of one object (or one array) carry no count. */
    assert_null(strstr(buf, "(1 x"));
    printed_row(buf, "group state", row, sizeof(row));
    assert_true(ends_with(row, " 256  256 B"));
    /* Totals: one line per class, each with its own human size (the symmetric
     * total is 58886656 bytes: test_plan_print_lists_regions). */
    totals = strstr(buf, "totals per rank:\n");
    assert_non_null(totals);
    printed_row(totals, "  symmetric ", row, sizeof(row));
    assert_true(ends_with(row, " 58886656 bytes  56.16 MiB"));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        char name[32];
        snprintf(name, sizeof(name), "\n  %s ", ncclxMemClassName((ncclxMemClass_t)c));
        if (strstr(totals, name) == NULL) {
            fail_msg("no total for %s", name + 3);
        }
    }
    /* 128 ranks of one domain, no group: a peer table of exactly 1024 bytes. */
    team = team_of(128, 1);
    plan.num_ep_groups = 0;
    print_plan(&plan, &team, buf, sizeof(buf));
    printed_row(buf, "LSA peer pointer table", row, sizeof(row));
    assert_true(ends_with(row, " 1024  1.00 KiB  (128 x 8)"));
    /* The largest unit: S = 2^31 - 1 receive rows of 65536 BF16 values (256 TiB less 128 KiB). */
    g = ht_group();
    g.hidden = NCCLX_EP_MAX_HIDDEN;
    g.max_recv_tokens_per_rank = INT32_MAX;
    plan.num_ep_groups = 1;
    team = team_of(8, 1);
    print_plan(&plan, &team, buf, sizeof(buf));
    printed_row(buf, "HT dispatch rows", row, sizeof(row));
    assert_true(ends_with(row, " 281474976579584  256.00 TiB"));
    /* No stream to print to: refused before anything is sized. */
    assert_ncclx_error(ncclxPlanPrint(&plan, &team, NULL), ncclxInvalidArgument,
                       "ncclxPlanPrint: out is NULL");
}

/* Every class by name, and anything else "unknown" (a class past the table, or negative). */
static void test_mem_class_names(void **state)
{
    static const char *const names[NCCLX_MEM_NUM_CLASSES] = {
        [NCCLX_MEM_SYMMETRIC] = "symmetric",
        [NCCLX_MEM_DEVICE] = "device",
        [NCCLX_MEM_MAPPED_HOST] = "mapped_host",
        [NCCLX_MEM_HOST] = "host",
    };
    (void)state;
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        assert_string_equal(ncclxMemClassName((ncclxMemClass_t)c), names[c]);
    }
    assert_string_equal(ncclxMemClassName(NCCLX_MEM_NUM_CLASSES), "unknown");
    assert_string_equal(ncclxMemClassName((ncclxMemClass_t)-1), "unknown");
}

/* The element sizes every row, scale and tensor size is computed from (FP4x2 counts one FP4
 * value); the index types too, which no token row uses but index tensors do. */
static void test_dtype_bits(void **state)
{
    static const uint32_t bits[NCCLX_NUM_DATA_TYPES] = {
        [NCCLX_BFLOAT16] = 16, [NCCLX_FLOAT16] = 16, [NCCLX_FLOAT32] = 32,
        [NCCLX_FP8_E4M3] = 8,  [NCCLX_FP8_E5M2] = 8, [NCCLX_FP4X2_E2M1] = 4,
        [NCCLX_UINT8] = 8,     [NCCLX_INT32] = 32,   [NCCLX_INT64] = 64,
    };
    (void)state;
    for (int t = 0; t < NCCLX_NUM_DATA_TYPES; t++) {
        if (ncclx_dtype_bits((ncclxDataType_t)t) != bits[t]) {
            fail_msg("dtype %d: %u bits, expected %u", t, ncclx_dtype_bits((ncclxDataType_t)t),
                     bits[t]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ll_deepseek_8_ranks),
        cmocka_unit_test(test_ll_scales_with_ranks),
        cmocka_unit_test(test_ht_deepseek_prefill_8_ranks),
        cmocka_unit_test(test_two_groups_and_m2n),
        cmocka_unit_test(test_m2n_staging_sizes),
        cmocka_unit_test(test_m2n_group_entries_sizes),
        cmocka_unit_test(test_quant_fwd_and_fp32_widen_slots),
        cmocka_unit_test(test_handle_piece_alignment),
        cmocka_unit_test(test_region_alignment),
        cmocka_unit_test(test_extreme_plan_sizes_or_fails_cleanly),
        cmocka_unit_test(test_m2n_across_nodes),
        cmocka_unit_test(test_plan_print_lists_regions),
        cmocka_unit_test(test_plan_print_columns),
        cmocka_unit_test(test_mem_class_names),
        cmocka_unit_test(test_dtype_bits),
        cmocka_unit_test(test_ht_map_words),
    };
    return cmocka_run_group_tests_name("plan_sizes", tests, NULL, NULL);
}
