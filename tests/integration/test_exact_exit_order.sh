#!/bin/sh
# Frees made at exit after memtally's own destructor are recorded: a library
# preloaded after memtally's (the user's own LD_PRELOAD) allocates 333 bytes
# in its constructor and frees them in its destructor, which runs after
# ours.  With tests/programs/exact_basic (7 allocations, 5 frees, 3351
# bytes, peak 3050, 2050 live at end) the truth is:
#   8 allocations, 6 frees, 3684 bytes, peak 3383, 2050 live at end, 1 thread.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

cat >late.c <<'EOF_C'
#include <stdlib.h>
static void *block;
__attribute__((constructor)) static void make(void) { block = malloc(333); }
__attribute__((destructor)) static void drop(void) { free(block); }
EOF_C
${CC:-cc} -shared -fPIC -O0 -o liblate.so late.c || fail "cannot build the test library"

LD_PRELOAD="$PWD/liblate.so" "$TEST_PROGRAMS/exact_basic" >plain.out || fail "exact_basic fails alone"
LD_PRELOAD="$PWD/liblate.so" record trace.mtly "$TEST_PROGRAMS/exact_basic" >traced.out ||
    fail "exact_basic fails under memtally"
cmp -s plain.out traced.out || fail "stdout differs under memtally"
check trace.mtly 8 6 3684 3383 2050 1
