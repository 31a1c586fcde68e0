#!/bin/sh
# What an event's clock read and its thread's hold cost on this processor
# (bench/clock_cost.c), in ns, back to back: rdtsc, rdtscp, a spinlock,
# the spinlock with rdtsc (as every event was before), and the hold
# without a locked instruction with rdtscp (as every event is now;
# docs/PERFORMANCE.md, "The thread's hold without a locked instruction").
# x86-64 only.  About 2 s.   sh bench/clock_cost.sh [ROUNDS]
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -o "$B/clock_cost" bench/clock_cost.c
echo "== one clock read and hold, back to back"
"$B/clock_cost" ${1:-50000000}
