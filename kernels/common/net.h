/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The network transport: how a kernel reaches a rank outside its load/store (LSA) domain.  One
 * interface (kernels/common/net.cuh) over two implementations chosen at init:
 *   GIN       NCCL's GPU-initiated networking (a device communicator with GIN contexts), for a
 *             communicator of more than one LSA team;
 *   EMULATED  the emulated network of a shaped loopback team (ncclxLoopbackInitConfig): every
 *             rank is on this GPU, and the emulator copies a put's bytes into the peer's
 *             symmetric memory exactly where a GIN put would land.
 * What it promises is GIN's, no more (docs/multi-node.md): a put moves bytes between the same
 * symmetric arena offsets of two ranks (source and destination inside the arena); a signal is
 * a 64-bit add to a per-context signal of the peer, visible only after every earlier put of the
 * same context to the same peer; nothing is ordered across contexts or peers; a put without a
 * signal tells the peer nothing; flush only says the sources of this rank's puts may be reused.
 * The emulator can be made to keep only that promise (NCCLX_NET_EMU_CHAOS): it then holds every
 * unsignalled put back until a signal of its (context, peer) or a flush, and applies the held
 * puts in reverse order, so code that reads bytes no signal guarded, or reuses a source before
 * a flush, fails on one GPU instead of on a cluster.
 */
#ifndef NCCLX_KERNELS_NET_H_
#define NCCLX_KERNELS_NET_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An absent region's offset (the plan's NCCLX_NO_REGION). */
#define NCCLX_NO_NET_REGION ((size_t)-1)

/* NCCL 2.28.9 gives at most 4 GIN contexts; a context index is taken modulo this. */
#define NCCLX_NET_CONTEXTS 4

/* Puts the emulator holds back per (context, peer) in chaos mode; one more is applied at once
 * (an earlier landing is always allowed). */
#define NCCLX_NET_HELD_PUTS 16

typedef enum {
    NCCLX_NET_NONE = 0,     /* one LSA domain: no peer is reached through the network */
    NCCLX_NET_EMULATED = 1, /* a shaped loopback team */
    NCCLX_NET_GIN = 2,      /* NCCL GIN over the communicator */
} ncclx_net_kind_t;

/* What crossed the network from this rank (counted by the emulator only). */
typedef struct {
    unsigned long long bytes;   /* put payload bytes */
    unsigned long long puts;    /* put operations, signal carriers included */
    unsigned long long signals; /* signals (adds) */
    unsigned long long held;    /* puts held back and applied later (chaos mode) */
} ncclx_net_stats_t;

/* A put held back by the emulator in chaos mode (state: 0 free, 1 being written, 2 held, 3 being
 * applied). */
typedef struct {
    unsigned long long dst_off, src_off, bytes;
    unsigned state;
    int peer;
} ncclx_net_held_t;

/* The transport's view of one rank, passed by value to kernels. */
typedef struct {
    int kind; /* ncclx_net_kind_t */
    int rank, ranks;
    int lsa_size;    /* ranks per LSA domain: rank r's domain is r / lsa_size */
    int num_signals; /* per context */
    void *local;     /* this rank's symmetric arena */
    /* EMULATED */
    void *const *world;          /* device [ranks]: every rank's symmetric arena */
    size_t signal_table;         /* symmetric offset of [CONTEXTS][num_signals] uint64 signals */
    ncclx_net_stats_t *stats;    /* device: this rank's counters */
    ncclx_net_held_t *held;      /* device [CONTEXTS][ranks][HELD_PUTS], chaos mode */
    unsigned *held_next;         /* device [CONTEXTS][ranks]: next held slot to try */
    int chaos;                   /* hold unsignalled puts back (NCCLX_NET_EMU_CHAOS) */
    unsigned long long delay_ns; /* a signal becomes visible this long after it is posted */
    /* GIN */
    const void *dev_comm; /* device: the ncclDevComm (GIN contexts, signals) */
    void *window;         /* ncclWindow_t of the symmetric arena */
    int signal_base;      /* first of this rank's GIN signal ids for the library */
} ncclx_net_desc_t;

/** Whether rank r is outside rank `rank`'s LSA domain (reached through the network). */
static inline int ncclx_net_is_remote(int lsa_size, int rank, int r)
{
    return r / lsa_size != rank / lsa_size;
}

#ifdef __cplusplus
}
#endif

#endif /* NCCLX_KERNELS_NET_H_ */
