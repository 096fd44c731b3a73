/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placements: the ShardingSpec of every parameter, input and output of a
 * profiled stage (schemas 3, 6 and 7; schemas/README.md). Texts are
 * interned (placement_text), a sweep's tensors are stored once
 * (placement_tensor), and each stage entry is one placement_set row whose
 * items (role, tensor_index, spec_id) are a JSON array of integers of its
 * own or, since schema 7, a reference to a list shared in placement_tail
 * (the forms below; their encodings are placement_codec.c's). This file is
 * the only code that reads or writes those tables; every tool goes through
 * costdb_placements_put/get/list and sees the CostdbPlacement rows of
 * schema 1.
 *
 * The writer keeps, per connection, the ids of texts and shared lists it
 * has interned and the tensors of the current sweep it has stored; all are
 * dropped on any rollback (cdb_placement_cache_clear), since a rolled-back
 * insert leaves a cached id pointing nowhere.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "fnv.h"
#include "grow.h"
#include "placement_codec.h"

static const char *const role_names[] = {"param", "input", "output"};

/* Reading (schemas/README.md, "placement"): the items of a set come in two
 * encodings, or as a schema-7 reference to a shared list in the second,
 * all read here, in C (a view decoding them with JSON and window
 * functions in SQL serves the sqlite3 shell, 9x slower on a large sweep):
 *   schema 3: [[role, tensor_index, spec_id], ...]
 *   schema 6: [n_param, n_input, n_output, d1, spec1, d2, spec2, ...], the
 *             items sorted by role then tensor, tensor_index_k =
 *             d1 + ... + dk (about half the text: a sweep's placements are
 *             most of its database).
 *   schema 7: a reference (items '', first_tensor, tail_id) to a shared
 *             list in placement_tail in schema 6's encoding with its first
 *             delta 0: tensor k is first_tensor + d2 + ... + dk.
 * A variant's placements are those of the lowest-index config of its
 * (logical mesh, force flag, memory level) group. */
#define SET_OWNER                                                                          \
    "   SELECT o.config_index FROM sweep_config c JOIN sweep_config o"                        \
    "   ON o.sweep_id = c.sweep_id AND o.submesh_index = c.submesh_index"                     \
    "   AND o.logical_a = c.logical_a AND o.logical_b = c.logical_b"                          \
    "   AND o.force_batch_dim IS c.force_batch_dim AND o.memory_level = c.memory_level"       \
    "   WHERE c.sweep_id = ?1 AND c.submesh_index = ?4 AND c.config_index = ?5"               \
    "   ORDER BY o.config_index LIMIT 1"
#define SET_GET_WHERE                                                                      \
    " WHERE s.sweep_id = ?1 AND s.start_layer = ?2 AND s.end_layer = ?3"                     \
    " AND s.submesh_index = ?4 AND s.config_index = coalesce((" SET_OWNER "), ?5)"
#define SET_LIST_WHERE " WHERE s.sweep_id = ?1 ORDER BY s.submesh_index, s.start_layer, s.end_layer, s.config_index"
/* Columns: the key, items, first_tensor, tail_id and the shared list;
 * files before schema 7 (read-only readers do not migrate) have no
 * references. */
#define SET_COLS7                                                                          \
    "SELECT s.start_layer, s.end_layer, s.submesh_index, s.config_index, s.items,"        \
    " s.first_tensor, s.tail_id, t.items FROM placement_set s"                          \
    " LEFT JOIN placement_tail t ON t.id = s.tail_id"
#define SET_COLS6                                                                          \
    "SELECT s.start_layer, s.end_layer, s.submesh_index, s.config_index, s.items,"        \
    " NULL, NULL, NULL FROM placement_set s"
static const char sql_set_get[] = SET_COLS7 SET_GET_WHERE;
static const char sql_set_get6[] = SET_COLS6 SET_GET_WHERE;
static const char sql_set_list[] = SET_COLS7 SET_LIST_WHERE;
static const char sql_set_list6[] = SET_COLS6 SET_LIST_WHERE;
static const char sql_tensor_all[] =
    "SELECT tensor_index, name_id, shape_id, dtype_id FROM placement_tensor"
    " WHERE sweep_id = ?1 ORDER BY tensor_index";
static const char sql_text_all[] = "SELECT id, text FROM placement_text ORDER BY id";
static const char sql_text_find[] = "SELECT id FROM placement_text WHERE text = ?1";
static const char sql_text_insert[] = "INSERT INTO placement_text (text) VALUES (?1)";
static const char sql_tensor_find[] =
    "SELECT 1 FROM placement_tensor WHERE sweep_id = ?1 AND tensor_index = ?2";
static const char sql_tensor_insert[] =
    "INSERT INTO placement_tensor (sweep_id, tensor_index, name_id, shape_id, dtype_id)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char sql_set_insert[] =
    "INSERT OR REPLACE INTO placement_set (sweep_id, start_layer, end_layer, submesh_index,"
    " config_index, items, first_tensor, tail_id) VALUES (?1, ?2, ?3, ?4, ?5, '', ?6, ?7)";
static const char sql_tail_find[] = "SELECT id FROM placement_tail WHERE hash = ?1 AND items = ?2";
static const char sql_tail_insert[] = "INSERT INTO placement_tail (hash, items) VALUES (?1, ?2)";

/* ---- the connection's caches -------------------------------------------- */

/* Text -> id, open addressing (cap a power of two); bytes: the texts and
 * their slots (two per text at most half full). */
typedef struct TextMap {
    struct {
        char *text;
        int64_t id;
    } *e;
    size_t n, cap, bytes;
} TextMap;

/* A map that would hold more than this starts again empty: a text it
 * forgot is found in its table (intern_in), so the ids are the same and
 * only the lookup costs more; the sweep's memory stays bounded whatever
 * the number of distinct placement lists. */
#define MAP_MAX_BYTES ((size_t)32 << 20)

struct CdbPlacementCache {
    TextMap texts;                  /* placement_text */
    TextMap tails;                  /* placement_tail */
    int64_t sweep_id;               /* whose tensors known[] describes */
    unsigned char *known;
    size_t n_known;
};

static void map_free(TextMap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->e[i].text);
    free(m->e);
}

