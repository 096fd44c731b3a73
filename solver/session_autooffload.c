/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Activation offload in the auto search (session_int.h, docs/solver.md
 * "Activation offload in the auto search"): beside the plan the search
 * found, for each N of 1 .. L - 1, the DP's best one-stage plan (pp = 1:
 * --max-stages 1) of the whole cluster whose entries are the stored
 * recompute=none entries of all L layers with the first N layers' saved
 * activations in host memory (apsolve_offload_entry, the pricing
 * --parallel ...,offload=N uses: activation_offload.h), each solved on a
 * problem of that one range and those pairs alone (offload_one_stage.h),
 * the winner's once more on the whole table. Only the plans
 * Megatron-Core core_v0.19.0 runs with --cpu-offloading-num-layers N: its
 * TransformerConfig.__post_init__ refuses a pipeline ("Currently there is
 * no support for Pipeline parallelism with CPU offloading") and
 * recomputation ("CPU offloading does not work when activation
 * recomputation is enabled") (megatron/core/transformer/
 * transformer_config.py), so every other entry of the one stage is left
 * out; a spec without a host link (no hardware row's host_link_bandwidth)
 * prices none. Priced under 1F1B with one model chunk: one stage runs its
 * micro-batches one after another (Megatron-LM's
 * forward_backward_no_pipelining). The best of them replaces the plan only
 * when it is better by the search's own rule (the headroom kept first,
 * then the objective), so a plan offload does not improve stays exactly
 * what it was. It runs after the recompute-layers step, on the winner's
 * candidate (its micro-batch size), before the cp and ep steps, whose
 * plans then compete with its plan; it composes no cp or ep entries
 * (--parallel does not either). Never with --inference, --batch, a
 * --parallel layout, or a --schedule Megatron-LM does not run.
 */
#include <math.h>
#include <stdlib.h>

#include "activation_offload.h"
#include "apsolve.h"
#include "costdb.h"
#include "offload_one_stage.h"
#include "schedule.h"
#include "session.h"
#include "session_int.h"

int apsolve_run_auto_offload(ApsolveRun *r)
{
    const ApsolveRequest *a = r->a;
    const ApsolvePlan *plain = r->s->autop;
    /* no plan fits without offload: the main sweep's candidate */
    const ApsolveCand *base = plain ? &r->auto_c : &r->main_c;
    const ApsolveProblem *p = base->p;
    ApsolveOffloadOneStage x;
    ApsolveOptions o0, ow;
    ApsolveAutoStep st = {.plain = plain, .plain_h = plain ? r->auto_c.opt.search_headroom : 0};
    ApsolveProblem *q = NULL;
    ApsolvePlan *whole = NULL;
    int L, e, made;
    char why[400];
    if (a->parallel || a->opt.inference || a->batch > 0 || !p || !p->memory ||
        !p->times || p->num_layers < 2)
        return 0;
    if (a->schedule_set && a->schedule != APSOLVE_SCHEDULE_1F1B &&
        a->schedule != APSOLVE_SCHEDULE_INTERLEAVED)
        return 0;
    L = p->num_layers;
    o0 = base->opt;
    o0.max_stages = 1;
    o0.schedule = APSOLVE_SCHEDULE_1F1B;
    o0.virtual_stages = 1;
    o0.whole_chunks = 0;
    /* each N's one-stage plan on its own problem (offload_one_stage.h):
     * no host link, no per-layer record, no pair Megatron-Core offloads
     * from: no offload plan */
    e = apsolve_offload_one_stage_new(r->db, base->sweep, p, &x, why, sizeof why);
    if (e == APSOLVE_ENOMEM)
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "out of memory");
    if (e)
        return 0;
    for (int n = 1; n < L; n++) {
        ApsolvePlan *pl = NULL;
        ApsolveOptions o = o0;
        if (apsolve_offload_one_stage_compose(&x, p, n, why, sizeof why))
            break;
        e = apsolve_offload_one_stage_solve(&x, &o, &pl);
        if ((e = apsolve_auto_step_offer(&st, e, &pl, &o, n)) < 0) {
            apsolve_offload_one_stage_free(&x);
            apsolve_auto_step_free(&st);
            return apsolve_fail(a, APSOLVE_ERROR_FAILED, "offload=%d: %s", n,
                                apsolve_strerror(e));
        }
    }
    if (!a->quiet && st.priced)
        apsolve_say(a, "activation offload (one stage, the first N of its %d layers' saved "
                    "activations in host memory, N = 1 .. %d): %d plan%s fit%s; %s", L, L - 1,
                    st.priced, st.priced == 1 ? "" : "s", st.priced == 1 ? "s" : "",
                    st.best ? "one beats the plan without it" : "none beats the plan without it");
    if (!st.best) {
        apsolve_offload_one_stage_free(&x);
        return 0;
    }
    /* the winner's N on the whole table, as the plan and its candidate
     * are kept: the same plan and objective, the search's counts the
     * whole table's */
    ow = o0;
    made = apsolve_offload_one_stage_whole(&x.src, p, st.best_n, &q, why, sizeof why);
    apsolve_offload_one_stage_free(&x);
    e = made ? made : apsolve_solve_keep_headroom(q, &ow, &whole);
    if (e || !whole->feasible || ow.search_headroom != st.best_h ||
        whole->total_cost != st.best->total_cost || whole->cost != st.best->cost) {
        apsolve_plan_free(&whole);
        apsolve_problem_free(&q);
        apsolve_auto_step_free(&st);
        return apsolve_fail(a, APSOLVE_ERROR_FAILED, "offload=%d: %s", st.best_n,
                            made && made != APSOLVE_ENOMEM ? why
                            : e ? apsolve_strerror(e)
                                : "the whole table's plan is not the one-stage problem's");
    }
    apsolve_plan_free(&st.best);
    st.best = whole;
    st.bestq = q;
    st.besto = ow;
    if (!a->quiet && plain)
        apsolve_say(a, "activation offload: N = %d: objective %.6g s (%.6g s without it)%s",
                    st.best_n, st.best->total_cost, plain->total_cost,
                    st.best_h > st.plain_h ? ", keeping the memory headroom" : "");
    else if (!a->quiet)
        apsolve_say(a, "activation offload: N = %d: objective %.6g s (no plan fits without it)",
                    st.best_n, st.best->total_cost);
    /* the plan's figures and its per-stage lines, as --parallel's */
    apsolve_offload_stages_say(a, r->db, &base->sw, p, st.best_n, st.best);
    apsolve_auto_step_install(r, &st, base);
    return 0;
}
