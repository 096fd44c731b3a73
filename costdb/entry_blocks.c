/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage entries in blocks (entry_blocks.h; schema 14). The writer reads an
 * entry's block, sets its slot and writes the block back; the entries of
 * one tuple (the two phases of a config) share one read and one write. An
 * entry whose key stage_entry_row holds (written with SQL) or whose cost_id
 * does not fit a slot is handled there, so that a key is in one place only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entry_blocks.h"
#include "grow.h"

static const char sql_block_get[] =
    "SELECT costs FROM stage_entry_block WHERE sweep_id = ?1 AND submesh_index = ?2"
    " AND start_layer = ?3 AND end_layer = ?4 AND config_block = ?5";
static const char sql_block_put[] =
    "INSERT OR REPLACE INTO stage_entry_block (sweep_id, submesh_index, start_layer, end_layer,"
    " config_block, costs) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char sql_rows_any[] =
    "SELECT EXISTS (SELECT 1 FROM stage_entry_row WHERE sweep_id = ?1)";
#define ROW_KEY                                                                         \
    " WHERE sweep_id = ?1 AND start_layer = ?2 AND end_layer = ?3 AND submesh_index = ?4" \
    " AND config_index = ?5 AND phase = ?6"
static const char sql_row_exists[] = "SELECT 1 FROM stage_entry_row" ROW_KEY;
static const char sql_row_delete[] = "DELETE FROM stage_entry_row" ROW_KEY;
#define ROW_COLUMNS                                                                  \
    " (sweep_id, start_layer, end_layer, submesh_index, config_index, phase,"       \
    " cost_id, reused) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
static const char sql_row_insert[] = "INSERT INTO stage_entry_row" ROW_COLUMNS;
static const char sql_row_replace[] = "INSERT OR REPLACE INTO stage_entry_row" ROW_COLUMNS;
/* stage_entry_row's foreign key, for the entries of blocks (whose foreign
 * key names the submesh only) */
static const char sql_config_exists[] =
    "SELECT 1 FROM sweep_config WHERE sweep_id = ?1 AND submesh_index = ?2 AND config_index = ?3";

static const char *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? (const char *)t : "NULL";
}

/* Column col as an int in lo..hi; else ECORRUPT naming the block. */
static int key_col(Costdb *db, sqlite3_stmt *st, int col0, int col, int64_t lo, int64_t hi,
                   const char *bound, int *out)
{
    static const char *const names[] = {"sweep_id", "submesh_index", "start_layer",
                                        "end_layer", "config_block"};
    int64_t v = sqlite3_column_int64(st, col0 + col);
    if (sqlite3_column_type(st, col0 + col) == SQLITE_INTEGER && v >= lo && v <= hi) {
        *out = (int)v;
        return 0;
    }
    return cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry_block, row (sweep_id=%.20s,"
                   " submesh_index=%.20s, start_layer=%.20s, end_layer=%.20s,"
                   " config_block=%.20s): column %s = %.40s is outside %lld..%lld %s", db->path,
                   text_or_null(st, col0), text_or_null(st, col0 + 1),
                   text_or_null(st, col0 + 2), text_or_null(st, col0 + 3),
                   text_or_null(st, col0 + 4), names[col], text_or_null(st, col0 + col),
                   (long long)lo, (long long)hi, bound);
}

