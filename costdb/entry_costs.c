/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The costs of stage entries, each distinct one stored once per sweep
 * (schema 8, schemas/README.md "stage_profile"). stage_entry holds an
 * entry's key and the id of its cost row in stage_cost; the writer
 * (costdb_entries_put, sweep.c) asks here for that id. A connection
 * remembers the cost rows it has written for the sweep it writes (a cache:
 * a cost it does not know is written again under a new id, which costs
 * space, never a wrong answer), and forgets them after a rollback, a sweep
 * deleted or a close (cdb_caches_clear). It remembers a row by a 128-bit
 * digest of its fields and error text (two 64-bit hashes of different
 * kinds), not by the fields themselves: 24 bytes a row instead of 120 and
 * a copy of the text, so that the cache holds four times the rows in 25 MB
 * instead of 63 (MAX_SLOTS; docs/performance.md, "Bounded memory at 126
 * layers"); the same rows are found, unless two distinct rows of a sweep
 * share all 128 bits (the odds, for a million rows, about 10^-27).
 *
 * Schema 15 (015_stage_cost_compact.sql): an error text is stored once in
 * stage_error and the cost row holds its id; the sweep's available_memory
 * is stored once in stage_cost_sweep (the first cost row's) and a cost row
 * with that value holds NULL.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "table_alloc.h"

/* Everything of an entry that its cost row holds, in a form compared
 * byte for byte (padding cleared). apply_cost and wgrad_cost as stored:
 * < 0 for NULL. */
typedef struct CostFields {
    double compute_cost, spread, apply_cost, wgrad_cost;
    int64_t sizes[7];
    int64_t temp_activation; /* schema 17; 0: NULL */
    int32_t repeats, status;
} CostFields;

/* Cost rows are written several to an INSERT (issue 38, wrins;
 * docs/performance.md, "The writer's inserts"): one statement of k rows
 * runs SQLite's per-statement work once for k rows (the step, the
 * transaction and cursor opcodes, the halt, the reset), and its b-tree
 * cursor stays open between rows, so that a row with the next cost_id,
 * the largest of its sweep, is placed without a seek from the root. A
 * batch is COST_BATCH rows at most, written by statements of 32, 16, 8,
 * 4, 2 and 1 rows (the binary digits of its size). The ids are the
 * writer's own (next_cost_id), given out when a row is queued, so the rows
 * and their ids are those written one at a time. */
#define COST_BATCH_LOG2 5
#define COST_BATCH ((size_t)1 << COST_BATCH_LOG2)

/* A cost row queued for its INSERT: its fields, its cost_id, its error
 * text's id (0: NULL) and whether available_memory is the sweep's (NULL). */
typedef struct PendingCost {
    CostFields f;
    int64_t id, err_id;
    int memory_null;
} PendingCost;

typedef struct CostSlot {
    uint64_t hash;    /* 0: empty; the probe starts from it */
    uint64_t check;   /* the digest's other half (fields_digest) */
    int64_t id;
} CostSlot;

struct CdbCostCache {
    int64_t sweep_id;
    CostSlot *slot;
    size_t n, cap;    /* cap a power of two */
    /* schema 15: the sweep's available_memory (stage_cost_sweep), and the
     * last error text stored with its id in stage_error */
    int memory_known;
    int64_t memory;
    char *last_error; /* NULL: none */
    int64_t last_error_id;
    /* the next cost_id of the sweep (one past its largest) while the
     * transaction it was read in is open (next_txn == Costdb.txn_serial):
     * the connection holds the write lock, so only it adds cost rows; 0:
     * read it again */
    int64_t next_id;
    uint64_t next_txn;
    /* the cost rows numbered and remembered but not yet written, at most
     * COST_BATCH (cdb_entry_costs_flush) */
    PendingCost pending[COST_BATCH];
    size_t n_pending;
};

/* Columns in schema 8's order; a row's cost_id is one past the sweep's
 * largest (sql_cost_next; a writer through the stage_profile view numbers
 * the same way). ?1 is the sweep_id, shared by the rows of a statement;
 * each row's other 16 values (cost_id, compute_cost .. apply_cost,
 * wgrad_cost (schema 12), temp_activation_size (schema 17)) are the next
 * 16 parameters, row r's from 2 + 16 r (a bare ? is one past the largest
 * number before it). Schema 15: available_memory is NULL for the sweep's
 * (stage_cost_sweep), error_id the id of the error text in stage_error.
 * The id was the INSERT's own subquery with RETURNING cost_id: SQLite runs
 * RETURNING through an ephemeral table, a new temporary page a row
 * (docs/performance.md, "The full space's cost rows, ZeRO ends and
 * signatures, trimmed"). */
#define COST_INSERT                                                                           \
    "INSERT INTO stage_cost (sweep_id, cost_id, compute_cost, peak_memory, invar_size,"       \
    " outvar_size, temp_buffer_size, available_memory, intermediate_size, initial_size,"      \
    " repeats, spread, status, error_id, apply_cost, wgrad_cost, temp_activation_size)"      \
    " VALUES "
#define COST_ROW1 "(?1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define COST_ROW2 COST_ROW1 ", " COST_ROW1
#define COST_ROW4 COST_ROW2 ", " COST_ROW2
#define COST_ROW8 COST_ROW4 ", " COST_ROW4
#define COST_ROW16 COST_ROW8 ", " COST_ROW8
#define COST_ROW32 COST_ROW16 ", " COST_ROW16
#define COST_VALUES 16 /* a row's parameters besides ?1 */
/* by log2 of the rows; static texts (cdb_prepare keeps statements by
 * their text's address) */
static const char *const sql_cost_insert[COST_BATCH_LOG2 + 1] = {
    COST_INSERT COST_ROW1, COST_INSERT COST_ROW2,  COST_INSERT COST_ROW4,
    COST_INSERT COST_ROW8, COST_INSERT COST_ROW16, COST_INSERT COST_ROW32,
};
static const char sql_cost_next[] =
    "SELECT coalesce(max(cost_id), 0) + 1 FROM stage_cost WHERE sweep_id = ?1";
static const char sql_memory_get[] =
    "SELECT available_memory FROM stage_cost_sweep WHERE sweep_id = ?1";
static const char sql_memory_put[] =
    "INSERT INTO stage_cost_sweep (sweep_id, available_memory) VALUES (?1, ?2)";
static const char sql_error_get[] = "SELECT id FROM stage_error WHERE text = ?1";
static const char sql_error_put[] = "INSERT INTO stage_error (text) VALUES (?1) RETURNING id";

static void cache_free(struct CdbCostCache *c)
{
    free(c->slot);
    free(c->last_error);
    c->slot = NULL;
    c->n = c->cap = 0;
    c->memory_known = 0;
    c->last_error = NULL;
    c->n_pending = 0;
}

void cdb_cost_cache_clear(Costdb *db)
{
    if (!db || !db->cost_cache)
        return;
    cache_free(db->cost_cache);
    free(db->cost_cache);
    db->cost_cache = NULL;
}

static void fields_of(const CostdbEntry *e, CostFields *f)
{
    memset(f, 0, sizeof *f);
    /* An oom row's compute_cost column holds the seconds computed for it,
     * when known (CostdbEntry.unfit_cost); its cost is +inf by its status,
     * and every reader (costdb_entries_get, costdb_stage_rows) says so. */
    f->compute_cost = e->status != COSTDB_STATUS_OOM ? e->compute_cost
                      : e->unfit_cost > 0 && e->unfit_cost <= COSTDB_MAX_SECONDS
                          ? e->unfit_cost : INFINITY;
    f->spread = e->spread;
    /* Unknown (< 0) and non-finite apply costs are stored as NULL. */
    f->apply_cost = e->apply_cost >= 0 && isfinite(e->apply_cost) ? e->apply_cost : -1.0;
    /* The weight-gradient seconds of a backward that was measured: within
     * 0..compute_cost (schema 12's CHECK), else unknown (NULL). */
    f->wgrad_cost = e->phase == COSTDB_BWD && e->status == COSTDB_STATUS_OK &&
                            e->wgrad_cost >= 0 && e->wgrad_cost <= e->compute_cost &&
                            isfinite(e->wgrad_cost)
                        ? e->wgrad_cost : -1.0;
    f->sizes[0] = e->peak_memory;
    f->sizes[1] = e->invar_size;
    f->sizes[2] = e->outvar_size;
    f->sizes[3] = e->temp_buffer_size;
    f->sizes[4] = e->available_memory;
    f->sizes[5] = e->intermediate_size;
    f->sizes[6] = e->initial_size;
    /* schema 17's CHECK: within 1..temp_buffer_size, else NULL */
    f->temp_activation = e->temp_activation_size > 0 &&
                                 e->temp_activation_size <= e->temp_buffer_size
                             ? e->temp_activation_size : 0;
    f->repeats = e->repeats;
    f->status = (int32_t)e->status;
}

/* The row's digest: costdb's two in-memory hashes, cdb_mem_hash (h, the
 * probe's start) and cdb_mem_check (check; FNV-1a byte by byte before,
 * eight times the steps), of the fields, padding cleared, and the error
 * text. */
static uint64_t fields_digest(const CostFields *f, const char *error, uint64_t *check)
{
    size_t len = strlen(error);
    uint64_t h = cdb_mem_hash(cdb_mem_hash(0, f, sizeof *f), error, len);
    *check = cdb_mem_check(cdb_mem_check(0, f, sizeof *f), error, len);
    return h ? h : 1; /* 0 marks an empty slot */
}

static CostSlot *find(struct CdbCostCache *c, uint64_t h, uint64_t check)
{
    if (!c->cap)
        return NULL;
    /* a mask, and a free slot ends the probe: remember keeps it at most half full */
    assert((c->cap & (c->cap - 1)) == 0 && c->n * 2 <= c->cap && h != 0);
    for (size_t k = (size_t)h & (c->cap - 1);; k = (k + 1) & (c->cap - 1)) {
        CostSlot *s = &c->slot[k];
        if (!s->hash)
            return s;
        if (s->hash == h && s->check == check)
            return s;
    }
}

/* At most this many slots (24 bytes each, 25 MB): past half of them a
 * connection stops remembering new cost rows, which are then written
 * again each time, as without memory. A 32-layer GPT sweep with every
 * variant has 73,792 distinct cost rows, llama-3.1-405b's 126 layers on
 * 32x8 317,915 (with 2^19 slots of 120 bytes, the cap before, it wrote
 * 1,236,539). */
#define MAX_SLOTS ((size_t)1 << 20)

/* Remembers f -> id; without memory it forgets (the next one is written
 * again). */
static void remember(struct CdbCostCache *c, uint64_t h, uint64_t check, int64_t id)
{
    CostSlot *s;
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 1024;
        if (ncap > MAX_SLOTS)
            return;
        CostSlot *ns = costdb_table_alloc(ncap, sizeof *ns); /* probed before written */
        if (!ns)
            return;
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slot[i].hash)
                continue;
            size_t k = (size_t)c->slot[i].hash & (ncap - 1);
            while (ns[k].hash)
                k = (k + 1) & (ncap - 1);
            ns[k] = c->slot[i];
        }
        free(c->slot);
        c->slot = ns;
        c->cap = ncap;
    }
    s = find(c, h, check);
    if (s->hash)
        return;
    s->hash = h;
    s->check = check;
    s->id = id;
    c->n++;
}

