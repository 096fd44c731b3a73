/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placements: the ShardingSpec of every parameter, input and output of a
 * profiled stage (schema 3, schemas/003_placement_sets.sql). Texts are
 * interned (placement_text), a sweep's tensors are stored once
 * (placement_tensor), and each stage entry is one placement_set row whose
 * items are a JSON array of [role, tensor_index, spec_id]. This file is the
 * only code that reads or writes those tables; every tool goes through
 * costdb_placements_put/get/list and sees the CostdbPlacement rows of
 * schema 1.
 *
 * The writer keeps, per connection, the ids of texts it has interned and
 * the tensors of the current sweep it has stored; both are dropped on any
 * rollback (cdb_placement_cache_clear), since a rolled-back insert leaves a
 * cached id pointing nowhere.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "fnv.h"

static const char *const role_names[] = {"param", "input", "output"};

/* The stage's rows, owner mapping included (schemas/README.md): the
 * placements of a variant are those of the lowest-index config of its
 * (logical mesh, force flag, memory level) group. The queries read the
 * tables, not the `placement` view (a view using JSON functions is refused
 * under trusted_schema=OFF). */
/* One row per item of the stages' sets, with the texts looked up (LEFT
 * JOIN: a missing text reads as NULL, refused by placements_get_row). */
#define PLACEMENT_ITEMS                                                                     \
    "SELECT s.start_layer AS start_layer, s.end_layer AS end_layer,"                        \
    " s.submesh_index AS submesh_index, s.config_index AS config_index,"                    \
    " json_extract(j.value, '$[1]') AS ti, n.text AS name,"                                \
    " CASE json_extract(j.value, '$[0]') WHEN 0 THEN 'param' WHEN 1 THEN 'input'"          \
    " WHEN 2 THEN 'output' END AS role, sh.text AS shape, dt.text AS dtype, sp.text AS spec,"\
    " json_extract(j.value, '$[0]') AS r"                                                  \
    " FROM placement_set s JOIN json_each(s.items) j"                                      \
    " LEFT JOIN placement_tensor t ON t.sweep_id = s.sweep_id"                             \
    "   AND t.tensor_index = json_extract(j.value, '$[1]')"                                \
    " LEFT JOIN placement_text n ON n.id = t.name_id"                                      \
    " LEFT JOIN placement_text sh ON sh.id = t.shape_id"                                   \
    " LEFT JOIN placement_text dt ON dt.id = t.dtype_id"                                   \
    " LEFT JOIN placement_text sp ON sp.id = json_extract(j.value, '$[2]')"

static const char sql_placement_get[] =
    "SELECT start_layer, end_layer, submesh_index, ?5, ti, name, role, shape, dtype, spec"
    " FROM (" PLACEMENT_ITEMS
    " WHERE s.sweep_id = ?1 AND s.start_layer = ?2 AND s.end_layer = ?3"
    " AND s.submesh_index = ?4 AND s.config_index = coalesce(("
    "   SELECT o.config_index FROM sweep_config c JOIN sweep_config o"
    "   ON o.sweep_id = c.sweep_id AND o.submesh_index = c.submesh_index"
    "   AND o.logical_a = c.logical_a AND o.logical_b = c.logical_b"
    "   AND o.force_batch_dim IS c.force_batch_dim AND o.memory_level = c.memory_level"
    "   WHERE c.sweep_id = ?1 AND c.submesh_index = ?4 AND c.config_index = ?5"
    "   ORDER BY o.config_index LIMIT 1), ?5)"
    ") ORDER BY r, ti";
static const char sql_placement_list[] =
    "SELECT start_layer, end_layer, submesh_index, config_index, ti, name, role, shape, dtype,"
    " spec FROM (" PLACEMENT_ITEMS " WHERE s.sweep_id = ?1"
    ") ORDER BY submesh_index, start_layer, end_layer, config_index, r, ti";
static const char sql_text_find[] = "SELECT id FROM placement_text WHERE text = ?1";
static const char sql_text_insert[] = "INSERT INTO placement_text (text) VALUES (?1)";
static const char sql_tensor_find[] =
    "SELECT 1 FROM placement_tensor WHERE sweep_id = ?1 AND tensor_index = ?2";
static const char sql_tensor_insert[] =
    "INSERT INTO placement_tensor (sweep_id, tensor_index, name_id, shape_id, dtype_id)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char sql_set_insert[] =
    "INSERT OR REPLACE INTO placement_set (sweep_id, start_layer, end_layer, submesh_index,"
    " config_index, items) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/* ---- the connection's caches -------------------------------------------- */

