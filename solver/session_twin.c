/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The twin of a cp or ep plan (session_int.h): the stored entries a cp or
 * ep stage is priced from, those of the same GPUs without cp/ep (logical
 * (dp cp, tp), the batch forced on axis 0: docs/context-parallel.md,
 * docs/expert-parallel.md). When a stage's twin has no time, the plan
 * cannot be priced, and the refusal says why instead of the attention or
 * experts the transformation then finds none of. The auto search's cp and
 * ep steps price from twins out of memory as --parallel does
 * (apsolve_unfit_open, apsolve_unfit_settle).
 */
#include <math.h>
#include <stdio.h>

#include "apsolve.h"
#include "costdb.h"
#include "search_pool.h"
#include "session.h"
#include "session_int.h"
#include "solver_int.h"

int apsolve_twin_check(ApsolveRun *r, const ApsolveCand *eq, int la, int lb, const char *what,
                       const char *knob)
{
    const ApsolveProblem *p = eq->p;
    for (size_t k = 0; k < r->nspec; k++) {
        const ApsolveStageSpec *sp = &r->specs[k];
        int s = apsolve_find_submesh(p, sp->hosts, sp->gpus), any = 0, priced = 0, stored = 0;
        for (int c = 0; s >= 0 && c < p->num_configs && !priced; c++) {
            const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
            if (!cf->valid || cf->logical_a != la || cf->logical_b != lb ||
                cf->force_batch_dim != 0)
                continue;
            any = 1;
            size_t idx = apsolve_index(p, sp->start_layer, sp->end_layer, s, c);
            /* an entry out of memory with the time the sweep computed is
             * priced from that time (apsolve_unfit_restore) */
            if (isfinite(p->cost[idx]) || apsolve_unfit_at(p, idx))
                priced = 1;
            for (int ph = 0; ph < 2 && !priced && !stored; ph++)
                if (costdb_entry_exists(r->db, eq->sweep, sp->start_layer, sp->end_layer, s, c,
                                        (CostdbPhase)ph, &stored) != COSTDB_OK)
                    stored = 0;
        }
        if (!any || priced)
            continue; /* no such config: the plan's own refusals say so */
        if (stored)
            return apsolve_fail(r->a, APSOLVE_ERROR_INPUT,
                                "--parallel %s: %s is priced from the stored entry of the same "
                                "GPUs without it (logical mesh (%d, %d), batch on axis 0), and "
                                "stage %zu's (layers %d-%d) in sweep %lld has no time: it is "
                                "stored out of memory (or failed, timed out or skipped: its "
                                "status says which), and such an entry keeps none. To price a "
                                "layout that "
                                "needs %s to fit, sweep a copy of the hardware spec with more "
                                "memory_gib and compare the plan's memory_needed with the real "
                                "spec's memory",
                                what, knob, la, lb, k, sp->start_layer, sp->end_layer,
                                (long long)eq->sweep, knob);
        return apsolve_fail(r->a, APSOLVE_ERROR_INPUT,
                            "--parallel %s: %s is priced from the stored entry of the same GPUs "
                            "without it (logical mesh (%d, %d), batch on axis 0), and sweep %lld "
                            "has no entry for stage %zu (layers %d-%d): approf sweep "
                            "--skip-unfit leaves out the ranges whose parameters alone exceed "
                            "a device (docs/performance.md, \"Ranges that cannot fit\"), and an "
                            "unfinished sweep has not reached it (--resume)",
                            what, knob, la, lb, (long long)eq->sweep, k, sp->start_layer,
                            sp->end_layer);
    }
    return 0;
}