static struct CdbCostCache *cache_for(Costdb *db, int64_t sweep_id)
{
    struct CdbCostCache *c;
    assert(db);
    c = db->cost_cache;
    if (!c && !(c = db->cost_cache = calloc(1, sizeof *c)))
        return NULL;
    if (c->sweep_id != sweep_id) {
        assert(c->n_pending == 0); /* flushed by the put that queued them */
        cache_free(c);
        c->sweep_id = sweep_id;
    }
    return c;
}

/* One integer (or no row) from a statement with one parameter: 1 with *v,
 * 0 without a row. A value that is not an integer is a damaged row. */
static int query_int(Costdb *db, const char *sql, int64_t key, const char *text, int64_t *v,
                     const char *what)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    if (text)
        cdb_bind_text(st, 1, text, 0);
    else
        sqlite3_bind_int64(st, 1, key);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_INTEGER)
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: %s is not an integer", db->path, what);
    else if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0), rc = 1;
    else
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
    cdb_release(st);
    return rc;
}

/* The sweep's available_memory (stage_cost_sweep): the first cost row's
 * when it has none yet. */
static int sweep_memory(Costdb *db, struct CdbCostCache *c, int64_t sweep_id, int64_t first,
                        int64_t *memory)
{
    char what[96];
    sqlite3_stmt *st = NULL;
    int rc;
    if (c && c->memory_known) {
        *memory = c->memory;
        return 0;
    }
    snprintf(what, sizeof what, "table stage_cost_sweep, row (sweep_id=%lld): available_memory",
             (long long)sweep_id);
    if ((rc = query_int(db, sql_memory_get, sweep_id, NULL, memory, what)) < 0)
        return rc;
    if (rc == 0) {
        if ((rc = cdb_prepare(db, sql_memory_put, &st)) < 0)
            return rc;
        sqlite3_bind_int64(st, 1, sweep_id);
        sqlite3_bind_int64(st, 2, first);
        rc = sqlite3_step(st);
        rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_memory_put);
        cdb_release(st);
        if (rc < 0)
            return rc;
        *memory = first;
    }
    if (c) {
        c->memory = *memory;
        c->memory_known = 1;
    }
    return 0;
}

