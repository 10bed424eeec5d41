/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 */
#include <string.h>

#include <ncclx/ep.h>
#include <ncclx/init.h>
#include <ncclx/m2n.h>
#include <ncclx/placement.h>
#include <ncclx/plan.h>

#include "error.h"
#include "struct.h"

/*
 * Pin each released layout: a struct may grow at its end, but its v1 fields must end exactly
 * at the v1 size (up to the struct's alignment), or applications built against 0.1 break.
 */
#define NCCLX_FIELD_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))
#define NCCLX_PIN_V1(type, magic, size_v1, last)                                                 \
    _Static_assert(sizeof(type) >= (size_v1), #type " is smaller than its v1 layout");           \
    _Static_assert(NCCLX_FIELD_END(type, last) <= (size_v1) &&                                   \
                       (size_v1)-NCCLX_FIELD_END(type, last) < _Alignof(type),                   \
                   #type "." #last " does not end the v1 layout: fields moved or were resized"); \
    _Static_assert((size_v1) % _Alignof(type) == 0, #type " v1 size is not a multiple of its "   \
                                                          "alignment");
NCCLX_STRUCT_ABI_TABLE(NCCLX_PIN_V1)

/* ncclxTensor_t has no header: it is embedded by value in the args structs, so it can never
 * grow without moving their fields. */
_Static_assert(sizeof(ncclxTensor_t) == 48, "ncclxTensor_t layout changed");
_Static_assert(offsetof(ncclxPlan_t, ep_groups) == 24, "ncclxPlan_t.ep_groups moved");
_Static_assert(offsetof(ncclxPlan_t, host_block_bytes) == 48, "ncclxPlan_t.host_block_bytes moved");
_Static_assert(offsetof(ncclxEpGroupPlan_t, algorithm) == 16, "ncclxEpGroupPlan_t.algorithm moved");
_Static_assert(offsetof(ncclxEpGroupPlan_t, num_handles) == 68,
               "ncclxEpGroupPlan_t.num_handles moved");
_Static_assert(offsetof(ncclxEpGroupPlan_t, timeout_ns) == 80,
               "ncclxEpGroupPlan_t.timeout_ns moved");
_Static_assert(offsetof(ncclxTeam_t, lsa_size) == 24, "ncclxTeam_t.lsa_size moved");
_Static_assert(offsetof(ncclxPlanSizes_t, num_regions) == 80, "ncclxPlanSizes_t.num_regions moved");

static ncclxResult_t ncclx_struct_check_header(const ncclx_struct_header_t *header, uint32_t magic,
                                               size_t min_size, const char *what)
{
    if (header == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s is NULL", what);
    }
    if (header->magic != magic) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s->magic=0x%08x, expected 0x%08x: initialize it with its *_INIT "
                           "macro",
                           what, header->magic, magic);
    }
    if (header->size < min_size) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "%s->size=%zu is smaller than the first released layout (%zu bytes)",
                           what, header->size, min_size);
    }
    return ncclxSuccess;
}

ncclxResult_t ncclx_struct_import(void *dst, size_t dst_size, const void *src, uint32_t magic,
                                  size_t min_size, const char *what)
{
    const ncclx_struct_header_t *header = src;
    NCCLX_CHECK(ncclx_struct_check_header(header, magic, min_size, what));
    memcpy(dst, src, header->size < dst_size ? header->size : dst_size);
    ((ncclx_struct_header_t *)dst)->size = dst_size;
    return ncclxSuccess;
}

ncclxResult_t ncclx_struct_check_output(const void *dst, uint32_t magic, size_t min_size,
                                        const char *what)
{
    return ncclx_struct_check_header(dst, magic, min_size, what);
}

void ncclx_struct_export(void *dst, const void *src, size_t src_size)
{
    ncclx_struct_header_t *header = dst;
    size_t caller_size = header->size;
    memcpy(dst, src, caller_size < src_size ? caller_size : src_size);
    header->size = caller_size;
}
