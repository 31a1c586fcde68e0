/* ptrcode.c: see ptrcode.h; the rules are docs/FORMAT.md's "Addresses". */
#include "trace/ptrcode.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/varint.h"
#include "trace/format.h"

#define W MTL_PC_WINDOW
#define WORDS (W / 64)
#define DEPTH MTL_PC_CLASS_DEPTH
#define REACH MTL_PC_DEEP_REACH
#define CLASS_BITS 12
#define FR MTL_PC_FREES
#define NEIGHBOURS 4        /* frees after or before the last one taken */
#define CLASS_MAX 0xffffu

_Static_assert((W & (W - 1)) == 0 && W >= 64, "the window is a power of two of words");
_Static_assert((FR & (FR - 1)) == 0, "the frees' ring is a power of two");

struct lane {
    uint64_t end;         /* its last allocation's address plus its chunk */
    uint64_t top;         /* the same of its last allocation that no free
                             named (version 5 on) */
    uint64_t prev_free;   /* allocation number + 1 of its last free by place */
    uint64_t last_escape; /* its last free coded by difference */
    uint64_t taken;       /* the free number its last allocation took, or 0 */
    uint64_t nears;       /* encoder: a bit per recent allocation, 1: coded near taken */
};

struct class_list {
    uint32_t key; /* 1 << 24 | lane << 16 | class: whose list it is now */
    /* Its free numbers, newest first: the i-th (from 0) at
     * free[(head + i) % DEPTH], count of them.  A ring, so that a push or
     * the newest taken moves none of the others. */
    uint32_t head, count;
    uint64_t free[DEPTH];
    /* Version 9 on: the newest of the frees pushed past free[], which go
     * on newest first through pc->onext (0: none). */
    uint64_t over;
};

/* Version 9 on: where free number f is (pc->flist[f % FR]). */
enum { LISTED_NOT, LISTED_ARRAY, LISTED_OVER };

struct mtl_ptrcode {
    /* the state; the arrays after it are one mapping, zero at the start */
    uint64_t seq;        /* allocations so far: the next one's number */
    uint64_t nlive;      /* live bits set */
    uint64_t last_alloc; /* TAG's reference */
    struct block {
        uint64_t ptr, size;
    } *ring;             /* allocation n's block at n % W (a free reads both) */
    uint64_t *live;      /* a bit per ring slot: its block is live */
    uint64_t *gc;        /* encoder: a bit per ring slot: a collector's block */
    uint64_t frees;      /* frees so far: the last one's number (from 1) */
    uint64_t *fring;     /* the address of free number f at f % FR */
    uint32_t *fkey;      /* version 8 on: the list free number f went to
                            at f % FR (its class_key), or 0 */
    uint32_t *fen;       /* a Fenwick tree of the live bits per word, from 1 */
    /* A change to one word's count not yet in the tree: allocations fill
     * the ring's words in turn, so the tree takes a word's 64 changes in
     * one update (fen_flush) instead of one each. */
    uint32_t pend_word;
    int32_t pend_delta;
    struct lane *lanes;
    struct class_list *classes;
    uint32_t *index;     /* encoder: address -> its live block or last free */
    /* encoder: a bit per fring slot: its free's entry was turned over by
     * a later event at its address, so that there is none to take out of
     * the index when the slot is used again (one random probe spared) */
    uint64_t *fgone;
    int tops;            /* version 5 on: allocations may name their lane's top */
    int afters;          /* version 7 on: ... the end of a recent allocation */
    int unlists;         /* version 8 on: a free taken leaves its list */
    int deep;            /* version 9 on: lists keep their frees past DEPTH */
    /* Version 9 on, per free number f at f % FR: in which part of a list
     * it is, and, past the array, the distances to the next older and the
     * next newer free of the list (0: none). */
    uint8_t *flist;
    uint32_t *onext, *oprev;
    size_t bytes;        /* of the mapping, which starts with this */
};

/* --- the live blocks of the window, in allocation order --------------- */

/* Most frees name a block a few words of live bits from where the count
 * starts: those are counted word by word; farther ones through a Fenwick
 * tree of the words' counts. */
#define NEAR_WORDS 8

/* Whether the CPU has popcnt: every x86-64 since about 2008, but not the
 * baseline the build targets, so asked at run time, once a model is made
 * (mtl__pc_new: an encoder's or a reader's, one cpuid each). */
static _Atomic int have_popcnt;

/* Without -mpopcnt the builtin is a call into libgcc: the instruction
 * where there is one, else this sum of bits. */
