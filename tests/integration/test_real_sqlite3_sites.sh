#!/bin/sh
# Sites in a real program none of us wrote: Debian's sqlite3 shell on the
# script of test_real_sqlite3.sh.  Its libsqlite3 is stripped of its static
# functions, and every block it makes goes through sqlite3Malloc and
# through static functions of its allocator (sqlite3MemMalloc,
# dbMallocRawFinish) that show as "libsqlite3.so.0+0xOFFSET".  Those are
# not places anyone can act on: the five largest rows of `report --total`
# must each name a function (none is a bare address, "MODULE+0xOFFSET" or
# "0xADDRESS"), and none is one of SQLite's allocation wrappers
# (docs/ANALYSIS.md, "Allocation wrappers").
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
. "$MEMTALLY_ROOT/tests/integration/sqlite3-script.inc"
[ -x /usr/bin/sqlite3 ] || skip "sqlite3 is not installed"
need_command report

sqlite3_script
env -i PATH=/usr/bin:/bin HOME="$TEST_TMP" LC_ALL=C \
    "$MEMTALLY_BIN" record -q -o sqlite3.mtly -- /usr/bin/sqlite3 -batch t.db <script.sql >out ||
    fail "memtally record sqlite3 failed"
cmp -s expected out || fail "unexpected output from sqlite3: $(cat out)"

analyze r.json report --total --top 5 sqlite3.mtly
echo "the five largest rows:"
jv r.json '.total.rows[] | "  \(.calls) \(.bytes) \(.function)"'
expect_jq "rows" r.json '.total.rows | length' 5
expect_jq "rows that are bare addresses" r.json \
    '[.total.rows[] | select((.function // "") | test("^0x|[+]0x"))] | length' 0
expect_jq "rows that are SQLite's allocation wrappers" r.json \
    '[.total.rows[] | select(fname | test("^(sqlite3_malloc|sqlite3_realloc|sqlite3Malloc|sqlite3MallocZero|sqlite3Realloc|sqlite3DbMalloc|sqlite3DbRealloc|sqlite3DbStr)"))] | length' 0
