/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One apsolve run behind a library call (session.h), as a pipeline of
 * small steps over one ApsolveRun (session_int.h):
 *   open → stored plan (--plan) → resolve batch (main sweep, micro-batch
 *   size, micro-batches) → main candidate and objective → given plan
 *   (--parallel 3-D, manual, uniform, stored: session_given.c) → auto search
 *   (session_search.c) → price (session_price.c) → store.
 * Each step returns 0 or an exit status after its message. Prints nothing
 * and gives no command-line hints: every message goes to the request's
 * callback, a failure also to its typed error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "costdb_text.h"
#include "plural.h"
#include "recompute_layers.h"
#include "schedule.h"
#include "search_pool.h"
#include "session.h"
#include "session_int.h"

static void say_v(const ApsolveRequest *a, char *msg, size_t len, const char *fmt, va_list ap)
{
    vsnprintf(msg, len, fmt, ap);
    if (a->notice)
        a->notice(a->notice_ctx, msg);
}

/* One message to the request's callback (printf-style, no prefix). */
void apsolve_say(const ApsolveRequest *a, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!a->notice)
        return;
    va_start(ap, fmt);
    say_v(a, msg, sizeof msg, fmt, ap);
    va_end(ap);
}

int apsolve_error_exit(ApsolveErrorCode code)
{
    switch (code) {
    case APSOLVE_ERROR_NONE: return APPROF_EXIT_OK;
    case APSOLVE_ERROR_USAGE:
    case APSOLVE_ERROR_INPUT: return APPROF_EXIT_USAGE;
    case APSOLVE_ERROR_INFEASIBLE: return APPROF_EXIT_INFEASIBLE;
    default: return APPROF_EXIT_FAIL;
    }
}

/* A failure: the message to the callback and, with its code, to the
 * request's typed error. */
int apsolve_fail(const ApsolveRequest *a, ApsolveErrorCode code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    say_v(a, msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (a->error) {
        a->error->code = code;
        snprintf(a->error->msg, sizeof a->error->msg, "%s", msg);
    }
    return apsolve_error_exit(code);
}

/* Pipeline-bubble warnings for a plan with few micro-batches per stage. */
void apsolve_warn_batches(const ApsolveRequest *a, const ApsolvePlan *pl, const char *label)
{
    int n = (int)pl->n_stages, b = pl->micro_batches;
    if (a->quiet || pl->inference || n <= 1)
        return;
    if (b < n)
        apsolve_say(a, "warning: %s plan: %d %s < %d stages: the pipeline is mostly bubble",
                    label, b, costdb_plural(b, "micro-batch", "micro-batches"), n);
    else if (b < 2 * n)
        apsolve_say(a, "warning: %s plan: %d micro-batches < 2 x %d stages (rule of "
                "thumb: micro-batches >= 2 x stages)", label, b, n);
}

void apsolve_session_free(ApsolveSession **sp)
{
    ApsolveSession *s = sp ? *sp : NULL;
    if (!s)
        return;
    apsolve_extra_free(&s->extra[0]);
    apsolve_extra_free(&s->extra[1]);
    apsolve_plan_free(&s->autop);
    apsolve_plan_free(&s->given);
    free(s);
    *sp = NULL;
}

int apsolve_run_threads(const ApsolveRun *r)
{
    return r->a->threads > 0 ? r->a->threads : apsolve_threads_default();
}

/* Open: the session to hand back and the database (read-only with
 * --no-store). */
static int run_open(ApsolveRun *r, ApsolveRequest *a)
{
    char err[512];
    memset(r, 0, sizeof *r);
    r->a = a;
    r->sweep = a->sweep;
    r->req_parallel = a->parallel;
    /* the load's second thread (apsolve_problem_from_db) and the DP's
     * table in two parts (dp_shared.c) under --threads */
    a->opt.load_threads = apsolve_run_threads(r);
    if (!(r->s = calloc(1, sizeof *r->s)))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    if (costdb_open(a->db, a->no_store ? COSTDB_OPEN_READONLY : COSTDB_OPEN_NOCREATE, &r->db,
                    err, sizeof err))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "%s", err);
    return 0;
}

