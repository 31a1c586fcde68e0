#!/bin/sh
# Exact counts of tests/programs/exact_exit_thread.c: a thread that is not
# main calls exit(3) while another thread runs and main waits in
# pthread_join.  D is the size of the DTV that pthread_create callocs (see
# test_exact_threads.sh); the program prints it.  Truth from the code
# (valgrind agrees):
#   6 allocations, 1 free, 960 + 2D bytes, peak 960 + 2D, 704 + 2D live at
#   end, 3 threads.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 3 "$TEST_PROGRAMS/exact_exit_thread"
d=$(sed -n 's/^dtv_bytes //p' traced.err)
case "$d" in ''|*[!0-9]*) fail "exact_exit_thread printed no dtv_bytes line" ;; esac
# The 2 DTVs and their size D are glibc 2.36's (see test_exact_threads.sh).
check trace.mtly 6 1 $((960 + 2 * d)) $((960 + 2 * d)) $((704 + 2 * d)) 3
