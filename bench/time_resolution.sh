#!/bin/sh
# What the times cost in a trace: each workload recorded once by heaptrack
# (one time every 10 ms) and once by memtally at each resolution of
# `record --time-resolution`; the traces' bytes and their ratio to
# heaptrack's final trace.  The allocations each trace counts must be the
# same at every resolution (within 0.1%: cc1's own count moves by a few
# dozen from run to run), or the script says so and fails.  About 2
# minutes for the default workloads.
#   sh bench/time_resolution.sh [-w "W1 W2..."] [-t "1us 100us 1ms 10ms"]
# MEMTALLY_BIN and HEAPTRACK name other builds (defaults build/memtally,
# heaptrack).
list="storm1 sqlite python cc1 bintree perl gitlog"
steps="1us 100us 1ms 10ms"
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    -t) steps=$2; shift 2 ;;
    *) echo "usage: sh bench/time_resolution.sh [-w LIST] [-t STEPS]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=${MEMTALLY_BIN:-build/memtally}
HEAPTRACK=${HEAPTRACK:-heaptrack}
[ -x "$M" ] || { echo "bench: $M not found (run make)" >&2; exit 1; }
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
have_ht=0
command -v "$HEAPTRACK" >/dev/null 2>&1 && have_ht=1

printf "%-8s %12s" workload heaptrack
for s in $steps; do printf " %12s %7s" "$s" "/ht"; done
echo
status=0
for w in $list; do
    workload "$w"
    ht=n/a
    if [ "$have_ht" = 1 ]; then
        rm -f "$OUT/tr.ht".*
        # shellcheck disable=SC2086
        if env $envs "$HEAPTRACK" -o "$OUT/tr.ht" $cmd <"$inp" >/dev/null 2>&1; then
            ht=$(stat -c %s "$OUT"/tr.ht.* 2>/dev/null | head -1)
        fi
        rm -f "$OUT/tr.ht".*
        [ -n "$ht" ] || ht=n/a
    fi
    printf "%-8s %12s" "$w" "$ht"
    first=
    for s in $steps; do
        rm -f "$OUT/tr.mtly"
        # shellcheck disable=SC2086
        env $envs "$M" record -q --time-resolution="$s" -o "$OUT/tr.mtly" -- $cmd <"$inp" \
            >/dev/null 2>&1 || { echo; echo "bench: $w at $s failed" >&2; exit 1; }
        n=$(stat -c %s "$OUT/tr.mtly")
        a=$("$M" info --json "$OUT/tr.mtly" | sed -n 's/.*"allocations": *\([0-9]*\).*/\1/p')
        [ -z "$first" ] && first=$a
        if [ "$(awk "BEGIN { d = $a - $first; print ((d < 0 ? -d : d) * 1000 > $first) }")" = 1 ]; then
            echo; echo "bench: $w at $s counts $a allocations, $first at ${steps%% *}" >&2
            status=1
        fi
        if [ "$ht" = n/a ]; then r=n/a; else r=$(awk "BEGIN { printf \"%.2f\", $n / $ht }"); fi
        printf " %12s %7s" "$n" "$r"
    done
    echo
    rm -f "$OUT/tr.mtly"
done
exit $status
