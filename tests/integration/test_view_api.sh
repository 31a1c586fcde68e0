#!/bin/sh
# memtally view's HTTP API and its safety rules, on tests/programs/
# golden_phases.c (truth at the top of that file): phase_one allocates
# 1024 x 1 KiB at about 0 ms, phase_two 384 x 2 KiB at about 200 ms; 5
# blocks (7168 bytes) are never freed.  Every answer must be what the
# analysis commands say, and a bad request gets a 4xx while the server
# goes on serving.  Then --html: one file with the data built in.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command view
command -v curl >/dev/null 2>&1 || skip "curl is not installed"

record t.mtly "$TEST_PROGRAMS/golden_phases" >/dev/null || fail "record failed"

start_view view t.mtly
pid=$view_pid url=$view_url
trap 'kill $pid $pid2 2>/dev/null' EXIT
pid2=
case "$url" in http://127.0.0.1:*/) echo "ok: serving on loopback at $url" ;;
    *) fail "not on 127.0.0.1: $url" ;; esac

# get NAME PATH: the answer to PATH in NAME.json, its status in $status.
get() {
    status=$(curl -s -o "$1.json" -w '%{http_code}' "$url${2#/}")
}
expect_status() {
    expect_eq "$1: status" "$2" "$status"
}

get info /api/info
expect_status info 200
expect_jq "info: allocations, bytes" info.json '[.allocations, .bytes_allocated]' '[1408,1835008]'
expect_jq "info: peak" info.json '.peak_live_bytes' 1310720

get r /api/report
expect_status report 200
expect_jq "report: total" r.json '[.total.calls, .total.bytes]' '[1408,1835008]'
expect_jq "report: rows" r.json '[.total.rows[] | [fname, .calls, .bytes]]' \
    '[["phase_one",1024,1048576],["phase_two",384,786432]]'
# the same answer as the command
"$MEMTALLY_BIN" report --total --json t.mtly >cli.json || fail "report --total failed"
cmp -s cli.json r.json || fail "the API's report differs from report --total --json"
echo "ok: /api/report is report --total --json"

# The server answers every view of a filter from one pass over the index
# (the engine's digest); the commands do not: the same answers.
same_as_cli() { # WHAT PATH ARGS...: the answer to PATH is what memtally ARGS prints
    what=$1 path=$2; shift 2
    get api "$path"
    "$MEMTALLY_BIN" "$@" t.mtly >cli.json || fail "$what: memtally $* failed"
    cmp -s cli.json api.json || fail "$what: the API's answer differs from memtally $*"
    echo "ok: $what is memtally $*"
}
same_as_cli "timeline, size 2K" '/api/timeline?points=40&size=2K..2K' timeline --json --points 40 --size 2K..2K
same_as_cli "timeline, live at 300 ms" '/api/timeline?points=40&live-at=300ms' timeline --json --points 40 --live-at 300ms
same_as_cli "report, live at 300 ms" '/api/report?live-at=300ms' report --total --json --live-at 300ms
same_as_cli "tree down, live at 300 ms" '/api/tree?dir=down&min-percent=1&live-at=300ms' tree --json --others --min-percent 1 --live-at 300ms
same_as_cli "tree of sites, never freed" '/api/tree?min-percent=0.01&never-freed=1' tree --json --others --sites --min-percent 0.01 --never-freed
same_as_cli "tree without others" '/api/tree?min-percent=50&others=0' tree --json --sites --min-percent 50

get r '/api/report?size=2K..2K'
expect_jq "report size=2K..2K" r.json '[.total.rows[] | [fname, .calls, .bytes]]' '[["phase_two",384,786432]]'
get r '/api/report?allocated-between=100ms,300ms'
expect_jq "report allocated-between=100ms,300ms" r.json '[.total.calls, .total.bytes]' '[384,786432]'
get r '/api/report?live-at=300ms'
expect_jq "report live-at=300ms" r.json '[.total.calls, .total.bytes]' '[896,1310720]'
get r '/api/report?never-freed=1'
expect_jq "report never-freed=1" r.json '[.total.calls, .total.bytes]' '[5,7168]'
get r '/api/report?lifetime=300ms..&inside=phase_one'
expect_jq "report lifetime=300ms.. inside=phase_one" r.json '[.total.calls, .total.bytes]' '[512,524288]'
get r '/api/report?by=thread'
expect_jq "report by=thread" r.json '[(.total.rows | length), .total.rows[0].bytes]' '[1,1835008]'
get r '/api/report?by=type'
expect_jq "report by=type (no tags)" r.json '[.total.rows[] | [.type, .bytes]]' '[["(untagged)",1835008]]'
get r '/api/report?sort=calls&top=1'
expect_jq "report sort=calls top=1" r.json '[.total.rows[] | fname]' '["phase_one"]'

