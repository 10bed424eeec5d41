/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The LL wire format, in one place for host C (lib/plan/ep_dims.c sizes the receive areas with it,
 * lib/ep/ep_ll_args.c describes each operation with it) and for the kernels (which read and
 * write it).  docs/ep-ll.md lists every protocol word with its writer, reader and phase.
 *
 * A dispatch message, one per (source token, destination rank):
 *   [0, 16)                 header: source token, rank order, operation word, sequence tag
 *   [16, payload_offset)    max_topk entries of (int32 entry word, float32 weight): the entry
 *                           word is ncclx_ep_pack_entry(expert id, expert slot), -1 for none
 *   [payload_offset, ...)   the token row; the scale row follows at scale_offset(row bytes)
 * A signal word (uint64), one per (parity, source) and direction:
 *   bits 63..32  sequence tag of the operation (never 0: a zeroed word never matches)
 *   bits 31..12  operation word (what the sender used: top-k, layout, recipe, dtypes, scale
 *                row bytes)
 *   bits 11..0   dispatch: messages sent to this destination; combine: 0
 */
#ifndef NCCLX_KERNELS_EP_LL_WIRE_H_
#define NCCLX_KERNELS_EP_LL_WIRE_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/plan.h>

#if defined(__CUDACC__)
#define NCCLX_WIRE_FN static __host__ __device__ __forceinline__
#else
#define NCCLX_WIRE_FN static inline
#endif

#ifdef __cplusplus
#define NCCLX_WIRE_ASSERT(cond, why) static_assert(cond, why)
#else
#define NCCLX_WIRE_ASSERT(cond, why) _Static_assert(cond, why)
#endif

#define NCCLX_EP_MSG_HEADER_BYTES 16u
#define NCCLX_EP_TOPK_ENTRY_BYTES 8u  /* int32 expert id + float32 weight */
#define NCCLX_EP_SIGNAL_BYTES     16u /* per (parity, source): dispatch word + combine word */

/** The 16-byte message header. */
typedef struct {
    int32_t token; /* source token index */
    int32_t order; /* rank order of this destination among the token's destinations */
    uint32_t op;   /* operation word of the sender (ncclx_ep_op_word) */
    uint32_t tag;  /* sequence tag of the operation (ncclx_ep_seq_tag) */
} ncclx_ep_msg_header_t;
NCCLX_WIRE_ASSERT(sizeof(ncclx_ep_msg_header_t) == NCCLX_EP_MSG_HEADER_BYTES,
                  "the message header is 16 bytes");

NCCLX_WIRE_FN size_t ncclx_ep_align16(size_t bytes)
{
    return (bytes + 15) & ~(size_t)15;
}

/** Offset of the token row in a message of a group with max_topk entries. */
NCCLX_WIRE_FN size_t ncclx_ep_msg_payload_offset(uint32_t max_topk)
{
    return NCCLX_EP_MSG_HEADER_BYTES +
           ncclx_ep_align16((size_t)max_topk * NCCLX_EP_TOPK_ENTRY_BYTES);
}

/** Offset of the scale row from the start of the payload, for token rows of row_bytes. */
NCCLX_WIRE_FN size_t ncclx_ep_msg_scale_offset(size_t row_bytes)
{
    return ncclx_ep_align16(row_bytes);
}

/** Bytes of one message slot: header, entries and the largest payload (16-byte multiple). */
NCCLX_WIRE_FN size_t ncclx_ep_msg_bytes(uint32_t max_topk, size_t payload_bytes)
{
    return ncclx_ep_msg_payload_offset(max_topk) + ncclx_ep_align16(payload_bytes);
}

/**
 * Count board (LL zero copy): one per (parity, source) in every rank's arena.  The source
 * stores its routing's row count of every expert (int32 [E], from byte 16), then, with release,
 * the word at byte 0: ncclx_ep_signal_word(tag, op, 0) of its dispatch.  Every rank then knows,
 * before any row moves, where each (expert, source)'s rows start in the expert's output.
 */
