/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Zeroed memory for an in-memory table that is read before it is written
 * (open addressing, the sweep workers' window), with every page written
 * once. calloc hands back fresh pages unwritten; a read then maps the
 * kernel's shared zero page, and the first write replaces it with a
 * copy-on-write fault whose TLB flush interrupts every processor the
 * process runs on (a sweep's workers: docs/performance.md). Used by
 * costdb's writer caches and by the profiler's sweep tables, like fnv.h a
 * header of its own so that both call the one helper.
 */
#ifndef COSTDB_TABLE_ALLOC_H
#define COSTDB_TABLE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>

/* n zeroed slots of size bytes, each page written once; NULL without
 * memory (or for n == 0). */
static inline void *costdb_table_alloc(size_t n, size_t size)
{
    char *t = n && size <= SIZE_MAX / n ? calloc(n, size) : NULL;
    /* one write per page, through a volatile pointer (a memset of zeros
     * after malloc is turned back into calloc by the compiler) */
    for (size_t off = 0; t && off < n * size; off += 4096)
        ((volatile char *)t)[off] = 0;
    return t;
}

#endif
