#!/bin/sh
# The trace does not go through a descriptor in the program (memtally record
# writes it from shared memory): a program that closes every descriptor, or
# takes a high number for itself, loses and disturbs nothing; and a write
# error (a full disk) is said, with a non-zero exit and no "wrote".
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

# exact_closeall: 1001 allocations, 1000 frees, 32064 bytes, peak 32000,
# 64 live at the end (was: no events at all).
same_run 0 "$TEST_PROGRAMS/exact_closeall"
check trace.mtly 1001 1000 32064 32000 64 1

# bash's own descriptor 900 (was: "hi" went into the trace, which was then
# corrupt, and the file stayed empty).
script='exec 900>lk; echo hi >&900; wc -c <lk'
alone=$(bash -c "$script") || fail "bash alone failed"
seen=$("$MEMTALLY_BIN" record -q -o b.mtly -- bash -c "$script") || fail "bash under memtally failed"
expect_eq "bash writes to its descriptor 900" "$alone" "$seen"
expect_eq "the trace reads whole" true "$(info_get b.mtly complete)"

# The program's descriptors get the numbers they would get alone (was: 5
# for the first, libunwind's pipe having taken 3 and 4); bash redirecting
# onto high numbers (its own are 10 and up) is undisturbed.
script='open(my $f, "<", "/dev/null"); print fileno($f), "\n"'
alone=$(perl -e "$script") || fail "perl alone failed"
seen=$("$MEMTALLY_BIN" record -q -o p.mtly -- perl -e "$script") || fail "perl under memtally failed"
expect_eq "the program's first descriptor" "$alone" "$seen"
for n in 3 940 1010; do
    script="exec $n>lk$n; echo hi >&$n; x=\$(seq 100 | sort); echo ho >&$n; wc -c <lk$n"
    seen=$("$MEMTALLY_BIN" record -q -o b$n.mtly -- bash -c "$script") ||
        fail "bash under memtally failed with its descriptor $n"
    expect_eq "bash writes to its descriptor $n" 6 "$seen"
done

# The program's descriptors are exactly those it has alone (libunwind's pipe
# took 3 and 4).  Listed into a file: a pipeline's pipe would be sh's too.
script='x=$(echo a); ls /proc/$$/fd >fds.$1'
sh -c "$script" sh alone || fail "sh alone failed"
"$MEMTALLY_BIN" record -q -o fd.mtly -- sh -c "$script" sh traced || fail "sh under memtally failed"
expect_eq "the program's descriptors" "$(sort -n fds.alone | tr '\n' ' ')" \
    "$(sort -n fds.traced | tr '\n' ' ')"

# read and syscall, hooked for libunwind, are the program's as before.
same_run 0 "$TEST_PROGRAMS/exact_syscalls"
grep -q "getpid 1 write 3 read 3 abc; fd -1000: -1 Bad file descriptor; fd -1001: -1 Bad file descriptor; gettid 1" \
    traced.out || fail "read or syscall changed: $(cat traced.out)"

# No descriptor of the trace in the program.
"$MEMTALLY_BIN" record -q -o l.mtly -- sh -c 'ls -l /proc/$$/fd' >fds.txt || fail "ls under memtally failed"
grep -q 'l\.mtly' fds.txt && fail "the program holds the trace open: $(cat fds.txt)"
echo "ok: the program holds no descriptor of the trace"

# No thread of ours in the program either: memtally record encodes and
# writes the trace, and answers `memtally ctl` itself.
script='i=0; while [ $i -lt 200 ]; do x=$(echo $i); i=$((i+1)); done; ls /proc/$$/task | wc -l'
alone=$(sh -c "$script") || fail "sh alone failed"
seen=$("$MEMTALLY_BIN" record -q -o th.mtly -- sh -c "$script") ||
    fail "sh under memtally failed"
expect_eq "threads in the program" "$alone" "$seen"

# A full disk: the error is said as it happens, the exit is not 0, and the
# trace is not said to be written.
if [ -w /dev/full ]; then
    "$MEMTALLY_BIN" record -o /dev/full -- "$TEST_PROGRAMS/exact_basic" >/dev/null 2>err.txt
    rc=$?
    [ $rc -ne 0 ] || fail "/dev/full: exit 0"
    grep -q "No space left" err.txt || fail "/dev/full: the error is not said: $(cat err.txt)"
    grep -q "wrote" err.txt && fail "/dev/full: said it wrote the trace: $(cat err.txt)"
    echo "ok: /dev/full: exit $rc, $(grep -c . err.txt) line(s) on stderr"
fi
