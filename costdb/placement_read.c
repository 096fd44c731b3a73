/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Placements, the reader: the CostdbPlacement rows (schema 1's) of a stage
 * entry or of a whole sweep, decoded from the compact tables the writer
 * fills (placement_write.c; schemas 3, 6 and 7, schemas/README.md):
 * costdb_placements_get, costdb_placements_owner and costdb_placements_list.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"
#include "placement_codec.h"

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

/* The dictionary of the last sweep read, kept on the connection: each
 * costdb_placements_get reads a few sets but needs every tensor of the
 * sweep and every text (apsolve on the 126-layer 405B file: 215 calls, each
 * reading the same 1,265 tensors and 1,373 texts again; docs/performance.md
 * "apsolve's load path: ..., placements' dictionary kept"). It is read again
 * when the tables may have changed: another connection committed (PRAGMA
 * data_version) or this one changed any row (sqlite3_total_changes64, which
 * counts the changes of a transaction rolled back too), or the caches were
 * dropped (cdb_caches_clear: a rollback, a sweep deleted, the close). */
struct CdbPlacementDict {
    Dict d;
    int64_t sweep_id, data_version, changes;
};

void cdb_placement_dict_clear(Costdb *db)
{
    if (!db || !db->placement_dict)
        return;
    dict_free(&db->placement_dict->d);
    free(db->placement_dict);
    db->placement_dict = NULL;
}

static const char sql_data_version[] = "PRAGMA data_version";

/* The sweep's dictionary: the kept one while it holds, else read (and
 * kept; without memory to keep it, read into *own). */
static int dict_get(Costdb *db, int64_t sweep_id, Dict *own, const Dict **d)
{
    struct CdbPlacementDict *c = db->placement_dict;
    sqlite3_stmt *st = NULL;
    int64_t v, changes = sqlite3_total_changes64(db->sql);
    int rc;
    if ((rc = cdb_prepare(db, sql_data_version, &st)) < 0)
        return rc;
    rc = sqlite3_step(st);
    v = sqlite3_column_int64(st, 0);
    cdb_release(st);
    if (rc != SQLITE_ROW)
        return cdb_fail(db, rc, sql_data_version);
    if (c && c->sweep_id == sweep_id && c->data_version == v && c->changes == changes) {
        *d = &c->d;
        return 0;
    }
    cdb_placement_dict_clear(db);
    if ((rc = dict_load(db, sweep_id, own)) < 0)
        return rc;
    *d = own;
    if ((c = malloc(sizeof *c)) != NULL) { /* a cache: without it, read each time */
        c->d = *own;
        memset(own, 0, sizeof *own);
        c->sweep_id = sweep_id;
        c->data_version = v;
        c->changes = changes;
        db->placement_dict = c;
        *d = &c->d;
    }
    return 0;
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
        const char *txt[5] = {t ? find_text(d, t->name) : NULL, cdb_placement_roles[it[i].role],
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
    Dict own = {0};
    const Dict *d = NULL;
    size_t cap = 0;
    int rc;
    *out = NULL;
    *n = 0;
    if ((rc = dict_get(db, sweep_id, &own, &d)) < 0) {
        cdb_release(st);
        return rc;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = read_set(db, st, d, relabel, config, out, n, &cap)) < 0)
            break;
    rc = rc == SQLITE_DONE ? 0 : rc < 0 ? rc : cdb_fail(db, rc, sql);
    cdb_release(st);
    dict_free(&own);
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
