#!/bin/sh
# The side-by-side benchmark: each workload uninstrumented, under heaptrack
# and under memtally, interleaved round-robin (each repetition starting one
# tool further on), median wall-clock time of R repetitions, plus the size
# of each tool's trace per recorded event.
# See bench/README.md.
#
#   sh bench/run.sh [-r N] [-w NAME] [-q | -f]
#     -r N     repetitions per tool and workload (default 5; the median is shown)
#     -w LIST  run only these workloads (true storm1 storm2 sqlite python gcc cc1
#              bintree perl gitlog)
#     -q       quick smoke test: 1 repetition, small sizes
#     -f       full sizes: the inputs the peers were measured on (storm
#              6,000,000 operations a thread, sqlite3 200,000 rows, python3
#              100 rounds, 150 C functions), with -r 3 or fewer
#
# Environment: CC (compiler for the workloads, default cc), MEMTALLY_BIN (the
# memtally binary, default build/memtally), HEAPTRACK (default heaptrack).
set -u

usage() {
    sed -n '7,14p' "$0" | sed 's/^# \{0,1\}//'
}

reps=5
reps_set=0
only=""
quick=0
full=0
while getopts r:w:qfh opt; do
    case $opt in
    r) reps=$OPTARG; reps_set=1 ;;
    w) only=$OPTARG ;;
    q) quick=1 ;;
    f) full=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
case $reps in
'' | *[!0-9]* | 0) echo "bench: -r wants a positive number" >&2; exit 2 ;;
esac
[ "$quick" = 1 ] && [ "$reps_set" = 0 ] && reps=1

ALL="true storm1 storm2 sqlite python gcc cc1 bintree perl gitlog"
if [ -n "$only" ]; then
    for w in $only; do
        case " $ALL " in
        *" $w "*) ;;
        *) echo "bench: unknown workload '$w' (one of: $ALL)" >&2; exit 2 ;;
        esac
    done
    WORKLOADS=$only
else
    WORKLOADS=$ALL
fi

# Everything below runs from the repository root, with relative paths.
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc   # bench_inputs, workload, strip_tool_lines
B=build/bench
OUT=$B/out
CC=${CC:-cc}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
HEAPTRACK=${HEAPTRACK:-heaptrack}

# Workload sizes: quick, full or default.
if [ "$quick" = 1 ]; then bench_sizes quick; elif [ "$full" = 1 ]; then bench_sizes full; else bench_sizes default; fi

# Which tools are there.
have_ht=0
if command -v "$HEAPTRACK" >/dev/null 2>&1; then
    have_ht=1
else
    echo "bench: $HEAPTRACK not found: its columns show n/a" >&2
fi
have_mt=0
if [ -x "$MEMTALLY_BIN" ]; then
    have_mt=1
else
    echo "bench: $MEMTALLY_BIN not found (run make): its columns show n/a" >&2
fi
have_jq=0
command -v jq >/dev/null 2>&1 && have_jq=1

# ---------------------------------------------------------------- inputs

