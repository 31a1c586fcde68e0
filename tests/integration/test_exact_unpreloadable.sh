#!/bin/sh
# Programs LD_PRELOAD cannot reach get a reason and a non-zero exit, not an
# empty trace: a statically linked program, and one that gains privileges
# at exec (set-user-ID to another user: the loader's secure mode); one
# whose address space (ulimit -v) has no room for the recorder runs
# unprofiled, and that is said; a program that allocates without malloc
# is told apart from an empty trace.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

cat >s.c <<'EOF_C'
#include <stdlib.h>
int main(void) { free(malloc(10)); return 0; }
EOF_C
if ${CC:-cc} -static -o static_prog s.c 2>/dev/null; then
    "$MEMTALLY_BIN" record -q -o s.mtly -- ./static_prog 2>err.txt
    expect_eq "exit status for a static program" 1 $?
    grep -q "statically linked" err.txt || fail "no reason given: $(cat err.txt)"
    [ $(wc -l <err.txt) = 1 ] || fail "not one line: $(cat err.txt)"
    [ ! -e s.mtly ] || fail "a trace was written"
    echo "ok: a static program: $(cat err.txt)"
else
    echo "no static libc to link with: that case not tried"
fi

# A dynamic one is recorded (the check does not refuse what it can reach).
${CC:-cc} -o dyn_prog s.c || fail "cannot build a test program"
"$MEMTALLY_BIN" record -q -o d.mtly -- ./dyn_prog || fail "a dynamic program was refused"
expect_eq "the dynamic program's allocations" 1 "$(info_get d.mtly allocations)"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    cp dyn_prog suid_prog
    chown nobody suid_prog
    chmod 4755 suid_prog
    "$MEMTALLY_BIN" record -q -o u.mtly -- "$PWD/suid_prog" 2>err.txt
    expect_eq "exit status for a set-user-ID program" 1 $?
    grep -q "set-user-ID" err.txt || fail "no reason given: $(cat err.txt)"
    echo "ok: a set-user-ID program: $(cat err.txt)"
fi

# A program whose memory never comes from malloc (mmap here): recorded, and
# said, rather than left as a puzzle of an empty trace.
cat >m.c <<'EOF_C'
#include <sys/mman.h>
int main(void) { char *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); return p == MAP_FAILED; }
EOF_C
${CC:-cc} -o mmap_prog m.c || fail "cannot build a test program"
"$MEMTALLY_BIN" record -o m.mtly -- ./mmap_prog 2>err.txt || fail "recording a program without malloc failed"
grep -q "no allocation of ./mmap_prog went through malloc" err.txt || fail "not said: $(cat err.txt)"
expect_eq "its trace's allocations" 0 "$(info_get m.mtly allocations)"

# An address space with room for memtally record but not for the
# recorder in the program, whose 600 MiB of zeroed data come first (the
# region is about 850 MiB, mapped by both): the program runs unprofiled
# and says so, its exit status kept; memtally record says no trace was
# written, and why, and leaves no file.
cat >big.c <<'EOF_C'
#include <stdlib.h>
static char big[600 << 20];
int main(void) { big[0] = 1; free(malloc(10)); return big[1]; }
EOF_C
${CC:-cc} -o big_prog big.c || fail "cannot build a test program"
( ulimit -v 1200000 && "$MEMTALLY_BIN" record -o l.mtly -- ./big_prog 2>err.txt )
expect_eq "exit status when the recorder has no room (the program's)" 0 $?
grep -q "no trace was written to l.mtly (ulimit -v limits the program's address space" err.txt ||
    fail "no reason given: $(cat err.txt)"
grep -q "cannot set up recording (out of memory); the program runs unprofiled" err.txt ||
    fail "the program's own line is missing: $(cat err.txt)"
[ $(wc -l <err.txt) = 2 ] || fail "not two lines: $(cat err.txt)"
[ ! -e l.mtly ] || fail "an empty trace was left"
echo "ok: no room: $(cat err.txt)"
# Room for the region but not for the gigabyte of the guessed stacks'
# entries (src/preload/stacks.c takes less): recorded all the same.
( ulimit -v 1300000 && "$MEMTALLY_BIN" record -q -o g.mtly -- ./dyn_prog ) ||
    fail "recording under ulimit -v 1300000 failed"
expect_eq "allocations under ulimit -v 1300000" 1 "$(info_get g.mtly allocations)"
