/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * Host side of LL active masks on the CPU: which groups accept mask calls, argument checks
 * of query and update, the quiet-group rule and handle invalidation of update and clean, and
 * the error a group without a mask returns after a GPU wait timed out.  Groups and handles
 * are built from a plan without a GPU.  The stream rule's CUDA calls and the mask launchers are
 * replaced at link time (tests/unit.am), so that calls that pass every check run to the end.
 */
#include <cuda_runtime_api.h>

#include "ncclx_test.h"

#include "ep_group.h"
#include "ep_mask.h"

/* E / R = 2 local experts: a rank count mixed up with another dimension shows. */
enum { R = 4, E = 8, T = 8, K = 2, H = 256, HANDLES = 3 };

#define STREAM_A ((ncclxStream_t)0x1000)
#define STREAM_B ((ncclxStream_t)0x2000)

/* No stream is being captured; the group's event (set only by the tests that give the group
 * one) answers event_state; records counts the events recorded. */
static cudaError_t event_state;
static int records;
cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status);
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e);
cudaError_t __wrap_cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t __wrap_cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    (void)s;
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    return event_state;
}
cudaError_t __wrap_cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    (void)s;
    records++;
    return cudaSuccess;
}

/* The mask launchers: each counts its calls and keeps the buffer it was given (the query's
 * output, or a copy of the update's host mask as it was at the launch), and returns
 * launch_result. */
enum { QUERY, UPDATE, CLEAN, LAUNCHERS };
static int launches[LAUNCHERS];
static const void *launched_buffer;
static int32_t launched_mask[R];
static cudaError_t launch_result;
cudaError_t __wrap_ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g, int32_t *out,
                                                 cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g,
                                                  const int32_t *mask, cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g,
                                                 cudaStream_t stream);
cudaError_t __wrap_ncclx_ep_ll_launch_mask_query(const ncclx_ep_ll_group_desc_t *g, int32_t *out,
                                                 cudaStream_t stream)
{
    (void)g;
    (void)stream;
    launches[QUERY]++;
    launched_buffer = out;
    return launch_result;
}
cudaError_t __wrap_ncclx_ep_ll_launch_mask_update(const ncclx_ep_ll_group_desc_t *g,
                                                  const int32_t *mask, cudaStream_t stream)
{
    (void)g;
    (void)stream;
    launches[UPDATE]++;
    launched_buffer = mask;
    memcpy(launched_mask, mask, sizeof(launched_mask));
    return launch_result;
}
cudaError_t __wrap_ncclx_ep_ll_launch_mask_clean(const ncclx_ep_ll_group_desc_t *g,
                                                 cudaStream_t stream)
{
    (void)g;
    (void)stream;
    launches[CLEAN]++;
    return launch_result;
}

typedef struct {
    ncclx_ep_group_t group;
    ncclx_ep_handle_t handles[HANDLES];
    unsigned char bookkeeping[256];
    uint8_t masked_by_update[R];
    volatile uint32_t status;
} fixture_t;

static void make_fixture(fixture_t *f, uint32_t algorithm, uint32_t enable_mask)
{
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    ncclxEpGroupPlan_t g = NCCLX_EP_GROUP_PLAN_INIT;
    memset(f, 0, sizeof(*f));
    memset(launches, 0, sizeof(launches));
    memset(launched_mask, 0xff, sizeof(launched_mask));
    launched_buffer = NULL;
    launch_result = cudaSuccess;
    event_state = cudaSuccess;
    records = 0;
    assert_true(ncclx_pool_bookkeeping_bytes(HANDLES) <= sizeof(f->bookkeeping));
    team.num_ranks = team.lsa_size = R;
    g.algorithm = algorithm;
    g.enable_mask = enable_mask;
    g.num_experts = E;
    g.max_topk = K;
    g.hidden = H;
    g.max_token_bytes = H * 2;
    g.max_dispatch_tokens_per_rank = T;
    g.num_handles = HANDLES;
    f->group.plan = g;
    f->group.index = 2;
    assert_ncclx_ok(ncclx_ep_dims_compute(&g, &team, 0, &f->group.dims));
    ncclx_pool_init(&f->group.handles, "EP group 2 handles", "raise num_handles", f->handles,
                    sizeof(f->handles[0]), HANDLES, f->bookkeeping);
    f->group.status = &f->status;
    f->group.masked_by_update = enable_mask ? f->masked_by_update : NULL;
}

