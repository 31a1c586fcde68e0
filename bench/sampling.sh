#!/bin/sh
# The cost of sampled mode (memtally record --sample, 512 KiB by default)
# against the program run alone, interleaved over R repetitions (median),
# on the workloads of bench/run.sh; and full mode beside it for scale.
#   sh bench/sampling.sh [-r N] [-q]    (-q: 1 repetition, small sizes)
# Target (docs/PERFORMANCE.md): sampled mode within 3% of the program alone.
reps=5 quick=0
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -q) quick=1 reps=1; shift ;;
    *) echo "usage: sh bench/sampling.sh [-r N] [-q]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench
OUT=$B/out
CC=${CC:-cc}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
if [ "$quick" = 1 ]; then
    STORM_OPS=100000 SQL_ROWS=5000 PY_ROUNDS=4 C_FUNCS=10
else
    STORM_OPS=1000000 SQL_ROWS=50000 PY_ROUNDS=40 C_FUNCS=60
fi
[ -x "$MEMTALLY_BIN" ] || { echo "bench: $MEMTALLY_BIN not found (run make)" >&2; exit 1; }
mkdir -p "$B" "$OUT" || exit 1
bench_inputs || exit 1

# run_once WORKLOAD MODE: prints the wall-clock seconds of one run.
run_once() {
    workload "$1"
    case $2 in
    base) pre="" ;;
    sample) pre="$MEMTALLY_BIN record -q --sample -o $OUT/s.mtly --" ;;
    full) pre="$MEMTALLY_BIN record -q -o $OUT/f.mtly --" ;;
    esac
    t0=$(date +%s%N)
    # shellcheck disable=SC2086  # cmd and pre are word lists
    env $envs $pre $cmd < "$inp" > /dev/null 2>&1
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 ))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "memtally sampled mode: median wall-clock seconds of $reps run(s), interleaved"
printf '%-10s %9s %9s %9s %10s %10s\n' workload "base s" "sample s" "full s" "sample ovh" "full ovh"
for w in storm1 storm2 sqlite python cc1; do
    : > "$OUT/t.base"; : > "$OUT/t.sample"; : > "$OUT/t.full"
    for i in $(seq "$reps"); do
        for m in base sample full; do
            run_once $w $m >> "$OUT/t.$m"
        done
    done
    b=$(median < "$OUT/t.base"); s=$(median < "$OUT/t.sample"); f=$(median < "$OUT/t.full")
    awk -v w=$w -v b="$b" -v s="$s" -v f="$f" 'BEGIN {
        printf "%-10s %9.3f %9.3f %9.3f %9.1f%% %9.1f%%\n", w, b/1e6, s/1e6, f/1e6,
               (s/b - 1) * 100, (f/b - 1) * 100 }'
done
echo "ovh = time / base - 1.  On a shared machine a difference of a few percent"
echo "is within the noise: read several runs (-r 9) before concluding."
