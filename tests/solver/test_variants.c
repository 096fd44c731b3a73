/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stage variants, the full objective and pipeline schedules in the search:
 * on small random instances with plain configs and variants (memory level,
 * recompute, ZeRO), apply costs and memory figures, apsolve_solve() must
 * equal a brute-force enumeration of every split and assignment for
 * --objective alpa (plain configs only, exactly the result without the
 * variants), --objective full (T + the largest stage apply_cost) and the
 * GPipe and interleaved schedules (their own memory rules and times, from
 * schedule.h). Also: 3-D stage selection among variants, problems with
 * ~200 configs per submesh, and the database adapter reading variants and
 * apply costs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "costdb.h"
#include "cunit_run.h"
#include "oracle.h"
#include "schedule.h"

/* ---- brute force ---------------------------------------------------------- */

typedef struct Brute {
    const ApsolveProblem *p;
    ApsolveOptions o;
    int st_i[16], st_j[16], st_s[16], st_c[16];
    double best;
} Brute;

/* Does stage k of n (entry idx) fit under the schedule? Written from the
 * definitions, not from the solver's helpers. */
static int brute_fits(const Brute *b, size_t idx, int n, int k)
{
    const ApsolveProblem *p = b->p;
    const ApsolveMemory *m = apsolve_memory_at(p, idx);
    double f;
    /* Alpa's rule: s stages from it to the end need s intermediates on top
     * of the peak (max_n_succ_stages); the full objective counts the
     * micro-batches in flight besides the one the peak already holds */
    if (b->o.schedule == APSOLVE_SCHEDULE_1F1B && b->o.objective != APSOLVE_OBJECTIVE_FULL)
        return (long)(n - k) - 1 <= (long)p->max_n_succ_stages[idx];
    if (m->avail <= 0)
        return 1;
    f = b->o.schedule == APSOLVE_SCHEDULE_1F1B
            ? (double)(n - k)
            : apsolve_schedule_in_flight((ApsolveSchedule)b->o.schedule, b->o.virtual_stages,
                                         b->o.micro_batches, n, k);
    if (b->o.objective == APSOLVE_OBJECTIVE_FULL)
        f -= 1.0;
    return (long double)m->peak + m->initial + (long double)f * m->intermediate <=
           (long double)m->avail;
}

static void brute_eval(Brute *b, int n)
{
    const ApsolveProblem *p = b->p;
    double sum = 0, mx = 0, apply = 0, t;
    int v = b->o.schedule == APSOLVE_SCHEDULE_INTERLEAVED && b->o.virtual_stages > 1
                ? b->o.virtual_stages : 1;
    if (b->o.max_stages > 0 && n > b->o.max_stages)
        return;
    if (v > 1 && !apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, v, b->o.micro_batches, n,
                                         NULL, 0))
        return;
    for (int k = n - 1; k >= 0; k--) {
        size_t idx = apsolve_index(p, b->st_i[k], b->st_j[k], b->st_s[k], b->st_c[k]);
        double c = p->cost[idx];
        if (!brute_fits(b, idx, n, k))
            return;
        if (b->o.whole_chunks && (b->st_j[k] - b->st_i[k] + 1) % v) /* whole chunks */
            return;
        sum += c;
        if (c > mx)
            mx = c;
        if (p->apply_cost[idx] > apply)
            apply = p->apply_cost[idx];
    }
    if (v > 1)
        t = (sum + (double)(v * b->o.micro_batches - 1) * mx) / (double)v;
    else
        t = b->o.micro_batches > 1 ? sum + (double)(b->o.micro_batches - 1) * mx : sum;
    if (b->o.objective == APSOLVE_OBJECTIVE_FULL)
        t += apply;
    if (t < b->best)
        b->best = t;
}

static void brute_rec(Brute *b, int i, int d, int n)
{
    const ApsolveProblem *p = b->p;
    if (i == p->num_layers) {
        if (d == 0)
            brute_eval(b, n);
        return;
    }
    if (n >= 16)
        return;
    for (int j = i; j < p->num_layers; j++)
        for (int s = 0; s < p->num_submeshes; s++) {
            int dev = p->submeshes[s].hosts * p->submeshes[s].gpus;
            if (dev > d)
                continue;
            for (int c = 0; c < p->num_configs; c++) {
                const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
                size_t idx = apsolve_index(p, i, j, s, c);
                if (!cf->valid || isinf(p->cost[idx]))
                    continue;
                if (b->o.objective != APSOLVE_OBJECTIVE_FULL && !costdb_variant_is_plain(cf->variant))
                    continue;
                b->st_i[n] = i;
                b->st_j[n] = j;
                b->st_s[n] = s;
                b->st_c[n] = c;
                brute_rec(b, j + 1, d - dev, n + 1);
            }
        }
}

