#!/bin/sh
# memtally ctl on tests/programs/ctl_worker.c, which makes 100 blocks of 64
# bytes in tick_alloc() every 20 ms and frees them, until SIGTERM.  Recorded
# with --idle and driven through every command.  The truths that hold
# whatever the timing:
#   - idle, and after restart while paused, the counts are 0;
#   - paused, nothing is recorded: the counts stand still, and a dump made
#     then, or the trace finished then, holds exactly those counts, each
#     allocation 64 bytes;
#   - recording, the counts grow (a tick every 20 ms).
# Also: the socket's directory must be the user's alone (a directory of mode
# 0777, a symlink, or another owner's: no control, one message, the program
# runs on recorded); another user's connection gets no answer; errors give
# one line and exit 1, bad arguments exit 2.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

M=$MEMTALLY_BIN
worker=$TEST_PROGRAMS/ctl_worker
pids=""
trap 'for p in $pids; do kill -KILL $p 2>/dev/null; done' EXIT

# start_worker DIR RECORD-OPTIONS...: memtally record OPTIONS -- ctl_worker,
# run in DIR in the background; sets rec (memtally's pid), wpid (the worker's).
start_worker() {
    dir=$1; shift
    (cd "$dir" && exec "$M" record -q "$@" -- "$worker" >w.out 2>w.err) &
    rec=$!
    pids="$pids $rec"
    wpid=""
    for i in $(seq 100); do
        wpid=$(sed -n 's/^ready //p' "$dir/w.out")
        [ -n "$wpid" ] && break
        sleep 0.1
    done
    [ -n "$wpid" ] || fail "ctl_worker did not start: $(cat "$dir/w.err")"
    pids="$pids $wpid"
}

# stop_worker: SIGTERM, which ctl_worker handles: it and memtally exit 0.
stop_worker() {
    kill -TERM "$wpid"
    wait "$rec"
    expect_eq "memtally record's exit status after SIGTERM" 0 $?
}

# status: the status as JSON into $st; get KEY reads one field of it.
status() {
    st=$("$M" ctl "$wpid" status --json) || fail "ctl status failed"
    echo "status: $st"
}
get() { printf '%s\n' "$st" | jq -r ".$1"; }

# ctl_ok COMMAND...: memtally ctl $wpid COMMAND succeeds.
ctl_ok() {
    "$M" ctl "$wpid" "$@" >ctl.out 2>ctl.err || fail "ctl $*: exit $?: $(cat ctl.err)"
    echo "ok: ctl $* -> $(cat ctl.out)"
}

# ctl_fails STATUS MESSAGE ARGS...: memtally ctl ARGS exits STATUS, with
# one line on stderr: "memtally: MESSAGE" (MESSAGE a prefix when it ends in *).
ctl_fails() {
    want=$1 msg=$2; shift 2
    "$M" ctl "$@" >ctl.out 2>ctl.err
    expect_eq "exit status of ctl $*" "$want" $?
    expect_eq "lines on stderr of ctl $*" 1 "$(wc -l <ctl.err)"
    case "$(cat ctl.err)" in
        "memtally: "$msg) echo "ok: ctl $*: $(cat ctl.err)" ;;
        *) fail "ctl $*: expected 'memtally: $msg' on stderr, got '$(cat ctl.err)'" ;;
    esac
}

# check_trace TRACE ALLOCATIONS: TRACE is whole and holds ALLOCATIONS of 64 bytes.
check_trace() {
    json=$("$M" info --json "$1") || fail "memtally info --json $1 failed"
    expect_eq "$1 truncated" false "$(printf '%s\n' "$json" | jq -r .truncated)"
    expect_eq "$1 complete" true "$(printf '%s\n' "$json" | jq -r .complete)"
    expect_eq "$1 allocations" "$2" "$(printf '%s\n' "$json" | jq -r .allocations)"
    expect_eq "$1 bytes" $(($2 * 64)) "$(printf '%s\n' "$json" | jq -r .bytes_allocated)"
}

mkdir -m 700 run
XDG_RUNTIME_DIR=$TEST_TMP/run
export XDG_RUNTIME_DIR

# The program runs in its own directory: a relative dump FILE is ours.
mkdir prog
start_worker prog --idle -o t.mtly
expect_eq "mode of the socket directory" 700 "$(stat -c %a run/memtally)"
[ -S "run/memtally/$wpid.sock" ] || fail "no socket run/memtally/$wpid.sock"

