/*
 * mktrace.c: writes a version-3 trace (docs/FORMAT.md: pointers by the
 * window, which readers still read) from a small text
 * description, so that tests can give the analyses a trace whose every
 * time, size, stack and thread they chose, instead of what a real program
 * happened to do.  Stacks are made of custom frames named by strings, so
 * the analyses show these names without any binary or symbol.
 *
 *   mktrace [OUT] < DESCRIPTION      (without OUT, the trace goes to stdout)
 *
 * The encoding is tests/trace_encode.h's, written apart from the recorder's
 * on purpose (see there).
 *
 * The description, one statement a line:
 *
 *   header [program=S] [cmdline=S] [pid=N] [ppid=N] [start=N]
 *          [mode=full|sampled] [rate=N] [depth=N]
 *       The trace's HEADER record: the program's path, its command line,
 *       its pid and parent's, the wall-clock time of its start (us since
 *       1970), the mode (sampled needs rate=, the sample rate in bytes),
 *       the most frames kept per stack.  Required, the first statement,
 *       once.  Only the keys given are written.
 *   stack NAME [FRAME...]
 *       Defines the stack NAME for the allocations below: FRAMEs from the
 *       innermost (the function that allocates) to the outermost (main),
 *       as a backtrace lists them, each a custom frame named by its text.
 *       Stacks share the nodes of their common outer frames, as the
 *       recorder's do.  Without frames: the empty stack.
 *   start TIME THREAD TID [NAME]
 *       Thread THREAD (the trace's index: the first thread started is 0,
 *       the next 1, ...) starts with kernel id TID, and is named NAME.
 *   name TIME THREAD NAME
 *       Thread THREAD is (re)named NAME.
 *   exit TIME THREAD
 *       Thread THREAD exits.
 *   alloc TIME THREAD PTR SIZE STACK [TYPE]
 *       Thread THREAD allocates SIZE bytes at address PTR with stack STACK;
 *       with TYPE, the block carries that type tag (an ALLOC_EX record).
 *   free TIME THREAD PTR
 *       Thread THREAD frees the block at PTR.
 *   tag TIME THREAD PTR TYPE
 *       The block at PTR gets the type tag TYPE from then on (a TAG record).
 *   rss TIME BYTES
 *       The resident set size is BYTES.
 *   end TIME [exit | exec | signal N | stop]
 *       The trace ends (default: exit).  A trace with no end reads as
 *       truncated.
 *   block
 *       Starts a new block here (the decoder state goes on across blocks).
 *       New blocks are also started whenever one grows large.
 *
 * TIME is in microseconds from the start of the trace, exact; times never
 * go back.  Numbers are decimal, or hexadecimal after 0x.  Words are
 * separated by blanks; "double quotes" keep blanks in a word (with \" and
 * \\ inside them); a # at the start of a word begins a comment.
 *
 * Errors (a malformed line, an unknown stack, a thread not started, time
 * going back) are one line on stderr, "mktrace: line N: ...", and exit 1;
 * OUT is then removed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_encode.h"

#define MAX_WORDS 300     /* words of a line: a stack of 256 frames and more */
#define MAX_TEXT 4096     /* bytes of one string: keeps a record under half a stream */
#define MAX_FRAMES 256    /* frames of a stack, as the recorder's --depth */
#define MAX_THREADS 4096

struct node {
    uint32_t parent;
    uint32_t string;      /* string id of its frame */
};

struct named {
    char *name;
    uint32_t id;
};

static struct {
    struct tb_file out;
    const char *out_path;
    struct tb_buf b;
    unsigned line;
    int have_header;

    uint64_t now;         /* time of the last record with a dt */
    uint64_t window[MTL_PTR_WINDOW]; /* newest at window[head] */
    unsigned head;
    uint32_t threads;     /* threads started */
    int64_t cur_thread;   /* of the last THREAD_SWITCH, -1 before the first */

    struct node *nodes;   /* [0] is the root */
    uint32_t nnodes;
    struct named *strings, *stacks;
    uint32_t nstrings, nstacks;
} mk;

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "mktrace: line %u: ", mk.line);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    if (mk.out_path)
        remove(mk.out_path);
    exit(1);
}

/* Room for element n of an array p of n elements, whose capacity is 16,
 * then each power of two above: it grows when n reaches its capacity. */
static void *grow(void *p, uint32_t n, size_t elem)
{
    if (n != 0 && (n < 16 || (n & (n - 1))))
        return p;
    size_t cap = n ? (size_t)n * 2 : 16;
    void *q = realloc(p, cap * elem);
    if (!q)
        die("%s", "out of memory");
    return q;
}

static void flush(void)
{
    if (tb_empty(&mk.b))
        return;
    if (tb_block(&mk.out, &mk.b, 0) < 0)
        die("%s", "cannot write the trace");
    tb_clear(&mk.b);
}

