/*
 * unwind.c: memtally's own stack walker for x86-64, which reuses what the
 * thread's previous walk found.
 *
 * Why our own (docs/DESIGN.md, "Stacks"): libunwind's unw_backtrace
 * walks every frame of every stack, about 5 ns a frame here; an
 * allocation 20 to 60 frames deep pays that on every call, although most
 * of its frames are those of the thread's previous allocation.  This
 * walker stops as soon as it reaches a frame that the previous walk went
 * through, and takes the rest from it, after checking that the rest still
 * holds.
 *
 * The walk.  A frame is (ip, sp, rbp).  Its rule, read from the object's
 * .eh_frame (DWARF CFI, found through .eh_frame_hdr) and cached per
 * address, says where its caller's frame is: CFA = sp or rbp + offset,
 * the return address at CFA - 8, rbp unchanged or saved at CFA + offset.
 * A rule of another shape (CFA or rbp by expression, a signal frame, code
 * without CFI) makes the walk give up: the caller then asks libunwind for
 * the whole stack, so a stack is never wrong, only slower.
 *
 * Why the reuse is exact.  From a frame's (ip, sp, rbp) on, a walk is a
 * function of the rules and of the memory words it reads: each return
 * address slot and each saved rbp slot.  The previous walk kept, per
 * frame, its state and where it read.  When this walk reaches a state
 * equal to a kept one, the kept frames beyond it are this walk's too if
 * every word they depended on still holds the value read: checked one
 * load per word, outward, before anything is reused.  A saved rbp is such
 * a word only when a frame beyond based its CFA on it (rbp_need); so a
 * frame's rbp need not be equal either when no frame from it outward
 * used it.  The walk also keeps each frame's suffix hash (the
 * stack's hash from there out), so a reused walk's hash costs only its new
 * frames.  Addresses only ever mean the same code between dlopen and
 * dlclose: an unload empties the rule cache (mtl__unwind_forget) and each
 * thread's memo (mtl__unwind_memo_forget, from stacks.c's generation
 * check, the one every capture makes anyway).
 *
 * Nothing here allocates or takes a lock the allocator may hold: the rule
 * cache is in pages of our own, filled under our own mutex (with
 * dl_iterate_phdr inside, as libunwind does); lookups take no lock.
 */
#include "preload/rules.h"

#include <link.h>
#include <string.h>

/* ------------------------------------------------------------ rules */

/* A frame's rule: packed in 64 bits as rules.h says. */

static uint64_t rule_make(int cfa_rbp, int32_t cfa_off, int rbp_saved, int16_t rbp_off)
{
    return RULE_KNOWN | RULE_OK | (cfa_rbp ? RULE_CFA_RBP : 0) |
           (rbp_saved ? RULE_RBP_SAVED : 0) | ((uint64_t)(uint16_t)rbp_off << 16) |
           ((uint64_t)(uint32_t)cfa_off << 32);
}

/* DWARF register numbers of x86-64. */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16

/* Pointer encodings (DW_EH_PE_*). */
#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_APPL 0x70
#define PE_INDIRECT 0x80

struct cursor {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t sleb(struct cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    for (; c->p < c->end; shift += 7) {
        uint8_t b = *c->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            if (shift + 7 < 64 && (b & 0x40))
                v |= ~0ull << (shift + 7);
            return (int64_t)v;
        }
    }
    c->bad = 1;
    return 0;
}

static uint64_t fixed(struct cursor *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian */
    c->p += n;
    return v;
}

/* A pointer in encoding enc; datarel is relative to data. */
static uint64_t encoded(struct cursor *c, uint8_t enc, uint64_t data)
{
    if (enc == PE_OMIT)
        return 0;
    uint64_t here = (uint64_t)(uintptr_t)c->p, v;
    switch (enc & PE_FORMAT) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: c->bad = 1; return 0;
    }
    switch (enc & PE_APPL) {
    case 0x00: break;
    case 0x10: v += here; break;
    case 0x30: v += data; break;
    default: c->bad = 1; return 0;
    }
    if (enc & PE_INDIRECT)
        c->bad = 1; /* never seen in the FDE fields we read */
    return v;
}

