#!/bin/sh
# Types and custom allocators through the API: tests/api/pool_types.c (a
# pool reporting typed objects with mtl_type and mtl_alloc, linked with
# -lmemtally) and tests/api/heaptrack_compat.c (heaptrack_api.h's reports,
# not linked with memtally), against the truth at the top of each file.
# Both write "...ok" to standard output, whose buffer (4096 bytes, never
# freed) is the one allocation of theirs outside the truth: filtered out.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
R=$MEMTALLY_ROOT
cc -O0 -g -I"$R/include" -o pool_types "$R/tests/api/pool_types.c" -L"$R/build" -lmemtally \
    -Wl,-rpath,"$R/build" || fail "cannot build pool_types"
cc -O0 -g -o heaptrack_compat "$R/tests/api/heaptrack_compat.c" || fail "cannot build heaptrack_compat"

# Without memtally: the API does nothing and the programs run as they do.
expect_eq "pool_types alone" "pool ok" "$(./pool_types)"
expect_eq "heaptrack_compat alone" "heaptrack api ok" "$(./heaptrack_compat)"

record pool.mtly ./pool_types >out.txt || fail "recording pool_types failed"
expect_eq "pool_types under memtally: its output" "pool ok" "$(cat out.txt)"
expect_eq "report --by type: exact counts and bytes" \
    "$(printf '%s\n' 'Edge 40 960' 'Node 100 4800' '(untagged) 2 1000' | sort)" \
    "$("$M" report --total --by type --json --not-inside _IO_file_doallocate pool.mtly |
       jq -r '.total.rows[] | "\(.type) \(.calls) \(.bytes)"' | sort)"
expect_eq "report by function: the pool's sites" "$(printf '%s\n' 'make_edge 40 960' 'make_node 100 4800')" \
    "$("$M" report --total --json pool.mtly | jq -r '.total.rows[] | select(.function | test("^make_")) |
       "\(.function) \(.calls) \(.bytes)"' | sort)"
expect_eq "live at the end: 70 nodes and 40 edges" "110 4320" \
    "$("$M" leaks --json --not-inside _IO_file_doallocate pool.mtly | jq -r '"\(.rows | map(.blocks) | add) \(.rows | map(.bytes) | add)"')"
expect_eq "the trace says how many are tagged" 140 "$("$M" info --json pool.mtly | jq .tagged_allocations)"
# The pool's own block never counts as live (mtl_pool): the peak is its
# objects', and memtally types splits it, at the end and at the peak.
expect_eq "types: allocated, live at the end, at the peak" \
    "$(printf '%s\n' 'Node 100 4800 70 3360 100 4800' '(untagged) 2 1000 0 0 0 0' \
        'Edge 40 960 40 960 40 960' 'total 142 6760 110 4320 140 5760')" \
    "$("$M" types --json --not-inside _IO_file_doallocate pool.mtly |
       jq -r '(.rows[], .total) | "\(.type) \(.calls) \(.bytes) \(.live_blocks) \(.live_bytes) \(.peak_blocks) \(.peak_bytes)"')"
expect_eq "types: the peak" 5760 "$("$M" types --json --not-inside _IO_file_doallocate pool.mtly | jq .peak_bytes)"
# --type filters every command; stacks --target-type cuts from the site.
expect_eq "--type Node: report" "make_node 100 4800" \
    "$("$M" report --total --json --type Node pool.mtly | jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"')"
expect_eq "--type Edge: leaks, from the index too" "40 960" \
    "$("$M" leaks --json --type Edge pool.mtly | jq -r '"\(.rows | map(.blocks) | add) \(.rows | map(.bytes) | add)"')"
expect_eq "--type Edge: leaks, streamed" "40 960" \
    "$("$M" leaks --no-index --json --type Edge pool.mtly | jq -r '"\(.rows | map(.blocks) | add) \(.rows | map(.bytes) | add)"')"
expect_eq "stacks --target-type Node --depth 2" '[100,["make_node","main"]]' \
    "$("$M" stacks --json --target-type Node --depth 2 pool.mtly | jq -c '.rows[0] | [.count, [.frames[].function]]')"
expect_eq "stacks --target-type of no block" 0 \
    "$("$M" stacks --json --target-type Nothing pool.mtly | jq '.rows | length')"

record ht.mtly ./heaptrack_compat >out.txt || fail "recording heaptrack_compat failed"
expect_eq "heaptrack_compat under memtally: its output" "heaptrack api ok" "$(cat out.txt)"
expect_eq "heaptrack's reports: allocations, bytes, frees" "60 2240 30" \
    "$("$M" info --json ht.mtly | jq -r '"\(.allocations - 1) \(.bytes_allocated - 4096) \(.frees)"')"
expect_eq "heaptrack's reports: by function" "$(printf '%s\n' 'main 10 640' 'report_objects 50 1600')" \
    "$("$M" report --total --json --not-inside _IO_file_doallocate ht.mtly |
       jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"' | sort)"
