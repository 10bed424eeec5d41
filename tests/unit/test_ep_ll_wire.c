/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL wire format's host-visible helpers (kernels/ep_ll/ep_ll_wire.h) on the CPU: the top-k
 * entry word (expert id and expert slot), the packed received token, the signal word and the
 * sequence tag.  Senders and receivers decode each other's words with these helpers only, so a
 * field that overlaps another, or a valid word that reads as "empty", would place rows wrongly
 * on every GPU: these tests pin every field at its limits.
 */
#include "ncclx_test.h"

#include "ep_group.h"

/* Every expert id at every slot, both at their limits and on a stride in between. */
static void test_entry_word_round_trip(void **state)
{
    (void)state;
    const int32_t experts[] = {0, 1, 255, 256, 4095, (int32_t)NCCLX_EP_MAX_EXPERTS - 1};
    for (size_t i = 0; i < sizeof(experts) / sizeof(experts[0]); i++) {
        for (int32_t slot = 0; slot < (int32_t)NCCLX_EP_MAX_LL_TOKENS_PER_RANK; slot += 7) {
            const int32_t w = ncclx_ep_pack_entry(experts[i], slot);
            assert_true(w >= 0); /* -1 alone means "no entry" */
            assert_int_equal(ncclx_ep_entry_expert(w), experts[i]);
            assert_int_equal(ncclx_ep_entry_slot(w), slot);
        }
        const int32_t last = (int32_t)NCCLX_EP_MAX_LL_TOKENS_PER_RANK - 1;
        const int32_t w = ncclx_ep_pack_entry(experts[i], last);
        assert_true(w >= 0);
        assert_int_equal(ncclx_ep_entry_expert(w), experts[i]);
        assert_int_equal(ncclx_ep_entry_slot(w), last);
    }
}

/* The slot field keeps all 15 bits, past the largest real slot: a corrupt or mismatched entry
 * must decode as the slot it carries, so that the receiver's bound (slot < the source's count)
 * refuses it instead of a wrapped value landing on another row. */
static void test_entry_word_full_slot_field(void **state)
{
    (void)state;
    const int32_t slots[] = {(int32_t)NCCLX_EP_MAX_LL_TOKENS_PER_RANK, 1 << 12, 1 << 14,
                             (1 << 15) - 1};
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
        const int32_t w = ncclx_ep_pack_entry(4095, slots[i]);
        assert_true(w >= 0);
        assert_int_equal(ncclx_ep_entry_expert(w), 4095);
        assert_int_equal(ncclx_ep_entry_slot(w), slots[i]);
    }
}

/* An empty entry is -1 whatever slot the routing left beside it, and decodes as no expert; a
 * rank-major entry (slot 0) is the expert id itself, which the rank-major unpack writes out. */
static void test_entry_word_empty_and_rank_major(void **state)
{
    (void)state;
    assert_int_equal(ncclx_ep_pack_entry(-1, 0), -1);
    assert_int_equal(ncclx_ep_pack_entry(-1, 17), -1);
    assert_int_equal(ncclx_ep_pack_entry(-1, -1), -1);
    assert_int_equal(ncclx_ep_entry_expert(-1), -1);
    assert_int_equal(ncclx_ep_entry_slot(-1), -1);
    for (int32_t e = 0; e < (int32_t)NCCLX_EP_MAX_EXPERTS; e += 13) {
        assert_int_equal(ncclx_ep_pack_entry(e, 0), e);
    }
}

/* The received token word: token and rank order at their limits, and the dropped marker that
 * no real (token, order) produces. */
static void test_token_word_round_trip(void **state)
{
    (void)state;
    const int32_t tokens[] = {0, 1, (int32_t)NCCLX_EP_MAX_LL_TOKENS_PER_RANK - 1};
    for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
        for (int32_t order = 0; order < (int32_t)NCCLX_EP_MAX_TOPK; order++) {
            const int32_t p = ncclx_ep_pack_token(tokens[i], order);
            assert_true(p != NCCLX_EP_TOKEN_DROPPED);
            assert_int_equal(ncclx_ep_packed_token(p), tokens[i]);
            assert_int_equal(ncclx_ep_packed_order(p), order);
        }
    }
}

/* The signal word: tag, operation word and count at their limits; a zeroed word has tag 0,
 * which no sequence number produces. */
static void test_signal_word_round_trip(void **state)
{
    (void)state;
    const uint32_t tags[] = {1u, 2u, 0x7fffffffu, 0xffffffffu};
    const uint32_t ops[] = {0u, 1u, (1u << NCCLX_EP_OP_BITS) - 1u};
    const uint32_t counts[] = {0u, 1u, NCCLX_EP_MAX_LL_TOKENS_PER_RANK,
                               (1u << NCCLX_EP_COUNT_BITS) - 1u};
    for (size_t a = 0; a < 4; a++) {
        for (size_t b = 0; b < 3; b++) {
            for (size_t c = 0; c < 4; c++) {
                const uint64_t w = ncclx_ep_signal_word(tags[a], ops[b], counts[c]);
                assert_int_equal(ncclx_ep_signal_tag(w), tags[a]);
                assert_int_equal(ncclx_ep_signal_op(w), ops[b]);
                assert_int_equal(ncclx_ep_signal_count(w), counts[c]);
            }
        }
    }
    const uint64_t seqs[] = {0ull,           1ull,           0xfffffffeull, 0xffffffffull,
                             0x100000000ull, 0x1fffffffdull, ~0ull - 1};
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        assert_true(ncclx_ep_seq_tag(seqs[i]) != 0u);
        /* two operations of one parity never share a tag */
        assert_true(ncclx_ep_seq_tag(seqs[i]) != ncclx_ep_seq_tag(seqs[i] + 2));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_word_round_trip),
        cmocka_unit_test(test_entry_word_full_slot_field),
        cmocka_unit_test(test_entry_word_empty_and_rank_major),
        cmocka_unit_test(test_token_word_round_trip),
        cmocka_unit_test(test_signal_word_round_trip),
    };
    return cmocka_run_group_tests_name("ep_ll_wire", tests, NULL, NULL);
}
