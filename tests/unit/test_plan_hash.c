/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The comparison of normalized plans across ranks: equal plans hash equally (local memory
 * aside), a change of any one field changes the hash, and the first difference is named with
 * its group and field.  Pure host code.
 *
 * The fields are walked by offset from this file's own tables (one per struct), not from the
 * library's: a field the library forgot to compare, or a 64-bit field it compares on 32 bits,
 * fails here.  Each table must account for every byte of its struct (test_tables_cover_structs),
 * so a field added to a public plan struct without a row here fails as well.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "ncclx_test.h"

#include "plan_internal.h"

/* What a byte range of a struct is to the cross-rank comparison. */
typedef enum {
    SHARED,   /* must be equal on every rank: hashed, and named by the diff */
    LOCAL,    /* this rank's own memory (host_block, the group pointers): never compared */
    IMPORTED, /* struct header and reserved words: set by import, not compared */
    PADDING   /* alignment bytes between two fields */
} role_t;

typedef struct {
    const char *name; /* as ncclx_plan_difference_name spells the field's last part */
    size_t offset, size;
    role_t role;
} field_t;

#define MEMBER_SIZE(type, f) sizeof(((type *)0)->f)
#define ROW(type, f, role)                                \
    {                                                     \
#f, offsetof(type, f), MEMBER_SIZE(type, f), role \
    }
#define END_OF(type, f) (offsetof(type, f) + MEMBER_SIZE(type, f))
#define PAD(type, after, next)                                                                \
    {                                                                                         \
        "(padding)", END_OF(type, after), offsetof(type, next) - END_OF(type, after), PADDING \
    }
#define HEADER_ROWS(type) \
    ROW(type, size, IMPORTED), ROW(type, magic, IMPORTED), ROW(type, version, IMPORTED)

/* Every byte of each struct, in offset order. */
static const field_t team_rows[] = {
    HEADER_ROWS(ncclxTeam_t),
    ROW(ncclxTeam_t, num_ranks, SHARED),
    ROW(ncclxTeam_t, num_nodes, SHARED),
    ROW(ncclxTeam_t, lsa_size, SHARED),
    ROW(ncclxTeam_t, reserved0, IMPORTED),
};

static const field_t plan_rows[] = {
    HEADER_ROWS(ncclxPlan_t),
    ROW(ncclxPlan_t, num_ep_groups, SHARED),
    ROW(ncclxPlan_t, reserved0, IMPORTED),
    ROW(ncclxPlan_t, ep_groups, LOCAL),
    ROW(ncclxPlan_t, m2n_staging_bytes, SHARED),
    ROW(ncclxPlan_t, host_block, LOCAL),
    ROW(ncclxPlan_t, host_block_bytes, LOCAL),
    ROW(ncclxPlan_t, m2n_max_group_entries, SHARED),
    ROW(ncclxPlan_t, reserved1, IMPORTED),
};

static const field_t group_rows[] = {
    HEADER_ROWS(ncclxEpGroupPlan_t),
    ROW(ncclxEpGroupPlan_t, algorithm, SHARED),
    ROW(ncclxEpGroupPlan_t, num_experts, SHARED),
    ROW(ncclxEpGroupPlan_t, max_topk, SHARED),
    ROW(ncclxEpGroupPlan_t, hidden, SHARED),
    ROW(ncclxEpGroupPlan_t, token_dtypes, SHARED),
    ROW(ncclxEpGroupPlan_t, layouts, SHARED),
    ROW(ncclxEpGroupPlan_t, recipes, SHARED),
    ROW(ncclxEpGroupPlan_t, max_dispatch_tokens_per_rank, SHARED),
    ROW(ncclxEpGroupPlan_t, max_recv_tokens_per_rank, SHARED),
    ROW(ncclxEpGroupPlan_t, max_token_bytes, SHARED),
    ROW(ncclxEpGroupPlan_t, max_scale_bytes, SHARED),
    ROW(ncclxEpGroupPlan_t, expert_alignment, SHARED),
    ROW(ncclxEpGroupPlan_t, enable_mask, SHARED),
    ROW(ncclxEpGroupPlan_t, num_handles, SHARED),
    ROW(ncclxEpGroupPlan_t, sm_budget, SHARED),
    PAD(ncclxEpGroupPlan_t, sm_budget, timeout_ns),
    ROW(ncclxEpGroupPlan_t, timeout_ns, SHARED),
    ROW(ncclxEpGroupPlan_t, overflow_policy, SHARED),
    ROW(ncclxEpGroupPlan_t, zero_copy, SHARED),
};

