#!/bin/sh
# The indexed-analysis benchmark: on one large trace (at least 100 million
# events), how long memtally takes to build the trace's index, and then how
# long `report --total` takes with each analysis filter (docs/ANALYSIS.md,
# "Filters"), `timeline` and a top-down `tree`, once the index exists.
# Target: every one of these under 1 s.
# See bench/README.md.
#
#   sh bench/index.sh [-r N] [-q] [-f]
#     -r N     repetitions of each command (default 3; the median is shown)
#     -q       quick smoke test: a small trace (about 3.6 million events), 1 repetition
#     -f       record the trace again, even if an earlier run left it
#
# Environment: CC (compiler for the workload, default cc), MEMTALLY_BIN (the
# memtally binary, default build/memtally), TIMEOUT (seconds one command may
# take before it counts as hung, default 600). Needs /usr/bin/time (Debian
# package time) and jq.
#
# The trace: storm (bench/workloads/storm.c), 2 threads of 28 million
# operations each, 100.8 million events. storm rather than binarytrees at a
# larger depth, though binarytrees records faster: its blocks have hundreds
# of sizes, lifetimes from microseconds to the whole run, two threads
# sharing the work and 16 functions in changing combinations on their
# stacks, so that every filter (--size, --lifetime, --thread, --inside)
# selects a real part of the blocks; binarytrees has one size and one
# thread. It records in about 70 s on a 2-core machine, into about 480 MB;
# the trace is kept in build/bench/indexed/ and reused by later runs.
set -u

usage() {
    sed -n '9,12p' "$0" | sed 's/^# \{0,1\}//'
}

reps=3
reps_set=0
quick=0
force=0
while getopts r:qfh opt; do
    case $opt in
    r) reps=$OPTARG; reps_set=1 ;;
    q) quick=1 ;;
    f) force=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
case $reps in
'' | *[!0-9]* | 0) echo "index: -r wants a positive number" >&2; exit 2 ;;
esac
[ "$quick" = 1 ] && [ "$reps_set" = 0 ] && reps=1

# Everything below runs from the repository root, with relative paths.
cd "$(dirname "$0")/.." || exit 1
B=build/bench
D=$B/indexed
CC=${CC:-cc}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
TIMEOUT=${TIMEOUT:-600}
TIME=/usr/bin/time

# Operations per storm thread: about 1.8 events each, so 28 million per
# thread make just over 100 million events.
if [ "$quick" = 1 ]; then
    OPS=1000000 MIN_EVENTS=1000000
else
    OPS=28000000 MIN_EVENTS=100000000
fi

if [ ! -x "$MEMTALLY_BIN" ]; then
    echo "index: $MEMTALLY_BIN not found (run make)" >&2
    exit 1
fi
if [ ! -x "$TIME" ]; then
    echo "index: $TIME not found (Debian package time; scripts/install-deps.sh bench)" >&2
    exit 1
fi
if ! command -v jq >/dev/null 2>&1; then
    echo "index: jq not found (scripts/install-deps.sh)" >&2
    exit 1
fi

mkdir -p "$D" || exit 1
T=$D/storm2-$OPS.mtly
# The index directory (absolute: the commands get it through the
# environment). memtally keeps the index of each trace it analyses in
# MEMTALLY_INDEX_DIR (else $XDG_CACHE_HOME/memtally, else ~/.cache/memtally).
IDX=$(pwd)/$D/cache
# Every memtally command of this script uses it, info included, so that
# none writes into the user's cache.
export MEMTALLY_INDEX_DIR="$IDX"
W=$D/work            # this run's outputs and timings
rm -rf "$W"
mkdir -p "$W" || exit 1
: > "$W/problems"

# fresh_index: an empty index directory.
fresh_index() {
    rm -rf "$IDX" && mkdir -p "$IDX"
}
fresh_index || exit 1

