/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replay's fills called from its own loop with one scratch buffer
 * (ilp_elim.c, ilp_work_replay and plan_replay; docs/performance.md "The
 * intra-op ILP's replays: the fills called from the replay's loop"): the
 * buffer is sized once, by the plans, for the largest fill's sums, and
 * shared by every step of a replay. Problems mix small steps with steps
 * past the fills' stacks (a degree-2 step whose x has 70 strategies, twin
 * pairs of 16 x 16 strategies, whose sums take more than the pair step's
 * 256 doubles), in either order; every replay at several weights must give
 * a fresh solve's choice and objective bit for bit, and the buffer must
 * hold every plan's sums (the size a wrong sizing would miss: a pair's
 * base is larger than its x's count).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "sharding/ilp_int.h"

#define MAXN 32
#define MAXK 70

static void add_edge(ApprofIlp *p, unsigned *seed, const int *k, int a, int b)
{
    static double r[MAXK * MAXK];
    for (int i = 0; i < k[a] * k[b]; i++)
        r[i] = rand_r(seed) % 12 == 0 ? INFINITY : (rand_r(seed) % 6) / 8.0;
    r[0] = 0.0;
    CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, b, r) >= 0);
}

/* A chain (2 to 5 strategies a node) with skip connections and twin pairs
 * (x, y, a, c) whose x and y have, now and then, 16 strategies each, and
 * now and then a node of 70 strategies; big steps early or late. */
static ApprofIlp *scratch_problem(unsigned *seed, int n, int *k)
{
    ApprofIlp *p = NULL;
    CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
    int big_pair = rand_r(seed) % 2;
    for (int v = 0; v < n; v++) {
        static double c[MAXK], m[MAXK];
        k[v] = 2 + rand_r(seed) % 4;
        if (rand_r(seed) % 16 == 0)
            k[v] = 70;
        /* a twin pair's x and y (v % 5 == 0, 1: see below) */
        if (big_pair && v % 5 < 2 && rand_r(seed) % 2)
            k[v] = 16;
        for (int i = 0; i < k[v]; i++) {
            c[i] = (rand_r(seed) % 8) / 4.0;
            m[i] = (double)(rand_r(seed) % 5) * 1024.0;
        }
        CU_ASSERT_FATAL(approf_ilp_add_node(p, k[v], c, rand_r(seed) % 9 ? m : NULL) == v);
    }
    for (int v = 1; v < n; v++) {
        if (v >= 3 && v % 5 == 3) {
            /* x = v-3, y = v-2, a = v-1, c = v (x is reached first, of
             * degree 3, its twin y); x-y and y-a from the chain */
            add_edge(p, seed, k, v - 1, v);
            add_edge(p, seed, k, v - 3, v - 1);
            add_edge(p, seed, k, v - 3, v);
            if (rand_r(seed) % 2)
                add_edge(p, seed, k, v - 2, v);
            continue;
        }
        add_edge(p, seed, k, v - 1, v);
        if (v >= 2 && rand_r(seed) % 4 == 0 && (long)k[v - 2] * k[v] <= 64)
            add_edge(p, seed, k, v - 2, v);
    }
    return p;
}

static void test_shared_scratch_replays(void)
{
    unsigned seed = 3838;
    int compared = 0, differ = 0, big_deg2 = 0, big_pair = 0, small_after_big = 0;
    for (int trial = 0; trial < 300; trial++) {
        int k[MAXN], n = 6 + rand_r(&seed) % (MAXN - 6);
        ApprofIlp *p = scratch_problem(&seed, n, k);
        ApprofIlpMethod method = APPROF_ILP_SERIES_PARALLEL;
        int choice[MAXN], ref[MAXN];
        double obj = 0.0, robj = 0.0;
        ApprofIlpStats st;
        Work w;
        memset(&w, 0, sizeof w);
        approf_ilp_set_memory_weight(p, 0.0);
        if (ilp_solve_keep(p, method, NULL, choice, &obj, &st, &w, NULL)) {
            ilp_work_free(&w);
            approf_ilp_free(&p);
            continue;
        }
        static const double weights[] = {1e-4, 3e-5, 1e-3, 0.0, 1e6};
        for (size_t q = 0; q < sizeof weights / sizeof weights[0]; q++) {
            approf_ilp_set_memory_weight(p, weights[q]);
            int rrc = ilp_solve_replay(p, method, &w, choice, &obj);
            int frc = approf_ilp_solve(p, method, NULL, ref, &robj, NULL);
            CU_ASSERT_EQUAL(rrc, frc);
            if (rrc != frc)
                differ++;
            else if (!rrc)
                differ += memcmp(choice, ref, (size_t)n * sizeof(int)) != 0 ||
                          memcmp(&obj, &robj, sizeof obj) != 0;
            compared++;
        }
        /* the one buffer holds every plan's sums */
        if (w.plan) {
            int seen_big = 0;
            CU_ASSERT(w.cap_scratch >= w.plan_scratch);
            for (int s = 0; s < w.nel; s++) {
                size_t need = 0;
                if (w.el[s].kind == EL_DEG2) {
                    need = (size_t)w.plan[s].deg2.kx;
                    big_deg2 += need > 64;
                } else if (w.el[s].kind == EL_PAIR) {
                    need = ilp_pair_scratch(&w.plan[s].pair);
                    big_pair += need > 256;
                } else {
                    continue;
                }
                CU_ASSERT(need <= w.plan_scratch);
                small_after_big += seen_big && need <= 64;
                seen_big |= need > 64;
            }
        }
        ilp_work_free(&w);
        approf_ilp_free(&p);
    }
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(compared > 1000);
    CU_ASSERT(big_deg2 > 0);
    CU_ASSERT(big_pair > 0);
    CU_ASSERT(small_after_big > 0);
    printf("\n  %d replays; %d degree-2 steps past 64 strategies, %d pair steps past 256 sums, "
           "%d small steps after a big one\n",
           compared, big_deg2, big_pair, small_after_big);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"replays with one shared scratch equal fresh solves", test_shared_scratch_replays},
    };
    return CUNIT_RUN("ilprep scratch", tests);
}
