/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Re-evaluating a plan at another global batch size without a new search
 * (the last, smaller batch of an epoch, docs/solver.md "Re-evaluating at
 * another batch"). Two sources: a sweep of the same model, hardware and
 * cluster profiled at the new micro-batch size (its entries, exactly), or
 * the plan's own sweep scaled: compute costs and activation memory
 * (intermediate, and the same amount of peak) proportional to the
 * micro-batch size, parameters and optimizer state unchanged. Either way a
 * config that forces the batch over a data-parallel axis of size dp is
 * invalid when dp no longer divides the micro-batch: Alpa cannot run it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"
#include "schedule.h"
#include "solver_int.h"

int apsolve_rebatch_plan(const ApsolveProblem *p, const ApsolvePlan *plan, int64_t old_micro,
                         int64_t new_micro, ApsolvePlan **out)
{
    ApsolvePlan *np = NULL;
    double ratio, sum = 0, mx = 0;
    size_t K;
    int ok;

    if (!p || !plan || !out || old_micro <= 0 || new_micro <= 0 || plan->n_stages == 0)
        return APSOLVE_EINVAL;
    *out = NULL;
    K = plan->n_stages;
    ratio = (double)new_micro / (double)old_micro;
    np = calloc(1, sizeof *np);
    if (!np || !(np->stages = calloc(K, sizeof *np->stages))) {
        free(np);
        return APSOLVE_ENOMEM;
    }
    {
        ApsolveStage *stages = np->stages;
        *np = *plan;
        np->stages = memcpy(stages, plan->stages, K * sizeof *stages);
    }
    np->has_full_cost = 0;
    np->full_cost = 0;
    ok = plan->devices_used == p->num_devices;
    for (size_t k = K; k-- > 0;) {
        ApsolveStage *s = &np->stages[k];
        s->cost *= ratio;
        s->fwd_cost *= ratio;
        s->bwd_cost *= ratio;
        if (s->wgrad_cost >= 0)
            s->wgrad_cost *= ratio;
        sum += s->cost;
        if (s->cost > mx || isinf(s->cost))
            mx = s->cost;
        if (p->memory && s->submesh >= 0 && s->config >= 0 && !isinf(s->cost)) {
            const ApsolveMemory *m = apsolve_memory_at(
                p, apsolve_index(p, s->start_layer, s->end_layer, s->submesh, s->config));
            double inter = (double)m->intermediate * ratio;
            double peak = (double)m->peak + (double)m->intermediate * (ratio - 1);
            /* the same rule and in-flight count the plan was priced with */
            ApsolveMemoryRule rule = plan->objective == APSOLVE_OBJECTIVE_FULL
                                         ? APSOLVE_MEMORY_EXACT : APSOLVE_MEMORY_ALPA;
            s->memory_needed = apsolve_stage_memory_need(
                rule, llround(peak > 0 ? peak : 0), m->initial, llround(inter), s->in_flight);
            s->memory_ok = s->available_memory <= 0 || s->memory_needed <= s->available_memory;
        }
        if (s->force_batch_dim == 0 && s->logical_a > 0 && new_micro % s->logical_a)
            ok = 0;
        if (isinf(s->cost) || !s->memory_ok)
            ok = 0;
    }
    np->sum_cost = sum;
    np->max_stage_cost = mx;
    if (np->inference)
        np->cost = (double)K * mx;
    else
        np->cost = apsolve_schedule_base_time(np->virtual_stages, np->micro_batches, sum, mx);
    if (!np->inference)
        np->cost -= apsolve_stages_zb_saving(np->schedule, np->virtual_stages,
                                             np->micro_batches, np->stages, K);
    np->total_cost = np->cost + np->apply_cost;
    np->feasible = ok;
    *out = np;
    return APSOLVE_OK;
}

void apsolve_rebatch_summary(const ApsolvePlan *np, int64_t old_micro, int64_t new_micro,
                             ApsolveRebatch *out)
{
    memset(out, 0, sizeof *out);
    out->old_micro = old_micro;
    out->new_micro = new_micro;
    out->ratio = old_micro > 0 ? (double)new_micro / (double)old_micro : 0;
    out->fits = 1;
    out->valid = 1;
    out->worst_stage = -1;
    out->cost = np->cost;
    out->sum_cost = np->sum_cost;
    out->max_stage_cost = np->max_stage_cost;
    for (size_t k = 0; k < np->n_stages; k++) {
        const ApsolveStage *s = &np->stages[k];
        int forced_bad = s->force_batch_dim == 0 && s->logical_a > 0 && new_micro > 0 &&
                         new_micro % s->logical_a;
        if ((forced_bad || s->config < 0) && out->first_invalid_stage == 0) {
            out->valid = 0;
            out->first_invalid_stage = (int)k + 1;
            out->invalid_dp = forced_bad ? s->logical_a : 0;
        }
        if (!forced_bad && s->config >= 0 && isinf(s->cost) && out->missing_stage == 0)
            out->missing_stage = (int)k + 1;
        if (isinf(s->cost) || s->available_memory <= 0)
            continue;
        if (out->worst_stage < 0 || (double)s->memory_needed - (double)s->available_memory >
                                        out->worst_need - out->worst_avail) {
            out->worst_stage = (int)k;
            out->worst_need = (double)s->memory_needed;
            out->worst_avail = (double)s->available_memory;
        }
        if (s->memory_needed > s->available_memory)
            out->fits = 0;
    }
}

int apsolve_rebatch(const ApsolveProblem *p, const ApsolvePlan *plan, int64_t old_micro,
                    int64_t new_micro, ApsolveRebatch *out)
{
    ApsolvePlan *np = NULL;
    int rc;
    if (!out)
        return APSOLVE_EINVAL;
    memset(out, 0, sizeof *out);
    rc = apsolve_rebatch_plan(p, plan, old_micro, new_micro, &np);
    if (rc)
        return rc;
    apsolve_rebatch_summary(np, old_micro, new_micro, out);
    apsolve_plan_free(&np);
    return APSOLVE_OK;
}

/* t is a finished sweep of me's micro-batch family: the same setup but
 * for the batch (costdb_setup_diff with COSTDB_SETUP_IGNORE_FAMILY: model
 * name, options and layer boundaries, hardware, cluster, layers, spaces,
 * profile mode, dtype, backend, options and shard), with a known
 * micro-batch size. */
static int same_setup(struct Costdb *db, const CostdbSweep *me, const CostdbSweep *t, int *same)
{
    unsigned differ = 0;
    *same = 0;
    if (t->micro_batch_size <= 0 || t->model_id <= 0 || t->status == COSTDB_SWEEP_RUNNING ||
        t->status == COSTDB_SWEEP_FAILED)
        return APSOLVE_OK;
    if (costdb_setup_diff(db, me, db, t, COSTDB_SETUP_IGNORE_FAMILY, &differ) < 0)
        return APSOLVE_EDB;
    *same = !differ;
    return APSOLVE_OK;
}

int apsolve_find_batch_sweep(struct Costdb *db, int64_t sweep_id, int64_t new_micro,
                             int64_t *found)
{
    CostdbSweep me, *all = NULL;
    size_t n = 0;
    int rc = APSOLVE_OK;

    if (!db || !found || new_micro <= 0)
        return APSOLVE_EINVAL;
    *found = 0;
    if (costdb_sweep_get(db, sweep_id, &me))
        return APSOLVE_EDB;
    if (me.micro_batch_size == new_micro) {
        *found = sweep_id;
        return APSOLVE_OK;
    }
    if (me.model_id <= 0 || me.hardware_id <= 0)
        return APSOLVE_OK; /* an imported table: nothing says what "the same model" is */
    if (costdb_sweep_list(db, &all, &n)) {
        rc = APSOLVE_EDB;
        goto cleanup;
    }
    for (size_t k = n; k-- > 0;) {
        const CostdbSweep *t = &all[k];
        int same = 0;
        if (t->id == sweep_id || t->micro_batch_size != new_micro)
            continue;
        if ((rc = same_setup(db, &me, t, &same)) != APSOLVE_OK)
            goto cleanup;
        if (same) {
            *found = t->id;
            break;
        }
    }
cleanup:
    free(all);
    return rc;
}

int apsolve_batch_sweeps(struct Costdb *db, int64_t sweep_id, ApsolveBatchSweep **out,
                         size_t *n_out)
{
    CostdbSweep me, *all = NULL;
    ApsolveBatchSweep *list = NULL;
    size_t n = 0, m = 0;
    int rc = APSOLVE_OK;

    if (!db || !out || !n_out)
        return APSOLVE_EINVAL;
    *out = NULL;
    *n_out = 0;
    if (costdb_sweep_get(db, sweep_id, &me))
        return APSOLVE_EDB;
    if (me.model_id > 0 && me.hardware_id > 0 && costdb_sweep_list(db, &all, &n))
        return APSOLVE_EDB;
    list = calloc(n + 1, sizeof *list);
    if (!list) {
        rc = APSOLVE_ENOMEM;
        goto cleanup;
    }
    list[m].sweep_id = sweep_id;
    list[m].micro_batch_size = me.micro_batch_size;
    list[m++].global_batch = me.global_batch;
    /* Newest first, one sweep per micro-batch size; the given sweep wins
     * for its own size. */
    for (size_t k = n; me.model_id > 0 && me.hardware_id > 0 && k-- > 0;) {
        const CostdbSweep *t = &all[k];
        int same = 0, dup = 0;
        int64_t micro = t->micro_batch_size;
        if (t->id == sweep_id || micro <= 0)
            continue;
        for (size_t q = 0; q < m && !dup; q++)
            dup = list[q].micro_batch_size == micro;
        if (dup)
            continue;
        if ((rc = same_setup(db, &me, t, &same)) != APSOLVE_OK)
            goto cleanup;
        if (!same)
            continue;
        list[m].sweep_id = t->id;
        list[m].micro_batch_size = micro;
        list[m++].global_batch = t->global_batch;
    }
    /* Ascending micro-batch size (insertion sort: a handful of sizes). */
    for (size_t a = 1; a < m; a++)
        for (size_t b = a; b > 0 && list[b].micro_batch_size < list[b - 1].micro_batch_size; b--) {
            ApsolveBatchSweep t = list[b];
            list[b] = list[b - 1];
            list[b - 1] = t;
        }
    *out = list;
    *n_out = m;
    list = NULL;
cleanup:
    free(list);
    free(all);
    return rc;
}
