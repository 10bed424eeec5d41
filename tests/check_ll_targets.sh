#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/ll_targets.py without a GPU: a stand-in build whose ncclx-bench and ncclx-plan print
# known rows, and a stand-in PyTorch baseline.  Checks that every row runs with its own CSV,
# that each target is judged from the right rows (met by the path that meets it, missed with
# the numbers, the mask's change, ratios against PyTorch, the worst small batch, the memory
# share), that PyTorch rows timed without the gate are not compared, that `report` judges a
# finished run's CSVs again, and that wrong elements, a failed run and a missing build fail.
set -u
script="$top_srcdir/tools/ll_targets.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }

mkdir -p "$tmp/build/tools"
# The bench: one dispatch and one combine row per token count, times and percentages by path.
cat >"$tmp/build/tools/ncclx-bench" <<'STUB'
#!/usr/bin/env python3
import os, sys
a = sys.argv[1:]
open(os.environ["CALLS"], "a").write("bench " + " ".join(a) + "\n")
csv = a[a.index("--csv") + 1]
tokens = int(a[a.index("--tokens") + 1]) if "--tokens" in a else 128
zc, one = "--zero-copy" in a, "--comm" in a
# (dispatch us, roof, hbm, combine us, roof, hbm)
if one:
    v = (13.3, 20, 30, 13.6, 50, 40) if zc else (24.9, 12, 14, 34.0, 20, 33)
    if tokens == 1:
        v = (9.2, 1, 1, 10.4, 1, 1) if zc else (17.7, 1, 1, 18.4, 1, 1)
elif "rank" in a:
    v = (80, 90, 50, 85, 98, 52) if zc else (110, 55, 56, 112, 52, 55)
elif "fp8" in a:
    v = (100, 46, 40, 170, 45, 70) if zc else (120, 30, 34, 170, 45, 70)
elif "--mask" in a:
    v = (150, 50, 60, 190, 40, 62)
else:
    v = (110, 75, 42, 95, 88, 48) if zc else (150, 50, 60, 170, 45, 70)
counts = [1, 2, 4, 8] if "--sweep" in a else [tokens]
wrong = "3" if os.environ.get("WRONG_ROW") and os.environ["WRONG_ROW"] in " ".join(a) else "0"
new = not os.path.exists(csv)
with open(csv, "a") as f:
    if new:
        f.write("tool,label,tokens,op,path,med_us,pct_roof,pct_hbm,wrong\n")
    for t in counts:
        small = (45 if zc else 52) + t  # the small batches' floor
        d, c = (small, small - 10) if "--sweep" in a else (v[0], v[3])
        f.write(f'ncclx-bench,"loopback 8",{t},dispatch,p,{d},{v[1]},{v[2]},{wrong}\n')
        f.write(f'ncclx-bench,"loopback 8",{t},combine,p,{c},{v[4]},{v[5]},{wrong}\n')
print("# source: git abc sources 0123")
print("# GPU 0: Stand-in GPU, 132 SMs, 80.0 GiB")
sys.exit(3 if os.environ.get("FAIL_ROW") and os.environ["FAIL_ROW"] in " ".join(a) else 0)
STUB
cat >"$tmp/build/tools/ncclx-plan" <<'STUB'
#!/bin/sh
echo "# libncclx plan: (MiB per rank)"
echo " ranks  nodes    lsa    symmetric       device  mapped_host         host   per_handle   nccl_ep_ll  nccl_ep_ht_gin"
echo "     8      1      8        56.16         0.19       0.0001       0.0035       0.0481       938.44               -"
STUB
cat >"$tmp/torch.py" <<'STUB'
import os, sys
a = sys.argv[1:]
open(os.environ["CALLS"], "a").write("torch " + " ".join(a) + " ld=" + os.environ.get("LD_LIBRARY_PATH", "") + "\n")
csv = a[a.index("--csv") + 1]
tokens = int(a[a.index("--tokens") + 1]) if "--tokens" in a else 128
label = '"PyTorch on one GPU (baseline' + (", no gate" if os.environ.get("TORCH_NO_GATE") else "") + ')"'
d, c = (10.0, 70.0) if tokens == 128 else (3.0, 8.0)
with open(csv, "a") as f:
    f.write("tool,label,tokens,op,path,med_us,pct_roof,pct_hbm,wrong\n")
    f.write(f'torch_baseline,{label},{tokens},dispatch,t,{d},1,1,0\n')
    f.write(f'torch_baseline,{label},{tokens},combine,t,{c},1,1,0\n')
STUB
chmod +x "$tmp/build/tools/ncclx-bench" "$tmp/build/tools/ncclx-plan"
export CALLS="$tmp/calls" LD_LIBRARY_PATH=/some/nccl

