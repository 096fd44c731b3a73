/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The given-plan step of one apsolve run (session.c's pipeline,
 * session_int.h): a plan the request gives (--parallel 3-D with its
 * micro-batch size and knobs, manual, uniform, --plan) decided, priced
 * and made the run's first output, with its warnings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "costdb_text.h"
#include "plural.h"
#include "recompute_layers.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"

/* Given plan, --parallel with mbs: decides the 3-D plan's candidate.
 * Megatron's micro-batch mbs x dp must be a size of the family that
 * divides the global batch; the plan runs on that sweep at G / (mbs x dp)
 * (par_c) unless that is the main candidate. */
static int parallel_candidate(ApsolveRun *r, ApsolveCand **pc)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    /* with cp, the sweep of the equivalent layout (dp cp, tp): session_cp.c */
    int cp = pr->cp > 1 ? pr->cp : 1;
    int64_t want = (int64_t)pr->mbs * pr->dp * cp;
    size_t k;
    *pc = &r->main_c;
    if (pr->mbs <= 0)
        return 0;
    if ((k = apsolve_family_index(r, want)) == r->nbs)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: mbs=%d x dp=%d%s is a "
                            "micro-batch of %lld %s, and the database has no sweep of "
                            "this model, hardware and cluster at that micro-batch size",
                            a->parallel, pr->mbs, pr->dp, cp > 1 ? " x cp" : "",
                            (long long)want, costdb_plural(want, "sample", "samples"));
    /* with cp, whole micro-batches of the cp plan's mbs x dp sequences,
     * each split over cp GPUs (apsolve_cp_micro_batches, session_cp.c,
     * counts them; here only whether G is whole ones); the twin
     * sweep's micro-batch of mbs x dp x cp need not divide G, and then
     * holds one (its per-micro-batch figures, whatever its batch) */
    if (r->G <= 0 || r->G % (want / cp))
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: the global batch %lld is "
                            "not a multiple of mbs x dp = %lld", a->parallel, (long long)r->G,
                            (long long)(want / cp));
    if (r->bs[k].sweep_id == r->main_c.sweep && r->G % want == 0 && (int)(r->G / want) == r->B)
        return 0;
    if (apsolve_cand_load(r->db, a, r->bs[k].sweep_id, r->G, want,
                          r->G % want ? 1 : (int)(r->G / want), &r->par_c))
        return 1;
    r->par_c.opt.objective = a->opt.objective;
    r->have_par_c = 1;
    *pc = &r->par_c;
    return 0;
}

/* Given plan, --parallel: decides the 3-D plan's stages (pp stages of
 * logical (dp, tp), batch forced, the given recompute and ZeRO) and
 * schedule (interleaved with vpp > 1), and prices it (*e: the evaluation's
 * error). Refuses a layout that does not fit the cluster or the schedule. */
/* A priced --parallel or stored plan carries its cp and ep knobs, as the
 * auto search's cp and ep plans do: its text and JSON say them
 * (output.c). */
static void carry_knobs(ApsolvePlan *g, const ApsolveParallel *pr)
{
    if (g && pr->cp > 1) {
        g->cp = pr->cp;
        g->cp_comm = pr->cp_comm;
    }
    if (g && pr->ep > 1) {
        g->ep = pr->ep;
        g->etp = pr->etp > 0 ? pr->etp : pr->tp;
        g->moe_a2a_overlap = pr->moe_a2a_overlap;
    }
}

