#!/bin/sh
# A separate debug file whose sections are compressed (as Debian's debug
# packages are) is copied decompressed into the cache, debug/ beside the
# indexes, named by its build id, the first time an analysis reads it; later
# analyses read the copy.  The names, files and lines are the same with the
# copy, without it (MEMTALLY_INDEX=off: nothing cached) and from the
# uncompressed debug file.  A copy whose build id is not its name's is made
# again; a cache that cannot be written is no error.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/golden-lib.inc"
need_command report
for tool in cc objcopy strip readelf; do
    command -v $tool >/dev/null || skip "$tool is not installed (scripts/install-deps.sh)"
done
src=$GOLDEN_SRC/golden_inline.c
want="[[\"inl_alloc\",$(line_of "$src" inl_alloc)],[\"plain_alloc\",$(line_of "$src" plain_alloc)]]"

mkdir -p app
cc -O0 -g -o full "$src" || fail "cannot build golden_inline"
id=$(readelf -n full | awk '/Build ID/ { print $3 }')
[ -n "$id" ] || skip "the linker makes no build ids"
strip --strip-all -o app/prog full
record t.mtly "$PWD/app/prog" >/dev/null || fail "record failed"
debug=dbg/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
mkdir -p "$(dirname "$debug")"
objcopy --only-keep-debug --compress-debug-sections=zlib full "$debug" ||
    fail "cannot make a compressed debug file"
readelf -S -W "$debug" | grep -q '\.debug_info .* C ' || fail "objcopy did not compress .debug_info"

sites() { # WHAT: the sites, with MEMTALLY_INDEX_DIR as set
    analyze r.json report --total --debug-dir dbg t.mtly
    expect_jq "$1" r.json '[.total.rows[] | [fname, .line]] | sort' "$want"
    cp r.json "$2"
}

export MEMTALLY_INDEX_DIR="$PWD/cache"
copy=cache/debug/$id.debug
sites "first analysis (copies the debug file)" first.json
[ -f "$copy" ] || fail "no copy in the cache: $(ls -R cache 2>&1 | head -c 300)"
readelf -S -W "$copy" | grep -q '\.debug_info ' || fail "the copy has no .debug_info"
readelf -S -W "$copy" | grep -q '\.debug_[a-z_]* .* C ' && fail "the copy still has compressed sections"
[ "$(readelf -n "$copy" | awk '/Build ID/ { print $3 }')" = "$id" ] || fail "the copy's build id"
echo "ok: the copy is decompressed, with the build id"
sites "second analysis (reads the copy)" second.json
cmp -s first.json second.json || fail "the copy answers otherwise"

MEMTALLY_INDEX=off sites "nothing cached" off.json
cmp -s first.json off.json || fail "without the cache: another answer"
[ -e "$copy" ] || fail "MEMTALLY_INDEX=off removed the copy"

# A copy of another build under this build id's name: made again.
objcopy --only-keep-debug --compress-debug-sections=zlib "$TEST_PROGRAMS/golden_funcs" other.debug
objcopy --decompress-debug-sections other.debug "$copy"
sites "a wrong copy is made again" again.json
[ "$(readelf -n "$copy" | awk '/Build ID/ { print $3 }')" = "$id" ] || fail "the wrong copy was kept"

MEMTALLY_INDEX_DIR=/proc/memtally-cannot-be-made sites "a cache that cannot be written" ro.json
cmp -s first.json ro.json || fail "with a cache that cannot be written: another answer"
