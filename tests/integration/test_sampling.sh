# Sampled mode (memtally record --sample) against known truth.
#
# 1. The weights, exactly: on a sampled trace written by hand
#    (tests/tools/mktrace), a block of n bytes sampled at rate R stands for
#    1/p blocks and n/p bytes, p = 1 - exp(-n/R) (docs/ANALYSIS.md).
#
# 2. The estimates, statistically, on tests/programs/sample_mix.c (2,000,000
#    allocations, 1,496,000,000 bytes from three functions).  Poisson
#    sampling by bytes at mean R samples a block of n bytes with p = 1 -
#    exp(-n/R), independently of the others, and weights it n/p: the byte
#    estimate is unbiased with variance sum n^2 (1-p)/p over the blocks, the
#    count's sum (1-p)/p, the number of samples' sum p (1-p).  At R = 64 KiB
#    that is a standard deviation (sigma) of 0.655% of the bytes, 1.78% of
#    the calls, 2.92% / 1.04% / 0.88% of the bytes of small_objs /
#    medium_objs / large_objs, and 22,374 +- 150 samples (computed below
#    from the workload).  Each of K = 8 seeded runs must be within 4 sigma,
#    their mean within 4 sigma / sqrt(K).  A bias of 3% in the byte weights
#    puts the mean of the 8 runs 3% / (0.655% / sqrt 8) = 13 sigma off,
#    9 sigma past its bound: it cannot pass.  With the default rate (512
#    KiB, sigma 1.87%) one run is held to 4 sigma too.
#
# 3. Seeds: the same seed gives the same samples; different seeds, even
#    2 and 3, different ones.
#
# Also: the trace says "sampled"; frees are recorded only for sampled
# blocks (all freed here); analyses say their figures are estimates.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
prog=$TEST_PROGRAMS/sample_mix
RATE=65536
SEEDS="1 2 3 4 5 6 7 8"
K=8

# --- 1. The weights of each sample, on a trace made by hand.
SIZES="1 10 100 999 1000 4096 65536"
{
    echo "header program=/bin/sampled pid=3 mode=sampled rate=1000"
    echo "stack s site main"
    echo "start 0 0 3 main"
    i=0
    for n in $SIZES; do i=$((i + 1)); echo "alloc $i 0 $((4096 * i)) $n s"; done
    echo "end 100"
} | mktrace w.mtly
"$MEMTALLY_BIN" report --total --json w.mtly >w.json || fail "report of a sampled trace failed"
expect_eq "hand-made trace: estimated, rate" "true 1000" "$(jq -r '"\(.estimated) \(.sample_rate)"' w.json)"
# Printed with 6 significant digits: compared within 1e-5.
echo "$SIZES" | awk -v got="$(jq -r '"\(.total.calls) \(.total.bytes)"' w.json)" '{
    for (i = 1; i <= NF; i++) { p = 1 - exp(-$i / 1000); calls += 1 / p; bytes += $i / p }
    split(got, g, " ")
    printf "weights: calls %s (exact %.6f), bytes %s (exact %.6f)\n", g[1], calls, g[2], bytes
    exit (g[1] - calls) ^ 2 > (1e-5 * calls) ^ 2 || (g[2] - bytes) ^ 2 > (1e-5 * bytes) ^ 2
}' || fail "the weights of a sampled trace are not 1/p and n/p"

# --- 2. Accuracy on sample_mix.
# sigma WHAT: the standard deviation at rate $RATE of: bytes, calls,
# samples, or the bytes of one function (small, medium, large).
sigma() {
    awk -v R="$1" -v what="$2" 'BEGIN {
        # sample_mix.c: count and size of each function
        N["small"] = 1200000; S["small"] = 64
        N["medium"] = 600000; S["medium"] = 1000
        N["large"] = 200000; S["large"] = 4096
        for (f in N) {
            p = 1 - exp(-S[f] / R)
            vb[f] = N[f] * S[f] ^ 2 * (1 - p) / p
            v["bytes"] += vb[f]; v["calls"] += N[f] * (1 - p) / p
            v["samples"] += N[f] * p * (1 - p); mean_samples += N[f] * p
        }
        if (what == "mean_samples") { printf "%.1f\n", mean_samples; exit }
        printf "%.1f\n", sqrt(what in v ? v[what] : vb[what]) }'
}
# within WHAT ESTIMATE TRUTH SIGMA: |ESTIMATE - TRUTH| <= 4 SIGMA.
within() {
    awk -v w="$1" -v e="$2" -v t="$3" -v s="$4" 'BEGIN {
        d = e - t; if (d < 0) d = -d
        printf "%s: estimate %s, truth %s: off by %.2f sigma (%.3f%%), bound 4 sigma (%.3f%%)\n",
            w, e, t, d / s, d / t * 100, 4 * s / t * 100
        exit d > 4 * s }' || fail "$1 is off by more than 4 sigma"
}

