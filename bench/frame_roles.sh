#!/bin/sh
# The speed of mtl_frame_role() on real names: the demangled dynamic symbols
# of the libraries below (those installed), as the analysis would meet them.
# See bench/frame_roles.c.
#   sh bench/frame_roles.sh [REPS]
set -u
cd "$(dirname "$0")/.." || exit 1
B=build/bench
mkdir -p "$B"
${CC:-cc} -O2 -Iinclude -Isrc -D_GNU_SOURCE -o "$B/frame_roles" bench/frame_roles.c \
    src/analyze/allocframes.c || exit 1
for lib in /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /lib/x86_64-linux-gnu/libc.so.6 \
           /usr/lib/x86_64-linux-gnu/libsqlite3.so.0 /usr/bin/python3.11 \
           /usr/lib/x86_64-linux-gnu/libglib-2.0.so.0; do
    [ -e "$lib" ] && nm -D --defined-only -C "$lib"
done | sed -n 's/^[0-9a-f]* [TtWi] //p' | sed 's/@.*$//' | sort -u >"$B/frame_roles.names"
"$B/frame_roles" "${1:-20}" <"$B/frame_roles.names"
