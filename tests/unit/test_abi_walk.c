/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The ABI table walk: every struct of lib/core/struct.h's NCCLX_STRUCT_ABI_TABLE through the
 * public entry points that take it (v1 size accepted, smaller refused, newer tails, wrong
 * magics), and every public magic present in the table; on the CPU.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "context.h"
#include "ep_group.h"
#include "m2n_engine.h"
#include "plan_internal.h"
#include "struct.h"
#include "unit/abi_fixture.h"

/* ---- the table walk: every versioned struct through the entry points that take it ------- */

typedef struct {
    const char *type;
    uint32_t magic;
    size_t size_v1;
    size_t size; /* sizeof as this library compiles it */
} abi_entry_t;

#define ABI_ENTRY(type, magic, size_v1, last) {#type, magic, size_v1, sizeof(type)},
static const abi_entry_t abi_table[] = {NCCLX_STRUCT_ABI_TABLE(ABI_ENTRY)};
#define ABI_TABLE_LEN (sizeof(abi_table) / sizeof(abi_table[0]))

/* Room for the largest struct and a newer release's tail. */
#define ABI_BUF_BYTES 4096
#define ABI_TAIL      64

typedef union {
    max_align_t align;
    unsigned char bytes[ABI_BUF_BYTES];
} abi_buf_t;

/*
 * One public entry point that takes a versioned struct.  call() passes s where the struct goes
 * and valid values for every other argument.  Where a successful call would need a GPU, the
 * probe makes a field of the v1 layout invalid instead: that field's error (accepted_msg) then
 * proves the size and magic were accepted.
 */
typedef struct {
    uint32_t magic;
    const char *call_name;
    const char *what; /* the struct's name in the entry point's errors */
    void (*make)(void *s);
    ncclxResult_t (*call)(void *s);
    ncclxResult_t accepted;
    const char *accepted_msg;
    void (*expected)(void *s); /* output structs: what the library fills in; NULL: input */
    int null_means_defaults;   /* NULL is not an error: the struct is optional */
} abi_probe_t;

/* State shared by the probes, built once per walk. */
static struct {
    fixture_t plan;
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handle;
    ncclx_ep_group_t ht_group;   /* an HT group (ncclxEpHandleGetLayout takes HT handles) */
    ncclx_ep_handle_t ht_handle; /* routed, expert-major */
    struct ncclxContext *ctx;
    struct ncclxContext *m2n_ctx; /* with M2N staging (abi_setup_m2n) */
    FILE *sink;
} abi;

static void abi_setup_ep(void)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    team.num_ranks = team.lsa_size = 4;
    g.num_experts = 16;
    g.max_topk = 2;
    g.hidden = 256;
    g.max_dispatch_tokens_per_rank = 8;
    memset(&abi.group, 0, sizeof(abi.group));
    memset(&abi.handle, 0, sizeof(abi.handle));
    abi.group.plan = g;
    assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 0, &abi.group.dims));
    abi.handle.group = &abi.group;
    abi.handle.live = 1;
    abi.handle.routed = 1; /* dispatch checks its arguments only on a routed handle */
    abi.handle.dispatched = 1;
    abi.handle.config.layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    abi.handle.config.topk = 2;
    abi.handle.desc.num_tokens = 8;
    abi.handle.desc.topk = 2;
    abi.handle.desc.expert_major = 1;

    g.algorithm = NCCLX_EP_ALGO_HT;
    g.layouts = NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_FLAT;
    g.max_dispatch_tokens_per_rank = 64;
    memset(&abi.ht_group, 0, sizeof(abi.ht_group));
    memset(&abi.ht_handle, 0, sizeof(abi.ht_handle));
    abi.ht_group.plan = g;
    abi.ht_group.index = 1;
    assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 1, &abi.ht_group.dims));
    abi.ht_handle.group = &abi.ht_group;
    abi.ht_handle.live = 1;
    abi.ht_handle.routed = 1;
    abi.ht_handle.config.layout = NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    abi.ht_handle.config.topk = 2;
    abi.ht_handle.ht.num_tokens = 64;
    abi.ht_handle.ht.topk = 2;
    abi.ht_handle.ht.expert_major = 1;
}

