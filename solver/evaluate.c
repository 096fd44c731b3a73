/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pricing plans against the cost table: the stage fields every plan
 * carries (cost, memory need and headroom), the objective of a finished
 * plan, evaluation of a given plan (Alpa's manual and uniform stage options,
 * Megatron-style 3-D parallelism), and the explanation of an infeasible
 * problem that names its tightest constraint.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "plural.h"
#include "schedule.h"
#include "solver_int.h"

double apsolve_entry_cost(const ApsolveProblem *p, size_t idx)
{
    /* an index of apsolve_index over the problem's own ranges */
    assert(p && idx < apsolve_problem_cells(p));
    return apsolve_cell_cost(p, idx, idx % ((size_t)p->num_submeshes * (size_t)p->num_configs));
}

int apsolve_config_allowed(const ApsolveProblem *p, const ApsolveOptions *opt, int s, int c)
{
    const ApsolveConfig *cf;
    assert(p && opt && s >= 0 && s < p->num_submeshes && c >= 0 && c < p->num_configs);
    cf = &p->configs[(size_t)s * (size_t)p->num_configs + (size_t)c];
    return cf->valid && (opt->objective == APSOLVE_OBJECTIVE_FULL ||
                         costdb_variant_is_plain(cf->variant));
}

ApsolveMemoryRule apsolve_memory_rule(const ApsolveOptions *opt)
{
    return opt->objective == APSOLVE_OBJECTIVE_FULL ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
}

double apsolve_in_flight(const ApsolveOptions *opt, int n, int k)
{
    if (n < 1 || k < 0 || k >= n)
        return (double)(n - k);
    return apsolve_stage_in_flight_a2a(apsolve_memory_rule(opt), (ApsolveSchedule)opt->schedule,
                                       opt->virtual_stages, opt->micro_batches, n, k,
                                       opt->moe_a2a_overlap);
}

int64_t apsolve_memory_reserve(const ApsolveOptions *opt, int64_t avail)
{
    long double r;
    if (!opt || avail <= 0)
        return 0;
    if (opt->headroom_bytes > 0)
        return opt->headroom_bytes < avail ? opt->headroom_bytes : avail;
    if (!(opt->headroom_percent > 0))
        return 0;
    r = (long double)avail * (long double)opt->headroom_percent / 100.0L;
    return r >= (long double)avail ? avail : (int64_t)llroundl(r);
}

int apsolve_keep_headroom(ApsolveOptions *opt, ApsolvePlanMaker make, void *ctx,
                          ApsolvePlan **out)
{
    int e;
    *out = NULL;
    opt->search_headroom = opt->headroom_bytes > 0 || opt->headroom_percent > 0;
    e = make(ctx, opt, out);
    if (opt->search_headroom &&
        (e == APSOLVE_EINFEASIBLE || (e == APSOLVE_OK && *out && !(*out)->feasible))) {
        apsolve_plan_free(out);
        opt->search_headroom = 0;
        e = make(ctx, opt, out);
    }
    return e;
}

static int solve_maker(void *ctx, const ApsolveOptions *opt, ApsolvePlan **out)
{
    return apsolve_solve((const ApsolveProblem *)ctx, opt, out);
}

int apsolve_solve_keep_headroom(const ApsolveProblem *p, ApsolveOptions *opt,
                                ApsolvePlan **out)
{
    return apsolve_keep_headroom(opt, solve_maker, (void *)p, out);
}

/* The memory a stage may need under opt: avail less the headroom when the
 * search keeps it (a budget, not a second figure: the need is the same). */
int64_t apsolve_search_budget(const ApsolveOptions *opt, int64_t avail)
{
    return opt->search_headroom ? avail - apsolve_memory_reserve(opt, avail) : avail;
}

/* need <= budget under the plan's memory rule with f in flight, budget
 * being apsolve_search_budget(opt, avail), worked out once per entry by the caller
 * (its long-double rounding was a search's top memory-test cost). */
static int fits(const ApsolveOptions *opt, const ApsolveMemory *m, int64_t avail, int64_t budget,
                double f)
{
    if (avail <= 0)
        return 1;
    return apsolve_stage_memory_fits(apsolve_memory_rule(opt), m->peak, m->initial,
                                     m->intermediate, f, budget);
}

