/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * CPU reference of EP HT dispatch and combine.  Plain loops over tokens in (source rank,
 * source token) order that follow the contract of include/ncclx/ep.h: no bitmaps and no
 * prefix scans, which is how the GPU computes the same rows.  Combine reads the rows from the
 * layouts that ncclx_ht_ref_route computed (inverted per destination rank).
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ep_ht_ref.h"
#include "ref/ep_mxfp8_ref.h"

/* The combine sums are float additions only (nothing a compiler may contract into a fused
 * multiply-add), each stored to a float: evaluated in float, they are IEEE single. */
#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the HT combine reference needs float expressions evaluated in float (FLT_EVAL_METHOD 0)"
#endif

#ifdef NCCLX_EP_MAX_HT_TOPK
_Static_assert(NCCLX_HT_REF_MAX_TOPK == NCCLX_EP_MAX_HT_TOPK, "HT top-k bound out of step");
#endif

static uint32_t local_experts(const ncclx_ht_ref_case_t *c)
{
    return c->experts / c->ranks;
}

static int em(const ncclx_ht_ref_case_t *c)
{
    return c->layout == NCCLX_EP_LAYOUT_EXPERT_MAJOR;
}

uint32_t ncclx_ht_ref_slots(const ncclx_ht_ref_case_t *c)
{
    return c->recv_slots != 0 ? c->recv_slots : c->ranks * c->max_tokens;
}

/* The distinct experts in [0, E) that token t names, ascending, with the entry k of each
 * one's first listing.  Returns their number (<= K). */
static uint32_t token_experts(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *rt,
                              uint32_t t, int64_t *experts, uint32_t *first_k)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < c->topk; k++) {
        int64_t e = rt->topk_idx[(size_t)t * c->topk + k];
        uint32_t i = 0;
        if (e < 0 || e >= (int64_t)c->experts) {
            continue;
        }
        while (i < n && experts[i] < e) {
            i++;
        }
        if (i < n && experts[i] == e) {
            continue; /* a repeat: the first listing stays */
        }
        memmove(&experts[i + 1], &experts[i], (n - i) * sizeof(*experts));
        memmove(&first_k[i + 1], &first_k[i], (n - i) * sizeof(*first_k));
        experts[i] = e;
        first_k[i] = k;
        n++;
    }
    return n;
}

/* Keeps the experts that rank j owns (in place, order kept); returns their number. */
static uint32_t keep_rank(const ncclx_ht_ref_case_t *c, uint32_t j, uint32_t n, int64_t *experts,
                          uint32_t *first_k)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if ((uint64_t)experts[i] / local_experts(c) == j) {
            experts[kept] = experts[i];
            first_k[kept] = first_k[i];
            kept++;
        }
    }
    return kept;
}

/* Token t's distinct experts on rank j, ascending (the shape of a FLAT row's ids). */
static uint32_t experts_on(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *rt,
                           uint32_t t, uint32_t j, int64_t *experts, uint32_t *first_k)
{
    return keep_rank(c, j, token_experts(c, rt, t, experts, first_k), experts, first_k);
}

static int check_shape(const ncclx_ht_ref_case_t *c, char *why, size_t len)
{
    if (c->ranks == 0 || c->experts == 0 || c->experts % c->ranks != 0 ||
        c->experts > NCCLX_EP_MAX_EXPERTS) {
        snprintf(why, len,
                 "experts=%u, ranks=%u: experts must be a nonzero multiple of ranks, "
                 "at most %u",
                 c->experts, c->ranks, NCCLX_EP_MAX_EXPERTS);
    } else if (c->topk == 0 || c->topk > NCCLX_HT_REF_MAX_TOPK) {
        snprintf(why, len, "topk=%u: not in 1 .. %u", c->topk, NCCLX_HT_REF_MAX_TOPK);
    } else if (c->max_tokens == 0 || (uint64_t)c->ranks * c->max_tokens > INT32_MAX) {
        snprintf(why, len, "max_tokens=%u: must be nonzero, ranks * max_tokens below 2^31",
                 c->max_tokens);
    } else if (c->recv_slots > INT32_MAX) {
        snprintf(why, len, "recv_slots=%u: not below 2^31", c->recv_slots);
    } else if (c->layout != NCCLX_EP_LAYOUT_FLAT && c->layout != NCCLX_EP_LAYOUT_EXPERT_MAJOR) {
        snprintf(why, len, "layout=%u: not FLAT or EXPERT_MAJOR", c->layout);
    } else {
        return 0;
    }
    return -1;
}