mkdir -p "$B" "$OUT" || exit 1
rm -rf "$OUT"/*
# memtally info counts each trace; should it keep an index of the trace (in
# MEMTALLY_INDEX_DIR, else the user's cache), that goes here, not into the
# user's cache, as the traces are deleted once counted.
MEMTALLY_INDEX_DIR=$(pwd)/$B/run-index
export MEMTALLY_INDEX_DIR
rm -rf "$MEMTALLY_INDEX_DIR"
mkdir -p "$MEMTALLY_INDEX_DIR" || exit 1

bench_inputs || exit 1

# ------------------------------------------------------------- workloads

describe() {
    case $1 in
    true)   echo "/bin/true: start-up cost only" ;;
    storm1) echo "storm, 1 thread, $STORM_OPS operations" ;;
    storm2) echo "storm, 2 threads, $STORM_OPS operations each" ;;
    sqlite) echo "sqlite3 :memory:, $SQL_ROWS inserts in a transaction, 2 indexes, 5 queries" ;;
    python) echo "/usr/bin/python3 bench/workloads/pyalloc.py $PY_ROUNDS, PYTHONMALLOC=malloc" ;;
    gcc)    echo "gcc -O2 -c of a generated $C_FUNCS-function C file (driver only traced)" ;;
    cc1)    echo "cc1 -O2 run directly on that file, preprocessed" ;;
    bintree) echo "binary trees of depth $BT_DEPTH, children made by two recursive functions" ;;
    perl)   echo "/usr/bin/perl bench/workloads/perlchurn.pl $PERL_ROUNDS (hashes and strings)" ;;
    gitlog) echo "git log -p on a generated repository of $GIT_COMMITS commits, to /dev/null" ;;
    esac
}

# run_once TOOL WORKLOAD: one timed run; appends "WORKLOAD TOOL MICROSECONDS" to
# $OUT/times, or "WORKLOAD TOOL fail" when it did not exit 0.
run_once() {
    tool=$1 w=$2
    workload "$w"
    case $tool in
    base)      set -- ;;
    heaptrack) set -- "$HEAPTRACK" -o "$OUT/ht.$w"; rm -f "$OUT/ht.$w".* ;;
    memtally)  set -- "$MEMTALLY_BIN" record -q -o "$OUT/mt.$w.mtly" --; rm -f "$OUT/mt.$w.mtly" ;;
    esac
    t0=$(date +%s%N)
    # $envs and $cmd are split on blanks on purpose.
    # shellcheck disable=SC2086
    env $envs "$@" $cmd <"$inp" >"$OUT/$w.$tool.out" 2>"$OUT/$w.$tool.err"
    rc=$?
    t1=$(date +%s%N)
    if [ "$rc" != 0 ]; then
        echo "$w $tool fail" >> "$OUT/times"
        echo "bench: $w under $tool exited with status $rc (see $OUT/$w.$tool.err)" >&2
        return
    fi
    echo "$w $tool $(( (t1 - t0) / 1000 ))" >> "$OUT/times"   # microseconds
    if [ "$tool" != base ] && [ -f "$OUT/$w.ref" ] && ! strip_tool_lines "$OUT/$w.$tool.out" | cmp -s - "$OUT/$w.ref"; then
        echo "bench: $w under $tool printed something else than without it" >&2
        echo "$w $tool stdout-differs" >> "$OUT/notes"
    fi
}

# ------------------------------------------------------------------ runs

tools="base"
[ "$have_ht" = 1 ] && tools="$tools heaptrack"
[ "$have_mt" = 1 ] && tools="$tools memtally"

: > "$OUT/times"
: > "$OUT/notes"
: > "$OUT/counts"
echo "bench: $reps repetition(s), tools: $tools" >&2

# A first warm-up of each tool, so that no first run pays for a cold cache.
for tool in $tools; do
    run_once "$tool" true
done
: > "$OUT/times"

for w in $WORKLOADS; do
    describe "$w" | sed "s/^/bench: $w: /" >&2
    # Untimed warm-up run, which also gives the reference stdout.
    workload "$w"
    # shellcheck disable=SC2086
    if ! env $envs $cmd <"$inp" >"$OUT/$w.base.out" 2>"$OUT/$w.base.err"; then
        echo "bench: $w fails even uninstrumented (see $OUT/$w.base.err)" >&2
        continue
    fi
    strip_tool_lines "$OUT/$w.base.out" > "$OUT/$w.ref"
    i=1
    while [ "$i" -le "$reps" ]; do
        for tool in $(rotate "$i" $tools); do
            run_once "$tool" "$w"
        done
        i=$((i + 1))
    done

    # Trace sizes and event counts, from the last repetition's traces.
    hte="" htb="" mte="" mtb=""
    htf=""
    for f in "$OUT/ht.$w".*; do
        [ -f "$f" ] && htf=$f
    done
    if [ -n "$htf" ]; then
        htb=$(wc -c < "$htf")
        case $htf in
        *.zst) dec="zstd -dc" ;;
        *.gz)  dec="gzip -dc" ;;
        *)     dec="cat" ;;
        esac
        # Interpreted heaptrack data: one "+ INFO" line per allocation and
        # one "- INFO" line per free.
        hte=$($dec < "$htf" | awk '/^\+ /{n++} /^- /{n++} END{print n + 0}')
    fi
    if [ -f "$OUT/mt.$w.mtly" ]; then
        mtb=$(wc -c < "$OUT/mt.$w.mtly")
        if [ "$have_jq" = 1 ]; then
            mte=$("$MEMTALLY_BIN" info --json "$OUT/mt.$w.mtly" | jq -r '.allocations + .frees')
        else
            mte=$("$MEMTALLY_BIN" info --json "$OUT/mt.$w.mtly" |
                sed -n 's/.*"allocations": *\([0-9]*\).*"frees": *\([0-9]*\).*/\1 \2/p' |
                awk '{print $1 + $2}')
        fi
    fi
    echo "$w ${hte:--} ${htb:--} ${mte:--} ${mtb:--}" >> "$OUT/counts"
    rm -f "$OUT/ht.$w".* "$OUT/mt.$w.mtly" "$OUT/medium.o" "$OUT/medium.s"
done

# ---------------------------------------------------------------- report

