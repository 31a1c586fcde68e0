# A crash: tests/programs/exact_segv.c allocates, waits, then dies of
# SIGSEGV.  memtally must die the same way (exit status 139 from sh), and
# the trace must hold the allocations, complete: its handler flushed it.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
"$TEST_PROGRAMS/exact_segv" 2>/dev/null
expect_eq "exit status without memtally" 139 $?
(ulimit -c 0; "$MEMTALLY_BIN" record -q -o segv.mtly -- "$TEST_PROGRAMS/exact_segv") 2>/dev/null
expect_eq "exit status through memtally" 139 $?
[ -f segv.mtly ] || fail "no trace after the crash"
check segv.mtly 3 1 600 600 500 1
