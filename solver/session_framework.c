/* SPDX-License-Identifier: Apache-2.0 */
/*
 * apsolve --framework F (session_int.h, docs/solver.md "The best plan a
 * framework runs"). The auto search prices the sharding ILP's free layouts,
 * which often keep weight matrices whole on the tp axis, so no framework
 * runs its plan as priced. This step searches the plans F can be told to
 * run: one layout dp x tp x pp on every stage (apsolve_3d_specs, Megatron's
 * degrees), 1F1B or the interleaved schedule with vpp model chunks (for
 * torchtitan also PyTorch's interleaved zero bubble and ZB-V, which the
 * auto search tries, priced as --schedule S --parallel TEXT), each
 * micro-batch size the database holds (Megatron's per-replica micro-batch
 * mbs = micro-batch / dp) and each recomputation and ZeRO stage the sweep
 * profiled. Each is priced exactly as --parallel prices that layout (the
 * same candidate sweep, apsolve_parallel_apply, apsolve_evaluate_as_run,
 * and the full estimate apsolve_full_price); of those F runs as priced
 * (apsolve_frameworks with the knobs' rules, apsolve_parallel_frameworks:
 * the verdict stored with the plan) and that fit in memory, the least
 * full estimate wins, a layout that keeps the memory headroom beating one
 * that does not (the auto search's rule). A layout is priced at the
 * memory levels that keep the headroom where some do (the one rule,
 * apsolve_keep_headroom, through apsolve_evaluate_as_run_keep), else at
 * those that fit. The winner becomes the request's --parallel layout, so
 * the --parallel path itself prices, prints and stores it. Context
 * parallelism (the ring, and Megatron's a2a and a2a+p2p where the heads
 * rule passes, as the auto search prices them) and
 * expert parallelism (ep x etp, etp 1 or tp, for a model whose routing
 * the sweep records) are enumerated too: their candidates are made by the
 * --parallel steps themselves (apsolve_parallel_knobs: session_cp.c,
 * session_ep.c), once per layout (and ZeRO stage, for ep). For
 * Megatron-LM also the knobs it runs beside a stored variant, every
 * recompute_layers=K and, on pp=1 with a host link, every offload=N
 * (session_fw_partial.c), each one more layout. GPipe is left out unless
 * --schedule asks for it (see try_schedules). This file enumerates the
 * layouts and picks the winner; one layout is priced and judged by
 * session_fw_layout.c (the search's state: session_fw.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "clock.h"
#include "context_parallel.h"
#include "costdb.h"
#include "frameworks.h"
#include "schedule.h"
#include "session.h"
#include "session_fw.h"
#include "session_int.h"
#include "solver_int.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

int apsolve_framework_request(const ApsolveRequest *a, int *fw)
{
    *fw = -1;
    if (!a->framework)
        return 0;
    if ((*fw = apsolve_framework_parse(a->framework)) < 0)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--framework '%s' is not one of %s|%s|%s",
                            a->framework, apsolve_framework_key(0), apsolve_framework_key(1),
                            apsolve_framework_key(2));
    if (a->parallel || a->plan > 0 || (a->stage_option && strcmp(a->stage_option, "auto")))
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--framework searches the layouts itself: "
                            "not with --parallel, --plan or --stage-option manual|uniform");
    if (a->opt.inference)
        return apsolve_fail(a, APSOLVE_ERROR_USAGE, "--framework searches training plans (the "
                            "frameworks' training launches); not with --inference");
    return 0;
}

static int try_one(void *S, const ApsolveCand *c, ApsolveParallel *par)
{
    return apsolve_fw_try_layout(S, c, par);
}

/* A layout as the sweep stores its variant (apsolve_fw_try_layout) and, for
 * Megatron-LM, with the knobs it runs beside that variant: the first K
 * layers of each chunk recomputed, the first N layers' activations
 * offloaded (apsolve_fw_partial, session_fw_partial.c). 0, or 1. */
static int try_layout_knobs(FwSearch *S, const ApsolveCand *c, ApsolveParallel *par)
{
    if (apsolve_fw_try_layout(S, c, par))
        return 1;
    return S->fw == APSOLVE_FW_MEGATRON &&
           apsolve_fw_partial(S->r, c, par, !S->sched, S->has_none, &S->scratch, try_one, S);
}

