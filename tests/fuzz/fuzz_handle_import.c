/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * HT handle snapshots on the host: ncclxEpHandleImport's checks of the caller's state struct,
 * layout and handle_mem tensor, its verdict handling and its pool bookkeeping, mixed with
 * ncclxEpHandleInit, ncclxEpHandleMemSize and ncclxEpHandleDestroy, on a group built from the
 * fuzzer's bytes without a GPU.  The snapshot's own bytes are read by the verify kernel on
 * the GPU: here the kernel launch is replaced at link time (-Wl,--wrap) by one that reports
 * a verdict taken from the input, and so are the CUDA calls around it, so that nothing
 * reaches the CUDA runtime.
 *
 * Properties: an import succeeds only with a clean verdict and a big enough handle_mem and
 * then takes exactly one handle; a refused call leaves *handle alone and the pool as it was.
 */
#include <cuda_runtime_api.h>

#include "fuzz_common.h"

#include "context.h"
#include "ep_group.h"
#include "plan_internal.h"
#include "pool.h"
#include "struct.h"

/* A fake device address on cudaMalloc's alignment: nothing on the host dereferences it. */
#define MEM         ((char *)(uintptr_t)0x10000000u)
#define SENTINEL    ((ncclxEpHandle_t)(uintptr_t)0x5a5a5a5au)
#define MAX_HANDLES 8
#define MAX_OPS     24

/* What the replaced CUDA calls report for the call under way. */
static struct {
    unsigned verdict;
    cudaError_t launch, sync;
    int launched;
} stub;

cudaError_t __wrap_ncclx_ep_ht_launch_verify(const ncclx_ep_ht_group_desc_t *g,
                                             const ncclx_ep_ht_handle_desc_t *h, int idx_int64,
                                             unsigned *verdict, unsigned long long *step,
                                             cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ht_launch_verify(const ncclx_ep_ht_group_desc_t *g,
                                             const ncclx_ep_ht_handle_desc_t *h, int idx_int64,
                                             unsigned *verdict, unsigned long long *step,
                                             cudaStream_t stream)
{
    (void)g;
    (void)h;
    (void)idx_int64;
    (void)stream;
    stub.launched = 1;
    if (stub.launch == cudaSuccess) {
        *verdict = stub.verdict; /* the mapped status block: host memory here */
        *step = 7;
    }
    return stub.launch;
}

cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t stream);
cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return stub.sync;
}

cudaError_t __wrap_cudaGetLastError(void);
cudaError_t __wrap_cudaGetLastError(void)
{
    return cudaSuccess;
}

const char *__wrap_cudaGetErrorString(cudaError_t err);
const char *__wrap_cudaGetErrorString(cudaError_t err)
{
    (void)err;
    return "injected CUDA error";
}

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handles[MAX_HANDLES];
    uint32_t bookkeeping[4 * MAX_HANDLES];
    uint64_t status[8]; /* the group's mapped status block (NCCLX_STATUS_BYTES) */
    struct ncclxContext ctx;
    ncclxEpHandle_t live[MAX_HANDLES];
    uint32_t num_live;
} world_t;

/* An HT group of small random shape, as context setup builds it minus the GPU; 0 when the
 * plan drawn is not valid (tests/fuzz/fuzz_plan.c fuzzes plans). */
static int make_group(fuzz_input_t *in, world_t *w)
{
    ncclxEpGroupPlan_t gp = NCCLX_EP_GROUP_PLAN_INIT;
    const ncclxEpGroupPlan_t *groups[1] = {&gp};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_ep_group_t *g = &w->group;
    const uint8_t shape = fuzz_u8(in);
    int ok = 0;
    if (norm == NULL) {
        abort();
    }
    team.num_ranks = team.lsa_size = 1u + (shape & 7u);
    gp.algorithm = NCCLX_EP_ALGO_HT;
    gp.num_experts = team.num_ranks * (1u + fuzz_u8(in) % 16u);
    gp.max_topk = 1u + fuzz_u8(in) % 32u;
    gp.hidden = 32u * (1u + fuzz_u8(in) % 32u);
    gp.layouts = fuzz_u8(in) & (NCCLX_EP_LAYOUT_EXPERT_MAJOR | NCCLX_EP_LAYOUT_FLAT);
    gp.recipes = NCCLX_EP_RECIPE_NONE | ((shape & 8u) ? NCCLX_EP_RECIPE_MXFP8 : 0u);
    gp.max_dispatch_tokens_per_rank = 1u + fuzz_u16(in) % 4096u;
    gp.max_recv_tokens_per_rank = fuzz_u16(in);
    gp.expert_alignment = (shape & 16u) ? 1u << (fuzz_u8(in) % 8u) : 0u;
    gp.num_handles = 1u + (shape >> 5) % MAX_HANDLES;
    gp.overflow_policy = fuzz_u8(in) & 1u;
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    memset(w, 0, sizeof(*w));
    if (ncclx_plan_import(&plan, &team, norm) == ncclxSuccess) {
        g->plan = norm->groups[0];
        ok = ncclx_ep_dims_compute(&g->plan, &norm->team, 0, &g->dims) == ncclxSuccess;
    }
    free(norm);
    if (!ok) {
        return 0;
    }
    ncclx_ep_ll_handle_layout(&g->dims, (gp.layouts & NCCLX_EP_LAYOUT_EXPERT_MAJOR) != 0,
                              &g->handle_layout);
    ncclx_ep_ht_handle_layout(&g->dims, &g->ht_handle_layout);
    g->status = (volatile uint32_t *)w->status;
    g->ctx = &w->ctx;
    g->regions.status = 0;
    w->ctx.arenas.mapped_device = w->status; /* the device view is the host view here */
    if (sizeof(w->bookkeeping) < ncclx_pool_bookkeeping_bytes(gp.num_handles)) {
        abort();
    }
    ncclx_pool_init(&g->handles, "EP group 0 handles", "raise num_handles", w->handles,
                    sizeof(ncclx_ep_handle_t), gp.num_handles, w->bookkeeping);
    return 1;
}

