/* SPDX-License-Identifier: Apache-2.0 */
/*
 * costdb_stage_rows (costdb_rows.h): a sweep's stage costs streamed to the
 * solver in stage_entry's key order (no sort), with no per-row allocation
 * and no copy of texts. Schema 8 keeps each distinct cost row once
 * (stage_cost) and each entry's key with the id of its costs (stage_entry):
 * the reader takes the sweep's cost rows first, each checked once, into an
 * array by id, then walks the entries, instead of one join lookup per
 * entry. Only the columns the stage DP uses are read. A fast path clears
 * each value with the checks costdb_entries_get's reader applies to it
 * (type, range, status); an entry whose key or costs it does not clear is
 * read again, through the stage_profile view, with cdb_row_check and the
 * cdb_col_* readers, whose refusal names the table, the row key and the
 * column, as costdb_entries_get's does. A row judged out of memory ('oom')
 * is handed over too, its cost +inf and the seconds its compute_cost
 * column holds in unfit_cost (CostdbEntry), for apsolve's cp and ep steps.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "cost_table.h"
#include "costdb_rows.h"

/* The cost rows, then the entries, of one sweep. The names of the other
 * statuses are costdb_status_parse's (sweep.c): a row whose status is one
 * of them but 'oom', byte for byte, is no stage and is not read further
 * (the solver uses none of them); any other status (a name not known, a blob, text with
 * a NUL byte) sends the entries that use the row to the checked path. */
#define SQL_COSTS(wgrad)                                                                  \
    "SELECT cost_id, compute_cost, peak_memory, available_memory, intermediate_size,"     \
    " initial_size, apply_cost, status, " wgrad " FROM stage_cost WHERE sweep_id = ?1"
/* Schema 12 has wgrad_cost; a file opened read-only at 8..11 reads NULL
 * (unknown) in its place, here and through the view. */
static const char sql_costs[] = SQL_COSTS("wgrad_cost");
static const char sql_costs_v11[] = SQL_COSTS("NULL");
static const char sql_entries[] =
    "SELECT start_layer, end_layer, submesh_index, config_index, phase, cost_id"
    " FROM stage_entry WHERE sweep_id = ?1"
    " ORDER BY submesh_index DESC, start_layer, end_layer, config_index, phase";
/* An entry's columns the solver uses, through the stage_profile view (a
 * table before schema 8). Columns: 0-4 the key, 5 compute_cost, 6-9 the
 * sizes, 10 apply_cost, 11 status, 12 wgrad_cost (NULL before schema 12). */
#define SELECT_PROFILE_ROWS(wgrad)                                                        \
    "SELECT start_layer, end_layer, submesh_index, config_index, phase, compute_cost,"   \
    " peak_memory, available_memory, intermediate_size, initial_size, apply_cost, status," \
    " " wgrad " FROM stage_profile WHERE sweep_id = ?1"
/* A file before schema 8 (read-only opens do not migrate): the table
 * stage_profile, every row through the checked path. */
static const char sql_rows_v7[] =
    SELECT_PROFILE_ROWS("NULL")
    " AND (status = 'ok' OR status <> 'oom' AND status <> 'failed'"
    " AND status <> 'timeout' AND status <> 'skipped')"
    " ORDER BY submesh_index DESC, start_layer, end_layer, config_index, phase";
/* The checked path: one entry. */
#define ONE_ROW(wgrad)                                                                    \
    SELECT_PROFILE_ROWS(wgrad) " AND submesh_index = ?2 AND start_layer = ?3"             \
    " AND end_layer = ?4 AND config_index = ?5 AND phase = ?6"
static const char sql_one_row[] = ONE_ROW("wgrad_cost");
static const char sql_one_row_v11[] = ONE_ROW("NULL");

/* The fast path reads each value once through sqlite3_column_value (the
 * statements are this thread's alone, as is the handle) and clears it with
 * the rules of cdb_row_check and the cdb_col_* readers, for the declared
 * types of approf's schema (checked once per scan in decls_match). */
static const char *const cost_decls[] = {
    "INTEGER", "REAL", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "REAL", "TEXT", "REAL",
};
static const char *const entry_decls[] = {
    "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER", "INTEGER",
};

/* The first n columns have approf's declared types; the statement has at
 * least n columns (a NULL in place of a column schema 12 added has no
 * declared type and is not compared). */
