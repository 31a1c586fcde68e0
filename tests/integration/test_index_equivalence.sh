#!/bin/sh
# The index (docs/FORMAT.md, "The index") answers every query exactly as
# reading the trace does: each analysis command, with each filter, on
# traces of real programs and on traces written by hand with what a
# program cannot make (lost frees, frees of unknown blocks), gives the same
# JSON with the index (built, then loaded from the cache) and with
# --no-index.  index_churn fills 23 chunks of the index, with frees made
# long after their chunk was written.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"

record churn.mtly "$TEST_PROGRAMS/index_churn" || fail "recording index_churn failed"
record funcs.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "recording golden_funcs failed"
record phases.mtly "$TEST_PROGRAMS/golden_phases" >/dev/null || fail "recording golden_phases failed"
record threads.mtly "$TEST_PROGRAMS/golden_threads" >/dev/null || fail "recording golden_threads failed"
mktrace odd.mtly <<'T' || fail "mktrace failed"
header program=/bin/odd pid=7 mode=full
stack a alpha main
stack b beta main
start 0 0 70 main
start 5 1 71 helper
free 8 0 0x9999
alloc 10 0 0x100 16 a
alloc 20 1 0x200 32 b
alloc 30 0 0x100 48 a
free 40 1 0x100
free 41 1 0x100
alloc 50 1 0x300 64 b
rss 55 4096
free 60 0 0x200
alloc 70 0 0x400 128 a
free 71 0 0x400
end 100
T

filters() {
    cat <<'F'

--live-at 0.2
--live-between 0.1,0.3
--freed-between 0.05,0.5
--never-freed
--lifetime 0..2ms
--lifetime 1ms..
--size 16..100
--allocated-between 0.01,0.2
--thread t1
--inside main
--not-inside short_lived
--never-freed --size 1K..
--live-at 0.2 --inside long_lived
F
}

n=0
compare() { # NAME ARGS...: the output with the index and without it agree
    what=$1; shift
    "$MEMTALLY_BIN" "$@" --json >with.json 2>with.err
    rc=$?
    "$MEMTALLY_BIN" "$@" --json --no-index >without.json 2>without.err
    [ $? = $rc ] || fail "$what: memtally $* exits $rc with the index, not without"
    if [ $rc != 0 ]; then
        # The one failure expected: --thread t1 of a trace with one thread.
        grep -q "no such thread" with.err || { cat with.err >&2; fail "$what: memtally $* failed"; }
        cmp -s with.err without.err || fail "$what: memtally $* fails otherwise without the index"
    fi
    cmp -s with.json without.json ||
        fail "$what: memtally $* differs with the index: $(diff with.json without.json | head -c 600)"
    n=$((n + 1))
}

# index_churn's trace is large: what it alone covers (late frees, many
# chunks), with a few filters.
for f in '' '--never-freed' '--live-at 0.1' '--lifetime 1ms..' '--size 1K.. --thread t1'; do
    # shellcheck disable=SC2086
    {
        compare "churn report $f" report --total $f churn.mtly
        compare "churn report --by type $f" report --by type $f churn.mtly
        compare "churn peak $f" peak $f churn.mtly
        compare "churn leaks $f" leaks $f churn.mtly
        compare "churn timeline $f" timeline --points 9 $f churn.mtly
        compare "churn temporary $f" temporary $f churn.mtly
    }
done
compare "churn info" info churn.mtly

for t in funcs.mtly phases.mtly threads.mtly odd.mtly; do
    # The first query builds the index; later ones load it.
    compare "$t info" info "$t"
    filters | while IFS= read -r f; do
        # $f holds several words on purpose.
        # shellcheck disable=SC2086
        {
            compare "$t report $f" report $f "$t"
            compare "$t peak $f" peak $f "$t"
            compare "$t leaks $f" leaks $f "$t"
            compare "$t temporary $f" temporary $f "$t"
            compare "$t histogram $f" histogram $f "$t"
            compare "$t timeline $f" timeline --points 17 $f "$t"
            compare "$t tree $f" tree --min-percent 0 $f "$t"
            compare "$t stacks $f" stacks --target 'main' --depth 3 $f "$t"
        }
    done || exit 1
    for o in --total --inclusive '--by thread' '--by file' '--total --by thread' \
             '--sort calls:asc' '--stacks 2 --top 5' '--inclusive --live-at 0.2'; do
        # shellcheck disable=SC2086
        compare "$t report $o" report $o "$t"
    done
    compare "$t leaks --stacks" leaks --stacks 3 "$t"
    compare "$t temporary --within-us" temporary --within-us 50 "$t"
    compare "$t tree --callers" tree --callers 'alpha' --min-percent 0 "$t"
    compare "$t tree --callees" tree --callees 'main' --min-percent 0 "$t"
done
compare "diff" diff funcs.mtly phases.mtly
[ -n "$(ls "$MEMTALLY_INDEX_DIR"/*.mtlx 2>/dev/null)" ] || fail "no index was kept in $MEMTALLY_INDEX_DIR"
echo "ok: every query agrees with and without the index"
