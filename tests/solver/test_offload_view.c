/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search's activation-offload candidates on one-layer problems
 * (solver/offload_one_stage.h) against the whole tables they replace
 * (apsolve_offload_one_stage_whole, the step's former problem): for every
 * N, the plan of the one-layer problem, mapped back to the table's layers
 * and indices, is the whole table's under --max-stages 1, field for field
 * (stages, costs, memory, objective, the headroom kept), less the search's
 * own counts (thresholds, candidates), which the step takes from a whole
 * solve of the winner. On made-up tables with tied configs (the DP's
 * choice among equal costs), several apply costs (the full objective's
 * search over them), tight memory (no plan, plans without the headroom)
 * and entries of every range (which the whole table's search reads and
 * the one-layer problem leaves out); and, given a database (offload_view.sh),
 * on its sweep's entries and layers' record at several memory budgets.
 *
 * Usage: test_offload_view [DB]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "apsolve.h"
#include "costdb.h"
#include "cunit_run.h"
#include "offload_one_stage.h"
#include "schedule.h"

static const char *db_path;

/* What the comparisons saw: feasible plans, none, plans without the
 * headroom, and plans whose config ties with its twin (the next config). */
static int n_same, n_feasible, n_none, n_without, n_ties;

static int same_stage(const ApsolveStage *x, const ApsolveStage *y)
{
    return x->start_layer == y->start_layer && x->end_layer == y->end_layer &&
           x->submesh == y->submesh && x->config == y->config && x->hosts == y->hosts &&
           x->gpus == y->gpus && x->logical_a == y->logical_a && x->logical_b == y->logical_b &&
           x->force_batch_dim == y->force_batch_dim &&
           costdb_variant_equal(x->variant, y->variant) && x->cost == y->cost &&
           x->fwd_cost == y->fwd_cost && x->bwd_cost == y->bwd_cost &&
           x->wgrad_cost == y->wgrad_cost && x->apply_cost == y->apply_cost &&
           x->in_flight == y->in_flight && x->max_n_succ_stages == y->max_n_succ_stages &&
           x->succ_stages == y->succ_stages && x->memory_ok == y->memory_ok &&
           x->memory_needed == y->memory_needed && x->available_memory == y->available_memory &&
           x->memory_reserve == y->memory_reserve;
}

/* The same plan, every field the output prints but the search's counts
 * and time. */
static int same_plan(const ApsolvePlan *a, const ApsolvePlan *b)
{
    if (!a || !b)
        return !a && !b;
    if (a->feasible != b->feasible || a->inference != b->inference ||
        a->micro_batches != b->micro_batches || a->cost != b->cost ||
        a->sum_cost != b->sum_cost || a->max_stage_cost != b->max_stage_cost ||
        a->objective != b->objective || a->apply_cost != b->apply_cost ||
        a->total_cost != b->total_cost || a->schedule != b->schedule ||
        a->virtual_stages != b->virtual_stages || a->devices_used != b->devices_used ||
        a->n_stages != b->n_stages)
        return 0;
    for (size_t k = 0; k < a->n_stages; k++)
        if (!same_stage(&a->stages[k], &b->stages[k]))
            return 0;
    return 1;
}

/* The step's options: at most one stage, 1F1B, one chunk. */
static ApsolveOptions step_options(int objective, int headroom, int B)
{
    ApsolveOptions o;
    memset(&o, 0, sizeof o);
    o.micro_batches = B;
    o.objective = objective;
    o.headroom_percent = headroom ? APSOLVE_DEFAULT_HEADROOM_PERCENT : 0;
    o.max_stages = 1;
    o.schedule = APSOLVE_SCHEDULE_1F1B;
    o.virtual_stages = 1;
    return o;
}

/* Every N of p: the one-layer problem's plan against the whole table's. */
static void check_all_n(const ApsolveProblem *p, ApsolveOffloadSource *src, const ApsolveOptions *o0,
                        const char *what)
{
    ApsolveOffloadOneStage x;
    char why[400];
    CU_ASSERT_EQUAL_FATAL(apsolve_offload_one_stage_make(p, src, &x), APSOLVE_OK);
    for (int n = 1; n < p->num_layers; n++) {
        ApsolveProblem *q = NULL;
        ApsolvePlan *whole = NULL, *one = NULL;
        ApsolveOptions ow = *o0, oo = *o0;
        int ew, eo;
        CU_ASSERT_EQUAL_FATAL(apsolve_offload_one_stage_whole(&x.src, p, n, &q, why, sizeof why),
                              APSOLVE_OK);
        CU_ASSERT_EQUAL_FATAL(apsolve_offload_one_stage_compose(&x, p, n, why, sizeof why),
                              APSOLVE_OK);
        ew = apsolve_solve_keep_headroom(q, &ow, &whole);
        eo = apsolve_offload_one_stage_solve(&x, &oo, &one);
        CU_ASSERT(ew == APSOLVE_OK || ew == APSOLVE_EINFEASIBLE);
        if (ew != eo || !same_plan(whole, one) ||
            (!ew && ow.search_headroom != oo.search_headroom)) {
            printf("\n%s, offload=%d (objective %d, headroom %g, B %d): the one-layer "
                   "problem's plan (%d, objective %.17g, config %d) is not the whole "
                   "table's (%d, objective %.17g, config %d)\n",
                   what, n, o0->objective, o0->headroom_percent, o0->micro_batches, eo,
                   one ? one->total_cost : 0.0, one && one->n_stages ? one->stages[0].config : -1,
                   ew, whole ? whole->total_cost : 0.0,
                   whole && whole->n_stages ? whole->stages[0].config : -1);
            CU_FAIL("the one-layer problem's plan is not the whole table's");
        } else {
            n_same++;
        }
        if (ew) {
            n_none++;
        } else {
            const ApsolveStage *st = &whole->stages[0];
            n_feasible++;
            n_without += o0->headroom_percent > 0 && !ow.search_headroom;
            if (st->config + 1 < q->num_configs &&
                q->cost[apsolve_index(q, 0, q->num_layers - 1, st->submesh, st->config + 1)] ==
                    st->cost)
                n_ties++;
        }
        apsolve_plan_free(&whole);
        apsolve_plan_free(&one);
        apsolve_problem_free(&q);
    }
    apsolve_offload_one_stage_free(&x);
}

static unsigned rng_state;

static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (rng_state >> 16) % n;
}

