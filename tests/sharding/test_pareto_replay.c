/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memory levels' Pareto points found by replaying the first solve's
 * elimination (ilp_pareto.c, ILP_PARETO_REPLAY; docs/performance.md,
 * "Memory levels by replay") against the reference that solves every
 * weight of the bisection from scratch (ILP_PARETO_FRESH): the same
 * points, times, memories and solutions, bit for bit. On random ILPs with
 * chains, skip connections, twin pairs and cores left to CBC (ties,
 * forbidden strategies and pairs, nodes without memory, fixed nodes, with
 * and without a budget, both eliminating methods, 1 to 5 points, the
 * points again from the cache), and on whole stages of the zoo's GPT and
 * of Mixtral run both ways through the sharding context.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/context.h"
#include "sharding/ilp_int.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

#define MAXN 24
#define MAXK 5
#define MAXP 5

/* A random problem of n nodes: a chain, skip connections (series-parallel
 * parts), twin pairs (a-x, a-y, x-y, x-c, y-c) and, with extra, edges
 * that leave a core; costs and memory on coarse grids so ties abound. */
static ApprofIlp *random_problem(unsigned *seed, int n, int extra)
{
    ApprofIlp *p = NULL;
    int k[MAXN];
    CU_ASSERT_FATAL(approf_ilp_new(&p) == 0);
    for (int v = 0; v < n; v++) {
        double c[MAXK], m[MAXK];
        k[v] = rand_r(seed) % 6 == 0 ? 1 : 2 + rand_r(seed) % (MAXK - 1);
        for (int i = 0; i < k[v]; i++) {
            c[i] = (rand_r(seed) % 8) / 4.0;
            m[i] = (double)(rand_r(seed) % 5) * 1024.0;
        }
        if (k[v] > 1 && rand_r(seed) % 8 == 0)
            c[rand_r(seed) % k[v]] = INFINITY;
        CU_ASSERT_FATAL(approf_ilp_add_node(p, k[v], c, rand_r(seed) % 7 ? m : NULL) == v);
    }
    double r[MAXK * MAXK];
    for (int v = 1; v < n; v++) {
        /* the chain, a skip connection now and then, a twin pair */
        int ends[4][2] = {{v - 1, v}, {-1, -1}, {-1, -1}, {-1, -1}};
        if (v >= 2 && v % 4 == 1 && rand_r(seed) % 2 == 0)
            ends[1][0] = v - 2, ends[1][1] = v;
        if (v % 4 == 3 && rand_r(seed) % 2 == 0) {
            ends[2][0] = v - 3, ends[2][1] = v - 1;
            ends[3][0] = v - 2, ends[3][1] = v;
        }
        for (int q = 0; q < 4; q++) {
            int a = ends[q][0], b = ends[q][1];
            if (a < 0)
                continue;
            for (int i = 0; i < k[a] * k[b]; i++)
                r[i] = rand_r(seed) % 10 == 0 ? INFINITY : (rand_r(seed) % 6) / 8.0;
            r[0] = 0.0;  /* one pair stays allowed */
            CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, b, r) >= 0);
        }
    }
    for (int q = 0; q < extra; q++) {
        int a = rand_r(seed) % n, b = rand_r(seed) % n;
        if (a == b)
            continue;
        for (int i = 0; i < k[a] * k[b]; i++)
            r[i] = (rand_r(seed) % 6) / 8.0;
        CU_ASSERT_FATAL(approf_ilp_add_edge(p, a, b, r) >= 0);
    }
    return p;
}

typedef struct Points {
    int rc, n;
    int choices[MAXP * MAXN];
    double t[MAXP], m[MAXP];
} Points;

static Points points(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                     IlpParetoMode mode, int max_points)
{
    Points s;
    memset(&s, 0, sizeof s);
    s.rc = ilp_pareto_run(p, method, cache, mode, max_points, s.choices, s.t, s.m, &s.n, NULL);
    return s;
}

static int same_points(const Points *a, const Points *b, int n_nodes)
{
    return a->rc == b->rc && a->n == b->n &&
           !memcmp(a->choices, b->choices, (size_t)a->n * (size_t)n_nodes * sizeof(int)) &&
           !memcmp(a->t, b->t, (size_t)a->n * sizeof(double)) &&
           !memcmp(a->m, b->m, (size_t)a->n * sizeof(double));
}

static void test_random_problems(void)
{
    unsigned seed = 38;
    int compared = 0, several = 0, differ = 0;
    for (int trial = 0; trial < 300; trial++) {
        int n = 3 + rand_r(&seed) % (MAXN - 3), extra = trial % 40 == 5 ? 1 + rand_r(&seed) % 2 : 0;
        ApprofIlp *p = random_problem(&seed, n, extra);
        ApprofIlpMethod method =
            trial % 40 == 3 ? APPROF_ILP_ELIMINATE_TREES_THEN_CBC : APPROF_ILP_SERIES_PARALLEL;
        if (trial % 10 == 9)
            approf_ilp_set_memory_budget(p, 1024.0 * n);
        if (!approf_ilp_have_cbc() && extra)
            method = APPROF_ILP_SERIES_PARALLEL;
        int max_points = 1 + trial % MAXP;
        ApprofIlpCache *cache = NULL;
        CU_ASSERT_FATAL(approf_ilp_cache_new(&cache) == 0);
        Points ref = points(p, method, NULL, ILP_PARETO_FRESH, max_points);
        Points fast = points(p, method, cache, ILP_PARETO_REPLAY, max_points);
        Points again = points(p, method, cache, ILP_PARETO_REPLAY, max_points);
        if (ref.rc == APPROF_EUNSUPPORTED) {
            approf_ilp_cache_free(&cache);
            approf_ilp_free(&p);
            continue;
        }
        differ += !same_points(&ref, &fast, n) || !same_points(&ref, &again, n);
        compared++;
        several += ref.rc == 0 && ref.n > 1;
        approf_ilp_cache_free(&cache);
        approf_ilp_free(&p);
    }
    CU_ASSERT_EQUAL(differ, 0);
    /* the problems do have frontiers to bisect */
    CU_ASSERT(compared > 250);
    CU_ASSERT(several > 150);
}

