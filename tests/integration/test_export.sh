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

# pprof: read by go tool pprof, which shows each function of golden_funcs
# (truth at the top of tests/programs/golden_funcs.c) with its exact
# figure for each of the four sample types, in use at the end, at the peak
# and at a time.
record funcs.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "recording golden_funcs failed"
# pprof_flat FILE TYPE: "function flat" for every function with a flat
# figure of its own, sorted.
pprof_flat() {
    go tool pprof -top -unit=B -sample_index="$2" "$1" >top.txt 2>top.err ||
        fail "go tool pprof cannot read $1: $(head -3 top.err)"
    awk 'f && $1 != "0" { sub(/B$/, "", $1); print $6, $1 } /flat%/ { f = 1 }' top.txt | sort
}
"$M" export funcs.mtly --format pprof -o funcs.pb.gz || fail "export pprof failed"
expect_eq "pprof is gzip'd" "1f8b" "$(head -c 2 funcs.pb.gz | od -An -tx1 | tr -d ' \n')"
expect_eq "pprof alloc_objects" "$(printf '%s\n' 'alpha 10' 'beta 6' 'delta 4' 'grow 5' \
    'keeper 7' 'make_buffer 3' 'scratch 8')" "$(pprof_flat funcs.pb.gz alloc_objects)"
expect_eq "pprof alloc_space" "$(printf '%s\n' 'alpha 1000' 'beta 1200' 'delta 256' 'grow 600' \
    'keeper 364' 'make_buffer 3000' 'scratch 288')" "$(pprof_flat funcs.pb.gz alloc_space)"
expect_eq "pprof inuse_objects (at the end)" "$(printf '%s\n' 'alpha 1' 'grow 1' 'make_buffer 1')" \
    "$(pprof_flat funcs.pb.gz inuse_objects)"
expect_eq "pprof inuse_space (at the end)" "$(printf '%s\n' 'alpha 100' 'grow 200' 'make_buffer 1000')" \
    "$(pprof_flat funcs.pb.gz inuse_space)"
pprof_flat funcs.pb.gz alloc_space >/dev/null
grep -q ' 3000B .*gamma$' top.txt || fail "pprof: gamma's cumulative bytes are not 3000: $(cat top.txt)"
"$M" export funcs.mtly --format pprof --at-peak -o peak.pb.gz || fail "export pprof --at-peak failed"
expect_eq "pprof inuse_space at the peak" "$(printf '%s\n' 'alpha 1000' 'beta 1200' 'delta 256' \
    'grow 200' 'keeper 364' 'make_buffer 3000')" "$(pprof_flat peak.pb.gz inuse_space)"
expect_eq "pprof alloc_space does not depend on --at-peak" "$(pprof_flat funcs.pb.gz alloc_space)" \
    "$(pprof_flat peak.pb.gz alloc_space)"
"$M" export funcs.mtly --format pprof --at 0 -o zero.pb.gz || fail "export pprof --at 0 failed"
expect_eq "pprof: nothing in use at time 0" "" "$(pprof_flat zero.pb.gz inuse_space)"
# The profile's frame: the binary's mapping with its build id, symbolized.
go tool pprof -raw funcs.pb.gz >raw.txt 2>&1 || fail "go tool pprof -raw failed"
bid=$(readelf -n "$TEST_PROGRAMS/golden_funcs" | awk '/Build ID/ { print $3 }')
grep -q "golden_funcs $bid \[FN\]\[FL\]\[LN\]\[IN\]" raw.txt ||
    fail "pprof: no mapping of golden_funcs with its build id: $(grep -A5 Mappings raw.txt)"
grep -q "^PeriodType: space bytes" raw.txt || fail "pprof: period type is not space/bytes"
# Inlined frames: inl_alloc is a line of its caller's location.
record inline.mtly "$TEST_PROGRAMS/golden_inline" >/dev/null || fail "recording golden_inline failed"
"$M" export inline.mtly --format pprof -o inline.pb.gz || fail "export pprof of golden_inline failed"
expect_eq "pprof: inlined and plain sites" "$(printf '%s\n' 'inl_alloc 1280' 'plain_alloc 1024')" \
    "$(pprof_flat inline.pb.gz alloc_space)"
grep -q "inl_alloc (inline)$" top.txt || fail "pprof: inl_alloc is not shown inlined: $(cat top.txt)"
grep -q " 512B .*caller_a$" top.txt || fail "pprof: caller_a's cumulative bytes are not 512: $(cat top.txt)"
# A sampled trace: its unbiased estimates (1/p blocks and n/p bytes a
# sample) as values, its rate as the period.
{
    echo "header program=/bin/sampled pid=3 mode=sampled rate=1000"
    echo "stack s site main"
    echo "start 0 0 3 main"
    echo "alloc 1 0 4096 100 s"
    echo "alloc 2 0 8192 4096 s"
    echo "end 100"
} | mktrace sampled.mtly
"$M" export sampled.mtly --format pprof -o sampled.pb.gz || fail "export pprof of a sampled trace failed"
go tool pprof -raw sampled.pb.gz >raw.txt 2>&1 || fail "go tool pprof -raw of a sampled trace failed"
grep -q "^Period: 1000$" raw.txt || fail "pprof: the period is not the sampling rate: $(head -5 raw.txt)"
want=$(awk 'BEGIN { n = 0; b = 0; split("100 4096", s, " ");
    for (i = 1; i <= 2; i++) { p = 1 - exp(-s[i] / 1000); n += 1 / p; b += s[i] / p }
    printf "site %.0f", b }')
