#!/bin/sh
# memtally heap PID: the live heap of a running process, recorded (its
# trace so far: sites, sizes, threads, the largest blocks with a peek at
# their bytes) and not (what /proc tells, and glibc's mallinfo2 asked
# inside it), against tests/programs/heap_hold.c.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
M=$MEMTALLY_BIN
P=$TEST_PROGRAMS/heap_hold

# wait_ready FILE: until the program said "ready" in FILE (10 s at most).
wait_ready() {
    for _ in $(seq 100); do
        grep -q ready "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    fail "the program never got ready"
}

mkfifo in1
"$M" record -q -o t.mtly "$P" <in1 >out1.txt &
rec=$!
exec 3>in1
wait_ready out1.txt
pid=$(pgrep -P "$rec" heap_hold) || fail "no heap_hold under memtally record"
"$M" heap --json "$pid" >h.json || fail "memtally heap failed"
expect_eq "sites: the big block and the small ones" "$(printf '%s\n' 'make_big 1 1048576' 'make_small 50 5000')" \
    "$(jq -r '.rows[] | select(.function | test("^make_")) | "\(.function) \(.blocks) \(.bytes)"' h.json)"
expect_eq "the largest block: its size, site and marker" "1048576 make_big MEMTALLY-MARKER big block" \
    "$(jq -r '.largest[0] | "\(.size) \(.stack[0].function) \(.peek_text | sub("\\.+$"; ""))"' h.json)"
expect_eq "the peek in hex" "4d 45 4d 54" "$(jq -r '.largest[0].peek_hex[0:11]' h.json)"
expect_eq "recorded, and at least the 51 blocks" "true true" \
    "$(jq -r '"\(.recorded) \(.live_blocks >= 51)"' h.json)"
expect_eq "beside the live bytes: RSS and glibc's own in-use figure" "true true" \
    "$(jq -r '"\(.rss_bytes > 1048576) \(.malloc.in_use_bytes >= .live_bytes)"' h.json)"
expect_eq "--by size: the 50 small blocks in one bucket" "64 127 50 5000" \
    "$("$M" heap --by size --json "$pid" | jq -r '.rows[] | select(.min == 64) | "\(.min) \(.max) \(.blocks) \(.bytes)"')"
expect_eq "--by thread: one thread" 1 "$("$M" heap --by thread --json "$pid" | jq '.rows | length')"
expect_eq "--top 2 --peek 4: two blocks, four bytes" "2 MEMT" \
    "$("$M" heap --top 2 --peek 4 --json "$pid" | jq -r '"\(.largest | length) \(.largest[0].peek_text)"')"
"$M" heap "$pid" | grep -q "^live heap of pid $pid" || fail "the text has no heading"
# The program goes on as if nothing happened, and its trace is whole.
exec 3>&-
wait "$rec" || fail "memtally record failed"
expect_eq "the program's output" "$(printf 'ready\ndone')" "$(cat out1.txt)"
expect_eq "its trace: every block freed but stdout's buffer" 1 "$(info_get t.mtly live_blocks_at_end)"

# Not recorded: what /proc tells.
mkfifo in2
"$P" <in2 >out2.txt &
plain=$!
exec 4>in2
wait_ready out2.txt
"$M" heap --json "$plain" >p.json || fail "memtally heap of an unrecorded process failed"
expect_eq "unrecorded: said so, with its program" "false $P" "$(jq -r '"\(.recorded) \(.program)"' p.json)"
expect_eq "unrecorded: its RSS and anonymous memory (the 1 MiB block)" "true true" \
    "$(jq -r '"\(.rss_bytes > 1048576) \(.anon_rss_bytes >= 1048576)"' p.json)"
expect_eq "unrecorded: glibc's own figures hold the 1 MiB block and the 50 small ones" "true true" \
    "$(jq -r '.malloc | "\(.mmapped_blocks >= 1 and .mmapped_bytes >= 1048576) \(.in_use_bytes >= 1048576 + 5000)"' p.json)"
expect_eq "unrecorded: malloc_info's arenas, the main one first" "0 true" \
    "$(jq -r '.arenas[0] | "\(.nr) \(.system_bytes > 0)"' p.json)"
expect_eq "unrecorded: the chunks walked from outside add up to what mallinfo2 says in use" \
    "$(jq .malloc.in_use_bytes p.json)" "$(jq .chunks.bytes p.json)"
expect_eq "unrecorded: the largest chunk is the 1 MiB block, its marker in the peek" \
    "true true MEMTALLY-MARKER big block" \
    "$(jq -r '.chunks.largest[0] | "\(.mmapped) \(.size >= 1048576) \(.peek_text | sub("\\.+$"; ""))"' p.json)"
expect_eq "unrecorded: the 50 blocks of 100 bytes, chunks of 112" "50 5600" \
    "$(jq -r '.chunks.sizes[] | select(.min == 64) | "\(.chunks) \(.bytes)"' p.json)"
"$M" heap "$plain" >p.txt
grep -q "is not recorded by memtally" p.txt || fail "the text does not say it is not recorded"
grep -q "^glibc's malloc, asked inside the process" p.txt || fail "no mallinfo2 figures: $(cat p.txt)"
exec 4>&-
wait "$plain"

# Threads' arenas: attach_target's workers allocated in arenas of their own.
mkfifo in3
"$TEST_PROGRAMS/attach_target" <in3 >out3.txt &
threaded=$!
exec 5>in3
wait_ready out3.txt
echo "burst 10" >&5
for _ in $(seq 100); do grep -q "burst done" out3.txt && break; sleep 0.1; done
expect_eq "threads' arenas walked too" true \
    "$("$M" heap --json "$threaded" | jq '.chunks.thread_heaps >= 1 and (.arenas | length) >= 2')"
exec 5>&-
wait "$threaded"

"$M" heap 999999999 2>err.txt && fail "heap of a process that does not exist succeeded"
expect_eq "no such process" "memtally: heap: no process 999999999" "$(cat err.txt)"
"$M" heap abc 2>err.txt; expect_eq "not a pid: usage error" 2 $?
