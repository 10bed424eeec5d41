/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The one table of NCCLX_* environment variables, and their parsers.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "env.h"
#include "error.h"

typedef enum { NCCLX_ENV_KIND_CHOICE, NCCLX_ENV_KIND_UINT, NCCLX_ENV_KIND_STRING } ncclx_env_kind_t;

typedef struct {
    const char *name;
    const char *default_value;
    const char *description;
    ncclx_env_kind_t kind;
    const char *const *choices; /* CHOICE: NULL-terminated, upper case */
    uint64_t min, max;          /* UINT: inclusive bounds */
} ncclx_env_decl_t;

static const char *const ncclx_debug_levels[] = {"NONE", "WARN", "INFO", "TRACE", NULL};
static const char *const ncclx_bind_choices[] = {"AUTO", "NONE", NULL};
/* The data-path choices of M2N and HT: AUTO (direct on one GPU) or STAGED. */
static const char *const ncclx_path_choices[] = {"AUTO", "STAGED", NULL};

static const ncclx_env_decl_t ncclx_env_table[NCCLX_ENV_NUM_VARS] = {
    [NCCLX_ENV_DEBUG] = {"NCCLX_DEBUG", "WARN", "log level: NONE, WARN, INFO or TRACE",
                         NCCLX_ENV_KIND_CHOICE, ncclx_debug_levels, 0, 0},
    [NCCLX_ENV_DEBUG_FILE] = {"NCCLX_DEBUG_FILE", "",
                              "log to this file instead of stderr (%h: host name, %p: pid)",
                              NCCLX_ENV_KIND_STRING, NULL, 0, 0},
    [NCCLX_ENV_BIND] = {"NCCLX_BIND", "AUTO",
                        "CPU/memory binding near the GPU: AUTO (unless the launcher bound the "
                        "process) or NONE",
                        NCCLX_ENV_KIND_CHOICE, ncclx_bind_choices, 0, 0},
    [NCCLX_ENV_CUDA_DEVICE] = {"NCCLX_CUDA_DEVICE", "",
                               "CUDA device index to use (default: the local rank among the "
                               "visible devices)",
                               NCCLX_ENV_KIND_UINT, NULL, 0, 1023},
    [NCCLX_ENV_FENCE_TIMEOUT_S] = {"NCCLX_FENCE_TIMEOUT_S", "300",
                                   "seconds a PMIx fence may take at init before failing",
                                   NCCLX_ENV_KIND_UINT, NULL, 1, 86400},
    [NCCLX_ENV_TIMEOUT_MS] = {"NCCLX_TIMEOUT_MS", "",
                              "GPU wait timeout of every EP group in milliseconds (overrides "
                              "the plan's timeout_ns)",
                              NCCLX_ENV_KIND_UINT, NULL, 1, 86400000},
    [NCCLX_ENV_M2N_PATH] = {"NCCLX_M2N_PATH", "AUTO",
                            "M2N data path: AUTO (tile to tile when every rank is on this GPU, "
                            "else the staging ring) or STAGED (always the staging ring)",
                            NCCLX_ENV_KIND_CHOICE, ncclx_path_choices, 0, 0},
    [NCCLX_ENV_EP_HT_PATH] = {"NCCLX_EP_HT_PATH", "AUTO",
                              "HT data path with the caller's buffers: AUTO (straight into the "
                              "destination's output and from the sources' expert outputs when "
                              "every rank is on this GPU, else through the group's rows) or "
                              "STAGED (always through the group's rows)",
                              NCCLX_ENV_KIND_CHOICE, ncclx_path_choices, 0, 0},
    [NCCLX_ENV_NET_EMU_CHAOS] = {"NCCLX_NET_EMU_CHAOS", "0",
                                 "emulated network of a shaped loopback team: 1 holds every put "
                                 "without a signal back until a signal or flush and applies the "
                                 "held puts in reverse order (code that relies on more than GIN "
                                 "promises then fails on one GPU)",
                                 NCCLX_ENV_KIND_UINT, NULL, 0, 1},
    [NCCLX_ENV_NET_EMU_DELAY_NS] = {"NCCLX_NET_EMU_DELAY_NS", "0",
                                    "emulated network of a shaped loopback team: nanoseconds "
                                    "each signal takes to become visible (a network's latency)",
                                    NCCLX_ENV_KIND_UINT, NULL, 0, 1000000000},
};

const char *ncclx_env_raw(ncclx_env_id_t id)
{
    const char *value = getenv(ncclx_env_table[id].name);
    return (value != NULL && value[0] != '\0') ? value : NULL;
}

static int ncclx_env_find_choice(const ncclx_env_decl_t *decl, const char *value)
{
    for (int i = 0; decl->choices[i] != NULL; i++) {
        if (strcasecmp(decl->choices[i], value) == 0) {
            return i;
        }
    }
    return -1;
}