int ncclx_ht_ref_case_check(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                            char *why, size_t why_len)
{
    if (c == NULL) {
        snprintf(why, why_len, "case: NULL");
        return -1;
    }
    if (check_shape(c, why, why_len) != 0) {
        return -1;
    }
    for (uint32_t r = 0; routing != NULL && r < c->ranks; r++) {
        const ncclx_ht_ref_routing_t *rt = &routing[r];
        if (rt->num_tokens > c->max_tokens) {
            snprintf(why, why_len, "routing[%u].num_tokens=%u: above max_tokens=%u", r,
                     rt->num_tokens, c->max_tokens);
            return -1;
        }
        if (rt->num_tokens > 0 && (rt->topk_idx == NULL || rt->topk_weights == NULL)) {
            snprintf(why, why_len, "routing[%u]: topk_idx or topk_weights is NULL", r);
            return -1;
        }
    }
    return 0;
}

/* Checks the case, the routing and the rank; prints why on stderr when they are bad. */
static int check_call(const char *who, const ncclx_ht_ref_case_t *c,
                      const ncclx_ht_ref_routing_t *routing, uint32_t rank)
{
    char why[256];
    if (routing == NULL) {
        snprintf(why, sizeof(why), "routing: NULL");
    } else if (ncclx_ht_ref_case_check(c, routing, why, sizeof(why)) != 0) {
        /* why says it */
    } else if (rank >= c->ranks) {
        snprintf(why, sizeof(why), "rank=%u: not below ranks=%u", rank, c->ranks);
    } else {
        return 0;
    }
    fprintf(stderr, "%s: %s\n", who, why);
    return -1;
}

/* Every row unwritten (-1 / 0), every count 0. */
static void clear_layout(const ncclx_ht_ref_case_t *c, ncclx_ht_ref_layout_t *out)
{
    size_t S = ncclx_ht_ref_slots(c), L = local_experts(c), K = c->topk;
    memset(out->expert_counts, 0, L * sizeof(int32_t));
    memset(out->expert_offsets, 0, (L + 1) * sizeof(int32_t));
    for (size_t i = 0; i < S; i++) {
        out->row_source[i] = -1;
        out->row_expert[i] = -1;
    }
    for (size_t i = 0; i < S * K; i++) {
        out->row_ids[i] = -1;
        out->row_weights[i] = 0.0f;
    }
}

int ncclx_ht_ref_layout_alloc(const ncclx_ht_ref_case_t *c, ncclx_ht_ref_layout_t *out)
{
    ncclx_ht_ref_layout_t b;
    size_t S, L, K;
    char why[256];
    if (out == NULL) {
        snprintf(why, sizeof(why), "out: NULL");
    }
    if (out == NULL || ncclx_ht_ref_case_check(c, NULL, why, sizeof(why)) != 0) {
        fprintf(stderr, "ncclx_ht_ref_layout_alloc: %s\n", why);
        return -1;
    }
    S = ncclx_ht_ref_slots(c);
    L = local_experts(c);
    K = c->topk;
    memset(&b, 0, sizeof(b));
    /* Exactly the documented sizes (a valid case has S, L and K >= 1): a write one past the
     * receive area lands outside the arrays, where AddressSanitizer sees it. */
    b.expert_counts = calloc(L, sizeof(int32_t));
    b.expert_offsets = calloc(L + 1, sizeof(int32_t));
    b.row_source = calloc(S, sizeof(int32_t));
    b.row_expert = calloc(S, sizeof(int32_t));
    b.row_ids = calloc(S * K, sizeof(int32_t));
    b.row_weights = calloc(S * K, sizeof(float));
    if (b.expert_counts == NULL || b.expert_offsets == NULL || b.row_source == NULL ||
        b.row_expert == NULL || b.row_ids == NULL || b.row_weights == NULL) {
        ncclx_ht_ref_layout_free(&b);
        return -1;
    }
    clear_layout(c, &b);
    *out = b;
    return 0;
}

