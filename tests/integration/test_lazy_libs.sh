#!/bin/sh
# The memtally binary loads libdw, libelf, libsqlite3, libprotobuf-c and
# zlib when first called (src/lazy/), not at its start: memtally record,
# which uses none of them, never loads them (they cost its start-up 0.6 to
# 0.9 ms); memtally report loads libdw and names functions through it, and
# the exports that use the others work through them.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

prog="$TEST_PROGRAMS/exact_basic"

# LD_DEBUG=files: each object loaded, by memtally and by the program.
LD_DEBUG=files "$MEMTALLY_BIN" record -q -o trace.mtly -- "$prog" >/dev/null 2>debug.txt ||
    fail "memtally record failed"
grep -q "file=libzstd.so" debug.txt || fail "LD_DEBUG named no library loaded (libzstd at least)"
for lib in libdw.so libelf.so libsqlite3.so libprotobuf-c.so libz.so; do
    if grep -q "file=$lib" debug.txt; then
        fail "memtally record loaded $lib"
    fi
    echo "ok: memtally record did not load $lib"
done

LD_DEBUG=files "$MEMTALLY_BIN" report trace.mtly >report.txt 2>debug.txt || fail "memtally report failed"
grep -q "file=libdw.so.1.*dynamically loaded" debug.txt || fail "memtally report did not load libdw"
grep -q "^main (exact_basic.c:" report.txt || fail "report named no function main (exact_basic.c:...)"
echo "ok: report loaded libdw when it symbolized, and named main"

"$MEMTALLY_BIN" export --format sqlite -o trace.db trace.mtly || fail "export --format sqlite failed"
expect_eq "allocations in the sqlite export (exact_basic makes 7)" 7 \
    "$(sqlite3 trace.db 'select count(*) from allocations' 2>/dev/null || echo none)"
