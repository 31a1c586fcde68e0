#!/bin/sh
# Exact counts of tests/programs/exact_cxx.cc: new/delete, new[]/delete[] (with
# an array cookie), std::vector growth after reserve, std::string growth, and
# libstdc++'s 72704-byte emergency pool, freed at exit (__gnu_cxx::__freeres,
# as valgrind does).  Truth from the code (valgrind agrees):
#   9 allocations, 9 frees, 73878 bytes, peak 73704, 0 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_cxx"
# 72704 (in every figure but the frees) is the size of the emergency pool of
# one libstdc++, GCC 12's (Debian 12): a constant of that version, not of
# memtally (tunable with GLIBCXX_TUNABLES since GCC 13).
check trace.mtly 9 9 73878 73704 0 1
