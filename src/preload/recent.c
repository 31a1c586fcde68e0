/*
 * recent.c: keeping a thread's recent stacks (recent.h), and how many.
 *
 * A thread starts with RECENT_SETS_MIN sets of RECENT_WAYS stacks.  Its
 * lookups are counted in trials of RECENT_TRIAL:
 *
 * - fewer than nine in ten found, and the walks of those not found
 *   stepped RECENT_GROW_STEPS frames or more on average: the sets grow
 *   fourfold, up to RECENT_SETS_MAX (4,096 stacks, 2.5 MiB).  The storm's
 *   thousands of hot stacks, each 10 to 40 frames walked anew, do not fit
 *   in 128: it found 0.3% of them there, 92% in 4,096.  Where the walker
 *   steps few frames (reusing its last walk's), a stack found in a large
 *   table costs more than the walk, its words far apart in memory: cc1
 *   found 72% of its stacks in 4,096, against 10% in 128, and took 4.5%
 *   longer (docs/PERFORMANCE.md, "Recent stacks").  A grown table has
 *   its trial at once: it starts empty, and a rest first would leave the
 *   storm walking half a million stacks before its table is large.
 * - else, fewer than half found (binary trees' every stack new): the next
 *   stacks neither ask nor keep, as a miss costs a lookup and the keeping
 *   of its walk.  The rest doubles after each trial that fails, from
 *   RECENT_REST_MIN to RECENT_REST_MAX stacks, and is back to the least
 *   after one that does not.
 *
 * All threads' recent stacks together stay within RECENT_BUDGET: past it
 * a thread does not grow its own, and a new thread keeps none.  The
 * memory is our own pages, and only its thread touches it.
 */
#include "preload/recent.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RECENT_SETS_MIN 32u
#define RECENT_SETS_MAX 1024u
#define RECENT_BUDGET ((size_t)64 << 20)
#define RECENT_GROW_STEPS 16
#define RECENT_REST_MIN (1u << 16)
#define RECENT_REST_MAX (1u << 22)

static _Atomic size_t recent_bytes; /* of every thread's, in all */

/* A table's mapping: its counts, padded to a cache line; the stacks; their
 * keys; each set's next way. */
#define RECENT_HEAD ((sizeof(struct recent) + 63) & ~(size_t)63)

static size_t size_for(uint32_t sets)
{
    return RECENT_HEAD +
           (size_t)sets * RECENT_WAYS * (sizeof(struct recent_stack) + sizeof(uint64_t)) + sets;
}

/* A new, empty table of sets sets, within the budget; NULL if not. */
static struct recent *recent_new(uint32_t sets)
{
    size_t bytes = size_for(sets);
    if (atomic_fetch_add(&recent_bytes, bytes) + bytes > RECENT_BUDGET) {
        atomic_fetch_sub(&recent_bytes, bytes);
        return NULL;
    }
    struct recent *r = mtl__pages_alloc(bytes);
    if (!r) {
        atomic_fetch_sub(&recent_bytes, bytes);
        return NULL;
    }
    r->s = (struct recent_stack *)((char *)r + RECENT_HEAD);
    r->key = (uint64_t *)(r->s + (size_t)sets * RECENT_WAYS);
    r->next = (uint8_t *)(r->key + (size_t)sets * RECENT_WAYS);
    r->sets = sets;
    r->bytes = bytes;
    return r;
}

/* A table replaced by a larger one: its memory goes back to the system
 * but for its first page (the counts), its addresses stay mapped, so that
 * check mode's report at exit, which reads every thread's counts from
 * another thread, never reads an unmapped page. */
static void recent_retire(struct recent *r)
{
    size_t bytes = r->bytes, page = (size_t)sysconf(_SC_PAGESIZE);
    if (bytes > page)
        madvise((char *)r + page, (bytes - page) / page * page, MADV_DONTNEED);
    atomic_fetch_sub(&recent_bytes, bytes);
}

/* Four times the sets, the counts and the rest carried over, the stacks
 * not (they would go to other sets): 1, or 0 (*rp unchanged) if it
 * cannot be. */
