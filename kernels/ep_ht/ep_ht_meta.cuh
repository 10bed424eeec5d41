/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The per-row metadata of the HT data path, which the push (ep_ht_data.cu) and, across
 * load/store domains, the relay (ep_ht_net.cu) write alike: the dispatch rows' top-k entries,
 * the combine rows' weight gradients, and where the entries sit in a token packed for a relay.
 */
#ifndef NCCLX_KERNELS_EP_HT_META_CUH_
#define NCCLX_KERNELS_EP_HT_META_CUH_

#include "ep_ht_common.cuh"

namespace ncclx
{
namespace ht
{

// Dispatch metadata entry: an expert id (global) and its weight.
struct Meta {
    int32_t expert;
    float weight;
};
static_assert(sizeof(Meta) == 8, "one 64-bit store per entry");

__device__ __forceinline__ Meta *meta_rows(char *base, const ncclx_ep_ht_group_desc_t &g)
{
    return reinterpret_cast<Meta *>(base + g.dispatch_meta);
}

__device__ __forceinline__ float *grad_rows(char *base, const ncclx_ep_ht_group_desc_t &g)
{
    return reinterpret_cast<float *>(base + g.combine_meta);
}

// Where the K entries {expert, weight} start in a token packed for a relay: after its row and
// scale row, 8-aligned (ep_ht.h: relay_row_bytes).
__device__ __forceinline__ size_t relay_meta_offset(size_t row_bytes, size_t scale_bytes)
{
    return (row_bytes + scale_bytes + 7) & ~(size_t)7;
}

} // namespace ht
} // namespace ncclx

#endif /* NCCLX_KERNELS_EP_HT_META_CUH_ */
