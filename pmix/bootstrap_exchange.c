/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * PMIx key exchange: put / commit / fence / get under keys namespaced to the library, the
 * communicator instance and the fence epoch ("ncclx.<instance>.<epoch>.<key>").  A singleton
 * has no server to fence with, so its collectives return the caller's own data.
 *
 * Why the epoch: PMIx does not promise which value a get returns once a process has put the
 * same key twice; with Slurm's PMIx plugin about one run in six served the old value to some
 * rank.  Fences over the namespace match in call order on every rank, so the number of fences
 * completed so far is the same everywhere and makes every key unique in time.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <pmix.h>

#include "bootstrap.h"
#include "bootstrap_internal.h"
#include "env.h"
#include "error.h"
#include "log.h"

/* Fences completed by this process: puts go to the current epoch, gets read the previous. */
static _Atomic uint64_t ncclx_fence_epoch;

static ncclxResult_t ncclx_bootstrap_key(const char *key, uint32_t instance, uint64_t epoch,
                                         pmix_key_t out)
{
    if (key == NULL || key[0] == '\0') {
        return NCCLX_ERROR(ncclxInvalidArgument, "bootstrap key is %s",
                           key == NULL ? "NULL" : "empty");
    }
    int n = snprintf(out, PMIX_MAX_KEYLEN + 1, "ncclx.%" PRIu32 ".%" PRIu64 ".%s", instance, epoch,
                     key);
    if (n < 0 || n > PMIX_MAX_KEYLEN) {
        return NCCLX_ERROR(ncclxInvalidArgument, "bootstrap key '%.40s...' exceeds %d characters",
                           key, PMIX_MAX_KEYLEN);
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_bootstrap_check_buffer(const void *data, size_t bytes, const char *what)
{
    if (data == NULL || bytes == 0) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: %s", what,
                           data == NULL ? "data is NULL" : "bytes is 0");
    }
    return ncclxSuccess;
}

static ncclxResult_t ncclx_bootstrap_check_rank(const ncclx_bootstrap_t *bs, uint32_t rank,
                                                const char *what)
{
    if (rank >= bs->size) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s: rank %u is outside the job's %u ranks", what,
                           rank, bs->size);
    }
    return ncclxSuccess;
}

/* timeout_s > 0 is used as is; 0 means NCCLX_FENCE_TIMEOUT_S. */
static ncclxResult_t ncclx_bootstrap_timeout(int timeout_s, int *out)
{
    uint64_t value = 0;
    if (timeout_s < 0) {
        return NCCLX_ERROR(ncclxInvalidArgument, "bootstrap timeout_s=%d is negative", timeout_s);
    }
    if (timeout_s > 0) {
        *out = timeout_s;
        return ncclxSuccess;
    }
    NCCLX_CHECK(ncclx_env_get_uint(NCCLX_ENV_FENCE_TIMEOUT_S, &value));
    *out = (int)value; /* the table bounds it to [1, 86400] */
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_put(const ncclx_bootstrap_t *bs, const char *key, uint32_t instance,
                                  const void *data, size_t bytes)
{
    pmix_key_t pkey;
    pmix_value_t val;
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_put"));
    NCCLX_CHECK(ncclx_bootstrap_key(key, instance, atomic_load(&ncclx_fence_epoch), pkey));
    NCCLX_CHECK(ncclx_bootstrap_check_buffer(data, bytes, "ncclx_bootstrap_put"));
    /* PMIx_Put copies the value: val only borrows the caller's bytes, so it is not
     * destructed here. */
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)data;
    val.data.bo.size = bytes;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, pkey, &val);
    if (rc != PMIX_SUCCESS) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Put(%s, %zu bytes) failed: %s", pkey, bytes,
                           PMIx_Error_string(rc));
    }
    NCCLX_TRACE("PMIx_Put(%s, %zu bytes)", pkey, bytes);
    return ncclxSuccess;
}

/* A fence over the whole namespace; collect = also distribute every rank's committed data. */
static ncclxResult_t ncclx_pmix_fence(const ncclx_bootstrap_t *bs, bool collect, int timeout_s)
{
    pmix_proc_t all;
    pmix_info_t info[2];
    int timeout = 0;
    NCCLX_CHECK(ncclx_bootstrap_timeout(timeout_s, &timeout));
    if (bs->singleton) {
        atomic_fetch_add(&ncclx_fence_epoch, 1);
        return ncclxSuccess;
    }
    PMIX_LOAD_PROCID(&all, bs->nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(&all, 1, info, 2);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    if (rc == PMIX_ERR_TIMEOUT) {
        return NCCLX_ERROR(ncclxTimeout,
                           "PMIx_Fence: not every rank of %u arrived within %d s "
                           "(NCCLX_FENCE_TIMEOUT_S): %s",
                           bs->size, timeout, PMIx_Error_string(rc));
    }
    if (rc != PMIX_SUCCESS) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Fence over %u ranks failed: %s", bs->size,
                           PMIx_Error_string(rc));
    }
    atomic_fetch_add(&ncclx_fence_epoch, 1);
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_fence(const ncclx_bootstrap_t *bs, int timeout_s)
{
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_fence"));
    pmix_status_t rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Commit failed: %s", PMIx_Error_string(rc));
    }
    return ncclx_pmix_fence(bs, true, timeout_s);
}

ncclxResult_t ncclx_bootstrap_barrier(const ncclx_bootstrap_t *bs, int timeout_s)
{
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_barrier"));
    return ncclx_pmix_fence(bs, false, timeout_s);
}

