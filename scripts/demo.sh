#!/bin/sh
# `make demo`: records the bundled example program and shows the trace.
set -e
cd "$(dirname "$0")/.."
mkdir -p build/demo
trace=build/demo/wordfreq.mtly
echo "\$ memtally record -o $trace -- build/examples/wordfreq"
build/memtally record -o "$trace" -- build/examples/wordfreq
echo
echo "\$ memtally info $trace"
build/memtally info "$trace"
echo
echo "\$ memtally report --total $trace"
build/memtally report --total "$trace"
echo
echo "\$ memtally dump --stacks $trace | head -n 30"
build/memtally dump --stacks "$trace" | head -n 30
echo
echo "\$ build/examples/lifetimes $trace    (an example analysis on the reader library)"
build/examples/lifetimes "$trace"
echo
echo "\$ memtally view --html build/demo/wordfreq.html $trace"
build/memtally view --html build/demo/wordfreq.html "$trace"
echo
echo "Open $(pwd)/build/demo/wordfreq.html in a browser, or explore the trace with every"
echo "filter: build/memtally view $trace   (prints the page's address; Ctrl-C stops it)"