static int parallel_plan(ApsolveRun *r, int *e, char *err, size_t errlen)
{
    const ApsolveRequest *a = r->a;
    const ApsolveParallel *pr = &a->par;
    ApsolveSession *s = r->s;
    const ApsolveProblem *pp;
    ApsolveCand *pc;
    int pv = pr->vpp > 1 ? pr->vpp : 0, rc;
    int edp = pr->dp * (pr->cp > 1 ? pr->cp : 1); /* dp x cp: the equivalent layout */
    if ((rc = parallel_candidate(r, &pc)) != 0)
        return rc;
    pp = pc->p;
    if (pr->pp > pp->num_layers || edp * pr->tp * pr->pp != pp->num_devices ||
        (edp * pr->tp > pp->cluster_gpus && (edp * pr->tp) % pp->cluster_gpus))
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "--parallel %s does not fit: dp x tp x pp%s "
                            "must be %d (the %dx%d cluster) and pp <= %d layers", a->parallel,
                            pr->cp > 1 ? " x cp" : "", pp->num_devices, pp->cluster_hosts,
                            pp->cluster_gpus, pp->num_layers);
    if (!(r->specs = calloc((size_t)pr->pp, sizeof *r->specs)))
        return 1;
    apsolve_3d_specs(pp->num_layers, pp->cluster_gpus, edp, pr->tp, pr->pp, r->specs);
    r->nspec = (size_t)pr->pp;
    if ((rc = apsolve_parallel_knobs(r, &pc)) != 0)
        return rc;
    if (apsolve_schedule_zero_bubble(a->schedule) && !a->opt.inference) {
        /* vpp= gives interleaved ZB its chunks; ZB-H1 runs one, ZBV two */
        int zv = a->schedule == APSOLVE_SCHEDULE_ZB_H1 ? 1 : pv > 1 ? pv : a->virtual_stages;
        if ((a->schedule == APSOLVE_SCHEDULE_ZB_H1 && pv > 1) ||
            !apsolve_schedule_valid(a->schedule, zv, pc->opt.micro_batches, pr->pp, err, errlen))
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s --schedule %s: %s",
                                a->parallel, apsolve_schedule_name(a->schedule),
                                a->schedule == APSOLVE_SCHEDULE_ZB_H1 && pv > 1
                                    ? "vpp= is the interleaved schedule; ZB-H1 runs one model "
                                      "chunk per device"
                                    : err);
    } else if (pv > 1 && !apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, pv,
                                                 pc->opt.micro_batches, pr->pp, err, errlen))
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--parallel %s: vpp=%d: %s", a->parallel, pv,
                            err);
    apsolve_parallel_apply(pr, &pc->opt, r->specs, r->nspec);
    /* Tensor parallelism splits every weight matrix over the tp ranks: each
     * stage is priced with the memory level of its mesh that does, where
     * the sweep has one (tp_layout.c), as the frameworks run it
     * (frameworks.h; a launch file's closest plan is priced the same way). */
    r->kind = "3d";
    snprintf(s->label, sizeof s->label, "3-D %s", a->parallel);
    /* --framework's winner: priced as the search priced it, at the levels
     * that keep the memory headroom where some do (apsolve_keep_headroom);
     * a layout given by hand is judged by the raw capacity */
    if (r->fw >= 0)
        *e = apsolve_evaluate_as_run_keep(r->db, pc->sweep, pc->p, &pc->opt, r->specs, r->nspec,
                                          &s->given, err, errlen);
    else
        *e = apsolve_evaluate_as_run(r->db, pc->sweep, pc->p, &pc->opt, r->specs, r->nspec,
                                     &s->given, err, errlen);
    if (*e == APSOLVE_ENOMEM)
        return 1;
    if (!*e)
        carry_knobs(s->given, pr);
    apsolve_knobs_say(r, s->given);
    r->out_c[s->nout] = pc;
    return 0;
}

int apsolve_parallel_knobs(ApsolveRun *r, ApsolveCand **pc)
{
    int rc;
    if ((rc = apsolve_run_cp(r, pc)) != 0 || (rc = apsolve_run_ep(r, pc)) != 0 ||
        (rc = apsolve_run_hsdp(r, pc)) != 0 || (rc = apsolve_run_recompute_layers(r, pc)) ||
        (rc = apsolve_run_offload(r, pc)) != 0)
        return rc;
    return 0;
}

/* Given plan, --parallel without mbs=: decides mbs as the auto search
 * decides its micro-batch size (docs/solver.md, "--parallel"): every size
 * of the family that dp x cp divides and that divides the global batch is
 * priced, silently, and the plan with the lowest objective wins, a
 * feasible one before an infeasible one. Sizes pinned by the request
 * (--micro-batch-size, --micro-batches, --sweep without --global-batch)
 * keep the main sweep's, as before. *tried: how many sizes were priced
 * (0: none, the main sweep's is used); mbs: their list. 0, or 1 on
 * running out of memory. */
