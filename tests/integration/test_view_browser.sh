#!/bin/sh
# The viewer in headless Chromium (tests/browser/view.cjs, through
# playwright-core): numbers in the table and the flame graph, filters typed
# and dragged, zoom, direction, a row's callers, the --html file, the types
# of a trace with type tags.  Needs
# chromium, node and playwright-core (make check installs them:
# scripts/install-deps.sh browser).  Screenshots: build/test-logs/view-*.png.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command view
command -v node >/dev/null 2>&1 || skip "node is not installed"
chromium=$(command -v chromium || command -v chromium-browser) || skip "chromium is not installed"
modules="$MEMTALLY_ROOT/build/npm/node_modules"
[ -d "$modules/playwright-core" ] || skip "playwright-core is not installed (scripts/install-deps.sh browser)"

record t.mtly "$TEST_PROGRAMS/golden_phases" >/dev/null || fail "record failed"
"$MEMTALLY_BIN" view --html "$PWD/t.html" t.mtly >/dev/null || fail "view --html failed"
# A trace with type tags (written by tests/tools/mktrace): the Types table;
# and three sites of 4 bytes each, under 0.1% of its 4 218: "(others)".
mktrace typed.mtly <<'EOF'
header program=/bin/typed pid=7 start=1000000 mode=full depth=32
stack a make_node main
stack b make_buffer main
stack t1 tiny1 main
stack t2 tiny2 main
stack t3 tiny3 main
start 0 0 7 main
alloc 10 0 0x1000 48 a Node
alloc 11 0 0x1100 48 a Node
alloc 13 0 0x2000 4096 b Buffer
alloc 14 0 0x3000 10 b
alloc 15 0 0x4000 4 t1
alloc 16 0 0x4100 4 t2
alloc 17 0 0x4200 4 t3
end 100
EOF
"$MEMTALLY_BIN" view --html "$PWD/typed.html" typed.mtly >/dev/null || fail "view --html of typed.mtly failed"
# A Boehm GC program's heap, when libgc-dev is there (make check installs it).
gc_html=
if [ -f /usr/include/gc/gc.h ]; then
    cc -O0 -g -o gc_boehm "$MEMTALLY_ROOT/tests/api/gc_boehm.c" -lgc || fail "cannot build gc_boehm"
    record gc.mtly ./gc_boehm >/dev/null || fail "recording gc_boehm failed"
    "$MEMTALLY_BIN" view --heap gc --html "$PWD/gc.html" gc.mtly >/dev/null ||
        fail "view --heap gc --html failed"
    gc_html="$PWD/gc.html"
fi
# A run inside one time step (record --time-resolution longer than it).
"$MEMTALLY_BIN" record -q --time-resolution=1s -o steps.mtly -- "$TEST_PROGRAMS/golden_phases" \
    >/dev/null || fail "record --time-resolution failed"
"$MEMTALLY_BIN" view --html "$PWD/steps.html" steps.mtly >/dev/null || fail "view --html of steps.mtly failed"
steps_html="$PWD/steps.html"
if [ "$(info_get steps.mtly duration_us)" != 0 ]; then
    echo "note: golden_phases took over a second here; the one-step page is not checked"
    steps_html=
fi
start_view view t.mtly
trap 'kill $view_pid 2>/dev/null' EXIT
url=$view_url
shots="$MEMTALLY_ROOT/build/test-logs"
mkdir -p "$shots"
cp "$MEMTALLY_ROOT/tests/browser/view.cjs" .
STEPS_HTML_FILE="$steps_html" NODE_PATH="$modules" CHROMIUM="$chromium" timeout 120 node view.cjs "$url" "$PWD/t.html" "$PWD/typed.html" "$shots" $gc_html ||
    fail "browser checks failed (screenshots in $shots)"
