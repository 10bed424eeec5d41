/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Placement on recorded hwloc topologies (the XML files of tests/topologies): NUMA nodes,
 * CPUs and NIC for GPUs of each machine, NIC ties, machines without NICs, bad bus ids, the
 * binding policy; the pure GPU choice; and the live paths this machine can run (no GPU
 * needed).  Expected values are derived by hand from the XML files; each table says how.
 */
#include <sched.h> /* CPU_* macros: the build defines _GNU_SOURCE */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ncclx_test.h"

#include "placement.h"

#ifndef NCCLX_TEST_TOPOLOGY_DIR
#define NCCLX_TEST_TOPOLOGY_DIR "tests/topologies"
#endif

#define DGX   "dgx-h100-like.xml"
#define K40   "2socket-k40-mlx5.xml"
#define TIES  "1socket-h100-nic-ties.xml"
#define NONIC "1socket-nps2-4gpu-nonic.xml"

/* The test harness exports top_srcdir; the compiled-in path serves direct runs. */
static const char *topo_path(const char *name)
{
    static char path[4096];
    const char *top = getenv("top_srcdir");
    if (top != NULL && top[0] != '\0') {
        snprintf(path, sizeof(path), "%s/tests/topologies/%s", top, name);
    } else {
        snprintf(path, sizeof(path), "%s/%s", NCCLX_TEST_TOPOLOGY_DIR, name);
    }
    return path;
}

static ncclxResult_t decide(const char *xml, const char *busid, uint32_t local_rank,
                            uint32_t local_size, ncclxPlacement_t *p)
{
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t init = NCCLX_PLACEMENT_INIT;
    q.topology_xml = topo_path(xml);
    q.gpu_busid = busid;
    q.local_rank = local_rank;
    q.local_size = local_size;
    *p = init;
    return ncclxPlacementDecide(&q, p);
}

typedef struct {
    const char *xml, *busid;
    uint32_t local_rank, local_size;
    const char *numa, *cpuset, *cpus, *nic, *nic_busid;
    int distance;
    unsigned ties, bind;
} expect_t;

static void check(const expect_t *e)
{
    ncclxPlacement_t p;
    assert_ncclx_ok(decide(e->xml, e->busid, e->local_rank, e->local_size, &p));
    assert_string_equal(p.numa, e->numa);
    assert_string_equal(p.cpuset, e->cpuset);
    assert_string_equal(p.cpus, e->cpus);
    assert_string_equal(p.nic, e->nic);
    assert_string_equal(p.nic_busid, e->nic_busid);
    assert_int_equal(p.nic_distance, e->distance);
    assert_int_equal(p.nic_ties, e->ties);
    assert_int_equal(p.bind, e->bind);
    assert_int_equal(p.cuda_device, -1); /* named by bus id: no CUDA device index */
    assert_int_equal(p.local_rank, e->local_rank);
}

static void run_table(const expect_t *table, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        print_message("%s %s rank %u\n", table[i].xml, table[i].busid, table[i].local_rank);
        check(&table[i]);
    }
}

extern char **environ;

static void unset_ncclx_variables(void)
{
    char name[256];
    int again = 1;
    while (again) {
        again = 0;
        for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
            const char *eq = strchr(*entry, '=');
            if (strncmp(*entry, "NCCLX_", 6) == 0 && eq != NULL &&
                (size_t)(eq - *entry) < sizeof(name)) {
                snprintf(name, sizeof(name), "%.*s", (int)(eq - *entry), *entry);
                unsetenv(name);
                again = 1;
                break;
            }
        }
    }
}

static int setup(void **state)
{
    (void)state;
    unset_ncclx_variables();
    unsetenv("NCCL_IB_HCA");
    return 0;
}

/*
 * DGX-like: socket 0 = PUs 0-3 and 8-11 (0x00000f0f), NUMA 0; socket 1 = PUs 4-7 and 12-15
 * (0x0000f0f0), NUMA 1.  Each GPU sits with one ConnectX-7 under its own sub-switch:
 * GPU -> port -> sub-switch <- port <- NIC = 4 hops, and mlx5_N is GPU N's (bus + 1).  16
 * allowed PUs, 8 near each GPU: binding restricts, so bind=1.
 */
