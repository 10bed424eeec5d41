#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# tools/bench_ab.sh without a GPU: two stand-in builds whose ncclx-bench writes known rows
# check that every row runs on both builds, alternating, the given number of rounds; that the
# summary pairs each (row, operation, tokens), averages the rounds, gives their spread and flags
# a slower new row ("noise?" when the rounds' ranges overlap); that it names each build's source
# (from its own rows' logs) and calls two builds of the same code an A/A run; that --report
# writes the same summary again from the CSVs alone; and that a failed run, a row with wrong
# elements and bad arguments fail the script.
set -u
script="$top_srcdir/tools/bench_ab.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=$((fail + 1)); }

# The stand-in: logs its call, then appends to --csv one dispatch and one combine row per token
# count (two with --sweep); times from BASE_US / NEW_US (by the build it is in), the new
# combine from NEW_COMBINE_US; with BASE_ROUNDS_US="a b c", the base build's round k takes the
# k-th time instead; WRONG elements on the new build; FAILS makes it fail.
for side in base new; do
    mkdir -p "$tmp/$side/tools"
    cat >"$tmp/$side/tools/ncclx-bench" <<STUB
#!/bin/sh
side=$side
STUB
    cat >>"$tmp/$side/tools/ncclx-bench" <<'STUB'
echo "$side $*" >>"$CALLS"
[ "${FAILS:-}" = "$side" ] && exit 3
csv="" tokens=128 sweep=0
while [ $# -gt 0 ]; do
    case "$1" in
        --csv) csv=$2; shift ;;
        --tokens) tokens=$2; shift ;;
        --sweep) sweep=1 ;;
    esac
    shift
done
[ -s "$csv" ] || echo "tool,label,tokens,op,med_us,wrong" >"$csv"
if [ "$side" = base ]; then d=$BASE_US c=$BASE_US w=0; else d=$NEW_US c=${NEW_COMBINE_US:-$NEW_US} w=${WRONG:-0}; fi
if [ "$side" = base ] && [ -n "${BASE_ROUNDS_US:-}" ]; then
    k=$(grep -c "^base .*--csv $csv\$" "$CALLS")
    d=$(echo "$BASE_ROUNDS_US" | cut -d' ' -f"$k") c=$d
fi
list=$tokens
[ "$sweep" = 1 ] && list="1 $tokens"
for t in $list; do
    echo "ncclx-bench,\"loopback 8, one GPU\",$t,dispatch,$d,$w" >>"$csv"
    echo "ncclx-bench,\"loopback 8, one GPU\",$t,combine,$c,$w" >>"$csv"
done
if [ "$side" = base ]; then src=${SOURCE_BASE:-}; else src=${SOURCE_NEW:-}; fi
[ -n "$src" ] && echo "# source: $src"
echo "a table"
STUB
    chmod +x "$tmp/$side/tools/ncclx-bench"
done
printf '# two rows\n--graph --check\n\n--graph --sweep --tokens 16   # the sweep\n' >"$tmp/rows"
export CALLS="$tmp/calls" BASE_US=100.00 NEW_US=90.00 NEW_COMBINE_US=105.00

run() { bash "$script" "$tmp/base" "$tmp/new" "$tmp/logs" "$@" >"$tmp/out" 2>&1; }

if ! run --rows "$tmp/rows" --rounds 3; then
    no "a run with both builds working failed: $(cat "$tmp/out")"
fi
n=$(grep -c . "$tmp/calls")
[ "$n" -eq 12 ] || no "expected 2 rows x 3 rounds x 2 builds = 12 runs, saw $n"
# Alternating: base, new, base, new, ... for each row.
order=$(cut -d' ' -f1 "$tmp/calls" | tr '\n' ' ')
[ "$order" = "base new base new base new base new base new base new " ] ||
    no "runs do not alternate base and new: $order"
grep -q "^new --graph --sweep --tokens 16 --csv $tmp/logs/graph_sweep_tokens_16.new.csv\$" \
    "$tmp/calls" || no "the sweep row did not run as given, with its own CSV: $(cat "$tmp/calls")"
sum="$tmp/logs/summary.txt"
[ -f "$sum" ] || no "no summary.txt"
grep -Eq '^graph_check +dispatch +128 +100\.00 +90\.00 +-10\.0% +0\.0%$' "$sum" ||
    no "no dispatch line for graph_check (100 -> 90, -10%): $(cat "$sum")"