int apsolve_entry_fit_prefix(const ApsolveMemory *m, const ApsolveOptions *opt, int64_t budget,
                             const double *f, int nf)
{
    if (m->avail <= 0) /* fits() says every count fits */
        return nf;
    return apsolve_stage_memory_fit_prefix(apsolve_memory_rule(opt), m->peak, m->initial,
                                           m->intermediate, budget, f, nf);
}

int apsolve_entry_mnss(const ApsolveProblem *p, const ApsolveOptions *opt, size_t idx, int n)
{
    return apsolve_entry_mnss_within(
        p, opt, idx, n,
        p->memory ? apsolve_search_budget(opt, apsolve_memory_at(p, idx)->avail) : 0);
}

int apsolve_entry_mnss_within(const ApsolveProblem *p, const ApsolveOptions *opt, size_t idx,
                              int n, int64_t budget)
{
    const ApsolveMemory *m = p->memory ? apsolve_memory_at(p, idx) : NULL;
    int lo, hi;
    if (opt->moe_a2a_overlap && opt->schedule == APSOLVE_SCHEDULE_1F1B) {
        /* Megatron-Core runs the MoE all-to-all overlap under 1F1B only
         * without pipelining (apsolve_schedule_in_flight_a2a, NaN for more
         * stages): the entry is the whole pipeline or nothing, with its
         * min(B, 2) micro-batches in flight */
        if (!m)
            return p->max_n_succ_stages[idx] >= 0 ? 0 : -1;
        return fits(opt, m, m->avail, budget, apsolve_in_flight(opt, 1, 0)) ? 0 : -1;
    }
    if (opt->schedule == APSOLVE_SCHEDULE_1F1B || !p->memory) {
        int mnss = p->max_n_succ_stages[idx];
        if (m && budget != m->avail) /* Alpa's count on the budget the headroom leaves */
            mnss = apsolve_max_n_succ_stages(budget, m->peak, m->initial, m->intermediate);
        if (opt->objective != APSOLVE_OBJECTIVE_FULL || !p->memory ||
            mnss == APSOLVE_UNBOUNDED)
            return mnss;
        /* s stages from it to the end keep min(s, B) in flight, and the
         * peak holds one of them: any s fits when B does; else s fits when
         * peak + initial + (s - 1) x intermediate <= avail, one more than
         * Alpa's count, when the peak itself fits */
        if (!fits(opt, m, m->avail, budget, 1.0))
            return -1;
        if (fits(opt, m, m->avail, budget, (double)opt->micro_batches))
            return APSOLVE_UNBOUNDED;
        return mnss + 1 >= APSOLVE_UNBOUNDED ? APSOLVE_UNBOUNDED : mnss + 1;
    }
    if (opt->schedule == APSOLVE_SCHEDULE_GPIPE)
        return fits(opt, m, m->avail, budget, (double)opt->micro_batches) ? APSOLVE_UNBOUNDED
                                                                          : -1;
    /* Interleaved: in-flight grows with the stages after it; the largest s
     * (stages from it to the end) that fits, by bisection over 1..n. */
    if (n < 1 || !fits(opt, m, m->avail, budget, apsolve_in_flight(opt, n, n - 1)))
        return -1;
    lo = 1;
    hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (fits(opt, m, m->avail, budget, apsolve_in_flight(opt, n, n - mid)))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo == n ? APSOLVE_UNBOUNDED : lo - 1;
}