static uint32_t read_layout(fuzz_input_t *in)
{
    static const uint32_t layouts[4] = {NCCLX_EP_LAYOUT_EXPERT_MAJOR, NCCLX_EP_LAYOUT_FLAT,
                                        NCCLX_EP_LAYOUT_RANK_MAJOR, 0};
    const uint8_t pick = fuzz_u8(in);
    return (pick & 3u) == 3u ? (uint32_t)pick >> 2 : layouts[pick & 3u];
}

/* handle_mem: mostly a 1-D UINT8 tensor of about the size the shape needs. */
static ncclxTensor_t read_mem(fuzz_input_t *in, const ncclx_ep_group_t *g, uint32_t layout,
                              uint32_t topk)
{
    ncclxTensor_t t = {MEM, NCCLX_UINT8, 1, {0, 0, 0, 0}};
    size_t need = 0;
    const uint8_t pick = fuzz_u8(in);
    if (ncclxEpHandleMemSize((ncclxEpGroup_t)g, layout, topk, &need) != ncclxSuccess) {
        need = 4096;
    }
    switch (pick & 7u) {
    case 0:
    case 1:
        t.shape[0] = (int64_t)need;
        break;
    case 2:
        t.shape[0] = (int64_t)need - 1;
        break;
    case 3:
        t.shape[0] = (int64_t)need + fuzz_u16(in);
        break;
    default:
        t.shape[0] = (int64_t)fuzz_u64(in);
        break;
    }
    if (pick & 0x08u) {
        t.data = (pick & 0x10u) ? NULL : MEM + 1 + fuzz_u8(in);
    }
    if (pick & 0x20u) {
        t.dtype = (ncclxDataType_t)fuzz_u8(in);
    }
    if (pick & 0x40u) {
        t.ndim = fuzz_u8(in);
        t.shape[1] = (int64_t)fuzz_u64(in);
    }
    return t;
}

static void do_import(fuzz_input_t *in, world_t *w)
{
    ncclx_ep_group_t *g = &w->group;
    ncclxEpHandleState_t st = NCCLX_EP_HANDLE_STATE_INIT;
    ncclxEpHandle_t h = SENTINEL;
    const uint32_t layout = read_layout(in);
    const uint8_t flags = fuzz_u8(in);
    size_t need = 0;
    st.size = fuzz_struct_size(in, NCCLX_EP_HANDLE_STATE_SIZE_V1, sizeof(st));
    st.magic ^= (flags & 1u) ? 0x40u : 0u;
    st.num_tokens = (flags & 2u) ? fuzz_u32(in) : fuzz_u16(in) % (g->dims.tokens + 1u);
    st.topk = (flags & 4u) ? fuzz_u32(in) : fuzz_u8(in) % (g->plan.max_topk + 1u);
    st.topk_idx_dtype = (flags & 8u)    ? (ncclxDataType_t)fuzz_u8(in)
                        : (flags & 16u) ? NCCLX_INT64
                                        : NCCLX_INT32;
    st.global_expert_ids = (flags & 32u) ? fuzz_u32(in) : 0u;
    const ncclxTensor_t mem = read_mem(in, g, layout, st.topk);
    stub.verdict = (flags & 64u) ? fuzz_u32(in) : 0u;
    stub.launch = (flags & 128u) ? (cudaError_t)(1 + fuzz_u8(in) % 8u) : cudaSuccess;
    stub.sync = stub.launch == cudaSuccess && (stub.verdict & 0x80000000u) ? cudaErrorLaunchFailure
                                                                           : cudaSuccess;
    stub.launched = 0;
    const uint32_t before = ncclx_pool_in_use(&g->handles);
    const int null_state = (flags & 0xc0u) == 0xc0u && st.num_tokens == 1u;
    const ncclxResult_t res = ncclxEpHandleImport(g, layout, null_state ? NULL : &st, &mem, NULL,
                                                  w->num_live < MAX_HANDLES ? &h : NULL);
    if (res != ncclxSuccess) {
        FUZZ_CHECK(h == SENTINEL);
        FUZZ_CHECK(ncclx_pool_in_use(&g->handles) == before);
        if (stub.launched && stub.launch == cudaSuccess && stub.sync == cudaSuccess &&
            stub.verdict != 0) {
            /* Every verdict bit is a refusal naming the snapshot or the state. */
            FUZZ_CHECK(res == ncclxInvalidArgument &&
                       strstr(ncclxGetLastError(), "ncclxEpHandleImport") != NULL);
        }
        return;
    }
    FUZZ_CHECK(stub.launched && stub.verdict == 0 && stub.launch == cudaSuccess &&
               stub.sync == cudaSuccess);
    FUZZ_CHECK(h != SENTINEL && h != NULL && h->live && h->routed);
    FUZZ_CHECK(ncclx_pool_in_use(&g->handles) == before + 1u);
    FUZZ_CHECK(ncclxEpHandleMemSize(g, layout, st.topk, &need) == ncclxSuccess);
    FUZZ_CHECK(mem.shape[0] >= (int64_t)need && mem.ndim == 1 && mem.dtype == NCCLX_UINT8);
    FUZZ_CHECK(st.num_tokens <= g->dims.tokens && st.topk >= 1 && st.topk <= g->plan.max_topk);
    FUZZ_CHECK(h->config.layout == layout && h->config.topk == st.topk);
    w->live[w->num_live++] = h;
}

