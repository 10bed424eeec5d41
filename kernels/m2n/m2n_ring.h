/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N staging ring, in one place for host C (lib/plan/plan_layout.c sizes the regions with it,
 * lib/m2n/m2n_plan.c gives pairs their channels, the CPU tests replay the protocol with it) and for
 * kernels/m2n/m2n.cu (which moves the bytes).  docs/m2n.md, "Protocol", tells the story.
 *
 * A pair's stream (its boxes end to end) is cut into slices of `slice` bytes; slice k goes
 * through channel k % C of the pair (C = ncclx_m2n_pair_channels), as that channel's round
 * k / C.  Every channel is a ring of NCCLX_M2N_DEPTH slices of the destination's staging, with
 * its own two counters that only grow (rounds filled by the source, rounds freed by the
 * destination), so channels never wait for each other.  Per rank, in symmetric memory:
 *   staging  [source R][channels][NCCLX_M2N_DEPTH][slice]
 *   signals  vote[2][R], then filled[source R][channels], freed[destination R][channels]
 *            then src_tiles[NCCLX_M2N_MAX_TRANSFERS]: on the direct path, this rank's source
 *            tile of each tensor of the launch, for its destinations to read from
 *            then the direct path's table (NCCLX_M2N_DIRECT_WORDS): open (the tag of the launch
 *            whose tiles may be read, or NCCLX_M2N_DIRECT_CLOSED), claims (readers at work),
 *            num_pairs, pairs[NCCLX_M2N_MAX_PEERS][2] and boxes[NCCLX_M2N_MAX_TRANSFERS][8]:
 *            this rank's launch plan, exact, which a destination compares with its own before
 *            it reads a tile (the vote word is only a hash)
 * and in private device memory sent[R][channels], received[R][channels]: the rounds moved
 * since init, the bases of filled and freed.
 *
 * The direct path (every rank on one GPU, so every tile is addressable by every rank) keeps the
 * channels and their counters but no ring.  The source's vote already says that its tile is
 * ready, so no destination waits for filled: block `part` of a receiving pair copies its
 * contiguous run of whole slices (ncclx_m2n_direct_range) from the source's tile into its own,
 * then raises freed of its channels by their rounds.  The source's one block of the pair raises
 * filled by the same (so that both paths leave the counters alike) and waits for freed of every
 * channel before its launch ends (the source tile must not change while it is read).
 */
#ifndef NCCLX_KERNELS_M2N_RING_H_
#define NCCLX_KERNELS_M2N_RING_H_

#include <stdint.h>

#include <ncclx/m2n.h> /* NCCLX_M2N_MAX_TRANSFERS */

#if defined(__CUDACC__)
#define NCCLX_RING_FN static __host__ __device__ __forceinline__
#else
#define NCCLX_RING_FN static inline
#endif

/* Slices of one channel's ring: a source may run this many rounds ahead of its destination. */
#define NCCLX_M2N_DEPTH 4u
/* Slices are 128-byte multiples in [MIN, MAX]; the ring prefers PREFERRED-byte slices over
 * more channels when staging is short (a slice is one block's work between two signals). */
#define NCCLX_M2N_MIN_SLICE       4096ull
#define NCCLX_M2N_PREFERRED_SLICE 32768ull
#define NCCLX_M2N_MAX_SLICE       131072ull
/* Channels of one source's ring at a destination (its blocks at each end work them apart). */
#define NCCLX_M2N_MAX_CHANNELS 128u

/* Symmetric signal words per rank of the team: the votes of both parities, filled, freed. */
NCCLX_RING_FN uint64_t ncclx_m2n_signal_words(uint32_t channels)
{
    return 2u + 2ull * channels;
}

/* The direct path's table after src_tiles, in uint64 words: open, claims, num_pairs, then per
 * pair (peer | send << 32 | first_box << 33 | num_boxes << 42, bytes) and per box (entry,
 * begin, bytes, run, pieces[1], offset, stride[0], stride[1]) of this rank's side. */
#define NCCLX_M2N_DIRECT_OPEN      0
#define NCCLX_M2N_DIRECT_CLAIMS    1
#define NCCLX_M2N_DIRECT_NUM_PAIRS 2
#define NCCLX_M2N_DIRECT_PAIRS     3
#define NCCLX_M2N_DIRECT_BOXES     (NCCLX_M2N_DIRECT_PAIRS + 2 * NCCLX_M2N_MAX_PEERS)
#define NCCLX_M2N_DIRECT_BOX_WORDS 8
#define NCCLX_M2N_DIRECT_WORDS \
    (NCCLX_M2N_DIRECT_BOXES + NCCLX_M2N_DIRECT_BOX_WORDS * NCCLX_M2N_MAX_TRANSFERS)
