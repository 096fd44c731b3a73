/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rules the solver's slot tables share (memory_table.c, cell_times.c):
 * a table holds one 32-bit slot per cell into an array of n records,
 * record 0 the figures of every cell never put, so that only the cells with
 * figures of their own hold a record (docs/performance.md, "apsolve's
 * memory table sparse (issue 38)"). Each table keeps its own record type
 * and its typed put and own; how the records grow and how a table is copied
 * is said once, here.
 */
#ifndef APSOLVE_SLOT_STORE_H
#define APSOLVE_SLOT_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Room for `more` records past the n of recs (cap records of size bytes
 * each): cap doubled until they fit. Returns the records (moved if they
 * grew; *cap updated), or NULL past the slots' 32-bit reach or when the
 * allocation fails, recs and *cap then as they were. */
void *apsolve_slot_room(void *recs, size_t size, size_t n, size_t *cap, size_t more);

/* A copy of a table: its cells' slots and its n records, the copy's
 * records allocated for cap >= n of them. 0, *slot_out and *recs_out set
 * (the caller frees them); -1 when out of memory, nothing allocated. */
int apsolve_slot_copy(const uint32_t *slot, size_t cells, const void *recs, size_t size, size_t n,
                      size_t cap, uint32_t **slot_out, void **recs_out);

#endif