static void test_dgx(void **state)
{
    static const expect_t table[] = {
        {DGX, "0000:15:00.0", 0, 8, "0", "0x00000f0f", "0-3,8-11", "mlx5_0", "0000:16:00.0", 4, 1,
         1},
        {DGX, "0000:19:00.0", 1, 8, "0", "0x00000f0f", "0-3,8-11", "mlx5_1", "0000:1a:00.0", 4, 1,
         1},
        {DGX, "0000:39:00.0", 3, 8, "0", "0x00000f0f", "0-3,8-11", "mlx5_3", "0000:3a:00.0", 4, 1,
         1},
        {DGX, "0000:95:00.0", 4, 8, "1", "0x0000f0f0", "4-7,12-15", "mlx5_4", "0000:96:00.0", 4, 1,
         1},
        /* CUDA's 8-digit domain, upper case: the same GPU 7 */
        {DGX, "00000000:B9:00.0", 7, 8, "1", "0x0000f0f0", "4-7,12-15", "mlx5_7", "0000:ba:00.0", 4,
         1, 1},
    };
    (void)state;
    run_table(table, sizeof(table) / sizeof(table[0]));
}

/* The distance rule itself, on the DGX-like tree: the neighbour pair's NIC in the same switch
 * is 8 hops away, the other switch of the socket 14 (through root ports, host bridges and the
 * package), the other socket 16 (through the machine). */
static void test_dgx_hops(void **state)
{
    static const struct {
        const char *nic;
        int hops;
    } table[] = {{"0000:16:00.0", 4},
                 {"0000:1a:00.0", 8},
                 {"0000:36:00.0", 14},
                 {"0000:96:00.0", 16},
                 {"0000:15:00.0", 0}};
    hwloc_topology_t topo;
    hwloc_obj_t gpu, nic;
    (void)state;
    assert_ncclx_ok(ncclx_topo_load(topo_path(DGX), &topo));
    assert_ncclx_ok(ncclx_topo_find_pci(topo, "0000:15:00.0", &gpu));
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        assert_ncclx_ok(ncclx_topo_find_pci(topo, table[i].nic, &nic));
        assert_int_equal(ncclx_placement_hops(gpu, nic), table[i].hops);
        assert_int_equal(ncclx_placement_hops(nic, gpu), table[i].hops);
    }
    hwloc_topology_destroy(topo);
}

/*
 * The shared K40 export (an hwloc 3 file: loading it also checks the conversion of its OS
 * device types).  Socket 0 = 0x00ff00ff (PUs 0-7,16-23), socket 1 = 0xff00ff00.  The K40 at
 * 0000:84:00.0 hangs from socket 1's root port 80:03.0, NUMA 1.  The ConnectX-4 says bus 04,
 * which the file's pci_locality gives to socket 0, but the export puts its PCI device under
 * that same root port 80:03.0, next to the K40, and the tree is what hwloc and we go by: 2
 * hops.  The Tesla at 0000:03:00.0 is on socket 0 and has no NIC nearby: the only one is 8
 * hops away (port, host bridge, package, machine, and down again), still handed to NCCL.
 */
static void test_k40(void **state)
{
    static const expect_t table[] = {
        {K40, "0000:84:00.0", 0, 1, "1", "0xff00ff00", "8-15,24-31", "mlx5_0", "0000:04:00.0", 2, 1,
         1},
        {K40, "0000:83:00.0", 0, 1, "1", "0xff00ff00", "8-15,24-31", "mlx5_0", "0000:04:00.0", 4, 1,
         1},
        {K40, "0000:03:00.0", 0, 1, "0", "0x00ff00ff", "0-7,16-23", "mlx5_0", "0000:04:00.0", 8, 1,
         1},
    };
    (void)state;
    run_table(table, sizeof(table) / sizeof(table[0]));
}

