#!/bin/sh
# How often the recorded program waited for memtally record: a thread
# whose chunk is full and finds the pool empty (the writer behind) sleeps
# a millisecond and looks again (src/preload/events.c, mtl__room_wait).
# Those sleeps are counted with strace, which stops the program only at
# them (--seccomp-bpf): the count of one-millisecond sleeps, a run of
# each build interleaved, ROUNDS times, on bench/run.sh's workloads at
# their default sizes.  Needs strace.
#   sh bench/waits.sh [BASE_MEMTALLY] [-r N] [-w "W1 W2..."]
#     BASE_MEMTALLY  another build's memtally, counted too
#     -r N           runs of each (default 3; every count is shown)
#     -w LIST        workloads (default "bintree storm2")
# MEMTALLY_BIN names the build counted (default build/memtally).
cd "$(dirname "$0")/.." || exit 1
base=
case $1 in -*|'') ;; *) base=$1; shift ;; esac
reps=3 list="bintree storm2"
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -w) list=$2; shift 2 ;;
    *) echo "usage: sh bench/waits.sh [BASE_MEMTALLY] [-r N] [-w LIST]" >&2; exit 2 ;;
    esac
done
command -v strace >/dev/null 2>&1 || { echo "strace is not installed (apt-get install strace)"; exit 1; }
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=${MEMTALLY_BIN:-build/memtally}
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
bench_inputs || exit 1

# waits BIN: the program's one-millisecond sleeps in one recording of $cmd.
waits() {
    # $envs and $cmd are split on blanks on purpose.
    # shellcheck disable=SC2086
    env $envs strace -f --seccomp-bpf -e trace=clock_nanosleep,nanosleep -o "$OUT/waits.strace" \
        "$1" record -q -o "$OUT/waits.mtly" -- $cmd <"$inp" >/dev/null 2>&1
    grep -c 'tv_sec=0, tv_nsec=1000000}' "$OUT/waits.strace"
    rm -f "$OUT/waits.strace" "$OUT/waits.mtly"
}

for w in $list; do
    workload "$w"
    row_new='' row_base=''
    i=0
    while [ "$i" -lt "$reps" ]; do
        [ -n "$base" ] && row_base="$row_base $(waits "$base")"
        row_new="$row_new $(waits "$M")"
        i=$((i + 1))
    done
    [ -n "$base" ] && echo "$w: base waited$row_base times"
    echo "$w: new waited$row_new times"
done
