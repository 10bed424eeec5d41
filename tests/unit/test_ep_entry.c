/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP entry points' own refusals on the CPU (lib/ep/ep.c and lib/ep/ep_ll.c), before
 * anything is launched: one table row per refusal of ncclxEpDispatch, ncclxEpCombine,
 * ncclxEpComplete and ncclxEpHandleUpdate, each checking the code, that the message names
 * what failed, and that neither the handle nor the group changed; and the accepting side of an
 * update's token bound; and, with the LL launchers replaced, which kernels a valid call
 * enqueues and what a failed launch leaves (lib/ep/ep_ll.c).  The fixture is
 * ep_ll_args_fixture.h.
 */
#include "ep_ll_args_fixture.h"

/* The stream rule's CUDA calls, replaced at link time (tests/unit.am): no stream is being
 * captured, and the group's last eager operation is still running (reached only by the rows
 * that give the group an event). */
cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e);
cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    (void)s;
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    return cudaErrorNotReady;
}

/* The LL launchers, replaced at link time too: each counts its calls, keeps the call descriptor
 * it was given and returns launch_result (cudaSuccess unless a test makes it fail), so that the
 * launch choices of lib/ep/ep_ll.c run without a GPU. */
typedef enum { DISPATCH_SEND, DISPATCH_RECV, COMBINE_SEND, COMBINE_RECV, LAUNCHERS } launcher_t;
static int launches[LAUNCHERS];
static const void *launch_desc[LAUNCHERS];
static cudaError_t launch_result[LAUNCHERS];

static cudaError_t launched(launcher_t which, const void *desc)
{
    launches[which]++;
    launch_desc[which] = desc;
    return launch_result[which];
}

cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_send(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream)
{
    (void)g;
    (void)h;
    (void)stream;
    return launched(DISPATCH_SEND, a);
}
cudaError_t __wrap_ncclx_ep_ll_launch_dispatch_recv(const ncclx_ep_ll_group_desc_t *g,
                                                    const ncclx_ep_ll_handle_desc_t *h,
                                                    const ncclx_ep_ll_dispatch_desc_t *a,
                                                    cudaStream_t stream)
{
    (void)g;
    (void)h;
    (void)stream;
    return launched(DISPATCH_RECV, a);
}
cudaError_t __wrap_ncclx_ep_ll_launch_combine_send(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream)
{
    (void)g;
    (void)h;
    (void)stream;
    return launched(COMBINE_SEND, a);
}
cudaError_t __wrap_ncclx_ep_ll_launch_combine_recv(const ncclx_ep_ll_group_desc_t *g,
                                                   const ncclx_ep_ll_handle_desc_t *h,
                                                   const ncclx_ep_ll_combine_desc_t *a,
                                                   cudaStream_t stream)
{
    (void)g;
    (void)h;
    (void)stream;
    return launched(COMBINE_RECV, a);
}

/* ---- the entry points' own refusals (lib/ep/ep.c, ep_ll.c), before anything is launched ----
 */

typedef enum { CALL_DISPATCH, CALL_COMBINE, CALL_COMPLETE, CALL_UPDATE } call_t;

typedef struct {
    fixture_t f;
    ncclxEpHandle_t h;
    ncclxEpDispatchArgs_t da;
    ncclxEpCombineArgs_t ca;
    const void *dargs, *cargs; /* what the call gets (&da, &ca, or another pointer) */
    ncclxTensor_t idx;
    const ncclxTensor_t *idx_arg;
    ncclxStream_t stream;
} scene_t;

typedef struct {
    const char *name;
    uint32_t layout;
    call_t call;
    void (*setup)(scene_t *s);
    ncclxResult_t expected;
    const char *needle;
} entry_case_t;

#define SETUP(fn, stmt)        \
    static void fn(scene_t *s) \
    {                          \
        stmt;                  \
    }

/* A handle of f: routed, and with a completed dispatch (so combine may follow). */
static void make_scene(scene_t *s, uint32_t layout)
{
    memset(s, 0, sizeof(*s));
    make_fixture(&s->f, layout);
    s->h = &s->f.handle;
    s->f.handle.dispatched = 1;
    s->da = valid_dispatch(&s->f, NONE);
    s->ca = valid_combine(&s->f);
    s->dargs = &s->da;
    s->cargs = &s->ca;
    s->idx = tensor(20, NCCLX_INT64, 2, N, K, 0);
    s->idx_arg = &s->idx;
    s->stream = (ncclxStream_t)PTR(30);
}

