/*
 * libelf.c: libelf's functions, loaded on first use (lazy.h).
 */
#pragma GCC visibility push(hidden)
#include <libelf.h>
#include <gelf.h>
#include "lazy/lazy.h"

static struct mtl_lazy_lib lib_elf = {"libelf.so.1", "libelf1", 0};

MTL_LAZY(lib_elf, Elf *, elf_begin, (int fildes, Elf_Cmd cmd, Elf *ref), (fildes, cmd, ref))
MTL_LAZY(lib_elf, int, elf_compress, (Elf_Scn *scn, int type, unsigned int flags),
         (scn, type, flags))
MTL_LAZY(lib_elf, int, elf_end, (Elf *elf), (elf))
MTL_LAZY(lib_elf, Elf_Data *, elf_getdata, (Elf_Scn *scn, Elf_Data *data), (scn, data))
MTL_LAZY(lib_elf, int, elf_getphdrnum, (Elf *elf, size_t *dst), (elf, dst))
MTL_LAZY(lib_elf, int, elf_getshdrstrndx, (Elf *elf, size_t *dst), (elf, dst))
MTL_LAZY(lib_elf, Elf_Data *, elf_newdata, (Elf_Scn *scn), (scn))
MTL_LAZY(lib_elf, Elf_Scn *, elf_newscn, (Elf *elf), (elf))
MTL_LAZY(lib_elf, Elf_Scn *, elf_nextscn, (Elf *elf, Elf_Scn *scn), (elf, scn))
MTL_LAZY(lib_elf, char *, elf_strptr, (Elf *elf, size_t index, size_t offset),
         (elf, index, offset))
MTL_LAZY(lib_elf, int64_t, elf_update, (Elf *elf, Elf_Cmd cmd), (elf, cmd))
MTL_LAZY(lib_elf, unsigned int, elf_version, (unsigned int version), (version))
MTL_LAZY(lib_elf, GElf_Chdr *, gelf_getchdr, (Elf_Scn *scn, GElf_Chdr *dst), (scn, dst))
MTL_LAZY(lib_elf, int, gelf_getclass, (Elf *elf), (elf))
MTL_LAZY(lib_elf, GElf_Dyn *, gelf_getdyn, (Elf_Data *data, int ndx, GElf_Dyn *dst),
         (data, ndx, dst))
MTL_LAZY(lib_elf, GElf_Ehdr *, gelf_getehdr, (Elf *elf, GElf_Ehdr *dest), (elf, dest))
MTL_LAZY(lib_elf, GElf_Phdr *, gelf_getphdr, (Elf *elf, int ndx, GElf_Phdr *dst), (elf, ndx, dst))
MTL_LAZY(lib_elf, GElf_Shdr *, gelf_getshdr, (Elf_Scn *scn, GElf_Shdr *dst), (scn, dst))
MTL_LAZY(lib_elf, GElf_Sym *, gelf_getsym, (Elf_Data *data, int ndx, GElf_Sym *dst),
         (data, ndx, dst))
MTL_LAZY(lib_elf, void *, gelf_newehdr, (Elf *elf, int class), (elf, class))
MTL_LAZY(lib_elf, void *, gelf_newphdr, (Elf *elf, size_t phnum), (elf, phnum))
MTL_LAZY(lib_elf, int, gelf_update_ehdr, (Elf *elf, GElf_Ehdr *src), (elf, src))
MTL_LAZY(lib_elf, int, gelf_update_phdr, (Elf *elf, int ndx, GElf_Phdr *src), (elf, ndx, src))
MTL_LAZY(lib_elf, int, gelf_update_shdr, (Elf_Scn *scn, GElf_Shdr *src), (scn, src))
