#!/bin/sh
# Exact counts of tests/programs/exact_dlopen.c, which dlopen()s a library
# built here from tests/programs/exact_plugin.c.in, calls it (3 allocations,
# 4888 bytes) and dlclose()s it.  dlopen and dlclose allocate inside glibc
# (7 allocations, 3846 bytes for the name "./exact_plugin.so"), so the truth
# is valgrind's count (see the program):
#   10 allocations, 9 frees, 8734 bytes, peak 8726, 2304 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

${CC:-cc} -x c -shared -fPIC -o exact_plugin.so \
    "$MEMTALLY_ROOT/tests/programs/exact_plugin.c.in" || fail "cannot build the plugin"
same_run 0 "$TEST_PROGRAMS/exact_dlopen" ./exact_plugin.so
# 7 of these allocations (3846 bytes, 2304 of them live at the end) are
# glibc 2.36's inside dlopen: constants of that version, not of memtally.
check trace.mtly 10 9 8734 8726 2304 1