/* Every memory level of a stage, through contexts whose caches solve the
 * Pareto points each way: the same programs. */
static void compare_stages(const ApprofGraph *g, const ApprofLayering *l,
                           const ApprofHardwareSpec *hw, const int (*meshes)[5], size_t n_meshes,
                           int max_levels, int *n_programs)
{
    ApprofShardContext *ctx[2] = {NULL, NULL};
    char err[256];
    for (int w = 0; w < 2; w++) {
        CU_ASSERT_FATAL(approf_shard_context_new(g, l, hw, 4, &ctx[w]) == 0);
        ilp_cache_set_pareto_mode(ctx[w]->cache, w ? ILP_PARETO_FRESH : ILP_PARETO_REPLAY);
    }
    for (size_t mi = 0; mi < n_meshes; mi++)
        for (int a = 0; a < l->n_layers; a++)
            for (int levels = 1; levels <= max_levels; levels += 2)
                for (int lvl = 0; lvl < levels; lvl++) {
                    ApprofShardRequest req;
                    ApprofStageProgram prog[2];
                    int rc[2];
                    memset(&req, 0, sizeof req);
                    req.start_layer = a;
                    req.end_layer = l->n_layers - 1;
                    req.mesh_hosts = meshes[mi][0];
                    req.mesh_gpus = meshes[mi][1];
                    req.logical_a = meshes[mi][2];
                    req.logical_b = meshes[mi][3];
                    req.force_batch_dim = meshes[mi][4];
                    req.method = APPROF_ILP_SERIES_PARALLEL;
                    req.memory_levels = levels;
                    req.variant.memory_level = lvl;
                    for (int w = 0; w < 2; w++) {
                        memset(&prog[w], 0, sizeof prog[w]);
                        rc[w] = approf_shard_stage(ctx[w], &req, &prog[w], err, sizeof err);
                    }
                    CU_ASSERT_EQUAL(rc[0], rc[1]);
                    if (!rc[0] && !rc[1]) {
                        CU_ASSERT_STRING_EQUAL(prog[0].signature, prog[1].signature);
                        CU_ASSERT(!memcmp(&prog[0].ilp_objective, &prog[1].ilp_objective,
                                          sizeof(double)));
                        CU_ASSERT_EQUAL_FATAL(prog[0].n_placements, prog[1].n_placements);
                        for (size_t i = 0; i < prog[0].n_placements; i++)
                            CU_ASSERT_STRING_EQUAL(prog[0].placements[i].spec,
                                                   prog[1].placements[i].spec);
                        (*n_programs)++;
                    }
                    for (int w = 0; w < 2; w++)
                        approf_stage_program_clear(&prog[w]);
                }
    for (int w = 0; w < 2; w++)
        approf_shard_context_free(&ctx[w]);
}

static void test_gpt_stages(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ApprofLayering l;
    ApprofHardwareSpec hw;
    int n = 0;
    static const int meshes[][5] = {{1, 8, 1, 8, -1}, {1, 8, 2, 4, 0}, {1, 4, 1, 4, -1},
                                    {1, 2, 2, 1, -1}};
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    CU_ASSERT_FATAL(approf_layers_auto(g, 2, 0.5, &l) == 0);
    compare_stages(g, &l, &hw, meshes, sizeof meshes / sizeof meshes[0], 5, &n);
    CU_ASSERT(n >= 40);
    approf_layering_free(&l);
    approf_graph_free(&g);
}

static void test_mixtral_stages(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofLayering l;
    ApprofHardwareSpec hw;
    char err[256];
    int n = 0;
    static const int meshes[][5] = {{1, 8, 1, 8, -1}, {2, 8, 2, 8, -1}, {1, 4, 2, 2, 0}};
    memset(&o, 0, sizeof o);
    o.preset = "mixtral-8x7b";
    o.num_layers = 2;
    o.batch = 2;
    o.seq_len = 512;
    o.dtype = "bf16";
    int rc = approf_zoo_build("mixtral", &o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "mixtral: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    CU_ASSERT_FATAL(approf_layers_auto(g, 2, 0.5, &l) == 0);
    compare_stages(g, &l, &hw, meshes, sizeof meshes / sizeof meshes[0], 3, &n);
    CU_ASSERT(n >= 20);
    approf_layering_free(&l);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"random problems: replayed points equal the fresh solves'", test_random_problems},
        {"GPT stages at every memory level, both ways", test_gpt_stages},
        {"Mixtral stages at every memory level, both ways", test_mixtral_stages},
    };
    return CUNIT_RUN("pareto replay", tests);
}
