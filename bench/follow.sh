#!/bin/sh
# What following processes costs (memtally record --follow-fork writes
# every followed process's trace itself): bench/workloads/forks.c forks C
# children, 50 at a time, each making 1 to 7 allocations, while a thread
# of the parent churns.  Median wall time of R interleaved runs, and the
# largest resident set of memtally record (ru_maxrss) over them, for the
# program alone and for each memtally binary given (this build's by
# default; an older build beside it, to weigh a change).  Each recorded run
# must leave C + 1 traces.
#   sh bench/follow.sh [-r N] [-c C] [MEMTALLY...]
set -e
reps=7 children=300
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -c) children=$2; shift 2 ;;
    -*) echo "usage: sh bench/follow.sh [-r N] [-c C] [MEMTALLY...]" >&2; exit 2 ;;
    *) break ;;
    esac
done
cd "$(dirname "$0")/.."
B=build/bench OUT=build/bench/out/follow CC=${CC:-cc}
mkdir -p "$B" "$OUT"
$CC -O2 -g -pthread -o "$B/forks" bench/workloads/forks.c
$CC -O2 -g -o "$B/rusage" bench/rusage.c
[ $# -gt 0 ] || set -- build/memtally
tools="alone $*"
for t in $tools; do : >"$OUT/$(echo "$t" | tr / _)"; done
for i in $(seq "$reps"); do
    for t in $tools; do
        rm -f "$OUT"/*.mtly*
        if [ "$t" = alone ]; then
            "$B/rusage" "$B/forks" "$children" 50 >>"$OUT/alone"
        else
            "$B/rusage" "$t" record -q --follow-fork -o "$OUT/f.%p.mtly" -- \
                "$B/forks" "$children" 50 >>"$OUT/$(echo "$t" | tr / _)"
            n=$(ls "$OUT" | grep -c '\.mtly$')
            [ "$n" = $((children + 1)) ] || { echo "bench: $t left $n traces, not $((children + 1))" >&2; exit 1; }
        fi
    done
done
rm -f "$OUT"/*.mtly*
echo "forks: $children children, 50 at a time; median of $reps runs"
printf '%-40s %10s %14s\n' recorder "wall s" "peak RSS MiB"
for t in $tools; do
    sort -n "$OUT/$(echo "$t" | tr / _)" | awk -v t="$t" '{ w[NR] = $1; if ($2 > m) m = $2 }
        END { printf "%-40s %10.3f %14.1f\n", t, w[int((NR + 1) / 2)] / 1e6, m / 1024 }'
done
echo "peak RSS: memtally record's largest resident set (the program alone: its own)."
