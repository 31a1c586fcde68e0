#!/bin/sh
# The numbers of the text tables (report, peak, leaks, temporary, histogram,
# tree), read column by column, against the truth of a trace written by
# hand (tests/tools/mktrace).  The JSON of the same commands is checked
# elsewhere; this is what a person reads.
#
# Stacks (innermost first): parse < read_file < main; lex < parse <
# read_file < main; emit < main; cache < main; work < worker_main.
# Thread 0 is "main" (tid 500), thread 1 "worker" (tid 501).  Times in ms:
#
#   ms   thread  event                     live after (bytes)
#   10   main    parse   100  P1
#   20   main    parse   100  P2
#   30   main    lex      24  L1, freed at 31: nothing allocated between
#   40   main    lex      24  L2, freed at 41: the same
#   50   main    emit   1000  E1
#   60   worker  work    256  W1
#   70   worker  work    256  W2
#   80   main    cache  4096  C1             5808
#   90   worker  free W1
#  100   main    lex      24  L3, freed at 102, after W3 (so not temporary)
#  101   worker  work    256  W3
#  110   main    free P1
#  120   main    parse   100  P3
#  130   main    free E1
#  140   main    emit   2000  E2
#  150   worker  work    256  W4             7064: the peak, 7 blocks
#  160-162 worker  free W2, W3, W4 (W4: freed after W2 and W3, so not
#                   temporary although nothing was allocated since it)
#  170   main    free P2
#  180   end: P3, C1 and E2 leak: 6196 bytes in 3 blocks
#
#   function  calls  bytes  per call  % of 8492   main's table: % of 7468
#   cache         1   4096      4096     48.23                   54.85
#   emit          2   3000      1500     35.33                   40.17
#   work          4   1024       256     12.06     (worker's: 100.00)
#   parse         3    300       100      3.53                    4.02
#   lex           3     72        24      0.85                    0.96
#   total        13   8492       653    100.00    main 9 / 7468 / 830
#
# At the peak: cache 1 / 4096 (57.98%), emit 1 / 2000 (28.31%), work
# 3 / 768 (10.87%), parse 2 / 200 (2.83%).  Leaked: cache 4096 (66.11%),
# emit 2000 (32.28%), parse 100 (1.61%).  Temporary (the free is the next
# event after the allocation, as heaptrack counts): lex 2 of 3: 2 of 13
# calls (15.38%); within 2 ms: lex's 3.  Sizes: [16,31] 3 / 72,
# [64,127] 3 / 300, [256,511] 4 / 1024, [512,1023] 1 / 1000, [1024,2047]
# 1 / 2000, [4096,8191] 1 / 4096 (% of 13 calls).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

mktrace t.mtly <<'EOF'
header program=/bin/textnums pid=500 mode=full
stack p parse read_file main
stack l lex parse read_file main
stack e emit main
stack c cache main
stack w work worker_main
start 0 0 500 main
start 0 1 501 worker
alloc 10000 0 0x10000 100 p
alloc 20000 0 0x20000 100 p
alloc 30000 0 0x30000 24 l
free 31000 0 0x30000
alloc 40000 0 0x40000 24 l
free 41000 0 0x40000
alloc 50000 0 0x50000 1000 e
alloc 60000 1 0x60000 256 w
alloc 70000 1 0x70000 256 w
alloc 80000 0 0x80000 4096 c
free 90000 1 0x60000
alloc 100000 0 0xa0000 24 l
alloc 101000 1 0xb0000 256 w
free 102000 0 0xa0000
free 110000 0 0x10000
alloc 120000 0 0xc0000 100 p
free 130000 0 0x50000
alloc 140000 0 0xd0000 2000 e
alloc 150000 1 0xe0000 256 w
free 160000 1 0x70000
free 161000 1 0xb0000
free 162000 1 0xe0000
free 170000 0 0x20000
end 180000
EOF

