#!/bin/sh
# report --by type: blocks summed per type tag (ALLOC_EX records), per thread
# and in all, with the filters, read as a stream and from the index alike.
# The trace is written by tests/tools/mktrace, so every tag, size and time
# is known: thread 0 makes 3 Node (48 B) and 1 Buffer (4096 B), thread 1
# makes 2 Node and 2 untagged blocks (100 B); one Node of each thread and
# the Buffer are freed at 50 ms.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"

mktrace t.mtly <<'EOF'
header program=/bin/typed pid=7 start=1000000 mode=full depth=32
stack a make_node parse main
stack b make_buffer main
stack c worker
start 0 0 7 main
start 1 1 8 worker
alloc 10 0 0x1000 48 a Node
alloc 11 0 0x1100 48 a Node
alloc 12 0 0x1200 48 a Node
alloc 13 0 0x2000 4096 b Buffer
alloc 20 1 0x3000 48 c Node
alloc 21 1 0x3100 48 c Node
alloc 22 1 0x4000 100 c
alloc 23 1 0x4100 100 c
free 50000 0 0x1000
free 50001 1 0x3000
free 50002 0 0x2000
end 100000
EOF

# The index first, so that every query of the second round reads it.
"$MEMTALLY_BIN" index t.mtly >/dev/null || fail "memtally index failed"
for how in --no-index ""; do
    what=${how:-"with the index"}
    analyze r.json report --by type $how t.mtly
    expect_jq "$what: all threads" r.json \
        '[.total.calls, .total.bytes, [.total.rows[] | [.type, .calls, .bytes]]]' \
        '[8,4536,[["Buffer",1,4096],["Node",5,240],["(untagged)",2,200]]]'
    expect_jq "$what: per thread" r.json \
        '[.threads[] | [.tid, [.rows[] | [.type, .calls, .bytes]]]]' \
        '[[7,[["Buffer",1,4096],["Node",3,144]]],[8,[["(untagged)",2,200],["Node",2,96]]]]'
    analyze i.json info $how t.mtly
    expect_jq "$what: info counts the tagged allocations" i.json '.tagged_allocations' 6
    analyze l.json report --by type --total --never-freed $how t.mtly
    expect_jq "$what: --never-freed" l.json '[.total.rows[] | [.type, .calls, .bytes]]' \
        '[["(untagged)",2,200],["Node",3,144]]'
    analyze s.json report --by type --total --sort calls --live-at 60ms $how t.mtly
    expect_jq "$what: --live-at 60ms, by calls" s.json '[.total.rows[] | [.type, .calls]]' \
        '[["Node",3],["(untagged)",2]]'
done

# The text table names the column and the tags.
"$MEMTALLY_BIN" report --by type --total t.mtly >r.txt || fail "report --by type failed"
grep -q "TYPE" r.txt || fail "no TYPE column: $(cat r.txt)"
grep -q "Buffer" r.txt && grep -q "(untagged)" r.txt || fail "tags missing: $(cat r.txt)"
echo "ok: the text table"

# A trace without tags: one row, all untagged.
mktrace plain.mtly <<'EOF'
header program=/bin/plain pid=9 start=1000000 mode=full depth=32
stack a f main
start 0 0 9 main
alloc 10 0 0x1000 10 a
end 20
EOF
analyze p.json report --by type --total plain.mtly
expect_jq "untagged trace" p.json '[.total.rows[] | [.type, .calls, .bytes]]' '[["(untagged)",1,10]]'

"$MEMTALLY_BIN" report --by kind t.mtly >/dev/null 2>err.txt && fail "--by kind was accepted"
grep -q "type" err.txt || fail "the error does not list type: $(cat err.txt)"
echo "ok: --by kind refused"
