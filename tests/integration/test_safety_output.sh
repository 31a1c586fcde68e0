#!/bin/sh
# Where a trace goes: never through a symbolic link at the path's last
# component (one planted in a shared directory would make memtally
# overwrite the file it points to), never over a file of another user, and
# created readable by its owner only (a trace holds command lines).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

echo precious >target
ln -s "$PWD/target" link
"$MEMTALLY_BIN" record -q -o link -- /bin/true 2>err.txt
expect_eq "exit status with -o a symbolic link" 1 $?
grep -q "symbolic link" err.txt || fail "the error does not say why: $(cat err.txt)"
expect_eq "the link's target" precious "$(cat target)"

# The recorder's own checks, which the command's come before: a plain
# preload given the link as its exact path (for its pid: exec keeps the
# shell's) refuses it and says why; given it as a pattern, it writes beside.
lib="$MEMTALLY_ROOT/build/libmemtally.so" sh -c \
    'exec env LD_PRELOAD="$lib" MEMTALLY_OUTPUT=link MEMTALLY_OUTPUT_PID=$$ /bin/true' 2>err.txt
grep -q "symbolic link" err.txt || fail "the recorder does not say why: $(cat err.txt)"
LD_PRELOAD="$MEMTALLY_ROOT/build/libmemtally.so" MEMTALLY_PATTERN=link /bin/true 2>/dev/null
expect_eq "the link's target after a plain preload" precious "$(cat target)"
[ -L link ] || fail "the link was replaced"
echo "ok: the recorder does not write through the link"

"$MEMTALLY_BIN" record -q -o t.mtly -- /bin/true || fail "record failed"
expect_eq "a trace's mode" 600 "$(stat -c %a t.mtly)"
mkdir d && (cd d && "$MEMTALLY_BIN" record -q -- /bin/true) || fail "record without -o failed"
expect_eq "a trace's mode, named by default" 600 "$(stat -c %a d/*.mtly)"
# Replacing a trace of one's own is fine; it stays 0600.
chmod 644 t.mtly
"$MEMTALLY_BIN" record -q -o t.mtly -- /bin/true || fail "record over an own trace failed"
"$MEMTALLY_BIN" info t.mtly >/dev/null || fail "the replaced trace does not read"
echo "ok: an own trace replaced"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    echo theirs >other
    chown nobody other
    "$MEMTALLY_BIN" record -q -o other -- /bin/true 2>err.txt
    expect_eq "exit status with -o another user's file" 1 $?
    grep -q "another user" err.txt || fail "the error does not say why: $(cat err.txt)"
    expect_eq "the other user's file" theirs "$(cat other)"
fi