/* The schedules of one dp x tp x pp layout. Without --schedule: 1F1B and
 * interleaved 1F1B with vpp = 2 .. the layers of the shortest stage (a
 * model chunk holds at least one of the sweep's layers: nothing finer is
 * priced). GPipe is left out: it prices the same T as 1F1B (the sum of the
 * stage costs plus (B - 1) x the largest) and the same transfers, with at
 * least as many micro-batches in flight on every stage, so the levels that
 * fit under it fit under 1F1B and its plan is never cheaper. With
 * --schedule the request's schedule (interleaved: its --virtual-stages)
 * is the only one, as --parallel prices a layout under it. */
static int try_schedules(FwSearch *S, const ApsolveCand *c, ApsolveParallel *par)
{
    const ApsolveRequest *a = S->r->a;
    int vmax = par->pp > 1 ? c->p->num_layers / par->pp : 1;
    if (a->schedule_set && a->schedule == APSOLVE_SCHEDULE_INTERLEAVED) {
        if (par->pp < 2)
            return 0; /* no interleaving without a pipeline: --parallel refuses it */
        par->vpp = a->virtual_stages > 1 ? a->virtual_stages : 2;
        return try_layout_knobs(S, c, par);
    }
    par->vpp = 0;
    if (try_layout_knobs(S, c, par))
        return 1;
    for (int v = 2; !a->schedule_set && v <= vmax; v++) {
        par->vpp = v;
        if (try_layout_knobs(S, c, par))
            return 1;
    }
    /* torchtitan runs PyTorch's interleaved zero bubble (2 or more chunks
     * per device) and ZB-V (2), the zero-bubble schedules the auto search
     * tries (session_search.c), where their weight-gradient seconds are
     * known; the verdict judges each layout as priced */
    for (int k = 0; k < 2 && !a->schedule_set && S->fw == APSOLVE_FW_TORCHTITAN &&
                    par->pp > 1 && apsolve_zero_bubble_known(c);
         k++) {
        S->sched = k ? APSOLVE_SCHEDULE_ZBV : APSOLVE_SCHEDULE_INTERLEAVED_ZB;
        for (int v = 2; v <= (k ? 2 : vmax); v++) {
            par->vpp = v;
            if (try_layout_knobs(S, c, par)) {
                S->sched = 0;
                return 1;
            }
        }
        S->sched = 0;
    }
    par->vpp = 0;
    return 0;
}

/* The variants (bits of recompute or ZeRO values) candidate c's sweep
 * holds among the configs its objective may use. */
static unsigned variants(const ApsolveCand *c, int zero)
{
    const ApsolveProblem *p = c->p;
    unsigned bits = 0;
    for (int s = 0; s < p->num_submeshes; s++)
        for (int k = 0; k < p->num_configs; k++) {
            const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + k];
            int v = zero ? cf->variant.zero : cf->variant.recompute;
            if (apsolve_config_allowed(p, &c->opt, s, k) && v >= 0 && v < 16)
                bits |= 1u << v;
        }
    return bits;
}

/* The recomputation, ZeRO stages and schedules of layout par (dp, tp,
 * pp, cp, ep, etp set) on candidate c, whose entries are those of its
 * knobs; zero >= 0 pins the ZeRO stage. 0, or 1. */
static int try_variants(FwSearch *S, const ApsolveCand *c, ApsolveParallel *par, int zero)
{
    unsigned recs = variants(c, 0), zeros = variants(c, 1);
    int e = 0;
    S->has_none = (recs >> COSTDB_RECOMPUTE_NONE) & 1u;
    for (int rc = 0; rc < 16 && !e; rc++)
        for (int z = 0; (recs >> rc) & 1u && z < 16 && !e; z++) {
            if (!((zeros >> z) & 1u) || (zero >= 0 && z != zero))
                continue;
            par->recompute = rc;
            par->zero = z;
            e = try_schedules(S, c, par);
        }
    apsolve_problem_free(&S->scratch); /* a clone of c's problem */
    return e;
}

/* A layout with cp > 1 or ep > 1 on candidate c: the --parallel steps
 * make its candidate (session_cp.c, session_ep.c: the entries as cp or ep
 * stages, which the ep step builds for one ZeRO stage), silently; a layout
 * they refuse (a sequence or micro-batch cp does not split, experts ep
 * does not divide, no stored level of the expert split) counts once, with
 * its reason. Then its variants and schedules as any layout's. 0, or 1. */