#define NCCLX_EP_BOARD_COUNTS_OFFSET 16u
NCCLX_WIRE_FN size_t ncclx_ep_board_bytes(uint32_t num_experts)
{
    return ncclx_ep_align16(NCCLX_EP_BOARD_COUNTS_OFFSET + (size_t)num_experts * 4);
}

/* A received message's token and rank order, packed in one int32 of the handle (recv_tok);
 * NCCLX_EP_TOKEN_DROPPED marks a message that was refused (wrong operation or tag). */
#define NCCLX_EP_TOKEN_BITS    16
#define NCCLX_EP_TOKEN_DROPPED (-1)
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_LL_TOKENS_PER_RANK <= (1u << NCCLX_EP_TOKEN_BITS),
                  "a token index fits in the low 16 bits of recv_tok");
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_TOPK < (1u << 15), "a rank order fits in the high 15 bits");

NCCLX_WIRE_FN int32_t ncclx_ep_pack_token(int32_t token, int32_t order)
{
    return token | (order << NCCLX_EP_TOKEN_BITS);
}

NCCLX_WIRE_FN int32_t ncclx_ep_packed_token(int32_t packed)
{
    return packed & ((1 << NCCLX_EP_TOKEN_BITS) - 1);
}

NCCLX_WIRE_FN int32_t ncclx_ep_packed_order(int32_t packed)
{
    return packed >> NCCLX_EP_TOKEN_BITS;
}

/* A top-k entry's word in a message: the expert id in the low 16 bits and, expert-major, the
 * token's index among the sender's tokens to that expert (its expert slot, from the routing) in
 * bits 30..16, so that the receiver knows where the row goes before it moves (the sender's count
 * per expert gives the rest); -1 for an empty entry.  Rank-major the slot is 0: the word is the
 * expert id. */
#define NCCLX_EP_ENTRY_EXPERT_BITS 16
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_EXPERTS <= (1u << NCCLX_EP_ENTRY_EXPERT_BITS),
                  "an expert id fits in the low 16 bits of an entry word");
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_LL_TOKENS_PER_RANK <= (1u << 15),
                  "an expert slot fits in bits 30..16 of an entry word");

NCCLX_WIRE_FN int32_t ncclx_ep_pack_entry(int32_t expert, int32_t slot)
{
    return expert < 0 ? -1
                      : (int32_t)((uint32_t)expert | (uint32_t)slot << NCCLX_EP_ENTRY_EXPERT_BITS);
}

NCCLX_WIRE_FN int32_t ncclx_ep_entry_expert(int32_t word)
{
    return word < 0 ? -1 : word & ((1 << NCCLX_EP_ENTRY_EXPERT_BITS) - 1);
}

NCCLX_WIRE_FN int32_t ncclx_ep_entry_slot(int32_t word)
{
    return word < 0 ? -1 : word >> NCCLX_EP_ENTRY_EXPERT_BITS;
}

/*
 * Sequence numbers are 64-bit and never wrap in practice; the tag in signals and headers is
 * 32 bits, in [1, 2^32 - 1]: never 0, so a zeroed signal or header never matches, and two
 * operations of the same parity (sequence numbers two apart) never share a tag.
 */
NCCLX_WIRE_FN uint32_t ncclx_ep_seq_tag(uint64_t seq)
{
    return (uint32_t)(seq % 0xffffffffull) + 1u;
}

/*
 * The operation word: what must agree between a sender and a receiver for the bytes to mean
 * the same on both sides.  Dispatch: top-k, expert-major, recipe (the NCCLX_EP_RECIPE_* flag),
 * token dtype, scale row bytes and scale dtype (NCCLX_NUM_DATA_TYPES: no scales; QUANT_FWD
 * forwards the caller's scale rows as bytes, so ranks that disagree on their size or type
 * would read each other's scales wrongly).  Combine: the handle's dispatch word and the
 * combine dtype.  Every field enters whole and is mixed into NCCLX_EP_OP_BITS (20) bits (a
 * 64-bit finalizer, as the HT word does): two different operations share a word with odds of
 * 2^-20, instead of whenever a truncated field wraps.
 */
