/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * ncclx-info: what libncclx would do on this machine (GPU, CPU/NUMA binding, NIC), or on a
 * recorded hwloc XML topology, one key=value per line; --env lists the variables it reads.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ncclx.h>

#include "no_gpu.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ncclx-info [options]\n"
            "Prints, one key=value per line, the placement libncclx would choose: the GPU,\n"
            "the NUMA nodes and CPUs it binds to, and the RDMA NIC it hands to NCCL.\n"
            "Without --topology it looks at this machine (and asks CUDA for the GPU unless\n"
            "--gpu-busid names one; without a GPU or its driver, name one or use --env).\n"
            "  --topology FILE      decide on an hwloc XML topology (needs --gpu-busid)\n"
            "  --gpu-busid ID       the GPU's PCI bus id, e.g. 0000:84:00.0\n"
            "  --local-rank R       rank among the job's processes on the node (0)\n"
            "  --local-size N       the job's processes on the node (1)\n"
            "  --cuda-device D      use CUDA device D instead of the local rank's\n"
            "  --bind auto|none     binding policy (default: NCCLX_BIND)\n"
            "  --bound-cpuset SET   assume the process is already bound to SET (0x3 or 0-1)\n"
            "  --env                list the environment variables libncclx reads\n"
            "  --export-topology FILE  write this machine's topology as hwloc XML and exit\n"
            "  --help\n"
            "Exit status: 0 success, 1 the library refused (message on stderr), 2 bad usage.\n");
}

static int parse_uint(const char *name, const char *text, unsigned long max, unsigned long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || errno != 0 || *end != '\0' || value > max) {
        fprintf(stderr, "ncclx-info: --%s '%s' is not an integer in [0, %lu]\n", name, text, max);
        return 0;
    }
    *out = value;
    return 1;
}

static int print_env(void)
{
    int count = ncclxEnvCount();
    for (int i = 0; i < count; i++) {
        ncclxEnvVar_t var;
        const char *current;
        if (ncclxEnvGet(i, &var) != ncclxSuccess) {
            fprintf(stderr, "ncclx-info: %s\n", ncclxGetLastError());
            return 1;
        }
        current = getenv(var.name);
        printf("%s default=%s current=%s # %s\n", var.name,
               var.default_value[0] ? var.default_value : "(unset)",
               current != NULL ? current : "(unset)", var.description);
    }
    return 0;
}

/* What NCCL will see: the user's NCCL_IB_HCA, or the one ncclxInit would export. */
static void print_nccl_ib_hca(const ncclxPlacement_t *p)
{
    const char *user = getenv("NCCL_IB_HCA");
    if (user != NULL && user[0] != '\0') {
        printf("nccl_ib_hca=%s\n", user);
    } else if (p->nic[0] != '\0') {
        printf("nccl_ib_hca==%s\n", p->nic);
    } else {
        printf("nccl_ib_hca=none\n");
    }
}

static int parse_bind(const char *text, ncclxBindPolicy_t *bind)
{
    if (strcasecmp(text, "auto") == 0) {
        *bind = NCCLX_BIND_AUTO;
    } else if (strcasecmp(text, "none") == 0) {
        *bind = NCCLX_BIND_NONE;
    } else {
        fprintf(stderr, "ncclx-info: --bind '%s' is not auto or none\n", text);
        return 0;
    }
    return 1;
}

/* The numeric options; 0 on a bad value (already reported). */
static int parse_number(int c, const char *arg, ncclxPlacementQuery_t *q)
{
    unsigned long value = 0;
    if (c == 'd') {
        if (!parse_uint("cuda-device", arg, 1023, &value)) {
            return 0;
        }
        q->cuda_device = (int32_t)value;
        return 1;
    }
    if (!parse_uint(c == 'r' ? "local-rank" : "local-size", arg, 1ul << 20, &value)) {
        return 0;
    }
    if (c == 'r') {
        q->local_rank = (uint32_t)value;
    } else {
        q->local_size = (uint32_t)value;
    }
    return 1;
}

/* One option; 0 on a bad one (already reported). */
static const char *export_path;

static int parse_option(int c, const char *arg, ncclxPlacementQuery_t *q, int *env_only)
{
    switch (c) {
    case 'x':
        export_path = arg;
        return 1;
    case 't':
        q->topology_xml = arg;
        return 1;
    case 'g':
        q->gpu_busid = arg;
        return 1;
    case 'c':
        q->bound_cpuset = arg;
        return 1;
    case 'e':
        *env_only = 1;
        return 1;
    case 'b':
        return parse_bind(arg, &q->bind);
    case 'r':
    case 's':
    case 'd':
        return parse_number(c, arg, q);
    case 'h':
        usage(stdout);
        exit(0);
    default:
        usage(stderr);
        return 0;
    }
}

static int parse_options(int argc, char **argv, ncclxPlacementQuery_t *q, int *env_only)
{
    static const struct option longopts[] = {{"topology", 1, NULL, 't'},
                                             {"gpu-busid", 1, NULL, 'g'},
                                             {"local-rank", 1, NULL, 'r'},
                                             {"local-size", 1, NULL, 's'},
                                             {"cuda-device", 1, NULL, 'd'},
                                             {"bind", 1, NULL, 'b'},
                                             {"bound-cpuset", 1, NULL, 'c'},
                                             {"env", 0, NULL, 'e'},
                                             {"help", 0, NULL, 'h'},
                                             {"export-topology", 1, NULL, 'x'},
                                             {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (!parse_option(c, optarg, q, env_only)) {
            return 0;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ncclx-info: unexpected argument '%s'\n", argv[optind]);
        return 0;
    }
    if (q->topology_xml != NULL && q->gpu_busid == NULL) {
        fprintf(stderr, "ncclx-info: --topology needs --gpu-busid (which GPU of that machine?)\n");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    ncclxPlacementQuery_t query = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t placement = NCCLX_PLACEMENT_INIT;
    ncclxResult_t res;
    int env_only = 0;
    if (!parse_options(argc, argv, &query, &env_only)) {
        return 2;
    }
    if (env_only) {
        return print_env();
    }
    if (export_path != NULL) {
        res = ncclxTopologyExport(export_path);
        if (res != ncclxSuccess) {
            fprintf(stderr, "ncclx-info: %s: %s\n", ncclxGetErrorString(res), ncclxGetLastError());
            return 1;
        }
        printf("topology exported to %s\n", export_path);
        return 0;
    }
    /* Only this case asks CUDA for the GPU: without one, say what works instead. */
    if (query.topology_xml == NULL && query.gpu_busid == NULL) {
        const char *reason = ncclx_tool_no_gpu();
        if (reason != NULL) {
            ncclx_tool_explain_no_gpu("ncclx-info", "choosing the GPU of this machine", reason);
            fprintf(stderr, "ncclx-info: name the GPU with --gpu-busid ID to see the rest of the "
                            "placement, or list the settings with --env.\n");
            return 1;
        }
    }
    res = ncclxPlacementDecide(&query, &placement);
    if (res != ncclxSuccess) {
        fprintf(stderr, "ncclx-info: %s: %s\n", ncclxGetErrorString(res), ncclxGetLastError());
        return 1;
    }
    printf("ncclx_version=%s\n", NCCLX_VERSION_STRING);
    if (query.topology_xml != NULL) {
        printf("topology=%s\n", query.topology_xml);
    }
    if (ncclxPlacementPrint(&placement, stdout) != ncclxSuccess) {
        fprintf(stderr, "ncclx-info: %s\n", ncclxGetLastError());
        return 1;
    }
    print_nccl_ib_hca(&placement);
    return 0;
}
