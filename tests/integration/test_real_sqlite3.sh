#!/bin/sh
# A real program none of us wrote: Debian's sqlite3 shell runs a generated
# SQL script on a database file (a table, 3000 inserts, an index, queries, a
# delete).  memtally's totals must equal valgrind memcheck's "total heap
# usage" line for the same run, exactly.  valgrind runs twice first, to prove
# the program is deterministic with these inputs: if it were not, a mismatch
# would say nothing about memtally.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/valgrind-lib.inc"
. "$MEMTALLY_ROOT/tests/integration/sqlite3-script.inc"
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
[ -x /usr/bin/sqlite3 ] || skip "sqlite3 is not installed"

sqlite3_script   # script.sql and expected (sqlite3-script.inc)

# A fixed environment: no ~/.sqliterc (HOME is this empty directory), the C
# locale; and a fresh database file for each run (sqlite allocates
# differently when it opens an existing database).
BASE_ENV="PATH=/usr/bin:/bin HOME=$TEST_TMP LC_ALL=C"
match_environments "$BASE_ENV"   # sets VG and MT (valgrind-lib.inc)
run_sqlite() { # RUNNER...
    rm -f t.db t.db-journal
    "$@" /usr/bin/sqlite3 -batch t.db <script.sql
}

run_sqlite $VG --log-file=vg1.log >out.vg || fail "sqlite3 under valgrind failed"
run_sqlite $VG --log-file=vg2.log >/dev/null || fail "sqlite3 under valgrind failed"
truth=$(vg_totals vg1.log)
[ -n "$truth" ] || fail "no heap summary in valgrind's log: $(cat vg1.log)"
[ "$truth" = "$(vg_totals vg2.log)" ] ||
    fail "sqlite3 is not deterministic under valgrind: $truth vs $(vg_totals vg2.log)"
cmp -s expected out.vg || fail "unexpected output under valgrind: $(cat out.vg)"

run_sqlite $MT -o sqlite3.mtly -- >out.mt || fail "memtally record failed"
cmp -s expected out.mt || fail "unexpected output under memtally: $(cat out.mt)"

set -- $truth
"$MEMTALLY_BIN" info --json sqlite3.mtly >info.json || fail "memtally info failed"
expect_eq "sqlite3 allocations (valgrind: $1)" "$1" "$(jq -r .allocations info.json)"
expect_eq "sqlite3 frees (valgrind: $2)" "$2" "$(jq -r .frees info.json)"
expect_eq "sqlite3 bytes_allocated (valgrind: $3)" "$3" "$(jq -r .bytes_allocated info.json)"
expect_eq "sqlite3 truncated" false "$(jq -r .truncated info.json)"
