/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The bytes EP HT puts on the emulated network (loopback teams shaped as clusters,
 * docs/multi-node.md): every rank's network counters around one routing, one dispatch and one
 * combine on 2x4 and 4x2, against exact counts from the reference layouts (each token once per
 * other node keeping a row of it, each partial once), and nothing at all on 1x8.
 * TEST_SEED=n replays a run's random data; TEST_FILTER=pattern runs the matching tests alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ht_nodes_fixture.h"

#include "context.h" /* the emulator's counters */

/* ---- c: the bytes that cross the network ---- */

typedef struct {
    uint64_t bytes, puts, signals;
} net_count_t;

static void read_net(const ht_run_t *run, net_count_t *out)
{
    const uint32_t nodes = run->c.nodes != 0 ? run->c.nodes : 1;
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxNetStats_t s = NCCLX_NET_STATS_INIT;
        assert_ncclx_ok(ncclxContextGetNetStats(run->team.ctx[r], &s));
        assert_int_equal(s.kind, nodes > 1 ? NCCLX_NET_KIND_EMULATED : NCCLX_NET_KIND_NONE);
        assert_int_equal(s.counted, nodes > 1 ? 1 : 0);
        out[r].bytes = s.bytes;
        out[r].puts = s.puts;
        out[r].signals = s.signals;
    }
}

/* Every rank's counters went up by exactly want[r] since before[r]. */
static void expect_net(const ht_run_t *run, const net_count_t *before, const net_count_t *want,
                       const char *what)
{
    net_count_t after[EP_MAX_RANKS];
    read_net(run, after);
    for (uint32_t r = 0; r < run->R; r++) {
        const uint64_t b = after[r].bytes - before[r].bytes, p = after[r].puts - before[r].puts,
                       s = after[r].signals - before[r].signals;
        if (b != want[r].bytes || p != want[r].puts || s != want[r].signals) {
            fail_msg("%ux%u %s %s: rank %u put %llu bytes in %llu puts with %llu signals across "
                     "the network; expected %llu bytes, %llu puts, %llu signals",
                     run->c.nodes, run->R / run->c.nodes, layout_name(run->c.layout), what, r,
                     (unsigned long long)b, (unsigned long long)p, (unsigned long long)s,
                     (unsigned long long)want[r].bytes, (unsigned long long)want[r].puts,
                     (unsigned long long)want[r].signals);
        }
    }
}

/* kept[(m * R + s) * T + t] = 1 when a rank of node m holds a kept (delivered) row of source
 * s's token t, from the reference layouts (row_source of every delivered row; pads are -1). */
static uint8_t *kept_by_node(const ht_run_t *run, uint32_t lsa)
{
    const size_t RT = (size_t)run->R * run->c.tokens;
    uint8_t *kept = hmalloc((run->R / lsa) * RT);
    for (uint32_t j = 0; j < run->R; j++) {
        for (uint32_t i = 0; i < run->lay[j].rows; i++) {
            const int32_t src = run->lay[j].row_source[i];
            if (src >= 0) {
                kept[(size_t)(j / lsa) * RT + (size_t)src] = 1;
            }
        }
    }
    return kept;
}

/*
 * What each rank must put across the network (the sender counts: lib/context/net.c,
 * kernels/common/net.cuh; `bytes` is put payload, `puts` every put including the ones that only
 * carry a signal, `signals` the signals; a value put counts its 8 bytes).  With lsa ranks per
 * node, nodes = R / lsa, T the plan's tokens per rank, K the handle's top-k, W = ceil(E / 32):
 *  - routing (create or update): the whole map, T * W * 4 bytes, put with MAP_PUBLISHED to each
 *    of the R - lsa ranks of other nodes, then a 0-byte put with MAP_READ to each of them:
 *    2 (R - lsa) puts and signals, (R - lsa) T W 4 bytes;
 *  - dispatch (push + relay): one put per (token of this rank, other node where a rank keeps a
 *    row of it) of align8(row_bytes + scale_bytes) + K * 8 bytes (row, scales, K {expert,
 *    weight} entries), no signal; per other node the RELAY_FILLED operation word (an 8-byte
 *    value put with a signal) and, from this rank's relay, RELAY_FREE (a 0-byte put with a
 *    signal): pairs + 2 (nodes - 1) puts, 2 (nodes - 1) signals, pairs * put + 8 (nodes - 1)
 *    bytes;
 *  - combine (partials + reduce): this rank is the relay of its rail peer s on every other node
 *    n: one put per token of s of which a rank of this node keeps a row, hidden * 4 bytes (the
 *    FP32 node partial) + K * 4 backward (the weight gradients); per other node PARTIAL_READY
 *    (8-byte word with a signal) and, from the reduce, PARTIAL_FREE (0 bytes with a signal).
 * A token put twice to one node, or a partial put twice, or anything between ranks of one node
 * would show in these exact counts.
 */