static int recent_grow(struct recent **rp)
{
    struct recent *old = *rp;
    uint32_t sets = old->sets * 4 < RECENT_SETS_MAX ? old->sets * 4 : RECENT_SETS_MAX;
    struct recent *r = recent_new(sets);
    if (!r)
        return 0;
    r->owner = old->owner;
    r->found = old->found;
    r->kept = old->kept;
    r->rest = old->rest;
    r->rest_next = old->rest_next;
    *rp = r;
    recent_retire(old);
    return 1;
}

void mtl__recent_trial_end(struct recent **rp, uint64_t stepped)
{
    struct recent *r = *rp;
    uint32_t hits = r->hits, walks = RECENT_TRIAL - hits;
    r->tries = r->hits = 0;
    /* Grown: the next trial is the larger table's, without a rest. */
    if (hits < RECENT_TRIAL / 10 * 9 && r->sets < RECENT_SETS_MAX &&
        stepped - r->mark >= (uint64_t)walks * RECENT_GROW_STEPS && recent_grow(rp))
        return;
    if (hits < RECENT_TRIAL / 2) {
        r->rest = r->rest_next ? r->rest_next : RECENT_REST_MIN;
        r->rest_next = r->rest < RECENT_REST_MAX ? 2 * r->rest : RECENT_REST_MAX;
    } else {
        r->rest_next = RECENT_REST_MIN;
    }
}

/* Appends the word at addr that the walk read as val to s; 0 when it
 * cannot be kept (no room, a value of more than 48 bits, or not a word
 * at a place 16 bits can say). */
static int add_word(struct recent_stack *s, uint64_t addr, uint64_t val)
{
    uint64_t d = addr - s->sp;
    if (s->nwords == RECENT_WORDS || (d & 7) || d / 8 > UINT16_MAX || (val & ~RECENT_VALUE_MASK))
        return 0;
    s->word[s->nwords++] = (d / 8) << RECENT_VALUE_BITS | val;
    return 1;
}

void mtl__recent_keep(struct recent **rp, const struct mtl__unwind_walk *walk, uint32_t n,
                      uint32_t max, uint32_t id)
{
    if (!id || n > RECENT_WORDS || max > UINT16_MAX || !(walk->complete || n == max))
        return;
    struct recent *r = *rp;
    if (MTL_UNLIKELY(!r) && !(r = *rp = recent_new(RECENT_SETS_MIN)))
        return;
    uint64_t owner = (uint64_t)(uintptr_t)&mtl__tls;
    if (r->owner != owner) { /* another thread's, or from before an unload */
        memset(r->key, 0, (size_t)r->sets * RECENT_WAYS * sizeof r->key[0]);
        r->owner = owner;
    }
    uint64_t ra = n > 1 ? (uint64_t)(uintptr_t)walk->ip[1] : 0;
    uint64_t key = mtl__recent_key((uint64_t)(uintptr_t)walk->ip[0], walk->sp[0], ra);
    size_t k = mtl__recent_set(r, key), way = k * RECENT_WAYS + r->next[k];
    r->next[k] = (uint8_t)((r->next[k] + 1) % RECENT_WAYS);
    struct recent_stack *s = &r->s[way];
    r->key[way] = 0; /* while it is rewritten; left so if it cannot be kept */
    s->ip = (uint64_t)(uintptr_t)walk->ip[0];
    s->sp = walk->sp[0];
    s->rbp = walk->rbp[0];
    s->ra = ra;
    s->max = (uint16_t)max;
    s->nwords = 0;
    /* The same words as the walker's reuse checks (unwind.c, rbp_need):
     * in the walk's order, step i read frame i + 1's return address, then
     * the rbp frame i saved (kept only where a CFA beyond depended on it;
     * a walk cut at its limit counts its last frame's, which asks a word
     * more than it needs, never one less). */
    s->rbp_free = !walk->rbp_need[0];
    for (uint32_t i = 0; i + 1 < n; i++) {
        if (!add_word(s, walk->sp[i + 1] - 8, (uint64_t)(uintptr_t)walk->ip[i + 1]) ||
            (walk->rbp_at[i] && walk->rbp_need[i + 1] &&
             !add_word(s, walk->rbp_at[i], walk->rbp[i + 1])))
            return;
    }
    if (walk->complete && walk->end_at && !add_word(s, walk->end_at, 0))
        return;
    r->kept++;
    s->id = id;
    r->key[way] = key;
}
