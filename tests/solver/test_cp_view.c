/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The auto search's cp candidates as subsets of the sweep's pairs
 * (solver/problem_subset.h, apsolve_cp_problem_auto with views) against the
 * whole-table copies they replace: for each cp degree and communication,
 * and for each layout (submesh, logical mesh) the auto search solves, the
 * DP's plan on the subset, its indices mapped back, is the plan on the
 * whole table with the other pairs +inf, field for field (costs, memory,
 * thresholds, candidates); and the sweep's own problem (the plain rows the
 * subsets are read from) is bit for bit what it was, so the plain plan
 * priced after the cp step is the plain plan without it.
 *
 * The candidates made one at a time (apsolve_cp_auto_open and _table, as
 * the auto search makes them, with the sweep's out-of-memory entries
 * restored in place) are the batch's tables bit for bit, in any order, and
 * each subset, which holds no unfit figures and comes settled, holds in
 * every pair it keeps the whole table's entry settled by
 * apsolve_unfit_settle. And the heads verdicts and prices a range's
 * configs of one layout share (context_parallel.c, check_memo and
 * price_memo) are each entry's own: the tables are those of
 * apsolve_cp_auto_price_each, bit for bit (with the model's heads, and
 * with made-up heads that a2a refuses at some tp only).
 *
 * A model whose sweep records its routing (a MoE) is checked the same way
 * for its ep candidates (apsolve_ep_problem_auto with a view) on the sweep,
 * each subset holding only the submeshes with a pair kept (some candidate
 * leaves the 1-GPU submesh out). apsolve_cp_auto_kept names each cp
 * subset's submeshes (those with a pair kept; every one where none is).
 *
 * The auto search's handle reads the transients' cut only when asked
 * (apsolve_cp_auto_transients_load, before its first table), and its
 * tables are then apsolve_cp_auto_open's bit for bit.
 *
 * Usage: test_cp_view DB MICRO (sweep 1 of DB, made by cp_view.sh; MICRO its
 * micro-batch size).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "oracle.h"
#include "context_parallel.h"
#include "costdb.h"
#include "expert_parallel.h"
#include "problem_subset.h"
#include "session_int.h"
#include "schedule.h"
#include "sweep_problem.h"
#include "unfit_in_place.h"

static int failures;

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                      \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* The same plan: both none, or every field the output prints (less the
 * solve time). */
static int same_plan(const ApsolvePlan *a, const ApsolvePlan *b)
{
    if (!a || !b)
        return !a && !b;
    if (a->feasible != b->feasible || a->cost != b->cost || a->total_cost != b->total_cost ||
        a->apply_cost != b->apply_cost || a->sum_cost != b->sum_cost ||
        a->max_stage_cost != b->max_stage_cost || a->n_stages != b->n_stages ||
        a->dp_evaluations != b->dp_evaluations || a->candidates != b->candidates ||
        a->devices_used != b->devices_used)
        return 0;
    for (size_t k = 0; k < a->n_stages; k++) {
        const ApsolveStage *x = &a->stages[k], *y = &b->stages[k];
        if (x->start_layer != y->start_layer || x->end_layer != y->end_layer ||
            x->submesh != y->submesh || x->config != y->config || x->cost != y->cost ||
            x->fwd_cost != y->fwd_cost || x->bwd_cost != y->bwd_cost ||
            x->wgrad_cost != y->wgrad_cost || x->apply_cost != y->apply_cost ||
            x->max_n_succ_stages != y->max_n_succ_stages ||
            x->memory_needed != y->memory_needed || x->logical_a != y->logical_a ||
            x->logical_b != y->logical_b)
            return 0;
    }
    return 1;
}

/* The plan of p under o, NULL when there is none. */
static ApsolvePlan *solve(const ApsolveProblem *p, const ApsolveOptions *o)
{
    ApsolvePlan *pl = NULL;
    ApsolveOptions x = *o;
    int e = apsolve_solve_keep_headroom(p, &x, &pl);
    if (e && e != APSOLVE_EINFEASIBLE)
        printf("FAIL: apsolve_solve: %s\n", apsolve_strerror(e)), failures++;
    return e ? NULL : pl;
}

