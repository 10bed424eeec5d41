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
#include <nccl.h>

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

/**
 * NCCL's device communicator of comm with GIN (kernels/common/net.h): NCCLX_NET_CONTEXTS
 * contexts and `signals` signals per context.  Copied on stream into device_copy (room bytes of
 * device memory, not waited for); *state keeps the host object for ncclx_gin_destroy.  *what
 * names what failed: the call, or the room being too small (ncclInternalError).
 */
ncclResult_t ncclx_gin_create(ncclComm_t comm, int signals, void *device_copy, size_t room,
                              cudaStream_t stream, void **state, const char **what);

/** Destroys what ncclx_gin_create made (collective, as its creation); state NULL: nothing. */
ncclResult_t ncclx_gin_destroy(ncclComm_t comm, void *state);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_H_ */
