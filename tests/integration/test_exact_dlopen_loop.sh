#!/bin/sh
# A library loaded, called and unloaded again and again (300 times) keeps
# its name: every one of plugin_run's allocations (3 a time, 4888 bytes) is
# named, none left as a raw address, although most rounds of the recorder
# see the library loaded and unloaded within them (the module's load is
# written before the stack nodes into it, its unload after).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

${CC:-cc} -x c -shared -fPIC -o exact_plugin.so \
    "$MEMTALLY_ROOT/tests/programs/exact_plugin.c.in" || fail "cannot build the plugin"
same_run 0 "$TEST_PROGRAMS/exact_dlopen" ./exact_plugin.so 300
"$MEMTALLY_BIN" report --total --json trace.mtly >r.json || fail "report failed"
expect_eq "plugin_run's calls and bytes" "[900,1466400]" \
    "$(jq -c '[.total.rows[] | select(.function == "plugin_run")] | [.[0].calls, .[0].bytes]' r.json)"
expect_eq "rows named by a raw address" 0 \
    "$(jq '[.total.rows[] | select(.function | startswith("0x"))] | length' r.json)"
