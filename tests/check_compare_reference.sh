#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/compare_reference.sh without a GPU: stand-ins for mpirun, the reference's programs and
# ncclx-bench check that it runs both sides on the documented shapes, one rank each, writes
# the summary from their output, tolerates only the M2N refusal, and refuses bad arguments.
set -u
script="$top_srcdir/tools/compare_reference.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }

mkdir -p "$tmp/ref/test/nccl_ep" "$tmp/ref/bin" "$tmp/build/tools"
echo 'export PATH="$(dirname "${BASH_SOURCE[0]}")/test/nccl_ep:$(dirname "${BASH_SOURCE[0]}")/bin:$PATH"' \
    >"$tmp/ref/env.sh"
# mpirun: drop the options up to -n N, log the command, run it.
cat >"$tmp/mpirun" <<'STUB'
#!/bin/sh
while [ $# -gt 0 ] && [ "$1" != -n ]; do shift; done
ranks=$2; shift 2
echo "ranks=$ranks $*" >>"$CALLS"
exec "$@"
STUB
cat >"$tmp/ref/test/nccl_ep/ep_bench" <<'STUB'
#!/bin/sh
echo "Dispatch (BF16):  avg=42.10 us, min=39.58 us, max=58.08 us"
echo "Combine (BF16):   avg=29.66 us, min=27.23 us, max=40.42 us"
case "$*" in *--validate*) echo "Global validation: Dispatch=PASSED, Combine=PASSED" ;; esac
STUB
cat >"$tmp/ref/bin/reshard_bench" <<'STUB'
#!/bin/sh
echo "Failed, NCCL error reshard_bench.cc:235 'invalid usage'"
exit 1
STUB
cat >"$tmp/build/tools/ncclx-bench" <<'STUB'
#!/bin/sh
[ -n "${BENCH_FAILS:-}" ] && exit 3
echo "     128      14680064     39.79     38.94     41.41   368.92   18.3  12.6      14680064     36.21     34.14     38.24   405.44   20.1  31.3        0"
STUB
# python: stands in for PyTorch's baseline (a row with its own byte count), logs its call.
cat >"$tmp/python" <<'STUB'
#!/bin/sh
echo "python $*" >>"$CALLS"
[ -n "${TORCH_FAILS:-}" ] && echo "ModuleNotFoundError: No module named 'torch'" && exit 1
echo "     128      99999999     16.50     16.10     17.00   889.00   60.0  60.0      99999999     73.10     72.00     75.00   200.00   14.0  20.0        0"
STUB
chmod +x "$tmp/mpirun" "$tmp/ref/test/nccl_ep/ep_bench" "$tmp/ref/bin/reshard_bench" \
    "$tmp/build/tools/ncclx-bench" "$tmp/python"
export MPIRUN="$tmp/mpirun" CALLS="$tmp/calls" PYTHON="$tmp/python"

if ! bash "$script" "$tmp/ref" "$tmp/build" "$tmp/logs" >"$tmp/out" 2>&1; then
    no "a run with every program working failed: $(cat "$tmp/out")"
fi
n=$(grep -c 'ep_bench' "$tmp/calls" 2>/dev/null || echo 0)
[ "$n" -eq 5 ] || no "expected 5 reference ep_bench runs, saw $n"
grep -q 'ranks=1 ep_bench -a ll -t 128 -d 7168 -k 8 -e 256 -w 20 -i 200' "$tmp/calls" ||
    no "the reference's LL default row is not the documented command"
grep -q 'ranks=1 ep_bench -a ht -t 4096 -d 7168 -k 8 -e 256 -w 10 -i 50' "$tmp/calls" ||
    no "the reference's HT row is not the documented command"
grep -q 'ranks=2 reshard_bench' "$tmp/calls" || no "the reference's M2N was not tried"
m=$(grep -c 'ranks=1 .*ncclx-bench .*--comm' "$tmp/calls" 2>/dev/null || echo 0)
[ "$m" -eq 7 ] || no "expected 7 ncclx-bench --comm runs on one rank, saw $m"
[ "$(grep -c 'ncclx-bench --comm --zero-copy .*--check --graph' "$tmp/calls")" -eq 2 ] ||
    no "our two zero-copy LL rows (128 tokens and 1) are not checked graph runs"
grep -q 'ncclx-bench --algo ht --comm --check' "$tmp/calls" || no "our HT row is not checked"
grep -q 'Dispatch (BF16):  avg=42.10' "$tmp/logs/summary.txt" 2>/dev/null ||
    no "the summary lacks the reference's times"
grep -q 'Global validation: Dispatch=PASSED' "$tmp/logs/summary.txt" 2>/dev/null ||
    no "the summary lacks the reference's validation"
grep -q "ref_m2n: Failed, NCCL error" "$tmp/logs/summary.txt" 2>/dev/null ||
    no "the summary does not say why the reference's M2N did not run"
[ "$(grep -c '14680064' "$tmp/logs/summary.txt" 2>/dev/null || echo 0)" -eq 7 ] ||
    no "the summary lacks our seven rows"

t=$(grep -c '^python .*torch_baseline.py --graph' "$tmp/calls" 2>/dev/null || echo 0)
[ "$t" -eq 2 ] || no "expected 2 PyTorch baseline runs with --graph, saw $t"
grep -q '^python .*torch_baseline.py --graph --tokens 1' "$tmp/calls" ||
    no "PyTorch's 1-token row was not run"
[ "$(grep -c '99999999' "$tmp/logs/summary.txt" 2>/dev/null || echo 0)" -eq 2 ] ||
    no "the summary lacks PyTorch's two rows"

# A machine without torch: logged, and the script goes on.
rm -f "$tmp/calls"
if ! TORCH_FAILS=1 bash "$script" "$tmp/ref" "$tmp/build" "$tmp/logs" >"$tmp/out" 2>&1; then
    no "a missing torch failed the script: $(cat "$tmp/out")"
fi
grep -q "No module named 'torch'" "$tmp/logs/torch_ll.log" 2>/dev/null ||
    no "the missing torch is not in torch_ll.log"

# One of our runs failing fails the script.
rm -f "$tmp/calls"
if BENCH_FAILS=1 bash "$script" "$tmp/ref" "$tmp/build" "$tmp/logs" >"$tmp/out" 2>&1; then
    no "a failing ncclx-bench did not fail the script"
fi
# --dry-run runs nothing.
rm -f "$tmp/calls"
bash "$script" "$tmp/ref" "$tmp/build" "$tmp/dry" --dry-run >"$tmp/out" 2>&1 ||
    no "--dry-run failed: $(cat "$tmp/out")"
[ ! -e "$tmp/calls" ] || no "--dry-run ran programs"
grep -q '^+ .*ep_bench -a ht' "$tmp/out" || no "--dry-run did not print the commands"
# --help prints the whole header, up to its last sentence.
bash "$script" --help 2>&1 | tail -1 | grep -q 'ones excepted).$' ||
    no "--help stops before the end of the header"
# Bad arguments are refused with exit 2 and a reason.
bash "$script" "$tmp/build" "$tmp/build" "$tmp/logs" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q 'no env.sh' "$tmp/out" || no "a REF_DIR without env.sh: exit $rc, $(cat "$tmp/out")"
bash "$script" "$tmp/ref" >"$tmp/out" 2>&1
[ $? -eq 2 ] || no "missing arguments were not refused"

[ "$fail" -eq 0 ] && echo "ok: compare_reference.sh" && exit 0
exit 1
