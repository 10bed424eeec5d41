/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N kernel's view of one launch (docs/m2n.md, "Protocol"): plain structs filled by
 * lib/m2n/m2n.c and passed by value, so that a captured launch replays exactly what was planned.
 *
 * The staging ring, the signal words and the round counts are laid out by m2n_ring.h; a vote
 * word is (launch number + 1) << 32 | the rank's vote word, by launch parity.  Private device
 * memory: ncclx_m2n_state_t.
 */
#ifndef NCCLX_KERNELS_M2N_H_
#define NCCLX_KERNELS_M2N_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <ncclx/m2n.h>

#include "dev_state.h" /* ncclx_ep_arrive_t */
#include "m2n_ring.h"
#include "net.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLX_M2N_THREADS 512
/* The vote word's bit of a rank that refuses the launch (its tile error). */
#define NCCLX_M2N_VOTE_REFUSE 0x80000000u

/* Private device state (NCCLX_M2N_STATE_BYTES). */
typedef struct {
    unsigned long long seq; /* launches so far: every rank launches every call */
    unsigned int error;     /* NCCLX_M2N_ERROR_* bits, published to the mapped status */
    unsigned int reserved;
    ncclx_ep_arrive_t arrive; /* elects the launch's last block */
} ncclx_m2n_state_t;

/* One box of a pair's stream, this rank's side: `bytes` bytes at stream offset `begin`, in
 * pieces[0] x pieces[1] runs of `run` bytes; piece (a, b) starts at tile + a * stride0 +
 * b * stride1. */
typedef struct {
    char *tile;
    unsigned long long run, pieces1, stride0, stride1;
    unsigned long long begin, bytes;
    /* The direct path's receiving end: the source's tile is its src_tiles[entry] + peer_offset,
     * piece (a, b) at + a * peer_stride0 + b * peer_stride1. */
    unsigned long long peer_offset, peer_stride0, peer_stride1;
    int entry, reserved;
} ncclx_m2n_box_desc_t;

/* One (peer, direction) of the launch: its boxes, its channels, and the blocks that move them
 * (block `part` of the pair works channels part, part + blocks, ...). */
typedef struct {
    int peer, send; /* send: pack into the peer's ring; else unpack from mine */
    int first_box, num_boxes;
    int first_block, blocks;
    int channels, reserved;   /* m2n_ring.h's ncclx_m2n_pair_channels */
    unsigned long long bytes; /* the stream: the end of its last box */
} ncclx_m2n_pair_desc_t;

typedef struct {
    int rank, ranks;
    int num_pairs, blocks; /* grid */
    unsigned int word;     /* this rank's vote: the launch's hash, | NCCLX_M2N_VOTE_REFUSE */
    unsigned int reserved;
    unsigned long long slice; /* bytes of one round of a channel */
    unsigned int channels;    /* of a source's ring (m2n_ring.h) */
    int direct;               /* tile to tile (every rank on this GPU), no ring */
    int one_gpu;              /* every rank on this GPU: gpu-scope acquire and release */
    int reserved2;
    unsigned long long timeout_ns;
    void *const *peers;           /* device: symmetric arena base of each rank of this
                                     rank's load/store domain, peers[r - lsa_base] */
    int lsa_base, lsa_size;       /* this rank's domain: ranks lsa_base .. + lsa_size - 1 */
    size_t net_staging;           /* symmetric: slices packed for other domains */
    unsigned int net_signal_base; /* the first of M2N's network signals (m2n_ring.h) */
    unsigned int reserved4;
    ncclx_net_desc_t net;                /* the transport to other domains (NONE on one) */
    size_t staging, signals;             /* offsets in the symmetric arena */
    ncclx_m2n_state_t *state;            /* private device */
    unsigned long long *sent, *received; /* private device, [R][channels] each */
    unsigned int *status;                /* device view of the mapped status */
    ncclx_m2n_pair_desc_t pairs[NCCLX_M2N_MAX_PEERS];
    ncclx_m2n_box_desc_t boxes[NCCLX_M2N_MAX_TRANSFERS];
    int num_entries; /* tensors of the launch */
    int reserved3;
    const void *src_tiles[NCCLX_M2N_MAX_TRANSFERS]; /* direct: this rank's source tile, or NULL */
} ncclx_m2n_launch_t;

/** Enqueues launch l (every rank launches every call, also with no pair). */
cudaError_t ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);

/** Clears `bits` (REFUSED and MISMATCH only: a TIMEOUT stays) of the device state and
 *  publishes the rest to the mapped status, in stream order. */
cudaError_t ncclx_m2n_launch_clear(ncclx_m2n_state_t *state, unsigned int *status,
                                   unsigned int bits, cudaStream_t stream);

/** Loads the module of kernels/m2n/m2n.cu (M2N's room calls it at init). */
cudaError_t ncclx_m2n_kernels_load(void);

/** Loads the module of kernels/m2n/m2n_clear.cu (M2N's room calls it at init). */
cudaError_t ncclx_m2n_clear_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_M2N_H_ */
