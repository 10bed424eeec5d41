/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Placement (internal).  The decision is a pure function of a topology (this machine's, or an
 * hwloc XML file) and a few inputs, so it is tested on the CPU from recorded topologies; what
 * changes the process (binding, NCCL_IB_HCA, cudaSetDevice) is a separate apply step that
 * only ncclx_placement_setup() runs.  The rules are documented in include/ncclx/placement.h.
 */
#ifndef NCCLX_PMIX_PLACEMENT_H_
#define NCCLX_PMIX_PLACEMENT_H_

#include <stddef.h>
#include <stdint.h>

#include <hwloc.h>

#include <ncclx/placement.h>

/* ---- PCI bus ids and topologies (placement_topo.c) ---- */

typedef struct {
    unsigned domain, bus, dev, func;
} ncclx_busid_t;

/**
 * Parses "[domain:]bus:dev.fn" in hex, any case: "0000:84:00.0", "00000000:84:00.0" (CUDA /
 * NVML forms) and "84:00.0" (domain 0).  Anything else -> ncclxInvalidArgument naming what.
 */
ncclxResult_t ncclx_busid_parse(const char *text, const char *what, ncclx_busid_t *busid);

/** Writes the canonical form "0000:84:00.0" (hwloc's and lspci's). */
void ncclx_busid_format(const ncclx_busid_t *busid, char *buf, size_t len);

/** Formats obj's PCI address (obj must be a PCI device or bridge). */
void ncclx_busid_of(hwloc_obj_t obj, char *buf, size_t len);

/**
 * Loads this machine's topology (xml_path NULL) or an hwloc XML file, with every PCI device,
 * bridge and OS device kept.  XML exported by hwloc 3 is converted when we run on hwloc 2.
 */
ncclxResult_t ncclx_topo_load(const char *xml_path, hwloc_topology_t *topo);

/**
 * The PCI device at busid; a display/3D-class device wins when several objects claim the same
 * address (hand-edited exports do that).  Not found -> ncclxInvalidArgument naming text.
 */
ncclxResult_t ncclx_topo_find_pci(hwloc_topology_t topo, const char *text, hwloc_obj_t *pci);

/* ---- GPU choice (placement_gpu.c) ---- */

/** An explicit CUDA device request: device -1 means none; source names where it came from. */
typedef struct {
    int64_t device;
    const char *source; /* "NCCLX_CUDA_DEVICE", "query.cuda_device", ... */
} ncclx_device_request_t;

/**
 * Pure: the CUDA device index for local_rank given device_count visible devices.  A request
 * wins; else the local rank; else device 0 when exactly one is visible (the launcher gave each
 * process its own GPU).  No device -> ncclxUnsupported; a request or a local rank beyond the
 * visible devices, or local_rank >= local_size -> ncclxInvalidArgument.
 */
ncclxResult_t ncclx_placement_choose_device(int device_count, uint32_t local_rank,
                                            uint32_t local_size,
                                            const ncclx_device_request_t *request, int *device);

/** explicit_device (>= 0) wins, then NCCLX_CUDA_DEVICE, else no request. */
ncclxResult_t ncclx_placement_device_request(int32_t explicit_device, const char *explicit_name,
                                             ncclx_device_request_t *request);

/**
 * Asks CUDA: how many devices are visible, which one this local rank uses, and its PCI bus id.
 * No driver or no device -> ncclxCudaError / ncclxUnsupported, never a crash.
 */
ncclxResult_t ncclx_placement_cuda_gpu(uint32_t local_rank, uint32_t local_size,
                                       const ncclx_device_request_t *request, int *device,
                                       char *busid, size_t len);

/* ---- The decision (placement_decide.c, placement_nic.c) ---- */

typedef struct {
    const char *gpu_busid; /* as given (any accepted form) */
    int32_t cuda_device;   /* reported as is; -1 when unknown */
    uint32_t local_rank, local_size;
    int bind_none;              /* 1: never bind */
    const char *bind_none_why;  /* "NCCLX_BIND=NONE", ... */
    hwloc_const_cpuset_t bound; /* the process's current binding; NULL: unbound */
} ncclx_placement_input_t;

