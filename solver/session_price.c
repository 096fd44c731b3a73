/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pricing step of a session (session_int.h): each output's full
 * estimate beyond Alpa's T on the sweep it was made on, and with --batch
 * its re-evaluation at that global batch, exactly from a sweep at the new
 * micro-batch when the database has one, else scaled.
 */
#include <stdio.h>
#include <stdlib.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "expert_parallel.h"
#include "hsdp.h"
#include "session.h"
#include "session_int.h"

void apsolve_extra_free(ApsolveExtra *x)
{
    free(x->stages);
    apsolve_plan_free(&x->rplan);
    apsolve_problem_free(&x->xp);
}

/* Specs that name a priced plan's stages exactly (shape, logical mesh,
 * option), to price them on another sweep. */
static ApsolveStageSpec *exact_specs(const ApsolvePlan *pl)
{
    ApsolveStageSpec *sp = calloc(pl->n_stages, sizeof *sp);
    for (size_t k = 0; sp && k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        sp[k] = (ApsolveStageSpec){st->start_layer, st->end_layer, st->hosts, st->gpus,
                                   st->logical_a, st->logical_b, st->force_batch_dim,
                                   st->variant};
    }
    return sp;
}

/* Prices pl's stages on sweep xs, the family's sweep at the new
 * micro-batch, into x->rplan. 0, or 1 after a message. */
static int reprice_exact(Costdb *db, const ApsolveRequest *a, const ApsolveOptions *opt,
                         int64_t xs, const ApsolvePlan *pl, ApsolveExtra *x)
{
    ApsolveOptions o = *opt;
    ApsolveStageSpec *sp = NULL;
    char err[256];
    int e;
    o.micro_batches = pl->micro_batches;
    o.inference = pl->inference;
    o.search_headroom = 0; /* the plan at --batch is judged by the raw capacity, as scaled */
    if (apsolve_problem_from_db(db, xs, &o, &x->xp) || !(sp = exact_specs(pl))) {
        free(sp);
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "sweep %lld: %s", (long long)xs,
                            costdb_errmsg(db));
    }
    e = apsolve_evaluate(x->xp, &o, sp, pl->n_stages, &x->rplan, err, sizeof err);
    free(sp);
    if (e)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "pricing the plan on sweep %lld: %s",
                            (long long)xs, e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
    /* the same layout sends the same shard of the new sweep's tensors */
    x->rplan->boundary_devices = pl->boundary_devices;
    return 0;
}

/* --batch: decides how pl is re-priced at the new micro-batch: exactly
 * from a sweep at that micro-batch when the database has one, else scaled
 * from c's; and whether it can run as it is (else *bad). 0, or 1 after a
 * message. */
static int rebatch_one(Costdb *db, const ApsolveRequest *a, const ApsolveCand *c,
                       const ApsolvePlan *pl, ApsolveExtra *x, int *bad)
{
    const CostdbSweep *sw = &c->sw;
    int64_t sweep = c->sweep;
    int64_t old_micro = sw->micro_batch_size;
    int64_t new_micro = a->batch / pl->micro_batches, xs = 0;

    if (old_micro <= 0)
        old_micro = 1;
    if (apsolve_find_batch_sweep(db, sweep, new_micro, &xs))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "looking for a sweep at micro-batch %lld: %s",
                            (long long)new_micro, costdb_errmsg(db));
    if (xs > 0 && xs != sweep) {
        if (reprice_exact(db, a, &c->opt, xs, pl, x))
            return 1;
    } else {
        if (apsolve_rebatch_plan(c->p, pl, old_micro, new_micro, &x->rplan))
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "cannot re-evaluate the plan");
        xs = xs == sweep ? sweep : 0;
    }
    apsolve_rebatch_summary(x->rplan, old_micro, new_micro, &x->reb);
    x->reb.exact_sweep = xs;
    x->reb.global_batch = a->batch;
    if (apsolve_full_estimate_ex(db, xs > 0 ? xs : sweep, x->rplan,
                                 xs > 0 ? 1.0 : x->reb.ratio, &x->rfull, NULL))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "full estimate at --batch: %s",
                            costdb_errmsg(db));
    if (!x->reb.valid || !x->reb.fits || x->reb.missing_stage)
        *bad = 1;
    return 0;
}

