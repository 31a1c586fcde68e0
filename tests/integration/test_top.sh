#!/bin/sh
# memtally top on tests/programs/ctl_worker.c (100 blocks of 64 bytes from
# tick_alloc() every 20 ms, all freed by tick_free()), with its output not a
# terminal: plain snapshots.  Truths:
#   - tick_alloc is the one function that allocates, 64 bytes a call: its row
#     has CALLS > 0, BYTES = 64 x CALLS, PER CALL 64, 100 %; tick_free has none;
#   - --iterations 2: two snapshots, the second with at least the first's calls;
#   - when the program ends under top, a last snapshot reads the whole trace:
#     its counts are exactly those of memtally info on that trace.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

M=$MEMTALLY_BIN
worker=$TEST_PROGRAMS/ctl_worker
pids=""
trap 'for p in $pids; do kill -KILL $p 2>/dev/null; done' EXIT
mkdir -m 700 run
XDG_RUNTIME_DIR=$TEST_TMP/run
export XDG_RUNTIME_DIR

"$M" record -q -o t.mtly -- "$worker" >w.out 2>w.err &
rec=$!
pids=$rec
wpid=""
for i in $(seq 100); do
    wpid=$(sed -n 's/^ready //p' w.out)
    [ -n "$wpid" ] && break
    sleep 0.1
done
[ -n "$wpid" ] || fail "ctl_worker did not start: $(cat w.err)"
pids="$pids $wpid"
sleep 0.5

# check_rows FILE N: FILE has N rows of tick_alloc, each right; sets
# last to the calls of the last.
check_rows() {
    expect_eq "tick_alloc rows in $1" "$2" "$(grep -c '^tick_alloc ' "$1")"
    grep -q '^tick_free ' "$1" && fail "tick_free has a row in $1"
    grep '^tick_alloc ' "$1" | awk '{ print $(NF-3), $(NF-2), $(NF-1), $NF }' >rows.txt
    while read -r calls bytes per pct; do
        [ "$calls" -gt 0 ] || fail "tick_alloc: $calls calls"
        expect_eq "tick_alloc bytes for $calls calls" $((calls * 64)) "$bytes"
        expect_eq "tick_alloc per call" 64 "$per"
        expect_eq "tick_alloc percent" 100.00 "$pct"
        last=$calls
    done <rows.txt
}

"$M" top "$wpid" --iterations 2 --interval 0.3 >top.out 2>top.err
status=$?
cat top.out
expect_eq "exit status of top --iterations 2" 0 $status
expect_eq "stderr of top" "" "$(cat top.err)"
expect_eq "snapshots" 2 "$(grep -c "^memtally top: pid $wpid (ctl_worker), recording, " top.out)"
check_rows top.out 2
first=$(grep '^tick_alloc ' top.out | head -n 1 | awk '{ print $(NF-3) }')
second=$(grep '^tick_alloc ' top.out | tail -n 1 | awk '{ print $(NF-3) }')
[ "$second" -ge "$first" ] || fail "calls went down between snapshots: $first then $second"
header=$(sed -n 's/^allocations \([0-9]*\) .*/\1/p' top.out | tail -n 1)
[ "$header" -ge "$second" ] || fail "the header's allocations $header are fewer than the table's $second"

# The program ends while top watches: a last snapshot, of the whole trace.
"$M" top "$wpid" --iterations 100 --interval 0.3 >end.out 2>end.err &
top=$!
pids="$pids $top"
sleep 0.7
kill -TERM "$wpid"
wait "$rec"
expect_eq "memtally record's exit status" 0 $?
wait "$top"
status=$?
cat end.out
expect_eq "exit status of top when the program ended" 0 $status
tail -n 20 end.out | grep -q "^memtally top: pid $wpid (ctl_worker), ended, " ||
    fail "no last snapshot saying the program ended"
check_rows end.out "$(grep -c '^memtally top: ' end.out)"
allocs=$("$M" info --json t.mtly | jq -r .allocations)
frees=$("$M" info --json t.mtly | jq -r .frees)
expect_eq "tick_alloc calls in the last snapshot" "$allocs" "$last"
expect_eq "the last header" "allocations $allocs   frees $frees" \
    "$(grep '^allocations ' end.out | tail -n 1 | sed 's/   allocated.*//')"

# Errors: no such process (exit 1, one line), bad arguments (exit 2).
"$M" top "$wpid" >gone.out 2>gone.err
expect_eq "exit status of top on a process gone" 1 $?
expect_eq "stderr of top on a process gone" \
    "memtally: no memtally control socket for pid $wpid (is it running under memtally record?)" \
    "$(cat gone.err)"
"$M" top 2>/dev/null
expect_eq "exit status of top without a pid" 2 $?
"$M" top --interval 0 1 2>/dev/null
expect_eq "exit status of top --interval 0" 2 $?
