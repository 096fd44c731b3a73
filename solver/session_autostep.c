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
#include "apsolve.h"
#include "session.h"
#include "session_int.h"

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