static int decls_match(sqlite3_stmt *st, const char *const *decl, int n)
{
    if (sqlite3_column_count(st) < n)
        return 0;
    for (int i = 0; i < n; i++) {
        const char *d = sqlite3_column_decltype(st, i);
        if (!d || strcmp(d, decl[i]))
            return 0;
    }
    return 1;
}

static int int_in(sqlite3_stmt *st, int col, int64_t lo, int64_t hi, int64_t *v)
{
    sqlite3_value *x = sqlite3_column_value(st, col);
    if (sqlite3_value_type(x) != SQLITE_INTEGER)
        return 0;
    *v = (int64_t)sqlite3_value_int64(x);
    return *v >= lo && *v <= hi;
}

/* A number of seconds as cdb_col_cost takes it; NULL as -1 when null_ok. */
static int cost_ok(sqlite3_stmt *st, int col, int null_ok, double *v)
{
    sqlite3_value *x = sqlite3_column_value(st, col);
    int t = sqlite3_value_type(x);
    if (t == SQLITE_NULL && null_ok) {
        *v = -1.0;
        return 1;
    }
    if (t != SQLITE_FLOAT && t != SQLITE_INTEGER)
        return 0;
    *v = sqlite3_value_double(x);
    return !isnan(*v) && !(isfinite(*v) && fabs(*v) > COSTDB_MAX_SECONDS);
}

/* A cost row as the fast path found it. */
enum { COST_NONE, COST_OK, COST_NO_STAGE, COST_CHECK };
typedef struct CostRow {
    CostdbStageCost f; /* COST_OK's figures */
    int kind; /* COST_*: none (no such row), cleared, another status, to check */
} CostRow;

/* Past this many ids (and past 16 per cost row read) the array is not
 * built and every entry takes the checked path: ids are approf's 1, 2, 3,
 * ..., and a file with others is read correctly, only slower. */
#define MAX_COST_IDS ((int64_t)1 << 24)

/* A status that names one of costdb_status_parse's statuses other than
 * ok, byte for byte (n bytes, no NUL inside). */
static int is_no_stage_status(const unsigned char *s, int n)
{
    CostdbStatus st;
    return strlen((const char *)s) == (size_t)n &&
           costdb_status_parse((const char *)s, &st) == 0 && st != COSTDB_STATUS_OK;
}

/* memory: the sweep's available_memory (schema 15, stage_cost_sweep), in
 * the place of a NULL in the column; < 0: none. */
static int cost_kind(sqlite3_stmt *st, int fast, int64_t memory, CostdbStageCost *c)
{
    sqlite3_value *x = sqlite3_column_value(st, 7);
    const unsigned char *s = NULL;
    int n = 0;
    if (sqlite3_value_type(x) == SQLITE_TEXT) {
        n = sqlite3_value_bytes(x);
        s = sqlite3_value_text(x);
    }
    /* 'oom': read as 'ok' is, its column's seconds the unfit_cost */
    int oom = s && n == 3 && !memcmp(s, "oom", 3);
    int ok = s && n == 2 && !memcmp(s, "ok", 2); /* no other status, by its bytes */
    if (s && !oom && !ok && is_no_stage_status(s, n))
        return COST_NO_STAGE;
    if (!fast || !s || (!oom && !ok))
        return COST_CHECK;
    {
        int64_t v[4];
        if (!cost_ok(st, 1, 0, &c->compute_cost) || !int_in(st, 2, 0, COSTDB_MAX_BYTES, &v[0]) ||
            !(sqlite3_column_type(st, 3) == SQLITE_NULL && memory >= 0
                  ? (v[1] = memory, 1) : int_in(st, 3, 0, COSTDB_MAX_BYTES, &v[1])) ||
            !int_in(st, 4, 0, COSTDB_MAX_BYTES, &v[2]) ||
            !int_in(st, 5, 0, COSTDB_MAX_BYTES, &v[3]) || !cost_ok(st, 6, 1, &c->apply_cost) ||
            !cost_ok(st, 8, 1, &c->wgrad_cost))
            return COST_CHECK;
        c->unfit_cost = 0.0;
        if (oom) {
            c->unfit_cost = isfinite(c->compute_cost) && c->compute_cost > 0 ? c->compute_cost
                                                                              : 0.0;
            c->compute_cost = INFINITY;
        }
        c->peak_memory = v[0];
        c->available_memory = v[1];
        c->intermediate_size = v[2];
        c->initial_size = v[3];
    }
    return COST_OK;
}

