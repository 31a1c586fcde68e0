#!/bin/sh
# Exact counts of tests/programs/exact_realloc.c: realloc(NULL, n), grow,
# shrink, realloc(p, 0), reallocarray, and a failing realloc and reallocarray
# that count nothing.  Truth from the code (see the program for valgrind):
#   7 allocations, 6 frees, 5770 bytes, peak 5210, 50 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_realloc"
check trace.mtly 7 6 5770 5210 50 1
