/*
 * sqlite3.c: libsqlite3's functions (memtally export --format sqlite), loaded on first use
 * (lazy.h).
 */
#pragma GCC visibility push(hidden)
#include <sqlite3.h>
#include "lazy/lazy.h"

static struct mtl_lazy_lib lib_sqlite = {"libsqlite3.so.0", "libsqlite3-0", 0};

MTL_LAZY(lib_sqlite, int, sqlite3_bind_double, (sqlite3_stmt *a0, int a1, double a2), (a0, a1, a2))
MTL_LAZY(lib_sqlite, int, sqlite3_bind_int64, (sqlite3_stmt *a0, int a1, sqlite3_int64 a2),
         (a0, a1, a2))
MTL_LAZY(lib_sqlite, int, sqlite3_bind_null, (sqlite3_stmt *a0, int a1), (a0, a1))
MTL_LAZY(lib_sqlite, int, sqlite3_bind_text,
         (sqlite3_stmt *a0, int a1, const char *a2, int a3, void (*a4)(void *)),
         (a0, a1, a2, a3, a4))
MTL_LAZY(lib_sqlite, int, sqlite3_clear_bindings, (sqlite3_stmt *a0), (a0))
MTL_LAZY(lib_sqlite, int, sqlite3_close, (sqlite3 *a0), (a0))
MTL_LAZY(lib_sqlite, const char *, sqlite3_errmsg, (sqlite3 *a0), (a0))
MTL_LAZY(lib_sqlite, int, sqlite3_exec,
         (sqlite3 *a0, const char *sql, int (*callback)(void *, int, char **, char **), void *a3,
          char **errmsg),
         (a0, sql, callback, a3, errmsg))
MTL_LAZY(lib_sqlite, int, sqlite3_finalize, (sqlite3_stmt *pStmt), (pStmt))
MTL_LAZY(lib_sqlite, int, sqlite3_open_v2,
         (const char *filename, sqlite3 **ppDb, int flags, const char *zVfs),
         (filename, ppDb, flags, zVfs))
MTL_LAZY(lib_sqlite, int, sqlite3_prepare_v2,
         (sqlite3 *db, const char *zSql, int nByte, sqlite3_stmt **ppStmt, const char **pzTail),
         (db, zSql, nByte, ppStmt, pzTail))
MTL_LAZY(lib_sqlite, int, sqlite3_reset, (sqlite3_stmt *pStmt), (pStmt))
MTL_LAZY(lib_sqlite, int, sqlite3_step, (sqlite3_stmt *a0), (a0))
