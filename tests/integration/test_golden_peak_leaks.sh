#!/bin/sh
# memtally peak and leaks (with --suppressions) on tests/programs/golden_funcs.c.
# Truth from the code (valgrind agrees: 1,300 bytes in 3 blocks in use at
# exit; massif's peak 6020):
#   peak 6020 bytes in 31 blocks, reached by gamma's third buffer, 60 ms
#   before the end: make_buffer 3 / 3000, beta 6 / 1200, alpha 10 / 1000,
#   keeper 7 / 364, delta 4 / 256, grow 1 / 200 (scratch: none live).
#   leaked 1300 bytes in 3 blocks: make_buffer 1000 (stack make_buffer <
#   gamma < main), grow 200, alpha 100.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command peak
need_command leaks

src=$GOLDEN_SRC/golden_funcs.c
record t.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "record failed"
duration=$(info_get t.mtly duration_us)

# peak
analyze p.json peak t.mtly
expect_jq "peak_bytes" p.json .peak_bytes 6020
expect_jq "peak blocks" p.json .blocks 31
expect_jq "peak rows (function, blocks, bytes)" p.json \
    '[.rows[] | [fname, .blocks, .bytes]] | sort_by(-.[2])' \
    '[["make_buffer",3,3000],["beta",6,1200],["alpha",10,1000],["keeper",7,364],["delta",4,256],["grow",1,200]]'
expect_true "peak percents add up to 100" p.json 'near([.rows[].percent] | add; 100)'
expect_true "peak make_buffer percent" p.json 'near(.rows[] | select(fname == "make_buffer") | .percent; 300000 / 6020)'
expect_true "peak time is before the 60 ms sleep ($duration us in all)" p.json \
    ".peak_time_us > 0 and .peak_time_us + 50000 <= $duration"

# peak of a subset: the filters apply.
analyze q.json peak --inside gamma t.mtly
expect_jq "peak --inside gamma" q.json '[.peak_bytes, .blocks]' '[3000,3]'
analyze q.json peak --not-inside grow t.mtly
expect_jq "peak --not-inside grow" q.json '[.peak_bytes, .blocks]' '[5820,30]'

# leaks
analyze l.json leaks t.mtly
expect_jq "leaked bytes, blocks" l.json '[.leaked_bytes, .leaked_blocks]' '[1300,3]'
expect_jq "suppressed (none)" l.json '[.suppressed_bytes, .suppressed_blocks]' '[0,0]'
expect_jq "leak rows" l.json '[.rows[] | [fname, .blocks, .bytes]] | sort_by(-.[2])' \
    '[["make_buffer",1,1000],["grow",1,200],["alpha",1,100]]'
expect_true "leak percents add up to 100" l.json 'near([.rows[].percent] | add; 100)'
expect_true "leak alpha percent" l.json 'near(.rows[] | select(fname == "alpha") | .percent; 10000 / 1300)'
mb='.rows[] | select(fname == "make_buffer") | .stack'
expect_jq "make_buffer leak stack" l.json "[$mb | .[0:3][] | [fname, .line, .inlined]]" \
    "[[\"make_buffer\",$(line_of "$src" make_buffer),false],[\"gamma\",$(line_of "$src" gamma),false],[\"main\",$(line_of "$src" call_gamma),false]]"
expect_true "make_buffer leak frame file and module" l.json \
    "$mb | .[0] | (.file | test(\"(^|/)golden_funcs[.]c\$\")) and (.module | test(\"(^|/)golden_funcs\$\"))"
expect_jq "alpha leak stack" l.json '[.rows[] | select(fname == "alpha") | .stack[0:2][] | fname]' '["alpha","main"]'

# --suppressions: a pattern matching any frame of a block's stack.
printf '# gamma leaks its last buffer on purpose\n\ngamma\n' >s1.supp
analyze l1.json leaks --suppressions s1.supp t.mtly
expect_jq "suppress gamma: leaked" l1.json '[.leaked_bytes, .leaked_blocks]' '[300,2]'
expect_jq "suppress gamma: suppressed" l1.json '[.suppressed_bytes, .suppressed_blocks]' '[1000,1]'
expect_jq "suppress gamma: rows" l1.json '[.rows[] | fname] | sort' '["alpha","grow"]'

printf 'gr*\n# and alpha\nal?ha\n' >s2.supp
analyze l2.json leaks --suppressions s2.supp t.mtly
expect_jq "suppress gr*, al?ha: leaked" l2.json '[.leaked_bytes, .leaked_blocks]' '[1000,1]'
expect_jq "suppress gr*, al?ha: suppressed" l2.json '[.suppressed_bytes, .suppressed_blocks]' '[300,2]'
expect_jq "suppress gr*, al?ha: rows" l2.json '[.rows[] | fname]' '["make_buffer"]'

printf 'main\n' >s3.supp
analyze l3.json leaks --suppressions s3.supp t.mtly
expect_jq "suppress main: everything" l3.json \
    '[.leaked_bytes, .leaked_blocks, .suppressed_bytes, .suppressed_blocks, (.rows | length)]' '[0,0,1300,3,0]'

printf 'nothing_is_called_this\n' >s4.supp
analyze l4.json leaks --suppressions s4.supp t.mtly
expect_jq "suppress an unknown name: nothing" l4.json \
    '[.leaked_bytes, .leaked_blocks, .suppressed_bytes, .suppressed_blocks]' '[1300,3,0,0]'

# leaks with a filter: only alpha's.
analyze l5.json leaks --inside alpha t.mtly
expect_jq "leaks --inside alpha" l5.json '[.leaked_bytes, .leaked_blocks, [.rows[] | fname]]' '[100,1,["alpha"]]'
