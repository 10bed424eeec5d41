#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/profile_ll.sh without a GPU: a stand-in ncu that logs its calls, writes a report for
# -o and canned source and details pages for -i.  Checks that the bench runs under the profiler
# with one warm-up and one timed eager iteration and the given options (a default without),
# that the kernels' durations and their phases (tools/ncu_phases.py) are summarized, that
# --dry-run runs nothing, and that a failing profiler, a missing build and bad arguments fail.
set -u
script="$top_srcdir/tools/profile_ll.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }
command -v bash >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 ||
    { echo "SKIP: no bash or python3"; exit 77; }

mkdir -p "$tmp/build/tools"
printf '#!/bin/sh\necho bench "$@"\n' >"$tmp/build/tools/ncclx-bench"
chmod +x "$tmp/build/tools/ncclx-bench"
cat >"$tmp/ncu" <<'STUB'
#!/bin/sh
echo "ncu $*" >>"$CALLS"
[ -n "${NCU_FAILS:-}" ] && exit 5
case " $* " in
*" -o "*)
    out=$(echo "$*" | sed 's/.* -o \([^ ]*\) .*/\1/')
    : >"$out.ncu-rep"
    # the program after the profiler's options
    prog=$(echo "$*" | sed 's/.* -o [^ ]* //')
    $prog
    ;;
*"--page source"*)
    echo '"Kernel Name","void ncclx::<unnamed>::dispatch_send_kernel<(bool)0, (bool)1>(ncclx_ep_ll_group_desc_t)",'
    echo '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_long_sb"'
    echo '"0x7f0000001000","      LDG.E.STRONG.SYS R2, desc[UR4][R4.64]","25","16","0","25"'
    echo '"0x7f0000001010","      BAR.SYNC.DEFER_BLOCKING 0x0","0","16","0","0"'
    echo '"0x7f0000001020","      EXIT","75","16","75","0"'
    ;;
*"--page details"*)
    echo '  void ncclx::<unnamed>::dispatch_send_kernel<0, 1>(ncclx_ep_ll_group_desc_t, ncclx_ep_ll_handle_desc_t, ncclx_ep_ll_dispatch_desc_t) (1, 1, 1)x(512, 1, 1), Context 1, Stream 19, Device 0, CC 9.0'
    echo '    Section: GPU Speed Of Light Throughput'
    echo '    Duration                         us        15.42'
    ;;
esac
STUB
chmod +x "$tmp/ncu"
export NCU="$tmp/ncu" CALLS="$tmp/calls"

out=$(bash "$script" "$tmp/build" "$tmp/logs" -- --comm --tokens 8) || no "a profile failed"
grep -q 'bench --no-gate --warmup 1 --iters 1 --comm --tokens 8$' "$tmp/logs/bench.log" ||
    no "the bench did not run with one warm-up and one eager iteration and the given options"
grep -q -- "--warp-sampling-interval 0" "$tmp/calls" || no "ncu was not asked for dense sampling"
grep -q "regex:dispatch_|combine_" "$tmp/calls" || no "the default kernels are not the LL ones"
grep -q 'dispatch_send_kernel<0, 1> (1, 1, 1)x(512, 1, 1): 15.42 us' "$tmp/logs/durations.txt" ||
    no "durations.txt lacks the send's 15.42 us"
# The phase of the load, with the 75 barrier samples of the wait that ends it: 100%.
grep -Eq '^ +0 01000-01010 +100 100\.0%' "$tmp/logs/phases.txt" || no "phases.txt is not the tool's"
echo "$out" | grep -q '15.42 us' || no "the summary was not printed"

: >"$tmp/calls"
bash "$script" "$tmp/build" "$tmp/logs2" --kernels 'combine_recv' >/dev/null || no "--kernels failed"
grep -q "regex:combine_recv" "$tmp/calls" || no "--kernels did not reach ncu"
grep -q 'bench --no-gate --warmup 1 --iters 1 --comm --tokens 1 --zero-copy$' "$tmp/logs2/bench.log" ||
    no "without BENCH_ARGS the default is not the one-rank, one-token zero-copy row"

: >"$tmp/calls"
out=$(bash "$script" "$tmp/build" "$tmp/logs3" --dry-run) || no "--dry-run failed"
[ -s "$tmp/calls" ] && no "--dry-run ran ncu"
[ "$(echo "$out" | grep -c '^+ ')" = 3 ] || no "--dry-run did not print the three ncu commands"

NCU_FAILS=1 bash "$script" "$tmp/build" "$tmp/logs4" >/dev/null 2>&1
[ $? -eq 1 ] || no "a failing ncu did not exit 1"
bash "$script" "$tmp/nothing" "$tmp/logs5" >/dev/null 2>&1
[ $? -eq 2 ] || no "a missing build did not exit 2"
bash "$script" "$tmp/build" >/dev/null 2>&1
[ $? -eq 2 ] || no "a missing LOG_DIR did not exit 2"
bash "$script" "$tmp/build" "$tmp/logs6" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || no "an unknown option did not exit 2"

[ $fail -eq 0 ] && echo "PASS: profile_ll.sh" || echo "$fail failure(s)"
[ $fail -eq 0 ]
