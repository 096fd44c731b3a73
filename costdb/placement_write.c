/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placements, the writer: the ShardingSpec of every parameter, input and
 * output of a profiled stage (schemas 3, 6 and 7; schemas/README.md),
 * stored by costdb_placements_put. Texts are interned (placement_text), a
 * sweep's tensors are stored once (placement_tensor), and each stage entry
 * is one placement_set row referring to its items (role, tensor_index,
 * spec_id) in a list shared in placement_tail (schema 7; the encodings are
 * placement_codec.c's, the reader placement_read.c). This file and
 * placement_read.c are the only code that touches those tables; every
 * tool goes through costdb_placements_put/get/list and sees the
 * CostdbPlacement rows of schema 1.
 *
 * The writer keeps, per connection, the ids of texts and shared lists it
 * has interned, the tensors of the current sweep it has stored and the
 * sets stored by a caller's key (costdb_placements_put_keyed, whose hit
 * inserts the set row alone); all are dropped on any rollback
 * (cdb_placement_cache_clear), since a rolled-back insert leaves a cached
 * id pointing nowhere. A put's buffers are kept there too (scratch_trim).
 */
#include <assert.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "fnv.h"
#include "grow.h"
#include "placement_codec.h"
#include "placement_memo.h"

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
 * their slots (two per text at most half full). A slot keeps its text's
 * hash (map_get) and length: a probe passes the slots of other texts on them
 * and compares its own text once, by memcmp (a sweep interns a spec for
 * every other placement row it writes). */
typedef struct TextMap {
    struct {
        char *text;
        int64_t id;
        uint64_t hash;
        size_t len;
    } *e;
    size_t n, cap, bytes;
} TextMap;

/* A map that would hold more than this starts again empty: a text it
 * forgot is found in its table (intern_in), so the ids are the same and
 * only the lookup costs more; the sweep's memory stays bounded whatever
 * the number of distinct placement lists. */
#define MAP_MAX_BYTES ((size_t)32 << 20)

/* A row of one put, in the order it is stored (cmp_rows). */
typedef struct SortRow {
    const CostdbPlacement *p;
    int role;
    size_t pos;
    size_t spec_len;              /* strlen of p->sharding_spec */
} SortRow;

/* One put's scratch, kept for the next while it holds no more than this:
 * a sweep puts hundreds of thousands of sets of a few hundred rows, and
 * each put allocated and freed its buffers (docs/perf-wrmemo.md). */
#define SCRATCH_MAX_BYTES ((size_t)1 << 20)

struct CdbPlacementCache {
    TextMap texts;                  /* placement_text */
    TextMap tails;                  /* placement_tail */
    CdbPairsMemo lists;             /* placement_tail by its pairs (placement_memo.h) */
    CdbKeyMemo keyed;               /* sets by their caller's key (placement_memo.h) */
    int64_t sweep_id;               /* whose tensors known[] describes */
    unsigned char *known;
    size_t n_known;
    /* the scratch of one put (scratch_trim) */
    SortRow *rows;
    size_t rows_cap;
    CdbPair *pairs;
    size_t pairs_cap;
    char *buf;                      /* a list's text (cdb_items_encode) */
    size_t buf_cap;
    int *tensors;                   /* a keyed set's tensors less its base */
    size_t tensors_cap;
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
    cdb_pairs_memo_free(&c->lists);
    cdb_key_memo_free(&c->keyed);
    free(c->known);
    free(c->rows);
    free(c->pairs);
    free(c->buf);
    free(c->tensors);
    free(c);
    db->placement_cache = NULL;
}

/* The hash a shared list is stored under (schemas/README.md). */
static uint64_t tail_hash(const char *s)
{
    return cdb_tail_hash(s);
}

static CdbPlacementCache *cache_of(Costdb *db)
{
    if (!db->placement_cache)
        db->placement_cache = calloc(1, sizeof(CdbPlacementCache));
    return db->placement_cache;
}

/* Frees the scratch once it holds more than SCRATCH_MAX_BYTES (a put of
 * a whole sweep's rows, as a merge makes: not kept for the next). */
