/*
 * sqlite.c: a trace as an SQLite database (`memtally export --format
 * sqlite`), so that users can ask it anything in SQL.  The schema is in
 * docs/ANALYSIS.md ("export") and in `schema` below, which is what the
 * file holds.
 *
 * Rows go in through prepared statements in one transaction, with no
 * journal and no syncing until the end: the file is written under a
 * temporary name and renamed into place once complete, so a failure
 * never leaves a half-written database under the name asked for.
 */
#include "render/render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analyze/scan.h"
#include "common/hex.h"

static const char schema[] =
    "PRAGMA journal_mode = OFF;\n"
    "PRAGMA synchronous = OFF;\n"
    "PRAGMA page_size = 65536;\n"
    "CREATE TABLE trace (key TEXT PRIMARY KEY, value);\n"
    "CREATE TABLE threads (id INTEGER PRIMARY KEY, tid INTEGER, name TEXT,\n"
    "    start_us INTEGER, exit_us INTEGER);\n"
    "CREATE TABLE modules (id INTEGER PRIMARY KEY, path TEXT, base INTEGER,\n"
    "    build_id TEXT, load_us INTEGER, unload_us INTEGER);\n"
    "CREATE TABLE frames (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES frames,\n"
    "    address INTEGER, module INTEGER REFERENCES modules);\n"
    "CREATE TABLE frame_functions (frame INTEGER REFERENCES frames, position INTEGER,\n"
    "    function TEXT, file TEXT, line INTEGER, inlined INTEGER,\n"
    "    PRIMARY KEY (frame, position)) WITHOUT ROWID;\n"
    "CREATE TABLE stacks (id INTEGER PRIMARY KEY, frame INTEGER REFERENCES frames,\n"
    "    site TEXT);\n"
    "CREATE TABLE allocations (id INTEGER PRIMARY KEY, time_us INTEGER,\n"
    "    thread INTEGER REFERENCES threads, size INTEGER,\n"
    "    stack INTEGER REFERENCES stacks, free_us INTEGER, type TEXT,\n"
    "    count REAL, bytes REAL);\n"
    "CREATE TABLE timeline (time_us INTEGER PRIMARY KEY, live_bytes REAL,\n"
    "    alloc_bytes REAL, alloc_calls REAL, rss INTEGER);\n"
    "CREATE VIEW report AS SELECT s.site AS function, SUM(a.count) AS calls,\n"
    "    SUM(a.bytes) AS bytes FROM allocations a JOIN stacks s ON s.id = a.stack\n"
    "    GROUP BY s.site ORDER BY bytes DESC;\n"
    "BEGIN;\n";

struct mtl_sqlite {
    sqlite3 *db;
    sqlite3_stmt *alloc;
    char *path, *tmp;
    char err[256];
};

static int fail_db(struct mtl_sqlite *w, const char *what)
{
    snprintf(w->err, sizeof w->err, "%s: %s", what,
             w->db ? sqlite3_errmsg(w->db) : "out of memory");
    return -1;
}

void mtl_sqlite_abort(struct mtl_sqlite *w)
{
    if (!w)
        return;
    sqlite3_finalize(w->alloc);
    sqlite3_close(w->db);
    if (w->tmp)
        unlink(w->tmp);
    free(w->path);
    free(w->tmp);
    free(w);
}

const char *mtl_sqlite_error(const struct mtl_sqlite *w)
{
    return w->err;
}

int mtl_sqlite_create(struct mtl_sqlite **out, const char *path, char *err, size_t cap)
{
    struct mtl_sqlite *w = calloc(1, sizeof *w);
    size_t n = strlen(path) + 16;
    *out = NULL;
    if (!w || !(w->path = strdup(path)) || !(w->tmp = malloc(n))) {
        snprintf(err, cap, "out of memory");
        mtl_sqlite_abort(w);
        return -1;
    }
    snprintf(w->tmp, n, "%s.%d.tmp", path, (int)getpid());
    unlink(w->tmp);
    /* One thread uses the connection: no mutexes around every call. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(w->tmp, &w->db, flags, NULL);
    if (rc != SQLITE_OK || sqlite3_exec(w->db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT INTO allocations VALUES (?,?,?,?,?,?,?,?,?)", -1,
                           &w->alloc, NULL) != SQLITE_OK) {
        /* A file that cannot be made says so with errno. */
        snprintf(err, cap, "cannot write %s: %s", path,
                 rc == SQLITE_CANTOPEN ? strerror(errno ? errno : EACCES)
                                       : w->db ? sqlite3_errmsg(w->db) : "out of memory");
        mtl_sqlite_abort(w);
        return -1;
    }
    *out = w;
    return 0;
}