#define NCCLX_M2N_DIRECT_CLOSED (~0ull) /* open: no launch's tiles may be read */

/* The direct path's record of one box of a source's pair (NCCLX_M2N_DIRECT_BOX_WORDS words):
 * the source publishes its own side, a destination builds it from its view of the source's
 * side (its peer_offset and peer strides) and reads only when both are equal, word for word. */
NCCLX_RING_FN void ncclx_m2n_direct_record(uint64_t entry, uint64_t begin, uint64_t bytes,
                                           uint64_t run, uint64_t pieces1, uint64_t offset,
                                           uint64_t stride0, uint64_t stride1, uint64_t *out)
{
    out[0] = entry;
    out[1] = begin;
    out[2] = bytes;
    out[3] = run;
    out[4] = pieces1;
    out[5] = offset;
    out[6] = stride0;
    out[7] = stride1;
}

/* The direct path's first word of a pair: its peer, direction and boxes. */
NCCLX_RING_FN uint64_t ncclx_m2n_direct_pair_word(uint32_t peer, uint32_t send, uint32_t first_box,
                                                  uint32_t num_boxes)
{
    return (uint64_t)peer | (uint64_t)(send != 0) << 32 | (uint64_t)(first_box & 0x1ff) << 33 |
           (uint64_t)(num_boxes & 0x1ff) << 42;
}

/* Bytes of the symmetric signal region of a team of `ranks`: the words of every rank, then the
 * direct path's table of source tiles and its launch plan. */
NCCLX_RING_FN uint64_t ncclx_m2n_signal_bytes(uint32_t ranks, uint32_t channels)
{
    return (ncclx_m2n_signal_words(channels) * ranks + NCCLX_M2N_MAX_TRANSFERS +
            NCCLX_M2N_DIRECT_WORDS) *
           8u;
}

/* Private count words per rank of the team: sent and received. */
NCCLX_RING_FN uint64_t ncclx_m2n_count_words(uint32_t channels)
{
    return 2ull * channels;
}

/* The ring of a plan: staging_bytes of M2N staging shared by `ranks` sources (each at least
 * NCCLX_M2N_DEPTH * NCCLX_M2N_MIN_SLICE bytes, which the plan check guarantees).  Slices of
 * staging / (ranks * DEPTH * MAX_CHANNELS), raised towards PREFERRED and capped at MAX; then as
 * many channels as fit. */
NCCLX_RING_FN void ncclx_m2n_ring_shape(uint64_t staging_bytes, uint32_t ranks, uint64_t *slice,
                                        uint32_t *channels)
{
    const uint64_t per_source = staging_bytes / ranks;
    const uint64_t one_ring = per_source / NCCLX_M2N_DEPTH;
    uint64_t s = per_source / ((uint64_t)NCCLX_M2N_DEPTH * NCCLX_M2N_MAX_CHANNELS);
    uint64_t c;
    if (s < NCCLX_M2N_PREFERRED_SLICE) {
        s = one_ring < NCCLX_M2N_PREFERRED_SLICE ? one_ring : NCCLX_M2N_PREFERRED_SLICE;
    }
    s = s > NCCLX_M2N_MAX_SLICE ? NCCLX_M2N_MAX_SLICE : s;
    s = s / 128 * 128; /* whole cache lines: a slot never starts inside another's line */
    s = s < NCCLX_M2N_MIN_SLICE ? NCCLX_M2N_MIN_SLICE : s;
    c = one_ring / s;
    c = c > NCCLX_M2N_MAX_CHANNELS ? NCCLX_M2N_MAX_CHANNELS : c;
    *slice = s;
    *channels = c < 1 ? 1u : (uint32_t)c;
}

/* Slices of a stream of `bytes` bytes. */
NCCLX_RING_FN uint64_t ncclx_m2n_slices(uint64_t bytes, uint64_t slice)
{
    return (bytes + slice - 1) / slice;
}

/* Channels a pair's stream uses: as many as it has slices, at most the ring's.  A function of
 * the stream and the plan only, so that both ends of the pair agree. */
NCCLX_RING_FN uint32_t ncclx_m2n_pair_channels(uint64_t bytes, uint64_t slice, uint32_t channels)
{
    const uint64_t n = ncclx_m2n_slices(bytes, slice);
    return n < channels ? (uint32_t)n : channels;
}

/* Rounds of channel c of a pair with `slices` slices over C channels (slice k = round * C + c). */
NCCLX_RING_FN uint64_t ncclx_m2n_channel_rounds(uint64_t slices, uint32_t c, uint32_t pair_channels)
{
    return slices > c ? (slices - c + pair_channels - 1) / pair_channels : 0;
}