/* The sweep's available_memory in stage_cost_sweep, in *memory when it is
 * an integer within bounds (else the rows that need it take the checked
 * path, which refuses them). */
static int sweep_memory(Costdb *db, int64_t sweep_id, int64_t *memory)
{
    static const char sql[] = "SELECT available_memory FROM stage_cost_sweep WHERE sweep_id = ?1";
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && !int_in(st, 0, 0, COSTDB_MAX_BYTES, memory))
        *memory = -1;
    rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
    cdb_release(st);
    return rc;
}

/* cost_kind for cost_table.c's reader; fast is decided on the first row
 * (the statement's declared types). */
typedef struct CostRead {
    int fast; /* -1: not yet */
    int nfast;
    int64_t memory;
} CostRead;

static int cost_row(void *ctx, Costdb *db, sqlite3_stmt *st, void *slot)
{
    CostRead *r = ctx;
    CostRow *c = slot;
    (void)db;
    if (r->fast < 0)
        r->fast = decls_match(st, cost_decls, r->nfast);
    c->kind = cost_kind(st, r->fast, r->memory, &c->f);
    /* the reader took the id from column 0, within 1 .. MAX_COST_IDS - 1 */
    c->f.cost_id = (uint32_t)sqlite3_column_int64(st, 0);
    return 0;
}

/* The sweep's cost rows by id; t->row NULL (with 0): ids that do not fit
 * the array, every entry checked. */
static int read_costs(Costdb *db, int64_t sweep_id, CdbCostTable *t)
{
    const char *sql = db->version >= 12 ? sql_costs : sql_costs_v11;
    CostRead r = {-1, db->version >= 12 ? 9 : 8, -1};
    int rc;
    memset(t, 0, sizeof *t);
    if (db->version >= 15 && (rc = sweep_memory(db, sweep_id, &r.memory)) < 0)
        return rc;
    rc = cdb_cost_table_read(db, sweep_id, sql, 0, MAX_COST_IDS - 1, sizeof(CostRow), cost_row,
                             &r, t);
    return rc > 0 ? 0 : rc; /* too sparse: an empty table */
}

/* A row the fast path does not clear: costdb_entries_get's own checks on
 * these columns, which refuse it with their message (or, should the fast
 * path be stricter than they are, read it: 0, or 1 for a row with a known
 * status other than ok, which the solver does not use). */
static int checked_row(Costdb *db, sqlite3_stmt *st, CostdbStageRow *r)
{
    int64_t *sizes[] = {&r->peak_memory, &r->available_memory, &r->intermediate_size,
                        &r->initial_size};
    char status[32];
    CostdbStatus stat;
    int rc, phase = 0;
    if ((rc = cdb_row_check(db, st)) < 0 ||
        (rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                          &r->start_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 1, r->start_layer, COSTDB_MAX_LAYERS - 1,
                          "(start_layer..COSTDB_MAX_LAYERS)", &r->end_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &r->submesh_index)) < 0 ||
        (rc = cdb_col_int(db, st, 3, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &r->config_index)) < 0 ||
        (rc = cdb_col_int(db, st, 4, 0, 1, NULL, &phase)) < 0)
        return rc;
    r->phase = phase ? COSTDB_BWD : COSTDB_FWD;
    if ((rc = cdb_cost_refs_check(db, st, -1, 7)) < 0 ||
        (rc = cdb_column_text(db, st, 11, status, sizeof status, "status")) < 0)
        return rc;
    if (costdb_status_parse(status, &stat) < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: entry with unknown status '%s'", db->path, status);
    if ((rc = cdb_col_cost(db, st, 5, &r->compute_cost)) < 0)
        return rc;
    for (int k = 0; k < 4; k++)
        if ((rc = cdb_col_range(db, st, 6 + k, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                                sizes[k])) < 0)
            return rc;
    if ((rc = cdb_col_cost_or_null(db, st, 10, &r->apply_cost)) < 0 ||
        (rc = cdb_col_cost_or_null(db, st, 12, &r->wgrad_cost)) < 0)
        return rc;
    r->unfit_cost = 0.0;
    if (stat == COSTDB_STATUS_OOM) {
        r->unfit_cost = isfinite(r->compute_cost) && r->compute_cost > 0 ? r->compute_cost : 0.0;
        r->compute_cost = INFINITY;
    }
    return stat != COSTDB_STATUS_OK && stat != COSTDB_STATUS_OOM;
}

