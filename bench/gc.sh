#!/bin/sh
# What recording the Boehm GC's heap costs (bench/gc_cost.c, linked with
# libgc): ns per GC_MALLOC alone and under memtally record, which records
# each block and reports the collector's reclaims.  A few seconds.
#   sh bench/gc.sh [ROUNDS]
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -g -o "$B/gc_cost" bench/gc_cost.c -lgc
n=${1:-2000000}
echo "== Boehm GC, $n GC_MALLOCs"
printf 'alone:           '; "$B/gc_cost" "$n"
printf 'memtally record: '; build/memtally record -q -o "$B/gc.mtly" -- "$B/gc_cost" "$n"
build/memtally info --heap gc "$B/gc.mtly" | grep -E '^(allocations|frees|collections):' | sed 's/^/  /'
rm -f "$B/gc.mtly"
