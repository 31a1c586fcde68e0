#!/bin/sh
# The time and size filters at their boundaries, against docs/ANALYSIS.md
# ("Filters"; ranges include both ends), on a trace written by hand
# (tests/tools/mktrace) with exact microsecond times.
#
# The blocks (times in us; "-" never freed; the trace ends at 1000): each
# has its own power of two as its size, so the bytes a filter lets through
# say exactly which blocks passed; b10 has size 0 and shows in the calls.
#
#   block  alloc  free  size  lifetime      what it probes
#   b0       100   200     1     100
#   b1       100   100     2       0        freed the microsecond it was made
#   b2       150     -     4     850        never freed: lifetime to the end
#   b3       200   300     8     100        made the microsecond b0 is freed
#   b4       199   201    16       2
#   b5       300   300    32       0        the same, at b3's free
#   b6       400     -    64     600
#   b7         0  1000   128    1000        from the start to the end
#   b8       999     -   256       1
#   b9       502   700   512     198        502us is 0.000502s, which is
#                                           501.99999999999994us in binary
#   b10      600   601     0       1
#
# Each filter is checked at T-1, T and T+1 around every time (or size, or
# lifetime) above, at both ends of its range, and in every narrow window
# [T+d1, T+d2], -1 <= d1 <= d2 <= 1, with `report --total --json` (calls and
# bytes) and `leaks --json` (what passes and was never freed), against a
# model written from the definitions of docs/ANALYSIS.md:
#   --allocated-between A,B  A <= alloc <= B
#   --live-at T              alloc <= T and not freed by T (free > T)
#   --live-between A,B       live at some time t in [A, B], "live" as for
#                            --live-at: alloc <= t < free, for some t
#   --freed-between A,B      freed, and A <= free <= B
#   --lifetime MIN..MAX      MIN <= (free, or the end) - alloc <= MAX
#   --size MIN..MAX          MIN <= size <= MAX
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

cat >blocks.txt <<'EOF'
0 100 200 1
1 100 100 2
2 150 - 4
3 200 300 8
4 199 201 16
5 300 300 32
6 400 - 64
7 0 1000 128
8 999 - 256
9 502 700 512
10 600 601 0
EOF
END=1000

# The trace: the blocks' allocations and frees in time order; at equal
# times the frees of older blocks, then the allocations, then the frees of
# blocks made that same microsecond.
{
    echo "header program=/bin/boundaries pid=7 mode=full"
    echo "stack s site main"
    echo "start 0 0 7 main"
    awk '{ printf "%d 1 alloc %s 0 0x%x %s s\n", $2, $2, 4096 + 256 * $1, $4
           if ($3 != "-") printf "%d %d free %s 0 0x%x\n", $3, ($3 == $2 ? 2 : 0), $3, 4096 + 256 * $1 }' \
        blocks.txt | sort -s -n -k1,1 -k2,2 | cut -d' ' -f3-
    echo "end $END"
} >trace.txt
mktrace t.mtly <trace.txt
expect_eq "the trace's allocations, frees, bytes, live at the end, duration" \
    "11 8 1023 324 1000" \
    "$("$MEMTALLY_BIN" info --json t.mtly | jq -r '[.allocations, .frees, .bytes_allocated, .live_bytes_at_end, .duration_us] | join(" ")')"

# The queries: KIND LO HI, one a line ("-" an open end of a size or
# lifetime range).  TIMES, LIFETIMES and SIZES are what the blocks hold.
TIMES="0 100 150 199 200 201 300 400 502 600 601 700 999 1000"
LIFETIMES="0 1 2 100 198 600 850 1000"
SIZES="0 1 2 4 8 16 32 64 128 256 512"
# around VALUES...: each value and its neighbours, without negatives.
around() {
    for v in "$@"; do echo $((v - 1)) "$v" $((v + 1)); done | tr ' ' '\n' |
        awk '$1 >= 0' | sort -n -u
}
# ranges KIND OPEN VALUES...: ranges from each neighbour to the far end and
# from the near end to each, and the narrow windows around each value.
# OPEN: the ends may be left out (size, lifetime) or not (times: 0 and a
# time after the end stand for them).
ranges() {
    kind=$1 open=$2; shift 2
    for v in $(around "$@"); do
        if [ "$open" = open ]; then echo "$kind $v -"; echo "$kind - $v"
        else echo "$kind $v 5000"; echo "$kind 0 $v"; fi
    done
    for v in "$@"; do
        for d1 in -1 0 1; do for d2 in -1 0 1; do
            [ "$d1" -le "$d2" ] && [ $((v + d1)) -ge 0 ] && echo "$kind $((v + d1)) $((v + d2))"
        done; done
    done
}
{
    for t in $(around $TIMES) 5000; do echo "live-at $t $t"; done
    ranges allocated-between closed $TIMES
    ranges live-between closed $TIMES
    ranges freed-between closed $TIMES
    ranges lifetime open $LIFETIMES
    ranges size open $SIZES
} >queries.txt
echo "$(wc -l <queries.txt) queries"

