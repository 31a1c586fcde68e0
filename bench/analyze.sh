#!/bin/sh
# The analysis benchmark: memtally's analysis commands against heaptrack_print
# on traces of the same workloads, wall-clock time and peak memory (max RSS)
# of each, and how both grow when a trace has ten times as many events.
# memtally's commands run cold (no index of the trace yet: each run starts
# with none in MEMTALLY_INDEX_DIR) and, for report and peak, warm as well
# (run again with the index the cold run left).  The decompressed copies of
# debug files that the cache also keeps (docs/ANALYSIS.md, "The index") are
# kept between cold runs, as on any machine after its first analysis;
# report also runs "first", with nothing cached at all.
# See bench/README.md.
#
#   sh bench/analyze.sh [-r N] [-w NAME] [-q] [-k]
#     -r N     repetitions per command and workload (default 3; the median is shown)
#     -w NAME  run only this workload (storm storm10x sqlite python cc1 bintree
#              perl gitlog)
#     -q       quick smoke test: 1 repetition, small sizes
#     -k       keep the traces in build/bench/analyze/
#
# Environment: CC (compiler for the workloads, default cc), MEMTALLY_BIN (the
# memtally binary, default build/memtally), HEAPTRACK (default heaptrack),
# HEAPTRACK_PRINT (default heaptrack_print), TIMEOUT (seconds one analysis
# may take before it counts as hung, default 300).
set -u

usage() {
    sed -n '10,15p' "$0" | sed 's/^# \{0,1\}//'
}

reps=3
reps_set=0
only=""
quick=0
keep=0
while getopts r:w:qkh opt; do
    case $opt in
    r) reps=$OPTARG; reps_set=1 ;;
    w) only=$OPTARG ;;
    q) quick=1 ;;
    k) keep=1 ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done
case $reps in
'' | *[!0-9]* | 0) echo "analyze: -r wants a positive number" >&2; exit 2 ;;
esac
[ "$quick" = 1 ] && [ "$reps_set" = 0 ] && reps=1

ALL="storm storm10x sqlite python cc1 bintree perl gitlog"
if [ -n "$only" ]; then
    case " $ALL " in
    *" $only "*) ;;
    *) echo "analyze: unknown workload '$only' (one of: $ALL)" >&2; exit 2 ;;
    esac
    WORKLOADS=$only
else
    WORKLOADS=$ALL
fi

# Everything below runs from the repository root, with relative paths.
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc   # bench_inputs, workload, strip_tool_lines
B=build/bench
A=$B/analyze
OUT=$A              # where cc1 writes its assembly
CC=${CC:-cc}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
HEAPTRACK=${HEAPTRACK:-heaptrack}
HEAPTRACK_PRINT=${HEAPTRACK_PRINT:-heaptrack_print}
TIMEOUT=${TIMEOUT:-300}
TIME=/usr/bin/time

# Workload sizes: default and quick. storm runs at STORM_N and at ten times
# that (storm10x), one thread; the workloads of run.sh otherwise.
if [ "$quick" = 1 ]; then
    STORM_N=50000 SQL_ROWS=5000 PY_ROUNDS=4 C_FUNCS=10
    BT_DEPTH=12 PERL_ROUNDS=20000 GIT_COMMITS=300
else
    STORM_N=200000 SQL_ROWS=50000 PY_ROUNDS=40 C_FUNCS=60
    BT_DEPTH=17 PERL_ROUNDS=200000 GIT_COMMITS=3000
fi

# The tools.
if [ ! -x "$MEMTALLY_BIN" ]; then
    echo "analyze: $MEMTALLY_BIN not found (run make)" >&2
    exit 1
fi
have_ht=1
for t in "$HEAPTRACK" "$HEAPTRACK_PRINT"; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "analyze: $t not found: heaptrack's columns show n/a" >&2
        have_ht=0
    fi
done
have_time=1
if [ ! -x "$TIME" ]; then
    echo "analyze: $TIME not found (Debian package time): max RSS shows n/a" >&2
    have_time=0
fi
have_jq=1
if ! command -v jq >/dev/null 2>&1; then
    echo "analyze: jq not found: the output checks are skipped" >&2
    have_jq=0
fi

# ---------------------------------------------------------------- inputs

rm -rf "$A"
mkdir -p "$B" "$A" || exit 1
bench_inputs || exit 1

