#!/bin/sh
# What attaching costs a running process (bench/attach_cost.c: malloc +
# free pairs, counted every half second): pairs per second before, while
# attached (full, then sampled) and after each detach, as ratios to
# before; how long memtally held the process's thread; the longest gap the
# program saw in each phase.  About 20 s.   sh bench/attach.sh
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -g -o "$B/attach_cost" bench/attach_cost.c
"$B/attach_cost" 21 >"$B/attach_cost.out" &
pid=$!
phase() { sleep 3.5; echo "$1 $(wc -l <"$B/attach_cost.out")" >>"$B/attach_phases"; }
rm -f "$B/attach_phases"
echo "start 0" >"$B/attach_phases"
phase before
build/memtally attach -o "$B/attach.mtly" "$pid" 2>"$B/attach1.err" &
a=$!
sleep 0.5
phase full
kill -INT $a; wait $a
phase after-full
build/memtally attach --sample -o "$B/attach.mtly" "$pid" 2>"$B/attach2.err" &
a=$!
sleep 0.5
phase sampled
kill -INT $a; wait $a
phase after-sampled
wait $pid
# Each phase: the median of its windows but the first (the switch).
awk 'NR == FNR { name[FNR] = $1; end[FNR] = $2; n = FNR; next }
     { rate[FNR] = $1; gap[FNR] = $2 }
     END {
       for (p = 2; p <= n; p++) {
         k = 0; g = 0
         for (i = end[p - 1] + 2; i <= end[p]; i++) { v[++k] = rate[i]; if (gap[i] > g) g = gap[i] }
         for (i = end[p - 1] + 1; i <= end[p]; i++) if (gap[i] > g) g = gap[i]
         for (i = 2; i <= k; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
         m = v[int((k + 1) / 2)]
         if (p == 2) base = m
         printf "%-14s %12.0f pairs/s  %5.2fx of before  longest gap %6.2f ms\n", name[p], m, base / m, g
         delete v
       }
     }' "$B/attach_phases" "$B/attach_cost.out"
sed -n 's/.*which was held \([0-9.]*\) ms.*/held while attaching (full): \1 ms/p' "$B/attach1.err"
sed -n 's/.*which was held \([0-9.]*\) ms.*/held while attaching (sampled): \1 ms/p' "$B/attach2.err"
rm -f "$B/attach.mtly" "$B/attach_phases" "$B/attach_cost.out"