/* The plan on subset v of q (mapped back) against the plan on q itself. */
static void check_subset(const ApsolveProblem *q, const ApsolveProblem *sub,
                         const ApsolveSubset *v, const ApsolveOptions *o, const char *what)
{
    ApsolvePlan *whole = solve(q, o), *part = solve(sub, o);
    apsolve_subset_plan(v, part);
    CHECK(same_plan(whole, part), "%s (schedule %d, objective %d): the subset's plan differs",
          what, o->schedule, o->objective);
    apsolve_plan_free(&whole);
    apsolve_plan_free(&part);
}

/* Each layout of q (submesh s, a logical mesh with the batch on axis 0):
 * q with every other pair +inf against its subset, as the auto search
 * solves it (session_autocp.c, apsolve_auto_layouts). */
static void check_layouts(const ApsolveProblem *q, const ApsolveOptions *o, const char *what)
{
    unsigned char *keep = calloc((size_t)q->num_submeshes * (size_t)q->num_configs, 1);
    for (int s = 0; keep && s < q->num_submeshes; s++)
        /* two layouts of each submesh */
        for (int k = 0, tried = 0; k < q->num_configs && tried < 2; k++) {
            const ApsolveConfig *ck = &q->configs[(size_t)s * q->num_configs + k];
            ApsolveProblem *inf = NULL, *sub = NULL;
            ApsolveSubset v;
            if (!ck->valid || ck->force_batch_dim != 0)
                continue;
            for (int u = 0; u < q->num_configs; u++) {
                const ApsolveConfig *cu = &q->configs[(size_t)s * q->num_configs + u];
                keep[(size_t)s * q->num_configs + u] = cu->logical_a == ck->logical_a &&
                                                       cu->logical_b == ck->logical_b &&
                                                       cu->force_batch_dim == 0;
            }
            if (apsolve_subset_new(q, keep, 0, &v) == APSOLVE_OK &&
                apsolve_subset_problem(q, &v, &sub) == APSOLVE_OK &&
                apsolve_problem_clone(q, &inf) == APSOLVE_OK) {
                for (int i = 0; i < q->num_layers; i++)
                    for (int j = i; j < q->num_layers; j++)
                        for (int t = 0; t < q->num_submeshes; t++)
                            for (int u = 0; u < q->num_configs; u++) {
                                size_t idx = apsolve_index(q, i, j, t, u);
                                if (keep[(size_t)t * q->num_configs + u])
                                    continue;
                                inf->cost[idx] = INFINITY;
                                apsolve_times_drop(inf, idx);
                            }
                check_subset(inf, sub, &v, o, what);
                tried++;
            }
            memset(keep + (size_t)s * q->num_configs, 0, (size_t)q->num_configs);
            apsolve_problem_free(&inf);
            apsolve_problem_free(&sub);
            apsolve_subset_free(&v);
        }
    free(keep);
}

/* The ep candidates of p (a MoE sweep's) on subsets against whole tables,
 * and p untouched by them. */
