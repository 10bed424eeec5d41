/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * EP LL on the shapes and values the other programs do not reach, element by element against
 * the CPU reference (tests/ref) on fresh random data, outputs poisoned before every operation,
 * dispatch compared bit for bit and combine equal to the reference's float64 rounded once to
 * nearest even:
 *  - grids of 1, 7, 33 and 264 blocks (the group's sm_budget), with enough tokens that every
 *    grid-stride loop of the kernels takes several passes;
 *  - loopback teams of 3, 5, 6, 12 and 16 ranks, experts per rank 3, 5, 6 and 12, hidden 2880
 *    and 4000 (not multiples of 128: FP8 is refused there, so NONE and QUANT_FWD run);
 *  - hidden 2884 and 4004 with FP32 rows, the only shape the validation lets reach the
 *    combine's scalar tail (the last 4 elements of a row; see test_combine_scalar_tail);
 *  - 1024 tokens on every rank, the plan's maximum;
 *  - NaN, Inf, subnormal, huge, below-the-floor and tie inputs through FP8 quantization;
 *  - negative, +-0 and extreme weights, and expert outputs over the dtypes' whole range, so
 *    that combine results round to subnormals, to +-0, to infinity and on exact ties.
 * TEST_SEED=n replays a run's random data; TEST_FILTER=pattern runs the matching tests alone.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu/ep_ll_harness.h"
#include "gpu/ep_ll_short.h"

/* ---- shapes ---- */

typedef struct {
    uint32_t ranks, local_experts, topk, hidden, max_tokens;
    uint32_t sm_budget; /* blocks per kernel; 0: the default 2 * SMs / ranks */
    int fp32_only;      /* token_dtypes FP32 alone, recipe NONE (H = 4 mod 8 needs it) */
    int full;           /* every rank sends max_tokens tokens in every case */
} shape_t;

/* A rank's kernels wait for its peers, so the team's grids must fit on the GPU together (two
 * blocks per SM).  Skips (through cmocka) a shape that cannot: it would only time out. */
static void open_shape(ep_team_t *t, const shape_t *s)
{
    int sms = 0;
    assert_cuda_ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const uint32_t blocks = s->sm_budget != 0 ? s->sm_budget : 2u * (uint32_t)sms / s->ranks;
    if (s->ranks * blocks > 2u * (uint32_t)sms) {
        printf("skipped: %u ranks of %u blocks do not fit at once on %d SMs\n", s->ranks, blocks,
               sms);
        skip();
    }
    ep_team_plan(t, s->ranks * s->local_experts, s->topk, s->hidden, s->max_tokens);
    t->group_plan.sm_budget = s->sm_budget;
    if (s->hidden % 128 != 0) {
        t->group_plan.recipes &= ~FP8; /* the plan refuses FP8 there */
    }
    if (s->fp32_only) {
        t->group_plan.token_dtypes = NCCLX_DTYPE_BIT(NCCLX_FLOAT32);
        t->group_plan.recipes = NONE;
        t->group_plan.max_token_bytes = 0;
        t->group_plan.max_scale_bytes = 0;
    }
    ep_team_open(t, s->ranks);
}

/* Every case on the shape; unless the shape is full, the last rank is empty in every third
 * case and every rank full in the next one. */
static void run_shape(const shape_t *s, const ep_case_t *cases, size_t n)
{
    ep_team_t t;
    open_shape(&t, s);
    for (size_t i = 0; i < n; i++) {
        ep_routing_t rt = ep_routing_default();
        if (s->full || i % 3 == 2) {
            rt.full = 1;
        } else if (i % 3 == 1 && s->ranks > 1) {
            rt.empty_ranks = 1u << (s->ranks - 1);
        }
        ep_run_case(&t, &cases[i], &rt, "shape case");
    }
    ep_team_close(&t);
}

/* {topk (0: max), layout, recipe, round_scales, global ids, dtype, scale dtype, scales per
 *  token, topk_idx dtype, out_topk_idx dtype, combine dtype} */
static const ep_case_t with_fp8[] = {
    {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, RM, NONE, 0, 1, F16, U8, 0, I32, I32, F16, 0},
    {0, EM, FP8, 1, 0, BF16, U8, 0, I32, I64, F32, 0},
    {0, RM, FP8, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, EM, QFWD, 0, 0, E4M3, F32, 3, I64, I64, F16, 0},
    {0, RM, NONE, 0, 0, F32, U8, 0, I64, I32, F32, 0},
};
static const ep_case_t without_fp8[] = {
    {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
    {0, RM, NONE, 0, 1, F16, U8, 0, I32, I32, F16, 0},
    {0, EM, NONE, 0, 0, F32, U8, 0, I32, I64, F32, 0},
    {0, RM, QFWD, 0, 0, NCCLX_FP4X2_E2M1, E4M3, 5, I64, I64, BF16, 0},
    {0, EM, QFWD, 0, 0, U8, BF16, 3, I64, I64, F16, 0},
};
static const ep_case_t fp32_rows[] = {
    {0, EM, NONE, 0, 0, F32, U8, 0, I64, I64, F32, 0},
    {0, RM, NONE, 0, 1, F32, U8, 0, I32, I32, F32, 0},
};
#define CASES(a) (a), (sizeof(a) / sizeof((a)[0]))

/* ---- grids (sm_budget): 16 warps per block, so a loop over u units takes u / (16 * blocks)
 * passes ---- */

/* One block: every loop of every kernel, the meta kernel's (4 * 1024 slots / 512 threads)
 * and the positions kernel's (3 experts, one block) included, runs many passes. */
static void test_grid_1_block(void **state)
{
    const shape_t s = {4, 3, 6, 1024, 1024, 1, 0, 0};
    (void)state;
    ep_rng_reset("grid1");
    run_shape(&s, CASES(with_fp8));
}

/* Seven blocks on each of 16 ranks: an odd grid on the largest team. */
static void test_grid_7_blocks(void **state)
{
    const shape_t s = {16, 3, 6, 512, 32, 7, 0, 0};
    (void)state;
    ep_rng_reset("grid7");
    run_shape(&s, CASES(with_fp8));
}

/* 33 blocks on 6 ranks, hidden 2944 = 23 FP8 blocks: two 4096-byte chunks of BF16 input, the
 * second of 7 blocks: the quantizer's second 512-element step of that chunk holds 3 blocks, so
 * lanes 24-31 (a fourth block, past the end) load and store nothing but join the shuffles. */
static void test_grid_33_blocks(void **state)
{
    const shape_t s = {6, 5, 8, 2944, 128, 33, 0, 0};
    (void)state;
    ep_rng_reset("grid33");
    run_shape(&s, CASES(with_fp8));
}

/* 264 blocks (the whole of a 132-SM GPU) on a 1-rank loopback team, 1024 tokens of hidden
 * 5120: FP32 rows are 5 chunks, so 5120 (token, chunk) units take two passes of 4224 warps;
 * combine's receive has 20 element groups per token. */
static void test_grid_264_blocks(void **state)
{
    const shape_t s = {1, 3, 3, 5120, 1024, 264, 0, 1};
    (void)state;
    ep_rng_reset("grid264");
    run_shape(&s, CASES(with_fp8));
}

/* ---- team sizes, experts per rank, hidden ---- */

static void test_3_ranks_hidden_2880(void **state)
{
    const shape_t s = {3, 3, 5, 2880, 96, 0, 0, 0};
    (void)state;
    ep_rng_reset("ranks3");
    run_shape(&s, CASES(without_fp8));
}

static void test_5_ranks_hidden_4000(void **state)
{
    const shape_t s = {5, 6, 8, 4000, 64, 0, 0, 0};
    (void)state;
    ep_rng_reset("ranks5");
    run_shape(&s, CASES(without_fp8));
}

static void test_6_ranks_12_experts_each(void **state)
{
    const shape_t s = {6, 12, 9, 1152, 48, 0, 0, 0};
    (void)state;
    ep_rng_reset("ranks6");
    run_shape(&s, CASES(with_fp8));
}

static void test_12_ranks(void **state)
{
    const shape_t s = {12, 3, 4, 768, 24, 0, 0, 0};
    (void)state;
    ep_rng_reset("ranks12");
    run_shape(&s, CASES(with_fp8));
}

/* 16 ranks, 5 experts each, top-10 (more than a rank holds, fewer than the ranks). */
static void test_16_ranks(void **state)
{
    const shape_t s = {16, 5, 10, 512, 16, 0, 0, 0};
    (void)state;
    ep_rng_reset("ranks16");
    run_shape(&s, CASES(with_fp8));
}

/*
 * The combine's scalar tail.  Its receive kernel takes 8 elements per lane on the vector path
 * when rows are 16-byte multiples and the 8 fit in the row, else element by element.  The
 * plan makes every token dtype's row a 16-byte multiple and combine refuses expert_out rows
 * that are not, so the tail is reached only by FP32 rows with hidden = 4 (mod 8), whose last 4
 * elements the vector path cannot take: a group of FP32 tokens alone (BF16 or FP16 would need
 * hidden = 0 mod 8).  Hidden 2880 and 4000 (multiples of 8) never reach it, in any dtype.
 */
static void test_combine_scalar_tail(void **state)
{
    const shape_t a = {3, 5, 4, 2884, 64, 0, 1, 0};
    const shape_t b = {5, 3, 3, 4004, 40, 7, 1, 0}; /* and a 7-block grid */
    (void)state;
    ep_rng_reset("scalar_tail");
    run_shape(&a, CASES(fp32_rows));
    run_shape(&b, CASES(fp32_rows));
}

/* The plan's maximum: 1024 tokens on each of 3 ranks, every one of them. */
static void test_1024_tokens_every_rank(void **state)
{
    static const ep_case_t cases[] = {
        {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
        {0, RM, NONE, 0, 0, F32, U8, 0, I32, I64, F32, 0},
        {0, EM, QFWD, 0, 0, E4M3, F32, 3, I64, I64, F16, 0},
    };
    const shape_t s = {3, 3, 4, 2880, NCCLX_EP_MAX_LL_TOKENS_PER_RANK, 0, 0, 1};
    (void)state;
    ep_rng_reset("tokens1024");
    run_shape(&s, CASES(cases));
}

/* ---- FP8 quantization of NaN, Inf, subnormals and other edges ---- */

/* What the expected outputs of the FP8 cases held, over the whole test: proof that the
 * special inputs reached each edge (a generator that stopped reaching one fails here). */
typedef struct {
    size_t nan_codes, neg_zero_codes, saturated_codes, inf_scales, floor_scales, pow2_scales;
} fp8_edges_t;

static void count_fp8_edges(const ep_run_t *run, fp8_edges_t *n)
{
    const size_t blocks = run->c.hidden / 128;
    const float floor_scale = ncclx_ref_fp8_scale(0.0f, (int)run->c.round_scales);
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        const ncclx_ref_rank_dispatch_t *w = &run->r[r].want;
        for (size_t row = 0; row < run->out_rows; row++) {
            if (!w->row_valid[row]) {
                continue;
            }
            const uint8_t *codes = (const uint8_t *)w->out_tokens + row * run->out_row;
            const float *scales = (const float *)w->out_scales + row * blocks;
            for (size_t i = 0; i < run->c.hidden; i++) {
                n->nan_codes += codes[i] == 0x7f;
                n->neg_zero_codes += codes[i] == 0x80;
                n->saturated_codes += (codes[i] & 0x7f) == 0x7e;
            }
            for (size_t b = 0; b < blocks; b++) {
                int e;
                n->inf_scales += isinf(scales[b]) != 0;
                n->floor_scales += scales[b] == floor_scale;
                n->pow2_scales += isfinite(scales[b]) && frexpf(scales[b], &e) == 0.5f;
            }
        }
    }
}

/* run_case with the edge counts taken after each fill. */
static void run_special_case(ep_team_t *t, const ep_case_t *k, fp8_edges_t *n)
{
    ep_routing_t rt = ep_routing_default();
    ep_run_t run;
    rt.values = EP_VALUES_SPECIAL_TOKENS;
    ep_run_alloc(&run, t, k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            ep_run_fill(&run, &rt);
            ep_run_update(&run);
        }
        count_fp8_edges(&run, n);
        ep_run_dispatch_and_check(&run, 0);
        ep_run_combine_and_check(&run, 0);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("FP8 special values");
    ep_run_free(&run);
}

/* Expected (tests/ref/ep_ref.h, from the kernel's code): a block's amax is the fmaxf of |x|,
 * which skips NaN; scale = fmaxf(amax, 1e-4) / 448 (NaN-only and zero blocks get the floor),
 * rounded up to a power of two with round_scales; codes = x / scale converted with
 * saturation: NaN -> 0x7f, +-Inf and anything past 448 -> +-448, tiny -> +-0 with x's sign.
 * An Inf in a block makes its scale Inf: the block's finite values become +-0, its Inf NaN.
 * Compared bit for bit, NaN codes and the sign of zero included. */
static void test_fp8_special_values(void **state)
{
    static const ep_case_t cases[] = {
        {0, EM, FP8, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
        {0, EM, FP8, 1, 0, BF16, U8, 0, I32, I64, F16, 0},
        {0, RM, FP8, 1, 1, BF16, U8, 0, I64, I32, F32, 0},
        {0, RM, FP8, 0, 0, BF16, U8, 0, I32, I64, BF16, 0},
    };
    const shape_t s = {4, 3, 5, 2944, 64, 0, 0, 0};
    fp8_edges_t n;
    ep_team_t t;
    (void)state;
    memset(&n, 0, sizeof(n));
    ep_rng_reset("fp8_special");
    open_shape(&t, &s);
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            run_special_case(&t, &cases[i], &n);
        }
    }
    ep_team_close(&t);
    printf("FP8 edges checked: %zu NaN codes, %zu -0 codes, %zu saturated codes, %zu Inf "
           "scales, %zu floor scales, %zu power-of-two scales\n",
           n.nan_codes, n.neg_zero_codes, n.saturated_codes, n.inf_scales, n.floor_scales,
           n.pow2_scales);
    assert_true(n.nan_codes > 0);
    assert_true(n.neg_zero_codes > 0);
    assert_true(n.saturated_codes > 0);
    assert_true(n.inf_scales > 0);
    assert_true(n.floor_scales > 0);
    assert_true(n.pow2_scales > 0);
}

/* ---- combine rounding: signed and extreme weights, expert outputs over the whole range ---- */

/* Whether x lies exactly halfway between two neighbours of dtype (round to nearest even must
 * pick the even one): x differs from its rounding by exactly half a unit in the last place. */
static int is_tie(double x, ncclxDataType_t dtype)
{
    const int p = dtype == NCCLX_FLOAT32 ? 24 : dtype == NCCLX_BFLOAT16 ? 8 : 11;
    const int min_exp = dtype == NCCLX_FLOAT16 ? -14 : -126;
    int e;
    if (!isfinite(x) || x == 0.0) {
        return 0;
    }
    (void)frexp(fabs(x), &e);
    const int q = (e - 1 > min_exp ? e - 1 : min_exp) - (p - 1);
    const double scaled = ldexp(fabs(x), -q);
    return scaled - floor(scaled) == 0.5;
}

/* What the expected combine results held, per combine dtype (0 BF16, 1 FP16, 2 FP32). */
typedef struct {
    size_t ties[3], subnormals[3], neg_zeros[3], infinities[3];
} rounding_edges_t;

static int dtype_slot(ncclxDataType_t dt)
{
    return dt == NCCLX_BFLOAT16 ? 0 : dt == NCCLX_FLOAT16 ? 1 : 2;
}

static void count_rounding_edges(const ep_run_t *run, rounding_edges_t *n)
{
    const ncclxDataType_t dt = run->k.combine_dtype;
    const int d = dtype_slot(dt);
    const double min_normal = dt == NCCLX_FLOAT16 ? 0x1p-14 : 0x1p-126;
    for (uint32_t r = 0; r < run->team->ranks; r++) {
        const ep_rank_t *b = &run->r[r];
        for (size_t i = 0; i < (size_t)b->num_tokens * run->c.hidden; i++) {
            const double x = b->want_out[i], y = ncclx_ref_round_to_dtype(x, dt);
            n->ties[d] += is_tie(x, dt);
            n->subnormals[d] += y != 0.0 && fabs(y) < min_normal;
            n->neg_zeros[d] += y == 0.0 && signbit(y) && x != 0.0;
            n->infinities[d] += isinf(y) && !isinf(x);
        }
    }
}

static void run_rounding_case(ep_team_t *t, const ep_case_t *k, uint32_t values,
                              rounding_edges_t *n)
{
    ep_routing_t rt = ep_routing_default();
    ep_run_t run;
    rt.values = values;
    rt.unrouted = 0.05f;
    ep_run_alloc(&run, t, k);
    ep_alloc_arm();
    ep_run_fill(&run, &rt);
    ep_run_create(&run);
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            ep_run_fill(&run, &rt);
            ep_run_update(&run);
        }
        count_rounding_edges(&run, n);
        ep_run_dispatch_and_check(&run, 0); /* rank-major: the weights forwarded bit for bit */
        ep_run_combine_and_check(&run, 0);
        ep_run_combine_and_check(&run, 0);
    }
    ep_run_destroy(&run);
    ep_alloc_assert_none("combine rounding");
    ep_run_free(&run);
}