# table FILE N: the N-th table of FILE (a line of column names in capitals,
# then rows up to a blank line, a "==" banner or the end), one line per
# row: its cells in the order of the columns, joined by "|", after a first
# line of the column names.  A cell is found by its column's name: numbers
# are right-aligned under theirs (a size may end in B, KiB...), the name of
# a row (FUNCTION, SITE, SIZE...) is left-aligned; when the name comes
# last, as in the tree, its indentation is kept as "DEPTH:" (two spaces a
# level).  Widths and the order of the columns may change: the cells stay
# with their names.
table() {
    awk -v want="$2" '
    function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
    # The cell that ends at column e: a token, or a number and its unit.
    function cell_ending(line, e,    j, tok, k) {
        j = e
        while (j > 0 && substr(line, j, 1) != " ") j--
        tok = substr(line, j + 1, e - j)
        if (tok ~ /^(B|KiB|MiB|GiB|TiB)$/ && j > 1) {
            k = j - 1
            while (k > 0 && substr(line, k, 1) != " ") k--
            tok = substr(line, k + 1, e - k); j = k
        }
        cell_start = j + 1
        return tok
    }
    !on && /^[ A-Z%]+$/ && NF >= 2 {
        if (++t != want) next
        on = 1; n = 0; pos = 1; h = $0
        while (match(substr(h, pos), /[^ ]+( [^ ]+)*/)) {
            n++; start[n] = pos + RSTART - 1; end[n] = start[n] + RLENGTH - 1
            name[n] = substr(h, start[n], RLENGTH)
            label[n] = name[n] ~ /^(FUNCTION|SITE|SIZE|FILE|MODULE|THREAD)$/
            pos = end[n] + 1
        }
        for (i = 1; i <= n; i++) printf "%s%s", name[i], (i < n ? "|" : "\n")
        next
    }
    on && (/^ *$/ || /^==/) { exit }
    on {
        for (i = 1; i <= n; i++) if (!label[i]) { v[i] = cell_ending($0, end[i]); s[i] = cell_start }
        for (i = 1; i <= n; i++) {
            if (!label[i]) continue
            if (i == n) {   # last: to the end of the line, indentation kept
                rest = substr($0, start[i]); d = match(rest, /[^ ]/) - 1
                v[i] = int(d / 2) ":" trim(rest)
            } else {
                v[i] = trim(substr($0, start[i], s[i + 1] - start[i]))
            }
        }
        for (i = 1; i <= n; i++) printf "%s%s", v[i], (i < n ? "|" : "\n")
    }' "$1"
}

# expect_table WHAT GOT WANT: tables equal, or fail showing both.
expect_table() {
    [ "$2" = "$3" ] || { printf 'expected:\n%s\ngot:\n%s\n' "$3" "$2" >&2; fail "$1"; }
    echo "ok: $1"
}
# sorted: the lines of stdin but the first, sorted (rows in any order).
sorted() { sed 1d | LC_ALL=C sort; }

run() { # OUT ARGS...: memtally ARGS t.mtly into OUT
    out=$1; shift
    "$MEMTALLY_BIN" "$@" t.mtly >"$out" || fail "memtally $* failed"
}

# report: the thread tables, then all threads, in the order of --sort
# (bytes, descending).
run r.txt report
expect_eq "report: main's banner" \
    "== thread 500 (main), index 0: 87.94% of all bytes, 7468 bytes in 9 calls ==" "$(sed -n 1p r.txt)"
expect_eq "report: worker's banner" \
    "== thread 501 (worker), index 1: 12.06% of all bytes, 1024 bytes in 4 calls ==" "$(grep '^== thread 501' r.txt)"
expect_table "report: main's table" "$(table r.txt 1)" "FUNCTION|CALLS|BYTES|PER CALL|%
cache|1|4096|4096|54.85
emit|2|3000|1500|40.17
parse|3|300|100|4.02
lex|3|72|24|0.96
total|9|7468|830|100.00"
expect_table "report: worker's table" "$(table r.txt 2)" "FUNCTION|CALLS|BYTES|PER CALL|%
work|4|1024|256|100.00
total|4|1024|256|100.00"
all="FUNCTION|CALLS|BYTES|PER CALL|%
cache|1|4096|4096|48.23
emit|2|3000|1500|35.33
work|4|1024|256|12.06
parse|3|300|100|3.53
lex|3|72|24|0.85
total|13|8492|653|100.00"
expect_table "report: all threads" "$(table r.txt 3)" "$all"
run t.txt report --total
expect_table "report --total" "$(table t.txt 1)" "$all"
run t.txt report --total --top 2
expect_eq "report --total --top 2: the rows left out" "... 3 more" "$(grep '^\.\.\.' t.txt)"
grep -v '^\.\.\.' t.txt > t2.txt
expect_table "report --total --top 2 (the total is of all rows)" "$(table t2.txt 1)" "FUNCTION|CALLS|BYTES|PER CALL|%
cache|1|4096|4096|48.23
emit|2|3000|1500|35.33
total|13|8492|653|100.00"
run t.txt report --total --inclusive --sort function
expect_table "report --total --inclusive" "$(table t.txt 1)" "FUNCTION|CALLS|BYTES|PER CALL|%
cache|1|4096|4096|48.23
emit|2|3000|1500|35.33
lex|3|72|24|0.85
main|9|7468|830|87.94
parse|6|372|62|4.38
read_file|6|372|62|4.38
work|4|1024|256|12.06
worker_main|4|1024|256|12.06
total|13|8492|653|100.00"

