#!/bin/sh
# The events' clock (src/preload/clock.c: CLOCK_MONOTONIC read through the
# TSC, anchored to clock_gettime): tests/programs/clock_steps reads
# CLOCK_MONOTONIC just before and just after each of 60 mallocs, 50 ms
# apart (3 s, across every re-anchoring of the line); each allocation's time
# in the trace, counted from the first's, must lie between the program's
# own readings (to the trace's microsecond).  Threads and a fork keep the
# per-thread order (test_exact_threads, test_exact_fork).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
record c.mtly "$TEST_PROGRAMS/clock_steps" 60 50 > steps.txt || fail "record failed"
"$MEMTALLY_BIN" dump c.mtly |
    awk '$3 == "alloc" { split($5, a, "="); s = a[2]; if (s >= 1000 && s < 1060) print s - 1000, $1 }' |
    sort -n > trace.txt
expect_eq "allocations found in the trace" 60 "$(wc -l < trace.txt)"
join steps.txt trace.txt | awk '
    NR == 1 { b0 = $2; a0 = $3; t0 = $4; next }
    { lo = ($2 - a0) / 1000.0 - 1; hi = ($3 - b0) / 1000.0 + 1; dt = $4 - t0
      if (dt < lo || dt > hi) { printf "allocation %d at %d us, the program saw it between %.1f and %.1f\n", $1, dt, lo, hi; bad++ }
      n++ }
    END { printf "%d allocations checked\n", n; exit bad > 0 }' || fail "trace times outside the program's own readings"
echo "ok: every time within the program's readings"
