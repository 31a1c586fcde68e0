#!/bin/sh
# A damaged index never gives a wrong answer.  The index of a trace of
# index_churn (23 chunks of columns) is overwritten with a byte at 24
# places spread over the file, its header and definitions and its
# compressed columns alike; each time `peak` and `leaks` either answer
# exactly as from the trace itself (--no-index), having found the damage
# when loading the index and built it again, or fail with one line saying
# the index is damaged and removed, after which the next run answers
# right.  A cut index is built again as well, and a cache directory that
# cannot be written is no error.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

record churn.mtly "$TEST_PROGRAMS/index_churn" || fail "recording index_churn failed"
"$MEMTALLY_BIN" index churn.mtly >/dev/null || fail "memtally index failed"
index=$(ls "$MEMTALLY_INDEX_DIR"/*.mtlx)
[ -f "$index" ] || fail "no index in $MEMTALLY_INDEX_DIR"
cp "$index" good.mtlx
size=$(wc -c <good.mtlx)
for cmd in peak leaks; do
    "$MEMTALLY_BIN" $cmd --json --no-index churn.mtly >"want.$cmd" || fail "$cmd --no-index failed"
done

rebuilt=0 refused=0
i=0
while [ $i -lt 24 ]; do
    off=$((size * i / 24 + 7))
    cp good.mtlx "$index"
    printf '\377' | dd of="$index" bs=1 seek=$off conv=notrunc 2>/dev/null
    if cmp -s good.mtlx "$index"; then i=$((i + 1)); continue; fi
    for cmd in peak leaks; do
        "$MEMTALLY_BIN" $cmd --json churn.mtly >got 2>err
        rc=$?
        if [ $rc = 0 ]; then
            cmp -s got "want.$cmd" || fail "$cmd with the index damaged at $off: a different answer"
            rebuilt=$((rebuilt + 1))
        else
            [ $rc = 1 ] || fail "$cmd with the index damaged at $off: exit $rc"
            [ "$(wc -l <err)" = 1 ] || fail "$cmd at $off: not one line: $(cat err)"
            grep -q "index is damaged" err || fail "$cmd at $off: $(cat err)"
            [ -e "$index" ] && fail "$cmd at $off: the damaged index was not removed"
            "$MEMTALLY_BIN" $cmd --json churn.mtly >got || fail "$cmd after removal failed"
            cmp -s got "want.$cmd" || fail "$cmd after removal: a different answer"
            refused=$((refused + 1))
            cp good.mtlx "$index"
            printf '\377' | dd of="$index" bs=1 seek=$off conv=notrunc 2>/dev/null
        fi
    done
    i=$((i + 1))
done
echo "damage found at load and the index built again: $rebuilt; found in a column: $refused"
[ $rebuilt -gt 0 ] || fail "no damage was found at load"
[ $refused -gt 0 ] || fail "no damage was found in a column"

# Cut short: built again.
head -c $((size / 2)) good.mtlx >"$index"
"$MEMTALLY_BIN" peak --json churn.mtly >got || fail "peak with a cut index failed"
cmp -s got want.peak || fail "peak with a cut index: a different answer"
echo "ok: a cut index is built again"

# A cache that cannot be written: the index serves this run from memory.
MEMTALLY_INDEX_DIR=/proc/memtally-cannot-be-made "$MEMTALLY_BIN" peak --json churn.mtly >got ||
    fail "peak with a cache that cannot be written failed"
cmp -s got want.peak || fail "peak with a cache that cannot be written: a different answer"
MEMTALLY_INDEX_DIR=/proc/memtally-cannot-be-made "$MEMTALLY_BIN" index churn.mtly >out ||
    fail "index with a cache that cannot be written failed"
grep -q "not kept: the cache directory cannot be written" out || fail "index said: $(cat out)"
echo "ok: a cache that cannot be written is no error"