static int try_knobs(FwSearch *S, const ApsolveCand *c, ApsolveParallel *par)
{
    ApsolveRun *r = S->r;
    ApsolveRequest *a = r->a;
    ApsolveParallel keep_par = a->par;
    const char *keep_text = a->parallel;
    ApsolveNotice notice = a->notice;
    ApsolveError *error = a->error, err;
    int quiet = a->quiet;
    unsigned zeros = variants(c, 1);
    int cp = par->cp > 1 ? par->cp : 1, rc = 0, built = 0;
    char text[160];
    for (int z = 0; z < 16 && !rc; z++) {
        ApsolveCand base = *c, *pc = &base;
        ApsolveFwVerdict v;
        if (!((zeros >> z) & 1u))
            continue;
        if (par->ep <= 1 && built++)
            break; /* the cp step's entries hold every ZeRO stage */
        par->zero = z;
        par->recompute = 0;
        par->vpp = 0;
        /* the knobs' own rule first: no candidate for a layout F refuses */
        memset(&v, 0, sizeof v);
        v.runs = 1u << S->fw;
        apsolve_parallel_frameworks(par, &v);
        if (!v.runs && par->ep > 1) {
            S->st->layouts++;
            S->st->pruned_rule++;
            apsolve_fw_note_rule(S, v.why[S->fw]);
            continue;
        }
        if (!v.runs) { /* cp: every ZeRO stage alike */
            S->st->layouts++;
            S->st->pruned_rule++;
            apsolve_fw_note_rule(S, v.why[S->fw]);
            break;
        }
        apsolve_fw_layout_text(par, text, sizeof text);
        a->par = *par;
        a->parallel = text;
        a->notice = NULL;
        a->quiet = 1; /* nor the cp step's per-stage figures */
        memset(&err, 0, sizeof err);
        a->error = &err;
        if (!(r->specs = calloc((size_t)par->pp, sizeof *r->specs))) {
            rc = 1;
        } else {
            r->nspec = (size_t)par->pp;
            apsolve_3d_specs(c->p->num_layers, c->p->cluster_gpus, par->dp * cp, par->tp,
                             par->pp, r->specs);
            if (apsolve_parallel_knobs(r, &pc)) {
                if (!strcmp(err.msg, "out of memory")) {
                    rc = 1;
                } else {
                    S->st->layouts++;
                    S->st->pruned_rule++;
                    apsolve_fw_note_rule(S, err.msg);
                }
                pc = NULL;
            }
        }
        a->notice = notice;
        a->error = error;
        a->quiet = quiet;
        if (!rc && pc)
            rc = try_variants(S, pc, par, par->ep > 1 ? z : -1);
        apsolve_parallel_undo(r);
        a->par = keep_par;
        a->parallel = keep_text;
    }
    return rc;
}

/* Whether F runs cp layout par with its cp_comm (a2a, a2a+p2p or
 * all_gather) at all: F's rule for the comm (apsolve_cp_frameworks:
 * torchtitan runs no all-to-all cp, DeepSpeed none), and for the
 * all-to-alls the heads the sweep records (heads, kv_heads; 0
 * unknown: not tried) and the heads rule at par's tp (apsolve_cp_check),
 * and for a2a+p2p an inner group neither 1 nor cp (else it is the ring's
 * or a2a's layout). Silent: a comm F or the model cannot run is no
 * layout. */
static int comm_runs(const FwSearch *S, const ApsolveCand *c, const ApsolveParallel *par,
                     int heads, int kv_heads)
{
    ApsolveCpLayout l = {par->dp, par->tp, par->cp, par->cp_comm, 0};
    ApsolveFwVerdict v;
    char why[256];
    memset(&v, 0, sizeof v);
    v.runs = 1u << S->fw;
    apsolve_cp_frameworks(par->cp, par->cp_comm, &v);
    if (!v.runs)
        return 0;
    if (par->cp_comm == APSOLVE_CP_ALL_GATHER) /* splits no heads */
        return apsolve_cp_check(&l, 0, heads, kv_heads, why, sizeof why, NULL, 0);
    if (heads <= 0)
        return 0;
    if (par->cp_comm == APSOLVE_CP_A2A_P2P) {
        l.a2a = apsolve_cp_a2a_size(par->cp, par->tp,
                                    apsolve_cp_fast_gpus(S->r->db, c->sweep, c->p->cluster_gpus));
        if (l.a2a <= 1 || l.a2a >= par->cp)
            return 0;
    }
    return apsolve_cp_check(&l, 0, heads, kv_heads, why, sizeof why, NULL, 0);
}