/* The rules for one register, as far as we follow them. */
enum reg_how { REG_SAME, REG_OFFSET, REG_UNDEFINED, REG_OTHER };
struct reg_rule {
    uint8_t how;
    int64_t off;
};

struct cfa_state {
    uint64_t cfa_reg;
    int64_t cfa_off;
    int cfa_other;          /* by an expression */
    struct reg_rule rbp, ra;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    int signal;
    const uint8_t *insns, *end;
};

static struct reg_rule *reg_of(struct cfa_state *s, uint64_t reg, struct reg_rule *scratch)
{
    if (reg == DW_RBP)
        return &s->rbp;
    if (reg == DW_RA)
        return &s->ra;
    return scratch; /* a register we never restore */
}

#define STATE_STACK 8

/* Runs CFI instructions [p, end) from loc until an advance passes target;
 * initial: the CIE's rules (for DW_CFA_restore).  0, or -1 when an
 * instruction is not understood. */
static int run_cfi(struct cfa_state *s, const struct cfa_state *initial, const struct cie *cie,
                   const uint8_t *p, const uint8_t *end, uint64_t loc, uint64_t target)
{
    struct cursor c = { p, end, 0 };
    struct cfa_state stack[STATE_STACK];
    int depth = 0;
    struct reg_rule scratch;
    while (c.p < c.end && !c.bad) {
        uint8_t op = *c.p++;
        uint64_t reg, delta = UINT64_MAX;
        struct reg_rule *r;
        switch (op >> 6) {
        case 1:
            delta = op & 0x3f;
            break;
        case 2:
            r = reg_of(s, op & 0x3f, &scratch);
            r->how = REG_OFFSET;
            r->off = (int64_t)uleb(&c) * cie->data_align;
            continue;
        case 3:
            if (!initial)
                return -1;
            *reg_of(s, op & 0x3f, &scratch) = *reg_of((struct cfa_state *)initial, op & 0x3f, &scratch);
            continue;
        default:
            break;
        }
        if (delta == UINT64_MAX) {
            switch (op) {
            case 0x00: /* nop */
                continue;
            case 0x01: /* set_loc */
                loc = encoded(&c, cie->fde_enc, 0);
                if (loc > target)
                    return 0;
                continue;
            case 0x02: delta = fixed(&c, 1); break;
            case 0x03: delta = fixed(&c, 2); break;
            case 0x04: delta = fixed(&c, 4); break;
            case 0x05: /* offset_extended */
                reg = uleb(&c);
                r = reg_of(s, reg, &scratch);
                r->how = REG_OFFSET;
                r->off = (int64_t)uleb(&c) * cie->data_align;
                continue;
            case 0x06: /* restore_extended */
                reg = uleb(&c);
                if (!initial)
                    return -1;
                *reg_of(s, reg, &scratch) = *reg_of((struct cfa_state *)initial, reg, &scratch);
                continue;
            case 0x07: /* undefined */
                reg_of(s, uleb(&c), &scratch)->how = REG_UNDEFINED;
                continue;
            case 0x08: /* same_value */
                reg_of(s, uleb(&c), &scratch)->how = REG_SAME;
                continue;
            case 0x09: /* register */
                reg_of(s, uleb(&c), &scratch)->how = REG_OTHER;
                uleb(&c);
                continue;
            case 0x0a: /* remember_state */
                if (depth == STATE_STACK)
                    return -1;
                stack[depth++] = *s;
                continue;
            case 0x0b: /* restore_state: the CFA's rule too, as GCC expects */
                if (!depth)
                    return -1;
                *s = stack[--depth];
                continue;
            case 0x0c: /* def_cfa */
                s->cfa_reg = uleb(&c);
                s->cfa_off = (int64_t)uleb(&c);
                s->cfa_other = 0;
                continue;
            case 0x0d: /* def_cfa_register */
                s->cfa_reg = uleb(&c);
                s->cfa_other = 0;
                continue;
            case 0x0e: /* def_cfa_offset */
                s->cfa_off = (int64_t)uleb(&c);
                continue;
            case 0x0f: /* def_cfa_expression */
                s->cfa_other = 1;
                c.p += uleb(&c);
                continue;
            case 0x10: /* expression */
                reg_of(s, uleb(&c), &scratch)->how = REG_OTHER;
                c.p += uleb(&c);
                continue;
            case 0x11: /* offset_extended_sf */
                reg = uleb(&c);
                r = reg_of(s, reg, &scratch);
                r->how = REG_OFFSET;
                r->off = sleb(&c) * cie->data_align;
                continue;
            case 0x12: /* def_cfa_sf */
                s->cfa_reg = uleb(&c);
                s->cfa_off = sleb(&c) * cie->data_align;
                s->cfa_other = 0;
                continue;
            case 0x13: /* def_cfa_offset_sf */
                s->cfa_off = sleb(&c) * cie->data_align;
                continue;
            case 0x14: /* val_offset */
            case 0x15: /* val_offset_sf */
                reg_of(s, uleb(&c), &scratch)->how = REG_OTHER;
                if (op == 0x14)
                    uleb(&c);
                else
                    sleb(&c);
                continue;
            case 0x16: /* val_expression */
                reg_of(s, uleb(&c), &scratch)->how = REG_OTHER;
                c.p += uleb(&c);
                continue;
            case 0x2e: /* GNU_args_size */
                uleb(&c);
                continue;
            case 0x2f: /* GNU_negative_offset_extended */
                reg = uleb(&c);
                r = reg_of(s, reg, &scratch);
                r->how = REG_OFFSET;
                r->off = -(int64_t)uleb(&c) * cie->data_align;
                continue;
            default:
                return -1;
            }
        }
        loc += delta * cie->code_align;
        if (loc > target)
            return 0;
    }
    return c.bad || c.p > c.end ? -1 : 0;
}

