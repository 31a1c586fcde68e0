#!/bin/sh
# Exact counts of tests/programs/exact_handoff.c: 4 threads hand blocks
# round a ring, 1.6 million events appended while the writer claims the
# threads' states (src/common/region.h, mtl_state_enter), which they hold
# without a locked instruction.  A free written after its address's next
# allocation would leave a block live at the end; a lost event, a count
# off.  Recorded by memtally record (the writer another process) and by
# the program itself (the writer a thread of it), with glibc's per-thread
# cache on and off (off: a freed block goes back to its arena at once,
# where the thread that allocated it takes it again).  The truth is the
# program's own, from its code (see its head).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

rounds=200000
run_checks() {
    what=$1 trace=$2
    set -- $(sed -n 's/^truth //p' "$what.err")
    [ $# -eq 4 ] || fail "$what: exact_handoff printed no truth line"
    json=$("$MEMTALLY_BIN" info --json "$trace") || fail "memtally info --json $trace failed"
    expect_eq "$what allocations" "$1" "$(printf "%s\n" "$json" | jq -r .allocations)"
    expect_eq "$what frees" "$2" "$(printf "%s\n" "$json" | jq -r .frees)"
    expect_eq "$what bytes allocated" "$3" "$(printf "%s\n" "$json" | jq -r .bytes_allocated)"
    expect_eq "$what live at the end" "$4" "$(printf "%s\n" "$json" | jq -r .live_bytes_at_end)"
    expect_eq "$what threads" 5 "$(printf "%s\n" "$json" | jq -r .threads)"
    expect_eq "$what cut short" false "$(printf "%s\n" "$json" | jq -r .truncated)"
}

for cache in on off; do
    if [ $cache = off ]; then
        export GLIBC_TUNABLES=glibc.malloc.tcache_count=0
    fi
    record "record-$cache.mtly" "$TEST_PROGRAMS/exact_handoff" $rounds \
        >"record-$cache.out" 2>"record-$cache.err" || fail "exact_handoff failed under memtally record"
    expect_eq "stdout" "handoff ok" "$(cat "record-$cache.out")"
    run_checks "record-$cache" "record-$cache.mtly"

    LD_PRELOAD="$MEMTALLY_ROOT/build/libmemtally.so" MEMTALLY_PATTERN="$PWD/self-$cache.mtly" \
        "$TEST_PROGRAMS/exact_handoff" $rounds >"self-$cache.out" 2>"self-$cache.err" ||
        fail "exact_handoff failed recording itself"
    run_checks "self-$cache" "self-$cache.mtly"
done
unset GLIBC_TUNABLES
