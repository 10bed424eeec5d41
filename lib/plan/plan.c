/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Public plan entry points: validation, sizing, printing; and the comparison of normalized plans
 * across ranks (hash and first difference).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- Plans compared across ranks ---- */

/* Every field that must be equal on every rank, in the order a difference is reported: the team,
 * the plan's own fields, then each group's.  host_block and host_block_bytes are left out: they
 * describe local memory. */
typedef struct {
    const char *name;
    size_t offset, size;
} ncclx_plan_field_t;

#define NCCLX_FIELD(type, f)                          \
    {                                                 \
#f, offsetof(type, f), sizeof(((type *)0)->f) \
    }

static const ncclx_plan_field_t ncclx_team_fields[] = {
    NCCLX_FIELD(ncclxTeam_t, num_ranks),
    NCCLX_FIELD(ncclxTeam_t, num_nodes),
    NCCLX_FIELD(ncclxTeam_t, lsa_size),
};

static const ncclx_plan_field_t ncclx_plan_fields[] = {
    NCCLX_FIELD(ncclxPlan_t, num_ep_groups),
    NCCLX_FIELD(ncclxPlan_t, m2n_staging_bytes),
    NCCLX_FIELD(ncclxPlan_t, m2n_max_group_entries),
};

static const ncclx_plan_field_t ncclx_group_fields[] = {
    NCCLX_FIELD(ncclxEpGroupPlan_t, algorithm),
    NCCLX_FIELD(ncclxEpGroupPlan_t, num_experts),
    NCCLX_FIELD(ncclxEpGroupPlan_t, max_topk),
    NCCLX_FIELD(ncclxEpGroupPlan_t, hidden),
    NCCLX_FIELD(ncclxEpGroupPlan_t, token_dtypes),
    NCCLX_FIELD(ncclxEpGroupPlan_t, layouts),
    NCCLX_FIELD(ncclxEpGroupPlan_t, recipes),
    NCCLX_FIELD(ncclxEpGroupPlan_t, max_dispatch_tokens_per_rank),
    NCCLX_FIELD(ncclxEpGroupPlan_t, max_recv_tokens_per_rank),
    NCCLX_FIELD(ncclxEpGroupPlan_t, max_token_bytes),
    NCCLX_FIELD(ncclxEpGroupPlan_t, max_scale_bytes),
    NCCLX_FIELD(ncclxEpGroupPlan_t, expert_alignment),
    NCCLX_FIELD(ncclxEpGroupPlan_t, enable_mask),
    NCCLX_FIELD(ncclxEpGroupPlan_t, num_handles),
    NCCLX_FIELD(ncclxEpGroupPlan_t, sm_budget),
    NCCLX_FIELD(ncclxEpGroupPlan_t, timeout_ns),
    NCCLX_FIELD(ncclxEpGroupPlan_t, overflow_policy),
    NCCLX_FIELD(ncclxEpGroupPlan_t, zero_copy),
};

/* A field added to a struct must join its table (and so the comparison). */
_Static_assert(offsetof(ncclxEpGroupPlan_t, zero_copy) + sizeof(uint32_t) ==
                   sizeof(ncclxEpGroupPlan_t),
               "a new ncclxEpGroupPlan_t field must be added to ncclx_group_fields");
_Static_assert(offsetof(ncclxPlan_t, reserved1) + sizeof(uint32_t) == sizeof(ncclxPlan_t),
               "a new ncclxPlan_t field must be added to ncclx_plan_fields (or left out on "
               "purpose)");
_Static_assert(offsetof(ncclxTeam_t, reserved0) + sizeof(uint32_t) == sizeof(ncclxTeam_t),
               "a new ncclxTeam_t field must be added to ncclx_team_fields");

#define NCCLX_COUNT(table) (sizeof(table) / sizeof((table)[0]))

static uint64_t ncclx_field_value(const void *base, const ncclx_plan_field_t *f)
{
    uint64_t value = 0;
    if (f->size == sizeof(uint32_t)) {
        uint32_t v32;
        memcpy(&v32, (const char *)base + f->offset, sizeof(v32));
        value = v32;
    } else {
        memcpy(&value, (const char *)base + f->offset, sizeof(value));
    }
    return value;
}

/* Calls visit(field, group, value) for every compared field of norm, in order; stops early
 * when visit returns nonzero. */
typedef int (*ncclx_field_visit_t)(const ncclx_plan_field_t *f, int group, uint64_t value,
                                   void *arg);

