/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * CPU reference of EP HT (high throughput) dispatch and combine: the receive layout of each
 * rank and the combine sums, from every rank's routing at once (include/ncclx/ep.h, the block
 * "High throughput (HT)", is the contract).  Token data never enters the layout: a row is
 * named by its source (s * T + t), so a test fills and checks rows with its own values.
 *
 * Readings of the contract that the GPU kernels must share:
 *  - A topk_idx value outside [0, E) (-1, E, anything) routes nowhere; a token naming one
 *    expert twice hits it once, with the weight of its first listing.
 *  - Tokens are ordered by g = (source rank s, token t).  FLAT: the i-th token (in g order)
 *    hitting rank m gets row i of m.  EXPERT_MAJOR: local expert e's zone starts at
 *    base_e = the sum of the padded counts of the experts before it, and the i-th token
 *    hitting e gets row base_e + i; an expert's padded count is its count rounded up to the
 *    alignment (0 stays 0).  Rows >= S are dropped (not delivered) under either overflow
 *    policy; `overflow` says that some were (TRAP must report it).
 *  - Combine (not MXFP8) sums in IEEE single over a binary tree of ranks (see
 *    ncclx_ht_ref_combine): the GPU result is bitwise equal before rounding to the dtype.
 */
#ifndef NCCLX_TEST_EP_HT_REF_H_
#define NCCLX_TEST_EP_HT_REF_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx.h>

/** The largest top-k of an HT group (NCCLX_EP_MAX_HT_TOPK). */
#define NCCLX_HT_REF_MAX_TOPK 32u

/** The shape of one HT case (one group, one handle per rank). */
typedef struct {
    uint32_t ranks;      /* R */
    uint32_t experts;    /* E (L = E / R per rank; rank j owns [j * L, (j + 1) * L)) */
    uint32_t max_tokens; /* T: tokens per rank at most */
    uint32_t recv_slots; /* S: receive rows per rank; 0 = R * T, as in the plan */
    uint32_t topk;       /* K */
    uint32_t alignment;  /* EXPERT_MAJOR zone alignment; 0 or 1 = none */
    uint32_t layout;     /* NCCLX_EP_LAYOUT_FLAT or NCCLX_EP_LAYOUT_EXPERT_MAJOR */
    uint32_t global_ids; /* FLAT row ids: 1 global expert ids, 0 local (e - m * L) */
} ncclx_ht_ref_case_t;

/** One rank's routing. */
typedef struct {
    uint32_t num_tokens;       /* <= max_tokens */
    const int64_t *topk_idx;   /* [num_tokens, K]; outside [0, E): not routed */
    const float *topk_weights; /* [num_tokens, K] */
} ncclx_ht_ref_routing_t;

/**
 * One receiving rank's layout (arrays from ncclx_ht_ref_layout_alloc, S = the case's receive
 * rows).  Entries of rows >= `rows` read -1 / 0.
 */
typedef struct {
    int64_t recv_total;      /* before any drop: FLAT tokens hitting the rank, EM padded rows */
    int overflow;            /* recv_total > S: rows were dropped (TRAP reports it) */
    uint32_t rows;           /* rows written: min(recv_total, S) */
    int32_t *expert_counts;  /* [L] FLAT: kept rows hitting the expert; EM: zone, clamped */
    int32_t *expert_offsets; /* [L + 1] EM: zone starts clamped to S, [L] = min(total, S);
                                FLAT: 0 */
    int32_t *row_source;     /* [S]: s * T + t of the row's token; -1: pad or unwritten row */
    int32_t *row_expert;     /* [S] EM: local expert of the row's zone (pads too); FLAT: -1 */
    int32_t *row_ids;        /* [S, K] FLAT: the token's experts here, ascending, then -1;
                                EM: -1 */
    float *row_weights;      /* FLAT [S, K]: their first-listing weights, then 0; EM [S]: the
                                row's weight (0 on pads) */
} ncclx_ht_ref_layout_t;

/** S of the case (recv_slots, or R * T when it is 0). */
uint32_t ncclx_ht_ref_slots(const ncclx_ht_ref_case_t *c);

/**
 * 0 when the case (and, if routing is not NULL, every rank's routing[0 .. R-1]) is one the
 * reference handles: R >= 1, E a multiple of R and at most NCCLX_EP_MAX_EXPERTS, 1 <= K <=
 * NCCLX_HT_REF_MAX_TOPK, T >= 1, R * T and S below 2^31, a FLAT or EXPERT_MAJOR layout,
 * num_tokens <= T with its arrays present.  Else -1, with the offending field named in why
 * (why_len bytes, may be 0).
 */
