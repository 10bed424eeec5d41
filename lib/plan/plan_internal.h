/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The plan as the library sees it: imported (defaults filled, versions reconciled),
 * validated, and turned into dimensions and regions.  One layout function places every
 * region; with measuring arenas it gives the sizes (ncclxPlanComputeSizes), with real arenas
 * the addresses (init).
 */
#ifndef NCCLX_LIB_PLAN_INTERNAL_H_
#define NCCLX_LIB_PLAN_INTERNAL_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/plan.h>

#include "arena.h"
#include "ep_ll_wire.h"
#include "net.h"

/** A plan copied into library-sized structs. */
typedef struct {
    ncclxPlan_t plan;
    ncclxTeam_t team;
    uint32_t num_groups;
    ncclxEpGroupPlan_t groups[NCCLX_MAX_EP_GROUPS];
} ncclx_plan_norm_t;

/** Everything a group's buffers are sized from, derived once from its plan and the team. */
typedef struct {
    uint32_t ranks;            /* R */
    uint32_t local_experts;    /* L = num_experts / R */
    uint32_t tokens;           /* T = max_dispatch_tokens_per_rank */
    uint32_t topk;             /* K = max_topk */
    uint32_t hidden;           /* H */
    uint32_t recv_slots;       /* HT: S, receive rows; LL: R * T */
    uint32_t num_experts;      /* E */
    uint32_t combine_slots;    /* combine rows received per token */
    size_t payload_bytes;      /* P: largest token row on the wire, 16-byte multiple */
    size_t dispatch_msg_bytes; /* M: header + top-k entries + P */
    size_t combine_elem_bytes; /* C: 4 if FP32 tokens are enabled, else 2 */
    size_t combine_slot_bytes; /* align16(H * C) */
    size_t handle_bytes;       /* one handle's private device memory (stride) */
    uint32_t mxfp8_combine;    /* HT with NCCLX_EP_RECIPE_MXFP8: handles link their rows */
    uint32_t lsa;              /* A = team.lsa_size: ranks of one load/store domain (node) */
    uint32_t nodes;            /* R / A: 1 on one domain */
    /* HT across load/store domains (nodes > 1), else 0; also 0 for LL groups: */
    size_t relay_row_bytes; /* a16(P + K * 8): a token's row and top-k meta as relayed */
    size_t partial_bytes;   /* a16(H * 4 + K * 4): a node's FP32 partial and weight grads */
    /* LL with zero_copy, else 0: the largest output token row and scale row of a call. */
    size_t zero_copy_row_bytes, zero_copy_scale_bytes;
} ncclx_ep_dims_t;

/* Fixed parts of the state formats (see docs/plan-sizing.md); the message and signal formats
 * are kernels/ep_ll/ep_ll_wire.h's. */
#define NCCLX_EP_LL_BUFFERS         2u    /* LL receive areas are double-buffered */
#define NCCLX_EP_DEV_STATE_BYTES    256u  /* per group: epochs, sequence numbers, error word */
#define NCCLX_STATUS_BYTES          64u   /* mapped host status block (async error flag, ...) */
#define NCCLX_CONTEXT_SCRATCH_BYTES 256u  /* device scratch of the context (init barrier) */
#define NCCLX_NET_DEV_COMM_BYTES    4096u /* device: room for NCCL's ncclDevComm (GIN) */
#define NCCLX_NET_STATS_BYTES       64u   /* device: ncclx_net_stats_t */

/** Whether the team spans several load/store domains (its groups need the network). */
#define NCCLX_TEAM_MULTI_DOMAIN(team) ((team)->lsa_size < (team)->num_ranks)

