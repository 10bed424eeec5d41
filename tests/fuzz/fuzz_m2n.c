/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * M2N tensor descriptors and the host planner: ncclxM2nReshard and groups (GroupStart, End,
 * Abort) with descriptors from the fuzzer's bytes, on a context of 1 to 16 ranks built
 * without a GPU (the plan's regions laid out over host memory, the engine bound as init binds
 * it).  Every check of lib/m2n/m2n.c and lib/m2n/m2n_plan.c runs, and so does the planning of each
 * launch; the launch itself, and the CUDA calls around it, are replaced at link time
 * (-Wl,--wrap) so that nothing reaches the CUDA runtime.  The replaced launch checks what the
 * kernel would be given: every box inside this rank's tile and inside the peer's, every box in
 * its pair's stream, every pair on blocks of the grid.
 *
 * Input: the context (ranks, rank, blocks, staging, group entries, one GPU or not), then
 * operations: a reshard (two descriptors), group start / end / abort, the status word.
 */
#include <cuda_runtime_api.h>

#include "fuzz_common.h"

#include "context.h"
#include "m2n.h"
#include "m2n_engine.h"
#include "plan_internal.h"
#include "struct.h"

#define MAX_OPS     32
#define MAX_RECORDS 64
/* Tiles at 2^63 + 8 KiB * record: far from every real address, and a tile of up to 2^62
 * bytes (the largest M2N allows) ends below 2^64. */
#define TILE_BASE   ((uintptr_t)1 << 63)
#define FAKE_DEVICE ((void *)(uintptr_t)0x20000000u)

/* The tiles handed to the library, in call order: launches take them in the same order. */
typedef struct {
    uintptr_t data[2];  /* 0 where this rank passed NULL */
    uint64_t bytes[2];  /* local tile bytes of each side (on every rank of that side) */
    uint64_t global[2]; /* the whole tensor's bytes as each side describes it (saturated) */
} record_t;

static struct {
    record_t records[MAX_RECORDS];
    uint32_t num_records;
    uint32_t cursor;    /* the record of the next launch's entry 0 */
    int capturing;      /* cudaStreamIsCapturing's answer */
    cudaError_t launch; /* the launch's result */
    uint32_t launches;
} sim;

cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream);
cudaError_t __wrap_ncclx_m2n_launch(const ncclx_m2n_launch_t *l, cudaStream_t stream)
{
    (void)stream;
    sim.launches++;
    FUZZ_CHECK(l->blocks >= 1 && l->num_pairs >= 0 && l->num_pairs <= (int)NCCLX_M2N_MAX_PEERS);
    FUZZ_CHECK(l->num_entries >= 0 && l->num_entries <= (int)NCCLX_M2N_MAX_TRANSFERS);
    if (l->word & NCCLX_M2N_VOTE_REFUSE) {
        FUZZ_CHECK(l->num_pairs == 0 && l->num_entries == 0);
    }
    FUZZ_CHECK(sim.cursor + (uint32_t)l->num_entries <= sim.num_records);
    /* docs/m2n.md: tensors are below 2^62 bytes, so sums and products of two sizes fit. */
    for (int e = 0; e < l->num_entries; e++) {
        const record_t *r = &sim.records[sim.cursor + (uint32_t)e];
        FUZZ_CHECK(r->global[0] < (1ull << 62) && r->global[1] < (1ull << 62));
    }
    for (int k = 0; k < l->num_pairs; k++) {
        const ncclx_m2n_pair_desc_t *p = &l->pairs[k];
        uint64_t end = 0;
        FUZZ_CHECK(p->peer >= 0 && p->peer < l->ranks && p->num_boxes >= 1);
        FUZZ_CHECK(p->first_box >= 0 &&
                   p->first_box + p->num_boxes <= (int)NCCLX_M2N_MAX_TRANSFERS);
        FUZZ_CHECK(p->blocks >= 0 && p->first_block >= 0 && p->first_block < l->blocks &&
                   p->first_block + (p->blocks > 0 ? p->blocks : 1) <= l->blocks);
        for (int b = p->first_box; b < p->first_box + p->num_boxes; b++) {
            const ncclx_m2n_box_desc_t *x = &l->boxes[b];
            FUZZ_CHECK(x->entry >= 0 && x->entry < l->num_entries);
            const record_t *r = &sim.records[sim.cursor + (uint32_t)x->entry];
            const int own = p->send ? 0 : 1;
            FUZZ_CHECK(x->run > 0 && x->pieces1 > 0 && x->bytes > 0);
            FUZZ_CHECK(x->bytes % (x->run * x->pieces1) == 0);
            const uint64_t pieces0 = x->bytes / (x->run * x->pieces1);
            FUZZ_CHECK(r->data[own] != 0 && (uintptr_t)x->tile >= r->data[own]);
            const uint64_t offset = (uint64_t)((uintptr_t)x->tile - r->data[own]);
            const uint64_t last =
                offset + (pieces0 - 1) * x->stride0 + (x->pieces1 - 1) * x->stride1 + x->run;
            FUZZ_CHECK(last <= r->bytes[own]);
            const uint64_t peer_last = x->peer_offset + (pieces0 - 1) * x->peer_stride0 +
                                       (x->pieces1 - 1) * x->peer_stride1 + x->run;
            FUZZ_CHECK(peer_last <= r->bytes[1 - own]);
            FUZZ_CHECK(x->begin % 16 == 0 && x->begin >= end);
            end = x->begin + x->bytes;
        }
        FUZZ_CHECK(end == p->bytes);
    }
    sim.cursor += (uint32_t)l->num_entries;
    return sim.launch;
}

cudaError_t __wrap_cudaGetLastError(void);
cudaError_t __wrap_cudaGetLastError(void)
{
    return cudaSuccess;
}

cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *s);
cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *s)
{
    (void)stream;
    *s = sim.capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t __wrap_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t __wrap_cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    (void)stream;
    (void)event;
    (void)flags;
    return cudaSuccess;
}

cudaError_t __wrap_cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t __wrap_cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)event;
    (void)stream;
    return cudaSuccess;
}

const char *__wrap_cudaGetErrorString(cudaError_t err);
const char *__wrap_cudaGetErrorString(cudaError_t err)
{
    (void)err;
    return "injected CUDA error";
}

typedef struct {
    struct ncclxContext ctx;
    void *host, *mapped;
} world_t;

/* A context as init builds it, minus the GPU: the plan's regions over host memory (the device
 * classes at a fake address nothing dereferences), the M2N engine bound.  0: not drawn. */
static int make_world(fuzz_input_t *in, world_t *w)
{
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_layout_t layout;
    struct ncclxContext *ctx = &w->ctx;
    const uint8_t shape = fuzz_u8(in);
    const uint8_t blocks = fuzz_u8(in);
    memset(w, 0, sizeof(*w));
    team.num_ranks = team.lsa_size = 1u + (shape & 15u);
    plan.m2n_staging_bytes =
        (uint64_t)team.num_ranks * NCCLX_M2N_MIN_STAGING_PER_RANK * (1u + ((shape >> 4) & 3u));
    plan.m2n_max_group_entries = 1u + fuzz_u8(in) % 16u;
    if (ncclx_plan_import(&plan, &team, &ctx->norm) != ncclxSuccess) {
        return 0;
    }
    ncclx_layout_init_measure(&layout, NULL, NULL);
    if (ncclx_plan_layout(&layout, &ctx->norm, &ctx->regions) != ncclxSuccess) {
        return 0;
    }
    w->host = aligned_alloc(NCCLX_DEVICE_ALIGN,
                            ncclx_align_up(layout.arena[NCCLX_MEM_HOST].used + 1, 256));
    w->mapped = aligned_alloc(NCCLX_DEVICE_ALIGN,
                              ncclx_align_up(layout.arena[NCCLX_MEM_MAPPED_HOST].used + 1, 256));
    if (w->host == NULL || w->mapped == NULL) {
        abort();
    }
    ctx->arenas.base[NCCLX_MEM_HOST] = w->host;
    ctx->arenas.base[NCCLX_MEM_MAPPED_HOST] = w->mapped;
    ctx->arenas.base[NCCLX_MEM_DEVICE] = FAKE_DEVICE;
    ctx->arenas.mapped_device = w->mapped;
    ctx->rank = (int)(fuzz_u8(in) % team.num_ranks);
    ctx->blocks = 1 + blocks % 160;
    ctx->loopback = (shape & 0x40u) ? (struct ncclx_loopback *)FAKE_DEVICE : NULL;
    ctx->m2n = ncclx_m2n_bind_host(ctx);
    FUZZ_CHECK(ctx->m2n != NULL);
    return 1;
}