/*
 * Ties: one switch holds GPUs 42 and 43 and NICs mlx5_1 (bus 44), mlx5_0 (bus 45) and mlx5_2
 * (bus 46, port down: never usable), all 4 hops from either GPU.  Sorted by name the usable
 * ties are mlx5_0, mlx5_1: local rank r takes r % 2, so ranks 0 and 1 spread, rank 2 wraps,
 * whichever GPU they use.  GPU 60 on its own root port reaches both at 6 hops.  One socket:
 * every allowed CPU is near every GPU, nothing to bind.
 */
static void test_ties(void **state)
{
    static const expect_t table[] = {
        {TIES, "0000:42:00.0", 0, 2, "0", "0x000000ff", "0-7", "mlx5_0", "0000:45:00.0", 4, 2, 0},
        {TIES, "0000:43:00.0", 1, 2, "0", "0x000000ff", "0-7", "mlx5_1", "0000:44:00.0", 4, 2, 0},
        {TIES, "0000:42:00.0", 2, 3, "0", "0x000000ff", "0-7", "mlx5_0", "0000:45:00.0", 4, 2, 0},
        {TIES, "0000:60:00.0", 1, 3, "0", "0x000000ff", "0-7", "mlx5_1", "0000:44:00.0", 6, 2, 0},
    };
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p;
    (void)state;
    run_table(table, sizeof(table) / sizeof(table[0]));
    assert_ncclx_ok(decide(TIES, "0000:42:00.0", 0, 2, &p));
    assert_non_null(strstr(p.bind_reason, "every allowed CPU is near the GPU"));
    /* An unbound process (bound to every CPU, as on a one-socket GPU VM) is not "already
     * bound", even though its CPUs are exactly the GPU's. */
    q.topology_xml = topo_path(TIES);
    q.gpu_busid = "0000:42:00.0";
    q.bound_cpuset = "0-7";
    p = (ncclxPlacement_t)NCCLX_PLACEMENT_INIT;
    assert_ncclx_ok(ncclxPlacementDecide(&q, &p));
    assert_string_equal(p.bind_reason, "every allowed CPU is near the GPU: nothing to restrict");
}

/* No RDMA NIC at all (the I210 is plain Ethernet): nic none.  NPS2: NUMA 0 = CPUs 0-3, NUMA 1
 * = CPUs 4-7; GPUs 01/21 on node 0, 41/61 on node 1. */
static void test_no_nic(void **state)
{
    static const expect_t table[] = {
        {NONIC, "0000:01:00.0", 0, 4, "0", "0x0000000f", "0-3", "", "", -1, 0, 1},
        {NONIC, "0000:41:00.0", 2, 4, "1", "0x000000f0", "4-7", "", "", -1, 0, 1},
        {NONIC, "0000:61:00.0", 3, 4, "1", "0x000000f0", "4-7", "", "", -1, 0, 1},
    };
    (void)state;
    run_table(table, sizeof(table) / sizeof(table[0]));
}

static void test_bad_busid(void **state)
{
    ncclxPlacement_t p;
    (void)state;
    assert_ncclx_error(decide(DGX, "0000:77:00.0", 0, 1, &p), ncclxInvalidArgument,
                       "'0000:77:00.0'");
    assert_non_null(strstr(ncclxGetLastError(), "not in the topology"));
    /* Written only on success: still NCCLX_PLACEMENT_INIT. */
    assert_int_equal(p.magic, NCCLX_MAGIC_PLACEMENT);
    assert_int_equal(p.cuda_device, -1);
    assert_string_equal(p.gpu_busid, "");
    assert_ncclx_error(decide(DGX, "0000:84:00", 0, 1, &p), ncclxInvalidArgument,
                       "'0000:84:00' is not a PCI bus id");
    assert_ncclx_error(decide(DGX, "domain:15:00.0", 0, 1, &p), ncclxInvalidArgument,
                       "'domain:15:00.0'");
}

