/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the strategy ILP (profiler/sharding/ilp.h): on hundreds of random
 * small problems (DAGs of up to 6 nodes, up to 4 strategies, random
 * forbidden entries, with and without a memory budget) the optimum of every
 * method (tree elimination + CBC, CBC alone, exhaustive, series-parallel
 * elimination + CBC) equals an independent
 * brute-force enumeration written here; infeasible problems are reported as
 * such; the cache answers an identical problem without solving it again.
 * Mixture-of-experts layers as the sharding ILP sees them (not
 * series-parallel: a K4 minor) are solved by the twin-pair elimination
 * alone, with the brute-force optimum, whatever the node order.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cunit_run.h"
#include "graph.h"
#include "sharding/ilp.h"

#define MAXN 13
#define MAXK 4
/* Nodes of the random problems of random_prob. */
#define RAND_MAXN 6

typedef struct Rand {
    uint64_t s;
} Rand;

static uint64_t rnd(Rand *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static double rnd_unit(Rand *r)
{
    return (double)(rnd(r) >> 11) / (double)(1ULL << 53);
}

typedef struct Prob {
    int n, k[MAXN];
    double c[MAXN][MAXK], m[MAXN][MAXK];
    int ne, eu[MAXN * MAXN], ev[MAXN * MAXN];
    double r[MAXN * MAXN][MAXK * MAXK];
    double budget;
} Prob;

/* The oracle: every combination, no shared code with ilp.c. */
static double brute(const Prob *p, int *best)
{
    int cur[MAXN] = {0};
    double best_obj = INFINITY;
    for (;;) {
        double obj = 0, mem = 0;
        for (int v = 0; v < p->n; v++) {
            obj += p->c[v][cur[v]];
            mem += p->m[v][cur[v]];
        }
        for (int e = 0; e < p->ne; e++)
            obj += p->r[e][cur[p->eu[e]] * p->k[p->ev[e]] + cur[p->ev[e]]];
        if ((p->budget < 0 || mem <= p->budget) && obj < best_obj) {
            best_obj = obj;
            memcpy(best, cur, sizeof(cur));
        }
        int v = 0;
        while (v < p->n && ++cur[v] == p->k[v])
            cur[v++] = 0;
        if (v == p->n)
            break;
    }
    return best_obj;
}

static void random_prob(Rand *r, Prob *p, int with_budget)
{
    memset(p, 0, sizeof(*p));
    p->n = 1 + (int)(rnd(r) % RAND_MAXN);
    double total_mem = 0;
    for (int v = 0; v < p->n; v++) {
        p->k[v] = 1 + (int)(rnd(r) % MAXK);
        for (int i = 0; i < p->k[v]; i++) {
            p->c[v][i] = rnd_unit(r) < 0.12 ? INFINITY : (double)(rnd(r) % 100) + rnd_unit(r);
            p->m[v][i] = with_budget ? (double)(rnd(r) % 50) : 0.0;
            total_mem += p->m[v][i] / p->k[v];
        }
    }
    double dens = rnd_unit(r);
    for (int u = 0; u < p->n; u++)
        for (int v = u + 1; v < p->n; v++) {
            if (rnd_unit(r) > dens)
                continue;
            int e = p->ne++;
            /* Random orientation (producer may have the higher index). */
            if (rnd(r) & 1) {
                p->eu[e] = u;
                p->ev[e] = v;
            } else {
                p->eu[e] = v;
                p->ev[e] = u;
            }
            for (int q = 0; q < p->k[p->eu[e]] * p->k[p->ev[e]]; q++)
                p->r[e][q] = rnd_unit(r) < 0.1 ? INFINITY : (double)(rnd(r) % 60) * 0.5;
        }
    p->budget = with_budget ? total_mem * (0.6 + 0.6 * rnd_unit(r)) : -1.0;
}

static ApprofIlp *to_ilp(const Prob *p)
{
    ApprofIlp *ilp = NULL;
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    for (int v = 0; v < p->n; v++)
        CU_ASSERT_FATAL(approf_ilp_add_node(ilp, p->k[v], p->c[v], p->m[v]) == v);
    for (int e = 0; e < p->ne; e++)
        CU_ASSERT_FATAL(approf_ilp_add_edge(ilp, p->eu[e], p->ev[e], p->r[e]) == e);
    approf_ilp_set_memory_budget(ilp, p->budget);
    return ilp;
}

static void check_random(int with_budget, uint64_t seed, int count)
{
    Rand r = {seed};
    int feasible = 0, infeasible = 0, cbc_runs = 0;
    for (int t = 0; t < count; t++) {
        Prob p;
        random_prob(&r, &p, with_budget);
        int oracle_choice[MAXN];
        double oracle = brute(&p, oracle_choice);
        ApprofIlp *ilp = to_ilp(&p);
        const ApprofIlpMethod methods[4] = {APPROF_ILP_ELIMINATE_TREES_THEN_CBC, APPROF_ILP_CBC_ONLY, APPROF_ILP_EXHAUSTIVE,
                                            APPROF_ILP_SERIES_PARALLEL};
        for (int mi = 0; mi < 4; mi++) {
            int choice[MAXN];
            double obj = -1;
            ApprofIlpStats st;
            int rc = approf_ilp_solve(ilp, methods[mi], NULL, choice, &obj, &st);
            if (methods[mi] == APPROF_ILP_CBC_ONLY && !HAVE_CBC) {
                CU_ASSERT_EQUAL(rc, APPROF_EUNSUPPORTED);
                continue;
            }
            if (!isfinite(oracle)) {
                CU_ASSERT_EQUAL(rc, APPROF_EINFEASIBLE);
                continue;
            }
            if (rc != 0 || fabs(obj - oracle) > 1e-6 * (1 + fabs(oracle)))
                fprintf(stderr, "t=%d method=%d rc=%d obj=%g oracle=%g n=%d ne=%d\n", t, mi, rc, obj, oracle, p.n, p.ne);
            CU_ASSERT_EQUAL_FATAL(rc, 0);
            CU_ASSERT_DOUBLE_EQUAL(obj, oracle, 1e-6 * (1 + fabs(oracle)));
            CU_ASSERT_DOUBLE_EQUAL(approf_ilp_evaluate(ilp, choice), obj, 1e-9 * (1 + fabs(obj)));
            cbc_runs += st.used_cbc;
        }
        if (isfinite(oracle))
            feasible++;
        else
            infeasible++;
        approf_ilp_free(&ilp);
    }
    /* The generator must exercise both outcomes and, with CBC, the solver. */
    CU_ASSERT(feasible > count / 4);
    CU_ASSERT(infeasible > 0);
    if (HAVE_CBC)
        CU_ASSERT(cbc_runs > count / 4);
}

static void test_random_no_budget(void)
{
    check_random(0, 0x9e3779b97f4a7c15ULL, 300);
}

static void test_random_budget(void)
{
    check_random(1, 0x1234567887654321ULL, 200);
}

/* Adds edge u-v (random orientation) with random costs, forbidden pairs
 * with probability pinf. */
static void add_rand_edge(Rand *r, Prob *p, int u, int v, double pinf)
{
    int e = p->ne++;
    p->eu[e] = rnd(r) & 1 ? u : v;
    p->ev[e] = p->eu[e] == u ? v : u;
    for (int q = 0; q < p->k[p->eu[e]] * p->k[p->ev[e]]; q++)
        p->r[e][q] = rnd_unit(r) < pinf ? INFINITY : (double)(rnd(r) % 60) * 0.5;
}

/* One or two mixture-of-experts layers as the sharding ILP of a stage sees
 * them once the chains are reduced (zoo_llama.c's moe(): the expert GEMMs
 * and their activation are a chain from the dispatch to the combine, the
 * gate a chain from the norm to the router): x -> norm n; n -> router t,
 * n -> dispatch d, t -> d, d -> combine c, t -> c (the routing weights),
 * c -> residual o, x -> o; optionally shared experts (DeepSeekMoE) n -> s,
 * c -> s, s -> o instead of c -> o. o is the next layer's x. n, t, d and c
 * with the residual path are a K4 minor, so this is not series-parallel.
 * Node indices are a random permutation (the elimination visits nodes in
 * index order); strategies kmin..3, at most 2^18 combinations. */
static void moe_prob(Rand *r, Prob *p, int kmin, double pinf, int *layers)
{
    int perm[MAXN], n = 0, ids[MAXN];
    memset(p, 0, sizeof(*p));
    *layers = 1 + (int)(rnd(r) % 2);
    int shared = *layers == 1 && (rnd(r) & 1);
    p->n = 1 + 5 * *layers + shared;
    for (int v = 0; v < p->n; v++)
        perm[v] = v;
    for (int v = p->n - 1; v > 0; v--) {
        int j = (int)(rnd(r) % (uint64_t)(v + 1)), t = perm[v];
        perm[v] = perm[j];
        perm[j] = t;
    }
    long combos = 1;
    for (int v = 0; v < p->n; v++) {
        int k = kmin + (int)(rnd(r) % (uint64_t)(3 - kmin + 1));
        if (combos * k > (1L << 18))
            k = 1;
        combos *= k;
        p->k[v] = k;
        for (int i = 0; i < k; i++)
            p->c[v][i] = rnd_unit(r) < pinf ? INFINITY : (double)(rnd(r) % 100) + rnd_unit(r);
    }
    p->budget = -1.0;
    int x = perm[n++];
    for (int l = 0; l < *layers; l++) {
        for (int q = 0; q < 4 + shared; q++)
            ids[q] = perm[n++];
        int nn = ids[0], t = ids[1], d = ids[2], c = ids[3], o = perm[n++];
        add_rand_edge(r, p, x, nn, pinf);
        add_rand_edge(r, p, nn, t, pinf);
        add_rand_edge(r, p, nn, d, pinf);
        add_rand_edge(r, p, t, d, pinf);
        add_rand_edge(r, p, d, c, pinf);
        add_rand_edge(r, p, t, c, pinf);
        if (shared) {
            add_rand_edge(r, p, nn, ids[4], pinf);
            add_rand_edge(r, p, c, ids[4], pinf);
            add_rand_edge(r, p, ids[4], o, pinf);
        } else {
            add_rand_edge(r, p, c, o, pinf);
        }
        add_rand_edge(r, p, x, o, pinf);
        x = o;
    }
}

/* The series-parallel method solves mixture-of-experts layers without CBC
 * (the twin-pair rule; the trees-only method leaves a core when every node
 * has a choice), with the optimum of brute force and of CBC. */
static void test_moe_twin_pairs(void)
{
    Rand r = {0x5eed0f00dULL};
    int feasible = 0, pairs = 0;
    for (int t = 0; t < 120; t++) {
        Prob p;
        int layers, kmin = t % 3 ? 2 : 1;
        moe_prob(&r, &p, kmin, t % 2 ? 0.1 : 0.0, &layers);
        int oracle_choice[MAXN], choice[MAXN];
        double oracle = brute(&p, oracle_choice), obj = -1;
        ApprofIlp *ilp = to_ilp(&p);
        ApprofIlpStats st;
        int rc = approf_ilp_solve(ilp, APPROF_ILP_SERIES_PARALLEL, NULL, choice, &obj, &st);
        if (!isfinite(oracle)) {
            CU_ASSERT_EQUAL(rc, APPROF_EINFEASIBLE);
            approf_ilp_free(&ilp);
            continue;
        }
        feasible++;
        if (rc != 0 || fabs(obj - oracle) > 1e-9 * (1 + fabs(oracle)))
            fprintf(stderr, "moe t=%d rc=%d obj=%.17g oracle=%.17g n=%d\n", t, rc, obj, oracle, p.n);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        CU_ASSERT_DOUBLE_EQUAL(obj, oracle, 1e-9 * (1 + fabs(oracle)));
        CU_ASSERT_DOUBLE_EQUAL(approf_ilp_evaluate(ilp, choice), obj, 1e-12 * (1 + fabs(obj)));
        CU_ASSERT_EQUAL(st.core_nodes, 0);
        CU_ASSERT_EQUAL(st.used_cbc, 0);
        CU_ASSERT_EQUAL(st.eliminated, p.n);
        pairs += st.twin_pairs;
        int all_choices = 1;
        for (int v = 0; v < p.n; v++) {
            int allowed = 0;
            for (int i = 0; i < p.k[v]; i++)
                allowed += isfinite(p.c[v][i]);
            all_choices &= allowed > 1;
        }
        if (all_choices) {
            /* the K4 needs the rule: twins found, and without them a core */
            CU_ASSERT(st.twin_pairs >= 1);
            ApprofIlpStats st2;
            CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, choice,
                                             &obj, &st2), 0);
            CU_ASSERT_DOUBLE_EQUAL(obj, oracle, 1e-6 * (1 + fabs(oracle)));
            CU_ASSERT(st2.core_nodes >= 4);
            CU_ASSERT_EQUAL(st2.twin_pairs, 0);
        }
        if (HAVE_CBC) {
            double cbc = -1;
            CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_CBC_ONLY, NULL, choice, &cbc, NULL), 0);
            CU_ASSERT_DOUBLE_EQUAL(cbc, oracle, 1e-6 * (1 + fabs(oracle)));
        }
        approf_ilp_free(&ilp);
    }
    CU_ASSERT(feasible > 60);
    CU_ASSERT(pairs > 60);
}

