#!/bin/sh
# A real program none of us wrote: Debian's python3 runs a small script of
# dict, list, str and bytes work.  memtally's totals must equal valgrind
# memcheck's "total heap usage" line for the same run, exactly.  valgrind runs
# twice first, to prove the program is deterministic with these inputs.
#
# What makes python3 deterministic here:
# - PYTHONHASHSEED=0 (str hashes, so dict layouts), -S (no site module, no
#   user site directories), PYTHONMALLOC unset (pymalloc serves small objects
#   from 1 MiB arenas it maps itself: only larger requests reach malloc).
# - The same environment variable names under both tools (see below): python
#   copies the environment into a dict, whose table comes from malloc (568
#   bytes) once there are 11 variables or more, from pymalloc below that.
# - No address space randomisation under memtally (valgrind has none):
#   pymalloc keeps a radix tree over arena addresses and callocs a 128 KiB
#   leaf for each 16 GiB range that holds an arena; with random addresses the
#   arenas straddle two ranges in about 1 run in 1000 (12 of 12200 runs
#   here), one calloc of 131072 bytes more.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
. "$MEMTALLY_ROOT/tests/integration/valgrind-lib.inc"
command -v valgrind >/dev/null 2>&1 || skip "valgrind is not installed"
[ -x /usr/bin/python3 ] || skip "/usr/bin/python3 is not installed"

cat >work.py <<'PY'
d = {}
for i in range(20000):
    d["k%d" % i] = [i] * (i % 7)
s = sorted(d, key=lambda k: (len(d[k]), k))
t = "".join(s[:2000])
w = {}
for ch in t:
    w[ch] = w.get(ch, 0) + 1
big = [bytes(range(256)) * (i % 50 + 1) for i in range(500)]
words = " ".join(str(i * i) for i in range(5000)).split()
print(len(d), len(s), len(t), sorted(w.items())[:3], sum(map(len, big)),
      len(words), words[-1], ",".join(sorted(set(t)))[:9])
PY
echo "20000 20000 11365 [('0', 742), ('1', 2332), ('2', 905)] 3264000 5000 24990001 0,1,2,3,4" >expected

BASE_ENV="PATH=/usr/bin:/bin HOME=$TEST_TMP LC_ALL=C PYTHONHASHSEED=0"
match_environments "$BASE_ENV"   # sets VG and MT (valgrind-lib.inc)

$VG --log-file=vg1.log /usr/bin/python3 -S work.py >out.vg || fail "python3 under valgrind failed"
$VG --log-file=vg2.log /usr/bin/python3 -S work.py >/dev/null || fail "python3 under valgrind failed"
truth=$(vg_totals vg1.log)
[ -n "$truth" ] || fail "no heap summary in valgrind's log: $(cat vg1.log)"
[ "$truth" = "$(vg_totals vg2.log)" ] ||
    fail "python3 is not deterministic under valgrind: $truth vs $(vg_totals vg2.log)"
cmp -s expected out.vg || fail "unexpected output under valgrind: $(cat out.vg)"

norandom=
setarch -R true 2>/dev/null && norandom="setarch -R"
$norandom $MT -o python3.mtly -- /usr/bin/python3 -S work.py >out.mt || fail "memtally record failed"
cmp -s expected out.mt || fail "unexpected output under memtally: $(cat out.mt)"

set -- $truth
"$MEMTALLY_BIN" info --json python3.mtly >info.json || fail "memtally info failed"
expect_eq "python3 allocations (valgrind: $1)" "$1" "$(jq -r .allocations info.json)"
expect_eq "python3 frees (valgrind: $2)" "$2" "$(jq -r .frees info.json)"
expect_eq "python3 bytes_allocated (valgrind: $3)" "$3" "$(jq -r .bytes_allocated info.json)"
expect_eq "python3 truncated" false "$(jq -r .truncated info.json)"