/* A context as ncclxInit leaves it, as far as the getters look. */
static void abi_setup_context(void)
{
    abi.ctx = calloc(1, sizeof(*abi.ctx));
    assert_non_null(abi.ctx);
    abi.ctx->info = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
    abi.ctx->info.rank = 3;
    abi.ctx->info.num_ranks = 8;
    abi.ctx->info.lsa_size = 8;
    abi.ctx->info.bytes[NCCLX_MEM_DEVICE] = 12345;
    abi.ctx->info.singleton = 1; /* the last v1 field */
    abi.ctx->placement = (ncclxPlacement_t)NCCLX_PLACEMENT_INIT;
    abi.ctx->placement.cuda_device = 2;
    strcpy(abi.ctx->placement.gpu_busid, "0000:84:00.0");
    strcpy(abi.ctx->placement.bind_reason, "test"); /* the last v1 field */
    abi.ctx->has_placement = 1;
}

/*
 * A context with M2N staging on 4 ranks, as far as ncclxM2nReshard looks before it launches,
 * built on the CPU: the plan imported and laid out, the host classes in host memory, fake
 * bases for the device classes (nothing reads them before a launch), then the engine filled
 * by ncclx_m2n_bind_host (bind without the event, which needs a GPU): none of the probes gets
 * as far as the event or a launch, every call is refused by an argument check first.
 */
static void abi_setup_m2n(void)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_layout_t layout;
    struct ncclxContext *ctx = calloc(1, sizeof(*ctx));
    assert_non_null(ctx);
    team.num_ranks = team.lsa_size = 4;
    plan.m2n_staging_bytes = 4 * NCCLX_M2N_MIN_STAGING_PER_RANK;
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, &ctx->norm));
    ncclx_layout_init_measure(&layout, NULL, NULL);
    assert_ncclx_ok(ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        const size_t bytes = (layout.arena[c].used + 255) / 256 * 256;
        ctx->arenas.bytes[c] = layout.arena[c].used;
        if (c == NCCLX_MEM_HOST || c == NCCLX_MEM_MAPPED_HOST) {
            ctx->arenas.base[c] = aligned_alloc(256, bytes);
            assert_non_null(ctx->arenas.base[c]);
            memset(ctx->arenas.base[c], 0, bytes);
        } else {
            ctx->arenas.base[c] = (void *)(uintptr_t)(0x10000000u * (unsigned)(c + 1));
        }
    }
    ctx->arenas.mapped_device = (void *)(uintptr_t)0x50000000u;
    ctx->rank = 1;
    ctx->m2n = ncclx_m2n_bind_host(ctx);
    assert_non_null(ctx->m2n);
    abi.m2n_ctx = ctx;
}

static void abi_teardown_m2n(void)
{
    struct ncclxContext *ctx = abi.m2n_ctx;
    (void)ncclx_m2n_unbind(ctx); /* no event was made: it only forgets the engine */
    free(ctx->arenas.base[NCCLX_MEM_HOST]);
    free(ctx->arenas.base[NCCLX_MEM_MAPPED_HOST]);
    free(ctx);
    abi.m2n_ctx = NULL;
}

static void make_plan(void *s)
{
    *(ncclxPlan_t *)s = abi.plan.plan;
}
static ncclxResult_t call_plan(void *s)
{
    return ncclxPlanValidate(s, &abi.plan.team);
}

static void make_group_plan(void *s)
{
    *(ncclxEpGroupPlan_t *)s = abi.plan.groups[0];
}
static ncclxResult_t call_group_plan(void *s)
{
    const ncclxEpGroupPlan_t *ptrs[2] = {s, &abi.plan.groups[1]};
    ncclxPlan_t plan = abi.plan.plan;
    plan.ep_groups = ptrs;
    return ncclxPlanValidate(&plan, &abi.plan.team);
}

