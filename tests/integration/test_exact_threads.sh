#!/bin/sh
# Exact counts of tests/programs/exact_threads.c: 4 worker threads allocate,
# a 5th does not, blocks are freed by other threads than allocated them.
# pthread_create callocs each new thread's DTV, D bytes, in main; D depends on
# the TLS modules loaded (memtally's own library among them), so the program
# prints it on stderr ("dtv_bytes D").  Truth from the code (valgrind agrees):
#   21 allocations, 16 frees, 1836 + 5D bytes, peak 1736 + 5D,
#   5D live at end, 5 threads (main and the 4 workers).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

same_run 0 "$TEST_PROGRAMS/exact_threads"
d=$(sed -n 's/^dtv_bytes //p' traced.err)
case "$d" in ''|*[!0-9]*) fail "exact_threads printed no dtv_bytes line" ;; esac
# The 5 DTVs, one calloc per pthread_create in the creating thread, and
# their size D are glibc 2.36's (the program measures D as that version
# sizes it): constants of that version, not of memtally.
check trace.mtly 21 16 $((1836 + 5 * d)) $((1736 + 5 * d)) $((5 * d)) 5