int mtl_sqlite_block(struct mtl_sqlite *w, const struct mtl_block *b, const char *type)
{
    sqlite3_stmt *s = w->alloc;
    sqlite3_bind_int64(s, 1, (sqlite3_int64)b->ordinal);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)b->alloc_us);
    sqlite3_bind_int64(s, 3, b->thread);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)b->size);
    sqlite3_bind_int64(s, 5, b->stack);
    if (b->free_us == MTL_NEVER)
        sqlite3_bind_null(s, 6);
    else
        sqlite3_bind_int64(s, 6, (sqlite3_int64)b->free_us);
    if (type)
        sqlite3_bind_text(s, 7, type, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 7);
    sqlite3_bind_double(s, 8, b->weight_count);
    sqlite3_bind_double(s, 9, b->weight_bytes);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : fail_db(w, "adding an allocation");
}

/* What the row binders read: the tables, and where bind_function is. */
struct rows {
    const struct mtl_sqlite_tables *t;
    size_t frame;
};

/* Runs sql for rows i = 0, 1, ...: bind fills row i's values and returns
 * 1, or -1 to leave that row out, or 0 at the end. */
static int insert_rows(struct mtl_sqlite *w, const char *sql,
                       int (*bind)(sqlite3_stmt *s, struct rows *r, size_t i),
                       const struct mtl_sqlite_tables *t, const char *what)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(w->db, sql, -1, &s, NULL) != SQLITE_OK)
        return fail_db(w, what);
    struct rows r = { t, 0 };
    int rc = 0, more;
    for (size_t i = 0; rc == 0 && (more = bind(s, &r, i)) != 0; i++) {
        if (more > 0 && sqlite3_step(s) != SQLITE_DONE)
            rc = fail_db(w, what);
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
    }
    sqlite3_finalize(s);
    return rc;
}

static void bind_text(sqlite3_stmt *s, int col, const char *t)
{
    if (t)
        sqlite3_bind_text(s, col, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, col);
}

static void bind_time(sqlite3_stmt *s, int col, uint64_t us, int known)
{
    if (known)
        sqlite3_bind_int64(s, col, (sqlite3_int64)us);
    else
        sqlite3_bind_null(s, col);
}

static int bind_thread(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_sqlite_tables *t = r->t;
    if (i >= t->nthreads)
        return 0;
    const struct mtl_thread *th = &t->threads[i];
    sqlite3_bind_int64(s, 1, th->index);
    sqlite3_bind_int64(s, 2, th->tid);
    bind_text(s, 3, th->name);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)th->start_us);
    bind_time(s, 5, th->exit_us, th->exit_us != 0);
    return 1;
}

static int bind_module(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_stack_figures *f = r->t->stacks;
    if (i >= f->nmodules)
        return 0;
    if (!f->modules[i].path)
        return -1; /* an index the trace never defined */
    const struct mtl_module *m = &f->modules[i];
    char hex[129];
    mtl_hex(hex, sizeof hex, m->build_id, m->build_id_size);
    sqlite3_bind_int64(s, 1, m->index);
    bind_text(s, 2, m->path);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)m->base);
    sqlite3_bind_text(s, 4, hex, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)m->load_us);
    bind_time(s, 6, m->unload_us, m->unload_us != 0);
    return 1;
}

static int bind_frame(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_stack_figures *f = r->t->stacks;
    if (i >= f->nframes)
        return 0;
    const struct mtl_stack_frame *fr = &f->frames[i];
    sqlite3_bind_int64(s, 1, (sqlite3_int64)i);
    if (fr->parent != MTL_NO_FRAME)
        sqlite3_bind_int64(s, 2, fr->parent);
    if (fr->module != UINT32_MAX) {
        sqlite3_bind_int64(s, 3, (sqlite3_int64)fr->addr);
        sqlite3_bind_int64(s, 4, fr->module);
    }
    return 1;
}

