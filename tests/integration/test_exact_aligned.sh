#!/bin/sh
# Exact counts of tests/programs/exact_aligned.c: posix_memalign (one with a
# bad alignment that fails), aligned_alloc, memalign, valloc, pvalloc(100)
# (counted as 100 bytes, the requested size).  Truth from the code:
#   6 allocations, 4 frees, 3762 bytes, peak 3622, 110 live at end, 1 thread.
# (valgrind 3.19 cannot run pvalloc; with it replaced by memalign(page, 100)
# it agrees.)
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_aligned"
check trace.mtly 6 4 3762 3622 110 1
