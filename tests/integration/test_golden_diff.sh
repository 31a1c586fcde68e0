#!/bin/sh
# memtally diff of two runs of tests/programs/golden_funcs.c: `golden_funcs 10`
# and `golden_funcs 13` differ only in alpha's number of 100-byte blocks (all
# live at the peak, one leaked either way).  Truth from the code (valgrind
# agrees: 43 allocs / 6,708 bytes and 46 allocs / 7,008 bytes):
#   alpha: calls 10 -> 13, bytes 1000 -> 1300, at peak 1000 -> 1300, leaked
#   100 -> 100; every other site unchanged; total calls 43 -> 46, bytes
#   6708 -> 7008, peak 6020 -> 6320, leaked 1300 -> 1300.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command diff

record base.mtly "$TEST_PROGRAMS/golden_funcs" 10 >/dev/null || fail "record (10) failed"
record new.mtly "$TEST_PROGRAMS/golden_funcs" 13 >/dev/null || fail "record (13) failed"

fields='[.calls_base, .calls_new, .calls_delta, .bytes_base, .bytes_new, .bytes_delta, .peak_base, .peak_new, .peak_delta, .leaked_base, .leaked_new, .leaked_delta]'
analyze d.json diff base.mtly new.mtly
expect_jq "diff: first row is alpha" d.json '.rows[0] | fname' alpha
expect_jq "diff: alpha" d.json ".rows[] | select(fname == \"alpha\") | $fields" \
    '[10,13,3,1000,1300,300,1000,1300,300,100,100,0]'
expect_jq "diff: rows that changed" d.json \
    '[.rows[] | select(.calls_delta != 0 or .bytes_delta != 0 or .peak_delta != 0 or .leaked_delta != 0) | fname]' '["alpha"]'
expect_jq "diff: sites" d.json '[.rows[] | fname] | sort' \
    '["alpha","beta","delta","grow","keeper","make_buffer","scratch"]'
expect_jq "diff: make_buffer (unchanged)" d.json ".rows[] | select(fname == \"make_buffer\") | $fields" \
    '[3,3,0,3000,3000,0,3000,3000,0,1000,1000,0]'
expect_jq "diff: scratch (unchanged, none live at the peak)" d.json ".rows[] | select(fname == \"scratch\") | $fields" \
    '[8,8,0,288,288,0,0,0,0,0,0,0]'
expect_jq "diff: total" d.json ".total | $fields" \
    '[43,46,3,6708,7008,300,6020,6320,300,1300,1300,0]'

# The other way round, the deltas change sign.
analyze r.json diff new.mtly base.mtly
expect_jq "diff reversed: alpha" r.json ".rows[] | select(fname == \"alpha\") | $fields" \
    '[13,10,-3,1300,1000,-300,1300,1000,-300,100,100,0]'
expect_jq "diff reversed: total" r.json ".total | [.calls_delta, .bytes_delta, .peak_delta, .leaked_delta]" '[-3,-300,-300,0]'

# A trace against itself: nothing changed.
analyze s.json diff base.mtly base.mtly
expect_jq "diff with itself: deltas" s.json \
    '[.rows[], .total | .calls_delta, .bytes_delta, .peak_delta, .leaked_delta] | map(select(. != 0)) | length' 0

# A filter applies to both traces.
analyze f.json diff --inside gamma base.mtly new.mtly
expect_jq "diff --inside gamma" f.json "[.rows[] | fname], (.total | $fields)" \
    '["make_buffer"]
[3,3,0,3000,3000,0,3000,3000,0,1000,1000,0]'