TRUE_BYTES=1496000000
TRUE_CALLS=2000000
fn_truth() { case $1 in small) echo 76800000 ;; medium) echo 600000000 ;; large) echo 819200000 ;; esac; }
s_bytes=$(sigma $RATE bytes)
s_calls=$(sigma $RATE calls)
s_samples=$(sigma $RATE samples)
mean_samples=$(sigma $RATE mean_samples)
echo "rate $RATE: sigma of the bytes $s_bytes, of the calls $s_calls; samples $mean_samples +- $s_samples"

sum_bytes=0; sum_calls=0; sum_small=0; sum_medium=0; sum_large=0
for seed in $SEEDS; do
    MEMTALLY_SEED=$seed "$MEMTALLY_BIN" record -q --sample=$RATE -o s$seed.mtly -- "$prog" ||
        fail "recording with --sample failed"
    "$MEMTALLY_BIN" info --json s$seed.mtly >info$seed.json || fail "info failed"
    expect_eq "seed $seed: mode, rate" "sampled $RATE" "$(jq -r '"\(.mode) \(.sample_rate)"' info$seed.json)"
    within "seed $seed samples" "$(jq -r .samples info$seed.json)" "$mean_samples" "$s_samples"
    bytes=$(jq -r .bytes_allocated info$seed.json)
    calls=$(jq -r .allocations info$seed.json)
    within "seed $seed total bytes" "$bytes" $TRUE_BYTES "$s_bytes"
    within "seed $seed allocations" "$calls" $TRUE_CALLS "$s_calls"
    expect_eq "seed $seed estimated frees equal allocations" "$calls" "$(jq -r .frees info$seed.json)"
    # Every block is freed: the estimate of what is live is 0, not a
    # rounding's "-0 B".
    expect_eq "seed $seed: nothing live at the end" "live at end:   ~0 B" \
        "$("$MEMTALLY_BIN" info s$seed.mtly | grep '^live at end')"
    "$MEMTALLY_BIN" report --total --json s$seed.mtly >report$seed.json || fail "report failed"
    for f in small medium large; do
        got=$(jq -r ".total.rows[] | select(.function == \"${f}_objs\") | .bytes" report$seed.json)
        within "seed $seed ${f}_objs bytes" "${got:-0}" "$(fn_truth $f)" "$(sigma $RATE $f)"
        eval "sum_$f=\$(awk -v a=\"\$sum_$f\" -v b=\"${got:-0}\" 'BEGIN { printf \"%.0f\", a + b }')"
    done
    # The sequence of samples (size and stack of each), for the seeds below.
    "$MEMTALLY_BIN" dump s$seed.mtly | awk '/ alloc / { print $5, $6 }' | cksum >samples$seed.sum
    sum_bytes=$(awk -v a="$sum_bytes" -v b="$bytes" 'BEGIN { printf "%.0f", a + b }')
    sum_calls=$(awk -v a="$sum_calls" -v b="$calls" 'BEGIN { printf "%.0f", a + b }')
done
# The mean of K runs: sigma / sqrt(K).
mean() { awk -v s="$1" -v k=$K 'BEGIN { printf "%.0f", s / k }'; }
over_k() { awk -v s="$1" -v k=$K 'BEGIN { printf "%.1f", s / sqrt(k) }'; }
within "mean total bytes of $K seeds" "$(mean $sum_bytes)" $TRUE_BYTES "$(over_k "$s_bytes")"
within "mean allocations of $K seeds" "$(mean $sum_calls)" $TRUE_CALLS "$(over_k "$s_calls")"
for f in small medium large; do
    eval "total=\$sum_$f"
    within "mean ${f}_objs bytes of $K seeds" "$(mean "$total")" "$(fn_truth $f)" "$(over_k "$(sigma $RATE $f)")"