static int parse_cie(const uint8_t *at, const uint8_t *limit, struct cie *out)
{
    struct cursor c = { at, limit, 0 };
    uint64_t len = fixed(&c, 4);
    if (len == 0xffffffffu || len == 0 || len > (uint64_t)(limit - c.p))
        return -1;
    c.end = c.p + len;
    if (fixed(&c, 4) != 0) /* a CIE's id */
        return -1;
    uint8_t version = (uint8_t)fixed(&c, 1);
    const char *aug = (const char *)c.p;
    while (c.p < c.end && *c.p)
        c.p++;
    c.p++;
    if (c.p > c.end || (version != 1 && version != 3) || (aug[0] && aug[0] != 'z'))
        return -1;
    out->code_align = uleb(&c);
    out->data_align = sleb(&c);
    out->ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
    out->fde_enc = 0;
    out->signal = 0;
    if (aug[0] == 'z') {
        uint64_t n = uleb(&c);
        const uint8_t *data_end = c.p + n;
        for (const char *a = aug + 1; *a && !c.bad; a++) {
            if (*a == 'R')
                out->fde_enc = (uint8_t)fixed(&c, 1);
            else if (*a == 'L')
                fixed(&c, 1);
            else if (*a == 'P') {
                uint8_t enc = (uint8_t)fixed(&c, 1);
                encoded(&c, enc & (uint8_t)~PE_INDIRECT, 0);
            } else if (*a == 'S')
                out->signal = 1;
            else
                break; /* unknown: the length lets us skip the rest */
        }
        c.p = data_end;
    }
    if (c.bad || c.p > c.end || out->ra_reg != DW_RA)
        return -1;
    out->insns = c.p;
    out->end = c.end;
    return 0;
}

/* The object holding pc and its .eh_frame_hdr, by dl_iterate_phdr. */
struct find_object {
    uint64_t pc;
    const uint8_t *hdr;
    int found;
};

static int find_object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_object *f = arg;
    const ElfW(Phdr) *eh = NULL;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && f->pc >= lo && f->pc < lo + ph->p_memsz)
            inside = 1;
        else if (ph->p_type == PT_GNU_EH_FRAME)
            eh = ph;
    }
    if (!inside)
        return 0;
    f->found = 1;
    f->hdr = eh ? (const uint8_t *)(uintptr_t)(info->dlpi_addr + eh->p_vaddr) : NULL;
    return 1;
}