void cdb_placement_cache_clear(Costdb *db)
{
    CdbPlacementCache *c = db ? db->placement_cache : NULL;
    if (!c)
        return;
    map_free(&c->texts);
    map_free(&c->tails);
    free(c->known);
    free(c);
    db->placement_cache = NULL;
}

/* The hash a shared list is stored under (schemas/README.md). */
static uint64_t tail_hash(const char *s)
{
    return cdb_tail_hash(s);
}

/* The in-memory maps' hash (never stored, so free to differ from the
 * stored one). */
static uint64_t map_hash(const char *s)
{
    return cdb_mem_hash(0, s, strlen(s));
}

static CdbPlacementCache *cache_of(Costdb *db)
{
    if (!db->placement_cache)
        db->placement_cache = calloc(1, sizeof(CdbPlacementCache));
    return db->placement_cache;
}

/* The id of text (hash h) in m, or 0. */
static int64_t map_get(const TextMap *m, const char *text, uint64_t h)
{
    if (!m->cap)
        return 0;
    size_t k = (size_t)h & (m->cap - 1);
    while (m->e[k].text) {
        if (!strcmp(m->e[k].text, text))
            return m->e[k].id;
        k = (k + 1) & (m->cap - 1);
    }
    return 0;
}

/* Remembers text -> id; a cache: without memory, a later miss costs a
 * lookup. */