#define COUNT(table) (sizeof(table) / sizeof((table)[0]))

typedef struct {
    const char *what;
    const field_t *rows;
    size_t count, struct_size;
} table_t;

static const table_t tables[] = {
    {"ncclxTeam_t", team_rows, COUNT(team_rows), sizeof(ncclxTeam_t)},
    {"ncclxPlan_t", plan_rows, COUNT(plan_rows), sizeof(ncclxPlan_t)},
    {"ncclxEpGroupPlan_t", group_rows, COUNT(group_rows), sizeof(ncclxEpGroupPlan_t)},
};

/* The rows tile the struct: no gap, no overlap, the sizes sum to sizeof.  Padding is only the
 * alignment the next field needs (a new field put in the hole would need a row instead). */
static void test_tables_cover_structs(void **state)
{
    (void)state;
    for (size_t t = 0; t < COUNT(tables); t++) {
        const table_t *tab = &tables[t];
        size_t end = 0, padding = 0, sum = 0;
        for (size_t i = 0; i < tab->count; i++) {
            const field_t *f = &tab->rows[i];
            if (f->offset != end) {
                fail_msg("%s: row %s starts at %zu, the previous row ends at %zu: a field "
                         "without a row in this test's table?",
                         tab->what, f->name, f->offset, end);
            }
            if (f->role == PADDING) {
                assert_true(i + 1 < tab->count);
                assert_true(f->size < tab->rows[i + 1].size);
                assert_int_equal((f->offset + f->size) % tab->rows[i + 1].size, 0);
                padding += f->size;
            } else {
                assert_true(f->size == 4 || f->size == 8);
            }
            sum += f->size;
            end = f->offset + f->size;
        }
        if (end != tab->struct_size || sum != tab->struct_size) {
            fail_msg("%s: rows cover %zu bytes (%zu of padding), sizeof is %zu: a field without "
                     "a row in this test's table?",
                     tab->what, sum, padding, tab->struct_size);
        }
    }
}

/* Group gi of the 64-group plan: LL groups, each different from its neighbours so that a
 * comparison of the wrong groups would see a difference. */
static ncclxEpGroupPlan_t group_for(uint32_t gi)
{
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    g.num_experts = 32u * (1u + gi % 3u);
    g.max_topk = 1u + gi % 8u;
    g.hidden = 1024u + 128u * (gi % 5u);
    g.layouts = gi % 2u ? NCCLX_EP_LAYOUT_RANK_MAJOR : NCCLX_EP_LAYOUT_EXPERT_MAJOR;
    g.max_dispatch_tokens_per_rank = 8u + gi;
    g.num_handles = 1u + gi % 4u;
    g.sm_budget = gi % 7u;
    g.timeout_ns = 1000000ull * (gi + 1u);
    return g;
}

