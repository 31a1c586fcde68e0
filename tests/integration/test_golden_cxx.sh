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
#   libstdc++'s emergency pool, before main, freed at exit      1 / 72704
#   (memtally calls __gnu_cxx::__freeres at exit, as valgrind does)
#
# Several of these truths are constants of one libstdc++, GCC 12's
# (libstdc++.so.6.0.30, Debian 12), not of memtally or of the program; each
# is marked "libstdc++ (GCC 12)" where the test writes it, and another
# version may change it: the pool's size (72704 here; tunable with
# GLIBCXX_TUNABLES since GCC 13), the vector's growth (doubling from 1
# element), the string's block (its length + 1), the names of the
# functions that allocate (_M_realloc_insert, _M_construct) and whether the
# pool's constructor has a symbol.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report
need_command histogram
need_command leaks

# libstdc++ (GCC 12): the emergency exception pool's size; the bytes of the
# vector's 6 blocks (1, 2, 4 ... 32 ints: it doubles from 1); the string's
# block (30 characters and the NUL).  main's 12 blocks: 5 widgets of 48
# bytes, and those.
POOL=72704
VECTOR=252
STRING=31
MAIN=$((5 * 48 + VECTOR + STRING))

src=$GOLDEN_SRC/golden_cxx.cc
record t.mtly "$TEST_PROGRAMS/golden_cxx" >/dev/null || fail "record failed"
rows='[.total.rows[] | [fname, .calls, .bytes]] | sort'
plumbing='def plumbing: fname | test("^(operator new|std::allocator|__gnu_cxx::new_allocator|std::__new_allocator)") or test("::(_M_allocate|_M_create)$") or test("^(malloc|calloc|realloc)$");'

analyze r.json report --total t.mtly
expect_jq "total" r.json '[.total.calls, .total.bytes]' "[13,$((MAIN + POOL))]"
expect_jq "make_widgets" r.json 'row("make_widgets") | [.calls, .bytes, .line]' "[5,240,$(line_of "$src" make_widgets)]"
expect_jq "no row is allocator plumbing" r.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0

# The pool: the only block allocated outside main.
analyze o.json report --total --not-inside main t.mtly
expect_jq "--not-inside main (the pool)" o.json '[.total.calls, .total.bytes, (.total.rows | length), .total.rows[0].calls, .total.rows[0].bytes]' \
    "[1,$POOL,1,1,$POOL]"
# libstdc++ (GCC 12, as Debian builds it) has no symbol over the pool's
# constructor (anonymous namespace, no .symtab), and its nearest named
# caller is ld.so's, another module: the site is the address in libstdc++
# (a static function is passed over only for a named caller of its own
# module, docs/ANALYSIS.md).
expect_true "the pool's site is libstdc++.so.6+0xOFFSET" o.json \
    '.total.rows[0].function | test("^libstdc[+][+][.]so[.]6[+]0x[0-9a-f]+$")'
analyze m.json report --total --inside main t.mtly
expect_jq "--inside main" m.json '[.total.calls, .total.bytes]' "[12,$MAIN]"

# fill_vector: 6 blocks, of 4 to 128 bytes (libstdc++ (GCC 12) grows a
# vector from 1 element by doubling).
analyze v.json report --total --inside fill_vector t.mtly
expect_jq "--inside fill_vector" v.json '[.total.calls, .total.bytes, (.total.rows | length)]' "[6,$VECTOR,1]"
# operator new and the allocator are hidden; the vector's growth function
# (push_back -> _M_realloc_insert -> _M_allocate -> allocator_traits::allocate
# -> __new_allocator::allocate -> operator new) is a container's growth, an
# allocation wrapper (docs/ANALYSIS.md, "Allocation wrappers"): it is passed
# over, and fill_vector, which called push_back, is the site.  Its name is
# libstdc++'s (GCC 12; GCC 14's push_back calls _M_realloc_append).
expect_jq "the vector's site" v.json '.total.rows[0] | fname' 'fill_vector'
expect_jq "the vector's growth is passed over" v.json \
    '[.total.skipped[] | select(.function | test("_M_realloc_insert")) | .bytes]' "[$VECTOR]"
