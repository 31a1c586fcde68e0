#!/bin/sh
# memtally report on tests/programs/golden_funcs.c, against the truth table in
# its header comment (valgrind agrees on the totals: 43 allocs, 6,708 bytes):
#   site         calls  bytes  per_call
#   make_buffer      3   3000      1000
#   beta             6   1200       200
#   alpha           10   1000       100
#   grow             5    600       120
#   keeper           7    364        52
#   scratch          8    288        36
#   delta            4    256        64
# Every sort order, --top, --inclusive, --by file/module/thread, the
# per-thread table, and each row's file and line.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report

src=$GOLDEN_SRC/golden_funcs.c
record t.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "record failed"
pid=$(info_get t.mtly pid)

# The combined table: rows, totals, per_call, percent, file and line.
analyze r.json report --total t.mtly
expect_jq "total calls" r.json .total.calls 43
expect_jq "total bytes" r.json .total.bytes 6708
expect_jq "number of rows" r.json '.total.rows | length' 7
for spec in make_buffer:3:3000:1000 beta:6:1200:200 alpha:10:1000:100 \
            grow:5:600:120 keeper:7:364:52 scratch:8:288:36 delta:4:256:64; do
    IFS=: read -r f calls bytes per <<EOF
$spec
EOF
    expect_jq "$f calls, bytes, per_call" r.json \
        "row(\"$f\") | [.calls, .bytes, .per_call]" "[$calls,$bytes,$per]"
    expect_true "$f percent is bytes/6708" r.json "near(row(\"$f\").percent; $bytes * 100 / 6708)"
    expect_jq "$f line" r.json "row(\"$f\").line" "$(line_of "$src" "$f")"
    expect_true "$f file is golden_funcs.c" r.json "row(\"$f\").file | test(\"(^|/)golden_funcs[.]c\$\")"
done
expect_true "percents add up to 100" r.json 'near([.total.rows[].percent] | add; 100)'

# order NAME ARGS... EXPECTED: the functions of the rows of `report --total
# ARGS`, in order, joined with spaces.
order() {
    what=$1; want=$2; shift 2
    analyze o.json report --total "$@" t.mtly
    expect_jq "order $what" o.json '[.total.rows[] | fname] | join(" ")' "$want"
}
bytes_desc="make_buffer beta alpha grow keeper scratch delta"
bytes_asc="delta scratch keeper grow alpha beta make_buffer"
order "default (bytes)" "$bytes_desc"
order "--sort bytes" "$bytes_desc" --sort bytes
order "--sort bytes:desc" "$bytes_desc" --sort bytes:desc
order "--sort bytes:asc" "$bytes_asc" --sort bytes:asc
order "--sort percent" "$bytes_desc" --sort percent
order "--sort percent:asc" "$bytes_asc" --sort percent:asc
order "--sort calls" "alpha scratch keeper beta grow delta make_buffer" --sort calls
order "--sort calls:asc" "make_buffer delta grow beta keeper scratch alpha" --sort calls:asc
order "--sort per-call" "make_buffer beta grow alpha delta keeper scratch" --sort per-call
order "--sort per-call:asc" "scratch keeper delta alpha grow beta make_buffer" --sort per-call:asc
order "--sort function" "alpha beta delta grow keeper make_buffer scratch" --sort function
order "--sort function:asc" "alpha beta delta grow keeper make_buffer scratch" --sort function:asc
order "--sort function:desc" "scratch make_buffer keeper grow delta beta alpha" --sort function:desc
order "--top 3" "make_buffer beta alpha" --top 3
order "--sort calls --top 2" "alpha scratch" --sort calls --top 2
order "--top 1" "make_buffer" --top 1

# --inclusive: each block counts in every distinct function of its stack.
analyze i.json report --total --inclusive t.mtly
for spec in gamma:3:3000 make_buffer:3:3000 delta:4:256 alpha:10:1000 \
            scratch:8:288 main:43:6708; do
    IFS=: read -r f calls bytes <<EOF
$spec
EOF
    expect_jq "inclusive $f calls, bytes" i.json "row(\"$f\") | [.calls, .bytes]" "[$calls,$bytes]"
done
expect_true "inclusive main is 100%" i.json 'near(row("main").percent; 100)'
expect_true "inclusive gamma is 3000/6708" i.json 'near(row("gamma").percent; 300000 / 6708)'
expect_jq "no inclusive row for cleanup (it frees only)" i.json \
    '[.total.rows[] | select(fname == "cleanup")] | length' 0

# --by file, --by module, --by thread: one file, one module, one thread.
analyze f.json report --total --by file t.mtly
expect_jq "--by file rows" f.json '.total.rows | length' 1
expect_jq "--by file calls, bytes" f.json '.total.rows[0] | [.calls, .bytes]' "[43,6708]"
expect_true "--by file key is golden_funcs.c" f.json '.total.rows[0].file | test("(^|/)golden_funcs[.]c$")'
expect_jq "--by file function and line" f.json '.total.rows[0] | [.function, .line]' "[null,null]"
expect_true "--by file percent" f.json 'near(.total.rows[0].percent; 100)'

analyze m.json report --total --by module t.mtly
expect_jq "--by module rows" m.json '.total.rows | length' 1
expect_jq "--by module calls, bytes" m.json '.total.rows[0] | [.calls, .bytes]' "[43,6708]"
expect_true "--by module key is the program" m.json '.total.rows[0].module | test("(^|/)golden_funcs$")'
expect_jq "--by module function, file, line" m.json '.total.rows[0] | [.function, .file, .line]' "[null,null,null]"

analyze h.json report --by thread t.mtly
expect_jq "--by thread rows" h.json '.total.rows | length' 1
expect_jq "--by thread row" h.json '.total.rows[0] | [.tid, .name, .calls, .bytes]' \
    "[$pid,\"golden_funcs\",43,6708]"
expect_jq "--by thread: no per-thread tables" h.json '.threads | length' 0

# Without --total: one per-thread table, the main thread's, with everything.
analyze p.json report t.mtly
expect_jq "thread tables" p.json '.threads | length' 1
expect_jq "thread table" p.json '.threads[0] | [.tid, .name, .calls, .bytes, (.rows | length)]' \
    "[$pid,\"golden_funcs\",43,6708,7]"
expect_true "thread percent" p.json 'near(.threads[0].percent; 100)'
expect_jq "thread rows equal the total's" p.json \
    '[.threads[0].rows[] | [fname, .calls, .bytes]] == [.total.rows[] | [fname, .calls, .bytes]]' true

# The text table names each function with its calls and bytes.
"$MEMTALLY_BIN" report --total t.mtly >text.out 2>text.err || fail "report (text) failed"
for f in make_buffer beta alpha grow keeper scratch delta; do
    grep -q "$f" text.out || fail "text report has no row for $f"
done
echo "ok: text report"