static void test_only_ll_groups_with_a_mask(void **state)
{
    (void)state;
    fixture_t f;
    const int32_t all[R] = {1, 1, 1, 1};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_ok(ncclx_ep_mask_check(&f.group, "ncclxEpMaskQuery"));

    make_fixture(&f, NCCLX_EP_ALGO_LL, 0);
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, NULL, NULL), ncclxInvalidUsage,
                       "ncclxEpMaskQuery: EP group 2 was planned without an active mask");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, all, R, NULL), ncclxInvalidUsage, "enable_mask");
    assert_ncclx_error(ncclxEpMaskClean(&f.group, NULL), ncclxInvalidUsage,
                       "ncclxEpMaskClean: EP group 2 was planned without");

    make_fixture(&f, NCCLX_EP_ALGO_HT, 1);
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, NULL, NULL), ncclxUnsupported,
                       "EP group 2 is HT; active masks are an LL feature");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, all, R, NULL), ncclxUnsupported, "is HT");
    assert_ncclx_error(ncclxEpMaskClean(&f.group, NULL), ncclxUnsupported, "is HT");

    assert_ncclx_error(ncclxEpMaskQuery(NULL, NULL, NULL), ncclxInvalidArgument,
                       "ncclxEpMaskQuery: group is NULL");
    assert_ncclx_error(ncclxEpMaskUpdate(NULL, all, R, NULL), ncclxInvalidArgument,
                       "group is NULL");
    assert_ncclx_error(ncclxEpMaskClean(NULL, NULL), ncclxInvalidArgument, "group is NULL");
}

static void test_query_tensor_checked(void **state)
{
    (void)state;
    fixture_t f;
    ncclxTensor_t t = {(void *)(uintptr_t)0x10000, NCCLX_INT32, 1, {R, 0, 0, 0}};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, NULL, NULL), ncclxInvalidArgument,
                       "ncclxEpMaskQuery: mask");
    t.dtype = NCCLX_INT64;
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, &t, NULL), ncclxInvalidArgument,
                       "ncclxEpMaskQuery: mask");
    t.dtype = NCCLX_INT32;
    t.shape[0] = R + 1;
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, &t, NULL), ncclxInvalidArgument, "[num_ranks]");
    t.shape[0] = R;
    t.ndim = 2;
    t.shape[1] = 1;
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, &t, NULL), ncclxInvalidArgument, "mask");
    t.ndim = 1;
    t.data = NULL;
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, &t, NULL), ncclxInvalidArgument, "mask");
}

static void test_update_values_checked(void **state)
{
    (void)state;
    fixture_t f;
    int32_t mask[R] = {1, 0, 1, 1};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_ok(ncclx_ep_mask_values_check(&f.group, mask, R));
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, NULL, R, NULL), ncclxInvalidArgument,
                       "ncclxEpMaskUpdate: mask is NULL");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R - 1, NULL), ncclxInvalidArgument,
                       "num_ranks=3 but EP group 2 has 4 ranks");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R + 1, NULL), ncclxInvalidArgument,
                       "num_ranks=5 but EP group 2 has 4 ranks");
    /* Every entry is checked, the first and the last too. */
    mask[0] = 2;
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R, NULL), ncclxInvalidArgument,
                       "mask[0]=2");
    mask[0] = 1;
    mask[R - 1] = 2;
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R, NULL), ncclxInvalidArgument,
                       "mask[3]=2");
    mask[R - 1] = 1;
    assert_int_equal(launches[UPDATE], 0);
    mask[2] = 2;
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R, NULL), ncclxInvalidArgument,
                       "mask[2]=2");
    mask[2] = -1;
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R, NULL), ncclxInvalidArgument,
                       "mask[2]=-1");
}

/* Only a clean re-admits: an update may not turn back on a rank that an update masked (its
 * sequence numbers would be out of step with this rank's). */