static void test_busid_parse(void **state)
{
    static const struct {
        const char *text;
        const char *canonical; /* NULL: must be rejected */
    } table[] = {
        {"0000:84:00.0", "0000:84:00.0"},
        {"00000000:84:00.0", "0000:84:00.0"},
        {"84:00.0", "0000:84:00.0"},
        {"0001:Ab:1F.7", "0001:ab:1f.7"},
        {"", NULL},
        {"0000:84:00", NULL},
        {"0000:84:20.0", NULL},
        {"0000:84:00.8", NULL},
        {"0000:184:00.0", NULL},
        {"000000000:84:00.0", NULL},
        {"0000:84:00.0 ", NULL},
        {"0x00:84:00.0", NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        ncclx_busid_t b = {99, 99, 99, 99};
        char text[NCCLX_PLACEMENT_BUSID_LEN];
        print_message("'%s'\n", table[i].text);
        if (table[i].canonical == NULL) {
            assert_ncclx_error(ncclx_busid_parse(table[i].text, "bus", &b), ncclxInvalidArgument,
                               "is not a PCI bus id");
            assert_int_equal(b.domain, 99);
        } else {
            assert_ncclx_ok(ncclx_busid_parse(table[i].text, "bus", &b));
            ncclx_busid_format(&b, text, sizeof(text));
            assert_string_equal(text, table[i].canonical);
        }
    }
}

static void test_bind_none(void **state)
{
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p;
    (void)state;
    setenv("NCCLX_BIND", "NONE", 1);
    assert_ncclx_ok(decide(DGX, "0000:15:00.0", 0, 8, &p));
    assert_int_equal(p.bind, 0);
    assert_string_equal(p.bind_reason, "NCCLX_BIND=NONE");
    assert_string_equal(p.cpus, "0-3,8-11"); /* still reported */
    setenv("NCCLX_BIND", "sometimes", 1);
    assert_ncclx_error(decide(DGX, "0000:15:00.0", 0, 8, &p), ncclxInvalidArgument,
                       "NCCLX_BIND='sometimes'");
    setenv("NCCLX_BIND", "auto", 1);
    assert_ncclx_ok(decide(DGX, "0000:15:00.0", 0, 8, &p));
    assert_int_equal(p.bind, 1);
    q.topology_xml = topo_path(DGX);
    q.gpu_busid = "0000:15:00.0";
    q.bind = NCCLX_BIND_NONE;
    p = (ncclxPlacement_t)NCCLX_PLACEMENT_INIT;
    assert_ncclx_ok(ncclxPlacementDecide(&q, &p));
    assert_int_equal(p.bind, 0);
    assert_non_null(strstr(p.bind_reason, "disabled by the caller"));
}

/* A launcher binding (a strict subset of the allowed CPUs) is respected; a binding to every
 * CPU is no binding. */
static void test_launcher_bound(void **state)
{
    static const struct {
        const char *bound;
        unsigned bind;
        const char *reason;
    } table[] = {
        {"0x00000003", 0, "launcher already bound the process to CPUs 0-1"},
        {"4-7", 0, "launcher already bound the process to CPUs 4-7"},
        {"0-3,8-11", 0, "already bound to the CPUs near the GPU"},
        {"0-15", 1, "near the GPU"},
        {"0x0000ffff", 1, "near the GPU"},
    };
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    (void)state;
    q.topology_xml = topo_path(DGX);
    q.gpu_busid = "0000:15:00.0";
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        q.bound_cpuset = table[i].bound;
        print_message("bound %s\n", table[i].bound);
        assert_ncclx_ok(ncclxPlacementDecide(&q, &p));
        assert_int_equal(p.bind, table[i].bind);
        assert_non_null(strstr(p.bind_reason, table[i].reason));
    }
    q.bound_cpuset = "cores 1 and 2";
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxInvalidArgument,
                       "query.bound_cpuset='cores 1 and 2'");
}

