/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One try of an auto-search step that reprices the auto plan's problem
 * (session_int.h, ApsolveAutoStep): the partial-recomputation step
 * (session_autorl.c) and the activation-offload step
 * (session_autooffload.c) each solve a composed problem per K or N (the
 * offload step a one-stage problem of its own: offload_one_stage.h), keep
 * the best plan by the search's own rule (apsolve_auto_better: the
 * headroom kept first, then the objective) and make it the auto plan.
 */
#include <math.h>

#include "apsolve.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

int apsolve_auto_step_offer(ApsolveAutoStep *st, int e, ApsolvePlan **pl,
                            const ApsolveOptions *o, int n)
{
    if (e == APSOLVE_EINFEASIBLE || (e == 0 && !(*pl)->feasible)) {
        apsolve_plan_free(pl);
        return 0;
    }
    if (e) {
        apsolve_plan_free(pl);
        return e;
    }
    st->priced++;
    if (!apsolve_auto_better(*pl, o->search_headroom, st->best ? st->best : st->plain,
                             st->best ? st->best_h : st->plain_h)) {
        apsolve_plan_free(pl);
        return 0;
    }
    apsolve_plan_free(&st->best);
    apsolve_problem_free(&st->bestq);
    st->best = *pl;
    *pl = NULL;
    st->best_n = n;
    st->best_h = o->search_headroom;
    st->besto = *o;
    return 1;
}

void apsolve_auto_step_install(ApsolveRun *r, ApsolveAutoStep *st, const ApsolveCand *base)
{
    ApsolveCand c = *base; /* the same sweep and batch, its composed entries */
    c.p = st->bestq;
    c.borrowed = 0;
    c.opt = st->besto;
    apsolve_plan_free(&r->s->autop);
    r->s->autop = st->best;
    apsolve_plan_batch(r->s->autop, &c);
    if (r->have_auto_c)
        apsolve_cand_free(&r->auto_c);
    r->auto_c = c;
    r->have_auto_c = 1;
    st->best = NULL;
    st->bestq = NULL;
}

void apsolve_auto_step_free(ApsolveAutoStep *st)
{
    apsolve_plan_free(&st->best);
    apsolve_problem_free(&st->bestq);
}

/* apsolve_solve_below under o's headroom (search_headroom h); *again
 * when its plan is at or below bar (with decide: at bar, a tie the
 * objective breaks; below, the whole search's is below too) or not
 * feasible: solved again whole. */
static int below(const ApsolveProblem *p, ApsolveOptions *o, int h, double bar, int decide,
                 ApsolvePlan **out, int *again)
{
    int e;
    o->search_headroom = h;
    e = apsolve_solve_below(p, o, bar, decide, out);
    *again = e == APSOLVE_OK &&
             (!(*out)->feasible || (decide ? (*out)->total_cost == bar
                                           : !((*out)->total_cost > bar)));
    return e;
}

int apsolve_solve_to_beat(const ApsolveProblem *p, ApsolveOptions *opt, const ApsolvePlan *bar,
                          int bar_h, int decide, ApsolvePlan **out, int *exact)
{
    int hmax = opt->headroom_bytes > 0 || opt->headroom_percent > 0, again = 0, e;
    *out = NULL;
    *exact = 1;
    /* a plan keeping the headroom beats one that does not, whatever its
     * objective */
    if (!bar || bar_h < hmax || !(bar->total_cost < INFINITY))
        return apsolve_solve_keep_headroom(p, opt, out);
    e = below(p, opt, hmax, bar->total_cost, decide, out, &again);
    if (!again && hmax && e == APSOLVE_EINFEASIBLE) {
        /* as apsolve_keep_headroom: without the headroom, where no plan
         * keeps it; such a plan does not beat bar, which keeps it */
        e = below(p, opt, 0, -INFINITY, 0, out, &again);
        again = e == APSOLVE_OK && !(*out)->feasible;
    }
    if (again) {
        apsolve_plan_free(out);
        return apsolve_solve_keep_headroom(p, opt, out);
    }
    *exact = e != APSOLVE_OK;
    return e;
}
