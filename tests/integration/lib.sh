# Shared by the integration tests: sourced, never run.  Each test runs in its
# own empty directory ($TEST_TMP) with $MEMTALLY_BIN (the CLI), $TEST_PROGRAMS
# (the built tests/programs) and $TEST_TOOLS (the built tests/tools) set by
# tests/run.sh.
set -u
: "${MEMTALLY_BIN:?run through tests/run.sh}"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

# record TRACE PROGRAM ARGS...: records PROGRAM into TRACE, quietly.
record() {
    out=$1; shift
    "$MEMTALLY_BIN" record -q -o "$out" -- "$@"
}

# mktrace TRACE: writes TRACE from the description on stdin (the language is
# at the top of tests/tools/mktrace.c): a trace whose every time, size and
# stack the test chose.
mktrace() {
    "$TEST_TOOLS/mktrace" "$1" || fail "mktrace could not write $1"
}

# info_get TRACE KEY: one key of `memtally info --json TRACE`.
info_get() {
    "$MEMTALLY_BIN" info --json "$1" | jq -r ".$2"
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    [ "$2" = "$3" ] || fail "$1: expected $2, got $3"
    echo "ok: $1 = $3"
}

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

# clock_steps_times TRACE STEPS N SLACK_US: TRACE recorded
# tests/programs/clock_steps N MS, which printed STEPS; its N allocations
# must be in the trace, each one's time from the first's within SLACK_US
# of the program's own readings around it.  Leaves "i time" lines in
# trace.txt.
clock_steps_times() {
    "$MEMTALLY_BIN" dump "$1" |
        awk -v n="$3" '$3 == "alloc" { split($5, a, "="); s = a[2]; if (s >= 1000 && s < 1000 + n) print s - 1000, $1 }' |
        sort -n > trace.txt
    expect_eq "allocations found in the trace" "$3" "$(wc -l < trace.txt)"
    join "$2" trace.txt | awk -v slack="$4" '
        NR == 1 { b0 = $2; a0 = $3; t0 = $4; next }
        { lo = ($2 - a0) / 1000.0 - slack; hi = ($3 - b0) / 1000.0 + slack; dt = $4 - t0
          if (dt < lo || dt > hi) { printf "allocation %d at %d us, the program saw it between %.1f and %.1f\n", $1, dt, lo, hi; bad++ }
          n++ }
        END { printf "%d allocations checked\n", n; exit bad > 0 }' ||
        fail "trace times further than $4 us from the program's own readings"
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

# start_view NAME TRACE: starts `memtally view TRACE` in the background
# (stdout in NAME.out, stderr in NAME.err), waits for its address, and sets
# view_pid and view_url (ending in /).  Stop it with kill -INT $view_pid.
start_view() {
    "$MEMTALLY_BIN" view "$2" >"$1.out" 2>"$1.err" &
    view_pid=$!
    n=0
    while ! grep -q 'http://' "$1.out" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 100 ] || fail "view printed no address: $(cat "$1.out" "$1.err")"
        kill -0 $view_pid 2>/dev/null || fail "view exited: $(cat "$1.err")"
        sleep 0.1
    done
    view_url=$(grep -o 'http://[^ ]*' "$1.out")
}
