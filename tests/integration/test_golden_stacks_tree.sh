#!/bin/sh
# memtally stacks and tree on tests/programs/golden_funcs.c.  Truth from the
# code: make_buffer is called only by gamma (3 x 1000 bytes), gamma only by
# main; delta recurses 4 deep with one malloc(64) per level, so cut at the
# innermost delta, 3 stacks are [delta, delta, ...] and 1 is [delta, main].
# main calls, directly, every allocating function: scratch 8 / 288, grow
# 5 / 600, alpha 10 / 1000, beta 6 / 1200, delta 4 / 256, keeper 7 / 364,
# gamma 3 / 3000 (43 / 6708 in all).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command stacks
need_command tree

src=$GOLDEN_SRC/golden_funcs.c
record t.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "record failed"

# stacks
frames='[.rows[] | [.count, .bytes, [.frames[] | fname]]]'
analyze s.json stacks --target make_buffer --depth 2 t.mtly
expect_jq "stacks make_buffer depth 2" s.json "[.blocks, $frames]" '[3,[[3,3000,["make_buffer","gamma"]]]]'
expect_jq "stacks make_buffer depth 2: target, depth" s.json '[.target, .depth]' '["make_buffer",2]'
expect_jq "stacks make_buffer depth 2: lines" s.json '[.rows[0].frames[].line]' \
    "[$(line_of "$src" make_buffer),$(line_of "$src" gamma)]"
expect_true "stacks make_buffer percent" s.json 'near(.rows[0].percent; 100)'
analyze s.json stacks --target make_buffer --depth 3 t.mtly
expect_jq "stacks make_buffer depth 3" s.json "$frames" '[[3,3000,["make_buffer","gamma","main"]]]'
analyze s.json stacks --target 'make_*' --depth 2 t.mtly
expect_jq "stacks make_* depth 2" s.json "$frames" '[[3,3000,["make_buffer","gamma"]]]'
analyze s.json stacks --target gamma --depth 2 t.mtly
expect_jq "stacks gamma depth 2 (cut at gamma)" s.json "$frames" '[[3,3000,["gamma","main"]]]'
analyze s.json stacks --target delta --depth 2 t.mtly
expect_jq "stacks delta depth 2" s.json "[.blocks, $frames]" \
    '[4,[[3,192,["delta","delta"]],[1,64,["delta","main"]]]]'
expect_jq "stacks delta depth 2: lines" s.json '[.rows[0].frames[].line]' \
    "[$(line_of "$src" delta),$(line_of "$src" delta_recurse)]"
analyze s.json stacks --target delta --depth 2 --min-count 2 t.mtly
expect_jq "stacks delta depth 2 --min-count 2" s.json "$frames" '[[3,192,["delta","delta"]]]'
analyze s.json stacks --target delta --depth 2 --min-count 4 t.mtly
expect_jq "stacks delta depth 2 --min-count 4" s.json "$frames" '[]'
analyze s.json stacks --target delta --depth 1 t.mtly
expect_jq "stacks delta depth 1" s.json "$frames" '[[4,256,["delta"]]]'
analyze s.json stacks --target alpha t.mtly
expect_jq "stacks alpha default depth 6" s.json '[.depth, (.rows | length), .rows[0].count, .rows[0].bytes, [.rows[0].frames[0:2][] | fname]]' \
    '[6,1,10,1000,["alpha","main"]]'
expect_true "stacks alpha: at most 6 frames" s.json '.rows[0].frames | length <= 6 and length >= 2'
analyze s.json stacks --target no_such_function t.mtly
expect_jq "stacks of an unknown name" s.json '[.blocks, (.rows | length)]' '[0,0]'

# tree --callers / --callees
node='def n: [fname, .calls, .bytes, ([.children[] | n] | sort)]; .root | n'
analyze c.json tree --callers make_buffer t.mtly
expect_jq "tree --callers make_buffer: root" c.json '.root | [fname, .calls, .bytes]' '["make_buffer",3,3000]'
expect_jq "tree --callers make_buffer: child" c.json '[.root.children[] | [fname, .calls, .bytes]]' '[["gamma",3,3000]]'
expect_jq "tree --callers make_buffer: grandchild" c.json \
    '[.root.children[0].children[] | [fname, .calls, .bytes]]' '[["main",3,3000]]'
analyze e.json tree --callees gamma t.mtly
expect_jq "tree --callees gamma" e.json "$node" '["gamma",3,3000,[["make_buffer",3,3000,[]]]]'
expect_true "tree --callees gamma: percent" e.json 'near(.root.percent; 100) and near(.root.children[0].percent; 100)'
analyze m.json tree --callees main t.mtly
expect_jq "tree --callees main" m.json '.root | [fname, .calls, .bytes, ([.children[] | [fname, .calls, .bytes]] | sort)]' \
    '["main",43,6708,[["alpha",10,1000],["beta",6,1200],["delta",4,256],["gamma",3,3000],["grow",5,600],["keeper",7,364],["scratch",8,288]]]'
