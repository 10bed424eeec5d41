/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Programmatic dependent launch (compute capability 9.0 and later): a kernel launched with
 * launch_after(early = true) may be scheduled before the kernel ahead of it in the stream has
 * ended, once every block of that kernel has passed allow_early_launch or exited.  Its blocks
 * then sit resident, and wait_for_previous_grid holds them until the previous grid has ended
 * and its stores are visible.  What this saves is the gap between two dependent kernels (the
 * second one's launch and block scheduling), which is a good part of a small operation's time.
 * Elsewhere (an ordinary launch, an older GPU) both device calls do nothing.
 *
 * Only for a rank that has its GPU to itself: the early blocks hold SMs while they wait, and on
 * a loopback team a peer's kernel that the previous grid waits for could find none.
 */
#ifndef NCCLX_KERNELS_EARLY_LAUNCH_CUH_
#define NCCLX_KERNELS_EARLY_LAUNCH_CUH_

#include <cuda_runtime.h>

namespace ncclx
{

// Lets the successor be scheduled once every block of this grid has called it or ended.  The
// LL sends call it in their last block only, when the others have ended: the successor's blocks
// then spread over idle SMs (triggered at every block's start, they took the first SMs the
// send freed, two to an SM, and a small receive grid ran slower).
__device__ __forceinline__ void allow_early_launch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// First statement of a kernel that may have been launched early: nothing of the previous grid
// (its stores, the group state it advanced) is read before this returns.
__device__ __forceinline__ void wait_for_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Launches kernel<<<blocks, threads, smem, stream>>>(args...), as a programmatic dependent of
// the stream's previous kernel when early is set; a runtime that refuses that gets a plain
// launch.  Returns the launch's status and leaves no error behind (as cudaGetLastError after a
// <<<>>> launch would): the caller reports it.
template <typename... Params, typename... Args>
cudaError_t launch_after(bool early, void (*kernel)(Params...), int blocks, int threads,
                         size_t smem, cudaStream_t stream, const Args &...args)
{
#if CUDART_VERSION < 12030
    early = false; // a programmatic launch inside a graph capture needs CUDA 12.3
#endif
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((unsigned)blocks);
    config.blockDim = dim3((unsigned)threads);
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = early ? &attr : nullptr;
    config.numAttrs = early ? 1 : 0;
    cudaError_t err = cudaLaunchKernelEx(&config, kernel, args...);
    if (err != cudaSuccess && early) {
        (void)cudaGetLastError();
        config.attrs = nullptr;
        config.numAttrs = 0;
        err = cudaLaunchKernelEx(&config, kernel, args...);
    }
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
    }
    return err;
}

} // namespace ncclx

#endif /* NCCLX_KERNELS_EARLY_LAUNCH_CUH_ */
