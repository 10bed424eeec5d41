/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Environment parsing: the fuzzer's bytes set (or unset) variables, then every parser reads
 * them: ncclx_env_get_choice / _get_uint / _get_string for each NCCLX_* variable by its kind,
 * ncclxEnvValidate, the logger's reload (NCCLX_DEBUG, NCCLX_DEBUG_FILE and its %h / %p
 * expansion) and the bootstrap's reading of the launchers' variables.  A value accepted is
 * the value given; a value refused is named in the error.
 *
 * Input: records of [selector][length][bytes]; the selector picks a variable (its top bit:
 * unset it), the bytes up to the first NUL are its value.
 */
#include <fcntl.h>
#include <strings.h>
#include <unistd.h>

#include "fuzz_common.h"

#include "bootstrap.h"
#include "env.h"
#include "log.h"

typedef enum { KIND_CHOICE, KIND_UINT, KIND_STRING } kind_t;

/* lib/core/env.c's table, by id: a variable added there must be added here. */
_Static_assert(NCCLX_ENV_NUM_VARS == 10, "a new NCCLX_* variable: give it its kind here");
static const kind_t kinds[NCCLX_ENV_NUM_VARS] = {
    [NCCLX_ENV_DEBUG] = KIND_CHOICE,         [NCCLX_ENV_DEBUG_FILE] = KIND_STRING,
    [NCCLX_ENV_BIND] = KIND_CHOICE,          [NCCLX_ENV_CUDA_DEVICE] = KIND_UINT,
    [NCCLX_ENV_FENCE_TIMEOUT_S] = KIND_UINT, [NCCLX_ENV_TIMEOUT_MS] = KIND_UINT,
    [NCCLX_ENV_M2N_PATH] = KIND_CHOICE,      [NCCLX_ENV_EP_HT_PATH] = KIND_CHOICE,
    [NCCLX_ENV_NET_EMU_CHAOS] = KIND_UINT,   [NCCLX_ENV_NET_EMU_DELAY_NS] = KIND_UINT,
};

/* The launchers' variables pmix/bootstrap.c reads, and a misspelt NCCLX_ name. */
static const char *const others[] = {"PMIX_NAMESPACE",       "PMIX_RANK",   "SLURM_STEP_NUM_TASKS",
                                     "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",    "SLURM_STEP_ID",
                                     "SLURM_NTASKS",         "NCCLX_DEBUGG"};
#define NUM_OTHERS (sizeof(others) / sizeof(others[0]))
#define NUM_NAMES  (NCCLX_ENV_NUM_VARS + NUM_OTHERS)

/* NCCLX_DEBUG_FILE's values go under a directory that does not exist: the logger's fopen can
 * never create a file, whatever "../" the value holds (the kernel resolves the missing
 * directory first). */
#define NO_DIR "/nonexistent-ncclx-fuzz/"

static const char *name_of(uint32_t i)
{
    ncclxEnvVar_t var;
    if (i >= NCCLX_ENV_NUM_VARS) {
        return others[i - NCCLX_ENV_NUM_VARS];
    }
    if (ncclxEnvGet((int)i, &var) != ncclxSuccess) {
        abort();
    }
    return var.name;
}

static void unset_all(void)
{
    for (uint32_t i = 0; i < NUM_NAMES; i++) {
        (void)unsetenv(name_of(i));
    }
}

static int all_digits(const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s < '0' || *s > '9') {
            return 0;
        }
    }
    return 1;
}

