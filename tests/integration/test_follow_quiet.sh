#!/bin/sh
# A process that memtally record follows (--follow-fork, --follow-exec)
# hands its region to memtally record, which writes its trace: it runs no
# thread of ours, holds no descriptor of ours, and a SIGKILL loses none of
# its events (tests/programs/follow_quiet.c prints what the process sees;
# its stdout must be the same with memtally as without).  Truth from the
# code, for the child's or the exec'd image's trace:
#   N allocations, 0 frees, 100 N bytes, 100 N live at the end.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

prog="$TEST_PROGRAMS/follow_quiet"
n=5000

# traced MODE OPTION: memtally record OPTION into MODE.%p.mtly; stdout as
# without memtally; sets traces to the traces made.
traced() {
    mode=$1
    "$prog" "$mode" $n >"plain.$mode" || fail "follow_quiet $mode failed without memtally"
    "$MEMTALLY_BIN" record -q "$2" -o "$mode.%p.mtly" -- "$prog" "$mode" $n >"traced.$mode"
    expect_eq "exit status of follow_quiet $mode through memtally" 0 $?
    cat "traced.$mode"
    cmp "plain.$mode" "traced.$mode" || fail "follow_quiet $mode saw memtally (its stdout differs)"
    traces=$(ls "$mode".*.mtly*)
}

# the_one TRACE...: the trace of the N allocations among them.
the_one() {
    for t in "$@"; do
        [ "$(info_get "$t" allocations)" = 0 ] || { echo "$t"; return; }
    done
}

traced fork --follow-fork
expect_eq "traces of follow_quiet fork" 2 "$(echo $traces | wc -w)"
check "$(the_one $traces)" $n 0 $((100 * n)) $((100 * n)) $((100 * n)) 1

traced kill --follow-fork
grep -q "child ended: signal 9" traced.kill || fail "the child was not killed"
expect_eq "traces of follow_quiet kill" 2 "$(echo $traces | wc -w)"
check "$(the_one $traces)" $n 0 $((100 * n)) $((100 * n)) $((100 * n)) 1

traced exec --follow-exec
expect_eq "traces of follow_quiet exec" 2 "$(echo $traces | wc -w)"
image=$(the_one $traces)
check "$image" $n 0 $((100 * n)) $((100 * n)) $((100 * n)) 1
expect_eq "the image's command line" "image $n" \
    "$("$MEMTALLY_BIN" info --json "$image" | jq -r .command_line | cut -d' ' -f2-)"

# memtally ctl reaches a followed process through memtally record.
"$MEMTALLY_BIN" record -q --follow-fork -o "hold.%p.mtly" -- "$prog" hold $n >/dev/null &
recorder=$!
for i in $(seq 500); do [ -s child.pid ] && break; sleep 0.02; done
[ -s child.pid ] || { touch go; fail "the held child never wrote its pid"; }
child=$(cat child.pid)
# The counts are the writer's, published each round (20 ms).
for i in $(seq 100); do
    status=$("$MEMTALLY_BIN" ctl "$child" status --json)
    [ "$(echo "$status" | jq -r .allocations)" = $n ] && break
    sleep 0.02
done
touch go
wait $recorder
expect_eq "exit status of follow_quiet hold through memtally" 0 $?
expect_eq "state of the followed child by memtally ctl" recording "$(echo "$status" | jq -r .state)"
expect_eq "allocations of the followed child by memtally ctl" $n "$(echo "$status" | jq -r .allocations)"
check "hold.$child.mtly" $n 0 $((100 * n)) $((100 * n)) $((100 * n)) 1

# What memtally record says at the end names the followed processes' traces.
"$MEMTALLY_BIN" record --follow-fork -o "said.%p.mtly" -- "$prog" fork 10 >/dev/null 2>said.err
grep -q "^memtally: wrote said\.[0-9]*\.mtly and 1 trace of followed processes$" said.err ||
    fail "memtally record did not say it wrote the child's trace: $(cat said.err)"

# A followed process outlives the program: memtally record waits for it,
# and an interrupt ends its trace (whole) and the wait, the process going on.
rm -f child.pid go
"$MEMTALLY_BIN" record --follow-fork -o "orphan.%p.mtly" -- "$prog" orphan $n >/dev/null 2>orphan.err &
recorder=$!
for i in $(seq 500); do [ -s child.pid ] && break; sleep 0.02; done
[ -s child.pid ] || { touch go; fail "the orphan never wrote its pid"; }
child=$(cat child.pid)
# The recorder's program has ended; it says it waits, after a second.
said="waiting for 1 followed process still running (pid $child)"
for i in $(seq 500); do grep -q "$said" orphan.err && break; sleep 0.02; done
grep -q "$said" orphan.err || { touch go; fail "memtally record did not say it waits: $(cat orphan.err)"; }
kill -INT $recorder
wait $recorder
status=$?
kill -0 "$child" 2>/dev/null || fail "the orphan did not outlive the interrupt"
touch go
expect_eq "exit status of memtally record interrupted while waiting" 0 $status
check "orphan.$child.mtly" $n 0 $((100 * n)) $((100 * n)) $((100 * n)) 1