/* Stored plan, --plan ID: decides the given plan's stages and the
 * request's defaults (sweep, micro-batches, budget, objective, schedule)
 * from the stored plan. Then every plan, searched or given, runs the same
 * schedule (a --plan's stored one unless --schedule says otherwise). */
static int stored_plan(ApsolveRun *r)
{
    ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    if (a->plan > 0) {
        int rc = apsolve_request_load_plan(r->db, a, &r->sweep, &r->specs, &r->plan_configs,
                                           &r->nspec, s->stored_kind, sizeof s->stored_kind);
        if (rc)
            return rc;
        r->kind = s->stored_kind;
        snprintf(s->label, sizeof s->label, "plan %lld (%s)", (long long)a->plan,
                 s->stored_kind);
    }
    a->opt.schedule = a->schedule;
    a->opt.virtual_stages = a->virtual_stages;
    return 0;
}

/* Makes sweep id the main sweep, with its row. */
static int load_sweep(ApsolveRun *r, int64_t id)
{
    r->sweep = id;
    if (costdb_sweep_get(r->db, id, &r->sw))
        return apsolve_fail(r->a, APSOLVE_ERROR_FAILED, "sweep %lld: %s", (long long)id,
                            costdb_errmsg(r->db));
    return 0;
}

/* The index of the family's sweep at micro-batch size want; nbs if none. */
size_t apsolve_family_index(const ApsolveRun *r, int64_t want)
{
    size_t k;
    for (k = 0; k < r->nbs && r->bs[k].micro_batch_size != want; k++)
        ;
    return k;
}

/* Resolve batch, 1: decides the main sweep (--sweep, the stored plan's or
 * the newest), its family, its micro-batch size and the global batch.
 * When --global-batch alone asks for a batch the newest sweep's size does
 * not divide, the main sweep is the newest of the family whose size does
 * (the choice does not depend on which sweep was made last). */
static int main_sweep(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    int64_t best = 0, best_micro = 0;
    if (r->sweep <= 0 && costdb_sweep_latest(r->db, &r->sweep))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "%s: no sweep in the database", a->db);
    if (load_sweep(r, r->sweep))
        return 1;
    if (apsolve_batch_sweeps(r->db, r->sweep, &r->bs, &r->nbs))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "sweeps at other micro-batch sizes: %s",
                            costdb_errmsg(r->db));
    r->micro = r->sw.micro_batch_size;
    r->G = a->global_batch > 0 ? a->global_batch : r->sw.global_batch;
    if (!(r->G > 0 && r->micro > 0 && r->G % r->micro && a->global_batch > 0 && a->sweep <= 0 &&
          a->plan <= 0 && a->micro_batch_size <= 0 && a->micro_batches <= 0))
        return 0;
    for (size_t k = 0; k < r->nbs; k++)
        if (r->bs[k].micro_batch_size > 0 && r->G % r->bs[k].micro_batch_size == 0 &&
            r->bs[k].sweep_id > best) {
            best = r->bs[k].sweep_id;
            best_micro = r->bs[k].micro_batch_size;
        }
    if (best <= 0)
        return 0;
    r->micro = best_micro;
    return load_sweep(r, best);
}

/* Resolve batch, 2: decides the micro-batch size when the request names
 * it (--micro-batch-size, or --global-batch / --micro-batches); the main
 * sweep becomes the family's sweep at that size. */
static int pin_micro_size(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    int64_t want = a->micro_batch_size;
    size_t k;
    if (a->micro_batch_size <= 0 && !(a->micro_batches > 0 && a->global_batch > 0))
        return 0;
    if (a->micro_batches > 0 && a->global_batch > 0) {
        if (a->global_batch % a->micro_batches)
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--global-batch %lld is not divisible "
                                "by --micro-batches %d", (long long)a->global_batch,
                                a->micro_batches);
        if (want > 0 && want != a->global_batch / a->micro_batches)
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--global-batch %lld / --micro-batches "
                                "%d is a micro-batch of %lld, not --micro-batch-size %lld",
                                (long long)a->global_batch, a->micro_batches,
                                (long long)(a->global_batch / a->micro_batches),
                                (long long)want);
        want = a->global_batch / a->micro_batches;
    }
    if ((k = apsolve_family_index(r, want)) == r->nbs)
        return apsolve_fail(a, APSOLVE_ERROR_INPUT, "no sweep of this model, hardware and "
                            "cluster at micro-batch size %lld (profile one with approf sweep "
                            "--micro-batch-sizes)", (long long)want);
    r->micro = want;
    return load_sweep(r, r->bs[k].sweep_id);
}