void ncclx_ht_ref_layout_free(ncclx_ht_ref_layout_t *layout)
{
    free(layout->expert_counts);
    free(layout->expert_offsets);
    free(layout->row_source);
    free(layout->row_expert);
    free(layout->row_ids);
    free(layout->row_weights);
    memset(layout, 0, sizeof(*layout));
}

/* FLAT: the i-th token hitting rank m takes row i; rows >= S are dropped. */
static void route_flat(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                       uint32_t m, ncclx_ht_ref_layout_t *out)
{
    uint32_t S = ncclx_ht_ref_slots(c), L = local_experts(c), K = c->topk;
    int64_t total = 0;
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (uint32_t t = 0; t < routing[s].num_tokens; t++) {
            int64_t experts[NCCLX_HT_REF_MAX_TOPK];
            uint32_t first_k[NCCLX_HT_REF_MAX_TOPK];
            uint32_t n = experts_on(c, &routing[s], t, m, experts, first_k);
            int64_t i;
            if (n == 0) {
                continue;
            }
            i = total++;
            if (i >= S) {
                continue; /* dropped */
            }
            out->row_source[i] = (int32_t)(s * c->max_tokens + t);
            for (uint32_t p = 0; p < n; p++) {
                int64_t local = experts[p] - (int64_t)m * L;
                out->row_ids[i * K + p] = (int32_t)(c->global_ids ? experts[p] : local);
                out->row_weights[i * K + p] = routing[s].topk_weights[(size_t)t * K + first_k[p]];
                out->expert_counts[local]++;
            }
        }
    }
    out->recv_total = total;
    out->overflow = total > S;
    out->rows = (uint32_t)(total < S ? total : S);
}

/*
 * EXPERT_MAJOR: count each local expert's tokens, pad each zone to the alignment, then give
 * the i-th token hitting expert e row base_e + i.  count holds 2 L scratch values.
 */
static void route_expert_major(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                               uint32_t m, ncclx_ht_ref_layout_t *out, int64_t *count)
{
    uint32_t L = local_experts(c), K = c->topk;
    int64_t S = ncclx_ht_ref_slots(c), A = c->alignment > 1 ? c->alignment : 1, base = 0;
    int64_t *next = count + L; /* next row of each zone */
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (uint32_t t = 0; t < routing[s].num_tokens; t++) {
            int64_t experts[NCCLX_HT_REF_MAX_TOPK];
            uint32_t first_k[NCCLX_HT_REF_MAX_TOPK];
            uint32_t n = experts_on(c, &routing[s], t, m, experts, first_k);
            for (uint32_t p = 0; p < n; p++) {
                count[experts[p] - (int64_t)m * L]++;
            }
        }
    }
    for (uint32_t e = 0; e < L; e++) {
        int64_t padded = (count[e] + A - 1) / A * A, room = S - base;
        out->expert_offsets[e] = (int32_t)(base < S ? base : S);
        out->expert_counts[e] = (int32_t)(room <= 0 ? 0 : padded < room ? padded : room);
        for (int64_t row = base + count[e]; row < base + padded && row < S; row++) {
            out->row_expert[row] = (int32_t)e; /* a pad row of e's zone */
        }
        next[e] = base;
        base += padded;
    }
    out->expert_offsets[L] = (int32_t)(base < S ? base : S);
    out->recv_total = base;
    out->overflow = base > S;
    out->rows = (uint32_t)(base < S ? base : S);
    for (uint32_t s = 0; s < c->ranks; s++) {
        for (uint32_t t = 0; t < routing[s].num_tokens; t++) {
            int64_t experts[NCCLX_HT_REF_MAX_TOPK];
            uint32_t first_k[NCCLX_HT_REF_MAX_TOPK];
            uint32_t n = experts_on(c, &routing[s], t, m, experts, first_k);
            for (uint32_t p = 0; p < n; p++) {
                int64_t local = experts[p] - (int64_t)m * L, row = next[local]++;
                if (row >= S) {
                    continue; /* dropped */
                }
                out->row_source[row] = (int32_t)(s * c->max_tokens + t);
                out->row_expert[row] = (int32_t)local;
                out->row_weights[row] = routing[s].topk_weights[(size_t)t * K + first_k[p]];
            }
        }
    }
}

