/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What ZB-V's search returns against every plan (issue 38; docs/
 * performance.md, "ZB-V's search against every plan"). The brute force
 * below enumerates every contiguous cut of the layers into stages of whole
 * chunks (two per stage under ZB-V), every submesh per stage with the
 * devices summing to exactly the problem's, and every allowed config of
 * each stage, and prices each plan with the code apsolve prices its chosen
 * plan with (evaluate.c: apsolve_stage_fill for each stage's memory fit at
 * its position, apsolve_plan_price for the schedule's time, ZB-V's the
 * makespan of PyTorch's V order, the apply step and the feasibility).
 * Checked on random problems:
 *
 * - apsolve's plan re-priced by that code is its reported objective, and
 *   feasible (the reported objective is the chosen plan's);
 * - no plan is below apsolve's under the schedules whose objective the DP
 *   minimises exactly (1F1B, GPipe: the control);
 * - under ZB-V, ZB-H1 and interleaved ZB apsolve's plan is never below the
 *   best plan (it is one of them), and how often and by how much it is
 *   above it is printed: the search keeps, per stage count, the least-sum
 *   plan of each threshold it runs (dp.c), which is not the least
 *   zero-bubble time;
 * - under ZB-V the --db shortcuts below find the same best.
 *
 * With `--db FILE [--sweep ID] [--cut L0,L1,..] [--shape HxG]
 * [--ignore-memory]` the program instead prints apsolve's ZB-V plan (the
 * DP's search of one sweep, apsolve_solve, with the options try_chunks
 * gives it: the full objective, the sweep's micro-batches, whole chunks,
 * 5 % headroom in the search) and the best plan strictly below it (with
 * --cut, the best plan of that cut; with --shape, every stage on submesh
 * HxG). Shortcuts there, exact for ZB-V up to rounding: configs another
 * beats in every pass and the apply step are left out, a choice whose
 * floor (the stages not chosen yet at their lists' least passes; the
 * makespan is a longest path, no longer with shorter passes) is above the
 * best is cut, and a stage range whose least cost x B is above the best
 * is never placed (every device works B x its stage).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "cunit_run.h"
#include "oracle.h"
#include "schedule.h"
#include "solver_int.h"

#define MAX_N 16

typedef struct Zb {
    const ApsolveProblem *p;
    const ApsolveOptions *o;
    int prune;                         /* leave out configs another dominates */
    int cut[MAX_N];                    /* --cut: layers per stage (0: any) */
    int cut_n, cut_s;                  /* its stage count; --shape: submesh + 1 (0: any) */
    ApsolveStage st[MAX_N], best_st[MAX_N];
    ApsolveStage *cand[MAX_N];         /* per stage, the configs that fit there */
    int ncand[MAX_N];
    int best_n;
    double best, seed;                 /* seed: the best to start from (0: +inf) */
    long plans, feasible;
} Zb;

/* Prices the plan of n stages in st as apsolve prices its own (each stage
 * filled at its position, then the plan). */
static void zb_price(Zb *z, const ApsolveStage *in, int n)
{
    ApsolvePlan pl;
    ApsolveStage st[MAX_N];
    memset(&pl, 0, sizeof pl);
    memcpy(st, in, (size_t)n * sizeof *st);
    for (int k = 0; k < n; k++)
        apsolve_stage_fill(z->p, z->o, &st[k], n - k, n);
    pl.stages = st;
    pl.n_stages = (size_t)n;
    apsolve_plan_price(z->p, z->o, &pl);
    z->plans++;
    if (!pl.feasible)
        return;
    z->feasible++;
    if (pl.total_cost < z->best) {
        z->best = pl.total_cost;
        z->best_n = n;
        memcpy(z->best_st, st, (size_t)n * sizeof *st);
    }
}

/* With z->prune: a floor of every plan that keeps stages 0 .. k - 1 of
 * z->st and takes any listed config for the rest, each of those stages at
 * the least forward, input-gradient, weight-gradient and apply seconds of
 * its list (the V order's makespan is a longest path through its passes,
 * so no longer with shorter passes; cost = fwd + bwd, checked by
 * zb_dominates' callers' lists). */
static double zb_floor(Zb *z, int k, int n)
{
    ApsolvePlan pl;
    ApsolveStage st[MAX_N];
    memset(&pl, 0, sizeof pl);
    memcpy(st, z->st, (size_t)n * sizeof *st);
    for (int q = k; q < n; q++) {
        double f = INFINITY, x = INFINITY, w = INFINITY, a = INFINITY;
        for (int c = 0; c < z->ncand[q]; c++) {
            const ApsolveStage *t = &z->cand[q][c];
            f = t->fwd_cost < f ? t->fwd_cost : f;
            x = t->bwd_cost - t->wgrad_cost < x ? t->bwd_cost - t->wgrad_cost : x;
            w = t->wgrad_cost < w ? t->wgrad_cost : w;
            a = t->apply_cost < a ? t->apply_cost : a;
        }
        st[q] = z->cand[q][0];
        st[q].fwd_cost = f;
        st[q].wgrad_cost = w;
        st[q].bwd_cost = x + w;
        st[q].cost = f + x + w;
        st[q].apply_cost = a;
    }
    pl.stages = st;
    pl.n_stages = (size_t)n;
    apsolve_plan_price(z->p, z->o, &pl);
    return pl.total_cost;
}

/* Every choice of config per stage from the lists, stage k onwards (with
 * z->prune, the choices whose floor is above the best so far left out). */
static void zb_product(Zb *z, int k, int n)
{
    if (k == n) {
        zb_price(z, z->st, n);
        return;
    }
    if (z->prune && zb_floor(z, k, n) > z->best * (1 + 1e-9))
        return;
    for (int q = 0; q < z->ncand[k]; q++) {
        z->st[k] = z->cand[k][q];
        zb_product(z, k + 1, n);
    }
}

static int cmp_stage_cost(const void *a, const void *b)
{
    double x = ((const ApsolveStage *)a)->cost, y = ((const ApsolveStage *)b)->cost;
    return x < y ? -1 : x > y;
}

/* Whether stage a is no slower than b in every pass and the apply step,
 * both with cost = fwd + bwd: the V order's makespan (a longest path
 * through its passes) and the plan's objective are then no higher with a
 * (up to rounding; --db only, where that does not matter). */
static int zb_dominates(const ApsolveStage *a, const ApsolveStage *b)
{
    return a->cost == a->fwd_cost + a->bwd_cost && b->cost == b->fwd_cost + b->bwd_cost &&
           a->fwd_cost <= b->fwd_cost && a->wgrad_cost <= b->wgrad_cost &&
           a->bwd_cost - a->wgrad_cost <= b->bwd_cost - b->wgrad_cost &&
           a->apply_cost <= b->apply_cost;
}

/* A cut of n stages with its submeshes in z->st: each stage's configs
 * that are allowed, finite and fit at its position (a plan with any other
 * is infeasible), then every choice of them. */
static void zb_cut(Zb *z, int n)
{
    const ApsolveProblem *p = z->p;
    int ok = 1;
    for (int k = 0; k < n && ok; k++) {
        ApsolveStage st = z->st[k];
        z->ncand[k] = 0;
        for (int c = 0; c < p->num_configs; c++) {
            int kept = 1;
            st.config = c;
            if (!apsolve_config_allowed(p, z->o, st.submesh, c))
                continue;
            apsolve_stage_fill(p, z->o, &st, n - k, n);
            if (isinf(st.cost) || !st.memory_ok)
                continue;
            for (int q = 0; z->prune && q < z->ncand[k] && kept; q++)
                kept = !zb_dominates(&z->cand[k][q], &st);
            if (!kept)
                continue;
            for (int q = 0; z->prune && q < z->ncand[k];)
                if (zb_dominates(&st, &z->cand[k][q]))
                    z->cand[k][q] = z->cand[k][--z->ncand[k]];
                else
                    q++;
            z->cand[k][z->ncand[k]++] = st;
        }
        ok = z->ncand[k] > 0;
        if (z->prune) /* the cheapest first: a low best early */
            qsort(z->cand[k], (size_t)z->ncand[k], sizeof *z->cand[k], cmp_stage_cost);
    }
    if (ok && z->cut_n) { /* --db --cut: what the product holds */
        printf("configs that fit, per stage:");
        for (int k = 0; k < n; k++)
            printf(" %d", z->ncand[k]);
        printf("\n");
        fflush(stdout);
    }
    if (ok)
        zb_product(z, 0, n);
}

/* The least cost of layers i..j on submesh s over the allowed configs. */
static double stage_least(const Zb *z, int i, int j, int s)
{
    double m = INFINITY;
    for (int c = 0; c < z->p->num_configs; c++)
        if (apsolve_config_allowed(z->p, z->o, s, c)) {
            double x = apsolve_entry_cost(z->p, apsolve_index(z->p, i, j, s, c));
            m = x < m ? x : m;
        }
    return m;
}

static void zb_rec(Zb *z, int i, int left, int n)
{
    const ApsolveProblem *p = z->p;
    if (i == p->num_layers) {
        if (left == 0 && (!z->cut_n || n == z->cut_n))
            zb_cut(z, n);
        return;
    }
    if (n >= MAX_N || (z->o->max_stages > 0 && n >= z->o->max_stages) ||
        (z->cut_n && n >= z->cut_n))
        return;
    for (int j = i; j < p->num_layers; j++) {
        if (z->o->whole_chunks && !apsolve_chunks_whole(z->o, i, j))
            continue;
        if (z->cut_n && j - i + 1 != z->cut[n])
            continue;
        for (int s = 0; s < p->num_submeshes; s++) {
            int dev = p->submeshes[s].hosts * p->submeshes[s].gpus;
            if (dev > left || (z->cut_s > 0 && s != z->cut_s - 1))
                continue;
            if (z->prune && stage_least(z, i, j, s) * z->o->micro_batches > z->best * (1 + 1e-9))
                continue; /* every device works B x its stage: above the best */
            memset(&z->st[n], 0, sizeof z->st[n]);
            z->st[n].start_layer = i;
            z->st[n].end_layer = j;
            z->st[n].submesh = s;
            zb_rec(z, j + 1, left - dev, n + 1);
        }
    }
}

/* The least objective of every plan (+inf: none feasible), its plan in z
 * (z's prune and cut set by the caller). */
static double zb_brute(Zb *z, const ApsolveProblem *p, const ApsolveOptions *o)
{
    int ok = 1;
    z->p = p;
    z->o = o;
    z->best = z->seed > 0 ? z->seed : INFINITY;
    z->best_n = 0;
    z->plans = z->feasible = 0;
    for (int k = 0; k < MAX_N; k++)
        ok &= (z->cand[k] = malloc((size_t)p->num_configs * sizeof *z->cand[k])) != NULL;
    if (ok)
        zb_rec(z, 0, p->num_devices, 0);
    for (int k = 0; k < MAX_N; k++)
        free(z->cand[k]);
    return ok ? z->best : NAN;
}

/* apsolve's plan re-priced stage by stage: its reported objective, and
 * feasible. */
static int repriced_same(const ApsolveProblem *p, const ApsolveOptions *o, const ApsolvePlan *pl)
{
    Zb z;
    ApsolveStage st[MAX_N];
    memset(&z, 0, sizeof z);
    memset(st, 0, sizeof st);
    z.p = p;
    z.o = o;
    z.best = INFINITY;
    if (pl->n_stages > MAX_N)
        return 0;
    for (size_t k = 0; k < pl->n_stages; k++) {
        st[k].start_layer = pl->stages[k].start_layer;
        st[k].end_layer = pl->stages[k].end_layer;
        st[k].submesh = pl->stages[k].submesh;
        st[k].config = pl->stages[k].config;
    }
    zb_price(&z, st, (int)pl->n_stages);
    return z.feasible == 1 && z.best == pl->total_cost;
}

static ApsolveProblem *random_problem(uint64_t *rng, int t)
{
    static const int shapes[][2] = {{1, 4}, {2, 2}, {1, 8}, {2, 4}};
    OracleGen g;
    ApsolveProblem *p = NULL;
    memset(&g, 0, sizeof g);
    g.layers = 4 + 2 * (int)(oracle_rand(rng) % (t % 4 >= 2 ? 2 : 3)); /* 4 .. 8, even */
    g.hosts = shapes[t % 4][0];
    g.gpus = shapes[t % 4][1];
    g.inf_prob = 0.05 + 0.15 * oracle_uniform(rng);
    g.mem_prob = 0.3;
    g.max_limit = 6;
    g.integer_costs = 0;
    g.noise = 0.4;
    g.device_exponent = t % 2 ? 0.7 : 1.0;
    CU_ASSERT_FATAL(oracle_make_problem(&g, rng, &p) == APSOLVE_OK);
    CU_ASSERT_FATAL(oracle_add_passes(p, rng) == APSOLVE_OK);
    if (t % 3)
        CU_ASSERT_FATAL(oracle_add_memory(p, rng) == APSOLVE_OK);
    return p;
}

static const int k_b[] = {2, 3, 4, 6, 8};

/* One schedule over random problems: apsolve against the brute force.
 * Returns the problems where apsolve is above the best (misses); *worst
 * the largest apsolve / best - 1. */
static int run_schedule(int schedule, int v, int problems, double *worst, int *compared,
                        long *prune_priced, long *all_priced)
{
    uint64_t rng = 0x2BF5EEDull + (uint64_t)schedule;
    int missed = 0;
    *worst = 0;
    *compared = 0;
    for (int t = 0; t < problems; t++) {
        ApsolveProblem *p = random_problem(&rng, t);
        ApsolveOptions o;
        ApsolvePlan *pl = NULL;
        Zb z;
        double best;
        int rc;
        memset(&o, 0, sizeof o);
        o.micro_batches = k_b[oracle_rand(&rng) % 5];
        o.objective = APSOLVE_OBJECTIVE_FULL;
        o.schedule = schedule;
        o.virtual_stages = v;
        o.whole_chunks = v > 1;
        memset(&z, 0, sizeof z);
        best = zb_brute(&z, p, &o);
        CU_ASSERT_FATAL(!isnan(best));
        if (schedule == APSOLVE_SCHEDULE_ZBV) {
            /* --db's shortcuts (dominated configs, floors) keep the best;
             * the rounding of cost against fwd + bwd inside 1e-9 */
            Zb y;
            double pruned;
            memset(&y, 0, sizeof y);
            y.prune = 1;
            pruned = zb_brute(&y, p, &o);
            CU_ASSERT(isinf(best) ? isinf(pruned) : fabs(pruned / best - 1) <= 1e-9);
            *prune_priced += y.plans;
            *all_priced += z.plans;
        }
        rc = apsolve_solve(p, &o, &pl);
        if (isinf(best)) {
            CU_ASSERT(rc == APSOLVE_EINFEASIBLE);
        } else {
            CU_ASSERT_FATAL(rc == APSOLVE_OK);
            (*compared)++;
            CU_ASSERT(pl->feasible);
            CU_ASSERT(repriced_same(p, &o, pl));
            /* never below every plan: it is one of them */
            CU_ASSERT(pl->total_cost >= best);
            if (pl->total_cost > best) {
                missed++;
                if (pl->total_cost / best - 1 > *worst)
                    *worst = pl->total_cost / best - 1;
            }
        }
        apsolve_plan_free(&pl);
        apsolve_problem_free(&p);
    }
    return missed;
}

/* 1F1B and GPipe: the DP minimises their objective, so no plan is below
 * apsolve's (the brute force's own control). */
static void test_exact_schedules(void)
{
    static const int kinds[] = {APSOLVE_SCHEDULE_1F1B, APSOLVE_SCHEDULE_GPIPE};
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
        double worst;
        long pp = 0, ap = 0;
        int compared, missed = run_schedule(kinds[q], 1, 60, &worst, &compared, &pp, &ap);
        CU_ASSERT(missed == 0);
        CU_ASSERT(compared > 30);
        fprintf(stderr, "\n%s: %d of %d problems above the best\n",
                apsolve_schedule_name((ApsolveSchedule)kinds[q]), missed, compared);
    }
}

