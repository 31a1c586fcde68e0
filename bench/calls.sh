#!/bin/sh
# What counting calls costs (bench/calls_cost.c, built with
# -finstrument-functions): ns per call of a tiny function run alone,
# under memtally record, and under memtally record --calls.  A few seconds.
#   sh bench/calls.sh [ROUNDS]
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -g -finstrument-functions -o "$B/calls_cost" bench/calls_cost.c
n=${1:-50000000}
echo "== calls cost, $n calls of a tiny function"
printf 'alone:                   '; "$B/calls_cost" "$n"
printf 'memtally record:         '; build/memtally record -q -o "$B/calls.mtly" -- "$B/calls_cost" "$n"
printf 'memtally record --calls: '; build/memtally record -q --calls -o "$B/calls.mtly" -- "$B/calls_cost" "$n"
build/memtally report --total "$B/calls.mtly" | grep '^tiny' | sed 's/^/  counted: /'
rm -f "$B/calls.mtly"
