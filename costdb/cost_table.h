/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sweep's cost rows read into a table by cost_id, and its entry blocks
 * walked slot by slot (schemas 8 and 14, schemas/README.md "stage_profile"):
 * the one reader of both that costdb_entries_get's C decoder
 * (entries_read.c, CostdbEntry) and costdb_stage_rows (stage_rows.c,
 * apsolve's load) share. Each caller says how a cost row becomes an element
 * of its table (a callback on the statement's row) and what an entry slot
 * becomes (a callback per used slot); the ids, the array, its bounds and
 * the walk of the blocks in stage_entry's key order are this module's.
 */
#ifndef COSTDB_COST_TABLE_H
#define COSTDB_COST_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "costdb_int.h"
#include "entry_blocks.h"

/* The elements of a table, elem bytes each, indexed by cost_id (n of them,
 * id 0 never used; an element no row filled is all zero). */
typedef struct CdbCostTable {
    unsigned char *row;
    size_t n, elem;
} CdbCostTable;

/* Fills slot (elem bytes, zeroed) from the statement's current row: 0, 1 to
 * give the table up (the caller reads otherwise), or a negative COSTDB_E*
 * code. */
typedef int (*CdbCostRowFn)(void *ctx, Costdb *db, sqlite3_stmt *st, void *slot);

/* Steps sql (?1 bound to the sweep) and puts each row, through fn, at the
 * id of its column id_col. Returns 0 with *t, 1 with t empty when the ids do
 * not fit an array (an id not an integer, < 1 or > max_id, or past 16 per
 * row read + 1024: approf's ids are 1, 2, 3, ...) or fn gave up, or a
 * negative COSTDB_E* code (t empty). */
int cdb_cost_table_read(Costdb *db, int64_t sweep_id, const char *sql, int id_col,
                        int64_t max_id, size_t elem, CdbCostRowFn fn, void *ctx,
                        CdbCostTable *t);

/* The element of id, NULL when the table has none there (out of range). */
static inline void *cdb_cost_table_at(const CdbCostTable *t, int64_t id)
{
    return id >= 1 && (uint64_t)id < t->n ? t->row + (size_t)id * t->elem : NULL;
}

void cdb_cost_table_free(CdbCostTable *t);

/* Called for each block b (checked by cdb_block_row); 0 goes on, anything
 * else ends the walk with it. */
typedef int (*CdbBlockFn)(void *ctx, const CdbBlock *b);

/* The sweep's blocks in stage_entry's key order (submesh descending, start,
 * end, config block), each checked by cdb_block_row: 0, the first nonzero
 * value of fn, or a negative COSTDB_E* code. */
int cdb_entry_blocks_each(Costdb *db, int64_t sweep_id, CdbBlockFn fn, void *ctx);

/* Called for slot k of block b, whose value v (cost_id * 2 + reused) is not
 * 0; 0 goes on, anything else ends the walk with it. */
typedef int (*CdbSlotFn)(void *ctx, const CdbBlock *b, int k, uint32_t v);

/* cdb_entry_blocks_each, fn called for each used slot of each block
 * (slots by config then phase): 0, the first nonzero value of fn, or a
 * negative COSTDB_E* code. */
int cdb_entry_blocks_walk(Costdb *db, int64_t sweep_id, CdbSlotFn fn, void *ctx);

#endif
