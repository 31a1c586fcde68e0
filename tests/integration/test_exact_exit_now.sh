#!/bin/sh
# Exact counts of tests/programs/exact_exit_now.c, which leaves with _exit(5)
# right after allocating.  Truth from the code (valgrind agrees):
#   3 allocations, 1 free, 150 bytes, peak 120, 50 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 5 "$TEST_PROGRAMS/exact_exit_now"
check trace.mtly 3 1 150 120 50 1
