#!/bin/sh
# A trace cut short at any byte reads back up to its last whole block.  The
# full trace of damage_source is cut at 40+ offsets: 0, 1, inside the file
# header, at, inside and around every kind of block boundary, spread over
# the file, and at its size minus 1.  For each cut, `memtally info --json`
# and `memtally dump` must not crash or hang, and:
# - a cut before the end of the first block (which holds the header record)
#   may fail: non-zero exit and exactly one stderr line "memtally: ...";
#   it may also read as an empty truncated trace;
# - any later cut must exit 0 with "truncated": true and exactly the counts
#   of the whole blocks before the cut (the same as a cut at the last block
#   boundary before it), never above the full trace's; counts never go down
#   as the cut moves on.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

record full.mtly "$TEST_PROGRAMS/damage_source" >/dev/null || fail "recording failed"
expect_eq "full allocations" 100000 "$(info_get full.mtly allocations)"
expect_eq "full frees" 99900 "$(info_get full.mtly frees)"
expect_eq "full bytes_allocated" 10050000 "$(info_get full.mtly bytes_allocated)"
expect_eq "full truncated" false "$(info_get full.mtly truncated)"
size=$(wc -c <full.mtly)

# Block boundaries (docs/FORMAT.md): a 16-byte file header, then blocks of a
# 16-byte header (u32 magic "MBLK", u32 compressed size, ...) and the frame.
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
bounds=""; off=16; nblocks=0
while [ "$off" -lt "$size" ]; do
    [ "$(u32 full.mtly "$off")" = $((0x4b4c424d)) ] || fail "no block magic at offset $off"
    bounds="$bounds $off"
    off=$((off + 16 + $(u32 full.mtly $((off + 4)))))
    nblocks=$((nblocks + 1))
done
expect_eq "blocks end at the end of the file" "$size" "$off"
[ "$nblocks" -ge 4 ] || fail "only $nblocks blocks: the test needs a trace with more"
echo "trace: $size bytes, $nblocks blocks"
first_end=$(echo $bounds | awk '{ print ($2 == "" ? '"$size"' : $2) }')

# The cuts: fixed ones, every boundary and its neighbours, 20 spread ones.
cuts="0 1 2 7 8 9 12 15 16 17 20 31 32 33 $((size - 1))"
for b in $bounds; do cuts="$cuts $((b - 1)) $b $((b + 1)) $((b + 16))"; done
i=1; while [ $i -le 20 ]; do cuts="$cuts $((size * i / 21))"; i=$((i + 1)); done
cuts=$(for c in $cuts; do [ "$c" -ge 0 ] && [ "$c" -lt "$size" ] && echo "$c"; done | sort -n | uniq)
echo "cuts: $(echo $cuts | wc -w)"

# last_bound CUT: the last block boundary at or before CUT (0 if none).
last_bound() { lb=0; for b in $bounds; do [ "$b" -le "$1" ] && lb=$b; done; echo $lb; }

# check_exit WHAT RC ERRFILE: no crash, no hang; a failure is one line.
check_exit() {
    [ "$2" -lt 124 ] || fail "$1: exit $2 (crash or hang); stderr: $(cat "$3")"
    if [ "$2" -ne 0 ]; then
        [ "$(wc -l <"$3")" = 1 ] || fail "$1: exit $2 with stderr not one line: $(cat "$3")"
        grep -q '^memtally: ' "$3" || fail "$1: error does not start with 'memtally: ': $(cat "$3")"
    else
        [ "$(wc -l <"$3")" -le 1 ] || fail "$1: more than one line on stderr: $(cat "$3")"
    fi
}

prev_allocs=0; prev_frees=0
for c in $cuts; do
    head -c "$c" full.mtly >cut.mtly
    rc=0; timeout 10 "$MEMTALLY_BIN" info --json cut.mtly >info.json 2>err || rc=$?
    check_exit "info, cut at $c" $rc err
    timeout 10 "$MEMTALLY_BIN" dump cut.mtly >dump.txt 2>derr; drc=$?
    check_exit "dump, cut at $c" $drc derr
    if [ $rc -ne 0 ]; then
        [ "$c" -lt "$first_end" ] ||
            fail "info, cut at $c (after the first block, ends at $first_end): exit $rc: $(cat err)"
        [ $drc -ne 0 ] || fail "dump, cut at $c: exit 0 where info failed"
        echo "ok: cut at $c: $(cat err)"
        continue
    fi
    [ $drc -eq 0 ] || fail "dump, cut at $c: exit $drc where info succeeded: $(cat derr)"
    grep -q '^memtally: ' err || fail "info, cut at $c: no note on stderr"
    t=$(jq -r .truncated info.json); a=$(jq -r .allocations info.json); f=$(jq -r .frees info.json)
    [ "$t" = true ] || fail "info, cut at $c: truncated is $t"
    [ "$a" -le 100000 ] && [ "$f" -le 99900 ] || fail "cut at $c: counts $a/$f above the full trace's"
    [ "$a" -ge "$prev_allocs" ] && [ "$f" -ge "$prev_frees" ] ||
        fail "cut at $c: counts $a/$f below an earlier cut's $prev_allocs/$prev_frees"
    # The same counts as the cut at the last boundary before it.
    lb=$(last_bound "$c")
    if [ "$lb" -ge "$first_end" ] && [ "$lb" -ne "$c" ]; then
        head -c "$lb" full.mtly >bound.mtly
        "$MEMTALLY_BIN" info --json bound.mtly >binfo.json 2>berr ||
            fail "cut at the block boundary $lb failed: $(cat berr)"
        expect_eq "cut at $c: allocations as at boundary $lb" \
            "$(jq -r .allocations binfo.json)" "$a" >/dev/null
        expect_eq "cut at $c: frees as at boundary $lb" "$(jq -r .frees binfo.json)" "$f" >/dev/null
    fi
    # dump shows exactly the events that info counted.
    expect_eq "cut at $c: dump's alloc lines" "$a" "$(grep -c ' alloc ' dump.txt)" >/dev/null
    expect_eq "cut at $c: dump's free lines" "$f" "$(grep -c ' free ' dump.txt)" >/dev/null
    prev_allocs=$a; prev_frees=$f
    echo "ok: cut at $c: truncated, $a allocations, $f frees"
done
[ "$prev_allocs" -gt 0 ] || fail "no cut read back any allocation"
