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

/**
 * Loads every libncclx kernel module now, so that no launch after init triggers lazy module
 * loading (which allocates device memory).
 */
cudaError_t ncclx_kernels_load(void);

/* kernels/nccl_dev.cu: NCCL device API glue.  comm is an ncclComm_t, window an ncclWindow_t;
 * the int results are ncclResult_t values.  The device communicator lives in caller storage
 * of NCCLX_DEVCOMM_STORAGE_BYTES, aligned to 16. */
#define NCCLX_DEVCOMM_STORAGE_BYTES 1024

/** ncclDevCommCreate with lsa_barrier_count LSA barriers, into storage. */
int ncclx_devcomm_create(void *comm, int lsa_barrier_count, void *storage);

/** ncclDevCommDestroy of the device communicator in storage. */
int ncclx_devcomm_destroy(void *comm, const void *storage);

/** The LSA team size recorded in the device communicator. */
int ncclx_devcomm_lsa_size(const void *storage);

/** table[p] = this rank's view of window + offset on LSA peer p, for p < lsa_size. */
cudaError_t ncclx_launch_resolve_peers(void *window, size_t offset, int lsa_size, void **table,
                                       cudaStream_t stream);

/** Loads the module of kernels/nccl_dev.cu (see ncclx_kernels_load). */
cudaError_t ncclx_nccl_kernels_load(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_H_ */
