/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expert parallelism in the auto search (session_int.h, docs/solver.md
 * "Expert parallelism in the auto search"): on a candidate of the loop in
 * session_autocp.c (the sweep at one micro-batch size, plain or made cp
 * stages), for each ep dividing the experts and each etp, the candidate's
 * problem with every entry made the ep stage of its own layout
 * (apsolve_ep_problem_auto: Megatron-Core's MoE parallel folding, the
 * experts on etp x ep of the stage's dp x tp (x cp) GPUs, as
 * --parallel ...,ep=E,etp=T prices a stage), and the best plan of one
 * layout on it (apsolve_auto_layouts), offered to the best so far; and
 * the same with Megatron-Core's MoE all-to-all overlap
 * (overlap_moe_expert_parallel_comm, --parallel ...,moe_a2a_overlap=1:
 * the all-to-alls under the other micro-batch's compute, one more
 * micro-batch in flight) where Megatron-Core runs it: the interleaved
 * schedule, or 1F1B on one stage, and no full recomputation
 * (apsolve_ep_a2a_overlap_check's rules). A model whose sweep records no
 * routing (a dense model) tries nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "expert_parallel.h"
#include "problem_subset.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"

/* One ep candidate: candidate c's problem made ep stages of layout l
 * (with or without the all-to-all overlap), its best plan of one layout
 * offered to b. 0; -1 no candidates on this sweep (placements or
 * hardware that cannot price the all-to-all); else an exit status after a
 * message. */
static int try_layout(ApsolveRun *r, const ApsolveCand *c, int cp, ApsolveEpCache *cache,
                      const ApsolveEpLayout *l, const ApsolvePlan *bar, int bar_h,
                      const ApsolvePlan *twin, int twin_h, ApsolveAutoBest *b)
{
    const ApsolveRequest *a = r->a;
    const ApsolveProblem *p = c->p;
    ApsolveCand e = *c;
    ApsolvePlan *pl = NULL;
    ApsolveAutoTried t;
    ApsolveSubset v;
    size_t transformed = 0;
    double bound = INFINITY;
    char why[400] = "";
    int h = 0, rc;
    e.p = NULL;
    /* the overlap's extra micro-batch in flight (apsolve_in_flight) */
    e.opt.moe_a2a_overlap = l->a2a_overlap;
    /* the subset of the pairs that can hold ep stages, its map in v */
    rc = apsolve_ep_problem_auto(r->db, c->sweep, p, cache, l, &e.p, &v, &transformed, why,
                                 sizeof why);
    if (rc == APSOLVE_ENOMEM)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    if (rc)
        return -1;
    /* a twin out of memory (restored in c's problem) only as an ep stage:
     * untouched, it stays +inf (session_twin.c) */
    apsolve_unfit_settle(e.p);
    /* nothing transformed: its plans are the plain search's (the entries
     * as profiled), or there are none */
    if (!transformed) {
        apsolve_cand_free(&e);
        apsolve_subset_free(&v);
        return 0;
    }
    if (apsolve_auto_layouts(r, &e, cp, "ep", b->best ? b->best : bar, b->best ? b->best_h : bar_h,
                             &pl, &h, &bound)) {
        apsolve_cand_free(&e);
        apsolve_subset_free(&v);
        return 1;
    }
    /* ep must beat the same candidate without it: a tie (entries as
     * profiled) keeps the plan without ep */
    if (pl && twin && !apsolve_auto_better(pl, h, twin, twin_h)) {
        bound = pl->total_cost;
        apsolve_plan_free(&pl);
        h = -2;
    }
    if (pl) {
        pl->cp = cp > 1 ? cp : 0;
        pl->ep = l->ep;
        pl->etp = l->etp;
        pl->moe_a2a_overlap = l->a2a_overlap;
    }
    t = (ApsolveAutoTried){cp, l->ep, l->etp, c->micro * cp, c->sweep, c->opt.micro_batches, h,
                           pl ? 1 : h < 0 ? h : 0, pl ? pl->total_cost : bound, 0,
                           l->a2a_overlap};
    /* the plan that becomes the best so far keeps its candidate, which the
     * plans and reports after the search read whole: the same transform on
     * all of p's pairs (the cache holds the facts) */
    if (pl && apsolve_auto_better(pl, h, b->best, b->best_h)) {
        ApsolveProblem *whole = NULL;
        rc = apsolve_ep_problem_auto(r->db, c->sweep, p, cache, l, &whole, NULL, &transformed,
                                     why, sizeof why);
        if (rc) {
            apsolve_plan_free(&pl);
            apsolve_cand_free(&e);
            apsolve_subset_free(&v);
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "%s",
                                rc == APSOLVE_ENOMEM ? "out of memory" : why);
        }
        apsolve_unfit_settle(whole);
        apsolve_subset_plan(&v, pl);
        apsolve_cand_free(&e);
        e.p = whole;
    }
    apsolve_subset_free(&v);
    apsolve_auto_offer(b, &t, pl, h, &e);
    return 0;
}

int apsolve_auto_ep(ApsolveRun *r, const ApsolveCand *c, int cp, ApsolveEpCache *cache,
                    const ApsolvePlan *bar, int bar_h, const ApsolvePlan *twin, int twin_h,
                    ApsolveAutoBest *b)
{
    const ApsolveRequest *a = r->a;
    const ApsolveProblem *p = c->p;
    ApsolveEpLayout l;
    int most = 1, gph = p->cluster_gpus, overlap;
    memset(&l, 0, sizeof l);
    apsolve_ep_routing(r->db, c->sw.model_id, &l.top_k, &l.capacity);
    if (!l.top_k)
        return 0;
    l.cp = cp;
    /* the largest stage mesh: ep x etp divides its logical a x b */
    for (int s = 0; s < p->num_submeshes; s++)
        if (p->submeshes[s].hosts * p->submeshes[s].gpus > most)
            most = p->submeshes[s].hosts * p->submeshes[s].gpus;
    /* Megatron-Core runs the MoE all-to-all overlap on its interleaved
     * schedule, or on 1F1B without pipelining (the one-stage rule is the
     * DP's: apsolve_entry_mnss); the in-flight rule is NaN elsewhere
     * (apsolve_schedule_in_flight_a2a, as apsolve_run_ep refuses it) */
    overlap = !isnan(apsolve_schedule_in_flight_a2a((ApsolveSchedule)a->schedule,
                                                    a->virtual_stages, c->opt.micro_batches, 1,
                                                    0, 1));
    /* ep over any of the stage's GPUs; etp within a host (Megatron's
     * expert rank order puts etp fastest, and the auto search's tp never
     * crosses a host either); each with the all-to-all overlap too, where
     * it runs, the better plan kept by the search's own comparison */
    for (int ep = 2; ep <= most; ep *= 2)
        for (int etp = 1; etp <= gph && ep * etp <= most; etp *= 2)
            for (int ov = 0; ov <= overlap; ov++) {
                int rc;
                l.ep = ep;
                l.etp = etp;
                l.a2a_overlap = ov;
                rc = try_layout(r, c, cp, cache, &l, bar, bar_h, twin, twin_h, b);
                /* -1: no ep candidates on this sweep */
                if (rc)
                    return rc < 0 ? 0 : rc;
            }
    return 0;
}
