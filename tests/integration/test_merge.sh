#!/bin/sh
# memtally merge: runs of one program into one trace, and a process tree
# on one clock, against known truth.
#
# Runs: golden_funcs with 10 and 13 blocks from alpha (truth at the top of
# tests/programs/golden_funcs.c: 43 allocations / 6708 bytes, and 46 /
# 7008).  The merged trace holds the sums, one row per function however
# differently the runs were laid out in memory, and the same stacks as one
# run; each run's thread is its own.
# Tree: tests/programs/tree_fork.c under record --follow-fork: the combined
# peak of 11000 bytes, parent 3000, children 3000 and 5000.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN

record a.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "recording run a failed"
record b.mtly "$TEST_PROGRAMS/golden_funcs" 13 >/dev/null || fail "recording run b failed"
"$M" merge a.mtly b.mtly -o m.mtly >out.txt 2>err.txt || fail "merge failed: $(cat err.txt)"
grep -q "^merged 2 traces into m.mtly: 89 allocations" out.txt || fail "merge says: $(cat out.txt)"
expect_eq "merged totals are the sums" "89 13716 1 false" \
    "$("$M" info --json m.mtly | jq -r '"\(.allocations) \(.bytes_allocated) \(.complete) \(.truncated)"' |
       sed 's/true/1/')"
expect_eq "merged: one row per function, calls and bytes summed" \
    "$(printf '%s\n' 'alpha 23 2300' 'beta 12 2400' 'delta 8 512' 'grow 10 1200' 'keeper 14 728' \
        'make_buffer 6 6000' 'scratch 16 576')" \
    "$("$M" report --total --json m.mtly | jq -r '.total.rows[] | "\(.function) \(.calls) \(.bytes)"' | sort)"
expect_eq "merged: the stacks of one run" "$("$M" info --json a.mtly | jq .unique_stacks)" \
    "$("$M" info --json m.mtly | jq .unique_stacks)"
# The runs were laid out apart (ASLR: the program loaded at different
# addresses), which the merge unified.
base() { "$M" dump --json "$1" | jq -r '[.events[] | select(.type == "module-load")][0].base'; }
[ "$(base a.mtly)" != "$(base b.mtly)" ] || echo "note: both runs at the same addresses (no ASLR here)"
expect_eq "merged: each run's thread, named after its run" \
    "$(printf '%s\n' 'golden_funcs (run 1) 6708' 'golden_funcs (run 2) 7008')" \
    "$("$M" report --json m.mtly | jq -r '.threads[] | "\(.name) \(.bytes)"')"
expect_eq "merged: live at the end, both runs' leaks" "1300 2600" \
    "$("$M" info --json a.mtly | jq .live_bytes_at_end) $("$M" info --json m.mtly | jq .live_bytes_at_end)"
# Every export reads it: pprof through go tool pprof.
"$M" export m.mtly --format pprof -o m.pb.gz || fail "export pprof of the merged trace failed"
go tool pprof -top -unit=B -sample_index=alloc_space m.pb.gz 2>&1 | grep -q ' 6000B .* make_buffer$' ||
    fail "go tool pprof: make_buffer is not 6000 bytes in the merged trace"

# A process tree on one clock.
"$M" record -q --follow-fork -o t.mtly -- "$TEST_PROGRAMS/tree_fork" >/dev/null || fail "recording tree_fork failed"
[ -f t.mtly.1 ] && [ -f t.mtly.2 ] || fail "no traces of the children: $(ls)"
# One trace named: its numbered siblings (the children's) come with it.
"$M" merge --tree t.mtly -o tree.mtly >tree.txt 2>err.txt || fail "merge --tree failed: $(cat err.txt)"
grep -q "^merged 3 traces" tree.txt || fail "merge --tree t.mtly did not take t.mtly.1 and t.mtly.2"
cat tree.txt
grep -q "^combined peak: 10.7 KiB" tree.txt || fail "merge --tree: the combined peak is not 11000 bytes"
expect_eq "merge --tree: each process's part of the peak, in its lines" "2.9 2.9 4.9" \
    "$(awk '/^  pid / && /KiB \(/ { for (i = 1; i <= NF; i++) if ($i == "KiB") print $(i-1) }' tree.txt |
       sort -n | tr '\n' ' ' | sed 's/ $//')"
"$M" peak --threads --json tree.mtly >peak.json || fail "peak --threads of the tree failed"
expect_eq "tree: the combined peak" 11000 "$(jq .peak_bytes peak.json)"
expect_eq "tree: held by each process (a thread each)" "[5000,3000,3000]" "$(jq -c '[.threads[].bytes]' peak.json)"
pids=$(for f in t.mtly t.mtly.1 t.mtly.2; do "$M" info --json $f | jq .pid; done | sort -n | tr '\n' ' ')
expect_eq "tree: threads named by their process" "$pids" \
    "$(jq -r '.threads[].name' peak.json | sed 's/.*(pid \([0-9]*\))/\1/' | sort -n | tr '\n' ' ')"
