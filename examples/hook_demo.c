/*
 * hook_demo: a hook of the program's own on every allocation memtally
 * records (mtl_set_hook), in the two ways Crystal's allocation hook is
 * used, on a tiny "runtime" that hands out typed objects from an arena and
 * reports them with mtl_alloc:
 *
 *   hook_demo                      counts objects by type, printed at exit
 *   hook_demo TYPE [DEPTH [MIN]]   the most frequent call stacks that create
 *                                  a TYPE, DEPTH frames deep (default 3),
 *                                  those seen MIN times or more (default 1)
 *
 * It records itself (into $MEMTALLY, else hook_demo.mtly) unless it runs
 * under memtally record already.  Its objects: 30 Token (24 B) and 10 Node
 * (64 B) from parse; 50 Value (16 B) from make_value, 30 called by
 * eval_add and 20 by eval_mul.
 *
 * Build: make (build/examples/hook_demo), or
 *   cc -rdynamic hook_demo.c $(pkg-config --cflags --libs memtally)
 * (-rdynamic: the stacks are named with dladdr, which sees exported names).
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memtally.h"

#define MAX_TYPES 8
#define MAX_DEPTH 16
#define MAX_STACKS 256

static struct {
    const char *name[MAX_TYPES];
    uint32_t tag[MAX_TYPES];
    unsigned long count[MAX_TYPES];
    int n;
} types;

static struct {
    uint32_t tag;           /* the target's tag, or 0: count by type */
    int depth;
    unsigned long min;
    struct { void *pc[MAX_DEPTH]; int n; unsigned long count; } stack[MAX_STACKS];
    int nstacks;
} target;

/* --- the "runtime": typed objects from an arena ------------------------- */

static char arena[1 << 16];
static size_t used;

static uint32_t type_of(const char *name)
{
    uint32_t tag = mtl_type(name);
    for (int i = 0; i < types.n; i++)
        if (types.tag[i] == tag)
            return tag;
    if (types.n < MAX_TYPES) {
        types.name[types.n] = name;
        types.tag[types.n++] = tag;
    }
    return tag;
}

void *new_object(const char *type, size_t size)
{
    void *p = arena + used;
    used += (size + 15) & ~(size_t)15;
    mtl_alloc(p, size, type_of(type));
    return p;
}

void *make_value(void) { return new_object("Value", 16); }
__attribute__((noinline)) void eval_add(void) { for (int i = 0; i < 30; i++) make_value(); }
__attribute__((noinline)) void eval_mul(void) { for (int i = 0; i < 20; i++) make_value(); }

__attribute__((noinline)) void parse(void)
{
    for (int i = 0; i < 30; i++)
        new_object("Token", 24);
    for (int i = 0; i < 10; i++)
        new_object("Node", 64);
}

/* --- the hook ------------------------------------------------------------ */

static void note_stack(void)
{
    void *pc[MAX_DEPTH + 16];
    int n = backtrace(pc, MAX_DEPTH + 16), k = 0;
    /* Below new_object are this hook and memtally; new_object is the
     * runtime's own: the stack starts at its caller. */
    for (int i = 0; i < n && !k; i++) {
        Dl_info d;
        if (dladdr(pc[i], &d) && d.dli_sname && !strcmp(d.dli_sname, "new_object"))
            k = i + 1;
    }
    if (!k)
        return;
    int m = n - k < target.depth ? n - k : target.depth;
    for (int s = 0; s < target.nstacks; s++)
        if (target.stack[s].n == m && !memcmp(target.stack[s].pc, pc + k, m * sizeof *pc)) {
            target.stack[s].count++;
            return;
        }
    if (target.nstacks < MAX_STACKS) {
        memcpy(target.stack[target.nstacks].pc, pc + k, m * sizeof *pc);
        target.stack[target.nstacks].n = m;
        target.stack[target.nstacks++].count = 1;
    }
}

static void on_event(const struct mtl_event *ev, void *arg)
{
    (void)arg;
    if (ev->type != MTL_EV_ALLOC || !ev->tag)
        return;
    if (target.tag) {
        if (ev->tag == target.tag)
            note_stack();
        return;
    }
    for (int i = 0; i < types.n; i++)
        if (types.tag[i] == ev->tag)
            types.count[i]++;
}

static int by_count(const void *a, const void *b)
{
    unsigned long x = ((const typeof(target.stack[0]) *)a)->count;
    unsigned long y = ((const typeof(target.stack[0]) *)b)->count;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void report(void)
{
    if (!target.tag) {
        for (int i = 0; i < types.n; i++)
            printf("%-8s %lu\n", types.name[i], types.count[i]);
        return;
    }
    qsort(target.stack, target.nstacks, sizeof target.stack[0], by_count);
    for (int s = 0; s < target.nstacks; s++) {
        if (target.stack[s].count < target.min)
            continue;
        printf("%lu", target.stack[s].count);
        for (int k = 0; k < target.stack[s].n; k++) {
            Dl_info d;
            const char *name = dladdr(target.stack[s].pc[k], &d) && d.dli_sname ? d.dli_sname : "??";
            printf("%s%s", k ? " <- " : " ", name);
        }
        printf("\n");
    }
}

int main(int argc, char **argv)
{
    if (!mtl_recording()) {
        const char *out = getenv("MEMTALLY");
        int rc = mtl_start(out && *out ? out : "hook_demo.mtly", NULL);
        if (rc < 0) {
            fprintf(stderr, "hook_demo: cannot record: %s\n", mtl_strerror(rc));
            return 1;
        }
    }
    if (argc > 1) {
        target.tag = type_of(argv[1]);
        target.depth = argc > 2 ? atoi(argv[2]) : 3;
        target.min = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
        if (target.depth < 1 || target.depth > MAX_DEPTH) {
            fprintf(stderr, "hook_demo: DEPTH is 1 to %d\n", MAX_DEPTH);
            return 2;
        }
    }
    /* Registered up front, so that the counts list them in this order. */
    type_of("Token");
    type_of("Node");
    type_of("Value");
    mtl_set_hook(on_event, NULL);
    parse();
    eval_add();
    eval_mul();
    mtl_set_hook(NULL, NULL);
    report();
    return 0;
}
