#!/bin/sh
# The program sees no signal handler of ours, and its own clean-up idiom
# (restore the default, raise again) still leaves a complete trace.
#   tests/programs/exact_reraise.c: sees the default action for INT, TERM,
#   SEGV and ABRT, allocates 100001 x 16 bytes, dies by SIGTERM re-raised.
#   CPython: finds SIGTERM at its default, and catches the KeyboardInterrupt
#   of a SIGINT it sends itself (it installs its handler only where it finds
#   the default): prints and exits 3.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

"$TEST_PROGRAMS/exact_reraise" >plain.out
expect_eq "exact_reraise alone: killed by SIGTERM" 143 $?
record trace.mtly "$TEST_PROGRAMS/exact_reraise" >traced.out
expect_eq "exact_reraise under memtally: killed by SIGTERM" 143 $?
cmp -s plain.out traced.out || fail "what the program sees differs: $(cat plain.out) / $(cat traced.out)"
expect_eq "the actions it sees" "default default default default" "$(cat traced.out)"
expect_eq "allocations recorded" 100001 "$(info_get trace.mtly allocations)"
expect_eq "bytes recorded" 1600016 "$(info_get trace.mtly bytes_allocated)"
expect_eq "the trace is complete" true "$(info_get trace.mtly complete)"

python=/usr/bin/python3
[ -x $python ] || skip "no /usr/bin/python3"
cat >kb.py <<'EOF_PY'
import os, signal, sys
print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)
try:
    os.kill(os.getpid(), signal.SIGINT)
    import time; time.sleep(5)
except KeyboardInterrupt:
    print("caught")
    sys.exit(3)
EOF_PY
$python kb.py >plain.out
expect_eq "python3 alone" 3 $?
record kb.mtly $python kb.py >traced.out
expect_eq "python3 under memtally" 3 $?
cmp -s plain.out traced.out || fail "python3's output differs: $(cat traced.out)"
expect_eq "python3 prints" "True caught" "$(echo $(cat traced.out))"
