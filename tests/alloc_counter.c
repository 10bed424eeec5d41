/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The --wrap targets behind tests/alloc_counter.h.  Each wrapper counts (when armed) and
 * calls the real function.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "alloc_counter.h"

static atomic_int armed;
static atomic_size_t calls;
static const char *_Atomic first_name = "";

static void count(const char *name)
{
    if (atomic_load(&armed)) {
        if (atomic_fetch_add(&calls, 1) == 0) {
            atomic_store(&first_name, name);
        }
    }
}

void ncclx_test_alloc_arm(void)
{
    atomic_store(&calls, 0);
    atomic_store(&first_name, "");
    atomic_store(&armed, 1);
}

size_t ncclx_test_alloc_disarm(void)
{
    atomic_store(&armed, 0);
    return atomic_load(&calls);
}

const char *ncclx_test_alloc_first(void)
{
    return atomic_load(&first_name);
}

/* Declarations of the real functions and the wrappers (the linker provides __real_*). */
#define WRAP1(ret, name, t1)     \
    ret __real_##name(t1);       \
    ret __wrap_##name(t1 a);     \
    ret __wrap_##name(t1 a)      \
    {                            \
        count(#name);            \
        return __real_##name(a); \
    }
#define WRAP2(ret, name, t1, t2)    \
    ret __real_##name(t1, t2);      \
    ret __wrap_##name(t1 a, t2 b);  \
    ret __wrap_##name(t1 a, t2 b)   \
    {                               \
        count(#name);               \
        return __real_##name(a, b); \
    }
#define WRAP3(ret, name, t1, t2, t3)     \
    ret __real_##name(t1, t2, t3);       \
    ret __wrap_##name(t1 a, t2 b, t3 c); \
    ret __wrap_##name(t1 a, t2 b, t3 c)  \
    {                                    \
        count(#name);                    \
        return __real_##name(a, b, c);   \
    }

WRAP1(void *, malloc, size_t)
WRAP2(void *, calloc, size_t, size_t)
WRAP2(void *, realloc, void *, size_t)
WRAP2(void *, aligned_alloc, size_t, size_t)
WRAP3(int, posix_memalign, void **, size_t, size_t)
WRAP2(cudaError_t, cudaMalloc, void **, size_t)
WRAP3(cudaError_t, cudaMallocAsync, void **, size_t, cudaStream_t)
WRAP2(cudaError_t, cudaMallocHost, void **, size_t)
WRAP3(cudaError_t, cudaHostAlloc, void **, size_t, unsigned int)
WRAP3(cudaError_t, cudaMallocManaged, void **, size_t, unsigned int)
WRAP2(ncclResult_t, ncclMemAlloc, void **, size_t)
