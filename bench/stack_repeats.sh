#!/bin/sh
# How soon an allocation's stack comes back: each workload (bench/run.sh's,
# at the quick sizes) recorded in full, then for N = 1, 4, 16, 64 and 256
# the share of its allocations whose stack is that of one of the thread's
# N allocations before.  What a cache of recent stacks per thread (walk
# checked against a kept one instead of stepped frame by frame) could
# serve: the recorder reuses the last walk only (N = 1 for the whole stack;
# the frames shared with it otherwise).  About a minute for all of them.
#   sh bench/stack_repeats.sh [-w "W1 W2..."]
#     -w LIST   workloads (default all: storm1 sqlite python cc1 bintree
#               perl gitlog)
list="storm1 sqlite python cc1 bintree perl gitlog"
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=${MEMTALLY_BIN:-build/memtally}
[ -x "$M" ] || { echo "bench: $M not found (run make)" >&2; exit 1; }
mkdir -p "$B" "$OUT" || exit 1
bench_sizes quick
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
printf '%-10s %10s %7s %7s %7s %7s %7s\n' workload allocs "N=1" "N=4" "N=16" "N=64" "N=256"
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086  # cmd and envs are word lists
    env $envs "$M" record -q -o "$B/repeats.mtly" -- $cmd <"$inp" >/dev/null 2>&1 ||
        { echo "bench: recording $w failed" >&2; exit 1; }
    # dump: "TIME tTHREAD alloc ptr=... size=... stack=ID"; per thread, the
    # distance in allocations to the last one with the same stack.
    "$M" dump "$B/repeats.mtly" | awk -v w="$w" '
        $3 == "alloc" {
            for (i = 4; i <= NF; i++)
                if ($i ~ /^stack=/) s = substr($i, 7)
            n[$2]++
            k = $2 " " s
            if (k in last) {
                d = n[$2] - last[k]
                for (j = 1; j <= 5; j++) if (d <= lim[j]) hit[j]++
            }
            last[k] = n[$2]
            total++
        }
        BEGIN { lim[1] = 1; lim[2] = 4; lim[3] = 16; lim[4] = 64; lim[5] = 256 }
        END {
            printf "%-10s %10d", w, total
            for (j = 1; j <= 5; j++) printf " %6.1f%%", total ? 100 * hit[j] / total : 0
            printf "\n"
        }' || exit 1
    rm -f "$B/repeats.mtly"
done