static void check_ep(Costdb *db, const ApsolveProblem *p, const ApsolveOptions *o)
{
    CostdbSweep sw;
    ApsolveEpLayout l;
    ApsolveEpCache cache = {NULL, NULL};
    ApsolveProblem *before = NULL;
    int tried = 0, dropped = 0;
    memset(&l, 0, sizeof l);
    if (costdb_sweep_get(db, 1, &sw) || apsolve_ep_cache_new(p, &cache) ||
        apsolve_problem_clone(p, &before)) {
        printf("FAIL: cannot read sweep 1 for ep\n");
        failures++;
        return;
    }
    apsolve_ep_routing(db, sw.model_id, &l.top_k, &l.capacity);
    l.cp = 1;
    for (l.ep = 2; l.top_k && l.ep <= p->num_devices; l.ep *= 2)
        for (l.etp = 1; l.etp <= p->cluster_gpus && l.ep * l.etp <= p->num_devices; l.etp *= 2) {
            ApsolveProblem *whole = NULL, *part = NULL;
            ApsolveSubset v;
            size_t nw = 0, np = 0;
            char why[400], what[64];
            memset(&v, 0, sizeof v);
            snprintf(what, sizeof what, "ep=%d etp=%d", l.ep, l.etp);
            CHECK(apsolve_ep_problem_auto(db, 1, p, &cache, &l, &whole, NULL, &nw, why,
                                          sizeof why) == 0 &&
                      apsolve_ep_problem_auto(db, 1, p, &cache, &l, &part, &v, &np, why,
                                              sizeof why) == 0,
                  "%s: %s", what, why);
            CHECK(nw == np, "%s: %zu entries transformed on the whole table, %zu on the subset",
                  what, nw, np);
            if (whole && part && nw) {
                /* only the submeshes with a pair kept (apsolve_subset_new_kept) */
                for (int s2 = 0; s2 < v.num_submeshes; s2++)
                    CHECK(v.config[(size_t)s2 * v.num_configs] >= 0,
                          "%s: the subset's submesh %d holds no pair kept", what, s2);
                dropped += v.num_submeshes < p->num_submeshes;
                check_subset(whole, part, &v, o, what);
                check_layouts(whole, o, what);
                tried++;
            }
            apsolve_problem_free(&whole);
            apsolve_problem_free(&part);
            apsolve_subset_free(&v);
        }
    CHECK(!l.top_k || tried > 0, "no ep candidate transformed an entry");
    /* the 1-GPU submesh holds no ep stage */
    CHECK(!l.top_k || dropped > 0, "no ep candidate's subset left out a submesh");
    CHECK(oracle_same_problem(p, before), "the ep step changed the sweep's own problem");
    if (tried)
        printf("ok: %d ep candidates (%d of them on fewer submeshes), subsets and layouts "
               "the same plans as whole tables\n", tried, dropped);
    apsolve_problem_free(&before);
    apsolve_ep_cache_free(&cache);
}

/* The same bits in field f of entry a of p and entry b of q. */
#define SAME_AT(f, p, a, q, b) (!memcmp(&(p)->f[a], &(q)->f[b], sizeof (p)->f[a]))

/* The auto search's handle (apsolve_cp_auto_open_as_restored) leaves the
 * transients' cut unread, refuses a table until it is loaded, and then
 * makes cpa's tables (apsolve_cp_auto_open's) bit for bit. */
static void check_transients_deferred(Costdb *db, const ApsolveProblem *p,
                                      const ApsolveCpAuto *cpa, int64_t micro, const int *cps,
                                      const int *comms, int ncp, int heads, int kv_heads)
{
    ApsolveCpAuto *lazy = NULL;
    ApsolveProblem *q = NULL;
    int64_t seq = 0;
    int attention = 0;
    char why[400];
    CHECK(cpa && apsolve_cp_auto_transients_loaded(cpa), "open: the transients not loaded");
    CHECK(apsolve_cp_auto_open_as_restored(db, 1, p, micro, &micro, 1, heads, kv_heads, &lazy,
                                           &seq, &attention, why, sizeof why) == 0 && lazy,
          "open as restored: %s", why);
    if (!lazy || !cpa)
        return;
    CHECK(!apsolve_cp_auto_transients_loaded(lazy), "open as restored read the transients");
    CHECK(apsolve_cp_auto_table(lazy, cps[0], comms[0], &q, NULL) == APSOLVE_EINVAL && !q,
          "a table made without the transients");
    CHECK(apsolve_cp_auto_transients_load(lazy, db, 1, why, sizeof why) == 0 &&
              apsolve_cp_auto_transients_load(lazy, db, 1, why, sizeof why) == 0 &&
              apsolve_cp_auto_transients_loaded(lazy),
          "load: %s", why);
    for (int k = 0; k < ncp && !failures; k++) {
        ApsolveProblem *w = NULL;
        CHECK(apsolve_cp_auto_table(lazy, cps[k], comms[k], &q, NULL) == 0 &&
                  apsolve_cp_auto_table(cpa, cps[k], comms[k], &w, NULL) == 0 && q && w &&
                  oracle_same_problem(q, w),
              "cp=%d comm %d: the deferred transients' table differs", cps[k], comms[k]);
        apsolve_problem_free(&q);
        apsolve_problem_free(&w);
    }
    apsolve_cp_auto_close(&lazy);
}

