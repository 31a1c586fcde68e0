#!/bin/sh
# Where a recorded program's time goes: `perf record` of the one-thread
# storm (bench/workloads/storm.c, 1,000,000 operations) under memtally
# record, full mode and sampled, every process and thread of the run
# counted; the cycles by object: libunwind (unwinding), libmemtally (the
# hooks, stacks, events), memtally (memtally record: encoding and
# compression), libzstd, the kernel, the clock (vDSO), libc and the
# program.  Needs perf (linux-perf).  About 20 s.   sh bench/profile.sh
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
command -v perf >/dev/null 2>&1 || { echo "perf is not installed (apt-get install linux-perf)"; exit 1; }
[ -x "$B/storm" ] || ${CC:-cc} -O2 -g -Wall -pthread -o "$B/storm" bench/workloads/storm.c
for mode in full sampled; do
    opt=; [ $mode = sampled ] && opt=--sample
    perf record -q -o "$B/profile.data" -- build/memtally record -q $opt -o "$B/profile.mtly" \
        -- "$B/storm" 1 1000000 >/dev/null 2>&1
    echo "== storm, 1 thread, $mode mode: share of all cycles by object"
    perf report -i "$B/profile.data" --no-children --sort dso --stdio 2>/dev/null |
        awk '/%/ && $1 ~ /%$/ { sub(/%/, "", $1); share[$2] += $1 }
             END { for (o in share) if (share[o] >= 0.5) printf "  %6.1f%%  %s\n", share[o], o }' |
        sort -rn
    rm -f "$B/profile.data" "$B/profile.mtly"
done