/* A made-up table of L layers on hosts x gpus with C configs per submesh:
 * configs in twins (2k, 2k + 1) whose entries are equal (ties) but for
 * the apply cost now and then; a third of them recompute full (no offload
 * pair); every range's entries, some missing; memory near avail. */
static ApsolveProblem *made_up(int L, int hosts, int gpus, int C, int64_t avail)
{
    ApsolveSubmesh sm[16];
    int S = apsolve_default_submeshes(hosts, gpus, sm, 16);
    ApsolveProblem *p = NULL;
    static const double applies[] = {-1.0, 0.0, 0.05, 0.1, 0.2};
    if (apsolve_problem_new(L, hosts, gpus, S, C, 1, &p))
        return NULL;
    for (int s = 0; s < S; s++) {
        p->submeshes[s] = sm[s];
        for (int c = 0; c < C; c++) {
            ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
            cf->valid = !(c == C - 1 && s % 2);
            cf->logical_a = 1;
            cf->logical_b = sm[s].hosts * sm[s].gpus;
            cf->force_batch_dim = -1;
            cf->variant.recompute = (c / 2) % 3 == 2 ? COSTDB_RECOMPUTE_FULL : COSTDB_RECOMPUTE_NONE;
            cf->variant.memory_level = (c / 2) % 2;
        }
    }
    for (int i = 0; i < L; i++)
        for (int j = i; j < L; j++)
            for (int s = 0; s < S; s++)
                for (int c = 0; c < C; c += 2) {
                    int dev = sm[s].hosts * sm[s].gpus;
                    double fwd = (1 + rnd(4)) * 0.25 * (j - i + 1) / dev;
                    ApsolveMemory m = {(int64_t)(1 + rnd(8)) * 1000,
                                       (int64_t)(1 + rnd(4)) * 500 * (j - i + 1), 1000, avail};
                    double apply = applies[rnd(5)];
                    if (!rnd(6))
                        continue; /* not profiled */
                    for (int t = c; t < c + 2 && t < C; t++) {
                        size_t idx = apsolve_index(p, i, j, s, t);
                        apsolve_times_own(p, idx)->fwd = fwd;
                        apsolve_times_own(p, idx)->bwd = 2 * fwd;
                        p->cost[idx] = 3 * fwd;
                        apsolve_times_own(p, idx)->wgrad = fwd;
                        CU_ASSERT(apsolve_memory_put(p, idx, &m) == APSOLVE_OK);
                        p->max_n_succ_stages[idx] = apsolve_memory_mnss(&m);
                        p->apply_cost[idx] = t > c && !rnd(3) ? applies[rnd(5)] : apply;
                    }
                }
    return p;
}