static void test_infeasible(void)
{
    ApprofIlp *ilp = NULL;
    int choice[2];
    double obj;
    const double c[2] = {1, 2};
    const double r[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    approf_ilp_add_node(ilp, 2, c, NULL);
    approf_ilp_add_node(ilp, 2, c, NULL);
    approf_ilp_add_edge(ilp, 0, 1, r);
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, choice, &obj, NULL), APPROF_EINFEASIBLE);
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_EXHAUSTIVE, NULL, choice, &obj, NULL), APPROF_EINFEASIBLE);
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_CBC_ONLY, NULL, choice, &obj, NULL),
                    HAVE_CBC ? APPROF_EINFEASIBLE : APPROF_EUNSUPPORTED);
    approf_ilp_free(&ilp);
    CU_ASSERT_PTR_NULL(ilp);

    /* A node whose strategies are all forbidden. */
    const double bad[3] = {INFINITY, INFINITY, INFINITY};
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    approf_ilp_add_node(ilp, 3, bad, NULL);
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, choice, &obj, NULL), APPROF_EINFEASIBLE);
    approf_ilp_free(&ilp);

    /* Bad arguments. */
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    approf_ilp_add_node(ilp, 2, c, NULL);
    CU_ASSERT_EQUAL(approf_ilp_add_edge(ilp, 0, 0, r), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_ilp_add_edge(ilp, 0, 5, r), APPROF_EINVAL);
    CU_ASSERT_EQUAL(approf_ilp_add_node(ilp, 0, c, NULL), APPROF_EINVAL);
    approf_ilp_free(&ilp);
}