/* Resolve batch, 3: decides B, the micro-batches per iteration:
 * --micro-batches (which sets the global batch at the sweep's size unless
 * --global-batch does), else G / micro, or the sweep's B when the batch
 * is unknown (G becomes 0 for an imported table without one). --batch
 * must split into B micro-batches. */
static int count_micro_batches(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    if (a->micro_batches > 0) {
        r->B = a->micro_batches;
        if (r->micro > 0 && a->global_batch <= 0) {
            r->G = (int64_t)r->B * r->micro;
            if (r->G != r->sw.global_batch && !a->quiet)
                apsolve_say(a, "notice: --micro-batches %d at micro-batch size %lld: the global "
                            "batch becomes %lld (the sweep's is %lld)", r->B,
                            (long long)r->micro, (long long)r->G,
                            (long long)r->sw.global_batch);
        }
    } else {
        r->B = r->sw.micro_batches > 0 ? r->sw.micro_batches : 1;
        if (r->micro > 0 && r->G > 0 && r->G % r->micro) {
            char hint[320] = "";
            if (a->par.cp > 1)
                snprintf(hint, sizeof hint, " (a cp plan takes its twin's entries from the sweep "
                         "at mbs x dp x cp, which need not divide the global batch, but the run "
                         "needs beside it a sweep of the same model, hardware and cluster whose "
                         "micro-batch size does: approf sweep --batch %lld)", (long long)r->G);
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "global batch %lld is not divisible by "
                                "the micro-batch size %lld of sweep %lld%s", (long long)r->G,
                                (long long)r->micro, (long long)r->sweep, hint);
        }
        if (r->micro > 0 && r->G > 0 && r->G / r->micro > COSTDB_MAX_MICRO_BATCHES)
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "global batch %lld / micro-batch size "
                                "%lld of sweep %lld = %lld micro-batches, more than %d "
                                "(COSTDB_MAX_MICRO_BATCHES)", (long long)r->G,
                                (long long)r->micro, (long long)r->sweep,
                                (long long)(r->G / r->micro), COSTDB_MAX_MICRO_BATCHES);
        if (r->micro > 0 && r->G > 0)
            r->B = (int)(r->G / r->micro);
    }
    if (r->micro <= 0)
        r->G = 0; /* an imported table without a batch: unknown */
    if (a->batch > 0 && a->batch % r->B)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--batch %lld is not divisible by %d "
                            "micro-batches", (long long)a->batch, r->B);
    return 0;
}

/* Resolve batch: which sweep, micro-batch size, global batch and number
 * of micro-batches the plans are made for. */
static int resolve_batch(ApsolveRun *r)
{
    int rc = main_sweep(r);
    if (!rc)
        rc = pin_micro_size(r);
    if (!rc)
        rc = count_micro_batches(r);
    return rc;
}

/* A --memory-headroom in bytes at or above the memory a device has (the
 * entries' available memory, or --memory-budget) leaves no memory for any
 * stage: a usage error, not a search that falls back to the raw capacity
 * (a percentage is held below 50 % by the option's parser). */
static int check_headroom(const ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    const ApsolveProblem *p = r->main_c.p;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    int64_t most = 0;
    size_t n;
    if (a->opt.headroom_bytes <= 0 || !p->memory)
        return 0;
    /* every cell's figures: those put, and figs[0] (the cells without) */
    n = p->memory->n;
    for (size_t i = 0; i < n; i++)
        if (p->memory->figs[i].avail > most)
            most = p->memory->figs[i].avail;
    if (most <= 0 || a->opt.headroom_bytes < most)
        return 0;
    return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--memory-headroom %lld bytes (%.3f GiB) is not "
                        "less than the device's memory, %lld bytes (%.3f GiB) %s: no stage "
                        "could keep it; give a smaller size or a percentage (default %g%%)",
                        (long long)a->opt.headroom_bytes, a->opt.headroom_bytes / gib,
                        (long long)most, most / gib,
                        a->opt.memory_budget > 0 ? "by --memory-budget"
                                                 : "available in the sweep",
                        APSOLVE_DEFAULT_HEADROOM_PERCENT);
}