static void ncclx_plan_walk(const ncclx_plan_norm_t *norm, ncclx_field_visit_t visit, void *arg)
{
    for (size_t i = 0; i < NCCLX_COUNT(ncclx_team_fields); i++) {
        if (visit(&ncclx_team_fields[i], -2, ncclx_field_value(&norm->team, &ncclx_team_fields[i]),
                  arg)) {
            return;
        }
    }
    for (size_t i = 0; i < NCCLX_COUNT(ncclx_plan_fields); i++) {
        if (visit(&ncclx_plan_fields[i], -1, ncclx_field_value(&norm->plan, &ncclx_plan_fields[i]),
                  arg)) {
            return;
        }
    }
    for (uint32_t gi = 0; gi < norm->num_groups && gi < NCCLX_MAX_EP_GROUPS; gi++) {
        for (size_t i = 0; i < NCCLX_COUNT(ncclx_group_fields); i++) {
            if (visit(&ncclx_group_fields[i], (int)gi,
                      ncclx_field_value(&norm->groups[gi], &ncclx_group_fields[i]), arg)) {
                return;
            }
        }
    }
}

/*
 * FNV-1a over whole 64-bit field values, then a bijective finalizer.  Each step
 * h -> (h ^ v) * P (P odd) is a bijection of h for a fixed v and of v for a fixed h, so two
 * plans that differ in exactly one field always hash differently: the states part at that
 * field and every later step maps distinct states to distinct states.
 */
static int ncclx_hash_field(const ncclx_plan_field_t *f, int group, uint64_t value, void *arg)
{
    uint64_t *h = arg;
    (void)f;
    (void)group;
    *h = (*h ^ value) * 0x100000001b3ull;
    return 0;
}

uint64_t ncclx_plan_hash(const ncclx_plan_norm_t *norm)
{
    uint64_t h = 0xcbf29ce484222325ull;
    ncclx_plan_walk(norm, ncclx_hash_field, &h);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* Sized from the tables themselves: a field added to a table cannot outgrow the array. */
#define NCCLX_PLAN_MAX_VALUES                                          \
    (NCCLX_COUNT(ncclx_team_fields) + NCCLX_COUNT(ncclx_plan_fields) + \
     NCCLX_MAX_EP_GROUPS * NCCLX_COUNT(ncclx_group_fields))

typedef struct {
    uint64_t values[NCCLX_PLAN_MAX_VALUES];
    uint32_t count;
} ncclx_plan_values_t;

static int ncclx_collect_field(const ncclx_plan_field_t *f, int group, uint64_t value, void *arg)
{
    ncclx_plan_values_t *v = arg;
    (void)f;
    (void)group;
    if (v->count >= NCCLX_PLAN_MAX_VALUES) {
        return 1; /* unreachable (the walk visits at most the array's size); never overrun */
    }
    v->values[v->count++] = value;
    return 0;
}

typedef struct {
    const ncclx_plan_values_t *other;
    uint32_t index;
    ncclx_plan_difference_t *diff;
    int found;
} ncclx_plan_compare_t;

static int ncclx_compare_field(const ncclx_plan_field_t *f, int group, uint64_t value, void *arg)
{
    ncclx_plan_compare_t *c = arg;
    uint64_t theirs = c->index < c->other->count ? c->other->values[c->index] : 0;
    c->index++;
    if (value == theirs) {
        return 0;
    }
    c->diff->group = group < 0 ? -1 : group;
    c->diff->field = f->name;
    c->diff->scope = group == -2 ? "team" : group == -1 ? "plan" : "group";
    c->diff->a = value;
    c->diff->b = theirs;
    c->found = 1;
    return 1;
}

int ncclx_plan_diff(const ncclx_plan_norm_t *a, const ncclx_plan_norm_t *b,
                    ncclx_plan_difference_t *diff)
{
    ncclx_plan_values_t *theirs = malloc(sizeof(*theirs));
    ncclx_plan_compare_t c = {theirs, 0, diff, 0};
    if (theirs == NULL) {
        /* Cannot name the field: fall back to the hashes (equal plans, equal hashes). */
        uint64_t ha = ncclx_plan_hash(a), hb = ncclx_plan_hash(b);
        diff->group = -1;
        diff->field = "(hash)";
        diff->scope = "plan";
        diff->a = ha;
        diff->b = hb;
        return ha != hb;
    }
    theirs->count = 0;
    ncclx_plan_walk(b, ncclx_collect_field, theirs);
    /* Plans of different group counts already differ at plan.num_ep_groups, before any group. */
    ncclx_plan_walk(a, ncclx_compare_field, &c);
    free(theirs);
    return c.found;
}

void ncclx_plan_difference_name(const ncclx_plan_difference_t *d, char *buf, size_t len)
{
    if (d->group >= 0) {
        snprintf(buf, len, "plan.ep_groups[%d]->%s", d->group, d->field);
    } else {
        snprintf(buf, len, "%s.%s", d->scope, d->field);
    }
}
