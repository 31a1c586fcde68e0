#!/bin/sh
# A real program none of us wrote: the gcc driver compiling a small C file
# with -c.  The driver runs cc1 and as as child processes; neither valgrind
# nor memtally follows exec by default, so both see the driver alone.
# memtally's totals must equal valgrind memcheck's "total heap usage" line
# for the same run, exactly, and memtally must write one trace, the driver's.
# valgrind runs twice first, to prove the driver is deterministic here.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/valgrind-lib.inc"
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
[ -x /usr/bin/gcc ] || skip "gcc is not installed"

cat >small.c <<'C'
#include <stdlib.h>
struct node { struct node *next; int v; };
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int sum(int n)
{
    struct node *h = NULL;
    for (int i = 0; i < n; i++) {
        struct node *x = malloc(sizeof *x);
        x->v = i; x->next = h; h = x;
    }
    int s = 0;
    while (h) { struct node *x = h; s += x->v; h = x->next; free(x); }
    return s;
}
int smallest(int *a, int n) { qsort(a, n, sizeof *a, cmp); return a[0]; }
C

# A fixed environment with temporary files in this directory.  The driver
# calls setenv() 6 times (COLLECT_GCC...), each a realloc of glibc's copy of
# environ to (variables + 2) pointers: with valgrind's 5 added variables
# against memtally's 1, each was 32 bytes larger under valgrind (192 in
# all), hence the same names under both tools (below).
BASE_ENV="PATH=/usr/bin:/bin HOME=$TEST_TMP LC_ALL=C TMPDIR=$TEST_TMP"
match_environments "$BASE_ENV"   # sets VG and MT (valgrind-lib.inc)
# No small.o before each run: when the output file exists, the driver
# resolves its full path (to check that it is not also an input), which
# allocates more.
run_gcc() { # RUNNER...
    rm -f small.o
    "$@" /usr/bin/gcc -O2 -c small.c -o small.o
}

run_gcc $VG --log-file=vg1.log || fail "gcc under valgrind failed"
[ -s small.o ] || fail "gcc under valgrind wrote no small.o"
run_gcc $VG --log-file=vg2.log || fail "gcc under valgrind failed"
truth=$(vg_totals vg1.log)
[ -n "$truth" ] || fail "no heap summary in valgrind's log: $(cat vg1.log)"
[ "$(grep -c 'total heap usage' vg1.log)" = 1 ] || fail "valgrind traced more than the driver"
[ "$truth" = "$(vg_totals vg2.log)" ] ||
    fail "gcc is not deterministic under valgrind: $truth vs $(vg_totals vg2.log)"

run_gcc $MT -o 'gcc.%p.mtly' -- || fail "memtally record failed"
[ -s small.o ] || fail "gcc under memtally wrote no small.o"
set -- gcc.*.mtly
[ $# = 1 ] || fail "expected one trace (the driver's), got: $*"
trace=$1
prog=$("$MEMTALLY_BIN" info --json "$trace" | jq -r .program)
case "${prog##*/}" in *gcc*) ;; *) fail "the trace is not the driver's but $prog's" ;; esac

set -- $truth
"$MEMTALLY_BIN" info --json "$trace" >info.json || fail "memtally info failed"
expect_eq "gcc allocations (valgrind: $1)" "$1" "$(jq -r .allocations info.json)"
expect_eq "gcc frees (valgrind: $2)" "$2" "$(jq -r .frees info.json)"
expect_eq "gcc bytes_allocated (valgrind: $3)" "$3" "$(jq -r .bytes_allocated info.json)"
expect_eq "gcc truncated" false "$(jq -r .truncated info.json)"