/* A send_only operation of another handle of the group in flight. */
static void in_flight(scene_t *s, ncclx_ep_pending_t what)
{
    s->f.other.pending = what;
    s->f.group.send_in_flight = &s->f.other;
}

SETUP(e_null_handle, s->h = NULL)
SETUP(e_destroyed, s->f.handle.live = 0)
SETUP(e_overflow, s->f.status = NCCLX_EP_ERROR_OVERFLOW)
SETUP(e_timeout, s->f.status = NCCLX_EP_ERROR_TIMEOUT)
SETUP(e_dispatch_in_flight, in_flight(s, NCCLX_EP_PENDING_DISPATCH))
SETUP(e_combine_in_flight, in_flight(s, NCCLX_EP_PENDING_COMBINE))
SETUP(e_null_args, s->dargs = s->cargs = NULL)
SETUP(e_dargs_magic, s->da.magic = NCCLX_MAGIC_EP_COMBINE_ARGS)
SETUP(e_dargs_size, s->da.size = 8)
SETUP(e_cargs_magic, s->ca.magic = NCCLX_MAGIC_EP_DISPATCH_ARGS)
SETUP(e_cargs_size, s->ca.size = 8)
SETUP(e_dispatch_backward, s->da.pass = NCCLX_EP_PASS_BACKWARD)
SETUP(e_dispatch_pass_2, s->da.pass = 2)
SETUP(e_unrouted, s->f.handle.routed = 0)
SETUP(e_dispatch_bad_field, s->da.out_counts.data = NULL)
SETUP(e_undispatched, s->f.handle.dispatched = 0)
SETUP(e_combine_backward, s->ca.pass = NCCLX_EP_PASS_BACKWARD)
SETUP(e_combine_out_weights, s->ca.out_topk_weights = tensor(21, NCCLX_FLOAT32, 2, N, K, 0))
SETUP(e_combine_out_weights_data, s->ca.out_topk_weights.data = PTR(21))
SETUP(e_combine_bad_field, s->ca.out.shape[1] = H + 16)
SETUP(e_nothing_pending, (void)s)
/* The send went out on stream 31 (send_stream); the group's last eager stream is the call's
 * own, so only the send's stream can refuse it. */
SETUP(e_complete_other_stream, s->f.handle.pending = NCCLX_EP_PENDING_DISPATCH;
      s->f.group.send_in_flight = &s->f.handle; s->f.group.send_stream = (ncclxStream_t)PTR(31);
      s->f.group.last_stream = s->stream)
/* The group's last eager operation ran on another stream and is not known complete. */
SETUP(e_busy_other_stream, s->f.group.op_done = (struct CUevent_st *)PTR(40);
      s->f.group.last_stream = (ncclxStream_t)PTR(31))
SETUP(e_complete_ht, s->f.group.plan.algorithm = NCCLX_EP_ALGO_HT)
SETUP(e_idx_null, s->idx_arg = NULL)
SETUP(e_idx_float, s->idx.dtype = NCCLX_FLOAT32)
SETUP(e_idx_ndim, s->idx.ndim = 1)
SETUP(e_idx_topk, s->idx.shape[1] = K + 1)
SETUP(e_idx_max_topk, s->f.handle.config.topk = 1)
SETUP(e_idx_tokens, s->idx.shape[0] = T + 1)
SETUP(e_idx_data, s->idx.data = NULL)
SETUP(e_idx_misaligned, s->idx.data = (char *)s->idx.data + 8)

#define D_  "ncclxEpDispatch: "
#define CB_ "ncclxEpCombine: "
#define CO_ "ncclxEpComplete: "
#define U_  "ncclxEpHandleUpdate: "

