# The in-program API (include/memtally.h) on examples/api_demo.c, whose
# allocations are known: profile_call's tables (plain, following threads,
# with a timeout), a trace with a pause, a trace reset midway, busy when
# already recording, MEMTALLY= activation; then the same program built
# against an installed copy with pkg-config.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
demo=$MEMTALLY_ROOT/build/examples/api_demo
mkdir -p out
"$demo" out > stdout.txt || fail "api_demo failed"
cat stdout.txt

# work(): make_block 10 x 100, keep_block 5 x 200 (its name may carry a
# compiler suffix such as .constprop.0).
row() { grep -m1 "^$1" stdout.txt | awk '{print $2, $3}'; }
expect_eq "make_block calls and bytes" "10 1000" "$(row make_block)"
expect_eq "keep_block calls and bytes" "5 1000" "$(row keep_block)"
grep -q "== all threads: 100.00% of all bytes, 2000 bytes in 15 calls ==" stdout.txt ||
    fail "the first table's total is not 15 calls, 2000 bytes"
# spawner with follow_threads: 2 threads of 3 x 50 each, and the caller's.
expect_eq "threads in the follow table" "threads: 3" "$(grep '^threads:' stdout.txt)"
[ "$(grep -c '^thread_work  *3  *150 ' stdout.txt)" = 2 ] ||
    fail "each spawned thread should show thread_work 3 calls 150 bytes"
expect_eq "timeout" "timed out: 1, calls: 4" "$(grep '^timed out' stdout.txt)"
expect_eq "busy" "busy while recording: 1" "$(grep '^busy' stdout.txt)"

expect_eq "paused trace allocations" 10 "$(info_get out/paused.mtly allocations)"
expect_eq "paused trace bytes" 130 "$(info_get out/paused.mtly bytes_allocated)"
expect_eq "paused trace complete" true "$(info_get out/paused.mtly complete)"
expect_eq "reset trace allocations" 2 "$(info_get out/reset.mtly allocations)"
expect_eq "reset trace bytes" 60 "$(info_get out/reset.mtly bytes_allocated)"

# MEMTALLY=FILE records the whole run from mtl_trace_if_requested on:
# work's 15 blocks and stdout's buffer.  The buffer's 4096 bytes are glibc's
# choice (2.36: the st_blksize of the file stdout goes to, at most BUFSIZ;
# 4096 on the usual file systems), not memtally's.
MEMTALLY=$PWD/whole.mtly "$demo" out > whole.txt || fail "api_demo with MEMTALLY failed"
expect_eq "whole run" "recording the whole run" "$(cat whole.txt)"
expect_eq "whole run allocations" 16 "$(info_get whole.mtly allocations)"
expect_eq "whole run bytes" "$((2000 + 4096))" "$(info_get whole.mtly bytes_allocated)"

# Installed, and built with pkg-config.
make -s -C "$MEMTALLY_ROOT" install PREFIX="$PWD/prefix" >/dev/null || fail "make install failed"
export PKG_CONFIG_PATH=$PWD/prefix/lib/pkgconfig
cc -O2 -o demo "$MEMTALLY_ROOT/examples/api_demo.c" $(pkg-config --cflags --libs memtally) -pthread ||
    fail "cannot build against the installed library with pkg-config"
mkdir -p out2
./demo out2 > stdout2.txt || fail "the installed build failed"
expect_eq "installed: paused trace allocations" 10 "$(info_get out2/paused.mtly allocations)"
[ -x prefix/bin/memtally ] || fail "memtally not installed"
"$PWD/prefix/bin/memtally" record -q -o inst.mtly -- "$TEST_PROGRAMS/exact_basic" ||
    fail "the installed memtally cannot record"
expect_eq "installed memtally records" 7 "$(info_get inst.mtly allocations)"
