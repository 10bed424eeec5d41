/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The placement step of ncclxInit: choose this process's GPU from the bootstrap's local rank
 * (or an override), make it current, bind CPUs/memory near it and point NCCL at the nearest
 * NIC, as pmix/placement decides.
 */
#ifndef NCCLX_LIB_PLACEMENT_INIT_H_
#define NCCLX_LIB_PLACEMENT_INIT_H_

#include <ncclx/init.h>

#include "bootstrap.h"

ncclxResult_t ncclx_init_place(const ncclx_bootstrap_t *bs, const ncclxInitConfig_t *config,
                               int *cuda_device);

#endif /* NCCLX_LIB_PLACEMENT_INIT_H_ */