/* ZB-V: apsolve's plan is one of the plans, priced as they are, never
 * below the best; the misses are counted and printed (a search exact for
 * ZB-V's makespan would have none). ZB-H1 and interleaved ZB (v = 2), whose
 * saving is outside the DP's sum too (docs/solver.md, "Schedules"), the
 * same way. */
static void test_zbv_against_every_plan(void)
{
    static const int kinds[][3] = {{APSOLVE_SCHEDULE_ZBV, 2, 2000},
                                   {APSOLVE_SCHEDULE_ZB_H1, 1, 300},
                                   {APSOLVE_SCHEDULE_INTERLEAVED_ZB, 2, 300}};
    for (size_t q = 0; q < sizeof kinds / sizeof kinds[0]; q++) {
        double worst;
        long pp = 0, ap = 0;
        int compared, missed = run_schedule(kinds[q][0], kinds[q][1], kinds[q][2], &worst,
                                            &compared, &pp, &ap);
        CU_ASSERT(compared > kinds[q][2] / 2);
        fprintf(stderr, "\n%s: %d of %d problems above the best plan, the largest by %.2f %%\n",
                apsolve_schedule_name((ApsolveSchedule)kinds[q][0]), missed, compared,
                100 * worst);
        if (ap)
            fprintf(stderr, "%s with --db's shortcuts: the same best, %ld plans priced of %ld\n",
                    apsolve_schedule_name((ApsolveSchedule)kinds[q][0]), pp, ap);
    }
}