static const entry_case_t entry_cases[] = {
    /* ncclxEpDispatch */
    {"dispatch NULL handle", EM, CALL_DISPATCH, e_null_handle, ncclxInvalidArgument,
     D_ "handle is NULL"},
    {"dispatch destroyed", RM, CALL_DISPATCH, e_destroyed, ncclxInvalidUsage,
     D_ "the handle was destroyed"},
    {"dispatch after an overflow", EM, CALL_DISPATCH, e_overflow, ncclxInvalidUsage,
     D_ "a routing of EP group 0 needed more receive rows"},
    {"dispatch after a timeout", RM, CALL_DISPATCH, e_timeout, ncclxTimeout,
     D_ "a GPU wait of an earlier operation in EP group 0 timed out"},
    {"dispatch with a dispatch in flight", EM, CALL_DISPATCH, e_dispatch_in_flight,
     ncclxInvalidUsage, D_ "a send_only dispatch of handle 1 is in flight"},
    {"dispatch with a combine in flight", RM, CALL_DISPATCH, e_combine_in_flight, ncclxInvalidUsage,
     D_ "a send_only combine of handle 1 is in flight"},
    {"dispatch NULL args", EM, CALL_DISPATCH, e_null_args, ncclxInvalidArgument, "args is NULL"},
    {"dispatch args of combine", RM, CALL_DISPATCH, e_dargs_magic, ncclxInvalidArgument,
     "args->magic="},
    {"dispatch args size 8", EM, CALL_DISPATCH, e_dargs_size, ncclxInvalidArgument,
     "args->size=8 is smaller"},
    {"dispatch backward", EM, CALL_DISPATCH, e_dispatch_backward, ncclxInvalidArgument,
     D_ "args->pass=1: LL dispatch is forward only"},
    {"dispatch pass 2", RM, CALL_DISPATCH, e_dispatch_pass_2, ncclxInvalidArgument,
     D_ "args->pass=2"},
    {"dispatch unrouted", EM, CALL_DISPATCH, e_unrouted, ncclxInvalidUsage,
     D_ "handle 0 has no routing"},
    {"dispatch bad field", RM, CALL_DISPATCH, e_dispatch_bad_field, ncclxInvalidArgument,
     D_ "args->out_counts.data is NULL"},
    /* ncclxEpCombine */
    {"combine NULL handle", EM, CALL_COMBINE, e_null_handle, ncclxInvalidArgument,
     CB_ "handle is NULL"},
    {"combine destroyed", RM, CALL_COMBINE, e_destroyed, ncclxInvalidUsage,
     CB_ "the handle was destroyed"},
    {"combine after an overflow", EM, CALL_COMBINE, e_overflow, ncclxInvalidUsage,
     CB_ "a routing of EP group 0 needed more receive rows"},
    {"combine with a dispatch in flight", RM, CALL_COMBINE, e_dispatch_in_flight, ncclxInvalidUsage,
     CB_ "a send_only dispatch of handle 1 is in flight"},
    {"combine without a dispatch", EM, CALL_COMBINE, e_undispatched, ncclxInvalidUsage,
     CB_ "handle 0 has no completed dispatch"},
    {"combine NULL args", RM, CALL_COMBINE, e_null_args, ncclxInvalidArgument, "args is NULL"},
    {"combine args of dispatch", EM, CALL_COMBINE, e_cargs_magic, ncclxInvalidArgument,
     "args->magic="},
    {"combine args size 8", RM, CALL_COMBINE, e_cargs_size, ncclxInvalidArgument,
     "args->size=8 is smaller"},
    {"combine backward", EM, CALL_COMBINE, e_combine_backward, ncclxInvalidArgument,
     CB_ "args->pass: LL combine is forward only"},
    {"combine out_topk_weights", RM, CALL_COMBINE, e_combine_out_weights, ncclxInvalidArgument,
     CB_ "args->out_topk_weights: LL combine is forward only"},
    {"combine out_topk_weights data only", EM, CALL_COMBINE, e_combine_out_weights_data,
     ncclxInvalidArgument, CB_ "args->out_topk_weights"},
    {"combine bad field", EM, CALL_COMBINE, e_combine_bad_field, ncclxInvalidArgument,
     CB_ "args->out.shape[1]=272, expected 256"},
    /* ncclxEpComplete */
    {"complete NULL handle", EM, CALL_COMPLETE, e_null_handle, ncclxInvalidArgument,
     CO_ "handle is NULL"},
    {"complete destroyed", RM, CALL_COMPLETE, e_destroyed, ncclxInvalidUsage,
     CO_ "the handle was destroyed"},
    {"complete after a timeout", EM, CALL_COMPLETE, e_timeout, ncclxTimeout,
     CO_ "a GPU wait of an earlier operation"},
    {"complete with nothing pending", RM, CALL_COMPLETE, e_nothing_pending, ncclxInvalidUsage,
     CO_ "handle 0 has no send_only dispatch or combine in flight"},
    /* Refused by the stream rule after the arguments passed: the handle keeps the descriptor
     * of its last dispatch (a later combine derives its operation word from it). */
    {"dispatch while another stream's operation runs", EM, CALL_DISPATCH, e_busy_other_stream,
     ncclxInvalidUsage, D_ "stream"},
    {"dispatch while another stream's operation runs (rank-major)", RM, CALL_DISPATCH,
     e_busy_other_stream, ncclxInvalidUsage, D_ "stream"},
    {"combine while another stream's operation runs", EM, CALL_COMBINE, e_busy_other_stream,
     ncclxInvalidUsage, CB_ "stream"},
    {"update while another stream's operation runs", RM, CALL_UPDATE, e_busy_other_stream,
     ncclxInvalidUsage, U_ "stream"},
    {"complete on another stream", EM, CALL_COMPLETE, e_complete_other_stream, ncclxInvalidUsage,
     "is not the stream"},
    {"complete on HT", EM, CALL_COMPLETE, e_complete_ht, ncclxInvalidUsage, CO_ "EP group 0 is HT"},
    /* ncclxEpHandleUpdate (its routing is launched after these) */
    {"update NULL handle", EM, CALL_UPDATE, e_null_handle, ncclxInvalidArgument,
     U_ "handle is NULL"},
    {"update destroyed", RM, CALL_UPDATE, e_destroyed, ncclxInvalidUsage,
     U_ "the handle was destroyed"},
    {"update after an overflow", EM, CALL_UPDATE, e_overflow, ncclxInvalidUsage,
     U_ "a routing of EP group 0 needed more receive rows"},
    {"update with a combine in flight", RM, CALL_UPDATE, e_combine_in_flight, ncclxInvalidUsage,
     U_ "a send_only combine of handle 1 is in flight"},
    {"update NULL topk_idx", EM, CALL_UPDATE, e_idx_null, ncclxInvalidArgument,
     U_ "topk_idx is NULL"},
    {"update float topk_idx", RM, CALL_UPDATE, e_idx_float, ncclxInvalidArgument,
     U_ "topk_idx.dtype=2"},
    {"update 1-D topk_idx", EM, CALL_UPDATE, e_idx_ndim, ncclxInvalidArgument,
     U_ "topk_idx.ndim=1, expected 2"},
    {"update topk_idx of K + 1", RM, CALL_UPDATE, e_idx_topk, ncclxInvalidArgument,
     U_ "topk_idx.shape[1]=3, expected 2"},
    {"update topk_idx wider than the handle's top-k", EM, CALL_UPDATE, e_idx_max_topk,
     ncclxInvalidArgument, U_ "topk_idx.shape[1]=2, expected 1"},
    {"update T + 1 tokens", RM, CALL_UPDATE, e_idx_tokens, ncclxInvalidArgument,
     U_ "topk_idx.shape[0]=9 tokens exceeds the group's max_dispatch_tokens_per_rank=8"},
    {"update topk_idx NULL data", EM, CALL_UPDATE, e_idx_data, ncclxInvalidArgument,
     U_ "topk_idx.data is NULL"},
    {"update topk_idx misaligned", RM, CALL_UPDATE, e_idx_misaligned, ncclxInvalidArgument,
     U_ "topk_idx.data="},
};

