/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A chunked search's stage counts one by one (solver_int.h, ApsolveCounts;
 * session_search.c, chunk_solve; docs/performance.md, "apsolve's chunked
 * searches: each stage count searched once"). An exact-count search
 * (solve_all's per-n branch, dp.c) is, per stage count n its schedule
 * allows, an independent search (its own options from the shared table,
 * its own Dps; the DpFamily only shares work that gives each n the same
 * bound), and the whole search's plan is the first of least (total_cost,
 * cost) over the counts in ascending order, its threshold DPs the sum of
 * theirs and its distinct costs the largest. So the counts searched whole
 * by earlier calls need not be searched again: apsolve_counts_whole
 * searches the rest and takes the whole search's plan and counts from all.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dp_int.h"
#include "session_int.h"
#include "solver_int.h"

/* The run's family (dp_int.h, DpFamily) over every count ns[0 .. count)
 * of the schedule up to cs->nmax, made at the run's first search: a
 * family answers each of its counts with apsolve_entry_mnss's bound,
 * whatever other counts it holds (dp_prep.c), so one made over them all
 * serves every search of the run (same p, opt and sh: ApsolveCounts.id),
 * and each item's fit, once read from its memory entry, is kept for the
 * run's later calls rather than read again by each (cut, then whole). */
static int counts_family(const ApsolveProblem *p, const ApsolveOptions *opt,
                         const ApsolveDpShared *sh, ApsolveCounts *cs, const int *ns, int count)
{
    int in[APSOLVE_MAX_LAYERS], k = 0;
    if (cs->fam)
        return APSOLVE_OK;
    for (int q = 0; q < count; q++)
        if (ns[q] <= cs->nmax)
            in[k++] = ns[q];
    if (!(cs->fam = malloc(sizeof *cs->fam)))
        return APSOLVE_ENOMEM;
    if (apsolve_dp_family_init(cs->fam, sh, p, opt, in, k) != APSOLVE_OK) {
        free(cs->fam);
        cs->fam = NULL;
        return APSOLVE_ENOMEM;
    }
    return APSOLVE_OK;
}

static void counts_family_free(ApsolveCounts *cs)
{
    if (cs->fam)
        apsolve_dp_family_free(cs->fam);
    free(cs->fam);
    cs->fam = NULL;
}

int apsolve_solve_counts(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, const unsigned char *want, double bar,
                         ApsolveCounts *cs)
{
    const double *vals = NULL;
    size_t n_vals = 0;
    int ns[APSOLVE_MAX_LAYERS], count, kept = 0, rc;
    DpCut cut = {bar, bar < INFINITY}; /* +inf: no cut (dp.c's no_cut) */
    if (isnan(bar) || !cs || !opt || !apsolve_solve_by_count(opt))
        return APSOLVE_EINVAL;
    if ((rc = apsolve_dp_solve_setup(p, opt, sh, &vals, &n_vals)) != APSOLVE_OK)
        return rc;
    count = apsolve_dp_valid_counts(p, opt, apsolve_virtual(opt), ns);
    if ((rc = counts_family(p, opt, sh, cs, ns, count)) != APSOLVE_OK)
        return rc;
    for (int q = 0; q < count; q++) /* those asked for, not yet searched whole */
        if (ns[q] <= cs->nmax && (!want || want[ns[q]]) && cs->run[ns[q]] != 1)
            ns[kept++] = ns[q];
    for (int q = 0; q < kept && rc == APSOLVE_OK; q++) {
        int n = ns[q], e;
        double t0 = costdb_monotonic_seconds();
        apsolve_plan_free(&cs->plan[n]);
        cs->evals[n] = cs->cands[n] = 0;
        e = apsolve_dp_solve_apply(p, opt, sh, cs->fam, vals, n_vals, n, n, 0, cut, cs->id, &cs->plan[n],
                                   &cs->evals[n], &cs->cands[n]);
        cs->secs[n] = costdb_monotonic_seconds() - t0;
        cs->run[n] = bar < INFINITY ? 2 : 1;
        if (e != APSOLVE_EINFEASIBLE)
            rc = e;
        if (rc == APSOLVE_OK && bar < INFINITY && cs->plan[n] && cs->plan[n]->total_cost < bar)
            break; /* apsolve_solve_shared_below's first plan below the bar */
    }
    return rc;
}

