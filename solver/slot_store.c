/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The slot tables' growth and copy (slot_store.h), one rule for the memory
 * table (memory_table.c) and the per-cell times (cell_times.c).
 */
#include <stdlib.h>
#include <string.h>

#include "slot_store.h"

void *apsolve_slot_room(void *recs, size_t size, size_t n, size_t *cap, size_t more)
{
    size_t c = *cap;
    void *r;
    if (more > (size_t)UINT32_MAX + 1 - n) /* past the slots' reach */
        return NULL;
    while (c - n < more)
        c *= 2;
    if (c == *cap)
        return recs;
    if (c - 1 > UINT32_MAX || !(r = realloc(recs, c * size)))
        return NULL;
    *cap = c;
    return r;
}

int apsolve_slot_copy(const uint32_t *slot, size_t cells, const void *recs, size_t size, size_t n,
                      size_t cap, uint32_t **slot_out, void **recs_out)
{
    uint32_t *s = malloc((cells ? cells : 1) * sizeof *s);
    void *r = malloc((cap > n ? cap : n) * size);
    if (!s || !r) {
        free(s);
        free(r);
        return -1;
    }
    memcpy(s, slot, cells * sizeof *s);
    memcpy(r, recs, n * size);
    *slot_out = s;
    *recs_out = r;
    return 0;
}