static void make_team_struct(void *s)
{
    *(ncclxTeam_t *)s = abi.plan.team;
}
static ncclxResult_t call_team(void *s)
{
    return ncclxPlanValidate(&abi.plan.plan, s);
}

static void make_plan_sizes(void *s)
{
    *(ncclxPlanSizes_t *)s = (ncclxPlanSizes_t)NCCLX_PLAN_SIZES_INIT;
}
static ncclxResult_t call_plan_sizes(void *s)
{
    return ncclxPlanComputeSizes(&abi.plan.plan, &abi.plan.team, s);
}
static void expected_plan_sizes(void *s)
{
    make_plan_sizes(s);
    assert_ncclx_ok(call_plan_sizes(s));
}

/* local_rank outside local_size: refused right after the import, before any topology. */
static void make_query(void *s)
{
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    q.local_rank = 5;
    q.local_size = 2;
    q.bound_cpuset = "0-1"; /* the last v1 field */
    *(ncclxPlacementQuery_t *)s = q;
}
static ncclxResult_t call_query(void *s)
{
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    return ncclxPlacementDecide(s, &p);
}

static void make_placement(void *s)
{
    *(ncclxPlacement_t *)s = (ncclxPlacement_t)NCCLX_PLACEMENT_INIT;
}
static ncclxResult_t call_decide_output(void *s)
{
    ncclxPlacementQuery_t q;
    make_query(&q);
    return ncclxPlacementDecide(&q, s);
}
static ncclxResult_t call_get_placement(void *s)
{
    return ncclxContextGetPlacement(abi.ctx, s);
}
static void expected_placement(void *s)
{
    *(ncclxPlacement_t *)s = abi.ctx->placement;
}
static void make_filled_placement(void *s)
{
    expected_placement(s);
}
static ncclxResult_t call_print_placement(void *s)
{
    return ncclxPlacementPrint(s, abi.sink);
}

/* bind=2 is refused right after the import, before the communicator is touched. */
static void make_init_config(void *s)
{
    ncclxInitConfig_t c = NCCLX_INIT_CONFIG_INIT;
    c.bind = 2;
    *(ncclxInitConfig_t *)s = c;
}
static ncclxResult_t call_init_with_comm(void *s)
{
    static char not_a_comm;
    ncclxContext_t ctx = NULL;
    return ncclxInitWithComm(&abi.plan.plan, (struct ncclComm *)(void *)&not_a_comm, s, &ctx);
}

/* num_nodes=3 on 4 ranks is refused right after the import, before the GPU is touched. */
static void make_loopback_config(void *s)
{
    ncclxLoopbackConfig_t c = NCCLX_LOOPBACK_CONFIG_INIT;
    c.num_ranks = 4;
    c.num_nodes = 3;
    *(ncclxLoopbackConfig_t *)s = c;
}
static ncclxResult_t call_loopback_init_config(void *s)
{
    ncclxContext_t ctx[4] = {NULL, NULL, NULL, NULL};
    return ncclxLoopbackInitConfig(&abi.plan.plan, s, ctx);
}

static void make_net_stats(void *s)
{
    *(ncclxNetStats_t *)s = (ncclxNetStats_t)NCCLX_NET_STATS_INIT;
}
static ncclxResult_t call_net_stats(void *s)
{
    return ncclxContextGetNetStats(abi.ctx, s);
}
/* The CPU context has no network: kind NONE, nothing counted. */
static void expected_net_stats(void *s)
{
    *(ncclxNetStats_t *)s = (ncclxNetStats_t)NCCLX_NET_STATS_INIT;
}

static void make_context_info(void *s)
{
    *(ncclxContextInfo_t *)s = (ncclxContextInfo_t)NCCLX_CONTEXT_INFO_INIT;
}
static ncclxResult_t call_context_info(void *s)
{
    return ncclxContextGetInfo(abi.ctx, s);
}
static void expected_context_info(void *s)
{
    *(ncclxContextInfo_t *)s = abi.ctx->info;
}