int cdb_block_row(Costdb *db, sqlite3_stmt *st, int col, CdbBlock *b)
{
    int rc, n;
    if (sqlite3_column_type(st, col) != SQLITE_INTEGER)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry_block: a row whose sweep_id"
                       " is %.40s, not an integer", db->path, text_or_null(st, col));
    b->sweep_id = sqlite3_column_int64(st, col);
    if ((rc = key_col(db, st, col, 1, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                      &b->submesh_index)) < 0 ||
        (rc = key_col(db, st, col, 2, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                      &b->start_layer)) < 0 ||
        (rc = key_col(db, st, col, 3, b->start_layer, COSTDB_MAX_LAYERS - 1,
                      "(start_layer..COSTDB_MAX_LAYERS)", &b->end_layer)) < 0 ||
        (rc = key_col(db, st, col, 4, 0, COSTDB_MAX_INDEX / CDB_BLOCK_CONFIGS - 1,
                      "(COSTDB_MAX_INDEX / 64)", &b->config_block)) < 0)
        return rc;
    n = sqlite3_column_bytes(st, col + 5);
    if (sqlite3_column_type(st, col + 5) != SQLITE_BLOB || n % CDB_SLOT_BYTES ||
        n > CDB_BLOCK_BYTES)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry_block, row (sweep_id=%lld,"
                       " submesh_index=%d, start_layer=%d, end_layer=%d, config_block=%d):"
                       " column costs is not a blob of whole %d-byte slots of at most %d bytes"
                       " (%s of %d bytes)", db->path, (long long)b->sweep_id, b->submesh_index,
                       b->start_layer, b->end_layer, b->config_block, CDB_SLOT_BYTES,
                       CDB_BLOCK_BYTES,
                       sqlite3_column_type(st, col + 5) == SQLITE_BLOB ? "a blob" : "a value",
                       n);
    memset(b->costs, 0, sizeof b->costs);
    if (n)
        memcpy(b->costs, sqlite3_column_blob(st, col + 5), (size_t)n);
    b->nslots = n / CDB_SLOT_BYTES;
    return 0;
}

/* The sweep's first block that cdb_block_row refuses, if any. */
static const char sql_block_bad[] =
    "SELECT sweep_id, submesh_index, start_layer, end_layer, config_block, costs"
    " FROM stage_entry_block WHERE sweep_id = ?1 AND NOT (typeof(costs) = 'blob'"
    " AND length(costs) % 3 = 0 AND length(costs) <= 384"
    " AND typeof(submesh_index) = 'integer' AND submesh_index BETWEEN 0 AND 65535"
    " AND typeof(start_layer) = 'integer' AND start_layer BETWEEN 0 AND 65535"
    " AND typeof(end_layer) = 'integer' AND end_layer BETWEEN start_layer AND 65535"
    " AND typeof(config_block) = 'integer' AND config_block BETWEEN 0 AND 1023) LIMIT 1";

int cdb_entry_blocks_check(Costdb *db, int64_t sweep_id)
{
    sqlite3_stmt *st = NULL;
    CdbBlock b;
    int rc;
    _Static_assert(CDB_BLOCK_BYTES == 384 && COSTDB_MAX_INDEX / CDB_BLOCK_CONFIGS == 1024,
                   "sql_block_bad's bounds");
    if ((rc = cdb_prepare(db, sql_block_bad, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        rc = cdb_block_row(db, st, 0, &b);
        if (rc == 0)
            rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry_block: a damaged row of"
                         " sweep %lld", db->path, (long long)sweep_id);
    } else {
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_block_bad);
    }
    cdb_release(st);
    return rc;
}

static const char sql_block_costs[] =
    "SELECT costs FROM stage_entry_block WHERE sweep_id = ?1";
static const char sql_rows_count[] = "SELECT count(*) FROM stage_entry_row WHERE sweep_id = ?1";

int cdb_entry_blocks_count(Costdb *db, int64_t sweep_id, int64_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *n = 0;
    if ((rc = cdb_entry_blocks_check(db, sweep_id)) < 0 ||
        (rc = cdb_prepare(db, sql_block_costs, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *p = sqlite3_column_blob(st, 0);
        int len = sqlite3_column_bytes(st, 0);
        for (int k = 0; p && k + CDB_SLOT_BYTES <= len; k += CDB_SLOT_BYTES)
            *n += (p[k] | p[k + 1] | p[k + 2]) != 0;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_block_costs);
    cdb_release(st);
    if (rc == 0 && (rc = cdb_prepare(db, sql_rows_count, &st)) == 0) {
        sqlite3_bind_int64(st, 1, sweep_id);
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            *n += sqlite3_column_int64(st, 0);
            rc = 0;
        } else {
            rc = cdb_fail(db, rc, sql_rows_count);
        }
        cdb_release(st);
    }
    return rc;
}

int cdb_entry_rows_any(Costdb *db, int64_t sweep_id)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql_rows_any, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0 : cdb_fail(db, rc, sql_rows_any);
    cdb_release(st);
    return rc;
}

