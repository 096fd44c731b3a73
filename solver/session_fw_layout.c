/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One layout of the apsolve --framework search priced as F runs it
 * (session_fw.h; the search over the layouts is session_framework.c): F's
 * rules on the layout alone, the exact prunes (a stage that fits at no
 * memory level, a T no lower than the best full estimate), the price as
 * --parallel prices that layout (apsolve_parallel_apply,
 * apsolve_evaluate_as_run_keep, apsolve_full_price_scaled), F's verdict
 * on the priced plan, and for a layout that does not fit the memory it
 * needs, which the search's refusal names.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "context_parallel.h"
#include "costdb.h"
#include "frameworks.h"
#include "schedule.h"
#include "session.h"
#include "session_fw.h"
#include "session_int.h"
#include "solver_int.h"

void apsolve_parallel_apply(const ApsolveParallel *par, ApsolveOptions *opt,
                            ApsolveStageSpec *specs, size_t n)
{
    if (par->vpp > 1) {
        /* vpp= gives the interleaved zero-bubble schedules their chunks */
        if (opt->schedule != APSOLVE_SCHEDULE_INTERLEAVED_ZB &&
            opt->schedule != APSOLVE_SCHEDULE_ZBV)
            opt->schedule = APSOLVE_SCHEDULE_INTERLEAVED;
        opt->virtual_stages = par->vpp;
    }
    opt->moe_a2a_overlap = par->moe_a2a_overlap;
    for (size_t k = 0; k < n; k++) {
        specs[k].variant.recompute = par->recompute;
        specs[k].variant.zero = par->zero;
    }
}

/* "dp=2,tp=4,pp=1,zero=1,recompute=full[,vpp=2][,mbs=1][,recompute_layers=1]": --parallel's
 * text. */
void apsolve_fw_layout_text(const ApsolveParallel *p, char *out, size_t len)
{
    char vpp[24] = "", mbs[32] = "", cp[48] = "", ep[40] = "", part[40] = "";
    if (p->vpp > 1)
        snprintf(vpp, sizeof vpp, ",vpp=%d", p->vpp);
    if (p->mbs > 0)
        snprintf(mbs, sizeof mbs, ",mbs=%d", p->mbs);
    if (p->cp > 1) /* cp_comm=p2p, the ring, is --parallel's default */
        snprintf(cp, sizeof cp, ",cp=%d%s%s", p->cp,
                 p->cp_comm != APSOLVE_CP_P2P ? ",cp_comm=" : "",
                 p->cp_comm != APSOLVE_CP_P2P ? apsolve_cp_comm_name(p->cp_comm) : "");
    if (p->ep > 1)
        snprintf(ep, sizeof ep, ",ep=%d,etp=%d", p->ep, p->etp > 0 ? p->etp : p->tp);
    if (p->recompute_layers > 0)
        snprintf(part, sizeof part, ",recompute_layers=%d", p->recompute_layers);
    else if (p->offload > 0)
        snprintf(part, sizeof part, ",offload=%d", p->offload);
    snprintf(out, len, "dp=%d,tp=%d,pp=%d,zero=%d,recompute=%s%s%s%s%s%s", p->dp, p->tp, p->pp,
             p->zero, costdb_recompute_name(p->recompute), vpp, mbs, cp, ep, part);
}

void apsolve_fw_note_rule(FwSearch *S, const char *why)
{
    int i;
    for (i = 0; i < S->nrule && strcmp(S->rule[i].why, why); i++)
        ;
    if (i == S->nrule) {
        if (S->nrule == FW_REASONS)
            return;
        snprintf(S->rule[S->nrule++].why, sizeof S->rule[0].why, "%s", why);
    }
    S->rule[i].n++;
}

/* F's rules on the layout alone (its stages, and its cp and ep knobs:
 * apsolve_parallel_frameworks), every weight matrix split over the tp
 * axis, no experts, the stages' transformer blocks not judged: pricing
 * decides only how many weights it keeps whole (tp_whole), whether an MoE
 * stage is priced with the sequence split (moe, seq_split) and the
 * stages' blocks (read from the priced placements), each of which adds a
 * reason and never removes one (apsolve_frameworks), so a layout refused
 * here is refused as priced too: an exact prune. */
static int rule_allows(FwSearch *S, const ApsolveCand *c, const ApsolveParallel *par,
                       const ApsolveStageSpec *sp, size_t n, const ApsolveOptions *o)
{
    ApsolveFwStage *s = calloc(n, sizeof *s);
    ApsolveFwVerdict v;
    ApsolveFwPlan p;
    int ok;
    if (!s)
        return -1;
    for (size_t k = 0; k < n; k++)
        s[k] = (ApsolveFwStage){sp[k].end_layer - sp[k].start_layer + 1, sp[k].hosts, sp[k].gpus,
                                sp[k].logical_a, sp[k].logical_b, sp[k].force_batch_dim,
                                sp[k].variant, 0, 0, 0,
                                APSOLVE_FW_BLOCKS_LATER};
    p = (ApsolveFwPlan){s, n, o->schedule, o->virtual_stages, apsolve_fw_dtype_fp16(c->sw.dtype),
                        apsolve_zero3_schedule_of(c->sw.options)};
    apsolve_frameworks(&p, &v);
    apsolve_parallel_frameworks(par, &v); /* cp, ep: their rules take the layout alone */
    ok = (v.runs >> S->fw) & 1u;
    if (!ok)
        apsolve_fw_note_rule(S, v.why[S->fw]);
    free(s);
    return ok;
}

