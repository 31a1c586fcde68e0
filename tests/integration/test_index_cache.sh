#!/bin/sh
# The index cache (docs/ANALYSIS.md, "The index"): one index per trace,
# found again by the next analysis; a new one when the trace changes; at
# most MEMTALLY_INDEX_MAX bytes of indexes and decompressed debug files,
# the least recently used removed first, never the index just built.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

record a.mtly "$TEST_PROGRAMS/index_churn" || fail "recording a failed"
record b.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "recording b failed"
record c.mtly "$TEST_PROGRAMS/golden_phases" >/dev/null || fail "recording c failed"
count() { ls "$MEMTALLY_INDEX_DIR"/*.mtlx 2>/dev/null | wc -l; }

"$MEMTALLY_BIN" peak a.mtly >/dev/null || fail "peak a failed"
expect_eq "indexes after peak a" 1 "$(count)"
ia=$(ls "$MEMTALLY_INDEX_DIR"/*.mtlx)
"$MEMTALLY_BIN" leaks a.mtly >/dev/null || fail "leaks a failed"
expect_eq "indexes after leaks a (the same one)" 1 "$(count)"
"$MEMTALLY_BIN" index --json a.mtly >i.json || fail "index a failed"
expect_eq "memtally index names it" "$ia" "$(jq -r .index i.json)"

# The trace changes (cut short, as a copy still being made): its index is
# made anew, in place (indexes are named by the trace's inode).
head -c $(($(wc -c <a.mtly) / 2)) a.mtly >a2.mtly
"$MEMTALLY_BIN" index --json a2.mtly >i2.json 2>/dev/null || fail "index a2 failed"
head -c $(($(wc -c <a.mtly) * 3 / 4)) a.mtly >>a2.tmp && cat a2.tmp >a2.mtly
"$MEMTALLY_BIN" index --json a2.mtly >i3.json 2>/dev/null || fail "index a2 again failed"
expect_eq "the same index file" "$(jq -r .index i2.json)" "$(jq -r .index i3.json)"
[ "$(jq .allocations i3.json)" -gt "$(jq .allocations i2.json)" ] ||
    fail "the index of the grown trace holds no more allocations"
expect_eq "indexes" 2 "$(count)"
# (peak and leaks named frames of libc: its debug file may be copied in
# debug/, which counts in the limit; tested below.)
rm -rf "$MEMTALLY_INDEX_DIR"/*.mtlx "$MEMTALLY_INDEX_DIR/debug"

# The limit: b and c fit, a (the largest) does not fit beside them.
"$MEMTALLY_BIN" index b.mtly >/dev/null && "$MEMTALLY_BIN" index c.mtly >/dev/null ||
    fail "index b, c failed"
ib=$(ls -t "$MEMTALLY_INDEX_DIR"/*.mtlx | tail -1)
ic=$(ls -t "$MEMTALLY_INDEX_DIR"/*.mtlx | head -1)
touch -d '2 hours ago' "$ib"
touch -d '1 hour ago' "$ic"
size_b=$(wc -c <"$ib") size_c=$(wc -c <"$ic")
size_a=$(jq .bytes i.json)
MEMTALLY_INDEX_MAX=$((size_c + size_a + 1000)) "$MEMTALLY_BIN" index a.mtly >/dev/null ||
    fail "index a under a limit failed"
[ -e "$ib" ] && fail "the least recently used index (b) was kept over the limit"
[ -e "$ic" ] || fail "c was removed though a and c fit"
expect_eq "indexes under the limit" 2 "$(count)"
echo "ok: the least recently used index went first"

# A limit below the new index alone: it is kept, the others go.
MEMTALLY_INDEX_MAX=1K "$MEMTALLY_BIN" index b.mtly >/dev/null || fail "index b under 1K failed"
expect_eq "only the index just built is kept" 1 "$(count)"

# Decompressed debug files count in the limit too, and go first when older.
mkdir -p "$MEMTALLY_INDEX_DIR/debug"
head -c 200000 /dev/zero >"$MEMTALLY_INDEX_DIR/debug/0123456789abcdef.debug"
touch -d '3 hours ago' "$MEMTALLY_INDEX_DIR/debug/0123456789abcdef.debug"
kept=$(ls "$MEMTALLY_INDEX_DIR"/*.mtlx)
MEMTALLY_INDEX_MAX=$(($(wc -c <"$kept") + size_c + 150000)) \
    "$MEMTALLY_BIN" index c.mtly >/dev/null || fail "index c failed"
[ -e "$MEMTALLY_INDEX_DIR/debug/0123456789abcdef.debug" ] &&
    fail "an old debug copy was kept over the limit"
echo "ok: debug copies count in the limit"
