/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What the fuzz targets share: a reader that turns the fuzzer's bytes into field values (an
 * exhausted input reads as zeros, so every input is a complete test case), a quiet log
 * callback, and the check that aborts on a broken property (libFuzzer and the replay driver
 * both report an abort with the input that caused it).  Header only: each target includes it
 * once.
 */
#ifndef NCCLX_TESTS_FUZZ_COMMON_H_
#define NCCLX_TESTS_FUZZ_COMMON_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncclx.h>

/* The entry point every target defines (libFuzzer's, or tests/fuzz/replay_main.c's). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    const uint8_t *data;
    size_t size, used;
} fuzz_input_t;

static inline fuzz_input_t fuzz_input(const uint8_t *data, size_t size)
{
    fuzz_input_t in = {data, size, 0};
    return in;
}

static inline int fuzz_left(const fuzz_input_t *in)
{
    return in->used < in->size;
}

/* n bytes little-endian (n <= 8); the bytes past the end read as 0. */
static inline uint64_t fuzz_bytes(fuzz_input_t *in, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint64_t b = in->used < in->size ? in->data[in->used++] : 0u;
        v |= b << (8 * i);
    }
    return v;
}

static inline uint8_t fuzz_u8(fuzz_input_t *in)
{
    return (uint8_t)fuzz_bytes(in, 1);
}

static inline uint16_t fuzz_u16(fuzz_input_t *in)
{
    return (uint16_t)fuzz_bytes(in, 2);
}

static inline uint32_t fuzz_u32(fuzz_input_t *in)
{
    return (uint32_t)fuzz_bytes(in, 4);
}

static inline uint64_t fuzz_u64(fuzz_input_t *in)
{
    return fuzz_bytes(in, 8);
}

/*
 * The size a caller's versioned struct claims: a fuzz byte picks the first released layout,
 * the library's current one, one larger (a newer caller), or a raw size (too small ones must
 * be refused).  The struct itself is always the library's full type, so a claimed size past
 * it is read only up to sizeof, as the library promises.
 */
static inline size_t fuzz_struct_size(fuzz_input_t *in, size_t v1, size_t current)
{
    const uint8_t pick = fuzz_u8(in);
    switch (pick & 3u) {
    case 0:
        return current;
    case 1:
        return v1;
    case 2:
        return current + 8u * (pick >> 2);
    default:
        return (size_t)(pick >> 2) * 8u;
    }
}

/* A broken property: say which and abort, so that the input is kept as a crash. */
#define FUZZ_CHECK(cond)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: fuzz property failed: %s (last error: %s)\n", __FILE__, \
                    __LINE__, #cond, ncclxGetLastError());                                  \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

static inline void fuzz_quiet_log(ncclxLogLevel_t level, const char *message, void *user_data)
{
    (void)level;
    (void)message;
    (void)user_data;
}

/* Refused inputs are the common case: their WARN lines would drown the fuzzer's output. */
static inline void fuzz_silence_log(void)
{
    static int done;
    if (!done) {
        (void)ncclxSetLogCallback(fuzz_quiet_log, NULL);
        done = 1;
    }
}

#endif /* NCCLX_TESTS_FUZZ_COMMON_H_ */