/** Offsets (into each class arena) of a group's regions; NCCLX_NO_REGION when absent. */
#define NCCLX_NO_REGION SIZE_MAX
_Static_assert(NCCLX_NO_REGION == NCCLX_NO_NET_REGION, "the kernels' absent region is the plan's");
typedef struct {
    size_t dispatch_recv;    /* symmetric */
    size_t combine_recv;     /* symmetric */
    size_t signals;          /* symmetric */
    size_t mask_words;       /* symmetric, LL with enable_mask: clean slots and evicted words */
    size_t dispatch_counts;  /* symmetric, LL expert-major: [2][R][L] int32 rows per local expert */
    size_t zero_copy_rows;   /* symmetric, LL zero_copy: [L][R][T] output token rows */
    size_t zero_copy_scales; /* symmetric, LL zero_copy: [L][R][T] output scale rows (or none) */
    size_t zero_copy_rm_rows;   /* symmetric, LL zero_copy, rank-major: [R][T] output rows */
    size_t zero_copy_rm_scales; /* symmetric, LL zero_copy, rank-major: [R][T] scale rows */
    size_t count_boards;        /* symmetric, LL zero_copy: [2][R] boards (ep_ll_wire.h) */
    size_t state;               /* device */
    size_t decisions;           /* device, LL: [2][R] what this rank concluded about each source */
    size_t mask;                /* device, LL with enable_mask */
    size_t handles;             /* device, num_handles * dims.handle_bytes */
    size_t status;              /* mapped host */
    size_t host_group;          /* host: the group struct */
    size_t host_handles;        /* host: num_handles handle structs */
    size_t host_pool;           /* host: pool bookkeeping */
    size_t host_masked;      /* host, LL with enable_mask: [R] ranks masked by ncclxEpMaskUpdate */
    size_t ht_map;           /* symmetric, HT: routing map [T][ceil(E / 32)] uint32 */
    size_t ht_dispatch_meta; /* symmetric, HT: [S][K] {expert, weight} of the dispatch rows */
    size_t ht_combine_meta;  /* symmetric, HT: [S][K] float backward weight gradients */
    size_t ht_counters;      /* device, HT: [R][E] + [R][R] int32 routing counts */
    /* Across load/store domains (docs/multi-node.md): what this rank puts to ranks of other
     * domains is staged here (the network moves bytes between symmetric arenas only). */
    size_t net_dispatch_out;    /* symmetric, LL: [R - lsa][T] messages, by remote rank and slot */
    size_t net_dispatch_counts; /* symmetric, LL expert-major: [R - lsa][L] int32 counts out */
    size_t net_combine_out;     /* symmetric, LL: [R - lsa][T][net_combine_rows] rows */
    uint32_t net_combine_rows;  /* LL: rows a message returns at most (expert-major: min(K, L)) */
    size_t net_combine_in;      /* symmetric, LL with a mask: remote sources' rows, as staged */
    size_t net_mask;            /* device, LL with a mask: clean counters [2][R], bases [4][R] */
    uint32_t net_signal_base;   /* LL: first of its network signals: (parity, dir) x source, then
                                   with a mask clean rounds one and two x source; HT: 6 kinds x
                                   peer (docs/plan-sizing.md, HT across load/store domains) */
    /* HT across load/store domains (hierarchical: one network crossing per destination node, to
     * a relay rank there); NCCLX_NO_REGION on one domain and for LL groups. */
    size_t ht_net_maps;        /* symmetric: [R][T][ceil(E / 32)] uint32, remote ranks' maps */
    size_t ht_net_stage;       /* symmetric: [T] relay rows, this rank's tokens packed once */
    size_t ht_net_relay;       /* symmetric: [nodes][T] relay rows, by source node */
    size_t ht_net_partial_out; /* symmetric: [nodes][T] partials, by source node */
    size_t ht_net_partial_in;  /* symmetric: [nodes][T] partials, by relay node */
    size_t ht_net_words;       /* symmetric: [2][R] uint64 operation words */
} ncclx_ep_group_regions_t;

/* M2N control words (docs/plan-sizing.md): kernels/m2n/m2n.h describes them. */
#define NCCLX_M2N_STATE_BYTES 2048u /* device: ncclx_m2n_state_t */

