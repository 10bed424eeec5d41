/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Topologies for placement: this machine's, or an hwloc XML file; PCI bus ids.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "placement.h"

/* Reads up to max_digits hex digits (at least one) at *p. */
static int ncclx_read_hex(const char **p, int max_digits, unsigned *value)
{
    unsigned v = 0;
    int n = 0;
    while (n < max_digits && isxdigit((unsigned char)(*p)[n])) {
        char c = (char)tolower((unsigned char)(*p)[n]);
        v = v * 16u + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
        n++;
    }
    *p += n;
    *value = v;
    return n > 0;
}

ncclxResult_t ncclx_busid_parse(const char *text, const char *what, ncclx_busid_t *busid)
{
    ncclx_busid_t b = {0, 0, 0, 0};
    const char *p = text;
    const char *second_colon;
    if (text == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "%s is NULL", what);
    }
    second_colon = strchr(text, ':') != NULL ? strchr(strchr(text, ':') + 1, ':') : NULL;
    if (second_colon != NULL && (!ncclx_read_hex(&p, 8, &b.domain) || *p++ != ':')) {
        goto err_syntax;
    }
    if (!ncclx_read_hex(&p, 2, &b.bus) || *p++ != ':' || !ncclx_read_hex(&p, 2, &b.dev) ||
        *p++ != '.' || !ncclx_read_hex(&p, 1, &b.func) || *p != '\0' || b.dev > 0x1f ||
        b.func > 7) {
        goto err_syntax;
    }
    *busid = b;
    return ncclxSuccess;
err_syntax:
    return NCCLX_ERROR(ncclxInvalidArgument,
                       "%s='%s' is not a PCI bus id such as 0000:84:00.0 "
                       "([domain:]bus:device.function, hexadecimal)",
                       what, text);
}

void ncclx_busid_format(const ncclx_busid_t *busid, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%x", busid->domain, busid->bus, busid->dev, busid->func);
}

void ncclx_busid_of(hwloc_obj_t obj, char *buf, size_t len)
{
    ncclx_busid_t b = {obj->attr->pcidev.domain, obj->attr->pcidev.bus, obj->attr->pcidev.dev,
                       obj->attr->pcidev.func};
    ncclx_busid_format(&b, buf, len);
}

ncclxResult_t ncclx_topo_find_pci(hwloc_topology_t topo, const char *text, hwloc_obj_t *pci)
{
    ncclx_busid_t b;
    hwloc_obj_t found = NULL;
    unsigned count = 0;
    NCCLX_CHECK(ncclx_busid_parse(text, "GPU PCI bus id", &b));
    for (hwloc_obj_t o = hwloc_get_next_pcidev(topo, NULL); o != NULL;
         o = hwloc_get_next_pcidev(topo, o)) {
        const struct hwloc_pcidev_attr_s *a = &o->attr->pcidev;
        count++;
        if (a->domain == b.domain && a->bus == b.bus && a->dev == b.dev && a->func == b.func &&
            (found == NULL || (a->class_id >> 8) == 0x03)) {
            found = o;
        }
    }
    if (found == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument,
                           "GPU PCI bus id '%s' is not in the topology, which has %u PCI devices "
                           "(is it this machine's topology?)",
                           text, count);
    }
    *pci = found;
    return ncclxSuccess;
}

/* ---- XML files ---- */

#define NCCLX_TOPO_XML_MAX_BYTES (64u << 20)

static ncclxResult_t ncclx_read_file(const char *path, char **data, size_t *len)
{
    ncclxResult_t res = ncclxSuccess;
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long size = -1;
    if (f == NULL) {
        return NCCLX_ERROR(ncclxSystemError, "cannot open topology XML '%s': %s", path,
                           strerror(errno));
    }
    if (fseek(f, 0, SEEK_END) == 0) {
        size = ftell(f);
    }
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxSystemError, "cannot size topology XML '%s': %s", path,
                                     strerror(errno)),
                         res, err_close);
    }
    if ((unsigned long)size > NCCLX_TOPO_XML_MAX_BYTES) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxInvalidArgument,
                                     "topology XML '%s' is %ld bytes: larger than %u MiB", path,
                                     size, NCCLX_TOPO_XML_MAX_BYTES >> 20),
                         res, err_close);
    }
    buf = malloc((size_t)size + 1);
    if (buf == NULL) {
        NCCLX_CHECK_GOTO(
            NCCLX_ERROR(ncclxOutOfMemory, "%ld bytes for topology XML '%s'", size, path), res,
            err_close);
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxSystemError, "cannot read topology XML '%s'", path), res,
                         err_close);
    }
    buf[size] = '\0';
    *data = buf;
    *len = (size_t)size;
err_close:
    fclose(f);
    return res;
}

/* The major version in <topology version="X.Y">, or 0 when absent. */
static unsigned ncclx_xml_major(const char *xml)
{
    static const char tag[] = "<topology version=\"";
    const char *p = strstr(xml, tag);
    return p != NULL ? (unsigned)strtoul(p + sizeof(tag) - 1, NULL, 10) : 0;
}

#if HWLOC_API_VERSION < 0x00030000
/*
 * hwloc 3 exports (version="3.0") are refused by hwloc 2, yet machines are often exported with
 * a newer lstopo than the library links.  The one difference placement depends on is that
 * hwloc 3 writes OS device types as a bit set (storage 1, memory 2, GPU 4, coprocessor 8,
 * network 16, OpenFabrics 32, DMA 64) where hwloc 2 uses an enum; everything else hwloc 2
 * reads or skips.  Rewrite those two things in place (values never get longer).
 */
