/*
 * stacks.c: capturing the call stack of an allocation and interning it.
 *
 * Unwinding follows the DWARF CFI (.eh_frame) of every frame, so stacks
 * are right in code built without frame pointers, as every Debian library
 * is.  Our own walker (unwind.c) goes first: it reuses the frames of the
 * thread's previous stack that still hold.  Where it cannot follow a
 * frame (signal frames, CFI by expressions, code without CFI), libunwind's
 * unw_backtrace walks the stack instead.  MEMTALLY_UNWIND=libunwind makes
 * libunwind do every walk; MEMTALLY_UNWIND=check makes both walk every
 * stack and says at exit how many differed (for memtally's tests).
 *
 * Interning.  Stacks are stored as a prefix tree (trie) of frames, rooted
 * at the outermost frame: node = (parent node, address).  A stack's id is
 * its innermost node's id, so a stack that shares its callers with another
 * costs one node, and each node is written to the trace once.  Looking a
 * stack up in the trie costs a hash probe per frame, each a likely cache
 * miss, under a mutex: that is only for stacks never seen before, and
 * once for a stack looked up again past the cache and the guess.  Seen
 * stacks are found by a 64-bit hash of the whole stack, first in a small
 * direct-mapped per-thread cache, then in a global table that readers
 * probe without a lock, which a stack enters when it is looked up again
 * after it was made.  Both check the hash, the depth and the innermost
 * address: two different stacks would have to agree on all three to be
 * confused (odds about 2^-64 per pair), a risk docs/DESIGN.md accepts for
 * the speed.  Between the two, a guess: the stack the thread looked up
 * after its previous one, the last time it missed the cache.  Recursive
 * and tree-walking code repeats long sequences of stacks too many to
 * cache; the guessed stack's entry is checked like a cache entry, and its
 * node ids, given in the order the stacks were first seen, are near the
 * previous one's in memory, where the global table's entry is a cache
 * miss.
 *
 * Recent stacks.  Interpreters, databases and most real programs repeat a
 * few dozen stacks over and over: 95 to 99% of the allocations of perl,
 * python3 and sqlite3 have the stack of one of the thread's last 64
 * (bench/stack_repeats.sh).  Each thread keeps the last stacks it walked
 * to their end (or to the depth limit), each with what its walk read: the
 * program's frame (address, stack pointer, rbp) and, for every frame
 * after, where its return address and saved rbp were and what they were.
 * An allocation from the same frame whose words all still read the same
 * has the same stack, by the same argument as the walker's reuse of its
 * last walk (unwind.c): its id, without a step, a hash or a lookup.
 * They are kept in recent.c, which also decides how many.
 *
 * The node arrays live in the region (common/region.h), reserved once and
 * never moved, so the writer (memtally record, or our writer thread) reads
 * nodes below the published count without the lock.
 */
#include "preload/recent.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/varint.h"
#include "trace/format.h"

/* 1024 entries, 24 KiB: small enough to stay in the processor's first
 * cache beside the program's data (docs/DESIGN.md, "Unique stacks"). */
#define CACHE_BITS 10

struct cache_entry {
    uint64_t hash;
    uint64_t leaf;
    uint32_t id;
    uint32_t depth;
};

struct stack_cache {
    uint32_t gen;
    uint32_t prev; /* the stack last returned (0: none) */
    uint64_t missed, guessed; /* lookups past the cache, and guessed right */
    /* The last stack interned, from its outermost frame: each frame's
     * address and node, so that the next one walks the trie only from
     * where it differs (a new stack is most often the last one's callers
     * and a frame or two of its own).  Valid in generation path_gen. */
    uint32_t path_n, path_gen;
    /* The last stack past the cache and the guess was a new one: so is
     * the next, most often (a tree or a parse seen for the first time). */
    uint32_t made_new;
    uint64_t path_addr[MTL_MAX_DEPTH];
    uint32_t path_id[MTL_MAX_DEPTH];
    struct cache_entry e[1u << CACHE_BITS];
    struct mtl__unwind_memo memo; /* the thread's last walk */
    struct recent *recent;        /* made on the first walk that ends */
};