static inline unsigned popcount64(uint64_t x)
{
#if defined(__x86_64__)
    if (__builtin_expect(atomic_load_explicit(&have_popcnt, memory_order_relaxed), 1)) {
        uint64_t n;
        __asm__("popcnt %1, %0" : "=r"(n) : "rm"(x) : "cc");
        return (unsigned)n;
    }
#endif
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* The bit number of the k-th set bit of w from the lowest (k < count):
 * the byte holding it from the bytes' running counts, then bit by bit. */
static unsigned select_bit(uint64_t w, unsigned k)
{
    uint64_t x = w - ((w >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = ((x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full) * 0x0101010101010101ull;
    unsigned byte = 0, before = 0;
    while (((x >> (8 * byte)) & 0xff) <= k)
        before = (unsigned)((x >> (8 * byte++)) & 0xff);
    w >>= 8 * byte;
    for (k -= before; k; k--)
        w &= w - 1;
    return 8 * byte + (unsigned)__builtin_ctzll(w);
}

/* The same from the highest: the k-th set bit of w counting down. */
static unsigned select_bit_down(uint64_t w, unsigned k)
{
    for (; k; k--)
        w &= ~(1ull << (63 - __builtin_clzll(w)));
    return 63u - (unsigned)__builtin_clzll(w);
}

static void fen_add(struct mtl_ptrcode *pc, uint32_t word, int d)
{
    for (uint32_t i = word + 1; i <= WORDS; i += i & -i)
        pc->fen[i] += (uint32_t)d;
}

static void fen_flush(struct mtl_ptrcode *pc)
{
    if (pc->pend_delta)
        fen_add(pc, pc->pend_word, pc->pend_delta);
    pc->pend_delta = 0;
}

static void fen_change(struct mtl_ptrcode *pc, uint32_t word, int d)
{
    if (word != pc->pend_word) {
        fen_flush(pc);
        pc->pend_word = word;
    }
    pc->pend_delta += d;
}

/* Live blocks in ring slots [0, slot). */
static uint64_t before_slot(const struct mtl_ptrcode *pc, uint32_t slot)
{
    uint64_t n = pc->pend_word < slot / 64 ? (uint64_t)(int64_t)pc->pend_delta : 0;
    for (uint32_t i = slot / 64; i > 0; i -= i & -i)
        n += pc->fen[i];
    if (slot % 64)
        n += popcount64(pc->live[slot / 64] & ((1ull << (slot % 64)) - 1));
    return n;
}

/* The ring slot of the k-th live block (from 0) in slot order; k < nlive. */
static uint32_t slot_of_live(const struct mtl_ptrcode *pc, uint64_t k)
{
    uint32_t pos = 0;
    for (uint32_t step = WORDS; step; step >>= 1)
        if (pos + step <= WORDS && pc->fen[pos + step] <= k) {
            pos += step;
            k -= pc->fen[pos];
        }
    return pos * 64 + select_bit(pc->live[pos], (unsigned)k);
}

static uint64_t window_start(const struct mtl_ptrcode *pc)
{
    return pc->seq > W ? pc->seq - W : 0;
}

/* The live bits of the ring word holding allocation n, from n's down
 * (below: those before n) or from n's up (n's and after). */
static uint64_t bits_below(const struct mtl_ptrcode *pc, uint64_t n)
{
    return pc->live[(n % W) / 64] & ((1ull << (n % 64)) - 1);
}

static uint64_t bits_from(const struct mtl_ptrcode *pc, uint64_t n)
{
    return pc->live[(n % W) / 64] & (~0ull << (n % 64));
}

/* Live blocks of allocations [a, b), window_start <= a <= b <= seq. */
static uint64_t live_between(const struct mtl_ptrcode *pc, uint64_t a, uint64_t b)
{
    if (a >= b)
        return 0;
    if (b - a <= NEAR_WORDS * 64) {
        uint64_t n = 0, last = (b - 1) / 64;
        for (uint64_t w = a / 64; w <= last; w++) {
            uint64_t bits = pc->live[w % WORDS];
            if (w == a / 64)
                bits &= ~0ull << (a % 64);
            if (w == last && b % 64)
                bits &= (1ull << (b % 64)) - 1;
            n += popcount64(bits);
        }
        return n;
    }
    /* through the tree; the range may wrap round the ring (b - a = W too) */
    uint32_t sa = (uint32_t)(a % W), sb = (uint32_t)(b % W);
    uint64_t pa = before_slot(pc, sa), pb = before_slot(pc, sb);
    return sa < sb ? pb - pa : pc->nlive - pa + pb;
}

/* The allocation number of the k-th live block (from 0, oldest first). */
static uint64_t nth_live(const struct mtl_ptrcode *pc, uint64_t k)
{
    uint64_t lo = window_start(pc);
    uint32_t s_lo = (uint32_t)(lo % W);
    uint64_t below = before_slot(pc, s_lo); /* live in slots before the oldest's */
    uint64_t upper = pc->nlive - below;      /* from the oldest's slot to the ring's end */
    if (k < upper)
        return lo + (slot_of_live(pc, below + k) - s_lo);
    return lo + (W - s_lo) + slot_of_live(pc, k - upper);
}

/* The allocation number of the live block with k live ones between it and
 * allocation n (exclusive), looking up (after n) or down (before it), or
 * UINT64_MAX when it is not within NEAR_WORDS words (nor the window). */
static uint64_t near_live(const struct mtl_ptrcode *pc, uint64_t n, uint64_t k, int up)
{
    uint64_t lo = window_start(pc);
    uint64_t w = up ? bits_from(pc, n + 1) : bits_below(pc, n);
    uint64_t base = up ? (n + 1) & ~63ull : n & ~63ull; /* the allocation of bit 0 */
    for (unsigned i = 0; i <= NEAR_WORDS; i++) {
        unsigned c = popcount64(w);
        if (k < c) {
            uint64_t m = base + (up ? select_bit(w, (unsigned)k) : select_bit_down(w, (unsigned)k));
            return m >= lo && m < pc->seq ? m : UINT64_MAX;
        }
        k -= c;
        if (up) {
            base += 64;
            if (base >= pc->seq)
                return UINT64_MAX;
            w = pc->live[(base % W) / 64];
        } else {
            if (base < 64 || base - 64 + 63 < lo)
                return UINT64_MAX;
            base -= 64;
            w = pc->live[(base % W) / 64];
        }
    }
    return UINT64_MAX;
}

static int is_live(const struct mtl_ptrcode *pc, uint32_t slot)
{
    return (pc->live[slot / 64] >> (slot % 64)) & 1;
}

static void set_live(struct mtl_ptrcode *pc, uint32_t slot, int on)
{
    if (on)
        pc->live[slot / 64] |= 1ull << (slot % 64);
    else
        pc->live[slot / 64] &= ~(1ull << (slot % 64));
    pc->nlive += on ? 1 : (uint64_t)-1;
    fen_change(pc, slot / 64, on ? 1 : -1);
}

/* --- the encoder's index: address -> its live block, or its last free --- */

/* One entry per address at most: its live block's ring slot, or once it
 * is freed the fring slot of its free (a free turns the entry over in
 * place, and an allocation back: one probe each).  An entry: the slot + 1
 * in the low 20 bits, FREED, and 11 bits of the address above, so that a
 * probe reads a ring only for a likely match.  Open addressing, twice the
 * window's slots: at most half full. */
#define SLOT_BITS 20
#define FREED (1u << SLOT_BITS)
#define TAG_SHIFT (SLOT_BITS + 1)
#define INDEX_SLOTS (2 * W)
_Static_assert(W < (1u << SLOT_BITS) && FR <= W, "ring slots fit an entry");

static uint32_t entry_of(uint64_t ptr, uint32_t slot, int freed)
{
    return (uint32_t)((ptr >> 4) & 0x7ff) << TAG_SHIFT | (freed ? FREED : 0) | (slot + 1);
}

static uint32_t entry_slot(uint32_t e)
{
    return (e & (FREED - 1)) - 1;
}

static uint64_t entry_ptr(const struct mtl_ptrcode *pc, uint32_t e)
{
    return e & FREED ? pc->fring[entry_slot(e)] : pc->ring[entry_slot(e)].ptr;
}

/* Blocks near each other in memory go near each other in the table (a
 * free is mostly of a recent block, an allocation next to the last): the
 * 4 KiB page by a hash, the place in the page as it is. */
static uint32_t index_home(uint64_t ptr)
{
    uint64_t page = (ptr >> 12) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)((page >> 40) + ((ptr >> 4) & 0xff)) & (INDEX_SLOTS - 1);
}

/* The entry of ptr, or that of the empty slot where it would go. */
static uint32_t index_at(const struct mtl_ptrcode *pc, uint64_t ptr)
{
    uint32_t i = index_home(ptr), tag = entry_of(ptr, 0, 0) >> TAG_SHIFT;
    for (uint32_t e; (e = pc->index[i]); i = (i + 1) & (INDEX_SLOTS - 1))
        if (e >> TAG_SHIFT == tag && entry_ptr(pc, e) == ptr)
            break;
    return i;
}

void mtl__pc_prefetch(const struct mtl_ptrcode *pc, uint64_t far, uint64_t near)
{
    __builtin_prefetch(&pc->index[index_home(far)]);
    uint32_t e = pc->index[index_home(near)];
    if (e && e >> TAG_SHIFT == entry_of(near, 0, 0) >> TAG_SHIFT)
        __builtin_prefetch(e & FREED ? (const void *)&pc->fring[entry_slot(e)]
                                     : (const void *)&pc->ring[entry_slot(e)]);
}

/* Empties entry i: each later entry of the run that may moves up. */
static void index_remove(struct mtl_ptrcode *pc, uint32_t i)
{
    for (uint32_t j = (i + 1) & (INDEX_SLOTS - 1); pc->index[j]; j = (j + 1) & (INDEX_SLOTS - 1)) {
        uint32_t home = index_home(entry_ptr(pc, pc->index[j]));
        if (((j - home) & (INDEX_SLOTS - 1)) >= ((j - i) & (INDEX_SLOTS - 1))) {
            pc->index[i] = pc->index[j];
            i = j;
        }
    }
    pc->index[i] = 0;
}

static void set_fgone(struct mtl_ptrcode *pc, uint32_t fslot)
{
    pc->fgone[fslot / 64] |= 1ull << (fslot % 64);
}

/* Whether fslot's free was turned over, its bit cleared for the next. */
static int take_fgone(struct mtl_ptrcode *pc, uint32_t fslot)
{
    uint64_t bit = 1ull << (fslot % 64), was = pc->fgone[fslot / 64] & bit;
    pc->fgone[fslot / 64] &= ~bit;
    return was != 0;
}

/* Before a ring's slot takes another address: the entry of the one it
 * holds goes, if it is that slot's (not a newer block's or free's). */
static void index_leave(struct mtl_ptrcode *pc, uint64_t ptr, uint32_t slot, int freed)
{
    uint32_t i = index_at(pc, ptr);
    if (pc->index[i] == entry_of(ptr, slot, freed))
        index_remove(pc, i);
}

/* --- size classes and the thread's lists ------------------------------ */

/* glibc's chunk for size bytes: what the next block of a growing heap
 * starts after (other allocators come close enough to predict). */
static uint64_t chunk_of(uint64_t size)
{
    uint64_t c = (size + 23) & ~(uint64_t)15;
    return c < 32 ? 32 : c;
}

static uint16_t class_of(uint64_t size)
{
    return size >= (uint64_t)CLASS_MAX * 16 - 23 ? CLASS_MAX : (uint16_t)(chunk_of(size) / 16);
}

static uint32_t class_key(uint32_t lane, uint16_t cls)
{
    return 1u << 24 | lane << 16 | cls;
}

static struct class_list *class_list(struct mtl_ptrcode *pc, uint32_t key)
{
    return &pc->classes[((uint64_t)key * 0x9e3779b97f4a7c15ull) >> (64 - CLASS_BITS)];
}

/* --- version 9: the frees pushed past a list's array, in a chain ------- */

static uint64_t over_next(const struct mtl_ptrcode *pc, uint64_t f)
{
    uint32_t d = pc->onext[f % FR];
    return d ? f - d : 0;
}

/* f becomes the newest of cl's chain. */
static void over_push(struct mtl_ptrcode *pc, struct class_list *cl, uint64_t f)
{
    uint64_t h = cl->over;
    pc->onext[f % FR] = h ? (uint32_t)(f - h) : 0;
    pc->oprev[f % FR] = 0;
    if (h)
        pc->oprev[h % FR] = (uint32_t)(f - h);
    cl->over = f;
    pc->flist[f % FR] = LISTED_OVER;
}

/* f leaves the chain it is in: its list's, or one its list left behind
 * when another (lane, class) took the list's slot (then no list's). */
static void over_unlink(struct mtl_ptrcode *pc, uint64_t f)
{
    uint32_t dn = pc->onext[f % FR], dp = pc->oprev[f % FR];
    uint64_t n = dn ? f - dn : 0, p = dp ? f + dp : 0;
    if (p) {
        pc->onext[p % FR] = n ? (uint32_t)(p - n) : 0;
    } else {
        struct class_list *cl = class_list(pc, pc->fkey[f % FR]);
        if (cl->key == pc->fkey[f % FR] && cl->over == f)
            cl->over = n;
    }
    if (n)
        pc->oprev[n % FR] = p ? (uint32_t)(p - n) : 0;
    pc->flist[f % FR] = LISTED_NOT;
}

/* The place of f in cl's chain, if among its first reach: 1 + that, else 0. */
static unsigned over_place(const struct mtl_ptrcode *pc, const struct class_list *cl, uint64_t f,
                           unsigned reach)
{
    uint64_t g = cl->over;
    for (unsigned i = 0; g && i < reach; i++, g = over_next(pc, g))
        if (g == f)
            return i + 1;
    return 0;
}

/* The free at place i of cl's chain, or 0. */
static uint64_t over_at(const struct mtl_ptrcode *pc, const struct class_list *cl, uint64_t i)
{
    uint64_t g = cl->over;
    for (; g && i; i--)
        g = over_next(pc, g);
    return g;
}

/* --- the lists --------------------------------------------------------- */

_Static_assert((DEPTH & (DEPTH - 1)) == 0, "a list's ring is a power of two");

/* The i-th of cl's array (from 0, the newest), or 0 past its end. */
static inline uint64_t class_at(const struct class_list *cl, unsigned i)
{
    return i < cl->count ? cl->free[(cl->head + i) % DEPTH] : 0;
}

/* The i-th of cl's array leaves it (the others keep their order), the
 * fewer of those before and after it moving; from version 9 the newest
 * of its chain takes the last place. */
static void class_take(struct mtl_ptrcode *pc, struct class_list *cl, unsigned i)
{
    if (i >= cl->count)
        return;
    if (pc->deep)
        pc->flist[class_at(cl, i) % FR] = LISTED_NOT;
    if (i < cl->count - 1 - i) {
        for (unsigned j = i; j > 0; j--)
            cl->free[(cl->head + j) % DEPTH] = cl->free[(cl->head + j - 1) % DEPTH];
        cl->head = (cl->head + 1) % DEPTH;
    } else {
        for (unsigned j = i; j + 1 < cl->count; j++)
            cl->free[(cl->head + j) % DEPTH] = cl->free[(cl->head + j + 1) % DEPTH];
    }
    cl->count--;
    if (pc->deep && cl->over) {
        uint64_t g = cl->over;
        over_unlink(pc, g);
        cl->free[(cl->head + cl->count++) % DEPTH] = g;
        pc->flist[g % FR] = LISTED_ARRAY;
    }
}

/* Where free number f is in the list's array, or DEPTH.  The array is in
 * falling order (each free's number is above all after it), so a binary
 * search: most allocations' frees are not in it, and a scan would read
 * all 32. */
static unsigned class_find(const struct class_list *cl, uint64_t f)
{
    unsigned lo = 0, hi = cl->count; /* f, if there, is in [lo, hi) */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (class_at(cl, mid) > f)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < cl->count && class_at(cl, lo) == f ? lo : DEPTH;
}

static void class_push(struct mtl_ptrcode *pc, uint32_t key, uint64_t f)
{
    struct class_list *cl = class_list(pc, key);
    if (cl->key != key) {
        /* Its frees stay marked, in a chain of no list's: taking or
         * dropping one of them changes no list. */
        memset(cl, 0, sizeof *cl);
        cl->key = key;
    }
    cl->head = (cl->head + DEPTH - 1) % DEPTH;
    if (cl->count == DEPTH) { /* the oldest, at the new head, drops out */
        if (pc->deep)
            over_push(pc, cl, cl->free[cl->head]);
    } else {
        cl->count++;
    }
    cl->free[cl->head] = f;
    if (pc->deep)
        pc->flist[f % FR] = LISTED_ARRAY;
}

/* Whether free number f is still in the frees' ring. */
static int free_known(const struct mtl_ptrcode *pc, uint64_t f)
{
    return f && f <= pc->frees && pc->frees - f < FR;
}

static void unlist_any(struct mtl_ptrcode *pc, uint64_t f);

/* A free (by place or not): it takes the next number, its address goes
 * in the frees' ring.  (The encoder has updated its index.) */
static uint64_t free_numbered(struct mtl_ptrcode *pc, uint64_t ptr)
{
    uint64_t f = ++pc->frees;
    /* Version 9 on: the free whose place in the ring this takes is no
     * longer kept, and leaves its list. */
    if (pc->deep && f > FR && pc->flist[f % FR])
        unlist_any(pc, f - FR);
    pc->fring[f % FR] = ptr;
    pc->fkey[f % FR] = 0;
    return f;
}

/* Version 8 on: free number f, taken by an allocation, leaves the list it
 * went to, if still there.  Before, a block taken by any code but the
 * list's stayed in it, and where a program takes frees in order or far
 * back (sqlite3), those taken pushed the free ones past the list's
 * depth. */
static void unlist(struct mtl_ptrcode *pc, uint64_t f)
{
    if (pc->unlists)
        unlist_any(pc, f);
}

/* Free number f leaves its list, wherever in it (if there). */
static void unlist_any(struct mtl_ptrcode *pc, uint64_t f)
{
    uint32_t key = pc->fkey[f % FR];
    if (!key)
        return;
    if (pc->deep && pc->flist[f % FR] == LISTED_OVER) {
        over_unlink(pc, f);
        return;
    }
    struct class_list *cl = class_list(pc, key);
    unsigned i;
    if (cl->key == key && (i = class_find(cl, f)) < DEPTH)
        class_take(pc, cl, i);
    else if (pc->deep)
        pc->flist[f % FR] = LISTED_NOT; /* its list was emptied */
}

static uint32_t lane_of(uint32_t thread)
{
    return thread % MTL_PC_LANES;
}

/* --- the model's two moves -------------------------------------------- */

static int is_gc(const struct mtl_ptrcode *pc, uint32_t slot)
{
    return (pc->gc[slot / 64] >> (slot % 64)) & 1;
}

/* The encoder's news of a malloc block of the window that ended (gone) or
 * left it live (left); news may be NULL. */
static void tell(const struct mtl_ptrcode *pc, uint32_t slot, int left, struct mtl_pc_news *news)
{
    if (!news || is_gc(pc, slot))
        return;
    if (left) {
        news->left = 1;
        news->left_ptr = pc->ring[slot].ptr;
        news->left_size = pc->ring[slot].size;
    } else {
        news->gone = 1;
        news->gone_size = pc->ring[slot].size;
    }
}

/* (The encoder has updated its index.) */
static void allocated(struct mtl_ptrcode *pc, struct lane *L, uint64_t size, uint64_t ptr,
                      int gc)
{
    uint32_t slot = (uint32_t)(pc->seq % W);
    if (pc->seq >= W && is_live(pc, slot))
        set_live(pc, slot, 0); /* out of the window: frees of it go by difference */
    pc->ring[slot] = (struct block){ ptr, size };
    set_live(pc, slot, 1);
    if (pc->index) {
        if (gc)
            pc->gc[slot / 64] |= 1ull << (slot % 64);
        else
            pc->gc[slot / 64] &= ~(1ull << (slot % 64));
    }
    pc->seq++;
    L->end = ptr + chunk_of(size);
    pc->last_alloc = ptr;
}

/* (The encoder has taken the block out of its index.) */
static void freed(struct mtl_ptrcode *pc, uint32_t lane, uint64_t n)
{
    struct lane *L = &pc->lanes[lane];
    uint32_t slot = (uint32_t)(n % W);
    uint64_t ptr = pc->ring[slot].ptr;
    set_live(pc, slot, 0);
    L->prev_free = n + 1;
    uint32_t key = class_key(lane, class_of(pc->ring[slot].size));
    uint64_t f = free_numbered(pc, ptr);
    pc->fkey[f % FR] = key;
    class_push(pc, key, f);
}

/* --- public ------------------------------------------------------------ */

struct mtl_ptrcode *mtl__pc_new(int encoder, uint32_t version)
{
    enum { RING, LIVE, FEN, LANES, CLASSES, FRING, FKEY, FLIST, ONEXT, OPREV, INDEX, GC, FGONE,
           PARTS };
    int deep = version >= MTL_FORMAT_DEEP_FIRST;
    const size_t sizes[PARTS] = {
        [RING] = W * sizeof(struct block),
        [LIVE] = WORDS * sizeof(uint64_t), [FEN] = (WORDS + 1) * sizeof(uint32_t),
        [LANES] = MTL_PC_LANES * sizeof(struct lane),
        [CLASSES] = ((size_t)1 << CLASS_BITS) * sizeof(struct class_list),
        [FRING] = FR * sizeof(uint64_t), [FKEY] = FR * sizeof(uint32_t),
        [FLIST] = deep ? FR : 0, [ONEXT] = deep ? FR * sizeof(uint32_t) : 0,
        [OPREV] = deep ? FR * sizeof(uint32_t) : 0,
        [INDEX] = encoder ? INDEX_SLOTS * sizeof(uint32_t) : 0,
        [GC] = encoder ? WORDS * sizeof(uint64_t) : 0,
        [FGONE] = encoder ? FR / 64 * sizeof(uint64_t) : 0 };
    size_t off[PARTS], bytes = (sizeof(struct mtl_ptrcode) + 63) & ~(size_t)63;
    for (int i = 0; i < PARTS; i++) {
        off[i] = bytes;
        bytes += (sizes[i] + 63) & ~(size_t)63;
    }
#if defined(__x86_64__)
    /* cpuid leaf 1, ecx bit 23: asked here, when a model is made, not
     * through __builtin_cpu_supports, whose libgcc part runs a constructor
     * of a dozen cpuid instructions in every program libmemtally.so is
     * preloaded into (each a trap to the hypervisor on a virtual machine). */
    unsigned eax, ebx, ecx, edx;
    atomic_store_explicit(&have_popcnt,
                          __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 23)),
                          memory_order_relaxed);
#endif
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct mtl_ptrcode *pc = m;
    uint8_t *b = m;
    pc->ring = (struct block *)(b + off[RING]);
    pc->live = (uint64_t *)(b + off[LIVE]);
    pc->fen = (uint32_t *)(b + off[FEN]);
    pc->lanes = (struct lane *)(b + off[LANES]);
    pc->classes = (struct class_list *)(b + off[CLASSES]);
    pc->fring = (uint64_t *)(b + off[FRING]);
    pc->fkey = (uint32_t *)(b + off[FKEY]);
    if (deep) {
        pc->flist = b + off[FLIST];
        pc->onext = (uint32_t *)(b + off[ONEXT]);
        pc->oprev = (uint32_t *)(b + off[OPREV]);
    }
    if (encoder) {
        pc->index = (uint32_t *)(b + off[INDEX]);
        pc->gc = (uint64_t *)(b + off[GC]);
        pc->fgone = (uint64_t *)(b + off[FGONE]);
    }
    pc->tops = version >= MTL_FORMAT_TOP_FIRST;
    pc->afters = version >= MTL_FORMAT_AFTER_FIRST;
    pc->unlists = version >= MTL_FORMAT_UNLIST_FIRST;
    pc->deep = deep;
    pc->bytes = bytes;
    return pc;
}

void mtl__pc_reset(struct mtl_ptrcode *pc)
{
    /* Pages given back read as zero: the start state, touched again only
     * as far as the next trace goes. */
    size_t page = 4096, first = (sizeof *pc + page - 1) & ~(page - 1);
    uint8_t *m = (uint8_t *)pc;
    if (first < pc->bytes)
        madvise(m + first, pc->bytes - first, MADV_DONTNEED);
    memset(m + sizeof *pc, 0, first - sizeof *pc);
    pc->seq = pc->nlive = pc->last_alloc = pc->frees = 0;
    pc->pend_word = 0;
    pc->pend_delta = 0;
}

void mtl__pc_free(struct mtl_ptrcode *pc)
{
    if (pc)
        munmap(pc, pc->bytes);
}

/* An allocation's k: 1 to DEPTH, the k-th of its (lane, class) list;
 * then the lane's end; then a free next to the one its last allocation
 * took (+1, -1, +2, -2...); then a free numbered back from the last, up
 * to BACK_NEAR - 1 in k itself, any in a second value; then (version 5
 * on) the lane's top; 0: a difference from end in a second value. */
#define CODE_END (DEPTH + 1)
#define CODE_NEAR (DEPTH + 2)
#define CODE_BACK (CODE_NEAR + 2 * NEIGHBOURS)
#define BACK_NEAR 64 /* frees back coded in k itself */
#define CODE_FAR (CODE_BACK + BACK_NEAR)
#define CODE_TOP (CODE_FAR + 1)
#define CODE_AFTER (CODE_TOP + 1)
#define AFTERS 20 /* recent allocations whose end k names: up to k = 127 */

_Static_assert(CODE_AFTER + AFTERS - 1 < 128, "the codes but 106's second value are a byte");
/* Version 9 on: the (DEPTH + 1 + j)-th of the list, j in a second value. */
#define CODE_DEEP 128

/* After an allocation coded k at ptr: the lane's top moves when the block
 * was named by no free (the end, the top, a difference).  A program that
 * takes some blocks from the free lists and carves others from the heap's
 * top (or from the rest of a larger free chunk), as python3 does, has
 * them one after the other: end follows every allocation, top only the
 * carved ones, and names a fifth of python3's allocations that only a
 * difference named before. */
static inline void moved_top(struct lane *L, uint64_t k, uint64_t ptr, uint64_t size)
{
    if (k == 0 || k == CODE_END || k == CODE_TOP)
        L->top = ptr + chunk_of(size);
}

/* The end of allocation seq - i (1 <= i <= seq), its address plus its
 * chunk: where an allocator that splits a free chunk, or carves from more
 * than one top, puts a block after a recent one that was not the lane's
 * last (python3's unpredicted allocations are two fifths of these). */
static uint64_t end_of_recent(const struct mtl_ptrcode *pc, uint64_t i)
{
    const struct block *b = &pc->ring[(pc->seq - i) % W];
    return b->ptr + chunk_of(b->size);
}

/* Encoder: i such that ptr is end_of_recent(i), 1 <= i <= AFTERS; 0 if none. */
static uint64_t recent_before(const struct mtl_ptrcode *pc, uint64_t ptr)
{
    for (uint64_t i = 1; i <= AFTERS && i <= pc->seq; i++)
        if (end_of_recent(pc, i) == ptr)
            return i;
    return 0;
}

/* Whether code k names a free by its number: near taken, back or far. */
static inline int by_number(uint64_t k)
{
    return k >= CODE_NEAR && k <= CODE_FAR;
}

static int64_t near_offset(uint64_t j)
{
    return j % 2 ? -(int64_t)(j / 2 + 1) : (int64_t)(j / 2 + 1);
}

int mtl__pc_alloc_two(uint64_t v0)
{
    return v0 == 0 || v0 == CODE_FAR || v0 == CODE_DEEP;
}

int mtl__pc_free_two(uint64_t v0)
{
    return v0 == 0;
}

unsigned mtl__pc_put_alloc(struct mtl_ptrcode *pc, uint32_t thread, uint64_t size,
                           uint64_t ptr, int gc, uint64_t v[2], struct mtl_pc_news *news)
{
    uint32_t lane = lane_of(thread);
    struct lane *L = &pc->lanes[lane];
    uint32_t key = class_key(lane, class_of(size));
    struct class_list *cl = class_list(pc, key);
    /* The block this allocation pushes out of the window leaves the index
     * first (a removal moves entries). */
    uint32_t slot = (uint32_t)(pc->seq % W);
    if (pc->seq >= W && is_live(pc, slot)) {
        uint64_t old = pc->ring[slot].ptr;
        uint32_t i = index_at(pc, old);
        if (pc->index[i] == entry_of(old, slot, 0)) {
            index_remove(pc, i);
            tell(pc, slot, 1, news);
        }
    }
    /* ptr's entry: the number of its last free, if it is in the ring; or
     * a block live at ptr, whose free was never seen.  It becomes the new
     * block's. */
    uint32_t at = index_at(pc, ptr), e = pc->index[at];
    uint64_t f = e & FREED ? pc->frees - ((pc->frees - entry_slot(e)) % FR) : 0;
    if (e && !(e & FREED))
        tell(pc, entry_slot(e), 0, news);
    if (e & FREED)
        set_fgone(pc, entry_slot(e));
    pc->index[at] = entry_of(ptr, slot, 0);
    uint64_t taken = L->taken;
    unsigned n = 1;
    v[0] = 0;
    int chained = 0; /* version 9 on: f is past its list's array */
    if (f && cl->key == key) {
        unsigned i = class_find(cl, f);
        if (i < DEPTH) {
            v[0] = i + 1;
            class_take(pc, cl, i);
        } else {
            chained = pc->deep && pc->flist[f % FR] == LISTED_OVER && pc->fkey[f % FR] == key;
        }
    }
    if (!v[0] && ptr == L->end)
        v[0] = CODE_END;
    for (uint64_t j = 0; !v[0] && f && taken && j < 2 * NEIGHBOURS; j++)
        if (taken + (uint64_t)near_offset(j) == f)
            v[0] = CODE_NEAR + j;
    if (!v[0] && f && pc->frees - f < BACK_NEAR)
        v[0] = CODE_BACK + (pc->frees - f);
    /* The lane's top, else numbered far back or a difference from end,
     * whichever is shorter; but where frees are taken in order (8 or more
     * of the lane's last 64 allocations near), the number wins over top,
     * a tie and a byte more: it keeps taken, which the others lose, for
     * the next allocations. */
    unsigned bias = popcount64(L->nears) >= 8 ? 2 : 0;
    if (!v[0] && pc->tops && ptr == L->top && !(f && bias))
        v[0] = CODE_TOP;
    uint64_t i;
    if (!v[0] && pc->afters && !(f && bias) && (i = recent_before(pc, ptr)))
        v[0] = CODE_AFTER + i - 1;
    uint64_t d = mtl__zigzag((int64_t)(ptr - L->end));
    /* Deep in the list (a code of two bytes), else numbered far back or a
     * difference, whichever is shortest.  The place is looked for only
     * as far as it could be shorter: a walk down the chain. */
    if (!v[0] && chained) {
        unsigned far_len = 1 + mtl__varint_len(pc->frees - f);
        unsigned diff_len = 1 + mtl__varint_len(d) + bias;
        unsigned most = far_len < diff_len ? far_len : diff_len - 1; /* bytes deep may take */
        unsigned reach = most >= 4 ? REACH : most == 3 ? 128 : 0;
        unsigned place = over_place(pc, cl, f, reach);
        if (place && 2 + mtl__varint_len(place - 1) <= most) {
            v[0] = CODE_DEEP;
            v[n++] = place - 1;
            over_unlink(pc, f);
        }
    }
    if (!v[0] && f && mtl__varint_len(pc->frees - f) < mtl__varint_len(d) + bias) {
        v[0] = CODE_FAR;
        v[n++] = pc->frees - f;
    }
    if (!v[0])
        v[n++] = d;
    else if (v[0] != CODE_END && v[0] != CODE_TOP && (v[0] < CODE_AFTER || v[0] == CODE_DEEP))
        L->taken = f;
    if (by_number(v[0]))
        unlist(pc, f);
    L->nears = L->nears << 1 | (v[0] >= CODE_NEAR && v[0] < CODE_BACK);
    moved_top(L, v[0], ptr, size);
    allocated(pc, L, size, ptr, gc);
    return n;
}

int mtl__pc_get_alloc(struct mtl_ptrcode *pc, uint32_t thread, uint64_t size, uint64_t v0,
                      uint64_t v1, uint64_t *ptr)
{
    uint32_t lane = lane_of(thread);
    struct lane *L = &pc->lanes[lane];
    uint64_t f = 0;
    if (v0 == 0) {
        *ptr = L->end + (uint64_t)mtl__unzigzag(v1);
    } else if (v0 == CODE_END) {
        *ptr = L->end;
    } else if (v0 == CODE_TOP && pc->tops) {
        if (!L->top)
            return -1;
        *ptr = L->top;
    } else if (v0 >= CODE_AFTER && v0 < CODE_AFTER + AFTERS && pc->afters) {
        if (v0 - CODE_AFTER + 1 > pc->seq)
            return -1;
        *ptr = end_of_recent(pc, v0 - CODE_AFTER + 1);
    } else {
        if (v0 <= DEPTH) {
            uint32_t key = class_key(lane, class_of(size));
            struct class_list *cl = class_list(pc, key);
            if (cl->key != key)
                return -1;
            f = class_at(cl, (unsigned)v0 - 1);
            class_take(pc, cl, (unsigned)v0 - 1);
        } else if (v0 == CODE_DEEP && pc->deep) {
            uint32_t key = class_key(lane, class_of(size));
            struct class_list *cl = class_list(pc, key);
            if (cl->key != key || v1 >= REACH || !(f = over_at(pc, cl, v1)))
                return -1;
            over_unlink(pc, f);
        } else if (v0 < CODE_BACK) {
            f = L->taken ? L->taken + (uint64_t)near_offset(v0 - CODE_NEAR) : 0;
        } else if (v0 < CODE_FAR) {
            f = pc->frees - (v0 - CODE_BACK); /* may be 0 or wrap: not known */
        } else if (v0 == CODE_FAR) {
            f = v1 < pc->frees ? pc->frees - v1 : 0;
        }
        if (!free_known(pc, f))
            return -1;
        *ptr = pc->fring[f % FR];
        L->taken = f;
        if (by_number(v0))
            unlist(pc, f);
    }
    moved_top(L, v0, *ptr, size);
    allocated(pc, L, size, *ptr, 0);
    return 0;
}

/* The thread's previous free by place, if still in the window: 1 and its
 * allocation number in *q. */
static int previous_free(const struct mtl_ptrcode *pc, const struct lane *L, uint64_t *q)
{
    if (!L->prev_free || L->prev_free - 1 < window_start(pc))
        return 0;
    *q = L->prev_free - 1;
    return 1;
}

unsigned mtl__pc_put_free(struct mtl_ptrcode *pc, uint32_t thread, uint64_t ptr, uint64_t v[2],
                          struct mtl_pc_news *news)
{
    uint32_t lane = lane_of(thread);
    struct lane *L = &pc->lanes[lane];
    /* The free takes the next number, whose ring slot the free 2^18
     * before had: that one's entry goes first (a removal moves entries);
     * then ptr's entry becomes the free's. */
    uint32_t fslot = (uint32_t)((pc->frees + 1) % FR);
    if (pc->frees + 1 > FR && !take_fgone(pc, fslot))
        index_leave(pc, pc->fring[fslot], fslot, 1);
    uint32_t at = index_at(pc, ptr), e = pc->index[at];
    if (e & FREED)
        set_fgone(pc, entry_slot(e));
    pc->index[at] = entry_of(ptr, fslot, 1);
    if (!e || (e & FREED)) { /* no block of the window */
        v[0] = 0;
        v[1] = mtl__zigzag((int64_t)(ptr - L->last_escape));
        L->last_escape = ptr;
        free_numbered(pc, ptr);
        return 2;
    }
    uint32_t slot = entry_slot(e);
    tell(pc, slot, 0, news);
    /* the allocation number of the slot: the latest that maps to it */
    uint64_t n = pc->seq - 1 - ((pc->seq - 1 - slot) % W);
    uint64_t rank = live_between(pc, n + 1, pc->seq), q;
    v[0] = 2 * rank + 1;
    if (previous_free(pc, L, &q)) {
        uint64_t rel = n > q ? 2 * live_between(pc, q + 1, n) : 2 * live_between(pc, n + 1, q) + 1;
        if (rel < rank)
            v[0] = 2 * rel + 2;
    }
    freed(pc, lane, n);
    return 1;
}

/* The allocation number of the block a FREE's k (not 0) names: near the
 * reference, word by word; else by its place among all the live (oldest
 * first) through the tree.  0, or -1 when it names none. */
static int block_of_free(struct mtl_ptrcode *pc, const struct lane *L, uint64_t v0,
                         uint64_t *n)
{
    uint64_t k, q;
    if (v0 & 1) {
        uint64_t rank = (v0 - 1) / 2;
        if ((*n = near_live(pc, pc->seq, rank, 0)) != UINT64_MAX)
            return 0;
        if (rank >= pc->nlive)
            return -1;
        k = pc->nlive - 1 - rank;
    } else {
        uint64_t rel = (v0 - 2) / 2, j = rel / 2;
        if (!previous_free(pc, L, &q))
            return -1;
        if ((*n = near_live(pc, q, j, rel % 2 == 0)) != UINT64_MAX)
            return 0;
        if (j >= pc->nlive)
            return -1;
        uint64_t lo = window_start(pc);
        if (rel % 2 == 0) {
            k = live_between(pc, lo, q + 1) + j;
            if (k >= pc->nlive)
                return -1;
        } else {
            uint64_t before = live_between(pc, lo, q);
            if (j >= before)
                return -1;
            k = before - 1 - j;
        }
    }
    fen_flush(pc); /* nth_live reads the tree alone */
    *n = nth_live(pc, k);
    return 0;
}

int mtl__pc_get_free(struct mtl_ptrcode *pc, uint32_t thread, uint64_t v0, uint64_t v1,
                     uint64_t *ptr)
{
    uint32_t lane = lane_of(thread);
    struct lane *L = &pc->lanes[lane];
    if (v0 == 0) {
        *ptr = L->last_escape + (uint64_t)mtl__unzigzag(v1);
        L->last_escape = *ptr;
        free_numbered(pc, *ptr);
        return 0;
    }
    uint64_t n;
    if (block_of_free(pc, L, v0, &n) < 0)
        return -1;
    *ptr = pc->ring[n % W].ptr;
    freed(pc, lane, n);
    return 0;
}

uint64_t mtl__pc_put_tag(struct mtl_ptrcode *pc, uint64_t ptr)
{
    return mtl__zigzag((int64_t)(ptr - pc->last_alloc));
}

uint64_t mtl__pc_get_tag(const struct mtl_ptrcode *pc, uint64_t v)
{
    return pc->last_alloc + (uint64_t)mtl__unzigzag(v);
}
