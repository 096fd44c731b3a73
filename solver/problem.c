/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ApsolveProblem construction and the small pieces of Alpa semantics the
 * solver shares with its callers: the default submesh list, the
 * max_n_succ_stages formula, error strings and plan destruction.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "page_populate.h"
#include "problem_unfilled.h"
#include "solver_int.h"

const char *apsolve_strerror(int err)
{
    switch (err) {
    case APSOLVE_OK: return "success";
    case APSOLVE_ENOMEM: return "out of memory";
    case APSOLVE_EINVAL: return "invalid argument";
    case APSOLVE_EINFEASIBLE: return "no feasible plan";
    case APSOLVE_EDB: return "database error";
    case APSOLVE_EPARSE: return "malformed plan text";
    case APSOLVE_ENOTFOUND: return "not found in the sweep";
    default: return "unknown error";
    }
}

static void fill_doubles(double *a, size_t n, double v)
{
    for (size_t k = 0; k < n; k++)
        a[k] = v;
}

int apsolve_problem_shape_ok(int num_layers, int hosts, int gpus, int num_submeshes,
                             int num_configs)
{
    return num_layers >= 1 && num_layers <= APSOLVE_MAX_LAYERS && hosts >= 1 && gpus >= 1 &&
           (int64_t)hosts * gpus <= APSOLVE_MAX_DEVICES && num_submeshes >= 1 &&
           num_submeshes <= APSOLVE_MAX_SUBMESHES && num_configs >= 1 &&
           num_configs <= APSOLVE_MAX_CONFIGS;
}

/* How problem_alloc leaves the tables. */
enum {
    ALLOC_BARE,     /* uninitialized, for a caller that copies every cell next (the clone) */
    ALLOC_FILLED,   /* every cell as apsolve_problem_new leaves it */
    ALLOC_UNFILLED, /* as filled, but cost and max_n_succ_stages left to the caller
                     * (apsolve_problem_new_unfilled) */
    ALLOC_UNPOPULATED, /* as unfilled, their pages not populated either
                        * (apsolve_problem_new_unpopulated) */
};

static int problem_alloc(int num_layers, int hosts, int gpus, int num_submeshes,
                         int num_configs, int with_details, int mode, ApsolveProblem **out)
{
    ApsolveProblem *p = NULL;
    size_t n, k;
    int rc = APSOLVE_ENOMEM;
    int fill = mode != ALLOC_BARE;

    if (!out)
        return APSOLVE_EINVAL;
    *out = NULL;
    if (!apsolve_problem_shape_ok(num_layers, hosts, gpus, num_submeshes, num_configs))
        return APSOLVE_EINVAL;
    p = calloc(1, sizeof *p);
    if (!p)
        return APSOLVE_ENOMEM;
    p->num_layers = num_layers;
    p->cluster_hosts = hosts;
    p->cluster_gpus = gpus;
    p->num_devices = hosts * gpus;
    p->num_submeshes = num_submeshes;
    p->num_configs = num_configs;
    n = apsolve_table_cells(num_layers, num_submeshes, num_configs);
    p->submeshes = calloc((size_t)num_submeshes, sizeof *p->submeshes);
    p->configs = calloc((size_t)num_submeshes * (size_t)num_configs, sizeof *p->configs);
    p->cost = malloc(n * sizeof *p->cost);
    p->max_n_succ_stages = malloc(n * sizeof *p->max_n_succ_stages);
    p->apply_cost = fill ? calloc(n, sizeof *p->apply_cost) : malloc(n * sizeof *p->apply_cost);
    if (!p->submeshes || !p->configs || !p->cost || !p->max_n_succ_stages || !p->apply_cost)
        goto cleanup;
    if (with_details) {
        /* the clone copies its source's (memory_table.c, cell_times.c) */
        p->memory = fill ? apsolve_memory_table_new(n) : NULL;
        p->times = fill ? apsolve_times_table_new(n) : NULL;
        if (fill && (!p->memory || !p->times))
            goto cleanup;
    }
    /* the tables whose every page is written next: the filled ones (cost
     * and max_n_succ_stages, unfilled: by their caller), and with no fill
     * every one (the clone copies each whole); calloc's zero
     * table apply_cost gets only the load's entries, which leave some of
     * its pages untouched (and the memory and times tables are sparse) */
    if (mode != ALLOC_UNPOPULATED)
        apsolve_problem_populate_unfilled(p);
    if (!fill)
        cdb_populate(p->apply_cost, n * sizeof *p->apply_cost);
    if (mode == ALLOC_FILLED)
        apsolve_problem_fill_cells(p, 0, n);
    for (k = 0; k < (size_t)num_submeshes * (size_t)num_configs; k++)
        p->configs[k].force_batch_dim = -1;
    *out = p;
    p = NULL;
    rc = APSOLVE_OK;
cleanup:
    apsolve_problem_free(&p);
    return rc;
}