/* Expert-major combine applies weights +0, -0, negative, float subnormals (BF16 and FP16
 * results +-0), of magnitude 2^-128 (float and BF16 subnormal results), 2^-16 (FP16
 * subnormals), powers of two (sums on exact ties), 1 and 2^15 (FP16 overflow to infinity);
 * rank-major combine adds rows spread over the dtype's range.  Each output must be the float64 sum
 * rounded once to nearest even, bit for bit (the sign of zero included); the test also proves that
 * its data reached ties, subnormal and -0 results in every dtype, and FP16 overflow. */
static void test_combine_rounding(void **state)
{
    static const ep_case_t cases[] = {
        {0, EM, NONE, 0, 0, BF16, U8, 0, I64, I64, BF16, 0},
        {0, EM, NONE, 0, 0, F16, U8, 0, I32, I64, F16, 0},
        {0, EM, NONE, 0, 0, F32, U8, 0, I64, I64, F32, 0},
        {0, RM, NONE, 0, 1, BF16, U8, 0, I64, I32, BF16, 0},
        {0, RM, NONE, 0, 0, F16, U8, 0, I32, I64, F16, 0},
        {0, RM, NONE, 0, 0, F32, U8, 0, I64, I64, F32, 0},
    };
    const uint32_t values[] = {EP_VALUES_SIGNED_WEIGHTS,
                               EP_VALUES_SIGNED_WEIGHTS | EP_VALUES_WIDE_EXPERT_OUT};
    const shape_t s = {4, 3, 6, 1056, 48, 0, 0, 0};
    rounding_edges_t n;
    ep_team_t t;
    (void)state;
    memset(&n, 0, sizeof(n));
    ep_rng_reset("combine_rounding");
    open_shape(&t, &s);
    for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            run_rounding_case(&t, &cases[i], values[v], &n);
        }
    }
    ep_team_close(&t);
    for (int d = 0; d < 3; d++) {
        printf("combine dtype %s: %zu ties, %zu subnormal, %zu -0 and %zu overflowing results "
               "checked\n",
               d == 0   ? "BF16"
               : d == 1 ? "FP16"
                        : "FP32",
               n.ties[d], n.subnormals[d], n.neg_zeros[d], n.infinities[d]);
        assert_true(n.subnormals[d] > 0);
    }
    /* FP32 needs sums below 2^-150 for -0 and has too many bits for frequent ties. */
    assert_true(n.neg_zeros[0] > 0 && n.neg_zeros[1] > 0);
    assert_true(n.ties[0] > 0 && n.ties[1] > 0);
    assert_true(n.infinities[1] > 0);
}