int ncclx_ht_ref_route(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                       uint32_t rank, ncclx_ht_ref_layout_t *out)
{
    int64_t *count;
    if (check_call("ncclx_ht_ref_route", c, routing, rank) != 0) {
        return -1;
    }
    if (out == NULL || out->row_source == NULL) {
        fprintf(stderr, "ncclx_ht_ref_route: out: not allocated\n");
        return -1;
    }
    count = calloc(2 * (size_t)local_experts(c), sizeof(int64_t));
    if (count == NULL) {
        return -1;
    }
    clear_layout(c, out);
    if (em(c)) {
        route_expert_major(c, routing, rank, out, count);
    } else {
        route_flat(c, routing, rank, out);
    }
    free(count);
    return 0;
}

/* Entries of the inverse map of one destination: FLAT [T] by token, EM [T, L] by (token,
 * local expert). */
static size_t inverse_size(const ncclx_ht_ref_case_t *c)
{
    return (size_t)c->max_tokens * (em(c) ? local_experts(c) : 1);
}

/*
 * The rows of rank m's tokens in destination layout l: inv[t] (FLAT) or inv[t * L + e] (EM)
 * = the row, or -1 where not delivered.  -1 when l is not a layout of this case and routing.
 */
static int invert_layout(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_layout_t *l, uint32_t m,
                         uint32_t num_tokens, int32_t *inv)
{
    uint32_t L = local_experts(c);
    for (size_t i = 0; i < inverse_size(c); i++) {
        inv[i] = -1;
    }
    if (l->rows > ncclx_ht_ref_slots(c) || (l->rows > 0 && l->row_source == NULL) ||
        (l->rows > 0 && em(c) && l->row_expert == NULL)) {
        return -1;
    }
    for (uint32_t row = 0; row < l->rows; row++) {
        int32_t src = l->row_source[row];
        uint32_t t;
        if (src < 0 || (uint32_t)src / c->max_tokens != m) {
            continue;
        }
        t = (uint32_t)src % c->max_tokens;
        if (t >= num_tokens ||
            (em(c) && (l->row_expert[row] < 0 || (uint32_t)l->row_expert[row] >= L))) {
            return -1;
        }
        inv[em(c) ? (size_t)t * L + (uint32_t)l->row_expert[row] : t] = (int32_t)row;
    }
    return 0;
}

/* Checks the common arguments of the two combines and allocates the inverse map. */
static int32_t *combine_setup(const char *who, const ncclx_ht_ref_case_t *c,
                              const ncclx_ht_ref_routing_t *routing,
                              const ncclx_ht_ref_layout_t *layouts, const void *tensors,
                              uint32_t rank, const void *out)
{
    int32_t *inv;
    if (check_call(who, c, routing, rank) != 0) {
        return NULL;
    }
    if (layouts == NULL || tensors == NULL || (routing[rank].num_tokens > 0 && out == NULL)) {
        fprintf(stderr, "%s: layouts, the row tensors or out: NULL\n", who);
        return NULL;
    }
    inv = malloc(inverse_size(c) * sizeof(int32_t));
    if (inv == NULL) {
        fprintf(stderr, "%s: no memory\n", who);
    }
    return inv;
}