int ncclx_env_choice_quiet(ncclx_env_id_t id, int *index)
{
    const ncclx_env_decl_t *decl = &ncclx_env_table[id];
    const char *value = ncclx_env_raw(id);
    int found = ncclx_env_find_choice(decl, value != NULL ? value : decl->default_value);
    if (found < 0) {
        *index = ncclx_env_find_choice(decl, decl->default_value);
        return 0;
    }
    *index = found;
    return 1;
}

static void ncclx_env_choices_text(const ncclx_env_decl_t *decl, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; decl->choices[i] != NULL && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", decl->choices[i]);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
}

ncclxResult_t ncclx_env_get_choice(ncclx_env_id_t id, int *index)
{
    const ncclx_env_decl_t *decl = &ncclx_env_table[id];
    if (!ncclx_env_choice_quiet(id, index)) {
        char choices[128];
        ncclx_env_choices_text(decl, choices, sizeof(choices));
        return NCCLX_ERROR(ncclxInvalidArgument, "%s='%s' is not one of %s", decl->name,
                           ncclx_env_raw(id), choices);
    }
    return ncclxSuccess;
}

static int ncclx_parse_uint(const char *text, uint64_t *value)
{
    char *end = NULL;
    if (text[0] < '0' || text[0] > '9') {
        return 0; /* strtoull would accept "-1" and " 1" */
    }
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0') {
        return 0;
    }
    *value = parsed;
    return 1;
}

ncclxResult_t ncclx_env_get_uint(ncclx_env_id_t id, uint64_t *value)
{
    const ncclx_env_decl_t *decl = &ncclx_env_table[id];
    const char *raw = ncclx_env_raw(id);
    uint64_t parsed = 0;
    if (raw == NULL) {
        raw = decl->default_value;
    }
    if (raw[0] == '\0') {
        *value = 0; /* unset, and no default */
        return ncclxSuccess;
    }
    if (!ncclx_parse_uint(raw, &parsed)) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s='%s' is not an unsigned decimal integer",
                           decl->name, raw);
    }
    if (parsed < decl->min || parsed > decl->max) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s=%s is outside [%" PRIu64 ", %" PRIu64 "]",
                           decl->name, raw, decl->min, decl->max);
    }
    *value = parsed;
    return ncclxSuccess;
}

uint64_t ncclx_env_timeout_ns(uint64_t fallback_ns)
{
    uint64_t ms = 0;
    /* The table bounds the milliseconds to a day: the nanoseconds stay far inside 64 bits. */
    if (ncclx_env_raw(NCCLX_ENV_TIMEOUT_MS) == NULL ||
        ncclx_env_get_uint(NCCLX_ENV_TIMEOUT_MS, &ms) != ncclxSuccess) {
        return fallback_ns;
    }
    return ms * 1000000ull;
}

const char *ncclx_env_get_string(ncclx_env_id_t id)
{
    const char *raw = ncclx_env_raw(id);
    if (raw != NULL) {
        return raw;
    }
    return ncclx_env_table[id].default_value[0] ? ncclx_env_table[id].default_value : NULL;
}

int ncclxEnvCount(void)
{
    return NCCLX_ENV_NUM_VARS;
}

ncclxResult_t ncclxEnvGet(int index, ncclxEnvVar_t *var)
{
    if (var == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEnvGet: var is NULL");
    }
    if (index < 0 || index >= NCCLX_ENV_NUM_VARS) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxEnvGet: index %d is outside [0, %d)", index,
                           NCCLX_ENV_NUM_VARS);
    }
    var->name = ncclx_env_table[index].name;
    var->default_value = ncclx_env_table[index].default_value;
    var->description = ncclx_env_table[index].description;
    return ncclxSuccess;
}

static int ncclx_env_is_declared(const char *name, size_t len)
{
    for (int i = 0; i < NCCLX_ENV_NUM_VARS; i++) {
        if (strlen(ncclx_env_table[i].name) == len &&
            strncmp(ncclx_env_table[i].name, name, len) == 0) {
            return 1;
        }
    }
    return 0;
}

extern char **environ;

ncclxResult_t ncclxEnvValidate(void)
{
    for (int i = 0; i < NCCLX_ENV_NUM_VARS; i++) {
        uint64_t number;
        int choice;
        switch (ncclx_env_table[i].kind) {
        case NCCLX_ENV_KIND_CHOICE:
            NCCLX_CHECK(ncclx_env_get_choice((ncclx_env_id_t)i, &choice));
            break;
        case NCCLX_ENV_KIND_UINT:
            NCCLX_CHECK(ncclx_env_get_uint((ncclx_env_id_t)i, &number));
            break;
        case NCCLX_ENV_KIND_STRING:
            break;
        }
    }
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        const char *eq = strchr(*entry, '=');
        if (strncmp(*entry, "NCCLX_", 6) == 0 && eq != NULL &&
            !ncclx_env_is_declared(*entry, (size_t)(eq - *entry))) {
            NCCLX_WARN("%.*s is set but libncclx reads no such variable (a typo?)",
                       (int)(eq - *entry), *entry);
        }
    }
    return ncclxSuccess;
}