/* Main candidate: the main sweep at B, and the objective: full when every
 * entry has its apply cost (else alpa, with a notice) unless --objective
 * says; --objective full without apply costs is a usage error. A stored
 * plan's stages get the variants their configs name. */
static int main_candidate(ApsolveRun *r)
{
    ApsolveRequest *a = r->a;
    int rc;
    if (apsolve_cand_load(r->db, a, r->sweep, r->G, r->micro, r->B, &r->main_c))
        return 1;
    if (a->objective < 0) {
        if (!r->main_c.opt.inference &&
            !apsolve_unfit_apply_known(r->main_c.p, apsolve_run_threads(r))) {
            a->opt.objective = APSOLVE_OBJECTIVE_ALPA;
            if (!a->quiet)
                apsolve_say(a, "notice: sweep %lld has entries without apply_cost (a database "
                            "before schema 2 or an import): objective alpa; the full estimate "
                            "prices gradient sync from the hardware row's link bandwidths, "
                            "without measured curves or the spec's multi-rail fabric",
                            (long long)r->sweep);
        } else {
            a->opt.objective = APSOLVE_OBJECTIVE_FULL;
        }
    } else {
        a->opt.objective = a->objective;
        if (a->objective == APSOLVE_OBJECTIVE_FULL && !a->opt.inference &&
            !apsolve_unfit_apply_known(r->main_c.p, apsolve_run_threads(r)))
            return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--objective full: sweep %lld has "
                                "entries without apply_cost (a database before schema 2 or an "
                                "import); use --objective alpa", (long long)r->sweep);
    }
    r->main_c.opt.objective = a->opt.objective;
    /* a zero-bubble schedule needs each backward's split (schema 12):
     * refused, not guessed */
    if (apsolve_schedule_zero_bubble(a->schedule) && !a->opt.inference &&
        !apsolve_problem_wgrad_known(r->main_c.p))
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--schedule %s: sweep %lld has entries "
                            "without the weight-gradient seconds of their backward (a database "
                            "before schema 12, an import, or a sweep written before it): "
                            "a zero-bubble schedule cannot be priced exactly; profile the sweep "
                            "again with this approf", apsolve_schedule_name(a->schedule),
                            (long long)r->sweep);
    if ((rc = check_headroom(r)) != 0)
        return rc;
    if (r->plan_configs)
        apsolve_specs_variants(r->main_c.p, r->specs, r->plan_configs, r->nspec);
    return 0;
}

/* Frees the candidates of a given plan's steps (--parallel's sweep, and
 * the problems its cp, ep and HSDP knobs transformed). */
static void free_given_cands(ApsolveRun *r)
{
    if (r->have_par_c)
        apsolve_cand_free(&r->par_c);
    if (r->have_cp_c)
        apsolve_cand_free(&r->cp_c);
    if (r->have_ep_c)
        apsolve_cand_free(&r->ep_c);
    if (r->have_hsdp_c)
        apsolve_cand_free(&r->hsdp_c);
    if (r->have_rl_c)
        apsolve_cand_free(&r->rl_c);
    if (r->have_offload_c)
        apsolve_cand_free(&r->offload_c);
    r->have_par_c = r->have_cp_c = r->have_ep_c = r->have_hsdp_c = r->have_rl_c = 0;
    r->have_offload_c = 0;
}

/* Frees what one parallel_plan made, for the next try of parallel_mbs
 * (session_int.h). */
void apsolve_parallel_undo(ApsolveRun *r)
{
    free(r->specs);
    r->specs = NULL;
    r->nspec = 0;
    apsolve_plan_free(&r->s->given);
    free_given_cands(r);
}