/* out[h] += rows[row, h] in float, unless the row was dropped (row < 0). */
static void add_row(int32_t row, const float *rows, uint32_t hidden, float *out)
{
    for (uint32_t h = 0; row >= 0 && h < hidden; h++) {
        out[h] += rows[(size_t)row * hidden + h];
    }
}

/* Adds the kept rows of rank m's tokens on destination j to out (MXFP8, EXPERT_MAJOR): a
 * token's rows on j are summed in partial ([hidden] scratch) from 0.0f, ascending expert, and
 * the sum goes through the MXFP8 quantizer (packed, [row_bytes] scratch) before it is added; a
 * token with no kept row on j adds nothing. */
static void combine_from(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *rt,
                         const int32_t *inv, uint32_t j, const float *rows, uint32_t hidden,
                         float *partial, uint8_t *packed, float *out)
{
    uint32_t L = local_experts(c);
    for (uint32_t t = 0; t < rt->num_tokens; t++) {
        int64_t experts[NCCLX_HT_REF_MAX_TOPK];
        uint32_t first_k[NCCLX_HT_REF_MAX_TOPK];
        uint32_t n = experts_on(c, rt, t, j, experts, first_k), kept = 0;
        for (uint32_t h = 0; h < hidden; h++) {
            partial[h] = 0.0f;
        }
        for (uint32_t p = 0; p < n; p++) {
            int32_t row = inv[(size_t)t * L + (uint32_t)(experts[p] - (int64_t)j * L)];
            kept += row >= 0;
            add_row(row, rows, hidden, partial);
        }
        if (kept > 0) {
            ncclx_ref_mxfp8_quantize_row(partial, hidden, packed);
            ncclx_ref_mxfp8_dequantize_row(packed, hidden, partial);
            add_row(0, partial, hidden, &out[(size_t)t * hidden]);
        }
    }
}

/* One token's combine tree (ncclx_ht_ref_combine). */
typedef struct {
    const ncclx_ht_ref_case_t *c;
    const ncclx_ht_ref_routing_t *rt; /* the combining rank's routing */
    const int32_t *inv;               /* [R, inverse_size]: every destination's inverse map */
    const float *const *rows;         /* expert_out */
    uint32_t hidden;
    uint32_t t;    /* the token */
    float *levels; /* [log2 P, hidden]: levels[d] holds a right child at depth d + 1 */
} tree_t;

/* leaf(j) into acc: 0.0f plus, in float, each kept row of token t on rank j in ascending
 * expert order (FLAT: its one row).  Returns 0 (ABSENT) when j holds no kept row of t. */
static int tree_leaf(const tree_t *x, uint32_t j, float *acc)
{
    const ncclx_ht_ref_case_t *c = x->c;
    const int32_t *inv = x->inv + (size_t)j * inverse_size(c);
    int64_t experts[NCCLX_HT_REF_MAX_TOPK];
    uint32_t first_k[NCCLX_HT_REF_MAX_TOPK], L = local_experts(c), kept = 0;
    uint32_t n = experts_on(c, x->rt, x->t, j, experts, first_k);
    for (uint32_t h = 0; h < x->hidden; h++) {
        acc[h] = 0.0f;
    }
    for (uint32_t p = 0; p < n; p++) {
        int32_t row = !em(c) ? (p == 0 ? inv[x->t] : -1)
                             : inv[(size_t)x->t * L + (uint32_t)(experts[p] - (int64_t)j * L)];
        if (row < 0) {
            continue; /* dropped (or FLAT's one row already added) */
        }
        kept++;
        for (uint32_t h = 0; h < x->hidden; h++) {
            float sum = acc[h] + x->rows[j][(size_t)row * x->hidden + h];
            acc[h] = sum;
        }
    }
    return kept > 0;
}

/*
 * T(lo, lo + size) of token t (size a power of two, lo a multiple of it) into dst, at depth d
 * of the tree: a leaf, or T of the left half (into dst) + T of the right half (into levels
 * d, at depth d + 1), an ABSENT half skipped.  Returns 0 when ABSENT (dst then undefined).
 */
