#!/bin/sh
# The cost of sampled mode (memtally record --sample, 512 KiB by default)
# against the program run alone, interleaved over R repetitions (median),
# on the workloads of bench/run.sh; and full mode beside it for scale.
# Beside sampled mode, the floor it stands on: bench/interpose.c, a
# preloaded library that forwards the malloc family to glibc and does
# nothing else (what any LD_PRELOAD profiler pays to be called at all).
# Beside it, sampled mode as a program records by itself (own ovh: the
# library preloaded with MEMTALLY_SAMPLE_RATE, no memtally record), which is
# how a program started with MEMTALLY= or calling mtl_start records: with a
# writer thread of ours in the program; and as a followed process records
# (followed ovh: memtally record --sample --follow-exec -- env PROGRAM, the
# program exec'd by env, its trace written by memtally record).
# Beside them, the heap profilers of two other allocators, each against the
# same allocator without profiling (both replace glibc's malloc, so glibc
# alone is not their baseline):
#   jemalloc (libjemalloc2): MALLOC_CONF=prof:true,lg_prof_sample:19, one
#     profile written at exit (prof_final); samples every 512 KiB on average.
#   tcmalloc (gperftools): TCMALLOC_SAMPLE_PARAMETER=524288, the sampled heap
#     written at exit through MallocExtension::GetHeapSample (a small
#     preloaded library built here: needs g++ and libgoogle-perftools-dev);
#     and with -H, HEAPPROFILE, gperftools' heap profiler, which records
#     every call (it does not sample), for scale: one run per workload, as
#     it is 10 to 90 times slower (2 to 3 minutes more at full size).
# Each profiled run must leave its profile file, with the expected header,
# or the script says so; the files are deleted after each run.
# A peer that is not installed shows n/a.  JEMALLOC_LIB and TCMALLOC_LIB
# name the libraries if the compiler cannot find them.
#   sh bench/sampling.sh [-r N] [-q | -f] [-H] [-w LIST]
#     (-q: 1 repetition, small sizes; -f: full sizes, the inputs the peers
#     were measured on, as bench/run.sh -f: the fixed cost of a run's start
#     and end then weighs a tenth as much; -w: these workloads, default all
#     eight: storm1 storm2 sqlite python cc1 bintree perl gitlog)
# Target (docs/PERFORMANCE.md): sampled mode within 3% of the program alone.
reps=5 quick=0 full=0 heapprof=0
list="storm1 storm2 sqlite python cc1 bintree perl gitlog"
while [ $# -gt 0 ]; do
    case $1 in
    -r) reps=$2; shift 2 ;;
    -w) list=$2; shift 2 ;;
    -q) quick=1 reps=1; shift ;;
    -f) full=1; shift ;;
    -H) heapprof=1; shift ;;
    *) echo "usage: sh bench/sampling.sh [-r N] [-q | -f] [-H] [-w LIST]" >&2; exit 2 ;;
    esac