/* A 3x3 grid with 3 strategies per node is not series-parallel: the core
 * must reach the MIP solver, and the result must equal exhaustive search.
 * Costs are picked so that the optimum is known: strategy 1 everywhere
 * (node cost 1 each, 3 at the centre, equal pairs 0, others 5) gives 11. */
static void test_grid_known_optimum(void)
{
    ApprofIlp *ilp = NULL;
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    for (int v = 0; v < 9; v++) {
        double c[3] = {2.0, 1.0, 1.5};
        if (v == 4)
            c[1] = 3.0; /* centre prefers 0 or 2 alone, but its 4 edges win */
        approf_ilp_add_node(ilp, 3, c, NULL);
    }
    double r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[i * 3 + j] = i == j ? 0.0 : 5.0;
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) {
            if (x < 2)
                approf_ilp_add_edge(ilp, y * 3 + x, y * 3 + x + 1, r);
            if (y < 2)
                approf_ilp_add_edge(ilp, y * 3 + x, (y + 1) * 3 + x, r);
        }
    int choice[9];
    double obj = 0;
    ApprofIlpStats st;
    CU_ASSERT_EQUAL_FATAL(approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, choice, &obj, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(obj, 11.0, 1e-9);
    for (int v = 0; v < 9; v++)
        CU_ASSERT_EQUAL(choice[v], 1);
    CU_ASSERT(st.core_nodes > 0);
    CU_ASSERT_EQUAL(st.used_cbc, HAVE_CBC);
    double obj2 = 0;
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_EXHAUSTIVE, NULL, choice, &obj2, NULL), 0);
    CU_ASSERT_DOUBLE_EQUAL(obj2, 11.0, 1e-9);
    /* The grid is not series-parallel either: a core remains. */
    CU_ASSERT_EQUAL(approf_ilp_solve(ilp, APPROF_ILP_SERIES_PARALLEL, NULL, choice, &obj2, &st), 0);
    CU_ASSERT(st.core_nodes > 0);
    CU_ASSERT_DOUBLE_EQUAL(obj2, 11.0, 1e-9);
    approf_ilp_free(&ilp);
}