void apsolve_stage_fill(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolveStage *st,
                        int succ, int n)
{
    size_t idx;
    /* a stage of the solver's plan or of a given plan apsolve_evaluate
     * checked: its layers in range, its submesh and config found or -1 */
    assert(p && opt && st && n >= 1 && st->submesh < p->num_submeshes &&
           st->config < p->num_configs &&
           (st->submesh < 0 || st->config < 0 ||
            (st->start_layer >= 0 && st->start_layer <= st->end_layer &&
             st->end_layer < p->num_layers)));
    st->succ_stages = succ;
    st->cost = st->fwd_cost = st->bwd_cost = INFINITY;
    st->wgrad_cost = -1;
    st->apply_cost = -1;
    st->max_n_succ_stages = -1;
    st->memory_ok = 0;
    st->memory_needed = st->available_memory = st->memory_reserve = 0;
    st->in_flight = apsolve_in_flight(opt, n, n - succ);
    if (st->submesh >= 0) {
        st->hosts = p->submeshes[st->submesh].hosts;
        st->gpus = p->submeshes[st->submesh].gpus;
    }
    if (st->submesh < 0 || st->config < 0)
        return;
    {
        const ApsolveConfig *cf = &p->configs[st->submesh * p->num_configs + st->config];
        st->logical_a = cf->logical_a;
        st->logical_b = cf->logical_b;
        st->force_batch_dim = cf->force_batch_dim;
        st->variant = cf->variant;
    }
    idx = apsolve_index(p, st->start_layer, st->end_layer, st->submesh, st->config);
    st->cost = apsolve_entry_cost(p, idx);
    st->apply_cost = p->apply_cost[idx];
    if (p->times && !isinf(st->cost)) {
        const ApsolveTimes *t = apsolve_times_at(p, idx);
        st->fwd_cost = t->fwd;
        st->bwd_cost = t->bwd;
        st->wgrad_cost = t->wgrad;
    } else if (!isinf(st->cost)) {
        st->fwd_cost = st->cost;
        st->bwd_cost = 0;
    }
    st->max_n_succ_stages = apsolve_entry_mnss(p, opt, idx, n);
    st->memory_ok = opt->ignore_memory || opt->inference ||
                    (int64_t)succ - 1 <= (int64_t)st->max_n_succ_stages;
    if (p->memory) {
        const ApsolveMemory *m = apsolve_memory_at(p, idx);
        st->available_memory = opt->memory_budget > 0 ? opt->memory_budget : m->avail;
        st->memory_reserve = apsolve_memory_reserve(opt, st->available_memory);
        st->memory_needed = apsolve_stage_memory_need(apsolve_memory_rule(opt), m->peak,
                                                      m->initial, m->intermediate, st->in_flight);
    }
}

double apsolve_stages_zb_saving(int schedule, int v, int B, const ApsolveStage *st, size_t n)
{
    double *f = NULL, *b = NULL, *w = NULL, t = NAN;
    if (!apsolve_schedule_zero_bubble(schedule))
        return 0;
    /* the schedule's own figure (schedule.h), on the stages' split */
    f = malloc((n ? n : 1) * sizeof *f);
    b = malloc((n ? n : 1) * sizeof *b);
    w = malloc((n ? n : 1) * sizeof *w);
    if (f && b && w) {
        for (size_t k = 0; k < n; k++)
            f[k] = st[k].fwd_cost, b[k] = st[k].bwd_cost, w[k] = st[k].wgrad_cost;
        t = apsolve_schedule_zb_saving((ApsolveSchedule)schedule, v, B, f, b, w, n);
    }
    free(f);
    free(b);
    free(w);
    return t;
}

void apsolve_plan_price(const ApsolveProblem *p, const ApsolveOptions *opt, ApsolvePlan *plan)
{
    double sum = 0, mx = 0, apply = 0;
    int ok = plan->n_stages > 0, dev = 0, v = apsolve_virtual(opt);
    size_t k;
    for (k = plan->n_stages; k-- > 0;) {
        const ApsolveStage *st = &plan->stages[k];
        sum += st->cost;
        if (st->cost > mx || isinf(st->cost))
            mx = st->cost;
        if (st->apply_cost > apply)
            apply = st->apply_cost;
        dev += st->hosts * st->gpus;
        if (isinf(st->cost) || !st->memory_ok ||
            (!opt->inference && !apsolve_chunks_whole(opt, st->start_layer, st->end_layer)))
            ok = 0;
    }
    if (dev != p->num_devices)
        ok = 0;
    if (opt->max_stages > 0 && plan->n_stages > (size_t)opt->max_stages)
        ok = 0;
    if (!opt->inference && !apsolve_schedule_valid((ApsolveSchedule)opt->schedule, v,
                                                   opt->micro_batches, (int)plan->n_stages,
                                                   NULL, 0))
        ok = 0;
    plan->sum_cost = sum;
    plan->max_stage_cost = mx;
    plan->devices_used = dev;
    plan->feasible = ok;
    plan->micro_batches = opt->micro_batches;
    plan->inference = opt->inference;
    plan->objective = opt->objective;
    plan->schedule = opt->schedule;
    plan->virtual_stages = v;
    /* the schedule's T (schedule.h: Alpa's, or the interleaved one's) */
    if (opt->inference)
        plan->cost = (double)plan->n_stages * mx;
    else
        plan->cost = apsolve_schedule_base_time(v, opt->micro_batches, sum, mx);
    /* zero-bubble: that T less what the deferred W fill of its bubble; NaN
     * (never feasible) without every stage's split */
    if (!opt->inference)
        plan->cost -= apsolve_stages_zb_saving(opt->schedule, v, opt->micro_batches,
                                               plan->stages, plan->n_stages);
    plan->apply_cost = opt->objective == APSOLVE_OBJECTIVE_FULL && !opt->inference ? apply : 0;
    plan->total_cost = plan->cost + plan->apply_cost;
    /* finite stages can still sum to +inf (two of 1e308 s): never feasible */
    if (!isfinite(plan->cost) || !isfinite(plan->total_cost))
        plan->feasible = 0;
}