static void map_put(TextMap *m, const char *text, uint64_t h, int64_t id)
{
    size_t need = strlen(text) + 1 + 2 * sizeof *m->e;
    if (m->bytes + need > MAP_MAX_BYTES) {
        map_free(m);
        memset(m, 0, sizeof *m);
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        __typeof__(m->e) ne = calloc(ncap, sizeof *ne);
        if (!ne)
            return;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].text)
                continue;
            size_t k = (size_t)map_hash(m->e[i].text) & (ncap - 1);
            while (ne[k].text)
                k = (k + 1) & (ncap - 1);
            ne[k] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = ncap;
    }
    char *copy = strdup(text);
    if (!copy)
        return;
    size_t k = (size_t)h & (m->cap - 1);
    while (m->e[k].text)
        k = (k + 1) & (m->cap - 1);
    m->e[k].text = copy;
    m->e[k].id = id;
    m->n++;
    m->bytes += need;
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
    if (util_grow_zero((void **)&c->known, &c->n_known, (size_t)t + 1, 1) < 0)
        return;
    c->known[t] = 1;
}

/* ---- writing -------------------------------------------------------------- */

/* The id of text in a table of texts (found, or inserted, and remembered
 * in map): placement_text, found by its text, or placement_tail, found
 * by its hash and text (hashed: with_hash). */
static int intern_in(Costdb *db, TextMap *map, const char *sql_find, const char *sql_insert,
                     int with_hash, const char *text, size_t len, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    uint64_t mh = cdb_mem_hash(0, text, len), h; /* map_hash */
    int rc, at = with_hash ? 2 : 1;
    if (map && (*id = map_get(map, text, mh)) != 0)
        return 0;
    h = with_hash ? tail_hash(text) : 0;
    if ((rc = cdb_prepare(db, sql_find, &st)) < 0)
        return rc;
    if (with_hash)
        sqlite3_bind_int64(st, 1, (int64_t)h);
    cdb_bind_text(st, at, text, 0);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        cdb_release(st);
    } else {
        cdb_release(st);
        if (rc != SQLITE_DONE)
            return cdb_fail(db, rc, sql_find);
        if ((rc = cdb_prepare(db, sql_insert, &st)) < 0)
            return rc;
        if (with_hash)
            sqlite3_bind_int64(st, 1, (int64_t)h);
        cdb_bind_text(st, at, text, 0);
        rc = cdb_exec_stmt(db, st, sql_insert);
        cdb_release(st);
        if (rc < 0)
            return rc;
        *id = sqlite3_last_insert_rowid(db->sql);
    }
    if (map)
        map_put(map, text, mh, *id);
    return 0;
}

static int intern_text(Costdb *db, const char *text, int64_t *id)
{
    CdbPlacementCache *c = cache_of(db);
    return intern_in(db, c ? &c->texts : NULL, sql_text_find, sql_text_insert, 0, text,
                     strlen(text), id);
}

/* The last spec interned in one costdb_placements_put (its rows outlive
 * the call's ids: a rollback ends the call): a stage's rows, sorted by
 * role and tensor, often give the same spec in a row, which then costs a
 * comparison instead of a hash and a probe. */
typedef struct SpecMemo {
    const char *text;
    size_t len;
    int64_t id;
} SpecMemo;

/* intern_text of a spec of len bytes (checked by the caller). */
static int intern_spec(Costdb *db, SpecMemo *m, const char *text, size_t len, int64_t *id)
{
    CdbPlacementCache *c;
    int rc;
    if (m->text && m->len == len && !memcmp(m->text, text, len)) {
        *id = m->id;
        return 0;
    }
    c = cache_of(db);
    if ((rc = intern_in(db, c ? &c->texts : NULL, sql_text_find, sql_text_insert, 0, text, len,
                        id)) < 0)
        return rc;
    m->text = text;
    m->len = len;
    m->id = *id;
    return 0;
}

