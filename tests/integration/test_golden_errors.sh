#!/bin/sh
# The analysis commands' errors (docs/ANALYSIS.md): bad arguments exit 2, an
# unreadable trace exits 1; either way one line on stderr starting
# "memtally: " and nothing on stdout.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report

record t.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "record failed"

for cmd in report peak leaks temporary timeline histogram tree; do
    expect_error "$cmd --no-such-option" 2 $cmd --no-such-option t.mtly
    expect_error "$cmd --size 5..1" 2 $cmd --size 5..1 t.mtly
    expect_error "$cmd --live-at abc" 2 $cmd --live-at abc t.mtly
    expect_error "$cmd --thread x" 2 $cmd --thread x t.mtly
    expect_error "$cmd missing trace" 1 $cmd --json missing.mtly
    expect_error "$cmd no trace" 2 $cmd --json
done
expect_error "stacks --no-such-option" 2 stacks --target alpha --no-such-option t.mtly
expect_error "stacks --size 5..1" 2 stacks --target alpha --size 5..1 t.mtly
expect_error "stacks missing trace" 1 stacks --target alpha missing.mtly
expect_error "diff --no-such-option" 2 diff --no-such-option t.mtly t.mtly
expect_error "diff --live-at abc" 2 diff --live-at abc t.mtly t.mtly
expect_error "--size abc" 2 report --size abc t.mtly
expect_error "--size 1X" 2 report --size 1X t.mtly
expect_error "--allocated-between 1" 2 report --allocated-between 1 t.mtly
expect_error "--allocated-between 2s,1s" 2 report --allocated-between 2s,1s t.mtly
expect_error "--lifetime 1x.." 2 report --lifetime 1x.. t.mtly
expect_error "--thread t" 2 report --thread t t.mtly
expect_error "--thread -1" 2 report --thread -1 t.mtly
expect_error "--thread of no thread of the trace" 1 report --thread t9 t.mtly
expect_error "--thread of no tid of the trace" 1 peak --thread 1 t.mtly
expect_error "info takes no filters" 2 info --size 1..2 t.mtly
expect_error "index takes no filters" 2 index --live-at 1 t.mtly
expect_error "--sort nothing" 2 report --sort nothing t.mtly
expect_error "--sort bytes:up" 2 report --sort bytes:up t.mtly
expect_error "--top x" 2 report --top x t.mtly
expect_error "--by nothing" 2 report --by nothing t.mtly
expect_error "stacks without --target" 2 stacks t.mtly
expect_error "stacks --depth 0" 2 stacks --target alpha --depth 0 t.mtly
expect_error "stacks --min-count x" 2 stacks --target alpha --min-count x t.mtly
expect_error "tree --callers and --callees" 2 tree --callers alpha --callees alpha t.mtly
expect_error "tree --sites and --callers" 2 tree --sites --callers alpha t.mtly
expect_error "timeline --points 0" 2 timeline --points 0 t.mtly
expect_error "timeline --points x" 2 timeline --points x t.mtly
expect_error "temporary --within-us x" 2 temporary --within-us x t.mtly
expect_error "leaks --suppressions missing" nonzero leaks --suppressions missing.supp t.mtly
expect_error "diff with one trace" 2 diff t.mtly
expect_error "diff with a missing trace" 1 diff t.mtly missing.mtly
expect_error "record --max-peak x" 2 record --max-peak x -- "$TEST_PROGRAMS/golden_funcs"

printf 'this is not a trace\n' >junk.mtly
expect_error "report on a file that is not a trace" 1 report junk.mtly
