#!/bin/sh
# Where symbols come from (memtally/symbols.h, docs/DESIGN.md), each way on
# tests/programs/golden_inline.c built here, recorded as app/bin/prog, then
# stripped, moved or replaced before `memtally report` reads the trace:
#   1. the binary as built: functions, lines and inlining from its DWARF
#      (and --sysroot, --debug-dir given something that is not a directory);
#   2. stripped: addresses; its debug file found by build id under a
#      --debug-dir; by its .gnu_debuglink next to it, in .debug/, in
#      DIR/<its directory>/ and in DIR/ of a --debug-dir; a debug file of
#      another build under that name is refused (by build id, and by CRC for
#      a binary built without one);
#   3. MiniDebugInfo only (gdb's recipe): function names, no lines;
#   4. recorded at one path, found under --sysroot, also stripped with its
#      debug file in the sysroot's /usr/lib/debug/<its directory>/;
#   5. dwz: the debug file's DWARF partly moved into a supplementary file,
#      found at its path under the sysroot, by build id, in DIR/.dwz/;
#   6. a debuginfod server on this machine serving the debug file: for the
#      stripped binary and for the binary gone; not asked without
#      DEBUGINFOD_URLS.
# The truth is golden_inline's: sites inl_alloc (inlined) and plain_alloc at
# their marked lines, or without DWARF caller_a, caller_b and plain_alloc.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report
for tool in cc objcopy strip nm readelf xz dwz; do
    command -v $tool >/dev/null || skip "$tool is not installed (scripts/install-deps.sh)"
done
src=$GOLDEN_SRC/golden_inline.c
dwarf_rows="[[\"inl_alloc\",$(line_of "$src" inl_alloc)],[\"plain_alloc\",$(line_of "$src" plain_alloc)]]"
symtab_rows='[["caller_a",null],["caller_b",null],["plain_alloc",null]]'

# build_id FILE: its GNU build id, in hex.
build_id() {
    readelf -n "$1" 2>/dev/null | awk '/Build ID/ { print $3 }'
}

# by_id DIR FILE: DIR/.build-id/xx/rest.debug for FILE's build id.
by_id() {
    id=$(build_id "$2")
    echo "$1/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug"
}

# put FROM TO: copies FROM to TO, making TO's directory.
put() {
    mkdir -p "$(dirname "$2")" && cp "$1" "$2" || fail "cannot copy $1 to $2"
}

# rows WHAT TRACE EXPECTED [OPTIONS...]: the sites of `report --total` on
# TRACE, as [function, line] sorted, are EXPECTED.
rows() {
    what=$1 trace=$2 want=$3; shift 3
    analyze r.json report --total "$@" "$trace"
    expect_jq "$what" r.json '[.total.rows[] | [fname, .line]] | sort' "$want"
}

# unnamed WHAT TRACE [OPTIONS...]: every site shows as prog+0xOFFSET.
unnamed() {
    what=$1 trace=$2; shift 2
    analyze r.json report --total "$@" "$trace"
    expect_jq "$what" r.json '[.total.rows[] | fname | select(test("^prog[+]0x") | not)]' '[]'
}

mkdir -p app/bin
cc -O0 -g -o full "$src" || fail "cannot build golden_inline"
cc -O0 -g -o other "$GOLDEN_SRC/golden_funcs.c" 2>/dev/null || fail "cannot build golden_funcs"
[ -n "$(build_id full)" ] || skip "the linker makes no build ids"
cp full app/bin/prog
record t.mtly "$PWD/app/bin/prog" >/dev/null || fail "record failed"
objcopy --only-keep-debug full full.debug
objcopy --only-keep-debug other other.debug
strip --strip-all -o stripped full

# 1. As built.  And the options' errors.
rows "as built" t.mtly "$dwarf_rows"
expect_error "--sysroot that is not a directory" 2 report --sysroot nowhere t.mtly
expect_error "--debug-dir that is not a directory" 2 report --debug-dir t.mtly t.mtly
expect_error "--debug-dir without a value" 2 report t.mtly --debug-dir

