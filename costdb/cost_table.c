/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one reader of a sweep's cost rows into a table by id and of its entry
 * blocks (cost_table.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cost_table.h"
#include "grow.h"
#include "page_populate.h"

void cdb_cost_table_free(CdbCostTable *t)
{
    free(t->row);
    t->row = NULL;
    t->n = 0;
}

int cdb_cost_table_read(Costdb *db, int64_t sweep_id, const char *sql, int id_col,
                        int64_t max_id, size_t elem, CdbCostRowFn fn, void *ctx,
                        CdbCostTable *t)
{
    sqlite3_stmt *st = NULL;
    void *row = NULL;
    size_t read = 0, cap = 0, n = 0; /* elements 0 .. n - 1 are defined */
    size_t populated = 0;            /* bytes of row faulted in ahead (page_populate.h) */
    int rc;
    memset(t, 0, sizeof *t);
    t->elem = elem;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_value *x = sqlite3_column_value(st, id_col);
        int64_t id = sqlite3_value_int64(x);
        read++;
        if (sqlite3_value_type(x) != SQLITE_INTEGER || id < 1 || id > max_id ||
            (size_t)id > 16 * read + 1024) {
            rc = 1;
            goto out;
        }
        /* Grown without zeroing the spare capacity (the pages past the
         * last id would be written for nothing); the ids skipped between
         * the last one and this one are zeroed: no row (ids come in order,
         * 1, 2, 3, ..., so that is rarely any). */
        if (util_grow(&row, &cap, (size_t)id + 1, elem) < 0) {
            rc = cdb_err(db, COSTDB_ENOMEM, "%s: out of memory reading stage costs", db->path);
            goto out;
        }
        if ((size_t)id >= n) {
            /* the table's pages in stretches, not a fault each as the
             * rows reach them (317,912 rows of 80 bytes on the 126-layer
             * file) */
            cdb_populate_ahead(row, cap * elem, ((size_t)id + 1) * elem, &populated);
            memset((unsigned char *)row + n * elem, 0, ((size_t)id + 1 - n) * elem);
            n = (size_t)id + 1;
        } else {
            memset((unsigned char *)row + (size_t)id * elem, 0, elem);
        }
        if ((rc = fn(ctx, db, st, (unsigned char *)row + (size_t)id * elem)) != 0)
            goto out;
    }
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql);
out:
    cdb_release(st);
    if (rc != 0) {
        free(row);
        return rc;
    }
    t->row = row;
    t->n = n;
    return 0;
}

static const char sql_blocks[] =
    "SELECT sweep_id, submesh_index, start_layer, end_layer, config_block, costs"
    " FROM stage_entry_block WHERE sweep_id = ?1"
    " ORDER BY submesh_index DESC, start_layer, end_layer, config_block";

int cdb_entry_blocks_each(Costdb *db, int64_t sweep_id, CdbBlockFn fn, void *ctx)
{
    sqlite3_stmt *st = NULL;
    CdbBlock b;
    int rc;
    if ((rc = cdb_prepare(db, sql_blocks, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = cdb_block_row(db, st, 0, &b)) < 0 || (rc = fn(ctx, &b)) != 0)
            goto out;
    rc = rc == SQLITE_DONE ? 0 : cdb_fail(db, rc, sql_blocks);
out:
    cdb_release(st);
    return rc;
}

typedef struct SlotWalk {
    CdbSlotFn fn;
    void *ctx;
} SlotWalk;

static int block_slots(void *ctx, const CdbBlock *b)
{
    const SlotWalk *w = ctx;
    int rc;
    for (int k = 0; k < b->nslots; k++) {
        uint32_t v = cdb_block_slot(b, k);
        if (v && (rc = w->fn(w->ctx, b, k, v)) != 0)
            return rc;
    }
    return 0;
}

int cdb_entry_blocks_walk(Costdb *db, int64_t sweep_id, CdbSlotFn fn, void *ctx)
{
    SlotWalk w = {fn, ctx};
    return cdb_entry_blocks_each(db, sweep_id, block_slots, &w);
}
