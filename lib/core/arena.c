/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include "arena.h"
#include "error.h"

int ncclx_size_mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

int ncclx_size_add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

size_t ncclx_align_up(size_t value, size_t align)
{
    return (value + align - 1) & ~(align - 1);
}

static int ncclx_is_pow2(size_t value)
{
    return value != 0 && (value & (value - 1)) == 0;
}

void ncclx_arena_init_measure(ncclx_arena_t *arena, const char *name)
{
    arena->name = name;
    arena->base = 0;
    arena->capacity = SIZE_MAX;
    arena->used = 0;
}

ncclxResult_t ncclx_arena_init(ncclx_arena_t *arena, const char *name, void *base, size_t capacity,
                               size_t max_align)
{
    if (!ncclx_is_pow2(max_align)) {
        return NCCLX_ERROR(ncclxInternalError, "%s arena: alignment %zu is not a power of two",
                           name, max_align);
    }
    if (base == NULL || ((uintptr_t)base & (max_align - 1)) != 0) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s arena: base %p is not aligned to %zu bytes",
                           name, base, max_align);
    }
    arena->name = name;
    arena->base = (uintptr_t)base;
    arena->capacity = capacity;
    arena->used = 0;
    return ncclxSuccess;
}

ncclxResult_t ncclx_arena_carve(ncclx_arena_t *arena, size_t bytes, size_t align, const char *what,
                                size_t *offset, void **ptr)
{
    size_t start, end;
    if (!ncclx_is_pow2(align)) {
        return NCCLX_ERROR(ncclxInternalError,
                           "%s arena: %s: alignment %zu is not a power of "
                           "two",
                           arena->name, what, align);
    }
    if (!ncclx_size_add(arena->used, align - 1, &start)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s arena: %s: size overflows", arena->name, what);
    }
    start &= ~(align - 1);
    if (!ncclx_size_add(start, bytes, &end)) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s arena: %s (%zu bytes) overflows the address space", arena->name,
                           what, bytes);
    }
    if (end > arena->capacity) {
        return NCCLX_ERROR(ncclxResourceExhausted,
                           "%s arena: %s needs %zu bytes at offset %zu but the arena holds %zu",
                           arena->name, what, bytes, start, arena->capacity);
    }
    arena->used = end;
    *offset = start;
    if (ptr != NULL) {
        *ptr = arena->base != 0 ? (void *)(arena->base + start) : NULL;
    }
    return ncclxSuccess;
}
