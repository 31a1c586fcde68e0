#!/bin/sh
# Exact counts of tests/programs/exact_ctor_cxx.cc: before main, libstdc++
# allocates its 72704-byte emergency exception pool, a global object's
# constructor allocates 100 bytes and a constructor function 40.  Truth from
# the code (valgrind agrees, it shows the pool):
#   4 allocations, 2 frees, 72908 bytes, peak 72844, 72768 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_ctor_cxx"
# 72704 (in every byte figure) is the size of the emergency pool of one
# libstdc++, GCC 12's (Debian 12): a constant of that version, not of
# memtally (tunable with GLIBCXX_TUNABLES since GCC 13).
check trace.mtly 4 3 72908 72844 64 1
