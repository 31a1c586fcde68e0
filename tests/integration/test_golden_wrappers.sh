#!/bin/sh
# Allocation wrappers (docs/ANALYSIS.md, "Allocation wrappers") on
# tests/programs/golden_wrappers.cc: user functions that allocate only
# through std::vector, std::map, std::unordered_map, std::string,
# std::deque, make_shared, std::function, strdup and an xmalloc-style
# wrapper.  Each must be the site of exactly the blocks it made: `report
# --total` has one row per user function (the row's function cut at its
# first '(' is the function's name) with the calls and bytes the program
# counted itself, through its own operator new and its wrappers, and
# printed on stderr as "truth FUNCTION CALLS BYTES".  compare_keys,
# which std::sort calls, keeps its own blocks: hiding a frame moves blocks
# to its caller only, so the innermost user function is the site.
# valgrind agrees: under DHAT (which replaces the program's operator new
# with its own, so the program counts only its C wrappers there), the
# blocks of each program point summed by the innermost user function on
# its stack equal the truth for all 11 functions, e.g. fill_vector 58
# blocks 22060 bytes, compare_keys 1748 / 73297, grow_string 14 / 138562;
# in all 2870 blocks, 412291 bytes, as memtally's total.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report

prog=$TEST_PROGRAMS/golden_wrappers
"$prog" >plain.out 2>truth.txt || fail "golden_wrappers failed: $(cat truth.txt)"
record t.mtly "$prog" >traced.out 2>traced.err || fail "record failed: $(cat traced.err)"
cmp -s plain.out traced.out || fail "stdout differs through memtally"
# The truth is the program's own count, the same with and without memtally.
grep '^truth ' traced.err >truth.mt
cmp -s truth.txt truth.mt || fail "the program counted differently under memtally:
$(diff truth.txt truth.mt)"
[ "$(wc -l <truth.txt)" -eq 11 ] || fail "expected 11 truth lines: $(cat truth.txt)"

analyze r.json report --total t.mtly
# Every user function allocated something, or the test would prove nothing.
while read -r word fn calls bytes; do
    [ "$word" = truth ] && [ "$calls" -gt 0 ] && [ "$bytes" -gt 0 ] ||
        fail "a truth line with nothing counted: $word $fn $calls $bytes"
done <truth.txt

failed=""
while read -r word fn calls bytes; do
    got=$(jv r.json "[.total.rows[] | select((.function // \"\") | sub(\"\\\\(.*\$\"; \"\") == \"$fn\") | [.calls, .bytes]]")
    if [ "$got" = "[[$calls,$bytes]]" ]; then
        echo "ok: $fn: $calls calls, $bytes bytes"
    else
        echo "NOT OK: $fn: truth [[$calls,$bytes]], report $got"
        failed="$failed $fn"
    fi
done <truth.txt
if [ -n "$failed" ]; then
    echo "the report's 10 largest rows:"
    jv r.json '.total.rows[:10][] | "  \(.calls) \(.bytes) \(.function)"'
    fail "user functions whose blocks are not theirs:$failed"
fi

# The rows of all user functions hold at most the whole trace.
sum=$(awk '{c += $3; b += $4} END {print "[" c "," b "]"}' truth.txt)
expect_true "user rows within the total" r.json \
    "([.total.calls, .total.bytes] as \$t | $sum as \$s | \$s[0] <= \$t[0] and \$s[1] <= \$t[1])"

# tree --sites starts where report's rows are: past the wrappers.
analyze r.json report --total t.mtly
analyze s.json tree --sites --min-percent 0 t.mtly
expect_jq "tree --sites: the sites are report's rows" s.json \
    '[.root.children[] | [fname, .calls, .bytes]] | sort' \
    "$(jv r.json '[.total.rows[] | [fname, .calls, .bytes]] | sort')"