# Every query must find the index as the index build left it: one that
# wrote into the directory (a cache of its results, say) could make a later
# run of the same query look faster than a first one. snapshot_index keeps
# a copy of the index as built, and its list of files; restore_index, before
# each query (not timed), puts the copy back when a file was added, removed
# or written since, and notes the command that ran last ($last) in
# $W/restored.
snapshot_index() {
    rm -rf "$IDX.built" && cp -R "$IDX" "$IDX.built" &&
        (cd "$IDX" && find . | sort) > "$W/index.files" && touch "$W/index.stamp"
}
restore_index() {
    if [ -n "$(find "$IDX" -newer "$W/index.stamp" | head -n 1)" ] ||
        ! (cd "$IDX" && find . | sort) | cmp -s - "$W/index.files"; then
        rm -rf "$IDX" && cp -R "$IDX.built" "$IDX" && touch "$W/index.stamp" || exit 1
        echo "$last" >> "$W/restored"
    fi
}

# ---------------------------------------------------------------- trace

if [ "$force" = 1 ] || [ ! -f "$T" ]; then
    $CC -O2 -g -Wall -pthread -o "$B/storm" bench/workloads/storm.c || exit 1
    echo "index: recording $B/storm 2 $OPS into $T" >&2
    rm -f "$T" "$T.tmp"
    t0=$(date +%s%N)
    if ! "$MEMTALLY_BIN" record -q -o "$T.tmp" -- "$B/storm" 2 "$OPS" >/dev/null 2>"$W/record.err"; then
        echo "index: recording failed:" >&2
        cat "$W/record.err" >&2
        exit 1
    fi
    t1=$(date +%s%N)
    mv "$T.tmp" "$T" || exit 1
    echo "index: recorded in $(( (t1 - t0) / 1000000 )) ms" >&2
else
    echo "index: using the trace $T of an earlier run (-f records it again)" >&2
fi
if ! "$MEMTALLY_BIN" info --json "$T" > "$W/info.json" 2>"$W/info.err" ||
    ! jq -e '.complete' "$W/info.json" >/dev/null 2>&1; then
    echo "index: $T is unreadable or incomplete (run with -f to record it again):" >&2
    cat "$W/info.err" >&2
    exit 1
fi
info() { jq -r ".$1" "$W/info.json"; }
DUR=$(info duration_us)
EVENTS=$(( $(info allocations) + $(info frees) ))
ALLOCS=$(info allocations)
if [ "$EVENTS" -lt "$MIN_EVENTS" ]; then
    echo "index: $T has only $EVENTS events (fewer than $MIN_EVENTS)" >&2
    exit 1
fi

# ---------------------------------------------------------------- timing

# timed TIMES OUT CMD...: runs CMD once under /usr/bin/time with stdout to
# OUT; appends "SECONDS KB" to
# the file TIMES, or "fail" / "hang" (and a line in $W/problems).
timed() {
    tf=$1 o=$2
    shift 2
    "$TIME" -f '%e %M' -o "$W/time" timeout "$TIMEOUT" "$@" <"/dev/null" >"$o" 2>"$W/err"
    rc=$?
    if [ "$rc" = 0 ]; then
        tail -n 1 "$W/time" >> "$tf"
        return 0
    fi
    if [ "$rc" = 124 ]; then
        echo hang >> "$tf"
        echo "'$*' did not finish within $TIMEOUT s" >> "$W/problems"
    else
        echo fail >> "$tf"
        echo "'$*' exited with status $rc: $(head -c 300 "$W/err" | tr '\n' ' ')" >> "$W/problems"
    fi
    return 1
}

# summary FILE: "MEDIAN_SECONDS MEDIAN_MIB" of the timings in FILE, or
# "fail"/"hang" when a run failed.
summary() {
    if grep -q -e '^fail' -e '^hang' "$1"; then
        grep -m 1 -e '^fail' -e '^hang' "$1"
        return
    fi
    sort -n "$1" | awk '{ t[NR] = $1 } END { printf "%.3f ", NR % 2 ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2 }'
    sort -n -k 2 "$1" | awk '{ m[NR] = $2 } END { printf "%.1f\n", (NR % 2 ? m[(NR + 1) / 2] : (m[NR / 2] + m[NR / 2 + 1]) / 2) / 1024 }'
}

# ---------------------------------------------------------------- index

# Building the index: `memtally index TRACE` (prints the index's path and
# size), each repetition in an empty index directory; the last one's index
# stays for the queries. A memtally without that command says "unknown
# command": then the first `report --total` in an empty directory is timed
# instead, which is what a user without the index command waits for.
have_index=1
if "$MEMTALLY_BIN" index --help >/dev/null 2>"$W/err" || ! grep -q 'unknown command' "$W/err"; then
    echo "index: building the index, $reps time(s)" >&2
