/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Placement entry points: the public query (ncclxPlacementDecide, ncclxPlacementPrint) and the
 * path ncclxInit takes (ncclx_placement_setup), which share ncclx_placement_run().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "env.h"
#include "error.h"
#include "placement.h"
#include "struct.h"

/* The v1 sizes are in lib/core/struct.h's table (checked in lib/core/struct.c); the fields below
 * must not move either. */
_Static_assert(offsetof(ncclxPlacementQuery_t, bound_cpuset) == 48,
               "ncclxPlacementQuery_t.bound_cpuset moved");
_Static_assert(offsetof(ncclxPlacement_t, gpu_busid) == 40, "ncclxPlacement_t.gpu_busid moved");

static ncclxResult_t ncclx_query_check(const ncclxPlacementQuery_t *q)
{
    if (q->local_rank >= q->local_size) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "query.local_rank=%u is not below query.local_size=%u", q->local_rank,
                           q->local_size);
    }
    if (q->cuda_device < -1) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "query.cuda_device=%d: -1 (automatic) or a CUDA device index",
                           (int)q->cuda_device);
    }
    if ((unsigned)q->bind > (unsigned)NCCLX_BIND_NONE) {
        return NCCLX_ERROR(ncclxInvalidArgument, "query.bind=%d is not an ncclxBindPolicy_t",
                           (int)q->bind);
    }
    if (q->topology_xml != NULL && q->gpu_busid == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "query.gpu_busid is needed with query.topology_xml='%s': CUDA cannot "
                           "name another machine's GPUs",
                           q->topology_xml);
    }
    return ncclxSuccess;
}

/* NCCLX_BIND=NONE wins over the caller's AUTO (operators switch binding off without a
 * rebuild); the caller's NONE wins over NCCLX_BIND=AUTO. */
static ncclxResult_t ncclx_bind_policy(ncclxBindPolicy_t requested, ncclx_placement_input_t *in)
{
    int env = 0;
    NCCLX_CHECK(ncclx_env_get_choice(NCCLX_ENV_BIND, &env));
    in->bind_none = 0;
    in->bind_none_why = NULL;
    if (env == 1) {
        in->bind_none = 1;
        in->bind_none_why = "NCCLX_BIND=NONE";
    } else if (requested == NCCLX_BIND_NONE) {
        in->bind_none = 1;
        in->bind_none_why = "binding disabled by the caller (NCCLX_BIND_NONE)";
    }
    return ncclxSuccess;
}

/* The process's binding: from the query, else from the OS on this machine, else unknown. */
static ncclxResult_t ncclx_current_binding(hwloc_topology_t topo, const ncclxPlacementQuery_t *q,
                                           hwloc_bitmap_t set, int *known)
{
    *known = 0;
    if (q->bound_cpuset != NULL) {
        int rc = strncmp(q->bound_cpuset, "0x", 2) == 0
                     ? hwloc_bitmap_sscanf(set, q->bound_cpuset)
                     : hwloc_bitmap_list_sscanf(set, q->bound_cpuset);
        if (rc != 0 || hwloc_bitmap_iszero(set)) {
            return NCCLX_ERROR(ncclxInvalidArgument,
                               "query.bound_cpuset='%s' is neither an hwloc bitmap (0x00000003) "
                               "nor a CPU list (0-1)",
                               q->bound_cpuset);
        }
        *known = 1;
    } else if (q->topology_xml == NULL) {
        /* The calling thread: what a launcher set is inherited by it, and it is what we bind. */
        *known = hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0;
    }
    return ncclxSuccess;
}

/* The GPU by bus id, or the one CUDA gives this local rank. */
static ncclxResult_t ncclx_resolve_gpu(const ncclxPlacementQuery_t *q, const char *device_field,
                                       ncclx_placement_input_t *in, char *busid, size_t len)
{
    ncclx_device_request_t request;
    int device = -1;
    in->cuda_device = -1;
    in->gpu_busid = q->gpu_busid;
    if (q->gpu_busid != NULL) {
        return ncclxSuccess;
    }
    NCCLX_CHECK(ncclx_placement_device_request(q->cuda_device, device_field, &request));
    NCCLX_CHECK(
        ncclx_placement_cuda_gpu(q->local_rank, q->local_size, &request, &device, busid, len));
    in->cuda_device = device;
    in->gpu_busid = busid;
    return ncclxSuccess;
}

