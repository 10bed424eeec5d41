/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The plan.  libncclx allocates everything at init from a declared plan: how many EP groups
 * and with what bounds, how many handles each group may hold at once, the M2N staging budget,
 * and where the host-side structs live.  After init nothing allocates: dispatch, combine and
 * the mask operations only use what the plan reserved, so they can be captured in CUDA
 * graphs.  Asking for more than the plan holds fails with ncclxResourceExhausted.
 *
 * ncclxPlanComputeSizes() turns a plan and a team shape into exact bytes per memory class;
 * ncclxPlanPrint() shows every region, so an operator can see what a plan costs before
 * running anything (tools/ncclx-plan does both from the command line).
 */
#ifndef NCCLX_PLAN_H_
#define NCCLX_PLAN_H_

#include <stdint.h>
#include <stdio.h>

#include <ncclx/result.h>
#include <ncclx/struct.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types of tokens, scales and indices. */
typedef enum {
    NCCLX_BFLOAT16 = 0,
    NCCLX_FLOAT16 = 1,
    NCCLX_FLOAT32 = 2,
    NCCLX_FP8_E4M3 = 3,
    NCCLX_FP8_E5M2 = 4,
    NCCLX_FP4X2_E2M1 = 5, /**< two FP4 values per byte */
    NCCLX_UINT8 = 6,      /**< raw bytes (forwarded untouched) */
    NCCLX_INT32 = 7,
    NCCLX_INT64 = 8,
    NCCLX_NUM_DATA_TYPES = 9, /**< the types above: those an EP plan may name */
    /* Since 0.2, for M2N (which moves bytes of any type): */
    NCCLX_INT8 = 9,
    NCCLX_UINT32 = 10,
    NCCLX_UINT64 = 11,
    NCCLX_FLOAT64 = 12
} ncclxDataType_t;

/** A set of data types, as in ncclxEpGroupPlan_t.token_dtypes. */
#define NCCLX_DTYPE_BIT(dtype) (1u << (dtype))

/** EP algorithms. */
typedef enum {
    NCCLX_EP_ALGO_LL = 1, /**< low latency: small batches, direct all-to-all */
    NCCLX_EP_ALGO_HT = 2  /**< high throughput: large batches, routed at handle update (one
                               load/store team: team.lsa_size == team.num_ranks) */
} ncclxEpAlgorithm_t;

/** EP output layouts (bit set). */
#define NCCLX_EP_LAYOUT_EXPERT_MAJOR 0x1u /**< [local_experts, slots, hidden]: LL and HT */
#define NCCLX_EP_LAYOUT_RANK_MAJOR   0x2u /**< [ranks, max_tokens, hidden]: LL */
#define NCCLX_EP_LAYOUT_FLAT         0x4u /**< [recv_slots, hidden]: HT */

/** EP quantization recipes (bit set). */
#define NCCLX_EP_RECIPE_NONE      0x1u /**< tokens travel in their own dtype */
#define NCCLX_EP_RECIPE_QUANT_FWD 0x2u /**< caller's quantized bytes + scales forwarded as is */
#define NCCLX_EP_RECIPE_FP8       0x4u /**< LL: BF16 in, FP8 E4M3 + FP32 scale per 128 out */
#define NCCLX_EP_RECIPE_MXFP8     0x8u /**< HT combine: MXFP8, E8M0 scale per 32 elements */

/** Bounds checked by plan validation. */
#define NCCLX_EP_MAX_EXPERTS            4096u
#define NCCLX_EP_MAX_TOPK               16u /**< LL groups */
#define NCCLX_EP_MAX_HT_TOPK            32u /**< HT groups */
#define NCCLX_EP_MAX_HIDDEN             65536u
#define NCCLX_EP_MAX_LL_TOKENS_PER_RANK 1024u
#define NCCLX_EP_MAX_HT_TOKENS_PER_RANK 1048576u
#define NCCLX_EP_MAX_HANDLES            4096u
#define NCCLX_EP_MAX_EXPERT_ALIGNMENT   1024u
#define NCCLX_EP_MAX_SM_BUDGET          1024u
#define NCCLX_MAX_EP_GROUPS             64u
#define NCCLX_MAX_RANKS                 65536u
#define NCCLX_EP_MAX_LL_RANKS           1024u /**< an LL group spans one load/store domain */
#define NCCLX_DEFAULT_TIMEOUT_NS        100000000000ull /**< 100 s */
/* QUANT_FWD row bounds (max_token_bytes, max_scale_bytes): a token row of at most an FP32 row
 * of the largest hidden size (NCCLX_EP_MAX_HIDDEN * 4), a scale row of at most one FP32 scale
 * per 4 of its elements.  They keep every size derived from a plan far inside 64 bits. */