expect_jq "the vector's site is not plumbing" v.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0
# libstdc++ (GCC 12): blocks of 1, 2, 4 ... 32 ints.
analyze g.json histogram --inside fill_vector t.mtly
expect_jq "vector block sizes" g.json '[.buckets[] | [.min, .max, .calls, .bytes]]' \
    '[[4,7,1,4],[8,15,1,8],[16,31,1,16],[32,63,1,32],[64,127,1,64],[128,255,1,128]]'
# The whole name of a function template instance starts with its return type
# ("void std::vector<...>::_M_realloc_insert<...>(...)"): hence the first *.
analyze w.json report --total --inside fill_vector --hide '*std::vector<*' t.mtly
expect_jq "--hide *std::vector<*: fill_vector" w.json "$rows" "[[\"fill_vector\",6,$VECTOR]]"
expect_jq "--hide *std::vector<*: fill_vector line" w.json 'row("fill_vector").line' "$(line_of "$src" fill_vector)"

# --keep-alloc-frames: every block made through operator new is its.
analyze k.json report --total --keep-alloc-frames --inside fill_vector t.mtly
expect_jq "--keep-alloc-frames fill_vector" k.json "$rows" "[[\"operator new\",6,$VECTOR]]"
analyze k.json report --total --keep-alloc-frames t.mtly
expect_jq "--keep-alloc-frames operator new" k.json 'row("operator new") | [.calls, .bytes]' "[12,$MAIN]"
expect_jq "--keep-alloc-frames: no row is make_widgets" k.json '[.total.rows[] | select(fname == "make_widgets")] | length' 0

# make_name: one block of 31 bytes (libstdc++ (GCC 12): 30 characters and
# the terminating NUL).
analyze n.json report --total --inside make_name t.mtly
expect_jq "--inside make_name" n.json '[.total.calls, .total.bytes, (.total.rows | length)]' "[1,$STRING,1]"
# std::string(30, 'n') -> _M_construct (in libstdc++, a wrapper: passed
# over) -> _M_create (hidden) -> operator new (hidden): make_name is the
# site (libstdc++'s names, GCC 12, the C++11 string ABI).
expect_jq "the string's site" n.json '.total.rows[0] | fname' 'make_name'
expect_jq "the string's construction is passed over" n.json \
    '[.total.skipped[] | .function | test("basic_string<.*_M_construct")] | any' 'true'
expect_jq "the string's site is not plumbing" n.json \
    "$plumbing [.total.rows[] | select(plumbing)] | length" 0
analyze n.json report --total --inside make_name --hide 'std::*' t.mtly
expect_jq "--hide std::*: make_name" n.json "$rows" "[[\"make_name\",1,$STRING]]"
expect_jq "--hide std::*: make_name line" n.json 'row("make_name").line' "$(line_of "$src" make_name)"

analyze i.json report --total --inclusive t.mtly
for spec in make_widgets:5:240 fill_vector:6:$VECTOR make_name:1:$STRING main:12:$MAIN; do
    IFS=: read -r f calls bytes <<EOF
$spec
EOF
    expect_jq "inclusive $f" i.json "row(\"$f\") | [.calls, .bytes]" "[$calls,$bytes]"
done

# One widget leaks; libstdc++'s pool was freed at exit.
analyze l.json leaks t.mtly
expect_jq "leaks" l.json '[.leaked_bytes, .leaked_blocks, ([.rows[] | [.blocks, .bytes]] | sort)]' \
    "[48,1,[[1,48]]]"
expect_jq "leaked widget" l.json '[.rows[] | select(.bytes == 48) | fname]' '["make_widgets"]'