static double brute(const ApsolveProblem *p, const ApsolveOptions *o)
{
    Brute b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.o = *o;
    b.best = INFINITY;
    brute_rec(&b, 0, p->num_devices, 0);
    return b.best;
}

/* ---- random instances with variants --------------------------------------- */

/* L layers on hosts x gpus, Alpa's submeshes, per submesh 2 plain configs
 * and nvar variants; random costs, infinities, apply costs and memory. */
static ApsolveProblem *make_variants(uint64_t *rng, int L, int hosts, int gpus, int nvar,
                                     int integer)
{
    ApsolveSubmesh subs[16];
    int S = apsolve_default_submeshes(hosts, gpus, subs, 16), C = 2 + nvar;
    ApsolveProblem *p = NULL;
    if (apsolve_problem_new(L, hosts, gpus, S, C, 1, &p))
        return NULL;
    for (int s = 0; s < S; s++) {
        p->submeshes[s] = subs[s];
        for (int c = 0; c < C; c++) {
            ApsolveConfig *cf = &p->configs[s * C + c];
            cf->valid = 1;
            cf->logical_a = c % 2 ? 1 : subs[s].hosts * subs[s].gpus;
            cf->logical_b = c % 2 ? subs[s].hosts * subs[s].gpus : 1;
            cf->force_batch_dim = c % 2 ? -1 : 0;
            if (c >= 2) {
                cf->variant.memory_level = (int)(oracle_rand(rng) % 3);
                cf->variant.recompute = (int)(oracle_rand(rng) % 3);
                cf->variant.zero = (int)(oracle_rand(rng) % 4);
                if (costdb_variant_is_plain(cf->variant))
                    cf->variant.memory_level = 1;
            }
        }
    }
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int s = 0; s < S; s++)
                for (int c = 0; c < C; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    ApsolveMemory *m = apsolve_memory_own(p, idx);
                    double work = (double)(j - i + 1) / (subs[s].hosts * subs[s].gpus);
                    if (oracle_uniform(rng) < 0.2)
                        continue; /* +inf */
                    p->cost[idx] = integer ? (double)(1 + oracle_rand(rng) % 4)
                                           : work * (0.7 + 0.6 * oracle_uniform(rng));
                    p->apply_cost[idx] = integer ? (double)(oracle_rand(rng) % 3)
                                                 : 0.3 * work * oracle_uniform(rng);
                    m->avail = 100;
                    m->peak = (int64_t)(oracle_rand(rng) % 40);
                    m->initial = (int64_t)(oracle_rand(rng) % 40);
                    m->intermediate = (int64_t)(oracle_rand(rng) % 4 == 0 ? 0
                                                : oracle_rand(rng) % 30);
                    p->max_n_succ_stages[idx] =
                        apsolve_max_n_succ_stages(m->avail, m->peak, m->initial, m->intermediate);
                }
    return p;
}

static int g_mismatch;

static void compare(const ApsolveProblem *p, const ApsolveOptions *o, const char *what)
{
    double expect = brute(p, o);
    ApsolvePlan *pl = NULL;
    int rc = apsolve_solve(p, o, &pl);
    if (isinf(expect)) {
        CU_ASSERT(rc == APSOLVE_EINFEASIBLE);
        if (rc != APSOLVE_EINFEASIBLE)
            g_mismatch++;
    } else {
        CU_ASSERT_FATAL(rc == APSOLVE_OK);
        CU_ASSERT(pl->feasible);
        CU_ASSERT(pl->total_cost == expect);
        if (pl->total_cost != expect) {
            g_mismatch++;
            fprintf(stderr, "\n%s L=%d D=%d B=%d sched=%d v=%d: apsolve %.17g brute %.17g\n",
                    what, p->num_layers, p->num_devices, o->micro_batches, o->schedule,
                    o->virtual_stages, pl->total_cost, expect);
        }
        /* ALPA plans use plain configs only. */
        for (size_t k = 0; o->objective == APSOLVE_OBJECTIVE_ALPA && k < pl->n_stages; k++)
            CU_ASSERT(pl->stages[k].variant.memory_level == 0 && pl->stages[k].variant.recompute == 0 &&
                      pl->stages[k].variant.zero == 0);
    }
    apsolve_plan_free(&pl);
}