/* Store: decides which outputs are stored (none with --no-store or on a
 * --plan re-evaluation; beside a --parallel plan the auto plan is a
 * comparison, stored by a run without --parallel, not again by each layout
 * tried), each as a plan of its kind with the options that made it. */
static int store_outputs(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    ApsolveSession *s = r->s;
    if (a->no_store || a->plan > 0)
        return 0;
    for (size_t k = 0; k < s->nout; k++) {
        const ApsolveCand *c = r->out_c[k];
        int is_auto = s->outs[k].plan == s->autop;
        int64_t id = 0;
        if (is_auto && a->parallel)
            continue;
        if (apsolve_request_store(r->db, a, c->p, &c->opt, s->outs[k].plan,
                                  is_auto ? "auto" : r->kind, &id))
            return 1;
        s->outs[k].plan_id = id;
    }
    return 0;
}

/* Close: frees what the steps built and the session does not keep; a
 * failed run hands back no session, and a failure that said nothing (out
 * of memory) is a runtime failure in the typed error. */
static ApsolveSession *run_close(ApsolveRun *r, int rc)
{
    free(r->specs);
    free(r->plan_configs);
    free(r->bs);
    if (r->have_auto_c)
        apsolve_cand_free(&r->auto_c);
    apsolve_recompute_layers_saved_free(&r->rl_saved); /* a step that failed before cp */
    free_given_cands(r);
    apsolve_cand_free(&r->main_c);
    costdb_close(&r->db);
    r->a->parallel = r->req_parallel; /* the framework search's text lives in the session */
    if (rc) {
        apsolve_session_free(&r->s);
        if (r->a->error && r->a->error->code == APSOLVE_ERROR_NONE)
            r->a->error->code = APSOLVE_ERROR_FAILED;
    }
    return r->s;
}

int apsolve_session_run(ApsolveRequest *a, ApsolveSession **out)
{
    ApsolveRun r;
    int rc, fw;
    if (a->error)
        memset(a->error, 0, sizeof *a->error);
    if ((rc = apsolve_framework_request(a, &fw)) != 0) {
        *out = NULL;
        return rc;
    }
    rc = run_open(&r, a);
    r.fw = fw;
    if (!rc)
        rc = stored_plan(&r);
    if (!rc)
        rc = resolve_batch(&r);
    if (!rc)
        rc = main_candidate(&r);
    if (!rc && r.fw >= 0) /* --framework: its best layout becomes the --parallel plan */
        rc = apsolve_run_framework(&r);
    if (!rc)
        rc = apsolve_given_plan(&r);
    if (!rc && r.fw >= 0) {
        snprintf(r.s->label, sizeof r.s->label, "%s %s", apsolve_framework_name(r.fw),
                 a->parallel);
        r.s->outs[0].fw_search = &r.s->fws;
    } else if (!rc && (!r.specs || a->parallel)) /* no plan given, or a 3-D one to compare */
        rc = apsolve_run_auto_search(&r);
    if (!rc)
        rc = apsolve_run_price(&r);
    if (!rc)
        rc = store_outputs(&r);
    if (!rc)
        r.s->given_whole = !r.s->given || r.s->given->devices_used == r.main_c.p->num_devices;
    *out = run_close(&r, rc);
    return rc;
}

const ApsolveOutput *apsolve_session_outputs(const ApsolveSession *s, size_t *n)
{
    *n = s->nout;
    return s->outs;
}

int apsolve_session_finish(const ApsolveSession *s, const ApsolveRequest *a)
{
    int rc = APPROF_EXIT_OK;
    if (s->rebatch_bad)
        rc = apsolve_fail(a, APSOLVE_ERROR_INFEASIBLE, "at --batch %lld the plan is not usable "
                          "as it is (see above)", (long long)a->batch);
    if (s->given && !s->given->feasible)
        rc = apsolve_fail(a, APSOLVE_ERROR_INFEASIBLE, "the %s plan is not feasible: %s",
                          s->label, !s->given_whole ? "it does not use exactly all devices"
                                                    : "see the stage table");
    return rc;
}