get tr '/api/tree'
expect_status tree 200
expect_jq "tree (sites first): root's children" tr.json '[.root.children[] | [fname, .calls, .bytes]]' \
    '[["phase_one",1024,1048576],["phase_two",384,786432]]'
expect_jq "tree (sites first): phase_one's caller" tr.json '[.root.children[0].children[] | fname]' '["main"]'
get tr '/api/tree?dir=down'
expect_jq "tree dir=down: the first level" tr.json '[.root.children[] | fname] | map(select(. != "main")) | length' 1
expect_true "tree dir=down: main holds everything under it" tr.json \
    '[.. | objects | select(has("children") and fname == "main") | .bytes] | max == 1835008'
get tr '/api/tree?callers=phase_two&max-depth=1'
expect_jq "tree callers=phase_two" tr.json '[.root.children[] | [fname, .bytes]]' '[["main",786432]]'

get lt '/api/lifetimes?columns=50'
expect_status lifetimes 200
expect_jq "lifetimes: totals" lt.json '[.calls, .bytes]' '[1408,1835008]'
expect_jq "lifetimes: the cells add up" lt.json \
    '[([.rows[].bytes[]] | add) + ([.live.bytes[]] | add), ([.rows[].calls[]] | add) + ([.live.calls[]] | add)]' \
    '[1835008,1408]'
expect_jq "lifetimes: still live" lt.json '[([.live.bytes[]] | add), ([.live.calls[]] | add)]' '[7168,5]'
# phase_one's odd blocks lived from 0 to about 400 ms: in [2^18, 2^19) us
expect_true "lifetimes: 300 ms and more" lt.json \
    '[.rows[] | select(.min_us >= 262144) | .bytes[]] | add == (512 * 1024 - 3 * 1024)'
expect_true "lifetimes: columns cover the trace" lt.json '.columns <= 50 and .columns * .width_us >= 400000'

get tl '/api/timeline?points=20&inside=phase_two'
expect_jq "timeline inside=phase_two: points, allocated" tl.json \
    '[(.points | length), ([.points[].alloc_bytes] | add)]' '[20,786432]'

# Mistakes: a 4xx that says why, and the server goes on.
get e '/api/report?size=huge'
expect_status "bad size" 400
expect_true "bad size: says why" e.json '.error | test("size")'
get e '/api/report?bogus=1'
expect_status "unknown argument" 400
get e '/api/tree?min-percent=0'
expect_status "min-percent 0 (unbounded)" 400
get e '/api/timeline?points=1000000'
expect_status "too many points" 400
get e '/api/nothing'
expect_status "unknown path" 404
get e '/../../etc/passwd'
expect_status "a path escape" 404
get e '/%2e%2e/%2e%2e/etc/passwd'
expect_status "an encoded path escape" 404
status=$(curl -s -o e.json -w '%{http_code}' -X POST -d 'x=1' "${url}api/info")
expect_status "POST" 405
status=$(curl -s -o e.json -w '%{http_code}' -X DELETE "${url}api/info")
expect_status "DELETE" 405
status=$(curl -s -o e.json -w '%{http_code}' -H 'Host: evil.example.com' "${url}api/info")
expect_status "a Host that is not loopback (DNS rebinding)" 403
long=$(head -c 100000 /dev/zero | tr '\0' a)
status=$(curl -s -o e.json -w '%{http_code}' "${url}api/report?inside=$long")
case "$status" in 4*) echo "ok: a 100 KB URL: $status" ;; *) fail "a 100 KB URL: status $status" ;; esac
printf 'GARBAGE\r\n\r\n' | timeout 5 curl -s telnet://"$(echo "$url" | sed 's|http://||; s|/$||')" >/dev/null 2>&1
get info /api/info
expect_status "still serving after all that" 200
get page /
expect_status "the page" 200
grep -q 'memtally view' page.json || fail "the page is not the viewer"
echo "ok: the page"