/* A chain is solved by elimination alone. */
static void test_chain_elimination(void)
{
    ApprofIlp *ilp = NULL;
    CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
    const double c0[2] = {0, 10}, c1[2] = {4, 0}, c2[2] = {0, 3};
    const double r[4] = {0, 1, 1, 0};
    approf_ilp_add_node(ilp, 2, c0, NULL);
    approf_ilp_add_node(ilp, 2, c1, NULL);
    approf_ilp_add_node(ilp, 2, c2, NULL);
    approf_ilp_add_edge(ilp, 0, 1, r);
    approf_ilp_add_edge(ilp, 1, 2, r);
    int choice[3];
    double obj;
    ApprofIlpStats st;
    CU_ASSERT_EQUAL_FATAL(approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, choice, &obj, &st), 0);
    /* 0,1,0: 0 + 0 + 0 + 1 + 1 = 2 (all zeros: 4). */
    CU_ASSERT_DOUBLE_EQUAL(obj, 2.0, 1e-12);
    CU_ASSERT_EQUAL(choice[0], 0);
    CU_ASSERT_EQUAL(choice[1], 1);
    CU_ASSERT_EQUAL(choice[2], 0);
    CU_ASSERT_EQUAL(st.core_nodes, 0);
    CU_ASSERT_EQUAL(st.used_cbc, 0);
    CU_ASSERT_EQUAL(st.eliminated, 3);
    approf_ilp_free(&ilp);
}

