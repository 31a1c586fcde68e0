#!/bin/sh
# C++'s operators new and delete, every form, counted exactly whoever
# implements them: libstdc++'s (which allocate through malloc) and those of
# allocators that bring their own (jemalloc, tcmalloc), which never call
# malloc.  tests/programs/exact_newdelete.cc; truth from its code:
#   9 allocations, 8 frees, 73244 bytes, peak 72840, 4 live at end, 1 thread
# (72704 of it libstdc++'s emergency pool, freed at exit, 136 the exception
# object of a failing new, both allocated with malloc).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

prog="$TEST_PROGRAMS/exact_newdelete"
same_run 0 "$prog"
check trace.mtly 9 8 73244 72840 4 1

found=0
for lib in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
    [ -e "$lib" ] || continue
    found=$((found + 1))
    name=$(basename "$lib")
    LD_PRELOAD=$lib "$prog" >plain.out || fail "$name: the program fails alone"
    LD_PRELOAD=$lib "$MEMTALLY_BIN" record -q -o "$name.mtly" -- "$prog" >traced.out ||
        fail "$name: the program fails under memtally"
    cmp -s plain.out traced.out || fail "$name: stdout differs under memtally"
    # tcmalloc allocates for itself in its constructor (TCMallocGuard,
    # MallocExtension: 24 bytes), through its own operator new: counted, as
    # any allocation the process makes; the program's own are main's.
    "$MEMTALLY_BIN" report --total --json "$name.mtly" >r.json || fail "$name: report failed"
    expect_eq "$name: main's calls and bytes" "[7,404]" \
        "$(jq -c '[.total.rows[] | select(.function == "main")] | [.[0].calls, .[0].bytes]' r.json)"
    case $name in
    libjemalloc*) check "$name.mtly" 9 8 73244 72840 4 1 ;;
    esac
done
[ $found -gt 0 ] || skip "neither libjemalloc2 nor libtcmalloc-minimal4 is installed"
