#!/bin/sh
# Corrupt traces and files that are not traces.  A trace of damage_source is
# damaged in 70 ways drawn from a fixed-seed generator (single bytes changed,
# ranges overwritten or zeroed, block header fields set to extreme values,
# garbage appended); then come an empty file, text and binary files, a
# directory, a missing file and an unreadable one.  For each, `memtally info
# --json` and `memtally dump` must not crash or hang and must either fail
# with exactly one stderr line starting "memtally: ", or exit 0 with
# "truncated": true and counts not above the full trace's (or, for a change
# that decodes to the same events, exactly the full trace's info).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

record full.mtly "$TEST_PROGRAMS/damage_source" >/dev/null || fail "recording failed"
expect_eq "full allocations" 100000 "$(info_get full.mtly allocations)"
expect_eq "full truncated" false "$(info_get full.mtly truncated)"
"$MEMTALLY_BIN" info --json full.mtly >full.json || fail "info of the full trace failed"
size=$(wc -c <full.mtly)

# A 31-bit linear congruential generator: the same damage on every run.
seed=20240611
lcg() { seed=$(( (seed * 1103515245 + 12345) % 2147483648 )); }
rand() { # N: sets r to a number in [0, N), from the better high bits
    lcg; hi=$((seed / 65536)); lcg; r=$(( (hi * 32768 + seed / 65536) % $1 ))
}
byte_at() { od -An -tu1 -j "$2" -N1 "$1" | tr -d ' '; }
put_byte() { # FILE OFFSET VALUE
    printf "\\$(printf %o "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
xor_byte() { # FILE OFFSET MASK(1..255)
    put_byte "$1" "$2" $(( $(byte_at "$1" "$2") ^ $3 ))
}
put_u32() { # FILE OFFSET VALUE: little endian
    v=$3; k=0
    while [ $k -lt 4 ]; do put_byte "$1" $(($2 + k)) $((v % 256)); v=$((v / 256)); k=$((k + 1)); done
}
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }

# check WHAT FILE: the rule above, for info and for dump.
check() {
    rc=0; timeout 10 "$MEMTALLY_BIN" info --json "$2" >info.json 2>err || rc=$?
    [ $rc -lt 124 ] || fail "$1: info exit $rc (crash or hang); stderr: $(cat err)"
    if [ $rc -ne 0 ]; then
        [ "$(wc -l <err)" = 1 ] || fail "$1: info exit $rc with stderr not one line: $(cat err)"
        grep -q '^memtally: ' err || fail "$1: info error does not start with 'memtally: ': $(cat err)"
        outcome="error: $(cat err)"
    else
        [ "$(wc -l <err)" -le 1 ] || fail "$1: info: more than one line on stderr: $(cat err)"
        t=$(jq -r .truncated info.json) || fail "$1: info printed no JSON"
        a=$(jq -r .allocations info.json); f=$(jq -r .frees info.json)
        if [ "$t" = true ]; then
            [ "$a" -le 100000 ] && [ "$f" -le 99900 ] || fail "$1: counts $a/$f above the full trace's"
            outcome="truncated, $a allocations"
        else
            # A change that decodes to the same events (a bit of a zstd frame
            # header that only sizes the decoder's window): harmless, and
            # then everything reads as in the full trace.
            cmp -s info.json full.json || fail "$1: info exit 0, not truncated, and not the full trace: $(diff full.json info.json | head -c 300)"
            outcome="harmless: reads as the full trace"
        fi
    fi
    rc=0; timeout 10 "$MEMTALLY_BIN" dump "$2" >/dev/null 2>err || rc=$?
    [ $rc -lt 124 ] || fail "$1: dump exit $rc (crash or hang); stderr: $(cat err)"
    if [ $rc -ne 0 ]; then
        [ "$(wc -l <err)" = 1 ] && grep -q '^memtally: ' err ||
            fail "$1: dump exit $rc without one 'memtally: ' line: $(cat err)"
    fi
    echo "ok: $1: $outcome"
}

