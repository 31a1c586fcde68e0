#!/bin/sh
# What a trace's size is made of: each workload (bench/run.sh's, at its
# default sizes) recorded, then each stream compressed on its own per
# block and what each adds to the trace, and the times coded by a
# context model (bench/stream_sizes.c).  About 10 s for python3, the default;
# about a minute for all of them.
#   sh bench/streams.sh [-w "W1 W2..."]
#     -w LIST   workloads (default python; all: storm1 sqlite python cc1
#               bintree perl gitlog)
# MEMTALLY_BIN names another build's memtally to record with (a trace
# format against another: the same workloads, the same splitting).
list=python
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$list" = all ] && list="storm1 sqlite python cc1 bintree perl gitlog"
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=${MEMTALLY_BIN:-build/memtally}
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
$CC -O2 -Iinclude -Isrc -D_GNU_SOURCE -o "$B/stream_sizes" bench/stream_sizes.c \
    build/libmemtally-trace.a -lzstd -ldw -lelf -lpthread -lm || exit 1
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086
    env $envs "$M" record -q -o "$B/streams.mtly" -- $cmd <"$inp" >/dev/null 2>&1 ||
        { echo "bench: recording $w failed" >&2; exit 1; }
    echo "== $w ($cmd): $(stat -c %s "$B/streams.mtly") bytes in the trace"
    "$B/stream_sizes" "$B/streams.mtly" || exit 1
    rm -f "$B/streams.mtly"
done
