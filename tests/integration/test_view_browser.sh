#!/bin/sh
# The viewer in headless Chromium (tests/browser/view.cjs, through
# playwright-core): numbers in the table and the flame graph, filters typed
# and dragged, zoom, direction, a row's callers, the --html file.  Needs
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
start_view view t.mtly
trap 'kill $view_pid 2>/dev/null' EXIT
url=$view_url
shots="$MEMTALLY_ROOT/build/test-logs"
mkdir -p "$shots"
cp "$MEMTALLY_ROOT/tests/browser/view.cjs" .
NODE_PATH="$modules" CHROMIUM="$chromium" timeout 120 node view.cjs "$url" "$PWD/t.html" "$shots" ||
    fail "browser checks failed (screenshots in $shots)"
