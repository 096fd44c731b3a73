/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Out-of-memory figures held once per distinct value (solver/unfit_share.h):
 * a problem filled through ApsolveUnfitShare holds, for every cell, the
 * same figures bit for bit as one filled through apsolve_unfit_put, each
 * distinct figure once; a figure shared by several cells is never written
 * when one of them is given others; a clone keeps the sharing; figures put
 * by the caller's key give the same table as plain puts.
 */
#include <math.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "cunit_run.h"
#include "unfit_share.h"

/* The figures of value v (distinct v, distinct bytes). */
static ApsolveUnfit figs_of(unsigned v)
{
    ApsolveUnfit u = {0.25 * (double)(v % 13), 1.5 + (double)(v / 13), v % 3 ? 0.02 : -1.0,
                      {(int64_t)v * 1000, 4000, 200, 8000}};
    return u;
}

static int same(const ApsolveUnfit *a, const ApsolveUnfit *b)
{
    return a && b ? !memcmp(a, b, sizeof *a) : a == b;
}

/* Cells of a 30-layer, 4 x 16 problem given values v(k) < distinct (or
 * none, one cell in five) through share and through apsolve_unfit_put. */
static void check_shared(unsigned distinct)
{
    ApsolveProblem *p = NULL, *q = NULL, *c = NULL;
    ApsolveUnfitShare s = {0};
    size_t n;
    unsigned r = 777;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(30, 1, 16, 4, 16, 1, &p), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(30, 1, 16, 4, 16, 1, &q), APSOLVE_OK);
    n = apsolve_problem_cells(p);
    for (size_t k = 0; k < n; k++) {
        ApsolveUnfit u;
        r = r * 1103515245u + 12345u;
        if ((r >> 8) % 5 == 0)
            continue;
        u = figs_of((r >> 4) % distinct);
        CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, k, &u), APSOLVE_OK);
        CU_ASSERT_EQUAL_FATAL(apsolve_unfit_put(q, k, &u), APSOLVE_OK);
    }
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    apsolve_unfit_share_free(&s);
    CU_ASSERT_FATAL(p->unfit_table && q->unfit_table);
    CU_ASSERT(p->unfit_table->n <= distinct);
    CU_ASSERT(q->unfit_table->n > distinct);
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_clone(p, &c), APSOLVE_OK);
    for (size_t k = 0; k < n; k++) {
        CU_ASSERT(same(apsolve_unfit_at(p, k), apsolve_unfit_at(q, k)));
        CU_ASSERT(same(apsolve_unfit_at(c, k), apsolve_unfit_at(q, k)));
    }
    CU_ASSERT_EQUAL(c->unfit_table->n, p->unfit_table->n);
    apsolve_problem_free(&c);
    apsolve_problem_free(&q);
    apsolve_problem_free(&p);
}

static void test_few_distinct(void)
{
    check_shared(7);
}

/* More distinct figures than the index's first 4096 slots hold. */
static void test_index_grows(void)
{
    check_shared(5000);
}

/* Cells 0, 1 and 2 share figures a (none stored before the flush); cell 1
 * given b, cell 2 given a again, cells 0 and 2 given none (NaN, < 0): the
 * others keep theirs. */
static void test_shared_never_written(void)
{
    ApsolveProblem *p = NULL;
    ApsolveUnfitShare s = {0};
    ApsolveUnfit a = figs_of(1), b = figs_of(2), c = figs_of(3), none = a;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(4, 1, 4, 3, 2, 1, &p), APSOLVE_OK);
    for (size_t k = 0; k < 3; k++)
        CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, k, &a), APSOLVE_OK);
    CU_ASSERT_PTR_NULL(p->unfit_table); /* waiting */
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    CU_ASSERT_EQUAL(p->unfit_table->n, 1);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_put(p, 1, &b), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_put(p, 2, &a), APSOLVE_OK);
    CU_ASSERT_EQUAL(p->unfit_table->n, 2);
    CU_ASSERT(same(apsolve_unfit_at(p, 0), &a));
    CU_ASSERT(same(apsolve_unfit_at(p, 1), &b));
    CU_ASSERT(same(apsolve_unfit_at(p, 2), &a));
    none.fwd = NAN;
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, 0, &none), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    CU_ASSERT_PTR_NULL(apsolve_unfit_at(p, 0));
    none.fwd = -1;
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, 2, &none), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    CU_ASSERT_PTR_NULL(apsolve_unfit_at(p, 2));
    CU_ASSERT(same(apsolve_unfit_at(p, 1), &b));
    /* a cell that had figures given held ones: it points at them; puts in
     * one batch are done in order (cell 1: a, then c, new, then a) */
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, 1, &a), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, 1, &c), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&s, p, 1, &a), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    CU_ASSERT(same(apsolve_unfit_at(p, 1), &a));
    CU_ASSERT_EQUAL(p->unfit_table->n, 3);
    apsolve_unfit_share_free(&s);
    apsolve_problem_free(&p);
}

