/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The plain C pieces that the private device state of every kernel folder shares: the block
 * size the EP kernels (LL and HT) are built for, and the arrive counter that LL's, HT's and
 * M2N's state structs (ep_ll.h, ep_ht.h, m2n.h) each embed.  Here, and not in one folder's
 * header, so that no kernel folder includes another's; plain C, so that lib/ and the tests read
 * the states as the kernels do.
 */
#ifndef NCCLX_KERNELS_DEV_STATE_H_
#define NCCLX_KERNELS_DEV_STATE_H_

#define NCCLX_EP_THREADS 512

/* An arrive counter that elects the last block of a grid: count grows by one per block and
 * may wrap; base is where the current launch started (set by the last block of the previous
 * launch), so any grid size and any number of launches elect exactly one block. */
typedef struct {
    unsigned int count;
    unsigned int base;
} ncclx_ep_arrive_t;

#endif /* NCCLX_KERNELS_DEV_STATE_H_ */