/* What is known of a stack id, for a guess of it (st.known). */
struct known_stack {
    uint64_t hash;
    uint32_t depth;
    uint32_t next; /* the stack looked up after it last time (0: none) */
};

/* An entry of the global table: a stack's hash (which mixes in its
 * depth) and the low half of its leaf's address, as a check that the
 * hash did not collide, and its id: 16 bytes an entry where a cache
 * entry's 24 took binary trees' 917,502 stacks to 48 MB.  Everything is
 * in the entry: a lookup reads one line (a check through st.known and
 * ADDR by id, at 8 bytes an entry, made python3 4 to 7% slower). */
struct table_entry {
    uint64_t hash;
    uint32_t leaf_lo;
    uint32_t id;
};

/* The global table: entries are written under st.mu and published by the
 * release store of their id; a grown table replaces the old one, which
 * stays mapped for readers still probing it, its memory given back
 * (retire_table). */
struct stack_table {
    size_t mask;
    size_t count;
    struct table_entry e[];
};

static struct {
    pthread_mutex_t mu;
    uint32_t *slots;       /* open addressing: node ids, 0 = empty */
    size_t nslots;
    atomic_uint gen;       /* bumped when addresses may mean other code */
    _Atomic(struct stack_table *) table;
    unsigned skip;         /* frames of memtally itself atop every stack */
    uint64_t self_lo, self_hi; /* libmemtally.so's code */
    /* Each thread state's cache, kept for the next thread that takes it. */
    struct stack_cache *cache[MTL_MAX_STATES];
    /* By stack id (an innermost node's id): its hash and depth, to check a
     * guess, and the stack looked up after it last time (0: none).
     * Reserved for every node (or for fewer, under an address space
     * limit: ids from known_cap on are not guessed), touched as stacks
     * come. */
    struct known_stack *known;
    uint32_t known_cap;
    /* MEMTALLY_UNWIND=check: stacks walked by both, and how many differed. */
    atomic_ulong checked, differed, own_failed;
    /* Stacks interned the first time (those with an id in known), and
     * stacks put in the table (looked up again): written under mu, read
     * by check mode's report at exit. */
    uint64_t made, tabled;
} st = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* The nodes, in the region: parent[id] (node 0 is the root, no frame) and
 * addr[id]. */
#define PARENT (mtl_region_parents(mtl__pl.region))
#define ADDR (mtl_region_addrs(mtl__pl.region))

static inline uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static inline size_t node_slot(uint32_t parent, uint64_t addr)
{
    return (size_t)mix(addr * 0x9e3779b97f4a7c15ull ^ parent);
}

/* A trie slot holds a node id in its low bits and, above them, bits of
 * the node's hash that no slot index uses: a probe passes another node
 * without reading its parent and address, each a likely cache miss. */
#define SLOT_ID_BITS 26
#define SLOT_ID_MASK ((1u << SLOT_ID_BITS) - 1)
_Static_assert(MTL_MAX_NODES <= (1u << SLOT_ID_BITS), "a node id fits its slot");

static inline uint32_t slot_tag(size_t hash)
{
    return (uint32_t)(hash >> 58) << SLOT_ID_BITS;
}

#define GROW_AHEAD 16
static int grow_slots(void)
{
    size_t n = st.nslots ? st.nslots * 2 : (1u << 16);
    uint32_t *s = mtl__pages_alloc_random(n * sizeof *s);
    if (!s)
        return -1;
    uint32_t count = atomic_load(&mtl__pl.region->nnodes);
    const uint32_t *parent = PARENT;
    const uint64_t *addr = ADDR;
    for (uint32_t id = 1; id < count; id++) {
        if (!st.slots)
            break;
        /* Each node's slot is a random line of the new array: asked for
         * ahead, the misses overlap instead of coming one by one. */
        if (id + GROW_AHEAD < count)
            __builtin_prefetch(&s[node_slot(parent[id + GROW_AHEAD], addr[id + GROW_AHEAD]) & (n - 1)], 1);
        size_t hash = node_slot(parent[id], addr[id]), i = hash & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = slot_tag(hash) | id;
    }
    mtl__pages_free(st.slots, st.nslots * sizeof *st.slots);
    __atomic_store_n(&st.slots, s, __ATOMIC_RELAXED); /* prefetch_new reads them unlocked */
    __atomic_store_n(&st.nslots, n, __ATOMIC_RELAXED);
    return 0;
}