/* An entry the fast path did not clear, read again through the view:
 * 0 and *r set, 1 (no stage: another known status, or the row is gone), or
 * the refusal. */
static int checked_entry(Costdb *db, int64_t sweep_id, sqlite3_stmt *entry, CostdbStageRow *r)
{
    sqlite3_stmt *st = NULL;
    const char *sql = db->version >= 12 ? sql_one_row : sql_one_row_v11;
    int rc;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_value(st, 2, sqlite3_column_value(entry, 2));
    sqlite3_bind_value(st, 3, sqlite3_column_value(entry, 0));
    sqlite3_bind_value(st, 4, sqlite3_column_value(entry, 1));
    sqlite3_bind_value(st, 5, sqlite3_column_value(entry, 3));
    sqlite3_bind_value(st, 6, sqlite3_column_value(entry, 4));
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 11) == SQLITE_NULL)
        rc = cdb_entry_without_costs(db, entry, 5);
    else if (rc == SQLITE_ROW) {
        memset(r, 0, sizeof *r);
        rc = checked_row(db, st, r);
    } else {
        rc = rc == SQLITE_DONE ? 1 : cdb_fail(db, rc, sql);
    }
    cdb_release(st);
    return rc;
}

/* checked_entry for the entry of a block's slot (schema 14). */
static int checked_slot(Costdb *db, int64_t sweep_id, const CdbBlock *b, int k, int64_t cost_id,
                        CostdbStageRow *r)
{
    sqlite3_stmt *st = NULL;
    int config = b->config_block * CDB_BLOCK_CONFIGS + k / 2;
    int rc;
    if ((rc = cdb_prepare(db, sql_one_row, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, b->submesh_index);
    sqlite3_bind_int(st, 3, b->start_layer);
    sqlite3_bind_int(st, 4, b->end_layer);
    sqlite3_bind_int(st, 5, config);
    sqlite3_bind_int(st, 6, k % 2);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 11) == SQLITE_NULL)
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table stage_entry, row (start_layer=%d,"
                     " end_layer=%d, submesh_index=%d, config_index=%d, phase=%d): its cost_id"
                     " %lld names no row of table stage_cost", db->path, b->start_layer,
                     b->end_layer, b->submesh_index, config, k % 2, (long long)cost_id);
    else if (rc == SQLITE_ROW) {
        memset(r, 0, sizeof *r);
        rc = checked_row(db, st, r);
    } else {
        rc = rc == SQLITE_DONE ? 1 : cdb_fail(db, rc, sql_one_row);
    }
    cdb_release(st);
    return rc;
}

/* Schema 14, a sweep whose entries are all in blocks (cost_table.c's
 * walk, each block checked by cdb_block_row), each slot's costs from the
 * table read before. */
/* A cost row's figures into the stage row r (an ok row's). */
static void row_costs(CostdbStageRow *r, const CostdbStageCost *c)
{
    r->compute_cost = c->compute_cost;
    r->apply_cost = c->apply_cost;
    r->wgrad_cost = c->wgrad_cost;
    r->unfit_cost = c->unfit_cost;
    r->peak_memory = c->peak_memory;
    r->available_memory = c->available_memory;
    r->intermediate_size = c->intermediate_size;
    r->initial_size = c->initial_size;
}

/* A row's figures, without its key. */
static void row_figures(CostdbStageCost *c, const CostdbStageRow *r)
{
    c->cost_id = 0; /* a row's copy: none told */
    c->compute_cost = r->compute_cost;
    c->apply_cost = r->apply_cost;
    c->wgrad_cost = r->wgrad_cost;
    c->unfit_cost = r->unfit_cost;
    c->peak_memory = r->peak_memory;
    c->available_memory = r->available_memory;
    c->intermediate_size = r->intermediate_size;
    c->initial_size = r->initial_size;
}

typedef struct SlotWalk {
    Costdb *db;
    int64_t sweep_id;
    int layers;
    const CdbCostTable *costs;
    CostdbStageRowFn fn;
    CostdbStageRunFn run;
    void *ctx;
    /* a block's figures read through the view (slot_pair), by config and
     * phase: they live until its run is handed over */
    CostdbStageCost own[CDB_BLOCK_CONFIGS][2];
} SlotWalk;

