#!/bin/sh
# memtally's own stack walker (src/preload/unwind.c) against libunwind:
# MEMTALLY_UNWIND=check walks every stack with both and says at exit how
# many differed (a stack guessed from the one before, checked against the
# trie, and one found among the thread's recent stacks, checked against
# the walk's, count too).  Zero on tests/programs/unwind_shapes.c (recursion, rbp
# frames, alloca, one call site into frames of other sizes, a realigned
# stack, signal handlers on both stacks, longjmp, two threads), built -O2
# and -O0, and on programs we did not write.  Frames it cannot follow
# (signal frames, CFI by expression) go to libunwind: counted, never wrong.
# The default mode's report is the same as libunwind's.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN

cc -O2 -g -pthread -o shapes "$MEMTALLY_ROOT/tests/programs/unwind_shapes.c" ||
    fail "cannot build unwind_shapes"

# check_walks NAME PROGRAM...: records it in check mode; its stdout must be
# the same as alone, and no stack may differ (nor its hash, kept by the
# walker).  Sets walked, left, reused, guessed, found (among the recent
# stacks).  $DEPTH: record's --depth.
check_walks() {
    name=$1; shift
    "$@" >alone.out 2>/dev/null || fail "$name fails even alone"
    MEMTALLY_UNWIND=check "$M" record -q --depth "${DEPTH:-64}" -o check.mtly -- "$@" >rec.out 2>rec.err ||
        fail "$name under record failed: $(cat rec.err)"
    cmp -s alone.out rec.out || fail "$name printed something else when recorded"
    line=$(grep "stacks walked by both" rec.err) || fail "$name: no check line in: $(cat rec.err)"
    echo "$name: $line"
    made=$(echo "$line" | sed -n 's/.*; \([0-9]*\) stacks made, \([0-9]*\) put in the table.*/\1 \2/p')
    set -- $made
    [ $# = 2 ] || fail "$name: no count of stacks made in: $line"
    made=$1 tabled=$2
    [ "$tabled" -le "$made" ] || fail "$name: $tabled stacks put in the table, only $made made"
    set -- $(echo "$line" | sed 's/.*check: \([0-9]*\) stacks.*, \([0-9]*\) differed; \([0-9]*\) left.*; \([0-9]*\) frames reused.*, \([0-9]*\) guessed; \([0-9]*\) recent stacks found.*/\1 \2 \3 \4 \5 \6/')
    [ $# = 6 ] || fail "$name: cannot read the check line: $line"
    walked=$1 left=$3 reused=$4 guessed=$5 found=$6
    expect_eq "$name: stacks that differed" 0 "$2"
    [ "$walked" -gt 0 ] || fail "$name: no stack walked by both"
}

check_walks "shapes -O2" ./shapes
[ "$left" -gt 0 ] || fail "signal frames and the realigned stack should be left to libunwind"
[ "$reused" -gt 0 ] || fail "no frame was reused from a previous walk"
check_walks "shapes -O0" "$TEST_PROGRAMS/unwind_shapes"
# Stacks cut at a few frames: reused walks that end at the limit, and
# walks resumed past a kept one's end.
DEPTH=6 check_walks "shapes, --depth 6" ./shapes

# Coroutines: stacks of other sizes at the same addresses, one after the
# other; what a reused walk read is read again only where it still is.
check_walks "coroutines" "$TEST_PROGRAMS/unwind_coroutines"
[ "$found" -gt 0 ] || fail "coroutines: no stack found among the recent"

# Binary trees: thousands of stacks, met in the same order tree after
# tree, too many for the thread's cache: most are guessed, and each guess
# is checked against the trie.
cc -O2 -g -o trees "$MEMTALLY_ROOT/bench/workloads/binarytrees.c" || fail "cannot build binarytrees"
check_walks "binary trees" ./trees 12
[ "$guessed" -gt 10000 ] || fail "binary trees: only $guessed stacks guessed"

# New stacks interned by four threads at once, the trie's slots fetched
# ahead without the lock and passed over by their tags
# (src/preload/stacks.c): each of the program's stacks once (and glibc's
# two: the threads' DTVs, stdout's buffer), every allocation, and each
# node of the trie once: a probe that missed a node it has would make it
# again (a tag compared wrongly made 280,421 nodes of 164,783).  Past the
# program's nodes, those of the threads' callers and of main's stacks.
check_walks "new stacks, 4 threads" "$TEST_PROGRAMS/unwind_new_stacks"
info=$("$M" info check.mtly) || fail "info of the new stacks' trace failed"
want=$(sed -n 's/^stacks //p' alone.out) nodes=$(sed -n 's/^nodes //p' alone.out)
got=$(echo "$info" | sed -n 's/^unique stacks: *\([0-9]*\).*/\1/p')
expect_eq "new stacks: unique stacks" $((want + 2)) "$got"
# Each stack made once, whichever thread met it first (check mode's count).
expect_eq "new stacks: stacks made" "$got" "$made"
allocs=$(echo "$info" | sed -n 's/^allocations: *\([0-9]*\).*/\1/p')
expect_eq "new stacks: allocations" $((4 * 3000 * 20 + 5)) "$allocs"
frames=$(echo "$info" | sed -n 's/^unique stacks:.*(\([0-9]*\) frames.*/\1/p')
[ -n "$frames" ] && [ "$frames" -ge "$nodes" ] && [ "$frames" -le $((nodes + 64)) ] ||
    fail "new stacks: $frames nodes in the trie, the program's are $nodes (and a few of glibc's)"
echo "ok: new stacks: $frames nodes in the trie, the program's $nodes"

# The storm: random call paths 10 to 40 frames deep, thousands of stacks,
# too many for a thread's first 128 recent ones (0.3% found there): found
# only once its recent stacks have grown (src/preload/recent.c), in one
# thread and in two, each with its own.
cc -O2 -g -pthread -o storm "$MEMTALLY_ROOT/bench/workloads/storm.c" || fail "cannot build storm"
check_walks "storm, 1 thread" ./storm 1 200000
[ "$found" -gt $((walked / 2)) ] || fail "storm: $found of $walked stacks found among the recent"
check_walks "storm, 2 threads" ./storm 2 100000
[ "$found" -gt $((walked / 2)) ] || fail "storm, 2 threads: $found of $walked stacks found among the recent"

# Allocations reported through the API (mtl_alloc) are walked from
# memtally's own frame, not the program's: that walk checked too.
cc -O0 -g -I"$MEMTALLY_ROOT/include" -o pool_types "$MEMTALLY_ROOT/tests/api/pool_types.c" \
    -L"$MEMTALLY_ROOT/build" -lmemtally -Wl,-rpath,"$MEMTALLY_ROOT/build" ||
    fail "cannot build pool_types"
check_walks "pool_types, through the API" ./pool_types

# The default mode gives the stacks libunwind gives: every stack with its
# bytes, as folded stacks (the program allocates the same each run).
folded() {
    "$M" export "$1" --format folded -o "$1.folded" || fail "export of $1 failed"
    sort "$1.folded"
}
record own.mtly ./shapes >/dev/null || fail "record failed"
MEMTALLY_UNWIND=libunwind "$M" record -q -o lib.mtly -- ./shapes >/dev/null || fail "record failed"
folded own.mtly > own.txt && folded lib.mtly > lib.txt
[ "$(grep -c ';right;right;left;take ' own.txt)" -gt 0 ] || fail "no recursive stack in: $(head own.txt)"
cmp -s own.txt lib.txt || fail "the stacks differ between the walkers: $(diff own.txt lib.txt | head -5)"
echo "ok: the same $(wc -l < own.txt) stacks and bytes as libunwind's"

# Programs we did not write.
# Their stacks come back: most are found among the thread's recent ones
# (each also walked and compared, in check mode).
check_walks python3 /usr/bin/python3 -c 'import json; print(len(json.dumps([{"k": i} for i in range(3000)])))'
[ "$found" -gt $((walked / 4)) ] || fail "python3: $found of $walked stacks found among the recent"
if command -v sqlite3 >/dev/null; then
    check_walks sqlite3 sqlite3 :memory: "create table t(a, b); insert into t select value, hex(value) from generate_series(1, 3000); create index i on t(b); select count(*) from t where b like '%A%';"
    [ "$found" -gt $((walked / 2)) ] || fail "sqlite3: $found of $walked stacks found among the recent"
fi
check_walks perl /usr/bin/perl -e 'my %h; $h{$_} = "x" x ($_ % 50) for 1 .. 3000; print scalar(keys %h), "\n"'
