# Stacks are right in code built without frame pointers: a chain
# main -> outer -> middle -> inner -> malloc compiled with -O2
# -fomit-frame-pointer, and an allocation made inside libc (strdup), whose
# Debian build has no frame pointers either.  The addresses in the trace,
# resolved with addr2line, must name each function in order.
. "$MEMTALLY_ROOT/tests/integration/lib.sh"
command -v addr2line >/dev/null || skip "addr2line (binutils) is not installed"

cat > chain.c <<'C'
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) void *inner(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *middle(size_t n) { void *p = inner(n + 1); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void *outer(size_t n) { void *p = middle(n + 1); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) char *copy(const char *s) { char *d = strdup(s); __asm__ volatile("" ::: "memory"); return d; }
int main(void)
{
    void *p = outer(4321);
    char *s = copy("frame pointers are not needed");
    int rc = p && s ? 0 : 1;
    free(p);
    free(s);
    return rc;
}
C
gcc -O2 -g -fomit-frame-pointer -o chain chain.c || fail "cannot build the test program"
record t.mtly ./chain || fail "record failed"
"$MEMTALLY_BIN" dump --stacks t.mtly > dump.txt || fail "dump failed"

# frames_of SIZE: the functions of the stack of the allocation of SIZE bytes
# that lie in ./chain, innermost first, one per line.
frames_of() {
    awk -v size="size=$1" '
        $3 == "alloc" { inside = ($5 == size); next }
        /^    #/ { if (inside) print $3; next }
        { inside = 0 }' dump.txt |
    while read -r where; do
        case "$where" in
            chain+*) addr2line -f -e chain "$(printf %x $(( ${where#chain+} - 1 )))" | head -n 1 ;;
            *) echo "${where%%+*}" ;;
        esac
    done
}

got=$(frames_of 4323 | tr '\n' ' ')
echo "stack of the 4323-byte block: $got"
case "$got" in
    "inner middle outer main libc.so.6 "*) echo "ok: inner < middle < outer < main" ;;
    *) fail "the stack of malloc(4323) is not inner, middle, outer, main: $got" ;;
esac

got=$(frames_of 30 | tr '\n' ' ')
echo "stack of the strdup block: $got"
case "$got" in
    "libc.so.6 copy main libc.so.6 "*) echo "ok: strdup (in libc) < copy < main" ;;
    *) fail "the stack of strdup is not libc, copy, main: $got" ;;
esac