/* The cp candidates one at a time against the batch and the whole tables
 * (see the head of the file), on p with its unfit entries restored. */
static void check_one_at_a_time(Costdb *db, ApsolveProblem *p, int64_t micro, const int *cps,
                                const int *comms, int ncp, int heads, int kv_heads)
{
    ApsolveProblem *before = NULL, *batch[12];
    ApsolveSubset bviews[12];
    ApsolveUnfitUndo undo = {NULL, 0};
    ApsolveCpAuto *cpa = NULL;
    int64_t seq = 0, seq2 = 0;
    int attention = 0, attention2 = 0, tables = 0;
    char why[400];
    CHECK(apsolve_problem_clone(p, &before) == 0, "clone");
    CHECK(apsolve_unfit_open_in_place(p, &undo) == 0, "unfit in place");
    CHECK(apsolve_cp_problem_auto(db, 1, p, micro, &micro, 1, cps, comms, heads, kv_heads, ncp,
                                  batch, bviews, &seq, &attention, why, sizeof why) == 0,
          "batch: %s", why);
    CHECK(apsolve_cp_auto_open(db, 1, p, micro, &micro, 1, heads, kv_heads, &cpa, &seq2,
                               &attention2, why, sizeof why) == 0, "open: %s", why);
    CHECK(seq == seq2 && attention == attention2, "open: sequence %lld/%lld, attention %d/%d",
          (long long)seq, (long long)seq2, attention, attention2);
    check_transients_deferred(db, p, cpa, micro, cps, comms, ncp, heads, kv_heads);
    for (int k = ncp - 1; k >= 0 && cpa && !failures; k--) {
        ApsolveProblem *q = NULL, *w = NULL;
        ApsolveSubset v;
        int S2, C2;
        CHECK(apsolve_cp_auto_table(cpa, cps[k], comms[k], &q, &v) == 0 &&
                  apsolve_cp_auto_table(cpa, cps[k], comms[k], &w, NULL) == 0,
              "table %d", k);
        if (!q || !w || !batch[k]) {
            apsolve_problem_free(&q);
            apsolve_problem_free(&w);
            apsolve_subset_free(&v);
            continue;
        }
        tables++;
        CHECK(!q->unfit_table, "cp=%d: the subset holds unfit figures", cps[k]);
        CHECK(oracle_same_problem(q, batch[k]) && v.num_submeshes == bviews[k].num_submeshes &&
                  v.num_configs == bviews[k].num_configs &&
                  !memcmp(v.config, bviews[k].config,
                          (size_t)v.num_submeshes * v.num_configs * sizeof *v.config),
              "cp=%d comm %d: made alone, not the batch's table", cps[k], comms[k]);
        {
            /* apsolve_cp_auto_kept: the subset's submeshes (every one,
             * each of padding, where none is kept) */
            unsigned char kept[64];
            int nk = p->num_submeshes <= 64 ? apsolve_cp_auto_kept(cpa, cps[k], comms[k], kept)
                                             : -1, in = 0;
            CHECK(nk >= 0, "more than 64 submeshes");
            for (int s = 0; s < p->num_submeshes && nk >= 0; s++) {
                int at = 0;
                for (int s2 = 0; s2 < v.num_submeshes; s2++)
                    at |= v.submesh[s2] == s;
                in += at;
                CHECK(nk ? at == kept[s] : at, "cp=%d comm %d: submesh %d kept %d, in the "
                      "subset %d", cps[k], comms[k], s, kept[s], at);
            }
            CHECK(in == (nk ? nk : p->num_submeshes), "cp=%d: kept submeshes", cps[k]);
        }
        apsolve_unfit_settle(w);
        S2 = v.num_submeshes;
        C2 = v.num_configs;
        for (int i = 0; i < p->num_layers; i++)
            for (int j = i; j < p->num_layers; j++)
                for (int s2 = 0; s2 < S2; s2++)
                    for (int c2 = 0; c2 < C2; c2++) {
                        int c = v.config[(size_t)s2 * C2 + c2];
                        size_t a, b;
                        if (c < 0)
                            continue;
                        a = apsolve_index(w, i, j, v.submesh[s2], c);
                        b = apsolve_index(q, i, j, s2, c2);
                        CHECK(SAME_AT(cost, w, a, q, b) && 
                                  !memcmp(apsolve_times_at(w, a), apsolve_times_at(q, b),
                                          sizeof(ApsolveTimes)) &&
                                  SAME_AT(apply_cost, w, a, q, b) &&
                                  !memcmp(apsolve_memory_at(w, a), apsolve_memory_at(q, b),
                                          sizeof(ApsolveMemory)) &&
                                  SAME_AT(max_n_succ_stages, w, a, q, b),
                              "cp=%d comm %d: entry (%d, %d, %d, %d) differs from the whole "
                              "table's, settled", cps[k], comms[k], i, j, v.submesh[s2], c);
                    }
        apsolve_problem_free(&q);
        apsolve_problem_free(&w);
        apsolve_subset_free(&v);
    }
    CHECK(tables > 0, "no cp candidate made");
    apsolve_cp_auto_close(&cpa);
    CHECK(!cpa, "closed");
    for (int k = 0; k < ncp; k++) {
        apsolve_problem_free(&batch[k]);
        apsolve_subset_free(&bviews[k]);
    }
    apsolve_unfit_close_in_place(p, &undo);
    CHECK(oracle_same_problem(p, before), "the sweep's problem after its unfit entries are put back");
    apsolve_problem_free(&before);
}