grep -Eq '^graph_check +combine +128 +100\.00 +105\.00 +\+5\.0% +0\.0% +slower$' "$sum" ||
    no "the 5% slower combine is not flagged: $(cat "$sum")"
grep -Eq '^graph_sweep_tokens_16 +dispatch +1 +100\.00 +90\.00' "$sum" ||
    no "the sweep's 1-token row is missing: $(cat "$sum")"
[ "$(grep -c '^graph_sweep_tokens_16 ' "$sum")" -eq 4 ] ||
    no "the sweep should give 4 lines (2 token counts x 2 operations): $(cat "$sum")"
# Three rounds averaged: each CSV holds 3 runs' rows.
[ "$(grep -c ',dispatch,' "$tmp/logs/graph_check.base.csv")" -eq 3 ] ||
    no "graph_check.base.csv does not hold 3 rounds"

# --report writes the same summary from the CSVs alone (no build named, nothing run), for every
# row whose CSVs are there or the rows of --rows.
cp "$sum" "$tmp/summary.first"
rm -f "$sum" "$tmp/calls"
bash "$script" --report "$tmp/logs" >"$tmp/out" 2>&1 || no "--report failed: $(cat "$tmp/out")"
[ -e "$tmp/calls" ] && no "--report ran a bench"
sort "$tmp/summary.first" >"$tmp/a"
sort "$sum" >"$tmp/b" 2>/dev/null
cmp -s "$tmp/a" "$tmp/b" || no "--report's summary differs: $(diff "$tmp/a" "$tmp/b")"
printf -- '--graph --check\n' >"$tmp/one_row"
bash "$script" --report "$tmp/logs" --rows "$tmp/one_row" >"$tmp/out" 2>&1 ||
    no "--report --rows failed: $(cat "$tmp/out")"
grep -q '^graph_sweep' "$sum" && no "--report --rows summarized a row it was not given"
grep -q '^graph_check ' "$sum" || no "--report --rows lost its row: $(cat "$sum")"

# Spread: base rounds of 100, 110 and 100 us against a new 106 (+2.6%): past the 2% but inside
# the base's range, so "noise?" with a 9.7% spread; against a new 111 (+7.4%), beyond every base
# round, "slower".
rm -rf "$tmp/logs" "$tmp/calls"
BASE_ROUNDS_US="100.00 110.00 100.00" NEW_US=106.00 NEW_COMBINE_US=111.00 \
    run --rows "$tmp/one_row" --rounds 3 || no "a noisy run failed: $(cat "$tmp/out")"
grep -Eq '^graph_check +dispatch +128 +103\.33 +106\.00 +\+2\.6% +9\.7% +noise\?$' "$sum" ||
    no "a change inside the base's range is not 'noise?': $(cat "$sum")"
grep -Eq '^graph_check +combine +128 +103\.33 +111\.00 +\+7\.4% +9\.7% +slower$' "$sum" ||
    no "a change beyond the base's range is not 'slower': $(cat "$sum")"

# A 1% slower row is not flagged at the default 2%; it is at AB_SLOWER_PCT=0.5.
rm -rf "$tmp/logs" "$tmp/calls"
NEW_COMBINE_US=101.00 run --rows "$tmp/rows" --rounds 1 || no "a clean run failed: $(cat "$tmp/out")"
grep -q slower "$tmp/logs/summary.txt" && no "a 1% change flagged slower at the default 2%"
rm -rf "$tmp/logs"
NEW_COMBINE_US=101.00 AB_SLOWER_PCT=0.5 run --rows "$tmp/rows" --rounds 1 ||
    no "a clean run failed: $(cat "$tmp/out")"
grep -q slower "$tmp/logs/summary.txt" || no "a 1% change not flagged at AB_SLOWER_PCT=0.5"

# Each build's source in the summary, from its bench's "# source:" line; none is "unknown"
# (a bench older than that line); the same source on both sides is said to be an A/A run.
grep -q '^# base source: unknown$' "$tmp/logs/summary.txt" ||
    no "a bench without a source line is not 'unknown': $(cat "$tmp/logs/summary.txt")"
rm -rf "$tmp/logs"
SOURCE_BASE="git 111 sources aaa" SOURCE_NEW="git 222 sources bbb" run --rows "$tmp/one_row" \
    --rounds 1 || no "a run with sources failed: $(cat "$tmp/out")"
