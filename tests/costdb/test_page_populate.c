/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pages populated ahead of an array's writes (costdb/page_populate.h): the
 * stretch populated follows the bytes used, never past the array's end, and
 * the array's contents do not change (zeroed pages stay zero, written bytes
 * stay written), moved by realloc or not.
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "page_populate.h"

static int all_zero(const unsigned char *a, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (a[k])
            return 0;
    return 1;
}

static void test_ahead_bounds(void)
{
    size_t cap = 3 * CDB_POPULATE_AHEAD + 123, done = 0;
    unsigned char *a = calloc(cap, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    /* nothing used: nothing populated */
    cdb_populate_ahead(a, cap, 0, &done);
    CU_ASSERT_EQUAL(done, 0);
    /* the first byte used: a stretch past it */
    cdb_populate_ahead(a, cap, 1, &done);
    CU_ASSERT_EQUAL(done, 1 + CDB_POPULATE_AHEAD);
    /* still within it: nothing more */
    cdb_populate_ahead(a, cap, CDB_POPULATE_AHEAD, &done);
    CU_ASSERT_EQUAL(done, 1 + CDB_POPULATE_AHEAD);
    /* past it: the next stretch */
    cdb_populate_ahead(a, cap, 2 * CDB_POPULATE_AHEAD + 7, &done);
    CU_ASSERT_EQUAL(done, 3 * CDB_POPULATE_AHEAD + 7);
    /* never past the end */
    cdb_populate_ahead(a, cap, 3 * CDB_POPULATE_AHEAD + 8, &done);
    CU_ASSERT_EQUAL(done, cap);
    cdb_populate_ahead(a, cap, cap, &done);
    CU_ASSERT_EQUAL(done, cap);
    CU_ASSERT(all_zero(a, cap));
    free(a);
}

static void test_contents_kept(void)
{
    size_t cap = 1000, done = 0, used = 0;
    unsigned char *a = malloc(cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    /* an array grown by realloc to 64 MB, written as it grows, populated
     * ahead after each write: what was written reads back */
    while (cap < ((size_t)64 << 20)) {
        unsigned char *b;
        for (; used < cap; used += 4093) {
            a[used] = (unsigned char)(used % 251 + 1);
            cdb_populate_ahead(a, cap, used + 1, &done);
        }
        b = realloc(a, cap * 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        a = b;
        cap *= 2;
    }
    for (size_t k = 0; k < used && k < cap; k += 4093)
        CU_ASSERT_EQUAL_FATAL(a[k], (unsigned char)(k % 251 + 1));
    free(a);
    /* populating a NULL array or none of its bytes is a no-op */
    cdb_populate(NULL, 4096);
    cdb_populate(&cap, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the stretch follows the bytes used", test_ahead_bounds},
        {"contents kept", test_contents_kept},
    };
    return CUNIT_RUN("costdb_page_populate", tests);
}
