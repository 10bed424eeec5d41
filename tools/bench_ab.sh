#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# bench_ab.sh: time two builds of libncclx on one GPU in one go, their runs alternating, and
# print each row's change (docs/performance.md: a speed claim is measured against its baseline
# in the same call, on the same machine, never against a number from another day).
#
# Usage: tools/bench_ab.sh BASE_BUILD NEW_BUILD LOG_DIR [--rounds N] [--rows FILE] [--dry-run]
#        tools/bench_ab.sh --report LOG_DIR [--rows FILE]
#
#   BASE_BUILD  the baseline's build (tools/ncclx-bench in it), e.g. of `git archive REV`
#   NEW_BUILD   the build under test
#   LOG_DIR     NAME.base.csv and NAME.new.csv (ncclx-bench --csv, one pair per row),
#               NAME.base.K.log and NAME.new.K.log (each run's output), summary.txt
#   --rounds N  runs of each row per build, base then new, N times (default 2)
#   --rows FILE one ncclx-bench argument list per line ('#' starts a comment); default: the LL
#               rows of issue 30 (one rank, 128 tokens and 1; loopback 8 expert-major,
#               rank-major, FP8, with a mask; the token sweep)
#   --dry-run   print the commands and run none (no GPU needed)
#   --report    run nothing: write LOG_DIR's summary again from its CSVs (every row whose
#               CSVs are there, by name, unless --rows names them); no GPU needed
#
# summary.txt (also printed): each build's source (the "# source:" line of its bench's header,
# tools/source_id.sh; a note when both are the same code, an A/A run); per row, operation
# and token count, each build's time (the mean of its rounds' medians), the change in percent,
# the spread (the larger of the two builds' (slowest - fastest) / mean over their rounds, in
# percent), and a flag where the new build is more than AB_SLOWER_PCT percent (default 2)
# slower: "slower" when even its fastest round is slower than the base's slowest, "noise?"
# when the rounds' ranges overlap (the change is within the run-to-run spread; more rounds
# tell).  Exits 1 if a run fails or a --check row counts wrong elements, 2 on bad arguments,
# 0 otherwise: a slower row, or an A/A run, is reported, not failed.
set -uo pipefail
prog=${0##*/}
die() {
    printf '%s: error: %s\n' "$prog" "$*" >&2
    exit 2
}
dry=0 report=0 rounds=2 rows_file=""
args=()
while (($#)); do
    case "$1" in
        --dry-run) dry=1 ;;
        --report) report=1 ;;
        --rounds)
            (($# >= 2)) || die "--rounds needs a number"
            rounds=$2
            shift
            ;;
        --rows)
            (($# >= 2)) || die "--rows needs a file"
            rows_file=$2
            shift
            ;;
        -h | --help)
            sed -n '5,32p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        -*) die "unknown option '$1' (try --help)" ;;
        *) args+=("$1") ;;
    esac
    shift
done
if ((report)); then
    ((${#args[@]} == 1)) || die "usage: $prog --report LOG_DIR [--rows FILE]"
    logs=${args[0]}
    [[ -d $logs ]] || die "no log folder '$logs'"
else
    ((${#args[@]} == 3)) ||
        die "usage: $prog BASE_BUILD NEW_BUILD LOG_DIR [--rounds N] [--rows FILE] [--dry-run]"
    [[ $rounds =~ ^[1-9][0-9]?$ ]] || die "--rounds '$rounds': give 1 to 99"
    base=${args[0]} new=${args[1]} logs=${args[2]}
    for b in "$base" "$new"; do
        [[ -x $b/tools/ncclx-bench ]] || die "no $b/tools/ncclx-bench: build libncclx there first"
    done
fi
slower_pct=${AB_SLOWER_PCT:-2}
[[ $slower_pct =~ ^[0-9]+([.][0-9]+)?$ ]] || die "AB_SLOWER_PCT '$slower_pct' is no percentage"

rows=()
if [[ -n $rows_file ]]; then
    [[ -r $rows_file ]] || die "cannot read --rows file '$rows_file'"
    while IFS= read -r line; do
        line=${line%%#*}
        line=${line#"${line%%[![:space:]]*}"}  # leading blanks
        line=${line%"${line##*[![:space:]]}"}  # trailing blanks
        [[ -n $line ]] && rows+=("$line")
    done <"$rows_file"
    ((${#rows[@]} > 0)) || die "--rows file '$rows_file' holds no row"
elif ! ((report)); then
    rows=("--comm --graph --check" "--comm --graph --tokens 1" "--graph --check"
        "--graph --check --layout rank" "--graph --check --recipe fp8" "--graph --check --mask"
        "--graph --sweep")
fi

# A row's name: its arguments without dashes, words joined by '_' ("comm_graph_tokens_1").
row_name() {
    local n
    n=$(printf '%s' "$1" | tr -s ' ' '_' | tr -d -- '-' | tr -c 'A-Za-z0-9_.\n' '_')
    printf '%s' "${n:-default}"
}

((dry || report)) || mkdir -p "$logs" || die "cannot create '$logs'"
status=0
rows_to_run=("${rows[@]}")
((report)) && rows_to_run=() # --report: the CSVs are there
for row in "${rows_to_run[@]}"; do
    name=$(row_name "$row")
    for ((k = 1; k <= rounds; k++)); do
        for side in base new; do
            dir=$base
            [[ $side == new ]] && dir=$new
            # shellcheck disable=SC2206 # a row is a plain word list
            cmd=("$dir/tools/ncclx-bench" $row --csv "$logs/$name.$side.csv")
            if ((dry)); then
                printf '%s\n' "${cmd[*]}"
                continue
            fi
            if ! "${cmd[@]}" >"$logs/$name.$side.$k.log" 2>&1; then
                echo "$prog: FAILED ($side, round $k): ${cmd[*]} (see $logs/$name.$side.$k.log)" >&2
                status=1
            fi
        done
    done
done
((dry)) && exit 0

names=()
for row in "${rows[@]}"; do
    names+=("$(row_name "$row")")
done
if ((report && ${#names[@]} == 0)); then
    for f in "$logs"/*.base.csv; do
        [[ -e $f ]] && names+=("$(basename "$f" .base.csv)")
    done
    ((${#names[@]} > 0)) || die "no NAME.base.csv in '$logs'"
fi
# Each build's source, as its bench's header names it (tools/source_id.sh), from the logs of
# this summary's rows ("unknown" where none has the line: a bench older than it, or runs that
# failed first; "mixed: ..." where they differ).  Two builds of the same code (the same digest,
# whatever git says: a `git archive` base is "git -") make the A/B an A/A run, which the
# summary says: every change in it is noise.
source_of() {
    local name f line seen=""
    for name in "${names[@]}"; do
        for f in "$logs/$name.$1".*.log; do
            [[ -e $f ]] || continue
            line=$(sed -n 's/^# source: //p' "$f" | head -n 1)
            [[ -n $line ]] || continue
            if [[ -z $seen ]]; then
                seen=$line
            elif [[ $line != "$seen" ]]; then
                printf 'mixed: %s; %s' "$seen" "$line"
                return
            fi
        done
    done
    printf '%s' "$seen"
}
base_source=$(source_of base)
new_source=$(source_of new)
same_code=0
if [[ $base_source == *" sources "* && $new_source == *" sources "* &&
    ${base_source##* sources } == "${new_source##* sources }" &&
    ${new_source##* sources } != unknown ]]; then
    same_code=1
fi
{
    printf '# base source: %s\n' "${base_source:-unknown}"
    printf '# new source:  %s\n' "${new_source:-unknown}"
    if ((same_code)); then
        printf '# both builds are of the same code: an A/A run, every change is noise\n'
    fi
} >"$logs/summary.txt"
if ((same_code)); then
    echo "$prog: warning: both builds are of the same code (sources ${new_source##* sources }): an A/A run" >&2
fi
python3 - "$logs" "$slower_pct" "${names[@]}" >>"$logs/summary.txt" <<'PY' || status=1
import csv, os, sys

logs, slower_pct, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
bad = 0
print("# row                              op        tokens    base_us     new_us   change  spread")
for name in names:
    times = {}
    for side in ("base", "new"):
        path = os.path.join(logs, "%s.%s.csv" % (name, side))
        if not os.path.exists(path):
            print("# %s: no %s rows (its runs failed)" % (name, side))
            continue
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (r["op"], int(r["tokens"]))
                times.setdefault(key, {}).setdefault(side, []).append(float(r["med_us"]))
                if r["wrong"] not in ("-", "0"):
                    print("# %s %s %s tokens (%s): %s wrong elements"
                          % (name, r["op"], r["tokens"], side, r["wrong"]))
                    bad = 1
    for (op, tokens), t in sorted(times.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        if "base" not in t or "new" not in t:
            continue
        b, n = sum(t["base"]) / len(t["base"]), sum(t["new"]) / len(t["new"])
        change = (n - b) / b * 100.0 if b > 0 else 0.0
        spread = max((max(v) - min(v)) / (sum(v) / len(v)) * 100.0 if sum(v) > 0 else 0.0
                     for v in (t["base"], t["new"]))
        flag = ""
        if change > slower_pct:
            flag = "  slower" if min(t["new"]) > max(t["base"]) else "  noise?"
        print("%-34s %-9s %6d %10.2f %10.2f %+7.1f%% %6.1f%%%s"
              % (name, op, tokens, b, n, change, spread, flag))
sys.exit(bad)
PY
cat "$logs/summary.txt"
exit "$status"