expect_eq "tree: totals are the sums" "4 11000 1000" \
    "$("$M" info --json tree.mtly | jq -r '"\(.allocations) \(.bytes_allocated) \(.live_bytes_at_end)"')"

# Bad input: one line, a non-zero exit.
record other.mtly "$TEST_PROGRAMS/exact_basic" >/dev/null || fail "recording exact_basic failed"
"$M" merge a.mtly other.mtly -o x.mtly >/dev/null 2>err.txt && fail "two programs merged without --force"
expect_eq "two programs: one line" 1 "$(grep -c . err.txt)"
grep -q "not one program (--force merges them anyway)" err.txt || fail "two programs: no reason: $(cat err.txt)"
[ ! -e x.mtly ] || fail "a refused merge left its output"
"$M" merge --force a.mtly other.mtly -o x.mtly >/dev/null || fail "merge --force of two programs failed"
expect_eq "--force: the sums" "50" "$("$M" info --json x.mtly | jq .allocations)"
# One trace merged with a run that adds no event holds that trace's events
# as they were: every allocation and free at its time, thread, address and
# size, and under its stack (the merge holds new stack nodes back and
# writes them in one record before the events that use them, which are
# then written in runs).  index_churn: two threads, 400,000 events;
# sqlite3: 450 stacks made as it goes.
record none.mtly /bin/true || fail "recording /bin/true failed"
record churn.mtly "$TEST_PROGRAMS/index_churn" 200000 >/dev/null || fail "recording index_churn failed"
echo "create table t(a, b); insert into t select value, hex(value) from generate_series(1, 2000);
create index i on t(b); select count(*) from t where b like '%A%';" >q.sql
record sq.mtly sqlite3 :memory: <q.sql >/dev/null || fail "recording sqlite3 failed"
events() { "$M" dump "$1" | awk '$3 == "alloc" || $3 == "free" { print $1, $2, $3, $4, $5 }'; }
for t in churn sq; do
    "$M" merge --force $t.mtly none.mtly -o $t.2.mtly >/dev/null || fail "merge --force $t.mtly failed"
    events $t.mtly >$t.ev && events $t.2.mtly >$t.2.ev && cmp -s $t.ev $t.2.ev ||
        fail "$t: the merged trace's events are not the trace's"
    [ "$(wc -l <$t.ev)" -gt 5000 ] || fail "$t: too few events to tell: $(wc -l <$t.ev)"
    "$M" export $t.mtly --format folded -o $t.folded && "$M" export $t.2.mtly --format folded -o $t.2.folded &&
        cmp -s $t.folded $t.2.folded || fail "$t: the merged trace's stacks are not the trace's"
done
[ "$(wc -l <sq.folded)" -gt 100 ] || fail "sqlite3: too few stacks to tell: $(wc -l <sq.folded)"
mktrace s.mtly <<'EOT'
header program=/bin/sampled pid=3 mode=sampled rate=1000
stack s site main
start 0 0 3 main
alloc 1 0 4096 100 s
end 10
EOT
for bad in "a.mtly s.mtly -o y.mtly" "a.mtly missing.mtly -o y.mtly" "a.mtly b.mtly" "a.mtly -o y.mtly" \
           "a.mtly b.mtly -o a.mtly" "--bogus a.mtly b.mtly -o y.mtly"; do
    # shellcheck disable=SC2086
    "$M" merge $bad >/dev/null 2>err.txt && fail "merge $bad: exit 0"
    expect_eq "merge $bad: one line on stderr" 1 "$(grep -c . err.txt)"
done
"$M" merge a.mtly s.mtly -o y.mtly 2>&1 | grep -q "a full trace and s.mtly a sampled one" ||
    fail "full and sampled: no reason"
# A trace cut short: merged as far as it goes, and said so.
size=$(stat -c %s b.mtly)
head -c $((size - 40)) b.mtly >cut.mtly
"$M" merge a.mtly cut.mtly -o c.mtly >out.txt 2>err.txt || fail "merging a cut trace failed: $(cat err.txt)"
grep -q "cut.mtly.*cut short: merged as far as it goes" out.txt || fail "a cut trace: not said: $(cat out.txt)"
"$M" info c.mtly >/dev/null || fail "the merge of a cut trace does not read"
# A trace damaged in its middle: merged up to the damage, and said so.
record whole.mtly "$TEST_PROGRAMS/damage_source" >/dev/null || fail "recording damage_source failed"
cp whole.mtly dmg.mtly
printf 'XXXX' | dd of=dmg.mtly bs=1 seek=$(($(stat -c %s dmg.mtly) / 2)) conv=notrunc 2>/dev/null
"$M" merge whole.mtly dmg.mtly -o d.mtly >out.txt 2>err.txt || fail "merging a damaged trace failed: $(cat err.txt)"
grep -q "dmg.mtly.*: [1-9][0-9]* allocations; damaged: merged as far as it reads" out.txt ||
    fail "a damaged trace: not said: $(cat out.txt)"
grep -q "whole.mtly.*: 100000 allocations$" out.txt || fail "the whole trace: $(cat out.txt)"
echo "ok: merge"
