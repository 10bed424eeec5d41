/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The EP stream rule on the CPU (lib/ep/ep.c ncclx_ep_check_stream / ncclx_ep_mark_stream):
 * eager operations on another stream wait until the group's last eager one is known complete;
 * captured ones are neither checked nor remembered.  CUDA's stream and event calls are replaced
 * at link time (-Wl,--wrap) by ones the test drives: which streams are capturing, whether the
 * event has fired, and which stream each record went to.  (On a GPU, tests/gpu/test_ep_streams
 * runs the PyTorch graph pattern itself.)
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "ep_group.h"
#include "ncclx_test.h"

#define STREAM_A ((ncclxStream_t)0x1000)
#define STREAM_B ((ncclxStream_t)0x2000)
#define STREAM_C ((ncclxStream_t)0x3000)

static ncclxStream_t capturing_stream; /* the one stream being captured, or NULL */
static cudaError_t event_state;        /* what cudaEventQuery answers */
static cudaError_t capture_query;      /* what cudaStreamIsCapturing returns */
static int records, queries;
static ncclxStream_t recorded_on;

cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e);
cudaError_t __wrap_cudaEventRecord(cudaEvent_t e, cudaStream_t s);

cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    *status = (ncclxStream_t)s == capturing_stream && s != NULL ? cudaStreamCaptureStatusActive
                                                                : cudaStreamCaptureStatusNone;
    return capture_query;
}

cudaError_t __wrap_cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    queries++;
    /* CUDA refuses to query an event last recorded inside a capture. */
    return recorded_on != NULL && recorded_on == capturing_stream ? cudaErrorInvalidValue
                                                                  : event_state;
}

cudaError_t __wrap_cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    records++;
    recorded_on = (ncclxStream_t)s;
    return cudaSuccess;
}

static ncclx_ep_group_t group;

static int setup(void **state)
{
    (void)state;
    memset(&group, 0, sizeof(group));
    group.op_done = (struct CUevent_st *)&group; /* any non-NULL event: the wraps see it */
    capturing_stream = NULL;
    event_state = cudaSuccess;
    capture_query = cudaSuccess;
    records = queries = 0;
    recorded_on = NULL;
    return 0;
}

/* An eager operation on A, then one on B while A's is still running: refused, naming both
 * streams; once A's work is done, B is accepted and becomes the group's stream. */
static void test_eager_switch(void **state)
{
    (void)state;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_A, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_A));
    assert_ptr_equal(group.last_stream, STREAM_A);
    assert_int_equal(records, 1);
    assert_ptr_equal(recorded_on, STREAM_A);
    event_state = cudaErrorNotReady;
    assert_int_equal(ncclx_ep_check_stream(&group, STREAM_B, "ncclxEpDispatch"), ncclxInvalidUsage);
    assert_non_null(strstr(ncclxGetLastError(), "ncclxEpDispatch: stream"));
    assert_non_null(strstr(ncclxGetLastError(), "not complete"));
    /* The same stream never needs the event. */
    const int q = queries;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_A, "call"));
    assert_int_equal(queries, q);
    event_state = cudaSuccess;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_B, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_B));
    assert_ptr_equal(group.last_stream, STREAM_B);
    assert_ptr_equal(recorded_on, STREAM_B);
}

/* The PyTorch pattern: eager on A, capture on side stream C, then eager on A and on B.  The
 * capture is not checked (A's work may still run), records nothing and leaves A as the group's
 * stream, so the later eager calls query an event recorded outside any capture. */
static void test_capture_is_not_remembered(void **state)
{
    (void)state;
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_A));
    event_state = cudaErrorNotReady;
    capturing_stream = STREAM_C;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_C, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_C));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_C));
    assert_int_equal(records, 1); /* only A's eager record */
    assert_ptr_equal(recorded_on, STREAM_A);
    assert_ptr_equal(group.last_stream, STREAM_A);
    capturing_stream = NULL; /* the capture ended */
    event_state = cudaSuccess;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_A, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_A));
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_B, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_B));
    assert_ptr_equal(group.last_stream, STREAM_B);
}

/* A stream CUDA cannot say the capture state of is refused, not taken for an eager one. */
static void test_capture_query_error(void **state)
{
    (void)state;
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_A));
    capture_query = cudaErrorStreamCaptureImplicit;
    assert_int_equal(ncclx_ep_check_stream(&group, STREAM_B, "ncclxEpCombine"), ncclxCudaError);
    assert_non_null(strstr(ncclxGetLastError(), "ncclxEpCombine: cudaStreamIsCapturing"));
    assert_int_equal(ncclx_ep_mark_stream(&group, STREAM_B), ncclxCudaError);
    assert_ptr_equal(group.last_stream, STREAM_A);
}

/* A group without CUDA state (host-only) remembers the stream and never calls CUDA. */
static void test_unbound_group(void **state)
{
    (void)state;
    group.op_done = NULL;
    capture_query = cudaErrorInsufficientDriver;
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_A, "call"));
    assert_ncclx_ok(ncclx_ep_mark_stream(&group, STREAM_A));
    assert_ncclx_ok(ncclx_ep_check_stream(&group, STREAM_B, "call"));
    assert_ptr_equal(group.last_stream, STREAM_A);
    assert_int_equal(records + queries, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_eager_switch, setup),
        cmocka_unit_test_setup(test_capture_is_not_remembered, setup),
        cmocka_unit_test_setup(test_capture_query_error, setup),
        cmocka_unit_test_setup(test_unbound_group, setup),
    };
    return cmocka_run_group_tests_name("ep_stream_rule", tests, NULL, NULL);
}
