#!/bin/sh
# tests/programs/exact_fork.c: parent and child allocate after fork(); the
# child also frees a block the parent allocated before the fork, which counts
# in neither trace (a free counts only against an allocation of its own trace).
# Truth from the code (valgrind agrees on the parent):
#   parent: 3 allocations, 2 frees, 1600 bytes, peak 1400, 400 live, 1 thread
#   child:  3 allocations, 1 free, 105 bytes, peak 100, 75 live, 1 thread
# Without --follow-fork only the parent's trace exists; with it, both.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

# traced NAME ARGS: memtally record -q ARGS -o NAME.%p.mtly -- exact_fork;
# exit status 0 and stdout as without memtally; sets parent and child.
traced() {
    name=$1; shift
    "$MEMTALLY_BIN" record -q "$@" -o "$name.%p.mtly" -- "$prog" >traced.out 2>traced.err
    status=$?
    cat traced.err >&2
    expect_eq "exit status through memtally" 0 $status
    cmp plain.out traced.out || fail "stdout differs through memtally"
    parent=$(sed -n 's/^fork: parent \([0-9]*\) child [0-9]*$/\1/p' traced.err)
    child=$(sed -n 's/^fork: parent [0-9]* child \([0-9]*\)$/\1/p' traced.err)
    [ -n "$parent" ] && [ -n "$child" ] || fail "exact_fork printed no pids"
}

prog="$TEST_PROGRAMS/exact_fork"
"$prog" >plain.out; expect_eq "exit status without memtally" 0 $?

traced nofollow
expect_eq "traces without --follow-fork" "nofollow.$parent.mtly" "$(echo nofollow.*.mtly)"
expect_eq "pid of the parent's trace" "$parent" "$(info_get "nofollow.$parent.mtly" pid)"
check "nofollow.$parent.mtly" 3 2 1600 1400 400 1

traced follow --follow-fork
expect_eq "traces with --follow-fork" \
    "$(printf '%s\n' "follow.$parent.mtly" "follow.$child.mtly" | sort | tr '\n' ' ')" \
    "$(ls follow.*.mtly | sort | tr '\n' ' ')"
expect_eq "pid of the parent's trace" "$parent" "$(info_get "follow.$parent.mtly" pid)"
expect_eq "pid of the child's trace" "$child" "$(info_get "follow.$child.mtly" pid)"
check "follow.$parent.mtly" 3 2 1600 1400 400 1
check "follow.$child.mtly" 3 1 105 100 75 1