static void scratch_trim(CdbPlacementCache *c)
{
    if (c->rows_cap * sizeof *c->rows + c->pairs_cap * sizeof *c->pairs + c->buf_cap +
            c->tensors_cap * sizeof *c->tensors <= SCRATCH_MAX_BYTES)
        return;
    free(c->rows);
    free(c->pairs);
    free(c->buf);
    free(c->tensors);
    c->rows = NULL;
    c->pairs = NULL;
    c->buf = NULL;
    c->tensors = NULL;
    c->rows_cap = c->pairs_cap = c->buf_cap = c->tensors_cap = 0;
}

/* The id of text (len bytes, its map hash h: the in-memory maps' hash,
 * cdb_mem_hash of the text, never stored, so free to differ from the
 * stored one) in m, or 0. */
static int64_t map_get(const TextMap *m, const char *text, size_t len, uint64_t h)
{
    if (!m->cap)
        return 0;
    size_t k = (size_t)h & (m->cap - 1);
    while (m->e[k].text) {
        if (m->e[k].hash == h && m->e[k].len == len && !memcmp(m->e[k].text, text, len))
            return m->e[k].id;
        k = (k + 1) & (m->cap - 1);
    }
    return 0;
}

/* Remembers text (len bytes, map hash h) -> id; a cache: without memory,
 * a later miss costs a lookup. */
static void map_put(TextMap *m, const char *text, size_t len, uint64_t h, int64_t id)
{
    size_t need = len + 1 + 2 * sizeof *m->e;
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
            size_t k = (size_t)m->e[i].hash & (ncap - 1);
            while (ne[k].text)
                k = (k + 1) & (ncap - 1);
            ne[k] = m->e[i];
        }
        free(m->e);
        m->e = ne;
        m->cap = ncap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len + 1);
    size_t k = (size_t)h & (m->cap - 1);
    while (m->e[k].text)
        k = (k + 1) & (m->cap - 1);
    m->e[k].text = copy;
    m->e[k].id = id;
    m->e[k].hash = h;
    m->e[k].len = len;
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
    uint64_t mh = cdb_mem_hash(0, text, len), h; /* map_get's */
    int rc, at = with_hash ? 2 : 1;
    if (map && (*id = map_get(map, text, len, mh)) != 0)
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
        map_put(map, text, len, mh, *id);
    return 0;
}

static int intern_text(Costdb *db, const char *text, int64_t *id)
{
    CdbPlacementCache *c = cache_of(db);
    return intern_in(db, c ? &c->texts : NULL, sql_text_find, sql_text_insert, 0, text,
                     strlen(text), id);
}

/* The specs interned in one costdb_placements_put, the last one of each
 * slot (its rows outlive the call's ids: a rollback ends the call): a
 * stage's rows, sorted by role and tensor, go over a few specs again and
 * again (a layer's layouts, layer after layer), and one found here costs
 * a comparison instead of a hash of its text and a probe. A slot is
 * chosen by the text's length and two of its bytes (spec_slot); texts
 * that share a slot take turns in it. */
#define SPEC_MEMO_SLOTS 16

typedef struct SpecMemo {
    struct {
        const char *text;         /* NULL: empty */
        size_t len;
        int64_t id;
    } slot[SPEC_MEMO_SLOTS];
} SpecMemo;

/* The memo slot of a spec of len bytes. */
static size_t spec_slot(const char *text, size_t len)
{
    size_t h = len;
    if (len) {
        h = h * 31 + (unsigned char)text[len / 2];
        h = h * 31 + (unsigned char)text[len * 3 / 4];
    }
    return (h ^ h >> 4) & (SPEC_MEMO_SLOTS - 1);
}

/* intern_text of a spec of len bytes (checked by the caller). */
static int intern_spec(Costdb *db, SpecMemo *m, const char *text, size_t len, int64_t *id)
{
    CdbPlacementCache *c;
    size_t k = spec_slot(text, len);
    int rc;
    if (m->slot[k].text && m->slot[k].len == len && !memcmp(m->slot[k].text, text, len)) {
        *id = m->slot[k].id;
        return 0;
    }
    c = cache_of(db);
    if ((rc = intern_in(db, c ? &c->texts : NULL, sql_text_find, sql_text_insert, 0, text, len,
                        id)) < 0)
        return rc;
    m->slot[k].text = text;
    m->slot[k].len = len;
    m->slot[k].id = *id;
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
        if (!strcmp(role, cdb_placement_roles[r]))
            return r;
    return -1;
}