# What docs/ANALYSIS.md says each query lets through: calls, bytes, and of
# those the blocks never freed (what leaks shows): blocks, bytes.
awk -v end=$END '
    NR == FNR { a[$1] = $2; f[$1] = $3; s[$1] = $4; n = NR; next }
    {
        lo = $2; hi = $3; calls = bytes = lb = lbytes = 0
        for (i = 0; i < n; i++) {
            never = f[i] == "-"; fr = never ? 1e18 : f[i] + 0
            life = (never ? end : fr) - a[i]
            if ($1 == "allocated-between") p = lo <= a[i] && a[i] <= hi
            else if ($1 == "live-at") p = a[i] <= lo && fr > lo
            else if ($1 == "live-between") {
                t = a[i] > lo ? a[i] : lo   # the first moment of [lo, hi] it may be live
                p = t <= hi && t < fr
            }
            else if ($1 == "freed-between") p = !never && lo <= fr && fr <= hi
            else if ($1 == "lifetime") p = (lo == "-" || lo <= life) && (hi == "-" || life <= hi)
            else if ($1 == "size") p = (lo == "-" || lo <= s[i]) && (hi == "-" || s[i] <= hi)
            else { print "unknown query " $1 > "/dev/stderr"; exit 1 }
            if (p) { calls++; bytes += s[i]; if (never) { lb++; lbytes += s[i] } }
        }
        print calls, bytes, lb, lbytes
    }' blocks.txt queries.txt >expected.txt || fail "the model failed"

# The options of a query.
option() {
    case $1 in
        live-at) echo "--live-at ${2}us" ;;
        *-between) echo "--$1 ${2}us,${3}us" ;;
        lifetime) l=$2 h=$3; [ "$l" = - ] && l= || l=${l}us; [ "$h" = - ] && h= || h=${h}us
            echo "--lifetime $l..$h" ;;
        size) l=$2 h=$3; [ "$l" = - ] && l=; [ "$h" = - ] && h=; echo "--size $l..$h" ;;
    esac
}
: >report.json; : >leaks.json
while read -r kind lo hi; do
    opt=$(option "$kind" "$lo" "$hi")
    # shellcheck disable=SC2086 # the option and its value are two words
    "$MEMTALLY_BIN" report --total --json $opt t.mtly >>report.json ||
        fail "report --total --json $opt failed"
    # shellcheck disable=SC2086
    "$MEMTALLY_BIN" leaks --json $opt t.mtly >>leaks.json || fail "leaks --json $opt failed"
done <queries.txt
jq -r '"\(.total.calls) \(.total.bytes)"' report.json >report.txt || fail "report.json is not JSON"
jq -r '"\(.leaked_blocks) \(.leaked_bytes)"' leaks.json >leaks.txt || fail "leaks.json is not JSON"
paste -d' ' report.txt leaks.txt >got.txt
expect_eq "answers" "$(wc -l <queries.txt)" "$(wc -l <got.txt)"

# Each wrong answer, with the blocks the model lets through.
paste -d'|' queries.txt expected.txt got.txt | awk -F'|' '
    $2 != $3 {
        split($1, q, " "); split($2, e, " "); split($3, g, " ")
        which = ""
        for (i = 0; i < 10; i++) if (int(e[2] / 2 ^ i) % 2) which = which " b" i
        printf "FAIL: --%s %s..%s: expected calls %s bytes %s (%s), leaks %s blocks %s bytes;" \
            " got calls %s bytes %s, leaks %s blocks %s bytes\n", q[1], q[2], q[3],
            e[1], e[2], which, e[3], e[4], g[1], g[2], g[3], g[4]
        bad++
    }
    END { printf "%d of %d queries answered as docs/ANALYSIS.md says\n", NR - bad, NR; exit bad > 0 }' ||
    fail "filters disagree with docs/ANALYSIS.md (above)"

# A few by hand, as the words of docs/ANALYSIS.md read:
filtered() { # WHAT CALLS BYTES OPTIONS...
    what=$1 calls=$2 bytes=$3; shift 3
    expect_eq "$what" "$calls $bytes" \
        "$("$MEMTALLY_BIN" report --total --json "$@" t.mtly | jq -r '"\(.total.calls) \(.total.bytes)"')"
}
# At 200 b0 is freed (not live), b3 allocated (live); b4, b7, b2 live.
filtered "--live-at 200us: b2 b3 b4 b7" 4 156 --live-at 200us
filtered "--live-at 199us: b0 b2 b4 b7" 4 149 --live-at 199us
# A block freed the microsecond it was allocated is never live.
filtered "--live-at 100us: b0 b7, not b1" 2 129 --live-at 100us
filtered "--live-between 100us,100us: b0 b7, not b1" 2 129 --live-between 100us,100us
filtered "--live-between 99us,100us: b0 b7, not b1" 2 129 --live-between 99us,100us
filtered "--live-between 300us,300us: b2 b7, not b3 (freed at 300), not b5" 2 132 --live-between 300us,300us
# The ends of a range are in it.
filtered "--allocated-between 100us,100us: b0 b1" 2 3 --allocated-between 100us,100us
filtered "--freed-between 300us,300us: b3 b5" 2 40 --freed-between 300us,300us
filtered "--freed-between 1000us,1000us: b7" 1 128 --freed-between 1000us,1000us
filtered "--lifetime 850us..850us: b2, never freed, to the end" 1 4 --lifetime 850us..850us
filtered "--lifetime ..0us: b1 b5" 2 34 --lifetime ..0us
filtered "--size 0..0: b10" 1 0 --size 0..0
filtered "--size 16..16: b4" 1 16 --size 16..16
# The units of a time are exact at the microsecond.
filtered "--live-at 0.2ms is 200us" 4 156 --live-at 0.2ms
filtered "--live-at 0.0002 (seconds) is 200us" 4 156 --live-at 0.0002
filtered "--allocated-between 0.1ms,0.15ms" 3 7 --allocated-between 0.1ms,0.15ms
filtered "--allocated-between 0,0.000502 (rounded, not cut, to 502us)" 9 767 --allocated-between 0,0.000502
