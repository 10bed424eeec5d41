/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Placement: which GPU a process uses, which CPUs and NUMA nodes it runs on, and which RDMA
 * NIC NCCL should use.  ncclxInit applies the decision for this process; ncclxPlacementDecide
 * only computes it, for this machine or for a recorded hwloc XML topology, so an operator can
 * see what the library would do before running (tools/ncclx-info prints it).
 *
 * The rules:
 *  - GPU: an explicit CUDA device (query/config) wins, then NCCLX_CUDA_DEVICE, then the local
 *    rank as an index among the devices CUDA reports (so CUDA_VISIBLE_DEVICES is respected).
 *    When exactly one device is visible, every local rank uses it: the launcher gave each
 *    process its own GPU (e.g. srun --gpus-per-task=1).
 *  - CPUs and memory: the CPUs and NUMA nodes of the GPU's closest non-I/O ancestor in the
 *    hwloc tree (the package, die or cache its PCI host bridge hangs from), intersected with
 *    the CPUs the process may use.  Not applied with NCCLX_BIND=NONE, when the launcher
 *    already bound the process (its binding is a strict subset of the allowed CPUs), or when
 *    there is nothing to restrict.
 *  - NIC: the OpenFabrics device (mlx5_0, ...) whose PCI device is the fewest hops from the
 *    GPU's PCI device in the hwloc tree.  nic_distance counts the edges of the tree path
 *    between the two PCI devices: 2 = same PCIe bridge/port, 4 = two ports of one PCIe switch,
 *    more = through host bridges, packages or the machine.  NICs whose ports are all down are
 *    skipped.  When several NICs are equally near, they are sorted by name and local rank r
 *    takes tie number r % ties, so the local ranks sharing a switch spread over its NICs.
 *    ncclxInit exports it as NCCL_IB_HCA="=<nic>" unless NCCL_IB_HCA is already set.
 */
#ifndef NCCLX_PLACEMENT_H_
#define NCCLX_PLACEMENT_H_

#include <stdint.h>
#include <stdio.h>

#include <ncclx/result.h>
#include <ncclx/struct.h>

#ifdef __cplusplus
extern "C" {
#endif

/** CPU/memory binding policy. */
typedef enum {
    NCCLX_BIND_DEFAULT = 0, /**< as NCCLX_BIND says (AUTO when unset) */
    NCCLX_BIND_AUTO = 1,    /**< bind near the GPU unless the launcher already bound us */
    NCCLX_BIND_NONE = 2     /**< never bind */
} ncclxBindPolicy_t;

/** What to decide for. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    const char *topology_xml; /**< hwloc XML file (v2, or v3 exports); NULL: this machine */
    const char *gpu_busid;    /**< GPU PCI bus id, "0000:84:00.0" or "00000000:84:00.0" (any
                                   case); NULL: ask CUDA for the device this rank would use */
    int32_t cuda_device;      /**< -1: NCCLX_CUDA_DEVICE or the local rank; >= 0: this device */
    uint32_t local_rank;      /**< rank among the job's processes on this node */
    uint32_t local_size;      /**< the job's processes on this node (> local_rank) */
    ncclxBindPolicy_t bind;   /**< binding policy */
    const char *bound_cpuset; /**< the process's current binding, as an hwloc bitmap
                                   ("0x00000003") or a list ("0-1"); NULL: this process's
                                   binding on this machine, unbound with topology_xml */
} ncclxPlacementQuery_t;

#define NCCLX_PLACEMENT_QUERY_INIT                                                                \
    {                                                                                             \
        NCCLX_STRUCT_HEADER_INIT(ncclxPlacementQuery_t, NCCLX_MAGIC_PLACEMENT_QUERY), NULL, NULL, \
            -1, 0, 1, NCCLX_BIND_DEFAULT, NULL                                                    \
    }

#define NCCLX_PLACEMENT_BUSID_LEN 32u
#define NCCLX_PLACEMENT_NAME_LEN  64u
#define NCCLX_PLACEMENT_LIST_LEN  256u
#define NCCLX_PLACEMENT_SET_LEN   1024u

/** The decision.  Strings are NUL-terminated; "" means none. */
typedef struct {
    NCCLX_STRUCT_HEADER;
    int32_t cuda_device;  /**< CUDA device index; -1 when the query named the GPU by bus id */
    uint32_t local_rank;  /**< as queried */
    uint32_t local_size;  /**< as queried */
    int32_t nic_distance; /**< tree hops between the GPU and NIC PCI devices; -1: no NIC */
    uint32_t nic_ties;    /**< usable NICs at nic_distance (1: no tie; 0: no NIC) */
    uint32_t bind;        /**< 1: bind CPUs and memory to cpuset/numa; 0: see bind_reason */
    char gpu_busid[NCCLX_PLACEMENT_BUSID_LEN];  /**< "0000:84:00.0" (lower case) */
    char numa[NCCLX_PLACEMENT_LIST_LEN];        /**< NUMA nodes near the GPU (OS indexes) "1" */
    char cpuset[NCCLX_PLACEMENT_SET_LEN];       /**< CPUs near the GPU the process may use, as an
                                                     hwloc bitmap "0xff00ff00" */
    char cpus[NCCLX_PLACEMENT_SET_LEN];         /**< the same CPUs as a list "8-15,24-31" */
    char nic[NCCLX_PLACEMENT_NAME_LEN];         /**< nearest usable RDMA NIC "mlx5_0"; "" none */
    char nic_busid[NCCLX_PLACEMENT_BUSID_LEN];  /**< its PCI device; "" none */
    char bind_reason[NCCLX_PLACEMENT_LIST_LEN]; /**< why bind is 0 or 1, one line */
} ncclxPlacement_t;

#define NCCLX_PLACEMENT_INIT                                                                       \
    {                                                                                              \
        NCCLX_STRUCT_HEADER_INIT(ncclxPlacement_t, NCCLX_MAGIC_PLACEMENT), -1, 0, 0, -1, 0, 0, "", \
            "", "", "", "", "", ""                                                                 \
    }

/**
 * Decides the placement described by *query without applying anything: no binding, no
 * environment change, no CUDA context.  *placement must start as NCCLX_PLACEMENT_INIT; it is
 * written only on success.  The decision is logged at INFO.
 *
 * Errors: ncclxInvalidArgument (a bad query field, a bus id that is not in the topology: the
 * message names it), ncclxCudaError / ncclxUnsupported (gpu_busid is NULL and CUDA has no
 * usable device), ncclxSystemError (the XML file cannot be read), ncclxHwlocError.
 */
ncclxResult_t ncclxPlacementDecide(const ncclxPlacementQuery_t *query, ncclxPlacement_t *placement);

/**
 * Writes *placement as key=value lines (gpu_busid=, cuda_device=, local_rank=, local_size=,
 * numa=, cpuset=, cpus=, nic=, nic_busid=, nic_distance=, nic_ties=, bind=, bind_reason=).
 * None is written as "none".
 */
ncclxResult_t ncclxPlacementPrint(const ncclxPlacement_t *placement, FILE *out);

/**
 * Writes this machine's topology, with its PCI devices and NICs, as hwloc XML to xml_path:
 * the file ncclxPlacementDecide and tools/ncclx-info --topology read back.
 */
ncclxResult_t ncclxTopologyExport(const char *xml_path);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_PLACEMENT_H_ */
