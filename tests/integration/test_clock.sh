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
clock_steps_times c.mtly steps.txt 60 1
echo "ok: every time within the program's readings"
