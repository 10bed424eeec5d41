/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Internal access to NCCLX_* variables.  Each variable is declared once in lib/core/env.c (name,
 * default, description, how to parse it); nothing else in the library calls getenv() on an
 * NCCLX_* name.
 */
#ifndef NCCLX_LIB_ENV_H_
#define NCCLX_LIB_ENV_H_

#include <stdint.h>

#include <ncclx/env.h>

typedef enum {
    NCCLX_ENV_DEBUG = 0,
    NCCLX_ENV_DEBUG_FILE,
    NCCLX_ENV_BIND,
    NCCLX_ENV_CUDA_DEVICE,
    NCCLX_ENV_FENCE_TIMEOUT_S,
    NCCLX_ENV_TIMEOUT_MS,
    NCCLX_ENV_M2N_PATH,
    NCCLX_ENV_EP_HT_PATH,
    NCCLX_ENV_NET_EMU_CHAOS,
    NCCLX_ENV_NET_EMU_DELAY_NS,
    NCCLX_ENV_NUM_VARS
} ncclx_env_id_t;

/** The raw value, or NULL when unset or empty. */
const char *ncclx_env_raw(ncclx_env_id_t id);

/**
 * Parses an enumerated variable: *index receives the position of the (case-insensitive)
 * match in the variable's choices, or of its default when unset.  Garbage ->
 * ncclxInvalidArgument naming the variable and the accepted values.
 */
ncclxResult_t ncclx_env_get_choice(ncclx_env_id_t id, int *index);

/**
 * Parses an unsigned decimal variable within the declared bounds.  *value receives the
 * default when unset (0 for a variable whose default is unset: test ncclx_env_raw() first).
 * Garbage or out of range -> ncclxInvalidArgument naming the variable.
 */
ncclxResult_t ncclx_env_get_uint(ncclx_env_id_t id, uint64_t *value);

/** Parses a string variable (any value); *value is the default ("" = NULL) when unset. */
const char *ncclx_env_get_string(ncclx_env_id_t id);

/**
 * The GPU wait timeout in nanoseconds, the unit of the kernels' clock (globaltimer):
 * NCCLX_TIMEOUT_MS * 1000000 when that variable is set (and valid: ncclxEnvValidate runs at
 * init), else fallback_ns (the plan's timeout_ns, or NCCLX_DEFAULT_TIMEOUT_NS).
 */
uint64_t ncclx_env_timeout_ns(uint64_t fallback_ns);

/** Same checks without logging or recording an error: for the logger, which cannot log. */
int ncclx_env_choice_quiet(ncclx_env_id_t id, int *index);

#endif /* NCCLX_LIB_ENV_H_ */