int apsolve_find_submesh(const ApsolveProblem *p, int hosts, int gpus)
{
    for (int s = 0; s < p->num_submeshes; s++)
        if (p->submeshes[s].hosts == hosts && p->submeshes[s].gpus == gpus)
            return s;
    return -1;
}

/* The matching config for layers i..j at a position with succ stages from
 * it to the end of n: the lowest cost (lowest index on ties) among those
 * that fit in memory there under the full objective, else among all; a
 * matching config without a finite entry if none is finite. */
static int find_config(const ApsolveProblem *p, const ApsolveOptions *opt, int s, int i, int j,
                       const ApsolveStageSpec *sp, int succ, int n)
{
    int best = -1, best_fit = 0;
    double best_cost = INFINITY;
    for (int c = 0; c < p->num_configs; c++) {
        const ApsolveConfig *cf = &p->configs[s * p->num_configs + c];
        size_t idx = apsolve_index(p, i, j, s, c);
        double cost;
        int fit;
        if (!apsolve_config_allowed(p, opt, s, c))
            continue;
        if (sp->logical_a > 0 &&
            (cf->logical_a != sp->logical_a || cf->logical_b != sp->logical_b))
            continue;
        if (sp->force_batch_dim != -2 && sp->logical_a > 0 &&
            cf->force_batch_dim != sp->force_batch_dim)
            continue;
        if (!costdb_variant_matches(sp->variant, cf->variant))
            continue;
        cost = apsolve_entry_cost(p, idx);
        fit = opt->objective == APSOLVE_OBJECTIVE_FULL && !isinf(cost) &&
              (opt->ignore_memory || opt->inference ||
               succ - 1 <= apsolve_entry_mnss(p, opt, idx, n));
        if (best < 0 || fit > best_fit || (fit == best_fit && cost < best_cost)) {
            best = c;
            best_cost = cost;
            best_fit = fit;
        }
    }
    return best;
}

