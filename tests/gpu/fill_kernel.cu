/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Pattern fill for the GPU tests (not part of libncclx.a): poisons buffers in stream order,
 * capturable in a CUDA graph.
 */
#include "fill_kernel.h"

namespace
{

constexpr int kFillThreads = 256;
constexpr int kFillMaxBlocks = 1024;

// 16-byte stores for the aligned body, byte stores for the unaligned head and tail.
__global__ void ncclxFillKernel(unsigned char *dst, size_t bytes, uint32_t pattern)
{
    const size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t misalign = (16 - ((uintptr_t)dst & 15)) & 15;
    const size_t head = misalign < bytes ? misalign : bytes;
    const size_t body_vectors = (bytes - head) / 16;
    const uint4 vector = make_uint4(pattern, pattern, pattern, pattern);
    // Byte i of the buffer always gets byte ((address of i) % 4) of the pattern.
    auto byte_at = [&](size_t i) -> unsigned char {
        return (unsigned char)(pattern >> (8 * ((uintptr_t)(dst + i) & 3)));
    };
    uint4 *body = reinterpret_cast<uint4 *>(dst + head);
    for (size_t i = tid; i < body_vectors; i += stride) {
        body[i] = vector;
    }
    for (size_t i = tid; i < head; i += stride) {
        dst[i] = byte_at(i);
    }
    for (size_t i = head + body_vectors * 16 + tid; i < bytes; i += stride) {
        dst[i] = byte_at(i);
    }
}

} // namespace

extern "C" cudaError_t ncclx_launch_fill(void *dst, size_t bytes, uint32_t pattern,
                                         cudaStream_t stream)
{
    if (bytes == 0) {
        return cudaSuccess;
    }
    size_t blocks = (bytes / 16 + kFillThreads - 1) / kFillThreads;
    blocks = blocks < 1 ? 1 : (blocks > kFillMaxBlocks ? kFillMaxBlocks : blocks);
    ncclxFillKernel<<<(unsigned)blocks, kFillThreads, 0, stream>>>(
        static_cast<unsigned char *>(dst), bytes, pattern);
    return cudaGetLastError();
}
