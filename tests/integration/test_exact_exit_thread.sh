#!/bin/sh
# Exact counts of tests/programs/exact_exit_thread.c: a thread that is not
# main calls exit(3) while another thread runs and main waits in
# pthread_join.  D is the size of the DTV that pthread_create callocs (see
# test_exact_threads.sh); the program prints it.  Truth from the code
# (valgrind agrees):
#   6 allocations, 1 free, 960 + 2D bytes, peak 960 + 2D, 704 + 2D live at
#   end, 3 threads.
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

same_run 3 "$TEST_PROGRAMS/exact_exit_thread"
d=$(sed -n 's/^dtv_bytes //p' traced.err)
case "$d" in ''|*[!0-9]*) fail "exact_exit_thread printed no dtv_bytes line" ;; esac
check trace.mtly 6 1 $((960 + 2 * d)) $((960 + 2 * d)) $((704 + 2 * d)) 3
