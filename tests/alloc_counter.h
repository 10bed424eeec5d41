/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Allocator counting for tests.  A test linked with $(NCCLX_ALLOC_WRAP_FLAGS) routes every
 * call that it or libncclx.a makes to the host malloc family, cudaMalloc*, cudaHostAlloc,
 * cudaMallocHost and ncclMemAlloc through counters.  Arm the counters after init, run the hot
 * path, and assert that nothing allocated.
 */
#ifndef NCCLX_TEST_ALLOC_COUNTER_H_
#define NCCLX_TEST_ALLOC_COUNTER_H_

#include <stddef.h>

/** Starts counting from zero. */
void ncclx_test_alloc_arm(void);

/** Stops counting; returns the number of allocator calls since ncclx_test_alloc_arm(). */
size_t ncclx_test_alloc_disarm(void);

/** Name of the first allocator called while armed ("" if none). */
const char *ncclx_test_alloc_first(void);

#endif /* NCCLX_TEST_ALLOC_COUNTER_H_ */