/* The id of an error text in stage_error, stored there once. */
static int error_id(Costdb *db, struct CdbCostCache *c, const char *text, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (c && c->last_error && !strcmp(c->last_error, text)) {
        *id = c->last_error_id;
        return 0;
    }
    if ((rc = query_int(db, sql_error_get, 0, text, id, "table stage_error: id")) < 0)
        return rc;
    if (rc == 0) {
        if ((rc = cdb_prepare(db, sql_error_put, &st)) < 0)
            return rc;
        cdb_bind_text(st, 1, text, 0);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *id = sqlite3_column_int64(st, 0);
            rc = sqlite3_step(st) == SQLITE_DONE ? 0 : cdb_fail(db, sqlite3_errcode(db->sql),
                                                               sql_error_put);
        } else {
            rc = cdb_fail(db, rc, sql_error_put);
        }
        cdb_release(st);
        if (rc < 0)
            return rc;
    }
    if (c) {
        free(c->last_error);
        c->last_error = strdup(text); /* without memory, looked up again next time */
        c->last_error_id = *id;
    }
    return 0;
}

/* The cost_id of the sweep's next cost row: one past its largest, kept
 * while the transaction that read it is open (only this connection writes
 * then; costdb_entries_delete and a rollback clear the cache). */
static int next_cost_id(Costdb *db, struct CdbCostCache *c, int64_t sweep_id, int64_t *id)
{
    int in_txn = !sqlite3_get_autocommit(db->sql);
    int rc;
    if (c && c->next_id > 0 && in_txn && c->next_txn == db->txn_serial) {
        *id = c->next_id;
        return 0;
    }
    /* the largest is read from the table: the queued rows written first */
    if ((rc = cdb_entry_costs_flush(db)) < 0)
        return rc;
    rc = query_int(db, sql_cost_next, sweep_id, NULL, id, "table stage_cost: max(cost_id)");
    if (rc == 0) /* an aggregate always gives a row */
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_cost: no max(cost_id)", db->path);
    if (rc < 0)
        return rc;
    if (c) {
        c->next_id = in_txn ? *id : 0;
        c->next_txn = db->txn_serial;
    }
    return 0;
}