/* Slot k of block b: 1 with *f its figures (the cost table's, or *r's when
 * the slot took the checked path, r then the row read); 0 for none (an
 * empty slot, a known status other than ok and oom); or the refusal. */
static int slot_get(const SlotWalk *w, const CdbBlock *b, int k, CostdbStageRow *r,
                    const CostdbStageCost **f)
{
    Costdb *db = w->db;
    uint32_t v = cdb_block_slot(b, k);
    int64_t id = v / 2;
    const CostRow *c;
    int rc;
    if (!v)
        return 0;
    c = cdb_cost_table_at(w->costs, id);
    if (c && c->kind == COST_NO_STAGE)
        return 0;
    if (c && c->kind == COST_OK) {
        *f = &c->f;
        if (b->end_layer < w->layers)
            return 1; /* the layers check below passes for every slot of b */
        r->start_layer = b->start_layer;
        r->end_layer = b->end_layer;
        r->submesh_index = b->submesh_index;
        r->config_index = b->config_block * CDB_BLOCK_CONFIGS + k / 2;
        r->phase = k % 2 ? COSTDB_BWD : COSTDB_FWD;
        row_costs(r, &c->f);
    } else if ((rc = checked_slot(db, w->sweep_id, b, k, id, r)) != 0) {
        return rc < 0 ? rc : 0; /* > 0: a known status other than ok and oom */
    }
    if ((rc = cdb_entry_layers_check(db, COSTDB_ECORRUPT, w->sweep_id, w->layers, r->start_layer,
                                     r->end_layer, r->submesh_index, r->config_index,
                                     (int)r->phase)) < 0)
        return rc;
    return 1;
}

static int slot_row(void *ctx, const CdbBlock *b, int k, uint32_t v)
{
    SlotWalk *w = ctx;
    CostdbStageRow r;
    const CostdbStageCost *f = NULL;
    int rc = slot_get(w, b, k, &r, &f);
    (void)v;
    if (rc <= 0)
        return rc;
    if (f) { /* a slot of the cost table: its row */
        r.start_layer = b->start_layer;
        r.end_layer = b->end_layer;
        r.submesh_index = b->submesh_index;
        r.config_index = b->config_block * CDB_BLOCK_CONFIGS + k / 2;
        r.phase = k % 2 ? COSTDB_BWD : COSTDB_FWD;
        row_costs(&r, f);
    }
    return w->fn(w->ctx, &r);
}

/* The figures of a slot whose value is v when it names a cost row the fast
 * path cleared: slot_get's answer with nothing left to check when the
 * block is within the sweep's layers; else NULL (slot_get decides). lim:
 * the table's ids less one (cdb_cost_table_at's bounds, 1 .. n - 1, as one
 * unsigned compare), 0 when the block is not within the layers. */
static inline const CostdbStageCost *slot_fast(const CostRow *rows, size_t lim, uint32_t v)
{
    size_t id = v >> 1;
    return id - 1 < lim && rows[id].kind == COST_OK ? &rows[id].f : NULL;
}

/* Config k / 2 of a block whose slots are not both fast: slot_get on each,
 * in order; *f0 and *f1 its two phases' figures where both are stage rows
 * (those read through the view in own), else both NULL. 0 or the
 * refusal. */
static int slot_pair(const SlotWalk *w, const CdbBlock *b, int k, CostdbStageCost own[2],
                     const CostdbStageCost **f0, const CostdbStageCost **f1)
{
    CostdbStageRow r[2];
    const CostdbStageCost *f[2] = {NULL, NULL};
    int got[2] = {0, 0};
    *f0 = *f1 = NULL;
    for (int h = 0; h < 2 && k + h < b->nslots; h++) {
        if ((got[h] = slot_get(w, b, k + h, &r[h], &f[h])) < 0)
            return got[h];
        if (got[h] && !f[h]) { /* read through the view */
            row_figures(&own[h], &r[h]);
            f[h] = &own[h];
        }
    }
    if (got[0] && got[1]) {
        *f0 = f[0];
        *f1 = f[1];
    }
    return 0;
}

/* costdb_stage_pair_runs on a block: its configs' two slots (forward, then
 * backward) read in order, as slot_row reads them, and handed over as one
 * run, a config without both stage rows as NULL. A slot refused: the run
 * of the configs before it handed over first, then the refusal (as a
 * walk pair by pair would end). */
