/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The context's M2N engine (include/ncclx/m2n.h): what the plan gave it, the recorded group,
 * and the launch being built.  Lives in the host arena; bound once by ncclx_m2n_bind.
 */
#ifndef NCCLX_LIB_M2N_ENGINE_H_
#define NCCLX_LIB_M2N_ENGINE_H_

#include <stddef.h>

#include <ncclx/m2n.h>

struct ncclxContext;

/** Bytes of the engine struct (a host region of the plan). */
size_t ncclx_m2n_engine_bytes(void);

/** Bytes of one recorded group entry. */
size_t ncclx_m2n_entry_bytes(void);

/** Fills the engine in its host region from ctx's plan and regions, touching no GPU (what
 *  ncclx_m2n_bind does before it creates the engine's event; tests build a CPU context with
 *  it).  NULL without M2N staging. */
struct ncclx_m2n *ncclx_m2n_bind_host(struct ncclxContext *ctx);

/** Binds the engine to its regions (ctx->m2n); leaves ctx->m2n NULL without M2N staging. */
ncclxResult_t ncclx_m2n_bind(struct ncclxContext *ctx);

/** Undoes ncclx_m2n_bind (its event). */
ncclxResult_t ncclx_m2n_unbind(struct ncclxContext *ctx);

/** Bytes of one element of dtype t as M2N moves it (FP4x2: a byte of two values); 0 for a
 *  dtype M2N does not take. */
uint32_t ncclx_m2n_dtype_bytes(ncclxDataType_t t);

#endif /* NCCLX_LIB_M2N_ENGINE_H_ */
