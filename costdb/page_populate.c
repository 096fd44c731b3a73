/* SPDX-License-Identifier: Apache-2.0 */
/* Pages populated ahead of their writes (page_populate.h). */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "page_populate.h"

void cdb_populate(void *a, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo, hi;
    if (!a || page <= 0)
        return;
    /* whole pages only: the partial ones at either end may be another
     * allocation's, and fault in when written */
    lo = ((uintptr_t)a + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    hi = ((uintptr_t)a + n) & ~((uintptr_t)page - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)a;
    (void)n;
#endif
}
