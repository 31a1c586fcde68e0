# Sampled mode against known truth (tests/programs/sample_mix.c: 2,000,000
# allocations, 1,496,000,000 bytes from three functions).  With the default
# rate (512 KiB) that is about 2,850 samples a run, so an estimate of the
# total bytes has a relative standard error near 2%; of one function's,
# 2.5 to 6%.  Bounds: each of 5 seeded runs within 12% (about 5 standard
# errors), their mean within 4%; the count of allocations (dominated by
# small blocks, rarely sampled) within 25% and 10%.  Also: the trace says
# "sampled", and frees are recorded only for sampled blocks (all freed).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
prog=$TEST_PROGRAMS/sample_mix
TRUE_BYTES=1496000000
TRUE_CALLS=2000000

within() { # what, estimate, truth, percent
    awk -v e="$2" -v t="$3" -v p="$4" -v w="$1" 'BEGIN {
        d = (e - t) / t * 100; if (d < 0) d = -d
        printf "%s: estimate %s, truth %s, off by %.2f%% (bound %s%%)\n", w, e, t, d, p
        exit (d <= p ? 0 : 1) }' || fail "$1 is off by more than $4%"
}

sum_bytes=0; sum_calls=0
for seed in 1 2 3 4 5; do
    MEMTALLY_SEED=$seed "$MEMTALLY_BIN" record -q --sample -o s$seed.mtly -- "$prog" ||
        fail "recording with --sample failed"
    "$MEMTALLY_BIN" info --json s$seed.mtly > info$seed.json || fail "info failed"
    expect_eq "mode" sampled "$(jq -r .mode info$seed.json)"
    expect_eq "rate" 524288 "$(jq -r .sample_rate info$seed.json)"
    samples=$(jq -r .samples info$seed.json)
    [ "$samples" -gt 1500 ] && [ "$samples" -lt 5000 ] || fail "$samples samples, expected about 2850"
    bytes=$(jq -r .bytes_allocated info$seed.json)
    calls=$(jq -r .allocations info$seed.json)
    within "seed $seed total bytes" "$bytes" $TRUE_BYTES 12
    within "seed $seed allocations" "$calls" $TRUE_CALLS 25
    expect_eq "seed $seed estimated frees equal allocations" "$calls" "$(jq -r .frees info$seed.json)"
    "$MEMTALLY_BIN" report --total --json s$seed.mtly > report$seed.json || fail "report failed"
    for f in medium_objs:600000000 large_objs:819200000; do
        got=$(jq -r ".total.rows[] | select(.function == \"${f%%:*}\") | .bytes" report$seed.json)
        within "seed $seed ${f%%:*} bytes" "${got:-0}" "${f#*:}" 15
    done
    sum_bytes=$((sum_bytes + bytes)); sum_calls=$((sum_calls + calls))
done
within "mean total bytes over 5 seeds" $((sum_bytes / 5)) $TRUE_BYTES 4
within "mean allocations over 5 seeds" $((sum_calls / 5)) $TRUE_CALLS 10

# The same seed gives the same trace: sampling is reproducible for tests.
MEMTALLY_SEED=1 "$MEMTALLY_BIN" record -q --sample -o again.mtly -- "$prog" || fail "record failed"
expect_eq "same seed, same samples" "$(jq -r .samples info1.json)" "$(info_get again.mtly samples)"

# A rate of 1 byte samples every block of 40 bytes or more (the chance to
# miss one is e^-40): exact_basic's 100, 200, 1000, 50 and 2000-byte
# blocks are all there, and the frees of the three it frees.
"$MEMTALLY_BIN" record -q --sample=1 -o every.mtly -- "$TEST_PROGRAMS/exact_basic" ||
    fail "record --sample=1 failed"
"$MEMTALLY_BIN" dump every.mtly > every.txt || fail "dump failed"
for size in 100 200 1000 50 2000; do
    grep -q " alloc .* size=$size " every.txt || fail "--sample=1 missed the $size-byte block"
done
frees=$(grep -c ' free ' every.txt)
[ "$frees" -ge 3 ] && [ "$frees" -le 4 ] || fail "--sample=1: $frees frees, expected 3 or 4"
echo "ok: --sample=1 sampled every block of 40 bytes or more, $frees frees"

# Analyses of a sampled trace say their figures are estimates; of a full
# trace, not.
expect_eq "report --json marks estimates" true "$(jq -r .estimated report1.json)"
expect_eq "report --json gives the rate" 524288 "$(jq -r .sample_rate report1.json)"
"$MEMTALLY_BIN" report --total s1.mtly | head -n 1 | grep -q "estimates" ||
    fail "the text report of a sampled trace does not say its figures are estimates"
"$MEMTALLY_BIN" record -q -o full.mtly -- "$TEST_PROGRAMS/exact_basic" || fail "record failed"
expect_eq "full trace: no estimated key" null "$("$MEMTALLY_BIN" peak --json full.mtly | jq -r .estimated)"
