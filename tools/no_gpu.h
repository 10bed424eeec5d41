/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the tools say when no GPU can be used.  The CUDA runtime's own words ("CUDA driver
 * version is insufficient for CUDA runtime version", also printed when there is no driver at
 * all) do not tell a user what is missing nor what still works; these do.
 */
#ifndef NCCLX_TOOLS_NO_GPU_H_
#define NCCLX_TOOLS_NO_GPU_H_

#include <stdio.h>

#include <cuda_runtime_api.h>

/* Without initializing CUDA (the loopback team sets CUDA_DEVICE_MAX_CONNECTIONS, which only
 * counts before that): the reason when there is no NVIDIA driver at all, else NULL. */
static inline const char *ncclx_tool_no_driver(void)
{
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
        return "no NVIDIA driver is installed (or loaded), so CUDA sees no GPU";
    }
    return NULL;
}

/* Why no CUDA device can be used, in the user's words, or NULL when that is not the problem.
 * Initializes CUDA: call it before the library only where that does not matter, or after a
 * failure. */
static inline const char *ncclx_tool_no_gpu(void)
{
    const char *no_driver = ncclx_tool_no_driver();
    int count = 0;
    cudaError_t err;
    if (no_driver != NULL) {
        return no_driver;
    }
    err = cudaGetDeviceCount(&count);
    (void)cudaGetLastError(); /* not sticky: leave no error behind for the caller */
    if (err == cudaErrorInsufficientDriver) {
        return "the NVIDIA driver is older than the CUDA runtime this program was built with "
               "(update the driver)";
    }
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        return "no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    }
    return NULL;
}

/* The explanation: what is wrong, what the tool needs, and what works without a GPU. */
static inline void ncclx_tool_explain_no_gpu(const char *tool, const char *needs,
                                             const char *reason)
{
    fprintf(stderr,
            "%s: no usable GPU: %s.\n"
            "%s: %s needs an NVIDIA GPU and its driver.  Without one, tools/ncclx-plan (what a "
            "plan costs per rank) and tools/ncclx-info (--env, --gpu-busid ID, --topology FILE "
            "--gpu-busid ID) still work.\n",
            tool, reason, tool, needs);
}

#endif /* NCCLX_TOOLS_NO_GPU_H_ */