# Without an index (no digest: the lifetimes from a stream of the trace,
# blocks one by one): the same lifetimes.
export MEMTALLY_INDEX=off
start_view view2 t.mtly
unset MEMTALLY_INDEX
pid2=$view_pid url2=$view_url
"$MEMTALLY_BIN" index t.mtly >/dev/null 2>&1 || fail "MEMTALLY_INDEX is still off"
for q in 'columns=50' 'columns=7&size=2K..2K' 'columns=100&live-at=300ms'; do
    curl -s -o l1.json "${url}api/lifetimes?$q"
    curl -s -o l2.json "${url2}api/lifetimes?$q"
    cmp -s l1.json l2.json || fail "lifetimes?$q: with an index and without differ"
    echo "ok: lifetimes?$q: with an index and without alike"
done
kill -INT $pid2
wait $pid2

kill -INT $pid
wait $pid
expect_eq "view exits 0 on Ctrl-C" 0 $?
trap - EXIT

# --html: one file, the views without filters built in.
"$MEMTALLY_BIN" view --html out.html t.mtly >html.out 2>html.err || fail "view --html failed: $(cat html.err)"
grep -q 'window.MEMTALLY_DATA = {"info": ' out.html || fail "--html: no data in the page"
size=$(wc -c <out.html)
[ "$size" -lt 3000000 ] || fail "--html: $size bytes"
echo "ok: --html wrote $size bytes"
sed -n 's|.*window.MEMTALLY_DATA = \(.*\);</script>.*|\1|p' out.html >data.json
expect_jq "--html data: report rows" data.json '[.report.total.rows[] | [fname, .bytes]]' \
    '[["phase_one",1048576],["phase_two",786432]]'
expect_jq "--html data: views" data.json 'keys' '["down","info","lifetimes","report","sites","threads","timeline","types"]'

# A trace with type tags (ALLOC_EX records; tests/tools/mktrace writes one):
# the breakdown by type, served and built in.
mktrace typed.mtly <<'EOF'
header program=/bin/typed pid=7 start=1000000 mode=full depth=32
stack a make_node main
stack b make_buffer main
start 0 0 7 main
alloc 10 0 0x1000 48 a Node
alloc 11 0 0x1100 48 a Node
alloc 13 0 0x2000 4096 b Buffer
alloc 14 0 0x3000 10 b
end 100
EOF
"$MEMTALLY_BIN" view --html typed.html typed.mtly >/dev/null || fail "view --html of typed.mtly failed"
sed -n 's|.*window.MEMTALLY_DATA = \(.*\);</script>.*|\1|p' typed.html >typed.json
expect_jq "--html data: tagged allocations" typed.json '.info.tagged_allocations' 3
expect_jq "--html data: types" typed.json '[.types.total.rows[] | [.type, .calls, .bytes]]' \
    '[["Buffer",1,4096],["Node",2,96],["(untagged)",1,10]]'
# The type filter, as every filter, through the API too.
start_view view3 typed.mtly
pid3=$view_pid url=$view_url
trap 'kill $pid3 2>/dev/null' EXIT
get r '/api/report?type=Node'
expect_status "report?type=Node" 200
"$MEMTALLY_BIN" report --total --json --type Node typed.mtly >cli.json || fail "report --type Node failed"
cmp -s cli.json r.json || fail "the API's report?type=Node differs from report --total --json --type Node"
expect_jq "report?type=Node" r.json '[.total.calls, .total.bytes]' '[2,96]'
kill -INT $pid3
wait $pid3
trap - EXIT

# Bad input: one line, non-zero.
expect_error "view of no trace" 1 view no-such.mtly
expect_error "view --port x" 2 view --port x t.mtly
expect_error "view --host bogus" 1 view --host bogus t.mtly
expect_error "view --html with --port" 2 view --html x.html --port 8000 t.mtly
expect_error "view --json" 2 view --json t.mtly
expect_error "view --sysroot that is not a directory" 2 view --sysroot /no/such/dir --html y.html t.mtly
mkdir -p dbg
"$MEMTALLY_BIN" view --debug-dir dbg --html z.html t.mtly >/dev/null || fail "view --debug-dir DIR --html failed"
echo "ok: view takes --debug-dir"
expect_error "view --html to a directory that is not there" 1 view --html /no/such/dir/x.html t.mtly