#define NCCLX_EP_OP_BITS    20
#define NCCLX_EP_COUNT_BITS 12
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_TOPK < 256, "top-k fits in 8 bits of the operation key");
NCCLX_WIRE_ASSERT(NCCLX_NUM_DATA_TYPES < 32, "a dtype (or none) fits in 5 bits of the key");
NCCLX_WIRE_ASSERT(NCCLX_EP_RECIPE_MXFP8 < 16, "a recipe flag fits in 4 bits");
NCCLX_WIRE_ASSERT(NCCLX_EP_MAX_LL_TOKENS_PER_RANK < (1u << NCCLX_EP_COUNT_BITS),
                  "a message count fits in the signal's count field");

/* A 64-bit finalizer (MurmurHash3's), cut to the operation word's bits. */
NCCLX_WIRE_FN uint32_t ncclx_ep_op_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return (uint32_t)x & ((1u << NCCLX_EP_OP_BITS) - 1u);
}

NCCLX_WIRE_FN uint32_t ncclx_ep_op_word(uint32_t topk, int expert_major, uint32_t recipe,
                                        uint32_t token_dtype, uint64_t scale_bytes,
                                        uint32_t scale_dtype)
{
    return ncclx_ep_op_mix((uint64_t)(topk & 0xffu) | (uint64_t)(expert_major != 0) << 8 |
                           (uint64_t)(recipe & 0xfu) << 9 | (uint64_t)(token_dtype & 0x1fu) << 13 |
                           (uint64_t)(scale_dtype & 0x1fu) << 18 |
                           (uint64_t)(scale_bytes & 0xffffffffffull) << 23);
}

NCCLX_WIRE_FN uint32_t ncclx_ep_combine_op_word(uint32_t dispatch_op, uint32_t dtype)
{
    /* Bit 63 keeps a combine's key apart from every dispatch key. */
    return ncclx_ep_op_mix((uint64_t)dispatch_op | (uint64_t)(dtype & 0x1fu) << 20 | 1ull << 63);
}

NCCLX_WIRE_FN uint64_t ncclx_ep_signal_word(uint32_t tag, uint32_t op, uint32_t count)
{
    return (uint64_t)tag << 32 | (uint64_t)op << NCCLX_EP_COUNT_BITS | count;
}

NCCLX_WIRE_FN uint32_t ncclx_ep_signal_tag(uint64_t word)
{
    return (uint32_t)(word >> 32);
}

NCCLX_WIRE_FN uint32_t ncclx_ep_signal_op(uint64_t word)
{
    return (uint32_t)(word >> NCCLX_EP_COUNT_BITS) & ((1u << NCCLX_EP_OP_BITS) - 1u);
}

NCCLX_WIRE_FN uint32_t ncclx_ep_signal_count(uint64_t word)
{
    return (uint32_t)word & ((1u << NCCLX_EP_COUNT_BITS) - 1u);
}

/*
 * Combine send progress (groups with an active mask, R >= 2).  Rank r's symmetric evicted
 * words [R] hold r's own evicted flag at index r; index (r + 1) mod R, unused otherwise, holds
 * r's combine send progress: every block of r's combine send stores the operation's tag there
 * before it checks whether r is still in the group, and the grid's last block stores
 * NCCLX_EP_PROGRESS_IDLE once every block's rows are visible.  A rank that evicts r reads it
 * after its eviction is visible: IDLE means no combine row of r can land any more (r's next
 * block will see the eviction); anything else means rows of r may still be on their way, and
 * the evicting rank holds its next combine signal until r's word is IDLE again (see
 * docs/ep-ll.md, "Late rows").
 */
#define NCCLX_EP_PROGRESS_IDLE 0u

NCCLX_WIRE_FN uint32_t ncclx_ep_progress_index(uint32_t rank, uint32_t ranks)
{
    return (rank + 1u) % ranks;
}

/* The progress word of an operation: its tag, never IDLE (a tag is never 0). */
NCCLX_WIRE_FN uint32_t ncclx_ep_progress_busy(uint32_t tag)
{
    return tag;
}

#endif /* NCCLX_KERNELS_EP_LL_WIRE_H_ */