static const int k_b[] = {1, 2, 3, 4, 8};

/* Objective alpa on a problem with variants equals the brute force over
 * its plain configs and the solver on the same problem without variants. */
static void test_alpa_plain_only(void)
{
    uint64_t rng = 0xA1FAull;
    g_mismatch = 0;
    for (int t = 0; t < 80; t++) {
        ApsolveProblem *p = make_variants(&rng, 1 + (int)(oracle_rand(&rng) % 4), t % 2 ? 2 : 1,
                                          t % 2 ? 2 : 4, 2, t % 3 == 0);
        ApsolveProblem *q = NULL;
        ApsolveOptions o;
        ApsolvePlan *a = NULL, *b = NULL;
        int ra, rb;
        CU_ASSERT_FATAL(p != NULL);
        memset(&o, 0, sizeof o);
        o.micro_batches = k_b[oracle_rand(&rng) % 5];
        compare(p, &o, "alpa");
        /* The same table with the variants removed. */
        CU_ASSERT_FATAL(apsolve_problem_new(p->num_layers, p->cluster_hosts, p->cluster_gpus,
                                            p->num_submeshes, 2, 0, &q) == APSOLVE_OK);
        for (int s = 0; s < p->num_submeshes; s++) {
            q->submeshes[s] = p->submeshes[s];
            for (int c = 0; c < 2; c++)
                q->configs[s * 2 + c] = p->configs[s * p->num_configs + c];
        }
        for (int i = 0; i < p->num_layers; i++)
            for (int j = i; j < p->num_layers; j++)
                for (int s = 0; s < p->num_submeshes; s++)
                    for (int c = 0; c < 2; c++) {
                        q->cost[apsolve_index(q, i, j, s, c)] = p->cost[apsolve_index(p, i, j, s, c)];
                        q->max_n_succ_stages[apsolve_index(q, i, j, s, c)] =
                            p->max_n_succ_stages[apsolve_index(p, i, j, s, c)];
                    }
        ra = apsolve_solve(p, &o, &a);
        rb = apsolve_solve(q, &o, &b);
        CU_ASSERT(ra == rb);
        if (!ra && !rb) {
            CU_ASSERT(a->cost == b->cost && a->n_stages == b->n_stages);
            for (size_t k = 0; k < a->n_stages && k < b->n_stages; k++)
                CU_ASSERT(a->stages[k].config == b->stages[k].config &&
                          a->stages[k].end_layer == b->stages[k].end_layer);
        }
        apsolve_plan_free(&a);
        apsolve_plan_free(&b);
        apsolve_problem_free(&q);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(g_mismatch == 0);
}

/* Objective full: T + max apply over every config and variant. */
static void test_full_brute(void)
{
    uint64_t rng = 0xF011ull;
    int feasible = 0, differs = 0;
    g_mismatch = 0;
    for (int t = 0; t < 160; t++) {
        ApsolveProblem *p = make_variants(&rng, 1 + (int)(oracle_rand(&rng) % 4), t % 2 ? 2 : 1,
                                          t % 2 ? 2 : 4, 3, t % 4 == 0);
        ApsolveOptions o;
        ApsolvePlan *a = NULL, *f = NULL;
        CU_ASSERT_FATAL(p != NULL);
        memset(&o, 0, sizeof o);
        o.micro_batches = k_b[oracle_rand(&rng) % 5];
        o.max_stages = t % 5 == 0 ? 2 : 0;
        o.objective = APSOLVE_OBJECTIVE_FULL;
        compare(p, &o, "full");
        if (apsolve_solve(p, &o, &f) == APSOLVE_OK) {
            feasible++;
            CU_ASSERT(f->total_cost == f->cost + f->apply_cost);
            o.objective = APSOLVE_OBJECTIVE_ALPA;
            if (apsolve_solve(p, &o, &a) == APSOLVE_OK && a->cost != f->cost)
                differs++;
        }
        apsolve_plan_free(&a);
        apsolve_plan_free(&f);
        apsolve_problem_free(&p);
    }
    CU_ASSERT(g_mismatch == 0);
    CU_ASSERT(feasible > 80);
    CU_ASSERT(differs > 0); /* variants and apply costs change the optimum */
}

/* GPipe (B micro-batches in flight) and interleaved (schedule.h's in-flight
 * counts, n | B, T = (sum + (vB - 1) max) / v; half of them with stages of
 * whole chunks only), both objectives. */
static void test_schedules_brute(void)
{
    uint64_t rng = 0x5C4Eull;
    g_mismatch = 0;
    for (int t = 0; t < 160; t++) {
        ApsolveProblem *p = make_variants(&rng, 1 + (int)(oracle_rand(&rng) % 4), t % 2 ? 2 : 1,
                                          t % 2 ? 2 : 4, 2, t % 4 == 0);
        ApsolveOptions o;
        CU_ASSERT_FATAL(p != NULL);
        memset(&o, 0, sizeof o);
        o.micro_batches = k_b[oracle_rand(&rng) % 5];
        o.objective = t % 3 ? APSOLVE_OBJECTIVE_FULL : APSOLVE_OBJECTIVE_ALPA;
        if (t % 2) {
            o.schedule = APSOLVE_SCHEDULE_GPIPE;
        } else {
            o.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            o.virtual_stages = 2 + (int)(oracle_rand(&rng) % 2);
            o.micro_batches = 2 * (1 + (int)(oracle_rand(&rng) % 3));
            o.whole_chunks = t % 4 == 2; /* the auto search's rule: whole chunks per stage */
        }
        compare(p, &o, o.schedule == APSOLVE_SCHEDULE_GPIPE ? "gpipe" : "interleaved");
        apsolve_problem_free(&p);
    }
    CU_ASSERT(g_mismatch == 0);
}

/* A hand-made case: the fastest config needs exactly the available memory
 * under GPipe (B = 4 in flight, one of them inside the peak) and one byte
 * less makes it not fit; Alpa's rule counts the fourth again. */
static void test_gpipe_memory(void)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolvePlan *pl = NULL;
    CU_ASSERT_FATAL(apsolve_problem_new(1, 1, 1, 1, 2, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 1};
    for (int c = 0; c < 2; c++) {
        p->configs[c] = (ApsolveConfig){1, 1, 1, -1, {c, 0, 0}};
        p->cost[c] = c ? 2.0 : 1.0;
        *apsolve_memory_own(p, c) = (ApsolveMemory){10, c ? 5 : 20, 10, 100};
        p->max_n_succ_stages[c] = apsolve_max_n_succ_stages(100, 10, 10, c ? 5 : 20);
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = 4;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].config == 0); /* 1F1B: 10 + 10 (+ 0 x 20 besides the peak's) */
    apsolve_plan_free(&pl);
    /* GPipe: 4 in flight, the peak holds one: 10 + 10 + 3 x 20 = 80 */
    o.schedule = APSOLVE_SCHEDULE_GPIPE;
    for (int c = 0; c < 2; c++)
        apsolve_memory_own(p, c)->avail = 80;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].config == 0); /* ... fits exactly, ... */
    CU_ASSERT(pl->stages[0].memory_needed == 80);
    apsolve_plan_free(&pl);
    apsolve_memory_own(p, 0)->avail = 79; /* ... and with one byte less it does not */
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].config == 1);
    CU_ASSERT(pl->stages[0].in_flight == 4);
    CU_ASSERT(pl->stages[0].memory_needed == 10 + 10 + 3 * 5);
    apsolve_plan_free(&pl);
    /* Alpa's rule (--objective alpa, plain config 0 only) counts all 4 on
     * top of the peak: 10 + 10 + 4 x 20 = 100 > 80, no plan */
    o.objective = APSOLVE_OBJECTIVE_ALPA;
    apsolve_memory_own(p, 0)->avail = 80;
    CU_ASSERT(apsolve_solve(p, &o, &pl) == APSOLVE_EINFEASIBLE);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

