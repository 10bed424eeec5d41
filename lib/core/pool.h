/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Fixed-capacity object pools over memory carved at init: O(1) acquire and release through a
 * stack of free indexes, no allocation ever.  Exhaustion is ncclxResourceExhausted naming the
 * pool; releasing an object twice or one the pool does not own is ncclxInvalidUsage.
 */
#ifndef NCCLX_LIB_POOL_H_
#define NCCLX_LIB_POOL_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/result.h>

typedef struct {
    char name[64];    /* "EP group 0 handles", for messages */
    const char *hint; /* how to get more, e.g. "raise num_handles in the group's plan" */
    unsigned char *objects;
    size_t stride;
    uint32_t capacity;
    uint32_t num_free;
    uint32_t *free_stack; /* capacity entries; the top num_free are free indexes */
    uint8_t *in_use;      /* capacity flags: catches double release */
} ncclx_pool_t;

/** Bytes of bookkeeping storage a pool of capacity objects needs (free stack + flags). */
size_t ncclx_pool_bookkeeping_bytes(uint32_t capacity);

/**
 * Sets up pool over objects (capacity * stride bytes) and bookkeeping
 * (ncclx_pool_bookkeeping_bytes(capacity) bytes, 4-byte aligned).  Every object starts free;
 * acquire hands out the lowest index first.
 */
void ncclx_pool_init(ncclx_pool_t *pool, const char *name, const char *hint, void *objects,
                     size_t stride, uint32_t capacity, void *bookkeeping);

/** Takes a free object (*object, and *index if not NULL), zeroed. */
ncclxResult_t ncclx_pool_acquire(ncclx_pool_t *pool, void **object, uint32_t *index);

/** Returns object to the pool. */
ncclxResult_t ncclx_pool_release(ncclx_pool_t *pool, void *object);

/** Objects currently handed out. */
uint32_t ncclx_pool_in_use(const ncclx_pool_t *pool);

#endif /* NCCLX_LIB_POOL_H_ */
