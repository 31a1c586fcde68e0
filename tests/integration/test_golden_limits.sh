#!/bin/sh
# memtally record --max-peak / --max-leak on tests/programs/golden_funcs.c,
# whose peak is 6020 live bytes and which leaks 1300 bytes (truth from the
# code; valgrind agrees).  `golden_funcs 10 S` exits with status S.  A limit
# is passed when the value exceeds it: then exit 86, one line on stderr, the
# trace kept; otherwise memtally exits as the program did.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

prog=$TEST_PROGRAMS/golden_funcs

# limit WHAT STATUS LINES OPTIONS...: record with OPTIONS exits with STATUS and
# prints LINES lines on stderr; the program's stdout passes through and the
# trace is written either way.
limit() {
    what=$1; want=$2; lines=$3; shift 3
    rm -f l.mtly
    "$MEMTALLY_BIN" record -q -o l.mtly "$@" -- "$prog" 10 7 >l.out 2>l.err
    rc=$?
    cat l.err >&2
    expect_eq "$what: exit status" "$want" "$rc"
    expect_eq "$what: lines on stderr" "$lines" "$(wc -l <l.err | tr -d ' ')"
    expect_eq "$what: program output" "funcs ok" "$(cat l.out)"
    [ -s l.mtly ] || fail "$what: no trace"
    expect_eq "$what: trace peak" 6020 "$(info_get l.mtly peak_live_bytes)"
}

limit "--max-peak 6020 (equal)" 7 0 --max-peak 6020
limit "--max-peak 6019" 86 1 --max-peak 6019
limit "--max-peak 5K" 86 1 --max-peak 5K
limit "--max-peak 6K" 7 0 --max-peak 6K
limit "--max-leak 1300 (equal)" 7 0 --max-leak 1300
limit "--max-leak 1299" 86 1 --max-leak 1299
limit "--max-leak 1K" 86 1 --max-leak 1K
limit "--max-leak 2K" 7 0 --max-leak 2K
limit "both within" 7 0 --max-peak 6020 --max-leak 1300
limit "peak passed, leak within" 86 1 --max-peak 6000 --max-leak 2K
limit "leak passed, peak within" 86 1 --max-peak 1M --max-leak 1000
grep -q "memtally: " l.err || fail "the limit line does not start with 'memtally: '"

# With status 0 the program's own status is 0.
"$MEMTALLY_BIN" record -q -o z.mtly --max-peak 1M --max-leak 1M -- "$prog" >/dev/null
expect_eq "within both limits, status 0" 0 $?
"$MEMTALLY_BIN" record -q -o z.mtly --max-peak 1K -- "$prog" >/dev/null 2>&1
expect_eq "--max-peak 1K, status 0 program" 86 $?