typedef struct {
    net_count_t route[EP_MAX_RANKS], dispatch[EP_MAX_RANKS], combine[EP_MAX_RANKS],
        combine_bwd[EP_MAX_RANKS];
    uint64_t pairs, remote_rows; /* all ranks: tokens x nodes put, kept rows on other nodes */
} net_want_t;

static void expected_net(const ht_run_t *run, net_want_t *w)
{
    const uint32_t R = run->R, nodes = run->c.nodes, lsa = R / nodes;
    const uint64_t T = run->c.tokens, K = run->K, H = run->c.hidden;
    const uint64_t W = (run->c.experts + 31) / 32;
    const uint64_t put = ((run->row + run->srow + 7) & ~(size_t)7) + K * 8;
    const size_t RT = (size_t)R * T;
    uint8_t *kept = kept_by_node(run, lsa);
    memset(w, 0, sizeof(*w));
    for (uint32_t r = 0; r < R; r++) {
        const uint32_t mine = r / lsa;
        uint64_t pairs = 0, partials = 0;
        w->route[r].bytes = (uint64_t)(R - lsa) * T * W * 4;
        w->route[r].puts = w->route[r].signals = 2ull * (R - lsa);
        for (uint32_t m = 0; m < nodes; m++) {
            if (m == mine) {
                continue;
            }
            for (uint32_t t = 0; t < run->r[r].n; t++) {
                pairs += kept[(size_t)m * RT + (size_t)r * T + t];
            }
            const uint32_t s = m * lsa + r % lsa; /* the rail peer this rank relays for */
            for (uint32_t t = 0; t < run->r[s].n; t++) {
                partials += kept[(size_t)mine * RT + (size_t)s * T + t];
            }
        }
        for (uint32_t j = 0; j < R; j++) {
            for (uint32_t i = 0; j / lsa != mine && i < run->lay[j].rows; i++) {
                const int32_t src = run->lay[j].row_source[i];
                w->remote_rows += src >= 0 && (uint32_t)src / T == r;
            }
        }
        w->pairs += pairs;
        w->dispatch[r].bytes = pairs * put + 8ull * (nodes - 1);
        w->dispatch[r].puts = pairs + 2ull * (nodes - 1);
        w->dispatch[r].signals = 2ull * (nodes - 1);
        w->combine[r].bytes = partials * H * 4 + 8ull * (nodes - 1);
        w->combine[r].puts = partials + 2ull * (nodes - 1);
        w->combine[r].signals = 2ull * (nodes - 1);
        w->combine_bwd[r] = w->combine[r];
        w->combine_bwd[r].bytes += partials * K * 4;
    }
    free(kept);
}

/* One routing, one dispatch and one combine at a time, forward and backward, each rank's
 * counters against expected_net (outputs checked as well). */
