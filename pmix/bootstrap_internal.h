/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Helpers shared by pmix/bootstrap*.c (not for the rest of the library).
 */
#ifndef NCCLX_PMIX_BOOTSTRAP_INTERNAL_H_
#define NCCLX_PMIX_BOOTSTRAP_INTERNAL_H_

#include "bootstrap.h"

/** ncclxInvalidArgument if bs is NULL, ncclxInvalidUsage if it is not initialized. */
ncclxResult_t ncclx_bootstrap_check_init(const ncclx_bootstrap_t *bs, const char *what);

#endif /* NCCLX_PMIX_BOOTSTRAP_INTERNAL_H_ */
