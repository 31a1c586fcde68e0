# memtally: one plain Makefile (see README.md).
#   make            build build/memtally, build/libmemtally.so, build/libmemtally-trace.a
#   make demo       install what is missing, build, record the bundled example, show it
#   make check      install what is missing, build, run every test
#   make bench      the side-by-side benchmark (bench/README.md)

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes
CPPFLAGS += -Iinclude -Isrc -D_GNU_SOURCE
B       := build

COMMON_SRC  := $(wildcard src/common/*.c)
TRACE_SRC   := $(wildcard src/trace/*.c)
SYMBOLS_SRC := $(wildcard src/symbols/*.c)
PRELOAD_SRC := $(wildcard src/preload/*.c)
ANALYZE_SRC := $(wildcard src/analyze/*.c)
RENDER_SRC  := $(wildcard src/render/*.c)
CLI_SRC     := $(wildcard src/cli/*.c)
VIEW_SRC    := $(wildcard src/view/*.c)
LAZY_SRC    := $(wildcard src/lazy/*.c)

# The preload library: no sanitizers (they would shadow the allocator), its
# own symbols hidden except the hooks, libc's allocator found with dlsym.
# The recorder reads traces back for mtl_profile_call and folds them with
# the engine's own view, rows and table renderer: those go in too, hidden
# like the rest.
PRELOAD_OBJ := $(PRELOAD_SRC:%.c=$(B)/pic/%.o) $(COMMON_SRC:%.c=$(B)/pic/%.o) \
               $(B)/pic/src/trace/encoder.o $(B)/pic/src/trace/reader.o $(B)/pic/src/trace/blocks.o $(B)/pic/src/trace/blocksums.o $(B)/pic/src/trace/ptrcode.o \
               $(patsubst %,$(B)/pic/src/analyze/%.o,stackagg view rows allocframes) \
               $(B)/pic/src/render/table.o
# libmemtally-trace.a: the reader (memtally/trace.h) and the symbolizer
# (memtally/symbols.h).
READER_OBJ  := $(TRACE_SRC:%.c=$(B)/obj/%.o) $(SYMBOLS_SRC:%.c=$(B)/obj/%.o) \
               $(COMMON_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ     := $(CLI_SRC:%.c=$(B)/obj/%.o) $(ANALYZE_SRC:%.c=$(B)/obj/%.o) $(RENDER_SRC:%.c=$(B)/obj/%.o) \
               $(VIEW_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/view_page.o $(B)/obj/gen/profile.pb-c.o \
               $(LAZY_SRC:%.c=$(B)/obj/%.o)

PRELOAD_LIBS := $(shell pkg-config --libs libunwind libzstd 2>/dev/null || echo -lunwind -lzstd) -ldl -lm -pthread
# The symbolizer reads ELF and DWARF with libdw and demangles with
# libstdc++'s __cxa_demangle (loaded at the first mangled name); it loads
# libdebuginfod itself when needed.
READER_LIBS  := $(shell pkg-config --libs libzstd libdw 2>/dev/null || echo -lzstd -ldw -lelf) -ldl -lm -pthread
# The viewer serves HTTP with libmicrohttpd, loaded with dlopen when it
# starts (src/view/mhd.h: linked, it slows every command's start); pprof
# export packs its protobuf with protobuf-c (sources made by protoc-c) and
# gzips with zlib; sqlite export writes with libsqlite3.
CLI_LIBS     := $(READER_LIBS) $(shell pkg-config --libs libprotobuf-c zlib sqlite3 2>/dev/null || echo -lprotobuf-c -lz -lsqlite3)
# The binary itself loads all of those but zstd when first called
# (src/lazy/lazy.h: linked, they slowed every command's start).
MEMTALLY_LIBS := $(shell pkg-config --libs libzstd 2>/dev/null || echo -lzstd) -ldl -lm -pthread
CPPFLAGS += -I$(B)/gen

all: $(B)/memtally $(B)/libmemtally.so $(B)/libmemtally-trace.a examples

# What runs for every event at -O3: the trace's coder and reader, which
# memtally record's writer runs (re-encoding a trace, memtally merge, took
# 11 to 13% fewer instructions, the bytes the same), and the recorder in
# the program (bench/eventcost.sh's tree 8% cheaper an event, the hooks' fast
# paths the same code).  docs/PERFORMANCE.md, "The writer (and the
# recorder) at -O3".
HOT_OPT := -O3
$(TRACE_SRC:%.c=$(B)/pic/%.o) $(TRACE_SRC:%.c=$(B)/obj/%.o) $(B)/obj/src/cli/record_writer.o \
$(PRELOAD_SRC:%.c=$(B)/pic/%.o): CFLAGS += $(HOT_OPT)

$(B)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -ftls-model=initial-exec -MMD -MP -c $< -o $@

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -MMD -MP -c $< -o $@

# The viewer's page, built into the binary as a C array.
$(B)/gen/view_page.c: src/view/page.html scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh mtl_view_page $< >$@.tmp && mv $@.tmp $@
$(B)/obj/gen/view_page.o: $(B)/gen/view_page.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# pprof's profile.proto as C (render/pprof.c includes it).
$(B)/gen/profile.pb-c.c $(B)/gen/profile.pb-c.h: src/render/profile.proto
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen --proto_path=src/render profile.proto
$(B)/obj/gen/profile.pb-c.o: $(B)/gen/profile.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(B)/obj/src/render/pprof.o: $(B)/gen/profile.pb-c.h

$(B)/libmemtally.so: $(PRELOAD_OBJ)
	$(CC) -shared -Wl,-z,nodelete -Wl,-z,now -o $@ $^ $(PRELOAD_LIBS)

$(B)/libmemtally-trace.a: $(READER_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/memtally: $(CLI_OBJ) $(B)/libmemtally-trace.a
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(B)/libmemtally-trace.a $(MEMTALLY_LIBS)

EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)
# The API examples link the recorder library itself (hook_demo names its
# stacks with dladdr: -rdynamic).
$(B)/examples/api_demo: examples/api_demo.c $(B)/libmemtally.so include/memtally.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< -L$(B) -lmemtally -pthread -Wl,-rpath,'$$ORIGIN/..'
$(B)/examples/hook_demo: examples/hook_demo.c $(B)/libmemtally.so include/memtally.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -O0 -g $(WARN) -rdynamic -o $@ $< -L$(B) -lmemtally -ldl -pthread -Wl,-rpath,'$$ORIGIN/..'
$(B)/examples/%: examples/%.c $(B)/libmemtally-trace.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(B)/libmemtally-trace.a $(READER_LIBS)

# Test programs are built without optimisation so that the compiler cannot
# elide the allocations whose counts the tests know.
TEST_PROGS := $(patsubst tests/programs/%.c,$(B)/tests/programs/%,$(wildcard tests/programs/*.c)) \
              $(patsubst tests/programs/%.cc,$(B)/tests/programs/%,$(wildcard tests/programs/*.cc))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(wildcard tests/unit/*.c))
TEST_TOOLS := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(wildcard tests/tools/*.c))
tests: all $(TEST_PROGS) $(UNIT_TESTS) $(TEST_TOOLS)
$(B)/tests/programs/%: tests/programs/%.c
	@mkdir -p $(dir $@)
	$(CC) -O0 -g -fno-builtin -pthread -o $@ $< -ldl
$(B)/tests/programs/%: tests/programs/%.cc
	@mkdir -p $(dir $@)
	$(CXX) -O0 -g -fno-builtin -pthread -o $@ $< -ldl
# Unit tests run under ASan and UBSan, with the reader and the analysis
# code compiled in with them.
$(B)/tests/unit/%: tests/unit/%.c $(COMMON_SRC) $(TRACE_SRC) $(SYMBOLS_SRC) $(ANALYZE_SRC) $(RENDER_SRC) $(B)/gen/profile.pb-c.c $(wildcard src/*/*.h include/*.h include/*/*.h tests/*.h tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests -O1 -g $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -o $@ $< $(COMMON_SRC) $(TRACE_SRC) $(SYMBOLS_SRC) $(ANALYZE_SRC) $(RENDER_SRC) $(B)/gen/profile.pb-c.c $(CLI_LIBS) -pthread
# Tools the integration tests run (tests/tools/mktrace: traces written by
# hand), with the sanitizers too: a bug of theirs must not pass for one of
# memtally's.
$(B)/tests/tools/%: tests/tools/%.c $(wildcard src/*/*.h tests/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests -O1 -g $(WARN) -fsanitize=address,undefined -fno-sanitize-recover=all \
	    -o $@ $< $(READER_LIBS)

deps:
	@sh scripts/install-deps.sh

demo: deps
	@$(MAKE) -s --no-print-directory all
	@sh scripts/demo.sh

check:
	@sh scripts/install-deps.sh browser
	@$(MAKE) --no-print-directory tests
	@sh tests/run.sh

bench:
	@sh scripts/install-deps.sh bench
	@$(MAKE) --no-print-directory all
	@sh bench/run.sh
	@sh bench/analyze.sh
	@sh bench/sampling.sh
	@sh bench/api.sh
	@sh bench/calls.sh
	@sh bench/gc.sh
	@sh bench/attach.sh
	@sh bench/profile.sh
	@sh bench/streams.sh
	@sh bench/memory.sh
	@sh bench/startup.sh
	@sh bench/endtail.sh
	@sh bench/eventcost.sh
	@sh bench/waits.sh

PREFIX ?= /usr/local
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include/memtally $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(B)/memtally $(DESTDIR)$(PREFIX)/bin/
	install -m 755 $(B)/libmemtally.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 $(B)/libmemtally-trace.a $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/memtally.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/memtally/trace.h include/memtally/symbols.h \
	    include/memtally/errors.h $(DESTDIR)$(PREFIX)/include/memtally/
	install -m 644 docs/memtally.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	sed 's|@PREFIX@|$(PREFIX)|' scripts/memtally.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/memtally.pc
	sed 's|@PREFIX@|$(PREFIX)|' scripts/memtally-trace.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/memtally-trace.pc

clean:
	rm -rf $(B)

-include $(shell find $(B) -name '*.d' 2>/dev/null)

.PHONY: all deps demo check bench clean examples tests install