# The index directory of memtally's runs (absolute: the commands get it
# through the environment). memtally keeps an index of each trace it has
# analysed in MEMTALLY_INDEX_DIR (else $XDG_CACHE_HOME/memtally, else
# ~/.cache/memtally); a run in an empty one is cold.
IDX=$(pwd)/$A/index
# Every memtally command of this script uses it, info included, so that
# none writes into the user's cache.
export MEMTALLY_INDEX_DIR="$IDX"

# fresh_index: no index in the index directory, for a cold run; the debug
# copies in it stay.  empty_cache: nothing at all in it.
fresh_index() {
    mkdir -p "$IDX" && rm -f "$IDX"/*.mtlx
}
empty_cache() {
    rm -rf "$IDX" && mkdir -p "$IDX"
}

# Sets cmd, envs and inp (see workload in bench/common.inc) for workload $1.
analysis_workload() {
    case $1 in
    storm)    STORM_OPS=$STORM_N; workload storm1 ;;
    storm10x) STORM_OPS=$((STORM_N * 10)); workload storm1 ;;
    *)        workload "$1" ;;
    esac
}

describe() {
    case $1 in
    storm)    echo "storm, 1 thread, $STORM_N operations" ;;
    storm10x) echo "storm, 1 thread, $((STORM_N * 10)) operations" ;;
    sqlite)   echo "sqlite3 :memory:, $SQL_ROWS inserts in a transaction, 2 indexes, 5 queries" ;;
    python)   echo "/usr/bin/python3 bench/workloads/pyalloc.py $PY_ROUNDS, PYTHONMALLOC=malloc" ;;
    cc1)      echo "cc1 -O2 of a generated $C_FUNCS-function C file, preprocessed" ;;
    bintree)  echo "binary trees of depth $BT_DEPTH, children made by two recursive functions" ;;
    perl)     echo "/usr/bin/perl bench/workloads/perlchurn.pl $PERL_ROUNDS (hashes and strings)" ;;
    gitlog)   echo "git log -p on a generated repository of $GIT_COMMITS commits, to /dev/null" ;;
    esac
}

# The commands timed: heaptrack_print with its default report (the lists of
# most calls, peak consumers and most temporary allocations, and totals),
# and memtally's report --total, peak, leaks and temporary, each cold;
# reportw and peakw are report and peak again, warm: each runs right after
# its cold run, in the index directory that one left.
JOBS="htprint report0 report reportw peak peakw leaks temporary"
[ "$have_ht" = 1 ] || JOBS="report0 report reportw peak peakw leaks temporary"

# Sets the positional parameters to job $1's command line on workload $2.
job_cmd() {
    case $1 in
    htprint)   set -- "$HEAPTRACK_PRINT" -f "$htf" ;;
    report0 | report | reportw) set -- "$MEMTALLY_BIN" report --total "$A/mt.$2.mtly" ;;
    peak | peakw)     set -- "$MEMTALLY_BIN" peak "$A/mt.$2.mtly" ;;
    leaks)     set -- "$MEMTALLY_BIN" leaks "$A/mt.$2.mtly" ;;
    temporary) set -- "$MEMTALLY_BIN" temporary "$A/mt.$2.mtly" ;;
    esac
    jcmd="$*"
}

# run_job JOB WORKLOAD: one timed run, stdout to /dev/null; appends
# "WORKLOAD JOB MICROSECONDS KB CPU" to $A/times (wall-clock, max RSS, user +
# system CPU microseconds; - - without /usr/bin/time), or "WORKLOAD JOB
# fail|hang" and a line in $A/problems. A cold job starts with an empty
# index directory (not timed); a warm one (reportw, peakw) keeps it.
run_job() {
    job=$1 w=$2
    case $job in
    reportw | peakw) ;;
    report0) empty_cache || exit 1 ;;
    *) fresh_index || exit 1 ;;
    esac
    job_cmd "$job" "$w"
    # shellcheck disable=SC2086
    set -- $jcmd
    if [ "$have_time" = 1 ]; then
        set -- "$TIME" -f '%M %U %S' -o "$A/rss" timeout "$TIMEOUT" "$@"
    else
        set -- timeout "$TIMEOUT" "$@"
    fi
    rm -f "$A/rss"
    t0=$(date +%s%N)
    "$@" >/dev/null 2>"$A/$w.$job.err"
    rc=$?
    t1=$(date +%s%N)
    if [ "$rc" = 124 ]; then
        echo "$w $job hang" >> "$A/times"
        echo "$w: '$jcmd' did not finish within $TIMEOUT s" >> "$A/problems"
        return
    fi
    if [ "$rc" != 0 ]; then
        echo "$w $job fail" >> "$A/times"
        echo "$w: '$jcmd' exited with status $rc ($(head -c 300 "$A/$w.$job.err" | tr '\n' ' '))" >> "$A/problems"
        return
    fi
    # KB of max RSS and CPU microseconds (user + system), or - -.
    rss="- -"
    [ "$have_time" = 1 ] && rss=$(tail -n 1 "$A/rss" | awk '{ printf "%d %d", $1, ($2 + $3) * 1e6 }')
    echo "$w $job $(( (t1 - t0) / 1000 )) $rss" >> "$A/times"
}

# json_run WORKLOAD OUT CMD...: runs CMD (in the current index directory)
# with stdout to OUT; a failure, a hang or output that is not a JSON object
# is a line in $A/problems. Returns non-zero then.
json_run() {
    w=$1 o=$2
    shift 2
    timeout "$TIMEOUT" "$@" > "$o" 2> "$o.err"
    rc=$?
    if [ "$rc" = 124 ]; then
        echo "$w: '$*' did not finish within $TIMEOUT s" >> "$A/problems"
    elif [ "$rc" != 0 ]; then
        echo "$w: '$*' exited with status $rc: $(head -c 300 "$o.err" | tr '\n' ' ')" >> "$A/problems"
    elif ! jq -e 'type == "object"' "$o" >/dev/null 2>&1; then
        echo "$w: '$*' printed something that is not a JSON object" >> "$A/problems"
    else
        return 0
    fi
    return 1
}

# Cross-checks of memtally's output on workload $1 against the totals of
# `memtally info --json` (which reads the same trace without the analysis
# code): any difference is a line in $A/problems. Each command runs cold;
# report and peak run again warm, and must print the same JSON.
check_json() {
    w=$1 t=$A/mt.$1.mtly
    fresh_index || exit 1
    "$MEMTALLY_BIN" info --json "$t" > "$A/$w.info.json" 2>/dev/null || return
    for c in report peak leaks temporary; do
        set -- "$MEMTALLY_BIN" "$c" --json
        [ "$c" = report ] && set -- "$@" --total
        fresh_index || exit 1
        json_run "$w" "$A/$w.$c.json" "$@" "$t" || continue
        case $c in
        report | peak)
            json_run "$w" "$A/$w.$c.warm.json" "$@" "$t" &&
                ! cmp -s "$A/$w.$c.json" "$A/$w.$c.warm.json" &&
                echo "$w: '$* $t' printed other JSON warm (with the index of a first run) than cold (see $A/$w.$c.json, $A/$w.$c.warm.json)" >> "$A/problems"
            ;;
        esac
    done
    # Each test prints "OK" or "WHAT: expected E, got G".
    jq -n -r --arg w "$w" --arg t "$t" --arg mt "$MEMTALLY_BIN" \
        --slurpfile i "$A/$w.info.json" --slurpfile r "$A/$w.report.json" \
        --slurpfile p "$A/$w.peak.json" --slurpfile l "$A/$w.leaks.json" \
        --slurpfile x "$A/$w.temporary.json" '
        def chk(what; e; g): if e == g then empty else
            "\($w): \(what): expected \(e), got \(g) (trace \($t))" end;
        $i[0] as $i | $r[0] as $r | $p[0] as $p | $l[0] as $l | $x[0] as $x |
        chk("\($mt) report --total: total calls vs info allocations"; $i.allocations; $r.total.calls),
        chk("\($mt) report --total: total bytes vs info bytes_allocated"; $i.bytes_allocated; $r.total.bytes),
        chk("\($mt) report --total: sum of rows calls vs total calls"; $r.total.calls; ([($r.total.rows // [])[].calls] | add // 0)),
        chk("\($mt) report --total: sum of rows bytes vs total bytes"; $r.total.bytes; ([($r.total.rows // [])[].bytes] | add // 0)),
        chk("\($mt) peak: peak_bytes vs info peak_live_bytes"; $i.peak_live_bytes; $p.peak_bytes),
        chk("\($mt) peak: peak_time_us vs info peak_time_us"; $i.peak_time_us; $p.peak_time_us),
        chk("\($mt) peak: sum of rows bytes vs peak_bytes"; $p.peak_bytes; ([($p.rows // [])[].bytes] | add // 0)),
        chk("\($mt) peak: sum of rows blocks vs blocks"; $p.blocks; ([($p.rows // [])[].blocks] | add // 0)),
        chk("\($mt) leaks: leaked+suppressed bytes vs info live_bytes_at_end"; $i.live_bytes_at_end; $l.leaked_bytes + $l.suppressed_bytes),
        chk("\($mt) leaks: leaked+suppressed blocks vs info live_blocks_at_end"; $i.live_blocks_at_end; $l.leaked_blocks + $l.suppressed_blocks),
        chk("\($mt) leaks: sum of rows bytes vs leaked_bytes"; $l.leaked_bytes; ([($l.rows // [])[].bytes] | add // 0)),
        chk("\($mt) temporary: calls vs info allocations"; $i.allocations; $x.calls),
        chk("\($mt) temporary: sum of rows temporary_calls vs temporary_calls"; $x.temporary_calls; ([($x.rows // [])[].temporary_calls] | add // 0))
    ' >> "$A/problems" 2>&1
    # Facts for the tables.
    jq -r --arg w "$w" --slurpfile p "$A/$w.peak.json" '
        "\($w) events \(.allocations + .frees)",
        "\($w) stacks \(.unique_stacks)",
        "\($w) mtcalls \(.allocations)",
        "\($w) mtpeak \(.peak_live_bytes)",
        "\($w) mtleak \(.live_bytes_at_end)",
        "\($w) mttrace \(.events)",
        "\($w) peakblocks \($p[0].blocks // "n/a")"' "$A/$w.info.json" >> "$A/facts"
}

# --------------------------------------------------------------- runs

: > "$A/times"
: > "$A/facts"
: > "$A/problems"
echo "analyze: $reps repetition(s); commands: $JOBS" >&2

for w in $WORKLOADS; do
    describe "$w" | sed "s/^/analyze: $w: /" >&2
    analysis_workload "$w"
    # Record once with each tool.
    rm -f "$A/ht.$w".* "$A/mt.$w.mtly"
    fresh_index || exit 1
    # $envs and $cmd are split on blanks on purpose.
    # shellcheck disable=SC2086
    if ! env $envs "$MEMTALLY_BIN" record -q -o "$A/mt.$w.mtly" -- $cmd <"$inp" >"$A/$w.rec-mt.out" 2>"$A/$w.rec-mt.err"; then
        echo "analyze: $w: recording with memtally failed (see $A/$w.rec-mt.err)" >&2
        echo "$w: 'memtally record -- $cmd' failed" >> "$A/problems"
        continue
    fi
    htf=""
    if [ "$have_ht" = 1 ]; then
        # shellcheck disable=SC2086
        if env $envs "$HEAPTRACK" -o "$A/ht.$w" $cmd <"$inp" >"$A/$w.rec-ht.out" 2>"$A/$w.rec-ht.err"; then
            for f in "$A/ht.$w".*; do
                [ -f "$f" ] && htf=$f
            done
        fi
        if [ -z "$htf" ]; then
            echo "analyze: $w: recording with heaptrack failed (see $A/$w.rec-ht.err)" >&2
        else
            case $htf in
            *.zst) dec="zstd -dc" ;;
            *.gz)  dec="gzip -dc" ;;
            *)     dec="cat" ;;
            esac
            # As in run.sh: the + and - lines of heaptrack's interpreted trace.
            echo "$w htevents $($dec < "$htf" | awk '/^\+ /{n++} /^- /{n++} END{print n + 0}')" >> "$A/facts"
        fi
    fi
    rm -f "$A/medium.s"

    # Untimed: the JSON cross-checks, one text output of each command kept
    # in $A/WORKLOAD.JOB.txt, and a warm-up of the page cache.
    [ "$have_jq" = 1 ] && check_json "$w"
    for job in $JOBS; do
        [ "$job" = htprint ] && [ -z "$htf" ] && continue
        case $job in report0 | reportw | peakw) continue ;; esac
        fresh_index || exit 1
        job_cmd "$job" "$w"
        # shellcheck disable=SC2086
        timeout "$TIMEOUT" $jcmd > "$A/$w.$job.txt" 2>/dev/null
    done
    if [ -n "$htf" ]; then
        # heaptrack_print's own totals, for the side-by-side sanity table.
        sed -n -e 's/^calls to allocation functions: \([0-9]*\).*/htcalls \1/p' \
            -e 's/^peak heap memory consumption: \(.*\)/htpeak \1/p' \
            -e 's/^total memory leaked: \(.*\)/htleak \1/p' "$A/$w.htprint.txt" |
            sed "s/^/$w /" >> "$A/facts"
    fi

    i=1
    while [ "$i" -le "$reps" ]; do
        for job in $JOBS; do
            [ "$job" = htprint ] && [ -z "$htf" ] && continue
            run_job "$job" "$w"
        done
        i=$((i + 1))
    done
    [ "$keep" = 1 ] || rm -f "$A/ht.$w".* "$A/mt.$w.mtly"
    rm -rf "$IDX"
done

# ---------------------------------------------------------------- report

echo
echo "memtally analysis benchmark: median of $reps run(s), interleaved; wall-clock seconds, max RSS in MiB"
echo "($(nproc 2>/dev/null || echo '?') CPUs; $(uname -sr); $("$HEAPTRACK" --version 2>/dev/null || echo 'heaptrack n/a'))"
echo
awk -v workloads="$WORKLOADS" -v facts="$A/facts" -v stormn="$STORM_N" '
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
function T(w, j) { return median(w SUBSEP j SUBSEP "t") }
function R(w, j) { return median(w SUBSEP j SUBSEP "m") }
function C(w, j) { return ((w, j) in bad) ? -1 : median(w SUBSEP j SUBSEP "c") }
function secs(w, j,    x) {
    if ((w, j) in bad) return bad[w, j]
    x = T(w, j)
    return x < 0 ? "n/a" : sprintf("%.3f", x / 1e6)
}
function mib(w, j,    x) {
    if ((w, j) in bad) return bad[w, j]
    x = R(w, j)
    return x < 0 ? "n/a" : sprintf("%.1f", x / 1024)
}
# Sum of the medians of the jobs in list, -1 if one is missing.
function tsum(w, list,    n, i, s, x, J) {
    n = split(list, J, " ")
    for (i = 1; i <= n; i++) {
        x = T(w, J[i])
        if (x < 0 || (w, J[i]) in bad) return -1
        s += x
    }
    return s
}
function rmax(w, list,    n, i, s, x, J) {
    n = split(list, J, " ")
    s = -1
    for (i = 1; i <= n; i++) {
        x = R(w, J[i])
        if ((w, J[i]) in bad) return -1
        if (x > s) s = x
    }
    return s
}
function ratio(a, b) { return (a < 0 || b <= 0) ? "n/a" : sprintf("%.2f", a / b) }
function fs(x) { return x < 0 ? "n/a" : sprintf("%.3f", x / 1e6) }
function fm(x) { return x < 0 ? "n/a" : sprintf("%.1f", x / 1024) }
function f(w, k) { return (w SUBSEP k) in fact ? fact[w, k] : "n/a" }
FILENAME == facts { k = $1; fk = $2; $1 = ""; $2 = ""; sub(/^  /, ""); fact[k, fk] = $0; next }
{
    if ($3 == "fail" || $3 == "hang") { bad[$1, $2] = $3; next }
    val[$1, $2, "t", ++cnt[$1 SUBSEP $2 SUBSEP "t"]] = $3
    if ($4 != "-") {
        val[$1, $2, "m", ++cnt[$1 SUBSEP $2 SUBSEP "m"]] = $4
        val[$1, $2, "c", ++cnt[$1 SUBSEP $2 SUBSEP "c"]] = $5
    }
}
END {
    nw = split(workloads, W, " ")
    RPL = "report peak leaks"
    # The headline: heaptrack_print against a cold report --total.
    printf "%-9s %9s %8s %10s %9s %9s %7s %7s %8s %8s %8s %8s %8s\n", "workload", "events", "stacks",
        "ht_print s", "report s", "ht/report", "(cpu)", "ht MiB", "rep MiB", "warm s", "warm MiB",
        "first s", "ht/first"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        h = T(w, "htprint"); if ((w, "htprint") in bad) h = -1
        r = T(w, "report");  if ((w, "report") in bad) r = -1
        r0 = T(w, "report0"); if ((w, "report0") in bad) r0 = -1
        printf "%-9s %9s %8s %10s %9s %9s %7s %7s %8s %8s %8s %8s %8s\n", w, f(w, "events"), f(w, "stacks"),
            secs(w, "htprint"), secs(w, "report"), ratio(h, r), ratio(C(w, "htprint"), C(w, "report")),
            mib(w, "htprint"), mib(w, "report"), secs(w, "reportw"), mib(w, "reportw"),
            secs(w, "report0"), ratio(h, r0)
    }
    printf "\n%-9s %8s %9s %8s %8s %11s %10s %10s %10s\n", "workload", "peak s", "pk warm s",
        "leaks s", "temp s", "rep+pk+lk s", "ht/(r+p+l)", "rep+pk+tmp", "ht/(r+p+t)"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        h = T(w, "htprint"); if ((w, "htprint") in bad) h = -1
        s = tsum(w, RPL)
        t = tsum(w, "report peak temporary")
        printf "%-9s %8s %9s %8s %8s %11s %10s %10s %10s\n", w, secs(w, "peak"), secs(w, "peakw"),
            secs(w, "leaks"), secs(w, "temporary"), fs(s), ratio(h, s), fs(t), ratio(h, t)
    }
    printf "\n%-9s %9s %11s %9s %9s %9s\n", "workload", "peak MiB", "pk warm MiB", "leaks MiB",
        "temp MiB", "r+p+l MiB"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        printf "%-9s %9s %11s %9s %9s %9s\n", w, mib(w, "peak"), mib(w, "peakw"), mib(w, "leaks"),
            mib(w, "temporary"), fm(rmax(w, RPL))
    }
    printf "\n%-9s %9s %9s %9s %11s %11s %11s %9s %9s\n", "workload", "ht events", "mt events",
        "ht calls", "mt calls", "ht peak", "mt peak B", "ht leaked", "mt leak B"
    for (i = 1; i <= nw; i++) {
        w = W[i]
        printf "%-9s %9s %9s %9s %11s %11s %11s %9s %9s\n", w, f(w, "htevents"), f(w, "events"),
            f(w, "htcalls"), f(w, "mtcalls"), f(w, "htpeak"), f(w, "mtpeak"), f(w, "htleak"), f(w, "mtleak")
    }
    if ((" " workloads " ") ~ / storm / && (" " workloads " ") ~ / storm10x /) {
        a = "storm"; b = "storm10x"
        printf "\nscaling: storm, 1 thread, %d and %d operations: events %s -> %s (x%s), unique stacks %s -> %s, live blocks at peak %s -> %s\n",
            stormn, stormn * 10, f(a, "events"), f(b, "events"),
            (f(a, "events") + 0 > 0 ? sprintf("%.2f", f(b, "events") / f(a, "events")) : "n/a"),
            f(a, "stacks"), f(b, "stacks"), f(a, "peakblocks"), f(b, "peakblocks")
        printf "%-18s %9s %9s %7s %9s %9s %7s\n", "command", "s @N", "s @10N", "x time", "MiB @N", "MiB @10N", "x RSS"
        nj = split("htprint report peak leaks temporary", J, " ")
        for (j = 1; j <= nj; j++) {
            name = J[j] == "htprint" ? "heaptrack_print" : "memtally " J[j]
            ta = T(a, J[j]); tb = T(b, J[j]); ma = R(a, J[j]); mb = R(b, J[j])
            if ((a, J[j]) in bad || (b, J[j]) in bad) { ta = tb = ma = mb = -1 }
            printf "%-18s %9s %9s %7s %9s %9s %7s\n", name, secs(a, J[j]), secs(b, J[j]), ratio(tb, ta),
                mib(a, J[j]), mib(b, J[j]), ratio(mb, ma)
        }
    }
}' "$A/facts" "$A/times"
echo
echo "ht = heaptrack_print -f TRACE.zst (its default report); report = memtally report --total;"
echo "peak, leaks, temp(orary) = memtally COMMAND TRACE; stdout to /dev/null. memtally runs cold"
echo "(no index of the trace yet; the decompressed debug copies of earlier runs kept); warm s,"
echo "pk warm s: the same command run again right after, with the index the cold run left; first s:"
echo "report --total with nothing cached at all (no index, no debug copies). ht/report: the"
echo "headline ratio, heaptrack_print's time over cold report --total's (target: 5 or more;"
echo "(cpu): the same with user + system CPU time, steadier on a busy machine); ht/(r+p+l) and"
echo "ht/(r+p+t): over the sum of cold report, peak and leaks (or temporary, like heaptrack_print's"
echo "three lists). stacks = unique stacks of memtally's trace. MiB = max RSS (/usr/bin/time %M);"
echo "r+p+l MiB = the largest of the three. events = allocations + frees (mt: info --json; ht: +/-"
echo "lines of its trace); calls, peak, leaked: each tool's own totals (heaptrack_print's summary"
echo "lines, memtally info --json)."
if [ -s "$A/problems" ]; then
    echo
    echo "PROBLEMS:"
    sed 's/^/  /' "$A/problems"
fi