/* Copies a fetched value out, checking that it is what the caller expects. */
static ncclxResult_t ncclx_bootstrap_copy_value(const pmix_value_t *val, const char *pkey,
                                                uint32_t rank, void *data, size_t bytes)
{
    if (val->type != PMIX_BYTE_OBJECT) {
        return NCCLX_ERROR(ncclxPmixError, "PMIx_Get(%s) from rank %u: a %s, expected bytes", pkey,
                           rank, PMIx_Data_type_string(val->type));
    }
    if (val->data.bo.size != bytes) {
        return NCCLX_ERROR(ncclxPmixError,
                           "PMIx_Get(%s) from rank %u: %zu bytes, expected %zu (ranks disagree "
                           "on the size)",
                           pkey, rank, val->data.bo.size, bytes);
    }
    memcpy(data, val->data.bo.bytes, bytes);
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_get(const ncclx_bootstrap_t *bs, const char *key, uint32_t instance,
                                  uint32_t rank, void *data, size_t bytes, int timeout_s)
{
    pmix_key_t pkey;
    pmix_proc_t proc;
    pmix_info_t info;
    pmix_value_t *val = NULL;
    int timeout = 0;
    ncclxResult_t res;
    uint64_t epoch = atomic_load(&ncclx_fence_epoch);
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_get"));
    if (epoch == 0) {
        return NCCLX_ERROR(ncclxInvalidUsage, "ncclx_bootstrap_get(%s) before any fence",
                           key != NULL ? key : "NULL");
    }
    NCCLX_CHECK(ncclx_bootstrap_key(key, instance, epoch - 1, pkey));
    NCCLX_CHECK(ncclx_bootstrap_check_rank(bs, rank, "ncclx_bootstrap_get"));
    NCCLX_CHECK(ncclx_bootstrap_check_buffer(data, bytes, "ncclx_bootstrap_get"));
    NCCLX_CHECK(ncclx_bootstrap_timeout(timeout_s, &timeout));
    PMIX_LOAD_PROCID(&proc, bs->nspace, rank);
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    pmix_status_t rc = PMIx_Get(&proc, pkey, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        return NCCLX_ERROR(rc == PMIX_ERR_TIMEOUT ? ncclxTimeout : ncclxPmixError,
                           "PMIx_Get(%s) from rank %u failed: %s (did that rank put it before "
                           "the fence?)",
                           pkey, rank, PMIx_Error_string(rc));
    }
    res = ncclx_bootstrap_copy_value(val, pkey, rank, data, bytes);
    PMIX_VALUE_RELEASE(val);
    return res;
}

ncclxResult_t ncclx_bootstrap_exchange(const ncclx_bootstrap_t *bs, const char *key,
                                       uint32_t instance, uint32_t root, void *data, size_t bytes,
                                       int timeout_s)
{
    pmix_key_t pkey;
    int timeout = 0;
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_exchange"));
    NCCLX_CHECK(ncclx_bootstrap_key(key, instance, atomic_load(&ncclx_fence_epoch), pkey));
    NCCLX_CHECK(ncclx_bootstrap_check_rank(bs, root, "ncclx_bootstrap_exchange: root"));
    NCCLX_CHECK(ncclx_bootstrap_check_buffer(data, bytes, "ncclx_bootstrap_exchange"));
    NCCLX_CHECK(ncclx_bootstrap_timeout(timeout_s, &timeout));
    if (bs->singleton) {
        return ncclxSuccess; /* rank 0 of 1 is the root: data already holds the value */
    }
    if (bs->rank == root) {
        NCCLX_CHECK(ncclx_bootstrap_put(bs, key, instance, data, bytes));
    }
    NCCLX_CHECK(ncclx_bootstrap_fence(bs, timeout));
    if (bs->rank != root) {
        NCCLX_CHECK(ncclx_bootstrap_get(bs, key, instance, root, data, bytes, timeout));
    }
    NCCLX_TRACE("exchanged %s (%zu bytes) from root %u", pkey, bytes, root);
    return ncclxSuccess;
}

ncclxResult_t ncclx_bootstrap_allgather(const ncclx_bootstrap_t *bs, const char *key,
                                        uint32_t instance, const void *mine, void *all,
                                        size_t bytes, int timeout_s)
{
    pmix_key_t pkey;
    int timeout = 0;
    NCCLX_CHECK(ncclx_bootstrap_check_init(bs, "ncclx_bootstrap_allgather"));
    NCCLX_CHECK(ncclx_bootstrap_key(key, instance, atomic_load(&ncclx_fence_epoch), pkey));
    NCCLX_CHECK(ncclx_bootstrap_check_buffer(mine, bytes, "ncclx_bootstrap_allgather: mine"));
    NCCLX_CHECK(ncclx_bootstrap_check_buffer(all, bytes, "ncclx_bootstrap_allgather: all"));
    NCCLX_CHECK(ncclx_bootstrap_timeout(timeout_s, &timeout));
    if (bytes > SIZE_MAX / bs->size) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "ncclx_bootstrap_allgather: %u x %zu bytes overflow", bs->size, bytes);
    }
    char *out = all;
    if (!bs->singleton) {
        NCCLX_CHECK(ncclx_bootstrap_put(bs, key, instance, mine, bytes));
        NCCLX_CHECK(ncclx_bootstrap_fence(bs, timeout));
        for (uint32_t r = 0; r < bs->size; r++) {
            if (r != bs->rank) {
                NCCLX_CHECK(
                    ncclx_bootstrap_get(bs, key, instance, r, out + r * bytes, bytes, timeout));
            }
        }
    }
    memmove(out + (size_t)bs->rank * bytes, mine, bytes);
    return ncclxSuccess;
}
