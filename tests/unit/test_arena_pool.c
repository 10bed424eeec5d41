/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Arenas (aligned, non-overlapping carving; exhaustion and overflow; measuring == real) and
 * fixed-capacity pools (lowest index first, zeroed objects, exhaustion, bad releases).
 * Random carves use a fresh seed each run, printed; TEST_SEED=n replays one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ncclx_test.h"

#include "arena.h"
#include "pool.h"

#define NUM_CARVES     400
#define MAX_ALIGN_LOG2 12 /* carves ask for 1 .. 4096 bytes of alignment */
#define REAL_CAPACITY  (NUM_CARVES * (4096 + 4096))

typedef struct {
    size_t bytes;
    size_t align;
    size_t offset;
} carve_t;

static unsigned seed;

/* xorshift32: the sequence depends on the printed seed only, not on the libc. */
static uint32_t rng_state;

static uint32_t rng_next(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* A random sequence: sizes 0..4096 (some zero-sized), alignments 2^0 .. 2^12. */
static void random_carves(carve_t *carves, size_t n)
{
    rng_state = seed != 0 ? seed : 1;
    for (size_t i = 0; i < n; i++) {
        carves[i].bytes = rng_next() % 4097;
        carves[i].align = (size_t)1 << (rng_next() % (MAX_ALIGN_LOG2 + 1));
        carves[i].offset = SIZE_MAX;
    }
}

static void test_measure_alignment(void **state)
{
    ncclx_arena_t arena;
    size_t offset = 0;
    (void)state;
    ncclx_arena_init_measure(&arena, "device");
    assert_int_equal(arena.used, 0);
    for (size_t log2 = 0; log2 <= MAX_ALIGN_LOG2; log2++) {
        size_t align = (size_t)1 << log2;
        /* An odd size first, so that the next region really has to be rounded up. */
        assert_ncclx_ok(ncclx_arena_carve(&arena, 3, 1, "odd", &offset, NULL));
        assert_ncclx_ok(ncclx_arena_carve(&arena, 100, align, "aligned", &offset, NULL));
        assert_int_equal(offset % align, 0);
        assert_int_equal(arena.used, offset + 100);
    }
}

/* Every region of a few hundred random carves is aligned, inside the arena, and disjoint
 * from every other one; with a real arena, ptr == base + offset and each region can be
 * written whole (ASan checks the bounds) without disturbing the others. */
static void test_random_carves(void **state)
{
    carve_t carves[NUM_CARVES];
    ncclx_arena_t arena;
    unsigned char *base = aligned_alloc(4096, REAL_CAPACITY);
    (void)state;
    assert_non_null(base);
    random_carves(carves, NUM_CARVES);
    assert_ncclx_ok(ncclx_arena_init(&arena, "symmetric", base, REAL_CAPACITY, 4096));
    for (size_t i = 0; i < NUM_CARVES; i++) {
        void *ptr = NULL;
        assert_ncclx_ok(ncclx_arena_carve(&arena, carves[i].bytes, carves[i].align, "random",
                                          &carves[i].offset, &ptr));
        assert_ptr_equal(ptr, base + carves[i].offset);
        assert_int_equal((uintptr_t)ptr % carves[i].align, 0);
        assert_true(carves[i].offset + carves[i].bytes <= arena.used);
        assert_true(arena.used <= REAL_CAPACITY);
        memset(ptr, (int)(i % 251) + 1, carves[i].bytes);
    }
    for (size_t i = 0; i < NUM_CARVES; i++) {
        for (size_t j = i + 1; j < NUM_CARVES; j++) {
            size_t a0 = carves[i].offset, a1 = a0 + carves[i].bytes;
            size_t b0 = carves[j].offset, b1 = b0 + carves[j].bytes;
            if (a1 > b0 && b1 > a0) {
                fail_msg("seed %u: carve %zu [%zu, %zu) overlaps carve %zu [%zu, %zu)", seed, i, a0,
                         a1, j, b0, b1);
            }
        }
        for (size_t k = 0; k < carves[i].bytes; k++) {
            if (base[carves[i].offset + k] != (unsigned char)((i % 251) + 1)) {
                fail_msg("seed %u: byte %zu of carve %zu was overwritten", seed, k, i);
            }
        }
    }
    free(base);
}

/* Sizing uses measuring arenas, init real ones: the same sequence must give the same map. */
static void test_measure_equals_real(void **state)
{
    carve_t carves[NUM_CARVES];
    ncclx_arena_t measure, real;
    void *base = aligned_alloc(4096, REAL_CAPACITY);
    (void)state;
    assert_non_null(base);
    random_carves(carves, NUM_CARVES);
    ncclx_arena_init_measure(&measure, "device");
    assert_ncclx_ok(ncclx_arena_init(&real, "device", base, REAL_CAPACITY, 4096));
    for (size_t i = 0; i < NUM_CARVES; i++) {
        size_t real_offset = SIZE_MAX;
        void *ptr = base;
        assert_ncclx_ok(ncclx_arena_carve(&measure, carves[i].bytes, carves[i].align, "m",
                                          &carves[i].offset, &ptr));
        assert_null(ptr); /* measuring arenas hand out no addresses */
        assert_ncclx_ok(
            ncclx_arena_carve(&real, carves[i].bytes, carves[i].align, "r", &real_offset, NULL));
        if (real_offset != carves[i].offset) {
            fail_msg("seed %u: carve %zu at %zu measured, %zu real", seed, i, carves[i].offset,
                     real_offset);
        }
    }
    assert_int_equal(measure.used, real.used);
    free(base);
}

static void test_exhaustion(void **state)
{
    ncclx_arena_t arena;
    size_t offset = 12345;
    void *ptr = &offset;
    _Alignas(256) unsigned char block[1024];
    (void)state;
    assert_ncclx_ok(ncclx_arena_init(&arena, "host", block, sizeof(block), 256));
    assert_ncclx_ok(ncclx_arena_carve(&arena, 1000, 64, "first", &offset, &ptr));
    assert_int_equal(offset, 0);
    assert_int_equal(arena.used, 1000);
    offset = 12345;
    ptr = &offset;
    /* 24 bytes are left but alignment to 64 leaves none. */
    assert_ncclx_error(ncclx_arena_carve(&arena, 8, 64, "handle pool", &offset, &ptr),
                       ncclxResourceExhausted, "host arena: handle pool needs 8 bytes");
    assert_int_equal(arena.used, 1000);
    assert_int_equal(offset, 12345);
    assert_ptr_equal(ptr, &offset);
    /* What fits still fits after a refusal, up to the last byte. */
    assert_ncclx_ok(ncclx_arena_carve(&arena, 24, 1, "tail", &offset, &ptr));
    assert_int_equal(offset, 1000);
    assert_int_equal(arena.used, sizeof(block));
    assert_ncclx_error(ncclx_arena_carve(&arena, 1, 1, "one more byte", &offset, &ptr),
                       ncclxResourceExhausted, "one more byte");
    assert_int_equal(arena.used, sizeof(block));
    /* A zero-byte region at the very end takes no room. */
    assert_ncclx_ok(ncclx_arena_carve(&arena, 0, 1, "empty", &offset, NULL));
}

static void test_size_overflow(void **state)
{
    ncclx_arena_t arena;
    size_t offset = 7;
    (void)state;
    ncclx_arena_init_measure(&arena, "symmetric");
    assert_ncclx_ok(ncclx_arena_carve(&arena, SIZE_MAX - 100, 1, "huge", &offset, NULL));
    assert_int_equal(arena.used, SIZE_MAX - 100);
    offset = 7;
    assert_ncclx_error(ncclx_arena_carve(&arena, 200, 1, "receive area", &offset, NULL),
                       ncclxInvalidArgument, "symmetric arena: receive area (200 bytes) overflows");
    assert_ncclx_error(ncclx_arena_carve(&arena, 1, 4096, "aligned", &offset, NULL),
                       ncclxInvalidArgument, "symmetric arena: aligned: size overflows");
    assert_int_equal(arena.used, SIZE_MAX - 100);
    assert_int_equal(offset, 7);
    assert_ncclx_error(ncclx_arena_carve(&arena, 1, 48, "odd align", &offset, NULL),
                       ncclxInternalError, "not a power of two");
    assert_ncclx_error(ncclx_arena_carve(&arena, 1, 0, "zero align", &offset, NULL),
                       ncclxInternalError, "not a power of two");
}

static void test_checked_arithmetic(void **state)
{
    size_t out = 0;
    (void)state;
    assert_true(ncclx_size_mul((size_t)1 << 31, (size_t)1 << 31, &out));
    assert_int_equal(out, (size_t)1 << 62);
    assert_false(ncclx_size_mul((size_t)1 << 32, (size_t)1 << 32, &out));
    assert_false(ncclx_size_mul(SIZE_MAX / 3 + 1, 3, &out));
    assert_true(ncclx_size_add(SIZE_MAX - 1, 1, &out));
    assert_int_equal(out, SIZE_MAX);
    assert_false(ncclx_size_add(SIZE_MAX, 1, &out));
    assert_int_equal(ncclx_align_up(0, 256), 0);
    assert_int_equal(ncclx_align_up(1, 256), 256);
    assert_int_equal(ncclx_align_up(256, 256), 256);
    assert_int_equal(ncclx_align_up(257, 64), 320);
}

static void test_bad_base(void **state)
{
    ncclx_arena_t arena = {"untouched", 0, 0, 0};
    _Alignas(256) unsigned char block[512];
    (void)state;
    assert_ncclx_error(ncclx_arena_init(&arena, "device", block + 8, 256, 256),
                       ncclxInvalidArgument, "device arena: base");
    assert_ncclx_error(ncclx_arena_init(&arena, "device", block + 8, 256, 256),
                       ncclxInvalidArgument, "not aligned to 256 bytes");
    assert_ncclx_error(ncclx_arena_init(&arena, "mapped_host", NULL, 256, 64), ncclxInvalidArgument,
                       "mapped_host arena");
    assert_ncclx_error(ncclx_arena_init(&arena, "host", block, 256, 96), ncclxInternalError,
                       "not a power of two");
    assert_string_equal(arena.name, "untouched");
    assert_ncclx_ok(ncclx_arena_init(&arena, "host", block + 64, 256, 64));
    assert_int_equal(arena.base, (uintptr_t)(block + 64));
}

/* ---- pools ---------------------------------------------------------------------------- */

#define POOL_CAPACITY 8
#define POOL_STRIDE   48

typedef struct {
    ncclx_pool_t pool;
    unsigned char *objects;
    void *bookkeeping;
} pool_fixture_t;

static int pool_setup(void **state)
{
    pool_fixture_t *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return -1;
    }
    /* Exact-size heap blocks: ASan catches a pool that writes past either one. */
    f->objects = malloc(POOL_CAPACITY * POOL_STRIDE);
    f->bookkeeping = malloc(ncclx_pool_bookkeeping_bytes(POOL_CAPACITY));
    if (f->objects == NULL || f->bookkeeping == NULL) {
        return -1;
    }
    memset(f->objects, 0xcd, POOL_CAPACITY * POOL_STRIDE);
    ncclx_pool_init(&f->pool, "EP group 3 handles", "raise num_handles in the group's plan",
                    f->objects, POOL_STRIDE, POOL_CAPACITY, f->bookkeeping);
    *state = f;
    return 0;
}