void apsolve_problem_fill_cells(ApsolveProblem *p, size_t lo, size_t hi)
{
    /* one table at a time (each loop a plain fill) */
    fill_doubles(p->cost + lo, hi - lo, INFINITY);
    for (size_t k = lo; k < hi; k++)
        p->max_n_succ_stages[k] = APSOLVE_UNBOUNDED;
}

int apsolve_problem_new(int num_layers, int hosts, int gpus, int num_submeshes,
                        int num_configs, int with_details, ApsolveProblem **out)
{
    return problem_alloc(num_layers, hosts, gpus, num_submeshes, num_configs, with_details,
                         ALLOC_FILLED, out);
}

int apsolve_problem_new_unfilled(int num_layers, int hosts, int gpus, int num_submeshes,
                                 int num_configs, ApsolveProblem **out)
{
    return problem_alloc(num_layers, hosts, gpus, num_submeshes, num_configs, 1,
                         ALLOC_UNFILLED, out);
}

int apsolve_problem_new_unpopulated(int num_layers, int hosts, int gpus, int num_submeshes,
                                    int num_configs, ApsolveProblem **out)
{
    return problem_alloc(num_layers, hosts, gpus, num_submeshes, num_configs, 1,
                         ALLOC_UNPOPULATED, out);
}

void apsolve_problem_populate_unfilled(ApsolveProblem *p)
{
    size_t n = apsolve_problem_cells(p);
    cdb_populate(p->cost, n * sizeof *p->cost);
    cdb_populate(p->max_n_succ_stages, n * sizeof *p->max_n_succ_stages);
}

int apsolve_problem_clone(const ApsolveProblem *p, ApsolveProblem **out)
{
    ApsolveProblem *q = NULL;
    size_t cells;
    int with, rc;
    if (!p || !out)
        return APSOLVE_EINVAL;
    *out = NULL;
    with = p->times && p->memory;
    /* every table copied whole below: not filled first */
    if ((rc = problem_alloc(p->num_layers, p->cluster_hosts, p->cluster_gpus, p->num_submeshes,
                            p->num_configs, with, ALLOC_BARE, &q)) != APSOLVE_OK)
        return rc;
    cells = apsolve_problem_cells(p);
    memcpy(q->submeshes, p->submeshes, (size_t)p->num_submeshes * sizeof *q->submeshes);
    memcpy(q->configs, p->configs,
           (size_t)p->num_submeshes * (size_t)p->num_configs * sizeof *q->configs);
    memcpy(q->cost, p->cost, cells * sizeof *q->cost);
    memcpy(q->max_n_succ_stages, p->max_n_succ_stages, cells * sizeof *q->max_n_succ_stages);
    memcpy(q->apply_cost, p->apply_cost, cells * sizeof *q->apply_cost);
    if (with) {
        if (!(q->times = apsolve_times_table_clone(p->times, cells)) ||
            !(q->memory = apsolve_memory_table_clone(p->memory, cells))) {
            apsolve_problem_free(&q);
            return APSOLVE_ENOMEM;
        }
    }
    if (p->unfit_table) {
        const ApsolveUnfitTable *t = p->unfit_table;
        ApsolveUnfitTable *u = q->unfit_table = calloc(1, sizeof *u);
        if (!u || !(u->slot = malloc(cells * sizeof *u->slot)) ||
            (t->n && !(u->figs = malloc(t->n * sizeof *u->figs)))) {
            apsolve_problem_free(&q);
            return APSOLVE_ENOMEM;
        }
        memcpy(u->slot, t->slot, cells * sizeof *u->slot);
        if (t->n)
            memcpy(u->figs, t->figs, t->n * sizeof *u->figs);
        u->n = u->cap = t->n;
    }
    q->sweep_id = p->sweep_id;
    *out = q;
    return APSOLVE_OK;
}

size_t apsolve_problem_bytes(const ApsolveProblem *p)
{
    size_t per = sizeof *p->cost + sizeof *p->max_n_succ_stages + sizeof *p->apply_cost;
    size_t cells = apsolve_problem_cells(p);
    return cells * per + (p->times ? apsolve_times_table_bytes(p->times, cells) : 0) +
           (p->memory ? apsolve_memory_table_bytes(p->memory, cells) : 0);
}