/* ---- the reference's rounding itself (CPU only) ---- */

static int same_double(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

#define assert_rounds(x, dtype, want) \
    assert_true(same_double(ncclx_ref_round_to_dtype(x, dtype), want))

/* Known values worked out from the formats, then agreement with the host's float conversion
 * (round to nearest even) and with the reference's float -> BF16 / FP16 conversions on values
 * that are floats already. */
static void test_reference_rounding(void **state)
{
    (void)state;
    /* BF16: 8-bit significand, ties to even, subnormals down to 2^-133. */
    assert_rounds(1.0 + 0x1p-8, BF16, 1.0);
    assert_rounds(1.0 + 0x3p-8, BF16, 1.0 + 0x1p-6);
    assert_rounds(1.0 + 0x1p-8 + 0x1p-40, BF16, 1.0 + 0x1p-7);
    assert_rounds(-(1.0 + 0x1p-8), BF16, -1.0);
    assert_rounds(0x1p-134, BF16, 0.0);
    assert_rounds(0x3p-134, BF16, 0x1p-132);
    assert_rounds(-0x1p-135, BF16, -0.0);
    assert_rounds(0x1.fep127, BF16, 0x1.fep127);      /* the largest finite */
    assert_rounds(0x1.ffp127, BF16, INFINITY);        /* its midpoint to 2^128: even */
    assert_rounds(0x1.fefffffp127, BF16, 0x1.fep127); /* just below the midpoint */
    /* FP16: 11-bit significand, subnormals from 2^-24, largest finite 65504. */
    assert_rounds(2049.0, F16, 2048.0);
    assert_rounds(2051.0, F16, 2052.0);
    assert_rounds(65519.0, F16, 65504.0);
    assert_rounds(65520.0, F16, INFINITY);
    assert_rounds(-65520.0, F16, -INFINITY);
    assert_rounds(0x1p-25, F16, 0.0);
    assert_rounds(0x3p-25, F16, 0x1p-23);
    assert_rounds(-0x1p-26, F16, -0.0);
    assert_rounds(0x1.002p-14, F16, 0x1p-14);
    /* FP32. */
    assert_rounds(1.0 + 0x1p-24, F32, 1.0);
    assert_rounds(1.0 + 0x3p-24, F32, 1.0 + 0x1p-22);
    assert_rounds(0x1p-150, F32, 0.0);
    assert_rounds(0x3p-150, F32, 0x1p-148);
    assert_rounds((double)FLT_MAX, F32, (double)FLT_MAX);
    assert_rounds(0x1.ffffffp127, F32, INFINITY);
    assert_rounds(1e300, F32, INFINITY);
    assert_rounds(-1e-300, F32, -0.0);
    /* Non-finite and zero values pass through. */
    assert_rounds(-0.0, BF16, -0.0);
    assert_rounds(-INFINITY, F16, -INFINITY);
    assert_true(isnan(ncclx_ref_round_to_dtype(NAN, F32)));

    ep_rng_reset("reference_rounding");
    for (int i = 0; i < 200000; i++) {
        /* A random double between 2^-160 and 2^140, either sign. */
        const double m = (double)(ep_rand_u64() >> 11) * 0x1p-53 + 0.5;
        const double x = (ep_rand_below(2) ? -1.0 : 1.0) * ldexp(m, (int)ep_rand_below(300) - 160);
        const float f = (float)x; /* the host converts with round to nearest even */
        assert_true(same_double(ncclx_ref_round_to_dtype(x, F32), (double)f));
        assert_true(same_double(ncclx_ref_round_to_dtype((double)f, BF16),
                                ncclx_ref_bf16_to_float(ncclx_ref_float_to_bf16(f))));
        assert_true(same_double(ncclx_ref_round_to_dtype((double)f, F16),
                                ncclx_ref_fp16_to_float(ncclx_ref_float_to_fp16(f))));
    }
}

/* The exact comparison tells -0 from +0 and a one-ulp error from none; NaN matches NaN. */
static void test_reference_exact_combine_diff(void **state)
{
    const uint16_t got[4] = {0x3f80u, 0x8000u, 0x7fffu, 0x3f81u}; /* 1, -0, NaN, 1 + 2^-7 */
    const double want[4] = {1.0 + 0x1p-8, -0x1p-140, NAN, 1.0};
    char why[256];
    (void)state;
    assert_int_equal(ncclx_ref_combine_diff_exact(BF16, got, want, 3, why, sizeof(why)), 0);
    assert_int_equal(ncclx_ref_combine_diff_exact(BF16, got, want, 4, why, sizeof(why)), 1);
    assert_int_equal(ncclx_ref_combine_diff(BF16, got, want, 4, why, sizeof(why)), 0);
    const double positive_zero[1] = {0x1p-140};
    assert_int_equal(
        ncclx_ref_combine_diff_exact(BF16, got + 1, positive_zero, 1, why, sizeof(why)), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_rounding),
        cmocka_unit_test(test_reference_exact_combine_diff),
        cmocka_unit_test(test_grid_1_block),
        cmocka_unit_test(test_grid_7_blocks),
        cmocka_unit_test(test_grid_33_blocks),
        cmocka_unit_test(test_grid_264_blocks),
        cmocka_unit_test(test_3_ranks_hidden_2880),
        cmocka_unit_test(test_5_ranks_hidden_4000),
        cmocka_unit_test(test_6_ranks_12_experts_each),
        cmocka_unit_test(test_12_ranks),
        cmocka_unit_test(test_16_ranks),
        cmocka_unit_test(test_combine_scalar_tail),
        cmocka_unit_test(test_1024_tokens_every_rank),
        cmocka_unit_test(test_fp8_special_values),
        cmocka_unit_test(test_combine_rounding),
    };
    /* Up to 16 ranks' streams, each on its own hardware queue: before CUDA starts. */
    if (setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0) != 0) {
        perror("setenv CUDA_DEVICE_MAX_CONNECTIONS");
        return 1;
    }
    ep_seed_init("test_ep_ll_shapes");
    return ncclx_run_tests("gpu_ep_ll_shapes", tests); /* TEST_FILTER: tests/ncclx_test.h */
}