typedef struct {
    size_t m2n_staging;     /* symmetric: kernels/m2n/m2n_ring.h's ring of every source */
    size_t m2n_net_staging; /* symmetric: slices packed for ranks of other load/store domains */
    uint32_t m2n_net_signal_base; /* first of M2N's network signals (m2n_ring.h) */
    size_t m2n_signals;           /* symmetric */
    size_t m2n_state;             /* device */
    size_t m2n_counts;            /* device */
    size_t m2n_status;            /* mapped host */
    size_t m2n_engine;            /* host: the engine struct */
    size_t m2n_entries;           /* host: [m2n_max_group_entries] recorded group entries */
    size_t peer_table;            /* device: lsa_size base pointers */
    size_t scratch;               /* device: NCCLX_CONTEXT_SCRATCH_BYTES (init barrier, ...) */
    size_t status;                /* mapped host: context status */
    /* The network transport (kernels/common/net.h), on a team of several load/store domains. */
    size_t net_signals;       /* symmetric: the emulator's [contexts][net_num_signals] uint64 */
    size_t net_held;          /* device: the emulator's held puts [contexts][R][held] */
    size_t net_held_next;     /* device: [contexts][R] uint32 */
    size_t net_stats;         /* device: what crossed the network from this rank */
    size_t net_world;         /* device: [R] every rank's arena (the emulator's only view) */
    size_t net_dev_comm;      /* device: NCCL's device communicator (GIN) */
    uint32_t net_num_signals; /* network signals of every group, per context */
    ncclx_ep_group_regions_t groups[NCCLX_MAX_EP_GROUPS];
} ncclx_plan_regions_t;

/** One carved region, reported to a layout's visitor. */
typedef struct {
    ncclxMemClass_t mem_class;
    int group; /* -1: context-wide */
    const char *name;
    size_t offset;
    size_t bytes; /* count * each */
    size_t each;  /* bytes of one element when the region is an array of objects */
    uint32_t count;
} ncclx_region_t;

typedef void (*ncclx_region_visitor_t)(const ncclx_region_t *region, void *ctx);

typedef struct {
    ncclx_arena_t arena[NCCLX_MEM_NUM_CLASSES];
    ncclx_region_visitor_t visit; /* may be NULL */
    void *ctx;
    uint32_t num_regions;
    size_t per_handle[NCCLX_MEM_NUM_CLASSES]; /* largest handle seen, per class */
} ncclx_layout_t;

/** A layout over measuring arenas (sizing). */
void ncclx_layout_init_measure(ncclx_layout_t *layout, ncclx_region_visitor_t visit, void *ctx);

/** Imports plan and team (NULL team = 1 rank, 1 node) into *norm, then validates them.  On
 * ncclxUnsupported (a planned feature, see ncclx_plan_check) *norm holds the imported plan,
 * every field checked: tests lay out planned features with it; nothing else may use it. */
ncclxResult_t ncclx_plan_import(const ncclxPlan_t *plan, const ncclxTeam_t *team,
                                ncclx_plan_norm_t *norm);

/** Validates an imported plan; the error names the first bad field.  An otherwise valid plan
 * that asks for a feature this release does not implement (across load/store domains: the
 * MXFP8 combine, or HT on domains of a size that is not a power of two) fails with
 * ncclxUnsupported. */
ncclxResult_t ncclx_plan_check(const ncclx_plan_norm_t *norm);

/** Byte offsets of the pieces of one LL handle's device memory (see docs/plan-sizing.md). */
typedef struct {
    size_t idx;              /* int32 [T, K]: validated copy of topk_idx (-1: not routed) */
    size_t route;            /* int32 [T, K]: slot of the token at the entry's destination rank */
    size_t send_count;       /* int32 [R]: tokens sent to each rank */
    size_t recv_count;       /* int32 [R]: tokens received from each rank */
    size_t recv_tok;         /* int32 [R, T]: ncclx_ep_pack_token(token, order) or dropped */
    size_t recv_pos;         /* int32 [R, T, K]: local expert * R*T + row, or -1 (expert-major) */
    size_t expert_slot;      /* int32 [T, K]: the token's index among this rank's tokens to the
                                entry's expert (expert-major) */
    size_t expert_count;     /* int32 [E]: this rank's tokens to each expert (expert-major) */
    size_t zero_copy_starts; /* int32 [E], a zero_copy group: where this rank's rows of each
                                expert start at its rank in the handle's dispatch (rank-major:
                                >= 0 where that rank took rows) */
    size_t bytes;            /* the whole handle, 256-byte multiple */
} ncclx_ep_ll_handle_layout_t;