/* The rule at pc (looked for as given: callers pass ip - 1 for a return
 * address), from the CFI of the object holding it. */
static uint64_t rule_from_cfi(uint64_t pc)
{
    const uint64_t unknown = RULE_KNOWN;
    struct find_object f = { .pc = pc };
    dl_iterate_phdr(find_object_cb, &f);
    if (!f.found || !f.hdr || f.hdr[0] != 1)
        return unknown;
    /* .eh_frame_hdr: version, three encodings, eh_frame_ptr, fde_count,
     * then the sorted table, which must be datarel sdata4 pairs. */
    const uint8_t *hdr = f.hdr;
    struct cursor c = { hdr + 4, hdr + 4 + 16, 0 };
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    encoded(&c, hdr[1], base);
    uint64_t count = encoded(&c, hdr[2], base);
    if (c.bad || hdr[3] != 0x3b || count == 0)
        return unknown;
    const int32_t *table = (const int32_t *)(const void *)c.p;
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    if (base + (uint64_t)(int64_t)table[2 * lo] > pc)
        return unknown;
    const uint8_t *fde = hdr + table[2 * lo + 1];
    /* The FDE: length, CIE pointer, pc_begin, pc_range, augmentation. */
    struct cursor d = { fde, fde + 8, 0 };
    uint64_t len = fixed(&d, 4);
    if (len == 0xffffffffu || len < 8)
        return unknown;
    d.end = fde + 4 + len;
    const uint8_t *cie_ptr_at = d.p;
    uint32_t cie_off = (uint32_t)fixed(&d, 4);
    struct cie cie;
    if (cie_off == 0 || parse_cie(cie_ptr_at - cie_off, cie_ptr_at, &cie) < 0 || cie.signal)
        return unknown;
    uint64_t begin = encoded(&d, cie.fde_enc, 0);
    uint64_t range = encoded(&d, cie.fde_enc & PE_FORMAT, 0);
    if (d.bad || pc < begin || pc - begin >= range)
        return unknown;
    uint64_t aug = uleb(&d);
    d.p += aug;
    if (d.bad || d.p > d.end)
        return unknown;

    struct cfa_state initial = { .cfa_reg = DW_RSP }, s;
    if (run_cfi(&initial, NULL, &cie, cie.insns, cie.end, 0, UINT64_MAX) < 0)
        return unknown;
    s = initial;
    if (run_cfi(&s, &initial, &cie, d.p, d.end, begin, pc) < 0)
        return unknown;
    if (s.cfa_other || (s.cfa_reg != DW_RSP && s.cfa_reg != DW_RBP) ||
        s.cfa_off < INT32_MIN || s.cfa_off > INT32_MAX)
        return unknown;
    if (s.ra.how == REG_UNDEFINED)
        return rule_make(s.cfa_reg == DW_RBP, (int32_t)s.cfa_off, 0, 0) | RULE_END;
    if (s.ra.how != REG_OFFSET || s.ra.off != -8)
        return unknown;
    if (s.rbp.how == REG_OFFSET) {
        if (s.rbp.off < INT16_MIN || s.rbp.off > INT16_MAX)
            return unknown;
        return rule_make(s.cfa_reg == DW_RBP, (int32_t)s.cfa_off, 1, (int16_t)s.rbp.off);
    }
    if (s.rbp.how != REG_SAME)
        return unknown;
    return rule_make(s.cfa_reg == DW_RBP, (int32_t)s.cfa_off, 0, 0);
}

/* The rule cache: open addressing, pc -> rule, filled under mu and read
 * without it (the key is published after the rule).  A full table stops
 * caching: rules are then read from the CFI each time (slow, still right),
 * until an unload empties it. */
#define RULE_BITS 17
struct rule_entry {
    uint64_t pc;
    uint64_t rule;
};

