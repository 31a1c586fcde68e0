#!/bin/sh
# memtally temporary and histogram on tests/programs/golden_funcs.c.
# Truth from the code:
#   temporary (no allocation between a block's allocation and its free):
#     scratch's 8 blocks of 36 bytes, nothing else; 43 calls in all.
#   --within-us 20000: also grow's first 4 blocks (realloc'ed away within
#     microseconds): 12 calls, 688 bytes; all other blocks live past a 60 ms
#     sleep.
#   histogram: [32,63] 16 calls 692 bytes, [64,127] 16 calls 1456 bytes,
#     [128,255] 8 calls 1560 bytes, [512,1023] 3 calls 3000 bytes.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command temporary
need_command histogram

record t.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "record failed"

analyze a.json temporary t.mtly
expect_jq "temporary totals" a.json '[.temporary_calls, .calls, .temporary_bytes]' '[8,43,288]'
expect_jq "temporary rows" a.json \
    '[.rows[] | select(.temporary_calls > 0) | [fname, .temporary_calls, .calls, .bytes]]' \
    '[["scratch",8,8,288]]'
expect_true "temporary scratch percent" a.json 'near(.rows[] | select(fname == "scratch") | .percent; 100)'

analyze b.json temporary --within-us 20000 t.mtly
expect_jq "--within-us 20000 totals" b.json '[.temporary_calls, .calls, .temporary_bytes]' '[12,43,688]'
expect_jq "--within-us 20000 rows" b.json \
    '[.rows[] | select(.temporary_calls > 0) | [fname, .temporary_calls, .calls]] | sort_by(-.[1])' \
    '[["scratch",8,8],["grow",4,5]]'
expect_true "--within-us 20000 percents" b.json \
    'near(.rows[] | select(fname == "scratch") | .percent; 800 / 12) and near(.rows[] | select(fname == "grow") | .percent; 400 / 12)'

analyze c.json temporary --inside alpha t.mtly
expect_jq "temporary --inside alpha" c.json '[.temporary_calls, .calls, .temporary_bytes]' '[0,10,0]'

analyze h.json histogram t.mtly
expect_jq "histogram totals" h.json '[.calls, .bytes]' '[43,6708]'
expect_jq "histogram buckets" h.json '[.buckets[] | [.min, .max, .calls, .bytes]]' \
    '[[32,63,16,692],[64,127,16,1456],[128,255,8,1560],[512,1023,3,3000]]'
expect_true "histogram percents (of calls)" h.json \
    '[.buckets[].percent] as $p | near($p[0]; 1600 / 43) and near($p[1]; 1600 / 43) and near($p[2]; 800 / 43) and near($p[3]; 300 / 43)'

analyze g.json histogram --size 64..255 t.mtly
expect_jq "histogram --size 64..255" g.json '[.calls, .bytes, [.buckets[] | [.min, .max, .calls, .bytes]]]' \
    '[24,3016,[[64,127,16,1456],[128,255,8,1560]]]'