static struct stack_table *new_table(size_t n)
{
    struct stack_table *t = mtl__pages_alloc_random(sizeof *t + n * sizeof t->e[0]);
    if (t)
        t->mask = n - 1;
    return t;
}

/* Lock-free: the id of a stack seen before, or 0. */
static uint32_t table_find(uint64_t h, uint64_t leaf)
{
    struct stack_table *t = atomic_load_explicit(&st.table, memory_order_acquire);
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        struct table_entry *e = &t->e[i];
        uint32_t id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);
        if (!id)
            return 0;
        if (e->hash == h && e->leaf_lo == (uint32_t)leaf)
            return id;
    }
}

/* The entry is written before the release store of the id that
 * publishes it. */
static void table_put_locked(struct stack_table *t, uint64_t h, uint32_t leaf_lo, uint32_t id)
{
    size_t i = h & t->mask;
    while (t->e[i].id)
        i = (i + 1) & t->mask;
    t->e[i].hash = h;
    t->e[i].leaf_lo = leaf_lo;
    __atomic_store_n(&t->e[i].id, id, __ATOMIC_RELEASE);
    t->count++;
}

/* A table replaced by a larger one: its memory goes back to the system,
 * its addresses stay mapped.  A reader still probing it then reads zeros:
 * an empty entry, "not found", and the stack is found under the lock
 * instead (a zeroed hash or depth never matches a stack's).  Its first
 * page, with the mask, is kept.  Binary trees' 917,502 stacks left 48 MB
 * of such tables resident before. */
static void retire_table(struct stack_table *t)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = sizeof *t + (t->mask + 1) * sizeof t->e[0];
    if (size > page)
        madvise((char *)t + page, (size - page) / page * page, MADV_DONTNEED);
}

/* With st.mu held. */
static void table_add(uint64_t h, uint64_t leaf, uint32_t id)
{
    struct stack_table *t = atomic_load_explicit(&st.table, memory_order_relaxed);
    if ((t->count + 1) * 2 > t->mask + 1) {
        struct stack_table *g = new_table((t->mask + 1) * 2);
        if (!g)
            return; /* found by the trie walk instead */
        for (size_t i = 0; i <= t->mask; i++)
            if (t->e[i].id)
                table_put_locked(g, t->e[i].hash, t->e[i].leaf_lo, t->e[i].id);
        atomic_store_explicit(&st.table, g, memory_order_release);
        retire_table(t);
        t = g;
    }
    table_put_locked(t, h, (uint32_t)leaf, id);
}