static struct {
    pthread_mutex_t mu;
    struct rule_entry *e; /* 1 << RULE_BITS entries */
    size_t used;
} rc = { .mu = PTHREAD_MUTEX_INITIALIZER };

static inline size_t rule_slot(uint64_t pc)
{
    return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - RULE_BITS));
}

static uint64_t rule_slow(uint64_t pc)
{
    pthread_mutex_lock(&rc.mu);
    uint64_t rule = 0;
    size_t mask = (1u << RULE_BITS) - 1, i = rule_slot(pc);
    for (; rc.e && rc.e[i].pc; i = (i + 1) & mask)
        if (rc.e[i].pc == pc) {
            rule = rc.e[i].rule;
            break;
        }
    if (!rule) {
        rule = rule_from_cfi(pc);
        if (rc.e && rc.used * 4 < (size_t)3 << RULE_BITS) {
            rc.e[i].rule = rule;
            __atomic_store_n(&rc.e[i].pc, pc, __ATOMIC_RELEASE);
            rc.used++;
        }
    }
    pthread_mutex_unlock(&rc.mu);
    return rule;
}

static inline uint64_t shared_rule_at(uint64_t pc)
{
    struct rule_entry *e = rc.e;
    size_t mask = (1u << RULE_BITS) - 1;
    for (size_t i = rule_slot(pc);; i = (i + 1) & mask) {
        uint64_t k = __atomic_load_n(&e[i].pc, __ATOMIC_ACQUIRE);
        if (k == pc)
            return e[i].rule;
        if (!k)
            return rule_slow(pc);
    }
}

/* The thread's hot cache first: direct-mapped, in its own pages, so the
 * rules of the frames it walks stay in a few cache lines. */
static inline uint64_t rule_at(struct mtl__unwind_memo *m, uint64_t pc)
{
    size_t i = mtl__rule_hot_slot(pc);
    if (MTL_LIKELY(m->hot[i].pc == pc))
        return m->hot[i].rule;
    uint64_t rule = shared_rule_at(pc);
    m->hot[i].pc = pc;
    m->hot[i].rule = rule;
    return rule;
}

int mtl__unwind_init(void)
{
    rc.e = mtl__pages_alloc(sizeof(struct rule_entry) << RULE_BITS);
    return rc.e ? 0 : -1;
}

void mtl__unwind_forget(void)
{
    pthread_mutex_lock(&rc.mu);
    for (size_t i = 0; i < (1u << RULE_BITS); i++)
        __atomic_store_n(&rc.e[i].pc, 0, __ATOMIC_RELAXED);
    rc.used = 0;
    pthread_mutex_unlock(&rc.mu);
}

void mtl__unwind_memo_forget(struct mtl__unwind_memo *m)
{
    memset(m->hot, 0, sizeof m->hot);
    m->walk.n = 0;
    m->owner = 0;
}

void mtl__unwind_atfork(int phase)
{
    mtl__mutex_atfork(&rc.mu, phase);
}

/* ------------------------------------------------------------- walk */

/* One step from frame k of w: its caller's frame into k + 1.  1: done,
 * 0: the walk ended at k (no caller), -1: cannot follow.  A frame's rule is
 * that of the instruction before its ip, a return address, but for frame
 * 0 of a walk that began where it was (ra0 0). */