/* The functions of every frame: i counts them all, frame by frame. */
static int bind_function(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_stack_figures *f = r->t->stacks;
    /* Frames hold consecutive runs of locs, in frame order: r->frame is
     * the frame of loc i - 1, searched on from. */
    while (r->frame < f->nframes && i >= f->frames[r->frame].first + f->frames[r->frame].nlocs)
        r->frame++;
    if (i >= f->nlocs || r->frame >= f->nframes)
        return 0;
    const struct mtl_location *w = &f->locs[i];
    sqlite3_bind_int64(s, 1, (sqlite3_int64)r->frame);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)(i - f->frames[r->frame].first));
    bind_text(s, 3, w->function);
    bind_text(s, 4, w->file);
    if (w->line)
        sqlite3_bind_int64(s, 5, w->line);
    sqlite3_bind_int64(s, 6, w->inlined);
    return 1;
}

static int bind_stack(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_stack_figures *f = r->t->stacks;
    if (i >= f->n)
        return 0;
    sqlite3_bind_int64(s, 1, f->figures[i].stack);
    if (f->figures[i].frame != MTL_NO_FRAME)
        sqlite3_bind_int64(s, 2, f->figures[i].frame);
    bind_text(s, 3, f->figures[i].site);
    return 1;
}

static int bind_point(sqlite3_stmt *s, struct rows *r, size_t i)
{
    const struct mtl_timeline *t = r->t->timeline;
    if (i >= t->n)
        return 0;
    const struct mtl_timeline_point *p = &t->points[i];
    sqlite3_bind_int64(s, 1, (sqlite3_int64)p->time_us);
    sqlite3_bind_double(s, 2, p->live);
    sqlite3_bind_double(s, 3, p->alloc_bytes);
    sqlite3_bind_double(s, 4, p->alloc_calls);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)p->rss);
    return 1;
}

/* The trace's facts as (key, value) rows. */
static int write_trace(struct mtl_sqlite *w, const struct mtl_sqlite_tables *t)
{
    const struct mtl_trace_info *in = &t->stacks->trace;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(w->db, "INSERT INTO trace VALUES (?,?)", -1, &s, NULL) != SQLITE_OK)
        return fail_db(w, "writing the trace's facts");
    struct { const char *key; const char *text; int64_t num; } kv[] = {
        { "program", in->program, 0 },
        { "command_line", in->command_line, 0 },
        { "pid", NULL, in->pid },
        { "ppid", NULL, in->ppid },
        { "start_unix_us", NULL, (int64_t)in->start_unix_us },
        { "mode", in->mode == MTL_MODE_SAMPLED ? "sampled" : "full", 0 },
        { "sample_rate", NULL, (int64_t)in->sample_rate },
        { "duration_us", NULL, (int64_t)t->stacks->end_us },
        { "truncated", NULL, in->truncated },
    };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof kv / sizeof kv[0]; i++) {
        sqlite3_bind_text(s, 1, kv[i].key, -1, SQLITE_STATIC);
        if (kv[i].text)
            sqlite3_bind_text(s, 2, kv[i].text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(s, 2, kv[i].num);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = fail_db(w, "writing the trace's facts");
        sqlite3_reset(s);
    }
    sqlite3_finalize(s);
    return rc;
}

int mtl_sqlite_finish(struct mtl_sqlite *w, const struct mtl_sqlite_tables *t)
{
    int rc = write_trace(w, t);
    if (rc == 0)
        rc = insert_rows(w, "INSERT INTO threads VALUES (?,?,?,?,?)", bind_thread, t, "threads");
    if (rc == 0)
        rc = insert_rows(w, "INSERT INTO modules VALUES (?,?,?,?,?,?)", bind_module, t, "modules");
    if (rc == 0)
        rc = insert_rows(w, "INSERT INTO frames VALUES (?,?,?,?)", bind_frame, t, "frames");
    if (rc == 0)
        rc = insert_rows(w, "INSERT INTO frame_functions VALUES (?,?,?,?,?,?)", bind_function,
                         t, "frame functions");
    if (rc == 0)
        rc = insert_rows(w, "INSERT INTO stacks VALUES (?,?,?)", bind_stack, t, "stacks");
    if (rc == 0 && t->timeline)
        rc = insert_rows(w, "INSERT INTO timeline VALUES (?,?,?,?,?)", bind_point, t, "timeline");
    if (rc == 0 && sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = fail_db(w, "committing");
    sqlite3_finalize(w->alloc);
    w->alloc = NULL;
    if (rc == 0 && sqlite3_close(w->db) != SQLITE_OK)
        rc = fail_db(w, "closing");
    else if (rc == 0)
        w->db = NULL;
    if (rc == 0 && rename(w->tmp, w->path) != 0) {
        snprintf(w->err, sizeof w->err, "cannot write %s: %s", w->path, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        free(w->tmp);
        w->tmp = NULL; /* nothing to remove */
    }
    return rc;
}