static int block_pairs(void *ctx, const CdbBlock *b)
{
    SlotWalk *w = ctx;
    const CostdbStageCost *f0[CDB_BLOCK_CONFIGS], *f1[CDB_BLOCK_CONFIGS];
    CostdbStageKey key = {b->start_layer, b->end_layer, b->submesh_index,
                          b->config_block * CDB_BLOCK_CONFIGS};
    const CostRow *rows = (const CostRow *)(const void *)w->costs->row; /* elem: a CostRow */
    size_t lim = b->end_layer < w->layers && w->costs->n ? w->costs->n - 1 : 0;
    const unsigned char *s = b->costs;
    int n = (b->nslots + 1) / 2, rc = 0, got, k;
    for (k = 0; k < n; k++, s += 2 * CDB_SLOT_BYTES) {
        /* both slots' values, decoded as cdb_block_slot decodes them */
        uint32_t v0 = (uint32_t)s[0] << 16 | (uint32_t)s[1] << 8 | s[2];
        uint32_t v1 = 2 * k + 1 < b->nslots ? (uint32_t)s[3] << 16 | (uint32_t)s[4] << 8 | s[5]
                                            : 0;
        f0[k] = slot_fast(rows, lim, v0);
        f1[k] = slot_fast(rows, lim, v1);
        if (!(f0[k] && f1[k]) && (rc = slot_pair(w, b, 2 * k, w->own[k], &f0[k], &f1[k])) < 0)
            break;
    }
    if (k > 0 && (got = w->run(w->ctx, &key, k, f0, f1)) != 0)
        return got;
    return rc;
}

/* costdb_stage_pairs through costdb_stage_pair_runs: each run's entries
 * handed over one by one. */
typedef struct PairOfRun {
    CostdbStagePairFn fn;
    void *ctx;
} PairOfRun;

static int pairs_of_run(void *ctx, const CostdbStageKey *first, int n,
                        const CostdbStageCost *const *fwd, const CostdbStageCost *const *bwd)
{
    const PairOfRun *a = ctx;
    CostdbStageKey key = *first;
    int rc;
    for (int k = 0; k < n; k++)
        if (fwd[k] && bwd[k]) {
            key.config_index = first->config_index + k;
            if ((rc = a->fn(a->ctx, &key, fwd[k], bwd[k])) != 0)
                return rc;
        }
    return 0;
}

/* costdb_stage_pair_runs on a stream of rows: the previous row kept and
 * paired with the next one of the same key (the rows come in key order,
 * phase last: the forward, then the backward), each pair a run of one; a
 * lone phase is no pair. */
typedef struct RowPairs {
    CostdbStageRunFn fn;
    void *ctx;
    CostdbStageRow prev;
    int have_prev;
} RowPairs;

static int same_key(const CostdbStageRow *a, const CostdbStageRow *b)
{
    return a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
           a->submesh_index == b->submesh_index && a->config_index == b->config_index;
}

static int row_pair(void *ctx, const CostdbStageRow *r)
{
    RowPairs *c = ctx;
    if (c->have_prev && same_key(&c->prev, r)) {
        CostdbStageKey key = {r->start_layer, r->end_layer, r->submesh_index, r->config_index};
        CostdbStageCost f[2];
        const CostdbStageCost *fwd = &f[0], *bwd = &f[1];
        row_figures(&f[0], &c->prev);
        row_figures(&f[1], r);
        c->have_prev = 0;
        return c->fn(c->ctx, &key, 1, &fwd, &bwd);
    }
    c->prev = *r;
    c->have_prev = 1;
    return 0;
}