static void test_query_checks(void **state)
{
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacementQuery_t bad;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    (void)state;
    q.topology_xml = topo_path(DGX);
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxInvalidArgument,
                       "query.gpu_busid is needed");
    q.gpu_busid = "0000:15:00.0";
    q.local_rank = 2;
    q.local_size = 2;
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxInvalidArgument,
                       "query.local_rank=2 is not below query.local_size=2");
    q.local_rank = 0;
    q.cuda_device = -2;
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxInvalidArgument, "query.cuda_device=-2");
    q.cuda_device = -1;
    q.bind = (ncclxBindPolicy_t)7;
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxInvalidArgument, "query.bind=7");
    q.bind = NCCLX_BIND_DEFAULT;
    bad = q;
    bad.magic = NCCLX_MAGIC_PLACEMENT;
    assert_ncclx_error(ncclxPlacementDecide(&bad, &p), ncclxInvalidArgument, "query->magic");
    assert_ncclx_error(ncclxPlacementDecide(NULL, &p), ncclxInvalidArgument, "query is NULL");
    assert_ncclx_error(ncclxPlacementDecide(&q, NULL), ncclxInvalidArgument, "placement is NULL");
    q.topology_xml = "/nonexistent/topology.xml";
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxSystemError,
                       "cannot open topology XML '/nonexistent/topology.xml'");
}

/* A file that is not a topology: hwloc refuses it, we report it and do not crash. */
static void test_not_a_topology(void **state)
{
    char path[] = "/tmp/ncclx-test-topology-XXXXXX";
    int fd = mkstemp(path);
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "<topology version=\"2.0\">not an hwloc export\n", 44), 44);
    close(fd);
    q.topology_xml = path;
    q.gpu_busid = "0000:15:00.0";
    assert_ncclx_error(ncclxPlacementDecide(&q, &p), ncclxHwlocError, path);
    unlink(path);
}