static void test_update_never_reactivates(void **state)
{
    (void)state;
    fixture_t f;
    const int32_t all[R] = {1, 1, 1, 1};
    const int32_t fresh[R] = {1, 1, 1, 0};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_ok(ncclx_ep_mask_values_check(&f.group, all, R));
    f.masked_by_update[1] = 1; /* what an earlier ncclxEpMaskUpdate(..{1,0,1,1}..) leaves */
    assert_ncclx_error(ncclx_ep_mask_values_check(&f.group, all, R), ncclxInvalidArgument,
                       "ncclxEpMaskUpdate: mask[1]=1 would re-activate rank 1, which an earlier "
                       "update of this rank masked: only ncclxEpMaskClean re-admits");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, all, R, NULL), ncclxInvalidArgument,
                       "re-activate rank 1");
    /* Masking more (and keeping rank 1 masked) is fine. */
    const int32_t more[R] = {1, 0, 1, 0};
    assert_ncclx_ok(ncclx_ep_mask_values_check(&f.group, more, R));
    assert_ncclx_error(ncclx_ep_mask_values_check(&f.group, fresh, R), ncclxInvalidArgument,
                       "mask[1]=1");
}

static void test_changes_need_a_quiet_group_and_void_dispatches(void **state)
{
    (void)state;
    fixture_t f;
    void *a = NULL, *b = NULL, *c = NULL;
    uint32_t ia, ib, ic;
    const int32_t all[R] = {1, 1, 1, 1};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &a, &ia));
    assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &b, &ib));
    assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &c, &ic));
    ((ncclx_ep_handle_t *)a)->dispatched = 1;
    ((ncclx_ep_handle_t *)b)->dispatched = 1;
    ((ncclx_ep_handle_t *)b)->index = ib;
    assert_ncclx_ok(ncclx_pool_release(&f.group.handles, c));
    ((ncclx_ep_handle_t *)c)->dispatched = 1; /* a released slot: left alone */

    /* A send_only operation in flight: update and clean are refused, nothing changes. */
    f.group.send_in_flight = b;
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, all, R, NULL), ncclxInvalidUsage,
                       "ncclxEpMaskUpdate: a send_only operation of handle 1 is in flight");
    assert_ncclx_error(ncclxEpMaskClean(&f.group, NULL), ncclxInvalidUsage,
                       "ncclxEpMaskClean: a send_only operation");
    assert_int_equal(((ncclx_ep_handle_t *)a)->dispatched, 1);
    f.group.send_in_flight = NULL;
    assert_ncclx_ok(ncclx_ep_mask_change_check(&f.group, "ncclxEpMaskClean"));

    ncclx_ep_mask_changed(&f.group);
    assert_int_equal(((ncclx_ep_handle_t *)a)->dispatched, 0);
    assert_int_equal(((ncclx_ep_handle_t *)b)->dispatched, 0);
    assert_int_equal(((ncclx_ep_handle_t *)c)->dispatched, 1);
}

/* Calls that pass every check reach their launch: the query with its output tensor, the update
 * with the caller's mask after marking the ranks it masks (a later update may not bring them
 * back), the clean after forgetting every mark; each voids the handles' dispatches (update and
 * clean) and makes the call's stream the group's. */
