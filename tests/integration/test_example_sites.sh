#!/bin/sh
# examples/sites.c, the example analysis on the public reader and
# symbolizer, on tests/programs/golden_inline.c (see its truth there): its
# three sites with their bytes, calls, functions, files and lines, and the
# callers inl_alloc is inlined into.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
sites=$MEMTALLY_ROOT/build/examples/sites
[ -x "$sites" ] || fail "build/examples/sites is not built"
src=$GOLDEN_SRC/golden_inline.c

record t.mtly "$TEST_PROGRAMS/golden_inline" >/dev/null || fail "record failed"
"$sites" t.mtly >out.txt 2>err.txt || { cat err.txt >&2; fail "sites failed"; }
cat out.txt
[ -s err.txt ] && fail "sites warned: $(cat err.txt)"
f='[^ ]*golden_inline[.]c'
expect_eq "sites output" "ok" "$(awk -v f="$f" -v plain="$(line_of "$src" plain_alloc)" \
    -v inl="$(line_of "$src" inl_alloc)" -v a="$(line_of "$src" call_a)" \
    -v b="$(line_of "$src" call_b)" '
    BEGIN { want[1] = "1[.] 1024 bytes in 2 calls"; want[2] = "at plain_alloc [(]" f ":" plain "[)]"
            want[3] = "2[.] 768 bytes in 3 calls";  want[4] = "at inl_alloc [(]" f ":" inl "[)]"
            want[5] = "inlined into caller_b [(]" f ":" b "[)]"
            want[6] = "3[.] 512 bytes in 4 calls";  want[7] = "at inl_alloc [(]" f ":" inl "[)]"
            want[8] = "inlined into caller_a [(]" f ":" a "[)]" }
    { sub(/^ +/, "") }
    $0 !~ "^" want[NR] "$" { print "line " NR ": " $0 " (want " want[NR] ")"; bad = 1 }
    END { if (!bad && NR == 8) print "ok"; else if (!bad) print NR " lines" }' out.txt)"

# -n, and a usage error.
expect_eq "sites -n 1" 2 "$("$sites" -n 1 t.mtly | wc -l)"
"$sites" >/dev/null 2>&1
expect_eq "sites without a trace: status" 2 $?

# Built by a user against an installed copy, with pkg-config: the same
# output.
make -s -C "$MEMTALLY_ROOT" install PREFIX="$PWD/prefix" >/dev/null || fail "make install failed"
[ -f prefix/include/memtally/symbols.h ] || fail "memtally/symbols.h is not installed"
export PKG_CONFIG_PATH=$PWD/prefix/lib/pkgconfig
cc -O2 -o sites "$MEMTALLY_ROOT/examples/sites.c" \
    $(pkg-config --cflags --static --libs memtally-trace) ||
    fail "cannot build examples/sites.c with pkg-config --static --libs memtally-trace"
./sites t.mtly >installed.txt 2>&1 || fail "the installed build failed"
cmp out.txt installed.txt || fail "the installed build prints something else"
echo "ok: built with pkg-config, the same output"