static ncclxResult_t call(const scene_t *s, call_t c)
{
    switch (c) {
    case CALL_DISPATCH:
        return ncclxEpDispatch(s->h, s->dargs, s->stream);
    case CALL_COMBINE:
        return ncclxEpCombine(s->h, s->cargs, s->stream);
    case CALL_COMPLETE:
        return ncclxEpComplete(s->h, s->stream);
    default:
        return ncclxEpHandleUpdate(s->h, s->idx_arg, s->stream);
    }
}

static void test_each_entry_refusal(void **state)
{
    (void)state;
    const size_t n = sizeof(entry_cases) / sizeof(entry_cases[0]);
    static scene_t s; /* large: not on the stack */
    for (size_t i = 0; i < n; i++) {
        const entry_case_t *c = &entry_cases[i];
        make_scene(&s, c->layout);
        /* The scene's arguments are valid: only the row's change makes the call fail. */
        ncclx_ep_ll_dispatch_desc_t d;
        ncclx_ep_ll_combine_desc_t cd;
        assert_ncclx_ok(ncclx_ep_dispatch_desc(&s.f.handle, &s.da, &d));
        assert_ncclx_ok(ncclx_ep_combine_desc(&s.f.handle, &s.ca, &cd));
        c->setup(&s);
        const ncclx_ep_handle_t before = s.f.handle;
        const ncclx_ep_group_t group_before = s.f.group;
        ncclxResult_t res = call(&s, c->call);
        const char *msg = ncclxGetLastError();
        if (res != c->expected || strstr(msg, c->needle) == NULL) {
            fail_msg("entry case '%s': got %d '%s', expected %d with '%s'", c->name, (int)res, msg,
                     (int)c->expected, c->needle);
        }
        /* Nothing changed: the handle keeps its routing, dispatch and pending state. */
        if (memcmp(&s.f.handle, &before, sizeof(before)) != 0 ||
            memcmp(&s.f.group, &group_before, sizeof(group_before)) != 0) {
            fail_msg("entry case '%s': the call changed the %s", c->name,
                     memcmp(&s.f.handle, &before, sizeof(before)) != 0 ? "handle" : "group");
        }
    }
    assert_true(n >= 40);
}