/* 3-D specs: the given recompute and ZeRO stage, the cheapest memory level
 * that fits; objective alpa only sees the plain config. */
static void test_3d_variant_choice(void)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolveStageSpec sp[1];
    ApsolvePlan *pl = NULL;
    char err[128];
    /* configs: 0 plain, 1 m1 none z1, 2 m2 none z1, 3 m0 full z1 */
    static const int lvl[4] = {0, 1, 2, 0}, rec[4] = {0, 0, 0, 2}, zro[4] = {0, 1, 1, 1};
    static const double cost[4] = {1.0, 1.2, 1.5, 1.1};
    static const int64_t inter[4] = {50, 40, 10, 5};
    CU_ASSERT_FATAL(apsolve_problem_new(1, 1, 2, 1, 4, 1, &p) == APSOLVE_OK);
    p->submeshes[0] = (ApsolveSubmesh){1, 2};
    for (int c = 0; c < 4; c++) {
        p->configs[c] = (ApsolveConfig){1, 2, 1, 0, {lvl[c], rec[c], zro[c]}};
        p->cost[c] = cost[c];
        p->apply_cost[c] = 0.5;
        *apsolve_memory_own(p, c) = (ApsolveMemory){10 + inter[c], inter[c], 10, 50};
        p->max_n_succ_stages[c] = apsolve_max_n_succ_stages(50, 10 + inter[c], 10, inter[c]);
    }
    memset(&o, 0, sizeof o);
    o.micro_batches = 2;
    o.objective = APSOLVE_OBJECTIVE_FULL;
    CU_ASSERT_FATAL(apsolve_3d_specs(1, 2, 2, 1, 1, sp) == APSOLVE_OK);
    sp[0].variant.zero = 1;
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, sp, 1, &pl, err, sizeof err) == APSOLVE_OK);
    /* one stage, one micro-batch in flight, inside the peak: level 1
     * needs 50 + 10 = 60 > 50; level 2 (20 + 10) fits */
    CU_ASSERT(pl->stages[0].config == 2 && pl->stages[0].variant.memory_level == 2);
    CU_ASSERT(pl->feasible && pl->total_cost == pl->cost + 0.5);
    apsolve_plan_free(&pl);
    sp[0].variant.recompute = 2;
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, sp, 1, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].config == 3);
    apsolve_plan_free(&pl);
    /* alpa: the plain config whatever the spec's variant; none fits */
    o.objective = APSOLVE_OBJECTIVE_ALPA;
    sp[0].variant.recompute = sp[0].variant.zero = 0;
    CU_ASSERT_FATAL(apsolve_evaluate(p, &o, sp, 1, &pl, err, sizeof err) == APSOLVE_OK);
    CU_ASSERT(pl->stages[0].config == 0 && !pl->feasible && pl->apply_cost == 0);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
}

