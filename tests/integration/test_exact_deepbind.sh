#!/bin/sh
# A library opened with RTLD_DEEPBIND binds malloc and free to libc's, past
# the preloaded hooks.  tests/programs/exact_deepbind.c allocates 777 bytes,
# opens tests/programs/exact_plugin.c.in (built here) that way, calls it
# (3 allocations, 2 frees, 4888 bytes) and has it free the 777-byte block
# and the one it returned.  Truth (valgrind --trace-malloc=yes, glibc 2.36;
# dlopen and dlclose allocate 3846 bytes inside glibc, as in
# test_exact_dlopen.sh, of which 2304 stay live): 11 allocations, 10 frees,
# 9511 bytes, peak 9503, 2304 live at the end.  Before the library's
# references were redirected: 8 allocations, 6 frees, and the 777-byte
# block shown as leaked.  The flag stays: the program binds as without us.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

${CC:-cc} -x c -shared -fPIC -o exact_plugin.so \
    "$MEMTALLY_ROOT/tests/programs/exact_plugin.c.in" || fail "cannot build the plugin"
same_run 0 "$TEST_PROGRAMS/exact_deepbind" ./exact_plugin.so
check trace.mtly 11 10 9511 9503 2304 1
expect_eq "frees of blocks never seen" 0 "$(info_get trace.mtly unmatched_frees)"
"$MEMTALLY_BIN" leaks trace.mtly >leaks.txt || fail "leaks failed"
grep -q "777" leaks.txt && fail "the block the library freed shows as a leak: $(cat leaks.txt)"

# Lazy binding: the library's slots still hold its PLT stubs when it loads.
same_run 0 "$TEST_PROGRAMS/exact_deepbind" ./exact_plugin.so lazy
check trace.mtly 11 10 9511 9503 2304 1
echo "ok: RTLD_DEEPBIND, now and lazy"
