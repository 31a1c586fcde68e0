#!/bin/sh
# tests/programs/exact_exec.c allocates and then execv()s exact_basic.
# Without --follow-exec only exact_exec's trace exists; with it, exact_basic
# (same pid) gets a trace of its own.  The traces take their default names
# (PROGRAM.PID.mtly in the current directory).  Truth from the code
# (valgrind agrees):
#   exact_exec:  2 allocations, 1 free, 1000 bytes, peak 1000, 700 live, 1 thread
#   exact_basic: 7 allocations, 5 frees, 3351 bytes, peak 3050, 2050 live, 1 thread
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

# traced DIR ARGS: memtally record -q ARGS -- exact_exec exact_basic, run in
# DIR; exit status 0 and stdout as without memtally.  Sets before and after
# to the traces of exact_exec and exact_basic found in DIR ("" if none) and n
# to the number of traces there.
traced() {
    dir=$1; shift
    mkdir "$dir"
    (cd "$dir" && exec "$MEMTALLY_BIN" record -q "$@" -- "$prog" "$basic") >traced.out
    expect_eq "exit status through memtally" 0 $?
    cmp plain.out traced.out || fail "stdout differs through memtally"
    before=; after=; n=0
    for t in "$dir"/*.mtly; do
        [ -e "$t" ] || continue
        n=$((n + 1))
        p=$(info_get "$t" program) || fail "memtally info --json $t failed"
        case "$(basename "$p")" in
            exact_exec) before=$t ;;
            exact_basic) after=$t ;;
            *) fail "$t: unexpected program $p" ;;
        esac
    done
    [ -n "$before" ] || fail "no trace of exact_exec in $dir"
}

prog="$TEST_PROGRAMS/exact_exec"
basic="$TEST_PROGRAMS/exact_basic"
"$prog" "$basic" >plain.out; expect_eq "exit status without memtally" 0 $?

traced nofollow
expect_eq "traces without --follow-exec" 1 $n
check "$before" 2 1 1000 1000 700 1

traced follow --follow-exec
expect_eq "traces with --follow-exec" 2 $n
[ -n "$after" ] || fail "no trace of exact_basic with --follow-exec"
expect_eq "pid after exec" "$(info_get "$before" pid)" "$(info_get "$after" pid)"
check "$before" 2 1 1000 1000 700 1
check "$after" 7 5 3351 3050 2050 1
