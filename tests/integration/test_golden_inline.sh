#!/bin/sh
# Inlined frames, on tests/programs/golden_inline.c: inl_alloc (always
# inline) allocates 4 x 128 bytes inlined into caller_a and 3 x 256 inlined
# into caller_b (the last leaks); plain_alloc (not inlined) 2 x 512 (the
# second leaks).  The site of a block is the innermost frame, the inlined
# function.  Truth from the code (valgrind agrees: 9 allocs, 2,304 bytes,
# 768 in use at exit):
#   self:      inl_alloc 7 / 1280, plain_alloc 2 / 1024
#   inclusive: inl_alloc 7 / 1280, caller_a 4 / 512, caller_b 3 / 768,
#              plain_alloc 2 / 1024, main 9 / 2304
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report
need_command leaks
need_command stacks
need_command tree

src=$GOLDEN_SRC/golden_inline.c
record t.mtly "$TEST_PROGRAMS/golden_inline" >/dev/null || fail "record failed"
rows='[.total.rows[] | [fname, .calls, .bytes]] | sort'

analyze r.json report --total t.mtly
expect_jq "self rows" r.json "$rows" '[["inl_alloc",7,1280],["plain_alloc",2,1024]]'
expect_jq "inl_alloc line" r.json 'row("inl_alloc").line' "$(line_of "$src" inl_alloc)"
expect_jq "plain_alloc line" r.json 'row("plain_alloc").line' "$(line_of "$src" plain_alloc)"
expect_true "inl_alloc file" r.json 'row("inl_alloc").file | test("(^|/)golden_inline[.]c$")'

analyze i.json report --total --inclusive t.mtly
for spec in inl_alloc:7:1280 caller_a:4:512 caller_b:3:768 plain_alloc:2:1024 main:9:2304; do
    IFS=: read -r f calls bytes <<EOF
$spec
EOF
    expect_jq "inclusive $f" i.json "row(\"$f\") | [.calls, .bytes]" "[$calls,$bytes]"
done

analyze h.json report --total --hide inl_alloc t.mtly
expect_jq "--hide inl_alloc rows" h.json "$rows" '[["caller_a",4,512],["caller_b",3,768],["plain_alloc",2,1024]]'
expect_jq "--hide inl_alloc: caller_b line" h.json 'row("caller_b").line' "$(line_of "$src" call_b)"
analyze h.json report --total --inside caller_a t.mtly
expect_jq "--inside caller_a" h.json "$rows" '[["inl_alloc",4,512]]'
analyze h.json report --total --not-inside inl_alloc t.mtly
expect_jq "--not-inside inl_alloc" h.json "$rows" '[["plain_alloc",2,1024]]'

analyze l.json leaks t.mtly
expect_jq "leaks" l.json '[.leaked_bytes, .leaked_blocks, ([.rows[] | [fname, .blocks, .bytes]] | sort)]' \
    '[768,2,[["inl_alloc",1,256],["plain_alloc",1,512]]]'
expect_jq "leak stack of inl_alloc" l.json \
    '[.rows[] | select(fname == "inl_alloc") | .stack[0:3][] | [fname, .line, .inlined]]' \
    "[[\"inl_alloc\",$(line_of "$src" inl_alloc),true],[\"caller_b\",$(line_of "$src" call_b),false],[\"main\",$(grep -n 'caller_b();' "$src" | cut -d: -f1),false]]"

analyze s.json stacks --target inl_alloc --depth 2 t.mtly
expect_jq "stacks inl_alloc depth 2" s.json '[.rows[] | [.count, .bytes, [.frames[] | fname], [.frames[].inlined]]]' \
    '[[4,512,["inl_alloc","caller_a"],[true,false]],[3,768,["inl_alloc","caller_b"],[true,false]]]'

analyze c.json tree --callers inl_alloc t.mtly
expect_jq "tree --callers inl_alloc" c.json \
    '.root | [fname, .calls, .bytes, ([.children[] | [fname, .calls, .bytes]] | sort)]' \
    '["inl_alloc",7,1280,[["caller_a",4,512],["caller_b",3,768]]]'