/* ~200 configs per submesh (Alpa's configs x memory levels x recompute x
 * ZeRO): the solver takes them and the full optimum is never worse than
 * alpa's T plus its apply-grad. */
static void test_many_configs(void)
{
    uint64_t rng = 0x200Cull;
    ApsolveProblem *p = make_variants(&rng, 6, 1, 8, 198, 0);
    ApsolveOptions o;
    ApsolvePlan *a = NULL, *f = NULL;
    CU_ASSERT_FATAL(p != NULL);
    CU_ASSERT(p->num_configs == 200);
    memset(&o, 0, sizeof o);
    o.micro_batches = 8;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &a) == APSOLVE_OK);
    o.objective = APSOLVE_OBJECTIVE_FULL;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &f) == APSOLVE_OK);
    {
        double a_apply = 0;
        for (size_t k = 0; k < a->n_stages; k++)
            if (a->stages[k].apply_cost > a_apply)
                a_apply = a->stages[k].apply_cost;
        CU_ASSERT(f->total_cost <= a->cost + a_apply);
    }
    apsolve_plan_free(&a);
    apsolve_plan_free(&f);
    apsolve_problem_free(&p);
    CU_ASSERT(apsolve_problem_new(4, 1, 8, 4, APSOLVE_MAX_CONFIGS + 1, 0, &p) == APSOLVE_EINVAL);
}

/* ---- the database adapter ------------------------------------------------- */

/* One sweep on 1x2, 2 layers, submeshes (1,1), (1,2); per submesh the
 * plain config and two variants, every entry with an apply cost (unknown
 * for one entry when unknown_one). */