/* A plan of num_groups groups on 8 ranks, imported; *norm is heap memory (free() it). */
static ncclx_plan_norm_t *imported_n(uint32_t num_groups, void *host_block, size_t bytes)
{
    static ncclxEpGroupPlan_t g[NCCLX_MAX_EP_GROUPS];
    static const ncclxEpGroupPlan_t *groups[NCCLX_MAX_EP_GROUPS];
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclx_plan_norm_t *norm = malloc(sizeof(*norm));
    assert_non_null(norm);
    memset(norm, 0xa5, sizeof(*norm)); /* import must not depend on the memory's old bytes */
    for (uint32_t gi = 0; gi < num_groups; gi++) {
        g[gi] = group_for(gi);
        groups[gi] = &g[gi];
    }
    plan.num_ep_groups = num_groups;
    plan.ep_groups = groups;
    plan.host_block = host_block;
    plan.host_block_bytes = bytes;
    team.num_ranks = 8;
    team.lsa_size = 8;
    assert_ncclx_ok(ncclx_plan_import(&plan, &team, norm));
    assert_int_equal(norm->num_groups, num_groups);
    return norm;
}

/* The two-group plan of the order and naming tests. */
static ncclx_plan_norm_t *imported(void *host_block, size_t host_block_bytes)
{
    return imported_n(2, host_block, host_block_bytes);
}

static uint64_t read_field(const void *base, const field_t *f)
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

static void assert_first_difference(const ncclx_plan_norm_t *a, const ncclx_plan_norm_t *b,
                                    const char *name)
{
    ncclx_plan_difference_t d;
    char got[96];
    assert_int_not_equal(ncclx_plan_hash(a), ncclx_plan_hash(b));
    assert_int_equal(ncclx_plan_diff(a, b, &d), 1);
    ncclx_plan_difference_name(&d, got, sizeof(got));
    if (strcmp(got, name) != 0) {
        fail_msg("first difference named '%s', expected '%s'", got, name);
    }
    assert_true(d.a != d.b);
}

/* Where in a norm a table's struct lives. */
typedef struct {
    const table_t *table;
    int group;   /* -1: the team or the plan */
    size_t base; /* offset of the struct in ncclx_plan_norm_t */
} place_t;

/* Flips one bit of byte k of field f at place p in a copy of a; the hash must change (SHARED)
 * or not (LOCAL, IMPORTED), and the diff must name the field with both full values. */
static void check_flip(const ncclx_plan_norm_t *a, ncclx_plan_norm_t *b, const place_t *p,
                       const field_t *f, size_t k, unsigned char bit)
{
    ncclx_plan_difference_t d;
    char name[128], got[128];
    memcpy(b, a, sizeof(*a));
    ((unsigned char *)b)[p->base + f->offset + k] ^= bit;
    if (p->group >= 0) {
        snprintf(name, sizeof(name), "plan.ep_groups[%d]->%s", p->group, f->name);
    } else {
        snprintf(name, sizeof(name), "%s.%s", p->table == &tables[0] ? "team" : "plan", f->name);
    }
    if (f->role != SHARED) {
        if (ncclx_plan_hash(a) != ncclx_plan_hash(b) || ncclx_plan_diff(a, b, &d) != 0) {
            fail_msg("%s (byte %zu, bit 0x%02x) is not shared across ranks but changed the "
                     "comparison",
                     name, k, bit);
        }
        return;
    }
    if (ncclx_plan_hash(a) == ncclx_plan_hash(b)) {
        fail_msg("%s (byte %zu of %zu, bit 0x%02x) changed, the hash did not", name, k, f->size,
                 bit);
    }
    for (int dir = 0; dir < 2; dir++) {
        const ncclx_plan_norm_t *x = dir ? b : a, *y = dir ? a : b;
        if (ncclx_plan_diff(x, y, &d) != 1) {
            fail_msg("%s (byte %zu of %zu, bit 0x%02x) changed, the diff saw no difference", name,
                     k, f->size, bit);
        }
        ncclx_plan_difference_name(&d, got, sizeof(got));
        if (strcmp(got, name) != 0) {
            fail_msg("%s (byte %zu, bit 0x%02x) changed, the diff named '%s'", name, k, bit, got);
        }
        /* The parts as plan_internal.h gives them: group -1 for team and plan fields. */
        assert_int_equal(d.group, p->group);
        assert_string_equal(d.scope, p->group >= 0            ? "group"
                                     : p->table == &tables[0] ? "team"
                                                              : "plan");
        assert_string_equal(d.field, f->name);
        /* Both values in full: a 64-bit field read on 32 bits fails here too. */
        assert_true(d.a == read_field((const char *)x + p->base, f));
        assert_true(d.b == read_field((const char *)y + p->base, f));
    }
}

