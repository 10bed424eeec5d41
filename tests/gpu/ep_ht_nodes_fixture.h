/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the HT across-domains GPU tests share (test_ep_ht_nodes.c, test_ep_ht_net_bytes.c):
 * the cases of a shaped team and the check that a team has its shape.
 */
#ifndef NCCLX_TESTS_GPU_EP_HT_NODES_FIXTURE_H_
#define NCCLX_TESTS_GPU_EP_HT_NODES_FIXTURE_H_

#include "ep_ht_harness.h"

#define FLAT NCCLX_EP_LAYOUT_FLAT
#define EM   NCCLX_EP_LAYOUT_EXPERT_MAJOR

/* EXPERT_MAJOR receive rows that always fit: each token hits at most min(K, L) experts of a
 * rank, each zone pads at most alignment - 1 rows. */
static inline void fit_recv(ht_case_t *c)
{
    const uint32_t R = c->ranks, L = c->experts / R, per_token = c->topk < L ? c->topk : L;
    c->recv = c->layout == EM ? R * c->tokens * per_token + L * c->alignment : 0;
}

/* nodes x per_node ranks, L = 4 experts per rank, 128 tokens, top-6, BF16. */
static inline ht_case_t shape_case(uint32_t nodes, uint32_t per_node, uint32_t layout,
                                   uint32_t hidden)
{
    ht_case_t c = base_case(nodes * per_node, layout);
    c.nodes = nodes;
    c.experts = 4 * c.ranks;
    c.tokens = 128;
    c.topk = 6;
    c.hidden = hidden;
    c.alignment = layout == EM ? 4 : 1;
    fit_recv(&c);
    return c;
}

/* The team has the shape asked for (1 node and no network for an unshaped team). */
static inline void check_shape(const ht_run_t *run)
{
    const uint32_t nodes = run->c.nodes != 0 ? run->c.nodes : 1;
    for (uint32_t r = 0; r < run->R; r++) {
        ncclxContextInfo_t info = NCCLX_CONTEXT_INFO_INIT;
        ncclxNetStats_t s = NCCLX_NET_STATS_INIT;
        assert_ncclx_ok(ncclxContextGetInfo(run->team.ctx[r], &info));
        assert_int_equal(info.num_nodes, nodes);
        assert_int_equal(info.lsa_size, run->R / nodes);
        assert_ncclx_ok(ncclxContextGetNetStats(run->team.ctx[r], &s));
        assert_int_equal(s.kind, nodes > 1 ? NCCLX_NET_KIND_EMULATED : NCCLX_NET_KIND_NONE);
    }
}

static inline const char *layout_name(uint32_t layout)
{
    return layout == FLAT ? "flat" : "expert-major";
}

#endif