int apsolve_unfit_open(const ApsolveProblem *p, ApsolveProblem **out)
{
    size_t cells = apsolve_problem_cells(p), k, n = 0;
    int rc;
    *out = NULL;
    for (k = 0; p->unfit_table && k < cells; k++)
        n += apsolve_unfit_at(p, k) && !isfinite(p->cost[k]);
    if (!n)
        return APSOLVE_OK; /* none to restore: the candidate's own problem */
    if ((rc = apsolve_problem_clone(p, out)) != APSOLVE_OK)
        return rc;
    /* room for the memory figures and times each restore puts
     * (apsolve_unfit_restore) */
    if (((*out)->memory && apsolve_memory_room(*out, n) != APSOLVE_OK) ||
        ((*out)->times && apsolve_times_room(*out, n) != APSOLVE_OK)) {
        apsolve_problem_free(out);
        return APSOLVE_ENOMEM;
    }
    for (k = 0; k < cells; k++)
        if (!isfinite((*out)->cost[k]) && apsolve_unfit_at(*out, k))
            apsolve_unfit_restore(*out, k);
    return APSOLVE_OK;
}

void apsolve_unfit_settle(ApsolveProblem *q)
{
    size_t cells = apsolve_problem_cells(q);
    /* exactly the figures apsolve_unfit_restore put there: no cp or ep
     * step made a stage of it */
    for (size_t k = 0; q->unfit_table && q->times && q->memory && k < cells; k++)
        if (apsolve_unfit_at(q, k))
            apsolve_unfit_settle_entry(q, k, apsolve_unfit_at(q, k));
}

/* One part of apsolve_unfit_apply_known's walk: cells lo .. hi - 1 (lo at
 * a block's first cell), unknown set at the first usable entry without
 * its apply cost, else the usable entries counted in finite. */
typedef struct ApplyScan {
    const ApsolveProblem *p;
    size_t lo, hi, finite;
    int unknown;
} ApplyScan;

static void apply_scan(void *ctx, int part)
{
    ApplyScan *s = (ApplyScan *)ctx + part;
    const ApsolveProblem *p = s->p;
    int restores = p->times && p->memory;
    /* cell k's config is configs[k % per] (apsolve_index): walked block by
     * block of per cells, without a division per cell */
    size_t per = (size_t)p->num_submeshes * (size_t)p->num_configs;
    for (size_t k = s->lo, j = 0; per && k < s->hi; k++, j = j + 1 == per ? 0 : j + 1) {
        double cost = p->cost[k], apply = p->apply_cost[k];
        if (!p->configs[j].valid)
            continue;
        if (!isfinite(cost) && restores && apsolve_unfit_at(p, k)) {
            cost = apsolve_unfit_at(p, k)->fwd + apsolve_unfit_at(p, k)->bwd;
            apply = apsolve_unfit_at(p, k)->apply;
        }
        if (!isfinite(cost) || cost < 0)
            continue;
        if (!(apply >= 0)) {
            s->unknown = 1;
            return;
        }
        s->finite++;
    }
}

int apsolve_unfit_apply_known(const ApsolveProblem *p, int threads)
{
    /* apsolve_problem_apply_known of apsolve_unfit_open's problem, read
     * in place: an entry out of memory with the time the sweep computed
     * counts with its own figures (apsolve_unfit_restore), without a copy
     * of the whole table. With two threads a large table is walked in two
     * halves side by side (a whole-table walk, some 30 ms on the 126-layer
     * file, that nothing else waits beside): whether some entry lacks its
     * apply cost, and whether one has it, do not depend on the order. */
    size_t cells, per, half;
    ApplyScan s[2];
    if (!p || !p->unfit_table)
        return apsolve_problem_apply_known(p);
    cells = apsolve_problem_cells(p);
    per = (size_t)p->num_submeshes * (size_t)p->num_configs;
    half = threads >= 2 && per && cells >= ((size_t)1 << 20) ? cells / per / 2 * per : cells;
    s[0] = (ApplyScan){p, 0, half, 0, 0};
    s[1] = (ApplyScan){p, half, cells, 0, 0};
    apsolve_pool_run(half < cells ? 2 : 1, half < cells ? 2 : 1, apply_scan, s);
    return !s[0].unknown && !s[1].unknown && s[0].finite + s[1].finite > 0;
}