struct CdbPlacementCache {
    struct {
        char *text;
        int64_t id;
    } *texts;                       /* open addressing, cap a power of two */
    size_t n_texts, cap_texts;
    int64_t sweep_id;               /* whose tensors known[] describes */
    unsigned char *known;
    size_t n_known;
};

void cdb_placement_cache_clear(Costdb *db)
{
    CdbPlacementCache *c = db ? db->placement_cache : NULL;
    if (!c)
        return;
    for (size_t i = 0; i < c->cap_texts; i++)
        free(c->texts[i].text);
    free(c->texts);
    free(c->known);
    free(c);
    db->placement_cache = NULL;
}

static uint64_t text_hash(const char *s)
{
    return costdb_fnv1a_str(COSTDB_FNV_BASIS_V1, s);
}

static CdbPlacementCache *cache_of(Costdb *db)
{
    if (!db->placement_cache)
        db->placement_cache = calloc(1, sizeof(CdbPlacementCache));
    return db->placement_cache;
}

/* The cached id of text, or 0. */
static int64_t cached_text(CdbPlacementCache *c, const char *text)
{
    if (!c || !c->cap_texts)
        return 0;
    size_t k = (size_t)text_hash(text) & (c->cap_texts - 1);
    while (c->texts[k].text) {
        if (!strcmp(c->texts[k].text, text))
            return c->texts[k].id;
        k = (k + 1) & (c->cap_texts - 1);
    }
    return 0;
}

static void cache_text(CdbPlacementCache *c, const char *text, int64_t id)
{
    if (!c)
        return;
    if ((c->n_texts + 1) * 2 > c->cap_texts) {
        size_t ncap = c->cap_texts ? c->cap_texts * 2 : 256;
        __typeof__(c->texts) nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return;  /* a cache: a miss costs a lookup */
        for (size_t i = 0; i < c->cap_texts; i++) {
            if (!c->texts[i].text)
                continue;
            size_t k = (size_t)text_hash(c->texts[i].text) & (ncap - 1);
            while (nt[k].text)
                k = (k + 1) & (ncap - 1);
            nt[k] = c->texts[i];
        }
        free(c->texts);
        c->texts = nt;
        c->cap_texts = ncap;
    }
    char *copy = strdup(text);
    if (!copy)
        return;
    size_t k = (size_t)text_hash(text) & (c->cap_texts - 1);
    while (c->texts[k].text)
        k = (k + 1) & (c->cap_texts - 1);
    c->texts[k].text = copy;
    c->texts[k].id = id;
    c->n_texts++;
}

static int tensor_known(CdbPlacementCache *c, int64_t sweep_id, int t)
{
    return c && c->sweep_id == sweep_id && t >= 0 && (size_t)t < c->n_known && c->known[t];
}

static void remember_tensor(CdbPlacementCache *c, int64_t sweep_id, int t)
{
    if (!c || t < 0)
        return;
    if (c->sweep_id != sweep_id) {
        free(c->known);
        c->known = NULL;
        c->n_known = 0;
        c->sweep_id = sweep_id;
    }
    if ((size_t)t >= c->n_known) {
        size_t n = (size_t)t + 1 > 2 * c->n_known ? (size_t)t + 1 : 2 * c->n_known;
        unsigned char *k = realloc(c->known, n);
        if (!k)
            return;
        memset(k + c->n_known, 0, n - c->n_known);
        c->known = k;
        c->n_known = n;
    }
    c->known[t] = 1;
}

/* ---- writing -------------------------------------------------------------- */

static int intern_text(Costdb *db, const char *text, int64_t *id)
{
    CdbPlacementCache *c = cache_of(db);
    sqlite3_stmt *st = NULL;
    int rc;
    if ((*id = cached_text(c, text)) != 0)
        return 0;
    if ((rc = cdb_prepare(db, sql_text_find, &st)) < 0)
        return rc;
    cdb_bind_text(st, 1, text, 0);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        cdb_release(st);
    } else {
        cdb_release(st);
        if (rc != SQLITE_DONE)
            return cdb_fail(db, rc, sql_text_find);
        if ((rc = cdb_prepare(db, sql_text_insert, &st)) < 0)
            return rc;
        cdb_bind_text(st, 1, text, 0);
        rc = cdb_exec_stmt(db, st, sql_text_insert);
        cdb_release(st);
        if (rc < 0)
            return rc;
        *id = sqlite3_last_insert_rowid(db->sql);
    }
    cache_text(c, text, *id);
    return 0;
}