void ncclx_ep_ll_handle_layout(const ncclx_ep_dims_t *d, int expert_major,
                               ncclx_ep_ll_handle_layout_t *h);

/** Byte offsets of the pieces of one HT handle's device memory (see docs/plan-sizing.md). */
typedef struct {
    size_t header;     /* 64 bytes: magic, version, geometry, routing step, checksum, state */
    size_t idx;        /* int32 [T, K]: validated top-k (-1: not routed, or a repeat) */
    size_t flat_row;   /* int32 [T, R]: FLAT row of the token at each rank, -1 */
    size_t em_row;     /* int32 [T, K]: EXPERT_MAJOR row of each entry, -1 */
    size_t totals;     /* int64 [2]: rows needed before any drop, rows delivered */
    size_t counts;     /* int32 [L]: per local expert, as ncclxEpHandleGetLayout reports */
    size_t offsets;    /* int32 [L + 1]: zone starts clamped to S, then the padded total */
    size_t zone_count; /* int32 [L]: real rows of each zone */
    size_t zone_base;  /* int32 [L]: zone starts */
    size_t em_next;    /* MXFP8 groups: int32 [S], the next receive row of the row's token */
    size_t em_head;    /* MXFP8 groups: uint8 [S], 1 on each token's first receive row */
    size_t relay;      /* across domains: int32x2 [nodes][T][K] {row, expert}, -1 ends; else 0 */
    size_t bytes;      /* the whole handle, 256-byte multiple */
} ncclx_ep_ht_handle_layout_t;

void ncclx_ep_ht_handle_layout(const ncclx_ep_dims_t *d, ncclx_ep_ht_handle_layout_t *h);

/** Bytes of the HT routing map of one rank: T rows of ceil(E / 32) words. */
size_t ncclx_ep_ht_map_bytes(const ncclx_ep_dims_t *d, uint32_t num_experts);

/** Dimensions of group (already validated) on team. */
ncclxResult_t ncclx_ep_dims_compute(const ncclxEpGroupPlan_t *group, const ncclxTeam_t *team,
                                    uint32_t group_index, ncclx_ep_dims_t *dims);

/** Places every region of norm into layout's arenas, in a fixed order. */
ncclxResult_t ncclx_plan_layout(ncclx_layout_t *layout, const ncclx_plan_norm_t *norm,
                                ncclx_plan_regions_t *regions);

/**
 * A 64-bit hash of everything in norm that every rank must hold alike: the team, the plan's
 * shared fields and each group's fields (not host_block / host_block_bytes, local memory).  Two
 * plans differing in exactly one field always hash differently (see lib/plan/plan.c).
 */
uint64_t ncclx_plan_hash(const ncclx_plan_norm_t *norm);

/** Where two normalized plans first differ. */
typedef struct {
    const char *scope; /* "team", "plan" or "group" */
    int group;         /* the group's index, -1 for team and plan fields */
    const char *field; /* "hidden", "num_ep_groups", "lsa_size", ... */
    uint64_t a, b;     /* the two values */
} ncclx_plan_difference_t;

/**
 * 1 and *diff = the first difference between a and b (team fields, then the plan's, then the
 * groups' in order), or 0 when every compared field is equal.
 */
int ncclx_plan_diff(const ncclx_plan_norm_t *a, const ncclx_plan_norm_t *b,
                    ncclx_plan_difference_t *diff);

/** The field's name as errors spell it: "plan.ep_groups[2]->hidden", "team.lsa_size". */
void ncclx_plan_difference_name(const ncclx_plan_difference_t *d, char *buf, size_t len);

/** Size of one element of dtype in bits (one FP4 value of FP4x2: 4 bits). */
uint32_t ncclx_dtype_bits(ncclxDataType_t dtype);

#endif /* NCCLX_LIB_PLAN_INTERNAL_H_ */
