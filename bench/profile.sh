#!/bin/sh
# Where a recorded program's time goes: `perf record` of the one-thread
# storm (bench/workloads/storm.c, 1,000,000 operations) under memtally
# record, full mode and sampled, and of binary trees (depth 15) in full
# mode, every process and thread of the run counted; the cycles by object:
# libmemtally (the hooks, the stack walker, stacks, events), libunwind
# (walks ours leaves to it), memtally (memtally record: encoding and
# compression), libzstd, the kernel, the clock (vDSO), libc and the
# program; then libmemtally's functions in full mode, and how the stacks
# were found (frames walked or reused, lookups guessed).  Needs perf
# (linux-perf).  About 30 s.   sh bench/profile.sh
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
command -v perf >/dev/null 2>&1 || { echo "perf is not installed (apt-get install linux-perf)"; exit 1; }
[ -x "$B/storm" ] || ${CC:-cc} -O2 -g -Wall -pthread -o "$B/storm" bench/workloads/storm.c
[ -x "$B/binarytrees" ] || ${CC:-cc} -O2 -g -Wall -o "$B/binarytrees" bench/workloads/binarytrees.c
# shares SORT: perf's report of profile.data by SORT, summed per key, the
# keys of 0.5% or more (of libmemtally.so's functions only, by symbol).
shares() {
    perf report -i "$B/profile.data" --no-children --sort "$1" --stdio 2>/dev/null |
        awk -v by="$1" '/%/ && $1 ~ /%$/ { sub(/%/, "", $1)
                 if (by == "dso") share[$2] += $1; else if ($2 == "libmemtally.so") share[$4] += $1 }
             END { for (o in share) if (share[o] >= 0.5) printf "  %6.1f%%  %s\n", share[o], o }' |
        sort -rn
}
for run in "storm full" "storm sampled" "bintree full"; do
    set -- $run
    opt=; [ "$2" = sampled ] && opt=--sample
    if [ "$1" = storm ]; then
        set -- "$1" "$2" "$B/storm" 1 1000000; what="storm, 1 thread"
    else
        set -- "$1" "$2" "$B/binarytrees" 15; what="binary trees, depth 15"
    fi
    mode=$2; shift 2
    perf record -q -o "$B/profile.data" -- build/memtally record -q $opt -o "$B/profile.mtly" \
        -- "$@" >/dev/null 2>&1
    echo "== $what, $mode mode: share of all cycles by object"
    shares dso
    if [ "$mode" = full ]; then
        echo "   libmemtally.so's part, by function"
        shares dso,sym
    fi
    rm -f "$B/profile.data" "$B/profile.mtly"
    # How the stacks were found: walked frames against reused ones, and
    # lookups that missed the thread's cache against those guessed right
    # (docs/DESIGN.md, "Unique stacks"); MEMTALLY_UNWIND=check prints them.
    echo "   stacks: $(MEMTALLY_UNWIND=check build/memtally record -q $opt -o "$B/profile.mtly" \
        -- "$@" 2>&1 >/dev/null | sed -n 's/.*differed; //p')"
    rm -f "$B/profile.mtly"
done