/* Each parser of the variable's kind; 1 when its value is accepted. */
static int check_variable(ncclx_env_id_t id)
{
    const char *name = name_of((uint32_t)id);
    const char *raw = ncclx_env_raw(id);
    int index = -1, quiet = -1;
    uint64_t value = 0;
    ncclxResult_t res;
    FUZZ_CHECK(raw == NULL || raw[0] != '\0'); /* empty reads as unset */
    switch (kinds[id]) {
    case KIND_CHOICE:
        res = ncclx_env_get_choice(id, &index);
        FUZZ_CHECK((res == ncclxSuccess) == ncclx_env_choice_quiet(id, &quiet));
        /* Refused, the quiet reader falls back on the default, a valid choice. */
        FUZZ_CHECK(quiet >= 0 && quiet < 4);
        if (res != ncclxSuccess) {
            FUZZ_CHECK(raw != NULL && res == ncclxInvalidArgument);
            FUZZ_CHECK(strstr(ncclxGetLastError(), name) != NULL);
            return 0;
        }
        FUZZ_CHECK(index == quiet);
        return 1;
    case KIND_UINT:
        res = ncclx_env_get_uint(id, &value);
        if (res != ncclxSuccess) {
            FUZZ_CHECK(raw != NULL && res == ncclxInvalidArgument);
            FUZZ_CHECK(strstr(ncclxGetLastError(), name) != NULL);
            return 0;
        }
        if (raw != NULL) {
            FUZZ_CHECK(all_digits(raw) && value == strtoull(raw, NULL, 10));
        }
        return 1;
    case KIND_STRING:
        FUZZ_CHECK(raw == NULL || ncclx_env_get_string(id) == raw);
        return 1;
    }
    return 1;
}

/* The logger's reload prints its refusals on stderr itself (it cannot log through itself):
 * keep them out of the fuzzer's output. */
static void reload_log_quietly(void)
{
    static int null_fd = -1;
    if (null_fd < 0 && (null_fd = open("/dev/null", O_WRONLY)) < 0) {
        perror("fuzz_env: /dev/null");
        abort();
    }
    fflush(stderr);
    const int saved = dup(2);
    if (saved < 0 || dup2(null_fd, 2) < 0) {
        perror("fuzz_env: dup");
        abort();
    }
    ncclx_log_reload();
    fflush(stderr);
    if (dup2(saved, 2) < 0) {
        abort();
    }
    close(saved);
    FUZZ_CHECK((unsigned)ncclxGetLogLevel() <= NCCLX_LOG_TRACE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_t in = fuzz_input(data, size);
    int log_vars = 0, accepted = 1;
    char value[256 + sizeof(NO_DIR)];
    char detail[40];
    fuzz_silence_log();
    unset_all();
    while (fuzz_left(&in)) {
        const uint8_t selector = fuzz_u8(&in);
        const uint32_t len = fuzz_u8(&in);
        const uint32_t id = (selector & 0x7fu) % NUM_NAMES;
        size_t used = 0;
        if (id == NCCLX_ENV_DEBUG_FILE) {
            memcpy(value, NO_DIR, strlen(NO_DIR));
            used = strlen(NO_DIR);
        }
        for (uint32_t i = 0; i < len; i++) {
            value[used++] = (char)fuzz_u8(&in);
        }
        value[used] = '\0'; /* a NUL inside ends the value, as it would in environ */
        if (selector & 0x80u) {
            (void)unsetenv(name_of(id));
        } else if (setenv(name_of(id), value, 1) != 0) {
            abort();
        }
        log_vars |= id == NCCLX_ENV_DEBUG || id == NCCLX_ENV_DEBUG_FILE;
    }
    for (uint32_t id = 0; id < NCCLX_ENV_NUM_VARS; id++) {
        accepted &= check_variable((ncclx_env_id_t)id);
    }
    /* ncclxEnvValidate is exactly the conjunction of the parsers. */
    FUZZ_CHECK((ncclxEnvValidate() == ncclxSuccess) == accepted);
    {
        const char *launcher = ncclx_bootstrap_launcher_tasks(detail, sizeof(detail));
        if (launcher != NULL) {
            FUZZ_CHECK(strlen(detail) < sizeof(detail) && getenv(launcher) != NULL);
            FUZZ_CHECK(strncmp(detail, launcher,
                               strlen(detail) < strlen(launcher) ? strlen(detail)
                                                                 : strlen(launcher)) == 0);
        }
    }
    if (log_vars) {
        reload_log_quietly();
    }
    unset_all();
    return 0;
}