static void bind_key(sqlite3_stmt *st, int64_t sweep_id, const CostdbEntry *x)
{
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, x->start_layer);
    sqlite3_bind_int(st, 3, x->end_layer);
    sqlite3_bind_int(st, 4, x->submesh_index);
    sqlite3_bind_int(st, 5, x->config_index);
    sqlite3_bind_int(st, 6, (int)x->phase);
}

static int taken(Costdb *db, int64_t sweep_id, const CostdbEntry *x)
{
    return cdb_err(db, COSTDB_ECONSTRAINT, "%s: UNIQUE constraint failed: the entry (sweep_id=%lld,"
                   " start_layer=%d, end_layer=%d, submesh_index=%d, config_index=%d, phase=%d)"
                   " is there already (in: INSERT INTO stage_entry)", db->path,
                   (long long)sweep_id, x->start_layer, x->end_layer, x->submesh_index,
                   x->config_index, (int)x->phase);
}

/* The key's row in stage_entry_row: 0 none (or deleted, with replace), or
 * the conflict. */
static int row_clear(Costdb *db, int64_t sweep_id, const CostdbEntry *x, int replace)
{
    sqlite3_stmt *st = NULL;
    const char *sql = replace ? sql_row_delete : sql_row_exists;
    int rc = cdb_prepare(db, sql, &st);
    if (rc < 0)
        return rc;
    bind_key(st, sweep_id, x);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        rc = taken(db, sweep_id, x);
    else
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
    cdb_release(st);
    return rc;
}

static int config_check(Costdb *db, int64_t sweep_id, const CostdbEntry *x)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql_config_exists, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, x->submesh_index);
    sqlite3_bind_int(st, 3, x->config_index);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        rc = cdb_err(db, COSTDB_ECONSTRAINT, "%s: FOREIGN KEY constraint failed: entry (%d, %d,"
                     " %d, %d) names config %d of submesh %d, which sweep %lld does not have"
                     " (in: INSERT INTO stage_entry)", db->path, x->start_layer, x->end_layer,
                     x->submesh_index, x->config_index, x->config_index, x->submesh_index,
                     (long long)sweep_id);
    else
        rc = rc == SQLITE_ROW ? 0 : cdb_fail(db, rc, sql_config_exists);
    cdb_release(st);
    return rc;
}

static void bind_block_key(sqlite3_stmt *st, const CdbBlock *b)
{
    sqlite3_bind_int64(st, 1, b->sweep_id);
    sqlite3_bind_int(st, 2, b->submesh_index);
    sqlite3_bind_int(st, 3, b->start_layer);
    sqlite3_bind_int(st, 4, b->end_layer);
    sqlite3_bind_int(st, 5, b->config_block);
}

/* b's slots as stored (none: all empty); its key set by the caller. */
static int block_load(Costdb *db, CdbBlock *b)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql_block_get, &st), n;
    if (rc < 0)
        return rc;
    bind_block_key(st, b);
    memset(b->costs, 0, sizeof b->costs);
    b->nslots = 0;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        n = sqlite3_column_bytes(st, 0);
        if (sqlite3_column_type(st, 0) != SQLITE_BLOB || n % CDB_SLOT_BYTES ||
            n > CDB_BLOCK_BYTES)
            rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry_block, row (sweep_id=%lld,"
                         " submesh_index=%d, start_layer=%d, end_layer=%d, config_block=%d):"
                         " column costs is not a blob of whole %d-byte slots of at most %d"
                         " bytes", db->path, (long long)b->sweep_id, b->submesh_index,
                         b->start_layer, b->end_layer, b->config_block, CDB_SLOT_BYTES,
                         CDB_BLOCK_BYTES);
        else {
            if (n)
                memcpy(b->costs, sqlite3_column_blob(st, 0), (size_t)n);
            b->nslots = n / CDB_SLOT_BYTES;
            rc = 0;
        }
    } else {
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_block_get);
    }
    cdb_release(st);
    return rc;
}

