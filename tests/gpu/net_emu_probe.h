/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A probe of the network emulator's ordering rule (tests/gpu/net_emu_probe.cu, linked into
 * test_net_emu, not into libncclx.a): a signal must become visible only after every put posted
 * before it to the same (context, peer), even one that another warp is holding or applying at
 * that moment.
 */
#ifndef NCCLX_TEST_NET_EMU_PROBE_H_
#define NCCLX_TEST_NET_EMU_PROBE_H_

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the other warp is doing with the held put when the signal is posted. */
typedef enum {
    NCCLX_PROBE_APPLYING = 0, /* it claimed the put (state 3) and copies it after a delay */
    NCCLX_PROBE_FILLING = 1,  /* it is still writing the slot (state 1), held after a delay */
} ncclx_probe_race_t;

/**
 * One block, three warps, on a one-rank emulated network n (chaos on) whose held slot `slot`
 * of context 0, peer 0, is in state 2 with a put of bytes from src_off to dst_off:
 *   warp 0 plays the other warp (race): it takes the slot (state 3, or 1), tells warp 1, then
 *          after delay_ns copies the put and frees the slot (or marks it held);
 *   warp 1 posts a signal without payload to peer 0 (net_put_signal_warp, add 1);
 *   warp 2 is the receiver: it waits for the signal, then copies the destination bytes to
 *          `seen` (device, bytes long).
 * *status (device) gets 0, or 1 if the receiver gave up after a second.
 */
cudaError_t ncclx_probe_signal_race(const ncclx_net_desc_t *n, int slot, ncclx_probe_race_t race,
                                    size_t dst_off, size_t src_off, size_t bytes,
                                    unsigned long long delay_ns, unsigned char *seen, int *status);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_TEST_NET_EMU_PROBE_H_ */
