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
# With -c, the merges run under valgrind's cachegrind, and what each
# build's merge cost is printed too, in exact counts that the machine's
# noise does not move: the instructions run and the data reads and writes
# that miss its model of the first- and last-level caches (reading the
# trace is in both, the same code unless the change is to the reader).
# For changes of a few percent to the encoder or the address model, where
# timed runs of the same merge moved by 30% here; about a minute a
# workload and build.
#   sh bench/recode.sh BASE_MEMTALLY [-w "W1 W2..."] [-c]
#     BASE_MEMTALLY  another build's memtally (a git worktree of an
#                    earlier commit); it must read its own traces, this
#                    build reads every version
#     -w LIST        workloads (default: sqlite python cc1 perl gitlog
#                    storm1 bintree)
#     -c             the merges' counts under cachegrind (needs valgrind)
[ $# -ge 1 ] || { echo "usage: sh bench/recode.sh BASE_MEMTALLY [-w LIST] [-c]" >&2; exit 2; }
BASE=$1
shift
list="sqlite python cc1 perl gitlog storm1 bintree" counted=''
while [ $# -gt 0 ]; do
    case $1 in
    -w) list=$2; shift 2 ;;
    -c) counted=1; shift ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
if [ -n "$counted" ] && ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind is not installed (apt-get install valgrind)" >&2
    exit 1
fi
. bench/common.inc
B=build/bench OUT=build/bench/out CC=${CC:-cc}
M=build/memtally
mkdir -p "$B" "$OUT" || exit 1
bench_sizes default
case " $list " in *" gitlog "*) ;; *) GIT_COMMITS= ;; esac
bench_inputs || exit 1
t=$B/recode
"$BASE" record -q -o "$t.true.mtly" -- /bin/true || { echo "bench: $BASE does not record" >&2; exit 1; }
# recode BIN OUT: BIN's merge of $t.mtly into OUT; with -c, under
# cachegrind, its counts ("instructions D1-misses LL-misses") in OUT.counts.
recode() {
    if [ -z "$counted" ]; then
        "$1" merge --force "$t.mtly" "$t.true.mtly" -o "$2" >/dev/null
        return
    fi
    valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null \
        "$1" merge --force "$t.mtly" "$t.true.mtly" -o "$2" 2>&1 >/dev/null |
        awk '/ I +refs:/ { gsub(/,/, "", $4); i = $4 }
             / D1 +misses:/ { gsub(/,/, "", $4); d = $4 }
             / LLd +misses:/ { gsub(/,/, "", $4); l = $4 }
             END { if (i == "") exit 1; print i, d, l }' >"$2.counts"
}

if [ -n "$counted" ]; then
    printf '%-10s %12s %12s %8s %14s %8s %11s %8s %9s %8s\n' workload "base B" "this B" \
        "this/base" instructions this/base "D1 misses" this/base "LL misses" this/base
else
    printf '%-10s %12s %12s %8s\n' workload "base B" "this B" "this/base"
fi
for w in $list; do
    workload "$w"
    # shellcheck disable=SC2086
    env $envs "$BASE" record -q -o "$t.mtly" -- $cmd <"$inp" >/dev/null 2>&1 ||
        { echo "bench: recording $w failed" >&2; exit 1; }
    recode "$BASE" "$t.base.mtly" && recode "$M" "$t.this.mtly" ||
        { echo "bench: re-encoding $w failed" >&2; exit 1; }
    # The same events both ways, as this build reads them (but the first
    # line, which names the format's version).
    "$M" dump "$t.base.mtly" | tail -n +2 >"$t.base.txt" &&
        "$M" dump "$t.this.mtly" | tail -n +2 >"$t.this.txt" &&
        cmp -s "$t.base.txt" "$t.this.txt" ||
        { echo "bench: $w: the two traces' events differ" >&2; exit 1; }
    a=$(stat -c %s "$t.base.mtly") b=$(stat -c %s "$t.this.mtly")
    printf '%-10s %12s %12s %8s' "$w" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')"
    [ -z "$counted" ] || cat "$t.base.mtly.counts" "$t.this.mtly.counts" | tr '\n' ' ' |
        awk '{ printf " %14s %8.4f %11s %8.4f %9s %8.4f", $4, $4 / $1, $5, $5 / $2, $6, $6 / $3 }'
    echo
done
rm -f "$t".*mtly "$t".*.txt "$t".*.counts
