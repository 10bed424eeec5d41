/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * libncclx public API: include this one header.  Each topic lives in include/ncclx/:
 *   result.h   status codes, error strings, the last error message
 *   version.h  compile-time and run-time versions
 *   struct.h   how versioned (size + magic) structs work
 *   plan.h     the plan: everything the library will ever allocate, declared up front
 *   log.h      logging level, destination and callback
 *   env.h      the NCCLX_* environment variables
 *   init.h     contexts: ncclxInit, ncclxInitWithComm, ncclxFinalize
 *   ep.h       MoE dispatch/combine (LL and HT), handles, loopback teams
 *   m2n.h      M2N: reshard a distributed tensor between two meshes of ranks
 *   placement.h  GPU, CPU/NUMA binding and NIC choice (ncclxPlacementDecide)
 */
#ifndef NCCLX_H_
#define NCCLX_H_

#include <ncclx/result.h>
#include <ncclx/version.h>
#include <ncclx/struct.h>
#include <ncclx/plan.h>
#include <ncclx/log.h>
#include <ncclx/env.h>
#include <ncclx/init.h>
#include <ncclx/ep.h>
#include <ncclx/m2n.h>
#include <ncclx/placement.h>

#endif /* NCCLX_H_ */
