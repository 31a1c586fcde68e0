#!/bin/sh
# Through memtally, a program's stdin, stdout, stderr and exit status are
# unchanged: tests/programs/exact_passthrough.c copies stdin to stdout,
# reports on stderr and exits with 7 (its counts, from the code and valgrind:
# 1 allocation, 1 free, 4096 bytes, peak 4096, 0 live, 1 thread).  A program
# that kills itself with SIGTERM (exact_sigterm) makes memtally die by SIGTERM
# too: 143 from sh.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

prog="$TEST_PROGRAMS/exact_passthrough"
seq 1 5000 >input.txt

"$prog" <input.txt >plain.out 2>plain.err
expect_eq "exit status without memtally" 7 $?
record trace.mtly "$prog" <input.txt >traced.out 2>traced.err
expect_eq "exit status through memtally" 7 $?
cmp plain.out traced.out || fail "stdout differs through memtally"
cmp plain.err traced.err || fail "stderr differs through memtally"
check trace.mtly 1 1 4096 4096 0 1

# stdin from a pipe, stdout into a pipe
seq 1 5000 | record pipe.mtly "$prog" 2>traced.err | cat >traced.out
cmp plain.out traced.out || fail "stdout differs through memtally (pipes)"
cmp plain.err traced.err || fail "stderr differs through memtally (pipes)"
status=$(seq 1 5000 | { record pipe2.mtly "$prog" >/dev/null 2>&1; echo $?; })
expect_eq "exit status through memtally (pipes)" 7 "$status"

sigterm="$TEST_PROGRAMS/exact_sigterm"
"$sigterm" >plain.out 2>plain.err
expect_eq "exit status without memtally, SIGTERM" 143 $?
record term.mtly "$sigterm" >traced.out 2>traced.err
expect_eq "exit status through memtally, SIGTERM" 143 $?
cmp plain.out traced.out || fail "stdout differs through memtally (SIGTERM)"
cmp plain.err traced.err || fail "stderr differs through memtally (SIGTERM)"
