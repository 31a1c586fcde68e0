/* errors.c: mtl_strerror (memtally/errors.h), for both kinds of code. */
#include "memtally/errors.h"

#include <errno.h>
#include <string.h>

static const char *const error_text[] = {
#define MTL_ERR_TEXT_(name, text) text,
    MTL_ERRNO_MAP(MTL_ERR_TEXT_)
#undef MTL_ERR_TEXT_
};

/* Exported from libmemtally.so too: memtally.h names it. */
__attribute__((visibility("default"))) const char *mtl_strerror(int code)
{
    if (code == 0)
        return "success";
    if (code > MTL_E_FIRST_ && code < MTL_E_LAST_)
        return error_text[code - MTL_E_FIRST_ - 1];
    /* The in-program API's codes, in its own words where errno's would
     * mislead (EBUSY is "device or resource busy"). */
    switch (code) {
    case -EBUSY: return "already recording";
    case -EINVAL: return "invalid argument or state";
    case -ENOTSUP: return "recording is not possible in this process";
    case -ENOMEM: return "out of memory";
    case -EAGAIN: return "cannot start a thread";
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error";
}
