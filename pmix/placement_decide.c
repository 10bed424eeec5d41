/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The placement decision on a loaded topology: the GPU's CPUs and NUMA nodes, whether to bind
 * to them, and the nearest NIC (placement_nic.c).  Pure: nothing here changes the process.
 */
#include <stdio.h>

#include "error.h"
#include "placement.h"

/* Writes set into buf (hex bitmap or list); too long for the public struct -> error. */
static ncclxResult_t ncclx_bitmap_string(hwloc_const_bitmap_t set, int list, char *buf, size_t len,
                                         const char *field)
{
    int n = list ? hwloc_bitmap_list_snprintf(buf, len, set) : hwloc_bitmap_snprintf(buf, len, set);
    if (n < 0 || (size_t)n >= len) {
        return NCCLX_ERROR(ncclxUnsupported,
                           "ncclxPlacement_t.%s holds %zu characters; this machine's set needs "
                           "%d",
                           field, len - 1, n);
    }
    return ncclxSuccess;
}

/* A binding that is a strict subset of what the process may use was chosen by someone (the
 * launcher, the application): respect it.  A binding to every allowed CPU is no binding. */
static int ncclx_already_bound(hwloc_const_cpuset_t bound, hwloc_const_cpuset_t allowed)
{
    return bound != NULL && hwloc_bitmap_isincluded(bound, allowed) &&
           !hwloc_bitmap_isequal(bound, allowed);
}

static void ncclx_bind_decision(hwloc_topology_t topo, const ncclx_placement_input_t *in,
                                hwloc_const_cpuset_t near, int near_usable, ncclxPlacement_t *p)
{
    hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(topo);
    char cpus[128];
    p->bind = 0;
    if (in->bind_none) {
        snprintf(p->bind_reason, sizeof(p->bind_reason), "%s", in->bind_none_why);
    } else if (!near_usable) {
        snprintf(p->bind_reason, sizeof(p->bind_reason),
                 "none of the CPUs near the GPU may be used by this process");
    } else if (ncclx_already_bound(in->bound, allowed) && hwloc_bitmap_isequal(in->bound, near)) {
        snprintf(p->bind_reason, sizeof(p->bind_reason),
                 "the process is already bound to the CPUs near the GPU");
    } else if (ncclx_already_bound(in->bound, allowed)) {
        hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), in->bound);
        snprintf(p->bind_reason, sizeof(p->bind_reason),
                 "the launcher already bound the process to CPUs %s", cpus);
    } else if (hwloc_bitmap_isequal(near, allowed)) {
        snprintf(p->bind_reason, sizeof(p->bind_reason),
                 "every allowed CPU is near the GPU: nothing to restrict");
    } else {
        p->bind = 1;
        snprintf(p->bind_reason, sizeof(p->bind_reason), "CPUs and memory near the GPU");
    }
}

/* The GPU's CPUs and NUMA nodes that this process may use (all of them if it may use none). */
static ncclxResult_t ncclx_locality(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_bitmap_t near,
                                    hwloc_bitmap_t nodes, int *near_usable)
{
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(topo, gpu);
    if (anchor == NULL || anchor->cpuset == NULL || anchor->nodeset == NULL) {
        return NCCLX_ERROR(ncclxHwlocError, "hwloc gives the GPU's PCI device no CPU ancestor");
    }
    hwloc_bitmap_and(near, anchor->cpuset, hwloc_topology_get_allowed_cpuset(topo));
    *near_usable = !hwloc_bitmap_iszero(near);
    if (!*near_usable) {
        hwloc_bitmap_copy(near, anchor->cpuset);
    }
    hwloc_bitmap_and(nodes, anchor->nodeset, hwloc_topology_get_allowed_nodeset(topo));
    if (hwloc_bitmap_iszero(nodes)) {
        hwloc_bitmap_copy(nodes, anchor->nodeset);
    }
    return ncclxSuccess;
}

static void ncclx_placement_log(const ncclxPlacement_t *p)
{
    NCCLX_INFO("placement: local rank %u/%u GPU %s (CUDA device %d): NUMA %s, CPUs %s (%s), "
               "NIC %s (distance %d, %u tied), bind %s (%s)",
               p->local_rank, p->local_size, p->gpu_busid, (int)p->cuda_device, p->numa, p->cpus,
               p->cpuset, p->nic[0] ? p->nic : "none", (int)p->nic_distance, p->nic_ties,
               p->bind ? "yes" : "no", p->bind_reason);
}

ncclxResult_t ncclx_placement_decide(hwloc_topology_t topo, const ncclx_placement_input_t *in,
                                     ncclxPlacement_t *out)
{
    ncclxResult_t res = ncclxSuccess;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
    hwloc_obj_t gpu = NULL;
    int near_usable = 0;
    if (near == NULL || nodes == NULL) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxOutOfMemory, "placement bitmaps"), res, err_free);
    }
    NCCLX_CHECK_GOTO(ncclx_topo_find_pci(topo, in->gpu_busid, &gpu), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_locality(topo, gpu, near, nodes, &near_usable), res, err_free);
    p.cuda_device = in->cuda_device;
    p.local_rank = in->local_rank;
    p.local_size = in->local_size;
    ncclx_busid_of(gpu, p.gpu_busid, sizeof(p.gpu_busid));
    NCCLX_CHECK_GOTO(ncclx_bitmap_string(nodes, 1, p.numa, sizeof(p.numa), "numa"), res, err_free);
    NCCLX_CHECK_GOTO(ncclx_bitmap_string(near, 0, p.cpuset, sizeof(p.cpuset), "cpuset"), res,
                     err_free);
    NCCLX_CHECK_GOTO(ncclx_bitmap_string(near, 1, p.cpus, sizeof(p.cpus), "cpus"), res, err_free);
    ncclx_bind_decision(topo, in, near, near_usable, &p);
    ncclx_placement_nearest_nic(topo, gpu, in->local_rank, &p);
    ncclx_placement_log(&p);
    *out = p;
err_free:
    hwloc_bitmap_free(nodes);
    hwloc_bitmap_free(near);
    return res;
}
