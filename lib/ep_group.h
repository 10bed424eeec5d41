/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Host-side EP group and handle objects.  Both live in the host arena: groups in the group
 * table, handles in each group's pool, so creating a handle never allocates.
 */
#ifndef NCCLX_LIB_EP_GROUP_H_
#define NCCLX_LIB_EP_GROUP_H_

#include <stdint.h>

#include "plan_internal.h"
#include "pool.h"

struct ncclx_ep_group;

typedef struct ncclx_ep_handle {
    struct ncclx_ep_group *group;
    uint32_t index;      /* slot in the group's pool */
    uint32_t state;      /* lifecycle state */
    void *device_memory; /* this handle's dims.handle_bytes of private device memory */
} ncclx_ep_handle_t;

typedef struct ncclx_ep_group {
    ncclxEpGroupPlan_t plan;
    ncclx_ep_dims_t dims;
    ncclx_ep_group_regions_t regions;
    uint32_t index;
    ncclx_pool_t handles;
} ncclx_ep_group_t;

#endif /* NCCLX_LIB_EP_GROUP_H_ */
