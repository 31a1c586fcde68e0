#!/bin/sh
# What a trace's size is made of: python3 (bench/workloads/pyalloc.py 40,
# PYTHONMALLOC=malloc, as bench/run.sh runs it) recorded, then each stream
# compressed on its own per block (bench/stream_sizes.c).  About 10 s.
#   sh bench/streams.sh
set -e
cd "$(dirname "$0")/.."
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -Iinclude -Isrc -D_GNU_SOURCE -o "$B/stream_sizes" bench/stream_sizes.c \
    build/libmemtally-trace.a -lzstd -ldw -lelf -lpthread -lm
PYTHONMALLOC=malloc build/memtally record -q -o "$B/streams.mtly" -- \
    /usr/bin/python3 bench/workloads/pyalloc.py 40 >/dev/null
echo "== python3 (pyalloc.py 40): $(stat -c %s "$B/streams.mtly") bytes in the trace"
"$B/stream_sizes" "$B/streams.mtly"
rm -f "$B/streams.mtly"
