#!/bin/sh
# Exact counts of tests/programs/exact_basic.c: malloc, calloc, free, free(NULL),
# malloc(0) and two failing allocations.  Truth from the code (valgrind agrees):
#   7 allocations, 5 frees, 3351 bytes, peak 3050, 2050 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_basic"
check trace.mtly 7 5 3351 3050 2050 1
