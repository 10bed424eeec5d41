/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The RDMA NIC nearest to a GPU.  Distance is the number of edges on the hwloc tree path
 * between the GPU's PCI device and the NIC's PCI device, so every PCIe switch port, host
 * bridge, package or machine crossed adds to it:
 *
 *   2   NIC and GPU behind the same PCIe port (functions of one device, or a shared bridge)
 *   4   two downstream ports of one PCIe switch
 *   6+  further up the switch hierarchy, then through host bridges and packages
 *
 * Several NICs at the same smallest distance are sorted by name, and local rank r takes the
 * (r % ties)-th: the ranks whose GPUs share a switch then use different NICs, and every rank
 * computes the same answer without talking to the others.
 */
#include <stdio.h>
#include <string.h>

#include "placement.h"

#if HWLOC_API_VERSION >= 0x00030000
static int ncclx_is_openfabrics(hwloc_obj_t o)
{
    return (o->attr->osdev.type & HWLOC_OBJ_OSDEV_OPENFABRICS) != 0; /* a bit set since 3.0 */
}
#else
static int ncclx_is_openfabrics(hwloc_obj_t o)
{
    return o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
}
#endif

#define NCCLX_IB_PORT_ACTIVE "4" /* ibv_port_state IBV_PORT_ACTIVE, as hwloc reports it */
#define NCCLX_IB_MAX_PORTS   16u

int ncclx_placement_nic_usable(hwloc_obj_t osdev)
{
    int has_port_info = 0;
    if (osdev->type != HWLOC_OBJ_OS_DEVICE || !ncclx_is_openfabrics(osdev) || osdev->name == NULL) {
        return 0;
    }
    /* Exporting a NIC whose ports are all down would leave NCCL without any IB device, and it
     * would fall back to TCP sockets: skip it.  No port info at all: assume it works. */
    for (unsigned port = 1; port <= NCCLX_IB_MAX_PORTS; port++) {
        char key[32];
        const char *state;
        snprintf(key, sizeof(key), "Port%uState", port);
        state = hwloc_obj_get_info_by_name(osdev, key);
        if (state != NULL) {
            has_port_info = 1;
            if (strcmp(state, NCCLX_IB_PORT_ACTIVE) == 0) {
                return 1;
            }
        }
    }
    return !has_port_info;
}

int ncclx_placement_hops(hwloc_obj_t a, hwloc_obj_t b)
{
    unsigned depth_a = 0, depth_b = 0;
    int hops = 0;
    /* I/O objects have no depth of their own in hwloc: count parents. */
    for (hwloc_obj_t o = a; o->parent != NULL; o = o->parent) {
        depth_a++;
    }
    for (hwloc_obj_t o = b; o->parent != NULL; o = o->parent) {
        depth_b++;
    }
    for (; depth_a > depth_b; depth_a--, hops++) {
        a = a->parent;
    }
    for (; depth_b > depth_a; depth_b--, hops++) {
        b = b->parent;
    }
    for (; a != b; hops += 2) {
        a = a->parent;
        b = b->parent;
    }
    return hops;
}

/* The PCI device of an OpenFabrics device; software devices (rxe, siw) have none. */
static hwloc_obj_t ncclx_nic_anchor(hwloc_obj_t osdev)
{
    hwloc_obj_t parent = osdev->parent;
    return parent != NULL && parent->type == HWLOC_OBJ_PCI_DEVICE ? parent : osdev;
}

/* Strict order of NICs by name, then by hwloc's logical index (names are unique in practice). */
static int ncclx_nic_before(hwloc_obj_t x, hwloc_obj_t y)
{
    int cmp = strcmp(x->name, y->name);
    return cmp < 0 || (cmp == 0 && x->logical_index < y->logical_index);
}

/* Position of nic among the usable NICs at distance from gpu, in name order. */
static unsigned ncclx_nic_tie_rank(hwloc_topology_t topo, hwloc_obj_t gpu, hwloc_obj_t nic,
                                   int distance)
{
    unsigned rank = 0;
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o != NULL;
         o = hwloc_get_next_osdev(topo, o)) {
        if (o != nic && ncclx_placement_nic_usable(o) &&
            ncclx_placement_hops(gpu, ncclx_nic_anchor(o)) == distance &&
            ncclx_nic_before(o, nic)) {
            rank++;
        }
    }
    return rank;
}

void ncclx_placement_nearest_nic(hwloc_topology_t topo, hwloc_obj_t gpu, uint32_t local_rank,
                                 ncclxPlacement_t *out)
{
    int best = -1;
    unsigned ties = 0;
    out->nic[0] = '\0';
    out->nic_busid[0] = '\0';
    out->nic_distance = -1;
    out->nic_ties = 0;
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o != NULL;
         o = hwloc_get_next_osdev(topo, o)) {
        int d;
        if (!ncclx_placement_nic_usable(o)) {
            continue;
        }
        d = ncclx_placement_hops(gpu, ncclx_nic_anchor(o));
        if (best < 0 || d < best) {
            best = d;
            ties = 1;
        } else if (d == best) {
            ties++;
        }
    }
    if (best < 0) {
        return;
    }
    for (hwloc_obj_t o = hwloc_get_next_osdev(topo, NULL); o != NULL;
         o = hwloc_get_next_osdev(topo, o)) {
        if (ncclx_placement_nic_usable(o) &&
            ncclx_placement_hops(gpu, ncclx_nic_anchor(o)) == best &&
            ncclx_nic_tie_rank(topo, gpu, o, best) == local_rank % ties) {
            hwloc_obj_t pci = ncclx_nic_anchor(o);
            snprintf(out->nic, sizeof(out->nic), "%s", o->name);
            if (pci->type == HWLOC_OBJ_PCI_DEVICE) {
                ncclx_busid_of(pci, out->nic_busid, sizeof(out->nic_busid));
            }
            out->nic_distance = best;
            out->nic_ties = ties;
            return;
        }
    }
}