expect_eq "pprof: a sampled trace's bytes, unbiased" "$want" "$(pprof_flat sampled.pb.gz alloc_space)"
[ -t 1 ] || "$M" export funcs.mtly --format pprof | cmp -s - funcs.pb.gz ||
    fail "pprof to standard output differs from -o"

# sqlite: the sqlite3 command line answers report's per-function totals
# exactly, and what was never freed, on golden_funcs and on a shell loop
# (a program none of us wrote, with unnamed frames).
record loop.mtly sh -c 'i=0; while [ $i -lt 50 ]; do x=$(echo $i); i=$((i+1)); done' ||
    fail "recording the shell loop failed"
for t in funcs loop; do
    rm -f $t.db
    "$M" export $t.mtly --format sqlite -o $t.db || fail "export sqlite of $t failed"
    want=$("$M" report --total --json $t.mtly |
        jq -r '.total.rows[] | "\(.function)|\(.calls)|\(.bytes)"' | sort)
    got=$(sqlite3 $t.db "SELECT s.site, SUM(a.count), SUM(a.size) FROM allocations a
                         JOIN stacks s ON s.id = a.stack GROUP BY s.site" |
        awk -F'|' '{ printf "%s|%.0f|%.0f\n", $1, $2, $3 }' | sort)
    expect_eq "$t: sqlite's per-function totals are report's" "$want" "$got"
    expect_eq "$t: the report view says the same" "$got" \
        "$(sqlite3 $t.db "SELECT * FROM report" | awk -F'|' '{ printf "%s|%.0f|%.0f\n", $1, $2, $3 }' | sort)"
    expect_eq "$t: never freed, as info has it" \
        "$("$M" info --json $t.mtly | jq -r '"\(.live_blocks_at_end)|\(.live_bytes_at_end)"')" \
        "$(sqlite3 $t.db "SELECT COUNT(*), SUM(size) FROM allocations WHERE free_us IS NULL")"
    expect_eq "$t: every allocation's stack and thread is in their tables" 0 \
        "$(sqlite3 $t.db "SELECT COUNT(*) FROM allocations a LEFT JOIN stacks s ON s.id = a.stack
                          LEFT JOIN threads t ON t.id = a.thread WHERE s.id IS NULL OR t.id IS NULL")"
done
expect_eq "funcs: gamma's blocks through its frames" "3|3000" \
    "$(sqlite3 funcs.db "WITH RECURSIVE up(stack, frame) AS (
          SELECT id, frame FROM stacks UNION ALL
          SELECT up.stack, f.parent FROM up JOIN frames f ON f.id = up.frame WHERE f.parent IS NOT NULL)
        SELECT COUNT(*), SUM(a.size) FROM allocations a WHERE a.stack IN (
          SELECT up.stack FROM up JOIN frame_functions ff ON ff.frame = up.frame WHERE ff.function = 'gamma')")"
expect_eq "funcs: the timeline ends with what is live at the end" 1300 \
    "$(sqlite3 funcs.db "SELECT CAST(live_bytes AS INTEGER) FROM timeline ORDER BY time_us DESC LIMIT 1")"
expect_eq "funcs: the trace's facts" "full|$TEST_PROGRAMS/golden_funcs" \
    "$(sqlite3 funcs.db "SELECT (SELECT value FROM trace WHERE key = 'mode') || '|' ||
                                (SELECT value FROM trace WHERE key = 'program')")"
"$M" export funcs.mtly --format sqlite -o /nonexistent/dir/x.db 2>err.txt && fail "sqlite to an unwritable path: exit 0"
expect_eq "sqlite to an unwritable path: one line" 1 "$(grep -c . err.txt)"
grep -q "cannot write /nonexistent/dir/x.db" err.txt || fail "sqlite: no reason: $(cat err.txt)"

# Bad input: one line, a non-zero exit.
for bad in "--format nope" "--format sqlite" "--format pprof --at-peak --at 1s" "--format folded --at-peak" "" "--format csv --value peak" "--format folded --value nope"; do
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

# A trace cut short: exported as far as it goes, and said so.  (Enough
# allocations for a trace of many blocks, written at 2 MiB each at most: 3
# million events, 6 blocks of them or more, so that the first two thirds
# of the file hold a whole block of allocations whatever the timing.)
record long.mtly "$TEST_PROGRAMS/index_churn" || fail "recording index_churn failed"
size=$(stat -c %s long.mtly)
head -c $((size * 2 / 3)) long.mtly >cut.mtly
"$M" export cut.mtly --format folded >cut.folded 2>err.txt || fail "a cut trace: export failed"
grep -q "truncated" err.txt || fail "a cut trace: not said: $(cat err.txt)"
[ -s cut.folded ] || fail "a cut trace: nothing exported"
echo "ok: export folded, speedscope, massif, pprof, sqlite and csv"