static int block_store(Costdb *db, const CdbBlock *b)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql_block_put, &st);
    if (rc < 0)
        return rc;
    bind_block_key(st, b);
    sqlite3_bind_blob(st, 6, b->costs, b->nslots * CDB_SLOT_BYTES, SQLITE_STATIC);
    rc = cdb_exec_stmt(db, st, sql_block_put);
    cdb_release(st);
    return rc;
}

static void slot_set(CdbBlock *b, int k, uint32_t v)
{
    unsigned char *p = b->costs + (size_t)k * CDB_SLOT_BYTES;
    p[0] = (unsigned char)(v >> 16);
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)v;
    if (v && k >= b->nslots)
        b->nslots = k + 1;
}

/* An entry whose cost_id no slot holds: a row, its block's slot cleared. */
static int row_put(Costdb *db, int64_t sweep_id, const CostdbEntry *x, int64_t cost_id,
                   CdbBlock *b, int k, int replace)
{
    const char *sql = replace ? sql_row_replace : sql_row_insert;
    sqlite3_stmt *st = NULL;
    int rc;
    if (k < b->nslots && cdb_block_slot(b, k)) {
        if (!replace)
            return taken(db, sweep_id, x);
        slot_set(b, k, 0);
    }
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    bind_key(st, sweep_id, x);
    sqlite3_bind_int64(st, 7, cost_id);
    sqlite3_bind_int(st, 8, x->reused ? 1 : 0);
    rc = cdb_exec_stmt(db, st, sql);
    cdb_release(st);
    return rc;
}

/* The blocks of one call, each read once and written once: a tuple's
 * entries were written back with their whole block each, and the sweep's
 * writer hands over a batch of tuples whose configs share blocks
 * (docs/performance.md, "Each block written once a batch"). Every block
 * read is written, as when each was written back at once (an entry moved
 * to stage_entry_row leaves its block stored, perhaps empty); all are
 * written before the call returns, so readers and the caller's commit see
 * the same rows. A table holding CALL_BLOCKS blocks is written and emptied
 * (a block read again is then read as written). */
#define CALL_BLOCKS 4096
typedef struct BlockTable {
    CdbBlock *b;
    size_t n, cap;
    uint32_t *index;              /* open addressing: position + 1, 0 empty */
    size_t icap;                  /* a power of two, at least twice n */
    size_t last;                  /* the block the previous entry used */
} BlockTable;

static uint64_t block_key_hash(int sub, int start, int end, int block)
{
    uint64_t h = ((uint64_t)(uint32_t)sub << 48) ^ ((uint64_t)(uint32_t)start << 32) ^
                 ((uint64_t)(uint32_t)end << 16) ^ (uint64_t)(uint32_t)block;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 31);
}

static int block_is(const CdbBlock *b, const CostdbEntry *x)
{
    return b->submesh_index == x->submesh_index && b->start_layer == x->start_layer &&
           b->end_layer == x->end_layer && b->config_block == x->config_index / CDB_BLOCK_CONFIGS;
}

/* Writes every block of the table and empties it. */
static int table_store(Costdb *db, BlockTable *t)
{
    int rc;
    for (size_t i = 0; i < t->n; i++)
        if ((rc = block_store(db, &t->b[i])) < 0)
            return rc;
    t->n = 0;
    t->last = 0;
    if (t->index)
        memset(t->index, 0, t->icap * sizeof *t->index);
    return 0;
}

