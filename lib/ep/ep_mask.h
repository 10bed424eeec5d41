/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Host-side state of active masks and asynchronous errors (lib/ep/ep_mask.c), split from the
 * public calls so that the CPU unit tests can drive it without a GPU.
 */
#ifndef NCCLX_LIB_EP_MASK_H_
#define NCCLX_LIB_EP_MASK_H_

#include "ep_group.h"

/** The group is LL and was planned with enable_mask; call names the API call. */
ncclxResult_t ncclx_ep_mask_check(const ncclx_ep_group_t *g, const char *call);

/** num_ranks matches the group and every entry is 0 or 1. */
ncclxResult_t ncclx_ep_mask_values_check(const ncclx_ep_group_t *g, const int32_t *mask,
                                         uint32_t num_ranks);

/** No send_only operation is in flight (update and clean need a quiet group). */
ncclxResult_t ncclx_ep_mask_change_check(const ncclx_ep_group_t *g, const char *call);

/** After an update or clean: every handle needs a new dispatch before its next combine. */
void ncclx_ep_mask_changed(ncclx_ep_group_t *g);

/**
 * Groups without a mask: ncclxTimeout once a GPU wait has timed out (the error bit in the
 * mapped status), until ncclxEpClearAsyncError.  Groups with a mask carry on.
 */
ncclxResult_t ncclx_ep_async_check(const ncclx_ep_group_t *g, const char *call);

#endif /* NCCLX_LIB_EP_MASK_H_ */