static int tree_node(const tree_t *x, uint32_t lo, uint32_t size, uint32_t d, float *dst)
{
    float *right = x->levels + (size_t)d * x->hidden;
    int has_left, has_right;
    if (lo >= x->c->ranks) {
        return 0; /* ranks past R hold nothing */
    }
    if (size == 1) {
        return tree_leaf(x, lo, dst);
    }
    has_left = tree_node(x, lo, size / 2, d, dst);
    has_right = tree_node(x, lo + size / 2, size / 2, d + 1, right);
    for (uint32_t h = 0; has_right && h < x->hidden; h++) {
        float sum = has_left ? dst[h] + right[h] : right[h];
        dst[h] = sum;
    }
    return has_left || has_right;
}

/* The MXFP8 combine: destinations outermost, each token's MXFP8 partials in (rank) order. */
static int combine_mxfp8(const char *who, const ncclx_ht_ref_case_t *c,
                         const ncclx_ht_ref_routing_t *routing,
                         const ncclx_ht_ref_layout_t *layouts, const float *const *expert_out,
                         uint32_t hidden, uint32_t rank, float *out)
{
    int32_t *inv;
    const ncclx_ht_ref_routing_t *rt;
    float *partial = NULL;
    uint8_t *packed = NULL;
    if (c == NULL || !em(c) || hidden % NCCLX_REF_MXFP8_BLOCK != 0) {
        fprintf(stderr, "%s: an EXPERT_MAJOR case and hidden %% %u == 0, please\n", who,
                NCCLX_REF_MXFP8_BLOCK);
        return -1;
    }
    inv = combine_setup(who, c, routing, layouts, expert_out, rank, out);
    if (inv == NULL) {
        return -1;
    }
    partial = malloc((size_t)hidden * sizeof(float));
    packed = malloc(ncclx_ref_mxfp8_row_bytes(hidden));
    if (partial == NULL || packed == NULL) {
        fprintf(stderr, "%s: no memory\n", who);
        free(partial);
        free(packed);
        free(inv);
        return -1;
    }
    rt = &routing[rank];
    for (size_t i = 0; i < (size_t)rt->num_tokens * hidden; i++) {
        out[i] = 0.0f;
    }
    /* Destinations outermost: each token still gets its partials in rank order. */
    for (uint32_t j = 0; j < c->ranks; j++) {
        if (invert_layout(c, &layouts[j], rank, rt->num_tokens, inv) != 0 ||
            (layouts[j].rows > 0 && expert_out[j] == NULL)) {
            fprintf(stderr, "%s: layouts[%u] or expert_out[%u]: not of this case\n", who, j, j);
            free(partial);
            free(packed);
            free(inv);
            return -1;
        }
        combine_from(c, rt, inv, j, expert_out[j], hidden, partial, packed, out);
    }
    free(partial);
    free(packed);
    free(inv);
    return 0;
}

int ncclx_ht_ref_combine(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                         const ncclx_ht_ref_layout_t *layouts, const float *const *expert_out,
                         uint32_t hidden, uint32_t rank, float *out)
{
    static const char who[] = "ncclx_ht_ref_combine";
    int32_t *inv = combine_setup(who, c, routing, layouts, expert_out, rank, out), *all;
    tree_t x;
    uint32_t P = 1, depth = 0;
    if (inv == NULL) {
        return -1;
    }
    while (P < c->ranks) {
        P *= 2;
        depth++;
    }
    /* Every destination's inverse map at once (one tree per token reads them all), and one
     * buffer per level below the root (at least one float: malloc(0) may return NULL). */
    all = malloc((size_t)c->ranks * inverse_size(c) * sizeof(int32_t));
    x = (tree_t){c,
                 &routing[rank],
                 all,
                 expert_out,
                 hidden,
                 0,
                 malloc(((size_t)depth * hidden + 1) * sizeof(float))};
    if (all == NULL || x.levels == NULL) {
        fprintf(stderr, "%s: no memory\n", who);
        free(x.levels);
        free(all);
        free(inv);
        return -1;
    }
    for (uint32_t j = 0; j < c->ranks; j++) {
        if (invert_layout(c, &layouts[j], rank, x.rt->num_tokens, inv) != 0 ||
            (layouts[j].rows > 0 && expert_out[j] == NULL)) {
            fprintf(stderr, "%s: layouts[%u] or expert_out[%u]: not of this case\n", who, j, j);
            free(x.levels);
            free(all);
            free(inv);
            return -1;
        }
        memcpy(all + (size_t)j * inverse_size(c), inv, inverse_size(c) * sizeof(int32_t));
    }
    for (x.t = 0; x.t < x.rt->num_tokens; x.t++) {
        float *dst = &out[(size_t)x.t * hidden];
        if (!tree_node(&x, 0, P, 0, dst)) {
            for (uint32_t h = 0; h < hidden; h++) {
                dst[h] = 0.0f; /* no kept row anywhere: +0.0f */
            }
        }
    }
    free(x.levels);
    free(all);
    free(inv);
    return 0;
}

