# SIGKILL, which no handler sees: the events are in memory memtally record
# shares with the program, so the trace is complete (memtally record writes
# its end) and holds whole multiples of what the program does (allocations
# = frees, every block 64 bytes).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
"$MEMTALLY_BIN" record -q -o killed.mtly -- "$TEST_PROGRAMS/exact_endless" &
cli=$!
# The program is memtally's child once it has exec'd: wait for it (a busy
# machine may take a while), then let it run a second.
pid=
for i in $(seq 100); do
    pid=$(pgrep -P $cli exact_endless) && break
    sleep 0.1
done
[ -n "$pid" ] || fail "the program did not start"
sleep 1
kill -KILL "$pid"
wait $cli
expect_eq "memtally's exit status (killed by SIGKILL)" 137 $?
"$MEMTALLY_BIN" info --json killed.mtly > info.json 2> err.txt || fail "info failed: $(cat err.txt)"
expect_eq "truncated" false "$(jq -r .truncated info.json)"
expect_eq "complete" true "$(jq -r .complete info.json)"
allocs=$(jq -r .allocations info.json)
[ "$allocs" -gt 1000 ] || fail "only $allocs allocations in the trace of a second's run"
bytes=$(jq -r .bytes_allocated info.json)
expect_eq "64 bytes a block" $((allocs * 64)) "$bytes"
frees=$(jq -r .frees info.json)
[ $((allocs - frees)) -le 1 ] || fail "$allocs allocations but $frees frees"
echo "ok: $allocs allocations, all of them"

# Every allocation that returned before a SIGKILL is written: a program
# that allocates 20000 blocks and kills itself, after a pause or at once,
# leaves all of them in the trace.
"$MEMTALLY_BIN" record -q -o self.mtly -- "$TEST_PROGRAMS/exact_killself"
expect_eq "memtally's exit status (the program killed itself)" 137 $?
"$MEMTALLY_BIN" info --json self.mtly >info.json 2>/dev/null || fail "info of self.mtly failed"
expect_eq "allocations before the SIGKILL, all recorded" 20000 "$(jq -r .allocations info.json)"
expect_eq "their bytes" 960000 "$(jq -r .bytes_allocated info.json)"

"$MEMTALLY_BIN" record -q -o now.mtly -- "$TEST_PROGRAMS/exact_killself" now
expect_eq "memtally's exit status (killed at once)" 137 $?
"$MEMTALLY_BIN" info --json now.mtly >info.json 2>/dev/null || fail "info of now.mtly failed"
expect_eq "allocations just before the SIGKILL, all recorded" 20000 "$(jq -r .allocations info.json)"
expect_eq "their bytes, killed at once" 960000 "$(jq -r .bytes_allocated info.json)"
expect_eq "complete, killed at once" true "$(jq -r .complete info.json)"

# Threads killed in the middle of recording an event (a lock of ours held,
# a chunk half filled): memtally record still ends, at once, with a complete
# trace in which every allocation is freed but the last of each of the
# three threads and glibc's two blocks for the threads it made (their TLS
# vectors): 5 at most.
for round in 1 2 3; do
    timeout 60 "$MEMTALLY_BIN" record -q -o busy$round.mtly -- "$TEST_PROGRAMS/exact_endless" 2 &
    cli=$!
    pid=
    for i in $(seq 100); do
        rec=$(pgrep -P $cli) && pid=$(pgrep -P "$rec" exact_endless) && break
        sleep 0.1
    done
    [ -n "$pid" ] || fail "the program did not start"
    sleep 0.$round
    kill -KILL "$pid"
    wait $cli
    expect_eq "memtally's exit status, threads killed busy ($round)" 137 $?
    expect_eq "complete, threads killed busy ($round)" true "$(info_get busy$round.mtly complete)"
    allocs=$(info_get busy$round.mtly allocations)
    frees=$(info_get busy$round.mtly frees)
    [ $((allocs - frees)) -le 5 ] || fail "$allocs allocations but $frees frees ($round)"
done
echo "ok: threads killed while recording leave complete traces"