static int parallel_mbs(ApsolveRun *r, int *tried, char *mbs, size_t len)
{
    ApsolveRequest *a = r->a;
    int cp = a->par.cp > 1 ? a->par.cp : 1;
    int64_t unit = (int64_t)a->par.dp * cp;
    ApsolvePlan *best = NULL;
    int best_mbs = 0;
    size_t at = 0;
    *tried = 0;
    mbs[0] = '\0';
    if (a->par.mbs > 0 || a->micro_batch_size > 0 || a->micro_batches > 0 ||
        (a->sweep > 0 && a->global_batch <= 0) || r->G <= 0 || r->nbs < 2 || unit <= 0)
        return 0;
    for (size_t k = 0; k < r->nbs; k++) {
        int64_t m = r->bs[k].micro_batch_size;
        ApsolveOptions main_opt = r->main_c.opt;
        ApsolveNotice notice = a->notice;
        ApsolveError *error = a->error;
        char err[512];
        int e = 0, rc, w;
        /* with cp, the plan's micro-batch is m / cp (its twin's m need not
         * divide G: parallel_candidate) */
        if (m <= 0 || m % unit || r->G % (m / cp) || r->G / m > COSTDB_MAX_MICRO_BATCHES)
            continue;
        a->par.mbs = (int)(m / unit);
        a->notice = NULL; /* a size that fails is one not chosen */
        a->error = NULL;
        rc = parallel_plan(r, &e, err, sizeof err);
        a->notice = notice;
        a->error = error;
        r->main_c.opt = main_opt; /* a vpp plan on the main sweep sets its schedule */
        if (!rc && !e && r->s->given) {
            ApsolvePlan *g = r->s->given;
            w = snprintf(mbs + at, at < len ? len - at : 0, "%s%d", *tried ? ", " : "",
                         a->par.mbs);
            at += w > 0 ? (size_t)w : 0;
            ++*tried;
            if (!best || (g->feasible && !best->feasible) ||
                (g->feasible == best->feasible && apsolve_plan_better(g, best))) {
                apsolve_plan_free(&best);
                best = g;
                r->s->given = NULL;
                best_mbs = a->par.mbs;
            }
        } else if (rc == 1 && e == APSOLVE_ENOMEM) {
            apsolve_parallel_undo(r);
            apsolve_plan_free(&best);
            return 1;
        }
        apsolve_parallel_undo(r);
    }
    apsolve_plan_free(&best);
    a->par.mbs = best_mbs;
    return 0;
}

/* Says which micro-batch size a --parallel plan without mbs= was priced
 * at, why, and how to price another. */
static void say_mbs(const ApsolveRun *r, int tried, const char *mbs)
{
    const ApsolveRequest *a = r->a;
    const ApsolvePlan *g = r->s->given;
    int cp = a->par.cp > 1 ? a->par.cp : 1;
    char why[256];
    if (tried > 1)
        snprintf(why, sizeof why, "the lowest objective of mbs=%s, the micro-batch sizes of "
                 "this database that dp%s = %d divides", mbs, cp > 1 ? " x cp" : "",
                 a->par.dp * cp);
    else if (tried == 1)
        snprintf(why, sizeof why, "the only micro-batch size of this database that dp%s = %d "
                 "divides", cp > 1 ? " x cp" : "", a->par.dp * cp);
    else if (a->micro_batch_size > 0 || a->micro_batches > 0 ||
             (a->sweep > 0 && a->global_batch <= 0))
        snprintf(why, sizeof why, "the size the options ask for");
    else
        snprintf(why, sizeof why, "the main sweep's: no micro-batch size of this database "
                 "is split dp%s = %d ways", cp > 1 ? " x cp" : "", a->par.dp * cp);
    apsolve_say(a, "3-D plan: micro-batch size %lld (%d %s, sweep %lld): %s; mbs=M in "
                "--parallel prices micro-batch size M x dp%s", (long long)g->micro_batch_size,
                g->micro_batches, costdb_plural(g->micro_batches, "micro-batch", "micro-batches"),
                (long long)r->out_c[r->s->nout]->sweep, why, cp > 1 ? " x cp" : "");
}

/* Given plan, manual or uniform: decides its stages from the request's
 * lists (a --plan's are already there) and prices it on the main
 * candidate (*e: the evaluation's error). Nothing to price with
 * --stage-option auto. */