int ncclx_ht_ref_case_check(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                            char *why, size_t why_len);

/** Allocates a layout's arrays for the case (0 on success; -1: bad case or no memory, out
 *  untouched).  ncclx_ht_ref_layout_free releases them and zeroes the struct. */
int ncclx_ht_ref_layout_alloc(const ncclx_ht_ref_case_t *c, ncclx_ht_ref_layout_t *out);
void ncclx_ht_ref_layout_free(ncclx_ht_ref_layout_t *layout);

/**
 * Computes rank `rank`'s receive layout from every rank's routing[0 .. R-1] into out
 * (allocated for the same case).  0 on success; -1 on a bad case, routing or rank (the reason
 * is printed on stderr) or no memory, out untouched.
 */
int ncclx_ht_ref_route(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                       uint32_t rank, ncclx_ht_ref_layout_t *out);

/**
 * Forward (and backward) combine of rank `rank`, in IEEE single (float; no double, no fused
 * multiply-add), for t < routing[rank].num_tokens and each h:
 *  - leaf(j), for a destination rank j holding >= 1 kept (not dropped) row of token t: acc =
 *    0.0f, then acc += expert_out[j][row, h] for each kept row of t on j in ascending expert
 *    id (FLAT: its one row).  A rank holding no kept row of t has no leaf (ABSENT).
 *  - P = the smallest power of two >= R.  T(lo, hi) over ranks [lo, hi), hi - lo a power of
 *    two and lo a multiple of it: if hi - lo == 1, leaf(lo) or ABSENT (always for lo >= R);
 *    else with mid = (lo + hi) / 2, a = T(lo, mid) and b = T(mid, hi): ABSENT if both are,
 *    the present one if one is (absent + x = x, not 0.0f + x), else a + b.
 *  - out[t, h] = T(0, P), or +0.0f when ABSENT.
 * Every aligned power-of-two block of ranks (a node of a hierarchical team) is thus a subtree,
 * whose partial sum computed elsewhere in float is the same bits.  A leaf is never -0.0f
 * (0.0f + -0.0f = +0.0f).  The caller rounds out to the dtype.  layouts[0 .. R-1] are every
 * rank's layouts from ncclx_ht_ref_route; expert_out[j] is rank j's [S, hidden] expert output
 * (rows past layouts[j].rows are not read).  0 on success; -1 on bad arguments or no memory.
 */
int ncclx_ht_ref_combine(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                         const ncclx_ht_ref_layout_t *layouts, const float *const *expert_out,
                         uint32_t hidden, uint32_t rank, float *out);

/**
 * The MXFP8 combine (NCCLX_EP_RECIPE_MXFP8) of rank `rank`, EXPERT_MAJOR cases only, hidden a
 * multiple of 32: for each destination j in ascending order, the token's kept rows on j are
 * summed in float from 0.0f (ascending expert), the sum is quantized and dequantized with
 * tests/ref/ep_mxfp8_ref.h's row functions, and the result is added to out[t] (from 0.0f); a
 * destination holding no kept row of the token adds nothing.  Arguments as
 * ncclx_ht_ref_combine; 0 on success, -1 on bad arguments (a FLAT case too) or no memory.
 */
int ncclx_ht_ref_combine_mxfp8(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                               const ncclx_ht_ref_layout_t *layouts, const float *const *expert_out,
                               uint32_t hidden, uint32_t rank, float *out);

/**
 * Backward combine's weight gradients of rank `rank`: out_w[t, k] = grad_w[j] of the row and
 * position that dispatch wrote entry k's weight to (FLAT grad_w[j] [S, K]: [row, position of
 * the expert among the token's experts on j]; EXPERT_MAJOR grad_w[j] [S]: [row]), where j
 * owns entry k's expert; 0.0f for entries outside [0, E), repeats of an earlier entry's
 * expert and dropped rows.  0 on success; -1 on bad arguments or no memory.
 */
int ncclx_ht_ref_combine_weights(const ncclx_ht_ref_case_t *c,
                                 const ncclx_ht_ref_routing_t *routing,
                                 const ncclx_ht_ref_layout_t *layouts, const float *const *grad_w,
                                 uint32_t rank, float *out_w);

#endif /* NCCLX_TEST_EP_HT_REF_H_ */