static int ensure_tensor(Costdb *db, int64_t sweep_id, const CostdbPlacement *p)
{
    CdbPlacementCache *c = cache_of(db);
    sqlite3_stmt *st = NULL;
    int64_t name, shape, dtype;
    int rc;
    if (tensor_known(c, sweep_id, p->tensor_index))
        return 0;
    if ((rc = cdb_prepare(db, sql_tensor_find, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, p->tensor_index);
    rc = sqlite3_step(st);
    cdb_release(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return cdb_fail(db, rc, sql_tensor_find);
    if (rc == SQLITE_DONE) {
        if ((rc = intern_text(db, p->tensor_name, &name)) < 0 ||
            (rc = intern_text(db, p->shape, &shape)) < 0 ||
            (rc = intern_text(db, p->dtype, &dtype)) < 0)
            return rc;
        if ((rc = cdb_prepare(db, sql_tensor_insert, &st)) < 0)
            return rc;
        sqlite3_bind_int64(st, 1, sweep_id);
        sqlite3_bind_int(st, 2, p->tensor_index);
        sqlite3_bind_int64(st, 3, name);
        sqlite3_bind_int64(st, 4, shape);
        sqlite3_bind_int64(st, 5, dtype);
        rc = cdb_exec_stmt(db, st, sql_tensor_insert);
        cdb_release(st);
        if (rc < 0)
            return rc;
    }
    remember_tensor(c, sweep_id, p->tensor_index);
    return 0;
}

static int role_code(const char *role)
{
    for (int r = 0; r < 3; r++)
        if (!strcmp(role, role_names[r]))
            return r;
    return -1;
}

/* Order of rows inside one call: by stage key, then role, tensor, and the
 * position in the call (a later row for the same tensor replaces it). */
typedef struct SortRow {
    const CostdbPlacement *p;
    int role;
    size_t pos;
} SortRow;

static int cmp_rows(const void *a, const void *b)
{
    const SortRow *x = a, *y = b;
    int k1[6] = {x->p->start_layer, x->p->end_layer, x->p->submesh_index, x->p->config_index,
                 x->role, x->p->tensor_index};
    int k2[6] = {y->p->start_layer, y->p->end_layer, y->p->submesh_index, y->p->config_index,
                 y->role, y->p->tensor_index};
    for (int i = 0; i < 6; i++)
        if (k1[i] != k2[i])
            return k1[i] < k2[i] ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int same_stage(const CostdbPlacement *a, const CostdbPlacement *b)
{
    return a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
           a->submesh_index == b->submesh_index && a->config_index == b->config_index;
}

/* Writes v in decimal at p (as %lld does); returns the end. */
static char *put_int(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do
        tmp[n++] = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *p++ = '-';
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Appends ",[r,t,s]" (no comma after the opening bracket) to buf, grown as
 * needed; the text "%s[%d,%d,%lld]" would give, without printf per item
 * (a sweep writes hundreds of thousands). */
static int append_item(char **buf, size_t *len, size_t *cap, int r, int t, int64_t s)
{
    char *p;
    if (*len + 80 > *cap) {
        size_t nc = *cap ? *cap * 2 : 4096;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return COSTDB_ENOMEM;
        *buf = nb;
        *cap = nc;
    }
    p = *buf + *len;
    if (*len > 1)
        *p++ = ',';
    *p++ = '[';
    p = put_int(p, r);
    *p++ = ',';
    p = put_int(p, t);
    *p++ = ',';
    p = put_int(p, s);
    *p++ = ']';
    *len = (size_t)(p - *buf);
    return 0;
}

static int put_stage(Costdb *db, int64_t sweep_id, const SortRow *rows, size_t n, char **buf,
                     size_t *cap)
{
    sqlite3_stmt *st = NULL;
    size_t len = 1;
    int rc;
    (*buf)[0] = '[';
    for (size_t i = 0; i < n; i++) {
        int64_t spec;
        /* of rows for the same (role, tensor), the last one given wins */
        if (i + 1 < n && rows[i + 1].role == rows[i].role &&
            rows[i + 1].p->tensor_index == rows[i].p->tensor_index)
            continue;
        if ((rc = ensure_tensor(db, sweep_id, rows[i].p)) < 0 ||
            (rc = intern_text(db, rows[i].p->sharding_spec, &spec)) < 0 ||
            (rc = append_item(buf, &len, cap, rows[i].role, rows[i].p->tensor_index, spec)) < 0)
            return rc;
    }
    (*buf)[len++] = ']';
    if ((rc = cdb_prepare(db, sql_set_insert, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, rows[0].p->start_layer);
    sqlite3_bind_int(st, 3, rows[0].p->end_layer);
    sqlite3_bind_int(st, 4, rows[0].p->submesh_index);
    sqlite3_bind_int(st, 5, rows[0].p->config_index);
    sqlite3_bind_text(st, 6, *buf, (int)len, SQLITE_STATIC);
    rc = cdb_exec_stmt(db, st, sql_set_insert);
    cdb_release(st);
    return rc;
}

int costdb_placements_put(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, size_t n)
{
    SortRow *rows = NULL;
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    if (!db || (n && !p))
        return COSTDB_EINVAL;
    if (!n)
        return 0;
    rows = malloc(n * sizeof *rows);
    if (!rows)
        return COSTDB_ENOMEM;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_check_text(db, p[i].tensor_name, sizeof p[i].tensor_name, "tensor_name")) < 0 ||
            (rc = cdb_check_text(db, p[i].role, sizeof p[i].role, "role")) < 0 ||
            (rc = cdb_check_text(db, p[i].shape, sizeof p[i].shape, "shape")) < 0 ||
            (rc = cdb_check_text(db, p[i].dtype, sizeof p[i].dtype, "dtype")) < 0 ||
            (rc = cdb_check_text(db, p[i].sharding_spec, sizeof p[i].sharding_spec,
                                 "sharding_spec")) < 0)
            break;
        rows[i].p = &p[i];
        rows[i].pos = i;
        rows[i].role = role_code(p[i].role);
        if (rows[i].role < 0)
            rc = cdb_err(db, COSTDB_ECONSTRAINT, "placement %zu: role '%.20s' is not param, "
                         "input or output", i, p[i].role);
        else if (p[i].tensor_index < 0)
            rc = cdb_err(db, COSTDB_ECONSTRAINT, "placement %zu: tensor_index %d is negative", i,
                         p[i].tensor_index);
    }
    if (rc < 0) {
        free(rows);
        return rc;
    }
    /* a sweep hands its rows over already in this order: check before sorting */
    for (size_t i = 1; i < n; i++)
        if (cmp_rows(&rows[i - 1], &rows[i]) > 0) {
            qsort(rows, n, sizeof *rows, cmp_rows);
            break;
        }
    cap = 4096;
    buf = malloc(cap);
    if (!buf) {
        free(rows);
        return COSTDB_ENOMEM;
    }
    if ((rc = cdb_txn_enter(db)) < 0) {
        free(rows);
        free(buf);
        return rc;
    }
    for (size_t i = 0, j; i < n && rc >= 0; i = j) {
        for (j = i + 1; j < n && same_stage(rows[j].p, rows[i].p); j++)
            ;
        rc = put_stage(db, sweep_id, rows + i, j - i, &buf, &cap);
    }
    free(rows);
    free(buf);
    return cdb_txn_leave(db, rc);
}

/* ---- reading -------------------------------------------------------------- */

static int placements_get_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbPlacement *p = row;
    int rc;
    static const char *const fields[] = {"tensor_name", "role", "shape", "dtype",
                                         "sharding_spec"};
    for (int c = 5; c <= 9; c++)
        if (sqlite3_column_type(st, c) == SQLITE_NULL)
            return cdb_err(db, COSTDB_ECORRUPT, "%s: placement of tensor %d (layers %d-%d, "
                           "submesh %d): %s refers to a missing text, tensor or role",
                           db->path, sqlite3_column_int(st, 4), sqlite3_column_int(st, 0),
                           sqlite3_column_int(st, 1), sqlite3_column_int(st, 2), fields[c - 5]);
    p->start_layer = sqlite3_column_int(st, 0);
    p->end_layer = sqlite3_column_int(st, 1);
    p->submesh_index = sqlite3_column_int(st, 2);
    p->config_index = sqlite3_column_int(st, 3);
    p->tensor_index = sqlite3_column_int(st, 4);
    if ((rc = cdb_column_text(db, st, 5, p->tensor_name, sizeof p->tensor_name, "tensor_name")) < 0 ||
        (rc = cdb_column_text(db, st, 6, p->role, sizeof p->role, "role")) < 0 ||
        (rc = cdb_column_text(db, st, 7, p->shape, sizeof p->shape, "shape")) < 0 ||
        (rc = cdb_column_text(db, st, 8, p->dtype, sizeof p->dtype, "dtype")) < 0 ||
        (rc = cdb_column_text(db, st, 9, p->sharding_spec, sizeof p->sharding_spec, "sharding_spec")) < 0)
        return rc;
    return 0;
}

int costdb_placements_get(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                          int config, CostdbPlacement **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_placement_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, start);
    sqlite3_bind_int(st, 3, end);
    sqlite3_bind_int(st, 4, submesh);
    sqlite3_bind_int(st, 5, config);
    return cdb_collect(db, st, sql_placement_get, sizeof **out, placements_get_row, (void **)out, n);
}

int costdb_placements_list(Costdb *db, int64_t sweep_id, CostdbPlacement **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_placement_list, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    return cdb_collect(db, st, sql_placement_list, sizeof **out, placements_get_row, (void **)out, n);
}