static int listed_plan(ApsolveRun *r, int *e, char *err, size_t errlen)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    ApsolveCand *pc = &r->main_c;
    if (!r->specs && strcmp(a->stage_option, "auto")) {
        int rc = apsolve_request_specs(a, r->main_c.p, &r->specs, &r->nspec);
        if (rc)
            return rc;
        r->kind = a->stage_option;
        snprintf(s->label, sizeof s->label, "%s", r->kind);
    }
    /* a stored plan with cp, experts on ep x etp, HSDP, recompute_layers or offload
     * is priced as it was stored (the --parallel knobs' steps) */
    if (a->plan > 0 && r->specs) {
        int rc = apsolve_parallel_knobs(r, &pc);
        if (rc)
            return rc;
        /* and its MoE all-to-all overlap's micro-batch in flight */
        pc->opt.moe_a2a_overlap = a->par.moe_a2a_overlap;
    }
    *e = r->specs ? apsolve_evaluate(pc->p, &pc->opt, r->specs, r->nspec, &s->given, err, errlen)
                  : 0;
    if (!*e && a->plan > 0)
        carry_knobs(s->given, &a->par);
    apsolve_knobs_say(r, s->given);
    r->out_c[s->nout] = pc;
    return 0;
}

/* Given plan, --parallel warnings: a stage the sweep has no config for
 * (and why, with the sweep option that adds one), and weights the priced
 * sharding keeps whole over the tp axis. */
static void warn_parallel(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    const ApsolvePlan *g = r->s->given;
    const ApsolveCand *c = r->out_c[r->s->nout];
    ApsolveParallel eq = a->par; /* with cp, the layout its entries are (dp cp, tp) */
    if (!a->parallel)
        return;
    eq.dp *= a->par.cp > 1 ? a->par.cp : 1;
    for (size_t k = 0; k < g->n_stages && r->specs[0].variant.recompute >= 0; k++)
        if (g->stages[k].config < 0 && !a->quiet) {
            char why[400];
            int64_t micro = g->micro_batch_size > 0 ? g->micro_batch_size
                            : c->opt.micro_batches > 0 && r->G > 0 ? r->G / c->opt.micro_batches
                                                                   : 0;
            micro *= a->par.cp > 1 ? a->par.cp : 1;
            apsolve_missing_layout_reason(c->p, &c->sw, &g->stages[k], &eq, micro, r->G, r->bs,
                                          r->nbs, why, sizeof why);
            apsolve_say(a, "warning: 3-D stage %zu: no config with logical (%d, %d), recompute "
                        "%s, zero %d in the sweep: %s", k, eq.dp, a->par.tp,
                        costdb_recompute_name(a->par.recompute), a->par.zero, why);
        }
    if (!a->quiet)
        apsolve_tp_whole_warning(r->db, a, c->sweep, g);
}

/* Given plan: decides whether the request gives a plan (--parallel, manual,
 * uniform, --plan) and prices it; one the evaluation refuses ends the run
 * (exit 2 when its lists name what the sweep lacks), else it becomes the
 * first output, with its warnings. */
int apsolve_given_plan(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    char err[512], mbs[160];
    int e = 0, tried = 0, chose = a->parallel && a->par.mbs <= 0;
    int rc = chose ? parallel_mbs(r, &tried, mbs, sizeof mbs) : 0;
    if (!rc)
        rc = a->parallel ? parallel_plan(r, &e, err, sizeof err)
                         : listed_plan(r, &e, err, sizeof err);
    if (rc || !r->specs)
        return rc;
    if (e)
        return apsolve_fail(a, e == APSOLVE_EINVAL ? APSOLVE_ERROR_INPUT : APSOLVE_ERROR_FAILED,
                            "%s plan: %s", r->kind, e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
    warn_parallel(r);
    apsolve_plan_batch(s->given, r->out_c[s->nout]);
    if (chose && !a->quiet && r->nbs > 1)
        say_mbs(r, tried, mbs);
    s->outs[s->nout++] = (ApsolveOutput){.label = s->label, .kind = r->kind, .plan = s->given};
    apsolve_warn_batches(a, s->given, s->label);
    apsolve_warn_headroom(a, s->given, s->label);
    return 0;
}
