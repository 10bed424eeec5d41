/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Importing versioned public structs (see include/ncclx/struct.h), and the sizes of their
 * first released layouts.
 */
#ifndef NCCLX_LIB_STRUCT_H_
#define NCCLX_LIB_STRUCT_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/result.h>

/*
 * Sizes of the layouts released in 0.1 (sizeof on x86-64 then): a caller's struct may never be
 * smaller.  Literal numbers, never sizeof(): when a struct gains fields, its sizeof grows but
 * an application built against 0.1 still passes these sizes and must be accepted.
 */
#define NCCLX_PLAN_SIZE_V1             56u
#define NCCLX_EP_GROUP_PLAN_SIZE_V1    88u
#define NCCLX_TEAM_SIZE_V1             32u
#define NCCLX_PLAN_SIZES_SIZE_V1       88u
#define NCCLX_PLACEMENT_QUERY_SIZE_V1  56u
#define NCCLX_PLACEMENT_SIZE_V1        2728u
#define NCCLX_INIT_CONFIG_SIZE_V1      32u
#define NCCLX_CONTEXT_INFO_SIZE_V1     88u
#define NCCLX_EP_HANDLE_CONFIG_SIZE_V1 32u
#define NCCLX_EP_DISPATCH_ARGS_SIZE_V1 416u
#define NCCLX_EP_COMBINE_ARGS_SIZE_V1  168u
/* First released in 0.2. */
#define NCCLX_EP_LAYOUT_INFO_SIZE_V1  168u
#define NCCLX_EP_HT_BUFFERS_SIZE_V1   56u
#define NCCLX_EP_HANDLE_STATE_SIZE_V1 32u
#define NCCLX_M2N_TENSOR_SIZE_V1      80u
/* Added after 0.2 (not released yet). */
#define NCCLX_LOOPBACK_CONFIG_SIZE_V1 32u
#define NCCLX_NET_STATS_SIZE_V1       48u
#define NCCLX_EP_LL_BUFFERS_SIZE_V1   72u

/*
 * Every versioned struct of the public API, one line each: X(type, magic, v1 size, last field
 * of the v1 layout).  lib/core/struct.c pins each layout against its line; tests/unit/test_abi.c
 * walks the table through the entry points that take each struct and checks that every
 * NCCLX_MAGIC_* of include/ has a line.  A new versioned struct gets a line here, and library
 * code names these constants, never sizeof(), as the smallest size it accepts.
 */
#define NCCLX_STRUCT_ABI_TABLE(X)                                                                \
    X(ncclxPlan_t, NCCLX_MAGIC_PLAN, NCCLX_PLAN_SIZE_V1, host_block_bytes)                       \
    X(ncclxEpGroupPlan_t, NCCLX_MAGIC_EP_GROUP_PLAN, NCCLX_EP_GROUP_PLAN_SIZE_V1, timeout_ns)    \
    X(ncclxTeam_t, NCCLX_MAGIC_TEAM, NCCLX_TEAM_SIZE_V1, reserved0)                              \
    X(ncclxPlanSizes_t, NCCLX_MAGIC_PLAN_SIZES, NCCLX_PLAN_SIZES_SIZE_V1, reserved0)             \
    X(ncclxPlacementQuery_t, NCCLX_MAGIC_PLACEMENT_QUERY, NCCLX_PLACEMENT_QUERY_SIZE_V1,         \
      bound_cpuset)                                                                              \
    X(ncclxPlacement_t, NCCLX_MAGIC_PLACEMENT, NCCLX_PLACEMENT_SIZE_V1, bind_reason)             \
    X(ncclxInitConfig_t, NCCLX_MAGIC_INIT_CONFIG, NCCLX_INIT_CONFIG_SIZE_V1, reserved0)          \
    X(ncclxContextInfo_t, NCCLX_MAGIC_CONTEXT_INFO, NCCLX_CONTEXT_INFO_SIZE_V1, singleton)       \
    X(ncclxEpHandleConfig_t, NCCLX_MAGIC_EP_HANDLE_CONFIG, NCCLX_EP_HANDLE_CONFIG_SIZE_V1,       \
      reserved0)                                                                                 \
    X(ncclxEpDispatchArgs_t, NCCLX_MAGIC_EP_DISPATCH_ARGS, NCCLX_EP_DISPATCH_ARGS_SIZE_V1,       \
      out_topk_weights)                                                                          \
    X(ncclxEpCombineArgs_t, NCCLX_MAGIC_EP_COMBINE_ARGS, NCCLX_EP_COMBINE_ARGS_SIZE_V1, out)     \
    X(ncclxEpLayoutInfo_t, NCCLX_MAGIC_EP_LAYOUT_INFO, NCCLX_EP_LAYOUT_INFO_SIZE_V1, recv_total) \
    X(ncclxEpHtBuffers_t, NCCLX_MAGIC_EP_HT_BUFFERS, NCCLX_EP_HT_BUFFERS_SIZE_V1, reserved0)     \
    X(ncclxEpHandleState_t, NCCLX_MAGIC_EP_HANDLE_STATE, NCCLX_EP_HANDLE_STATE_SIZE_V1,          \
      global_expert_ids)                                                                         \
    X(ncclxM2nTensor_t, NCCLX_MAGIC_M2N_TENSOR, NCCLX_M2N_TENSOR_SIZE_V1, placements)            \
    X(ncclxLoopbackConfig_t, NCCLX_MAGIC_LOOPBACK_CONFIG, NCCLX_LOOPBACK_CONFIG_SIZE_V1,         \
      reserved0)                                                                                 \
    X(ncclxNetStats_t, NCCLX_MAGIC_NET_STATS, NCCLX_NET_STATS_SIZE_V1, signals)                  \
    X(ncclxEpLlBuffers_t, NCCLX_MAGIC_EP_LL_BUFFERS, NCCLX_EP_LL_BUFFERS_SIZE_V1, rank_major_scales)

/** The size/magic/version header every versioned struct starts with. */
typedef struct {
    size_t size;
    uint32_t magic;
    uint32_t version;
} ncclx_struct_header_t;

/**
 * Copies the caller's struct src into dst (which holds the library's defaults, dst_size
 * bytes): the fields both know are taken from src, a smaller src leaves dst's defaults for the
 * rest, and the unknown tail of a larger src is ignored.  what names the struct in errors
 * ("plan.ep_groups[2]").  min_size is the struct's v1 size from the table above, never
 * sizeof() of the current layout.  NULL, a foreign magic or a size under min_size ->
 * ncclxInvalidArgument.
 */
ncclxResult_t ncclx_struct_import(void *dst, size_t dst_size, const void *src, uint32_t magic,
                                  size_t min_size, const char *what);

/**
 * Checks an output struct the caller passes for the library to fill: copies of at most
 * caller's size bytes are written back with ncclx_struct_export().  min_size as for
 * ncclx_struct_import: the v1 size, so that a caller built against 0.1 is still served.
 */
ncclxResult_t ncclx_struct_check_output(const void *dst, uint32_t magic, size_t min_size,
                                        const char *what);

/** Writes src (a full library-side struct of src_size bytes) into the caller's dst. */
void ncclx_struct_export(void *dst, const void *src, size_t src_size);

#endif /* NCCLX_LIB_STRUCT_H_ */
