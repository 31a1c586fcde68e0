#!/bin/sh
# peak, timeline and the filters on tests/programs/golden_phases.c: phase_one
# allocates 1 MiB in 1 KiB blocks at about 0 ms; at about 200 ms half of them
# are freed and phase_two allocates 768 KiB in 2 KiB blocks; at about 400 ms
# all but 5 blocks (7168 bytes) are freed.  Truth from the code (valgrind
# agrees: 1,408 allocs, 1,835,008 bytes, 7,168 in use at exit; massif's peak
# 1310720); every time window below lies 50 ms or more away from any
# allocation or free, so timing noise cannot move a block across it.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report
need_command peak
need_command timeline

record t.mtly "$TEST_PROGRAMS/golden_phases" >/dev/null || fail "record failed"
duration=$(info_get t.mtly duration_us)
[ "$duration" -ge 400000 ] || fail "the trace lasts $duration us, less than the program's sleeps"

# filtered WHAT CALLS BYTES FILTERS...: report --total with FILTERS selects
# CALLS blocks of BYTES bytes in all.
filtered() {
    what=$1; calls=$2; bytes=$3; shift 3
    analyze f.json report --total "$@" t.mtly
    expect_jq "$what: calls, bytes" f.json '[.total.calls, .total.bytes]' "[$calls,$bytes]"
}

analyze r.json report --total t.mtly
expect_jq "all: calls, bytes" r.json '[.total.calls, .total.bytes]' '[1408,1835008]'
expect_jq "all: rows" r.json '[.total.rows[] | [fname, .calls, .bytes]]' \
    '[["phase_one",1024,1048576],["phase_two",384,786432]]'

filtered "--allocated-between 0,100ms" 1024 1048576 --allocated-between 0,100ms
filtered "--allocated-between 100ms,300ms" 384 786432 --allocated-between 100ms,300ms
filtered "--allocated-between 0.1,0.3 (seconds)" 384 786432 --allocated-between 0.1,0.3
filtered "--allocated-between 300ms,10s" 0 0 --allocated-between 300ms,10s
filtered "--live-at 100ms" 1024 1048576 --live-at 100ms
filtered "--live-at 300ms" 896 1310720 --live-at 300ms
filtered "--live-at 300000us" 896 1310720 --live-at 300000us
filtered "--live-between 150ms,250ms" 1408 1835008 --live-between 150ms,250ms
filtered "--live-between 250ms,350ms" 896 1310720 --live-between 250ms,350ms
filtered "--freed-between 100ms,300ms" 512 524288 --freed-between 100ms,300ms
filtered "--freed-between 300ms,10s" 891 1303552 --freed-between 300ms,10s
filtered "--never-freed" 5 7168 --never-freed
filtered "--lifetime 300ms.." 512 524288 --lifetime 300ms..
filtered "--lifetime ..300ms" 896 1310720 --lifetime ..300ms
filtered "--size 2K..2K" 384 786432 --size 2K..2K
filtered "--size ..1K" 1024 1048576 --size ..1K
filtered "--size 1025..1.5K" 0 0 --size 1025..1.5K
filtered "--size 1024..2048" 1408 1835008 --size 1024..2048
filtered "--inside phase_two" 384 786432 --inside phase_two
filtered "--inside 'phase_*'" 1408 1835008 --inside 'phase_*'
filtered "--not-inside phase_one" 384 786432 --not-inside phase_one
filtered "--inside main --not-inside phase_two" 1024 1048576 --inside main --not-inside phase_two
filtered "--live-at 300ms --size 2K.." 384 786432 --live-at 300ms --size 2K..
filtered "--never-freed --inside phase_one" 3 3072 --never-freed --inside phase_one
filtered "--live-at 300ms --freed-between 300ms,10s" 891 1303552 --live-at 300ms --freed-between 300ms,10s

# --hide: phase_two's blocks are then main's.
analyze h.json report --total --hide phase_two t.mtly
expect_jq "--hide phase_two: rows" h.json '[.total.rows[] | [fname, .calls, .bytes]] | sort' \
    '[["main",384,786432],["phase_one",1024,1048576]]'
