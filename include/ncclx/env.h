/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Environment variables.  Every NCCLX_* variable the library reads is declared once, with its
 * default and a one-line description; this interface lists them (tools/ncclx-info --env) and
 * validates their values.
 */
#ifndef NCCLX_ENV_H_
#define NCCLX_ENV_H_

#include <ncclx/result.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;          /**< "NCCLX_DEBUG" */
    const char *default_value; /**< as the variable would be written; "" for unset */
    const char *description;   /**< one line */
} ncclxEnvVar_t;

/** Number of variables the library reads. */
int ncclxEnvCount(void);

/** Description of variable index (0 <= index < ncclxEnvCount()). */
ncclxResult_t ncclxEnvGet(int index, ncclxEnvVar_t *var);

/**
 * Parses every NCCLX_* variable that is set.  Returns ncclxInvalidArgument naming the first
 * variable whose value is garbage ("NCCLX_DEBUG='LOUD' is not one of NONE, WARN, INFO,
 * TRACE").  Also warns about set NCCLX_* variables the library does not know (likely typos).
 */
ncclxResult_t ncclxEnvValidate(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_ENV_H_ */
