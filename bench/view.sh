#!/bin/sh
# The viewer benchmark: on the indexed trace of bench/index.sh (100 million
# events), how long `memtally view` takes to serve, how long the page's
# first load takes (every request the page makes when it opens), and how
# long each filter change takes (every request the page makes when a
# filter is applied), all through the HTTP API with curl.  The server
# answers one request at a time, so a page's wait is the sum of its
# requests.  Target: each under 1 s on a 2-core machine.
# See bench/README.md.
#
#   sh bench/view.sh [-r N]
#     -r N     repetitions of each (default 3; the median is shown)
#
# Needs the trace and index bench/index.sh leaves (run it first), curl and
# jq.
set -u

reps=3
while getopts r:h opt; do
    case $opt in
    r) reps=$OPTARG ;;
    h) sed -n '11,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) sed -n '11,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
case $reps in
'' | *[!0-9]* | 0) echo "view: -r wants a positive number" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.." || exit 1
MEMTALLY_BIN=${MEMTALLY_BIN:-build/memtally}
D=build/bench/indexed
T=$D/storm2-28000000.mtly
export MEMTALLY_INDEX_DIR="$(pwd)/$D/cache"
[ -f "$T" ] || { echo "view: $T not found: run sh bench/index.sh first" >&2; exit 1; }
for c in curl jq; do
    command -v $c >/dev/null 2>&1 || { echo "view: $c not found" >&2; exit 1; }
done
pid=""
W=$(mktemp -d /tmp/memtally-view-bench.XXXXXX)
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$W"' EXIT

now() { date +%s.%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# The seconds the requests of one page state take, one after the other
# (as the server answers them): QUERY is the filters' query string.
page() {
    q=$1 total=0
    for path in "info" "timeline" "timeline?$q" "report?$q" "report?by=thread&$q" \
                "tree?dir=sites&$q" "lifetimes?$q"; do
        case "$path" in info | timeline) [ -n "$q" ] && continue ;; esac
        s=$(curl -s -o "$W/answer.json" -w '%{http_code} %{time_total}' "$url/api/$path")
        code=${s% *}
        [ "$code" = 200 ] || { echo "view: /api/$path: status $code: $(cat "$W/answer.json")" >&2; exit 1; }
        total=$(echo "$total + ${s#* }" | bc)
    done
    echo "$total"
}

# The server, and the seconds until it prints its address.
t0=$(now)
"$MEMTALLY_BIN" view "$T" >"$W/view.out" 2>"$W/view.err" &
pid=$!
while ! grep -q 'http://' "$W/view.out" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "view: the server exited: $(cat "$W/view.err")" >&2; exit 1; }
    sleep 0.02
done
ready=$(echo "$(now) - $t0" | bc)
url=$(grep -o 'http://[^ ]*' "$W/view.out" | sed 's|/$||')
info=$(curl -s "$url/api/info")
dur=$(echo "$info" | jq .duration_us)
tid=$(curl -s "$url/api/report?by=thread" | jq '.total.rows[0].tid')
pct() { echo "$dur * $1 / 100" | bc; }

echo "memtally viewer benchmark: median of $reps run(s); seconds through the HTTP API"
echo "trace: $T: $(echo "$info" | jq .events) events, $(echo "$info" | jq .allocations) allocations"
echo "server ready (index loaded): $ready s"
echo
# The page states, each a name and its query (- for none).
cat >"$W/states" <<EOF
first-paint -
allocated-between allocated-between=$(pct 40)us,$(pct 50)us
live-at live-at=$(pct 50)us
live-between live-between=$(pct 45)us,$(pct 55)us
freed-between freed-between=$(pct 20)us,$(pct 30)us
never-freed never-freed=1
size size=..255
lifetime lifetime=292us..
inside inside=merge_sets
not-inside not-inside=merge_sets
thread thread=$tid
EOF
# Every state in turn, then again: the server keeps the views of the last
# filter only, so each state's first request pays for its pass over the
# index, as a page's does.
r=0
while [ $r -lt "$reps" ]; do
    while read -r name q; do
        [ "$q" = "-" ] && q=""
        page "$q" >>"$W/t.$name"
    done <"$W/states"
    r=$((r + 1))
done
printf '%-18s %8s  %s\n' "page state" "wait s" "verdict (target < 1 s)"
while read -r name q; do
    t=$(median <"$W/t.$name")
    verdict=ok
    [ "$(echo "$t < 1" | bc)" = 1 ] || verdict=SLOW
    printf '%-18s %8.3f  %s\n' "$name" "$t" "$verdict"
done <"$W/states"
echo
echo "first-paint: info, timeline, report, report by thread, the flame graph"
echo "(sites first) and lifetimes, unfiltered; a filter: the filtered timeline,"
echo "report, report by thread, flame graph and lifetimes (what the page asks"
echo "for when a filter is applied). MEMTALLY_INDEX_DIR=$MEMTALLY_INDEX_DIR."