/* The table's block of x: found, or read (stored rows, else empty). */
static int table_block(Costdb *db, BlockTable *t, int64_t sweep_id, const CostdbEntry *x,
                       CdbBlock **out)
{
    int block = x->config_index / CDB_BLOCK_CONFIGS, rc;
    size_t k;
    if (t->n && block_is(&t->b[t->last], x)) {
        *out = &t->b[t->last];
        return 0;
    }
    if (t->n) {
        k = (size_t)block_key_hash(x->submesh_index, x->start_layer, x->end_layer, block) &
            (t->icap - 1);
        for (; t->index[k]; k = (k + 1) & (t->icap - 1))
            if (block_is(&t->b[t->index[k] - 1], x)) {
                t->last = t->index[k] - 1;
                *out = &t->b[t->last];
                return 0;
            }
    }
    if (t->n == CALL_BLOCKS && (rc = table_store(db, t)) < 0)
        return rc;
    if (UTIL_GROW(t->b, t->cap, t->n + 1) < 0)
        return cdb_err(db, COSTDB_ENOMEM, "%s: out of memory", db->path);
    if ((t->n + 1) * 2 > t->icap) {
        size_t ncap = t->icap ? t->icap * 2 : 64;
        uint32_t *ni = calloc(ncap, sizeof *ni);
        if (!ni)
            return cdb_err(db, COSTDB_ENOMEM, "%s: out of memory", db->path);
        for (size_t i = 0; i < t->n; i++) {
            const CdbBlock *b = &t->b[i];
            size_t j = (size_t)block_key_hash(b->submesh_index, b->start_layer, b->end_layer,
                                              b->config_block) & (ncap - 1);
            while (ni[j])
                j = (j + 1) & (ncap - 1);
            ni[j] = (uint32_t)i + 1;
        }
        free(t->index);
        t->index = ni;
        t->icap = ncap;
    }
    CdbBlock *b = &t->b[t->n];
    b->sweep_id = sweep_id;
    b->submesh_index = x->submesh_index;
    b->start_layer = x->start_layer;
    b->end_layer = x->end_layer;
    b->config_block = block;
    if ((rc = block_load(db, b)) < 0)
        return rc;
    k = (size_t)block_key_hash(x->submesh_index, x->start_layer, x->end_layer, block) &
        (t->icap - 1);
    while (t->index[k])
        k = (k + 1) & (t->icap - 1);
    t->index[k] = (uint32_t)t->n + 1;
    t->last = t->n++;
    *out = b;
    return 0;
}

/* The configs of one sweep that the connection found in sweep_config
 * (submesh << 16 | config; open addressing, UINT32_MAX empty): each entry
 * of a block needs its config to exist (stage_entry_row's foreign key,
 * which a block's slots do not have), and a sweep writes each config's
 * entries in many transactions. A config found stays there until
 * something deletes it: this connection only by deleting its sweep, which
 * clears the connection's caches (cdb_caches_clear, as does any rollback:
 * a config inserted and found in a transaction rolled back is gone), or
 * another connection, whose commit changes PRAGMA data_version, read once a
 * transaction (while the transaction holds the write lock, no other
 * connection commits). */
#define CONFIG_CACHE_MAX ((size_t)1 << 20)
struct CdbConfigCache {
    int64_t sweep_id;
    int64_t data_version;
    uint64_t txn;                 /* Costdb.txn_serial when data_version was read */
    uint32_t *keys;
    size_t n, cap;
};
static const char sql_data_version[] = "PRAGMA data_version";

void cdb_config_cache_clear(Costdb *db)
{
    if (!db || !db->config_cache)
        return;
    free(db->config_cache->keys);
    free(db->config_cache);
    db->config_cache = NULL;
}

static size_t config_slot(const uint32_t *keys, size_t cap, uint32_t key)
{
    size_t k = (size_t)(key * 0x9e3779b1u) & (cap - 1);
    while (keys[k] != UINT32_MAX && keys[k] != key)
        k = (k + 1) & (cap - 1);
    return k;
}

/* The connection's cache for sweep_id in this transaction (emptied when
 * another connection committed since it was filled), or NULL (no memory:
 * every config is looked up). */
