# Shared by the integration tests: sourced, never run.  Each test runs in its
# own empty directory ($TEST_TMP) with $MEMTALLY_BIN (the CLI) and $TEST_PROGRAMS
# (the built tests/programs) set by tests/run.sh.
set -u
: "${MEMTALLY_BIN:?run through tests/run.sh}"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "skipped: $*"; exit 77; }

# record TRACE PROGRAM ARGS...: records PROGRAM into TRACE, quietly.
record() {
    out=$1; shift
    "$MEMTALLY_BIN" record -q -o "$out" -- "$@"
}

# info_get TRACE KEY: one key of `memtally info --json TRACE`.
info_get() {
    "$MEMTALLY_BIN" info --json "$1" | jq -r ".$2"
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
    [ "$2" = "$3" ] || fail "$1: expected $2, got $3"
    echo "ok: $1 = $3"
}