static void test_choose_device(void **state)
{
    static const ncclx_device_request_t none = {-1, NULL};
    static const ncclx_device_request_t env5 = {5, "NCCLX_CUDA_DEVICE"};
    static const ncclx_device_request_t env9 = {9, "NCCLX_CUDA_DEVICE"};
    static const struct {
        int count;
        uint32_t local_rank, local_size;
        const ncclx_device_request_t *request;
        int device; /* -1: must fail */
        ncclxResult_t error;
        const char *message;
    } table[] = {
        {8, 3, 8, &none, 3, ncclxSuccess, NULL},
        {8, 0, 1, &none, 0, ncclxSuccess, NULL},
        {8, 3, 8, &env5, 5, ncclxSuccess, NULL},
        {1, 3, 4, &none, 0, ncclxSuccess, NULL}, /* launcher gave each process its GPU */
        {4, 5, 8, &none, -1, ncclxInvalidArgument, "local rank 5 of 8 has no GPU"},
        {8, 0, 8, &env9, -1, ncclxInvalidArgument, "NCCLX_CUDA_DEVICE=9 asks for a CUDA device"},
        {0, 0, 1, &none, -1, ncclxUnsupported, "no CUDA device is visible"},
        {8, 4, 4, &none, -1, ncclxInvalidArgument, "local rank 4 is not below the local size 4"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        int device = 77;
        ncclxResult_t res = ncclx_placement_choose_device(
            table[i].count, table[i].local_rank, table[i].local_size, table[i].request, &device);
        print_message("row %zu\n", i);
        if (table[i].device >= 0) {
            assert_int_equal(res, ncclxSuccess);
            assert_int_equal(device, table[i].device);
        } else {
            assert_int_equal(res, table[i].error);
            assert_non_null(strstr(ncclxGetLastError(), table[i].message));
            assert_int_equal(device, 77);
        }
    }
}

static void test_device_request(void **state)
{
    ncclx_device_request_t r;
    (void)state;
    assert_ncclx_ok(ncclx_placement_device_request(-1, "config.cuda_device", &r));
    assert_int_equal(r.device, -1);
    setenv("NCCLX_CUDA_DEVICE", "3", 1);
    assert_ncclx_ok(ncclx_placement_device_request(-1, "config.cuda_device", &r));
    assert_int_equal(r.device, 3);
    assert_string_equal(r.source, "NCCLX_CUDA_DEVICE");
    assert_ncclx_ok(ncclx_placement_device_request(1, "config.cuda_device", &r));
    assert_int_equal(r.device, 1); /* the explicit field wins */
    assert_string_equal(r.source, "config.cuda_device");
    setenv("NCCLX_CUDA_DEVICE", "first", 1);
    assert_ncclx_error(ncclx_placement_device_request(-1, "config.cuda_device", &r),
                       ncclxInvalidArgument, "NCCLX_CUDA_DEVICE='first'");
}

/* Without a bus id the library asks CUDA.  On a machine without GPU or driver that must be a
 * clear CUDA error; on a GPU machine, a real decision for device 0. */
static void test_live_cuda(void **state)
{
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    ncclxResult_t res;
    (void)state;
    res = ncclxPlacementDecide(&q, &p);
    if (res == ncclxSuccess) {
        assert_int_equal(p.cuda_device, 0);
        assert_int_equal(strlen(p.gpu_busid), 12);
    } else {
        assert_true(res == ncclxCudaError || res == ncclxUnsupported);
        assert_non_null(strstr(ncclxGetLastError(), "CUDA"));
        assert_int_equal(p.cuda_device, -1);
    }
}

/* This machine's topology with a bus id: any PCI device stands in for a GPU. */
static void test_live_busid(void **state)
{
    hwloc_topology_t topo;
    hwloc_obj_t pci;
    char busid[NCCLX_PLACEMENT_BUSID_LEN];
    ncclxPlacementQuery_t q = NCCLX_PLACEMENT_QUERY_INIT;
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    (void)state;
    assert_ncclx_ok(ncclx_topo_load(NULL, &topo));
    pci = hwloc_get_next_pcidev(topo, NULL);
    if (pci == NULL) {
        hwloc_topology_destroy(topo);
        skip(); /* no PCI device visible here (some containers) */
    }
    ncclx_busid_of(pci, busid, sizeof(busid));
    hwloc_topology_destroy(topo);
    q.gpu_busid = busid;
    q.bind = NCCLX_BIND_AUTO;
    assert_ncclx_ok(ncclxPlacementDecide(&q, &p));
    assert_string_equal(p.gpu_busid, busid);
    assert_true(strlen(p.cpus) > 0);
}

static void test_export_nic(void **state)
{
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    (void)state;
    snprintf(p.gpu_busid, sizeof(p.gpu_busid), "0000:15:00.0");
    assert_ncclx_ok(ncclx_placement_export_nic(&p)); /* no NIC: nothing exported */
    assert_null(getenv("NCCL_IB_HCA"));
    snprintf(p.nic, sizeof(p.nic), "mlx5_1");
    assert_ncclx_ok(ncclx_placement_export_nic(&p));
    assert_string_equal(getenv("NCCL_IB_HCA"), "=mlx5_1"); /* exact, not mlx5_1x */
    setenv("NCCL_IB_HCA", "mlx5_9:1", 1);
    assert_ncclx_ok(ncclx_placement_export_nic(&p));
    assert_string_equal(getenv("NCCL_IB_HCA"), "mlx5_9:1"); /* the user's choice stays */
    unsetenv("NCCL_IB_HCA");
}

/* The apply step really binds the calling thread, here to the last CPU it may run on (CI may
 * run in a cgroup without CPU 0). */
static void test_bind_apply(void **state)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t one = hwloc_bitmap_alloc();
    ncclxPlacement_t p = NCCLX_PLACEMENT_INIT;
    cpu_set_t saved, now;
    int cpu = -1;
    (void)state;
    assert_int_equal(sched_getaffinity(0, sizeof(saved), &saved), 0);
    for (int i = 0; i < CPU_SETSIZE; i++) {
        cpu = CPU_ISSET(i, &saved) ? i : cpu;
    }
    assert_true(cpu >= 0);
    assert_ncclx_ok(ncclx_topo_load(NULL, &topo));
    hwloc_bitmap_list_snprintf(p.numa, sizeof(p.numa), hwloc_topology_get_allowed_nodeset(topo));
    hwloc_bitmap_only(one, (unsigned)cpu);
    hwloc_bitmap_snprintf(p.cpuset, sizeof(p.cpuset), one);
    p.bind = 0;
    assert_ncclx_ok(ncclx_placement_bind(topo, &p));
    assert_int_equal(sched_getaffinity(0, sizeof(now), &now), 0);
    assert_true(CPU_EQUAL(&now, &saved)); /* bind=0 leaves it alone */
    p.bind = 1;
    assert_ncclx_ok(ncclx_placement_bind(topo, &p));
    assert_int_equal(sched_getaffinity(0, sizeof(now), &now), 0);
    assert_int_equal(CPU_COUNT(&now), 1);
    assert_true(CPU_ISSET(cpu, &now));
    hwloc_bitmap_free(one);
    hwloc_topology_destroy(topo);
    assert_int_equal(sched_setaffinity(0, sizeof(saved), &saved), 0);
}