/* The cp whole tables with a range's prices shared among the configs of
 * one layout and with every entry priced alone (see the head of the
 * file): the same bits in every table. */
static void check_shared_prices(Costdb *db, const ApsolveProblem *p, int64_t micro,
                                const int *cps, const int *comms, int ncp, int heads,
                                int kv_heads)
{
    ApsolveCpAuto *a = NULL, *b = NULL;
    int64_t seq = 0;
    int attention = 0, compared = 0;
    char why[400];
    CHECK(apsolve_cp_auto_open(db, 1, p, micro, &micro, 1, heads, kv_heads, &a, &seq,
                               &attention, why, sizeof why) == 0 &&
              apsolve_cp_auto_open(db, 1, p, micro, &micro, 1, heads, kv_heads, &b, &seq,
                                   &attention, why, sizeof why) == 0,
          "open: %s", why);
    if (b)
        apsolve_cp_auto_price_each(b);
    for (int k = 0; k < ncp && a && b && !failures; k++) {
        ApsolveProblem *w = NULL, *we = NULL;
        CHECK(apsolve_cp_auto_table(a, cps[k], comms[k], &w, NULL) == 0 &&
                  apsolve_cp_auto_table(b, cps[k], comms[k], &we, NULL) == 0,
              "tables of cp=%d", cps[k]);
        if (!w || !we)
            continue;
        for (size_t x = 0; x < apsolve_problem_cells(p); x++)
            compared += isfinite(w->cost[x]) && w->cost[x] != p->cost[x];
        CHECK(oracle_same_problem(w, we), "cp=%d comm %d: the shared prices are not each entry's own",
              cps[k], comms[k]);
        apsolve_problem_free(&w);
        apsolve_problem_free(&we);
    }
    CHECK(compared > 0, "no cp stage compared");
    apsolve_cp_auto_close(&a);
    apsolve_cp_auto_close(&b);
}

