/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared lists by their pairs (costdb/placement_memo.h; issue 38,
 * wrrows): a list remembered is found by the same counts and pairs only;
 * another count, another pair, a prefix or the same hash with other pairs
 * is not it; thousands remembered (the table grown) are all found with
 * their ids; freed, nothing is.
 */
#include <CUnit/Basic.h>
#include <stdint.h>
#include <string.h>

#include "cunit_run.h"
#include "placement_memo.h"

static void list(CdbPair *p, size_t n, int64_t salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (CdbPair){(int64_t)(i % 3), 1 + (int64_t)((i * 7 + (size_t)salt) % 11)};
}

static void test_found_by_equal_lists_only(void)
{
    CdbPairsMemo m;
    CdbPair a[40], b[40];
    int64_t count[3] = {10, 20, 10}, other[3] = {10, 21, 9};
    uint64_t h;
    memset(&m, 0, sizeof m);
    list(a, 40, 0);
    h = cdb_pairs_hash(count, a, 40);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, h, count, a, 40), 0);
    cdb_pairs_memo_put(&m, h, count, a, 40, 17);
    memcpy(b, a, sizeof a);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, cdb_pairs_hash(count, b, 40), count, b, 40), 17);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, cdb_pairs_hash(other, b, 40), other, b, 40), 0);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, cdb_pairs_hash(count, b, 39), count, b, 39), 0);
    b[23].spec++;
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, cdb_pairs_hash(count, b, 40), count, b, 40), 0);
    /* the hash of a but b's pairs: compared, not taken on the hash */
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, h, count, b, 40), 0);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, h, other, a, 40), 0);
    /* an empty list is a list too */
    cdb_pairs_memo_put(&m, cdb_pairs_hash(other, a, 0), other, a, 0, 5);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, cdb_pairs_hash(other, b, 0), other, b, 0), 5);
    cdb_pairs_memo_free(&m);
    CU_ASSERT_EQUAL(cdb_pairs_memo_get(&m, h, count, a, 40), 0);
}

static void test_many_lists(void)
{
    CdbPairsMemo m;
    CdbPair p[16];
    int64_t count[3] = {4, 8, 4};
    int missed = 0;
    memset(&m, 0, sizeof m);
    for (int64_t k = 0; k < 3000; k++) {
        list(p, 16, 0);
        p[k % 16].d = 1000 + k; /* each list its own */
        cdb_pairs_memo_put(&m, cdb_pairs_hash(count, p, 16), count, p, 16, 100 + k);
    }
    CU_ASSERT_EQUAL(m.n, 3000);
    for (int64_t k = 0; k < 3000; k++) {
        list(p, 16, 0);
        p[k % 16].d = 1000 + k;
        missed += cdb_pairs_memo_get(&m, cdb_pairs_hash(count, p, 16), count, p, 16) != 100 + k;
    }
    CU_ASSERT_EQUAL(missed, 0);
    cdb_pairs_memo_free(&m);
    CU_ASSERT_EQUAL(m.n, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"found by equal lists only", test_found_by_equal_lists_only},
        {"thousands of lists", test_many_lists},
    };
    return CUNIT_RUN("costdb_pairs_memo", tests);
}