grep -q '^# base source: git 111 sources aaa$' "$tmp/logs/summary.txt" &&
    grep -q '^# new source:  git 222 sources bbb$' "$tmp/logs/summary.txt" ||
    no "the builds' sources are not in the summary: $(cat "$tmp/logs/summary.txt")"
grep -q 'A/A' "$tmp/out" && no "two different sources called an A/A run: $(cat "$tmp/out")"
# The same code, one side an archive ("git -"), the other its commit: an A/A run.
rm -rf "$tmp/logs"
SOURCE_BASE="git - sources ccc" SOURCE_NEW="git 333 sources ccc" run --rows "$tmp/one_row" \
    --rounds 1 || no "an A/A run failed (it is reported, not failed): $(cat "$tmp/out")"
grep -q '^# both builds are of the same code: an A/A run' "$tmp/logs/summary.txt" ||
    no "an A/A run is not said in the summary: $(cat "$tmp/logs/summary.txt")"
grep -q 'warning: both builds are of the same code (sources ccc)' "$tmp/out" ||
    no "an A/A run is not warned about: $(cat "$tmp/out")"
# A log from another run in the folder is not read (only this summary's rows), and a log whose
# run failed before its header does not hide the others' line.
printf '# source: git 999 sources zzz\n' >"$tmp/logs/other_row.base.1.log"
printf 'failed early\n' >"$tmp/logs/graph_check.base.0.log"
bash "$script" --report "$tmp/logs" --rows "$tmp/one_row" >"$tmp/out" 2>&1 ||
    no "--report over a folder with other logs failed: $(cat "$tmp/out")"
grep -q '^# base source: git - sources ccc$' "$tmp/logs/summary.txt" ||
    no "the base's source was not taken from its own rows' logs: $(cat "$tmp/logs/summary.txt")"

# Failures: a run that fails, wrong elements.
rm -rf "$tmp/logs"
if FAILS=new run --rows "$tmp/rows" --rounds 1; then no "a failing new build's run passed"; fi
grep -q "FAILED (new, round 1)" "$tmp/out" || no "the failed run is not named: $(cat "$tmp/out")"
rm -rf "$tmp/logs"
if WRONG=7 run --rows "$tmp/rows" --rounds 1; then no "a row with 7 wrong elements passed"; fi
grep -q "7 wrong elements" "$tmp/out" || no "the wrong elements are not reported: $(cat "$tmp/out")"

# The default rows, dry: seven rows, twice each per build, nothing run.
rm -rf "$tmp/logs" "$tmp/calls"
run --dry-run || no "--dry-run failed: $(cat "$tmp/out")"
[ -e "$tmp/calls" ] && no "--dry-run ran a bench"
[ "$(grep -c 'ncclx-bench' "$tmp/out")" -eq 28 ] ||
    no "--dry-run should print 7 rows x 2 rounds x 2 builds = 28 commands: $(cat "$tmp/out")"
grep -q "^$tmp/new/tools/ncclx-bench --comm --graph --tokens 1 --csv $tmp/logs/comm_graph_tokens_1.new.csv\$" \
    "$tmp/out" || no "the one-rank 1-token row is not in the default rows"
[ -e "$tmp/logs" ] && no "--dry-run created the log folder"

# Bad arguments: exit 2 with the reason.
bad() {
    want=$1
    shift
    bash "$script" "$@" >"$tmp/out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] || no "'$*' exited $rc, expected 2"
    grep -qF -- "$want" "$tmp/out" || no "'$*' does not say '$want': $(cat "$tmp/out")"
}
bad "usage:" "$tmp/base" "$tmp/new"
bad "no $tmp/none/tools/ncclx-bench" "$tmp/none" "$tmp/new" "$tmp/logs"
bad "--rounds '0'" "$tmp/base" "$tmp/new" "$tmp/logs" --rounds 0
bad "cannot read --rows file" "$tmp/base" "$tmp/new" "$tmp/logs" --rows "$tmp/missing"
bad "unknown option '--fast'" "$tmp/base" "$tmp/new" "$tmp/logs" --fast
bad "usage: bench_ab.sh --report LOG_DIR" --report "$tmp/base" "$tmp/logs"
bad "no log folder '$tmp/none'" --report "$tmp/none"
mkdir -p "$tmp/empty"
bad "no NAME.base.csv in '$tmp/empty'" --report "$tmp/empty"

[ "$fail" -eq 0 ] && echo "PASS: tools/bench_ab.sh" || echo "$fail failure(s)"
[ "$fail" -eq 0 ]
