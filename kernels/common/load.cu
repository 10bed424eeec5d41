/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Eager module loading: every kernel file's loader, called once at init.
 */
#include "ep_ht.h"
#include "ep_ll.h"
#include "kernels.h"
#include "m2n.h"

extern "C" cudaError_t ncclx_kernels_load(void)
{
    cudaError_t (*const loaders[])(void) = {ncclx_nccl_kernels_load,   ncclx_ep_ll_route_load,
                                            ncclx_ep_ll_dispatch_load, ncclx_ep_ll_combine_load,
                                            ncclx_ep_ll_mask_load,     ncclx_ep_ht_route_load,
                                            ncclx_ep_ht_rows_load,     ncclx_ep_ht_data_load,
                                            ncclx_m2n_kernels_load,    ncclx_m2n_clear_load};
    cudaError_t err = cudaSuccess;
    for (auto load : loaders) {
        err = err != cudaSuccess ? err : load();
    }
    return err;
}
