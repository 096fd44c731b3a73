/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the costdb sources: the handle, the prepared-statement
 * cache, error recording (sqlite3_errmsg plus the statement), transactions
 * that nest through savepoints, and checked text/number binding. Not
 * installed; only the costdb sources include it.
 */
#ifndef COSTDB_INT_H
#define COSTDB_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "costdb.h"

typedef struct CdbPlacementCache CdbPlacementCache;

/* The oldest schema a read-only open accepts: the migrations after it add
 * only checks on writes (004_strict: typeof triggers), so such a file reads
 * the same. A migration that changes what readers select raises it. */
#define CDB_READABLE_FROM 3

typedef struct CdbCachedStmt {
    const char *sql;      /* the static SQL text; its address is the key */
    sqlite3_stmt *st;
} CdbCachedStmt;

struct Costdb {
    sqlite3 *sql;
    char *path;
    int readonly;
    int version;          /* the file's schema version (a writer migrates to the latest) */
    int immutable;        /* opened with immutable=1 (a directory it cannot write) */
    int in_txn;           /* costdb_begin() is open */
    int savepoints;       /* depth of internal units (cdb_txn_enter) */
    int own_txn;          /* the outermost unit issued BEGIN IMMEDIATE */
    uint64_t txn_serial;  /* counts the transactions begun (entry_costs.c's next id) */
    CdbCachedStmt *cache;
    size_t n_cache, cap_cache;
    /* cdb_prepare's guess: by the SQL text's address (its bits from the 4th on),
     * the position in cache of the statement last found for one, + 1 (0:
     * none); checked before it is taken, a full scan when wrong */
    uint32_t stmt_hint[64];
    CdbPlacementCache *placement_cache; /* placement_write.c's interned ids, NULL: none */
    struct CdbCostCache *cost_cache;    /* entry_costs.c's cost rows, NULL: none */
    struct CdbConfigCache *config_cache; /* entry_blocks.c's configs found, NULL: none */
    struct CdbPlacementDict *placement_dict; /* placement_read.c's tensors and texts, NULL: none */
    char errmsg[2048];
};

