#!/bin/sh
# Runs every test, each in its own process with a time limit, and ends with
# the line "N passed, N failed" (and ", N skipped").  Exit status 1 when any
# test failed.
#   tests/run.sh [PATTERN]   only the tests whose name contains PATTERN
# A test is a unit test binary (build/tests/unit/*) or an integration script
# (tests/integration/test_*.sh); it passes with exit 0, is skipped with
# exit 77.
cd "$(dirname "$0")/.." || exit 1
# Run by hand after an edit, the test binaries may be older than the
# sources (make builds the program, not the tests): say so, or the old
# code is what gets tested.
if ! make -q tests >/dev/null 2>&1; then
    echo "tests/run.sh: warning: build/ is older than the sources; 'make tests' rebuilds it ('make check' builds and runs)" >&2
fi
export MEMTALLY_ROOT="$PWD"
export MEMTALLY_BIN="$PWD/build/memtally"
export TEST_PROGRAMS="$PWD/build/tests/programs"
export TEST_TOOLS="$PWD/build/tests/tools"
limit=${TEST_TIMEOUT:-300}
pattern=${1:-}
pass=0; fail=0; skip=0; failed=""
logdir=build/test-logs; mkdir -p "$logdir"

run_one() { # name command...
    name=$1; shift
    case "$name" in *"$pattern"*) ;; *) return ;; esac
    log="$logdir/$(echo "$name" | tr '/' '_').log"
    work=$(mktemp -d /tmp/memtally-test.XXXXXX)
    start=$(date +%s)
    # Each test keeps the indexes of its traces in its own directory.
    (cd "$work" && TEST_TMP="$work" MEMTALLY_INDEX_DIR="$work/.index" \
        timeout -k 5 "$limit" "$@") >"$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    rm -rf "$work"
    if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "PASS $name (${secs}s)"
    elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "SKIP $name: $(tail -n 1 "$log")"
    else
        fail=$((fail+1)); failed="$failed $name"
        [ $rc -eq 124 ] && echo "timed out after ${limit}s" >>"$log"
        echo "FAIL $name (exit $rc, ${secs}s); last lines of $log:"
        tail -n 15 "$log" | sed 's/^/    /'
    fi
}

for t in build/tests/unit/*; do
    [ -x "$t" ] && run_one "unit/$(basename "$t")" "$PWD/$t"
done
for t in tests/integration/test_*.sh; do
    [ -f "$t" ] && run_one "integration/$(basename "$t" .sh)" sh "$PWD/$t"
done

[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