# Block header offsets: the first, one in the middle, the last.
blocks=""; off=16
while [ "$off" -lt "$size" ]; do
    blocks="$blocks $off"; off=$((off + 16 + $(u32 full.mtly $((off + 4)))))
done
set -- $blocks
[ $# -ge 3 ] || fail "only $# blocks: the test needs a trace with more"
first=$1; eval "mid=\${$(( ($# + 1) / 2 ))}"; eval "last=\${$#}"

n=0
damage() { # WHAT: copies the trace to d.mtly for the caller to damage
    n=$((n + 1)); what="#$n $1"; cp full.mtly d.mtly
}
finish() { cmp -s full.mtly d.mtly && { echo "skip: $what left the file unchanged"; return; }; check "$what" d.mtly; }

# Targeted: the file header's fields and extreme block header fields.
for o in 0 7 8 11 12 15; do damage "byte $o of the file header"; xor_byte d.mtly $o 1; finish; done
for b in $first $mid $last; do
    for field in 0 4 8 12; do damage "block at $b, field +$field, +1"; xor_byte d.mtly $((b + field)) 1; finish; done
    damage "block at $b, compressed size 0xffffffff"; put_u32 d.mtly $((b + 4)) 4294967295; finish
    damage "block at $b, compressed size 0"; put_u32 d.mtly $((b + 4)) 0; finish
    damage "block at $b, raw size 0xffffffff"; put_u32 d.mtly $((b + 8)) 4294967295; finish
    damage "block at $b, frame's first byte"; xor_byte d.mtly $((b + 16)) 255; finish
    damage "block at $b, frame's last byte"; xor_byte d.mtly $((b + 15 + $(u32 full.mtly $((b + 4))))) 128; finish
done
# Random: single bytes, overwritten ranges, zeroed ranges.
i=0; while [ $i -lt 20 ]; do
    rand "$size"; o=$r; rand 255
    damage "byte $o xor $((r + 1))"; xor_byte d.mtly $o $((r + 1)); finish
    i=$((i + 1))
done
i=0; while [ $i -lt 12 ]; do
    rand "$size"; o=$r; rand 64; len=$((r + 1))
    damage "$len bytes from $o overwritten"
    k=0; while [ $k -lt $len ] && [ $((o + k)) -lt "$size" ]; do
        rand 255; xor_byte d.mtly $((o + k)) $((r + 1)); k=$((k + 1))
    done
    finish; i=$((i + 1))
done
i=0; while [ $i -lt 8 ]; do
    rand "$size"; o=$r; rand 4096; len=$((r + 1))
    damage "$len bytes from $o zeroed"
    dd if=/dev/zero of=d.mtly bs=1 seek=$o count=$len conv=notrunc 2>/dev/null
    head -c "$size" d.mtly >d2.mtly && mv d2.mtly d.mtly
    finish; i=$((i + 1))
done
damage "garbage appended"; head -c 100 "$MEMTALLY_BIN" >>d.mtly; finish
damage "a second file header appended"; head -c 16 full.mtly >>d.mtly; finish
[ $n -ge 60 ] || fail "only $n damaged traces"

# Files that are not traces.
: >empty.mtly; check "zero-length file" empty.mtly
echo "hello, this is not a trace" >text.mtly; check "text file" text.mtly
head -c 15 full.mtly >short.mtly; check "15 bytes of a trace" short.mtly
check "an ELF file" "$MEMTALLY_BIN"
mkdir dir.mtly; check "a directory" dir.mtly
check "a missing file" missing.mtly
if [ "$(id -u)" != 0 ]; then
    cp full.mtly locked.mtly; chmod 000 locked.mtly; check "an unreadable file" locked.mtly
else
    echo "skip: unreadable file (running as root reads it anyway)"
fi
# Those must fail outright: none of them is a trace.
for f in text.mtly dir.mtly missing.mtly "$MEMTALLY_BIN"; do
    "$MEMTALLY_BIN" info --json "$f" >/dev/null 2>&1 && fail "info accepted $f"
done
echo "ok: $n damaged traces"