/* global_expert_ids=2 (the last v1 field but reserved0) is refused before routing. */
static void make_handle_config(void *s)
{
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    c.global_expert_ids = 2;
    *(ncclxEpHandleConfig_t *)s = c;
}
static ncclxResult_t call_handle_create(void *s)
{
    const ncclxTensor_t topk_idx = NCCLX_TENSOR_INIT;
    ncclxEpHandle_t h = NULL;
    return ncclxEpHandleCreate(&abi.group, s, &topk_idx, NULL, &h);
}

/* No tokens: refused by the argument checks, before any launch. */
static void make_dispatch_args(void *s)
{
    *(ncclxEpDispatchArgs_t *)s = (ncclxEpDispatchArgs_t)NCCLX_EP_DISPATCH_ARGS_INIT;
}
static ncclxResult_t call_dispatch(void *s)
{
    return ncclxEpDispatch(&abi.handle, s, NULL);
}

static void make_combine_args(void *s)
{
    ncclxEpCombineArgs_t a = NCCLX_EP_COMBINE_ARGS_INIT;
    a.send_only = 2;
    *(ncclxEpCombineArgs_t *)s = a;
}
static ncclxResult_t call_combine(void *s)
{
    return ncclxEpCombine(&abi.handle, s, NULL);
}

/* recv_total (the last v1 field) as FLOAT32: refused by the tensor checks, before any launch. */
static void make_layout_info(void *s)
{
    ncclxEpLayoutInfo_t info = NCCLX_EP_LAYOUT_INFO_INIT;
    info.recv_total.dtype = NCCLX_FLOAT32;
    info.recv_total.ndim = 1;
    info.recv_total.shape[0] = 1;
    *(ncclxEpLayoutInfo_t *)s = info;
}
static ncclxResult_t call_get_layout(void *s)
{
    return ncclxEpHandleGetLayout(&abi.ht_handle, s, NULL);
}

static void make_ht_buffers(void *s)
{
    *(ncclxEpHtBuffers_t *)s = (ncclxEpHtBuffers_t)NCCLX_EP_HT_BUFFERS_INIT;
}
static ncclxResult_t call_ht_buffers(void *s)
{
    return ncclxEpGroupGetHtBuffers(&abi.ht_group, s);
}
static void expected_ht_buffers(void *s)
{
    ncclxEpHtBuffers_t b = NCCLX_EP_HT_BUFFERS_INIT;
    b.dispatch_rows = abi.ht_group.ht_dispatch_rows;
    b.combine_rows = abi.ht_group.ht_combine_rows;
    b.dispatch_row_bytes = abi.ht_group.dims.payload_bytes;
    b.combine_row_bytes = abi.ht_group.dims.combine_slot_bytes;
    b.rows = abi.ht_group.dims.recv_slots;
    *(ncclxEpHtBuffers_t *)s = b;
}

/* The struct is checked before the group: an HT group is refused after it. */
static void make_ll_buffers(void *s)
{
    *(ncclxEpLlBuffers_t *)s = (ncclxEpLlBuffers_t)NCCLX_EP_LL_BUFFERS_INIT;
}
static ncclxResult_t call_ll_buffers(void *s)
{
    return ncclxEpGroupGetLlBuffers(&abi.ht_group, s);
}

/* global_expert_ids=2 (the last v1 field) is refused by the config check, before any launch. */
static void make_handle_state(void *s)
{
    ncclxEpHandleState_t st = NCCLX_EP_HANDLE_STATE_INIT;
    st.global_expert_ids = 2;
    *(ncclxEpHandleState_t *)s = st;
}
static ncclxResult_t call_handle_import(void *s)
{
    const ncclxTensor_t mem = {(void *)(uintptr_t)0x10000000u, NCCLX_UINT8, 1, {1 << 20, 0, 0, 0}};
    ncclxEpHandle_t h = NULL;
    return ncclxEpHandleImport(&abi.ht_group, NCCLX_EP_LAYOUT_FLAT, s, &mem, NULL, &h);
}

/* A valid side: 64 bytes replicated on [start, start + ranks) of the context's 4; its rank 1
 * is in none of the meshes below, so data is NULL. */
