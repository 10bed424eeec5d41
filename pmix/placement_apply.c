/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Applying a placement to this process: CPU and memory binding, NCCL_IB_HCA, the current CUDA
 * device.  Runs once in ncclxInit, before NCCL reads its environment and before the CUDA
 * context exists, so that CUDA's and NCCL's threads inherit the binding.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "error.h"
#include "gpu_check.h"
#include "placement.h"

/*
 * Binding is a performance hint: when the OS refuses it (a container without CAP_SYS_NICE
 * refuses memory policies) we say so and run unbound rather than fail the job.  Only the
 * calling thread is bound: threads it starts later inherit it, while threads the application
 * already placed keep their own binding.  Memory uses hwloc's non-strict BIND (a preferred
 * policy): allocations may still spill to other nodes instead of failing.
 */
ncclxResult_t ncclx_placement_bind(hwloc_topology_t topo, const ncclxPlacement_t *p)
{
    ncclxResult_t res = ncclxSuccess;
    hwloc_bitmap_t cpus, nodes;
    if (!p->bind) {
        return ncclxSuccess;
    }
    cpus = hwloc_bitmap_alloc();
    nodes = hwloc_bitmap_alloc();
    if (cpus == NULL || nodes == NULL) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxOutOfMemory, "binding bitmaps"), res, err_free);
    }
    if (hwloc_bitmap_sscanf(cpus, p->cpuset) != 0 ||
        hwloc_bitmap_list_sscanf(nodes, p->numa) != 0) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxInvalidArgument,
                                     "placement.cpuset='%s' or placement.numa='%s' is not a set",
                                     p->cpuset, p->numa),
                         res, err_free);
    }
    if (hwloc_set_cpubind(topo, cpus, HWLOC_CPUBIND_THREAD) != 0) {
        NCCLX_WARN("cannot bind to CPUs %s near GPU %s: %s; running unbound", p->cpus, p->gpu_busid,
                   strerror(errno));
    } else {
        NCCLX_INFO("bound to CPUs %s near GPU %s", p->cpus, p->gpu_busid);
    }
    /* No NUMA node near the GPU that we may use (p->numa empty): nothing to prefer. */
    if (!hwloc_bitmap_iszero(nodes) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_allowed_nodeset(topo), nodes) &&
        hwloc_set_membind(topo, nodes, HWLOC_MEMBIND_BIND,
                          HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
        NCCLX_WARN("cannot prefer memory of NUMA node(s) %s near GPU %s: %s; first-touch "
                   "placement applies",
                   p->numa, p->gpu_busid, strerror(errno));
    }
err_free:
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(cpus);
    return res;
}

ncclxResult_t ncclx_placement_export_nic(const ncclxPlacement_t *p)
{
    /* Not an NCCLX_* variable: NCCL's own, which we read but never declare. */
    const char *user = getenv("NCCL_IB_HCA");
    char value[NCCLX_PLACEMENT_NAME_LEN + 1];
    if (p->nic[0] == '\0') {
        NCCLX_INFO("no RDMA NIC near GPU %s: NCCL_IB_HCA left to NCCL", p->gpu_busid);
        return ncclxSuccess;
    }
    if (user != NULL && user[0] != '\0') {
        NCCLX_INFO("NCCL_IB_HCA=%s is set: keeping it instead of %s", user, p->nic);
        return ncclxSuccess;
    }
    /* "=" asks NCCL for this exact device: plain "mlx5_1" would also match mlx5_10..19. */
    snprintf(value, sizeof(value), "=%s", p->nic);
    if (setenv("NCCL_IB_HCA", value, 1) != 0) {
        return NCCLX_ERROR(ncclxSystemError, "setenv(NCCL_IB_HCA=%s) failed: %s", value,
                           strerror(errno));
    }
    NCCLX_INFO("NCCL_IB_HCA=%s (nearest NIC of GPU %s, distance %d)", value, p->gpu_busid,
               (int)p->nic_distance);
    return ncclxSuccess;
}

/* The calling thread's bindings before ncclx_placement_bind changes them.  A binding that
 * cannot be read is not put back (and was usually not changeable either). */
