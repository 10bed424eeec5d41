/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Arenas: one allocation per memory class, carved into aligned, non-overlapping regions.  An
 * arena with a NULL base only measures: the same carving code then computes the bytes a plan
 * needs, so sizing and init can never disagree.
 */
#ifndef NCCLX_LIB_ARENA_H_
#define NCCLX_LIB_ARENA_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/result.h>

#define NCCLX_DEVICE_ALIGN 256u /* cudaMalloc's guarantee; every device region starts on it */
#define NCCLX_HOST_ALIGN   64u  /* a cache line: host regions never share one */

typedef struct {
    const char *name; /* "symmetric", ... for messages */
    uintptr_t base;   /* 0: measuring */
    size_t capacity;  /* SIZE_MAX when measuring */
    size_t used;      /* bytes up to the end of the last region */
} ncclx_arena_t;

/** A measuring arena (no memory behind it). */
void ncclx_arena_init_measure(ncclx_arena_t *arena, const char *name);

/**
 * An arena over [base, base + capacity).  base must be aligned to max_align (the largest
 * alignment later carves ask for), else ncclxInvalidArgument.
 */
ncclxResult_t ncclx_arena_init(ncclx_arena_t *arena, const char *name, void *base, size_t capacity,
                               size_t max_align);

/**
 * Carves bytes aligned to align (a power of two) after the last region.  *offset receives the
 * region's offset, *ptr (may be NULL) its address (NULL when measuring).  Not enough room ->
 * ncclxResourceExhausted naming what and the bytes needed and left; size overflow ->
 * ncclxInvalidArgument.
 */
ncclxResult_t ncclx_arena_carve(ncclx_arena_t *arena, size_t bytes, size_t align, const char *what,
                                size_t *offset, void **ptr);

/** Checked arithmetic for sizes: 0 on overflow. */
int ncclx_size_mul(size_t a, size_t b, size_t *out);
int ncclx_size_add(size_t a, size_t b, size_t *out);
size_t ncclx_align_up(size_t value, size_t align);

#endif /* NCCLX_LIB_ARENA_H_ */