static inline int step(struct mtl__unwind_memo *m, struct mtl__unwind_walk *w, uint32_t k,
                       const struct mtl__unwind_walk *last, uint32_t ra0)
{
    uint64_t ip = (uint64_t)(uintptr_t)w->ip[k];
    /* The last walk's frame k at the same address has its rule at hand
     * (already loaded, off the chain of dependent loads a step is). */
    uint64_t rule = last && k < last->n && last->ip[k] == w->ip[k] ? last->rule[k] : 0;
    if (!rule)
        rule = rule_at(m, (k | ra0) ? ip - 1 : ip);
    w->rule[k] = rule;
    if (MTL_UNLIKELY(!(rule & RULE_OK)))
        return -1;
    uint64_t cfa = mtl__rule_cfa(rule, w->sp[k], w->rbp[k]);
    if (rule & RULE_END)
        return 0;
    /* The caller's frame is above this one, in whole words. */
    if (MTL_UNLIKELY(cfa <= w->sp[k] || (cfa & 7)))
        return -1;
    uint64_t ra = *(const uint64_t *)(uintptr_t)(cfa - 8);
    if (ra == 0) {
        w->end_at = cfa - 8;
        return 0;
    }
    uint64_t rbp = w->rbp[k], at = 0;
    if (rule & RULE_RBP_SAVED) {
        at = cfa + (uint64_t)(int64_t)RULE_RBP_OFF(rule);
        rbp = *(const uint64_t *)(uintptr_t)at;
    }
    w->rbp_at[k] = at;
    w->ip[k + 1] = (void *)(uintptr_t)ra;
    w->sp[k + 1] = cfa;
    w->rbp[k + 1] = rbp;
    w->rule[k + 1] = 0; /* until stepped from */
    return 1;
}

/* Whether a frame whose rule is rule, whose caller's rbp it saved or not
 * (saved), used its own rbp in stepping to its caller or passed it on to
 * frames beyond that used it (outer: whether its caller's was used).  A
 * rule not known (a walk's last frame, not stepped from) counts as used. */
static inline uint8_t rbp_need_of(uint64_t rule, int saved, uint8_t outer)
{
    if (!(rule & RULE_OK))
        return 1;
    if (rule & RULE_END)
        return 0;
    return (rule & RULE_CFA_RBP) || (!saved && outer);
}

/* w's rbp_need of its frames below from, whose own is made (from = w->n:
 * all of them). */
static void mark_rbp_need(struct mtl__unwind_walk *w, uint32_t from)
{
    uint8_t outer = 0;
    if (from >= w->n) {
        from = w->n - 1;
        w->rbp_need[from] = rbp_need_of(w->complete ? w->rule[from] : 0, 1, 0);
    }
    outer = w->rbp_need[from];
    for (uint32_t i = from; i-- > 0;)
        w->rbp_need[i] = outer = rbp_need_of(w->rule[i], w->rbp_at[i] != 0, outer);
}

uint64_t mtl__unwind_caller_slow(struct mtl__unwind_memo *m, uint64_t ip, uint64_t sp,
                                 uint64_t rbp)
{
    return mtl__caller_by_rule(rule_at(m, ip - 1), sp, rbp);
}

/* Whether the kept frames from j outward still hold: every word their
 * walk depended on has the value it read.  A saved rbp that no CFA beyond
 * used (most code keeps data in rbp, not a frame pointer) is not one: it
 * changes from call to call, and was half the cost of this check on
 * binary trees (docs/PERFORMANCE.md).  The recent stacks keep the same
 * words (recent.c). */
static inline int still_holds(const struct mtl__unwind_walk *w, uint32_t j)
{
    for (uint32_t i = j; i + 1 < w->n; i++) {
        if (*(const uint64_t *)(uintptr_t)(w->sp[i + 1] - 8) != (uint64_t)(uintptr_t)w->ip[i + 1])
            return 0;
        if (w->rbp_need[i + 1] && w->rbp_at[i] &&
            *(const uint64_t *)(uintptr_t)w->rbp_at[i] != w->rbp[i + 1])
            return 0;
    }
    /* And the 0 that ended it, if that is how it ended. */
    return !w->complete || !w->end_at || *(const uint64_t *)(uintptr_t)w->end_at == 0;
}

/* w's arrays: those of f (a struct of MTL_UNWIND_FRAMES), from index at. */
#define POINT_AT(w, f, at)                                                   \
    do {                                                                     \
        (w)->ip = (f)->ip + (at);                                            \
        (w)->sp = (f)->sp + (at);                                            \
        (w)->rbp = (f)->rbp + (at);                                          \
        (w)->rbp_at = (f)->rbp_at + (at);                                    \
        (w)->hs = (f)->hs + (at);                                            \
        (w)->rule = (f)->rule + (at);                                        \
        (w)->rbp_need = (f)->rbp_need + (at);                                \
    } while (0)

