/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * What an LL operation enqueues: one rank's dispatch or combine captured into a CUDA graph, its
 * kernel nodes and its programmatic edges (a kernel launched before the one ahead of it ended,
 * docs/ep-ll.md "Early receive launch"), the graphs replayed and checked; and whether a group
 * must launch early at all.
 */
#include "gpu/ep_ll_launches.h"

#include "ep_group.h"

/* Whether rank r's group launches kernels early (docs/ep-ll.md, "Early receive launch"),
 * after checking that the group decided as it must: on a rank alone on a GPU of compute
 * capability 9.0 or later, with CUDA 12.3 or later (build, runtime, driver) and kernels built
 * with their wait, and never on a loopback team of several ranks. */
int ep_launches_early(const ep_team_t *t, uint32_t r)
{
    int device = 0, major = 0, runtime = 0, driver = 0;
    assert_cuda_ok(cudaGetDevice(&device));
    assert_cuda_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    assert_cuda_ok(cudaRuntimeGetVersion(&runtime));
    assert_cuda_ok(cudaDriverGetVersion(&driver));
    const int want = t->ranks == 1 && major >= 9 && runtime >= 12030 && driver >= 12030 &&
                     CUDART_VERSION >= 12030 && ncclx_ep_ll_early_launch_built();
    const ncclx_ep_group_t *g = (const ncclx_ep_group_t *)t->group[r];
    assert_int_equal(g->desc.early_launch, want);
    return want && CUDART_VERSION >= 12030;
}

/* The edges of graph that let a kernel start before the one ahead of it ended (edge types came
 * with CUDA 12.3, which the library needs for its early launches; before, there are none). */
static size_t programmatic_edges(cudaGraph_t graph)
{
    size_t count = 0;
#if CUDART_VERSION >= 12030
    cudaGraphNode_t from[32], to[32];
    cudaGraphEdgeData edges[32];
    size_t num_edges = 0;
#if CUDART_VERSION >= 13000
#define EP_GRAPH_GET_EDGES cudaGraphGetEdges
#else
#define EP_GRAPH_GET_EDGES cudaGraphGetEdges_v2
#endif
    assert_cuda_ok(EP_GRAPH_GET_EDGES(graph, NULL, NULL, NULL, &num_edges));
    assert_in_range(num_edges, 0, sizeof(edges) / sizeof(edges[0]));
    if (num_edges > 0) { /* a graph of one kernel has none, and 0 with arrays is refused */
        assert_cuda_ok(EP_GRAPH_GET_EDGES(graph, from, to, edges, &num_edges));
    }
#undef EP_GRAPH_GET_EDGES
    for (size_t i = 0; i < num_edges; i++) {
        count += edges[i].type == cudaGraphDependencyTypeProgrammatic;
    }
#else
    (void)graph;
#endif
    return count;
}

/* Captures rank r's dispatch, or its combine (with send_only, the send and ncclxEpComplete),
 * and returns the graph's kernel nodes; *early gets its programmatic edges (a kernel launched
 * before the one ahead of it ended: the receive's early_recv). */
size_t ep_capture_op(ep_run_t *run, uint32_t r, int combine, uint32_t send_only,
                     cudaGraphExec_t *exec, size_t *early)
{
    const ep_team_t *t = run->team;
    cudaGraph_t graph = NULL;
    cudaGraphNode_t nodes[32];
    size_t n = 0, kernels = 0;
    assert_cuda_ok(cudaStreamBeginCapture(t->stream[r], cudaStreamCaptureModeThreadLocal));
    if (combine) {
        ncclxEpCombineArgs_t ca = ep_combine_args(run, r, send_only);
        assert_ncclx_ok(ncclxEpCombine(run->handle[r], &ca, t->stream[r]));
    } else {
        ncclxEpDispatchArgs_t da = ep_dispatch_args(run, r, send_only);
        assert_ncclx_ok(ncclxEpDispatch(run->handle[r], &da, t->stream[r]));
    }
    if (send_only) {
        assert_ncclx_ok(ncclxEpComplete(run->handle[r], t->stream[r]));
    }
    assert_cuda_ok(cudaStreamEndCapture(t->stream[r], &graph));
    assert_cuda_ok(cudaGraphGetNodes(graph, NULL, &n));
    assert_in_range(n, 1, sizeof(nodes) / sizeof(nodes[0]));
    assert_cuda_ok(cudaGraphGetNodes(graph, nodes, &n));
    for (size_t i = 0; i < n; i++) {
        enum cudaGraphNodeType type;
        assert_cuda_ok(cudaGraphNodeGetType(nodes[i], &type));
        kernels += type == cudaGraphNodeTypeKernel;
    }
    *early = programmatic_edges(graph);
    assert_cuda_ok(cudaGraphInstantiate(exec, graph, 0));
    assert_cuda_ok(cudaGraphDestroy(graph));
    return kernels;
}

/* Replays every rank's captured dispatch (or combine) three times, outputs poisoned before each
 * replay and checked after it, then destroys the graphs. */
void ep_replay_and_check(ep_run_t *run, cudaGraphExec_t *exec, int combine)
{
    const ep_team_t *t = run->team;
    for (int replay = 0; replay < 3; replay++) {
        if (combine) {
            ep_run_poison_combine(run);
        } else {
            ep_run_poison_dispatch(run);
        }
        for (uint32_t r = 0; r < t->ranks; r++) {
            assert_cuda_ok(cudaGraphLaunch(exec[r], t->stream[r]));
        }
        ep_team_sync(t);
        if (combine) {
            ep_run_check_combine(run);
        } else {
            ep_run_check_dispatch(run);
        }
    }
    for (uint32_t r = 0; r < t->ranks; r++) {
        assert_cuda_ok(cudaGraphExecDestroy(exec[r]));
    }
}

void ep_check_dispatch_launches(ep_run_t *run, const size_t kernels[2][2], const size_t early[2])
{
    const ep_team_t *t = run->team;
    cudaGraphExec_t exec[EP_MAX_RANKS];
    for (uint32_t send_only = 0; send_only < 2; send_only++) {
        for (uint32_t r = 0; r < t->ranks; r++) {
            const int alone = ep_launches_early(t, r);
            size_t edges = 0;
            assert_int_equal(ep_capture_op(run, r, 0, send_only, &exec[r], &edges),
                             kernels[alone][send_only]);
            assert_int_equal(edges, alone ? early[send_only] : 0);
        }
        ep_replay_and_check(run, exec, 0);
    }
}