int main(int argc, char **argv)
{
    Costdb *db = NULL;
    ApsolveProblem *p = NULL, *before = NULL, *whole[12], *part[12];
    ApsolveSubset views[12];
    ApsolveOptions o;
    ApsolvePlan *plain = NULL, *again = NULL;
    int cps[12], comms[12], ncp = 0, heads = 0, kv_heads = 0, attention = 0, attention2 = 0;
    int64_t micro, seq = 0, seq2 = 0;
    char why[400];
    if (argc != 3 || (micro = atoll(argv[2])) <= 0) {
        fprintf(stderr, "usage: test_cp_view DB MICRO\n");
        return 2;
    }
    if (sweep_problem_open("test_cp_view", argv[1], &db, &o, &p))
        return 1;
    if (apsolve_problem_clone(p, &before) != APSOLVE_OK) {
        fprintf(stderr, "test_cp_view: cannot copy sweep 1 of %s\n", argv[1]);
        return 1;
    }
    plain = solve(p, &o);
    apsolve_cp_heads(db, 1, p, &heads, &kv_heads);
    for (int cp = 2; cp <= p->cluster_gpus && ncp + 4 <= 12; cp *= 2)
        for (int comm = APSOLVE_CP_P2P; comm <= APSOLVE_CP_ALL_GATHER; comm++) {
            cps[ncp] = cp;
            comms[ncp++] = comm;
        }
    CHECK(apsolve_cp_problem_auto(db, 1, p, micro, &micro, 1, cps, comms, heads, kv_heads, ncp,
                                  whole, NULL, &seq, &attention, why, sizeof why) == 0,
          "whole tables: %s", why);
    CHECK(apsolve_cp_problem_auto(db, 1, p, micro, &micro, 1, cps, comms, heads, kv_heads, ncp,
                                  part, views, &seq2, &attention2, why, sizeof why) == 0,
          "subsets: %s", why);
    CHECK(seq > 0 && seq == seq2 && attention > 0 && attention == attention2,
          "sequence %lld/%lld, attention layers %d/%d", (long long)seq, (long long)seq2,
          attention, attention2);
    /* the plain rows the subsets were read from: untouched */
    CHECK(oracle_same_problem(p, before), "the cp step changed the sweep's own problem");
    again = solve(p, &o);
    CHECK(same_plan(plain, again), "the plain plan after the cp step is not the one before");
    for (int k = 0; k < ncp && !failures; k++) {
        ApsolveOptions c = o;
        char what[64];
        if (!whole[k] || !part[k])
            continue;
        snprintf(what, sizeof what, "cp=%d cp_comm=%s", cps[k], apsolve_cp_comm_name(comms[k]));
        /* the subset is smaller than the whole table (the point of it) */
        CHECK(part[k]->num_configs <= p->num_configs, "%s: %d configs in the subset", what,
              part[k]->num_configs);
        c.micro_batches = o.micro_batches * cps[k];
        for (int sc = APSOLVE_SCHEDULE_1F1B; sc <= APSOLVE_SCHEDULE_ZB_H1; sc += 3) {
            c.schedule = sc;
            c.objective = APSOLVE_OBJECTIVE_FULL;
            check_subset(whole[k], part[k], &views[k], &c, what);
            check_layouts(whole[k], &c, what);
            c.objective = APSOLVE_OBJECTIVE_ALPA;
            check_subset(whole[k], part[k], &views[k], &c, what);
        }
    }
    check_ep(db, p, &o);
    check_one_at_a_time(db, p, micro, cps, comms, ncp, heads, kv_heads);
    check_shared_prices(db, p, micro, cps, comms, ncp, heads, kv_heads);
    /* heads that refuse a2a at some tp and not at others (the verdicts a
     * range's configs of one layout share) */
    check_shared_prices(db, p, micro, cps, comms, ncp, 6, 2);
    for (int k = 0; k < ncp; k++) {
        apsolve_problem_free(&whole[k]);
        apsolve_problem_free(&part[k]);
        apsolve_subset_free(&views[k]);
    }
    apsolve_plan_free(&plain);
    apsolve_plan_free(&again);
    apsolve_problem_free(&before);
    apsolve_problem_free(&p);
    costdb_close(&db);
    if (failures)
        printf("%d failures\n", failures);
    else
        printf("ok: %d cp candidates, subsets and layouts the same plans as whole tables\n", ncp);
    return failures != 0;
}