/* solve_all's rule (apsolve_plan_better: the least total_cost, then the
 * least cost, the first on a tie) over the counts searched whole. */
int apsolve_counts_best(const ApsolveCounts *cs)
{
    int best = -1;
    for (int n = 1; n <= cs->nmax; n++)
        if (cs->run[n] == 1 && cs->plan[n] &&
            apsolve_plan_better(cs->plan[n], best < 0 ? NULL : cs->plan[best]))
            best = n;
    return best;
}

int apsolve_counts_narrow(const ApsolveCounts *cs, unsigned char *want, double bar)
{
    int below = 0;
    for (int n = 1; n <= cs->nmax; n++)
        if (cs->run[n] == 2) {
            int at = cs->plan[n] && !(cs->plan[n]->total_cost > bar);
            want[n] = (unsigned char)at;
            below |= at;
        }
    return below;
}

int apsolve_counts_whole(const ApsolveProblem *p, const ApsolveOptions *opt,
                         ApsolveDpShared *sh, ApsolveCounts *cs, ApsolvePlan **out)
{
    int ns[APSOLVE_MAX_LAYERS], count, best = -1, rc;
    long evals = 0, cands = 0;
    double secs = 0;
    if (!out)
        return APSOLVE_EINVAL;
    *out = NULL;
    if ((rc = apsolve_solve_counts(p, opt, sh, NULL, INFINITY, cs)) != APSOLVE_OK)
        return rc;
    count = apsolve_dp_valid_counts(p, opt, apsolve_virtual(opt), ns);
    for (int q = 0; q < count; q++) { /* solve_all's loop over its results */
        int n = ns[q];
        if (n > cs->nmax || cs->run[n] != 1)
            return APSOLVE_EINVAL;
        evals += cs->evals[n];
        cands = cs->cands[n] > cands ? cs->cands[n] : cands;
        secs += cs->secs[n];
        if (cs->plan[n] && apsolve_plan_better(cs->plan[n], best < 0 ? NULL : cs->plan[best]))
            best = n;
    }
    if (best < 0)
        return APSOLVE_EINFEASIBLE;
    *out = cs->plan[best];
    cs->plan[best] = NULL;
    cs->run[best] = 0;
    (*out)->dp_evaluations = evals;
    (*out)->candidates = cands;
    (*out)->solve_seconds = secs;
    return APSOLVE_OK;
}

/* A run id no other ApsolveCounts run of the process has (dp_int.h,
 * ApsolveDpShared.prep_id): a counter, never 0. */
static unsigned long counts_run_id(void)
{
    static unsigned long next;
    unsigned long id;
    while ((id = __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED)) == 0)
        ;
    return id;
}

int apsolve_counts_init(ApsolveCounts *cs, int nmax)
{
    memset(cs, 0, sizeof *cs);
    cs->nmax = nmax;
    cs->id = counts_run_id();
    cs->plan = calloc((size_t)nmax + 1, sizeof *cs->plan);
    cs->evals = calloc((size_t)nmax + 1, sizeof *cs->evals);
    cs->cands = calloc((size_t)nmax + 1, sizeof *cs->cands);
    cs->secs = calloc((size_t)nmax + 1, sizeof *cs->secs);
    cs->run = calloc((size_t)nmax + 1, 1);
    if (!cs->plan || !cs->evals || !cs->cands || !cs->secs || !cs->run) {
        apsolve_counts_free(cs);
        return APSOLVE_ENOMEM;
    }
    return APSOLVE_OK;
}

void apsolve_counts_clear(ApsolveCounts *cs)
{
    cs->id = counts_run_id(); /* a new run: other inputs may follow */
    counts_family_free(cs);
    for (int n = 0; cs->plan && n <= cs->nmax; n++) {
        apsolve_plan_free(&cs->plan[n]);
        cs->run[n] = 0;
    }
}

void apsolve_counts_free(ApsolveCounts *cs)
{
    apsolve_counts_clear(cs); /* the family too */
    free(cs->plan);
    free(cs->evals);
    free(cs->cands);
    free(cs->secs);
    free(cs->run);
    memset(cs, 0, sizeof *cs);
}