/* A shared items list (schema 7). */
static int intern_tail(Costdb *db, const char *items, int64_t *id)
{
    CdbPlacementCache *c = cache_of(db);
    return intern_in(db, c ? &c->tails : NULL, sql_tail_find, sql_tail_insert, 1, items,
                     strlen(items), id);
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
        if ((rc = cdb_check_text(db, p->tensor_name, sizeof p->tensor_name, "tensor_name")) < 0 ||
            (rc = cdb_check_text(db, p->shape, sizeof p->shape, "shape")) < 0 ||
            (rc = cdb_check_text(db, p->dtype, sizeof p->dtype, "dtype")) < 0 ||
            (rc = intern_text(db, p->tensor_name, &name)) < 0 ||
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

/* role_code of a role field of cap bytes when it holds a role name and its
 * NUL within them (so it needs no check of its own), else -1. */
static int role_code_in(const char *role, size_t cap)
{
    for (int r = 0; r < 3; r++) {
        size_t n = strlen(role_names[r]) + 1;
        if (n <= cap && !memcmp(role, role_names[r], n))
            return r;
    }
    return -1;
}

/* Order of rows inside one call: by stage key, then role, tensor, and the
 * position in the call (a later row for the same tensor replaces it). */
typedef struct SortRow {
    const CostdbPlacement *p;
    int role;
    size_t pos;
    size_t spec_len;              /* strlen of p->sharding_spec */
} SortRow;

#define CMP_KEY(a, b) do { if ((a) != (b)) return (a) < (b) ? -1 : 1; } while (0)

static int cmp_rows(const void *a, const void *b)
{
    const SortRow *x = a, *y = b;
    CMP_KEY(x->p->start_layer, y->p->start_layer);
    CMP_KEY(x->p->end_layer, y->p->end_layer);
    CMP_KEY(x->p->submesh_index, y->p->submesh_index);
    CMP_KEY(x->p->config_index, y->p->config_index);
    CMP_KEY(x->role, y->role);
    CMP_KEY(x->p->tensor_index, y->p->tensor_index);
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int same_stage(const CostdbPlacement *a, const CostdbPlacement *b)
{
    return a->start_layer == b->start_layer && a->end_layer == b->end_layer &&
           a->submesh_index == b->submesh_index && a->config_index == b->config_index;
}

/* One stage's set: its items in schema 6's encoding ([n_param, n_input,
 * n_output, d1, spec1, ...], tensor deltas) with the first delta 0 and
 * schema 13's repeats (cdb_items_encode), stored once in placement_tail and
 * referenced with the first tensor index (schema 7), built without printf
 * per item (a sweep writes hundreds of thousands). rows are sorted by role,
 * tensor; pairs has room for n. */
static int put_stage(Costdb *db, int64_t sweep_id, const SortRow *rows, size_t n, CdbPair *pairs,
                     char **buf, size_t *cap, SpecMemo *memo)
{
    sqlite3_stmt *st = NULL;
    size_t len, np = 0;
    int64_t count[3] = {0, 0, 0}, prev = -1, first = 0, tail = 0;
    int rc;
    for (size_t i = 0; i < n; i++) {
        int64_t spec;
        /* of rows for the same (role, tensor), the last one given wins */
        if (i + 1 < n && rows[i + 1].role == rows[i].role &&
            rows[i + 1].p->tensor_index == rows[i].p->tensor_index)
            continue;
        if ((rc = ensure_tensor(db, sweep_id, rows[i].p)) < 0 ||
            (rc = intern_spec(db, memo, rows[i].p->sharding_spec, rows[i].spec_len, &spec)) < 0)
            return rc;
        if (prev < 0)
            first = prev = rows[i].p->tensor_index;
        pairs[np++] = (CdbPair){rows[i].p->tensor_index - prev, spec};
        prev = rows[i].p->tensor_index;
        count[rows[i].role]++;
    }
    if ((rc = cdb_items_encode(count, pairs, np, buf, cap, &len)) < 0)
        return rc;
    if ((rc = intern_tail(db, *buf, &tail)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_set_insert, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, rows[0].p->start_layer);
    sqlite3_bind_int(st, 3, rows[0].p->end_layer);
    sqlite3_bind_int(st, 4, rows[0].p->submesh_index);
    sqlite3_bind_int(st, 5, rows[0].p->config_index);
    sqlite3_bind_int64(st, 6, first);
    sqlite3_bind_int64(st, 7, tail);
    rc = cdb_exec_stmt(db, st, sql_set_insert);
    cdb_release(st);
    return rc;
}

int costdb_placements_put(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, size_t n)
{
    SortRow *rows = NULL;
    CdbPair *pairs = NULL;
    SpecMemo memo = {NULL, 0, 0};
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
        /* name, shape and dtype are read (and checked: ensure_tensor) only
         * for a tensor the sweep does not hold yet; a sweep hands over
         * millions of rows, mostly of tensors already stored. A role that
         * is a role name with its NUL needs no check; the spec's length,
         * measured once, is its check and its hash's */
        rows[i].role = role_code_in(p[i].role, sizeof p[i].role);
        rows[i].spec_len = strnlen(p[i].sharding_spec, sizeof p[i].sharding_spec);
        if ((rows[i].role < 0 &&
             (rc = cdb_check_text(db, p[i].role, sizeof p[i].role, "role")) < 0) ||
            (rows[i].spec_len >= sizeof p[i].sharding_spec &&
             (rc = cdb_check_text(db, p[i].sharding_spec, sizeof p[i].sharding_spec,
                                  "sharding_spec")) < 0))
            break;
        rows[i].p = &p[i];
        rows[i].pos = i;
        if (rows[i].role < 0)
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
    pairs = malloc(n * sizeof *pairs);
    if (!buf || !pairs) {
        free(rows);
        free(pairs);
        free(buf);
        return COSTDB_ENOMEM;
    }
    if ((rc = cdb_txn_enter(db)) < 0) {
        free(rows);
        free(pairs);
        free(buf);
        return rc;
    }
    for (size_t i = 0, j; i < n && rc >= 0; i = j) {
        for (j = i + 1; j < n && same_stage(rows[j].p, rows[i].p); j++)
            ;
        rc = put_stage(db, sweep_id, rows + i, j - i, pairs, &buf, &cap, &memo);
    }
    free(rows);
    free(pairs);
    free(buf);
    return cdb_txn_leave(db, rc);
}

/* ---- reading -------------------------------------------------------------- */

typedef struct TensorRow {
    int64_t tensor, name, shape, dtype;
} TensorRow;

typedef struct TextRow {
    int64_t id;
    char *text;
} TextRow;

typedef struct Dict {
    TensorRow *tensors;
    size_t n_tensors;
    TextRow *texts;
    size_t n_texts;
} Dict;

static void dict_free(Dict *d)
{
    for (size_t i = 0; i < d->n_texts; i++)
        free(d->texts[i].text);
    free(d->texts);
    free(d->tensors);
    memset(d, 0, sizeof *d);
}

/* The sweep's tensors and every text, sorted by key. */
static int dict_load(Costdb *db, int64_t sweep_id, Dict *d)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int rc;
    memset(d, 0, sizeof *d);
    if ((rc = cdb_prepare(db, sql_tensor_all, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if ((rc = cdb_row_check(db, st)) < 0 ||
            (rc = cdb_grow(db, (void **)&d->tensors, &cap, d->n_tensors + 1,
                           sizeof *d->tensors)) < 0)
            break;
        TensorRow *t = &d->tensors[d->n_tensors++];
        t->tensor = sqlite3_column_int64(st, 0);
        t->name = sqlite3_column_int64(st, 1);
        t->shape = sqlite3_column_int64(st, 2);
        t->dtype = sqlite3_column_int64(st, 3);
    }
    rc = rc == SQLITE_DONE ? 0 : rc < 0 ? rc : cdb_fail(db, rc, sql_tensor_all);
    cdb_release(st);
    if (rc < 0)
        goto fail;
    cap = 0;
    if ((rc = cdb_prepare(db, sql_text_all, &st)) < 0)
        goto fail;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 1);
        if ((rc = cdb_row_check(db, st)) < 0 ||
            (rc = cdb_grow(db, (void **)&d->texts, &cap, d->n_texts + 1, sizeof *d->texts)) < 0)
            break;
        d->texts[d->n_texts].id = sqlite3_column_int64(st, 0);
        d->texts[d->n_texts].text = strdup(t ? (const char *)t : "");
        if (!d->texts[d->n_texts++].text) {
            rc = COSTDB_ENOMEM;
            break;
        }
    }
    rc = rc == SQLITE_DONE ? 0 : rc < 0 ? rc : cdb_fail(db, rc, sql_text_all);
    cdb_release(st);
    if (rc < 0)
        goto fail;
    return 0;
fail:
    dict_free(d);
    return rc;
}

static const TensorRow *find_tensor(const Dict *d, int64_t tensor)
{
    size_t lo = 0, hi = d->n_tensors;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->tensors[mid].tensor < tensor)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->n_tensors && d->tensors[lo].tensor == tensor ? &d->tensors[lo] : NULL;
}

static const char *find_text(const Dict *d, int64_t id)
{
    size_t lo = 0, hi = d->n_texts;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (d->texts[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->n_texts && d->texts[lo].id == id ? d->texts[lo].text : NULL;
}

static int copy_field(Costdb *db, char *dst, size_t cap, const char *src, const char *field)
{
    size_t n = strlen(src);
    if (n >= cap)
        return cdb_err(db, COSTDB_EINVAL, "%s: stored '%s' is %zu bytes, longer than %zu",
                       db->path, field, n, cap - 1);
    memcpy(dst, src, n + 1);
    return 0;
}

/* Appends the rows of the set in the current row of st to *out, labelled
 * with config when relabel (a variant reads its owner's set), else with the
 * set's own config. The row is the key, items, first_tensor, tail_id and
 * the referenced list (SET_COLS7). */
static int read_set(Costdb *db, sqlite3_stmt *st, const Dict *d, int relabel, int config,
                    CostdbPlacement **out, size_t *n, size_t *cap)
{
    CdbItem *it = NULL;
    size_t ni = 0;
    int rc = cdb_row_check(db, st), key[4];
    const unsigned char *items = sqlite3_column_text(st, 4);
    int shared = sqlite3_column_type(st, 6) != SQLITE_NULL;
    int64_t base = sqlite3_column_int64(st, 5);
    if (rc < 0)
        return rc;
    for (int c = 0; c < 4; c++)
        key[c] = sqlite3_column_int(st, c);
    if (shared) {
        items = sqlite3_column_text(st, 7);
        if (!items)
            return cdb_err(db, COSTDB_ECORRUPT, "%s: placement_set (layers %d-%d, submesh %d, "
                           "config %d): tail_id %lld refers to a missing placement_tail",
                           db->path, key[0], key[1], key[2], key[3],
                           (long long)sqlite3_column_int64(st, 6));
        if (sqlite3_column_type(st, 5) != SQLITE_INTEGER || base < 0 || base > INT32_MAX)
            return cdb_err(db, COSTDB_ECORRUPT, "%s: placement_set (layers %d-%d, submesh %d, "
                           "config %d): first_tensor = %lld is not a tensor index (0..%d)",
                           db->path, key[0], key[1], key[2], key[3], (long long)base, INT32_MAX);
    }
    if (!items || cdb_items_decode((const char *)items, shared, base, 3 * d->n_tensors, &it, &ni) < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: placement_set (layers %d-%d, submesh %d, config "
                       "%d): items is not a placement list", db->path, key[0], key[1], key[2],
                       key[3]);
    if ((rc = cdb_grow(db, (void **)out, cap, *n + ni, sizeof **out)) < 0) {
        free(it);
        return rc;
    }
    for (size_t i = 0; i < ni && rc >= 0; i++) {
        const TensorRow *t = find_tensor(d, it[i].tensor);
        const char *txt[5] = {t ? find_text(d, t->name) : NULL, role_names[it[i].role],
                              t ? find_text(d, t->shape) : NULL, t ? find_text(d, t->dtype) : NULL,
                              find_text(d, it[i].spec)};
        static const char *const fields[5] = {"tensor_name", "role", "shape", "dtype",
                                              "sharding_spec"};
        CostdbPlacement *p = &(*out)[*n];
        memset(p, 0, sizeof *p);
        for (int f = 0; f < 5; f++)
            if (!txt[f]) {
                rc = cdb_err(db, COSTDB_ECORRUPT, "%s: placement of tensor %lld (layers %d-%d, "
                             "submesh %d): %s refers to a missing text, tensor or role",
                             db->path, (long long)it[i].tensor, key[0], key[1], key[2],
                             fields[f]);
                break;
            }
        if (rc < 0)
            break;
        if (it[i].tensor < 0 || it[i].tensor > INT32_MAX) {
            rc = cdb_err(db, COSTDB_ECORRUPT, "%s: placement_set (layers %d-%d, submesh %d): "
                         "tensor index %lld out of range", db->path, key[0], key[1], key[2],
                         (long long)it[i].tensor);
            break;
        }
        p->start_layer = key[0];
        p->end_layer = key[1];
        p->submesh_index = key[2];
        p->config_index = relabel ? config : key[3];
        p->tensor_index = (int)it[i].tensor;
        if ((rc = copy_field(db, p->tensor_name, sizeof p->tensor_name, txt[0], fields[0])) < 0 ||
            (rc = copy_field(db, p->role, sizeof p->role, txt[1], fields[1])) < 0 ||
            (rc = copy_field(db, p->shape, sizeof p->shape, txt[2], fields[2])) < 0 ||
            (rc = copy_field(db, p->dtype, sizeof p->dtype, txt[3], fields[3])) < 0 ||
            (rc = copy_field(db, p->sharding_spec, sizeof p->sharding_spec, txt[4], fields[4])) < 0)
            break;
        (*n)++;
    }
    free(it);
    return rc < 0 ? rc : 0;
}

/* The rows of the sets st selects (sql bound already), released in every
 * case. */
static int read_sets(Costdb *db, sqlite3_stmt *st, const char *sql, int64_t sweep_id, int relabel,
                     int config, CostdbPlacement **out, size_t *n)
{
    Dict d;
    size_t cap = 0;
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = dict_load(db, sweep_id, &d)) < 0) {
        cdb_release(st);
        return rc;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = read_set(db, st, &d, relabel, config, out, n, &cap)) < 0)
            break;
    rc = rc == SQLITE_DONE ? 0 : rc < 0 ? rc : cdb_fail(db, rc, sql);
    cdb_release(st);
    dict_free(&d);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int costdb_placements_get(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                          int config, CostdbPlacement **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    const char *sql = db->version >= 7 ? sql_set_get : sql_set_get6;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, start);
    sqlite3_bind_int(st, 3, end);
    sqlite3_bind_int(st, 4, submesh);
    sqlite3_bind_int(st, 5, config);
    return read_sets(db, st, sql, sweep_id, 1, config, out, n);
}

int costdb_placements_owner(Costdb *db, int64_t sweep_id, int submesh, int config, int *owner)
{
    /* the same subquery as costdb_placements_get's */
    static const char sql[] = "SELECT coalesce((" SET_OWNER "), ?5)";
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !owner)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 4, submesh);
    sqlite3_bind_int(st, 5, config);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *owner = sqlite3_column_int(st, 0);
        rc = 0;
    } else {
        rc = cdb_fail(db, rc, sql);
    }
    cdb_release(st);
    return rc;
}

int costdb_placements_list(Costdb *db, int64_t sweep_id, CostdbPlacement **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    const char *sql = db->version >= 7 ? sql_set_list : sql_set_list6;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    return read_sets(db, st, sql, sweep_id, 0, 0, out, n);
}