static void test_calls_reach_the_launch(void **state)
{
    (void)state;
    fixture_t f;
    void *h[HANDLES];
    uint32_t index;
    const int32_t first[R] = {1, 0, 1, 1}, more[R] = {1, 0, 1, 0}, all[R] = {1, 1, 1, 1};
    const uint8_t none[R] = {0, 0, 0, 0}, one[R] = {0, 1, 0, 0}, two[R] = {0, 1, 0, 1};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    for (int i = 0; i < HANDLES; i++) { /* every slot in use, the last one too */
        assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &h[i], &index));
    }

    ncclxTensor_t out = {(void *)(uintptr_t)0x10000, NCCLX_INT32, 1, {R, 0, 0, 0}};
    assert_ncclx_ok(ncclxEpMaskQuery(&f.group, &out, STREAM_A));
    assert_int_equal(launches[QUERY], 1);
    assert_ptr_equal(launched_buffer, out.data);
    assert_ptr_equal(f.group.last_stream, STREAM_A);

    for (int i = 0; i < HANDLES; i++) {
        ((ncclx_ep_handle_t *)h[i])->dispatched = 1;
    }
    assert_ncclx_ok(ncclxEpMaskUpdate(&f.group, first, R, STREAM_B));
    assert_int_equal(launches[UPDATE], 1);
    assert_ptr_equal(launched_buffer, first);
    assert_memory_equal(launched_mask, first, sizeof(first));
    assert_memory_equal(f.masked_by_update, one, R);
    assert_ptr_equal(f.group.last_stream, STREAM_B);
    for (int i = 0; i < HANDLES; i++) {
        assert_int_equal(((ncclx_ep_handle_t *)h[i])->dispatched, 0);
        ((ncclx_ep_handle_t *)h[i])->dispatched = 1;
    }
    /* Masking the last rank as well: both marks kept. */
    assert_ncclx_ok(ncclxEpMaskUpdate(&f.group, more, R, STREAM_B));
    assert_memory_equal(f.masked_by_update, two, R);
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, all, R, STREAM_B), ncclxInvalidArgument,
                       "mask[1]=1 would re-activate rank 1");
    assert_int_equal(launches[UPDATE], 2);

    for (int i = 0; i < HANDLES; i++) {
        ((ncclx_ep_handle_t *)h[i])->dispatched = 1;
    }
    assert_ncclx_ok(ncclxEpMaskClean(&f.group, STREAM_A));
    assert_int_equal(launches[CLEAN], 1);
    assert_memory_equal(f.masked_by_update, none, R);
    assert_ptr_equal(f.group.last_stream, STREAM_A);
    for (int i = 0; i < HANDLES; i++) {
        assert_int_equal(((ncclx_ep_handle_t *)h[i])->dispatched, 0);
    }
    /* After the clean every rank may be active again. */
    assert_ncclx_ok(ncclxEpMaskUpdate(&f.group, all, R, STREAM_A));
    assert_memory_equal(f.masked_by_update, none, R);
}

/* A failed update launch is a CUDA error and leaves the group's stream as it was; the marks and
 * the voided dispatches stay (with several launches, part of the mask may have changed). */
static void test_failed_update_launch(void **state)
{
    (void)state;
    fixture_t f;
    void *h;
    uint32_t index;
    const int32_t mask[R] = {0, 1, 1, 1};
    const uint8_t marked[R] = {1, 0, 0, 0};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &h, &index));
    ((ncclx_ep_handle_t *)h)->dispatched = 1;
    launch_result = cudaErrorLaunchFailure;
    assert_int_equal(ncclxEpMaskUpdate(&f.group, mask, R, STREAM_A), ncclxCudaError);
    assert_int_equal(launches[UPDATE], 1);
    assert_null(f.group.last_stream);
    assert_memory_equal(f.masked_by_update, marked, R);
    assert_int_equal(((ncclx_ep_handle_t *)h)->dispatched, 0);
}

/* The stream rule holds for every mask call: on another stream while the group's last operation
 * runs, each is refused before it changes anything; once that operation is done, accepted. */
static void test_mask_calls_follow_the_stream_rule(void **state)
{
    (void)state;
    fixture_t f;
    void *h;
    uint32_t index;
    const int32_t mask[R] = {1, 1, 0, 0};
    const uint8_t none[R] = {0, 0, 0, 0};
    ncclxTensor_t out = {(void *)(uintptr_t)0x10000, NCCLX_INT32, 1, {R, 0, 0, 0}};
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    f.group.op_done = (struct CUevent_st *)&f; /* any non-NULL event: the wraps answer */
    f.group.last_stream = STREAM_A;
    assert_ncclx_ok(ncclx_pool_acquire(&f.group.handles, &h, &index));
    ((ncclx_ep_handle_t *)h)->dispatched = 1;
    f.masked_by_update[3] = 1;
    event_state = cudaErrorNotReady;
    assert_ncclx_error(ncclxEpMaskQuery(&f.group, &out, STREAM_B), ncclxInvalidUsage,
                       "ncclxEpMaskQuery: stream 0x2000 differs from the stream 0x1000");
    assert_ncclx_error(ncclxEpMaskUpdate(&f.group, mask, R, STREAM_B), ncclxInvalidUsage,
                       "ncclxEpMaskUpdate: stream 0x2000 differs");
    assert_ncclx_error(ncclxEpMaskClean(&f.group, STREAM_B), ncclxInvalidUsage,
                       "ncclxEpMaskClean: stream 0x2000 differs");
    assert_int_equal(launches[QUERY] + launches[UPDATE] + launches[CLEAN], 0);
    assert_int_equal(((ncclx_ep_handle_t *)h)->dispatched, 1);
    assert_int_equal(f.masked_by_update[2], 0);
    assert_int_equal(f.masked_by_update[3], 1);
    assert_ptr_equal(f.group.last_stream, STREAM_A);

    event_state = cudaSuccess;
    assert_ncclx_ok(ncclxEpMaskClean(&f.group, STREAM_B));
    assert_int_equal(((ncclx_ep_handle_t *)h)->dispatched, 0);
    assert_memory_equal(f.masked_by_update, none, R);
    assert_ptr_equal(f.group.last_stream, STREAM_B);
    assert_int_equal(records, 1);
}