expect_eq "heaptrack's reports: live at the end" "30 1280" \
    "$("$M" leaks --json --not-inside _IO_file_doallocate ht.mtly | jq -r '"\(.rows | map(.blocks) | add) \(.rows | map(.bytes) | add)"')"
echo "ok: API types and custom allocators"

# Interpreter frames: tests/api/interp.c pushes its script's functions
# (mtl_frame_push); they stand among the native frames where it pushed
# them, in report, stacks and tree.
cc -O0 -g -I"$R/include" -o interp "$R/tests/api/interp.c" -L"$R/build" -lmemtally \
    -Wl,-rpath,"$R/build" || fail "cannot build interp"
record interp.mtly ./interp >out.txt || fail "recording interp failed"
expect_eq "interp under memtally: its output" "interp ok" "$(cat out.txt)"
W="--wrapper builtin_alloc --not-inside _IO_file_doallocate"
# shellcheck disable=SC2086
expect_eq "interp: script functions as sites" "$(printf '%s\n' 'build (script.mini:7) 5 1000' 'load (script.mini:3) 20 2000')" \
    "$("$M" report --total --json $W interp.mtly | jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"' | sort)"
# shellcheck disable=SC2086
expect_eq "interp: inclusive, each block once per script function" \
    "$(printf '%s\n' 'build (script.mini:7) 15 2000' 'load (script.mini:3) 20 2000' 'main (script.mini:12) 25 3000')" \
    "$("$M" report --total --inclusive --json $W interp.mtly |
       jq -r '.total.rows[] | select(.function | test("script")) | "\(.function) \(.calls) \(.bytes)"' | sort)"
expect_eq "interp: a stack, native and script frames interleaved" \
    '[10,["builtin_alloc","load (script.mini:3)","eval","build (script.mini:7)","eval","main (script.mini:12)","eval","main"]]' \
    "$("$M" stacks --json --target builtin_alloc --depth 8 interp.mtly | jq -c '.rows[0] | [.count, [.frames[].function]]')"
expect_eq "interp: the call tree holds the script's frames" 3 \
    "$("$M" tree --json interp.mtly | grep -o '"function": "[a-z]* (script.mini:[0-9]*)"' | sort -u | wc -l)"
echo "ok: interpreter frames"

# mtl_tag: blocks from malloc tagged afterwards (tests/api/tag_after.c):
# right away (the tag goes in the allocation's event) and long after (a
# TAG record), both counted by type, streamed and from the index, whose
# rows of the late ones were written before their tags came.
cc -O0 -g -I"$R/include" -o tag_after "$R/tests/api/tag_after.c" -L"$R/build" -lmemtally \
    -Wl,-rpath,"$R/build" || fail "cannot build tag_after"
record tag.mtly ./tag_after >out.txt || fail "recording tag_after failed"
expect_eq "tag_after under memtally: its output" "tag ok" "$(cat out.txt)"
[ "$("$M" dump tag.mtly | grep -c ' tag ptr=')" -ge 50 ] || fail "tag_after: no TAG records for the late tags"
for idx in --no-index ""; do
    # shellcheck disable=SC2086
    expect_eq "mtl_tag: types $idx" "Node 100 4800 80 3840 Late 50 800 40 640" \
        "$("$M" types $idx --json tag.mtly | jq -r '[.rows[] | select(.type != "(untagged)") |
            "\(.type) \(.calls) \(.bytes) \(.live_blocks) \(.live_bytes)"] | join(" ")')"
    # shellcheck disable=SC2086
    expect_eq "mtl_tag: leaks --type Late $idx" "40 640" \
        "$("$M" leaks $idx --json --type Late tag.mtly | jq -r '"\(.rows | map(.blocks) | add) \(.rows | map(.bytes) | add)"')"
done
# The rules of a TAG record, on a trace written by hand: the last tag
# counts, a tag of no live block is nothing, a block freed before its tag
# keeps the tag it had.
mktrace tags.mtly <<'EOT'
header program=/bin/tags pid=5 mode=full
stack s site main
start 0 0 5 main
alloc 10 0 0x1000 10 s
alloc 11 0 0x2000 20 s Old
alloc 12 0 0x3000 30 s
free 13 0 0x3000
tag 20 0 0x1000 A
tag 21 0 0x1000 B
tag 22 0 0x2000 A
tag 23 0 0x3000 A
tag 24 0 0x9000 A
end 100
EOT
for idx in --no-index ""; do
    # shellcheck disable=SC2086
    expect_eq "TAG records: the last tag counts $idx" "(untagged) 1 30 A 1 20 B 1 10" \
        "$("$M" report --total --by type $idx --json tags.mtly | jq -r '[.total.rows[] | "\(.type) \(.calls) \(.bytes)"] | sort | join(" ")')"
done
echo "ok: mtl_tag"
