/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The extern "C" launchers the host code calls.  Kernels only ever see device pointers and
 * plain structs; they never call the host.  Each launcher returns the CUDA status of the launch.
 */
#ifndef NCCLX_KERNELS_H_
#define NCCLX_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* kernels/common/nccl_dev.cu: NCCL device API glue.  window is an ncclWindow_t. */

/** table[p] = this rank's view of window + offset on LSA peer p, for p < lsa_size. */
cudaError_t ncclx_launch_resolve_peers(void *window, size_t offset, int lsa_size, void **table,
                                       cudaStream_t stream);

/** Loads the module of kernels/common/nccl_dev.cu at init, so that no launch after init loads it
 * lazily (which allocates device memory); each room loads its own (lib/plan/rooms.h). */
cudaError_t ncclx_nccl_kernels_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_H_ */
