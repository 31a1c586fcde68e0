#!/bin/sh
# The Boehm GC's heap, recorded without recompiling: tests/api/gc_boehm.c
# (linked with libgc, not with memtally) against the truth at its top.
# Its blocks are the collector's heap (--heap gc), never summed with
# malloc's; the ones the collector reclaims are freed after GC_gcollect.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
R=$MEMTALLY_ROOT
[ -f /usr/include/gc/gc.h ] || skip "libgc-dev is not installed (scripts/install-deps.sh browser)"
cc -O0 -g -o gc_boehm "$R/tests/api/gc_boehm.c" -lgc || fail "cannot build gc_boehm"

same_run 0 ./gc_boehm
expect_eq "its output" "gc ok" "$(cat traced.out)"

# Every allocation through the collector, per function, exact.
expect_eq "report --heap gc: every site's calls and bytes" \
    "$(printf '%s\n' 'grow 2 4112' 'make_buffers 20 20000' 'make_debug 3 72' 'make_freed 10 640' \
        'make_nodes 100 4800' 'make_strings 5 45' 'make_typed 4 128')" \
    "$("$M" report --heap gc --total --json trace.mtly |
       jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"' | sort)"
expect_eq "info --heap gc: allocations and bytes" "144 29797" \
    "$("$M" info --heap gc --json trace.mtly | jq -r '"\(.allocations) \(.bytes_allocated)"')"

# Reachable blocks stay live; GC_FREE and GC_REALLOC free theirs; and the
# collection reclaims dropped buffers (at least one: the collector is
# conservative, a stale copy of an address may keep one).
expect_eq "leaks --heap gc: the kept blocks, exact" \
    "$(printf '%s\n' 'grow 1 4096' 'make_debug 3 72' 'make_nodes 100 4800' 'make_strings 5 45' \
        'make_typed 4 128')" \
    "$("$M" leaks --heap gc --json trace.mtly |
       jq -r '.rows[] | select(.function != "make_buffers") | "\(.function) \(.blocks) \(.bytes)"' |
       sort)"
buffers_live=$("$M" leaks --heap gc --json trace.mtly |
               jq '[.rows[] | select(.function == "make_buffers") | .blocks] | add // 0')
[ "$buffers_live" -lt 20 ] || fail "no dropped buffer was reported freed by the collector"
echo "ok: $((20 - buffers_live)) of 20 dropped buffers reclaimed by GC_gcollect"
collections=$("$M" info --heap gc --json trace.mtly | jq .collections)
[ "$collections" -ge 1 ] || fail "no collection in the trace"
expect_eq "the timeline has the collector's heap size" true \
    "$("$M" timeline --heap gc --json trace.mtly | jq '[.points[].gc_heap_bytes] | max > 0')"

# malloc's heap is the default, without a single block of the collector's.
expect_eq "report: the program's malloc, no collector's block" "main 1 777" \
    "$("$M" report --total --json trace.mtly |
       jq -r '.total.rows[] | select(.function | test("^(main|make_|grow)")) |
              "\(.function) \(.calls) \(.bytes)"')"
expect_eq "report through the index: the same" \
    "$("$M" report --total --json --no-index trace.mtly | jq -c .total.rows)" \
    "$("$M" report --total --json trace.mtly | jq -c .total.rows)"
expect_eq "info says the other heap is there" 144 \
    "$("$M" info --json trace.mtly | jq .other_heap_allocations)"
"$M" info trace.mtly | grep -q "GC heap: *144 allocations, not counted above (see --heap gc)" ||
    fail "info does not point at --heap gc"
expect_eq "dump marks the collector's records" 175 "$("$M" dump trace.mtly | grep -c 'heap=gc')"

# A merge keeps the two heaps apart.
"$M" merge trace.mtly trace.mtly -o merged.mtly 2>/dev/null || fail "merge failed"
expect_eq "merged: the collector's allocations of both runs" 288 \
    "$("$M" info --heap gc --json merged.mtly | jq .allocations)"
expect_eq "merged: malloc's, apart" \
    "$(($("$M" info --json trace.mtly | jq .allocations) * 2))" \
    "$("$M" info --json merged.mtly | jq .allocations)"

"$M" report --heap nope trace.mtly 2>err.txt && fail "--heap nope was taken"
expect_eq "a bad heap's message" "memtally: report: --heap: 'nope' is not a heap (malloc or gc)" \
    "$(cat err.txt)"