# 2. Stripped: by build id in a debug directory.
cp stripped app/bin/prog
unnamed "stripped" t.mtly
put full.debug "$(by_id dbg full)"
rows "debug file by build id in --debug-dir" t.mtly "$dwarf_rows" --debug-dir dbg
unnamed "stripped, another --debug-dir" t.mtly --debug-dir app

# By debuglink: next to the binary, in .debug/, in the debug directories.
cp full.debug prog.debug
objcopy --add-gnu-debuglink=prog.debug stripped app/bin/prog
rm prog.debug
for where in app/bin app/bin/.debug "dl1$PWD/app/bin" dl2; do
    put full.debug "$where/prog.debug"
    case $where in dl*) opt="--debug-dir ${where%%/*}" ;; *) opt= ;; esac
    # shellcheck disable=SC2086
    rows "debuglink: $where/prog.debug" t.mtly "$dwarf_rows" $opt
    # shellcheck disable=SC2086
    [ -n "$opt" ] && unnamed "debuglink: $where/prog.debug, without $opt" t.mtly
    rm "$where/prog.debug"
done
cp other.debug app/bin/prog.debug
unnamed "debuglink: another build's debug file (build id differs)" t.mtly
rm app/bin/prog.debug

# Without a build id, the debuglink's CRC says which file is right.
mkdir -p nb
cc -O0 -g -Wl,--build-id=none -o nb/full "$src" || fail "cannot build without a build id"
cc -O0 -g -Wl,--build-id=none -o nb/other "$GOLDEN_SRC/golden_funcs.c" 2>/dev/null
[ -z "$(build_id nb/full)" ] || fail "--build-id=none made a build id"
cp nb/full nb/prog
record nb.mtly "$PWD/nb/prog" >/dev/null || fail "record failed"
objcopy --only-keep-debug nb/full nb/prog.debug
strip --strip-all -o nb/stripped nb/full
objcopy --add-gnu-debuglink=nb/prog.debug nb/stripped nb/prog
rows "no build id: debuglink, CRC matches" nb.mtly "$dwarf_rows"
objcopy --only-keep-debug nb/other nb/prog.debug
unnamed "no build id: debuglink to another build (CRC differs)" nb.mtly

# 3. MiniDebugInfo, as gdb's manual makes it: the functions the .dynsym
# lacks, in an xz-compressed ELF in .gnu_debugdata.
nm -D full --format=posix --defined-only | awk '{ print $1 }' | sort >dynsyms
nm full --format=posix --defined-only |
    awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >funcsyms
comm -13 dynsyms funcsyms >keep_symbols
objcopy -S --remove-section .gdb_index --remove-section .comment \
    --keep-symbols=keep_symbols full.debug mini_debuginfo
xz mini_debuginfo
strip --strip-all -R .comment -o mini full
objcopy --add-section .gnu_debugdata=mini_debuginfo.xz mini app/bin/prog
rows "MiniDebugInfo" t.mtly "$symtab_rows"

# 4. Under a sysroot: the recorded path is gone here.
rm app/bin/prog
analyze r.json report --total t.mtly
grep -q "app/bin/prog: not found; showing addresses" analyze.err ||
    fail "no warning for the missing binary: $(cat analyze.err)"
put full "sr$PWD/app/bin/prog"
rows "--sysroot" t.mtly "$dwarf_rows" --sysroot sr
rows "--sysroot with a trailing slash" t.mtly "$dwarf_rows" --sysroot sr/
cp stripped "sr$PWD/app/bin/prog"
unnamed "--sysroot, stripped" t.mtly --sysroot sr
objcopy --add-gnu-debuglink=full.debug stripped "sr$PWD/app/bin/prog"
put full.debug "sr/usr/lib/debug$PWD/app/bin/full.debug"
rows "--sysroot, debuglink in SYSROOT/usr/lib/debug/DIR" t.mtly "$dwarf_rows" --sysroot sr
rm -r sr

