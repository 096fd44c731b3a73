/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dominated variants (sweep_dominated.h; docs/variants.md, "Dominated
 * variants"). The rule reads exactly what apsolve's loader keeps of an
 * entry (solver/dbload.c: each phase's seconds, the backward's
 * weight-gradient seconds, the apply seconds, peak, intermediate, initial
 * and available memory) and is applied only to variants no knob reads by
 * identity: apsolve's --parallel plans, context and expert parallelism and
 * HSDP read configs whose batch is forced to the mesh (force 0); the
 * recompute_layers composition and activation offload read recompute
 * `none` and `full`. What is left are the `selective` and `op` variants of
 * the configs without the batch option, which only the DP's minimum and a
 * uniform or manual plan's cheapest fitting config read.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_rows.h"
#include "entry_delete.h"
#include "grow.h"
#include "sweep_dominated.h"

/* Read by identity nowhere in apsolve (the header says why). */
static int outside_every_knob(const CostdbConfig *c)
{
    return c->force_batch_dim < 0 && (c->variant.recompute == COSTDB_RECOMPUTE_SELECTIVE ||
                                      c->variant.recompute == COSTDB_RECOMPUTE_OP);
}

/* a <= b for two figures of which < 0 is unknown: both unknown, or both
 * known and a no larger */
static int known_le(double a, double b)
{
    return (a < 0 && b < 0) || (a >= 0 && b >= 0 && a <= b);
}

static int usable(const ApprofVariantFigures *v)
{
    for (int ph = 0; ph < 2; ph++)
        if (!isfinite(v->cost[ph]) || v->cost[ph] < 0)
            return 0;
    return 1;
}

int approf_variant_dominated(const CostdbConfig *dc, const ApprofVariantFigures *d,
                             const CostdbConfig *xc, const ApprofVariantFigures *x)
{
    double td, tx;
    if (!outside_every_knob(xc) || dc->force_batch_dim != xc->force_batch_dim ||
        dc->logical_a != xc->logical_a || dc->logical_b != xc->logical_b ||
        dc->config_index == xc->config_index ||
        /* the recompute_layers step rewrites a `full` config's entries */
        dc->variant.recompute == COSTDB_RECOMPUTE_FULL || !usable(d) || !usable(x))
        return 0;
    for (int ph = 0; ph < 2; ph++)
        if (d->cost[ph] > x->cost[ph] || !known_le(d->apply[ph], x->apply[ph]) ||
            d->peak[ph] > x->peak[ph] || d->intermediate[ph] > x->intermediate[ph] ||
            d->initial[ph] > x->initial[ph] || d->avail[ph] != x->avail[ph])
            return 0;
    /* the backward's weight gradients (the zero-bubble schedules' W) and
     * the rest of it (their B) each no longer */
    if (!known_le(d->wgrad[1], x->wgrad[1]) ||
        (d->wgrad[1] >= 0 && d->cost[1] - d->wgrad[1] > x->cost[1] - x->wgrad[1]))
        return 0;
    /* ties: the DP's options are sorted by (cost, config), a uniform plan
     * keeps the first of equal costs; training reads fwd + bwd, inference
     * the forward alone */
    td = d->cost[0] + d->cost[1];
    tx = x->cost[0] + x->cost[1];
    return dc->config_index < xc->config_index || (td < tx && d->cost[0] < x->cost[0]);
}

typedef struct Scan {
    const CostdbConfig **cfg;         /* [s * C + c] */
    int S, C;
    ApprofVariantFigures *fig;        /* [C], the group's */
    unsigned char *have;              /* [C]: bit ph set when phase ph was read */
    int gi, gj, gs, open;             /* the group being read */
    CostdbEntryKey *out;
    size_t n_out, cap_out;
    int oom;
} Scan;

/* Decides the group read so far. */
static int close_group(Scan *sc)
{
    if (!sc->open)
        return 0;
    sc->open = 0;
    for (int x = 0; x < sc->C; x++) {
        const CostdbConfig *xc = sc->cfg[(size_t)sc->gs * sc->C + x];
        if (sc->have[x] != 3 || !xc || !outside_every_knob(xc))
            continue;
        for (int d = 0; d < sc->C; d++) {
            const CostdbConfig *dc = sc->cfg[(size_t)sc->gs * sc->C + d];
            if (d == x || sc->have[d] != 3 || !dc ||
                !approf_variant_dominated(dc, &sc->fig[d], xc, &sc->fig[x]))
                continue;
            if (UTIL_GROW(sc->out, sc->cap_out, sc->n_out + 1) < 0)
                return COSTDB_ENOMEM;
            sc->out[sc->n_out++] = (CostdbEntryKey){sc->gi, sc->gj, sc->gs, x};
            break;
        }
    }
    memset(sc->have, 0, (size_t)sc->C);
    return 0;
}

static int scan_row(void *ctx, const CostdbStageRow *r)
{
    Scan *sc = ctx;
    ApprofVariantFigures *f;
    int ph = r->phase == COSTDB_BWD, rc;
    if (r->submesh_index < 0 || r->submesh_index >= sc->S || r->config_index < 0 ||
        r->config_index >= sc->C)
        return 0; /* outside the sweep's configs: apsolve ignores it too */
    if (!sc->open || r->start_layer != sc->gi || r->end_layer != sc->gj ||
        r->submesh_index != sc->gs) {
        if ((rc = close_group(sc)) < 0)
            return rc;
        sc->gi = r->start_layer;
        sc->gj = r->end_layer;
        sc->gs = r->submesh_index;
        sc->open = 1;
    }
    f = &sc->fig[r->config_index];
    f->config = r->config_index;
    f->cost[ph] = r->compute_cost;
    f->wgrad[ph] = r->wgrad_cost;
    f->apply[ph] = r->apply_cost;
    f->peak[ph] = r->peak_memory;
    f->intermediate[ph] = r->intermediate_size;
    f->initial[ph] = r->initial_size;
    f->avail[ph] = r->available_memory;
    sc->have[r->config_index] |= (unsigned char)(1u << ph);
    return 0;
}

int approf_sweep_leave_out_dominated(Costdb *db, int64_t sweep_id, size_t *left_out)
{
    CostdbConfig *cfgs = NULL;
    size_t n = 0;
    Scan sc;
    int rc;
    *left_out = 0;
    memset(&sc, 0, sizeof sc);
    if ((rc = costdb_sweep_configs(db, sweep_id, &cfgs, &n)) < 0)
        return rc;
    /* only a config outside every knob can be left out (close_group): a
     * space without one (Llama's full space has no `selective` nor `op`
     * config) leaves nothing out, and its rows are not read */
    size_t candidates = 0;
    for (size_t k = 0; k < n; k++)
        candidates += outside_every_knob(&cfgs[k]) && costdb_variant_valid(cfgs[k].variant);
    if (candidates == 0)
        n = 0;
    for (size_t k = 0; k < n; k++) {
        if (cfgs[k].submesh_index + 1 > sc.S)
            sc.S = cfgs[k].submesh_index + 1;
        if (cfgs[k].config_index + 1 > sc.C)
            sc.C = cfgs[k].config_index + 1;
    }
    rc = COSTDB_ENOMEM;
    if (n == 0) {
        rc = 0;
        goto done;
    }
    sc.cfg = calloc((size_t)sc.S * (size_t)sc.C, sizeof *sc.cfg);
    sc.fig = calloc((size_t)sc.C, sizeof *sc.fig);
    sc.have = calloc((size_t)sc.C, 1);
    if (!sc.cfg || !sc.fig || !sc.have)
        goto done;
    for (size_t k = 0; k < n; k++)
        if (cfgs[k].submesh_index >= 0 && cfgs[k].config_index >= 0 &&
            costdb_variant_valid(cfgs[k].variant))
            sc.cfg[(size_t)cfgs[k].submesh_index * sc.C + cfgs[k].config_index] = &cfgs[k];
    if ((rc = costdb_stage_rows(db, sweep_id, scan_row, &sc)) == 0)
        rc = close_group(&sc);
    if (rc == 0 && (rc = costdb_entries_delete(db, sweep_id, sc.out, sc.n_out)) == 0)
        *left_out = sc.n_out;
done:
    free(sc.cfg);
    free(sc.fig);
    free(sc.have);
    free(sc.out);
    free(cfgs);
    return rc;
}
