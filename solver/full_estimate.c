/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Beyond Alpa's objective: the full iteration estimate of a plan and its
 * re-evaluation at another global batch size.
 *
 * Alpa's T = Σ stage costs + (B − 1)·max stage cost ignores three things
 * that a real iteration pays; the full estimate adds them from the stage
 * placements stored by the sweep and the hardware row of the sweep:
 *  - cross-stage transfers: stage k+1's inputs that an earlier stage outputs
 *    (matched by tensor index), per device its shard (the bytes divided by
 *    the Chunked factors of the receiving spec), sent forward as activations
 *    and back as gradients each micro-batch, at latency + bytes / bandwidth
 *    of the link between the two submeshes (stages are laid out in order on
 *    host-major device numbers; a boundary on a host boundary, or a
 *    multi-host stage, uses the inter-host link);
 *  - the gradient all-reduce, once per iteration: each stage's parameters
 *    replicated over r devices (Replicated(replicas=r)) all-reduce their
 *    local gradient bytes with the ring formula 2(r−1)/r·bytes/bw +
 *    2(r−1)·latency on the link the replicated mesh axis crosses;
 *  - the optimizer step, once per iteration: Adam reads the parameter, its
 *    gradient and two moments and writes the parameter and the moments, 28
 *    bytes per f32 parameter element (the sweep's dtype replaces 4 of them
 *    for the gradient), at the device memory bandwidth.
 * Without overlap of communication and compute, each stage's steady-state
 * period grows by the sends it makes per micro-batch, so
 *   full = Σ c_k + Σ_boundaries 2·t_b + (B − 1)·max_k (c_k + t_out,k + t_in,k)
 *          + max_k (grad_sync_k + optimizer_k),
 * stages running apply-grad in parallel.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "costdb.h"

static int64_t dtype_bytes(const char *dt)
{
    return !strcmp(dt, "f16") || !strcmp(dt, "bf16") ? 2 : 4;
}

/* Product of the comma-separated dims of shape. */
static double shape_elements(const char *shape)
{
    double n = 1;
    const char *s = shape;
    char *end = NULL;
    if (!*s)
        return 1;
    for (;;) {
        long long d = strtoll(s, &end, 10);
        if (end == s || d < 0)
            return 0;
        n *= (double)d;
        if (*end != ',')
            break;
        s = end + 1;
    }
    return n;
}

/* Sharding factors of an Alpa ShardingSpec text: the product of its
 * Chunked(k) and the replicas r of Replicated(replicas=r) (1 if none). */
static void spec_factors(const char *spec, double *chunks, int *replicas)
{
    const char *p = spec;
    *chunks = 1;
    *replicas = 1;
    while ((p = strstr(p, "Chunked(")) != NULL) {
        long k = strtol(p + 8, NULL, 10);
        if (k > 0)
            *chunks *= (double)k;
        p += 8;
    }
    p = strstr(spec, "Replicated(replicas=");
    if (p) {
        long r = strtol(p + 20, NULL, 10);
        if (r > 0)
            *replicas = (int)r;
    }
}

static double local_bytes(const CostdbPlacement *pl)
{
    double chunks;
    int r;
    spec_factors(pl->sharding_spec, &chunks, &r);
    return shape_elements(pl->shape) * (double)dtype_bytes(pl->dtype) / chunks;
}

static double link_seconds(const CostdbHardware *hw, int inter, double bytes)
{
    double bw = inter ? hw->inter_host_bandwidth : hw->intra_host_bandwidth;
    double lat = inter ? hw->inter_host_latency : hw->intra_host_latency;
    if (bytes <= 0)
        return 0;
    return lat + (bw > 0 ? bytes / bw : 0);
}

