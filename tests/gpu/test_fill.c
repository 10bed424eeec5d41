/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The pattern-fill kernel against a CPU reference: aligned and unaligned starts and lengths,
 * poisoned surroundings untouched, fresh random patterns, eager and in CUDA graph replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu/fill_kernel.h"
#include "ncclx_test.h"

#define BUF_BYTES (1u << 20)
#define POISON    0xA5

static unsigned char host[BUF_BYTES];

#define CUDA_OK(call) assert_int_equal((call), cudaSuccess)

static void check_region(const unsigned char *dev, size_t off, size_t len, uint32_t pattern)
{
    CUDA_OK(cudaMemcpy(host, dev, BUF_BYTES, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < BUF_BYTES; i++) {
        unsigned char want = POISON;
        if (i >= off && i < off + len) {
            want = (unsigned char)(pattern >> (8 * ((uintptr_t)(dev + i) & 3)));
        }
        if (host[i] != want) {
            fail_msg("byte %zu (fill at %zu, %zu bytes, pattern 0x%08x): got 0x%02x want 0x%02x", i,
                     off, len, pattern, host[i], want);
        }
    }
}

static void test_fill_eager(void **state)
{
    (void)state;
    static const size_t offsets[] = {0, 1, 3, 4, 15, 16, 17, 4093};
    static const size_t lengths[] = {0, 1, 2, 5, 15, 16, 31, 4096, 65537, 500000};
    unsigned char *dev = NULL;
    CUDA_OK(cudaMalloc((void **)&dev, BUF_BYTES));
    for (size_t o = 0; o < sizeof(offsets) / sizeof(offsets[0]); o++) {
        for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            uint32_t pattern = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
            CUDA_OK(cudaMemset(dev, POISON, BUF_BYTES));
            CUDA_OK(ncclx_launch_fill(dev + offsets[o], lengths[l], pattern, 0));
            CUDA_OK(cudaDeviceSynchronize());
            check_region(dev, offsets[o], lengths[l], pattern);
        }
    }
    CUDA_OK(cudaFree(dev));
}

static void test_fill_graph_replay(void **state)
{
    (void)state;
    unsigned char *dev = NULL;
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    uint32_t pattern = ((uint32_t)rand() << 16) ^ (uint32_t)rand();
    CUDA_OK(cudaMalloc((void **)&dev, BUF_BYTES));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(ncclx_launch_fill(dev + 7, 100003, pattern, stream));
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 10; replay++) {
        CUDA_OK(cudaMemset(dev, POISON, BUF_BYTES));
        CUDA_OK(cudaDeviceSynchronize());
        CUDA_OK(cudaGraphLaunch(exec, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        check_region(dev, 7, 100003, pattern);
    }
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(stream));
    CUDA_OK(cudaFree(dev));
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_eager),
        cmocka_unit_test(test_fill_graph_replay),
    };
    printf("seed %u\n", seed);
    srand(seed);
    return cmocka_run_group_tests_name("gpu_fill", tests, NULL, NULL);
}
