#!/bin/sh
# What the writer's coding costs, build against build, in exact counts
# that the machine's noise does not move: each workload (bench/run.sh's,
# at its default sizes) recorded once by BASE, then re-encoded event for
# event by BASE and by this build (`memtally merge --force TRACE TRUE -o
# OUT`, as bench/recode.sh does) under valgrind's cachegrind, which
# counts the instructions run and the data reads and writes that miss its
# model of the first-level and the last-level caches.  Reading the trace
# is in both counts, the same code unless the change is to the reader.
# For changes of a few percent to the encoder or the address model
# (src/trace/), where wall times of whole runs move by 10 to 30% here.
# About a minute a workload under cachegrind, for each build.
#   sh bench/writercost.sh BASE_MEMTALLY [-w "W1 W2..."]
#     BASE_MEMTALLY  another build's memtally (a git worktree of an
#                    earlier commit); it must read its own traces
#     -w LIST        workloads (default: storm1 cc1)
[ $# -ge 1 ] || { echo "usage: sh bench/writercost.sh BASE_MEMTALLY [-w LIST]" >&2; exit 2; }
BASE=$1
shift
list="storm1 cc1"
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
command -v valgrind >/dev/null 2>&1 || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=build/memtally
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
t=$B/writercost
"$BASE" record -q -o "$t.true.mtly" -- /bin/true || { echo "bench: $BASE does not record" >&2; exit 1; }

# counts BIN: "instructions D1-misses LL-misses" of BIN's merge of $t.mtly.
counts() {
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
        "$1" merge --force "$t.mtly" "$t.true.mtly" -o "$t.out.mtly" 2>&1 >/dev/null |
        awk '/ I +refs:/ { gsub(/,/, "", $4); i = $4 }
             / D1 +misses:/ { gsub(/,/, "", $4); d = $4 }
             / LLd +misses:/ { gsub(/,/, "", $4); l = $4 }
             END { if (i == "") exit 1; print i, d, l }'
}

printf '%-10s %15s %8s %12s %8s %10s %8s\n' workload "instructions" this/base "D1 misses" \
    this/base "LL misses" this/base
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086
    env $envs "$BASE" record -q -o "$t.mtly" -- $cmd <"$inp" >/dev/null 2>&1 ||
        { echo "bench: recording $w failed" >&2; exit 1; }
    if ! b=$(counts "$BASE") || ! n=$(counts "$M"); then
        echo "bench: $w: merge under cachegrind failed" >&2
        exit 1
    fi
    echo "$b $n" | awk -v w="$w" '{
        printf "%-10s %15s %8.4f %12s %8.4f %10s %8.4f\n", w, $4, $4 / $1, $5, $5 / $2, $6, $6 / $3 }'
done
rm -f "$t".*mtly
