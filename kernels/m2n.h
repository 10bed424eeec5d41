/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N kernel's view of one launch (docs/m2n.md, "Protocol"): plain structs filled by
 * lib/m2n.c and passed by value, so that a captured launch replays exactly what was planned.
 *
 * Symmetric memory of the context's M2N engine on every rank (same offsets everywhere):
 *   staging  [R][NCCLX_M2N_DEPTH][chunk]: the ring of slices source rank s writes into
 *   signals  vote[2][R]: (launch number + 1) << 32 | the source's vote word, by launch parity
 *            filled[R]:  rounds source s has written into my ring (since init)
 *            freed[R]:   rounds destination d has read out of its ring slot of mine
 * Private device memory: ncclx_m2n_state_t, then sent[R] and received[R], the rounds this rank
 * has sent to / received from each rank since init (the bases of filled and freed).
 */
#ifndef NCCLX_KERNELS_M2N_H_
#define NCCLX_KERNELS_M2N_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <ncclx/m2n.h>

#include "ep_ll.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLX_M2N_THREADS 512
/* Slices of a source's ring at a destination: a source may run this many rounds ahead. */
#define NCCLX_M2N_DEPTH 4
/* Rounds stay at most this large, so that a slice is read back while it is still in L2. */
#define NCCLX_M2N_MAX_CHUNK (2ull << 20)
/* A plan whose staging leaves rounds smaller than this is refused. */
#define NCCLX_M2N_MIN_CHUNK 4096ull
/* The vote word's bit of a rank that refuses the launch (its tile error). */
#define NCCLX_M2N_VOTE_REFUSE 0x80000000u

/* Private device state (NCCLX_M2N_STATE_BYTES). */
typedef struct {
    unsigned long long seq; /* launches so far: every rank launches every call */
    unsigned int error;     /* NCCLX_M2N_ERROR_* bits, published to the mapped status */
    unsigned int reserved;
    ncclx_ep_arrive_t arrive; /* elects the launch's last block */
    /* Blocks done with round j of pair p, at [p][j % NCCLX_M2N_DEPTH]: the blocks of one end
     * of a pair occupy at most NCCLX_M2N_DEPTH consecutive rounds at once (a block enters
     * round j only once the other end has finished round j - DEPTH, which needed every block
     * of this end), so rounds that share a counter never overlap. */
    unsigned int round_arrive[NCCLX_M2N_MAX_PEERS][NCCLX_M2N_DEPTH];
} ncclx_m2n_state_t;

/* One box of a pair's stream, this rank's side: `bytes` bytes at stream offset `begin`, in
 * pieces[0] x pieces[1] runs of `run` bytes; piece (a, b) starts at tile + a * stride0 +
 * b * stride1. */
typedef struct {
    char *tile;
    unsigned long long run, pieces1, stride0, stride1;
    unsigned long long begin, bytes;
} ncclx_m2n_box_desc_t;

/* One (peer, direction) of the launch: its boxes, and the blocks that move it. */
typedef struct {
    int peer, send; /* send: pack into the peer's ring; else unpack from mine */
    int first_box, num_boxes;
    int first_block, blocks;
    unsigned long long bytes; /* the stream: the end of its last box */
} ncclx_m2n_pair_desc_t;

typedef struct {
    int rank, ranks;
    int num_pairs, blocks; /* grid */
    unsigned int word;     /* this rank's vote: the launch's hash, | NCCLX_M2N_VOTE_REFUSE */
    unsigned int reserved;
    unsigned long long chunk; /* bytes of one round (a slice) */
    unsigned long long timeout_ns;
    void *const *peers;                  /* device: symmetric arena base of each rank */
    size_t staging, signals;             /* offsets in the symmetric arena */
    ncclx_m2n_state_t *state;            /* private device */
    unsigned long long *sent, *received; /* private device, [R] each */
    unsigned int *status;                /* device view of the mapped status */
    ncclx_m2n_pair_desc_t pairs[NCCLX_M2N_MAX_PEERS];
    ncclx_m2n_box_desc_t boxes[NCCLX_M2N_MAX_TRANSFERS];
} ncclx_m2n_launch_t;

/** Enqueues launch l (every rank launches every call, also with no pair). */
cudaError_t ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);

/** Clears the REFUSED and MISMATCH bits of the device state (a TIMEOUT stays). */
cudaError_t ncclx_m2n_launch_clear(ncclx_m2n_state_t *state, unsigned int *status,
                                   cudaStream_t stream);

/** Loads the module of kernels/m2n.cu (see ncclx_kernels_load). */
cudaError_t ncclx_m2n_kernels_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_M2N_H_ */