else
    have_index=0
    echo "index: $MEMTALLY_BIN has no index command: timing the first report --total instead, $reps time(s)" >&2
fi
: > "$W/build.t"
i=1
while [ "$i" -le "$reps" ]; do
    fresh_index || exit 1
    if [ "$have_index" = 1 ]; then
        timed "$W/build.t" "$W/index.out" "$MEMTALLY_BIN" index "$T"
    else
        timed "$W/build.t" /dev/null "$MEMTALLY_BIN" report --total "$T"
    fi
    i=$((i + 1))
done
BUILD=$(summary "$W/build.t")
IDX_KB=$(du -sk "$IDX" | awk '{ print $1 }')
IDX_FILES=$(find "$IDX" -type f | wc -l)
snapshot_index || exit 1
: > "$W/restored"

# ---------------------------------------------------------------- filters

# Filter values, from the trace itself: time windows as fractions of its
# duration; the size below which half of the calls fall (from the
# histogram); a lifetime of the time 1000 events take on average (storm's
# short ring holds a block for a few dozen operations, its long ring for
# thousands); the function whose inclusive calls are nearest to half of all
# (a plain C name, so that the pattern matches it alone); the thread that
# allocated most. The queries that pick them are not timed.
us() { echo "$(( DUR * $1 / 100 ))us"; }
last="the queries picking the filter values"
SIZE_MAX=$("$MEMTALLY_BIN" histogram --json "$T" |
    jq -r '.calls as $n | reduce .buckets[] as $b ({c: 0, m: null};
        .c += $b.calls | if .m == null and .c * 2 >= $n then .m = $b.max else . end) | .m')
LIFE=$(( DUR * 1000 / EVENTS ))
[ "$LIFE" -gt 0 ] || LIFE=1
INSIDE=$("$MEMTALLY_BIN" report --total --inclusive --json "$T" |
    jq -r '.total.calls as $n | [.total.rows[] | select(.function | test("^[A-Za-z_][A-Za-z0-9_]*$"))
        | {f: .function, d: ((.calls / $n - 0.5) | fabs)}] | sort_by(.d) | .[0].f // empty')
TID=$("$MEMTALLY_BIN" report --json "$T" |
    jq -r '[.threads[]] | sort_by(-.calls) | .[0].tid // empty')
if [ -z "$SIZE_MAX" ] || [ -z "$INSIDE" ] || [ -z "$TID" ]; then
    echo "index: cannot pick the filter values (size '$SIZE_MAX', function '$INSIDE', thread '$TID')" >&2
    exit 1
fi

# The rows: a name, then the command's arguments before the trace.
cat > "$W/rows" <<EOF
report|report --total
allocated-between|report --total --allocated-between $(us 40),$(us 50)
live-at|report --total --live-at $(us 50)
live-between|report --total --live-between $(us 45),$(us 55)
freed-between|report --total --freed-between $(us 20),$(us 30)
never-freed|report --total --never-freed
size|report --total --size ..$SIZE_MAX
lifetime|report --total --lifetime ${LIFE}us..
inside|report --total --inside $INSIDE
not-inside|report --total --not-inside $INSIDE
thread|report --total --thread $TID
timeline|timeline
tree|tree
EOF

# Untimed first pass: the share of all allocations each filter selects
# (total.calls of the JSON report), and a warm-up of the page cache.
echo "index: $(wc -l < "$W/rows") commands, first pass (untimed)" >&2
: > "$W/selects"
while IFS='|' read -r name args; do
    case $name in
    timeline | tree) echo "$name - -" >> "$W/selects"; continue ;;
    esac
    restore_index
    last="$name (first pass)"
    # $args is split on blanks on purpose.
    # shellcheck disable=SC2086
    if timeout "$TIMEOUT" "$MEMTALLY_BIN" $args --json "$T" > "$W/$name.json" 2>"$W/$name.err" &&
        calls=$(jq -r '.total.calls' "$W/$name.json" 2>/dev/null) && [ -n "$calls" ] && [ "$calls" != null ]; then
        echo "$name $calls $(awk -v c="$calls" -v n="$ALLOCS" 'BEGIN {
            p = 100 * c / n; printf (p > 0 && p < 1 ? "%.3f%%" : "%.1f%%"), p }')" >> "$W/selects"
    else
        echo "$name ? ?" >> "$W/selects"
    fi
