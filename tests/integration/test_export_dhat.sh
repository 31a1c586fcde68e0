#!/bin/sh
# memtally export --format dhat: DHAT's JSON, its figures checked exactly
# on a trace written by hand (every time and size known), then the file of
# tests/programs/golden_funcs.c opened in valgrind's own dh_view.html in
# headless Chromium (tests/browser/dhat.cjs), which must show its top
# allocation point.  Screenshot: build/test-logs/dhat-view.png.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN

# Stack a: blocks of 100 bytes at 10 and 20 us, freed at 50 and 90; a
# block of 30 at 40 us never freed.  Stack b: 1000 bytes at 60, freed at
# 70 (the peak: 1200 live at 60 us), and 500 at 80 never freed.  End: 100.
#   a: tb 230 tbk 3 tl (40 + 70 + 60) 170 mb 230 mbk 3 (at 40 us) gb 130
#      gbk 2 (at 60 us: the block of 20 us and that of 40) eb 30 ebk 1
#   b: tb 1500 tbk 2 tl (10 + 20) 30 mb 1000 mbk 1 gb 1000 gbk 1 eb 500 ebk 1
mktrace hand.mtly <<'EOT'
header program=/bin/hand cmdline=hand pid=9 mode=full
stack a alloc_a main
stack b alloc_b main
start 0 0 9 main
alloc 10 0 0x1000 100 a
alloc 20 0 0x2000 100 a
alloc 40 0 0x3000 30 a
free 50 0 0x1000
alloc 60 0 0x4000 1000 b
free 70 0 0x4000
alloc 80 0 0x5000 500 b
free 90 0 0x2000
end 100
EOT
"$M" export hand.mtly --format dhat -o hand.json || fail "export dhat failed"
expect_eq "header" '2 "heap" true false "µs" "s" "hand" 9 100 60' \
    "$(jq -c '[.dhatFileVersion, .mode, .bklt, .bkacc, .tu, .Mtu, .cmd, .pid, .te, .tg] | map(tojson) | join(" ")' -r hand.json)"
expect_eq "program points by bytes: b then a" \
    '[[1500,2,30,1000,1,1000,1,500,1],[230,3,170,230,3,130,2,30,1]]' \
    "$(jq -c '[.pps[] | [.tb, .tbk, .tl, .mb, .mbk, .gb, .gbk, .eb, .ebk]]' hand.json)"
expect_eq "frames: innermost first (custom ones without an address), ftbl[0] the root" '["[root]",["alloc_b","main"]]' \
    "$(jq -c '[.ftbl[0], [.pps[0].fs[] as $i | .ftbl[$i]]]' hand.json)"
# Filters apply: blocks of 500 bytes and more.
"$M" export hand.mtly --format dhat --size 500.. >big.json || fail "export dhat with a filter failed"
expect_eq "filtered: one point, b's two blocks" '[[1500,2]]' "$(jq -c '[.pps[] | [.tb, .tbk]]' big.json)"

# dh_view.html itself.
viewer=$(ls /usr/libexec/valgrind/dh_view.html /usr/lib/x86_64-linux-gnu/valgrind/dh_view.html 2>/dev/null | head -1)
[ -n "$viewer" ] || skip "valgrind's dh_view.html is not installed"
command -v node >/dev/null 2>&1 || skip "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser) || skip "chromium is not installed"
modules="$MEMTALLY_ROOT/build/npm/node_modules"
[ -d "$modules/playwright-core" ] || skip "playwright-core is not installed (scripts/install-deps.sh browser)"
record funcs.mtly "$TEST_PROGRAMS/golden_funcs" >/dev/null || fail "recording golden_funcs failed"
"$M" export funcs.mtly --format dhat -o "$PWD/funcs.json" || fail "export dhat of golden_funcs failed"
shots="$MEMTALLY_ROOT/build/test-logs"
mkdir -p "$shots"
cp "$MEMTALLY_ROOT/tests/browser/dhat.cjs" .
NODE_PATH="$modules" CHROMIUM="$chromium" timeout 120 node dhat.cjs "$viewer" "$PWD/funcs.json" \
    "$shots/dhat-view.png" || fail "dh_view.html checks failed (screenshot in $shots)"
echo "ok: export dhat"