int apsolve_evaluate(const ApsolveProblem *p, const ApsolveOptions *opt,
                     const ApsolveStageSpec *specs, size_t n, ApsolvePlan **out,
                     char *errbuf, size_t errlen)
{
    ApsolvePlan *plan = NULL;
    double t0 = costdb_monotonic_seconds();
    int next = 0;
    size_t k;

    if (!p || !opt || !specs || !out || n == 0 || opt->micro_batches < 1)
        return APSOLVE_EINVAL;
    *out = NULL;
    for (k = 0; k < n; k++) {
        if (specs[k].start_layer != next || specs[k].end_layer < specs[k].start_layer ||
            specs[k].end_layer >= p->num_layers) {
            if (errbuf)
                snprintf(errbuf, errlen,
                         "stage %zu covers layers %d..%d; stages must cover layers 0..%d "
                         "contiguously, in order", k, specs[k].start_layer,
                         specs[k].end_layer, p->num_layers - 1);
            return APSOLVE_EINVAL;
        }
        next = specs[k].end_layer + 1;
    }
    if (next != p->num_layers) {
        if (errbuf)
            snprintf(errbuf, errlen, "the stages cover layers 0..%d but the model has %d layers",
                     next - 1, p->num_layers);
        return APSOLVE_EINVAL;
    }
    plan = calloc(1, sizeof *plan);
    if (!plan || !(plan->stages = calloc(n, sizeof *plan->stages))) {
        free(plan);
        return APSOLVE_ENOMEM;
    }
    plan->n_stages = n;
    for (k = 0; k < n; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        ApsolveStage *st = &plan->stages[k];
        st->start_layer = sp->start_layer;
        st->end_layer = sp->end_layer;
        st->hosts = sp->hosts;
        st->gpus = sp->gpus;
        st->logical_a = sp->logical_a;
        st->logical_b = sp->logical_b;
        st->force_batch_dim = sp->force_batch_dim < -1 ? -1 : sp->force_batch_dim;
        st->submesh = apsolve_find_submesh(p, sp->hosts, sp->gpus);
        st->config = st->submesh < 0 ? -1
                                      : find_config(p, opt, st->submesh, sp->start_layer,
                                                    sp->end_layer, sp, (int)(n - k), (int)n);
        apsolve_stage_fill(p, opt, st, (int)(n - k), (int)n);
    }
    apsolve_plan_price(p, opt, plan);
    plan->solve_seconds = costdb_monotonic_seconds() - t0;
    *out = plan;
    return APSOLVE_OK;
}

int apsolve_uniform_specs(int num_layers, int k, int hosts, int gpus, int logical_a,
                          int logical_b, int force_batch_dim, ApsolveStageSpec *out)
{
    int start = 0;
    if (k < 1 || k > num_layers || !out)
        return APSOLVE_EINVAL;
    for (int s = 0; s < k; s++) {
        int len = num_layers / k + (s < num_layers % k ? 1 : 0);
        out[s].start_layer = start;
        out[s].end_layer = start + len - 1;
        out[s].hosts = hosts;
        out[s].gpus = gpus;
        out[s].logical_a = logical_a;
        out[s].logical_b = logical_b;
        out[s].force_batch_dim = force_batch_dim;
        out[s].variant = (CostdbVariant){-1, -1, -1};
        start += len;
    }
    return APSOLVE_OK;
}

int apsolve_3d_specs(int num_layers, int cluster_gpus, int dp, int tp, int pp,
                     ApsolveStageSpec *out)
{
    int dev = dp * tp, hosts = 1, gpus = dev;
    if (dp < 1 || tp < 1 || pp < 1 || cluster_gpus < 1)
        return APSOLVE_EINVAL;
    if (dev > cluster_gpus) {
        if (dev % cluster_gpus)
            return APSOLVE_EINVAL;
        hosts = dev / cluster_gpus;
        gpus = cluster_gpus;
    }
    if (apsolve_uniform_specs(num_layers, pp, hosts, gpus, dp, tp, 0, out))
        return APSOLVE_EINVAL;
    for (int s = 0; s < pp; s++)
        out[s].variant.recompute = out[s].variant.zero = 0;
    return APSOLVE_OK;
}

