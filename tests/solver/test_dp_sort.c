/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sorts of the exact search's tables (solver/dp_sort.c): a block's
 * items with an earlier block's order tried first, against the plain sort
 * (apsolve_dp_sort_items) and against the definition, (cost, config)
 * ascending; and the radix sort of non-negative doubles against qsort.
 * Random blocks share one hint the way dp_prep.c's shared_build shares one
 * per (length, submesh): costs from a handful of values (ties broken by
 * config), configs left out at random (a hint lacking a config or holding
 * extra ones), some blocks in the hint's order exactly, some one swap
 * away, and costs of -0 beside +0. Fails when a hinted sort takes an order
 * that is not the sorted one (a stale hint taken, a tie ordered by the
 * hint rather than by config) or leaves pos other than -1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "dp_int.h"

enum { C = 24, ROUNDS = 20000 };

static unsigned rng = 12345;

static unsigned next(void)
{
    rng = rng * 1103515245u + 12345u;
    return (rng >> 16) & 0x7fff;
}

static int in_order(const DpItem *a, int n)
{
    for (int k = 1; k < n; k++)
        if (!(a[k - 1].cost < a[k].cost ||
              (a[k - 1].cost == a[k].cost && a[k - 1].config < a[k].config)))
            return 0;
    return 1;
}

static void test_hinted_sort(void)
{
    static const double vals[] = {0.0, -0.0, 0.5, 1.0, 1.0 + 1e-15, 2.0, 3.5, 1e-300};
    int hint[C], hint_n = 0, pos[C], taken = 0, sorted = 0;
    DpItem last[C];
    int last_n = 0;
    for (int c = 0; c < C; c++)
        pos[c] = -1;
    for (int r = 0; r < ROUNDS; r++) {
        DpItem a[C], b[C], tmp[C];
        int n = 0, before = hint_n;
        unsigned kind = next() % 4;
        if (kind == 0 && last_n > 0) { /* the last block again, configs ascending */
            memcpy(a, last, (size_t)last_n * sizeof *a);
            n = last_n;
            for (int x = 1; x < n; x++) /* back to configs ascending */
                for (int y = x; y > 0 && a[y].config < a[y - 1].config; y--) {
                    DpItem t = a[y];
                    a[y] = a[y - 1];
                    a[y - 1] = t;
                }
            if (next() % 2 && n > 1) { /* one cost changed */
                int k = (int)(next() % (unsigned)n);
                a[k].cost = vals[next() % 8];
            }
        } else {
            for (int c = 0; c < C; c++)
                if (next() % 4 != 0) {
                    a[n].cost = vals[next() % (kind == 1 ? 3 : 8)];
                    a[n].mnss = 0;
                    a[n].config = c;
                    a[n].opt = 1000 + c;
                    n++;
                }
        }
        if (!n)
            continue;
        memcpy(b, a, (size_t)n * sizeof *b);
        apsolve_dp_sort_items(b, tmp, n);
        CU_ASSERT_TRUE(in_order(b, n));
        apsolve_dp_sort_items_hinted(a, tmp, n, hint, &hint_n, pos);
        CU_ASSERT_EQUAL(memcmp(a, b, (size_t)n * sizeof *a), 0);
        for (int c = 0; c < C; c++)
            CU_ASSERT_EQUAL(pos[c], -1);
        /* the hint is the block's order after a sort, else unchanged */
        if (hint_n == n && before != n)
            sorted++;
        else
            taken++;
        for (int k = 0; k < hint_n && hint_n == n; k++)
            CU_ASSERT_EQUAL(hint[k], a[k].config);
        memcpy(last, a, (size_t)n * sizeof *a);
        last_n = n;
    }
    /* both ways were taken often */
    CU_ASSERT_TRUE(taken > ROUNDS / 10);
    CU_ASSERT_TRUE(sorted > ROUNDS / 10);
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void test_sort_nonneg(void)
{
    for (int r = 0; r < 500; r++) {
        size_t n = next() % 3000;
        double *v = malloc((n ? n : 1) * sizeof *v), *w = malloc((n ? n : 1) * sizeof *w);
        CU_ASSERT_FATAL(v && w);
        for (size_t k = 0; k < n; k++) {
            unsigned x = next();
            v[k] = x % 50 == 0   ? INFINITY
                   : x % 7 == 0  ? (double)(next() % 10)
                   : r % 3 == 0  ? ldexp((double)next(), (int)(next() % 200) - 100)
                                 : (double)next() / 1024.0;
        }
        memcpy(w, v, n * sizeof *w);
        CU_ASSERT_EQUAL(apsolve_dp_sort_nonneg(v, n), 0);
        qsort(w, n, sizeof *w, cmp_double);
        CU_ASSERT_EQUAL(memcmp(v, w, n * sizeof *v), 0);
        free(v);
        free(w);
    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"hinted sort of a block's items is the sort's", test_hinted_sort},
        {"radix sort of non-negative doubles is qsort's", test_sort_nonneg},
    };
    return CUNIT_RUN("solver_dp_sort", tests);
}
