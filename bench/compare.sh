#!/bin/sh
# Two builds of memtally side by side: the recording overhead of one
# against the other, on the same workloads as bench/run.sh, interleaved
# (base, new, base, new...) so that the machine's noise falls on both.
#   sh bench/compare.sh BASE_MEMTALLY [-r N] [-w "W1 W2..."]
#     BASE_MEMTALLY  the memtally binary to compare against (for instance
#                    one built from an earlier commit in a git worktree);
#                    the new one is build/memtally (MEMTALLY_BIN)
#     -r N           rounds (default 7; the median is shown)
#     -w LIST        workloads (default "storm1 sqlite python bintree perl")
# Prints, per workload, the median wall time of each and new / base.
base=$1
[ -x "$base" ] || { echo "usage: sh bench/compare.sh BASE_MEMTALLY [-r N] [-w LIST]" >&2; exit 2; }
shift
reps=7 list="storm1 sqlite python bintree perl"
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -w) list=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
new=${MEMTALLY_BIN:-build/memtally}
bench_sizes default
mkdir -p "$B" "$OUT" || exit 1
MEMTALLY_INDEX_DIR=$(pwd)/$B/run-index
export MEMTALLY_INDEX_DIR
bench_inputs || exit 1

# once BIN: seconds of one recorded run of the workload set by `workload`.
once() {
    s=$(date +%s%N)
    # shellcheck disable=SC2086
    env $envs "$1" record -q -o "$OUT/compare.mtly" -- $cmd <"$inp" >/dev/null 2>&1
    e=$(date +%s%N)
    rm -f "$OUT/compare.mtly"
    echo $(( (e - s) / 1000000 ))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-10s %10s %10s %8s\n' workload "base ms" "new ms" new/base
for w in $list; do
    workload "$w"
    : >"$OUT/base.ms"; : >"$OUT/new.ms"
    r=0
    while [ $r -lt "$reps" ]; do
        once "$base" >>"$OUT/base.ms"
        once "$new" >>"$OUT/new.ms"
        r=$((r + 1))
    done
    b=$(median <"$OUT/base.ms") n=$(median <"$OUT/new.ms")
    printf '%-10s %10s %10s %8s\n' "$w" "$b" "$n" "$(awk -v a="$n" -v b="$b" 'BEGIN { printf "%.3f", a / b }')"
done