/* Frames j .. j + n of from to k .. k + n of to (the two may overlap). */
static void copy_frames(const struct mtl__unwind_walk *to, uint32_t k,
                        const struct mtl__unwind_walk *from, uint32_t j, uint32_t n)
{
    memmove(&to->ip[k], &from->ip[j], n * sizeof to->ip[0]);
    memmove(&to->sp[k], &from->sp[j], n * sizeof to->sp[0]);
    memmove(&to->rbp[k], &from->rbp[j], n * sizeof to->rbp[0]);
    memmove(&to->rbp_at[k], &from->rbp_at[j], n * sizeof to->rbp_at[0]);
    memmove(&to->hs[k], &from->hs[j], n * sizeof to->hs[0]);
    memmove(&to->rule[k], &from->rule[j], n * sizeof to->rule[0]);
    memmove(&to->rbp_need[k], &from->rbp_need[j], n * sizeof to->rbp_need[0]);
}

/* The suffix hashes of w's frames below from (those at and beyond it are
 * right already: a kept walk's whole tail, reused). */
static void hash_frames(struct mtl__unwind_walk *w, uint32_t from)
{
    uint64_t h = from < w->n ? w->hs[from] : MTL_STACK_HASH_SEED;
    for (uint32_t i = from < w->n ? from : w->n; i-- > 0;)
        w->hs[i] = h = mtl__stack_hash_step(h, (uint64_t)(uintptr_t)w->ip[i]);
}

/* The walk w (in m's scratch) met the kept one: its frame k is the kept
 * frame j, and the kept frames j .. j + n end it.  They stay where they
 * are, and w's k new frames go below them: the kept walk's outer frames,
 * most of a stack, are not copied.  Only when there is no room below
 * (walks that went deeper and deeper, cut at the depth limit) do the
 * kept frames move, to the end.  Returns the frames. */
static uint32_t keep_in_place(struct mtl__unwind_memo *m, const struct mtl__unwind_walk *w,
                              uint32_t k, uint32_t j, uint32_t n)
{
    struct mtl__unwind_walk *kept = &m->walk;
    uint32_t whole = j + n == kept->n; /* it ends where the kept walk did */
    uint32_t complete = kept->complete && whole;
    uint64_t end_at = complete ? kept->end_at : 0;
    uint32_t at = m->top + j;
    if (at < k) {
        struct mtl__unwind_walk from, to;
        POINT_AT(&from, &m->kept, at);
        POINT_AT(&to, &m->kept, MTL_UNWIND_SPAN - n);
        copy_frames(&to, 0, &from, 0, n);
        at = MTL_UNWIND_SPAN - n;
    }
    m->top = at - k;
    POINT_AT(kept, &m->kept, m->top);
    /* A few frames: a loop, not six calls; from the outermost new one in,
     * as each one's rbp_need follows from its caller's. */
    uint8_t outer = kept->rbp_need[k];
    for (uint32_t i = k; i-- > 0;) {
        kept->ip[i] = w->ip[i];
        kept->sp[i] = w->sp[i];
        kept->rbp[i] = w->rbp[i];
        kept->rbp_at[i] = w->rbp_at[i];
        kept->rule[i] = w->rule[i];
        kept->rbp_need[i] = outer = rbp_need_of(w->rule[i], w->rbp_at[i] != 0, outer);
    }
    kept->rbp[k] = w->rbp[k]; /* which may differ (not needed beyond) */
    kept->n = k + n;
    kept->complete = complete;
    kept->end_at = end_at;
    /* Cut short at the limit, its last frame's rbp counts again. */
    if (!whole)
        mark_rbp_need(kept, kept->n);
    /* Its suffix hashes hold if this walk ends where the kept one did. */
    hash_frames(kept, whole ? k : kept->n);
    return kept->n;
}

/* The walk from frame 0 (ip, sp, rbp); ra0: ip is a return address.  One
 * copy for both entries, so that the steps stay inlined into it.  Frames
 * are stepped into m's scratch until one meets the kept walk (m->walk). */
