/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on each file named on
 * the command line, or on each file of each directory named (not recursively, in name order),
 * so that `make check` replays the seed corpus and the regression inputs with the normal
 * compiler (and .ci/run's ASan/UBSan build with sanitizers).  A crash or a broken property
 * aborts with the file's name printed just before.  Without arguments it replays the target's
 * own corpus directory (NCCLX_FUZZ_CORPUS, set by tests/fuzz.am), as `make check` runs it.
 *
 * Built with NCCLX_FUZZ_LIBFUZZER (tests/fuzz/run_fuzz.sh), this file is empty: libFuzzer
 * brings its own main.
 */
#ifndef NCCLX_FUZZ_LIBFUZZER
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    long size;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        if (f != NULL) {
            fclose(f);
        }
        return 1;
    }
    /* Exactly size bytes (at least one to allocate): a read past the input is ASan's. */
    data = malloc(size > 0 ? (size_t)size : 1u);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read %ld bytes\n", path, size);
        free(data);
        fclose(f);
        return 1;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%ld bytes)\n", path, size);
    (void)LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int failed = 0;
    if (d == NULL) {
        perror(dir);
        return 1;
    }
    while ((e = readdir(d)) != NULL) {
        char *path;
        struct stat st;
        if (e->d_name[0] == '.') {
            continue;
        }
        path = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (path == NULL) {
            closedir(d);
            return 1;
        }
        sprintf(path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            free(path);
            continue;
        }
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof(*names));
            if (grown == NULL) {
                free(path);
                failed = 1;
                break;
            }
            names = grown;
        }
        names[n++] = path;
    }
    closedir(d);
    if (n > 0) {
        qsort(names, n, sizeof(*names), by_name);
    }
    for (size_t i = 0; i < n; i++) {
        failed |= run_file(names[i]);
        (*count)++;
        free(names[i]);
    }
    free(names);
    return failed;
}

int main(int argc, char **argv)
{
    int failed = 0, count = 0;
#ifdef NCCLX_FUZZ_CORPUS
    if (argc < 2) {
        failed = run_dir(NCCLX_FUZZ_CORPUS, &count);
    }
#else
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
#endif
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed = 1;
        } else if (S_ISDIR(st.st_mode)) {
            failed |= run_dir(argv[i], &count);
        } else {
            failed |= run_file(argv[i]);
            count++;
        }
    }
    /* An empty corpus would replay nothing and pass: that is a failure. */
    if (count == 0) {
        fprintf(stderr, "replay: no input found\n");
        return 1;
    }
    printf("replay: %d input(s), %s\n", count, failed ? "FAILED" : "ok");
    return failed;
}
#else
/* ISO C forbids an empty translation unit. */
typedef int ncclx_fuzz_replay_unused_t;
#endif /* NCCLX_FUZZ_LIBFUZZER */
