/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cdb_mem_check (costdb_int.h), the second half of entry_costs.c's 128-bit
 * cost-row digest (issue 38, wrrows): the same bytes give the same value,
 * every bit of a cost row's size (120 bytes) and of a tail moves it, the
 * length counts (a zero byte more is another input), the seed chains, and
 * it is not cdb_mem_hash, the digest's other half.
 */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <string.h>

#include "costdb_int.h"
#include "cunit_run.h"

static void fill(unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 37 + 11);
}

static void test_same_bytes_same_value(void)
{
    unsigned char a[120], b[120];
    fill(a, sizeof a);
    fill(b, sizeof b);
    CU_ASSERT_EQUAL(cdb_mem_check(0, a, sizeof a), cdb_mem_check(0, b, sizeof b));
    CU_ASSERT_EQUAL(cdb_mem_check(7, a, 0), cdb_mem_check(7, b, 0));
}

/* Every single-bit change of a 120-byte row, and of a 13-byte text (a word
 * and a tail), gives another value, and no two of them the same. */
static void test_every_bit_counts(void)
{
    static const size_t sizes[] = {120, 13};
    for (size_t z = 0; z < 2; z++) {
        unsigned char a[120];
        uint64_t seen[120 * 8 + 1];
        size_t n = sizes[z], k = 0;
        fill(a, n);
        seen[k++] = cdb_mem_check(0, a, n);
        for (size_t bit = 0; bit < n * 8; bit++) {
            a[bit / 8] ^= (unsigned char)(1u << bit % 8);
            seen[k++] = cdb_mem_check(0, a, n);
            a[bit / 8] ^= (unsigned char)(1u << bit % 8);
        }
        for (size_t i = 0; i < k; i++)
            for (size_t j = i + 1; j < k; j++)
                if (seen[i] == seen[j]) {
                    CU_FAIL("two inputs one bit apart share a check");
                    return;
                }
    }
}

static void test_length_and_seed(void)
{
    static const char t[] = "oom\0\0\0\0\0\0";
    uint64_t row = cdb_mem_check(0, "row", 3);
    CU_ASSERT_NOT_EQUAL(cdb_mem_check(0, t, 3), cdb_mem_check(0, t, 4));
    CU_ASSERT_NOT_EQUAL(cdb_mem_check(0, t, 8), cdb_mem_check(0, t, 9));
    CU_ASSERT_NOT_EQUAL(cdb_mem_check(row, t, 3), cdb_mem_check(0, t, 3));
    CU_ASSERT_EQUAL(cdb_mem_check(row, t, 3), cdb_mem_check(cdb_mem_check(0, "row", 3), "oom", 3));
}

static void test_other_than_mem_hash(void)
{
    unsigned char a[120];
    fill(a, sizeof a);
    CU_ASSERT_NOT_EQUAL(cdb_mem_check(0, a, sizeof a), cdb_mem_hash(0, a, sizeof a));
    CU_ASSERT_NOT_EQUAL(cdb_mem_check(0, "", 0), cdb_mem_hash(0, "", 0));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"same bytes, same value", test_same_bytes_same_value},
        {"every bit of a row and a tail counts", test_every_bit_counts},
        {"the length and the seed count", test_length_and_seed},
        {"another hash than cdb_mem_hash", test_other_than_mem_hash},
    };
    return CUNIT_RUN("costdb_mem_check", tests);
}