static ncclxM2nTensor_t m2n_side(uint32_t start, uint32_t ranks)
{
    ncclxM2nTensor_t t = NCCLX_M2N_TENSOR_INIT;
    t.local_shape[0] = 64;
    t.mesh.dims[0] = ranks;
    t.mesh.start_rank = start;
    return t;
}

/* placements[0] (the last v1 field) names tensor dim 5 of a 1-dim tensor: refused by the
 * descriptor checks, before anything is enqueued. */
static void make_m2n_tensor(void *s)
{
    ncclxM2nTensor_t t = m2n_side(0, 1);
    t.placements[0] = NCCLX_M2N_SHARD(5);
    *(ncclxM2nTensor_t *)s = t;
}
static ncclxResult_t call_m2n_src(void *s)
{
    const ncclxM2nTensor_t dst = m2n_side(2, 2);
    return ncclxM2nReshard(abi.m2n_ctx, s, &dst, NULL);
}
static ncclxResult_t call_m2n_dst(void *s)
{
    const ncclxM2nTensor_t src = m2n_side(2, 2);
    return ncclxM2nReshard(abi.m2n_ctx, &src, s, NULL);
}
/* In a group the call only records (imports) both descriptors: a valid one is accepted. */
static void make_m2n_recorded(void *s)
{
    *(ncclxM2nTensor_t *)s = m2n_side(0, 1);
}
static ncclxResult_t call_m2n_group(void *s)
{
    const ncclxM2nTensor_t dst = m2n_side(2, 2);
    ncclxResult_t res;
    assert_ncclx_ok(ncclxM2nGroupStart(abi.m2n_ctx));
    res = ncclxM2nReshard(abi.m2n_ctx, s, &dst, NULL);
    assert_ncclx_ok(ncclxM2nGroupAbort(abi.m2n_ctx));
    return res;
}

