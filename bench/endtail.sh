#!/bin/sh
# What memtally record adds after the program has ended: from the
# program's last act (bench/workloads/exitstamp.c prints the wall clock
# as it exits) to memtally record's exit, when the trace is complete.
# That is the writer's backlog of events (this program allocates faster
# than the writer codes), the last block's compression, and the memory
# given back.  R runs of each build, interleaved; the median and the
# range in ms.
#   sh bench/endtail.sh [BASE_MEMTALLY] [-r N] [-p PAIRS] [-s]
#     BASE_MEMTALLY  another build's memtally, beside this one
#     -r N           runs of each (default 15)
#     -p PAIRS       the program's malloc and free pairs (default 2000000;
#                    0: a program that ends at once)
#     -s             sampled mode (record --sample), where the writer has
#                    next to nothing to do
# MEMTALLY_BIN names the new build (default build/memtally).
base='' runs=15 pairs=2000000 mode=''
while [ $# -gt 0 ]; do
    case $1 in
    -r) runs=$2; shift 2 ;;
    -p) pairs=$2; shift 2 ;;
    -s) mode=--sample; shift ;;
    -*) echo "usage: sh bench/endtail.sh [BASE_MEMTALLY] [-r N] [-p PAIRS] [-s]" >&2; exit 2 ;;
    *) base=$1; shift ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
M=${MEMTALLY_BIN:-build/memtally}
B=build/bench
mkdir -p "$B" || exit 1
${CC:-cc} -O2 -o "$B/exitstamp" bench/workloads/exitstamp.c || exit 1
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
builds="new"
[ -n "$base" ] && builds="new base"
i=0
while [ $i -lt "$runs" ]; do
    for b in $builds; do
        m=$M
        [ "$b" = base ] && m=$base
        stamp=$("$m" record -q $mode -o "$work/t.mtly" -- "$B/exitstamp" "$pairs") ||
            { echo "bench: recording with $m failed" >&2; exit 1; }
        end=$(date +%s%N)
        echo $(( (end - stamp) / 1000 )) >>"$work/$b"
    done
    i=$((i + 1))
done
echo "time from the program's exit to memtally record's, $runs runs, $pairs pairs${mode:+, sampled}:"
for b in $builds; do
    sort -n "$work/$b" | awk -v b="$b" '{ v[NR] = $1 }
        END { printf "  %-5s median %7.1f ms  (%.1f to %.1f)\n", b, v[int((NR + 1) / 2)] / 1000,
                     v[1] / 1000, v[NR] / 1000 }'
done
