#!/bin/sh
# Exact counts of tests/programs/exact_cxx.cc: new/delete, new[]/delete[] (with
# an array cookie), std::vector growth after reserve, std::string growth, and
# libstdc++'s 72704-byte emergency pool.  Truth from the code (valgrind agrees):
#   9 allocations, 8 frees, 73878 bytes, peak 73704, 72704 live at end, 1 thread.
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

same_run 0 "$TEST_PROGRAMS/exact_cxx"
check trace.mtly 9 8 73878 73704 72704 1
