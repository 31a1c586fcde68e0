#!/bin/sh
# Real programs none of us wrote behave the same under memtally: the same
# stdout, stderr and exit status as alone, recorded in full and sampled
# (--sample), each leaving a trace that reads.  Shell pipelines, bash, perl,
# python3 with threads and with multiprocessing, git, tar | gzip, make -j2,
# gcc with --follow-exec (cc1, as, collect2, ld each recorded).
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

mkdir src && for i in 1 2 3 4 5; do seq 1 $((i * 300)) >src/f$i.txt; done
printf 'all: a b\na:\n\t@echo made a\nb:\n\t@echo made b\n' >Makefile
printf '#include <stdio.h>\nint main(void) { puts("hello"); return 3; }\n' >hello.c
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
    GIT_COMMITTER_EMAIL=t@example.com GIT_CONFIG_NOSYSTEM=1 HOME="$PWD"
python=/usr/bin/python3

n=0
# same NAME [record options --] COMMAND...: stdout, stderr and status alike.
same() {
    name=$1; shift
    opts=
    while [ "$1" != -- ]; do opts="$opts $1"; shift; done
    shift
    n=$((n + 1))
    "$@" >a.out 2>a.err; a=$?
    # shellcheck disable=SC2086
    "$MEMTALLY_BIN" record -q $opts -o "c$n.mtly" -- "$@" >b.out 2>b.err; b=$?
    expect_eq "$name$opts: exit status" "$a" "$b"
    cmp -s a.out b.out || fail "$name$opts: stdout differs: $(diff a.out b.out | head -c 400)"
    cmp -s a.err b.err || fail "$name$opts: stderr differs: $(diff a.err b.err | head -c 400)"
    "$MEMTALLY_BIN" info "c$n.mtly" >/dev/null || fail "$name$opts: the trace does not read"
    echo "ok: $name$opts: the same output and status, and a trace"
}

for mode in "" --sample; do
    same "a pipeline" $mode -- sh -c 'cat src/*.txt | sort -n | uniq -c | sort -rn | head -3; exit 4'
    same "bash" $mode -- bash -c 'x=; for i in $(seq 1 300); do x="$x$i"; done; echo ${#x};
        declare -A m; for k in a b c; do m[$k]=$k$k; done; echo "${m[b]}"; ls /nonexistent'
    same "perl" $mode -- perl -e 'my %h; $h{$_} = $_ x 3 for 1..20000;
        print scalar(keys %h), " ", length(join "", values %h), "\n"; warn "done\n"'
    same "python3 threads" $mode -- env PYTHONMALLOC=malloc $python -c '
import threading
out = [0] * 4
def work(k):
    out[k] = len("".join(str(i) for i in range(20000 * (k + 1))))
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(out)'
    same "python3 multiprocessing" $mode -- $python -c '
import multiprocessing as mp
def sq(x): return sum(i * i for i in range(x))
if __name__ == "__main__":
    with mp.Pool(2) as p: print(p.map(sq, [1000, 2000, 3000, 4000]))'
    same "git" $mode -- sh -c 'rm -rf repo && git init -q repo && cd repo && cp ../src/*.txt . && git add . &&
        git commit -qm one && sed -i 1d f1.txt && git commit -qam two &&
        git log --format=%s && git diff HEAD~1 --stat && git status --porcelain'
    same "tar | gzip" $mode -- sh -c 'tar cf - src | gzip -c | gzip -dc | tar tf - | sort'
    same "make -j2" $mode -- sh -c 'make -s -j2 | sort'
done

mkdir fx && cd fx || fail "mkdir"
same "gcc --follow-exec" --follow-exec -- sh -c 'gcc -o hello ../hello.c && ./hello'
# the shell, gcc, cc1, as, collect2, ld and ./hello: each a trace, named by
# the -o pattern (c17.mtly, c17.mtly.1, ...)
traces=$(ls | grep -c '^c[0-9]*\.mtly')
[ "$traces" -ge 7 ] || fail "gcc --follow-exec: $traces traces: $(ls)"
echo "ok: gcc --follow-exec left $traces traces"