analyze h.json report --total --hide phase_two --hide 'phase_o*' t.mtly
expect_jq "--hide phase_two --hide phase_o*: rows" h.json '[.total.rows[] | [fname, .calls, .bytes]]' \
    '[["main",1408,1835008]]'

# peak
analyze p.json peak t.mtly
expect_jq "peak" p.json '[.peak_bytes, .blocks]' '[1310720,896]'
expect_jq "peak rows" p.json '[.rows[] | [fname, .blocks, .bytes]] | sort' \
    '[["phase_one",512,524288],["phase_two",384,786432]]'
expect_true "peak time in phase two (200 ms to 300 ms)" p.json '.peak_time_us >= 200000 and .peak_time_us <= 300000'
analyze p.json peak --inside phase_one t.mtly
expect_jq "peak --inside phase_one" p.json '[.peak_bytes, .blocks]' '[1048576,1024]'
expect_true "peak --inside phase_one time (before 200 ms)" p.json '.peak_time_us < 200000'
analyze p.json peak --allocated-between 100ms,300ms t.mtly
expect_jq "peak --allocated-between 100ms,300ms" p.json '[.peak_bytes, .blocks]' '[786432,384]'

# timeline: N points; the last one is the end (the leaks); the calls and
# bytes allocated add up; points in the sleeps show what was live then.
analyze l.json timeline --points 20 t.mtly
expect_jq "timeline points" l.json '.points | length' 20
expect_jq "timeline last live_bytes (leaked)" l.json '.points[-1].live_bytes' 7168
expect_jq "timeline allocated calls, bytes" l.json '[([.points[].alloc_calls] | add), ([.points[].alloc_bytes] | add)]' \
    '[1408,1835008]'
expect_true "timeline times increase" l.json '[.points[].time_us] | . == sort and (unique | length) == 20'
expect_true "timeline last time is the end ($duration us)" l.json \
    ".points[-1].time_us >= $duration - 1000 and .points[-1].time_us <= $duration + 1000"
expect_true "timeline: live 1 MiB in the first sleep" l.json \
    '[.points[] | select(.time_us >= 50000 and .time_us <= 150000) | .live_bytes] | length > 0 and all(. == 1048576)'
expect_true "timeline: live 1310720 in the second sleep" l.json \
    '[.points[] | select(.time_us >= 250000 and .time_us <= 350000) | .live_bytes] | length > 0 and all(. == 1310720)'
expect_true "timeline: nothing allocated during the sleeps" l.json \
    '[.points[] | select((.time_us >= 50000 and .time_us <= 150000) or (.time_us >= 250000 and .time_us <= 350000)) | .alloc_calls] | all(. == 0)'
analyze l.json timeline --points 7 --inside phase_two t.mtly
expect_jq "timeline --inside phase_two: points, last live, calls" l.json \
    '[(.points | length), .points[-1].live_bytes, ([.points[].alloc_calls] | add)]' '[7,4096,384]'
"$MEMTALLY_BIN" timeline --points 5 --csv t.mtly >l.csv || fail "timeline --csv failed"
expect_eq "timeline --csv header" "time_us,live_bytes,alloc_bytes,alloc_calls,rss_bytes" "$(head -n 1 l.csv)"
expect_eq "timeline --csv lines" 6 "$(wc -l <l.csv | tr -d ' ')"
expect_eq "timeline --csv last live_bytes" 7168 "$(tail -n 1 l.csv | cut -d, -f2)"
expect_eq "timeline --csv allocated calls" 1408 "$(tail -n +2 l.csv | awk -F, '{ n += $4 } END { print n }')"
# The text chart's times tell its points apart, however fine their step:
# points 100 or 101 us apart (a step of exactly a unit of the last
# decimal would let two times on a half round alike).
points=$((duration / 100))
"$MEMTALLY_BIN" timeline --points $points t.mtly >l.txt || fail "timeline --points $points failed"
expect_eq "timeline --points $points: rows" $points "$(tail -n +2 l.txt | grep -c 's ')"
expect_eq "timeline --points $points: times all different" $points \
    "$(tail -n +2 l.txt | awk '{ print $1 }' | sort -u | wc -l | tr -d ' ')"