static double gib(int64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

/* Layers that no finite entry covers, as "a-b, c" ranges; 0 if none. */
static int uncovered_layers(const ApsolveProblem *p, const ApsolveOptions *opt, char *buf,
                            size_t len, int need_memory)
{
    int L = p->num_layers, found = 0, run = -1;
    size_t used = 0;
    buf[0] = '\0';
    for (int l = 0; l <= L; l++) {
        int cov = 0;
        for (int i = 0; l < L && i <= l && !cov; i++)
            for (int j = l; j < L && !cov; j++)
                for (int s = 0; s < p->num_submeshes && !cov; s++) {
                    if (p->submeshes[s].hosts * p->submeshes[s].gpus > p->num_devices)
                        continue;
                    for (int c = 0; c < p->num_configs && !cov; c++) {
                        size_t idx = apsolve_index(p, i, j, s, c);
                        if (!apsolve_config_allowed(p, opt, s, c))
                            continue;
                        if (!isinf(apsolve_entry_cost(p, idx)) &&
                            (!need_memory || opt->ignore_memory || opt->inference ||
                             apsolve_entry_mnss(p, opt, idx, 1) >= 0))
                            cov = 1;
                    }
                }
        if (l < L && !cov && run < 0)
            run = l;
        if ((l == L || cov) && run >= 0) {
            int w = run == l - 1 ? snprintf(buf + used, len - used, "%s%d", found ? ", " : "", run)
                                 : snprintf(buf + used, len - used, "%s%d-%d",
                                            found ? ", " : "", run, l - 1);
            if (w > 0 && (size_t)w < len - used)
                used += (size_t)w;
            found = 1;
            run = -1;
        }
    }
    return found;
}

/* Solves p with every entry's available memory set to budget (bytes per
 * device): a copy of the problem whose memory figures are rebuilt in mem
 * (p's memory table's n, behind its slots: figs[0], every cell's without
 * figures, included) and its mnss (n cells). */
static int solve_at_budget(const ApsolveProblem *p, const ApsolveOptions *opt, int64_t budget,
                           ApsolveMemory *mem, int *mnss, size_t n, ApsolvePlan **out)
{
    ApsolveProblem q = *p;
    ApsolveOptions o = *opt;
    ApsolveMemoryTable t = *p->memory;
    for (size_t i = 0; i < t.n; i++) {
        mem[i] = t.figs[i];
        mem[i].avail = budget;
    }
    t.figs = mem;
    q.memory = &t;
    for (size_t i = 0; i < n; i++) {
        const ApsolveMemory *m = apsolve_memory_at(&q, i);
        mnss[i] = apsolve_max_n_succ_stages(budget, m->peak, m->initial, m->intermediate);
    }
    q.max_n_succ_stages = mnss;
    o.ignore_memory = 0;
    o.memory_budget = budget;
    return apsolve_solve(&q, &o, out);
}

/* The explanation when memory is what no plan satisfies: the least memory
 * per device any plan needs. A plan exists once every entry may use the
 * memory the fastest memory-blind plan needs (hi); bisection on the budget
 * (each step one solve) narrows [lo, hi] to 0.1 %, and the plan found at hi
 * is quoted with its exact need, so the figure is never below the true
 * minimum and at most 0.1 % above it. Falls back to the worst stage of the
 * fastest plan when the problem has no memory statistics. */
static void least_memory_explain(const ApsolveProblem *p, const ApsolveOptions *opt, char *buf,
                                 size_t len)
{
    ApsolveOptions relaxed = *opt, strict = *opt;
    ApsolvePlan *plan = NULL, *best = NULL;
    ApsolveMemory *mem = NULL;
    int *mnss = NULL;
    size_t n = apsolve_problem_cells(p);
    int64_t lo = 0, hi = 0, avail = 0, need = 0;
    size_t wk = 0;
    relaxed.ignore_memory = 1;
    strict.ignore_memory = 0;
    if (apsolve_solve(p, &relaxed, &plan) != APSOLVE_OK) {
        snprintf(buf, len, "no feasible plan within the memory limits");
        return;
    }
    /* the memory-blind plan under the memory rule: its worst stage */
    for (size_t k = 0; k < plan->n_stages; k++) {
        ApsolveStage *st = &plan->stages[k];
        apsolve_stage_fill(p, &strict, st, st->succ_stages, (int)plan->n_stages);
        if (st->memory_needed > hi)
            hi = st->memory_needed, wk = k;
        if (st->available_memory > avail)
            avail = st->available_memory;
    }
    if (!p->memory || hi <= 0 || avail <= 0) {
        const ApsolveStage *w = &plan->stages[wk];
        snprintf(buf, len, "memory: stage %zu (layers %d-%d on (%d, %d)) has %d %s from "
                 "it to the end but fits at most %d; no plan fits in memory", wk,
                 w->start_layer, w->end_layer, w->hosts, w->gpus, w->succ_stages,
                 costdb_plural(w->succ_stages, "stage", "stages"), w->max_n_succ_stages + 1);
        apsolve_plan_free(&plan);
        return;
    }
    apsolve_plan_free(&plan);
    mem = malloc(p->memory->n * sizeof(*mem));
    mnss = malloc(n * sizeof(*mnss));
    if (!mem || !mnss || solve_at_budget(p, opt, hi, mem, mnss, n, &best) != APSOLVE_OK) {
        snprintf(buf, len, "memory: the fastest plan needs %.3f GiB per device but %.3f GiB are "
                 "available; no plan fits in memory", gib(hi), gib(avail));
        goto cleanup;
    }
    lo = avail < hi ? avail : 0; /* nothing fits at the memory available */
    while (hi - lo > hi / 1000 + 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (solve_at_budget(p, opt, mid, mem, mnss, n, &plan) == APSOLVE_OK) {
            apsolve_plan_free(&best);
            best = plan;
            plan = NULL;
            hi = mid;
        } else {
            apsolve_plan_free(&plan);
            lo = mid;
        }
    }
    /* the exact need of the plan found: its largest stage */
    for (size_t k = 0; k < best->n_stages; k++)
        if (best->stages[k].memory_needed > need)
            need = best->stages[k].memory_needed, wk = k;
    {
        const ApsolveStage *w = &best->stages[wk];
        char stages[160];
        size_t used = 0;
        stages[0] = '\0';
        for (size_t k = 0; k < best->n_stages && used < sizeof(stages); k++) {
            int wr = snprintf(stages + used, sizeof(stages) - used, "%s%d-%d on (%d, %d)",
                              k ? ", " : "", best->stages[k].start_layer,
                              best->stages[k].end_layer, best->stages[k].hosts,
                              best->stages[k].gpus);
            if (wr < 0 || (size_t)wr >= sizeof(stages) - used)
                break;
            used += (size_t)wr;
        }
        snprintf(buf, len, "memory: the plan needing the least memory needs %.3f GiB per device "
                 "(stage %zu, layers %d-%d on (%d, %d); stages %s) but %.3f GiB are available; "
                 "no plan fits in memory", gib(need), wk, w->start_layer, w->end_layer,
                 w->hosts, w->gpus, stages, gib(avail));
    }
cleanup:
    apsolve_plan_free(&best);
    apsolve_plan_free(&plan);
    free(mem);
    free(mnss);
}

void apsolve_explain(const ApsolveProblem *p, const ApsolveOptions *opt, char *buf, size_t len)
{
    char layers[256];
    ApsolveOptions relaxed = *opt;
    ApsolvePlan *plan = NULL;
    int rc;

    if (!buf || !len)
        return;
    if (uncovered_layers(p, opt, layers, sizeof layers, 0)) {
        snprintf(buf, len, "layers %s have no finite entry in the sweep (every profile of a "
                 "range containing them is missing, failed or out of memory)", layers);
        return;
    }
    if (uncovered_layers(p, opt, layers, sizeof layers, 1)) {
        /* and how much memory would do: the least any plan needs */
        char least[512];
        least_memory_explain(p, opt, least, sizeof least);
        snprintf(buf, len, "layers %s: every entry covering them exceeds the available memory "
                 "even as the last stage (peak + initial + 1 x intermediate > available); %s",
                 layers, least);
        return;
    }
    relaxed.ignore_memory = 1;
    relaxed.max_stages = 0;
    rc = apsolve_solve(p, &relaxed, &plan);
    if (rc == APSOLVE_EINFEASIBLE) {
        snprintf(buf, len, "no combination of finite entries covers layers 0..%d with exactly "
                 "%d x %d = %d devices", p->num_layers - 1, p->cluster_hosts, p->cluster_gpus,
                 p->num_devices);
        return;
    }
    if (rc) {
        snprintf(buf, len, "%s", apsolve_strerror(rc));
        return;
    }
    apsolve_plan_free(&plan);
    relaxed.max_stages = opt->max_stages;
    if (opt->max_stages > 0 && apsolve_solve(p, &relaxed, &plan) == APSOLVE_EINFEASIBLE) {
        snprintf(buf, len, "--max-stages %d: every plan using exactly %d devices needs more "
                 "stages", opt->max_stages, p->num_devices);
        return;
    }
    if (!plan && apsolve_solve(p, &relaxed, &plan) != APSOLVE_OK) {
        snprintf(buf, len, "no feasible plan");
        return;
    }
    /* Memory is the binding constraint: quote the least memory per device
     * that any plan needs, and that plan. */
    apsolve_plan_free(&plan);
    least_memory_explain(p, opt, buf, len);
}
