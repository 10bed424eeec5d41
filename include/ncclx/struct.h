/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Versioned structs.  Every struct that libncclx takes by pointer starts with
 *
 *     size_t   size;     sizeof() the struct as the caller compiled it
 *     uint32_t magic;    one constant per struct type (NCCLX_MAGIC_*)
 *     uint32_t version;  NCCLX_VERSION_CODE the caller compiled against (informative)
 *
 * and has an *_INIT macro that fills these and every default.  Always start from the macro:
 *
 *     ncclxPlan_t plan = NCCLX_PLAN_INIT;
 *
 * Structs only grow at the end.  The library accepts a struct from an older release (a
 * smaller size: the fields it lacks take their defaults), ignores the unknown tail of a newer
 * one (a larger size), and rejects a zero or foreign magic, or a size smaller than the first
 * released layout, with ncclxInvalidArgument.
 */
#ifndef NCCLX_STRUCT_H_
#define NCCLX_STRUCT_H_

#include <stddef.h>
#include <stdint.h>

#include <ncclx/version.h>

#define NCCLX_STRUCT_HEADER \
    size_t size;            \
    uint32_t magic;         \
    uint32_t version

#define NCCLX_STRUCT_HEADER_INIT(type, magic) sizeof(type), (magic), NCCLX_VERSION_CODE

/* Magics: "nx" followed by two letters naming the struct. */
#define NCCLX_MAGIC_PLAN            0x6e78706cu /* 'nxpl' */
#define NCCLX_MAGIC_EP_GROUP_PLAN   0x6e786770u /* 'nxgp' */
#define NCCLX_MAGIC_TEAM            0x6e78746du /* 'nxtm' */
#define NCCLX_MAGIC_PLAN_SIZES      0x6e78737au /* 'nxsz' */
#define NCCLX_MAGIC_PLACEMENT_QUERY 0x6e787071u /* 'nxpq' */
#define NCCLX_MAGIC_PLACEMENT       0x6e787064u /* 'nxpd' */

#endif /* NCCLX_STRUCT_H_ */
