#!/bin/sh
# tests/tools/mktrace, which other tests trust to write the traces they
# describe: what it writes reads back as described (memtally dump, info,
# leaks), pointers given by the window and by differences, across blocks;
# and a description it cannot follow is an error, not a trace.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

mktrace a.mtly <<'EOF'
# comment line
header program=/bin/demo cmdline="demo -x  \"y\"" pid=42 ppid=1 start=1000000 mode=full depth=32
stack s1 parse read_line main    # innermost first
stack s2 "emit frame" main
stack s3 parse read_line other
stack none
start 0 0 42 demo
start 5 1 43 "worker 1"
alloc 10 0 0x1000 100 s1
alloc 11 1 0x2000 200 s2
free 20 0 0x1000
block
alloc 21 0 0x1000 50 s3
alloc 22 1 0x3000 7 none
rss 25 8192
name 26 1 renamed
exit 30 1
end 40
EOF
"$MEMTALLY_BIN" dump a.mtly >a.dump || fail "dump failed"
cat >want.dump <<'EOF'
# memtally trace version 3: demo -x  "y" (pid 42), full mode
0 t0 thread-start tid=42
0 t0 thread-name name=demo
5 t1 thread-start tid=43
5 t1 thread-name name=worker 1
10 t0 alloc ptr=0x1000 size=100 stack=3
11 t1 alloc ptr=0x2000 size=200 stack=4
20 t0 free ptr=0x1000
21 t0 alloc ptr=0x1000 size=50 stack=7
22 t1 alloc ptr=0x3000 size=7 stack=0
25 - rss bytes=8192
26 t1 thread-name name=renamed
30 t1 thread-exit
EOF
diff want.dump a.dump || fail "the trace does not read back as described"
echo "ok: dump reads back every record"
expect_eq "info" '["/bin/demo",42,1,1000000,"full",32,40,2,2,true]' \
    "$("$MEMTALLY_BIN" info --json a.mtly | jq -c '[.program, .pid, .ppid, .start_unix_us, .mode, .max_depth, .duration_us, .threads, .blocks, .complete]')"
# Stacks (the dump's stack ids above are node ids): s1 makes nodes 1-3
# (main, read_line, parse), s2 shares main and adds node 4, s3 shares
# nothing (its outermost frame differs) and makes 5-7.  The frames read
# back innermost first.
expect_eq "leak stacks" '[["emit frame","main"],["parse","read_line","other"],[]]' \
    "$("$MEMTALLY_BIN" leaks --json a.mtly | jq -c '[.rows[] | [.stack[].function]]')"

# Sampled mode and its rate; the end by a signal.
mktrace s.mtly <<'EOF'
header program=/bin/s mode=sampled rate=4096
end 3 signal 9
EOF
expect_eq "sampled header" '["sampled",4096,true,3]' \
    "$("$MEMTALLY_BIN" info --json s.mtly | jq -c '[.mode, .sample_rate, .complete, .duration_us]')"
# No end: truncated.
printf 'header\nrss 1 4096\n' | mktrace n.mtly
expect_eq "no end: truncated" true "$("$MEMTALLY_BIN" info --json n.mtly 2>/dev/null | jq -r .truncated)"

# 300 blocks at addresses 16 apart, then their frees oldest first, in a new
# block: the first frees name addresses 300 records back (coded as a
# difference), the later ones the window's.
{
    echo "header program=/bin/w pid=9"
    echo "stack s f main"
    echo "start 0 0 9"
    awk 'BEGIN { for (i = 0; i < 300; i++) printf "alloc %d 0 %d %d s\n", i, 1048576 + 16 * i, i + 1
                 print "block"
                 for (i = 0; i < 300; i++) printf "free %d 0 %d\n", 300 + i, 1048576 + 16 * i
                 print "end 700" }'
} | mktrace w.mtly
expect_eq "300 blocks freed" '[300,300,45150,0,0,2]' \
    "$("$MEMTALLY_BIN" info --json w.mtly | jq -c '[.allocations, .frees, .bytes_allocated, .live_bytes_at_end, .unmatched_frees, .blocks]')"
"$MEMTALLY_BIN" dump w.mtly | awk '
    / alloc / { split($4, p, "="); a[p[2]] = $1 }
    / free / { split($4, p, "="); if (!(p[2] in a) || $1 != a[p[2]] + 300) bad++; n++ }
    END { exit n != 300 || bad }' || fail "a free reads back at the wrong address"
echo "ok: every free names its block"

# Descriptions it cannot follow.
refuse() { # WHAT DESCRIPTION
    printf '%b' "$2" | "$TEST_TOOLS/mktrace" bad.mtly 2>bad.err
    rc=$?
    [ $rc -eq 1 ] || fail "mktrace accepted $1 (exit $rc)"
    [ ! -e bad.mtly ] || fail "mktrace left a trace after refusing $1"
    grep -q '^mktrace: line [0-9]*: ' bad.err || fail "$1: no 'mktrace: line N:' message"
    echo "ok: refuses $1: $(cat bad.err)"
}
refuse "no header" 'stack s a\n'
refuse "an unknown stack" 'header\nstart 0 0 1\nalloc 1 0 0x10 5 s\n'
refuse "a thread not started" 'header\nstack s a\nalloc 1 0 0x10 5 s\n'
refuse "threads out of order" 'header\nstart 5 1 1\n'
refuse "time going back" 'header\nstart 5 0 1\nrss 4 100\n'
refuse "sampled without a rate" 'header mode=sampled\n'
refuse "a bad number" 'header pid=12x\n'
refuse "an open quote" 'header\nstart 5 0 1 "abc\n'
refuse "an unknown statement" 'header\nmalloc 1 0 0x10 5 s\n'
refuse "a second header" 'header\nheader\n'

# 20,000 blocks, each freed at once: more than one block of the file holds,
# so mktrace starts new ones by itself.
{
    echo "header program=/bin/many pid=9"
    echo "stack s f main"
    echo "start 0 0 9"
    awk 'BEGIN { for (i = 0; i < 20000; i++)
                     printf "alloc %d 0 %d %d s\nfree %d 0 %d\n", 2 * i, 4096 + 64 * i, i % 1000, 2 * i + 1, 4096 + 64 * i
                 print "end 40000" }'
} | mktrace many.mtly
"$MEMTALLY_BIN" info --json many.mtly >many.json || fail "info failed"
expect_eq "20,000 blocks" '[20000,20000,9990000,0,40000,true]' \
    "$(jq -c '[.allocations, .frees, .bytes_allocated, .live_bytes_at_end, .duration_us, .complete]' many.json)"
[ "$(jq .blocks many.json)" -gt 1 ] || fail "20,000 blocks in one block of the file"
echo "ok: $(jq .blocks many.json) blocks in the file"
