#!/bin/sh
# What the in-program API costs (bench/api_cost.c): per round of mtl_type +
# mtl_alloc + mtl_free, not recording (libmemtally loaded, no trace) and
# under memtally record.  About 5 s.   sh bench/api.sh [ROUNDS]
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -g -Iinclude -o "$B/api_cost" bench/api_cost.c -Lbuild -lmemtally \
    -Wl,-rpath,"$PWD/build"
n=${1:-20000000}
echo "== API cost, $n rounds"
"$B/api_cost" "$n"
build/memtally record -q -o "$B/api_cost.mtly" -- "$B/api_cost" "$((n / 10))"
rm -f "$B/api_cost.mtly"