typedef struct {
    int found;
    const char *needle;
} log_probe_t;

static void probe(ncclxLogLevel_t level, const char *line, void *user_data)
{
    log_probe_t *probe_state = user_data;
    if (level == NCCLX_LOG_INFO && strstr(line, probe_state->needle) != NULL) {
        probe_state->found = 1;
    }
}

/* Decisions are logged at INFO and printed as key=value lines. */
static void test_log_and_print(void **state)
{
    log_probe_t seen = {0, "placement: local rank 4/8 GPU 0000:95:00.0"};
    ncclxPlacement_t p;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    (void)state;
    assert_non_null(out);
    assert_ncclx_ok(ncclxSetLogCallback(probe, &seen));
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_INFO));
    assert_ncclx_ok(decide(DGX, "0000:95:00.0", 4, 8, &p));
    assert_ncclx_ok(ncclxSetLogCallback(NULL, NULL));
    assert_ncclx_ok(ncclxSetLogLevel(NCCLX_LOG_WARN));
    assert_true(seen.found);
    assert_ncclx_ok(ncclxPlacementPrint(&p, out));
    assert_ncclx_ok(decide(NONIC, "0000:41:00.0", 0, 1, &p));
    assert_ncclx_ok(ncclxPlacementPrint(&p, out));
    fclose(out);
    assert_non_null(strstr(text, "gpu_busid=0000:95:00.0\ncuda_device=none\nlocal_rank=4\n"));
    assert_non_null(strstr(text, "numa=1\ncpuset=0x0000f0f0\ncpus=4-7,12-15\nnic=mlx5_4\n"));
    assert_non_null(strstr(text, "nic_distance=4\nnic_ties=1\nbind=yes\n"));
    assert_non_null(strstr(text, "nic=none\nnic_busid=none\nnic_distance=none\nnic_ties=0\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dgx, setup),
        cmocka_unit_test_setup(test_dgx_hops, setup),
        cmocka_unit_test_setup(test_k40, setup),
        cmocka_unit_test_setup(test_ties, setup),
        cmocka_unit_test_setup(test_no_nic, setup),
        cmocka_unit_test_setup(test_bad_busid, setup),
        cmocka_unit_test_setup(test_busid_parse, setup),
        cmocka_unit_test_setup(test_bind_none, setup),
        cmocka_unit_test_setup(test_launcher_bound, setup),
        cmocka_unit_test_setup(test_query_checks, setup),
        cmocka_unit_test_setup(test_not_a_topology, setup),
        cmocka_unit_test_setup(test_choose_device, setup),
        cmocka_unit_test_setup(test_device_request, setup),
        cmocka_unit_test_setup(test_live_cuda, setup),
        cmocka_unit_test_setup(test_live_busid, setup),
        cmocka_unit_test_setup(test_export_nic, setup),
        cmocka_unit_test_setup(test_bind_apply, setup),
        cmocka_unit_test_setup(test_log_and_print, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