/* Figures put by key (apsolve_unfit_share_put_known first, put_keyed
 * when the key is not known yet; key v + 1 for values v, values v % 11 == 0
 * with no figures) give every cell the same slot value as plain puts of
 * the same figures in the same order: the same table, byte for byte. */
static void check_keyed(unsigned distinct)
{
    ApsolveProblem *p = NULL, *q = NULL;
    ApsolveUnfitShare s = {0}, t = {0};
    size_t n, hits = 0;
    unsigned r = 4242;
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(30, 1, 16, 4, 16, 1, &p), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_problem_new(30, 1, 16, 4, 16, 1, &q), APSOLVE_OK);
    n = apsolve_problem_cells(p);
    for (size_t k = 0; k < n; k++) {
        unsigned v;
        ApsolveUnfit u;
        int rc;
        r = r * 1103515245u + 12345u;
        if ((r >> 8) % 5 == 0)
            continue;
        v = (r >> 4) % distinct;
        u = figs_of(v);
        if (v % 11 == 0)
            u.fwd = -1.0;
        rc = apsolve_unfit_share_put_known(&s, p, k, (uint64_t)v + 1);
        CU_ASSERT_FATAL(rc == 0 || rc == 1);
        hits += (size_t)rc;
        if (!rc)
            CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put_keyed(&s, p, k, (uint64_t)v + 1, &u),
                                  APSOLVE_OK);
        CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_put(&t, q, k, &u), APSOLVE_OK);
    }
    CU_ASSERT_EQUAL(apsolve_unfit_share_put_known(&s, p, 0, 0), 0); /* key 0: none */
    CU_ASSERT_EQUAL(apsolve_unfit_share_put_known(&s, p, 0, (uint64_t)distinct + 7), 0);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&s, p), APSOLVE_OK);
    CU_ASSERT_EQUAL_FATAL(apsolve_unfit_share_flush(&t, q), APSOLVE_OK);
    apsolve_unfit_share_free(&s);
    apsolve_unfit_share_free(&t);
    CU_ASSERT(hits > n / 2);
    CU_ASSERT_FATAL(p->unfit_table && q->unfit_table);
    CU_ASSERT_EQUAL(p->unfit_table->n, q->unfit_table->n);
    CU_ASSERT(!memcmp(p->unfit_table->slot, q->unfit_table->slot, n * sizeof(uint32_t)));
    CU_ASSERT(!memcmp(p->unfit_table->figs, q->unfit_table->figs,
                      q->unfit_table->n * sizeof(ApsolveUnfit)));
    apsolve_problem_free(&q);
    apsolve_problem_free(&p);
}

static void test_keyed_few(void)
{
    check_keyed(7);
}

/* More keys than the keys' first 4096 slots hold. */
static void test_keyed_grows(void)
{
    check_keyed(5000);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"7 distinct figures: the same cells, each figure once", test_few_distinct},
        {"5000 distinct figures: the index grows", test_index_grows},
        {"a shared figure is never written", test_shared_never_written},
        {"7 keys: the same slots as plain puts", test_keyed_few},
        {"5000 keys: the keys grow, the same slots", test_keyed_grows},
    };
    return CUNIT_RUN("unfit figures shared", tests);
}
