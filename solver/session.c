/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One apsolve run behind a library call (session.h): the sweep and batch
 * the request names, the plans it asks for (a stored plan, a manual,
 * uniform or 3-D plan, the auto search over every micro-batch size with a
 * sweep), their full estimates and --batch re-evaluation, and storing
 * them. Prints nothing: every message goes to the request's callback.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "config.h"
#include "costdb.h"
#include "costdb_text.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"

/* One message to the request's callback (printf-style, no prefix). */
void apsolve_say(const ApsolveRequest *a, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!a->notice)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    a->notice(a->notice_ctx, msg);
}

/* A usage error: fmt with arg, then the pointer to --help. */
int apsolve_usage_error(const ApsolveRequest *a, const char *fmt, const char *arg)
{
    char msg[768];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    apsolve_say(a, "%s\nTry 'apsolve --help'", msg);
    return APSOLVE_EXIT_USAGE;
}

/* Pipeline-bubble warnings for a plan with few micro-batches per stage. */
static void warn_batches(const ApsolveRequest *a, const ApsolvePlan *pl, const char *label)
{
    int n = (int)pl->n_stages, b = pl->micro_batches;
    if (a->quiet || pl->inference || n <= 1)
        return;
    if (b < n)
        apsolve_say(a, "warning: %s plan: %d micro-batches < %d stages: the pipeline "
                "is mostly bubble", label, b, n);
    else if (b < 2 * n)
        apsolve_say(a, "warning: %s plan: %d micro-batches < 2 x %d stages (rule of "
                "thumb: micro-batches >= 2 x stages)", label, b, n);
}

/* What one written plan carries beyond Alpa's T. */
typedef struct Extra {
    ApsolveFullEstimate full, rfull;
    ApsolveStageEstimate *stages;     /* per-stage parts of full */
    ApsolveRebatch reb;
    ApsolvePlan *rplan;               /* the plan at --batch */
    ApsolveProblem *xp;               /* the exact sweep's problem, if used */
} Extra;

static void extra_free(Extra *x)
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
                                   st->memory_level, st->recompute, st->zero};
    }
    return sp;
}

/* --batch: re-prices pl at the new micro-batch, exactly from a sweep at
 * that micro-batch when the database has one, else scaled. Sets *bad when
 * the plan cannot run as it is. Returns 0 or an exit code. */
