#!/bin/sh
# The trace reader under ASan and UBSan on 500 deterministic mutations of
# real traces (tests/fuzz/replay.c, with the fuzzer's checks from
# tests/fuzz/fuzz_common.h): damage to the files themselves, and damage to
# their decompressed records packed back into valid blocks, which reaches
# the record decoder.  Any sanitizer report or failed check fails the test;
# the input that caused it is left in current.mtly and printed as hex.
# The reproducers saved in tests/fuzz/crashes/ are replayed too.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
command -v gcc >/dev/null 2>&1 || skip "gcc is not installed"
R=$MEMTALLY_ROOT

# The reader library's sources (as the Makefile builds them into
# libmemtally-trace.a), compiled here with the sanitizers: the archive itself
# is not instrumented, and ASan would not see its reads out of bounds.
srcs=$(ls "$R"/src/trace/*.c "$R"/src/common/*.c 2>/dev/null)
gcc -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -D_GNU_SOURCE \
    -I"$R/include" -I"$R/src" -o replay "$R/tests/fuzz/replay.c" $srcs -lzstd -lm ||
    fail "cannot build tests/fuzz/replay.c"
export ASAN_OPTIONS=detect_leaks=1:max_allocation_size_mb=1024:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Seeds: small traces with threads, modules loaded and unloaded, reallocs.
gcc -shared -fPIC -x c -o exact_plugin.so "$R/tests/programs/exact_plugin.c.in" ||
    fail "cannot build the plugin"
record basic.mtly "$TEST_PROGRAMS/exact_basic" >/dev/null || fail "recording exact_basic failed"
record threads.mtly "$TEST_PROGRAMS/exact_threads" >/dev/null 2>&1 || fail "recording exact_threads failed"
record dlopen.mtly "$TEST_PROGRAMS/exact_dlopen" ./exact_plugin.so >/dev/null ||
    fail "recording exact_dlopen failed"
record realloc.mtly "$TEST_PROGRAMS/exact_realloc" >/dev/null || fail "recording exact_realloc failed"

if ! ./replay -m 500 -o current.mtly basic.mtly threads.mtly dlopen.mtly realloc.mtly >summary 2>err; then
    cat err >&2
    od -An -tx1 current.mtly | head -40 >&2
    fail "the reader failed on a mutated trace (left in current.mtly)"
fi
cat summary
# The mutations must reach every outcome, or they test little.
set -- $(sed 's/[^0-9 ]//g' summary)
[ "$#" = 4 ] && [ "$1" = 500 ] || fail "unexpected summary: $(cat summary)"
[ "$2" -ge 50 ] || fail "only $2 mutations rejected"
[ "$3" -ge 25 ] || fail "only $3 mutations read as truncated"
[ "$4" -ge 10 ] || fail "only $4 mutations read to a complete end"

for f in "$R"/tests/fuzz/crashes/*; do
    [ -e "$f" ] || continue
    ./replay "$f" >out 2>err || { cat err >&2; fail "tests/fuzz/crashes/${f##*/} fails again"; }
    echo "ok: tests/fuzz/crashes/${f##*/}: $(sed 's/.*: //' out)"
done
