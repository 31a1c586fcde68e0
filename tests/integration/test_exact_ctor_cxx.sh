#!/bin/sh
# Exact counts of tests/programs/exact_ctor_cxx.cc: before main, libstdc++
# allocates its 72704-byte emergency exception pool, a global object's
# constructor allocates 100 bytes and a constructor function 40.  Truth from
# the code (valgrind agrees, it shows the pool):
#   4 allocations, 2 frees, 72908 bytes, peak 72844, 72768 live at end, 1 thread.
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

same_run 0 "$TEST_PROGRAMS/exact_ctor_cxx"
check trace.mtly 4 2 72908 72844 72768 1
