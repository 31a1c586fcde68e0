#!/bin/sh
# Exact counts of tests/programs/exact_dlopen.c, which dlopen()s a library
# built here from tests/programs/exact_plugin.c.in, calls it (3 allocations,
# 4888 bytes) and dlclose()s it.  dlopen and dlclose allocate inside glibc
# (7 allocations, 3846 bytes for the name "./exact_plugin.so"), so the truth
# is valgrind's count (see the program):
#   10 allocations, 9 frees, 8734 bytes, peak 8726, 2304 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

# check TRACE ALLOCS FREES BYTES PEAK LIVE THREADS: every count of TRACE, and
# that TRACE was not cut short.
check() {
    json=$("$MEMTALLY_BIN" info --json "$1") || fail "memtally info --json $1 failed"
    set -- "$1" allocations "$2" frees "$3" bytes_allocated "$4" \
        peak_live_bytes "$5" live_bytes_at_end "$6" threads "$7" truncated false
    trace=$1; shift
    while [ $# -gt 0 ]; do
        expect_eq "$trace $1" "$2" "$(printf "%s\n" "$json" | jq -r ".$1")"
        shift 2
    done
}

# same_run STATUS PROGRAM ARGS: PROGRAM exits with STATUS, without memtally
# and recorded into trace.mtly, and prints the same stdout both ways.
same_run() {
    want=$1; shift
    "$@" >plain.out; expect_eq "exit status without memtally" "$want" $?
    record trace.mtly "$@" >traced.out 2>traced.err
    status=$?
    cat traced.err >&2
    expect_eq "exit status through memtally" "$want" $status
    cmp plain.out traced.out || fail "stdout differs through memtally"
}

${CC:-cc} -x c -shared -fPIC -o exact_plugin.so \
    "$MEMTALLY_ROOT/tests/programs/exact_plugin.c.in" || fail "cannot build the plugin"
same_run 0 "$TEST_PROGRAMS/exact_dlopen" ./exact_plugin.so
check trace.mtly 10 9 8734 8726 2304 1