static int rebatch_one(Costdb *db, const ApsolveRequest *a, const ApsolveOptions *opt,
                       const ApsolveProblem *p, int64_t sweep, const CostdbSweep *sw,
                       const ApsolvePlan *pl, Extra *x, int *bad)
{
    int64_t old_micro = sw->global_batch / (sw->micro_batches > 0 ? sw->micro_batches : 1);
    int64_t new_micro = a->batch / pl->micro_batches, xs = 0;
    ApsolveStageSpec *sp = NULL;
    char err[256];
    int e;

    if (old_micro <= 0)
        old_micro = 1;
    if (apsolve_find_batch_sweep(db, sweep, new_micro, &xs)) {
        apsolve_say(a, "looking for a sweep at micro-batch %lld: %s",
                (long long)new_micro, costdb_errmsg(db));
        return 1;
    }
    if (xs > 0 && xs != sweep) {
        ApsolveOptions o = *opt;
        o.micro_batches = pl->micro_batches;
        o.inference = pl->inference;
        if (apsolve_problem_from_db(db, xs, &o, &x->xp) || !(sp = exact_specs(pl))) {
            apsolve_say(a, "sweep %lld: %s", (long long)xs, costdb_errmsg(db));
            free(sp);
            return 1;
        }
        e = apsolve_evaluate(x->xp, &o, sp, pl->n_stages, &x->rplan, err, sizeof err);
        free(sp);
        if (e) {
            apsolve_say(a, "pricing the plan on sweep %lld: %s", (long long)xs,
                    e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
            return 1;
        }
        apsolve_rebatch_summary(x->rplan, old_micro, new_micro, &x->reb);
    } else {
        if (apsolve_rebatch_plan(p, pl, old_micro, new_micro, &x->rplan)) {
            apsolve_say(a, "cannot re-evaluate the plan");
            return 1;
        }
        apsolve_rebatch_summary(x->rplan, old_micro, new_micro, &x->reb);
        xs = xs == sweep ? sweep : 0;
    }
    x->reb.exact_sweep = xs;
    x->reb.global_batch = a->batch;
    if (apsolve_full_estimate_ex(db, xs > 0 ? xs : sweep, x->rplan,
                                 xs > 0 ? 1.0 : x->reb.ratio, &x->rfull, NULL)) {
        apsolve_say(a, "full estimate at --batch: %s", costdb_errmsg(db));
        return 1;
    }
    if (!x->reb.valid || !x->reb.fits || x->reb.missing_stage)
        *bad = 1;
    return 0;
}

/* One sweep at one micro-batch size with its loaded problem. */
typedef struct Cand {
    int64_t sweep;
    CostdbSweep sw;
    ApsolveProblem *p;
    ApsolveOptions opt;
    int64_t global_batch, micro;
} Cand;

static void cand_free(Cand *c)
{
    apsolve_problem_free(&c->p);
}

/* Loads sweep id as a candidate with B = global_batch / micro. */
static int cand_load(Costdb *db, const ApsolveRequest *a, int64_t id, int64_t global_batch,
                     int64_t micro, int B, Cand *c)
{
    char why[256];
    int e;
    memset(c, 0, sizeof *c);
    c->sweep = id;
    if (costdb_sweep_get(db, id, &c->sw)) {
        apsolve_say(a, "sweep %lld: %s", (long long)id, costdb_errmsg(db));
        return 1;
    }
    c->opt = a->opt;
    c->opt.micro_batches = B;
    c->global_batch = global_batch;
    c->micro = micro;
    e = apsolve_problem_from_db_msg(db, id, &c->opt, &c->p, why, sizeof why);
    if (e) {
        apsolve_say(a, "sweep %lld: %s", (long long)id,
                e == APSOLVE_EDB ? costdb_errmsg(db) : why[0] ? why : apsolve_strerror(e));
        return 1;
    }
    return 0;
}

static void plan_batch(ApsolvePlan *pl, const Cand *c)
{
    pl->global_batch = c->global_batch;
    pl->micro_batch_size = c->micro;
}

static int better(const ApsolvePlan *x, const ApsolvePlan *y)
{
    return !y || x->total_cost < y->total_cost ||
           (x->total_cost == y->total_cost && x->cost < y->cost);
}

/* The full estimate of pl (transfers, gradient sync, optimizer), or its
 * objective where the sweep has no placements to estimate from. */
static double plan_price(Costdb *db, int64_t sweep, const ApsolvePlan *pl)
{
    ApsolveFullEstimate f;
    if (apsolve_full_estimate_ex(db, sweep, pl, 1.0, &f, NULL) == 0 && f.available &&
        isfinite(f.total))
        return f.total;
    return pl->total_cost;
}

/* The auto search's schedule choice when --schedule is not given (docs/
 * solver.md, "Schedules"): beside the 1F1B plan *pl of candidate c, the
 * best interleaved plan with 2 model chunks per device (Megatron-LM's
 * virtual pipeline; the DP keeps only stage counts that divide B and
 * stages of whole chunks); the
 * interleaved plan replaces *pl, and c's options follow, when its full
 * estimate (which pays v times the stage-boundary transfers) is lower.
 * 0, or an apsolve error other than infeasibility. */
static int try_interleaved(Costdb *db, Cand *c, ApsolvePlan **pl)
{
    ApsolveOptions io = c->opt;
    ApsolvePlan *il = NULL;
    int e;
    if (c->opt.inference || c->opt.micro_batches < 2 || c->p->num_devices < 2)
        return 0;
    io.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
    io.virtual_stages = 2;
    io.whole_chunks = 1;
    e = apsolve_solve(c->p, &io, &il);
    if (e == APSOLVE_EINFEASIBLE)
        return 0;
    if (e)
        return e;
    if (il->feasible && plan_price(db, c->sweep, il) < plan_price(db, c->sweep, *pl)) {
        apsolve_plan_free(pl);
        *pl = il;
        c->opt = io;
    } else {
        apsolve_plan_free(&il);
    }
    return 0;
}

struct ApsolveSession {
    ApsolvePlan *autop, *given;       /* the auto plan, the given (stored, manual, 3-D) one */
    ApsolveOutput outs[2];
    size_t nout;
    Extra extra[2];                   /* what outs[k] carries beyond Alpa's T */
    char label[96], stored_kind[16];
    int rebatch_bad;                  /* --batch: a plan is not usable as it is */
    int given_whole;                  /* the given plan uses exactly all devices */
    int64_t batch;
};

void apsolve_session_free(ApsolveSession **sp)
{
    ApsolveSession *s = sp ? *sp : NULL;
    if (!s)
        return;
    extra_free(&s->extra[0]);
    extra_free(&s->extra[1]);
    apsolve_plan_free(&s->autop);
    apsolve_plan_free(&s->given);
    free(s);
    *sp = NULL;
}

int apsolve_session_run(ApsolveRequest *a, ApsolveSession **out)
{
    Costdb *db = NULL;
    Cand main_c, auto_c, par_c;
    ApsolveStageSpec *specs = NULL;
    ApsolveBatchSweep *bs = NULL;
    const Cand *out_c[2];
    CostdbSweep sw;
    int *plan_configs = NULL;
    int have_auto_c = 0, have_par_c = 0, auto_err = 0;
    size_t nspec = 0, nbs = 0;
    char err[512];
    const char *kind = NULL;
    int64_t sweep = a->sweep, id_auto = 0, id_given = 0, G, micro;
    int rc = 1, e, B;
    ApsolveSession *s = calloc(1, sizeof *s);

    *out = NULL;
    memset(&main_c, 0, sizeof main_c);
    memset(&auto_c, 0, sizeof auto_c);
    memset(&par_c, 0, sizeof par_c);
    if (!s) {
        apsolve_say(a, "out of memory");
        return 1;
    }
    if (costdb_open(a->db, a->no_store ? COSTDB_OPEN_READONLY : COSTDB_OPEN_NOCREATE, &db,
                    err, sizeof err)) {
        apsolve_say(a, "%s", err);
        free(s);
        return 1;
    }
    if (a->plan > 0) {
        rc = apsolve_request_load_plan(db, a, &sweep, &specs, &plan_configs, &nspec, s->stored_kind,
                       sizeof s->stored_kind);
        if (rc)
            goto cleanup;
        rc = 1;
        kind = s->stored_kind;
        snprintf(s->label, sizeof s->label, "plan %lld (%s)", (long long)a->plan, s->stored_kind);
    }
    /* every plan, searched or s->given, runs the same schedule (a --plan's
     * stored one unless --schedule says otherwise) */
    a->opt.schedule = a->schedule;
    a->opt.virtual_stages = a->virtual_stages;
    if (sweep <= 0 && costdb_sweep_latest(db, &sweep)) {
        apsolve_say(a, "%s: no sweep in the database", a->db);
        goto cleanup;
    }
    if (costdb_sweep_get(db, sweep, &sw)) {
        apsolve_say(a, "sweep %lld: %s", (long long)sweep, costdb_errmsg(db));
        goto cleanup;
    }
    if (apsolve_batch_sweeps(db, sweep, &bs, &nbs)) {
        apsolve_say(a, "sweeps at other micro-batch sizes: %s", costdb_errmsg(db));
        goto cleanup;
    }
    /* The micro-batch size and global batch of the main sweep (given plans;
     * the auto search may try other sizes below). */
    micro = sw.micro_batches > 0 && sw.global_batch > 0 ? sw.global_batch / sw.micro_batches : 0;
    G = a->global_batch > 0 ? a->global_batch : sw.global_batch;
    if (G > 0 && micro > 0 && G % micro && a->global_batch > 0 && a->sweep <= 0 && a->plan <= 0 &&
        a->micro_batch_size <= 0 && a->micro_batches <= 0) {
        /* the newest sweep's size does not divide the asked batch: the main
         * sweep is the newest of the family whose size does (the choice
         * does not depend on which sweep was made last) */
        int64_t best = 0, best_micro = 0;
        for (size_t k = 0; k < nbs; k++)
            if (bs[k].micro_batch_size > 0 && G % bs[k].micro_batch_size == 0 &&
                bs[k].sweep_id > best) {
                best = bs[k].sweep_id;
                best_micro = bs[k].micro_batch_size;
            }
        if (best > 0) {
            sweep = best;
            micro = best_micro;
            if (costdb_sweep_get(db, sweep, &sw)) {
                apsolve_say(a, "sweep %lld: %s", (long long)sweep, costdb_errmsg(db));
                goto cleanup;
            }
        }
    }
    if (a->micro_batch_size > 0 || (a->micro_batches > 0 && a->global_batch > 0)) {
        int64_t want = a->micro_batch_size;
        size_t k;
        if (a->micro_batches > 0 && a->global_batch > 0) {
            if (a->global_batch % a->micro_batches) {
                apsolve_say(a, "--global-batch %lld is not divisible by "
                        "--micro-batches %d\nTry 'apsolve --help'", (long long)a->global_batch,
                        a->micro_batches);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            if (want > 0 && want != a->global_batch / a->micro_batches) {
                apsolve_say(a, "--global-batch %lld / --micro-batches %d is a "
                        "micro-batch of %lld, not --micro-batch-size %lld\nTry 'apsolve "
                        "--help'", (long long)a->global_batch, a->micro_batches,
                        (long long)(a->global_batch / a->micro_batches), (long long)want);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            want = a->global_batch / a->micro_batches;
        }
        for (k = 0; k < nbs && bs[k].micro_batch_size != want; k++)
            ;
        if (k == nbs) {
            apsolve_say(a, "no sweep of this model, hardware and cluster at "
                    "micro-batch size %lld (profile one with approf sweep "
                    "--micro-batch-sizes)", (long long)want);
            rc = APSOLVE_EXIT_USAGE;
            goto cleanup;
        }
        sweep = bs[k].sweep_id;
        micro = want;
        if (costdb_sweep_get(db, sweep, &sw)) {
            apsolve_say(a, "sweep %lld: %s", (long long)sweep, costdb_errmsg(db));
            goto cleanup;
        }
    }
    if (a->micro_batches > 0) {
        B = a->micro_batches;
        if (micro > 0 && a->global_batch <= 0) {
            G = (int64_t)B * micro;
            if (G != sw.global_batch && !a->quiet)
                apsolve_say(a, "notice: --micro-batches %d at micro-batch size %lld: "
                        "the global batch becomes %lld (the sweep's is %lld)", B,
                        (long long)micro, (long long)G, (long long)sw.global_batch);
        }
    } else {
        B = sw.micro_batches > 0 ? sw.micro_batches : 1;
        if (micro > 0 && G > 0) {
            if (G % micro) {
                apsolve_say(a, "global batch %lld is not divisible by the micro-batch "
                        "size %lld of sweep %lld\nTry 'apsolve --help'", (long long)G,
                        (long long)micro, (long long)sweep);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            if (G / micro > COSTDB_MAX_MICRO_BATCHES) {
                apsolve_say(a, "global batch %lld / micro-batch size %lld of sweep %lld = %lld "
                        "micro-batches, more than %d (COSTDB_MAX_MICRO_BATCHES)\nTry 'apsolve "
                        "--help'", (long long)G, (long long)micro, (long long)sweep,
                        (long long)(G / micro), COSTDB_MAX_MICRO_BATCHES);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            B = (int)(G / micro);
        }
    }
    if (micro <= 0)
        G = 0; /* an imported table without a batch: unknown */
    if (a->batch > 0 && a->batch % B) {
        apsolve_say(a, "--batch %lld is not divisible by %d micro-batches\n"
                "Try 'apsolve --help'", (long long)a->batch, B);
        rc = APSOLVE_EXIT_USAGE;
        goto cleanup;
    }
    if (cand_load(db, a, sweep, G, micro, B, &main_c))
        goto cleanup;
    /* The objective: full when every entry has its apply cost. */
    if (a->objective < 0) {
        if (!main_c.opt.inference && !apsolve_problem_apply_known(main_c.p)) {
            a->opt.objective = APSOLVE_OBJECTIVE_ALPA;
            if (!a->quiet)
                apsolve_say(a, "notice: sweep %lld has entries without apply_cost "
                        "(a database before schema 2 or an import): objective alpa; the full "
                        "estimate prices gradient sync from the hardware row's link "
                        "bandwidths, without measured curves or the spec's multi-rail fabric",
                        (long long)sweep);
        } else {
            a->opt.objective = APSOLVE_OBJECTIVE_FULL;
        }
    } else {
        a->opt.objective = a->objective;
        if (a->objective == APSOLVE_OBJECTIVE_FULL && !a->opt.inference &&
            !apsolve_problem_apply_known(main_c.p)) {
            apsolve_say(a, "--objective full: sweep %lld has entries without "
                    "apply_cost (a database before schema 2 or an import); use --objective "
                    "alpa\nTry 'apsolve --help'", (long long)sweep);
            rc = APSOLVE_EXIT_USAGE;
            goto cleanup;
        }
    }
    main_c.opt.objective = a->opt.objective;
    if (plan_configs)
        apsolve_specs_variants(main_c.p, specs, plan_configs, nspec);
    if (a->parallel) {
        const ApsolveParallel *pr = &a->par;
        const ApsolveProblem *pp;
        Cand *pc = &main_c;
        int pv = pr->vpp > 1 ? pr->vpp : 0;
        if (pr->mbs > 0) {
            int64_t want = (int64_t)pr->mbs * pr->dp;
            size_t k;
            for (k = 0; k < nbs && bs[k].micro_batch_size != want; k++)
                ;
            if (k == nbs) {
                apsolve_say(a, "--parallel %s: mbs=%d x dp=%d is a micro-batch of %lld "
                        "samples, and the database has no sweep of this model, hardware and "
                        "cluster at that micro-batch size\nTry 'apsolve --help'", a->parallel,
                        pr->mbs, pr->dp, (long long)want);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            if (G <= 0 || G % want) {
                apsolve_say(a, "--parallel %s: the global batch %lld is not a multiple "
                        "of mbs x dp = %lld\nTry 'apsolve --help'", a->parallel, (long long)G,
                        (long long)want);
                rc = APSOLVE_EXIT_USAGE;
                goto cleanup;
            }
            if (bs[k].sweep_id != main_c.sweep || (int)(G / want) != B) {
                if (cand_load(db, a, bs[k].sweep_id, G, want, (int)(G / want), &par_c))
                    goto cleanup;
                par_c.opt.objective = a->opt.objective;
                have_par_c = 1;
                pc = &par_c;
            }
        }
        pp = pc->p;
        if (pr->pp > pp->num_layers || pr->dp * pr->tp * pr->pp != pp->num_devices ||
            (pr->dp * pr->tp > pp->cluster_gpus && (pr->dp * pr->tp) % pp->cluster_gpus)) {
            apsolve_say(a, "--parallel %s does not fit: dp x tp x pp must be %d "
                    "(the %dx%d cluster) and pp <= %d layers", a->parallel, pp->num_devices,
                    pp->cluster_hosts, pp->cluster_gpus, pp->num_layers);
            rc = APSOLVE_EXIT_USAGE;
            goto cleanup;
        }
        if (pv > 1 && !apsolve_schedule_valid(APSOLVE_SCHEDULE_INTERLEAVED, pv,
                                              pc->opt.micro_batches, pr->pp, err, sizeof err)) {
            apsolve_say(a, "--parallel %s: vpp=%d: %s\nTry 'apsolve --help'",
                    a->parallel, pv, err);
            rc = APSOLVE_EXIT_USAGE;
            goto cleanup;
        }
        if (pv > 1) {
            pc->opt.schedule = APSOLVE_SCHEDULE_INTERLEAVED;
            pc->opt.virtual_stages = pv;
        }
        specs = calloc((size_t)pr->pp, sizeof *specs);
        if (!specs)
            goto cleanup;
        apsolve_3d_specs(pp->num_layers, pp->cluster_gpus, pr->dp, pr->tp, pr->pp, specs);
        for (int k = 0; k < pr->pp; k++) {
            specs[k].recompute = pr->recompute;
            specs[k].zero = pr->zero;
        }
        nspec = (size_t)pr->pp;
        kind = "3d";
        snprintf(s->label, sizeof s->label, "3-D %s", a->parallel);
        e = apsolve_evaluate(pc->p, &pc->opt, specs, nspec, &s->given, err, sizeof err);
        out_c[s->nout] = pc;
    } else {
        if (!specs && strcmp(a->stage_option, "auto")) {
            rc = apsolve_request_specs(a, main_c.p, &specs, &nspec);
            if (rc)
                goto cleanup;
            rc = 1;
            kind = a->stage_option;
            snprintf(s->label, sizeof s->label, "%s", kind);
        }
        e = specs ? apsolve_evaluate(main_c.p, &main_c.opt, specs, nspec, &s->given, err,
                                     sizeof err)
                  : 0;
        out_c[s->nout] = &main_c;
    }
    if (specs) {
        if (e) {
            apsolve_say(a, "%s plan: %s", kind,
                    e == APSOLVE_EINVAL ? err : apsolve_strerror(e));
            rc = e == APSOLVE_EINVAL ? APSOLVE_EXIT_USAGE : 1;
            goto cleanup;
        }
        if (s->given->n_stages && specs[0].recompute >= 0 && a->parallel)
            for (size_t k = 0; k < s->given->n_stages; k++)
                if (s->given->stages[k].config < 0 && !a->quiet) {
                    char why[400];
                    apsolve_missing_layout_reason(out_c[s->nout]->p, &out_c[s->nout]->sw,
                                          &s->given->stages[k], &a->par,
                                          s->given->micro_batch_size > 0
                                              ? s->given->micro_batch_size
                                              : out_c[s->nout]->opt.micro_batches > 0 && G > 0
                                                    ? G / out_c[s->nout]->opt.micro_batches : 0,
                                          G, why, sizeof why);
                    apsolve_say(a, "warning: 3-D stage %zu: no config with logical "
                            "(%d, %d), recompute %s, zero %d in the sweep: %s", k, a->par.dp,
                            a->par.tp, costdb_recompute_name(a->par.recompute), a->par.zero,
                            why);
                }
        if (a->parallel && !a->quiet)
            apsolve_tp_whole_warning(db, a, out_c[s->nout]->sweep, s->given);
        plan_batch(s->given, out_c[s->nout]);
        s->outs[s->nout++] = (ApsolveOutput){.label = s->label, .kind = kind, .plan = s->given};
        warn_batches(a, s->given, s->label);
    }
    if (!specs || a->parallel) {
        /* The auto search: every micro-batch size with a sweep whose size
         * divides the global batch (or the one asked for), best objective. */
        size_t tried = 0;
        /* --micro-batch-size and --micro-batches pin the size, and so does
         * --sweep unless --global-batch asks for the search. */
        int64_t asked = a->micro_batch_size > 0 || a->micro_batches > 0 ||
                                (a->sweep > 0 && a->global_batch <= 0)
                            ? micro : 0;
        for (size_t k = 0; k < nbs || (nbs == 0 && k == 0); k++) {
            Cand c;
            ApsolvePlan *pl = NULL;
            double obj;
            int64_t m = nbs ? bs[k].micro_batch_size : micro;
            int own = nbs == 0 || bs[k].sweep_id == main_c.sweep;
            if (asked > 0 && m != asked)
                continue;
            if (!own && (G <= 0 || m <= 0 || G % m || a->micro_batches > 0 ||
                         G / m > COSTDB_MAX_MICRO_BATCHES))
                continue;
            if (own) {
                c = main_c;
            } else {
                if (cand_load(db, a, bs[k].sweep_id, G, m, (int)(G / m), &c))
                    goto cleanup;
                c.opt.objective = a->opt.objective;
            }
            c.opt.schedule = a->schedule;
            c.opt.virtual_stages = a->virtual_stages;
            tried++;
            e = apsolve_solve(c.p, &c.opt, &pl);
            if (e == 0 && !a->schedule_set)
                e = try_interleaved(db, &c, &pl);
            if (e && e != APSOLVE_EINFEASIBLE) {
                apsolve_say(a, "solving sweep %lld (micro-batch size %lld): %s",
                        (long long)c.sweep, (long long)m, apsolve_strerror(e));
                if (!own)
                    cand_free(&c);
                goto cleanup;
            }
            obj = e ? NAN : pl->total_cost;
            if (!a->quiet && nbs > 1 && !asked && e)
                apsolve_say(a, "micro-batch size %lld (sweep %lld, %d micro-batches): "
                        "infeasible", (long long)m, (long long)c.sweep, c.opt.micro_batches);
            else if (!a->quiet && nbs > 1 && !asked)
                apsolve_say(a, "micro-batch size %lld (sweep %lld, %d micro-batches): "
                        "objective %.6g s%s", (long long)m, (long long)c.sweep,
                        c.opt.micro_batches, obj,
                        pl->schedule == APSOLVE_SCHEDULE_INTERLEAVED ? " (interleaved)" : "");
            if (!e && better(pl, s->autop)) {
                apsolve_plan_free(&s->autop);
                s->autop = pl;
                plan_batch(s->autop, &c);
                if (have_auto_c)
                    cand_free(&auto_c);
                have_auto_c = !own;
                auto_c = c;
            } else {
                apsolve_plan_free(&pl);
                if (!own)
                    cand_free(&c);
            }
        }
        if (!s->autop) {
            ApsolveOptions o = main_c.opt;
            o.schedule = a->schedule;
            o.virtual_stages = a->virtual_stages;
            auto_err = 1;
            if (!tried)
                snprintf(err, sizeof err, "no sweep's micro-batch size divides the global batch "
                         "%lld", (long long)G);
            else
                apsolve_explain(main_c.p, &o, err, sizeof err);
            apsolve_say(a, "no feasible plan: %s", err);
            if (!s->given) {
                rc = APSOLVE_EXIT_INFEASIBLE;
                goto cleanup;
            }
        } else {
            out_c[s->nout] = have_auto_c ? &auto_c : &main_c;
            if (!have_auto_c) {
                /* the main candidate with the schedule its plan chose */
                auto_c = main_c;
                auto_c.opt.schedule = s->autop->schedule;
                auto_c.opt.virtual_stages = s->autop->virtual_stages;
                out_c[s->nout] = &auto_c;
            }
            s->outs[s->nout++] = (ApsolveOutput){.label = "auto", .kind = "auto", .plan = s->autop};
            warn_batches(a, s->autop, "auto");
            if (!a->quiet)
                apsolve_say(a, "solved in %.3f ms (%ld threshold DPs over %ld distinct "
                        "stage costs)", s->autop->solve_seconds * 1e3, s->autop->dp_evaluations,
                        s->autop->candidates);
        }
    }
    (void)auto_err;
    for (size_t k = 0; k < s->nout; k++) {
        ApsolvePlan *pl = s->outs[k].plan == s->autop ? s->autop : s->given;
        const Cand *c = out_c[k];
        Extra *x = &s->extra[k];
        x->stages = calloc(pl->n_stages ? pl->n_stages : 1, sizeof *x->stages);
        if (!x->stages)
            goto cleanup;
        if (apsolve_full_estimate_ex(db, c->sweep, pl, 1.0, &x->full, x->stages)) {
            apsolve_say(a, "full estimate: %s", costdb_errmsg(db));
            goto cleanup;
        }
        s->outs[k].full = &x->full;
        if (x->full.available) {
            s->outs[k].full_stages = x->stages;
            pl->full_cost = x->full.total;
            pl->has_full_cost = 1;
        }
        if (a->batch > 0) {
            if ((rc = rebatch_one(db, a, &c->opt, c->p, c->sweep, &c->sw, pl, x,
                                  &s->rebatch_bad)) != 0)
                goto cleanup;
            rc = 1;
            s->outs[k].rebatch = &x->reb;
            s->outs[k].rebatch_plan = x->rplan;
            s->outs[k].rebatch_full = &x->rfull;
        }
    }
    if (!a->no_store && a->plan <= 0) {
        for (size_t k = 0; k < s->nout; k++) {
            const Cand *c = out_c[k];
            int is_auto = s->outs[k].plan == s->autop;
            /* beside a --parallel plan the auto plan is a comparison: stored
             * by a run without --parallel, not again by each layout tried */
            if (is_auto && a->parallel)
                continue;
            if (apsolve_request_store(db, a, c->p, &c->opt, s->outs[k].plan,
                                      is_auto ? "auto" : kind,
                                      is_auto ? &id_auto : &id_given))
                goto cleanup;
            s->outs[k].plan_id = is_auto ? id_auto : id_given;
        }
    }
    s->given_whole = !s->given || s->given->devices_used == main_c.p->num_devices;
    rc = 0;
cleanup:
    free(specs);
    free(plan_configs);
    free(bs);
    if (have_auto_c)
        cand_free(&auto_c);
    if (have_par_c)
        cand_free(&par_c);
    cand_free(&main_c);
    costdb_close(&db);
    if (rc)
        apsolve_session_free(&s);
    *out = s;
    return rc;
}


const ApsolveOutput *apsolve_session_outputs(const ApsolveSession *s, size_t *n)
{
    *n = s->nout;
    return s->outs;
}

int apsolve_session_finish(const ApsolveSession *s, const ApsolveRequest *a)
{
    int rc = APSOLVE_EXIT_OK;
    if (s->rebatch_bad) {
        apsolve_say(a, "at --batch %lld the plan is not usable as it is (see above)",
            (long long)a->batch);
        rc = APSOLVE_EXIT_INFEASIBLE;
    }
    if (s->given && !s->given->feasible) {
        apsolve_say(a, "the %s plan is not feasible: %s", s->label,
            !s->given_whole ? "it does not use exactly all devices" : "see the stage table");
        rc = APSOLVE_EXIT_INFEASIBLE;
    }
    return rc;
}

