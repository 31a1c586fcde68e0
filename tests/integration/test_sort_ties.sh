#!/bin/sh
# The row order of memtally report for every --sort key, both ways, when
# rows tie (docs/ANALYSIS.md: descending unless :asc, function ascending
# unless :desc; ties broken by name, ascending, either way).  A trace made
# by hand (tests/tools/mktrace) where six functions tie in every way:
#
#   function  calls  bytes  per call
#   alpha         2    200       100
#   beta          2    200       100      all three as alpha
#   delta         4    400       100      calls as gamma and zeta
#   eps           1     50        50
#   gamma         4    200        50      bytes as alpha and beta
#   zeta          4    200        50      all three as gamma
#
# The stacks are defined and the blocks allocated in no order of name, by
# two threads, so that no order of the input can pass for the sort.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

mktrace t.mtly <<'EOF'
header program=/bin/ties pid=100 mode=full
stack z zeta main
stack b beta main
stack e eps main
stack d delta main
stack g gamma main
stack a alpha main
start 0 0 100 main
start 0 1 101 worker
alloc 1 1 0x1000 50 z
alloc 2 0 0x1100 100 b
alloc 3 0 0x1200 50 e
alloc 4 1 0x1300 100 d
alloc 5 0 0x1400 50 g
alloc 6 1 0x1500 100 a
alloc 7 0 0x1600 50 z
alloc 8 1 0x1700 100 d
alloc 9 0 0x1800 50 g
alloc 10 1 0x1900 100 b
alloc 11 0 0x1a00 50 z
alloc 12 0 0x1b00 100 d
alloc 13 1 0x1c00 50 g
alloc 14 0 0x1d00 100 a
alloc 15 1 0x1e00 50 z
alloc 16 0 0x1f00 100 d
alloc 17 1 0x2000 50 g
end 20
EOF

# order WHAT EXPECTED ARGS...: the functions of `report --total ARGS`, in
# order, in JSON and in the text table.
order() {
    what=$1 want=$2; shift 2
    json=$("$MEMTALLY_BIN" report --total --json "$@" t.mtly) || fail "report --total --json $* failed"
    expect_eq "$what (json)" "$want" "$(printf '%s\n' "$json" | jq -r '[.total.rows[].function] | join(" ")')"
    "$MEMTALLY_BIN" report --total "$@" t.mtly >text.out || fail "report --total $* failed"
    # The rows: the lines between the header and the total row, but the
    # "..." that stands for the rows --top left out.
    expect_eq "$what (text)" "$want" \
        "$(awk '$1 == "FUNCTION" { on = 1; next } $1 == "total" { on = 0 } on && $1 != "..." { printf "%s%s", sep, $1; sep = " " }' text.out)"
}

expect_eq "the trace's calls and bytes" "17 1250" \
    "$("$MEMTALLY_BIN" info --json t.mtly | jq -r '"\(.allocations) \(.bytes_allocated)"')"

# Bytes (and percent, their share): 400; then 200 four ways; then 50.
by_bytes="delta alpha beta gamma zeta eps"
by_bytes_asc="eps alpha beta gamma zeta delta"
order "default (bytes, descending)" "$by_bytes"
order "--sort bytes" "$by_bytes" --sort bytes
order "--sort bytes:desc" "$by_bytes" --sort bytes:desc
order "--sort bytes:asc" "$by_bytes_asc" --sort bytes:asc
order "--sort percent" "$by_bytes" --sort percent
order "--sort percent:desc" "$by_bytes" --sort percent:desc
order "--sort percent:asc" "$by_bytes_asc" --sort percent:asc
# Calls: 4 three ways, 2 two ways, 1.
order "--sort calls" "delta gamma zeta alpha beta eps" --sort calls
order "--sort calls:desc" "delta gamma zeta alpha beta eps" --sort calls:desc
order "--sort calls:asc" "eps alpha beta delta gamma zeta" --sort calls:asc
# Per call: 100 three ways, 50 three ways.
order "--sort per-call" "alpha beta delta eps gamma zeta" --sort per-call
order "--sort per-call:desc" "alpha beta delta eps gamma zeta" --sort per-call:desc
order "--sort per-call:asc" "eps gamma zeta alpha beta delta" --sort per-call:asc
# Function: names never tie.
order "--sort function" "alpha beta delta eps gamma zeta" --sort function
order "--sort function:asc" "alpha beta delta eps gamma zeta" --sort function:asc
order "--sort function:desc" "zeta gamma eps delta beta alpha" --sort function:desc
# --top cuts after the ties are broken.
order "--top 3" "delta alpha beta" --top 3
order "--sort calls --top 2" "delta gamma" --sort calls --top 2
order "--sort per-call:asc --top 4" "eps gamma zeta alpha" --sort per-call:asc --top 4

# The tables of each thread are sorted the same way.  Thread 0 (main):
# beta 1/100, eps 1/50, gamma 2/100, zeta 2/100, alpha 1/100, delta 2/200;
# thread 1 (worker): zeta 2/100, delta 2/200, alpha 1/100, beta 1/100,
# gamma 2/100.
"$MEMTALLY_BIN" report --json t.mtly >threads.json || fail "report --json failed"
expect_eq "main's table" "delta alpha beta gamma zeta eps" \
    "$(jq -r '.threads[] | select(.tid == 100) | [.rows[].function] | join(" ")' threads.json)"
expect_eq "worker's table" "delta alpha beta gamma zeta" \
    "$(jq -r '.threads[] | select(.tid == 101) | [.rows[].function] | join(" ")' threads.json)"
"$MEMTALLY_BIN" report --json --sort calls:asc t.mtly >threads.json || fail "report --json failed"
expect_eq "main's table by calls, ascending" "alpha beta eps delta gamma zeta" \
    "$(jq -r '.threads[] | select(.tid == 100) | [.rows[].function] | join(" ")' threads.json)"
