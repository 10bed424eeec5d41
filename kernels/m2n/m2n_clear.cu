/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The M2N error clear (ncclx_m2n_launch_clear): one thread takes REFUSED and MISMATCH bits off
 * M2N's device error word and publishes what is left to the mapped status, in stream order.
 * Apart from the launch's kernel (m2n.cu), whose protocol it has no part in.
 */
#include "dev_error.cuh"
#include "load_kernels.cuh"
#include "m2n.h"

namespace ncclx
{
namespace m2n
{
namespace
{

constexpr unsigned kRefused = NCCLX_M2N_ERROR_REFUSED;
constexpr unsigned kMismatch = NCCLX_M2N_ERROR_MISMATCH;

struct ClearView {
    ncclx_m2n_state_t *state;
    unsigned *status;
};

__global__ void clear_kernel(ncclx_m2n_state_t *state, unsigned *status, unsigned bits)
{
    const ClearView v = {state, status};
    const unsigned mask = bits & (kRefused | kMismatch);
    const unsigned now = atomicAnd(&state->error, ~mask) & ~mask;
    publish_status(v, now);
}

} // namespace
} // namespace m2n
} // namespace ncclx

extern "C" cudaError_t ncclx_m2n_launch_clear(ncclx_m2n_state_t *state, unsigned int *status,
                                              unsigned int bits, cudaStream_t stream)
{
    ncclx::m2n::clear_kernel<<<1, 1, 0, stream>>>(state, status, bits);
    return cudaGetLastError();
}

extern "C" cudaError_t ncclx_m2n_clear_load(void)
{
    const void *const kernels[] = {reinterpret_cast<const void *>(ncclx::m2n::clear_kernel)};
    return ncclx::load_kernels(kernels, sizeof(kernels) / sizeof(kernels[0]));
}