int apsolve_full_estimate(struct Costdb *db, int64_t sweep_id, const ApsolvePlan *plan,
                          ApsolveFullEstimate *out)
{
    CostdbSweep sw;
    CostdbHardware hw;
    CostdbPlacement **pls = NULL;
    size_t *npl = NULL, K = plan->n_stages;
    double *t_out = NULL, *t_in = NULL;
    int *offset = NULL, rc = APSOLVE_OK, M;

    memset(out, 0, sizeof *out);
    if (!plan->feasible || plan->inference || K == 0) {
        snprintf(out->why, sizeof out->why, "%s", plan->inference ? "inference plan"
                                                                   : "plan not feasible");
        return APSOLVE_OK;
    }
    if (costdb_sweep_get(db, sweep_id, &sw) < 0)
        return APSOLVE_EDB;
    if (sw.hardware_id <= 0 || costdb_hardware_get(db, sw.hardware_id, &hw) < 0) {
        snprintf(out->why, sizeof out->why, "the sweep names no hardware (imported table?)");
        return APSOLVE_OK;
    }
    M = sw.cluster_gpus;
    pls = calloc(K, sizeof *pls);
    npl = calloc(K, sizeof *npl);
    t_out = calloc(K, sizeof *t_out);
    t_in = calloc(K, sizeof *t_in);
    offset = calloc(K + 1, sizeof *offset);
    if (!pls || !npl || !t_out || !t_in || !offset) {
        rc = APSOLVE_ENOMEM;
        goto cleanup;
    }
    for (size_t k = 0; k < K; k++) {
        const ApsolveStage *s = &plan->stages[k];
        if (s->submesh < 0 || s->config < 0 ||
            costdb_placements_get(db, sweep_id, s->start_layer, s->end_layer, s->submesh,
                                  s->config, &pls[k], &npl[k]) < 0 || npl[k] == 0) {
            snprintf(out->why, sizeof out->why, "stage %zu has no stored placements", k);
            goto cleanup;
        }
        offset[k + 1] = offset[k] + s->hosts * s->gpus;
    }
    /* cross-stage transfers, per micro-batch */
    for (size_t k = 1; k < K; k++) {
        int inter = M > 0 && (offset[k] % M == 0 || plan->stages[k].hosts > 1 ||
                              plan->stages[k - 1].hosts > 1);
        double bytes = 0;
        for (size_t a = 0; a < npl[k]; a++) {
            const CostdbPlacement *in = &pls[k][a];
            int produced = 0;
            if (strcmp(in->role, "input"))
                continue;
            for (size_t j = 0; j < k && !produced; j++)
                for (size_t b = 0; b < npl[j] && !produced; b++)
                    produced = !strcmp(pls[j][b].role, "output") &&
                               pls[j][b].tensor_index == in->tensor_index;
            if (produced)
                bytes += local_bytes(in);
        }
        t_in[k] += link_seconds(&hw, inter, bytes);      /* its gradient goes back */
        t_out[k - 1] += link_seconds(&hw, inter, bytes); /* the activation comes in */
        out->transfer_bytes += bytes;
        out->transfers += 2 * link_seconds(&hw, inter, bytes);
    }
    /* once per iteration: gradient all-reduce and optimizer, per stage */
    for (size_t k = 0; k < K; k++) {
        const ApsolveStage *s = &plan->stages[k];
        double grad = 0, opt_bytes = 0, t_sync = 0, t_opt;
        int r_max = 1;
        for (size_t a = 0; a < npl[k]; a++) {
            const CostdbPlacement *pp = &pls[k][a];
            double chunks, b;
            int r;
            if (strcmp(pp->role, "param"))
                continue;
            spec_factors(pp->sharding_spec, &chunks, &r);
            b = local_bytes(pp);
            opt_bytes += b / (double)dtype_bytes(pp->dtype) * (24.0 + (double)dtype_bytes(pp->dtype));
            if (r > 1) {
                grad += b;
                if (r > r_max)
                    r_max = r;
            }
        }
        if (r_max > 1) {
            /* which logical axis is replicated: a, b or both */
            int cross;
            if (r_max == s->logical_a && s->logical_a != s->logical_b)
                cross = s->logical_a > 1 && s->hosts > 1;
            else if (r_max == s->logical_b)
                cross = s->logical_b > M;
            else
                cross = s->hosts > 1;
            t_sync = 2.0 * (r_max - 1) / r_max * grad /
                         (cross ? hw.inter_host_bandwidth : hw.intra_host_bandwidth) +
                     2.0 * (r_max - 1) * (cross ? hw.inter_host_latency : hw.intra_host_latency);
        }
        t_opt = hw.memory_bandwidth > 0 ? opt_bytes / hw.memory_bandwidth : 0;
        if (t_sync + t_opt > out->grad_sync + out->optimizer) {
            out->grad_sync = t_sync;
            out->optimizer = t_opt;
        }
    }
    {
        double sum = 0, period = 0;
        for (size_t k = 0; k < K; k++) {
            double c = plan->stages[k].cost, pk = c + t_out[k] + t_in[k];
            sum += c;
            if (pk > period)
                period = pk;
        }
        out->pipeline = sum + out->transfers;
        if (plan->micro_batches > 1) /* 0 x an infinite period would be NaN */
            out->pipeline += (plan->micro_batches - 1) * period;
        out->total = out->pipeline + out->grad_sync + out->optimizer;
        out->available = isfinite(out->total);
    }
cleanup:
    if (pls)
        for (size_t k = 0; k < K; k++)
            free(pls[k]);
    free(pls);
    free(npl);
    free(t_out);
    free(t_in);
    free(offset);
    return rc;
}

