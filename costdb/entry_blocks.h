/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage entries in blocks (schema 14, schemas/README.md "stage_profile"):
 * one row of stage_entry_block holds the entries of one (sweep, submesh,
 * range) and CDB_BLOCK_CONFIGS configs, a slot of CDB_SLOT_BYTES bytes per
 * config and phase (slot 2 * (config_index % 64) + phase), big-endian
 * cost_id * 2 + reused; 0 is no entry. The SQL view stage_entry
 * (014_stage_entry_blocks.sql) decodes the same slots; entries a block
 * cannot hold, and entries written with SQL, are rows of stage_entry_row.
 */
#ifndef COSTDB_ENTRY_BLOCKS_H
#define COSTDB_ENTRY_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "costdb_int.h"

#define CDB_BLOCK_CONFIGS 64
#define CDB_BLOCK_SLOTS (2 * CDB_BLOCK_CONFIGS)
#define CDB_SLOT_BYTES 3
#define CDB_BLOCK_BYTES (CDB_BLOCK_SLOTS * CDB_SLOT_BYTES)
/* the largest cost_id a slot holds: cost_id * 2 + 1 in 3 bytes */
#define CDB_BLOCK_MAX_COST_ID ((INT64_C(1) << (8 * CDB_SLOT_BYTES - 1)) - 1)

/* One row of stage_entry_block, checked. */
typedef struct CdbBlock {
    int64_t sweep_id;
    int submesh_index, start_layer, end_layer, config_block;
    int nslots; /* slots the blob holds */
    unsigned char costs[CDB_BLOCK_BYTES];
} CdbBlock;

/* Slot k's value: cost_id * 2 + reused, 0 for no entry. */
static inline uint32_t cdb_block_slot(const CdbBlock *b, int k)
{
    const unsigned char *p = b->costs + (size_t)k * CDB_SLOT_BYTES;
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

/* The statement's columns col .. col + 5 (sweep_id, submesh_index,
 * start_layer, end_layer, config_block, costs) as a block: 0, or
 * COSTDB_ECORRUPT naming table stage_entry_block, the row and the column
 * (a key outside its bounds, costs not a blob of whole slots). */
int cdb_block_row(Costdb *db, sqlite3_stmt *st, int col, CdbBlock *b);

/* Writes the entries e[0..n) of the sweep (checked by the caller, inside
 * its transaction): each into its block's slot, or a row of
 * stage_entry_row when its cost_id does not fit a slot. An entry whose key
 * is there already: COSTDB_ECONSTRAINT unless replace; an entry of a
 * config the sweep does not have: COSTDB_ECONSTRAINT. */
int cdb_entry_blocks_put(Costdb *db, int64_t sweep_id, const CostdbEntry *e, size_t n,
                         int replace);

/* 0 when every block of the sweep passes cdb_block_row, else its refusal
 * of the first that does not (readers through the view stage_entry, which
 * decodes whole slots only, check first). */
int cdb_entry_blocks_check(Costdb *db, int64_t sweep_id);

/* *n = the sweep's entries: the used slots of its blocks (checked first)
 * and its rows; 0 or a negative COSTDB_E* code. */
int cdb_entry_blocks_count(Costdb *db, int64_t sweep_id, int64_t *n);

/* 1 when the sweep has entries in stage_entry_row, 0 when not, or a
 * negative COSTDB_E* code. */
int cdb_entry_rows_any(Costdb *db, int64_t sweep_id);

/* Migration to schema 14: moves every row of stage_entry_row that a block
 * can hold into its block. */
int cdb_entry_blocks_pack(Costdb *db);

#endif