# 5. dwz: two builds' debug files share DWARF (inl_alloc's abstract DIE
# among it) in a supplementary file, named with its build id by each.
cc -O0 -g -fno-omit-frame-pointer -o full2 "$src"
objcopy --only-keep-debug full2 full2.debug
cp full.debug a.debug
dwz -m common.debug -M /usr/lib/debug/.dwz/memtally-test.debug a.debug full2.debug ||
    fail "dwz failed"
readelf -S a.debug 2>/dev/null | grep -q gnu_debugaltlink || fail "dwz made no altlink"
cp stripped app/bin/prog
put a.debug "$(by_id dz a.debug)"
analyze r.json report --total --debug-dir dz t.mtly
expect_jq "dwz: without the supplementary file, inl_alloc has no name" r.json \
    '[.total.rows[] | fname | select(. == "inl_alloc")]' '[]'
put common.debug "dz/.dwz/memtally-test.debug"
rows "dwz: supplementary file in DIR/.dwz" t.mtly "$dwarf_rows" --debug-dir dz
rm -r dz/.dwz
put common.debug "$(by_id dz common.debug)"
rows "dwz: supplementary file by build id" t.mtly "$dwarf_rows" --debug-dir dz
rm "$(by_id dz common.debug)"
put stripped "sr$PWD/app/bin/prog"
put common.debug sr/usr/lib/debug/.dwz/memtally-test.debug
rows "dwz: supplementary file at its path under the sysroot" t.mtly "$dwarf_rows" \
    --sysroot sr --debug-dir dz
rm -r sr dz

# 6. debuginfod.  The server of Debian 12 (0.188) cannot be told to listen
# on the loopback only; it serves this test's debug file, for a few seconds.
command -v debuginfod >/dev/null && command -v debuginfod-find >/dev/null ||
    skip "debuginfod is not installed (scripts/install-deps.sh); the rest passed"
mkdir srv
cp full.debug srv/prog.debug
id=$(build_id full)
server=
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null; wait "$server"; fi' EXIT
for try in 1 2 3 4 5; do
    port=$((20000 + ($$ * 7 + try * 1009) % 40000))
    debuginfod -F -p "$port" -d :memory: -c 1 --disable-source-scan srv >srv.log 2>&1 &
    server=$!
    # Ready when it serves the file; each probe with a cache of its own,
    # as the client remembers what it did not find.
    for i in $(seq 1 60); do
        kill -0 "$server" 2>/dev/null || break
        DEBUGINFOD_CACHE_PATH=$PWD/probe.$try.$i DEBUGINFOD_URLS=http://127.0.0.1:$port \
            debuginfod-find debuginfo "$id" >/dev/null 2>&1 && break 2
        sleep 0.25
    done
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    server=
done
[ -n "$server" ] || { cat srv.log >&2; fail "cannot start a debuginfod server"; }
cp stripped app/bin/prog
unset DEBUGINFOD_URLS
export DEBUGINFOD_CACHE_PATH="$PWD/cache0"
unnamed "debuginfod: not asked without DEBUGINFOD_URLS" t.mtly
[ -e cache0 ] && fail "the debuginfod client ran without DEBUGINFOD_URLS"
export DEBUGINFOD_URLS="http://127.0.0.1:$port" DEBUGINFOD_CACHE_PATH="$PWD/cache1"
rows "debuginfod: stripped binary" t.mtly "$dwarf_rows"
[ -e "cache1/$id/debuginfo" ] || fail "the debug file did not come through debuginfod"
rm app/bin/prog
export DEBUGINFOD_CACHE_PATH="$PWD/cache2"
rows "debuginfod: binary gone" t.mtly "$dwarf_rows"
[ -e "cache2/$id/debuginfo" ] || fail "the debug file did not come through debuginfod"