static void test_made_up(void)
{
    static const int64_t avails[] = {9000, 12000, 16000, (int64_t)1 << 40};
    n_same = n_feasible = n_none = n_without = n_ties = 0;
    for (unsigned seed = 1; seed <= 12; seed++)
        for (size_t a = 0; a < sizeof avails / sizeof *avails; a++) {
            int L = 2 + (int)(seed % 5), hosts = seed % 3 ? 1 : 2, gpus = seed % 2 ? 2 : 4;
            ApsolveProblem *p;
            char what[64];
            rng_state = seed * 7919u + (unsigned)a;
            p = made_up(L, hosts, gpus, 6 + (int)(seed % 4) * 2, avails[a]);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            snprintf(what, sizeof what, "made-up table %u (avail %lld)", seed,
                     (long long)avails[a]);
            for (int obj = APSOLVE_OBJECTIVE_ALPA; obj <= APSOLVE_OBJECTIVE_FULL; obj++)
                for (int h = 0; h < 2; h++)
                    for (int B = 1; B <= 4; B += 3) {
                        ApsolveOptions o = step_options(obj, h, B);
                        ApsolveOffloadSource src = {0};
                        src.nlayers = (size_t)L;
                        src.host_bandwidth = seed % 2 ? 1e4 : 1e7;
                        src.layers = calloc((size_t)L, sizeof *src.layers);
                        CU_ASSERT_PTR_NOT_NULL_FATAL(src.layers);
                        for (int k = 0; k < L; k++) {
                            src.layers[k].layer_index = k;
                            src.layers[k].activation_bytes = 1 + rnd(4);
                            src.layers[k].fwd_flops = 1 + rnd(3);
                            src.layers[k].bwd_flops = 2 * src.layers[k].fwd_flops;
                        }
                        check_all_n(p, &src, &o, what);
                    }
            apsolve_problem_free(&p);
        }
    printf("\nmade-up tables: %d the same (%d feasible, %d none, %d without the headroom, "
           "%d tied)\n", n_same, n_feasible, n_none, n_without, n_ties);
    /* the cases the comparison is for were met */
    CU_ASSERT(n_feasible > 100);
    CU_ASSERT(n_none > 10);
    CU_ASSERT(n_without > 0);
    CU_ASSERT(n_ties > 10);
}

/* The sweep of the database: its entries and layers at several budgets. */
static void test_sweep(void)
{
    Costdb *db = NULL;
    char err[256];
    int64_t budgets[6] = {0};
    int nb = 1;
    if (!db_path)
        return;
    CU_ASSERT_EQUAL_FATAL(costdb_open(db_path, COSTDB_OPEN_NOCREATE, &db, err, sizeof err), 0);
    n_same = n_feasible = n_none = n_without = n_ties = 0;
    for (int b = 0; b < nb; b++)
        for (int obj = APSOLVE_OBJECTIVE_ALPA; obj <= APSOLVE_OBJECTIVE_FULL; obj++) {
            ApsolveOptions o = step_options(obj, 1, 2);
            ApsolveProblem *p = NULL;
            ApsolveOffloadSource src;
            char why[400];
            o.memory_budget = budgets[b];
            CU_ASSERT_EQUAL_FATAL(apsolve_problem_from_db(db, 1, &o, &p), APSOLVE_OK);
            CU_ASSERT_EQUAL_FATAL(apsolve_offload_source_load(db, 1, &src, why, sizeof why), 0);
            /* budgets around the needs of the first and the last N's plans */
            if (b == 0 && obj == APSOLVE_OBJECTIVE_FULL)
                for (int n = 1; n < p->num_layers && nb + 2 <= 6; n += p->num_layers - 2) {
                    ApsolveProblem *q = NULL;
                    ApsolvePlan *pl = NULL;
                    ApsolveOptions x = o;
                    if (!apsolve_offload_one_stage_whole(&src, p, n, &q, why, sizeof why) &&
                        !apsolve_solve_keep_headroom(q, &x, &pl)) {
                        budgets[nb++] = pl->stages[0].memory_needed;
                        budgets[nb++] = pl->stages[0].memory_needed * 100 / 97;
                    }
                    apsolve_plan_free(&pl);
                    apsolve_problem_free(&q);
                    if (p->num_layers == 2)
                        break;
                }
            check_all_n(p, &src, &o, "the sweep");
            apsolve_problem_free(&p);
        }
    printf("\nthe sweep at %d budgets: %d the same (%d feasible, %d none, %d without the "
           "headroom)\n", nb, n_same, n_feasible, n_none, n_without);
    CU_ASSERT(nb >= 3);
    CU_ASSERT(n_feasible > 0);
    CU_ASSERT(n_none + n_without > 0);
    costdb_close(&db);
}

int main(int argc, char **argv)
{
    static const CunitTest tests[] = {
        {"made-up tables: one-layer plans are the whole table's", test_made_up},
        {"a sweep's entries at several budgets", test_sweep},
    };
    db_path = argc > 1 ? argv[1] : NULL;
    return CUNIT_RUN("offload one-stage problems", tests);
}