/* Binds a queued row's 16 values from parameter `first` (its cost_id). */
static void bind_row(sqlite3_stmt *st, int first, const PendingCost *p)
{
    const CostFields *f = &p->f;
    sqlite3_bind_int64(st, first, p->id);
    sqlite3_bind_double(st, first + 1, f->compute_cost);
    for (int k = 0; k < 7; k++)
        if (k != 4 || !p->memory_null)
            sqlite3_bind_int64(st, first + 2 + k, f->sizes[k]);
        else
            sqlite3_bind_null(st, first + 2 + k);
    sqlite3_bind_int(st, first + 9, f->repeats);
    sqlite3_bind_double(st, first + 10, f->spread);
    sqlite3_bind_text(st, first + 11, costdb_status_name((CostdbStatus)f->status), -1,
                      SQLITE_STATIC);
    if (p->err_id)
        sqlite3_bind_int64(st, first + 12, p->err_id);
    else
        sqlite3_bind_null(st, first + 12);
    if (f->apply_cost >= 0)
        sqlite3_bind_double(st, first + 13, f->apply_cost);
    else
        sqlite3_bind_null(st, first + 13);
    if (f->wgrad_cost >= 0)
        sqlite3_bind_double(st, first + 14, f->wgrad_cost);
    else
        sqlite3_bind_null(st, first + 14);
    if (f->temp_activation > 0)
        sqlite3_bind_int64(st, first + 15, f->temp_activation);
    else
        sqlite3_bind_null(st, first + 15);
}

