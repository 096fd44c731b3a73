/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cp candidates of one micro-batch size searched ahead on the pool
 * (session_cpspec.h).
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "search_pool.h"
#include "session_cpspec.h"

void apsolve_cp_spec_init(ApsolveCpSpec *sp, ApsolveRun *r, const ApsolveProblem *p,
                          const ApsolveCpAuto *cpa, const ApsolvePlan *bar, int bar_h, int threads)
{
    /* the candidates ahead at once: as many as the budget holds tables of
     * p's size (a candidate's is p's subset), at most the threads; fewer
     * than two, the serial loop */
    size_t table = p ? apsolve_problem_bytes(p) : 0;
    size_t fit = table ? APSOLVE_CP_AHEAD_BYTES / table : (size_t)threads;
    sp->ahead = fit < (size_t)threads ? (int)fit : threads;
    sp->on = sp->ahead > 1;
    sp->n = 0;
    sp->r = r;
    sp->quiet = *r->a;
    sp->quiet.notice = NULL;
    sp->quiet.error = NULL;
    sp->cpa = cpa;
    sp->bar = bar;
    sp->bar_h = bar_h;
    sp->threads = threads;
    sp->kept = -1;
}

void apsolve_cp_spec_add(ApsolveCpSpec *sp, int i, const ApsolveCand *c, int cp, int comm,
                         int micro_batches, int64_t micro)
{
    ApsolveCpSpecOne *o;
    if (sp->n >= (int)(sizeof sp->one / sizeof *sp->one))
        return;
    o = &sp->one[sp->n++];
    memset(o, 0, sizeof *o);
    o->i = i;
    o->cp = cp;
    o->comm = comm;
    o->micro_batches = micro_batches;
    o->micro = micro;
    o->c = *c;
    o->c.p = NULL;
}

/* Frees a finished candidate's table and plan; it is then searched again
 * in the serial order (apsolve_cp_spec_take), as a failed one is. */
static void spec_one_drop(ApsolveCpSpecOne *o)
{
    apsolve_plan_free(&o->pl);
    apsolve_problem_free(&o->c.p);
    apsolve_subset_free(&o->v);
    o->fail = 1;
}

/* One candidate's table and search, as the serial loop makes them, on a
 * copy of the run (its own count of inexact bounds, no messages). */
static void spec_task(void *ctx, int k)
{
    ApsolveCpSpec *sp = ctx;
    ApsolveCpSpecOne *o = &sp->one[k];
    ApsolveRun rr = *sp->r;
    rr.a = &sp->quiet;
    rr.cut_inexact = 0;
    if (apsolve_cp_auto_table(sp->cpa, o->cp, o->comm, &o->c.p, &o->v)) {
        o->fail = 1;
        return;
    }
    o->c.opt.micro_batches = o->micro_batches;
    o->c.micro = o->micro;
    o->bound = INFINITY;
    if (apsolve_auto_layouts(&rr, &o->c, o->cp, "cp", sp->bar, sp->bar_h, &o->pl, &o->h,
                             &o->bound)) {
        o->fail = 1;
        apsolve_plan_free(&o->pl);
    }
    o->cut_inexact = rr.cut_inexact;
    /* only a plan reads its table again (cp_whole, the offer) */
    if (!o->pl) {
        apsolve_problem_free(&o->c.p);
        apsolve_subset_free(&o->v);
        return;
    }
    /* at most one finished candidate keeps its table and plan: the first
     * in the serial order. Once a candidate's plan is taken and beats the
     * best so far, every later one is searched again anyway; a dropped one
     * is searched again in the serial order (apsolve_cp_spec_take), as a
     * failed one is, so the output is the same (the bound: session_cpspec.h) */
    pthread_mutex_lock(&sp->lock);
    if (sp->kept >= 0 && sp->kept < k) {
        spec_one_drop(o);
    } else {
        if (sp->kept >= 0)
            spec_one_drop(&sp->one[sp->kept]);
        sp->kept = k;
    }
    pthread_mutex_unlock(&sp->lock);
}

int apsolve_cp_spec_next(ApsolveCpSpec *sp, int pass)
{
    if (pass == 0 && sp->n > 0) {
        pthread_mutex_init(&sp->lock, NULL);
        apsolve_pool_run(sp->ahead, sp->n, spec_task, sp);
        pthread_mutex_destroy(&sp->lock);
    }
    return pass + 1;
}

static void spec_one_free(ApsolveCpSpecOne *o)
{
    apsolve_plan_free(&o->pl);
    apsolve_problem_free(&o->c.p);
    apsolve_subset_free(&o->v);
    o->taken = 1;
}

int apsolve_cp_spec_take(ApsolveCpSpec *sp, int i, int changed, ApsolveCand *c, ApsolveSubset *v,
                         ApsolvePlan **pl, int *h, double *bound)
{
    for (int k = 0; sp->on && k < sp->n; k++) {
        ApsolveCpSpecOne *o = &sp->one[k];
        if (o->i != i || o->taken)
            continue;
        if (changed || o->fail) {
            spec_one_free(o);
            return 0;
        }
        *c = o->c;
        *v = o->v;
        *pl = o->pl;
        *h = o->h;
        *bound = o->bound;
        sp->r->cut_inexact += o->cut_inexact;
        o->taken = 1;
        return 1;
    }
    return 0;
}

void apsolve_cp_spec_free(ApsolveCpSpec *sp)
{
    for (int k = 0; k < sp->n; k++)
        if (!sp->one[k].taken)
            spec_one_free(&sp->one[k]);
    sp->n = 0;
}