/*
 * The bounds of an update's topk_idx from the accepting side: exactly T tokens (and zero) pass
 * every argument check.  The fixture's group has no GPU state (zero ranks in its kernel
 * descriptor: an empty grid), so the routing launch itself fails, and only it: ncclxCudaError,
 * never ncclxInvalidArgument, and the handle is left without routing, as ep.h says of a
 * routing launch that fails.
 */
static void test_update_accepts_t_tokens(void **state)
{
    (void)state;
    static const int64_t tokens[] = {T, 0, 1};
    static scene_t s;
    for (int i = 0; i < 3; i++) {
        make_scene(&s, i == 1 ? RM : EM);
        assert_int_equal(s.f.group.desc.ranks, 0);
        s.idx.shape[0] = tokens[i];
        s.idx.data = tokens[i] == 0 ? NULL : s.idx.data;
        ncclxResult_t res = ncclxEpHandleUpdate(s.h, &s.idx, s.stream);
        if (res != ncclxCudaError) {
            fail_msg("update of %lld tokens: got %d '%s', expected only the launch to fail",
                     (long long)tokens[i], (int)res, ncclxGetLastError());
        }
        assert_int_equal(s.f.handle.routed, 0);
        assert_int_equal(s.f.handle.dispatched, 0);
        assert_int_equal(s.f.handle.desc.num_tokens, tokens[i]);
    }
}

/* ---- the launches of a valid call (lib/ep/ep_ll.c), with the launchers replaced ---- */

/* Clears the launch counts; `failing`: the launcher that fails (LAUNCHERS: none). */
static void launchers_reset(launcher_t failing)
{
    for (int i = 0; i < LAUNCHERS; i++) {
        launches[i] = 0;
        launch_desc[i] = NULL;
        launch_result[i] = i == (int)failing ? cudaErrorLaunchFailure : cudaSuccess;
    }
}

static void assert_launches(int dispatch_send, int dispatch_recv, int combine_send,
                            int combine_recv)
{
    assert_int_equal(launches[DISPATCH_SEND], dispatch_send);
    assert_int_equal(launches[DISPATCH_RECV], dispatch_recv);
    assert_int_equal(launches[COMBINE_SEND], combine_send);
    assert_int_equal(launches[COMBINE_RECV], combine_recv);
}

/* The handle and group between operations: nothing pending, no send in flight. */
static void assert_idle(const scene_t *s, int dispatched)
{
    assert_int_equal(s->f.handle.pending, NCCLX_EP_PENDING_NONE);
    assert_null(s->f.group.send_in_flight);
    assert_int_equal(s->f.handle.dispatched, dispatched);
}

/* A send enqueued, its receive not: the operation is in flight on the call's stream. */
static void assert_in_flight(const scene_t *s, ncclx_ep_pending_t what)
{
    assert_int_equal(s->f.handle.pending, what);
    assert_ptr_equal(s->f.group.send_in_flight, &s->f.handle);
    assert_ptr_equal(s->f.group.send_stream, s->stream);
}

/*
 * A dispatch enqueues its send and then its receive, both given the handle's descriptor of this
 * dispatch (the one ncclx_ep_dispatch_desc fills); send_only leaves the receive to
 * ncclxEpComplete.  A send that fails to launch leaves nothing in flight and the handle without
 * a received routing (the new dispatch replaced it); a receive that fails after its send leaves
 * the operation in flight (its peers wait for it), named in the error, for ncclxEpComplete to
 * retry.  Combine likewise, with its own launchers, keeping the handle's dispatch.
 */
