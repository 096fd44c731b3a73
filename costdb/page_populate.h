/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pages of a growing array faulted in ahead of its writes, a bounded stretch
 * at a time (MADV_POPULATE_WRITE, Linux 5.14): one call for many pages
 * instead of one page fault each, which on a virtual machine costs several
 * microseconds (docs/performance.md, "apsolve's load: pages populated ahead").
 * A hint only: where the kernel refuses it or lacks it, the pages fault in
 * at their first write as before, with the same contents (the kernel's
 * zeroed pages either way).
 */
#ifndef COSTDB_PAGE_POPULATE_H
#define COSTDB_PAGE_POPULATE_H

#include <stddef.h>

/* The bytes populated past the last write, at most: what an array can hold
 * resident but unused at its end. */
#define CDB_POPULATE_AHEAD ((size_t)1 << 18)

/* The whole pages of the n bytes at a populated. */
void cdb_populate(void *a, size_t n);

/* An array of cap bytes at a whose first used bytes are written next:
 * when used passes *done (the bytes populated so far, 0 for a new array),
 * the pages from *done to used + CDB_POPULATE_AHEAD (within cap) are
 * populated and *done moves there. A moved array (realloc) keeps its
 * populated pages where the allocator remaps them and refaults the rest. */
static inline void cdb_populate_ahead(void *a, size_t cap, size_t used, size_t *done)
{
    if (used > *done && *done < cap) {
        size_t to = used + CDB_POPULATE_AHEAD < cap ? used + CDB_POPULATE_AHEAD : cap;
        cdb_populate((unsigned char *)a + *done, to - *done);
        *done = to;
    }
}

#endif