static void check_net(uint32_t nodes, uint32_t per_node, uint32_t layout, uint32_t local_experts,
                      int quant, int drop)
{
    ht_run_t *run = hmalloc(sizeof(*run));
    net_count_t before[EP_MAX_RANKS];
    net_want_t *w = hmalloc(sizeof(*w));
    ht_case_t c = shape_case(nodes, per_node, layout, 256);
    char what[64];
    c.experts = local_experts * c.ranks;
    c.topk = 8;
    c.quant = (uint32_t)quant;
    fit_recv(&c);
    if (drop) {
        c.drop = 1;
        c.recv = 96;
    }
    snprintf(what, sizeof(what), "%ux%u", nodes, per_node);
    ep_rng_reset(what);
    ht_open(run, &c);
    check_shape(run);
    lib_allocs = 0;
    for (int round = 0; round < 2; round++) { /* a create, then an update with new routing */
        ht_fill(run, HT_RANDOM, 0, 0);
        expected_net(run, w);
        read_net(run, before);
        lib_begin();
        ht_route(run);
        ep_team_sync(&run->team);
        lib_end();
        expect_net(run, before, w->route, round == 0 ? "handle create" : "handle update");
    }
    for (int backward = 0; backward < 2; backward++) {
        lib_begin();
        ht_poison(run);
        ep_team_sync(&run->team);
        lib_end();
        read_net(run, before);
        lib_begin();
        ht_enqueue(run, 1, backward);
        ep_team_sync(&run->team);
        lib_end();
        expect_net(run, before, w->dispatch, backward ? "backward dispatch" : "dispatch");
        ht_check_dispatch(run, backward);
        read_net(run, before);
        lib_begin();
        ht_enqueue(run, 0, backward);
        ep_team_sync(&run->team);
        lib_end();
        expect_net(run, before, backward ? w->combine_bwd : w->combine,
                   backward ? "backward combine" : "combine");
        ht_check_combine(run, backward);
    }
    lib_assert_none("network counts");
    /* The counts are worth something only if some token keeps several rows on one other node
     * (a scheme that put each row would then send more). */
    if (!drop && w->pairs >= w->remote_rows) {
        fail_msg("%s: the routing put %llu tokens for %llu remote rows: no token had two rows "
                 "on one node, so the count proves nothing",
                 what, (unsigned long long)w->pairs, (unsigned long long)w->remote_rows);
    }
    printf("# %s %s%s%s: %llu token puts across nodes for %llu kept rows on other nodes; "
           "routing, dispatch and combine counters exact on every rank\n",
           what, layout_name(layout), quant ? " QUANT_FWD" : "", drop ? " DROP" : "",
           (unsigned long long)w->pairs, (unsigned long long)w->remote_rows);
    fflush(stdout);
    free(w);
    ht_close(run);
    free(run);
}

static void test_network_bytes_exact(void **state)
{
    (void)state;
    check_net(2, 4, FLAT, 4, 0, 0);
    check_net(2, 4, EM, 4, 1, 0);
    check_net(4, 2, FLAT, 5, 0, 1); /* 40 experts: two map words per token */
    check_net(4, 2, EM, 5, 0, 0);
}

/* One node (1x8): a shaped team of one load/store domain; routing, dispatch and combine put
 * nothing on any network (there is none: every counter stays 0). */
static void test_one_node_puts_nothing(void **state)
{
    (void)state;
    ht_run_t *run = hmalloc(sizeof(*run));
    ht_case_t c = shape_case(1, 8, FLAT, 256);
    net_count_t got[EP_MAX_RANKS];
    ep_rng_reset("1x8");
    ht_open(run, &c);
    check_shape(run);
    assert_false(ht_direct_path(run)); /* shaped: peers' caller buffers are out of reach */
    lib_allocs = 0;
    for (int it = 0; it < 2; it++) {
        ht_fill(run, HT_RANDOM, 0, 0);
        ht_wide_expert_out(run);
        ht_iteration(run, 0);
    }
    lib_assert_none("1x8");
    read_net(run, got);
    for (uint32_t r = 0; r < run->R; r++) {
        assert_int_equal(got[r].bytes, 0);
        assert_int_equal(got[r].puts, 0);
        assert_int_equal(got[r].signals, 0);
    }
    ht_close(run);
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_node_puts_nothing),
        cmocka_unit_test(test_network_bytes_exact),
    };
    /* Every team here has its shape set (c.nodes): TEST_NODES must not touch them. */
    unsetenv("TEST_NODES");
    ep_seed_init("test_ep_ht_net_bytes");
    return ncclx_run_tests("gpu_ep_ht_net_bytes", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