void apsolve_problem_free(ApsolveProblem **pp)
{
    ApsolveProblem *p;
    if (!pp || !*pp)
        return;
    p = *pp;
    free(p->submeshes);
    free(p->configs);
    free(p->cost);
    free(p->max_n_succ_stages);
    free(p->apply_cost);
    apsolve_times_table_free(p->times);
    apsolve_memory_table_free(p->memory);
    if (p->unfit_table) {
        free(p->unfit_table->slot);
        free(p->unfit_table->figs);
        free(p->unfit_table);
    }
    free(p);
    *pp = NULL;
}

int apsolve_unfit_table_new(ApsolveProblem *p)
{
    ApsolveUnfitTable *t;
    if (p->unfit_table)
        return APSOLVE_OK;
    if (!(t = calloc(1, sizeof *t)) || !(t->slot = calloc(apsolve_problem_cells(p),
                                                          sizeof *t->slot))) {
        free(t);
        return APSOLVE_ENOMEM;
    }
    p->unfit_table = t;
    return APSOLVE_OK;
}

int apsolve_unfit_put(ApsolveProblem *p, size_t k, const ApsolveUnfit *u)
{
    ApsolveUnfitTable *t;
    if (!(u->fwd >= 0) && !p->unfit_table)
        return APSOLVE_OK;
    if (apsolve_unfit_table_new(p) != APSOLVE_OK)
        return APSOLVE_ENOMEM;
    t = p->unfit_table;
    if (!(u->fwd >= 0)) { /* < 0 or NaN: none (what apsolve_unfit_at holds has fwd >= 0) */
        t->slot[k] = 0; /* its figures, if any, stay unreferenced */
        return APSOLVE_OK;
    }
    /* A figure once referenced is never written again: other entries may
     * point at it (unfit_share.h). The same bytes: nothing to do. */
    if (t->slot[k] && !memcmp(&t->figs[t->slot[k] - 1], u, sizeof *u))
        return APSOLVE_OK;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        ApsolveUnfit *f;
        if (cap > UINT32_MAX || !(f = realloc(t->figs, cap * sizeof *f)))
            return APSOLVE_ENOMEM;
        t->figs = f;
        t->cap = cap;
    }
    t->figs[t->n] = *u;
    t->slot[k] = (uint32_t)++t->n;
    return APSOLVE_OK;
}

/* Whether every valid, finite entry of p has a value >= 0 in its apply
 * time (p->apply_cost) or, with wgrad, in its weight gradients' time (read
 * behind its slot, apsolve_times_at), and at least one such entry exists. */
static int every_entry_known(const ApsolveProblem *p, int wgrad)
{
    size_t n, k, cfg, sc, finite = 0;
    if (!p || (wgrad ? !p->times : !p->apply_cost))
        return 0;
    n = apsolve_problem_cells(p);
    sc = (size_t)p->num_submeshes * (size_t)p->num_configs;
    /* cell k's config is k % sc (the configs innermost): counted, not
     * divided for every cell */
    for (k = 0, cfg = 0; k < n; k++, cfg = cfg + 1 == sc ? 0 : cfg + 1) {
        if (!p->configs[cfg].valid || !isfinite(p->cost[k]) || p->cost[k] < 0)
            continue;
        if (!((wgrad ? apsolve_times_at(p, k)->wgrad : p->apply_cost[k]) >= 0))
            return 0;
        finite++;
    }
    return finite > 0;
}

int apsolve_problem_apply_known(const ApsolveProblem *p)
{
    return every_entry_known(p, 0);
}

int apsolve_problem_wgrad_known(const ApsolveProblem *p)
{
    return every_entry_known(p, 1);
}

int apsolve_default_submeshes(int hosts, int gpus, ApsolveSubmesh *out, int cap)
{
    int n = 0, k;
    for (k = 1; k <= gpus; k *= 2) {
        if (n < cap && out) {
            out[n].hosts = 1;
            out[n].gpus = k;
        }
        n++;
    }
    for (k = 2; k <= hosts; k *= 2) {
        if (n < cap && out) {
            out[n].hosts = k;
            out[n].gpus = gpus;
        }
        n++;
    }
    return n;
}

/* Alpa's bound (alpa-projects/alpa b8078a9, docs/alpa-semantics.md
 * "Memory feasibility"). */