static int find_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uint64_t here = (uint64_t)(uintptr_t)&mtl__capture_stack;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && here >= lo && here < lo + ph->p_memsz) {
            st.self_lo = lo;
            st.self_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

/* Where our own code is: frames in it left atop a stack after the
 * counted ones (a hook that the compiler made a tail call or not) are
 * dropped too. */
static void find_self(void)
{
    dl_iterate_phdr(find_self_cb, NULL);
}

int mtl__stacks_init(void)
{
    struct stack_table *t = new_table(1u << 14);
    if (!t || grow_slots() < 0)
        return -1;
    /* A gigabyte of address space: a program under ulimit -v may not have
     * it, and recording must not fail for a guess. */
    for (uint32_t cap = MTL_MAX_NODES; cap >= (1u << 16) && !st.known; cap >>= 2) {
        st.known = mtl__pages_alloc_growing((size_t)cap * sizeof *st.known);
        st.known_cap = st.known ? cap : 0;
    }
    atomic_store(&st.table, t);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    /* mtl__capture_stack's frame and the hook's are not the program's. */
    st.skip = 2;
    find_self();
    return mtl__unwind_init();
}

/* How many of frames[0 .. n), from the outermost, the thread's last
 * interned path has, when that path is of generation gen (0 if not). */
static int path_common(const struct stack_cache *cache, void *const *frames, int n, unsigned gen)
{
    int d = 0;
    if (cache && cache->path_gen == gen)
        while (d < n && d < (int)cache->path_n &&
               cache->path_addr[d] == (uint64_t)(uintptr_t)frames[n - 1 - d])
            d++;
    return d;
}

/* Before the lookup of a stack that the cache and the guess missed, most
 * often a new one (binary trees: 917,502): the table's line (table: it is
 * asked first), and the trie's slots for its first frames past the
 * thread's last interned path (common of them in it), so that their cache
 * misses overlap instead of following one another, the trie's under the
 * lock.  A frame past the
 * first new one would be a new node's child: its parent is guessed as
 * the next id.  No lock: a slot array being replaced (grow_slots) costs
 * a useless prefetch, never a fault. */
#define PREFETCH_FRAMES 3
static void prefetch_new(const struct stack_cache *cache, void *const *frames, int n,
                         uint64_t h, int common, int table)
{
    if (table) {
        struct stack_table *t = atomic_load_explicit(&st.table, memory_order_acquire);
        __builtin_prefetch(&t->e[h & t->mask]);
    }
    uint32_t *slots = __atomic_load_n(&st.slots, __ATOMIC_RELAXED);
    size_t mask = __atomic_load_n(&st.nslots, __ATOMIC_RELAXED) - 1;
    uint32_t parent = common ? cache->path_id[common - 1] : 0;
    uint32_t next = atomic_load_explicit(&mtl__pl.region->nnodes, memory_order_relaxed);
    for (int i = 0; i < PREFETCH_FRAMES && common + i < n; i++) {
        uint64_t addr = (uint64_t)(uintptr_t)frames[n - 1 - common - i];
        __builtin_prefetch(&slots[node_slot(i ? next + (uint32_t)i - 1 : parent, addr) & mask]);
    }
}

/* With st.mu held: the child of parent for addr, created if new.  Returns 0
 * when the table is full. */
static uint32_t child(uint32_t parent, uint64_t addr)
{
    _Atomic uint32_t *n = &mtl__pl.region->nnodes;
    uint32_t *parents = PARENT;
    uint64_t *addrs = ADDR;
    uint32_t count = atomic_load_explicit(n, memory_order_relaxed);
    if ((size_t)count * 2 >= st.nslots) {
        if (grow_slots() < 0)
            return 0;
    }
    size_t mask = st.nslots - 1;
    size_t hash = node_slot(parent, addr), i = hash & mask;
    uint32_t tag = slot_tag(hash);
    for (;; i = (i + 1) & mask) {
        uint32_t e = st.slots[i], id = e & SLOT_ID_MASK;
        if (!e)
            break;
        if ((e & ~SLOT_ID_MASK) == tag && parents[id] == parent && addrs[id] == addr)
            return id;
    }
    if (count >= MTL_MAX_NODES)
        return 0;
    parents[count] = parent;
    addrs[count] = addr;
    st.slots[i] = tag | count;
    atomic_store_explicit(n, count + 1, memory_order_release);
    return count;
}

uint32_t mtl__stack_of_address(uint64_t addr)
{
    pthread_mutex_lock(&st.mu);
    uint32_t id = child(0, addr);
    pthread_mutex_unlock(&st.mu);
    return id;
}

/* The node of frames[0 .. n) (innermost first), its callers' first, made
 * where new; cache: the thread's, whose last path spares the trie's
 * lookups of the frames in common (NULL: none), common of them when the
 * generation is still gen (path_common). */
static uint32_t intern(struct stack_cache *cache, void *const *frames, int n, uint64_t h,
                       unsigned gen, int common)
{
    uint32_t id = 0;
    uint64_t leaf = (uint64_t)(uintptr_t)frames[0];
    pthread_mutex_lock(&st.mu);
    uint32_t made_from = atomic_load_explicit(&mtl__pl.region->nnodes, memory_order_relaxed);
    int d = 0; /* frames done, from the outermost */
    /* Under st.mu: an unload (a new generation, new nodes) cannot come
     * between the check and the use of the path. */
    if (cache && gen == atomic_load_explicit(&st.gen, memory_order_relaxed) && common) {
        d = common;
        id = cache->path_id[d - 1];
    }
    for (; d < n; d++) {
        uint64_t addr = (uint64_t)(uintptr_t)frames[n - 1 - d];
        id = child(id, addr);
        if (!id)
            break;
        if (cache && d < MTL_MAX_DEPTH) {
            cache->path_addr[d] = addr;
            cache->path_id[d] = id;
        }
    }
    if (cache) {
        cache->path_n = (uint32_t)(d < MTL_MAX_DEPTH ? d : MTL_MAX_DEPTH);
        cache->path_gen = atomic_load_explicit(&st.gen, memory_order_relaxed);
        cache->made_new = id >= made_from;
    }
    /* Before a guess can name id: a guess of id is checked on it. */
    if (id && id < st.known_cap && !st.known[id].depth) {
        st.known[id].hash = h;
        st.known[id].depth = (uint32_t)n;
        __atomic_store_n(&st.made, st.made + 1, __ATOMIC_RELAXED);
    }
    /* Into the table when looked up again: a stack just made is in no
     * entry, and most are never asked of it again (binary trees' are
     * guessed).  Made with each stack, the table and its lines cost a new
     * stack a third of its time: its memory zeroed by the kernel, twice
     * (the table grows by doubling), and a cache miss. */
    if (id && id < made_from && !table_find(h, leaf)) {
        table_add(h, leaf, id);
        __atomic_store_n(&st.tabled, st.tabled + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&st.mu);
    return id;
}

/* A thread with interpreter frames (mtl_frame_push): the native frames
 * with their stack pointers, and each interpreter frame placed between
 * the native function that pushed it (its stack pointer at or above the
 * push's) and what that function called since (below it), innermost
 * first, into out[0 .. depth).  Inlined into mtl__capture_stack, so that
 * the unwind starts in the same frame as unw_backtrace's.  Slower than
 * unw_backtrace: only for such threads. */
static inline __attribute__((always_inline)) int
unwind_with_interpreter(void **out, int depth, unsigned drop)
{
    struct mtl__tls *tls = &mtl__tls;
    unw_context_t uc;
    unw_cursor_t c;
    if (unw_getcontext(&uc) < 0 || unw_init_local(&c, &uc) < 0)
        return 0;
    int j = (int)(tls->iframes < MTL_IFRAMES ? tls->iframes : MTL_IFRAMES) - 1, n = 0;
    for (int i = 0; n < depth; i++) {
        unw_word_t ip, sp;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || unw_get_reg(&c, UNW_REG_SP, &sp) < 0 ||
            ip == 0)
            break;
        if (i >= (int)drop) {
            for (; j >= 0 && n < depth && sp >= tls->iframe_sp[j]; j--)
                if (tls->iframe_id[j]) /* 0: mtl_frame failed; nothing to show */
                    out[n++] = (void *)(uintptr_t)(MTL_NODE_CUSTOM | tls->iframe_id[j]);
            if (n < depth)
                out[n++] = (void *)(uintptr_t)ip;
        }
        if (unw_step(&c) <= 0)
            break;
    }
    for (; j >= 0 && n < depth; j--)
        if (tls->iframe_id[j])
            out[n++] = (void *)(uintptr_t)(MTL_NODE_CUSTOM | tls->iframe_id[j]);
    return n;
}


void mtl__stacks_report(void)
{
    if (mtl__pl.opt.unwinder != MTL_UNWIND_CHECK)
        return;
    uint64_t reused = 0, stepped = 0, missed = 0, guessed = 0, found = 0, kept = 0;
    for (size_t i = 0; i < MTL_MAX_STATES; i++)
        if (st.cache[i]) {
            reused += st.cache[i]->memo.reused;
            stepped += st.cache[i]->memo.stepped;
            missed += st.cache[i]->missed;
            guessed += st.cache[i]->guessed;
            if (st.cache[i]->recent) {
                found += st.cache[i]->recent->found;
                kept += st.cache[i]->recent->kept;
            }
        }
    mtl__say("unwind check: %lu stacks walked by both, %lu differed; %lu left to libunwind; "
             "%llu frames reused, %llu stepped; %llu stacks past the cache, %llu guessed; "
             "%llu recent stacks found, %llu kept; %llu stacks made, %llu put in the table "
             "when looked up again",
             (unsigned long)atomic_load(&st.checked), (unsigned long)atomic_load(&st.differed),
             (unsigned long)atomic_load(&st.own_failed), (unsigned long long)reused,
             (unsigned long long)stepped, (unsigned long long)missed,
             (unsigned long long)guessed, (unsigned long long)found, (unsigned long long)kept,
             (unsigned long long)__atomic_load_n(&st.made, __ATOMIC_RELAXED),
             (unsigned long long)__atomic_load_n(&st.tabled, __ATOMIC_RELAXED));
}

/* Whether node id is the stack frames[0 .. n) (innermost first): the
 * trie's own answer, for check mode. */
static int node_is_stack(uint32_t id, void *const *frames, int n)
{
    for (int i = 0; i < n; i++, id = PARENT[id])
        if (!id || ADDR[id] != (uint64_t)(uintptr_t)frames[i])
            return 0;
    return id == 0;
}

/* A stack's hash, from its outermost frame in (as unwind.c keeps it). */
static uint64_t hash_of(void *const *frames, int n)
{
    uint64_t h = MTL_STACK_HASH_SEED;
    for (int i = n - 1; i >= 0; i--)
        h = mtl__stack_hash_step(h, (uint64_t)(uintptr_t)frames[i]);
    return h;
}

static __attribute__((noinline)) struct stack_cache *cache_of_slow(uint32_t slot)
{
    /* Slot 0 is shared by threads past their exit: no cache. */
    struct stack_cache *cache = st.cache[slot];
    if (MTL_UNLIKELY(!cache && slot)) {
        cache = st.cache[slot] = mtl__pages_alloc(sizeof *cache);
        if (cache)
            cache->gen = atomic_load(&st.gen);
    }
    uint32_t gen = atomic_load_explicit(&st.gen, memory_order_acquire);
    if (MTL_UNLIKELY(cache && cache->gen != gen)) {
        /* Addresses may mean other code now: nothing of before holds. */
        memset(cache->e, 0, sizeof cache->e);
        cache->prev = 0;
        mtl__unwind_memo_forget(&cache->memo);
        mtl__recent_forget(cache->recent);
        cache->gen = gen;
    }
    return cache;
}

/* The thread state slot's cache; inline for its common case (made, and
 * of this generation), on every allocation's path. */
static inline struct stack_cache *cache_of(uint32_t slot)
{
    struct stack_cache *cache = st.cache[slot];
    unsigned gen = atomic_load_explicit(&st.gen, memory_order_acquire);
    if (MTL_LIKELY(cache && cache->gen == gen))
        return cache;
    return cache_of_slow(slot);
}

/* MEMTALLY_UNWIND=check: our walker's frames of the program (from its
 * frame in, either entry) against libunwind's, less those of memtally atop
 * them. */
static void check_walk(void *const *frames, int n)
{
    void *buf[MTL_MAX_DEPTH + 16];
    int m = unw_backtrace(buf, (int)mtl__pl.opt.depth + 16), i = 0;
    atomic_fetch_add(&st.checked, 1);
    while (i < m && (uint64_t)(uintptr_t)buf[i] - st.self_lo < st.self_hi - st.self_lo)
        i++;
    int same = n <= m - i && (n == (int)mtl__pl.opt.depth || n == m - i);
    for (int k = 0; same && k < n; k++)
        same = buf[i + k] == frames[k];
    if (!same && atomic_fetch_add(&st.differed, 1) < 5)
        mtl__say("unwind check: own %d frames, libunwind %d: %p/%p %p/%p", n, m - i,
                 n > 0 ? frames[0] : NULL, i < m ? buf[i] : NULL, n > 1 ? frames[1] : NULL,
                 i + 1 < m ? buf[i + 1] : NULL);
}

static uint32_t find_stack(struct stack_cache *cache, void *const *frames, int n,
                           const struct mtl__unwind_walk *walk);

uint32_t mtl__capture_stack(uint32_t slot, unsigned skip)
{
    void *buf[MTL_MAX_DEPTH + 8];
    unsigned drop = st.skip + skip;
    void *const *frames = buf;
    const struct mtl__unwind_walk *walk = NULL; /* when our walker found them */
    int n = -1;
    struct stack_cache *cache = cache_of(slot);
    if (MTL_UNLIKELY(mtl__tls.iframes)) {
        n = unwind_with_interpreter(buf, (int)mtl__pl.opt.depth, drop);
        if (n <= 0)
            return 0;
    } else {
        if (MTL_LIKELY(cache && mtl__pl.opt.unwinder != MTL_UNWIND_LIBUNWIND)) {
            /* Its frame 0 is mtl__unwind's own, which unw_backtrace's
             * output does not have. */
            n = mtl__unwind(&cache->memo, mtl__pl.opt.depth + drop + 1);
            if (n >= 1) {
                walk = &cache->memo.walk;
                frames = walk->ip + 1;
                n--;
            } else if (mtl__pl.opt.unwinder == MTL_UNWIND_CHECK) {
                atomic_fetch_add(&st.own_failed, 1);
            }
        }
        if (n < 0)
            n = unw_backtrace(buf, (int)(mtl__pl.opt.depth + drop));
        frames += drop;
        n = n > (int)drop ? n - (int)drop : 0;
        while (n > 1 && (uint64_t)(uintptr_t)frames[0] - st.self_lo < st.self_hi - st.self_lo) {
            frames++;
            n--;
        }
        if (walk && MTL_UNLIKELY(mtl__pl.opt.unwinder == MTL_UNWIND_CHECK))
            check_walk(frames, n);
        if (n == 0)
            return 0; /* no frame of the program: the empty stack */
    }

    return find_stack(cache, frames, n, walk);
}

/* The id of the stack frames[0 .. n) (innermost first), walk: the walk
 * they are in (its hashes made), else NULL. */
static uint32_t find_stack(struct stack_cache *cache, void *const *frames, int n,
                           const struct mtl__unwind_walk *walk)
{
    /* From the outermost frame in; our walker has it made for its frames
     * (only the frames it did not reuse cost anything). */
    uint64_t h;
    if (walk) {
        h = walk->hs[frames - walk->ip];
        if (MTL_UNLIKELY(mtl__pl.opt.unwinder == MTL_UNWIND_CHECK) &&
            h != hash_of(frames, n) && atomic_fetch_add(&st.differed, 1) < 5)
            mtl__say("unwind check: a reused walk's hash differs from its frames'");
    } else {
        h = hash_of(frames, n);
    }
    h = mix(h ^ (uint64_t)n);

    uint64_t leaf = (uint64_t)(uintptr_t)frames[0];
    struct cache_entry *e = cache ? &cache->e[h & ((1u << CACHE_BITS) - 1)] : NULL;
    if (e && e->hash == h && e->leaf == leaf && e->depth == (uint32_t)n && e->id) {
        cache->prev = e->id;
        return e->id;
    }
    uint32_t prev = cache && cache->prev < st.known_cap ? cache->prev : 0, id = 0;
    if (prev) {
        cache->missed++;
        uint32_t guess = __atomic_load_n(&st.known[prev].next, __ATOMIC_ACQUIRE);
        const struct known_stack *k = guess < st.known_cap ? &st.known[guess] : NULL;
        if (guess && k && k->hash == h && k->depth == (uint32_t)n && ADDR[guess] == leaf) {
            id = guess;
            cache->guessed++;
            if (MTL_UNLIKELY(mtl__pl.opt.unwinder == MTL_UNWIND_CHECK) &&
                !node_is_stack(guess, frames, n) &&
                atomic_fetch_add(&st.differed, 1) < 5)
                mtl__say("unwind check: a guessed stack is not its frames' node");
        }
    }
    unsigned gen = 0;
    int common = 0;
    if (!id) {
        gen = atomic_load_explicit(&st.gen, memory_order_relaxed);
        common = path_common(cache, frames, n, gen);
        /* After a new stack, the trie first: the next is most often new
         * too, which the trie knows as surely as the table, and a new
         * stack does not go into the table (intern).  The table's probe,
         * a line of its own to wait for, was 60% of find_stack's time on
         * binary trees' first trees, all new stacks. */
        int table_first = !cache || !cache->made_new;
        prefetch_new(cache, frames, n, h, common, table_first);
        if (table_first)
            id = table_find(h, leaf);
    }
    if (!id) {
        /* A stack never seen may run in code that libc loaded by itself
         * (NSS, iconv): the module map first, so that the writer, which
         * may be another process, finds the module before the nodes. */
        if (mtl__modules_changed())
            mtl__modules_rescan();
        id = intern(cache, frames, n, h, gen, common);
    }
    if (prev && id && id < st.known_cap && st.known[prev].next != id)
        __atomic_store_n(&st.known[prev].next, id, __ATOMIC_RELEASE);
    if (cache)
        cache->prev = id;
    if (e && id) {
        e->hash = h;
        e->leaf = leaf;
        e->depth = (uint32_t)n;
        e->id = id;
    }
    return id;
}

uint32_t mtl__capture_stack_at(uint32_t slot, const void *frame, unsigned skip)
{
    const uint64_t *fp = frame;
    uint64_t ip = fp[1];
    struct stack_cache *cache = cache_of(slot);
    /* A hook called from memtally (not by a jump from the exported one),
     * or a thread with interpreter frames: the walk from memtally's own
     * frame, as before. */
    if (MTL_UNLIKELY(!cache || mtl__tls.iframes || mtl__pl.opt.unwinder == MTL_UNWIND_LIBUNWIND ||
                     ip - st.self_lo < st.self_hi - st.self_lo))
        return mtl__capture_stack(slot, skip);
    uint64_t sp = (uint64_t)(uintptr_t)(fp + 2);
    uint32_t max = mtl__pl.opt.depth < MTL_UNWIND_CAP ? mtl__pl.opt.depth : MTL_UNWIND_CAP;
    int recent = mtl__recent_wanted(cache->recent);
    uint32_t known = recent ? mtl__recent_find(&cache->recent, &cache->memo, ip, sp, fp[0], max) : 0;
    if (known && MTL_LIKELY(mtl__pl.opt.unwinder != MTL_UNWIND_CHECK)) {
        cache->prev = known;
        return known;
    }
    uint64_t stepped = cache->memo.stepped;
    int n = mtl__unwind_from(&cache->memo, mtl__pl.opt.depth, ip, sp, fp[0]);
    if (MTL_UNLIKELY(n < 1))
        return mtl__capture_stack(slot, skip); /* which leaves it to libunwind */
    const struct mtl__unwind_walk *walk = &cache->memo.walk;
    if (MTL_UNLIKELY(mtl__pl.opt.unwinder == MTL_UNWIND_CHECK))
        check_walk(walk->ip, n);
    uint32_t id = find_stack(cache, walk->ip, n, walk);
    if (MTL_UNLIKELY(known)) { /* check mode: the recent stack against the walk's */
        /* A walk the recent stacks spared, outside check mode: not one
         * their trial counts (recent.c). */
        if (cache->recent)
            cache->recent->mark += cache->memo.stepped - stepped;
        if (known != id && atomic_fetch_add(&st.differed, 1) < 5)
            mtl__say("unwind check: a recent stack (%u) is not the walk's (%u)", known, id);
        return id;
    }
    if (recent)
        mtl__recent_keep(&cache->recent, walk, (uint32_t)n, max, id);
    return id;
}

void mtl__stacks_forget_addresses(void)
{
    pthread_mutex_lock(&st.mu);
    memset(st.slots, 0, st.nslots * sizeof *st.slots);
    struct stack_table *old = atomic_load(&st.table), *t = new_table(1u << 14);
    if (t) {
        atomic_store(&st.table, t);
        retire_table(old);
    } else {
        memset(old->e, 0, (old->mask + 1) * sizeof old->e[0]);
        old->count = 0;
    }
    /* The rules first: a thread that sees the new generation empties its
     * memo and must not refill it from the shared cache's old rules. */
    mtl__unwind_forget();
    atomic_fetch_add(&st.gen, 1);
    pthread_mutex_unlock(&st.mu);
}

void mtl__stacks_atfork(int phase)
{
    mtl__unwind_atfork(phase);
    mtl__mutex_atfork(&st.mu, phase);
}
