#!/bin/sh
# C++ allocations on tests/programs/golden_cxx.cc: operator new and the
# allocator plumbing (docs/ANALYSIS.md, "hidden") are not sites: new Widget
# goes to make_widgets, the vector's growth to its _M_realloc_insert, the
# string to libstdc++'s _M_construct; --hide moves them out to the program's
# functions, --keep-alloc-frames shows operator new.  Truth from the code
# (valgrind agrees: 13 allocs, 73,227 bytes):
#   make_widgets  5 x new Widget (48 bytes), 1 leaks           5 /   240
#   fill_vector   std::vector<int> grows 1,2,4,8,16,32 ints     6 /   252
#                 (blocks of 4, 8, 16, 32, 64, 128 bytes)
#   make_name     std::string of 30 characters                  1 /    31
#   libstdc++'s emergency pool, before main, never freed        1 / 72704
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report

src=$GOLDEN_SRC/golden_cxx.cc
record t.mtly "$TEST_PROGRAMS/golden_cxx" >/dev/null || fail "record failed"
rows='[.total.rows[] | [fname, .calls, .bytes]] | sort'
plumbing='def plumbing: fname | test("^(operator new|std::allocator|__gnu_cxx::new_allocator|std::__new_allocator)") or test("::(_M_allocate|_M_create)$") or test("^(malloc|calloc|realloc)$");'

analyze r.json report --total t.mtly
expect_jq "total" r.json '[.total.calls, .total.bytes]' '[13,73227]'
expect_jq "make_widgets" r.json 'row("make_widgets") | [.calls, .bytes, .line]' "[5,240,$(line_of "$src" make_widgets)]"
expect_jq "no row is allocator plumbing" r.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0

# The pool: the only block allocated outside main.
analyze o.json report --total --not-inside main t.mtly
expect_jq "--not-inside main (the pool)" o.json '[.total.calls, .total.bytes, (.total.rows | length), .total.rows[0].calls, .total.rows[0].bytes]' \
    '[1,72704,1,1,72704]'
# libstdc++ has no symbol over the pool's constructor (anonymous namespace,
# no .symtab): that frame is passed over, its block goes to the nearest
# named caller (ld.so's code that runs constructors), and the output says
# which frame was passed over.
expect_true "the pool's site is a named function" o.json \
    '.total.rows[0].function | test("[+]0x|^0x") | not'
expect_true "the pool's unnamed frame is listed as passed over" o.json \
    '[.total.skipped[] | select(.function | test("^libstdc[+][+][.]so[.]6[+]0x[0-9a-f]+$")) | .bytes] == [72704]'
analyze k.json report --total --not-inside main --keep-alloc-frames t.mtly
expect_true "with --keep-alloc-frames, the pool's site is libstdc++.so.6+0xOFFSET" k.json \
    '.total.rows[0].function | test("^libstdc[+][+][.]so[.]6[+]0x[0-9a-f]+$")'
analyze m.json report --total --inside main t.mtly
expect_jq "--inside main" m.json '[.total.calls, .total.bytes]' '[12,523]'

# fill_vector: 6 blocks, of 4 to 128 bytes.
analyze v.json report --total --inside fill_vector t.mtly
expect_jq "--inside fill_vector" v.json '[.total.calls, .total.bytes, (.total.rows | length)]' '[6,252,1]'
# operator new and the allocator are hidden; the vector's growth function
# (push_back -> _M_realloc_insert -> _M_allocate -> allocator_traits::allocate
# -> __new_allocator::allocate -> operator new) is not plumbing: it is the site.
expect_jq "the vector's site" v.json '.total.rows[0] | fname' \
    'std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>'
expect_jq "the vector's site is not plumbing" v.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0
if "$MEMTALLY_BIN" --help | grep -q '^  histogram '; then
    analyze g.json histogram --inside fill_vector t.mtly
    expect_jq "vector block sizes" g.json '[.buckets[] | [.min, .max, .calls, .bytes]]' \
        '[[4,7,1,4],[8,15,1,8],[16,31,1,16],[32,63,1,32],[64,127,1,64],[128,255,1,128]]'
fi
# The whole name of a function template instance starts with its return type
# ("void std::vector<...>::_M_realloc_insert<...>(...)"): hence the first *.
analyze w.json report --total --inside fill_vector --hide '*std::vector<*' t.mtly
expect_jq "--hide *std::vector<*: fill_vector" w.json "$rows" '[["fill_vector",6,252]]'
expect_jq "--hide *std::vector<*: fill_vector line" w.json 'row("fill_vector").line' "$(line_of "$src" fill_vector)"

# --keep-alloc-frames: every block made through operator new is its.
analyze k.json report --total --keep-alloc-frames --inside fill_vector t.mtly
expect_jq "--keep-alloc-frames fill_vector" k.json "$rows" '[["operator new",6,252]]'
analyze k.json report --total --keep-alloc-frames t.mtly
expect_jq "--keep-alloc-frames operator new" k.json 'row("operator new") | [.calls, .bytes]' '[12,523]'
expect_jq "--keep-alloc-frames: no row is make_widgets" k.json '[.total.rows[] | select(fname == "make_widgets")] | length' 0

# make_name: one block of 31 bytes.
analyze n.json report --total --inside make_name t.mtly
expect_jq "--inside make_name" n.json '[.total.calls, .total.bytes, (.total.rows | length)]' '[1,31,1]'
# std::string(30, 'n') -> _M_construct (in libstdc++) -> _M_create (hidden)
# -> operator new (hidden): _M_construct is the site.
expect_jq "the string's site" n.json '.total.rows[0] | fname' \
    'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct'
expect_jq "the string's site is not plumbing" n.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0
analyze n.json report --total --inside make_name --hide 'std::*' t.mtly
expect_jq "--hide std::*: make_name" n.json "$rows" '[["make_name",1,31]]'
expect_jq "--hide std::*: make_name line" n.json 'row("make_name").line' "$(line_of "$src" make_name)"

analyze i.json report --total --inclusive t.mtly
for spec in make_widgets:5:240 fill_vector:6:252 make_name:1:31 main:12:523; do
    IFS=: read -r f calls bytes <<EOF
$spec
EOF
    expect_jq "inclusive $f" i.json "row(\"$f\") | [.calls, .bytes]" "[$calls,$bytes]"
done

if "$MEMTALLY_BIN" --help | grep -q '^  leaks '; then
    analyze l.json leaks t.mtly
    expect_jq "leaks" l.json '[.leaked_bytes, .leaked_blocks, ([.rows[] | [.blocks, .bytes]] | sort)]' \
        '[72752,2,[[1,48],[1,72704]]]'
    expect_jq "leaked widget" l.json '[.rows[] | select(.bytes == 48) | fname]' '["make_widgets"]'
fi