/* A degree-2 step reads both of its tables in place whichever end of
 * each edge the eliminated node is, and takes the first least strategy:
 * x (node 0, four strategies) between y (three) and z (two), the tables
 * given both ways round; x's strategies 1 and 3 tie at the optimum, 0 and
 * 2 cost more, and y's and z's first strategies are the cheaper ones. */
static void test_deg2_ties_both_ways(void)
{
    /* rxy[i][j] = a[i] + j / 2, rxz[i][l] = b[i] + l / 4: a + b is 1 at x
     * = 1 and 3, more at 0 and 2 */
    const double a[4] = {0, 1, 5, 0}, b[4] = {3, 0, 0, 1};
    const double cx[4] = {0, 0, 0, 0}, cy[3] = {0, 0, 0}, cz[2] = {0, 0};
    for (int way = 0; way < 4; way++) {
        double rxy[12], rxz[8];
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 3; j++)
                rxy[(way & 1) ? j * 4 + i : i * 3 + j] = a[i] + j * 0.5;
            for (int l = 0; l < 2; l++)
                rxz[(way & 2) ? l * 4 + i : i * 2 + l] = b[i] + l * 0.25;
        }
        ApprofIlp *ilp = NULL;
        CU_ASSERT_FATAL(approf_ilp_new(&ilp) == 0);
        approf_ilp_add_node(ilp, 4, cx, NULL);
        approf_ilp_add_node(ilp, 3, cy, NULL);
        approf_ilp_add_node(ilp, 2, cz, NULL);
        if (way & 1)
            approf_ilp_add_edge(ilp, 1, 0, rxy);
        else
            approf_ilp_add_edge(ilp, 0, 1, rxy);
        if (way & 2)
            approf_ilp_add_edge(ilp, 2, 0, rxz);
        else
            approf_ilp_add_edge(ilp, 0, 2, rxz);
        int choice[3];
        double obj;
        ApprofIlpStats st;
        CU_ASSERT_EQUAL_FATAL(approf_ilp_solve(ilp, APPROF_ILP_SERIES_PARALLEL, NULL, choice, &obj, &st), 0);
        CU_ASSERT_DOUBLE_EQUAL(obj, 1.0, 0.0);
        CU_ASSERT_EQUAL(choice[0], 1);
        CU_ASSERT_EQUAL(choice[1], 0);
        CU_ASSERT_EQUAL(choice[2], 0);
        CU_ASSERT_EQUAL(st.core_nodes, 0);
        approf_ilp_free(&ilp);
    }
}

/* The cache keeps its byte cap (set small through
 * APPROF_ILP_CACHE_CAP_BYTES): many problems solved through it, each
 * twice, hold at most the cap and one entry, and every answer is the one
 * solved without a cache. */
