/*
 * recent.h: a thread's recent stacks (recent.c), found without a walk.
 *
 * Each thread keeps the stacks it walked last, each with every word its
 * walk read (where, as words above the program's frame's stack pointer,
 * and what).  An allocation from the same frame whose words all read the
 * same again has the same stack.  The words are compared in the order
 * the walk read them, each only after all before it matched, so that a
 * lookup reads no word the walker itself would not have read: the stack
 * may be another now (a coroutine's, mapped where an older one was).
 *
 * The lookup is inline, for the hook's sake; keeping, growing and the
 * trials are in recent.c.
 */
#ifndef MEMTALLY_PRELOAD_RECENT_H
#define MEMTALLY_PRELOAD_RECENT_H

#include "preload/preload.h"
#include "preload/rules.h"

#define RECENT_WAYS 4
/* Words a kept walk may have read: one return address a frame after the
 * first, the saved rbp values its CFAs depended on, and the 0 that ended
 * it.  A walk that read more is not kept. */
#define RECENT_WORDS 72

struct recent_stack {
    uint64_t ip, sp, rbp; /* the program's frame */
    uint64_t ra;          /* its caller's return address: the first word */
    uint32_t id;          /* 0: empty */
    uint16_t max;         /* the walk's limit */
    uint8_t nwords;       /* in word */
    uint8_t rbp_free;     /* frame 0's rbp played no part in the walk */
    /* The words the walk read, in its order: each one's value in the low
     * 48 bits (return addresses and the frame pointers a CFA used are
     * user-space addresses, the end a 0: their top bits are clear), its
     * place in the top 16 (at sp + 8 * place).  One load a word, and a
     * short stack in two cache lines. */
    uint64_t word[RECENT_WORDS];
} __attribute__((aligned(64)));

#define RECENT_VALUE_BITS 48
#define RECENT_VALUE_MASK ((1ull << RECENT_VALUE_BITS) - 1)

struct recent {
    uint64_t owner;       /* the thread whose stacks they are */
    uint64_t found, kept; /* stacks found here, stacks kept */
    uint32_t tries, hits; /* in this trial */
    uint32_t rest;        /* stacks left to pass by */
    uint32_t rest_next;   /* the rest after the next trial that fails */
    uint64_t mark;        /* the walker's frames stepped when this trial began */
    uint32_t sets;        /* a power of 2 */
    size_t bytes;         /* of this mapping */
    uint8_t *next;        /* each set's way to replace next */
    /* Each stack's key (0: none), set by set: a lookup reads one line of
     * them, not the first line of each of the set's stacks. */
    uint64_t *key;
    struct recent_stack *s; /* sets * RECENT_WAYS, set by set */
};

/* The end of a trial (RECENT_TRIAL lookups): the rest, and growing;
 * stepped: the frames the thread's walker has stepped, in all. */
void mtl__recent_trial_end(struct recent **rp, uint64_t stepped) MTL_HIDDEN;
/* Keeps the stack id that walk (n frames, at most max) found, if the walk
 * reached the program's outermost frame or the limit. */
void mtl__recent_keep(struct recent **rp, const struct mtl__unwind_walk *walk, uint32_t n,
                      uint32_t max, uint32_t id) MTL_HIDDEN;

#define RECENT_TRIAL 4096u

/* The set of the stacks from the program's frame (ip, sp) whose caller's
 * return address is ra: most allocations of a program go through the
 * same wrapper (perl's safesysmalloc, sqlite3's sqlite3MemMalloc) at a
 * few depths, so the frame alone would put them all in a few sets. */
static inline uint64_t mtl__recent_key(uint64_t ip, uint64_t sp, uint64_t ra)
{
    return ((ip ^ (sp << 16) ^ (ra * 0xff51afd7ed558ccdull)) * 0x9e3779b97f4a7c15ull) | 1;
}

static inline size_t mtl__recent_set(const struct recent *r, uint64_t key)
{
    return (size_t)(key >> 40) & (r->sets - 1);
}

/* Whether every word s's walk read still reads the same, from sp. */
static inline int mtl__recent_holds(const struct recent_stack *s, uint64_t sp)
{
    const uint64_t *base = (const uint64_t *)(uintptr_t)sp;
    for (uint32_t i = 0; i < s->nwords; i++) {
        uint64_t w = s->word[i];
        if (base[w >> RECENT_VALUE_BITS] != (w & RECENT_VALUE_MASK))
            return 0;
    }
    return 1;
}

/* The id of the stack from the program's frame (ip, sp, rbp), if it is
 * one of the thread's recent stacks; else 0.  m: the thread's walker
 * memo, for the caller's return address. */
static inline uint32_t mtl__recent_find(struct recent **rp, struct mtl__unwind_memo *m,
                                        uint64_t ip, uint64_t sp, uint64_t rbp, uint32_t max)
{
    struct recent *r = *rp;
    if (!r || r->owner != (uint64_t)(uintptr_t)&mtl__tls)
        return 0;
    if (MTL_UNLIKELY(++r->tries == 1))
        r->mark = m->stepped;
    if (MTL_UNLIKELY(r->tries == RECENT_TRIAL)) {
        mtl__recent_trial_end(rp, m->stepped);
        r = *rp;
    }
    uint64_t ra = mtl__unwind_caller(m, ip, sp, rbp);
    uint64_t key = mtl__recent_key(ip, sp, ra);
    size_t set = mtl__recent_set(r, key) * RECENT_WAYS;
    /* The ways' first lines asked for while the keys are compared: the
     * stack found is then one cache miss nearer. */
    for (unsigned w = 0; w < RECENT_WAYS; w++)
        __builtin_prefetch(&r->s[set + w]);
    for (unsigned w = 0; w < RECENT_WAYS; w++) {
        if (r->key[set + w] != key)
            continue;
        const struct recent_stack *s = &r->s[set + w];
        if (s->ip == ip && s->sp == sp && s->ra == ra && s->id && s->max == max &&
            (s->rbp == rbp || s->rbp_free) && mtl__recent_holds(s, sp)) {
            r->found++;
            r->hits++;
            return s->id;
        }
    }
    return 0;
}

/* Whether to ask the recent stacks, and keep this one: not while they
 * rest. */
static inline int mtl__recent_wanted(struct recent *r)
{
    if (MTL_LIKELY(!r || !r->rest))
        return 1;
    r->rest--;
    return 0;
}

/* Addresses may mean other code now (an unload): nothing kept holds. */
static inline void mtl__recent_forget(struct recent *r)
{
    if (r)
        r->owner = 0;
}

#endif