#define NCCLX_EP_MAX_TOKEN_BYTES 262144u
#define NCCLX_EP_MAX_SCALE_BYTES 65536u

/** HT receive overflow policy (ncclxEpGroupPlan_t.overflow_policy): what happens to the
 *  tokens of a routing that needs more than max_recv_tokens_per_rank receive rows. */
#define NCCLX_EP_OVERFLOW_TRAP 0u /**< report NCCLX_EP_ERROR_OVERFLOW; the next call fails */
#define NCCLX_EP_OVERFLOW_DROP 1u /**< drop the rows past the budget (the total says how many) */

/**
 * One EP group: bounds that size its buffers.  Every later call on the group is checked
 * against these bounds.
 */
typedef struct {
    NCCLX_STRUCT_HEADER;
    ncclxEpAlgorithm_t algorithm;          /**< NCCLX_EP_ALGO_LL or _HT */
    uint32_t num_experts;                  /**< global experts; divisible by the number of ranks */
    uint32_t max_topk;                     /**< largest top-k a handle may use: 1..16 (LL),
                                                1..32 (HT) */
    uint32_t hidden;                       /**< hidden size (elements per token row) */
    uint32_t token_dtypes;                 /**< NCCLX_DTYPE_BIT set of token dtypes to support */
    uint32_t layouts;                      /**< NCCLX_EP_LAYOUT_* set */
    uint32_t recipes;                      /**< NCCLX_EP_RECIPE_* set */
    uint32_t max_dispatch_tokens_per_rank; /**< tokens one rank sends in one dispatch */
    uint32_t max_recv_tokens_per_rank;     /**< HT receive slots; 0 = ranks * max_dispatch */
    uint32_t max_token_bytes;              /**< QUANT_FWD: bytes per token row, multiple of 16,
                                                at most NCCLX_EP_MAX_TOKEN_BYTES; 0 without */
    uint32_t max_scale_bytes;              /**< QUANT_FWD: scale bytes per token row, at most
                                                NCCLX_EP_MAX_SCALE_BYTES; 0 without */
    uint32_t expert_alignment;             /**< HT expert-major padding of each expert; 0 = 1 */
    uint32_t enable_mask;                  /**< LL: keep an active mask (fault tolerance) */
    uint32_t num_handles;                  /**< handles the group may hold at once, >= 1 */
    uint32_t sm_budget;                    /**< blocks per kernel and rank (512 threads, two
                                                fit on an SM: at most sm_budget SMs); 0 =
                                                automatic (ncclxLoopbackInit, ep.h) */
    uint64_t timeout_ns;                   /**< GPU wait timeout; 0 = NCCLX_DEFAULT_TIMEOUT_NS */
    /* Since 0.2 (a 0.1 caller's smaller struct gets the defaults below). */
    uint32_t overflow_policy; /**< HT: NCCLX_EP_OVERFLOW_TRAP (default) or _DROP */
    uint32_t zero_copy;       /**< LL: 1 = dispatch writes each row once, straight into its
                                   receiver's zero-copy rows (symmetric memory,
                                   ncclxEpGroupGetLlBuffers): L x R x T rows per rank with
                                   the EXPERT_MAJOR layout, R x T more with RANK_MAJOR.  Needs
                                   one load/store domain and no enable_mask; 0 (default) = the
                                   receive area and a copy */
} ncclxEpGroupPlan_t;

#define NCCLX_EP_GROUP_PLAN_INIT                                                                   \
    {                                                                                              \
        NCCLX_STRUCT_HEADER_INIT(ncclxEpGroupPlan_t, NCCLX_MAGIC_EP_GROUP_PLAN), NCCLX_EP_ALGO_LL, \
            0, 1, 0, NCCLX_DTYPE_BIT(NCCLX_BFLOAT16), NCCLX_EP_LAYOUT_EXPERT_MAJOR,                \
            NCCLX_EP_RECIPE_NONE, 0, 0, 0, 0, 0, 0, 1, 0, 0, NCCLX_EP_OVERFLOW_TRAP, 0             \
    }