/* Output k: its full estimate on its candidate's sweep, which becomes the
 * plan's full cost when available; with --batch, its re-evaluation. */
static int price_one(ApsolveRun *r, size_t k)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    ApsolvePlan *pl = s->outs[k].plan == s->autop ? s->autop : s->given;
    const ApsolveCand *c = r->out_c[k];
    ApsolveExtra *x = &s->extra[k];
    x->stages = calloc(pl->n_stages ? pl->n_stages : 1, sizeof *x->stages);
    if (!x->stages)
        return 1;
    /* a cp plan's stages send 1/cp of the activations of the entries'
     * (the sequence is split; context_parallel.h) */
    int given_cp = pl == s->given && (a->parallel || a->plan > 0); /* --parallel, --plan */
    double scale = given_cp && a->par.cp > 1 ? 1.0 / a->par.cp
                   : pl->cp > 1                                  ? 1.0 / pl->cp
                                                                 : 1.0;
    /* Megatron-Core sends a stage's output as its (seq / tp, mbs, hidden)
     * shard under sequence parallelism (get_tensor_shapes, schedules.py at
     * core_v0.19.0), whatever layout the entry's ILP picked for the input:
     * the sweep's micro-batch (mbs x dp x cp) split dp x cp x tp ways
     * (and by cp again, the scale above) */
    if (given_cp && a->par.sp && a->par.tp > 1)
        pl->boundary_devices = (double)(a->par.dp > 0 ? a->par.dp : 1) *
                               (a->par.cp > 1 ? a->par.cp : 1) * a->par.tp;
    if (apsolve_full_estimate_ex(r->db, c->sweep, pl, scale, &x->full, x->stages))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "full estimate: %s", costdb_errmsg(r->db));
    s->outs[k].full = &x->full;
    /* which frameworks run it as priced (frameworks.h), stored with it */
    apsolve_plan_frameworks(r->db, c->sweep, c->sw.dtype, pl, &x->fw);
    if (given_cp) { /* the knobs of a --parallel or stored 3-D layout */
        apsolve_parallel_frameworks(&a->par, &x->fw);
    } else if (pl != s->given && pl->n_stages) {
        /* an auto plan priced with cp (session_autocp.c: its cp_comm) or ep
         * (session_autoep.c) on its stages' (dp x cp, tp) */
        const ApsolveStage *s0 = &pl->stages[0];
        int cp = pl->cp > 1 ? pl->cp : 1;
        apsolve_cp_frameworks(cp, pl->cp_comm, &x->fw);
        apsolve_ep_frameworks(s0->logical_a, s0->logical_b, pl->ep, pl->etp > 0 ? pl->etp
                              : s0->logical_b, s0->variant.zero, &x->fw);
    }
    pl->frameworks = x->fw.runs;
    pl->has_frameworks = 1;
    s->outs[k].frameworks = &x->fw;
    if (x->full.available) {
        s->outs[k].full_stages = x->stages;
        pl->full_cost = x->full.total;
        pl->has_full_cost = 1;
    }
    if (a->batch > 0) {
        if (rebatch_one(r->db, a, c, pl, x, &s->rebatch_bad))
            return 1;
        s->outs[k].rebatch = &x->reb;
        s->outs[k].rebatch_plan = x->rplan;
        s->outs[k].rebatch_full = &x->rfull;
    }
    return 0;
}

/* The pricing step: every output, given and auto, in order. */
int apsolve_run_price(ApsolveRun *r)
{
    for (size_t k = 0; k < r->s->nout; k++)
        if (price_one(r, k))
            return 1;
    return 0;
}
