#!/bin/sh
# Two builds of memtally side by side: the recording overhead of one
# against the other, on the same workloads as bench/run.sh, interleaved
# (base, new, base, new...) so that the machine's noise falls on both.
#   sh bench/compare.sh BASE_MEMTALLY [-r N] [-w "W1 W2..."] [-s] [-p] [-f] [-a "OPTIONS"]
#                       [-e "VAR=VALUE..."]
#     BASE_MEMTALLY  the memtally binary to compare against (for instance
#                    one built from an earlier commit in a git worktree);
#                    the new one is build/memtally (MEMTALLY_BIN)
#     -r N           rounds (default 7; the median is shown)
#     -w LIST        workloads (default "storm1 sqlite python bintree perl")
#     -s             both record in sampled mode (--sample), and the program
#                    alone runs too, for the overhead of each
#     -p             the program alone runs too (full mode), for the overheads
#     -f             the program recorded as a followed process: memtally
#                    record --follow-exec -- env PROGRAM (env execs it)
#     -a "OPTIONS"   more options for the new build's `memtally record` only:
#                    with BASE the same binary, what an option costs (-a
#                    "--depth 1": the stack walk's share of the overhead)
#     -e "VAR=VALUE" environment for the new build's `memtally record` only
#                    (-e MEMTALLY_WRITER=discard, BASE the same binary: the
#                    writer's encoding's share of the overhead; that trace
#                    holds no events)
# Prints, per workload, the median wall time of each and new / base; then
# the same ratio round by round (a round's runs follow one another, so a
# slow spell of the machine falls on both): its median and, as the noise's
# measure, its quartiles.  With -p or -s the ratios are of the overheads.
base=$1
[ -x "$base" ] || { echo "usage: sh bench/compare.sh BASE_MEMTALLY [-r N] [-w LIST] [-s] [-p] [-f] [-a OPTIONS] [-e VAR=VALUE]" >&2; exit 2; }
shift
reps=7 list="storm1 sqlite python bintree perl" mode='' alone='' new_opts='' new_env='' follow=''
launcher=''
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -w) list=$2; shift 2 ;;
    -s) mode=--sample alone=1; shift ;;
    -p) alone=1; shift ;;
    -f) follow=--follow-exec launcher=env; shift ;;
    -a) new_opts=$2; shift 2 ;;
    -e) new_env=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
new=${MEMTALLY_BIN:-build/memtally}
bench_sizes default
mkdir -p "$B" "$OUT" || exit 1
MEMTALLY_INDEX_DIR=$(pwd)/$B/run-index
export MEMTALLY_INDEX_DIR
bench_inputs || exit 1

# once BIN [OPTIONS [ENV]]: milliseconds of one recorded run of the
# workload set by `workload` (BIN "alone": the program alone).
once() {
    s=$(date +%s%N)
    # shellcheck disable=SC2086
    if [ "$1" = alone ]; then
        env $envs $cmd <"$inp" >/dev/null 2>&1
    else
        env $envs ${3-} "$1" record -q $mode $follow ${2-} -o "$OUT/compare.%p.mtly" -- $launcher $cmd \
            <"$inp" >/dev/null 2>&1
    fi
    e=$(date +%s%N)
    rm -f "$OUT"/compare.*.mtly*
    echo $(( (e - s) / 1000000 ))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# paired: from the rounds' "alone base new" lines on stdin, each round's
# new / base (of the overheads where the program ran alone too); prints
# their median and quartiles ("n/a" where a base overhead is not above 0).
paired() {
    awk -v over="$alone" '{ d = over ? $2 - $1 : $2; m = over ? $3 - $1 : $3
                            if (d > 0) r[++n] = m / d; else bad = 1 }
        END { if (bad || n == 0) { printf "%8s %15s", "n/a", "n/a"; exit }
              for (i = 2; i <= n; i++) { v = r[i]; for (j = i - 1; j >= 1 && r[j] > v; j--) r[j + 1] = r[j]; r[j + 1] = v }
              q = int((n + 3) / 4); Q = n + 1 - q
              printf "%8.3f %7.3f-%.3f", r[int((n + 1) / 2)], r[q], r[Q] }'
}

if [ -n "$alone" ]; then
    printf '%-10s %10s %10s %10s %8s %8s %8s %8s %15s\n' workload "alone ms" "base ms" "new ms" \
        "base ovh" "new ovh" new/base paired quartiles
else
    printf '%-10s %10s %10s %8s %8s %15s\n' workload "base ms" "new ms" new/base paired quartiles
fi
for w in $list; do
    workload "$w"
    : >"$OUT/rounds"
    r=0
    while [ $r -lt "$reps" ]; do
        a=0
        [ -z "$alone" ] || a=$(once alone)
        b=$(once "$base")
        n=$(once "$new" "$new_opts" "$new_env")
        echo "$a $b $n" >>"$OUT/rounds"
        r=$((r + 1))
    done
    b=$(cut -d' ' -f2 "$OUT/rounds" | median) n=$(cut -d' ' -f3 "$OUT/rounds" | median)
    if [ -n "$alone" ]; then
        a=$(cut -d' ' -f1 "$OUT/rounds" | median)
        printf '%-10s %10s %10s %10s %8s %8s %8s %s\n' "$w" "$a" "$b" "$n" \
            "$(ratio $((b - a)) "$a")" "$(ratio $((n - a)) "$a")" "$(ratio "$n" "$b")" \
            "$(paired <"$OUT/rounds")"
    else
        printf '%-10s %10s %10s %8s %s\n' "$w" "$b" "$n" "$(ratio "$n" "$b")" \
            "$(paired <"$OUT/rounds")"
    fi
done
rm -f "$OUT/rounds"