/* One side: mostly sizes and meshes that fit, sometimes raw values. */
static void read_side(fuzz_input_t *in, const world_t *w, ncclxM2nTensor_t *t, uint32_t id,
                      int side, record_t *r)
{
    const ncclxM2nTensor_t init = NCCLX_M2N_TENSOR_INIT;
    const uint32_t world = w->ctx.norm.team.num_ranks;
    const uint8_t flags = fuzz_u8(in);
    uint64_t bytes;
    *t = init;
    t->size = fuzz_struct_size(in, NCCLX_M2N_TENSOR_SIZE_V1, sizeof(*t));
    t->magic ^= (flags & 1u) ? 0x40u : 0u;
    t->dtype = (flags & 2u) ? (ncclxDataType_t)fuzz_u8(in) : NCCLX_BFLOAT16;
    t->ndims = (flags & 4u) ? fuzz_u32(in) : 1u + fuzz_u8(in) % 3u;
    for (uint32_t d = 0; d < NCCLX_M2N_MAX_TENSOR_DIMS; d++) {
        t->local_shape[d] = (flags & 8u) ? fuzz_u64(in) : 1u + fuzz_u8(in) % 24u;
    }
    if (flags & 16u) {
        t->mesh.ndims = fuzz_u32(in);
        t->mesh.dims[0] = fuzz_u32(in);
        t->mesh.dims[1] = fuzz_u32(in);
        t->mesh.start_rank = fuzz_u32(in);
        t->placements[0] = (int32_t)fuzz_u32(in);
        t->placements[1] = (int32_t)fuzz_u32(in);
    } else {
        const uint8_t m = fuzz_u8(in);
        t->mesh.ndims = 1u + (m & 1u);
        t->mesh.dims[0] = 1u + (m >> 1) % 4u;
        t->mesh.dims[1] = 1u + (m >> 3) % 4u;
        t->mesh.start_rank = fuzz_u8(in) % world;
        t->placements[0] = (int32_t)((m >> 5) % 4u) - 1;
        t->placements[1] = (m & 0x80u) ? 0 : NCCLX_M2N_REPLICATE;
    }
    /* The tile: this rank's when it is on the mesh, else NULL, unless told otherwise. */
    const uint64_t size = (uint64_t)t->mesh.dims[0] * (t->mesh.ndims == 2 ? t->mesh.dims[1] : 1);
    const uint64_t rank = (uint64_t)w->ctx.rank;
    const int member = rank >= t->mesh.start_rank && rank < (uint64_t)t->mesh.start_rank + size;
    uintptr_t data = TILE_BASE + (uintptr_t)(2u * id + (uint32_t)side) * 4096u;
    if (flags & 32u) {
        data = (flags & 64u) ? data + 1u : 0u;
    } else if (!member) {
        data = 0;
    }
    t->data = (void *)data;
    r->data[side] = data;
    bytes = ncclx_m2n_dtype_bytes(t->dtype);
    for (uint32_t d = 0; d < t->ndims && d < NCCLX_M2N_MAX_TENSOR_DIMS; d++) {
        if (__builtin_mul_overflow(bytes, t->local_shape[d], &bytes)) {
            bytes = UINT64_MAX;
        }
    }
    r->bytes[side] = bytes;
    for (uint32_t a = 0; a < t->mesh.ndims && a < NCCLX_M2N_MAX_MESH_DIMS; a++) {
        if (t->placements[a] != NCCLX_M2N_REPLICATE &&
            __builtin_mul_overflow(bytes, (uint64_t)t->mesh.dims[a], &bytes)) {
            bytes = UINT64_MAX;
        }
    }
    r->global[side] = bytes;
}

