#!/bin/sh
# memtally record --time-resolution: times written in steps of the asked
# resolution (floored), the counts unchanged.  tests/programs/clock_steps
# makes 20 mallocs 25 ms apart and prints CLOCK_MONOTONIC just before and
# after each; at 10 ms, each allocation's time from the first's must be
# within the program's own readings widened by one step, every time in the
# trace (modules' too) a multiple of 10 ms, and the trace must say its
# resolution, through the index too, after merge, and in a followed exec.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
steps="$TEST_PROGRAMS/clock_steps"

record us.mtly "$steps" 20 25 >/dev/null || fail "recording in microseconds failed"
"$M" record -q --time-resolution=10ms -o ms.mtly -- "$steps" 20 25 >steps.txt ||
    fail "recording at 10ms failed"
for k in allocations frees bytes_allocated peak_live_bytes live_bytes_at_end; do
    expect_eq "$k the same at 10ms" "$(info_get us.mtly $k)" "$(info_get ms.mtly $k)"
done
expect_eq "time_resolution_us by default" 1 "$(info_get us.mtly time_resolution_us)"
expect_eq "time_resolution_us at 10ms" 10000 "$(info_get ms.mtly time_resolution_us)"
"$M" info ms.mtly | grep -q "^times: *in steps of 10ms" || fail "info does not say the resolution"
"$M" info us.mtly | grep -q "^times:" && fail "info of a trace in microseconds speaks of steps"

"$M" dump ms.mtly | awk '$1 ~ /^[0-9]+$/ && $1 % 10000 { print; bad++ } END { exit bad > 0 }' ||
    fail "times in the 10ms trace that are not multiples of 10 ms"
clock_steps_times ms.mtly steps.txt 20 10001
expect_eq "distinct times among them" 20 "$(cut -d' ' -f2 trace.txt | sort -u | wc -l)"

# The timeline in microseconds: each allocation counted in the point
# whose interval holds its time, however short the run (8 allocations
# 1 ms apart, points 100 us apart), not in a millisecond's; at most one
# fine bucket early (4096 of them over the trace, each a power of two
# microseconds: 2 us for a run of 8 ms).
"$steps" 8 1 >/dev/null # warm: the first run's loading would stretch the trace
record fine.mtly "$steps" 8 1 >/dev/null || fail "recording 8 steps of 1 ms failed"
duration=$(info_get fine.mtly duration_us)
points=$((duration / 100 + 1))
"$M" timeline --json --points $points --size 1000..1007 fine.mtly >fine.json || fail "timeline failed"
"$M" dump fine.mtly | awk '$3 == "alloc" { split($5, a, "="); if (a[2] >= 1000 && a[2] < 1008) print $1 }' >fine.trace
jq -r '.points[] | select(.alloc_calls > 0) | "\(.time_us) \(.alloc_calls)"' fine.json >fine.points
expect_eq "timeline of 1 ms steps: points with an allocation" 8 "$(wc -l <fine.points | tr -d ' ')"
paste -d' ' fine.trace fine.points | awk -v step=$((duration / points + 1)) -v bucket=$((2 * duration / 4096 + 2)) '
    { d = $2 - $1; if ($3 != 1 || d <= -bucket || d > step) { print "allocation at " $1 " us counted at " $2 " us (" $3 ")"; bad++ } }
    END { exit bad > 0 }' || fail "timeline points further than a point from their allocations"

# The timeline: no finer than the steps (20 x 25 ms at 100 ms: 5 points
# or fewer), every allocation in them; a run inside one step: one point.
"$M" record -q --time-resolution=100ms -o coarse.mtly -- "$steps" 20 25 >/dev/null ||
    fail "recording at 100ms failed"
"$M" timeline --json coarse.mtly >tl.json || fail "timeline failed"
n=$(jq '.points | length' tl.json)
[ "$n" -ge 3 ] && [ "$n" -le 6 ] || fail "timeline at 100ms: $n points"
jq -e '[.points[].time_us % 100000] | all(. == 0)' tl.json >/dev/null ||
    fail "timeline points off the 100ms steps: $(jq -c '[.points[].time_us]' tl.json)"
expect_eq "allocations in the timeline at 100ms" "$(info_get coarse.mtly allocations)" \
    "$(jq '[.points[].alloc_calls] | add' tl.json)"
"$M" record -q --time-resolution=1s -o onestep.mtly -- "$steps" 2 1 >/dev/null ||
    fail "recording at 1s failed"
expect_eq "timeline points of a run inside one step" 1 \
    "$("$M" timeline --json onestep.mtly | jq '.points | length')"

# Through the index (what the analyses read), the same.
"$M" index ms.mtly >/dev/null || fail "index failed"
expect_eq "time_resolution_us through the index" 10000 "$(info_get ms.mtly time_resolution_us)"

# Merged with a trace in microseconds: the coarser steps, every time one.
"$M" merge us.mtly ms.mtly -o merged.mtly >/dev/null || fail "merge failed"
expect_eq "merged time_resolution_us" 10000 "$(info_get merged.mtly time_resolution_us)"
expect_eq "merged allocations" $(($(info_get us.mtly allocations) * 2)) \
    "$(info_get merged.mtly allocations)"
"$M" dump merged.mtly | awk '$1 ~ /^[0-9]+$/ && $1 % 10000 { bad++ } END { exit bad > 0 }' ||
    fail "merged times that are not multiples of 10 ms"

# A program exec'd under --follow-exec keeps the resolution.
mkdir exec && (cd exec && "$M" record -q --follow-exec --time-resolution=1ms -- \
    "$TEST_PROGRAMS/exact_exec" "$TEST_PROGRAMS/exact_basic" >/dev/null) ||
    fail "recording exact_exec failed"
n=0
for t in exec/*.mtly; do
    expect_eq "$(basename "$t") time_resolution_us" 1000 "$(info_get "$t" time_resolution_us)"
    n=$((n + 1))
done
expect_eq "traces of exact_exec and exact_basic" 2 $n

# Bad values: one line, status 2, nothing run.
for v in 0 0.4us 2s ten --; do
    "$M" record -q --time-resolution="$v" -o bad.mtly -- true >out.txt 2>err.txt
    expect_eq "status of --time-resolution=$v" 2 $?
    expect_eq "lines said for --time-resolution=$v" 1 "$(wc -l < err.txt)"
    [ ! -e bad.mtly ] || fail "a trace was written for --time-resolution=$v"
done
"$M" record -q --time-resolution 2>err.txt
expect_eq "status of --time-resolution without a value" 2 $?
grep -q "takes a time from 1us to 1s" err.txt || fail "says: $(cat err.txt)"
echo "ok: times in steps, counts unchanged"
