/*
 * fuzz_reader.c: libFuzzer target for the trace reader (mtl_reader_open,
 * mtl_reader_next to the end, mtl_reader_stack on every allocation).  What
 * an input is, and what is checked: fuzz_common.h.  Build and run:
 * tests/fuzz/README.md.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one(data, size);
    return 0;
}
