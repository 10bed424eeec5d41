#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Usage: tests/gpu/run_multi_gpu.sh BUILD_DIR LOG_DIR [NUM_GPUS]
# On a machine with several GPUs (after run_gpu_suite.sh built BUILD_DIR): one process per GPU
# under mpirun (real PMIx bootstrap, placement, NCCL symmetric windows over NVLink):
#   - the GPU interconnect (nvidia-smi topo -m) and each rank's placement (ncclx-info);
#   - ncclx-bench, DeepSeek-V3 decode (hidden 7168, top-8, 256 experts, 128 tokens/rank),
#     BF16 and FP8, checked, eager and graph, with the roofline a cudaMemcpyPeerAsync of the
#     same bytes to the next GPU; a sweep of tokens per rank 1..256; the same on a zero-copy
#     group (its boards exchanged in the send, its pulled combine one kernel: the only runs
#     that take those paths with more than one rank);
#   - the same shapes on a loopback team of NUM_GPUS ranks on GPU 0, for comparison.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0) in every process started here.
set -uo pipefail
build=$(cd "$1" && pwd)
log_dir=$2
mkdir -p "$log_dir"
n=${3:-$(nvidia-smi -L | wc -l)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS=32
status=0
launch() {
    timeout 600 mpirun --allow-run-as-root --oversubscribe -n "$n" --bind-to none \
        -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH -x CUDA_DEVICE_MAX_CONNECTIONS "$@" </dev/null
}
nvidia-smi topo -m >"$log_dir/topo.txt" 2>&1
launch "$build/tools/ncclx-info" >"$log_dir/ncclx-info.txt" 2>&1 || status=1
bench="$build/tools/ncclx-bench --check --peer-copy"
while read -r name args; do
    echo "== $name: mpirun -n $n ncclx-bench --check --peer-copy $args"
    if launch $bench $args >"$log_dir/bench-$name.txt" 2>&1; then
        grep -v '^#' "$log_dir/bench-$name.txt"
    else
        echo "failed (see bench-$name.txt)"
        status=1
    fi
done <<'EOF_RUNS'
bf16
bf16-graph --graph
fp8 --recipe fp8
fp8-graph --recipe fp8 --graph
bf16-sweep --sweep --graph
fp8-sweep --sweep --graph --recipe fp8
bf16-mask --graph --mask
bf16-zc --zero-copy
bf16-zc-graph --zero-copy --graph
fp8-zc --recipe fp8 --zero-copy
bf16-zc-sweep --zero-copy --sweep --graph
bf16-rank --layout rank --graph
bf16-rank-zc --layout rank --zero-copy --graph
EOF_RUNS
for args in "--graph" "--graph --recipe fp8" "--graph --sweep"; do
    echo "== loopback team of $n on GPU 0: ncclx-bench --check $args"
    "$build/tools/ncclx-bench" --check --loopback "$n" $args 2>&1 | grep -v '^#' || status=1
done
exit $status