done < "$W/rows"

# Timed: R rounds of every row, interleaved.
i=1
while [ "$i" -le "$reps" ]; do
    echo "index: round $i of $reps" >&2
    while IFS='|' read -r name args; do
        restore_index
        last=$name
        # shellcheck disable=SC2086
        timed "$W/$name.t" /dev/null "$MEMTALLY_BIN" $args "$T"
    done < "$W/rows"
    i=$((i + 1))
done
restore_index
rm -rf "$IDX.built"

# ---------------------------------------------------------------- report

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
echo
echo "memtally indexed analysis: median of $reps run(s); wall-clock seconds and max RSS (/usr/bin/time %e %M)"
echo "($(nproc 2>/dev/null || echo '?') CPUs; $(uname -sr); $("$MEMTALLY_BIN" --version 2>/dev/null))"
echo
echo "trace: $T: $EVENTS events ($ALLOCS allocations), $(info unique_stacks) unique stacks,"
echo "  $(info threads) threads, $(awk -v d="$DUR" 'BEGIN { printf "%.1f", d / 1e6 }') s recorded, $(mib "$(( $(wc -c < "$T") / 1024 ))") MiB on disk"
if [ "$have_index" = 1 ]; then
    echo "index build: memtally index TRACE: $(echo "$BUILD" | awk 'NF == 2 { printf "%s s, %s MiB max RSS", $1, $2; next } { print }')"
    sed 's/^/  it printed: /' "$W/index.out" | head -n 3
else
    echo "index build: this memtally has no index command; timed instead: the first report --total"
    echo "  in an empty index directory: $(echo "$BUILD" | awk 'NF == 2 { printf "%s s, %s MiB max RSS", $1, $2; next } { print }')"
fi
if [ "$IDX_FILES" = 0 ]; then
    echo "index on disk: nothing written to MEMTALLY_INDEX_DIR (no index: the rows below read the trace)"
else
    echo "index on disk: $(mib "$IDX_KB") MiB in $IDX_FILES file(s) (du -sk MEMTALLY_INDEX_DIR), trace $(mib "$(( $(wc -c < "$T") / 1024 ))") MiB"
fi
echo
printf '%-18s %10s %8s %8s %8s  %s\n' "filter" "calls" "selects" "wall s" "MiB" "verdict (target < 1 s)"
while IFS='|' read -r name args; do
    calls=$(awk -v n="$name" '$1 == n { print $2 }' "$W/selects")
    sel=$(awk -v n="$name" '$1 == n { print $3 }' "$W/selects")
    # shellcheck disable=SC2046  # two words, or one
    set -- $(summary "$W/$name.t")
    if [ $# = 2 ]; then
        verdict=$(awk -v t="$1" 'BEGIN { print (t < 1) ? "ok" : "SLOW" }')
        printf '%-18s %10s %8s %8s %8s  %s\n' "$name" "$calls" "$sel" "$1" "$2" "$verdict"
    else
        printf '%-18s %10s %8s %8s %8s  %s\n' "$name" "$calls" "$sel" "$1" "-" "$1"
    fi
done < "$W/rows"
echo
echo "Commands (TRACE last; MEMTALLY_INDEX_DIR=$IDX, holding the index built above):"
sed 's/^\([^|]*\)|/  \1: memtally /' "$W/rows"
if [ -s "$W/restored" ]; then
    echo "note: these wrote into the index directory after it was built; it was put back as built"
    echo "  after each ($(wc -l < "$W/restored") time(s), not timed): $(sort -u "$W/restored" | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $0 }')"
fi
echo "calls = allocations that pass the filter (total calls of report --json); selects = their"
echo "share of all allocations."
echo "wall s = median wall-clock seconds, MiB = median max RSS. ok: under 1 s, SLOW: not."
if [ -s "$W/problems" ]; then
    echo
    echo "PROBLEMS:"
    sed 's/^/  /' "$W/problems"
    exit 1
fi
exit 0
