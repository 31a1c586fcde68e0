#!/bin/sh
# What one event (an allocation or a free) costs the recorded program, in
# ns, build against build: the 10th percentile of many short timed rounds
# (bench/workloads/eventcost.c), which the machine's noise hardly moves,
# for small differences that the wall time of whole runs cannot show.
# Each shape runs alone, under BASE and under the new build, interleaved,
# ROUNDS times; the median of each is shown, the overhead per event (less
# the program alone's) and new / base of the overheads.  The writer, on the
# other core, is not in these figures: bench/compare.sh measures whole runs.
#   sh bench/eventcost.sh [BASE_MEMTALLY] [-r N] [-a "OPTIONS"]
#     BASE_MEMTALLY  the memtally binary to compare against; without it,
#                    the new build alone
#     -r N           runs of each (default 5; the median is shown)
#     -a "OPTIONS"   more options for the new build's `memtally record` only
set -e
cd "$(dirname "$0")/.."
base='' reps=5 new_opts=''
case ${1-} in -*|'') ;; *) base=$1; shift ;; esac
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -a) new_opts=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -z "$base" ] || [ -x "$base" ] || { echo "bench: $base is not executable" >&2; exit 2; }
B=build/bench CC=${CC:-cc}
new=${MEMTALLY_BIN:-build/memtally}
mkdir -p "$B"
$CC -O2 -g -Wall -o "$B/eventcost" bench/workloads/eventcost.c

# once BIN SHAPE [OPTIONS]: ns per event of one run (BIN "alone": the
# program alone).  The new shape runs 100,000 rounds: 2.3 million new
# stacks, about binary trees' table sizes.
once() {
    rounds=; [ "$2" = new ] && rounds=100000
    if [ "$1" = alone ]; then
        out=$("$B/eventcost" "$2" $rounds)
    else
        # shellcheck disable=SC2086
        out=$("$1" record -q ${3-} -o "$B/eventcost.mtly" -- "$B/eventcost" "$2" $rounds)
        rm -f "$B/eventcost.mtly"
    fi
    echo "$out" | awk '{ print $3 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-6s %9s %9s %9s %9s %9s %8s\n' shape "alone ns" "base ns" "new ns" "base ovh" \
    "new ovh" new/base
for shape in flat tree new; do
    : >"$B/alone.ns"; : >"$B/base.ns"; : >"$B/new.ns"
    r=0
    while [ $r -lt "$reps" ]; do
        once alone "$shape" >>"$B/alone.ns"
        [ -z "$base" ] || once "$base" "$shape" >>"$B/base.ns"
        once "$new" "$shape" "$new_opts" >>"$B/new.ns"
        r=$((r + 1))
    done
    a=$(median <"$B/alone.ns") n=$(median <"$B/new.ns")
    b=$([ -n "$base" ] && median <"$B/base.ns" || echo -)
    awk -v s="$shape" -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
        if (b == "-") printf "%-6s %9.2f %9s %9.2f %9s %9.2f %8s\n", s, a, "-", n, "-", n - a, "-"
        else printf "%-6s %9.2f %9.2f %9.2f %9.2f %9.2f %8.3f\n", s, a, b, n, b - a, n - a, (n - a) / (b - a)
    }'
done
rm -f "$B/alone.ns" "$B/base.ns" "$B/new.ns"
