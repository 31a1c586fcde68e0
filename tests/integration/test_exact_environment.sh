# The program sees the environment it was started with: memtally's own
# variables (LD_PRELOAD, MEMTALLY_*) are gone by the time it runs, and a
# user's own LD_PRELOAD entries stay.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
names() { cut -d= -f1 "$1" | sort; }
env -u LD_PRELOAD /usr/bin/env > plain.txt || fail "env failed"
env -u LD_PRELOAD "$MEMTALLY_BIN" record -q -o e.mtly -- /usr/bin/env > seen.txt ||
    fail "record env failed"
names plain.txt > plain.names
names seen.txt > seen.names
cmp -s plain.names seen.names ||
    fail "the program's variables differ: $(diff plain.names seen.names | tr '\n' ' ')"
echo "ok: the same variables as without memtally"

expect_eq "env's own allocations recorded" true "$([ "$(info_get e.mtly allocations)" -gt 0 ] && echo true)"

lib=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/*/libm.so.6 2>/dev/null | head -n 1)
[ -n "$lib" ] || skip "no libm.so.6 to preload"
LD_PRELOAD=$lib "$MEMTALLY_BIN" record -q -o e2.mtly -- /usr/bin/env > seen2.txt ||
    fail "record env with a preload failed"
grep -q "^LD_PRELOAD=.*$lib" seen2.txt || fail "the user's own LD_PRELOAD entry was lost"
grep "^LD_PRELOAD=" seen2.txt | grep -q libmemtally && fail "our entry is still in LD_PRELOAD"
echo "ok: the user's preload kept, ours gone"
