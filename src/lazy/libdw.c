/*
 * libdw.c: libdw's functions (DWARF and the module map), loaded on first use (lazy.h).
 */
#pragma GCC visibility push(hidden)
#include <stdbool.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <elfutils/libdwelf.h>
#include "lazy/lazy.h"

static struct mtl_lazy_lib lib_dw = {"libdw.so.1", "libdw1", 0};

MTL_LAZY(lib_dw, Dwarf_Attribute *, dwarf_attr,
         (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result),
         (die, search_name, result))
MTL_LAZY(lib_dw, Dwarf_Attribute *, dwarf_attr_integrate,
         (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result),
         (die, search_name, result))
MTL_LAZY(lib_dw, int, dwarf_child, (Dwarf_Die *die, Dwarf_Die *result), (die, result))
MTL_LAZY(lib_dw, Dwarf *, dwarf_cu_getdwarf, (Dwarf_CU *cu), (cu))
MTL_LAZY(lib_dw, const char *, dwarf_diename, (Dwarf_Die *die), (die))
MTL_LAZY(lib_dw, Dwarf_Off, dwarf_dieoffset, (Dwarf_Die *die), (die))
MTL_LAZY(lib_dw, const char *, dwarf_filesrc,
         (Dwarf_Files *file, size_t idx, Dwarf_Word *mtime, Dwarf_Word *length),
         (file, idx, mtime, length))
MTL_LAZY(lib_dw, Dwarf_Die *, dwarf_formref_die, (Dwarf_Attribute *attr, Dwarf_Die *die_mem),
         (attr, die_mem))
MTL_LAZY(lib_dw, const char *, dwarf_formstring, (Dwarf_Attribute *attrp), (attrp))
MTL_LAZY(lib_dw, int, dwarf_formudata, (Dwarf_Attribute *attr, Dwarf_Word *return_uval),
         (attr, return_uval))
MTL_LAZY(lib_dw, int, dwarf_get_units,
         (Dwarf *dwarf, Dwarf_CU *cu, Dwarf_CU **next_cu, Dwarf_Half *version, uint8_t *unit_type,
          Dwarf_Die *cudie, Dwarf_Die *subdie),
         (dwarf, cu, next_cu, version, unit_type, cudie, subdie))
MTL_LAZY(lib_dw, int, dwarf_getaranges, (Dwarf *dbg, Dwarf_Aranges **aranges, size_t *naranges),
         (dbg, aranges, naranges))
MTL_LAZY(lib_dw, int, dwarf_getscopes_die, (Dwarf_Die *die, Dwarf_Die **scopes), (die, scopes))
MTL_LAZY(lib_dw, Dwarf_Line *, dwarf_getsrc_die, (Dwarf_Die *cudie, Dwarf_Addr addr),
         (cudie, addr))
MTL_LAZY(lib_dw, int, dwarf_getsrcfiles, (Dwarf_Die *cudie, Dwarf_Files **files, size_t *nfiles),
         (cudie, files, nfiles))
MTL_LAZY(lib_dw, int, dwarf_hasattr, (Dwarf_Die *die, unsigned int search_name),
         (die, search_name))
MTL_LAZY(lib_dw, int, dwarf_haspc, (Dwarf_Die *die, Dwarf_Addr pc), (die, pc))
MTL_LAZY(lib_dw, int, dwarf_lineno, (Dwarf_Line *line, int *linep), (line, linep))
MTL_LAZY(lib_dw, const char *, dwarf_linesrc,
         (Dwarf_Line *line, Dwarf_Word *mtime, Dwarf_Word *length), (line, mtime, length))
MTL_LAZY(lib_dw, ptrdiff_t, dwarf_ranges,
         (Dwarf_Die *die, ptrdiff_t offset, Dwarf_Addr *basep, Dwarf_Addr *startp,
          Dwarf_Addr *endp),
         (die, offset, basep, startp, endp))
MTL_LAZY(lib_dw, int, dwarf_siblingof, (Dwarf_Die *die, Dwarf_Die *result), (die, result))
MTL_LAZY(lib_dw, int, dwarf_srclang, (Dwarf_Die *die), (die))
MTL_LAZY(lib_dw, int, dwarf_tag, (Dwarf_Die *die), (die))
MTL_LAZY(lib_dw, ssize_t, dwelf_elf_gnu_build_id, (Elf *elf, const void **build_idp),
         (elf, build_idp))
MTL_LAZY(lib_dw, Dwfl *, dwfl_begin, (const Dwfl_Callbacks *callbacks), (callbacks))
MTL_LAZY_VOID(lib_dw, dwfl_end, (Dwfl *a0), (a0))
MTL_LAZY(lib_dw, const char *, dwfl_errmsg, (int err), (err))
MTL_LAZY(lib_dw, Dwarf_Die *, dwfl_module_addrdie,
         (Dwfl_Module *mod, Dwarf_Addr addr, Dwarf_Addr *bias), (mod, addr, bias))
MTL_LAZY(lib_dw, int, dwfl_module_build_id,
         (Dwfl_Module *mod, const unsigned char **bits, GElf_Addr *vaddr), (mod, bits, vaddr))
MTL_LAZY(lib_dw, Dwarf *, dwfl_module_getdwarf, (Dwfl_Module *a0, Dwarf_Addr *bias), (a0, bias))
MTL_LAZY(lib_dw, Elf *, dwfl_module_getelf, (Dwfl_Module *a0, GElf_Addr *bias), (a0, bias))
MTL_LAZY(lib_dw, const char *, dwfl_module_getsym_info,
         (Dwfl_Module *mod, int ndx, GElf_Sym *sym, GElf_Addr *addr, GElf_Word *shndxp, Elf **elfp,
          Dwarf_Addr *bias),
         (mod, ndx, sym, addr, shndxp, elfp, bias))
MTL_LAZY(lib_dw, int, dwfl_module_getsymtab, (Dwfl_Module *mod), (mod))
MTL_LAZY(lib_dw, const char *, dwfl_module_info,
         (Dwfl_Module *mod, void ***userdata, Dwarf_Addr *start, Dwarf_Addr *end,
          Dwarf_Addr *dwbias, Dwarf_Addr *symbias, const char **mainfile, const char **debugfile),
         (mod, userdata, start, end, dwbias, symbias, mainfile, debugfile))
MTL_LAZY(lib_dw, int, dwfl_offline_section_address,
         (Dwfl_Module *a0, void **a1, const char *a2, Dwarf_Addr a3, const char *a4, GElf_Word a5,
          const GElf_Shdr *a6, Dwarf_Addr *addr),
         (a0, a1, a2, a3, a4, a5, a6, addr))
MTL_LAZY_VOID(lib_dw, dwfl_report_begin, (Dwfl *dwfl), (dwfl))
MTL_LAZY(lib_dw, Dwfl_Module *, dwfl_report_elf,
         (Dwfl *dwfl, const char *name, const char *file_name, int fd, GElf_Addr base,
          bool add_p_vaddr),
         (dwfl, name, file_name, fd, base, add_p_vaddr))
MTL_LAZY(lib_dw, int, dwfl_report_end,
         (Dwfl *dwfl, int (*removed)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *arg),
          void *arg),
         (dwfl, removed, arg))
