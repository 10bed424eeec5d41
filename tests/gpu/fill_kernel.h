/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * A pattern-fill kernel for the GPU tests (tests/gpu/fill_kernel.cu, linked into the test
 * programs that use it, not into libncclx.a).
 */
#ifndef NCCLX_TEST_FILL_KERNEL_H_
#define NCCLX_TEST_FILL_KERNEL_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Fills bytes of device memory at dst with the 32-bit pattern: the byte at address a gets
 * byte (a % 4) of pattern (little endian), so every aligned 32-bit word reads back as pattern
 * whatever the alignment of dst.  Capturable in a CUDA graph.
 */
cudaError_t ncclx_launch_fill(void *dst, size_t bytes, uint32_t pattern, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_TEST_FILL_KERNEL_H_ */
