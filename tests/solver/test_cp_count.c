/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one rule of how many micro-batches a cp plan runs
 * (apsolve_cp_micro_batches, solver/session_cp.c; docs/context-parallel.md,
 * "One owner of the count"), against the two rules it replaced, written
 * out here as they were (base d26d0cd): --parallel's and --plan's
 * (session_cp.c cp_micro_batches) and the auto search's cp step
 * (session_autocp.c auto_cp_search), over every input each could see for
 * G < 97, m < 49, B < 9, cp in {2, 4, 8}: the same count, and the same
 * refusal or left-out candidate.
 */
#include <stdint.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"
#include "session_int.h"

/* --parallel / --plan before: *n, 1 where it refused (not whole); called
 * only with m <= 0 or cp dividing m (apsolve_run_cp refuses the rest) */
static int old_parallel(int64_t G, int64_t m, int B, int cp, int stored, int64_t *n)
{
    int64_t per = m > 0 ? m / cp : 0;
    if (stored > 0)
        *n = stored;
    else if (per > 0 && G > 0 && G % m) {
        if (G % per)
            return 1;
        *n = G / per;
    } else {
        *n = (int64_t)B * cp;
    }
    return 0;
}

/* the auto search's cp step before: the count, 0 where the candidate was
 * left out by it or by m % cp (with_cp: m > 0) */
static int64_t old_auto(int own, int64_t G, int64_t m, int B, int cp)
{
    int twin_only = !own && G > 0 && m > 0 && G % m != 0;
    int64_t count = twin_only ? (m % cp || G % (m / cp) ? 0 : G / (m / cp)) : (int64_t)B * cp;
    return m % cp || count <= 0 ? 0 : count;
}

static void test_parallel(void)
{
    static const int cps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++)
        for (int64_t G = -1; G < 97; G++)
            for (int64_t m = 0; m < 49; m++)
                for (int B = 1; B < 9; B++)
                    for (int stored = 0; stored < 4; stored += 3) {
                        int cp = cps[i];
                        int64_t n_old = -1, n_new = -1;
                        int refused;
                        ApsolveCpCount how;
                        if (m > 0 && m % cp)
                            continue;
                        refused = old_parallel(G, m, B, cp, stored, &n_old);
                        how = apsolve_cp_micro_batches(G, m, B, cp, stored, &n_new);
                        CU_ASSERT_EQUAL(how == APSOLVE_CP_COUNT_NOT_WHOLE, refused);
                        if (!refused)
                            CU_ASSERT_EQUAL(n_new, n_old);
                        /* the notice: counted from G where m does not divide it */
                        CU_ASSERT_EQUAL(how == APSOLVE_CP_COUNT_BATCH,
                                        !stored && m > 0 && G > 0 && G % m && !refused);
                    }
}

static void test_auto(void)
{
    static const int cps[] = {2, 4, 8};
    for (int i = 0; i < 3; i++)
        for (int64_t G = -1; G < 97; G++)
            for (int64_t m = 1; m < 49; m++)
                for (int own = 0; own < 2; own++)
                    for (int B = 1; B < 9; B++) {
                        int cp = cps[i];
                        int64_t n = -1;
                        /* what reaches the count: the main sweep's size
                         * divides a known G (count_micro_batches); another
                         * size needs G known, B = G / m or 1 (twin only) */
                        if (own && G > 0 && G % m)
                            continue;
                        if (!own && (G <= 0 || B != (G % m ? 1 : G / m)))
                            continue;
                        apsolve_cp_micro_batches(G, m, B, cp, 0, &n);
                        CU_ASSERT_EQUAL(n, old_auto(own, G, m, B, cp));
                    }
}

int main(void)
{
    static const CunitTest tests[] = {
        {"--parallel and --plan: the same count and refusals", test_parallel},
        {"the auto search's cp step: the same count and candidates", test_auto},
    };
    return CUNIT_RUN("solver-cp-count", tests);
}