/* clang-format off */
static const abi_probe_t abi_probes[] = {
    {NCCLX_MAGIC_PLAN, "ncclxPlanValidate", "plan", make_plan, call_plan, ncclxSuccess, NULL,
     NULL, 0},
    {NCCLX_MAGIC_EP_GROUP_PLAN, "ncclxPlanValidate", "plan.ep_groups[0]", make_group_plan,
     call_group_plan, ncclxSuccess, NULL, NULL, 0},
    {NCCLX_MAGIC_TEAM, "ncclxPlanValidate", "team", make_team_struct, call_team, ncclxSuccess,
     NULL, NULL, 1},
    {NCCLX_MAGIC_PLAN_SIZES, "ncclxPlanComputeSizes", "sizes", make_plan_sizes, call_plan_sizes,
     ncclxSuccess, NULL, expected_plan_sizes, 0},
    {NCCLX_MAGIC_PLACEMENT_QUERY, "ncclxPlacementDecide", "query", make_query, call_query,
     ncclxInvalidArgument, "query.local_rank=5 is not below query.local_size=2", NULL, 0},
    {NCCLX_MAGIC_PLACEMENT, "ncclxPlacementDecide", "placement", make_placement,
     call_decide_output, ncclxInvalidArgument, "query.local_rank=5", NULL, 0},
    {NCCLX_MAGIC_PLACEMENT, "ncclxContextGetPlacement", "placement", make_placement,
     call_get_placement, ncclxSuccess, NULL, expected_placement, 0},
    {NCCLX_MAGIC_PLACEMENT, "ncclxPlacementPrint", "placement", make_filled_placement,
     call_print_placement, ncclxSuccess, NULL, NULL, 0},
    {NCCLX_MAGIC_INIT_CONFIG, "ncclxInitWithComm", "config", make_init_config,
     call_init_with_comm, ncclxInvalidArgument, "config->bind=2: must be 0 or 1", NULL, 1},
    {NCCLX_MAGIC_LOOPBACK_CONFIG, "ncclxLoopbackInitConfig", "config", make_loopback_config,
     call_loopback_init_config, ncclxInvalidArgument,
     "config->num_nodes=3 must be 0 (no shape) or divide config->num_ranks=4", NULL, 0},
    {NCCLX_MAGIC_NET_STATS, "ncclxContextGetNetStats", "stats", make_net_stats, call_net_stats,
     ncclxSuccess, NULL, expected_net_stats, 0},
    {NCCLX_MAGIC_CONTEXT_INFO, "ncclxContextGetInfo", "info", make_context_info,
     call_context_info, ncclxSuccess, NULL, expected_context_info, 0},
    {NCCLX_MAGIC_EP_HANDLE_CONFIG, "ncclxEpHandleCreate", "config", make_handle_config,
     call_handle_create, ncclxInvalidArgument, "config->global_expert_ids=2", NULL, 0},
    {NCCLX_MAGIC_EP_DISPATCH_ARGS, "ncclxEpDispatch", "args", make_dispatch_args, call_dispatch,
     ncclxInvalidArgument, "ncclxEpDispatch: args->tokens", NULL, 0},
    {NCCLX_MAGIC_EP_COMBINE_ARGS, "ncclxEpCombine", "args", make_combine_args, call_combine,
     ncclxInvalidArgument, "ncclxEpCombine: args->send_only must be 0 or 1", NULL, 0},
    {NCCLX_MAGIC_EP_LAYOUT_INFO, "ncclxEpHandleGetLayout", "info", make_layout_info,
     call_get_layout, ncclxInvalidArgument,
     "ncclxEpHandleGetLayout: info->recv_total.dtype=2 is not allowed", NULL, 0},
    {NCCLX_MAGIC_EP_HT_BUFFERS, "ncclxEpGroupGetHtBuffers", "buffers", make_ht_buffers,
     call_ht_buffers, ncclxSuccess, NULL, expected_ht_buffers, 0},
    {NCCLX_MAGIC_EP_LL_BUFFERS, "ncclxEpGroupGetLlBuffers", "buffers", make_ll_buffers,
     call_ll_buffers, ncclxInvalidUsage, "ncclxEpGroupGetLlBuffers: EP group 1 is HT", NULL, 0},
    {NCCLX_MAGIC_EP_HANDLE_STATE, "ncclxEpHandleImport", "state", make_handle_state,
     call_handle_import, ncclxInvalidArgument, "config->global_expert_ids=2", NULL, 0},
    {NCCLX_MAGIC_M2N_TENSOR, "ncclxM2nReshard", "src", make_m2n_tensor, call_m2n_src,
     ncclxInvalidArgument, "src.placements[0]=5: must be NCCLX_M2N_REPLICATE (-1) or a tensor dim",
     NULL, 0},
    {NCCLX_MAGIC_M2N_TENSOR, "ncclxM2nReshard", "dst", make_m2n_tensor, call_m2n_dst,
     ncclxInvalidArgument, "dst.placements[0]=5: must be NCCLX_M2N_REPLICATE (-1) or a tensor dim",
     NULL, 0},
    {NCCLX_MAGIC_M2N_TENSOR, "ncclxM2nReshard (recording a group)", "src", make_m2n_recorded,
     call_m2n_group, ncclxSuccess, NULL, NULL, 0},
};
/* clang-format on */
#define ABI_PROBES_LEN (sizeof(abi_probes) / sizeof(abi_probes[0]))

/*
 * Lays the probe's struct out in buf as a caller compiled with `size` would: the first
 * min(size, sizeof) bytes of a valid struct, then `fill` up to the end of the buffer (the
 * fields a newer release appended, or bytes past an older caller's struct).
 */
static void abi_lay_out(const abi_probe_t *p, const abi_entry_t *e, abi_buf_t *buf, size_t size,
                        uint32_t magic, int fill)
{
    abi_buf_t valid;
    ncclx_struct_header_t header;
    memset(valid.bytes, 0, sizeof(valid.bytes));
    p->make(valid.bytes);
    memset(buf->bytes, fill, sizeof(buf->bytes));
    memcpy(buf->bytes, valid.bytes, size < e->size ? size : e->size);
    memcpy(&header, valid.bytes, sizeof(header));
    header.size = size;
    header.magic = magic;
    memcpy(buf->bytes, &header, sizeof(header)); /* bytes, not a typed store: buf is a union */
}

