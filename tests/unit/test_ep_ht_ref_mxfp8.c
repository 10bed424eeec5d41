/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The MXFP8 combine of the HT reference (ncclx_ht_ref_combine_mxfp8): a case worked out by
 * hand where summing before quantizing differs from quantizing each rank's rows, and the error
 * bound against the plain combine over a random routing with drops.
 */
#include "ep_ht_ref_fixture.h"

#include <math.h>

/* ---- MXFP8 combine: a rank's rows of a token are summed, then quantized once ---- */

/* R=2, E=4 (L=2), hidden 32, EXPERT_MAJOR; rank 0's token 0 lists experts 0 and 1 (both on
 * rank 0), token 1 lists 0 and 2 (rank 0 and rank 1).  Expert 0's rows are A = [1, 0, ...],
 * experts 1 and 2's rows B = [0.0625, 300, 0, ...].  Worked by hand (E4M3 keeps 3 fraction
 * bits; a block's scale is the power of two 2^(e - 127) >= amax / 448):
 *  token 0: one sum on rank 0, A + B = [1.0625, 300]: amax 300, scale 2^0; 1.0625 lies half
 *           way between 1 and 1.125 and goes to the even code, 1; 300 goes to 288 (codes 288
 *           and 320 around it).  out = [1, 288].
 *  token 1: rank 0 sends A alone (scale 2^-8: 1 is exact), rank 1 sends B (scale 2^0: 0.0625
 *           exact, 300 -> 288).  out = [1.0625, 288].
 * The plain combine gives [1.0625, 300] for token 0. */
static void test_mxfp8_combine_by_hand(void **state)
{
    enum { H = 32 };
    static float rows[2][4 * H];
    static float out[2 * H];
    const float *expert_out[2] = {rows[0], rows[1]};
    (void)state;
    make_fixture(&fx, 2, 4, 2, 0, 2, NCCLX_EP_LAYOUT_EXPERT_MAJOR, (const uint32_t[]){2, 0});
    fx.idx[0][0] = 0;
    fx.idx[0][1] = 1;
    fx.idx[0][2] = 0;
    fx.idx[0][3] = 2;
    route_all(&fx);
    memset(rows, 0, sizeof(rows));
    for (uint32_t j = 0; j < 2; j++) {
        for (uint32_t row = 0; row < fx.lay[j].rows; row++) {
            const int expert = (int)j * 2 + fx.lay[j].row_expert[row];
            if (fx.lay[j].row_source[row] < 0) {
                continue;
            }
            rows[j][row * H] = expert == 0 ? 1.0f : 0.0625f;
            rows[j][row * H + 1] = expert == 0 ? 0.0f : 300.0f;
        }
    }
    assert_int_equal(ncclx_ht_ref_combine_mxfp8(&fx.c, fx.rt, fx.lay, expert_out, H, 0, out), 0);
    assert_true(out[0] == 1.0f && out[1] == 288.0f);
    assert_true(out[H] == 1.0625f && out[H + 1] == 288.0f);
    for (uint32_t h = 2; h < H; h++) {
        assert_true(out[h] == 0.0f && out[H + h] == 0.0f);
    }
    assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, H, 0, out), 0);
    assert_true(out[0] == 1.0625f && out[1] == 300.0f);
    /* Refused: hidden not a multiple of 32, and FLAT. */
    assert_int_equal(ncclx_ht_ref_combine_mxfp8(&fx.c, fx.rt, fx.lay, expert_out, 16, 0, out), -1);
    free_all(&fx);
    make_fixture(&fx, 2, 4, 2, 0, 2, NCCLX_EP_LAYOUT_FLAT, (const uint32_t[]){2, 0});
    route_all(&fx);
    assert_int_equal(ncclx_ht_ref_combine_mxfp8(&fx.c, fx.rt, fx.lay, expert_out, H, 0, out), -1);
    free_all(&fx);
}

/* The MXFP8 combine stays within the quantizer's error bound of the plain combine, element by
 * element, over a random routing with drops and values spread over 2^-140 .. 2^20: each rank's
 * partial sum of a token is off by at most its block amax / 14 (half an E4M3 step at the top
 * binade, the scale at most 2 amax / 448), bounded here by the sum of its rows' block maxima,
 * plus 2^-134 for blocks too small for any normal scale. */
static void test_mxfp8_within_bound(void **state)
{
    enum { H = 64, SL = 300 };
    static float rows[8][SL * H], plain[128 * H], mx[128 * H];
    const float *expert_out[8];
    uint64_t seed = 7;
    (void)state;
    make_random(&fx, NCCLX_EP_LAYOUT_EXPERT_MAJOR, SL, 99);
    route_all(&fx);
    for (uint32_t j = 0; j < 8; j++) {
        for (uint32_t i = 0; i < SL * H; i++) {
            const float m = (float)((int)(lcg(&seed) % 256) - 128) / 64.0f;
            const int e =
                (i / 32) % 5 == 0 ? -140 + (int)(lcg(&seed) % 10) : (int)(lcg(&seed) % 41) - 20;
            rows[j][i] = ldexpf(m, e);
        }
        expert_out[j] = rows[j];
    }
    for (uint32_t r = 0; r < 8; r++) {
        int changed = 0;
        assert_int_equal(ncclx_ht_ref_combine(&fx.c, fx.rt, fx.lay, expert_out, H, r, plain), 0);
        assert_int_equal(ncclx_ht_ref_combine_mxfp8(&fx.c, fx.rt, fx.lay, expert_out, H, r, mx), 0);
        for (uint32_t t = 0; t < fx.rt[r].num_tokens; t++) {
            for (uint32_t h = 0; h < H; h++) {
                double bound = ldexp(1.0, -134);
                for (uint32_t j = 0; j < 8; j++) {
                    for (uint32_t row = 0; row < fx.lay[j].rows; row++) {
                        float amax = 0.0f;
                        if (fx.lay[j].row_source[row] != (int32_t)(r * 128 + t)) {
                            continue;
                        }
                        for (uint32_t i = h / 32 * 32; i < h / 32 * 32 + 32; i++) {
                            amax = fmaxf(amax, fabsf(rows[j][row * H + i]));
                        }
                        bound += amax / 14.0;
                    }
                }
                if (!(fabs((double)mx[t * H + h] - plain[t * H + h]) <= bound)) {
                    fail_msg("rank %u token %u [%u]: mxfp8 %g, plain %g, bound %g", r, t, h,
                             (double)mx[t * H + h], (double)plain[t * H + h], bound);
                }
                changed |= mx[t * H + h] != plain[t * H + h];
            }
        }
        assert_true(changed); /* the quantizer did change something */
    }
    free_all(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mxfp8_combine_by_hand),
        cmocka_unit_test(test_mxfp8_within_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