/* Whether F runs the layout of specs sp as priced were memory no limit:
 * priced as run with memory ignored (the lowest level that splits the
 * weights most, tp_layout.c); why not into why ("" when it does). */
static void verdict_memory_aside(FwSearch *S, const ApsolveCand *c, const ApsolveOptions *o,
                                 const ApsolveStageSpec *sp, size_t n, char *why, size_t len)
{
    ApsolveStageSpec *cp = malloc(n * sizeof *cp);
    ApsolveOptions io = *o;
    ApsolvePlan *pl = NULL;
    ApsolveFwVerdict v;
    char err[256];
    why[0] = '\0';
    if (!cp)
        return;
    memcpy(cp, sp, n * sizeof *cp);
    for (size_t k = 0; k < n; k++)
        cp[k].variant.memory_level = -1;
    io.ignore_memory = 1;
    if (apsolve_evaluate_as_run(S->r->db, c->sweep, c->p, &io, cp, n, &pl, err, sizeof err) == 0) {
        apsolve_plan_frameworks(S->r->db, c->sweep, c->sw.dtype, pl, &v);
        if (!((v.runs >> S->fw) & 1u))
            snprintf(why, len, "%s", v.why[S->fw]);
    }
    apsolve_plan_free(&pl);
    free(cp);
}

/* A layout that does not fit: the least memory its stages need at any
 * memory level of their mesh, recompute and ZeRO stage, against the
 * capacity, kept when it is the closest of its kind (tp = 1, tp > 1); for
 * the closest tp > 1 one, whether F would run it as priced memory aside. */
static void note_memory(FwSearch *S, const ApsolveCand *c, const ApsolveOptions *o,
                        const ApsolvePlan *pl, const ApsolveStageSpec *sp, const char *text)
{
    const ApsolveProblem *p = c->p;
    int i = sp[0].logical_b > 1;
    double worst = -INFINITY;
    int64_t need = 0, avail = 0;
    if (!p->memory)
        return;
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        long long least = -1;
        for (int q = 0; st->submesh >= 0 && q < p->num_configs; q++) {
            const ApsolveConfig *cf = &p->configs[(size_t)st->submesh * p->num_configs + q];
            size_t idx = apsolve_index(p, st->start_layer, st->end_layer, st->submesh, q);
            const ApsolveMemory *m = apsolve_memory_at(p, idx);
            long long nd;
            if (!apsolve_config_allowed(p, o, st->submesh, q) ||
                cf->logical_a != sp[k].logical_a || cf->logical_b != sp[k].logical_b ||
                cf->force_batch_dim != sp[k].force_batch_dim ||
                !costdb_variant_same_settings(cf->variant, sp[k].variant) ||
                isinf(apsolve_entry_cost(p, idx)))
                continue;
            nd = apsolve_stage_memory_need(apsolve_memory_rule(o), m->peak, m->initial,
                                           m->intermediate, st->in_flight);
            if (least < 0 || nd < least)
                least = nd;
        }
        if (least < 0 || st->available_memory <= 0)
            continue;
        if ((double)(least - st->available_memory) > worst) {
            worst = (double)(least - st->available_memory);
            need = least;
            avail = st->available_memory;
        }
    }
    if (isinf(worst) || (S->need[i] > 0 && worst >= S->excess[i]))
        return;
    S->excess[i] = worst;
    S->need[i] = need;
    S->avail[i] = avail;
    snprintf(S->need_eg[i], sizeof S->need_eg[i], "%s", text);
    if (i)
        verdict_memory_aside(S, c, o, sp, pl->n_stages, S->need_whole, sizeof S->need_whole);
}

/* Whether every stage of pl leaves the headroom free (the auto search's
 * budget: need <= available - reserve). */
static int keeps_headroom(const ApsolvePlan *pl)
{
    for (size_t k = 0; k < pl->n_stages; k++) {
        const ApsolveStage *st = &pl->stages[k];
        if (st->available_memory > 0 &&
            st->memory_needed > st->available_memory - st->memory_reserve)
            return 0;
    }
    return 1;
}

/* Whether a stage of pl has no finite entry (or no config) in the sweep. */
static int missing_entry(const ApsolvePlan *pl)
{
    for (size_t k = 0; k < pl->n_stages; k++)
        if (pl->stages[k].config < 0 || isinf(pl->stages[k].cost))
            return 1;
    return 0;
}

/* One layout par on candidate c (whose entries are those of par's cp and
 * ep knobs: apsolve_parallel_knobs): the exact prunes, its price as
 * --parallel prices it, F's verdict, its memory; kept when it beats the
 * best. 0, or 1 when memory runs out. */