static int ncclx_osdev_type_v3_to_v2(unsigned long bits)
{
    if (bits & 32) {
        return HWLOC_OBJ_OSDEV_OPENFABRICS;
    }
    if (bits & 8) {
        return HWLOC_OBJ_OSDEV_COPROC; /* CUDA devices: GPU|COPROC in 3, COPROC in 2 */
    }
    if (bits & 4) {
        return HWLOC_OBJ_OSDEV_GPU;
    }
    if (bits & 16) {
        return HWLOC_OBJ_OSDEV_NETWORK;
    }
    if (bits & 64) {
        return HWLOC_OBJ_OSDEV_DMA;
    }
    return HWLOC_OBJ_OSDEV_BLOCK;
}

static void ncclx_xml_v3_to_v2(char *xml)
{
    static const char attr[] = "osdev_type=\"";
    char *version = strstr(xml, "<topology version=\"");
    char *out = xml;
    const char *in = xml;
    if (version != NULL) {
        version[sizeof("<topology version=\"") - 1] = '2';
    }
    while (*in != '\0') {
        if (strncmp(in, attr, sizeof(attr) - 1) == 0) {
            char *end = NULL;
            unsigned long bits = strtoul(in + sizeof(attr) - 1, &end, 10);
            if (end != NULL && *end == '"') {
                /* No sprintf: its terminating NUL could land on the quote not yet copied. */
                memcpy(out, attr, sizeof(attr) - 1);
                out += sizeof(attr) - 1;
                *out++ = (char)('0' + ncclx_osdev_type_v3_to_v2(bits));
                in = end;
                continue;
            }
        }
        *out++ = *in++;
    }
    *out = '\0';
}
#endif

static ncclxResult_t ncclx_topo_set_xml(hwloc_topology_t topo, const char *path)
{
    char *xml = NULL;
    size_t len = 0;
    unsigned major;
    int rc;
    NCCLX_CHECK(ncclx_read_file(path, &xml, &len));
    major = ncclx_xml_major(xml);
#if HWLOC_API_VERSION < 0x00030000
    if (major == 3) {
        NCCLX_INFO("%s is an hwloc 3 export: converting its OS device types for hwloc %x", path,
                   hwloc_get_api_version());
        ncclx_xml_v3_to_v2(xml);
    }
#endif
    rc = hwloc_topology_set_xmlbuffer(topo, xml, (int)strlen(xml) + 1);
    free(xml);
    if (rc != 0) {
        return NCCLX_ERROR(ncclxHwlocError,
                           "hwloc cannot use '%s' (XML version %u) as a topology: "
                           "%s",
                           path, major, strerror(errno));
    }
    return ncclxSuccess;
}

/*
 * Linux's sysfs already gives hwloc every PCI device and RDMA NIC, so the plugins that add
 * nothing placement uses stay out: pci (libpciaccess, which leaks when unloaded), gl (talks to
 * X servers), and the GPU runtimes (cuda, opencl, levelzero, rsmi, nvml), which would
 * initialize before we have chosen a device.  hwloc refuses (EINVAL) the names of plugins that
 * are not installed, which then cannot run anyway.
 */
static void ncclx_topo_skip_plugins(hwloc_topology_t t)
{
#if HWLOC_API_VERSION >= 0x00020100
    static const char *const unused[] = {"pci",  "gl",   "opencl",   "cuda",
                                         "nvml", "rsmi", "levelzero"};
    for (size_t i = 0; i < sizeof(unused) / sizeof(unused[0]); i++) {
        (void)hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, unused[i]);
    }
#else
    (void)t;
#endif
}

ncclxResult_t ncclx_topo_load(const char *xml_path, hwloc_topology_t *topo)
{
    ncclxResult_t res = ncclxSuccess;
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0) {
        return NCCLX_ERROR(ncclxHwlocError, "hwloc_topology_init failed: %s", strerror(errno));
    }
    /* Bridges too: NIC distances count the PCIe switches between the GPU and the NIC. */
    if (hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL) != 0) {
        NCCLX_CHECK_GOTO(
            NCCLX_ERROR(ncclxHwlocError, "hwloc cannot keep I/O objects: %s", strerror(errno)), res,
            err_destroy);
    }
    ncclx_topo_skip_plugins(t);
    if (xml_path != NULL) {
        NCCLX_CHECK_GOTO(ncclx_topo_set_xml(t, xml_path), res, err_destroy);
    }
    if (hwloc_topology_load(t) != 0) {
        NCCLX_CHECK_GOTO(NCCLX_ERROR(ncclxHwlocError,
                                     "hwloc could not load the topology of %s: %s "
                                     "(HWLOC_XML_VERBOSE=1 says why)",
                                     xml_path != NULL ? xml_path : "this machine", strerror(errno)),
                         res, err_destroy);
    }
    *topo = t;
    return ncclxSuccess;
err_destroy:
    hwloc_topology_destroy(t);
    return res;
}

ncclxResult_t ncclxTopologyExport(const char *xml_path)
{
    hwloc_topology_t topo;
    ncclxResult_t res = ncclxSuccess;
    if (xml_path == NULL) {
        return NCCLX_ERROR(ncclxInvalidArgument, "ncclxTopologyExport: xml_path is NULL");
    }
    NCCLX_CHECK(ncclx_topo_load(NULL, &topo));
    if (hwloc_topology_export_xml(topo, xml_path, 0) != 0) {
        res = NCCLX_ERROR(ncclxSystemError, "cannot write the topology to %s: %s", xml_path,
                          strerror(errno));
    }
    hwloc_topology_destroy(topo);
    return res;
}