/**
 * Pure: the placement of in on topo.  *out (a full library-side struct) is written only on
 * success.  A bus id not in topo -> ncclxInvalidArgument naming it.
 */
ncclxResult_t ncclx_placement_decide(hwloc_topology_t topo, const ncclx_placement_input_t *in,
                                     ncclxPlacement_t *out);

/** Edges on the tree path between a and b (0 when a == b). */
int ncclx_placement_hops(hwloc_obj_t a, hwloc_obj_t b);

/** 1 for an OpenFabrics (RDMA) OS device with at least one active port, or no port info. */
int ncclx_placement_nic_usable(hwloc_obj_t osdev);

/**
 * Fills out->nic, nic_busid, nic_distance and nic_ties with the usable NIC nearest to gpu
 * (tie rule in include/ncclx/placement.h), or "" / -1 / 0 when the topology has none.
 */
void ncclx_placement_nearest_nic(hwloc_topology_t topo, hwloc_obj_t gpu, uint32_t local_rank,
                                 ncclxPlacement_t *out);

/* ---- Applying it (placement_apply.c) ---- */

/** Binds the calling thread's CPUs and memory as p says (threads it starts later inherit). */
ncclxResult_t ncclx_placement_bind(hwloc_topology_t topo, const ncclxPlacement_t *p);

/** NCCL_IB_HCA="=<nic>" unless the user set NCCL_IB_HCA or there is no NIC. */
ncclxResult_t ncclx_placement_export_nic(const ncclxPlacement_t *p);

/** What applying a placement changed in this process, so that a failed init can put it back. */
typedef struct {
    hwloc_topology_t topo; /* the topology the placement was applied with; NULL: nothing kept */
    hwloc_bitmap_t cpus;   /* the calling thread's CPU binding before; NULL: not changed */
    hwloc_bitmap_t mems;   /* its memory binding before (BYNODESET); NULL: not changed */
    hwloc_membind_policy_t mem_policy;
    int nic_exported;  /* we set NCCL_IB_HCA ... */
    int nic_was_empty; /* ... over an empty value (else it was unset) */
    int device_set;    /* we made a CUDA device current ... */
    int device_before; /* ... over this one */
} ncclx_placement_undo_t;

/**
 * Binds (when p->bind), exports the NIC and makes p->cuda_device current (when >= 0), recording
 * in *undo (zeroed first; it takes topo) what it changed.  On failure it puts back what it had
 * done and releases *undo.
 */
ncclxResult_t ncclx_placement_apply(hwloc_topology_t topo, const ncclxPlacement_t *p,
                                    ncclx_placement_undo_t *undo);

/** Puts back the binding, NCCL_IB_HCA and the current device recorded in *undo, and releases
 * it.  A zeroed *undo is nothing to do. */
void ncclx_placement_undo(ncclx_placement_undo_t *undo);

/** Keeps what was applied; releases *undo. */
void ncclx_placement_undo_release(ncclx_placement_undo_t *undo);

/**
 * The placement step of ncclxInit, before any NCCL call: choose this local rank's GPU
 * (cuda_device >= 0 wins), decide on this machine, bind, export NCCL_IB_HCA and make the GPU
 * current.  *placement is written only on success; *undo records what to put back should init
 * fail later (ncclx_placement_undo), or be released (ncclx_placement_undo_release).
 */
ncclxResult_t ncclx_placement_setup(uint32_t local_rank, uint32_t local_size, int32_t cuda_device,
                                    ncclxBindPolicy_t bind, ncclxPlacement_t *placement,
                                    ncclx_placement_undo_t *undo);

/* ---- Shared by the public entry point and setup (placement.c) ---- */

/**
 * Validates *query, loads its topology, resolves the GPU, the binding policy and the current
 * binding, and decides.  With undo (not NULL), also binds, exports the NIC and calls
 * cudaSetDevice, recording what it changed in *undo.  device_field names query->cuda_device in
 * errors ("query.cuda_device", "config.cuda_device").
 */
ncclxResult_t ncclx_placement_run(const ncclxPlacementQuery_t *query, ncclx_placement_undo_t *undo,
                                  const char *device_field, ncclxPlacement_t *out);

#endif /* NCCLX_PMIX_PLACEMENT_H_ */
