#!/bin/sh
# Exact counts of tests/programs/exact_basic.c: malloc, calloc, free, free(NULL),
# malloc(0) and two failing allocations.  Truth from the code (valgrind agrees):
#   7 allocations, 5 frees, 3351 bytes, peak 3050, 2050 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_basic"
check trace.mtly 7 5 3351 3050 2050 1

# MEMTALLY_WRITER=discard (a measurement of the writer, bench/compare.sh
# -e): the same program runs, memtally record drops its events, says so,
# and the trace holds none.
MEMTALLY_WRITER=discard "$MEMTALLY_BIN" record -q -o discard.mtly -- "$TEST_PROGRAMS/exact_basic" \
    >/dev/null 2>discard.err || fail "record under MEMTALLY_WRITER=discard failed"
grep -q "MEMTALLY_WRITER=discard: events are dropped" discard.err ||
    fail "no notice of the dropped events: $(cat discard.err)"
check discard.mtly 0 0 0 0 0 0