# peak
run p.txt peak
expect_eq "peak: header" "peak: 6.9 KiB live in 7 blocks at 0.150 s" "$(sed -n 1p p.txt)"
expect_table "peak: rows" "$(table p.txt 1 | sorted)" "$(printf '%s\n' \
    "cache|1|4096|57.98" "emit|1|2000|28.31" "parse|2|200|2.83" "work|3|768|10.87" | LC_ALL=C sort)"
expect_eq "peak: columns" "SITE|BLOCKS|BYTES|%" "$(table p.txt 1 | sed -n 1p)"

# leaks
run l.txt leaks
expect_eq "leaks: header" "live at the end: 6.1 KiB in 3 blocks" "$(sed -n 1p l.txt)"
expect_eq "leaks: columns" "SITE|BLOCKS|BYTES|%" "$(table l.txt 1 | sed -n 1p)"
expect_table "leaks: rows" "$(table l.txt 1 | sorted)" "$(printf '%s\n' \
    "cache|1|4096|66.11" "emit|1|2000|32.28" "parse|1|100|1.61" | LC_ALL=C sort)"

# temporary
run m.txt temporary
expect_eq "temporary: header" "2 temporary allocations of 13 (15.38%)" "$(sed -n 1p m.txt)"
expect_eq "temporary: columns" "SITE|TEMPORARY|CALLS|BYTES|%" "$(table m.txt 1 | sed -n 1p)"
expect_table "temporary: rows" "$(table m.txt 1 | sorted)" "lex|2|3|72|100.00"
run m.txt temporary --within-us 2000
expect_eq "temporary --within-us 2000: header" "3 temporary allocations of 13 (23.08%)" "$(sed -n 1p m.txt)"
expect_table "temporary --within-us 2000: rows" "$(table m.txt 1 | sorted)" "lex|3|3|72|100.00"

# histogram
run h.txt histogram
expect_table "histogram" "$(table h.txt 1)" "SIZE|CALLS|BYTES|%
16..31|3|72|23.08
64..127|3|300|23.08
256..511|4|1024|30.77
512..1023|1|1000|7.69
1024..2047|1|2000|7.69
4096..8191|1|4096|7.69"

# tree: each node as its path from the root (sibling order left free).
tree_paths() {
    table "$1" 1 | awk -F'|' '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { split($col["FUNCTION"], f, ":"); d = f[1] + 0; path[d] = f[2]
          p = path[0]; for (i = 1; i <= d; i++) p = p "/" path[i]
          pct = $col["%"]; sub(/%$/, "", pct)
          print p "|" pct "|" $col["BYTES"] "|" $col["CALLS"] }' | LC_ALL=C sort
}
run e.txt tree --min-percent 0
expect_table "tree --min-percent 0" "$(tree_paths e.txt)" "$(printf '%s\n' \
    "(all)|100.00|8.3 KiB|13" \
    "(all)/main|87.94|7.3 KiB|9" \
    "(all)/main/cache|48.23|4.0 KiB|1" \
    "(all)/main/emit|35.33|2.9 KiB|2" \
    "(all)/main/read_file|4.38|372 B|6" \
    "(all)/main/read_file/parse|4.38|372 B|6" \
    "(all)/main/read_file/parse/lex|0.85|72 B|3" \
    "(all)/worker_main|12.06|1.0 KiB|4" \
    "(all)/worker_main/work|12.06|1.0 KiB|4" | LC_ALL=C sort)"
run e.txt tree
expect_table "tree (below 1% left out: lex)" "$(tree_paths e.txt)" "$(printf '%s\n' \
    "(all)|100.00|8.3 KiB|13" \
    "(all)/main|87.94|7.3 KiB|9" \
    "(all)/main/cache|48.23|4.0 KiB|1" \
    "(all)/main/emit|35.33|2.9 KiB|2" \
    "(all)/main/read_file|4.38|372 B|6" \
    "(all)/main/read_file/parse|4.38|372 B|6" \
    "(all)/worker_main|12.06|1.0 KiB|4" \
    "(all)/worker_main/work|12.06|1.0 KiB|4" | LC_ALL=C sort)"
run e.txt tree --callers lex
expect_table "tree --callers lex" "$(tree_paths e.txt)" "$(printf '%s\n' \
    "callers of lex|100.00|72 B|3" \
    "callers of lex/parse|100.00|72 B|3" \
    "callers of lex/parse/read_file|100.00|72 B|3" \
    "callers of lex/parse/read_file/main|100.00|72 B|3" | LC_ALL=C sort)"
run e.txt tree --callees main
expect_table "tree --callees main" "$(tree_paths e.txt)" "$(printf '%s\n' \
    "callees of main|100.00|7.3 KiB|9" \
    "callees of main/cache|54.85|4.0 KiB|1" \
    "callees of main/emit|40.17|2.9 KiB|2" \
    "callees of main/read_file|4.98|372 B|6" \
    "callees of main/read_file/parse|4.98|372 B|6" | LC_ALL=C sort)"