/** The whole plan. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t num_ep_groups; /**< entries in ep_groups */
    uint32_t reserved0;
    const ncclxEpGroupPlan_t *const *ep_groups; /**< one pointer per group (each versioned) */
    uint64_t m2n_staging_bytes; /**< M2N staging rings per rank (symmetric); 0 = no M2N.  At
                                     least num_ranks * NCCLX_M2N_MIN_STAGING_PER_RANK; 16 MiB
                                     per rank of the team gives each source its 128 channels
                                     (docs/m2n.md, "Memory") */
    void *host_block;        /**< caller memory for the host class, or NULL: libncclx allocates */
    size_t host_block_bytes; /**< size of host_block */
    /* Since 0.2 (a 0.1 caller's smaller struct gets the defaults below). */
    uint32_t m2n_max_group_entries; /**< M2N: tensors one group may record; 0 = 128 with M2N */
    uint32_t reserved1;
} ncclxPlan_t;

/** The least M2N staging per rank of the team: one channel of 4 slices of 4 KiB from every
 *  source. */
#define NCCLX_M2N_MIN_STAGING_PER_RANK  16384u
#define NCCLX_M2N_DEFAULT_GROUP_ENTRIES 128u
#define NCCLX_M2N_MAX_GROUP_ENTRIES     65536u

#define NCCLX_PLAN_INIT                                                                       \
    {                                                                                         \
        NCCLX_STRUCT_HEADER_INIT(ncclxPlan_t, NCCLX_MAGIC_PLAN), 0, 0, NULL, 0, NULL, 0, 0, 0 \
    }

/** Shape of the job the plan will run on: every rank must pass the same one. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint32_t num_ranks; /**< ranks in the communicator */
    uint32_t num_nodes; /**< nodes; divides num_ranks */
    uint32_t lsa_size;  /**< ranks reachable by load/store (NVLink domain); divides num_ranks */
    uint32_t reserved0;
} ncclxTeam_t;

#define NCCLX_TEAM_INIT                                                     \
    {                                                                       \
        NCCLX_STRUCT_HEADER_INIT(ncclxTeam_t, NCCLX_MAGIC_TEAM), 1, 1, 1, 0 \
    }

/** Memory classes; each is allocated once, at init. */
typedef enum {
    NCCLX_MEM_SYMMETRIC = 0,   /**< device memory peers write into (ncclMemAlloc + window) */
    NCCLX_MEM_DEVICE = 1,      /**< private device memory (cudaMalloc) */
    NCCLX_MEM_MAPPED_HOST = 2, /**< host memory the GPU sees (cudaHostAlloc, mapped) */
    NCCLX_MEM_HOST = 3,        /**< host structs and pools (the host block) */
    NCCLX_MEM_NUM_CLASSES = 4
} ncclxMemClass_t;

/** Constant name of a memory class ("symmetric", "device", "mapped_host", "host"). */
const char *ncclxMemClassName(ncclxMemClass_t mem_class);

/** What a plan costs on one rank. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    uint64_t total[NCCLX_MEM_NUM_CLASSES];      /**< bytes per class, all objects */
    uint64_t per_handle[NCCLX_MEM_NUM_CLASSES]; /**< largest single handle, per class */
    uint32_t num_regions;                       /**< regions carved (see ncclxPlanPrint) */
    uint32_t reserved0;
} ncclxPlanSizes_t;

#define NCCLX_PLAN_SIZES_INIT                                                              \
    {                                                                                      \
        NCCLX_STRUCT_HEADER_INIT(ncclxPlanSizes_t, NCCLX_MAGIC_PLAN_SIZES), {0}, {0}, 0, 0 \
    }

/**
 * Checks every field of plan against team.  Returns ncclxInvalidArgument naming the first bad
 * field (ncclxGetLastError()), ncclxUnsupported for a valid plan that asks for what this
 * release does not implement (an HT group or M2N staging on a team spanning several load/store
 * domains), ncclxSuccess otherwise.
 */
ncclxResult_t ncclxPlanValidate(const ncclxPlan_t *plan, const ncclxTeam_t *team);

/**
 * Exact bytes one rank of team needs for plan, per memory class.  Pure host computation: it
 * touches no GPU.  *sizes must start as NCCLX_PLAN_SIZES_INIT; it is written only on success.
 */
ncclxResult_t ncclxPlanComputeSizes(const ncclxPlan_t *plan, const ncclxTeam_t *team,
                                    ncclxPlanSizes_t *sizes);

/** Prints every region of the plan (class, offset, bytes, owner) and the totals to out. */
ncclxResult_t ncclxPlanPrint(const ncclxPlan_t *plan, const ncclxTeam_t *team, FILE *out);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_PLAN_H_ */