/* Every layout on candidate c, micro-batch size m (0: unknown, then the
 * --parallel plan takes the sweep's own, mbs unset). dp x cp x tp x pp
 * fill the devices; cp > 1 needs m to split dp x cp ways; ep > 1 (a model
 * whose routing the sweep records) folds the experts over ep x etp of
 * the dp x cp x tp GPUs of a stage, etp 1 or tp. 0, or 1. */
static int search_cand(FwSearch *S, const ApsolveCand *c, int64_t m)
{
    const ApsolveProblem *p = c->p;
    const ApsolveRequest *a = S->r->a;
    int D = p->num_devices, M = p->cluster_gpus, L = p->num_layers, top_k, heads, kv_heads;
    int64_t capacity;
    apsolve_ep_routing(S->r->db, c->sw.model_id, &top_k, &capacity);
    apsolve_cp_heads(S->r->db, c->sweep, p, &heads, &kv_heads);
    for (int tp = 1; tp <= D; tp++)
        for (int pp = 1; D % tp == 0 && pp <= D / tp; pp++)
            for (int cp = 1; (D / tp) % pp == 0 && cp <= D / tp / pp; cp++) {
                int dp = D / tp / pp / cp, edp = dp * cp;
                ApsolveParallel par;
                if ((D / tp / pp) % cp)
                    continue;
                /* the layouts a --parallel plan can be: a stage holds a
                 * layer at least, its submesh is (1, dp cp tp) or whole
                 * hosts, its micro-batch splits into dp x cp replicas of
                 * mbs samples (an mbs --parallel takes); a plan of more
                 * stages than --max-stages is infeasible; cp needs a
                 * micro-batch to split (m known) */
                if (pp > L || (edp * tp > M && (edp * tp) % M) || (m > 0 && m % edp) ||
                    (m > 0 && m / edp > (1 << 24)) || (cp > 1 && m <= 0) ||
                    (a->opt.max_stages > 0 && pp > a->opt.max_stages) ||
                    (S->twin_only && (cp <= 1 || S->r->G % (m / cp))))
                    continue;
                memset(&par, 0, sizeof par);
                par.dp = dp;
                par.tp = tp;
                par.pp = pp;
                par.mbs = m > 0 ? (int)(m / edp) : 0;
                par.cp = cp;
                par.ep = 1;
                /* cp: the ring, and Megatron's all-to-all kinds and the
                 * K/V all-gather where F (and for the all-to-alls the
                 * model's heads) run them */
                for (int cm = APSOLVE_CP_P2P; cp > 1 && cm <= APSOLVE_CP_ALL_GATHER; cm++) {
                    par.cp_comm = cm;
                    if (cm != APSOLVE_CP_P2P && !comm_runs(S, c, &par, heads, kv_heads))
                        continue;
                    if (try_knobs(S, c, &par))
                        return 1;
                }
                par.cp_comm = APSOLVE_CP_P2P; /* ep on the ring's layout */
                if (cp <= 1 && try_variants(S, c, &par, -1))
                    return 1;
                for (int i = 0; top_k > 0 && m > 0 && i < (tp > 1 ? 2 : 1); i++)
                    for (int ep = 2, etp = i ? tp : 1; ep * etp <= edp * tp; ep++) {
                        if ((edp * tp) % (ep * etp))
                            continue;
                        par.ep = ep;
                        par.etp = etp;
                        if (try_knobs(S, c, &par))
                            return 1;
                    }
            }
    return 0;
}