int apsolve_max_n_succ_stages(int64_t avail, int64_t peak, int64_t initial,
                              int64_t intermediate)
{
    /* Computed in long double so that byte counts near 2^63 cannot overflow. */
    long double room, q;
    /* Byte counts below 2^51 (every stored entry): the room is an exact
     * integer below 2^53 and the floor of its quotient is the integer
     * division's (the long double quotient of a room below 2^53 lies less
     * than 1 / intermediate from the exact one, which is at least that far
     * from the next integer when not one itself), without the division in
     * long double. */
    if (avail > -(INT64_C(1) << 51) && avail < (INT64_C(1) << 51) &&
        peak > -(INT64_C(1) << 51) && peak < (INT64_C(1) << 51) &&
        initial > -(INT64_C(1) << 51) && initial < (INT64_C(1) << 51)) {
        int64_t r = avail - peak - initial, qi;
        if (r < 0)
            return -1;
        if (intermediate <= 0)
            return APSOLVE_UNBOUNDED;
        qi = r / intermediate - 1;
        return qi >= (int64_t)APSOLVE_UNBOUNDED - 1 ? APSOLVE_UNBOUNDED : (int)qi;
    }
    room = (long double)avail - (long double)peak - (long double)initial;
    if (room < 0)
        return -1;
    if (intermediate <= 0)
        return APSOLVE_UNBOUNDED;
    q = floorl(room / (long double)intermediate) - 1;
    if (q >= (long double)(APSOLVE_UNBOUNDED - 1))
        return APSOLVE_UNBOUNDED;
    return q < -1 ? -1 : (int)q;
}

int apsolve_memory_mnss(const ApsolveMemory *m)
{
    return m->avail > 0 ? apsolve_max_n_succ_stages(m->avail, m->peak, m->initial,
                                                    m->intermediate)
                        : APSOLVE_UNBOUNDED;
}

void apsolve_entry_add(ApsolveProblem *q, size_t idx, const ApsolveEntryDelta *d)
{
    if (q->times) {
        ApsolveTimes t = *apsolve_times_at(q, idx);
        t.fwd += d->comm_fwd;
        t.bwd += d->comm_bwd;
        /* out of memory for a cell that had no times: the entry is no
         * stage (as for its memory figures below) */
        if (apsolve_times_put(q, idx, &t) != APSOLVE_OK)
            q->cost[idx] = INFINITY;
    }
    q->cost[idx] += d->comm_fwd + d->comm_bwd;
    if (q->apply_cost[idx] >= 0)
        q->apply_cost[idx] = fmax(0.0, q->apply_cost[idx] + d->apply_delta);
    if (q->memory) {
        ApsolveMemory m = *apsolve_memory_at(q, idx);
        m.peak += d->peak_delta;
        m.initial += d->initial_delta;
        if (m.initial < 0)
            m.initial = 0;
        q->max_n_succ_stages[idx] = apsolve_memory_mnss(&m);
        /* out of memory for a cell that had no figures: the entry is no
         * stage rather than one with figures it does not have */
        if (apsolve_memory_put(q, idx, &m) != APSOLVE_OK)
            q->cost[idx] = INFINITY;
    }
}

int apsolve_unfit_restore(ApsolveProblem *q, size_t idx)
{
    const ApsolveUnfit *u;
    if (isfinite(q->cost[idx]))
        return 1;
    if (!(u = apsolve_unfit_at(q, idx)) || !q->times || !q->memory)
        return 0;
    /* out of memory for its figures: left out of memory, as stored (the
     * times first: a cell whose memory put fails keeps its times, which
     * nothing reads while its cost is +inf); the wgrad is not stored for
     * an oom entry: unknown */
    if (apsolve_times_put(q, idx, &(ApsolveTimes){u->fwd, u->bwd, -1.0}) != APSOLVE_OK ||
        apsolve_memory_put(q, idx, &u->memory) != APSOLVE_OK)
        return 0;
    q->cost[idx] = u->fwd + u->bwd;
    q->apply_cost[idx] = u->apply;
    q->max_n_succ_stages[idx] = apsolve_memory_mnss(&u->memory);
    return 1;
}

void apsolve_unfit_settle_entry(ApsolveProblem *q, size_t idx, const ApsolveUnfit *u)
{
    const ApsolveMemory *m = apsolve_memory_at(q, idx);
    const ApsolveTimes *t = apsolve_times_at(q, idx);
    if (u->fwd < 0 || !isfinite(q->cost[idx]) || t->fwd != u->fwd || t->bwd != u->bwd ||
        q->cost[idx] != u->fwd + u->bwd || m->peak != u->memory.peak ||
        m->intermediate != u->memory.intermediate || m->initial != u->memory.initial)
        return;
    /* the cell has its own times (apsolve_unfit_restore put them): written
     * in place, no put can fail */
    ApsolveTimes *w = apsolve_times_own(q, idx);
    w->fwd = w->bwd = INFINITY;
    q->cost[idx] = INFINITY;
}

void apsolve_plan_free(ApsolvePlan **plan)
{
    if (!plan || !*plan)
        return;
    free((*plan)->stages);
    free(*plan);
    *plan = NULL;
}