static struct CdbConfigCache *config_cache(Costdb *db, int64_t sweep_id, int *rc)
{
    struct CdbConfigCache *c = db->config_cache;
    sqlite3_stmt *st = NULL;
    int64_t v;
    *rc = 0;
    if (!c && !(c = db->config_cache = calloc(1, sizeof *c)))
        return NULL;
    if (c->txn == db->txn_serial && c->sweep_id == sweep_id && c->keys)
        return c;
    if ((*rc = cdb_prepare(db, sql_data_version, &st)) < 0)
        return NULL;
    if ((*rc = sqlite3_step(st)) != SQLITE_ROW) {
        *rc = cdb_fail(db, *rc, sql_data_version);
        cdb_release(st);
        return NULL;
    }
    v = sqlite3_column_int64(st, 0);
    cdb_release(st);
    *rc = 0;
    if (!c->keys || c->sweep_id != sweep_id || c->data_version != v ||
        c->n >= CONFIG_CACHE_MAX) {
        free(c->keys);
        c->cap = 1024;
        if (!(c->keys = malloc(c->cap * sizeof *c->keys))) {
            c->cap = 0;
            return NULL;
        }
        memset(c->keys, 0xff, c->cap * sizeof *c->keys);
        c->n = 0;
        c->sweep_id = sweep_id;
        c->data_version = v;
    }
    c->txn = db->txn_serial;
    return c;
}

/* config_check, once per config while the connection's cache holds it. */
static int config_known(Costdb *db, int64_t sweep_id, const CostdbEntry *x)
{
    uint32_t key = (uint32_t)x->submesh_index << 16 | (uint32_t)x->config_index;
    struct CdbConfigCache *c;
    size_t k;
    int rc;
    _Static_assert(COSTDB_MAX_INDEX == 65536, "a config's key in 32 bits");
    c = config_cache(db, sweep_id, &rc);
    if (rc < 0)
        return rc;
    if (c && c->keys[config_slot(c->keys, c->cap, key)] == key)
        return 0;
    if ((rc = config_check(db, sweep_id, x)) < 0 || !c)
        return rc;
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap * 2;
        uint32_t *nk = malloc(ncap * sizeof *nk);
        if (!nk)
            return 0; /* a cache: without it, the next lookup asks again */
        memset(nk, 0xff, ncap * sizeof *nk);
        for (size_t i = 0; i < c->cap; i++)
            if (c->keys[i] != UINT32_MAX)
                nk[config_slot(nk, ncap, c->keys[i])] = c->keys[i];
        free(c->keys);
        c->keys = nk;
        c->cap = ncap;
    }
    k = config_slot(c->keys, c->cap, key);
    c->keys[k] = key;
    c->n++;
    return 0;
}

static int put_all(Costdb *db, BlockTable *t, int64_t sweep_id, const CostdbEntry *e, size_t n,
                   int replace)
{
    int rc, rows;
    if ((rows = cdb_entry_rows_any(db, sweep_id)) < 0)
        return rows;
    for (size_t i = 0; i < n; i++) {
        const CostdbEntry *x = &e[i];
        int k = 2 * (x->config_index % CDB_BLOCK_CONFIGS) + (x->phase == COSTDB_BWD);
        int64_t cost_id = 0;
        CdbBlock *b = NULL;
        if ((rc = table_block(db, t, sweep_id, x, &b)) < 0 ||
            (rc = config_known(db, sweep_id, x)) < 0 ||
            (rc = cdb_entry_cost_id(db, sweep_id, x, &cost_id)) < 0)
            return rc;
        if (cost_id < 1 || cost_id > CDB_BLOCK_MAX_COST_ID) {
            if ((rc = row_put(db, sweep_id, x, cost_id, b, k, replace)) < 0)
                return rc;
            rows = 1;
            continue;
        }
        if (rows && (rc = row_clear(db, sweep_id, x, replace)) < 0)
            return rc;
        if (!replace && k < b->nslots && cdb_block_slot(b, k))
            return taken(db, sweep_id, x);
        slot_set(b, k, (uint32_t)cost_id * 2 + (x->reused ? 1 : 0));
    }
    if ((rc = cdb_entry_costs_flush(db)) < 0)
        return rc;
    return table_store(db, t);
}