static int pool_teardown(void **state)
{
    pool_fixture_t *f = *state;
    free(f->objects);
    free(f->bookkeeping);
    free(f);
    return 0;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

static void acquire_all(pool_fixture_t *f, void *objects[POOL_CAPACITY])
{
    for (uint32_t i = 0; i < POOL_CAPACITY; i++) {
        uint32_t index = UINT32_MAX;
        assert_int_equal(ncclx_pool_in_use(&f->pool), i);
        assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &objects[i], &index));
        assert_int_equal(index, i); /* lowest index first */
        assert_ptr_equal(objects[i], f->objects + (size_t)i * POOL_STRIDE);
        assert_true(all_zero(objects[i], POOL_STRIDE));
        for (uint32_t j = 0; j < i; j++) {
            assert_ptr_not_equal(objects[i], objects[j]);
        }
        memset(objects[i], 0x40 + (int)i, POOL_STRIDE); /* a user scribbles on it */
    }
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY);
}

static void test_pool_acquire_all(void **state)
{
    pool_fixture_t *f = *state;
    void *objects[POOL_CAPACITY];
    void *object = &object;
    uint32_t index = 4242;
    assert_int_equal(ncclx_pool_in_use(&f->pool), 0);
    acquire_all(f, objects);
    /* Scribbles on one object never reach another. */
    for (uint32_t i = 0; i < POOL_CAPACITY; i++) {
        assert_int_equal(((unsigned char *)objects[i])[0], 0x40 + i);
        assert_int_equal(((unsigned char *)objects[i])[POOL_STRIDE - 1], 0x40 + i);
    }
    assert_ncclx_error(ncclx_pool_acquire(&f->pool, &object, &index), ncclxResourceExhausted,
                       "EP group 3 handles: all 8 are in use");
    assert_ncclx_error(ncclx_pool_acquire(&f->pool, &object, &index), ncclxResourceExhausted,
                       "raise num_handles in the group's plan");
    assert_ptr_equal(object, &object);
    assert_int_equal(index, 4242);
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY);
}

