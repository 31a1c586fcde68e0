#!/bin/sh
# The profilers' memory: every process of a run, each one's peak resident
# set (VmHWM, which only grows, read from /proc every 20 ms while it runs),
# summed, with shared memory counted once (memtally record and the program
# share the region: its stack nodes and event chunks; the largest RssShmem
# seen in any one process stands for it); for the program alone, under
# heaptrack (its launcher script, the program, heaptrack_interpret and the
# compressor) and under memtally record (the program and memtally record).
# The recorder's memory is that less the program alone; then memtally's
# part split by process (in the program, memtally record, shared).  One run each,
# interleaved by workload; the workloads and inputs are bench/run.sh's.
#   sh bench/memory.sh [-w "W1 W2 ..."] [-q]     (-q: bench/run.sh's small sizes)
list="storm1 storm2 sqlite python cc1 bintree perl gitlog" quick=0
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    -q) quick=1; shift ;;
    *) echo "usage: sh bench/memory.sh [-w LIST] [-q]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
HEAPTRACK=${HEAPTRACK:-heaptrack}
if [ "$quick" = 1 ]; then bench_sizes quick; else bench_sizes default; fi
mkdir -p "$B" "$OUT" || exit 1
MEMTALLY_INDEX_DIR=$(pwd)/$B/run-index
export MEMTALLY_INDEX_DIR
bench_inputs || exit 1

# descendants PID: PID and every process below it, one a line.
descendants() {
    echo "$1"
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
        descendants "$c"
    done
}

# peak_kib COMMAND...: runs it (stdin from $inp, output dropped) and prints
# the sum over its processes of each one's highest VmHWM seen, shared
# memory counted once, in KiB.
peak_kib() {
    # $envs is split on blanks on purpose.
    # shellcheck disable=SC2086
    env $envs "$@" <"$inp" >/dev/null 2>&1 &
    top=$!
    : > "$OUT/hwm"
    while kill -0 "$top" 2>/dev/null; do
        for p in $(descendants "$top"); do
            awk -v p="$p" '/^Name:/ { n = $2 } /^VmHWM:/ { h = $2 } /^RssShmem:/ { s = $2 }
                END { if (h != "") print p, h, s + 0, n }' /proc/"$p"/status 2>/dev/null >> "$OUT/hwm"
        done
        sleep 0.02
    done
    wait "$top"
    awk '{ if ($2 > h[$1]) h[$1] = $2; if ($3 > s[$1]) s[$1] = $3 }
         END { for (p in h) { t += h[p] - s[p]; if (s[p] > m) m = s[p] }; print t + m }' "$OUT/hwm"
}

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# split_line WORKLOAD BASE_KIB: from the last peak_kib's samples (a run
# under memtally record), its parts in MiB: the program's own memory
# beyond its peak alone (the recorder's tables in it), memtally record's,
# and the memory they share (the region: stack nodes, event chunks).
split_line() {
    awk -v w="$1" -v base="$2" '{ if ($2 > h[$1]) h[$1] = $2; if ($3 > s[$1]) s[$1] = $3; n[$1] = $4 }
        END { for (p in h) { if (n[p] == "memtally") r += h[p] - s[p]; else g += h[p] - s[p]
                             if (s[p] > m) m = s[p] }
              printf "%-9s %14.1f %16.1f %12.1f\n", w, (g - base) / 1024, r / 1024, m / 1024 }' "$OUT/hwm"
}

: > "$OUT/split"
have_ht=0
command -v "$HEAPTRACK" >/dev/null 2>&1 && have_ht=1
printf '%-9s %10s %12s %12s %14s %14s\n' workload "alone MiB" "heaptrack" "memtally" \
    "ht recorder" "mt recorder"
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086
    base=$(peak_kib $cmd)
    ht=n/a htr=n/a
    if [ "$have_ht" = 1 ]; then
        rm -f "$OUT/ht.mem".*
        # shellcheck disable=SC2086
        k=$(peak_kib "$HEAPTRACK" -o "$OUT/ht.mem" $cmd)
        ht=$(mib "$k") htr=$(mib $((k - base)))
        rm -f "$OUT/ht.mem".*
    fi
    # shellcheck disable=SC2086
    k=$(peak_kib "$MEMTALLY_BIN" record -q -o "$OUT/mt.mem.mtly" -- $cmd)
    split_line "$w" "$base" >> "$OUT/split"
    rm -f "$OUT/mt.mem.mtly"
    printf '%-9s %10s %12s %12s %14s %14s\n' "$w" "$(mib "$base")" "$ht" "$(mib "$k")" \
        "$htr" "$(mib $((k - base)))"
done
echo "MiB: the sum of each process's peak resident set (VmHWM, sampled every 20 ms),"
echo "shared memory counted once; recorder = the run under the tool less the program alone."
echo
echo "memtally's part, by where it lives (MiB; each its own peak, so they need not add up):"
printf '%-9s %14s %16s %12s\n' workload "in the program" "memtally record" "shared"
cat "$OUT/split"
echo "in the program: its peak less its peak alone (the recorder's tables of stacks);"
echo "memtally record: its own memory; shared: the region (stack nodes, event chunks)."
