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
 * --schedule asks for it (see try_schedules).
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
#include "session_int.h"
#include "solver_int.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define FW_REASONS 4

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

/* The search in progress: the counts it reports, the best layout so far
 * and what a refusal names. */
typedef struct Search {
    ApsolveRun *r;
    int fw;
    ApsolveFwSearch *st;
    int have, best_headroom;
    double best_price;
    ApsolveParallel best;
    int sched, best_sched;            /* a zero-bubble schedule tried (try_schedules), the
                                       * best's; 0: the layout's own (1F1B or interleaved) */
    struct {
        char why[APSOLVE_FW_WHY];
        long n;
    } rule[FW_REASONS];               /* F's refusals before pricing, distinct reasons */
    int nrule;
    long whole;                       /* tp > 1 layouts priced with weights whole on the tp axis */
    char whole_eg[160], whole_why[APSOLVE_FW_WHY]; /* one of them, F's reason */
    double excess[2];                 /* tp = 1, tp > 1: least memory over the capacity */
    int64_t need[2], avail[2];
    char need_eg[2][160];
    char need_whole[APSOLVE_FW_WHY];  /* the closest tp > 1 layout, memory aside, keeps weights
                                       * whole on the tp axis: F's reason; "" when not */
    int has_none;                     /* the candidate's sweep holds recompute none */
    ApsolveProblem *scratch;          /* Megatron's recompute_layers and offload entries
                                       * (apsolve_fw_partial), for one candidate's layout */
    int twin_only;                    /* the candidate's size does not divide G: cp layouts
                                       * whose m / cp does, only (session_cp.c) */
} Search;

/* "dp=2,tp=4,pp=1,zero=1,recompute=full[,vpp=2][,mbs=1][,recompute_layers=1]": --parallel's
 * text. */
static void layout_text(const ApsolveParallel *p, char *out, size_t len)
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

static void note_rule(Search *S, const char *why)
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
static int rule_allows(Search *S, const ApsolveCand *c, const ApsolveParallel *par,
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
        note_rule(S, v.why[S->fw]);
    free(s);
    return ok;
}

/* Whether F runs the layout of specs sp as priced were memory no limit:
 * priced as run with memory ignored (the lowest level that splits the
 * weights most, tp_layout.c); why not into why ("" when it does). */
static void verdict_memory_aside(Search *S, const ApsolveCand *c, const ApsolveOptions *o,
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
static void note_memory(Search *S, const ApsolveCand *c, const ApsolveOptions *o,
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
            const ApsolveMemory *m = &p->memory[idx];
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
static int try_layout(Search *S, const ApsolveCand *c, const ApsolveParallel *par)
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
    layout_text(par, text, sizeof text);
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
        note_rule(S, err);
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

static int try_one(void *S, const ApsolveCand *c, ApsolveParallel *par)
{
    return try_layout(S, c, par);
}

/* A layout as the sweep stores its variant (try_layout) and, for
 * Megatron-LM, with the knobs it runs beside that variant: the first K
 * layers of each chunk recomputed, the first N layers' activations
 * offloaded (apsolve_fw_partial, session_fw_partial.c). 0, or 1. */
static int try_layout_knobs(Search *S, const ApsolveCand *c, ApsolveParallel *par)
{
    if (try_layout(S, c, par))
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
static int try_schedules(Search *S, const ApsolveCand *c, ApsolveParallel *par)
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
static int try_variants(Search *S, const ApsolveCand *c, ApsolveParallel *par, int zero)
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
static int try_knobs(Search *S, const ApsolveCand *c, ApsolveParallel *par)
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
            note_rule(S, v.why[S->fw]);
            continue;
        }
        if (!v.runs) { /* cp: every ZeRO stage alike */
            S->st->layouts++;
            S->st->pruned_rule++;
            note_rule(S, v.why[S->fw]);
            break;
        }
        layout_text(par, text, sizeof text);
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
                    note_rule(S, err.msg);
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
static int comm_runs(const Search *S, const ApsolveCand *c, const ApsolveParallel *par,
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
static int search_cand(Search *S, const ApsolveCand *c, int64_t m)
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
static int refuse(Search *S)
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
    Search S;
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
    layout_text(&S.best, S.st->layout, sizeof S.st->layout);
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