static void test_cache_cap(void)
{
    const size_t cap = 4096;
    char v[32];
    Rand r = {77};
    ApprofIlpCache *cache = NULL;
    snprintf(v, sizeof v, "%zu", cap);
    CU_ASSERT_FATAL(setenv("APPROF_ILP_CACHE_CAP_BYTES", v, 1) == 0);
    CU_ASSERT_FATAL(approf_ilp_cache_new(&cache) == 0);
    unsetenv("APPROF_ILP_CACHE_CAP_BYTES");
    size_t most = 0;
    for (int t = 0; t < 300; t++) {
        Prob p;
        random_prob(&r, &p, t % 2);
        ApprofIlp *ilp = to_ilp(&p);
        int c0[MAXN], c1[MAXN], c2[MAXN];
        double o0 = 0, o1 = 0, o2 = 0;
        int rc0 = approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, NULL, c0, &o0, NULL);
        int rc1 = approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cache, c1, &o1, NULL);
        int rc2 = approf_ilp_solve(ilp, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cache, c2, &o2, NULL);
        CU_ASSERT_FATAL(rc0 == rc1 && rc1 == rc2);
        if (rc0 == 0) {
            CU_ASSERT(o0 == o1 && o1 == o2);
            CU_ASSERT(!memcmp(c0, c1, (size_t)p.n * sizeof(int)) &&
                      !memcmp(c0, c2, (size_t)p.n * sizeof(int)));
        }
        size_t b = approf_ilp_cache_bytes(cache);
        if (b > most)
            most = b;
        /* the cap, one entry (a slot array of 64 and its choices) beyond */
        CU_ASSERT_FATAL(b <= cap + 64 * 64 + MAXN * sizeof(int) + 16);
        approf_ilp_free(&ilp);
    }
    CU_ASSERT(most > cap / 2);
    approf_ilp_cache_free(&cache);
}

static void test_cache(void)
{
    Rand r = {42};
    Prob p;
    do
        random_prob(&r, &p, 0);
    while (p.n < 4 || !isfinite(brute(&p, (int[MAXN]){0})));
    ApprofIlp *a = to_ilp(&p), *b = to_ilp(&p);
    ApprofIlpCache *cache = NULL;
    CU_ASSERT_FATAL(approf_ilp_cache_new(&cache) == 0);
    int c1[MAXN], c2[MAXN];
    double o1, o2;
    ApprofIlpStats s1, s2;
    CU_ASSERT_EQUAL_FATAL(approf_ilp_solve(a, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cache, c1, &o1, &s1), 0);
    CU_ASSERT_EQUAL_FATAL(approf_ilp_solve(b, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cache, c2, &o2, &s2), 0);
    CU_ASSERT_EQUAL(s1.cached, 0);
    CU_ASSERT_EQUAL(s2.cached, 1);
    CU_ASSERT_EQUAL(o1, o2);
    CU_ASSERT_EQUAL(memcmp(c1, c2, (size_t)p.n * sizeof(int)), 0);
    size_t hits, entries;
    approf_ilp_cache_counts(cache, &hits, &entries);
    CU_ASSERT_EQUAL(hits, 1);
    CU_ASSERT_EQUAL(entries, 1);
    char h1[33], h2[33];
    approf_ilp_hash(a, h1, sizeof(h1));
    approf_ilp_hash(b, h2, sizeof(h2));
    CU_ASSERT_STRING_EQUAL(h1, h2);
    /* A different problem misses. */
    const double one[1] = {0.0};
    approf_ilp_add_node(b, 1, one, NULL);
    int c3[MAXN + 1];
    CU_ASSERT_EQUAL(approf_ilp_solve(b, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, cache, c3, &o2, &s2), 0);
    CU_ASSERT_EQUAL(s2.cached, 0);
    approf_ilp_hash(b, h2, sizeof(h2));
    CU_ASSERT_STRING_NOT_EQUAL(h1, h2);
    approf_ilp_cache_free(&cache);
    approf_ilp_free(&a);
    approf_ilp_free(&b);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"random problems vs brute force", test_random_no_budget},
        {"random problems with memory budget", test_random_budget},
        {"mixture-of-experts layers by twin pairs", test_moe_twin_pairs},
        {"infeasible problems", test_infeasible},
        {"non-series-parallel grid", test_grid_known_optimum},
        {"chain by elimination", test_chain_elimination},
        {"degree-2 ties, tables either way round", test_deg2_ties_both_ways},
        {"solution cache", test_cache},
        {"solution cache under a byte cap", test_cache_cap},
    };
    return CUNIT_RUN("ilp", tests);
}