run() { python3 "$script" run "$tmp/build" "$tmp/logs" --torch-script "$tmp/torch.py" "$@" >"$tmp/out" 2>&1; }

run || no "a run whose rows all worked failed: $(cat "$tmp/out")"
n=$(grep -c '^bench ' "$tmp/calls")
[ "$n" -eq 13 ] || no "expected 13 bench rows, saw $n"
grep -q "^bench --comm --graph --check --tokens 1 --zero-copy --csv $tmp/logs/one-zc-t1.csv\$" \
    "$tmp/calls" || no "the one-rank 1-token zero-copy row did not run with its CSV: $(cat "$tmp/calls")"
grep -q "^torch --graph --tokens 1 --csv $tmp/logs/torch-t1.csv ld=\$" "$tmp/calls" ||
    no "PyTorch's 1-token row did not run, or kept LD_LIBRARY_PATH: $(grep torch "$tmp/calls")"
t="$tmp/logs/targets.txt"
[ -f "$t" ] || no "no targets.txt"
want() { grep -Eq "$1" "$t" || no "$2: $(cat "$t")"; }
want '^loopback 8 expert-major dispatch >= 65% of the copy roofline +met \(zero copy\) +two-pass 50\.0%; zero copy 75\.0%$' \
    "the dispatch roofline target is not met by zero copy alone"
want '^loopback 8 expert-major combine >= 80% of %hbm +missed +two-pass 70\.0%; zero copy 48\.0%$' \
    "the combine %hbm target is not missed with both numbers"
want '^loopback 8 rank-major combine >= 70% of the copy roofline +met \(zero copy\)' \
    "the rank-major combine is not judged from the rank-major rows"
want '^loopback 8 FP8 dispatch >= 45% of the copy roofline +met \(zero copy\) +two-pass 30\.0%; zero copy 46\.0%$' \
    "the FP8 dispatch is not judged from the FP8 rows"
want '^loopback 8 dispatch with an active mask .* +met \(two-pass\) +two-pass 0\.0%$' \
    "the masked dispatch (no slower) is not met"
want '^loopback 8 combine with an active mask .* +missed +two-pass 11\.8%$' \
    "the masked combine (+11.8%) is not missed"
want '^one rank, 128 tokens: dispatch no slower than index_select \(10\.00 us\): ours / index_select <= 1 +missed +two-pass 2\.5x; zero copy 1\.3x$' \
    "the one-rank dispatch is not compared with index_select"
want '^one rank, 1 token: dispatch no slower than index_select \(3\.00 us\).* +missed +two-pass 5\.9x; zero copy 3\.1x$' \
    "the 1-token dispatch is not compared with PyTorch's 1-token row"
want '^one rank: combine >= 2\.5x faster than index_add_ \(70\.00 us\): index_add_ / ours +met \(zero copy\) +two-pass 2\.1x; zero copy 5\.1x$' \
    "the one-rank combine ratio is wrong"
want '^loopback 8, 1 to 8 tokens: every dispatch <= 20 us .* +missed +two-pass 60\.0 us; zero copy 53\.0 us$' \
    "the small batches are not judged by their slowest row"
want '^symmetric memory per rank .* +met \(default plan\) +default plan 6\.0%$' \
    "the memory share is not the plan's 56.16 of 938.44 MiB"
want '^# GPU: Stand-in GPU' "the GPU is not named"
cp "$t" "$tmp/first.txt"
python3 "$script" report "$tmp/logs" >/dev/null 2>&1 || no "report of a good run failed"
cmp -s "$t" "$tmp/first.txt" || no "report does not judge the same rows the same way"

# PyTorch timed without the gate is not a yardstick for ours.
rm -f "$tmp/calls"
TORCH_NO_GATE=1 run
want '^one rank, 128 tokens: dispatch no slower than index_select +not comparable' \
    "an ungated PyTorch row was compared"

# Wrong elements, a failed row and a missing build fail the run.
WRONG_ROW="--layout rank --zero-copy" run && no "a row with wrong elements passed"
grep -q "loop8-rank-zc dispatch 128 tokens: 3 wrong elements" "$tmp/out" ||
    no "the wrong row is not named: $(cat "$tmp/out")"
FAIL_ROW="--mask" run && no "a failed row passed"
grep -q "loop8-mask: .*FAILED (exit 3)" "$tmp/out" || no "the failed row is not named: $(cat "$tmp/out")"
python3 "$script" run "$tmp/nobuild" "$tmp/logs2" >"$tmp/out" 2>&1 && no "a missing build passed"
grep -q "build libncclx there first" "$tmp/out" || no "a missing build is not explained"

[ "$fail" -eq 0 ] && echo "check_ll_targets: all checks passed"
exit "$fail"