/* role_code of a role field of cap bytes when it holds a role name and its
 * NUL within them (so it needs no check of its own), else -1. */
static int role_code_in(const char *role, size_t cap)
{
    /* the sizes of cdb_placement_roles' names with their NULs, not
     * measured for each of a sweep's millions of rows */
    static const size_t size[3] = {sizeof "param", sizeof "input", sizeof "output"};
    for (int r = 0; r < 3; r++) {
        assert(strlen(cdb_placement_roles[r]) + 1 == size[r]);
        if (size[r] <= cap && !memcmp(role, cdb_placement_roles[r], size[r]))
            return r;
    }
    return -1;
}

/* Order of rows inside one call: by stage key, then role, tensor, and the
 * position in the call (a later row for the same tensor replaces it):
 * cmp_rows. */

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

/* The placement_set row of the stage of p: its first tensor and list. */
static int insert_set(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, int64_t first,
                      int64_t tail)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql_set_insert, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, p->start_layer);
    sqlite3_bind_int(st, 3, p->end_layer);
    sqlite3_bind_int(st, 4, p->submesh_index);
    sqlite3_bind_int(st, 5, p->config_index);
    sqlite3_bind_int64(st, 6, first);
    sqlite3_bind_int64(st, 7, tail);
    rc = cdb_exec_stmt(db, st, sql_set_insert);
    cdb_release(st);
    return rc;
}

/* What put_stage stored: the set's first tensor and list, its np pairs
 * (put_stage's pairs). */
typedef struct StageOut {
    int64_t first, tail;
    size_t np;
} StageOut;

/* One stage's set: its items in schema 6's encoding ([n_param, n_input,
 * n_output, d1, spec1, ...], tensor deltas) with the first delta 0 and
 * schema 13's repeats (cdb_items_encode), stored once in placement_tail and
 * referenced with the first tensor index (schema 7), built without printf
 * per item (a sweep writes hundreds of thousands). rows are sorted by role,
 * tensor; pairs has room for n. *out: what was stored. */
static int put_stage(Costdb *db, int64_t sweep_id, const SortRow *rows, size_t n, CdbPair *pairs,
                     char **buf, size_t *cap, SpecMemo *memo, StageOut *out)
{
    CdbPlacementCache *c;
    size_t len, np = 0;
    int64_t count[3] = {0, 0, 0}, prev = -1, first = 0, tail = 0;
    uint64_t h;
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
    /* the same counts and pairs as a stage before: its list, not encoded
     * and interned again (placement_memo.h) */
    c = cache_of(db);
    h = cdb_pairs_hash(count, pairs, np);
    if (!c || !(tail = cdb_pairs_memo_get(&c->lists, h, count, pairs, np))) {
        if ((rc = cdb_items_encode(count, pairs, np, buf, cap, &len)) < 0)
            return rc;
        if ((rc = intern_tail(db, *buf, &tail)) < 0)
            return rc;
        if (c)
            cdb_pairs_memo_put(&c->lists, h, count, pairs, np, tail);
    }
    *out = (StageOut){first, tail, np};
    return insert_set(db, sweep_id, rows[0].p, first, tail);
}

/* costdb_placements_put in the connection's scratch (scratch_trim by the
 * caller); *last: what the last stage stored (n > 0 rows). */
static int put_rows(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, size_t n,
                    StageOut *last)
{
    CdbPlacementCache *c = cache_of(db);
    SortRow *rows;
    SpecMemo memo;
    int rc = 0;
    if (!c || UTIL_GROW(c->rows, c->rows_cap, n) < 0 || UTIL_GROW(c->pairs, c->pairs_cap, n) < 0)
        return COSTDB_ENOMEM;
    rows = c->rows;
    memset(&memo, 0, sizeof memo);
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
    if (rc < 0)
        return rc;
    /* a sweep hands its rows over already in this order: check before sorting */
    for (size_t i = 1; i < n; i++)
        if (cmp_rows(&rows[i - 1], &rows[i]) > 0) {
            qsort(rows, n, sizeof *rows, cmp_rows);
            break;
        }
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    for (size_t i = 0, j; i < n && rc >= 0; i = j) {
        for (j = i + 1; j < n && same_stage(rows[j].p, rows[i].p); j++)
            ;
        rc = put_stage(db, sweep_id, rows + i, j - i, c->pairs, &c->buf, &c->buf_cap, &memo,
                       last);
    }
    /* a failure rolls back and frees the cache, scratch and all */
    return cdb_txn_leave(db, rc);
}

