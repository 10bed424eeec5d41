/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Asynchronous errors of every kernel folder (LL, HT, M2N): a device error word in the
 * folder's private state, copied to a mapped host status that the host reads.  Generic over
 * the folder's descriptor, here so that no kernel folder includes another's helpers.
 */
#ifndef NCCLX_KERNELS_DEV_ERROR_CUH_
#define NCCLX_KERNELS_DEV_ERROR_CUH_

namespace ncclx
{

// Copies the device error word to the mapped host status until the copy holds what the
// device word holds: concurrent reporters (and a clear) can land in any order, and the one
// that writes last re-reads the word after its write, so no bit is lost.
// G is a descriptor with `status` and `state->error` (LL, HT and M2N).
template <typename G> __device__ __forceinline__ void publish_status(const G &g, unsigned value)
{
    volatile unsigned *status = g.status;
    for (;;) {
        *status = value;
        __threadfence_system();
        const unsigned now = atomicOr(&g.state->error, 0u);
        if (now == value) {
            return;
        }
        value = now;
    }
}

// Records an error for the host (mapped status) and for later kernels (device state).
template <typename G> __device__ __forceinline__ void report_error(const G &g, unsigned bits)
{
    const unsigned old = atomicOr(&g.state->error, bits);
    if ((old & bits) != bits) {
        publish_status(g, old | bits);
    }
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_DEV_ERROR_CUH_ */