int cdb_entry_blocks_put(Costdb *db, int64_t sweep_id, const CostdbEntry *e, size_t n,
                         int replace)
{
    BlockTable t;
    int rc;
    if (n == 0)
        return 0;
    memset(&t, 0, sizeof t);
    rc = put_all(db, &t, sweep_id, e, n, replace);
    if (rc < 0) /* the cost rows it queued and did not write */
        cdb_entry_costs_drop(db);
    free(t.b);
    free(t.index);
    return rc;
}

/* ---- the migration to schema 14 ------------------------------------------ */

/* The rows a block holds: integer keys within a block's bounds, phase 0 or
 * 1, a cost_id a slot holds, reused 0 or 1. */
#define PACKABLE                                                                              \
    " typeof(sweep_id) = 'integer' AND typeof(submesh_index) = 'integer'"                     \
    " AND typeof(start_layer) = 'integer' AND typeof(end_layer) = 'integer'"                  \
    " AND typeof(config_index) = 'integer' AND typeof(phase) = 'integer'"                     \
    " AND typeof(cost_id) = 'integer' AND typeof(reused) = 'integer'"                         \
    " AND submesh_index BETWEEN 0 AND 65535 AND start_layer BETWEEN 0 AND 65535"             \
    " AND end_layer BETWEEN start_layer AND 65535 AND config_index BETWEEN 0 AND 65535"      \
    " AND phase IN (0, 1) AND cost_id BETWEEN 1 AND 8388607 AND reused IN (0, 1)"
static const char sql_pack_rows[] =
    "SELECT sweep_id, submesh_index, start_layer, end_layer, config_index, phase, cost_id,"
    " reused FROM stage_entry_row WHERE" PACKABLE
    " ORDER BY sweep_id, submesh_index DESC, start_layer, end_layer, config_index, phase";
static const char sql_pack_delete[] = "DELETE FROM stage_entry_row WHERE" PACKABLE;

int cdb_entry_blocks_pack(Costdb *db)
{
    sqlite3_stmt *st = NULL;
    CdbBlock b;
    int rc, loaded = 0;
    _Static_assert(CDB_BLOCK_MAX_COST_ID == 8388607 && COSTDB_MAX_INDEX == 65536 &&
                       COSTDB_MAX_LAYERS == 65536,
                   "PACKABLE's bounds");
    memset(&b, 0, sizeof b);
    if ((rc = cdb_prepare(db, sql_pack_rows, &st)) < 0)
        return rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t sweep_id = sqlite3_column_int64(st, 0);
        int sub = sqlite3_column_int(st, 1), start = sqlite3_column_int(st, 2);
        int end = sqlite3_column_int(st, 3), config = sqlite3_column_int(st, 4);
        int k = 2 * (config % CDB_BLOCK_CONFIGS) + sqlite3_column_int(st, 5);
        if (loaded && (b.sweep_id != sweep_id || b.submesh_index != sub ||
                       b.start_layer != start || b.end_layer != end ||
                       b.config_block != config / CDB_BLOCK_CONFIGS)) {
            if ((rc = block_store(db, &b)) < 0)
                goto out;
            loaded = 0;
        }
        if (!loaded) {
            memset(&b, 0, sizeof b);
            b.sweep_id = sweep_id;
            b.submesh_index = sub;
            b.start_layer = start;
            b.end_layer = end;
            b.config_block = config / CDB_BLOCK_CONFIGS;
            loaded = 1;
        }
        slot_set(&b, k, (uint32_t)sqlite3_column_int64(st, 6) * 2 +
                            (uint32_t)sqlite3_column_int(st, 7));
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_pack_rows);
    if (rc == 0 && loaded)
        rc = block_store(db, &b);
out:
    cdb_release(st);
    return rc < 0 ? rc : cdb_exec(db, sql_pack_delete);
}