static void ncclx_placement_save_binding(hwloc_topology_t topo, ncclx_placement_undo_t *undo)
{
    undo->cpus = hwloc_bitmap_alloc();
    if (undo->cpus != NULL && hwloc_get_cpubind(topo, undo->cpus, HWLOC_CPUBIND_THREAD) != 0) {
        hwloc_bitmap_free(undo->cpus);
        undo->cpus = NULL;
    }
    undo->mems = hwloc_bitmap_alloc();
    if (undo->mems != NULL &&
        hwloc_get_membind(topo, undo->mems, &undo->mem_policy,
                          HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
        hwloc_bitmap_free(undo->mems);
        undo->mems = NULL;
    }
}

/* Forgets a saved binding that ncclx_placement_bind left as it was (refused, or not needed):
 * putting it back could only change how it is expressed. */
static void ncclx_placement_forget_unchanged(hwloc_topology_t topo, ncclx_placement_undo_t *undo)
{
    hwloc_bitmap_t now = hwloc_bitmap_alloc();
    hwloc_membind_policy_t policy;
    if (now == NULL) {
        return;
    }
    if (undo->cpus != NULL && hwloc_get_cpubind(topo, now, HWLOC_CPUBIND_THREAD) == 0 &&
        hwloc_bitmap_isequal(now, undo->cpus)) {
        hwloc_bitmap_free(undo->cpus);
        undo->cpus = NULL;
    }
    if (undo->mems != NULL &&
        hwloc_get_membind(topo, now, &policy, HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) ==
            0 &&
        policy == undo->mem_policy && hwloc_bitmap_isequal(now, undo->mems)) {
        hwloc_bitmap_free(undo->mems);
        undo->mems = NULL;
    }
    hwloc_bitmap_free(now);
}

ncclxResult_t ncclx_placement_apply(hwloc_topology_t topo, const ncclxPlacement_t *p,
                                    ncclx_placement_undo_t *undo)
{
    ncclxResult_t res = ncclxSuccess;
    const char *user_nic = getenv("NCCL_IB_HCA");
    memset(undo, 0, sizeof(*undo));
    undo->topo = topo;
    if (p->bind) {
        ncclx_placement_save_binding(topo, undo);
    }
    NCCLX_CHECK_GOTO(ncclx_placement_bind(topo, p), res, err_undo);
    ncclx_placement_forget_unchanged(topo, undo);
    /* ncclx_placement_export_nic sets the variable exactly when there is a NIC and the user's
     * value is unset or empty. */
    undo->nic_was_empty = user_nic != NULL;
    undo->nic_exported = p->nic[0] != '\0' && (user_nic == NULL || user_nic[0] == '\0');
    user_nic = NULL; /* setenv may free it */
    NCCLX_CHECK_GOTO(ncclx_placement_export_nic(p), res, err_undo);
    if (p->cuda_device >= 0) {
        if (cudaGetDevice(&undo->device_before) == cudaSuccess) {
            undo->device_set = 1;
        } else {
            (void)cudaGetLastError(); /* nothing current before: nothing to put back */
        }
        NCCLX_CHECK_GOTO(NCCLX_CUDA_STATUS(cudaSetDevice(p->cuda_device)), res, err_undo);
    }
    return ncclxSuccess;
err_undo:
    ncclx_placement_undo(undo);
    return res;
}

void ncclx_placement_undo_release(ncclx_placement_undo_t *undo)
{
    if (undo->cpus != NULL) {
        hwloc_bitmap_free(undo->cpus);
    }
    if (undo->mems != NULL) {
        hwloc_bitmap_free(undo->mems);
    }
    if (undo->topo != NULL) {
        hwloc_topology_destroy(undo->topo);
    }
    memset(undo, 0, sizeof(*undo));
}

/* Best effort, in reverse order of ncclx_placement_apply: a failed init reports its own error,
 * and what cannot be put back is said at WARN. */
void ncclx_placement_undo(ncclx_placement_undo_t *undo)
{
    if (undo->device_set && cudaSetDevice(undo->device_before) != cudaSuccess) {
        (void)cudaGetLastError();
        NCCLX_WARN("could not make CUDA device %d current again", undo->device_before);
    }
    if (undo->nic_exported) {
        int rc = undo->nic_was_empty ? setenv("NCCL_IB_HCA", "", 1) : unsetenv("NCCL_IB_HCA");
        if (rc != 0) {
            NCCLX_WARN("could not restore NCCL_IB_HCA: %s", strerror(errno));
        }
    }
    /* hwloc reads the system default policy as first-touch; DEFAULT sets it back as such. */
    if (undo->mems != NULL &&
        hwloc_set_membind(undo->topo, undo->mems,
                          undo->mem_policy == HWLOC_MEMBIND_FIRSTTOUCH ? HWLOC_MEMBIND_DEFAULT
                                                                       : undo->mem_policy,
                          HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
        NCCLX_WARN("could not restore the memory binding: %s", strerror(errno));
    }
    if (undo->cpus != NULL &&
        hwloc_set_cpubind(undo->topo, undo->cpus, HWLOC_CPUBIND_THREAD) != 0) {
        NCCLX_WARN("could not restore the CPU binding: %s", strerror(errno));
    }
    ncclx_placement_undo_release(undo);
}

ncclxResult_t ncclx_placement_setup(uint32_t local_rank, uint32_t local_size, int32_t cuda_device,
                                    ncclxBindPolicy_t bind, ncclxPlacement_t *placement,
                                    ncclx_placement_undo_t *undo)
{
    ncclxPlacementQuery_t query = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p;
    query.cuda_device = cuda_device;
    query.local_rank = local_rank;
    query.local_size = local_size;
    query.bind = bind;
    memset(undo, 0, sizeof(*undo));
    NCCLX_CHECK(ncclx_placement_run(&query, undo, "config.cuda_device", &p));
    *placement = p;
    return ncclxSuccess;
}
