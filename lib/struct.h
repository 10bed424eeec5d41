/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Importing versioned public structs (see include/ncclx/struct.h), and the sizes of their
 * first released layouts.
 */
#ifndef NCCLX_LIB_STRUCT_H_
#define NCCLX_LIB_STRUCT_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/result.h>

/* Sizes of the layouts released in 0.1: a caller's struct may never be smaller. */
#define NCCLX_PLAN_SIZE_V1          56u
#define NCCLX_EP_GROUP_PLAN_SIZE_V1 88u
#define NCCLX_TEAM_SIZE_V1          32u
#define NCCLX_PLAN_SIZES_SIZE_V1    88u

/** The size/magic/version header every versioned struct starts with. */
typedef struct {
    size_t size;
    uint32_t magic;
    uint32_t version;
} ncclx_struct_header_t;

/**
 * Copies the caller's struct src into dst (which holds the library's defaults, dst_size
 * bytes): the fields both know are taken from src, a smaller src leaves dst's defaults for the
 * rest, and the unknown tail of a larger src is ignored.  what names the struct in errors
 * ("plan.ep_groups[2]").  NULL, a foreign magic or a size under min_size ->
 * ncclxInvalidArgument.
 */
ncclxResult_t ncclx_struct_import(void *dst, size_t dst_size, const void *src, uint32_t magic,
                                  size_t min_size, const char *what);

/**
 * Checks an output struct the caller passes for the library to fill: copies of at most
 * caller's size bytes are written back with ncclx_struct_export().
 */
ncclxResult_t ncclx_struct_check_output(const void *dst, uint32_t magic, size_t min_size,
                                        const char *what);

/** Writes src (a full library-side struct of src_size bytes) into the caller's dst. */
void ncclx_struct_export(void *dst, const void *src, size_t src_size);

#endif /* NCCLX_LIB_STRUCT_H_ */