static void print_plan(const char *what, const ApsolveProblem *p, const ApsolveOptions *o,
                       const ApsolveStage *in, int n)
{
    ApsolvePlan pl;
    ApsolveStage st[MAX_N];
    memset(&pl, 0, sizeof pl);
    memcpy(st, in, (size_t)n * sizeof *st);
    for (int k = 0; k < n; k++)
        apsolve_stage_fill(p, o, &st[k], n - k, n);
    pl.stages = st;
    pl.n_stages = (size_t)n;
    apsolve_plan_price(p, o, &pl);
    printf("%s: objective %.6f s = makespan %.6f s + apply %.6f s, %d stages%s:\n", what,
           pl.total_cost, pl.cost, pl.apply_cost, n, pl.feasible ? "" : " (NOT feasible)");
    for (int k = 0; k < n; k++)
        printf("  layers %d..%d on %dx%d config %d (m%d r%d z%d): cost %.6f, fwd %.6f, bwd %.6f, "
               "wgrad %.6f, apply %.6f, memory %.1f / %.1f GiB\n", st[k].start_layer,
               st[k].end_layer, st[k].hosts, st[k].gpus, st[k].config,
               st[k].variant.memory_level, st[k].variant.recompute, st[k].variant.zero, st[k].cost,
               st[k].fwd_cost, st[k].bwd_cost, st[k].wgrad_cost, st[k].apply_cost,
               st[k].memory_needed / 1073741824.0, st[k].available_memory / 1073741824.0);
}

