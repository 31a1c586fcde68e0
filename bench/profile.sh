#!/bin/sh
# Where a recorded program's time goes: `perf record` of the one-thread
# storm (bench/workloads/storm.c, 1,000,000 operations) under memtally
# record, full mode and sampled, and of binary trees (depth 15) in full
# mode, every process and thread of the run counted; the cycles by
# process (the program's against memtally record's, which encodes and
# compresses on the other core), by object: libmemtally (the hooks, the
# stack walker, stacks, events), libunwind (walks ours leaves to it),
# memtally (memtally record), libzstd, the kernel, the clock (vDSO), libc
# and the program; then libmemtally's functions, and how the
# stacks were found (frames walked or reused, lookups guessed, recent
# stacks found, stacks made and put in the table when looked up again);
# and the huge pages the kernel made and zeroed during the run
# (thp_fault_alloc in /proc/vmstat: the whole machine's, so run it alone).
# Needs perf (linux-perf).  About 30 s.
#   sh bench/profile.sh [-s] [-w "W1 W2..."] [-t SECONDS]
#     -w LIST   instead, these of bench/run.sh's workloads (storm1 storm2
#               sqlite python cc1 bintree perl gitlog), full mode, at their
#               default sizes
#     -s        with -w: sampled mode (--sample) instead of full
#     -t T      also the program's first T seconds alone (binary trees'
#               first trees, all new stacks: -t 0.4), its samples by
#               function of every object
# MEMTALLY_BIN names another build's memtally to profile.
set -e
cd "$(dirname "$0")/.."
list= mode=full first=
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    -s) mode=sampled; shift ;;
    -t) first=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
command -v perf >/dev/null 2>&1 || { echo "perf is not installed (apt-get install linux-perf)"; exit 1; }
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=${MEMTALLY_BIN:-build/memtally}
mkdir -p "$B" "$OUT"
bench_sizes default
if [ -n "$list" ]; then
    bench_inputs
else
    [ -x "$B/storm" ] || $CC -O2 -g -Wall -pthread -o "$B/storm" bench/workloads/storm.c
    [ -x "$B/binarytrees" ] || $CC -O2 -g -Wall -o "$B/binarytrees" bench/workloads/binarytrees.c
fi
# shares SORT: perf's report of profile.data by SORT, summed per key, the
# keys of 0.5% or more (of libmemtally.so's functions only, by symbol).
shares() {
    perf report -i "$B/profile.data" --no-children --sort "$1" --stdio 2>/dev/null |
        awk -v by="$1" '/%/ && $1 ~ /%$/ { sub(/%/, "", $1)
                 if (by == "dso" || by == "comm") share[$2] += $1
                 else if ($2 == "libmemtally.so") share[$4] += $1 }
             END { for (o in share) if (share[o] >= 0.5) printf "  %6.1f%%  %s\n", share[o], o }' |
        sort -rn
}
# early T: the program's samples (not memtally record's) in its first T
# seconds, by function, those of 1% or more.
early() {
    perf script -i "$B/profile.data" -F comm,time,ip,sym 2>/dev/null |
        awk -v span="$1" '$1 != "memtally" { t = $2 + 0; if (!t0) t0 = t
                 if (t - t0 < span) { n++; share[$4]++ } }
             END { for (f in share) if (share[f] * 100 >= n) printf "  %6.1f%%  %s\n", 100 * share[f] / n, f }' |
        sort -rn
}
thp() { awk '$1 == "thp_fault_alloc" { print $2 }' /proc/vmstat; }
# profile WHAT MODE: the run of $cmd (with $envs, stdin $inp).
profile() {
    opt=; [ "$2" = sampled ] && opt=--sample
    huge=$(thp)
    # shellcheck disable=SC2086
    env $envs perf record -q -o "$B/profile.data" -- "$M" record -q $opt \
        -o "$B/profile.mtly" -- $cmd <"$inp" >/dev/null 2>&1
    huge=$(($(thp) - huge))
    echo "== $1, $2 mode: share of all cycles by process"
    shares comm
    echo "   by object"
    shares dso
    echo "   libmemtally.so's part, by function"
    shares dso,sym
    if [ -n "$first" ]; then
        echo "   the program's first $first s alone, by function"
        early "$first"
    fi
    echo "   huge pages the kernel made and zeroed during the run: $huge"
    rm -f "$B/profile.data" "$B/profile.mtly"
    # How the stacks were found: walked frames against reused ones,
    # lookups that missed the thread's cache against those guessed right
    # (docs/DESIGN.md, "Unique stacks"), recent stacks found against kept;
    # MEMTALLY_UNWIND=check prints them.
    # shellcheck disable=SC2086
    echo "   stacks: $(env $envs MEMTALLY_UNWIND=check "$M" record -q $opt \
        -o "$B/profile.mtly" -- $cmd <"$inp" 2>&1 >/dev/null | sed -n 's/.*differed; //p')"
    rm -f "$B/profile.mtly"
}
if [ -n "$list" ]; then
    for w in $list; do
        workload "$w"
        profile "$w ($cmd)" "$mode"
    done
    exit 0
fi
envs= inp=/dev/null
cmd="$B/storm 1 1000000"
profile "storm, 1 thread" full
profile "storm, 1 thread" sampled
cmd="$B/binarytrees 15"
profile "binary trees, depth 15" full