/* The direct path: the stream bytes [*lo, *hi) that block `part` of a receiving pair's `blocks`
 * copies, whole slices in one contiguous run (one long copy per block, not one per slice), the
 * runs of parts 0 .. blocks - 1 end to end over the stream. */
NCCLX_RING_FN void ncclx_m2n_direct_range(uint64_t bytes, uint64_t slice, uint32_t blocks,
                                          uint32_t part, uint64_t *lo, uint64_t *hi)
{
    const uint64_t slices = ncclx_m2n_slices(bytes, slice);
    const uint64_t a = slices * part / blocks, b = slices * (part + 1) / blocks;
    *lo = a * slice < bytes ? a * slice : bytes;
    *hi = b * slice < bytes ? b * slice : bytes;
}

/* Byte offset, in the destination's staging, of the slot that round `round` (counted in this
 * launch: the vote frees every ring before a launch moves data) of channel c of source `src`
 * fills. */
NCCLX_RING_FN uint64_t ncclx_m2n_slot(uint32_t src, uint32_t c, uint64_t round, uint32_t channels,
                                      uint64_t slice)
{
    return (((uint64_t)src * channels + c) * NCCLX_M2N_DEPTH + round % NCCLX_M2N_DEPTH) * slice;
}

/*
 * Across load/store domains (docs/m2n.md, "Across nodes").  A pair whose peer is in another
 * domain moves its slices through the network transport (kernels/common/net.h) instead of
 * stores: the source packs round j of channel c into its own network staging
 *   net_staging [remote destination][channels][NCCLX_M2N_DEPTH][slice]
 * and puts the slice into the same ring slot at the destination as a store would have filled,
 * with an add of 1 to the destination's `filled` network signal of (source, channel); the
 * destination unpacks and adds 1 to the source's `freed` network signal of (destination,
 * channel); a vote is an 8-byte put with an add to the receiver's `vote` signal of its source.
 * Every round adds exactly 1, so a signal holds the same count as the counter a store would
 * have written (rounds since init).  A receiver numbers the ranks outside its domain 0 ..
 * remote - 1 (ncclx_m2n_remote_index), and its M2N network signals are, from the plan's base:
 *   vote[remote], filled[remote][channels], freed[remote][channels].
 * A send slot is reused DEPTH rounds later, after the destination freed the round it held:
 * the destination saw that slice land, so the put has read it.
 */

/* Network signals of M2N at one rank, with `remote` ranks outside its domain. */
NCCLX_RING_FN uint64_t ncclx_m2n_net_signals(uint32_t remote, uint32_t channels)
{
    return (uint64_t)remote * (1u + 2ull * channels);
}

/* Rank x's index among the ranks outside the domain of rank `viewer` (x is one of them). */
NCCLX_RING_FN uint32_t ncclx_m2n_remote_index(uint32_t lsa_size, uint32_t viewer, uint32_t x)
{
    const uint32_t first = viewer / lsa_size * lsa_size;
    return x < first ? x : x - lsa_size;
}

/* The receiver's signal that counts the votes of `source`. */
NCCLX_RING_FN uint32_t ncclx_m2n_vote_signal(uint32_t base, uint32_t lsa_size, uint32_t receiver,
                                             uint32_t source)
{
    return base + ncclx_m2n_remote_index(lsa_size, receiver, source);
}

/* The receiver's signal that counts the rounds `source` filled on channel c. */
NCCLX_RING_FN uint32_t ncclx_m2n_filled_signal(uint32_t base, uint32_t lsa_size, uint32_t ranks,
                                               uint32_t channels, uint32_t receiver,
                                               uint32_t source, uint32_t c)
{
    const uint32_t remote = ranks - lsa_size;
    return base + remote + ncclx_m2n_remote_index(lsa_size, receiver, source) * channels + c;
}

/* The source's signal that counts the rounds `destination` freed on channel c. */
NCCLX_RING_FN uint32_t ncclx_m2n_freed_signal(uint32_t base, uint32_t lsa_size, uint32_t ranks,
                                              uint32_t channels, uint32_t source,
                                              uint32_t destination, uint32_t c)
{
    const uint32_t remote = ranks - lsa_size;
    return base + remote * (1u + channels) +
           ncclx_m2n_remote_index(lsa_size, source, destination) * channels + c;
}

/* Byte offset, in a source's network staging, of the slot of round `round` of channel c to
 * destination `dst`. */
NCCLX_RING_FN uint64_t ncclx_m2n_net_slot(uint32_t lsa_size, uint32_t src, uint32_t dst, uint32_t c,
                                          uint64_t round, uint32_t channels, uint64_t slice)
{
    return ncclx_m2n_slot(ncclx_m2n_remote_index(lsa_size, src, dst), c, round, channels, slice);
}

#endif /* NCCLX_KERNELS_M2N_RING_H_ */