/* Maps a SQLite result code to a COSTDB_E* code. */
int cdb_map_rc(int sqlite_rc);
/* Records "sqlite3_errmsg (in: SQL)" and returns the mapped error code. */
int cdb_fail(Costdb *db, int sqlite_rc, const char *sql);
/* Records a formatted message and returns code. */
int cdb_err(Costdb *db, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Returns the cached prepared statement for the static SQL text sql (reset,
 * bindings cleared). The caller must cdb_release() it when done. */
int cdb_prepare(Costdb *db, const char *sql, sqlite3_stmt **st);
void cdb_release(sqlite3_stmt *st);
/* Steps a statement that returns no rows; 0 or an error (recorded). */
int cdb_exec_stmt(Costdb *db, sqlite3_stmt *st, const char *sql);
/* Runs literal SQL that takes no parameters (transaction control). */
int cdb_exec(Costdb *db, const char *sql);

/* costdb's hash of n bytes for its in-memory tables, eight bytes a step,
 * continuing from seed (0 to start). Never stored, so free to change
 * between versions; what is stored or compared across processes uses
 * fnv.h. */
static inline uint64_t cdb_mem_hash(uint64_t seed, const void *data, size_t n)
{
    const unsigned char *s = data;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ seed ^ (uint64_t)n, w;
    for (; n >= 8; n -= 8, s += 8) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    w = 0;
    memcpy(&w, s, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

/* A second in-memory hash of n bytes, of another kind than cdb_mem_hash,
 * for digests that pair the two (entry_costs.c's cost rows: 128 bits from
 * two 64-bit hashes that do not share their arithmetic). Each eight-byte
 * word goes through xxHash64's round and merge (Yann Collet, xxHash,
 * github.com/Cyan4973/xxHash v0.8.2, xxhash.h, XXH64_round and the
 * eight-byte step of XXH64_finalize: multiply, rotate, multiply, then
 * xor, rotate, multiply-add into the state), the tail as one zero-padded
 * word with the length in the start value, and XXH64_avalanche at the
 * end. It replaced FNV-1a byte by byte (fnv.h) there, eight times the
 * steps (docs/performance.md, "The writer's rows ... (issue 38,
 * wrrows)"). Never stored, so free to change between versions. */
static inline uint64_t cdb_mem_check(uint64_t seed, const void *data, size_t n)
{
    const uint64_t p1 = 0x9e3779b185ebca87ULL, p2 = 0xc2b2ae3d27d4eb4fULL,
                   p3 = 0x165667b19e3779f9ULL, p4 = 0x85ebca77c2b2ae63ULL,
                   p5 = 0x27d4eb2f165667c5ULL;
    const unsigned char *s = data;
    uint64_t h = seed + p5 + (uint64_t)n, w;
    for (; n >= 8; n -= 8, s += 8) {
        memcpy(&w, s, 8);
        w *= p2;
        w = (w << 31 | w >> 33) * p1;
        h ^= w;
        h = (h << 27 | h >> 37) * p1 + p4;
    }
    w = 0;
    memcpy(&w, s, n);
    h ^= w * p5;
    h = (h << 11 | h >> 53) * p1;
    h ^= h >> 33;
    h *= p2;
    h ^= h >> 29;
    h *= p3;
    return h ^ (h >> 32);
}

/* Drop the writers' cached ids: the placement writer's (placement_write.c), the
 * entry costs' (entry_costs.c) and the configs known to exist
 * (entry_blocks.c). cdb_caches_clear (db_stmt.c) drops all three: after any rollback, since a rolled-back insert leaves them
 * pointing nowhere, after a sweep is deleted, and on close. */
void cdb_placement_cache_clear(Costdb *db);
/* Schema 13: rewrites the shared placement lists with repeats
 * (placement_recode.c). */
int cdb_placement_tails_recode(Costdb *db);
void cdb_cost_cache_clear(Costdb *db);
/* entry_blocks.c's configs known to exist. */
void cdb_config_cache_clear(Costdb *db);
/* placement_read.c's tensors and texts of the last sweep read (also
 * dropped by cdb_caches_clear). */
void cdb_placement_dict_clear(Costdb *db);
void cdb_caches_clear(Costdb *db);

/* Refuses the entry of the current row of st (columns 0-4: start_layer,
 * end_layer, submesh_index, config_index, phase), whose cost_id (column
 * cost_col; < 0: not selected) names no stage_cost row: COSTDB_ECORRUPT,
 * naming the entry. */
int cdb_entry_without_costs(Costdb *db, sqlite3_stmt *st, int cost_col);
/* Schema 15 (entry_costs.c): refuses an entry whose cost row's error_id
 * names no text of stage_error, or whose available_memory is NULL (the
 * sweep's) with no row in stage_cost_sweep (COSTDB_ECORRUPT, naming the
 * row). Columns 0-4 the entry's key, error_col the error text and
 * memory_col available_memory as read; a statement of 24 columns or more
 * has stage_cost's sweep_id, cost_id, error_id and available_memory as
 * stored in 20-23. */
int cdb_cost_refs_check(Costdb *db, sqlite3_stmt *st, int error_col, int memory_col);
/* One entry of costdb_entries_get's statements (sweep.c) into row, a
 * CostdbEntry, checked; 0 or COSTDB_ECORRUPT naming it. */
int cdb_entry_row(Costdb *db, sqlite3_stmt *st, void *row);
/* costdb_entries_get of a schema-15 sweep whose entries are all in blocks,
 * the slots decoded in C (entries_read.c): 0 with *out (malloc'd, key
 * order) and *n, 1 when the sweep is to be read through SQL instead (a
 * cost row or a slot this path does not clear), or a negative COSTDB_E*
 * code. */
int cdb_entries_get_blocks(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n);

/* The id of the sweep's stage_cost row that holds e's costs (schema 8):
 * one this connection wrote for the sweep, or a new one, numbered now and
 * queued to be written several to an INSERT: the caller writes the queued
 * rows with cdb_entry_costs_flush before it returns, or drops them after
 * an error with cdb_entry_costs_drop (issue 38, wrins). */
int cdb_entry_cost_id(Costdb *db, int64_t sweep_id, const CostdbEntry *e, int64_t *id);
/* Writes the queued cost rows: 0, or a negative COSTDB_E* code with the
 * rows dropped as by cdb_entry_costs_drop. */
int cdb_entry_costs_flush(Costdb *db);
/* Forgets the queued cost rows with every cost row the connection
 * remembers (they are numbered, maybe not written). */
void cdb_entry_costs_drop(Costdb *db);

/* Starts a unit of work: BEGIN IMMEDIATE if no transaction is open, else a
 * savepoint. cdb_txn_leave commits/releases when rc >= 0, otherwise rolls
 * the unit back; it returns rc (or the commit error). */
int cdb_txn_enter(Costdb *db);
int cdb_txn_leave(Costdb *db, int rc);

/* Checks that a fixed-size text field is NUL-terminated inside its buffer. */
int cdb_check_text(Costdb *db, const char *s, size_t cap, const char *field);
/* Checks that a double is not NaN (inf is fine). */
int cdb_check_double(Costdb *db, double v, const char *field);
/* Binds text; an empty string becomes NULL when null_if_empty. */
void cdb_bind_text(sqlite3_stmt *st, int idx, const char *s, int null_if_empty);
/* Binds v, or NULL when v == null_value. */
void cdb_bind_int_or_null(sqlite3_stmt *st, int idx, int64_t v, int64_t null_value);
/* Copies column col (NULL -> "") into dst; EINVAL if it does not fit. */
int cdb_column_text(Costdb *db, sqlite3_stmt *st, int col, char *dst, size_t cap,
                    const char *field);
/* Column as int64 with NULL -> null_value. */
int64_t cdb_column_int_or(sqlite3_stmt *st, int col, int64_t null_value);
/* Column as double with NULL -> 0. */
double cdb_column_double(sqlite3_stmt *st, int col);

/* Checks every selected column against its declared type (INTEGER holds an
 * integer, REAL a number, TEXT text without NUL bytes; NULL is left to the
 * reader): ECORRUPT naming table, row key and column otherwise. Every row a
 * reader decodes passes here first (cdb_collect does it). */
int cdb_row_check(Costdb *db, sqlite3_stmt *st);
/* *layers = the num_layers of sweep_id, what its entries' layer indices
 * index (COSTDB_MAX_LAYERS when there is no such sweep or the value is out
 * of range: the sweep's own reader refuses that). 0 or a database error. */
int cdb_sweep_layers(Costdb *db, int64_t sweep_id, int *layers);
/* 0 when the entry keyed (start, end, submesh, config, phase) lies inside
 * the sweep's layers; else code (EINVAL on write, ECORRUPT on read) naming
 * the stage_entry row and column. */
int cdb_entry_layers_check(Costdb *db, int code, int64_t sweep_id, int layers, int start,
                           int end, int submesh, int config, int phase);
/* The same check over the *n entries read for sweep_id: 0, or ECORRUPT
 * with *out freed and set to NULL, *n to 0. */
int cdb_entries_layers_check(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n);
/* Column col as an integer in lo..hi, else ECORRUPT naming table, row key,
 * column, value and limit (e.g. "(COSTDB_MAX_LAYERS)"). */
int cdb_col_range(Costdb *db, sqlite3_stmt *st, int col, int64_t lo, int64_t hi,
                  const char *limit, int64_t *out);
int cdb_col_int(Costdb *db, sqlite3_stmt *st, int col, int lo, int hi, const char *limit,
                int *out);
/* Column col as seconds: finite in 0..COSTDB_MAX_SECONDS, or +inf when
 * allow_inf; ECORRUPT otherwise. */
int cdb_col_seconds(Costdb *db, sqlite3_stmt *st, int col, int allow_inf, double *out);
/* Column col as a rate (FLOP/s, bytes/s): a finite number > 0, else
 * ECORRUPT naming table, row key and column. */
int cdb_col_rate(Costdb *db, sqlite3_stmt *st, int col, double *out);
/* A stage cost as stored: any number but a finite one past
 * COSTDB_MAX_SECONDS (a sum of those is not exact); infinite and negative
 * ones are the solver's "no stage". */
int cdb_col_cost(Costdb *db, sqlite3_stmt *st, int col, double *out);
/* A cost that may be NULL (unknown, *out = -1): cdb_col_cost otherwise;
 * text or a blob is refused, naming the entry's key (columns 0-3) and the
 * column. */
int cdb_col_cost_or_null(Costdb *db, sqlite3_stmt *st, int col, double *out);
/* EINVAL when v is finite and past COSTDB_MAX_SECONDS (on write). */
int cdb_check_seconds(Costdb *db, double v, const char *field);

/* Grows *arr (elements of size elem) so that it holds at least need:
 * util_grow (util/grow.h), its failure said on db (when not NULL) as
 * COSTDB_ENOMEM "out of memory". */
int cdb_grow(Costdb *db, void **arr, size_t *cap, size_t need, size_t elem);

/* Reads the current row of st into *row (an element of the array being
 * collected, zeroed); 0 or a negative COSTDB_E* code. */
typedef int (*CdbRowReader)(Costdb *db, sqlite3_stmt *st, void *row);
/* Steps the prepared and bound statement st (from cdb_prepare(sql)) to the
 * end, reading each row with read into a malloc'd array of elem-sized rows;
 * releases st in every case. On success *out (NULL when empty) and *n are
 * the caller's; on failure they are NULL/0. */
int cdb_collect(Costdb *db, sqlite3_stmt *st, const char *sql, size_t elem, CdbRowReader read,
                void **out, size_t *n);

#endif
