# The program sees exactly the environment it was started with: memtally's
# own variables (LD_PRELOAD, MEMTALLY_*) are gone by the time it runs, from
# environ and from /proc/self/environ, and a user's own LD_PRELOAD is as it
# was, byte for byte; a child it starts runs without memtally.  With
# --follow-exec the block stays (docs/DESIGN.md says why) and the child is
# recorded.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"

# same WHAT CMD...: CMD's stdout alone and under memtally record are equal.
n=0
same() {
    what=$1; shift
    n=$((n + 1))
    "$@" > alone.$n || fail "$what: failed alone"
    "$MEMTALLY_BIN" record -q -o same.$n.mtly -- "$@" > seen.$n || fail "$what: failed under memtally"
    cmp -s alone.$n seen.$n ||
        fail "$what differs under memtally: $(diff alone.$n seen.$n | head -c 600 | tr '\0\n' '| ')"
    [ "$(info_get same.$n.mtly allocations)" -gt 0 ] || fail "$what: nothing recorded"
    echo "ok: $what is the same under memtally, and recorded"
}

unset LD_PRELOAD
# The recorded program itself reads its environment (env, cat): environ and
# what the kernel shows.
same "env" /usr/bin/env
same "/proc/self/environ" /bin/cat /proc/self/environ
# a shell's child inherits the environment the shell sees, without us
same "a child's environment" /bin/sh -c '/usr/bin/env; /bin/cat /proc/self/environ'
[ "$(ls same.3*.mtly | wc -l)" = 1 ] || fail "the shell's child was recorded without --follow-exec"

lib=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib/*/libm.so.6 2>/dev/null | head -n 1)
[ -n "$lib" ] || skip "no libm.so.6 to preload"
export LD_PRELOAD="$lib"
same "a user's LD_PRELOAD, in /proc/self/environ" /bin/cat /proc/self/environ
same "a user's LD_PRELOAD, in environ" /usr/bin/env
grep -qx "LD_PRELOAD=$lib" seen.$n || fail "the user's LD_PRELOAD is not as it was"
echo "ok: the user's LD_PRELOAD as it was"
unset LD_PRELOAD
# A user's own MEMTALLY_OUTPUT (for a program that starts recording itself)
# is the user's: kept, and not taken for ours.
export MEMTALLY_OUTPUT=/nonexistent/x
same "a user's MEMTALLY_OUTPUT" /usr/bin/env
unset MEMTALLY_OUTPUT
[ ! -e /nonexistent/x ] || fail "the user's MEMTALLY_OUTPUT was used"

# --follow-exec: the child is recorded, in a trace of its own.
mkdir follow
(cd follow && "$MEMTALLY_BIN" record -q --follow-exec -- /bin/sh -c '/bin/true; /bin/true') ||
    fail "record --follow-exec failed"
[ "$(ls follow/*.mtly | wc -l)" = 3 ] || fail "--follow-exec: $(ls follow) (want the shell and its two children)"
echo "ok: --follow-exec records the children"

# --follow-exec into a child given an environment of its own (env -i): the
# block is appended at exec, and the child is followed still; without
# --follow-exec it is not.
mkdir clean clean2
(cd clean && "$MEMTALLY_BIN" record -q --follow-exec -- env -i /bin/true) || fail "record --follow-exec env -i failed"
expect_eq "traces of env -i /bin/true with --follow-exec" 2 "$(ls clean/*.mtly | wc -l)"
(cd clean2 && "$MEMTALLY_BIN" record -q -- env -i /bin/true) || fail "record env -i failed"
expect_eq "traces of env -i /bin/true without it" 1 "$(ls clean2/*.mtly | wc -l)"

# The same through posix_spawn with an environment of its own.
cat >spawn.c <<'EOF_C'
#include <spawn.h>
#include <sys/wait.h>
int main(void)
{
    char *argv[] = { "/bin/true", 0 }, *envp[] = { "A=1", 0 };
    pid_t pid;
    int st;
    if (posix_spawn(&pid, "/bin/true", 0, 0, argv, envp) != 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    return WEXITSTATUS(st);
}
EOF_C
${CC:-cc} -o spawn spawn.c || fail "cannot build the posix_spawn program"
mkdir spawned
(cd spawned && "$MEMTALLY_BIN" record -q --follow-exec -- ../spawn) || fail "record --follow-exec spawn failed"
expect_eq "traces of a posix_spawn with its own environment, --follow-exec" 2 "$(ls spawned/*.mtly | wc -l)"