analyze m.json tree --callees main --min-percent 10 t.mtly
expect_jq "tree --callees main --min-percent 10" m.json '[.root.children[] | fname] | sort' '["alpha","beta","gamma"]'
expect_true "tree --callees main: child percent" m.json 'near(.root.children[] | select(fname == "gamma") | .percent; 300000 / 6708)'

# The whole tree, top down: one main node holding everything, its children
# as above.
analyze w.json tree t.mtly
expect_jq "tree: root" w.json '.root | [.calls, .bytes]' '[43,6708]'
expect_jq "tree: main nodes" w.json '[.. | objects | select(has("children") and fname == "main") | [.calls, .bytes]]' '[[43,6708]]'
expect_jq "tree: main's children" w.json \
    '[.. | objects | select(has("children") and fname == "main") | .children[] | [fname, .calls, .bytes]] | sort' \
    '[["alpha",10,1000],["beta",6,1200],["delta",4,256],["gamma",3,3000],["grow",5,600],["keeper",7,364],["scratch",8,288]]'

# A stack as deep as memtally records them (256 frames): the tree nests
# two JSON levels per frame, past what the JSON writer once allowed (it
# aborted) and past what jq 1.6 parses, so the nodes are counted here.
{
    echo "header depth=256"
    printf 'stack deep'
    i=256; while [ $i -ge 1 ]; do printf ' f%d' $i; i=$((i - 1)); done
    echo
    echo "start 0 0 100 main"
    echo "alloc 10 0 0x1000 48 deep"
    echo "end 20"
} | mktrace deep.mtly
"$MEMTALLY_BIN" tree --json deep.mtly >d.json 2>d.err || fail "tree --json of a 256-frame stack: exit $?: $(cat d.err)"
[ "$(grep -o '"function": ' d.json | wc -l)" -eq 257 ] ||
    fail "tree of a 256-frame stack: $(grep -o '"function": ' d.json | wc -l) nodes, not 257"
grep -q '"function": "f256", "file": null, "line": null, "calls": 1, "bytes": 48, "percent": 100.0000, "children": \[\]}' d.json ||
    fail "tree of a 256-frame stack: f256 is not its innermost node"
"$MEMTALLY_BIN" tree --json --max-depth 10 deep.mtly >d.json || fail "tree --max-depth 10: exit $?"
expect_jq "tree --max-depth 10 of it (the root: (all), cut at its parenthesis)" d.json '[.root | recurse(.children[]) | fname]' \
    '["","f1","f2","f3","f4","f5","f6","f7","f8","f9","f10"]'

# tree --sites: bottom up from every allocation site through its callers.
analyze s.json tree --sites --min-percent 0 t.mtly
expect_jq "tree --sites: the sites" s.json '[.root.children[] | [fname, .calls, .bytes]] | sort' \
    '[["alpha",10,1000],["beta",6,1200],["delta",4,256],["grow",5,600],["keeper",7,364],["make_buffer",3,3000],["scratch",8,288]]'
expect_jq "tree --sites: make_buffer's callers" s.json \
    '[.root.children[] | select(fname == "make_buffer") | .children[] | [fname, .calls, .bytes]]' '[["gamma",3,3000]]'
expect_jq "tree --sites: delta's callers (itself, then main)" s.json \
    '[.root.children[] | select(fname == "delta") | .children[] | [fname, .calls, .bytes]] | sort' '[["delta",3,192],["main",1,64]]'

# tree --others: what --min-percent leaves out under a node is summed into
# one last child, so that the children add up to their parent.  Of 6708
# bytes, 5% is 335.4: delta (256) and scratch (288) go to "(others)".
analyze o.json tree --sites --others --min-percent 5 t.mtly
expect_jq "tree --others: the last child" o.json \
    '.root.children[-1] | [.function, .calls, .bytes, .merged]' '["(others)",12,544,2]'
expect_jq "tree --others: the children add up" o.json '[.root.bytes, ([.root.children[].bytes] | add)]' '[6708,6708]'
expect_jq "tree --others: no merged count on functions" o.json '[.root.children[:-1][] | has("merged")] | any' false
"$MEMTALLY_BIN" tree --sites --others --min-percent 5 t.mtly | grep -q '(others) 2 functions, each under the threshold' ||
    fail "tree --others: the text does not say what (others) holds"
echo "ok: tree --others in text"
