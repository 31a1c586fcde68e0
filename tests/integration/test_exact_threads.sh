#!/bin/sh
# Exact counts of tests/programs/exact_threads.c: 4 worker threads allocate,
# a 5th does not, blocks are freed by other threads than allocated them.
# pthread_create callocs each new thread's DTV, D bytes, in main; D depends on
# the TLS modules loaded (memtally's own library among them), so the program
# prints it on stderr ("dtv_bytes D").  Truth from the code (valgrind agrees):
#   21 allocations, 16 frees, 1836 + 5D bytes, peak 1736 + 5D,
#   5D live at end, 5 threads (main and the 4 workers).
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

same_run 0 "$TEST_PROGRAMS/exact_threads"
d=$(sed -n 's/^dtv_bytes //p' traced.err)
case "$d" in ''|*[!0-9]*) fail "exact_threads printed no dtv_bytes line" ;; esac
check trace.mtly 21 16 $((1836 + 5 * d)) $((1736 + 5 * d)) $((5 * d)) 5