static __attribute__((noinline)) int
walk_from(struct mtl__unwind_memo *m, uint32_t max, uint64_t ip, uint64_t sp, uint64_t rbp,
          uint32_t ra0)
{
    if (max > MTL_UNWIND_CAP)
        max = MTL_UNWIND_CAP;
    uint64_t owner = (uint64_t)(uintptr_t)&mtl__tls;
    const struct mtl__unwind_walk *old = &m->walk;
    struct mtl__unwind_walk made, *w = &made;
    POINT_AT(w, &m->scratch, 0);
    /* Its rules hold: an unload empties the memo (mtl__unwind_memo_forget). */
    const struct mtl__unwind_walk *last = old->n ? old : NULL;
    int reuse = m->owner == owner && old->n;
    uint32_t j = 0, k = 0, stepped = 0;
    /* The kept frame to match next, by stack pointer: no frame below it
     * can match, so most frames cost one compare here. */
    uint64_t next_sp = reuse ? old->sp[0] : UINT64_MAX;
    w->ip[0] = (void *)(uintptr_t)ip;
    w->sp[0] = sp;
    w->rbp[0] = rbp;
    w->rule[0] = 0;
    w->complete = 0;
    w->end_at = 0;
    for (;;) {
        if (w->sp[k] >= next_sp) {
            while (j < old->n && old->sp[j] < w->sp[k])
                j++;
            next_sp = j < old->n ? old->sp[j] : UINT64_MAX;
            if (j < old->n && old->sp[j] == w->sp[k] && old->ip[j] == w->ip[k] &&
                (old->rbp[j] == w->rbp[k] || !old->rbp_need[j])) {
                next_sp = UINT64_MAX; /* one try: what follows is checked now */
                if (still_holds(old, j)) {
                    uint32_t n = old->n - j;
                    if (k + n > max)
                        n = max - k;
                    m->reused += n;
                    if (k + n >= max || (old->complete && j + n == old->n)) {
                        m->stepped += stepped;
                        m->owner = owner;
                        return (int)keep_in_place(m, w, k, j, n);
                    }
                    /* The kept walk stopped at its limit: on from its
                     * end, with its frames in the scratch. */
                    uint64_t rbp_here = w->rbp[k];
                    copy_frames(w, k, old, j, n);
                    w->rbp[k] = rbp_here;
                    k += n - 1;
                }
            }
        }
        if (k + 1 >= max)
            break;
        int r = step(m, w, k, last, ra0);
        stepped++;
        if (r < 0) {
            m->stepped += stepped;
            m->owner = 0;
            return -1;
        }
        if (r == 0) {
            w->complete = 1;
            break;
        }
        k++;
    }
    m->stepped += stepped;
    w->n = k + 1;
    hash_frames(w, w->n);
    mark_rbp_need(w, w->n);
    /* Kept at the end, with room below for deeper walks. */
    m->top = MTL_UNWIND_SPAN - w->n;
    struct mtl__unwind_walk *kept = &m->walk;
    POINT_AT(kept, &m->kept, m->top);
    copy_frames(kept, 0, w, 0, w->n);
    kept->n = w->n;
    kept->complete = w->complete;
    kept->end_at = w->end_at;
    m->owner = owner;
    return (int)kept->n;
}

__attribute__((noinline)) int mtl__unwind(struct mtl__unwind_memo *m, uint32_t max)
{
    uint64_t ip, sp, rbp;
    /* This function's own frame, where the walk begins: the rule for this
     * very instruction describes the stack as it is here. */
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=&r"(ip), "=&r"(sp), "=&r"(rbp));
    int n = walk_from(m, max, ip, sp, rbp, 0);
    /* Not a jump to walk_from: this frame, where the walk begins, stays. */
    __asm__ volatile("" : : "r"(n));
    return n;
}

__attribute__((noinline)) int mtl__unwind_from(struct mtl__unwind_memo *m, uint32_t max,
                                               uint64_t ip, uint64_t sp, uint64_t rbp)
{
    return walk_from(m, max, ip, sp, rbp, 1);
}