/* Writes rows[0 .. 2^lg) with one INSERT. Every parameter is bound for
 * each run, so the statement is reset without clearing its bindings. */
static int insert_rows(Costdb *db, int64_t sweep_id, const PendingCost *rows, int lg)
{
    const char *sql = sql_cost_insert[lg];
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    assert(sqlite3_bind_parameter_count(st) == 1 + COST_VALUES * (1 << lg));
    sqlite3_bind_int64(st, 1, sweep_id);
    for (int r = 0; r < 1 << lg; r++)
        bind_row(st, 2 + COST_VALUES * r, &rows[r]);
    rc = sqlite3_step(st);
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
    sqlite3_reset(st);
    return rc;
}

/* Writes rows[0 .. 2^lg): a statement of several rows that a constraint
 * refuses (SQLite undoes the statement's rows, the transaction stays open)
 * is tried again a row at a time, so that the error names the row's
 * statement as when rows were written one by one. Any other error (the
 * transaction may be rolled back) is returned as it is. */
static int insert_batch(Costdb *db, int64_t sweep_id, const PendingCost *rows, int lg)
{
    int rc = insert_rows(db, sweep_id, rows, lg);
    if (rc == COSTDB_ECONSTRAINT && lg > 0 && !sqlite3_get_autocommit(db->sql))
        for (int r = 0; r < 1 << lg; r++)
            if ((rc = insert_rows(db, sweep_id, &rows[r], 0)) < 0)
                break;
    return rc;
}

int cdb_entry_costs_flush(Costdb *db)
{
    struct CdbCostCache *c = db ? db->cost_cache : NULL;
    size_t done = 0;
    int rc = 0;
    if (!c || !c->n_pending)
        return 0;
    for (int lg = COST_BATCH_LOG2; lg >= 0 && rc == 0; lg--)
        for (; rc == 0 && c->n_pending - done >= (size_t)1 << lg; done += (size_t)1 << lg)
            rc = insert_batch(db, c->sweep_id, &c->pending[done], lg);
    c->n_pending = 0;
    if (rc < 0)
        cdb_entry_costs_drop(db);
    return rc;
}

void cdb_entry_costs_drop(Costdb *db)
{
    struct CdbCostCache *c = db ? db->cost_cache : NULL;
    /* rows remembered that may not have been written: forget every row and
     * the next id (read again), as after a rollback */
    if (c) {
        cache_free(c);
        c->next_id = 0;
    }
}

