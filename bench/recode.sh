#!/bin/sh
# The same events in two trace formats: each workload (bench/run.sh's, at
# its default sizes) recorded once by BASE, then written again, event for
# event, by BASE and by this build (`memtally merge --force TRACE TRUE -o
# OUT`, TRUE a trace of /bin/true that adds no event), and the bytes of
# each.  A recording's size moves from run to run with the machine's
# speed (times take more bytes when the program runs slower); this holds
# the events still, so what changes is the coding alone.  Both are
# re-encoded at the writer's base level, in blocks of the merge's size:
# larger than a recording, which the writer's idle levels make smaller.
# It checks that both traces hold the same events (`memtally dump`).
#   sh bench/recode.sh BASE_MEMTALLY [-w "W1 W2..."]
#     BASE_MEMTALLY  another build's memtally (a git worktree of an
#                    earlier commit); it must read its own traces, this
#                    build reads every version
#     -w LIST        workloads (default: sqlite python cc1 perl gitlog
#                    storm1 bintree)
[ $# -ge 1 ] || { echo "usage: sh bench/recode.sh BASE_MEMTALLY [-w LIST]" >&2; exit 2; }
BASE=$1
shift
list="sqlite python cc1 perl gitlog storm1 bintree"
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=build/memtally
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
t=$B/recode
"$BASE" record -q -o "$t.true.mtly" -- /bin/true || { echo "bench: $BASE does not record" >&2; exit 1; }
printf '%-10s %12s %12s %8s\n' workload "base B" "this B" "this/base"
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086
    env $envs "$BASE" record -q -o "$t.mtly" -- $cmd <"$inp" >/dev/null 2>&1 ||
        { echo "bench: recording $w failed" >&2; exit 1; }
    "$BASE" merge --force "$t.mtly" "$t.true.mtly" -o "$t.base.mtly" >/dev/null &&
        "$M" merge --force "$t.mtly" "$t.true.mtly" -o "$t.this.mtly" >/dev/null ||
        { echo "bench: re-encoding $w failed" >&2; exit 1; }
    # The same events both ways, as this build reads them (but the first
    # line, which names the format's version).
    "$M" dump "$t.base.mtly" | tail -n +2 >"$t.base.txt" &&
        "$M" dump "$t.this.mtly" | tail -n +2 >"$t.this.txt" &&
        cmp -s "$t.base.txt" "$t.this.txt" ||
        { echo "bench: $w: the two traces' events differ" >&2; exit 1; }
    a=$(stat -c %s "$t.base.mtly") b=$(stat -c %s "$t.this.mtly")
    printf '%-10s %12s %12s %8s\n' "$w" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')"
done
rm -f "$t".*mtly "$t".*.txt