/* Called before each record: a record takes less than half a stream. */
static void room(void)
{
    if (tb_fullest(&mk.b) > TB_STREAM_CAP / 2)
        flush();
}

static uint64_t number(const char *s, const char *what)
{
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char *digits = s + (hex ? 2 : 0);
    char *end;
    if (!*digits || *digits == '-' || *digits == '+' || *digits == ' ')
        die(what, s);
    errno = 0;
    unsigned long long v = strtoull(digits, &end, hex ? 16 : 10);
    if (*end || errno)
        die(what, s);
    return v;
}

static void text_ok(const char *s)
{
    if (strlen(s) > MAX_TEXT)
        die("%s: text longer than 4096 bytes", s);
}

/* The dt field of a record at time t. */
static void at(const char *word)
{
    uint64_t t = number(word, "bad time '%s'");
    if (t < mk.now)
        die("time %s goes back", word);
    tb_dt(&mk.b, t - mk.now);
    mk.now = t;
}

static uint32_t thread_of(const char *word)
{
    uint64_t t = number(word, "bad thread '%s'");
    if (t >= mk.threads)
        die("thread %s was not started", word);
    return (uint32_t)t;
}

static void switch_to(uint32_t thread)
{
    if (mk.cur_thread == (int64_t)thread)
        return;
    room();
    tb_byte(&mk.b, MTL_REC_THREAD_SWITCH);
    tb_var(&mk.b, thread);
    mk.cur_thread = thread;
}

/* A pointer field: the window's k-th newest when it holds ptr, else the
 * difference from the newest. */
static void pointer(uint64_t ptr)
{
    unsigned k;
    for (k = 0; k < MTL_PTR_WINDOW; k++)
        if (mk.window[(mk.head + MTL_PTR_WINDOW - k) % MTL_PTR_WINDOW] == ptr)
            break;
    if (k < MTL_PTR_WINDOW)
        tb_ptr_window(&mk.b, k);
    else
        tb_ptr_delta(&mk.b, (int64_t)(ptr - mk.window[mk.head]));
    mk.head = (mk.head + 1) % MTL_PTR_WINDOW;
    mk.window[mk.head] = ptr;
}

static struct named *find(struct named *list, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(list[i].name, name))
            return &list[i];
    return NULL;
}

static uint32_t string_id(const char *s)
{
    struct named *f = find(mk.strings, mk.nstrings, s);
    if (f)
        return f->id;
    text_ok(s);
    mk.strings = grow(mk.strings, mk.nstrings, sizeof *mk.strings);
    char *copy = strdup(s);
    if (!copy)
        die("%s", "out of memory");
    uint32_t id = mk.nstrings + 1; /* ids count from 1 */
    mk.strings[mk.nstrings++] = (struct named){ copy, id };
    room();
    tb_byte(&mk.b, MTL_REC_STRING);
    tb_var(&mk.b, id);
    tb_str(&mk.b, s);
    return id;
}

/* stack NAME FRAME...: frames innermost first; nodes are made outermost
 * first, each below its caller's, and only those not made before. */
static void stack(char **w, int n)
{
    if (n < 2)
        die("%s", "stack needs a name");
    if (find(mk.stacks, mk.nstacks, w[1]))
        die("stack %s defined twice", w[1]);
    if (n - 2 > MAX_FRAMES)
        die("%s: more than 256 frames", w[1]);
    uint32_t ids[MAX_FRAMES];
    for (int i = 2; i < n; i++)
        ids[i - 2] = string_id(w[i]);
    uint32_t node = 0, first = mk.nnodes;
    struct { uint32_t parent, string; } fresh[MAX_FRAMES];
    uint32_t nfresh = 0;
    for (int i = n - 3; i >= 0; i--) {
        uint32_t child = 0;
        for (uint32_t c = 1; c < mk.nnodes; c++)
            if (mk.nodes[c].parent == node && mk.nodes[c].string == ids[i]) {
                child = c;
                break;
            }
        if (!child) {
            mk.nodes = grow(mk.nodes, mk.nnodes, sizeof *mk.nodes);
            child = mk.nnodes++;
            mk.nodes[child] = (struct node){ node, ids[i] };
            fresh[nfresh].parent = node;
            fresh[nfresh++].string = ids[i];
        }
        node = child;
    }
    if (nfresh) {
        room();
        tb_byte(&mk.b, MTL_REC_STACK_NODES);
        tb_var(&mk.b, first);
        tb_var(&mk.b, nfresh);
        for (uint32_t i = 0; i < nfresh; i++) {
            tb_var(&mk.b, first + i - fresh[i].parent); /* parent_delta */
            tb_var(&mk.b, (uint64_t)fresh[i].string << 1 | 1); /* custom frame */
        }
    }
    text_ok(w[1]);
    mk.stacks = grow(mk.stacks, mk.nstacks, sizeof *mk.stacks);
    char *copy = strdup(w[1]);
    if (!copy)
        die("%s", "out of memory");
    mk.stacks[mk.nstacks++] = (struct named){ copy, node };
}

