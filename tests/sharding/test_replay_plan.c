/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The replay's plans (ilp_elim.c, plan_replay; docs/performance.md "The
 * memory levels' replays planned once"): a working problem kept from one
 * solve and replayed at many weights, in any order and again at a weight
 * already replayed, gives at each weight the choice and objective of a
 * fresh solve of the same problem at that weight, bit for bit. The
 * problems make every kind of plan: degree-2 steps for each instance of
 * the fill (x with 2 to 6, 8 and 70 strategies, z with 2 to 6), into a new
 * table and added into an edge that was there (a skip connection), twin
 * pairs of 3 x 2, 4 x 3 and other sizes with and without the twin's edges
 * to the outer nodes, and cores left to the core's solver (whose list the
 * plan keeps). The test counts that each kind was replayed.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "sharding/ilp_int.h"

#define MAXN 40
#define MAXK 70

/* Strategy counts that reach every instance of the degree-2 and pair
 * fills, 70 past the degree-2 step's stack. */
static int pick_k(unsigned *seed)
{
    static const int ks[] = {1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 6, 8};
    int q = rand_r(seed) % 64;
    return q == 0 ? 70 : ks[q % (int)(sizeof ks / sizeof ks[0])];
}

static void add_edge(ApprofIlp *p, unsigned *seed, const int *k, int a, int b)
{
    static double r[MAXK * MAXK];
    for (int i = 0; i < k[a] * k[b]; i++)
        r[i] = rand_r(seed) % 12 == 0 ? INFINITY : (rand_r(seed) % 6) / 8.0;
    r[0] = 0.0;
    CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, b, r) >= 0);
}

/* A chain with skip connections (v-2, v) and (v-3, v), twin pairs
 * (a, x, y, c: a-x, x-y, x-c and, or not, a-y and y-c) and, with extra,
 * random edges that leave a core; costs and memory on coarse grids so
 * that ties abound. */
static ApprofIlp *plan_problem(unsigned *seed, int n, int extra, int *k)
{
    ApprofIlp *p = NULL;
    CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
    for (int v = 0; v < n; v++) {
        static double c[MAXK], m[MAXK];
        k[v] = pick_k(seed);
        for (int i = 0; i < k[v]; i++) {
            c[i] = (rand_r(seed) % 8) / 4.0;
            m[i] = (double)(rand_r(seed) % 5) * 1024.0;
        }
        CU_ASSERT_FATAL(approf_ilp_add_node(p, k[v], c, rand_r(seed) % 9 ? m : NULL) == v);
    }
    for (int v = 1; v < n; v++) {
        int twin = v >= 3 && v % 5 == 3 && rand_r(seed) % 3 == 0;
        if (twin) {
            /* a = v-3, x = v-2, y = v-1, c = v; a-x and x-y from the chain */
            add_edge(p, seed, k, v - 1, v);
            add_edge(p, seed, k, v - 2, v);
            if (rand_r(seed) % 2)
                add_edge(p, seed, k, v - 3, v - 1);
            continue;
        }
        add_edge(p, seed, k, v - 1, v);
        if (v >= 2 && rand_r(seed) % 4 == 0)
            add_edge(p, seed, k, v - 2, v);
        else if (v >= 3 && rand_r(seed) % 6 == 0)
            add_edge(p, seed, k, v - 3, v);
    }
    for (int q = 0; q < extra; q++) {
        int a = rand_r(seed) % n, b = rand_r(seed) % n;
        if (a != b && (long)k[a] * k[b] <= 64)
            add_edge(p, seed, k, a, b);
    }
    return p;
}

typedef struct Seen {
    int deg2_new, deg2_add, deg2_big, pair_lone, pair_outer, pair_32, pair_43, cores;
    int deg2_kx[7];
} Seen;

static void note_plans(const Work *w, Seen *seen)
{
    for (int s = 0; s < w->nel; s++) {
        const Elim *el = &w->el[s];
        if (el->kind == EL_DEG2) {
            const Deg2Plan *pl = &w->plan[s].deg2;
            CU_ASSERT_EQUAL(pl->kx, w->n[el->x].k);
            if (pl->r == el->r)
                seen->deg2_new++;
            else
                seen->deg2_add++;
            seen->deg2_big += pl->kx > 64;
            if (pl->kx >= 2 && pl->kx <= 6)
                seen->deg2_kx[pl->kx]++;
        } else if (el->kind == EL_PAIR) {
            const PairPlan *pl = &w->plan[s].pair;
            if (pl->rya || pl->ryc)
                seen->pair_outer++;
            else
                seen->pair_lone++;
            seen->pair_32 += pl->kx == 3 && pl->ky == 2;
            seen->pair_43 += pl->kx == 4 && pl->ky == 3;
        }
    }
    seen->cores += w->n_core > 0;
}

static void test_replays_equal_fresh_solves(void)
{
    unsigned seed = 3801;
    int compared = 0, differ = 0;
    Seen seen;
    memset(&seen, 0, sizeof seen);
    for (int trial = 0; trial < 400; trial++) {
        int k[MAXN], n = 4 + rand_r(&seed) % (MAXN - 4);
        int extra = trial % 8 == 7 ? 1 + rand_r(&seed) % 2 : 0;
        ApprofIlp *p = plan_problem(&seed, n, extra, k);
        /* a core goes to CBC, or without CBC to the exhaustive search
         * (a solve it refuses is left out) */
        ApprofIlpMethod method = APPROF_ILP_SERIES_PARALLEL;
        int choice[MAXN], ref[MAXN];
        double obj = 0.0, robj = 0.0;
        ApprofIlpStats st;
        Work w;
        memset(&w, 0, sizeof w);
        approf_ilp_set_memory_weight(p, 0.0);
        int rc = ilp_solve_keep(p, method, NULL, choice, &obj, &st, &w, NULL);
        if (rc) {
            ilp_work_free(&w);
            approf_ilp_free(&p);
            continue;
        }
        /* weights up and down, one again, a large one */
        static const double weights[] = {1e-4, 3e-5, 1e-3, 3e-5, 0.0, 7e-4, 1e6, 1e-4};
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
        if (w.plan)
            note_plans(&w, &seen);
        ilp_work_free(&w);
        approf_ilp_free(&p);
    }
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(compared > 2000);
    /* every kind of plan was replayed */
    CU_ASSERT(seen.deg2_new > 0);
    CU_ASSERT(seen.deg2_add > 0);
    CU_ASSERT(seen.deg2_big > 0);
    for (int kx = 2; kx <= 6; kx++)
        CU_ASSERT(seen.deg2_kx[kx] > 0);
    CU_ASSERT(seen.pair_lone > 0);
    CU_ASSERT(seen.pair_outer > 0);
    CU_ASSERT(seen.pair_32 > 0);
    CU_ASSERT(seen.pair_43 > 0);
    CU_ASSERT(seen.cores > 0);
    printf("\n  %d replays; degree-2 plans: %d new, %d added, %d past the stack; pairs: %d lone, "
           "%d with outer edges (3x2: %d, 4x3: %d); %d with a core\n",
           compared, seen.deg2_new, seen.deg2_add, seen.deg2_big, seen.pair_lone,
           seen.pair_outer, seen.pair_32, seen.pair_43, seen.cores);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"replays by plan equal fresh solves at every weight", test_replays_equal_fresh_solves},
    };
    return CUNIT_RUN("replay plans", tests);
}