done
cd "$(dirname "$0")/.." || exit 1
. bench/common.inc
B=build/bench
OUT=$B/out
PROF=$OUT/prof
CC=${CC:-cc}
CXX=${CXX:-g++}
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
MEMTALLY_LIB=$(cd "$(dirname "$MEMTALLY_BIN")" && pwd)/libmemtally.so
if [ "$quick" = 1 ]; then bench_sizes quick; elif [ "$full" = 1 ]; then bench_sizes full; else bench_sizes default; fi
[ -x "$MEMTALLY_BIN" ] || { echo "bench: $MEMTALLY_BIN not found (run make)" >&2; exit 1; }
mkdir -p "$B" "$OUT" "$PROF" || exit 1
rm -f "$PROF"/*
bench_inputs || exit 1

# find_lib NAME: the full path of a shared library, or nothing.
find_lib() {
    f=$($CC -print-file-name="$1" 2>/dev/null)
    case $f in /*) [ -f "$f" ] && echo "$f" ;; esac
}
JE=${JEMALLOC_LIB:-$(find_lib libjemalloc.so.2)}
TC=${TCMALLOC_LIB:-$(find_lib libtcmalloc.so.4)}
JE_CONF="prof:true,lg_prof_sample:19,prof_final:true,prof_prefix:$PROF/jeprof"
TC_SAMPLE=524288

# The bare interposer (bench/interpose.c).
BARE=""
if $CC -O2 -shared -fPIC -o "$B/interpose.so" bench/interpose.c 2> "$OUT/interpose.err"; then
    BARE=$B/interpose.so
else
    echo "bench: cannot build bench/interpose.c:" >&2
    head -3 "$OUT/interpose.err" >&2
fi

# The tcmalloc sampled heap has no file of its own: this library, preloaded
# after tcmalloc, writes GetHeapSample() into $TCSAMPLE_OUT at exit.
TCDUMP=""
if [ -f "$TC" ]; then
    if "$CXX" -O2 -shared -fPIC -o "$B/tcdump.so" -x c++ - -x none "$TC" 2> "$OUT/tcdump.err" <<'EOF'
#include <gperftools/malloc_extension.h>
#include <stdio.h>
#include <stdlib.h>
#include <string>

__attribute__((destructor)) static void tcdump(void)
{
    const char *path = getenv("TCSAMPLE_OUT");
    if (path == NULL)
        return;
    std::string s;
    MallocExtension::instance()->GetHeapSample(&s);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fwrite(s.data(), 1, s.size(), f);
        fclose(f);
    }
}
EOF
    then
        TCDUMP=$B/tcdump.so
    else
        echo "bench: cannot build the tcmalloc sample writer (libgoogle-perftools-dev?):" >&2
        head -3 "$OUT/tcdump.err" >&2
    fi
fi

# profile_ok MODE: 0 when the run just made left its profile in $PROF with
# the header of its kind (heap_v2/524288 for the sampled ones); then clears
# $PROF.
profile_ok() {
    case $1 in
    own | followed) pat='^MEMTALLY' ;;
    jeprof) pat='^heap_v2/524288$' ;;
    tcsample) pat='^heap profile: .*@ heap_v2/524288$' ;;
    tcheap) pat='^heap profile: .*@ heapprofile$' ;;
    *) return 0 ;;
    esac
    ok=1
    for f in "$PROF"/*; do
        [ -f "$f" ] && head -1 "$f" | grep -q "$pat" && ok=0
    done
    rm -f "$PROF"/*
    return $ok
}

# available MODE: 0 when MODE can run here.
available() {
    case $1 in
    je | jeprof) [ -f "$JE" ] ;;
    tc) [ -f "$TC" ] ;;
    tcheap) [ -f "$TC" ] && [ "$heapprof" = 1 ] ;;
    tcsample) [ -n "$TCDUMP" ] ;;
    bare) [ -n "$BARE" ] ;;
    own | followed) [ -f "$MEMTALLY_LIB" ] ;;
    *) return 0 ;;
    esac
}

# run_once WORKLOAD MODE: prints the wall-clock microseconds of one run.
run_once() {
    workload "$1"
    pre=""
    case $2 in
    base) ;;
    sample) pre="$MEMTALLY_BIN record -q --sample -o $OUT/s.mtly --" ;;
    full) pre="$MEMTALLY_BIN record -q -o $OUT/f.mtly --" ;;
    own) envs="$envs LD_PRELOAD=$MEMTALLY_LIB MEMTALLY_SAMPLE_RATE=524288 MEMTALLY_PATTERN=$PROF/own.%p.mtly" ;;
    followed) pre="$MEMTALLY_BIN record -q --sample --follow-exec -o $PROF/fw.%p.mtly -- env" ;;
    bare) envs="$envs LD_PRELOAD=$BARE" ;;
    je) envs="$envs LD_PRELOAD=$JE" ;;
    jeprof) envs="$envs LD_PRELOAD=$JE MALLOC_CONF=$JE_CONF" ;;
    tc) envs="$envs LD_PRELOAD=$TC" ;;
    tcsample) envs="$envs LD_PRELOAD=$TC:$TCDUMP TCMALLOC_SAMPLE_PARAMETER=$TC_SAMPLE TCSAMPLE_OUT=$PROF/tc.heap" ;;
    tcheap) envs="$envs LD_PRELOAD=$TC HEAPPROFILE=$PROF/hp" ;;
    esac
    t0=$(date +%s%N)
    # shellcheck disable=SC2086  # cmd, envs and pre are word lists
    env $envs $pre $cmd < "$inp" > /dev/null 2>&1
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 ))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

modes=""
for m in base sample full je jeprof tc tcsample tcheap bare own followed; do
    available $m && modes="$modes $m"
done

# Check once, before timing, that each profiler is on, with its period: a short
# storm must leave a profile of the expected kind.
STORM_SAVE=$STORM_OPS STORM_OPS=20000
for m in jeprof tcsample tcheap; do
    case " $modes " in *" $m "*) ;; *) continue ;; esac
    run_once storm1 "$m" > /dev/null
    profile_ok "$m" || {
        echo "bench: $m left no profile in $PROF: not measured" >&2
        modes=$(echo "$modes" | sed "s/ $m\$//; s/ $m / /")
    }
done
STORM_OPS=$STORM_SAVE

nofile=0
: > "$OUT/medians"
for w in $list; do
    echo "bench: $w ($reps run(s) of:$modes)" >&2
    for m in base sample full je jeprof tc tcsample tcheap bare own followed; do : > "$OUT/t.$m"; done
    for i in $(seq "$reps"); do
        for m in $(rotate "$i" $modes); do # bench/common.inc
            [ "$m" = tcheap ] && [ "$i" -gt 1 ] && continue
            run_once "$w" "$m" >> "$OUT/t.$m"
            profile_ok "$m" || { nofile=$((nofile + 1)); echo "bench: $w $m: no profile written" >&2; }
        done
    done
    line=$w
    for m in base sample full je jeprof tc tcsample tcheap bare own followed; do
        if [ -s "$OUT/t.$m" ]; then line="$line $(median < "$OUT/t.$m")"; else line="$line -"; fi
    done
    echo "$line" >> "$OUT/medians"
done

echo "memtally sampled mode: median wall-clock seconds of $reps run(s), interleaved"
printf '%-10s %9s %9s %9s %10s %10s %10s %10s %12s\n' workload "base s" "sample s" "full s" \
    "sample ovh" "full ovh" "bare ovh" "own ovh" "followed ovh"
awk 'function o(v) { return v == "-" ? sprintf("%10s", "n/a") : sprintf("%9.1f%%", (v/$2 - 1) * 100) }
    { printf "%-10s %9.3f %9.3f %9.3f %9.1f%% %9.1f%% %s %s   %s\n", $1, $2/1e6, $3/1e6, $4/1e6,
           ($3/$2 - 1) * 100, ($4/$2 - 1) * 100, o($10), o($11), o($12) }' "$OUT/medians"
echo "bare ovh: bench/interpose.c preloaded, forwarding the malloc family to"
echo "  glibc and nothing else: the floor of sampled mode (of any preloaded profiler)."
echo "own ovh: sampled mode recording by itself, with a writer thread in the program"
echo "  (MEMTALLY=, mtl_start): glibc's malloc then takes its multi-threaded"
echo "  paths (arena lock, atomic bins) for the whole run."
echo "followed ovh: sampled mode in a process memtally record follows (exec'd by"
echo "  env under --follow-exec): its trace written by memtally record, no thread."
echo
echo "Other allocators' heap profilers, each against the same allocator alone"
echo "(same runs, interleaved with the above; n/a: not installed or not working)"
if [ "$heapprof" = 1 ]; then
    hp_head=$(printf ' %9s %8s' "+heapprof" "ovh")
else
    hp_head=""
fi
printf '%-10s %9s %9s %8s %9s %9s %8s%s\n' workload "jemalloc" "+prof" "ovh" \
    "tcmalloc" "+sample" "ovh" "$hp_head"
awk -v hp="$heapprof" '
     function s(v) { return v == "-" ? sprintf("%9s", "n/a") : sprintf("%9.3f", v / 1e6) }
     function o(p, b) {
         if (p == "-" || b == "-") return sprintf("%8s", "n/a")
         return sprintf("%7.1f%%", (p / b - 1) * 100)
     }
     { printf "%-10s %s %s %s %s %s %s", $1, s($5), s($6), o($6, $5), s($7), s($8), o($8, $7)
       if (hp == 1) printf " %s %s", s($9), o($9, $7)
       printf "\n" }' "$OUT/medians"
echo "jemalloc +prof: MALLOC_CONF=prof:true,lg_prof_sample:19 (sampled, 512 KiB)."
echo "tcmalloc +sample: TCMALLOC_SAMPLE_PARAMETER=$TC_SAMPLE (sampled, 512 KiB),"
echo "  the sampled heap written at exit."
[ "$heapprof" = 1 ] &&
    echo "tcmalloc +heapprof: HEAPPROFILE (every call, not sampled; 1 run, not a median)."
echo "ovh = time / base - 1, base being the same allocator without profiling."
echo "On a shared machine a difference of a few percent is within the noise:"
echo "read several runs (-r 9) before concluding."
[ "$nofile" = 0 ] || { echo "bench: $nofile profiled run(s) wrote no profile" >&2; exit 1; }
exit 0
