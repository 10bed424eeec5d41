/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Hardware queues for a loopback team.  Its ranks run on one GPU, each on its own stream, and
 * their kernels wait for each other: two ranks whose streams share one of the GPU's hardware
 * queues (CUDA_DEVICE_MAX_CONNECTIONS of them, 8 by default, at most 32) can serialize a rank's
 * kernel behind a peer that waits for it, until the GPU timeout.  The setting is read when CUDA
 * creates the device's context, so ncclxLoopbackInit can raise it only when CUDA has not
 * started yet in the process (PyTorch and compute-sanitizer start it before).  A team with
 * more ranks than the queues in effect is refused with what to do, never left to time out.
 */
#ifndef NCCLX_LIB_LOOPBACK_QUEUES_H_
#define NCCLX_LIB_LOOPBACK_QUEUES_H_

#include <stdint.h>

#include <ncclx/result.h>

/** The queues CUDA gives (and the most a loopback team may have ranks). */
#define NCCLX_LOOPBACK_MAX_QUEUES 32u
/** CUDA's default when CUDA_DEVICE_MAX_CONNECTIONS is unset or not a number in [1, 32]. */
#define NCCLX_LOOPBACK_DEFAULT_QUEUES 8u

/** The queues a context created with value as CUDA_DEVICE_MAX_CONNECTIONS (NULL: unset) has:
 *  the decimal number, at most 32; CUDA's default for anything else. */
uint32_t ncclx_loopback_queues_of(const char *value);

/**
 * The verdict for a team of ranks on a context with queues hardware queues: at most 32 ranks,
 * at most queues ranks, and at most queues / 2 when started_early (CUDA's context existed
 * before the library first ran: the setting came too late, and the program's own streams
 * share the queues; 8 ranks on CUDA's 8 timed out under compute-sanitizer).  Refusals are
 * ncclxInvalidUsage naming CUDA_DEVICE_MAX_CONNECTIONS and what to do.
 */
ncclxResult_t ncclx_loopback_queue_verdict(uint32_t ranks, uint32_t queues, int started_early);

/**
 * Before the loopback team's CUDA work: raises CUDA_DEVICE_MAX_CONNECTIONS to 32 unless the
 * caller set it, finds whether the device's primary context already exists and who started it
 * (a loopback team of this process, or the program before the library ran, when the value in
 * effect is the one the process had then), and gives the verdict.
 */
ncclxResult_t ncclx_loopback_check_queues(uint32_t ranks, int cuda_device);

#endif /* NCCLX_LIB_LOOPBACK_QUEUES_H_ */
