#!/bin/sh
# Per-thread tables of memtally report, --by thread and --thread, on
# tests/programs/golden_threads.c: three named threads allocate known amounts
# from their own functions (truth from the code; valgrind agrees on the
# totals: 68 allocs, 16500 + 3D bytes):
#   main      main_work     5 calls  2500 bytes  (+ 3 DTVs of D bytes: glibc's)
#   worker-1  fill_small   10 calls  1000 bytes
#   worker-2  fill_medium  20 calls  4000 bytes
#   worker-3  fill_large   30 calls  9000 bytes
# The program prints D and every thread's kernel id on stderr.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report

record t.mtly "$TEST_PROGRAMS/golden_threads" >/dev/null 2>prog.err || fail "record failed"
d=$(sed -n 's/^dtv_bytes //p' prog.err)
main_tid=$(sed -n 's/^main //p' prog.err)
case "$d$main_tid" in ''|*[!0-9]*) fail "golden_threads printed no dtv_bytes or main line" ;; esac
# glibc (2.36): pthread_create callocs each new thread's DTV in the thread
# that creates it, main: 3 calls of D bytes (the size the program measured)
# in main's table.  A constant of glibc, not of memtally: another version
# may allocate the DTV elsewhere, or in more calls.
DTVS=3
total=$((16500 + DTVS * d))

analyze r.json report t.mtly
expect_jq "total calls, bytes" r.json '.total | [.calls, .bytes]' "[$((65 + DTVS)),$total]"
expect_row "total" r.json .total.rows fill_small 10 1000
expect_row "total" r.json .total.rows fill_medium 20 4000
expect_row "total" r.json .total.rows fill_large 30 9000
expect_row "total" r.json .total.rows main_work 5 2500
expect_jq "thread tables" r.json '.threads | length' 4
expect_true "thread percents add up to 100" r.json 'near([.threads[].percent] | add; 100)'

# check_thread NAME TID FUNCTION CALLS BYTES: the table of thread TID.
check_thread() {
    sel=".threads[] | select(.tid == $2)"
    expect_jq "thread $1: tables with its tid" r.json "[$sel] | length" 1
    expect_jq "thread $1: name" r.json "$sel | .name" "$1"
    expect_jq "thread $1: rows" r.json "[$sel | .rows[] | [fname, .calls, .bytes]]" "[[\"$3\",$4,$5]]"
    expect_jq "thread $1: calls, bytes" r.json "$sel | [.calls, .bytes]" "[$4,$5]"
    expect_true "thread $1: percent $5/$total" r.json "near($sel | .percent; $5 * 100 / $total)"
    expect_true "thread $1: row percent 100" r.json "near($sel | .rows[0].percent; 100)"
}
check_thread worker-1 "$(sed -n 's/^worker-1 //p' prog.err)" fill_small 10 1000
check_thread worker-2 "$(sed -n 's/^worker-2 //p' prog.err)" fill_medium 20 4000
check_thread worker-3 "$(sed -n 's/^worker-3 //p' prog.err)" fill_large 30 9000

# main: main_work and glibc's 3 DTVs (under whatever name glibc's site has).
sel=".threads[] | select(.tid == $main_tid)"
expect_jq "thread main: name" r.json "$sel | .name" golden_threads
expect_jq "thread main: calls, bytes" r.json "$sel | [.calls, .bytes]" "[$((5 + DTVS)),$((2500 + DTVS * d))]"
expect_jq "thread main: main_work" r.json "[$sel | .rows[] | select(fname == \"main_work\") | [.calls, .bytes]]" "[[5,2500]]"
expect_jq "thread main: the rest (DTVs)" r.json \
    "[$sel | .rows[] | select(fname != \"main_work\")] | [(map(.calls) | add), (map(.bytes) | add)]" \
    "[$DTVS,$((DTVS * d))]"
expect_true "thread main: percent" r.json "near($sel | .percent; $((2500 + DTVS * d)) * 100 / $total)"

# --by thread: one row per thread, no per-thread tables.
analyze b.json report --by thread t.mtly
expect_jq "--by thread rows" b.json '.total.rows | length' 4
expect_jq "--by thread: no tables" b.json '.threads | length' 0
for spec in "worker-1:10:1000" "worker-2:20:4000" "worker-3:30:9000" "golden_threads:$((5 + DTVS)):$((2500 + DTVS * d))"; do
    IFS=: read -r name calls bytes <<EOF
$spec
EOF
    case $name in golden_threads) tid=$main_tid ;; *) tid=$(sed -n "s/^$name //p" prog.err) ;; esac
    expect_jq "--by thread row $name" b.json \
        "[.total.rows[] | select(.tid == $tid) | [.name, .calls, .bytes]]" "[[\"$name\",$calls,$bytes]]"
done
expect_true "--by thread percents add up to 100" b.json 'near([.total.rows[].percent] | add; 100)'

# --thread TID and --thread tN select one thread's blocks.
tid2=$(sed -n 's/^worker-2 //p' prog.err)
analyze w.json report --total --thread "$tid2" t.mtly
expect_jq "--thread $tid2 (worker-2)" w.json '[.total.calls, .total.bytes, [.total.rows[] | [fname, .calls, .bytes]]]' \
    '[20,4000,[["fill_medium",20,4000]]]'
index2=$(jv r.json ".threads[] | select(.tid == $tid2) | .index")
analyze x.json report --total --thread "t$index2" t.mtly
expect_jq "--thread t$index2 (worker-2)" x.json '[.total.calls, .total.bytes, [.total.rows[] | [fname, .calls, .bytes]]]' \
    '[20,4000,[["fill_medium",20,4000]]]'
tid3=$(sed -n 's/^worker-3 //p' prog.err)
analyze y.json report --total --thread "$tid3" t.mtly
expect_jq "--thread $tid3 (worker-3)" y.json '[.total.calls, .total.bytes]' '[30,9000]'
analyze z.json report --total --thread "$main_tid" t.mtly
expect_jq "--thread $main_tid (main)" z.json '[.total.calls, .total.bytes]' "[$((5 + DTVS)),$((2500 + DTVS * d))]"

# --top 1 keeps the first row of each table: main's is main_work (2500 bytes,
# more than the 3 DTVs), the total's fill_large.
analyze o.json report --top 1 t.mtly
expect_jq "--top 1: total" o.json '[.total.rows[] | fname]' '["fill_large"]'
expect_jq "--top 1: main's table" o.json "[.threads[] | select(.tid == $main_tid) | .rows[] | fname]" '["main_work"]'
expect_jq "--top 1: one row per table" o.json '[.threads[] | .rows | length] | unique' '[1]'

# The text report has a banner for each thread, with its name.
"$MEMTALLY_BIN" report t.mtly >text.out 2>text.err || fail "report (text) failed"
for name in worker-1 worker-2 worker-3 golden_threads; do
    grep -q -- "$name" text.out || fail "text report names no thread $name"
done
echo "ok: text report names every thread"