static void do_reshard(fuzz_input_t *in, world_t *w, int recording)
{
    ncclxM2nTensor_t src, dst;
    record_t rec;
    const uint32_t id = sim.num_records;
    read_side(in, w, &src, id, 0, &rec);
    read_side(in, w, &dst, id, 1, &rec);
    const uint8_t flags = fuzz_u8(in);
    sim.capturing = flags & 1u;
    sim.launch = (flags & 0xe0u) == 0xe0u ? cudaErrorLaunchFailure : cudaSuccess;
    if (sim.num_records == MAX_RECORDS) {
        return;
    }
    sim.records[sim.num_records++] = rec;
    const ncclxResult_t res = ncclxM2nReshard(&w->ctx, (flags & 0x1cu) == 0x04u ? NULL : &src,
                                              (flags & 0x1cu) == 0x08u ? NULL : &dst, NULL);
    if (res != ncclxSuccess) {
        FUZZ_CHECK(ncclxGetLastError()[0] != '\0');
        if (recording) {
            sim.num_records--; /* a group keeps only the entries it accepted */
        }
    }
}

/* Launches of a call take the records from its first entry on. */
static void start_call(uint32_t first)
{
    sim.cursor = first;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = fuzz_input(data, size);
    static world_t w;
    uint32_t group_first = 0, depth = 0;
    fuzz_silence_log();
    memset(&sim, 0, sizeof(sim));
    if (!make_world(&in, &w)) {
        free(w.host);
        free(w.mapped);
        return 0;
    }
    for (int op = 0; op < MAX_OPS && fuzz_left(&in); op++) {
        const uint8_t pick = fuzz_u8(&in);
        switch (pick % 6u) {
        case 0:
        case 1:
        case 2:
            /* An eager call's launches take its own record; a recorded one waits for End. */
            start_call(depth > 0 ? group_first : sim.num_records);
            do_reshard(&in, &w, depth > 0);
            break;
        case 3:
            if (ncclxM2nGroupStart(&w.ctx) == ncclxSuccess && depth++ == 0) {
                group_first = sim.num_records;
            }
            break;
        case 4:
            start_call(group_first);
            if (depth > 0) {
                depth--;
            }
            (void)ncclxM2nGroupEnd(&w.ctx);
            break;
        default:
            if (pick & 0x80u) {
                (void)ncclxM2nGroupAbort(&w.ctx);
                depth = 0;
            } else {
                /* The mapped status word the kernels publish (a TIMEOUT refuses every call). */
                volatile unsigned *status =
                    (volatile unsigned *)((char *)w.mapped + w.ctx.regions.m2n_status);
                uint32_t error = 0;
                *status = pick & (NCCLX_M2N_ERROR_TIMEOUT | NCCLX_M2N_ERROR_REFUSED);
                FUZZ_CHECK(ncclxM2nGetAsyncError(&w.ctx, &error) == ncclxSuccess);
                FUZZ_CHECK(error == *status);
            }
            break;
        }
    }
    (void)ncclxM2nGroupAbort(&w.ctx);
    free(w.host);
    free(w.mapped);
    return 0;
}
