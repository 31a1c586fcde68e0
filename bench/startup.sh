#!/bin/sh
# memtally's fixed cost: what it adds to a program that does nothing
# (/bin/true), at start and at exit, each way it can record, against the
# program alone; N runs of each, interleaved in rounds of 10, the mean per
# run in microseconds.  The runs are short (about a millisecond), so a
# mean of many is steadier than a median of few.
#   sh bench/startup.sh [-n N]      (default 300 runs of each)
# Rows:
#   alone          /bin/true
#   env            env /bin/true (the floor of the preload row: env's exec)
#   cli            memtally --version (loading memtally and its libraries)
#   record         memtally record -q -o T -- /bin/true
#   sampled        memtally record -q --sample -o T -- /bin/true
#   preload        env LD_PRELOAD=build/libmemtally.so /bin/true: the
#                  program records on its own (its own writer thread, its
#                  trace in the current directory), as without memtally
#                  record
# Target (docs/PERFORMANCE.md, "Start-up"): record under 5 ms more than
# alone.
runs=300
while [ $# -gt 0 ]; do
    case $1 in
    -n) runs=$2; shift 2 ;;
    *) echo "usage: sh bench/startup.sh [-n N]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
M=${MEMTALLY_BIN:-build/memtally}
[ -x "$M" ] || { echo "bench: $M not found (run make)" >&2; exit 1; }
dir=$(cd "$(dirname "$M")" && pwd)
M=$dir/$(basename "$M")
LIB=$dir/libmemtally.so
[ -f "$LIB" ] || { echo "bench: $LIB not found (run make)" >&2; exit 1; }
TRUE=$(command -v true)
case $TRUE in /*) ;; *) TRUE=/bin/true ;; esac
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1 # the preload row writes its trace here

run_row() {
    case $1 in
    alone) "$TRUE" ;;
    env) env "$TRUE" ;;
    cli) "$M" --version ;;
    record) "$M" record -q -o t.mtly -- "$TRUE" ;;
    sampled) "$M" record -q --sample -o t.mtly -- "$TRUE" ;;
    preload) env LD_PRELOAD="$LIB" "$TRUE" ;;
    esac
}

rows="alone env cli record sampled preload"
for r in $rows; do eval "ns_$r=0"; done
rounds=$(( (runs + 9) / 10 ))
i=0
while [ $i -lt $rounds ]; do
    for r in $rows; do
        start=$(date +%s%N)
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            run_row "$r" >/dev/null 2>&1 || { echo "bench: the $r row failed" >&2; exit 1; }
        done
        end=$(date +%s%N)
        eval "ns_$r=\$((ns_$r + end - start))"
    done
    rm -f ./*.mtly
    i=$((i + 1))
done
n=$((rounds * 10))
echo "memtally's fixed cost: mean of $n runs of each, interleaved"
printf '%-16s %10s %12s\n' "row" "us a run" "us more"
eval "base=\$ns_alone"
for r in $rows; do
    eval "t=\$ns_$r"
    printf '%-16s %10d %12d\n' "$r" $((t / n / 1000)) $(((t - base) / n / 1000))
done
echo "us more: against alone (preload: against env, its own floor, $(((ns_preload - ns_env) / n / 1000)) us)."
echo "preload: the program records on its own, without memtally record."