static void test_pool_reuse(void **state)
{
    pool_fixture_t *f = *state;
    void *objects[POOL_CAPACITY];
    void *object = NULL;
    void *second = NULL;
    uint32_t index = 0;
    acquire_all(f, objects);
    assert_ncclx_ok(ncclx_pool_release(&f->pool, objects[5]));
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY - 1);
    assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &object, &index));
    assert_int_equal(index, 5);
    assert_ptr_equal(object, objects[5]);
    assert_true(all_zero(object, POOL_STRIDE)); /* the old contents are gone */
    /* Two released objects come back as exactly those two, whatever the order. */
    assert_ncclx_ok(ncclx_pool_release(&f->pool, objects[2]));
    assert_ncclx_ok(ncclx_pool_release(&f->pool, objects[7]));
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY - 2);
    assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &object, NULL));
    assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &second, NULL));
    assert_true((object == objects[2] && second == objects[7]) ||
                (object == objects[7] && second == objects[2]));
    assert_ncclx_error(ncclx_pool_acquire(&f->pool, &object, NULL), ncclxResourceExhausted,
                       "EP group 3 handles");
    /* Release everything: the pool is whole again, every object once. */
    for (uint32_t i = 0; i < POOL_CAPACITY; i++) {
        assert_ncclx_ok(ncclx_pool_release(&f->pool, objects[i]));
    }
    assert_int_equal(ncclx_pool_in_use(&f->pool), 0);
    for (uint32_t i = 0; i < POOL_CAPACITY; i++) {
        index = UINT32_MAX;
        assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &object, &index));
        assert_true(index < POOL_CAPACITY);
        assert_ptr_equal(object, objects[index]);
        assert_non_null(objects[index]);
        assert_true(all_zero(object, POOL_STRIDE));
        objects[index] = NULL; /* handed out twice would hit this NULL */
    }
    assert_ncclx_error(ncclx_pool_acquire(&f->pool, &object, NULL), ncclxResourceExhausted,
                       "all 8 are in use");
}