static void walk_every_field(uint32_t num_groups)
{
    ncclx_plan_norm_t *a = imported_n(num_groups, NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    place_t places[2 + NCCLX_MAX_EP_GROUPS];
    size_t n = 0, shared_bytes = 0;
    static const unsigned char bits[] = {0x01, 0x80};
    assert_non_null(b);
    places[n++] = (place_t){&tables[0], -1, offsetof(ncclx_plan_norm_t, team)};
    places[n++] = (place_t){&tables[1], -1, offsetof(ncclx_plan_norm_t, plan)};
    for (uint32_t gi = 0; gi < num_groups; gi++) {
        places[n++] = (place_t){&tables[2], (int)gi,
                                offsetof(ncclx_plan_norm_t, groups) + gi * sizeof(a->groups[0])};
    }
    for (size_t p = 0; p < n; p++) {
        for (size_t i = 0; i < places[p].table->count; i++) {
            const field_t *f = &places[p].table->rows[i];
            if (f->role == PADDING) {
                continue;
            }
            for (size_t k = 0; k < f->size; k++) {
                for (size_t j = 0; j < sizeof(bits); j++) {
                    check_flip(a, b, &places[p], f, k, bits[j]);
                }
                shared_bytes += f->role == SHARED;
            }
        }
    }
    /* 3 team + 3 plan fields (16 bytes), 18 group fields (76 bytes) per group. */
    assert_int_equal(shared_bytes, 12 + 16 + (size_t)num_groups * 76);
    /* Group slots past num_groups are not part of the plan. */
    if (num_groups < NCCLX_MAX_EP_GROUPS) {
        memcpy(b, a, sizeof(*a));
        memset(&b->groups[num_groups], 0x5a,
               (NCCLX_MAX_EP_GROUPS - num_groups) * sizeof(b->groups[0]));
        ncclx_plan_difference_t d;
        assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
        assert_int_equal(ncclx_plan_diff(a, b, &d), 0);
    }
    free(a);
    free(b);
}

/* Every byte of every field, on a two-group plan and on the largest (64 groups). */
static void test_every_field_two_groups(void **state)
{
    (void)state;
    walk_every_field(2);
}

static void test_every_field_64_groups(void **state)
{
    (void)state;
    walk_every_field(NCCLX_MAX_EP_GROUPS);
}

/* Two imports of the same plan: equal hash, no difference, whatever local memory they name;
 * with 2 groups and with the most groups a plan may hold. */
static void test_equal_plans(void **state)
{
    static const uint32_t counts[] = {0, 1, 2, 63, NCCLX_MAX_EP_GROUPS};
    alignas(64) static unsigned char block[4096];
    (void)state;
    for (size_t i = 0; i < COUNT(counts); i++) {
        ncclx_plan_norm_t *a = imported_n(counts[i], NULL, 0);
        ncclx_plan_norm_t *b = imported_n(counts[i], block, sizeof(block));
        ncclx_plan_difference_t d = {0};
        char name[96];
        assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
        if (ncclx_plan_diff(a, b, &d) != 0) {
            ncclx_plan_difference_name(&d, name, sizeof(name));
            fail_msg("%u groups: identical plans differ at %s", counts[i], name);
        }
        assert_int_equal(ncclx_plan_diff(b, a, &d), 0);
        assert_int_equal(ncclx_plan_diff(a, a, &d), 0);
        /* The hash is a function of the plan, not of the memory it sits in. */
        memcpy(b, a, sizeof(*a));
        assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
        free(a);
        free(b);
    }
}

static void test_team_and_plan_fields(void **state)
{
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    (void)state;
    assert_non_null(b);
    memcpy(b, a, sizeof(*a));
    b->team.num_ranks = 16;
    assert_first_difference(a, b, "team.num_ranks");
    memcpy(b, a, sizeof(*a));
    b->team.num_nodes = 2;
    assert_first_difference(a, b, "team.num_nodes");
    memcpy(b, a, sizeof(*a));
    b->team.lsa_size = 4;
    assert_first_difference(a, b, "team.lsa_size");
    memcpy(b, a, sizeof(*a));
    b->plan.m2n_staging_bytes++;
    assert_first_difference(a, b, "plan.m2n_staging_bytes");
    memcpy(b, a, sizeof(*a));
    b->plan.m2n_max_group_entries = 256;
    assert_first_difference(a, b, "plan.m2n_max_group_entries");
    /* One group fewer: named as the group count, not as some field of a missing group. */
    memcpy(b, a, sizeof(*a));
    b->plan.num_ep_groups = b->num_groups = 1;
    assert_first_difference(a, b, "plan.num_ep_groups");
    assert_first_difference(b, a, "plan.num_ep_groups");
    /* Local memory is not compared. */
    memcpy(b, a, sizeof(*a));
    b->plan.host_block = b;
    b->plan.host_block_bytes = 12345;
    assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
    free(a);
    free(b);
}

/* Several differences: the team comes first, then the plan, then groups in order. */
static void test_first_difference_order(void **state)
{
    ncclx_plan_norm_t *a = imported(NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    ncclx_plan_difference_t d;
    char name[96];
    (void)state;
    assert_non_null(b);
    memcpy(b, a, sizeof(*a));
    b->groups[1].hidden = 4096;
    b->groups[0].num_handles = 7;
    assert_first_difference(a, b, "plan.ep_groups[0]->num_handles");
    b->groups[0].max_topk = 3;
    assert_first_difference(a, b, "plan.ep_groups[0]->max_topk");
    b->plan.m2n_max_group_entries = 1;
    assert_first_difference(a, b, "plan.m2n_max_group_entries");
    b->team.lsa_size = 2;
    assert_first_difference(a, b, "team.lsa_size");
    memcpy(b, a, sizeof(*a));
    b->groups[0].hidden = 4096;
    assert_int_equal(ncclx_plan_diff(a, b, &d), 1);
    ncclx_plan_difference_name(&d, name, sizeof(name));
    assert_string_equal(name, "plan.ep_groups[0]->hidden");
    assert_int_equal(d.a, 1024);
    assert_int_equal(d.b, 4096);
    free(a);
    free(b);
}

/* What import fills in is compared as filled in: a NULL team is 1 rank on 1 node (whatever the
 * memory held before), a group's timeout_ns of 0 is NCCLX_DEFAULT_TIMEOUT_NS, so that a rank
 * that leaves it 0 and one that spells the default out agree, while any other value is kept and
 * compared. */
static void test_import_defaults_compared(void **state)
{
    ncclxEpGroupPlan_t g = group_for(0);
    const ncclxEpGroupPlan_t *groups[] = {&g};
    ncclxPlan_t plan = NCCLX_PLAN_INIT;
    ncclx_plan_norm_t *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
    ncclx_plan_difference_t d;
    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    plan.num_ep_groups = 1;
    plan.ep_groups = groups;
    memset(a, 0xa5, sizeof(*a));
    assert_ncclx_ok(ncclx_plan_import(&plan, NULL, a));
    assert_int_equal(a->team.num_ranks, 1);
    assert_int_equal(a->team.num_nodes, 1);
    assert_int_equal(a->team.lsa_size, 1);
    g.timeout_ns = 0;
    assert_ncclx_ok(ncclx_plan_import(&plan, NULL, a));
    assert_true(a->groups[0].timeout_ns == NCCLX_DEFAULT_TIMEOUT_NS);
    g.timeout_ns = NCCLX_DEFAULT_TIMEOUT_NS;
    memset(b, 0x5a, sizeof(*b));
    assert_ncclx_ok(ncclx_plan_import(&plan, NULL, b));
    assert_true(ncclx_plan_hash(a) == ncclx_plan_hash(b));
    assert_int_equal(ncclx_plan_diff(a, b, &d), 0);
    g.timeout_ns = NCCLX_DEFAULT_TIMEOUT_NS + 1;
    assert_ncclx_ok(ncclx_plan_import(&plan, NULL, b));
    assert_true(b->groups[0].timeout_ns == NCCLX_DEFAULT_TIMEOUT_NS + 1);
    assert_first_difference(a, b, "plan.ep_groups[0]->timeout_ns");
    free(a);
    free(b);
}

/* The hash's own steps (lib/plan/plan.c), to build the pair below. */
#define FNV_PRIME 0x100000001b3ull

static uint64_t odd_inverse(uint64_t x)
{
    uint64_t inv = x; /* Newton: each step doubles the bits that are right (3 to start) */
    for (int i = 0; i < 5; i++) {
        inv *= 2 - x * inv;
    }
    return inv;
}

/* The finalizer must be a bijection too, or two plans one field apart can still meet: an even
 * multiplier, for one, merges every pair of states that differ in the top bit only after the
 * first xor-shift.  Such a pair is built here, one 64-bit field (m2n_staging_bytes) apart, by
 * running the documented steps backwards; the real hash must tell them apart.  (Were the steps
 * ever changed, the pair would merely be an ordinary one and the assertion would still hold.) */
static void test_finalizer_keeps_pairs_apart(void **state)
{
    ncclx_plan_norm_t *a = imported_n(0, NULL, 0);
    ncclx_plan_norm_t *b = malloc(sizeof(*b));
    const uint64_t before[4] = {a->team.num_ranks, a->team.num_nodes, a->team.lsa_size,
                                a->plan.num_ep_groups};
    const uint64_t pinv = odd_inverse(FNV_PRIME);
    uint64_t h4 = 0xcbf29ce484222325ull, s, x, h5;
    (void)state;
    assert_non_null(b);
    assert_true(FNV_PRIME * pinv == 1);
    /* State after the four fields before m2n_staging_bytes, then after the last field. */
    for (int i = 0; i < 4; i++) {
        h4 = (h4 ^ before[i]) * FNV_PRIME;
    }
    s = (((h4 ^ a->plan.m2n_staging_bytes) * FNV_PRIME) ^ a->plan.m2n_max_group_entries) *
        FNV_PRIME;
    /* The partner's state after the first xor-shift (an involution for shifts >= 32) differs
     * in the top bit only; back through the last field to the staging bytes that give it. */
    x = (s ^ (s >> 33)) ^ (1ull << 63);
    s = x ^ (x >> 33);
    h5 = (s * pinv) ^ a->plan.m2n_max_group_entries;
    memcpy(b, a, sizeof(*a));
    b->plan.m2n_staging_bytes = (h5 * pinv) ^ h4;
    assert_true(b->plan.m2n_staging_bytes != a->plan.m2n_staging_bytes);
    assert_true(ncclx_plan_hash(a) != ncclx_plan_hash(b));
    assert_first_difference(a, b, "plan.m2n_staging_bytes");
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_cover_structs),
        cmocka_unit_test(test_equal_plans),
        cmocka_unit_test(test_every_field_two_groups),
        cmocka_unit_test(test_every_field_64_groups),
        cmocka_unit_test(test_team_and_plan_fields),
        cmocka_unit_test(test_first_difference_order),
        cmocka_unit_test(test_finalizer_keeps_pairs_apart),
        cmocka_unit_test(test_import_defaults_compared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