ncclxResult_t ncclx_placement_run(const ncclxPlacementQuery_t *query, ncclx_placement_undo_t *undo,
                                  const char *device_field, ncclxPlacement_t *out)
{
    ncclxResult_t res = ncclxSuccess;
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    ncclx_placement_input_t in;
    char busid[NCCLX_PLACEMENT_BUSID_LEN] = "";
    hwloc_topology_t topo;
    hwloc_bitmap_t bound;
    int bound_known = 0;
    NCCLX_CHECK(ncclx_struct_import(&q, sizeof(q), query, NCCLX_MAGIC_PLACEMENT_QUERY,
                                    NCCLX_PLACEMENT_QUERY_SIZE_V1, "query"));
    NCCLX_CHECK(ncclx_query_check(&q));
    memset(&in, 0, sizeof(in));
    in.local_rank = q.local_rank;
    in.local_size = q.local_size;
    NCCLX_CHECK(ncclx_bind_policy(q.bind, &in));
    NCCLX_CHECK(ncclx_resolve_gpu(&q, device_field, &in, busid, sizeof(busid)));
    NCCLX_CHECK(ncclx_topo_load(q.topology_xml, &topo));
    bound = hwloc_bitmap_alloc();
    if (bound == NULL) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxOutOfMemory, "placement bitmap"), res, err_topo);
    }
    NCCLX_CHECK_GOTO(ncclx_current_binding(topo, &q, bound, &bound_known), res, err_bound);
    in.bound = bound_known ? bound : NULL;
    NCCLX_CHECK_GOTO(ncclx_placement_decide(topo, &in, &p), res, err_bound);
    if (undo != NULL) {
        /* The topology goes to *undo: restoring the binding needs it. */
        NCCLX_CHECK_GOTO(ncclx_placement_apply(topo, &p, undo), res, err_bound_applied);
        topo = NULL;
    }
    *out = p;
err_bound:
    hwloc_bitmap_free(bound);
err_topo:
    if (topo != NULL) {
        hwloc_topology_destroy(topo);
    }
    return res;
err_bound_applied:
    topo = NULL; /* a failed apply released it with *undo */
    goto err_bound;
}

ncclxResult_t ncclxPlacementDecide(const ncclxPlacementQuery_t *query, ncclxPlacement_t *placement)
{
    ncclxPlacement_t p;
    NCCLX_CHECK(ncclx_struct_check_output(placement, NCCLX_MAGIC_PLACEMENT, NCCLX_PLACEMENT_SIZE_V1,
                                          "placement"));
    NCCLX_CHECK(ncclx_placement_run(query, NULL, "query.cuda_device", &p));
    ncclx_struct_export(placement, &p, sizeof(p));
    return ncclxSuccess;
}

static const char *ncclx_or_none(const char *s)
{
    return s[0] != '\0' ? s : "none";
}

ncclxResult_t ncclxPlacementPrint(const ncclxPlacement_t *placement, FILE *out)
{
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    char device[16] = "none", distance[16] = "none";
    if (out == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxPlacementPrint: out is NULL");
    }
    NCCLX_CHECK(ncclx_struct_import(&p, sizeof(p), placement, NCCLX_MAGIC_PLACEMENT,
                                    NCCLX_PLACEMENT_SIZE_V1, "placement"));
    if (p.cuda_device >= 0) {
        snprintf(device, sizeof(device), "%d", (int)p.cuda_device);
    }
    if (p.nic_distance >= 0) {
        snprintf(distance, sizeof(distance), "%d", (int)p.nic_distance);
    }
    fprintf(out,
            "gpu_busid=%s\ncuda_device=%s\nlocal_rank=%u\nlocal_size=%u\nnuma=%s\ncpuset=%s\n"
            "cpus=%s\nnic=%s\nnic_busid=%s\nnic_distance=%s\nnic_ties=%u\nbind=%s\n"
            "bind_reason=%s\n",
            ncclx_or_none(p.gpu_busid), device, p.local_rank, p.local_size, ncclx_or_none(p.numa),
            ncclx_or_none(p.cpuset), ncclx_or_none(p.cpus), ncclx_or_none(p.nic),
            ncclx_or_none(p.nic_busid), distance, p.nic_ties, p.bind ? "yes" : "no",
            ncclx_or_none(p.bind_reason));
    if (ferror(out)) {
        return NCCLX_ERROR(ncclxSystemError, "ncclxPlacementPrint: write failed: %s",
                           strerror(errno));
    }
    return ncclxSuccess;
}
