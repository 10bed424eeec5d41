/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Public plan entry points: validation, sizing, printing.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "error.h"
#include "plan_internal.h"
#include "struct.h"

static const char *const ncclx_mem_class_names[NCCLX_MEM_NUM_CLASSES] = {
    [NCCLX_MEM_SYMMETRIC] = "symmetric",
    [NCCLX_MEM_DEVICE] = "device",
    [NCCLX_MEM_MAPPED_HOST] = "mapped_host",
    [NCCLX_MEM_HOST] = "host",
};

const char *ncclxMemClassName(ncclxMemClass_t mem_class)
{
    if ((unsigned)mem_class >= NCCLX_MEM_NUM_CLASSES) {
        return "unknown";
    }
    return ncclx_mem_class_names[mem_class];
}

/* The imported plan is large (one struct per possible group): keep it off small stacks. */
static ncclxResult_t ncclx_plan_measure(const ncclxPlan_t *plan, const ncclxTeam_t *team,
                                        ncclx_region_visitor_t visit, void *ctx,
                                        ncclx_layout_t *layout)
{
    ncclxResult_t res;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    ncclx_plan_regions_t *regions = malloc(sizeof(*regions));
    if (norm == NULL || regions == NULL) {
        res = NCCLX_ERROR(ncclxSystemError, "out of host memory while sizing a plan");
        goto out;
    }
    NCCLX_CHECK_GOTO(ncclx_plan_import(plan, team, norm), res, out);
    ncclx_layout_init_measure(layout, visit, ctx);
    NCCLX_CHECK_GOTO(ncclx_plan_layout(layout, norm, regions), res, out);
out:
    free(regions);
    free(norm);
    return res;
}

ncclxResult_t ncclxPlanValidate(const ncclxPlan_t *plan, const ncclxTeam_t *team)
{
    ncclx_layout_t layout;
    /* Sizing runs every check, including the ones that need dimensions (overflows). */
    return ncclx_plan_measure(plan, team, NULL, NULL, &layout);
}

ncclxResult_t ncclxPlanComputeSizes(const ncclxPlan_t *plan, const ncclxTeam_t *team,
                                    ncclxPlanSizes_t *sizes)
{
    ncclxPlanSizes_t result = NCCLX_PLAN_SIZES_INIT;
    ncclx_layout_t layout;
    NCCLX_CHECK(ncclx_struct_check_output(sizes, NCCLX_MAGIC_PLAN_SIZES, NCCLX_PLAN_SIZES_SIZE_V1,
                                          "sizes"));
    NCCLX_CHECK(ncclx_plan_measure(plan, team, NULL, NULL, &layout));
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        result.total[c] = layout.arena[c].used;
        result.per_handle[c] = layout.per_handle[c];
    }
    result.num_regions = layout.num_regions;
    ncclx_struct_export(sizes, &result, sizeof(result));
    return ncclxSuccess;
}

/* Human-readable byte counts: "1.50 GiB". */
static void ncclx_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double value = (double)bytes;
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, len, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
}

static void ncclx_print_region(const ncclx_region_t *region, void *ctx)
{
    char human[32];
    char owner[32] = "context";
    ncclx_format_bytes(region->bytes, human, sizeof(human));
    if (region->group >= 0) {
        snprintf(owner, sizeof(owner), "ep_group[%d]", region->group);
    }
    fprintf((FILE *)ctx, "  %-11s %-12s %-26s %14zu %16zu  %s",
            ncclxMemClassName(region->mem_class), owner, region->name, region->offset,
            region->bytes, human);
    if (region->count > 1) {
        fprintf((FILE *)ctx, "  (%u x %zu)", region->count, region->each);
    }
    fputc('\n', (FILE *)ctx);
}

ncclxResult_t ncclxPlanPrint(const ncclxPlan_t *plan, const ncclxTeam_t *team, FILE *out)
{
    ncclx_layout_t layout;
    if (out == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxPlanPrint: out is NULL");
    }
    fprintf(out, "  %-11s %-12s %-26s %14s %16s\n", "class", "owner", "region", "offset", "bytes");
    NCCLX_CHECK(ncclx_plan_measure(plan, team, ncclx_print_region, out, &layout));
    fprintf(out, "  totals per rank:\n");
    for (int c = 0; c < NCCLX_MEM_NUM_CLASSES; c++) {
        char human[32];
        ncclx_format_bytes(layout.arena[c].used, human, sizeof(human));
        fprintf(out, "  %-11s %16zu bytes  %s\n", ncclxMemClassName((ncclxMemClass_t)c),
                layout.arena[c].used, human);
    }
    return ncclxSuccess;
}