int cdb_entry_cost_id(Costdb *db, int64_t sweep_id, const CostdbEntry *e, int64_t *id)
{
    struct CdbCostCache *c = cache_for(db, sweep_id);
    PendingCost one, *p;
    CostSlot *s;
    uint64_t h, check;
    int64_t memory = 0, err_id = 0;
    int rc;
    fields_of(e, &one.f);
    h = fields_digest(&one.f, e->error, &check);
    if (c && (s = find(c, h, check)) && s->hash) {
        *id = s->id;
        return 0;
    }
    if ((rc = sweep_memory(db, c, sweep_id, one.f.sizes[4], &memory)) < 0 ||
        (*e->error && (rc = error_id(db, c, e->error, &err_id)) < 0))
        return rc;
    if ((rc = next_cost_id(db, c, sweep_id, id)) < 0)
        return rc;
    one.id = *id;
    one.err_id = *e->error ? err_id : 0;
    one.memory_null = one.f.sizes[4] == memory;
    if (!c) /* without memory: written now, one at a time */
        return insert_rows(db, sweep_id, &one, 0);
    /* queued (written by the put, cdb_entry_costs_flush), numbered and
     * remembered now */
    p = &c->pending[c->n_pending++];
    *p = one;
    c->next_id = *id + 1;
    remember(c, h, check, *id);
    return c->n_pending == COST_BATCH ? cdb_entry_costs_flush(db) : 0;
}

static const char *text_or_null(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? (const char *)t : "NULL";
}

int cdb_entry_without_costs(Costdb *db, sqlite3_stmt *st, int cost_col)
{
    char id[40] = "";
    if (cost_col >= 0)
        snprintf(id, sizeof id, " %.20s", text_or_null(st, cost_col));
    return cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry, row (start_layer=%.20s,"
                   " end_layer=%.20s, submesh_index=%.20s, config_index=%.20s, phase=%.20s):"
                   " its cost_id%s names no row of table stage_cost", db->path,
                   text_or_null(st, 0), text_or_null(st, 1), text_or_null(st, 2),
                   text_or_null(st, 3), text_or_null(st, 4), id);
}

int cdb_cost_refs_check(Costdb *db, sqlite3_stmt *st, int error_col, int memory_col)
{
    const char *what = NULL;
    char row[320];
    if (sqlite3_column_count(st) >= 24) { /* stage_cost's own columns 20-23 */
        if (sqlite3_column_type(st, 22) != SQLITE_NULL &&
            sqlite3_column_type(st, error_col) == SQLITE_NULL)
            what = "error_id";
        else if (sqlite3_column_type(st, 23) == SQLITE_NULL &&
                 sqlite3_column_type(st, memory_col) == SQLITE_NULL)
            what = "available_memory";
        if (!what)
            return 0;
        snprintf(row, sizeof row, "table stage_cost, row (sweep_id=%.20s, cost_id=%.20s)",
                 text_or_null(st, 20), text_or_null(st, 21));
    } else {
        /* through stage_profile: an id that names no text reads as the id */
        if (error_col >= 0 && sqlite3_column_type(st, error_col) == SQLITE_INTEGER)
            what = "error_id";
        else if (sqlite3_column_type(st, memory_col) == SQLITE_NULL)
            what = "available_memory";
        if (!what)
            return 0;
        snprintf(row, sizeof row, "table stage_entry, row (start_layer=%.20s, end_layer=%.20s,"
                 " submesh_index=%.20s, config_index=%.20s, phase=%.20s), its row in table"
                 " stage_cost", text_or_null(st, 0), text_or_null(st, 1), text_or_null(st, 2),
                 text_or_null(st, 3), text_or_null(st, 4));
    }
    if (!strcmp(what, "error_id"))
        return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: its error_id %.20s names no row of table"
                       " stage_error", db->path, row,
                       text_or_null(st, sqlite3_column_count(st) >= 24 ? 22 : error_col));
    return cdb_err(db, COSTDB_ECORRUPT, "%s: %s: column available_memory is NULL (the sweep's)"
                   " and table stage_cost_sweep has no row for its sweep", db->path, row);
}