done

# --- 3. Seeds.  The same seed gives the same samples.
MEMTALLY_SEED=1 "$MEMTALLY_BIN" record -q --sample=$RATE -o again.mtly -- "$prog" || fail "record failed"
expect_eq "same seed, same samples" "$(cat samples1.sum)" \
    "$("$MEMTALLY_BIN" dump again.mtly | awk '/ alloc / { print $5, $6 }' | cksum)"
# Different seeds, different samples: no two of the K runs alike (seeds
# that differ in their lowest bit too: 2 and 3, 4 and 5...).
expect_eq "different seeds, different samples" $K "$(cat samples*.sum | sort -u | wc -l | tr -d ' ')"

# The default rate (512 KiB): one run within 4 sigma.
MEMTALLY_SEED=9 "$MEMTALLY_BIN" record -q --sample -o default.mtly -- "$prog" || fail "record --sample failed"
"$MEMTALLY_BIN" info --json default.mtly >default.json || fail "info failed"
expect_eq "default rate" 524288 "$(jq -r .sample_rate default.json)"
within "default rate: samples" "$(jq -r .samples default.json)" "$(sigma 524288 mean_samples)" "$(sigma 524288 samples)"
within "default rate: total bytes" "$(jq -r .bytes_allocated default.json)" $TRUE_BYTES "$(sigma 524288 bytes)"
within "default rate: allocations" "$(jq -r .allocations default.json)" $TRUE_CALLS "$(sigma 524288 calls)"

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

# At --sample=1 with a seed, the estimates of programs whose blocks are all
# of 10 bytes or more are their exact truth (the header comment of each):
# every block sampled, every sampled block's free recorded, through
# realloc, calloc, the aligned family and C++'s operators.  sample_every
# dirties the heap first, so that calloc's blocks reuse it (the program
# checks the zeros, realloc's contents and the alignments); exact_basic,
# whose 1-byte block is sampled with p = 0.63, only runs.
for case in "exact_realloc 7 6 5770 5210 50" "exact_aligned 6 4 3762 3622 110" \
    "exact_newdelete 9 8 73244 72840 4" "sample_every 1000 1000" exact_basic; do
    set -- $case
    p=$1; shift
    "$TEST_PROGRAMS/$p" >plain.out || fail "$p failed alone"
    MEMTALLY_SEED=1 "$MEMTALLY_BIN" record -q --sample=1 -o $p.mtly -- "$TEST_PROGRAMS/$p" >traced.out ||
        fail "$p failed under --sample=1"
    cmp plain.out traced.out || fail "$p printed otherwise under --sample=1"
    case $# in
    0) ;;
    2) json=$("$MEMTALLY_BIN" info --json $p.mtly) || fail "info $p.mtly failed"
       expect_eq "$p: allocations, frees, live at end" "$1 $2 0" \
           "$(printf "%s\n" "$json" | jq -r '"\(.allocations) \(.frees) \(.live_bytes_at_end)"')" ;;
    *) check $p.mtly "$@" 1 ;;
    esac
done
echo "ok: --sample=1 recorded every block and every free, contents kept"

# Analyses of a sampled trace say their figures are estimates; of a full
# trace, not.
expect_eq "report --json marks estimates" true "$(jq -r .estimated report1.json)"
expect_eq "report --json gives the rate" $RATE "$(jq -r .sample_rate report1.json)"
"$MEMTALLY_BIN" report --total s1.mtly | head -n 1 | grep -q "estimates" ||
    fail "the text report of a sampled trace does not say its figures are estimates"
"$MEMTALLY_BIN" record -q -o full.mtly -- "$TEST_PROGRAMS/exact_basic" || fail "record failed"
expect_eq "full trace: no estimated key" null "$("$MEMTALLY_BIN" peak --json full.mtly | jq -r .estimated)"