status
expect_eq "state when idle" paused "$(get state)"
expect_eq "pid" "$wpid" "$(get pid)"
expect_eq "allocations when idle" 0 "$(get allocations)"
"$M" ctl "$wpid" status >text.out || fail "ctl status (text) failed"
grep -q '^state: *paused$' text.out || fail "no 'state: paused' line in: $(cat text.out)"

ctl_ok start
sleep 0.3
status
expect_eq "state after start" recording "$(get state)"
a1=$(get allocations)
[ "$a1" -gt 0 ] || fail "no allocations recorded 0.3 s after start"
sleep 0.2
status
a2=$(get allocations)
[ "$a2" -gt "$a1" ] || fail "allocations did not grow while recording: $a1 then $a2"
echo "ok: allocations grow while recording: $a1 then $a2"
ctl_fails 1 "start: already recording" "$wpid" start

ctl_ok pause
sleep 0.2
status
expect_eq "state after pause" paused "$(get state)"
p1=$(get allocations)
sleep 0.3
status
expect_eq "allocations 0.3 s into the pause" "$p1" "$(get allocations)"
expect_eq "bytes when paused" $((p1 * 64)) "$(get bytes)"
live_paused=$(get live_bytes)
ctl_fails 1 "pause: not recording" "$wpid" pause

ctl_ok dump snap.mtly
[ -f prog/snap.mtly ] && fail "the relative dump path went to the program's directory"
check_trace snap.mtly "$p1"
# memtally record writes the trace and knows its live blocks (top's
# "live"): those the dump made while paused holds at its end.  Not
# allocations less frees: a start in the middle of a tick records the
# frees of blocks made before it.
expect_eq "live bytes when paused (the dump's at its end)" \
    "$(info_get snap.mtly live_bytes_at_end)" "$live_paused"

ctl_ok continue
ctl_fails 1 "continue: not paused" "$wpid" continue
sleep 0.3
status
expect_eq "state after continue" recording "$(get state)"
c1=$(get allocations)
[ "$c1" -gt "$p1" ] || fail "allocations did not grow after continue: $p1 then $c1"
echo "ok: allocations grow after continue: $p1 then $c1"

ctl_ok restart
status
expect_eq "state after restart while recording" recording "$(get state)"
r1=$(get allocations)
[ "$r1" -lt "$c1" ] || fail "allocations did not drop at restart: $c1 then $r1"
echo "ok: allocations drop at restart: $c1 then $r1"

ctl_ok pause
ctl_ok restart
status
expect_eq "state after restart while paused" paused "$(get state)"
expect_eq "allocations after restart while paused" 0 "$(get allocations)"
expect_eq "events after restart while paused" 0 "$(get events)"

ctl_ok continue
sleep 0.3
ctl_ok pause
sleep 0.2
status
f1=$(get allocations)
[ "$f1" -gt 0 ] || fail "no allocations recorded after the restart"
ctl_ok stop
status
expect_eq "state after stop" off "$(get state)"
ctl_fails 1 "stop: *" "$wpid" stop
check_trace prog/t.mtly "$f1"

# Bad arguments: exit 2, whatever the process.
ctl_fails 2 "ctl: *" "$wpid" frobnicate
ctl_fails 2 "ctl: *" "$wpid" dump
ctl_fails 2 "ctl: *" "$wpid" status extra
ctl_fails 2 "ctl: *" notapid status
ctl_fails 2 "ctl: *"

stop_worker
check_trace prog/t.mtly "$f1"
[ -e "run/memtally/$wpid.sock" ] && fail "the socket file is left after the program ended"
ctl_fails 1 "no memtally control socket for pid $wpid (is it running under memtally record?)" \
    "$wpid" status
ctl_fails 1 "no memtally control socket for pid 999999 (is it running under memtally record?)" \
    999999 status

# refused NAME: XDG_RUNTIME_DIR=NAME, whose memtally/ was made unfit: the
# program says so once, runs on and is recorded; ctl finds no socket.
refused() {
    mkdir "$1.dir"
    XDG_RUNTIME_DIR=$TEST_TMP/$1
    start_worker "$1.dir" -o t.mtly
    ctl_fails 1 "no memtally control socket for pid $wpid*" "$wpid" status
    stop_worker
    XDG_RUNTIME_DIR=$TEST_TMP/run
    expect_eq "memtally's lines on the program's stderr ($1)" 1 \
        "$(grep -c '^memtally: ' "$1.dir/w.err")"
    grep -q "^memtally: $TEST_TMP/$1/memtally is not a private directory" "$1.dir/w.err" ||
        fail "no message about $1/memtally: $(cat "$1.dir/w.err")"
    [ -z "$(ls "$1/memtally/")" ] || fail "a socket was made in $1/memtally"
    # Recorded all the same: whole ticks, as it stops between them.
    json=$("$M" info --json "$1.dir/t.mtly") || fail "no trace in $1.dir"
    n=$(printf '%s\n' "$json" | jq -r .allocations)
    [ "$n" -gt 0 ] && [ $((n % 100)) -eq 0 ] || fail "$1: $n allocations, not whole ticks"
    expect_eq "$1: frees" "$n" "$(printf '%s\n' "$json" | jq -r .frees)"
    expect_eq "$1: live bytes at the end" 0 "$(printf '%s\n' "$json" | jq -r .live_bytes_at_end)"
}