static int rows_v7(Costdb *db, int64_t sweep_id, CostdbStageRowFn fn, void *ctx)
{
    sqlite3_stmt *st = NULL;
    CostdbStageRow r;
    int rc;
    if ((rc = cdb_prepare(db, sql_rows_v7, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        memset(&r, 0, sizeof r);
        if ((rc = checked_row(db, st, &r)) < 0)
            goto out;
        if (rc == 0 && (rc = fn(ctx, &r)) != 0)
            goto out;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_rows_v7);
out:
    cdb_release(st);
    return rc;
}

/* costdb_stage_rows (run NULL) or costdb_stage_pair_runs (run set, fn
 * unused). */
static int stage_walk(Costdb *db, int64_t sweep_id, CostdbStageRowFn fn, CostdbStageRunFn run,
                      void *ctx)
{
    sqlite3_stmt *st = NULL;
    CostdbStageRow r;
    CdbCostTable costs;
    RowPairs rp = {run, ctx, {0}, 0};
    int rc, fast, layers = COSTDB_MAX_LAYERS;
    if (!db || !(fn || run))
        return COSTDB_EINVAL;
    if (run) { /* the row paths: rows paired as they come */
        fn = row_pair;
        ctx = &rp;
    }
    if (db->version < 8)
        return rows_v7(db, sweep_id, fn, ctx);
    /* layer indices index the sweep's layers */
    if ((rc = cdb_sweep_layers(db, sweep_id, &layers)) < 0 ||
        (rc = read_costs(db, sweep_id, &costs)) < 0)
        return rc;
    /* schema 14: entries in blocks only (approf's writer), else every
     * entry through the view stage_entry in key order */
    if (db->version >= 14 && (rc = cdb_entry_rows_any(db, sweep_id)) <= 0) {
        SlotWalk *w = rc == 0 ? malloc(sizeof *w) : NULL; /* its own figures: 9 kB */
        if (rc == 0 && !w)
            rc = cdb_err(db, COSTDB_ENOMEM, "%s: out of memory reading stage costs", db->path);
        if (rc == 0) {
            *w = (SlotWalk){db, sweep_id, layers, &costs, fn, run, run ? rp.ctx : ctx, {{{0}}}};
            rc = run ? cdb_entry_blocks_each(db, sweep_id, block_pairs, w)
                     : cdb_entry_blocks_walk(db, sweep_id, slot_row, w);
        }
        free(w);
        cdb_cost_table_free(&costs);
        return rc;
    }
    if ((rc = cdb_prepare(db, sql_entries, &st)) < 0) {
        cdb_cost_table_free(&costs);
        return rc;
    }
    sqlite3_bind_int64(st, 1, sweep_id);
    /* schema 14's view stage_entry declares no types; int_in takes
     * integers only, as cdb_row_check would */
    fast = db->version >= 14 || decls_match(st, entry_decls, 6);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t v[6];
        const CostRow *c = NULL;
        if (fast && int_in(st, 5, 1, INT64_MAX, &v[5]))
            c = cdb_cost_table_at(&costs, v[5]);
        if (c && c->kind == COST_NO_STAGE)
            continue;
        if (c && c->kind == COST_OK && int_in(st, 0, 0, COSTDB_MAX_LAYERS - 1, &v[0]) &&
            int_in(st, 1, v[0], COSTDB_MAX_LAYERS - 1, &v[1]) &&
            int_in(st, 2, 0, COSTDB_MAX_INDEX - 1, &v[2]) &&
            int_in(st, 3, 0, COSTDB_MAX_INDEX - 1, &v[3]) && int_in(st, 4, 0, 1, &v[4])) {
            r.start_layer = (int)v[0];
            r.end_layer = (int)v[1];
            r.submesh_index = (int)v[2];
            r.config_index = (int)v[3];
            r.phase = v[4] ? COSTDB_BWD : COSTDB_FWD;
            row_costs(&r, &c->f);
        } else if ((rc = checked_entry(db, sweep_id, st, &r)) < 0) {
            goto out;
        } else if (rc > 0) {
            continue; /* a known status other than ok and oom */
        }
        if ((rc = cdb_entry_layers_check(db, COSTDB_ECORRUPT, sweep_id, layers, r.start_layer,
                                         r.end_layer, r.submesh_index, r.config_index,
                                         (int)r.phase)) < 0 ||
            (rc = fn(ctx, &r)) != 0)
            goto out;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_entries);
out:
    cdb_release(st);
    cdb_cost_table_free(&costs);
    return rc;
}

int costdb_stage_rows(Costdb *db, int64_t sweep_id, CostdbStageRowFn fn, void *ctx)
{
    return fn ? stage_walk(db, sweep_id, fn, NULL, ctx) : COSTDB_EINVAL;
}

int costdb_stage_pair_runs(Costdb *db, int64_t sweep_id, CostdbStageRunFn fn, void *ctx)
{
    return fn ? stage_walk(db, sweep_id, NULL, fn, ctx) : COSTDB_EINVAL;
}

int costdb_stage_pairs(Costdb *db, int64_t sweep_id, CostdbStagePairFn fn, void *ctx)
{
    PairOfRun a = {fn, ctx};
    return fn ? stage_walk(db, sweep_id, NULL, pairs_of_run, &a) : COSTDB_EINVAL;
}