int costdb_placements_put(Costdb *db, int64_t sweep_id, const CostdbPlacement *p, size_t n)
{
    StageOut last;
    int rc;
    if (!db || (n && !p))
        return COSTDB_EINVAL;
    if (!n)
        return 0;
    rc = put_rows(db, sweep_id, p, n, &last);
    if (db->placement_cache)
        scratch_trim(db->placement_cache);
    return rc;
}

/* ---- sets by their caller's key -------------------------------------------- */

/* Whether the sweep holds every tensor of the set slot s names, counted
 * from base: those it was stored with (this sweep, this base), or all
 * known to the cache (remember_tensor). */
static int tensors_held(const CdbPlacementCache *c, const CdbKeySlot *s, int64_t sweep_id,
                        int base)
{
    if (s->sweep_id == sweep_id && s->base == base)
        return 1;
    for (size_t k = 0; k < s->n; k++) {
        int64_t t = (int64_t)base + s->tensors[k];
        if (t < 0 || t > INT_MAX || !tensor_known((CdbPlacementCache *)c, sweep_id, (int)t))
            return 0;
    }
    return 1;
}

/* Remembers the set put_rows has just stored under key: its first tensor,
 * list and tensors (from the pairs still in the scratch) less the base. */
static void remember_set(CdbPlacementCache *c, uint64_t h, const CostdbPlacementKey *key,
                         int64_t sweep_id, const StageOut *out)
{
    int64_t t = out->first;
    if (out->first - key->base < INT_MIN || out->first - key->base > INT_MAX ||
        UTIL_GROW(c->tensors, c->tensors_cap, out->np) < 0)
        return;
    for (size_t k = 0; k < out->np; k++) {
        t += c->pairs[k].d; /* the first pair's delta is 0 */
        if (t - key->base < INT_MIN || t - key->base > INT_MAX)
            return;
        c->tensors[k] = (int)(t - key->base);
    }
    cdb_key_memo_put(&c->keyed, h, key->bytes, key->len, sweep_id, key->base,
                     (int)(out->first - key->base), out->tail, c->tensors, out->np);
}

int costdb_placements_put_keyed(Costdb *db, int64_t sweep_id, const CostdbPlacementKey *key,
                                CostdbPlacementRows rows, void *ctx)
{
    CdbPlacementCache *c;
    const CdbKeySlot *hit;
    const CostdbPlacement *p = NULL;
    CostdbPlacement stage;
    StageOut out;
    size_t n = 0;
    uint64_t h;
    int rc;
    if (!db || !key || (key->len && !key->bytes) || !rows)
        return COSTDB_EINVAL;
    if (!(c = cache_of(db)))
        return COSTDB_ENOMEM;
    h = cdb_key_hash(key->bytes, key->len);
    hit = cdb_key_memo_get(&c->keyed, h, key->bytes, key->len);
    if (hit && tensors_held(c, hit, sweep_id, key->base)) {
        /* what put_stage would store: the tensors are held, the specs and
         * the list interned (the cache outlives no rollback) */
        stage.start_layer = key->start_layer;
        stage.end_layer = key->end_layer;
        stage.submesh_index = key->submesh_index;
        stage.config_index = key->config_index;
        if ((rc = cdb_txn_enter(db)) < 0)
            return rc;
        rc = insert_set(db, sweep_id, &stage, (int64_t)key->base + hit->first, hit->tail);
        return cdb_txn_leave(db, rc);
    }
    if ((rc = rows(ctx, &p, &n)) < 0)
        return rc;
    if (!n)
        return 0;
    if (!p)
        return COSTDB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (p[i].start_layer != key->start_layer || p[i].end_layer != key->end_layer ||
            p[i].submesh_index != key->submesh_index || p[i].config_index != key->config_index)
            return cdb_err(db, COSTDB_EINVAL, "placement %zu: not of the key's stage", i);
    rc = put_rows(db, sweep_id, p, n, &out);
    if (rc >= 0 && (c = db->placement_cache) != NULL) {
        remember_set(c, h, key, sweep_id, &out);
        scratch_trim(c);
    }
    return rc;
}