static void test_launches(void **state)
{
    (void)state;
    static scene_t s;
    ncclx_ep_ll_dispatch_desc_t d;
    ncclx_ep_ll_combine_desc_t c;
    make_scene(&s, EM);
    ncclx_ep_handle_t *h = &s.f.handle;
    assert_ncclx_ok(ncclx_ep_dispatch_desc(h, &s.da, &d));

    /* A dispatch: send, then receive, of the descriptor the call filled. */
    launchers_reset(LAUNCHERS);
    assert_ncclx_ok(ncclxEpDispatch(h, &s.da, s.stream));
    assert_launches(1, 1, 0, 0);
    assert_memory_equal(&h->pending_dispatch, &d, sizeof(d));
    assert_ptr_equal(launch_desc[DISPATCH_SEND], &h->pending_dispatch);
    assert_ptr_equal(launch_desc[DISPATCH_RECV], &h->pending_dispatch);
    assert_idle(&s, 1);
    assert_ptr_equal(s.f.group.last_stream, s.stream);

    /* Its send fails: nothing in flight, and no received routing to combine. */
    launchers_reset(DISPATCH_SEND);
    assert_ncclx_error(ncclxEpDispatch(h, &s.da, s.stream), ncclxCudaError,
                       "ncclx_ep_ll_launch_dispatch_send");
    assert_launches(1, 0, 0, 0);
    assert_idle(&s, 0);

    /* Its receive fails: in flight until ncclxEpComplete enqueues it. */
    launchers_reset(DISPATCH_RECV);
    assert_ncclx_error(ncclxEpDispatch(h, &s.da, s.stream), ncclxCudaError,
                       "the receive of handle 0's dispatch failed to launch");
    assert_launches(1, 1, 0, 0);
    assert_in_flight(&s, NCCLX_EP_PENDING_DISPATCH);
    assert_int_equal(h->dispatched, 0);
    launchers_reset(LAUNCHERS);
    assert_ncclx_ok(ncclxEpComplete(h, s.stream));
    assert_launches(0, 1, 0, 0);
    assert_ptr_equal(launch_desc[DISPATCH_RECV], &h->pending_dispatch);
    assert_idle(&s, 1);

    /* send_only: the send alone; the receive at ncclxEpComplete. */
    s.da.send_only = 1;
    launchers_reset(LAUNCHERS);
    assert_ncclx_ok(ncclxEpDispatch(h, &s.da, s.stream));
    assert_launches(1, 0, 0, 0);
    assert_in_flight(&s, NCCLX_EP_PENDING_DISPATCH);
    assert_int_equal(h->dispatched, 0);
    assert_ncclx_ok(ncclxEpComplete(h, s.stream));
    assert_launches(1, 1, 0, 0);
    assert_idle(&s, 1);

    /* A combine: its own send and receive, of its descriptor (whose word is the dispatch's);
     * the dispatch stays. */
    assert_ncclx_ok(ncclx_ep_combine_desc(h, &s.ca, &c));
    launchers_reset(LAUNCHERS);
    assert_ncclx_ok(ncclxEpCombine(h, &s.ca, s.stream));
    assert_launches(0, 0, 1, 1);
    assert_memory_equal(&h->pending_combine, &c, sizeof(c));
    assert_ptr_equal(launch_desc[COMBINE_SEND], &h->pending_combine);
    assert_ptr_equal(launch_desc[COMBINE_RECV], &h->pending_combine);
    assert_idle(&s, 1);
    launchers_reset(COMBINE_RECV);
    assert_ncclx_error(ncclxEpCombine(h, &s.ca, s.stream), ncclxCudaError,
                       "the receive of handle 0's combine failed to launch");
    assert_launches(0, 0, 1, 1);
    assert_in_flight(&s, NCCLX_EP_PENDING_COMBINE);
    launchers_reset(LAUNCHERS);
    assert_ncclx_ok(ncclxEpComplete(h, s.stream));
    assert_launches(0, 0, 0, 1);
    assert_idle(&s, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_entry_refusal),
        cmocka_unit_test(test_update_accepts_t_tokens),
        cmocka_unit_test(test_launches),
    };
    return cmocka_run_group_tests_name("ep_entry", tests, NULL, NULL);
}