int ncclx_ht_ref_combine_mxfp8(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *routing,
                               const ncclx_ht_ref_layout_t *layouts, const float *const *expert_out,
                               uint32_t hidden, uint32_t rank, float *out)
{
    return combine_mxfp8("ncclx_ht_ref_combine_mxfp8", c, routing, layouts, expert_out, hidden,
                         rank, out);
}

/* Entry k's gradient from destination j (0.0f when it has none there). */
static float weight_grad(const ncclx_ht_ref_case_t *c, const ncclx_ht_ref_routing_t *rt,
                         const int32_t *inv, uint32_t j, const float *grad_w, uint32_t t,
                         uint32_t k)
{
    int64_t experts[NCCLX_HT_REF_MAX_TOPK];
    uint32_t first_k[NCCLX_HT_REF_MAX_TOPK], L = local_experts(c);
    uint32_t n = experts_on(c, rt, t, j, experts, first_k);
    for (uint32_t p = 0; p < n; p++) {
        int32_t row;
        if (first_k[p] != k) {
            continue; /* not this entry's expert, or k repeats it */
        }
        row = em(c) ? inv[(size_t)t * L + (uint32_t)(experts[p] - (int64_t)j * L)] : inv[t];
        if (row < 0) {
            return 0.0f; /* dropped */
        }
        return em(c) ? grad_w[row] : grad_w[(size_t)row * c->topk + p];
    }
    return 0.0f;
}

int ncclx_ht_ref_combine_weights(const ncclx_ht_ref_case_t *c,
                                 const ncclx_ht_ref_routing_t *routing,
                                 const ncclx_ht_ref_layout_t *layouts, const float *const *grad_w,
                                 uint32_t rank, float *out_w)
{
    static const char who[] = "ncclx_ht_ref_combine_weights";
    int32_t *inv = combine_setup(who, c, routing, layouts, grad_w, rank, out_w);
    const ncclx_ht_ref_routing_t *rt;
    if (inv == NULL) {
        return -1;
    }
    rt = &routing[rank];
    for (size_t i = 0; i < (size_t)rt->num_tokens * c->topk; i++) {
        out_w[i] = 0.0f;
    }
    for (uint32_t j = 0; j < c->ranks; j++) {
        if (invert_layout(c, &layouts[j], rank, rt->num_tokens, inv) != 0 ||
            (layouts[j].rows > 0 && grad_w[j] == NULL)) {
            fprintf(stderr, "%s: layouts[%u] or grad_w[%u]: not of this case\n", who, j, j);
            free(inv);
            return -1;
        }
        for (uint32_t t = 0; t < rt->num_tokens; t++) {
            for (uint32_t k = 0; k < c->topk; k++) {
                int64_t e = rt->topk_idx[(size_t)t * c->topk + k];
                if (e >= 0 && e < (int64_t)c->experts && (uint64_t)e / local_experts(c) == j) {
                    out_w[(size_t)t * c->topk + k] = weight_grad(c, rt, inv, j, grad_w[j], t, k);
                }
            }
        }
    }
    free(inv);
    return 0;
}
