#!/bin/sh
# Exact counts of tests/programs/exact_ctor_c.c: a constructor allocates before
# main.  Truth from the code (valgrind agrees):
#   4 allocations, 3 frees, 676 bytes, peak 444, 333 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_ctor_c"
check trace.mtly 4 3 676 444 333 1