static ncclx_struct_header_t abi_header(const abi_buf_t *buf)
{
    ncclx_struct_header_t header;
    memcpy(&header, buf->bytes, sizeof(header));
    return header;
}

/* Calls the probe with a struct of `size` bytes and `fill` past them; checks what an accepted
 * struct leads to and, for an output, what was written and what was not. */
static void abi_expect_accepted(const abi_probe_t *p, const abi_entry_t *e, size_t size, int fill)
{
    abi_buf_t buf, want;
    const size_t written = size < e->size ? size : e->size;
    const size_t hdr = sizeof(ncclx_struct_header_t);
    abi_lay_out(p, e, &buf, size, e->magic, fill);
    print_message("%s: %s of %zu bytes (v1 %zu), tail 0x%02x\n", p->call_name, e->type, size,
                  e->size_v1, fill);
    if (p->accepted == ncclxSuccess) {
        assert_ncclx_ok(p->call(buf.bytes));
    } else {
        assert_ncclx_error(p->call(buf.bytes), p->accepted, p->accepted_msg);
    }
    assert_int_equal(abi_header(&buf).size, size);
    assert_int_equal(abi_header(&buf).magic, e->magic);
    if (p->expected == NULL || p->accepted != ncclxSuccess) {
        return;
    }
    memset(want.bytes, 0, sizeof(want.bytes));
    p->expected(want.bytes);
    assert_memory_equal(buf.bytes + hdr, want.bytes + hdr, written - hdr);
    for (size_t i = written; i < sizeof(buf.bytes); i++) {
        if (buf.bytes[i] != (unsigned char)fill) {
            fail_msg("%s wrote byte %zu of a %zu-byte %s", p->call_name, i, size, e->type);
        }
    }
}

static void abi_expect_refused(const abi_probe_t *p, const abi_entry_t *e, size_t size,
                               uint32_t magic, const char *needle)
{
    abi_buf_t buf, before;
    abi_lay_out(p, e, &buf, size, magic, 0);
    before = buf;
    assert_ncclx_error(p->call(buf.bytes), ncclxInvalidArgument, needle);
    /* Refused structs are left as they were, outputs included. */
    assert_memory_equal(buf.bytes, before.bytes, sizeof(buf.bytes));
}

static void abi_walk_probe(const abi_probe_t *p, const abi_entry_t *e)
{
    char needle[160];
    assert_true(e->size_v1 + ABI_TAIL <= ABI_BUF_BYTES && e->size + ABI_TAIL <= ABI_BUF_BYTES);
    /* An application built against 0.1, whatever this release added since. */
    abi_expect_accepted(p, e, e->size_v1, 0);
    abi_expect_accepted(p, e, e->size_v1, 0xa5);
    /* This release, and a newer one whose tail holds zeros or fields set to anything: the
     * library ignores what it does not know (include/ncclx/struct.h). */
    abi_expect_accepted(p, e, e->size, 0);
    abi_expect_accepted(p, e, e->size + ABI_TAIL, 0);
    abi_expect_accepted(p, e, e->size + ABI_TAIL, 0xa5);
    /* One byte short of the first released layout, and nonsense sizes. */
    snprintf(needle, sizeof(needle), "%s->size=%zu is smaller than the first released layout",
             p->what, e->size_v1 - 1);
    abi_expect_refused(p, e, e->size_v1 - 1, e->magic, needle);
    snprintf(needle, sizeof(needle), "%s->size=0 is smaller", p->what);
    abi_expect_refused(p, e, 0, e->magic, needle);
    /* Not from its *_INIT macro: zero, garbage, and every other struct's magic. */
    snprintf(needle, sizeof(needle), "%s->magic=0x00000000, expected 0x%08x", p->what, e->magic);
    abi_expect_refused(p, e, e->size, 0, needle);
    snprintf(needle, sizeof(needle), "%s->magic=0x%08x, expected 0x%08x", p->what, ~e->magic,
             e->magic);
    abi_expect_refused(p, e, e->size, ~e->magic, needle);
    for (size_t j = 0; j < ABI_TABLE_LEN; j++) {
        if (abi_table[j].magic == e->magic) {
            continue;
        }
        snprintf(needle, sizeof(needle), "%s->magic=0x%08x, expected 0x%08x", p->what,
                 abi_table[j].magic, e->magic);
        abi_expect_refused(p, e, e->size, abi_table[j].magic, needle);
    }
    /* A NULL struct, unless it stands for the defaults. */
    if (!p->null_means_defaults) {
        snprintf(needle, sizeof(needle), "%s is NULL", p->what);
        assert_ncclx_error(p->call(NULL), ncclxInvalidArgument, needle);
    }
}