int apsolve_fw_try_layout(FwSearch *S, const ApsolveCand *c, const ApsolveParallel *par)
{
    ApsolveRun *r = S->r;
    const ApsolveProblem *p = c->p;
    ApsolveStageSpec *sp = calloc((size_t)par->pp, sizeof *sp);
    ApsolveOptions o = c->opt;
    ApsolvePlan *pl = NULL;
    ApsolveFwVerdict v;
    size_t n = (size_t)par->pp;
    int cp = par->cp > 1 ? par->cp : 1;
    char err[256], text[160];
    int e, rc = 0, keeps;
    double price;
    if (!sp)
        return 1;
    S->st->layouts++;
    apsolve_fw_layout_text(par, text, sizeof text);
    /* as parallel_plan (session_given.c) builds and prices the --parallel plan:
     * under cp the stages of the equivalent layout (dp cp, tp) */
    if (apsolve_3d_specs(p->num_layers, p->cluster_gpus, par->dp * cp, par->tp, par->pp, sp))
        goto done; /* not a layout of this cluster: the enumeration makes none */
    if (S->sched) /* vpp= gives the zero-bubble schedule its chunks */
        o.schedule = S->sched;
    apsolve_parallel_apply(par, &o, sp, n);
    if ((e = rule_allows(S, c, par, sp, n, &o)) <= 0) {
        rc = e < 0;
        S->st->pruned_rule += e == 0;
        goto done;
    }
    if ((par->vpp > 1 || S->sched) &&
        !apsolve_schedule_valid((ApsolveSchedule)o.schedule, o.virtual_stages, o.micro_batches,
                                par->pp, err, sizeof err)) {
        /* --parallel refuses it; the plan would be infeasible (evaluate.c) */
        apsolve_fw_note_rule(S, err);
        S->st->pruned_rule++;
        goto done;
    }
    /* A stage that fits at no memory level of its mesh, recompute and ZeRO
     * stage (evaluated with any level against the raw capacity: the
     * evaluation takes one that fits wherever one does) fits at none of
     * the levels as-run pricing picks among (tp_layout.c), with or without
     * the headroom: an exact prune before the placements are read. A
     * stage without any entry is missing whatever the level. */
    e = apsolve_evaluate(p, &o, sp, n, &pl, err, sizeof err);
    if (e) {
        rc = e == APSOLVE_ENOMEM;
        goto done;
    }
    if (!pl->feasible) {
        if (missing_entry(pl)) {
            S->st->missing++;
        } else {
            S->st->pruned_memory++;
            note_memory(S, c, &o, pl, sp, text);
        }
        goto done;
    }
    /* The full estimate adds transfers and the apply-grad step (>= 0) to
     * T, and T priced as run is at least this plan's (every stage as
     * cheap or cheaper: the levels that keep the headroom are among those
     * that fit, full_estimate.c): a layout whose T here is no lower than
     * the best full estimate cannot beat it. Exact, once the best keeps
     * the headroom (one that keeps it wins over one that does not
     * whatever the price). */
    if (S->have && S->best_headroom && pl->cost >= S->best_price) {
        S->st->pruned_bound++;
        goto done;
    }
    apsolve_plan_free(&pl);
    /* priced at the levels that keep the headroom where some do (the
     * search's rule, apsolve_keep_headroom), else at those that fit */
    e = apsolve_evaluate_as_run_keep(r->db, c->sweep, p, &o, sp, n, &pl, err, sizeof err);
    if (e) {
        rc = e == APSOLVE_ENOMEM;
        goto done;
    }
    S->st->priced++;
    apsolve_plan_frameworks(r->db, c->sweep, c->sw.dtype, pl, &v);
    apsolve_parallel_frameworks(par, &v);
    if (!((v.runs >> S->fw) & 1u)) {
        /* the rule allowed the layout with every weight split: what pricing
         * added is weights whole on the tp axis (or unknown placements),
         * or what the priced stages hold (frameworks.c) */
        if (!S->whole++) {
            snprintf(S->whole_eg, sizeof S->whole_eg, "%s", text);
            snprintf(S->whole_why, sizeof S->whole_why, "%s", v.why[S->fw]);
        }
        goto done;
    }
    S->st->runs++;
    if (!pl->feasible) {
        if (!missing_entry(pl))
            note_memory(S, c, &o, pl, sp, text);
        goto done;
    }
    S->st->fit++;
    keeps = o.search_headroom && keeps_headroom(pl);
    S->st->headroom += keeps;
    /* a cp plan's stages send 1/cp of the entries' activations, as the
     * pricing step estimates it (session_price.c) */
    price = apsolve_full_price_scaled(r->db, c->sweep, pl, 1.0 / cp);
    if (!S->have || keeps > S->best_headroom ||
        (keeps == S->best_headroom && price < S->best_price)) {
        S->have = 1;
        S->best_headroom = keeps;
        S->best_price = price;
        S->best = *par;
        S->best_sched = S->sched;
    }
done:
    free(sp);
    apsolve_plan_free(&pl);
    return rc;
}
