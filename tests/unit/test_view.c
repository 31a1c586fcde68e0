/*
 * test_view.c: the view's sites and visible frames (src/analyze/view.h)
 * on hand-made stack nodes and a namer that names addresses by rule, so
 * every answer is known: plumbing hidden, wrappers passed over, unnamed
 * frames given to a named caller of the same module only, --hide and
 * --keep-alloc-frames.  The last test resolves hundreds of frames in an
 * order that grows the view's tables while a site is being decided (a
 * use-after-move there once crashed `report` on git's trace).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/view.h"
#include "check.h"
#include "trace/defs.h"

/* Modules: 0 the program, 1 a library, 2 libc. */
static const struct mtl_module modules[] = {
    { .index = 0, .path = "/bin/prog" },
    { .index = 1, .path = "/lib/libfoo.so" },
    { .index = 2, .path = "/lib/libc.so.6" },
};

/* Addresses name themselves: 0xA000 + i is "main_i", 0xB000 + i
 * "xmalloc" (a wrapper), 0xC000 "malloc" (plumbing), below 0x1000
 * unnamed. */
static int resolve(void *arg, uint32_t module, uint64_t addr, const struct mtl_symbol **out)
{
    static struct mtl_symbol sym;
    static char name[64];
    (void)arg;
    memset(&sym, 0, sizeof sym);
    sym.module = modules[module].path;
    sym.offset = addr;
    if (addr >= 0xC000)
        sym.function = "malloc";
    else if (addr >= 0xB000)
        sym.function = "xmalloc";
    else if (addr >= 0xA000) {
        snprintf(name, sizeof name, "main_%u", (unsigned)(addr - 0xA000));
        sym.function = name;
    }
    *out = &sym;
    return 1;
}

#define MAX_NODES 4096

static uint32_t parent[MAX_NODES], module[MAX_NODES];
static uint64_t frame[MAX_NODES];
static uint8_t custom[MAX_NODES];
static struct mtl_defs defs;

/* A node under p at (mod, addr); its id. Addresses are return addresses,
 * as recorded: the view looks them up as given. */
static uint32_t node(uint32_t p, uint32_t mod, uint64_t addr)
{
    uint32_t id = defs.nnodes++;
    CHECK(id < MAX_NODES);
    parent[id] = p;
    module[id] = mod;
    frame[id] = addr;
    return id;
}

static void reset(void)
{
    memset(&defs, 0, sizeof defs);
    defs.parent = parent;
    defs.frame = frame;
    defs.module = module;
    defs.custom = custom;
    defs.modules = modules;
    defs.nmodules = 3;
    defs.nnodes = 1; /* the root */
}

static struct mtl_view *open_view(const struct mtl_view_options *opt)
{
    static const struct mtl_view_options none;
    struct mtl_view_namer namer = { .resolve = resolve };
    struct mtl_view *v;
    CHECK(mtl_view_open(&v, &defs, &namer, opt ? opt : &none) == 0);
    return v;
}

static const char *site_name(struct mtl_view *v, uint32_t stack)
{
    uint32_t loc = mtl_view_site(v, stack);
    return loc == MTL_NO_LOCATION ? "(none)" : mtl_view_location(v, loc)->function;
}

static void test_rules(void)
{
    reset();
    uint32_t m1 = node(0, 0, 0xA001);
    /* main_1 -> libfoo's unnamed static: the static is passed over. */
    uint32_t lib = node(node(m1, 1, 0xA002), 1, 0x10);
    /* main_1 -> unnamed in libfoo, whose caller is the program: kept. */
    uint32_t other = node(m1, 1, 0x20);
    /* main_1 -> xmalloc -> malloc: the wrapper's caller; malloc hidden. */
    uint32_t wrapped = node(node(m1, 0, 0xB000), 2, 0xC000);
    /* an unnamed program frame under nothing named: its address. */
    uint32_t stripped = node(node(0, 0, 0x30), 2, 0xC000);

    struct mtl_view *v = open_view(NULL);
    CHECK(!strcmp(site_name(v, lib), "main_2"));
    CHECK(!strcmp(site_name(v, other), "libfoo.so+0x20"));
    CHECK(!strcmp(site_name(v, wrapped), "main_1"));
    CHECK(!strcmp(site_name(v, stripped), "prog+0x30"));
    const uint32_t *locs;
    size_t n;
    CHECK(mtl_view_frames(v, wrapped, &locs, &n) == 0);
    CHECK_EQ(n, 2); /* xmalloc, main_1: malloc is hidden */
    CHECK(!strcmp(mtl_view_location(v, locs[0])->function, "xmalloc"));
    CHECK(mtl_view_location(v, locs[0])->passed);
    CHECK(mtl_view_frames_all(v, wrapped, &locs, &n) == 0);
    CHECK_EQ(n, 3);
    CHECK(mtl_view_location(v, locs[0])->hidden);
    CHECK_EQ(mtl_view_stack_matches(v, wrapped, "malloc"), 1);
    CHECK_EQ(mtl_view_stack_matches(v, lib, "xmalloc"), 0);
    mtl_view_close(v);

    /* --keep-alloc-frames: every frame can be the site. */
    struct mtl_view_options keep = { .keep_alloc_frames = 1 };
    v = open_view(&keep);
    CHECK(!strcmp(site_name(v, lib), "libfoo.so+0x10"));
    CHECK(!strcmp(site_name(v, wrapped), "malloc"));
    mtl_view_close(v);

    /* --hide main_1 and --wrapper main_2: the site moves outwards. */
    const char *hide[] = { "main_1" }, *wrap[] = { "main_2" };
    struct mtl_view_options o = { .hide = hide, .nhide = 1, .wrappers = wrap, .nwrappers = 1 };
    v = open_view(&o);
    CHECK(!strcmp(site_name(v, wrapped), "xmalloc")); /* all passed over: the innermost */
    /* only passed-over frames are left: the innermost visible one */
    CHECK(!strcmp(site_name(v, lib), "libfoo.so+0x10"));
    mtl_view_close(v);
}

/* Each stack: main_i -> unnamed libfoo frame i.  Deciding the unnamed
 * frame's site resolves its caller, which adds locations while the
 * unnamed one's are being looked at; 1500 of them cross several
 * growths of every table. */
static void test_growth(void)
{
    reset();
    uint32_t leaves[1500];
    for (uint32_t i = 0; i < 1500; i++) {
        uint32_t m = node(0, 1, 0xA000 + i);
        leaves[i] = node(m, 1, 0x100 + i);
    }
    uint32_t lone = node(0, 0, 0xA000 + 4000);
    struct mtl_view *v = open_view(NULL);
    /* One location first, so that the tables grow (at powers of two)
     * while a caller is resolved, not a leaf. */
    CHECK(!strcmp(site_name(v, lone), "main_4000"));
    for (uint32_t i = 0; i < 1500; i++) {
        char want[32];
        snprintf(want, sizeof want, "main_%u", i);
        CHECK(!strcmp(site_name(v, leaves[i]), want));
    }
    CHECK_EQ(mtl_view_location_count(v), 3001);
    CHECK_EQ(mtl_view_function_count(v), 3001);
    mtl_view_close(v);
}

int main(void)
{
    test_rules();
    test_growth();
    CHECKS_DONE();
}