/* --db FILE [--sweep ID] [--cut L0,L1,... [--shape HxG]]: the best plan by
 * brute force (of that cut alone with --cut, on submesh HxG with --shape),
 * configs another dominates left out, and apsolve's ZB-V plan. */
static int db_mode(int argc, char **argv)
{
    Costdb *db = NULL;
    CostdbSweep sw;
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolvePlan *pl = NULL;
    Zb z;
    char err[256];
    const char *path = argv[2], *cut = NULL;
    int64_t sweep = 0;
    int sh = 0, sg = 0, rc, ignore_memory = 0;
    double best;
    memset(&z, 0, sizeof z);
    for (int a = 3; a < argc; a += 2) {
        if (strcmp(argv[a], "--ignore-memory") == 0) {
            ignore_memory = 1;
            a--;
        } else if (a + 1 >= argc) {
            fprintf(stderr, "%s needs a value\n", argv[a]);
            return 2;
        } else if (strcmp(argv[a], "--sweep") == 0)
            sweep = strtoll(argv[a + 1], NULL, 10);
        else if (strcmp(argv[a], "--cut") == 0)
            cut = argv[a + 1];
        else if (strcmp(argv[a], "--shape") == 0 && sscanf(argv[a + 1], "%dx%d", &sh, &sg) == 2)
            ;
        else {
            fprintf(stderr, "unknown or bad option %s\n", argv[a]);
            return 2;
        }
    }
    for (const char *c = cut; c && *c && z.cut_n < MAX_N;) {
        char *e;
        z.cut[z.cut_n++] = (int)strtol(c, &e, 10);
        c = *e == ',' ? e + 1 : e;
    }
    if (costdb_open(path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", path, err);
        return 1;
    }
    if ((sweep <= 0 && costdb_sweep_latest(db, &sweep)) || costdb_sweep_get(db, sweep, &sw)) {
        fprintf(stderr, "%s: no sweep %lld\n", path, (long long)sweep);
        costdb_close(&db);
        return 1;
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = sw.micro_batches;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    o.schedule = APSOLVE_SCHEDULE_ZBV;
    o.virtual_stages = 2;
    o.whole_chunks = 1;
    o.headroom_percent = APSOLVE_DEFAULT_HEADROOM_PERCENT;
    o.search_headroom = 1;
    o.ignore_memory = ignore_memory;
    if (apsolve_problem_from_db(db, sweep, &o, &p) != APSOLVE_OK) {
        fprintf(stderr, "%s: sweep %lld does not load\n", path, (long long)sweep);
        costdb_close(&db);
        return 1;
    }
    z.cut_s = sh > 0 ? apsolve_find_submesh(p, sh, sg) + 1 : 0;
    printf("sweep %lld: %d layers, %d devices, %d submeshes, %d configs, B = %d\n",
           (long long)sweep, p->num_layers, p->num_devices, p->num_submeshes, p->num_configs,
           o.micro_batches);
    rc = apsolve_solve(p, &o, &pl);
    if (rc == APSOLVE_OK)
        print_plan("apsolve", p, &o, pl->stages, (int)pl->n_stages);
    else
        printf("apsolve: no plan (%d)\n", rc);
    fflush(stdout);
    /* the plans strictly below apsolve's (with --cut: every plan of it) */
    z.prune = 1;
    z.seed = rc == APSOLVE_OK && !cut ? pl->total_cost : INFINITY;
    best = zb_brute(&z, p, &o);
    printf("brute force%s: %ld plans priced, %ld feasible\n", cut ? " of the cut" : "", z.plans,
           z.feasible);
    if (!isnan(best) && z.best_n > 0)
        print_plan(cut ? "best of the cut" : "best, below apsolve's", p, &o, z.best_st, z.best_n);
    else if (!cut)
        printf("no plan below apsolve's\n");
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
    costdb_close(&db);
    return 0;
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"1F1B and GPipe: no plan below apsolve's", test_exact_schedules},
        {"ZB-V: apsolve's plan against every plan", test_zbv_against_every_plan},
    };
    if (argc >= 3 && strcmp(argv[1], "--db") == 0)
        return db_mode(argc, argv);
    return CUNIT_RUN("solver_zbv_search", tests);
}
