#!/bin/sh
# tests/programs/exact_abort.c allocates, sleeps 100 ms and abort()s:
# memtally dies by SIGABRT too (134 from sh), the stdout is unchanged, and
# the trace exists, is readable (cut short or not) and holds every allocation.
# Truth from the code (valgrind agrees):
#   3 allocations, 1 free, 4104 bytes, peak 4096, 104 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

ulimit -c 0
prog="$TEST_PROGRAMS/exact_abort"
"$prog" >plain.out; expect_eq "exit status without memtally" 134 $?
record trace.mtly "$prog" >traced.out; expect_eq "exit status through memtally" 134 $?
cmp plain.out traced.out || fail "stdout differs through memtally"
[ -s trace.mtly ] || fail "no trace after abort"
json=$("$MEMTALLY_BIN" info --json trace.mtly) || fail "memtally info --json fails on the trace"
set -- allocations 3 frees 1 bytes_allocated 4104 peak_live_bytes 4096 \
    live_bytes_at_end 104 threads 1
while [ $# -gt 0 ]; do
    expect_eq "trace.mtly $1" "$2" "$(printf '%s\n' "$json" | jq -r ".$1")"
    shift 2
done
truncated=$(printf '%s\n' "$json" | jq -r .truncated)
case "$truncated" in true|false) echo "ok: truncated = $truncated" ;;
    *) fail "truncated: expected true or false, got $truncated" ;; esac