/* No layout F runs fits: exit 3, naming the closest reasons. */
static int refuse(FwSearch *S)
{
    const ApsolveRequest *a = S->r->a;
    const ApsolveFwSearch *st = S->st;
    const char *name = apsolve_framework_name(S->fw);
    char msg[1024];
    size_t at = 0;
    int top = 0;
#define ADD(...)                                                                                \
    do {                                                                                        \
        int w_ = at < sizeof msg ? snprintf(msg + at, sizeof msg - at, __VA_ARGS__) : 0;        \
        at += w_ > 0 ? (size_t)w_ : 0;                                                          \
    } while (0)
    ADD("--framework %s: no plan %s runs as priced fits in memory (%ld layouts, %ld priced as "
        "run, %ld run by %s as priced)", a->framework, name, st->layouts, st->priced, st->runs,
        name);
    for (int i = 1; i < S->nrule; i++)
        top = S->rule[i].n > S->rule[top].n ? i : top;
    if (S->nrule)
        ADD("; %ld refused by its rules, most often: %.200s", st->pruned_rule, S->rule[top].why);
    if (S->need[0] > 0)
        ADD("; every tp=1 plan it runs needs %.1f GiB on some device, %.1f GiB available "
            "(the closest: %s)", S->need[0] / GIB, S->avail[0] / GIB, S->need_eg[0]);
    if (S->whole || S->need_whole[0])
        ADD("; tp>1 plans: the database has no memory level that splits the weights over the "
            "tp axis (%.240s: %.200s); sweep with --variants all (approf sweep)",
            S->whole ? S->whole_eg : S->need_eg[1], S->whole ? S->whole_why : S->need_whole);
    else if (S->need[1] > 0)
        ADD("; every tp>1 plan it runs needs %.1f GiB on some device, %.1f GiB available "
            "(the closest: %s)", S->need[1] / GIB, S->avail[1] / GIB, S->need_eg[1]);
    if (st->missing)
        ADD("; %ld have no entry in the sweep for some stage", st->missing);
#undef ADD
    return apsolve_fail(a, APSOLVE_ERROR_INFEASIBLE, "%s", msg);
}

int apsolve_run_framework(ApsolveRun *r)
{
    ApsolveRequest *a = r->a;
    FwSearch S;
    double t0 = costdb_monotonic_seconds();
    char perr[200];
    memset(&S, 0, sizeof S);
    S.r = r;
    S.fw = r->fw;
    S.st = &r->s->fws;
    memset(S.st, 0, sizeof *S.st);
    S.st->framework = r->fw;
    for (size_t k = 0; k < r->nbs || (r->nbs == 0 && k == 0); k++) {
        int64_t m;
        int own, rc;
        ApsolveCand c;
        /* a family size that does not divide G holds cp twins only: a cp
         * plan of micro-batch m / cp runs G / (m / cp) of them */
        S.twin_only = !apsolve_size_searched(r, k, &m, &own) && !own && r->G > 0 && m > 0 &&
                      r->G % m && a->micro_batch_size <= 0 && a->micro_batches <= 0 &&
                      !(a->sweep > 0 && a->global_batch <= 0);
        if (!S.twin_only && !apsolve_size_searched(r, k, &m, &own))
            continue;
        if (own) {
            c = r->main_c;
            m = r->micro;
        } else {
            /* as parallel_candidate (session_given.c) loads an mbs's sweep */
            if (apsolve_cand_load(r->db, a, r->bs[k].sweep_id, r->G, m,
                                  S.twin_only ? 1 : (int)(r->G / m), &c))
                return 1;
            c.opt.objective = a->opt.objective;
        }
        rc = search_cand(&S, &c, r->G > 0 ? m : 0);
        if (!own)
            apsolve_cand_free(&c);
        if (rc)
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    }
    S.st->seconds = costdb_monotonic_seconds() - t0;
    if (!S.have)
        return refuse(&S);
    S.st->headroom_kept = S.best_headroom;
    S.st->price = S.best_price;
    apsolve_fw_layout_text(&S.best, S.st->layout, sizeof S.st->layout);
    /* the winner as the --parallel text says it: the request holds what
     * apsolve --parallel TEXT would hold */
    if (apsolve_parallel_parse(S.st->layout, &a->par, perr, sizeof perr))
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "--framework: layout '%s': %s",
                            S.st->layout, perr);
    a->parallel = S.st->layout;
    if (S.best_sched) {
        /* a zero-bubble winner: the --parallel plan is priced under it, as
         * --schedule S --parallel TEXT prices it (session_given.c) */
        a->schedule = a->opt.schedule = r->main_c.opt.schedule = S.best_sched;
        a->virtual_stages = a->opt.virtual_stages = r->main_c.opt.virtual_stages = S.best.vpp;
    }
    if (!a->quiet)
        apsolve_say(a, "--framework %s: %ld layouts, %ld priced as run, %ld run by %s as priced, "
                    "%ld of them fit (%ld with the headroom); best %s%s%s in %.3f s",
                    a->framework, S.st->layouts, S.st->priced, S.st->runs,
                    apsolve_framework_name(r->fw), S.st->fit, S.st->headroom, S.st->layout,
                    S.best_sched ? " --schedule " : "",
                    S.best_sched ? apsolve_schedule_name((ApsolveSchedule)S.best_sched) : "",
                    S.st->seconds);
    return 0;
}
