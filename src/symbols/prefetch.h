/*
 * symbols/prefetch.h: a symbolizer's files made ready on a thread of its
 * own while the caller does something else (an analysis reads its trace).
 */
#ifndef MTL_SYMBOLS_PREFETCH_H
#define MTL_SYMBOLS_PREFETCH_H

#include <stdint.h>

#include "memtally/symbols.h"

/* Starts opening the files of modules[0..n) (module indexes, as
 * mtl_symbolizer_resolve takes them) with their symbol tables and DWARF
 * address ranges, on a thread that owns s until the next call of s's API,
 * which waits for it.  Once per symbolizer; not when debuginfod may be
 * asked (a download for a module no frame uses would be waited for).
 * The modules are copied now: the caller may change its own meanwhile.
 * Nothing changes but the time: a module's warning is still reported when
 * a frame of it is first resolved.  Returns 1 when the thread runs, 0
 * when nothing was started (then s is as before). */
int mtl_symbolizer_prefetch(struct mtl_symbolizer *s, const uint32_t *modules, size_t n);

#endif