static void do_init(fuzz_input_t *in, world_t *w)
{
    ncclx_ep_group_t *g = &w->group;
    ncclxEpHandleConfig_t c = NCCLX_EP_HANDLE_CONFIG_INIT;
    ncclxEpHandle_t h = SENTINEL;
    const uint8_t flags = fuzz_u8(in);
    c.size = fuzz_struct_size(in, NCCLX_EP_HANDLE_CONFIG_SIZE_V1, sizeof(c));
    c.magic ^= (flags & 1u) ? 0x40u : 0u;
    c.layout = read_layout(in);
    c.topk = (flags & 2u) ? fuzz_u32(in) : fuzz_u8(in) % (g->plan.max_topk + 1u);
    c.global_expert_ids = (flags & 4u) ? fuzz_u32(in) : 0u;
    const ncclxTensor_t mem = read_mem(in, g, c.layout, c.topk);
    const uint32_t before = ncclx_pool_in_use(&g->handles);
    const ncclxResult_t res = ncclxEpHandleInit(g, &c, &mem, NULL, &h);
    if (res != ncclxSuccess) {
        FUZZ_CHECK(h == SENTINEL && ncclx_pool_in_use(&g->handles) == before);
        return;
    }
    FUZZ_CHECK(h != SENTINEL && h->live && !h->routed);
    FUZZ_CHECK(ncclx_pool_in_use(&g->handles) == before + 1u);
    if (w->num_live < MAX_HANDLES) {
        w->live[w->num_live++] = h;
    } else {
        FUZZ_CHECK(ncclxEpHandleDestroy(h) == ncclxSuccess);
    }
}

static void do_destroy(fuzz_input_t *in, world_t *w)
{
    const uint8_t pick = fuzz_u8(in);
    if (w->num_live == 0) {
        return;
    }
    const uint32_t i = pick % w->num_live;
    FUZZ_CHECK(ncclxEpHandleDestroy(w->live[i]) == ncclxSuccess);
    w->live[i] = w->live[--w->num_live];
}

static void do_state(fuzz_input_t *in, world_t *w)
{
    const uint8_t pick = fuzz_u8(in);
    /* The asynchronous error word and a broken group: imports are refused, inits too. */
    *w->group.status = pick & (NCCLX_EP_ERROR_TIMEOUT | NCCLX_EP_ERROR_OVERFLOW);
    w->group.broken = (pick >> 7) & 1u;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = fuzz_input(data, size);
    static world_t w;
    fuzz_silence_log();
    if (!make_group(&in, &w)) {
        return 0;
    }
    for (int op = 0; op < MAX_OPS && fuzz_left(&in); op++) {
        switch (fuzz_u8(&in) % 5u) {
        case 0:
        case 1:
            do_import(&in, &w);
            break;
        case 2:
            do_init(&in, &w);
            break;
        case 3:
            do_destroy(&in, &w);
            break;
        default:
            do_state(&in, &w);
            break;
        }
    }
    while (w.num_live > 0) {
        FUZZ_CHECK(ncclxEpHandleDestroy(w.live[--w.num_live]) == ncclxSuccess);
    }
    FUZZ_CHECK(ncclx_pool_in_use(&w.group.handles) == 0);
    return 0;
}