static int make_db(const char *path, int unknown_one, int64_t *sweep)
{
    CostdbSubmesh subs[2] = {{0, 1, 1}, {1, 1, 2}};
    CostdbConfig cf[6];
    CostdbEntry e[48];
    CostdbSweep sw;
    Costdb *db = NULL;
    char err[256];
    size_t ne = 0;
    int rc = -1;
    unlink(path);
    if (costdb_open(path, 0, &db, err, sizeof err))
        return -1;
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 3; c++) {
            memset(&cf[s * 3 + c], 0, sizeof cf[0]);
            cf[s * 3 + c] = (CostdbConfig){.submesh_index = s, .config_index = c,
                                           .logical_a = s ? 2 : 1, .logical_b = 1,
                                           .force_batch_dim = 0, .variant.memory_level = c == 1,
                                           .variant.recompute = c == 2 ? COSTDB_RECOMPUTE_FULL : 0,
                                           .variant.zero = c == 2 ? 1 : 0};
        }
    memset(&sw, 0, sizeof sw);
    snprintf(sw.name, sizeof sw.name, "variants");
    sw.cluster_hosts = 1;
    sw.cluster_gpus = 2;
    sw.global_batch = 16;
    sw.micro_batches = 4;
    sw.num_layers = 2;
    snprintf(sw.submesh_space, sizeof sw.submesh_space, "power_of_two");
    snprintf(sw.backend, sizeof sw.backend, "analytic");
    sw.status = COSTDB_SWEEP_COMPLETE;
    if (costdb_sweep_create(db, &sw, subs, 2, cf, 6))
        goto cleanup;
    for (int i = 0; i < 2; i++)
        for (int j = i; j < 2; j++)
            for (int s = 0; s < 2; s++)
                for (int c = 0; c < 3; c++)
                    for (int ph = 0; ph < 2; ph++) {
                        CostdbEntry *x = &e[ne++];
                        memset(x, 0, sizeof *x);
                        x->start_layer = i;
                        x->end_layer = j;
                        x->submesh_index = s;
                        x->config_index = c;
                        x->phase = ph ? COSTDB_BWD : COSTDB_FWD;
                        x->compute_cost = 0.01 * (j - i + 1) * (1 + 0.5 * c) / (1 + s);
                        x->apply_cost = unknown_one && i == 0 && j == 0 && c == 2 ? -1
                                        : 0.001 * (3 - c);
                        x->peak_memory = 1 << 20;
                        x->available_memory = 1 << 30;
                        x->repeats = 1;
                        x->status = COSTDB_STATUS_OK;
                    }
    if (costdb_entries_put(db, sw.id, e, ne, 0))
        goto cleanup;
    *sweep = sw.id;
    rc = 0;
cleanup:
    costdb_close(&db);
    return rc;
}

static void test_db_variants(void)
{
    char path[64];
    Costdb *db = NULL;
    ApsolveProblem *p = NULL;
    ApsolveOptions o;
    ApsolvePlan *pl = NULL;
    char err[256];
    int64_t sweep = 0;
    snprintf(path, sizeof path, "/tmp/apsolve_variants_%d.db", (int)getpid());
    memset(&o, 0, sizeof o);
    o.micro_batches = 4;
    CU_ASSERT_FATAL(make_db(path, 0, &sweep) == 0);
    CU_ASSERT_FATAL(costdb_open(path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, sweep, &o, &p) == APSOLVE_OK);
    CU_ASSERT(p->num_configs == 3);
    CU_ASSERT(p->configs[1].variant.memory_level == 1 && p->configs[2].variant.recompute == COSTDB_RECOMPUTE_FULL &&
              p->configs[2].variant.zero == 1 && costdb_variant_is_plain(p->configs[0].variant));
    CU_ASSERT(fabs(p->apply_cost[apsolve_index(p, 0, 1, 1, 2)] - 0.001) < 1e-15);
    CU_ASSERT(apsolve_problem_apply_known(p));
    o.objective = APSOLVE_OBJECTIVE_FULL;
    CU_ASSERT_FATAL(apsolve_solve(p, &o, &pl) == APSOLVE_OK);
    CU_ASSERT(pl->apply_cost > 0 && pl->total_cost == pl->cost + pl->apply_cost);
    apsolve_plan_free(&pl);
    apsolve_problem_free(&p);
    costdb_close(&db);
    CU_ASSERT_FATAL(make_db(path, 1, &sweep) == 0);
    CU_ASSERT_FATAL(costdb_open(path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err) == 0);
    CU_ASSERT_FATAL(apsolve_problem_from_db(db, sweep, &o, &p) == APSOLVE_OK);
    CU_ASSERT(p->apply_cost[apsolve_index(p, 0, 0, 0, 2)] < 0);
    CU_ASSERT(!apsolve_problem_apply_known(p));
    apsolve_problem_free(&p);
    costdb_close(&db);
    unlink(path);
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"objective alpa: plain configs only, as without variants", test_alpa_plain_only},
        {"objective full vs brute force", test_full_brute},
        {"GPipe and interleaved schedules vs brute force", test_schedules_brute},
        {"GPipe memory rule by hand", test_gpipe_memory},
        {"3-D stage variant choice", test_3d_variant_choice},
        {"200 configs per submesh", test_many_configs},
        {"database: variants and apply costs", test_db_variants},
    };
    if (argc == 3 && !strcmp(argv[1], "--make-fixture")) {
        int64_t id;
        return make_db(argv[2], 0, &id) ? 1 : 0;
    }
    return CUNIT_RUN("solver-variants", tests);
}