static void test_pool_bad_release(void **state)
{
    pool_fixture_t *f = *state;
    void *objects[POOL_CAPACITY];
    unsigned char foreign[POOL_STRIDE];
    acquire_all(f, objects);
    assert_ncclx_ok(ncclx_pool_release(&f->pool, objects[1]));
    assert_ncclx_error(ncclx_pool_release(&f->pool, objects[1]), ncclxInvalidUsage,
                       "EP group 3 handles: object 1 released twice");
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY - 1);
    assert_ncclx_error(ncclx_pool_release(&f->pool, foreign), ncclxInvalidUsage,
                       "does not belong to this pool");
    assert_ncclx_error(ncclx_pool_release(&f->pool, NULL), ncclxInvalidUsage,
                       "does not belong to this pool");
    assert_ncclx_error(ncclx_pool_release(&f->pool, f->objects + POOL_CAPACITY * POOL_STRIDE),
                       ncclxInvalidUsage, "does not belong to this pool");
    assert_ncclx_error(ncclx_pool_release(&f->pool, (unsigned char *)objects[3] + 1),
                       ncclxInvalidUsage, "is not the start of an object");
    assert_ncclx_error(ncclx_pool_release(&f->pool, (unsigned char *)objects[4] - 1),
                       ncclxInvalidUsage, "is not the start of an object");
    assert_int_equal(ncclx_pool_in_use(&f->pool), POOL_CAPACITY - 1);
    /* None of the refused releases freed anything: exactly one object can be taken. */
    void *object = NULL;
    uint32_t index = 0;
    assert_ncclx_ok(ncclx_pool_acquire(&f->pool, &object, &index));
    assert_int_equal(index, 1);
    assert_ncclx_error(ncclx_pool_acquire(&f->pool, &object, &index), ncclxResourceExhausted,
                       "all 8 are in use");
}

static void test_pool_empty(void **state)
{
    ncclx_pool_t pool;
    uint32_t bookkeeping[1];
    void *object = NULL;
    (void)state;
    assert_int_equal(ncclx_pool_bookkeeping_bytes(0), 0);
    assert_true(ncclx_pool_bookkeeping_bytes(4096) >= 4096 * (sizeof(uint32_t) + 1));
    ncclx_pool_init(&pool, "empty pool", "plan some", bookkeeping, 16, 0, bookkeeping);
    assert_int_equal(ncclx_pool_in_use(&pool), 0);
    assert_ncclx_error(ncclx_pool_acquire(&pool, &object, NULL), ncclxResourceExhausted,
                       "empty pool: all 0 are in use (plan some)");
}

int main(void)
{
    const char *fixed = getenv("TEST_SEED");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure_alignment),
        cmocka_unit_test(test_random_carves),
        cmocka_unit_test(test_measure_equals_real),
        cmocka_unit_test(test_exhaustion),
        cmocka_unit_test(test_size_overflow),
        cmocka_unit_test(test_checked_arithmetic),
        cmocka_unit_test(test_bad_base),
        cmocka_unit_test_setup_teardown(test_pool_acquire_all, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_pool_reuse, pool_setup, pool_teardown),
        cmocka_unit_test_setup_teardown(test_pool_bad_release, pool_setup, pool_teardown),
        cmocka_unit_test(test_pool_empty),
    };
    seed = fixed != NULL ? (unsigned)strtoul(fixed, NULL, 10)
                         : (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
    printf("test_arena_pool: seed %u (rerun with TEST_SEED=%u)\n", seed, seed);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
