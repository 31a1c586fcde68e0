#!/bin/sh
# memtally export: folded stacks and CSV, checked against the truth of
# tests/programs/exact_basic.c (7 allocations, 3351 bytes, peak 3050, 2050
# live at the end) and against memtally's own report; Debian 12 has no
# flamegraph.pl package, so the folded lines are checked by their sums and
# their shape (what flamegraph.pl, inferno and speedscope parse).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN

record basic.mtly "$TEST_PROGRAMS/exact_basic" >/dev/null || fail "recording failed"

# folded_sum VALUE: the sum of the folded lines' values.
folded_sum() {
    "$M" export basic.mtly --format folded --value "$1" >f.txt || fail "export --value $1 failed"
    grep -qv '^[^ ;][^;]*\(;[^;]\+\)* [0-9]\+$' f.txt &&
        fail "a folded line is not 'frame;...;frame VALUE': $(grep -v '^[^ ;][^;]*\(;[^;]\+\)* [0-9]\+$' f.txt | head -1)"
    awk '{ s += $NF } END { print s }' f.txt
}
expect_eq "folded bytes sum to the bytes allocated" 3351 "$(folded_sum bytes)"
expect_eq "folded calls sum to the allocations" 7 "$(folded_sum calls)"
expect_eq "folded peak sums to the peak" 3050 "$(folded_sum peak)"
expect_eq "folded leaked sums to what is live at the end" 2050 "$(folded_sum leaked)"
grep -q ';main' f.txt || fail "no path through main: $(cat f.txt)"

# The default value is bytes; -o writes a file, - standard output.
"$M" export basic.mtly --format folded -o out.folded || fail "export -o failed"
"$M" export basic.mtly --format folded --value bytes -o - >out2.folded || fail "export -o - failed"
cmp -s out.folded out2.folded || fail "-o FILE and -o - differ"

# csv: the rows of report, exactly.
"$M" export basic.mtly --format csv >r.csv || fail "export csv failed"
expect_eq "csv header" "function,file,line,module,calls,bytes,per_call,percent" "$(head -1 r.csv)"
expect_eq "csv bytes" 3351 "$(tail -n +2 r.csv | awk -F, '{ s += $6 } END { print s }')"
expect_eq "csv calls" 7 "$(tail -n +2 r.csv | awk -F, '{ s += $5 } END { print s }')"
want=$("$M" report --total --json basic.mtly | jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"')
got=$(tail -n +2 r.csv | awk -F, '{ print $1, $5, $6 }')
expect_eq "csv rows as report's" "$want" "$got"

# Filters apply: only what main allocated directly.
"$M" export basic.mtly --format folded --size 1000.. >big.txt || fail "export with a filter failed"
expect_eq "folded bytes of blocks of 1000 bytes and more" 3000 "$(awk '{ s += $NF } END { print s }' big.txt)"

# speedscope: the file format's fields (as its schema has them), a profile
# per thread that allocated, each sample a valid path of frame indices, the
# weights summing to the thread's bytes as report has them.
record threads.mtly "$TEST_PROGRAMS/exact_threads" >/dev/null || fail "recording threads failed"
for t in basic threads; do
    "$M" export $t.mtly --format speedscope >$t.json || fail "export speedscope of $t failed"
    expect_eq "$t: speedscope schema" "https://www.speedscope.app/file-format-schema.json" \
        "$(jq -r '."$schema"' $t.json)"
    expect_eq "$t: every profile sampled, in bytes, samples and weights alike" true \
        "$(jq '[.profiles[] | .type == "sampled" and .unit == "bytes" and
                (.samples | length) == (.weights | length)] | all' $t.json)"
    expect_eq "$t: every frame index valid, every frame named" true \
        "$(jq '(.shared.frames | length) as $n | [.profiles[].samples[][] | . >= 0 and . < $n] +
               [.shared.frames[] | (.name | type) == "string"] | all' $t.json)"
    expect_eq "$t: weights by thread as report's bytes" \
        "$("$M" report --json $t.mtly | jq -c '[.threads[].bytes]')" \
        "$(jq -c '[.profiles[] | .weights | add]' $t.json)"
    expect_eq "$t: endValue is the thread's bytes" \
        "$(jq -c '[.profiles[] | .weights | add]' $t.json)" "$(jq -c '[.profiles[].endValue]' $t.json)"
done
expect_eq "basic: all the bytes" 3351 "$(jq '[.profiles[].weights[]] | add' basic.json)"
expect_eq "threads: a profile per thread that allocated" \
    "$("$M" report --json threads.mtly | jq '.threads | length')" "$(jq '.profiles | length' threads.json)"

# massif: read by valgrind's own ms_print, which shows the peak (3,050
# bytes) with its function, and the heap over time.
"$M" export basic.mtly --format massif -o basic.massif || fail "export massif failed"
ms_print basic.massif >ms.txt 2>ms.err || fail "ms_print cannot read it: $(head -3 ms.err)"
grep -q "(peak)" ms.txt || fail "ms_print shows no peak snapshot: $(head -40 ms.txt)"
expect_eq "ms_print: the peak's tree" "100.00% (3,050B) (heap allocation functions) malloc/new/new[], --alloc-fns, etc." \
    "$(grep -m1 -A0 '(3,050B) (heap allocation' ms.txt)"
grep -q '^->100.00% (3,050B) main (.*exact_basic.c:[0-9]*)' ms.txt ||
    fail "ms_print: the peak's function is not main: $(grep -A2 '(3,050B)' ms.txt)"
"$M" export threads.mtly --format massif -o threads.massif || fail "export massif of threads failed"
ms_print threads.massif >/dev/null 2>ms.err || fail "ms_print cannot read the threads' file: $(head -3 ms.err)"

# Bad input: one line, a non-zero exit.
for bad in "--format pprof" "" "--format csv --value peak" "--format folded --value nope"; do
    # shellcheck disable=SC2086
    "$M" export basic.mtly $bad >/dev/null 2>err.txt
    rc=$?
    [ "$rc" -ne 0 ] || fail "export $bad: exit 0"
    expect_eq "lines on stderr of export $bad" 1 "$(grep -c . err.txt)"
done
"$M" export basic.mtly --format folded -o /nonexistent/dir/x.folded 2>err.txt &&
    fail "an unwritable output: exit 0"
grep -q "cannot write /nonexistent/dir/x.folded" err.txt || fail "no reason: $(cat err.txt)"
"$M" export missing.mtly --format csv 2>err.txt && fail "a missing trace: exit 0"

# A trace cut short: exported as far as it goes, and said so.  (A shell
# loop, for a trace of many blocks: they are written every 20 ms.)
record long.mtly sh -c 'i=0; while [ $i -lt 400 ]; do x=$(echo $i); i=$((i+1)); done' ||
    fail "recording the loop failed"
size=$(stat -c %s long.mtly)
head -c $((size * 2 / 3)) long.mtly >cut.mtly
"$M" export cut.mtly --format folded >cut.folded 2>err.txt || fail "a cut trace: export failed"
grep -q "truncated" err.txt || fail "a cut trace: not said: $(cat err.txt)"
[ -s cut.folded ] || fail "a cut trace: nothing exported"
echo "ok: export folded, speedscope, massif and csv"
