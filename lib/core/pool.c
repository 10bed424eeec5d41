/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "pool.h"

size_t ncclx_pool_bookkeeping_bytes(uint32_t capacity)
{
    return (size_t)capacity * (sizeof(uint32_t) + sizeof(uint8_t));
}

void ncclx_pool_init(ncclx_pool_t *pool, const char *name, const char *hint, void *objects,
                     size_t stride, uint32_t capacity, void *bookkeeping)
{
    snprintf(pool->name, sizeof(pool->name), "%s", name);
    pool->hint = hint;
    pool->objects = objects;
    pool->stride = stride;
    pool->capacity = capacity;
    pool->num_free = capacity;
    pool->free_stack = bookkeeping;
    pool->in_use = (uint8_t *)bookkeeping + (size_t)capacity * sizeof(uint32_t);
    /* Highest index at the bottom, so index 0 is handed out first. */
    for (uint32_t i = 0; i < capacity; i++) {
        pool->free_stack[i] = capacity - 1 - i;
        pool->in_use[i] = 0;
    }
}

ncclxResult_t ncclx_pool_acquire(ncclx_pool_t *pool, void **object, uint32_t *index)
{
    uint32_t slot;
    if (pool->num_free == 0) {
        return NCCLX_ERROR(ncclxResourceExhausted, "%s: all %u are in use (%s)", pool->name,
                           pool->capacity, pool->hint);
    }
    slot = pool->free_stack[--pool->num_free];
    pool->in_use[slot] = 1;
    memset(pool->objects + (size_t)slot * pool->stride, 0, pool->stride);
    *object = pool->objects + (size_t)slot * pool->stride;
    if (index != NULL) {
        *index = slot;
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_pool_release(ncclx_pool_t *pool, void *object)
{
    unsigned char *p = object;
    size_t delta;
    uint32_t slot;
    if (p < pool->objects || p >= pool->objects + (size_t)pool->capacity * pool->stride) {
        return NCCLX_ERROR(ncclxInvalidUsage, "%s: %p does not belong to this pool", pool->name,
                           object);
    }
    delta = (size_t)(p - pool->objects);
    if (delta % pool->stride != 0) {
        return NCCLX_ERROR(ncclxInvalidUsage, "%s: %p is not the start of an object", pool->name,
                           object);
    }
    slot = (uint32_t)(delta / pool->stride);
    if (!pool->in_use[slot]) {
        return NCCLX_ERROR(ncclxInvalidUsage, "%s: object %u released twice", pool->name, slot);
    }
    pool->in_use[slot] = 0;
    pool->free_stack[pool->num_free++] = slot;
    return ncclxSuccess;
}

uint32_t ncclx_pool_in_use(const ncclx_pool_t *pool)
{
    return pool->capacity - pool->num_free;
}