static void header(char **w, int n)
{
    static const struct { const char *key; unsigned id; int text; } keys[] = {
        { "program", 1, 1 }, { "cmdline", 2, 1 }, { "pid", 3, 0 }, { "ppid", 4, 0 },
        { "start", 5, 0 },   { "mode", 6, 0 },    { "rate", 7, 0 }, { "depth", 8, 0 },
    };
    int mode = 0, rate = 0;
    if (mk.have_header)
        die("%s", "a second header");
    mk.have_header = 1;
    room();
    tb_byte(&mk.b, MTL_REC_HEADER);
    tb_var(&mk.b, (uint64_t)(n - 1));
    for (int i = 1; i < n; i++) {
        char *eq = strchr(w[i], '=');
        size_t k;
        if (!eq)
            die("header: '%s' is not KEY=VALUE", w[i]);
        *eq = '\0';
        for (k = 0; k < sizeof keys / sizeof *keys; k++)
            if (!strcmp(w[i], keys[k].key))
                break;
        if (k == sizeof keys / sizeof *keys)
            die("header: unknown key '%s'", w[i]);
        const char *v = eq + 1;
        tb_var(&mk.b, keys[k].id);
        tb_var(&mk.b, keys[k].text);
        if (keys[k].text) {
            text_ok(v);
            tb_str(&mk.b, v);
        } else if (keys[k].id == 6) {
            if (strcmp(v, "full") && strcmp(v, "sampled"))
                die("header: mode is full or sampled, not '%s'", v);
            mode = !strcmp(v, "sampled");
            tb_var(&mk.b, (uint64_t)mode);
        } else {
            rate |= keys[k].id == 7;
            tb_var(&mk.b, number(v, "header: bad number '%s'"));
        }
    }
    if (mode && !rate)
        die("%s", "header: mode=sampled needs rate=");
}

static void need(int n, int lo, int hi, const char *what)
{
    if (n < lo || n > hi)
        die("usage: %s", what);
}

static void statement(char **w, int n)
{
    const char *s = w[0];
    if (!mk.have_header && strcmp(s, "header"))
        die("%s", "the first statement must be header");
    if (!strcmp(s, "header")) {
        header(w, n);
    } else if (!strcmp(s, "stack")) {
        stack(w, n);
    } else if (!strcmp(s, "start")) {
        need(n, 4, 5, "start TIME THREAD TID [NAME]");
        uint64_t t = number(w[2], "bad thread '%s'");
        if (t != mk.threads || t >= MAX_THREADS)
            die("thread %s started out of order (threads count 0, 1, 2...)", w[2]);
        room();
        tb_byte(&mk.b, MTL_REC_THREAD_START);
        at(w[1]);
        tb_var(&mk.b, t);
        tb_var(&mk.b, number(w[3], "bad tid '%s'"));
        mk.threads++;
        if (n == 5) {
            text_ok(w[4]);
            tb_byte(&mk.b, MTL_REC_THREAD_NAME);
            tb_dt(&mk.b, 0);
            tb_var(&mk.b, t);
            tb_str(&mk.b, w[4]);
        }
    } else if (!strcmp(s, "name")) {
        need(n, 4, 4, "name TIME THREAD NAME");
        uint32_t t = thread_of(w[2]);
        text_ok(w[3]);
        room();
        tb_byte(&mk.b, MTL_REC_THREAD_NAME);
        at(w[1]);
        tb_var(&mk.b, t);
        tb_str(&mk.b, w[3]);
    } else if (!strcmp(s, "exit")) {
        need(n, 3, 3, "exit TIME THREAD");
        uint32_t t = thread_of(w[2]);
        room();
        tb_byte(&mk.b, MTL_REC_THREAD_EXIT);
        at(w[1]);
        tb_var(&mk.b, t);
    } else if (!strcmp(s, "alloc")) {
        need(n, 6, 7, "alloc TIME THREAD PTR SIZE STACK [TYPE]");
        struct named *st = find(mk.stacks, mk.nstacks, w[5]);
        if (!st)
            die("no stack named '%s'", w[5]);
        uint64_t ptr = number(w[3], "bad pointer '%s'");
        uint64_t size = number(w[4], "bad size '%s'");
        uint32_t tag = n == 7 ? string_id(w[6]) : 0;
        switch_to(thread_of(w[2]));
        room();
        tb_byte(&mk.b, tag ? MTL_REC_ALLOC_EX : MTL_REC_ALLOC);
        at(w[1]);
        tb_size(&mk.b, size);
        tb_stack(&mk.b, st->id);
        pointer(ptr);
        if (tag) {
            tb_var(&mk.b, MTL_ALLOC_EX_TAG);
            tb_var(&mk.b, tag);
        }
    } else if (!strcmp(s, "free")) {
        need(n, 4, 4, "free TIME THREAD PTR");
        uint64_t ptr = number(w[3], "bad pointer '%s'");
        switch_to(thread_of(w[2]));
        room();
        tb_byte(&mk.b, MTL_REC_FREE);
        at(w[1]);
        pointer(ptr);
    } else if (!strcmp(s, "tag")) {
        need(n, 5, 5, "tag TIME THREAD PTR TYPE");
        uint64_t ptr = number(w[3], "bad pointer '%s'");
        uint32_t tag = string_id(w[4]);
        switch_to(thread_of(w[2]));
        room();
        tb_byte(&mk.b, MTL_REC_TAG);
        at(w[1]);
        pointer(ptr);
        tb_var(&mk.b, tag);
    } else if (!strcmp(s, "rss")) {
        need(n, 3, 3, "rss TIME BYTES");
        room();
        tb_byte(&mk.b, MTL_REC_RSS);
        at(w[1]);
        tb_var(&mk.b, number(w[2], "bad size '%s'"));
    } else if (!strcmp(s, "end")) {
        need(n, 2, 4, "end TIME [exit | exec | signal N | stop]");
        uint64_t reason = MTL_END_EXIT, detail = 0;
        const char *r = n > 2 ? w[2] : "exit";
        if (!strcmp(r, "exit") && n == 3)
            reason = MTL_END_EXIT;
        else if (!strcmp(r, "exec") && n == 3)
            reason = MTL_END_EXEC;
        else if (!strcmp(r, "stop") && n == 3)
            reason = MTL_END_STOP;
        else if (!strcmp(r, "signal") && n == 4)
            reason = MTL_END_SIGNAL, detail = number(w[3], "bad signal '%s'");
        else if (n != 2)
            die("usage: %s", "end TIME [exit | exec | signal N | stop]");
        room();
        tb_byte(&mk.b, MTL_REC_END);
        at(w[1]);
        tb_var(&mk.b, reason);
        tb_var(&mk.b, detail);
    } else if (!strcmp(s, "block")) {
        need(n, 1, 1, "block");
        flush();
    } else {
        die("unknown statement '%s'", s);
    }
}