int apsolve_rebatch(const ApsolveProblem *p, const ApsolvePlan *plan, int64_t old_micro,
                    int64_t new_micro, ApsolveRebatch *out)
{
    double ratio;
    size_t K = plan->n_stages;
    memset(out, 0, sizeof *out);
    if (old_micro <= 0 || new_micro <= 0 || K == 0)
        return APSOLVE_EINVAL;
    ratio = (double)new_micro / (double)old_micro;
    out->fits = 1;
    out->valid = 1;
    out->ratio = ratio;
    out->worst_stage = -1;
    for (size_t k = 0; k < K; k++) {
        const ApsolveStage *s = &plan->stages[k];
        double c = s->cost * ratio;
        out->sum_cost += c;
        if (c > out->max_stage_cost)
            out->max_stage_cost = c;
        /* a forced data-parallel config needs dp | micro-batch size */
        if (s->force_batch_dim == 0 && s->logical_a > 0 && new_micro % s->logical_a) {
            out->valid = 0;
            if (out->first_invalid_stage == 0)
                out->first_invalid_stage = (int)k + 1;
        }
        if (p->memory && s->submesh >= 0 && s->config >= 0) {
            const ApsolveMemory *m = &p->memory[apsolve_index(p, s->start_layer, s->end_layer,
                                                              s->submesh, s->config)];
            /* activations scale with the micro-batch; parameters and
             * optimizer state do not: peak keeps its non-activation part */
            double inter = (double)m->intermediate * ratio;
            double peak = (double)m->peak + ((double)m->intermediate * (ratio - 1));
            double need = peak + (double)m->initial + (double)s->succ_stages * inter;
            if (m->avail > 0 && (out->worst_stage < 0 ||
                                 need - (double)m->avail > out->worst_need - out->worst_avail)) {
                out->worst_stage = (int)k;
                out->worst_need = need;
                out->worst_avail = (double)m->avail;
            }
            if (m->avail > 0 && need > (double)m->avail)
                out->fits = 0;
        }
    }
    out->cost = out->sum_cost;
    if (plan->micro_batches > 1) /* 0 x an infinite stage cost would be NaN */
        out->cost += (plan->micro_batches - 1) * out->max_stage_cost;
    return APSOLVE_OK;
}
