#!/bin/sh
# record --calls: true call counts from -finstrument-functions, and bytes
# given to the innermost counted function (hprof's rule), against the
# truth at the top of tests/api/calls_known.c; --pattern and --exclude;
# a program built without the option is recorded as usual and told so.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
R=$MEMTALLY_ROOT
cc -O0 -g -finstrument-functions -pthread -o calls_known "$R/tests/api/calls_known.c" ||
    fail "cannot build calls_known"
cc -O0 -g -pthread -o plain "$R/tests/api/calls_known.c" || fail "cannot build plain"

"$M" record -q -o all.mtly --calls ./calls_known >out.txt || fail "record --calls failed"
expect_eq "its output" "calls ok" "$(cat out.txt)"
rows() { # TRACE [JQ PATH]: "function calls allocations bytes" of a table, sorted
    "$M" report --json "$1" | jq -r "${2:-.total}.rows[] | select(.function != \"main\") |
        \"\(.function) \(.calls) \(.allocations) \(.bytes)\"" | sort
}
expect_eq "all threads: true calls, allocations and bytes per function" \
    "$(printf '%s\n' 'emit 5 0 0' 'format_line 5 5 1000' 'leaf_noalloc 1000 0 0' \
        'parse 12 12 768' 'tokenize 36 36 576' 'worker 1 0 0')" "$(rows all.mtly)"
expect_eq "the second thread's table" \
    "$(printf '%s\n' 'parse 2 2 128' 'tokenize 6 6 96' 'worker 1 0 0')" \
    "$(rows all.mtly '.threads[] | select(.index == 1)')"
expect_eq "main: one call, its 100 bytes and libc's" "1 true" \
    "$("$M" report --json all.mtly | jq -r '.total.rows[] | select(.function == "main") |
        "\(.calls) \(.bytes >= 100)"')"
expect_eq "the JSON says the calls are counted" true "$("$M" report --json all.mtly | jq .calls_counted)"
"$M" report all.mtly | grep -q "^CALLS are true calls" || fail "the text does not say what CALLS are"

# Patterns: only parse and main count; the rest's bytes go to them.
"$M" record -q -o pat.mtly --calls --pattern parse --pattern 'ma?n' ./calls_known >/dev/null ||
    fail "record --calls --pattern failed"
expect_eq "--pattern: parse has tokenize's bytes too" "parse 12 48 1344" "$(rows pat.mtly)"
total=$("$M" report --json all.mtly | jq .total.bytes)
expect_eq "--pattern: main has the rest" "1 $((total - 1344))" \
    "$("$M" report --json pat.mtly | jq -r '.total.rows[] | select(.function == "main") |
        "\(.calls) \(.bytes)"')"
"$M" record -q -o exc.mtly --calls --exclude 'leaf_*' --exclude tokenize ./calls_known >/dev/null ||
    fail "record --calls --exclude failed"
expect_eq "--exclude: the others count" \
    "$(printf '%s\n' 'emit 5 0 0' 'format_line 5 5 1000' 'parse 12 48 1344' 'worker 1 0 0')" \
    "$(rows exc.mtly)"

# Without -finstrument-functions: said, and recorded as usual.
"$M" record -o plain.mtly --calls ./plain >/dev/null 2>err.txt || fail "recording plain failed"
grep -q "record: --calls: no call was counted: ./plain has no function built with -finstrument-functions" err.txt ||
    fail "no word about the missing -finstrument-functions: $(cat err.txt)"
expect_eq "plain: the usual table" "parse 12 768" \
    "$("$M" report --total --json plain.mtly | jq -r '.total.rows[] | select(.function == "parse") |
        "\(.function) \(.calls) \(.bytes)"')"
"$M" record -q -o none.mtly --pattern parse ./calls_known 2>err.txt && fail "--pattern without --calls was taken"
expect_eq "--pattern alone" "memtally: record: --pattern and --exclude choose the functions --calls counts: add --calls" \
    "$(cat err.txt)"

# Instrumented, recorded without --calls: the hooks cost nothing, the
# trace is as usual.
"$M" record -q -o nocalls.mtly ./calls_known >/dev/null || fail "recording without --calls failed"
expect_eq "without --calls: no count" null "$("$M" report --json nocalls.mtly | jq .calls_counted)"
