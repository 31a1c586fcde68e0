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
# Prints, per workload, the median wall time of each and new / base.
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

if [ -n "$alone" ]; then
    printf '%-10s %10s %10s %10s %8s %8s %8s\n' workload "alone ms" "base ms" "new ms" \
        "base ovh" "new ovh" new/base
else
    printf '%-10s %10s %10s %8s\n' workload "base ms" "new ms" new/base
fi
for w in $list; do
    workload "$w"
    : >"$OUT/alone.ms"; : >"$OUT/base.ms"; : >"$OUT/new.ms"
    r=0
    while [ $r -lt "$reps" ]; do
        [ -z "$alone" ] || once alone >>"$OUT/alone.ms"
        once "$base" >>"$OUT/base.ms"
        once "$new" "$new_opts" "$new_env" >>"$OUT/new.ms"
        r=$((r + 1))
    done
    b=$(median <"$OUT/base.ms") n=$(median <"$OUT/new.ms")
    if [ -n "$alone" ]; then
        a=$(median <"$OUT/alone.ms")
        printf '%-10s %10s %10s %10s %8s %8s %8s\n' "$w" "$a" "$b" "$n" \
            "$(ratio $((b - a)) "$a")" "$(ratio $((n - a)) "$a")" "$(ratio "$n" "$b")"
    else
        printf '%-10s %10s %10s %8s\n' "$w" "$b" "$n" "$(ratio "$n" "$b")"
    fi
done
