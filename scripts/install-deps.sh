#!/bin/sh
# Installs the Debian packages memtally needs to build and test, with the
# argument "bench" also the peers the benchmark compares against, and with
# "browser" also what the viewer's browser tests drive: chromium, node and
# npm, then playwright-core from npm into build/npm.
# Idempotent: installs only what is missing, and does nothing when all is there.
set -e
# libdebuginfod-dev: the header of the debuginfod client the symbolizer
# loads when DEBUGINFOD_URLS is set; liblzma-dev: libdw's MiniDebugInfo
# decoder; it and libbz2-dev are what `pkg-config --static --libs
# memtally-trace` names through libdw.  binutils, xz-utils, dwz and
# debuginfod: the symbol tests make stripped binaries, debug files,
# MiniDebugInfo and dwz files, and serve them with debuginfod.
pkgs="gcc g++ make pkg-config libunwind-dev libzstd-dev libdw-dev libelf-dev
      libdebuginfod-dev liblzma-dev libbz2-dev binutils xz-utils dwz debuginfod
      zstd valgrind sqlite3 python3 jq libmicrohttpd-dev curl libjemalloc2
      libtcmalloc-minimal4 protobuf-c-compiler libprotobuf-c-dev zlib1g-dev
      libsqlite3-dev"
# protobuf-c-compiler, libprotobuf-c-dev, zlib1g-dev: export --format pprof
# (protoc-c makes the C of profile.proto at build time); libsqlite3-dev:
# export --format sqlite.
# libmicrohttpd-dev: the viewer's HTTP server; curl: its API tests;
# libjemalloc2, libtcmalloc-minimal4: allocators with operators new and
# delete of their own, which the recorder must see (test_exact_allocators).
if [ "${1:-}" = browser ]; then
    pkgs="$pkgs chromium fonts-dejavu-core golang-go libgc-dev"
    # golang-go: go tool pprof reads what export --format pprof writes.
    # libgc-dev: the Boehm GC program whose heap the recorder must see
    # (test_gc).
    # node and npm may come from elsewhere than Debian (nodesource): only
    # when the commands are missing.
    command -v node >/dev/null 2>&1 || pkgs="$pkgs nodejs"
    command -v npm >/dev/null 2>&1 || pkgs="$pkgs npm"
fi
if [ "${1:-}" = bench ]; then
    pkgs="$pkgs heaptrack time libjemalloc2 libgoogle-perftools4 libgoogle-perftools-dev git perl
          libgc-dev linux-perf strace"
fi
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "memtally: missing packages:$missing (run as root, or install them)" >&2
        exit 1
    fi
    echo "memtally: installing$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# playwright-core drives the system's chromium (it downloads no browser).
if [ "${1:-}" = browser ] && [ ! -f build/npm/node_modules/playwright-core/package.json ]; then
    echo "memtally: installing playwright-core from npm into build/npm" >&2
    mkdir -p build/npm
    npm install --prefix build/npm --no-audit --no-fund --loglevel=error \
        playwright-core@1.48.2 >/dev/null
fi