static void test_timeout_without_mask_fails_next_call(void **state)
{
    (void)state;
    fixture_t f;
    make_fixture(&f, NCCLX_EP_ALGO_LL, 0);
    assert_ncclx_ok(ncclx_ep_async_check(&f.group, "ncclxEpDispatch"));
    f.status = NCCLX_EP_ERROR_BAD_EXPERT; /* reported, but the group still works */
    assert_ncclx_ok(ncclx_ep_async_check(&f.group, "ncclxEpDispatch"));
    f.status = NCCLX_EP_ERROR_TIMEOUT | NCCLX_EP_ERROR_BAD_EXPERT;
    assert_ncclx_error(ncclx_ep_async_check(&f.group, "ncclxEpCombine"), ncclxTimeout,
                       "ncclxEpCombine: a GPU wait of an earlier operation in EP group 2 timed "
                       "out (asynchronous error 0x3)");
    f.status = 0; /* what ncclxEpClearAsyncError leaves */
    assert_ncclx_ok(ncclx_ep_async_check(&f.group, "ncclxEpCombine"));

    /* With a mask the group carries on without the late rank. */
    make_fixture(&f, NCCLX_EP_ALGO_LL, 1);
    f.status = NCCLX_EP_ERROR_TIMEOUT;
    assert_ncclx_ok(ncclx_ep_async_check(&f.group, "ncclxEpDispatch"));
}

/* The combine send progress word of rank r (kernels/ep_ll/ep_ll_wire.h) sits in r's own evicted
 * words [R], never on r's evicted flag (index r, written by evicting peers), for every team
 * size that can evict (R >= 2); a busy word is never the idle value, whatever the tag. */
static void test_progress_word_placement(void **state)
{
    (void)state;
    const uint32_t sizes[] = {2, 3, 4, 7, 64, NCCLX_EP_MAX_LL_RANKS};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        const uint32_t ranks = sizes[i];
        for (uint32_t r = 0; r < ranks; r++) {
            const uint32_t at = ncclx_ep_progress_index(r, ranks);
            if (at >= ranks || at == r) {
                fail_msg("R = %u: rank %u's progress word at index %u (own flag %u)", ranks, r, at,
                         r);
            }
        }
    }
    const uint64_t seqs[] = {
        0, 1, 2, 0xfffffffeull, 0xffffffffull, 0x100000000ull, UINT64_MAX - 1, UINT64_MAX};
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        const uint32_t busy = ncclx_ep_progress_busy(ncclx_ep_seq_tag(seqs[i]));
        if (busy == NCCLX_EP_PROGRESS_IDLE) {
            fail_msg("sequence %llu: a busy progress word reads idle", (unsigned long long)seqs[i]);
        }
        assert_int_equal(busy, ncclx_ep_seq_tag(seqs[i]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_ll_groups_with_a_mask),
        cmocka_unit_test(test_query_tensor_checked),
        cmocka_unit_test(test_update_values_checked),
        cmocka_unit_test(test_update_never_reactivates),
        cmocka_unit_test(test_changes_need_a_quiet_group_and_void_dispatches),
        cmocka_unit_test(test_calls_reach_the_launch),
        cmocka_unit_test(test_failed_update_launch),
        cmocka_unit_test(test_mask_calls_follow_the_stream_rule),
        cmocka_unit_test(test_timeout_without_mask_fails_next_call),
        cmocka_unit_test(test_progress_word_placement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