mkdir -m 700 open open/memtally
chmod 0777 open/memtally
refused open
mkdir -m 700 owned owned/memtally
chown 65534 owned/memtally
refused owned
mkdir -m 700 linked linked/elsewhere
ln -s elsewhere linked/memtally
refused linked

# Another user: the program runs as nobody, we are root.  Our ctl will not
# use nobody's directory, and a raw connection of ours gets no answer
# (SO_PEERCRED); nobody's own ctl works.
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null ||
   ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$worker"; then
    echo "note: the other-user part needs root, setpriv and build/ readable by nobody"
    exit 0
fi
other=$(mktemp -d /tmp/memtally-ctl-test.XXXXXX)
trap 'for p in $pids; do kill -KILL $p 2>/dev/null; done; rm -rf "$other"' EXIT
chown 65534:65534 "$other"
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR="$other" "$@"
}
(cd "$other" && as_nobody "$M" record -q -o "$other/t.mtly" -- "$worker" >w.out 2>w.err) &
rec=$!
pids="$pids $rec"
for i in $(seq 100); do
    wpid=$(sed -n 's/^ready //p' "$other/w.out")
    [ -n "$wpid" ] && break
    sleep 0.1
done
[ -n "$wpid" ] || fail "ctl_worker did not start as nobody: $(cat "$other/w.err")"
pids="$pids $wpid"
XDG_RUNTIME_DIR=$other
ctl_fails 1 "no memtally control socket for pid $wpid*" "$wpid" status
answer=$(/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    s.sendall(b"status\n")
    print(repr(s.recv(4096)) if s.recv(4096, socket.MSG_PEEK) else "closed")
except (BrokenPipeError, ConnectionResetError):
    print("closed")
' "$other/memtally/$wpid.sock") || fail "cannot connect to nobody's socket as root"
expect_eq "answer to another user" closed "$answer"
as_nobody "$M" ctl "$wpid" status --json >nobody.out || fail "nobody's own ctl failed"
expect_eq "state, asked by nobody" recording "$(jq -r .state nobody.out)"
stop_worker

# Live bytes with blocks older than the encoder's window (2^19
# allocations): memtally record keeps those in a map, with a count per
# address slot in front of it that every allocation asks first; frees of
# old blocks must find them there.  The status while the program sleeps
# is its trace's live at the end.
XDG_RUNTIME_DIR=$TEST_TMP/run
cat >old.c <<'EOF_C'
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void)
{
    enum { KEEP = 300000, CHURN = 700000 };
    static void *keep[KEEP], *churn[CHURN];
    for (int i = 0; i < KEEP; i++)
        keep[i] = malloc(32);
    for (int i = 0; i < CHURN; i++) {
        churn[i] = malloc(48);
        if (i % 2)
            free(churn[i]);
    }
    for (int i = 0; i < KEEP; i += 2)
        free(keep[i]);
    for (int i = 0; i < 1000; i++)
        keep[i] = malloc(32);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    sleep(60);
    return keep[1] == churn[0];
}
EOF_C
cc -O0 -o old_prog old.c || fail "cannot build a test program"
ctl_worker=$worker
worker=$PWD/old_prog
start_worker "$PWD" -o old.mtly
worker=$ctl_worker
# Every event written (stdout's buffer is one more allocation), then a
# round more, as the live bytes are published after the counts.
for i in $(seq 100); do
    status
    [ "$(get allocations)" = 1001001 ] && [ "$(get frees)" = 500000 ] && break
    sleep 0.1
done
sleep 0.3
status
live=$(get live_bytes)
kill -TERM "$wpid"
wait "$rec"
expect_eq "status's live bytes with blocks older than the window" \
    "$("$M" info --json old.mtly | jq -r .live_bytes_at_end)" "$live"