static void test_table_walk(void **state)
{
    (void)state;
    make_fixture(&abi.plan);
    abi_setup_ep();
    abi_setup_context();
    abi_setup_m2n();
    abi.sink = fopen("/dev/null", "w");
    assert_non_null(abi.sink);
    for (size_t i = 0; i < ABI_TABLE_LEN; i++) {
        const abi_entry_t *e = &abi_table[i];
        int probes = 0;
        assert_true(e->size >= e->size_v1);
        for (size_t j = 0; j < ABI_TABLE_LEN; j++) {
            assert_true(j == i || abi_table[j].magic != e->magic); /* one magic, one struct */
        }
        for (size_t k = 0; k < ABI_PROBES_LEN; k++) {
            if (abi_probes[k].magic == e->magic) {
                abi_walk_probe(&abi_probes[k], e);
                probes++;
            }
        }
        if (probes == 0) {
            fail_msg("%s (magic 0x%08x) has no probe: add one that calls an entry point taking it",
                     e->type, e->magic);
        }
    }
    assert_int_equal(fclose(abi.sink), 0);
    abi_teardown_m2n();
    free(abi.ctx);
}

static int abi_table_has(uint32_t magic)
{
    for (size_t i = 0; i < ABI_TABLE_LEN; i++) {
        if (abi_table[i].magic == magic) {
            return 1;
        }
    }
    return 0;
}

/* Counts the NCCLX_MAGIC_* of one public header; each must be a table entry. */
static int abi_scan_header(const char *path)
{
    char line[512];
    int found = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fail_msg("cannot read %s", path);
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[128];
        unsigned magic;
        if (sscanf(line, " #define NCCLX_MAGIC_%127[A-Z0-9_] 0x%xu", name, &magic) != 2) {
            continue;
        }
        found++;
        if (!abi_table_has(magic)) {
            fail_msg(
                "%s: NCCLX_MAGIC_%s (0x%08x) is not in NCCLX_STRUCT_ABI_TABLE (lib/core/struct.h)",
                path, name, magic);
        }
    }
    fclose(f);
    return found;
}

/* Every magic of the public headers has a table entry, so the walk above covers every
 * versioned struct.  Needs the source tree (make check exports top_srcdir). */
static void test_table_covers_public_magics(void **state)
{
    const char *top = getenv("top_srcdir");
    char path[4096];
    DIR *dir;
    struct dirent *ent;
    int found = 0;
    (void)state;
    if (top == NULL) {
        print_message("top_srcdir is not set: run under make check\n");
        skip();
    }
    snprintf(path, sizeof(path), "%s/include/ncclx", top);
    dir = opendir(path);
    assert_non_null(dir);
    while ((ent = readdir(dir)) != NULL) {
        size_t len = strlen(ent->d_name);
        if (len > 2 && strcmp(ent->d_name + len - 2, ".h") == 0) {
            snprintf(path, sizeof(path), "%s/include/ncclx/%s", top, ent->d_name);
            found += abi_scan_header(path);
        }
    }
    closedir(dir);
    snprintf(path, sizeof(path), "%s/include/ncclx.h", top);
    found += abi_scan_header(path);
    assert_int_equal(found, ABI_TABLE_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_walk),
        cmocka_unit_test(test_table_covers_public_magics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
