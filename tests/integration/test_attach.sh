#!/bin/sh
# memtally attach PID: a running process not started under memtally is
# recorded from the attach to the detach, exactly, and runs on unchanged
# (tests/programs/attach_target.c: bursts of known allocations, a storm of
# allocations across the attach and the detach, a dlopen after the
# attach); attach again, sampled; the errors.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
T=$TEST_PROGRAMS/attach_target
[ "$(uname -m)" = x86_64 ] || skip "memtally attach is for x86-64"
${CC:-cc} -x c -shared -fPIC -o exact_plugin.so "$MEMTALLY_ROOT/tests/programs/exact_plugin.c.in" ||
    fail "cannot build the plugin"

# wait_lines FILE N: until FILE has N lines (10 s at most).
wait_lines() {
    for _ in $(seq 200); do
        [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0
        sleep 0.05
    done
    fail "waited in vain for line $2 of $1: $(cat "$1")"
}
# wait_text FILE TEXT: until FILE holds TEXT (10 s at most).
wait_text() {
    for _ in $(seq 200); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    fail "waited in vain for '$2' in $1: $(cat "$1")"
}
# cmd LINE: sends a command to the target and waits for its answer.
lines=1
cmd() {
    echo "$1" >&3
    lines=$((lines + 1))
    wait_lines out.txt $lines
}

# The same commands without memtally: the checksum to expect.
printf '%s\n' 'burst 1000' "dlopen $PWD/exact_plugin.so" 'storm on' 'storm off' 'burst 500' \
    'burst 1000' | "$T" >plain.txt
plain_status=$?
expect_eq "alone: exit status" 3 $plain_status

mkfifo in
"$T" <in >out.txt &
pid=$!
exec 3>in
wait_lines out.txt 1

"$M" attach -o one.mtly "$pid" 2>attach1.txt &
att=$!
wait_text attach1.txt "attached to pid $pid"
held=$(sed -n 's/.*which was held \([0-9.]*\) ms.*/\1/p' attach1.txt)
echo "ok: attaching held the thread $held ms"
"$M" attach "$pid" 2>twice.txt && fail "a second attach to the same process was taken"
expect_eq "attaching twice" "memtally: attach: pid $pid is recorded already (memtally ctl $pid status)" \
    "$(cat twice.txt)"
cmd 'burst 1000'
cmd "dlopen $PWD/exact_plugin.so"
expect_eq "heap works on the attached process (all it made is freed)" "true 0" \
    "$("$M" heap --json "$pid" | jq -r '"\(.recorded) \(.live_blocks)"')"
"$M" ctl "$pid" status >/dev/null || fail "ctl status does not answer for the attached process"
cmd 'storm on'
sleep 0.3
kill -INT $att
wait $att || fail "memtally attach failed: $(cat attach1.txt)"
grep -q "detached from pid $pid; wrote" attach1.txt || fail "no word of the detach: $(cat attach1.txt)"
cmd 'storm off'
cmd 'burst 500' # not recorded: detached

# Attach again, sampled and with times in steps of 2 ms, while the workers
# storm; stopped through ctl.
cmd 'storm on'
"$M" attach --sample --time-resolution=2ms -o two.mtly "$pid" 2>attach2.txt &
att=$!
wait_text attach2.txt "attached to pid $pid"
cmd 'burst 1000'
"$M" ctl "$pid" stop >/dev/null || fail "memtally ctl stop failed"
wait $att || fail "the second attach failed: $(cat attach2.txt)"
grep -q "stopped through memtally ctl" attach2.txt || fail "attach did not see the stop: $(cat attach2.txt)"
cmd 'storm off'
exec 3>&-
wait $pid
status=$?
expect_eq "attached and detached twice: exit status" 3 $status
expect_eq "attached and detached twice: its output" "$(tail -1 plain.txt)" "$(tail -1 out.txt)"

# The first trace: exactly what was made between attach and detach.
calls() { # TRACE FUNCTION: calls and bytes of the function's row
    "$M" report --total --json "$1" | jq -r --arg f "$2" \
        '[.total.rows[] | select(.function == $f)] | "\(map(.calls) | add // 0) \(map(.bytes) | add // 0)"'
}
expect_eq "burst_alloc: exactly the burst made while attached" "4000 192000" "$(calls one.mtly burst_alloc)"
expect_eq "the library opened after the attach: its 3 allocations" "3 4888" "$(calls one.mtly plugin_run)"
storms=$(calls one.mtly storm_alloc | cut -d' ' -f1)
[ "$storms" -gt 0 ] || fail "the storm was not recorded"
echo "ok: $storms storm allocations recorded up to the detach"
expect_eq "the trace says it was attached, and ended" "true true" \
    "$("$M" info --json one.mtly | jq -r '"\(.attached) \(.complete)"')"
expect_eq "every block recorded was freed (nothing lost at the detach)" 0 \
    "$("$M" leaks --json --inside burst_alloc one.mtly | jq '.rows | length')"

# The second: sampled, the burst's estimate near 4000 x 48 bytes.
expect_eq "the second trace is sampled" sampled "$("$M" info --json two.mtly | jq -r .mode)"
expect_eq "the second trace's times are in steps of 2 ms" 2000 \
    "$("$M" info --json two.mtly | jq -r .time_resolution_us)"
"$M" dump two.mtly | awk '$1 ~ /^[0-9]+$/ && $1 % 2000 { bad++ } END { exit bad > 0 }' ||
    fail "times in the second trace that are not multiples of 2 ms"
expect_eq "the first trace's times are to the microsecond" 1 \
    "$("$M" info --json one.mtly | jq -r .time_resolution_us)"
"$M" attach --time-resolution=0 "$pid" 2>err.txt
expect_eq "attach --time-resolution=0" 2 $?

printf '#include <unistd.h>\nint main(void) { sleep(30); return 0; }\n' >static.c
if ${CC:-cc} -static -o static_sleep static.c 2>/dev/null; then
    ./static_sleep &
    st=$!
    "$M" attach "$st" 2>err.txt && fail "attach to a static binary succeeded"
    expect_eq "a static binary" "memtally: attach: pid $st has no libc loaded (a static binary?): memtally loads into dynamically linked programs only" \
        "$(cat err.txt)"
    kill $st
fi
sleep 30 &
stopped=$!
kill -STOP $stopped
"$M" attach "$stopped" 2>err.txt && fail "attach to a stopped process succeeded"
expect_eq "a stopped process" "memtally: attach: pid $stopped is stopped (SIGSTOP or job control): continue it first (kill -CONT $stopped)" \
    "$(cat err.txt)"
kill -CONT $stopped
kill $stopped
"$M" attach 999999999 2>err.txt && fail "attach to a process that does not exist succeeded"
expect_eq "no such process" "memtally: attach: no process 999999999" "$(cat err.txt)"
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$M" attach 1 2>err.txt &&
        fail "attach to pid 1 as nobody succeeded"
    grep -q "^memtally: attach: not permitted to trace pid 1" err.txt ||
        fail "attach to pid 1 as nobody: $(cat err.txt)"
    echo "ok: pid 1 as nobody: $(cat err.txt)"
fi

# A process in another mount namespace (a container) where memtally's
# files are not: its build directory hidden under a tmpfs there.  The
# library goes in through the process's /tmp, the trace comes back out.
if unshare --mount true 2>/dev/null; then
    cp "$T" ./target_ns
    mkfifo in3
    # The first target's output goes first: the new one's shell opens
    # out.txt only once in3 has a writer, and a wait on the old lines
    # would attach while the new target is still starting.
    rm -f out.txt
    unshare --mount --fork sh -c "mount -t tmpfs none '$MEMTALLY_ROOT/build' && exec '$PWD/target_ns'" \
        <in3 >out.txt &
    ns=$!
    exec 3>in3
    lines=1
    wait_lines out.txt 1
    pid=$(pgrep -n -x target_ns) || fail "no target_ns"
    [ -e "/proc/$pid/root$MEMTALLY_ROOT/build/libmemtally.so" ] && fail "the library is visible in the namespace"
    "$M" attach -o ns.mtly "$pid" 2>attach3.txt &
    att=$!
    wait_text attach3.txt "attached to pid $pid"
    cmd 'burst 1000'
    kill -INT $att
    wait $att || fail "attach into the namespace failed: $(cat attach3.txt)"
    exec 3>&-
    wait $ns
    expect_eq "another mount namespace: exit status" 3 $?
    expect_eq "another mount namespace: exactly the burst" "4000 192000" "$(calls ns.mtly burst_alloc)"
    [ -z "$(ls /tmp | grep memtally-attach)" ] || fail "the staging directory was left in /tmp"
else
    echo "skipped: another mount namespace (unshare is not permitted here)"
fi