/* Splits line into words in place: blanks separate them, double quotes
 * keep blanks (with \" and \\), a word starting with # ends the line. */
static int split(char *line, char **w)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#')
            return n;
        if (n == MAX_WORDS)
            die("%s", "too many words");
        char *out = p;
        w[n++] = out;
        int quoted = 0;
        for (; *p && (quoted || (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')); p++) {
            if (*p == '"') {
                quoted = !quoted;
            } else if (quoted && *p == '\\' && (p[1] == '"' || p[1] == '\\')) {
                *out++ = *++p;
            } else {
                *out++ = *p;
            }
        }
        if (quoted)
            die("%s", "a quote is not closed");
        int more = *p != '\0';
        *out = '\0';
        if (!more)
            return n;
        p++;
    }
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        fputs("usage: mktrace [OUT] < DESCRIPTION (see the top of tests/tools/mktrace.c)\n",
              stderr);
        return 2;
    }
    mk.out.f = stdout;
    if (argc == 2) {
        mk.out_path = argv[1];
        if (!(mk.out.f = fopen(argv[1], "wb"))) {
            fprintf(stderr, "mktrace: %s: %s\n", argv[1], strerror(errno));
            return 1;
        }
    }
    mk.cur_thread = -1;
    mk.nodes = grow(NULL, 0, sizeof *mk.nodes);
    mk.nnodes = 1; /* the root */
    if (tb_file_header(&mk.out, MTL_FORMAT_WINDOW_LAST, 0) < 0)
        die("%s", "cannot write the trace");

    char *line = NULL;
    size_t cap = 0;
    char *w[MAX_WORDS];
    while (getline(&line, &cap, stdin) >= 0) {
        mk.line++;
        int n = split(line, w);
        if (n)
            statement(w, n);
    }
    mk.line++;
    if (!mk.have_header)
        die("%s", "no header");
    flush();
    if (fflush(mk.out.f) != 0 || ferror(mk.out.f))
        die("%s", "cannot write the trace");
    if (mk.out_path && fclose(mk.out.f) != 0)
        die("%s", "cannot write the trace");
    free(line);
    for (uint32_t i = 0; i < mk.nstrings; i++)
        free(mk.strings[i].name);
    for (uint32_t i = 0; i < mk.nstacks; i++)
        free(mk.stacks[i].name);
    free(mk.strings);
    free(mk.stacks);
    free(mk.nodes);
    return 0;
}