echo
echo "memtally benchmark: median wall-clock seconds of $reps run(s), interleaved"
echo "($(nproc 2>/dev/null || echo '?') CPUs; $(uname -sr); $("$HEAPTRACK" --version 2>/dev/null || echo 'heaptrack n/a'))"
echo
awk -v workloads="$WORKLOADS" -v counts="$OUT/counts" -v notes="$OUT/notes" '
function median(key,    n, i, j, t, a) {
    n = cnt[key]
    if (n == 0)
        return -1
    for (i = 1; i <= n; i++)
        a[i] = val[key, i]
    for (i = 2; i <= n; i++) {          # insertion sort, n is small
        t = a[i]
        for (j = i - 1; j >= 1 && a[j] > t; j--)
            a[j + 1] = a[j]
        a[j + 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function secs(x) { return x < 0 ? "n/a" : sprintf("%.3f", x / 1e6) }
function ovh(t, b) { return (t < 0 || b <= 0) ? "n/a" : sprintf("%.2f", t / b - 1) }
function rate(e, t) {
    if (e == "-" || t <= 0)
        return "n/a"
    e = e / (t / 1e6)
    return e >= 1e6 ? sprintf("%.2fM", e / 1e6) : e >= 1e3 ? sprintf("%.1fk", e / 1e3) : sprintf("%.0f", e)
}
FILENAME != counts && FILENAME != notes {
    if ($3 == "fail") { failed[$1, $2] = 1; next }
    k = $1 SUBSEP $2
    val[$1, $2, ++cnt[k]] = $3
    next
}
FILENAME == counts { hte[$1] = $2; htb[$1] = $3; mte[$1] = $4; mtb[$1] = $5; next }
FILENAME == notes { note[$1, $2] = 1; next }
END {
    nw = split(workloads, W, " ")
    printf "%-8s %9s %11s %10s %10s %10s %7s\n", "workload", "base s", "heaptrack s", "memtally s",
        "ht ovh", "mt ovh", "mt/ht"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        b = median(w SUBSEP "base"); h = median(w SUBSEP "heaptrack"); m = median(w SUBSEP "memtally")
        tb[w] = b; th[w] = h; tm[w] = m
        ho = ovh(h, b); mo = ovh(m, b)
        # A ratio to an overhead within the noise would be noise too.
        r = (ho == "n/a" || mo == "n/a" || h - b < 0.05 * b) ? "n/a" : sprintf("%.2f", (m - b) / (h - b))
        hs = ((w, "heaptrack") in failed) ? "fail" : secs(h)
        ms = ((w, "memtally") in failed) ? "fail" : secs(m)
        printf "%-8s %9s %11s %10s %10s %10s %7s\n", w, secs(b), hs, ms, ho, mo, r
    }
    if ((" " workloads " ") ~ / true / && tb["true"] >= 0) {
        b = tb["true"]; h = th["true"]; m = tm["true"]
        printf "\nstart-up cost (true): heaptrack %s ms, memtally %s ms\n",
            h < 0 ? "n/a" : sprintf("%+.1f", (h - b) / 1000), m < 0 ? "n/a" : sprintf("%+.1f", (m - b) / 1000)
    }
    printf "\n%-8s %10s %10s %11s %11s %8s %8s %9s %9s %9s\n", "workload", "ht events", "mt events",
        "ht bytes", "mt bytes", "ht B/ev", "mt B/ev", "ev/s base", "ev/s ht", "ev/s mt"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        if (!(w in hte))
            continue
        he = hte[w]; me = mte[w]
        ev = me != "-" ? me : he               # the program s own event rate
        hbe = (he != "-" && he > 0) ? sprintf("%.2f", htb[w] / he) : "n/a"
        mbe = (me != "-" && me > 0) ? sprintf("%.2f", mtb[w] / me) : "n/a"
        printf "%-8s %10s %10s %11s %11s %8s %8s %9s %9s %9s\n", w,
            he == "-" ? "n/a" : he, me == "-" ? "n/a" : me,
            htb[w] == "-" ? "n/a" : htb[w], mtb[w] == "-" ? "n/a" : mtb[w], hbe, mbe,
            rate(ev, tb[w]), rate(he, th[w]), rate(me, tm[w])
    }
    for (k in note) {
        split(k, p, SUBSEP)
        printf "\nwarning: %s under %s printed something else than without it\n", p[1], p[2]
    }
}' "$OUT/times" "$OUT/counts" "$OUT/notes"
echo
echo "ovh = t/base - 1; mt/ht = memtally overhead / heaptrack overhead (below 1: memtally is"
echo "cheaper; n/a when heaptrack's overhead is under 0.05, as the ratio would be noise)."
echo "events = allocations + frees, each tool counting its own trace (heaptrack: +/- lines"
echo "of its interpreted file; memtally: info --json). B/ev = trace file bytes / events."
echo "ev/s = events / median wall-clock seconds of that column's runs."
