/*
 * rules.h: a frame's unwind rule as the walker keeps it (unwind.c finds
 * them in the CFI), and the caller's return address by the thread's hot
 * cache of rules, inline.
 *
 * The recent stacks' lookup (recent.h) asks for the return address in
 * the allocating frame's caller on every allocation; as a call into
 * unwind.c that cost 1.5 ns an event on bench/eventcost.sh's flat shape
 * (docs/PERFORMANCE.md, "One event's cost").  Inline is the rule found in
 * the thread's hot cache; else mtl__unwind_caller_slow looks it up.
 */
#ifndef MEMTALLY_PRELOAD_RULES_H
#define MEMTALLY_PRELOAD_RULES_H

#include "preload/preload.h"

/* A frame's rule, packed in 64 bits (0: not yet known). */
#define RULE_KNOWN 1ull      /* the rule was looked for */
#define RULE_OK 2ull         /* ... and it is one we can follow */
#define RULE_END 4ull        /* no caller: the return address is undefined */
#define RULE_CFA_RBP 8ull    /* CFA = rbp + offset, else rsp + offset */
#define RULE_RBP_SAVED 16ull /* rbp saved at CFA + rbp offset */
#define RULE_RBP_OFF(r) ((int16_t)((r) >> 16))
#define RULE_CFA_OFF(r) ((int32_t)((r) >> 32))

/* The CFA of a frame by its rule: its caller's stack pointer. */
static inline uint64_t mtl__rule_cfa(uint64_t rule, uint64_t sp, uint64_t rbp)
{
    return ((rule & RULE_CFA_RBP) ? rbp : sp) + (uint64_t)(int64_t)RULE_CFA_OFF(rule);
}

/* pc's entry in a thread's hot cache of rules (struct mtl__unwind_memo). */
static inline size_t mtl__rule_hot_slot(uint64_t pc)
{
    return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 54) & (MTL_UNWIND_HOT - 1);
}

/* The return address in the caller of a frame (sp, rbp) whose rule is
 * rule, read as a step of the walk reads it; 0 when it cannot be. */
static inline uint64_t mtl__caller_by_rule(uint64_t rule, uint64_t sp, uint64_t rbp)
{
    if (!(rule & RULE_OK) || (rule & RULE_END))
        return 0;
    uint64_t cfa = mtl__rule_cfa(rule, sp, rbp);
    if (cfa <= sp || (cfa & 7))
        return 0;
    return *(const uint64_t *)(uintptr_t)(cfa - 8);
}

uint64_t mtl__unwind_caller_slow(struct mtl__unwind_memo *m, uint64_t ip, uint64_t sp,
                                 uint64_t rbp) MTL_HIDDEN;

/* The return address in the caller of the frame (ip, a return address;
 * sp; rbp); 0 when it cannot be. */
static inline uint64_t mtl__unwind_caller(struct mtl__unwind_memo *m, uint64_t ip, uint64_t sp,
                                          uint64_t rbp)
{
    uint64_t pc = ip - 1;
    size_t i = mtl__rule_hot_slot(pc);
    if (MTL_LIKELY(m->hot[i].pc == pc))
        return mtl__caller_by_rule(m->hot[i].rule, sp, rbp);
    return mtl__unwind_caller_slow(m, ip, sp, rbp);
}

#endif
