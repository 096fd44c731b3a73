/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Beyond Alpa's objective: the full iteration estimate of a plan. Alpa's
 * T = Σ c_k + (B − 1)·max c_k ignores what an iteration pays besides stage
 * compute; this adds, from the stage placements the sweep stored and the
 * sweep's hardware row (docs/solver.md "Beyond Alpa's objective"):
 *  - cross-stage transfers: every input of stage k that an earlier stage j
 *    outputs (matched by tensor index; j the latest such stage) is sent
 *    j -> k as an activation and its gradient k -> j, each micro-batch. Per
 *    device the shard of the receiving spec (bytes / Π Chunked(k)), or, for a
 *    plan that says how its framework splits the boundary activation
 *    (plan->boundary_devices), bytes / that many devices; per stage
 *    pair and direction one send-recv, on the intra-host (scale-up) link
 *    when both submeshes lie in one NCCL node (where costdb_stage_layout
 *    places them, the layout apreport lists), else across nodes;
 *  - the gradient all-reduce, once per iteration: parameters whose spec has
 *    Replicated(replicas=r) entries are grouped by the logical mesh axes they
 *    are replicated over; each group costs a ring all-reduce on the link that
 *    axis crosses (axis 0 crosses hosts iff a > 1 and the submesh spans
 *    hosts, axis 1 iff b > M, both axes iff the submesh spans hosts), over
 *    the NCCL nodes its hosts cover where the stage sits: a stage that
 *    straddles a scale-up domain's edge pays the network there, and an
 *    entry's apply_cost, priced inside the domain, that difference;
 *  - the optimizer step, once per iteration: Adam's bytes per local
 *    parameter element through device memory.
 *    Every message, collective and Adam step is priced by costdb/collective.c,
 *    the functions the profiler prices its entries with, on the fabric of the
 *    sweep's hardware row (its multi-rail adapters and bus efficiency too).
 * With no overlap of communication and compute, every stage's steady-state
 * period grows by the sends it makes per micro-batch:
 *   full = Σ c_k + Σ_pairs 2·t_pair + (B − 1)·max_k (c_k + send_fwd_k +
 *          send_bwd_k) + max_k (grad_sync_k + optimizer_k),
 * stages running apply-grad in parallel. When every stage's entry carries
 * its profiled apply_cost (schema 2: gradient sync and optimizer as the
 * variant's ZeRO stage shards them), max_k apply_cost_k replaces the last
 * term; the placement path stays for older databases. This blocking
 * exchange is Megatron-Core's non-interleaved schedule's. Interleaved plans
 * (v chunks per device, Megatron-Core's schedule) use
 * (Σ c_k + (vB − 1)·max c_k)/v plus the exchanges that schedule leaves
 * exposed (its warm-up and cool-down block, its steady state overlaps:
 * schedule.h's apsolve_schedule_p2p_exposed); interleaved-zb and zbv plans
 * (Σ c_k + (vB − 1)·max period)/v and v times the transfers (schedule.h's
 * transfer factor); ZB-H1 plans the 1F1B figure less the weight-gradient
 * passes' fill of the bubble (schedule.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "schedule.h"
#include "solver_int.h"
#include "stage_layout.h"

/* Product of the dims of a stored shape ("" is a scalar); 0 when the text
 * is not a shape. */
static double shape_elements(const char *shape)
{
    int64_t d[COSTDB_MAX_DIMS];
    int n = costdb_shape_parse(shape, d, COSTDB_MAX_DIMS);
    double e = 1;
    if (n < 0)
        return 0;
    for (int k = 0; k < n; k++)
        e *= (double)d[k];
    return e;
}

/* What a ShardingSpec text says about one device's share and the
 * replication: chunks = Π Chunked(k); mask = the logical axes (bit 0: axis
 * 0, bit 1: axis 1) the tensor is replicated over, replicas = the devices
 * holding each copy (the text parsed by costdb_spec_parse). */
typedef struct SpecInfo {
    double chunks;
    int mask, replicas;
} SpecInfo;

static void spec_info(const char *spec, int a, int b, SpecInfo *si)
{
    CostdbLayout l;
    int n[2] = {a, b}, split[2] = {0, 0};
    si->chunks = 1;
    si->mask = 0;
    si->replicas = 1;
    if (costdb_spec_parse(spec, a, b, &l, NULL, 0) == 0) {
        for (int d = 0; d < l.ndim; d++) {
            int x = l.mesh_axis_of_dim[d];
            if (x == 2) {
                si->chunks *= (double)a * b;
                split[0] = split[1] = 1;
            } else if (x >= 0) {
                si->chunks *= n[x];
                split[x] = 1;
            }
        }
    }
    /* a spec that does not fit the mesh counts as replicated everywhere:
     * the most gradient traffic */
    for (int x = 0; x < 2; x++)
        if (n[x] > 1 && !split[x]) {
            si->mask |= 1 << x;
            si->replicas *= n[x];
        }
}

static double local_bytes(const CostdbPlacement *pl, int a, int b)
{
    SpecInfo si;
    spec_info(pl->sharding_spec, a, b, &si);
    return shape_elements(pl->shape) * costdb_dtype_bytes(pl->dtype) / si.chunks;
}

/* One message of bytes between two stages, priced as the profiler prices a
 * send-recv (costdb/collective.c): on the intra-host (scale-up) link, or,
 * between two NCCL nodes (hosts, or scale-up domains of several hosts),
 * on one GPU's share of the node's adapters. */
static double link_seconds(const CostdbFabric *f, int inter, double bytes)
{
    return costdb_domain_collective_seconds(f, COSTDB_COLL_SEND_RECV, bytes, 2, inter ? 2 : 1);
}

/* Does the ring over the logical axes in mask leave one host? */
static int axes_cross_hosts(int mask, const ApsolveStage *s, int M)
{
    if (mask == 1)
        return s->logical_a > 1 && s->hosts > 1;
    if (mask == 2)
        return M > 0 && s->logical_b > M;
    return s->hosts > 1;
}

/* Stages j and k (nj and nk hosts), placed at spots sj and sk
 * (costdb_stage_layout), talk inside one NCCL node (a host, or a scale-up
 * domain of several) only if all their devices share it: each lies in one
 * node, and the hosts from the first's to the last's cover one. A stage
 * with no place talks across. */
static int pair_inter(const CostdbFabric *f, const CostdbStageSpot *sj, int nj,
                      const CostdbStageSpot *sk, int nk)
{
    int lo, hi;
    if (sj->first_host < 0 || sk->first_host < 0 || sj->domains != 1 || sk->domains != 1)
        return 1;
    lo = sj->first_host < sk->first_host ? sj->first_host : sk->first_host;
    hi = sj->first_host + nj > sk->first_host + nk ? sj->first_host + nj : sk->first_host + nk;
    return costdb_hosts_domains(f, lo, hi - lo) != 1;
}

/* The NCCL nodes the widest group of the ring over the logical axes in
 * mask covers on the stage's hosts from spot (costdb_stage_layout): axis 0
 * (and both) reach every host of the stage; axis 1 alone, groups of
 * logical_b devices, b / M hosts each from the stage's first. 0: no spot. */
static int axes_placed_domains(const CostdbFabric *f, int mask, const ApsolveStage *s, int M,
                               const CostdbStageSpot *spot)
{
    int g, worst = 0;
    if (!spot || spot->first_host < 0)
        return 0;
    if (mask != 2 || M <= 0 || s->logical_b <= M)
        return spot->domains;
    g = s->logical_b / M;
    for (int h = 0; g > 0 && h + g <= s->hosts; h += g) {
        int d = costdb_hosts_domains(f, spot->first_host + h, g);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Apply-grad of one stage: the all-reduce per replication group and Adam.
 * A group whose hosts, where the stage sits (spot), cover more NCCL nodes
 * than its profile priced (a stage straddling a scale-up domain's edge) is
 * priced over those nodes, on the network; e->straddle is that price less
 * the profile's. */
static void stage_apply_grad(const CostdbFabric *hw, const ApsolveStage *s, int M,
                             const CostdbStageSpot *spot, const CostdbPlacement *pl, size_t n,
                             ApsolveStageEstimate *e)
{
    double group_bytes[4] = {0, 0, 0, 0}, opt_bytes = 0;
    int group_r[4] = {1, 1, 1, 1};
    for (size_t a = 0; a < n; a++) {
        SpecInfo si;
        double b, g;
        if (strcmp(pl[a].role, "param"))
            continue;
        spec_info(pl[a].sharding_spec, s->logical_a, s->logical_b, &si);
        g = costdb_dtype_bytes(pl[a].dtype);
        b = shape_elements(pl[a].shape) * g / si.chunks;
        e->param_bytes += b;
        opt_bytes += costdb_adam_bytes(&hw->adam, b / g, g, g);
        if (si.mask) {
            group_bytes[si.mask] += b;
            if (si.replicas > group_r[si.mask])
                group_r[si.mask] = si.replicas;
        }
    }
    for (int m = 1; m < 4; m++) {
        int inter, priced, placed;
        double t;
        if (group_r[m] <= 1)
            continue;
        inter = axes_cross_hosts(m, s, M);
        e->grad_bytes += group_bytes[m];
        t = costdb_collective_seconds(hw, COSTDB_COLL_ALL_REDUCE, group_bytes[m], group_r[m],
                                      inter ? s->hosts : 1, inter);
        priced = costdb_collective_domains(hw, group_r[m], inter ? s->hosts : 1, 0, inter);
        placed = inter ? axes_placed_domains(hw, m, s, M, spot) : 0;
        if (placed > priced) {
            double there = costdb_domain_collective_seconds(hw, COSTDB_COLL_ALL_REDUCE,
                                                            group_bytes[m], group_r[m], placed);
            e->straddle += there - t;
            t = there;
        }
        e->grad_sync += t;
        if (group_r[m] > e->replicas)
            e->replicas = group_r[m];
        e->grad_inter |= inter;
    }
    e->optimizer = costdb_memory_seconds(hw, opt_bytes);
}

/* 1 when no full estimate of sweep_id's plans has a straddle term: the
 * sweep names no hardware the estimate can read (it is then not available
 * and apsolve_full_price is the total_cost), or its fabric's NCCL node is
 * the host (costdb_fabric_node_gpus(f) = gpus_per_host: no scale-up domain
 * of several hosts). Then stage_apply_grad never takes its straddle
 * branch, placed <= priced for every group m (docs/performance.md, "The
 * chunked searches' bar without the apply term"): with no domain of
 * several hosts costdb_collective_domains gives priced = s->hosts when the
 * group crosses hosts (s->hosts >= 2 there, or r >= 2 when not), and
 * costdb_hosts_domains counts hosts, so placed is the stage's hosts
 * (axes 0, both) or at most the hosts g <= s->hosts of one axis-1 group
 * (its loop keeps h + g <= s->hosts), or 0 (no spot, or not crossing
 * with priced 1). 0 where a straddle may be priced (a multi-host domain;
 * there costdb_domain_collective_seconds is not monotone in the domains
 * from the code alone, so straddle may be negative). */
int apsolve_sweep_straddle_free(struct Costdb *db, int64_t sweep_id)
{
    CostdbSweep sw;
    CostdbHardware hw;
    CostdbFabric f;
    if (!db || costdb_sweep_get(db, sweep_id, &sw) < 0 || sw.hardware_id <= 0 ||
        costdb_hardware_get(db, sw.hardware_id, &hw) < 0)
        return 1;
    costdb_fabric_from_hardware(&hw, &f);
    return !(costdb_fabric_node_gpus(&f) > f.gpus_per_host);
}

int apsolve_full_estimate_ex(struct Costdb *db, int64_t sweep_id, const ApsolvePlan *plan,
                             double activation_scale, ApsolveFullEstimate *out,
                             ApsolveStageEstimate *stages)
{
    CostdbSweep sw;
    CostdbHardware hw;
    CostdbFabric fabric;
    CostdbPlacement **pls = NULL;
    ApsolveStageEstimate *est = NULL;
    size_t *npl = NULL, K;
    CostdbStageSpot *spot = NULL;
    int *hosts = NULL, *gpus = NULL, rc = APSOLVE_OK, M;

    if (!db || !plan || !out || !(activation_scale > 0))
        return APSOLVE_EINVAL;
    K = plan->n_stages;
    memset(out, 0, sizeof *out);
    out->apply_stage = -1;
    if (stages)
        memset(stages, 0, K * sizeof *stages);
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
    costdb_fabric_from_hardware(&hw, &fabric);
    pls = calloc(K, sizeof *pls);
    npl = calloc(K, sizeof *npl);
    spot = calloc(K, sizeof *spot);
    hosts = calloc(K, sizeof *hosts);
    gpus = calloc(K, sizeof *gpus);
    est = stages ? stages : calloc(K, sizeof *est);
    if (!pls || !npl || !spot || !hosts || !gpus || !est) {
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
        hosts[k] = s->hosts;
        gpus[k] = s->gpus;
        est[k].compute = s->cost;
        est[k].replicas = 1;
    }
    /* where the stages sit: the one layout apreport lists too */
    costdb_stage_layout(&fabric, sw.cluster_hosts, M, hosts, gpus, K, spot);
    for (size_t k = 0; k < K; k++) {
        est[k].first_device = spot[k].first_host < 0 ? -1
                                                      : spot[k].first_host * M + spot[k].first_gpu;
        est[k].domains = spot[k].domains;
        est[k].priced_domains = spot[k].priced_domains;
    }
    /* Cross-stage transfers per micro-batch: bytes per (producer j,
     * consumer k), one message each way. */
    for (size_t k = 1; k < K; k++) {
        const ApsolveStage *sk = &plan->stages[k];
        for (size_t j = 0; j < k; j++) {
            const ApsolveStage *sj = &plan->stages[j];
            double bytes = 0, t;
            int inter;
            for (size_t a = 0; a < npl[k]; a++) {
                const CostdbPlacement *in = &pls[k][a];
                size_t src = K;
                if (strcmp(in->role, "input"))
                    continue;
                for (size_t q = k; q-- > 0 && src == K;)
                    for (size_t b = 0; b < npl[q]; b++)
                        if (!strcmp(pls[q][b].role, "output") &&
                            pls[q][b].tensor_index == in->tensor_index) {
                            src = q;
                            break;
                        }
                if (src == j)
                    bytes += (plan->boundary_devices > 0
                                  ? shape_elements(in->shape) * costdb_dtype_bytes(in->dtype) /
                                        plan->boundary_devices
                                  : local_bytes(in, sk->logical_a, sk->logical_b)) *
                             activation_scale;
            }
            if (bytes <= 0)
                continue;
            inter = pair_inter(&fabric, &spot[j], sj->hosts, &spot[k], sk->hosts);
            t = link_seconds(&fabric, inter, bytes);
            est[j].send_fwd_bytes += bytes;
            est[j].send_fwd += t;
            est[j].send_inter |= inter;
            est[k].send_bwd_bytes += bytes;
            est[k].send_bwd += t;
            est[k].send_inter |= inter;
            out->transfer_bytes += bytes;
            out->transfers += 2 * t;
        }
    }
    {
        int from_entries = 1;
        for (size_t k = 0; k < K; k++)
            if (!(plan->stages[k].apply_cost >= 0) || !isfinite(plan->stages[k].apply_cost))
                from_entries = 0;
        out->apply_from_entries = from_entries;
        for (size_t k = 0; k < K; k++) {
            double apply;
            stage_apply_grad(&fabric, &plan->stages[k], M, &spot[k], pls[k], npl[k], &est[k]);
            est[k].period = est[k].compute + est[k].send_fwd + est[k].send_bwd;
            /* the entry's apply_cost was priced where the profile placed
             * the stage: a straddle adds its network price */
            apply = from_entries ? plan->stages[k].apply_cost + est[k].straddle
                                 : est[k].grad_sync + est[k].optimizer;
            est[k].apply = apply;
            if (out->apply_stage < 0 || apply > out->apply) {
                out->grad_sync = est[k].grad_sync;
                out->optimizer = est[k].optimizer;
                out->apply = apply;
                out->apply_stage = (int)k;
            }
        }
    }
    {
        double sum = 0, period = 0, compute = 0, x = 0, cf = INFINITY, cb = INFINITY;
        int v = plan->virtual_stages > 1 ? plan->virtual_stages : 1;
        for (size_t k = K; k-- > 0;) {
            const ApsolveStage *s = &plan->stages[k];
            sum += est[k].compute;
            if (est[k].period > period)
                period = est[k].period;
            if (est[k].compute > compute)
                compute = est[k].compute;
            x = est[k].send_fwd > x ? est[k].send_fwd : x;
            x = est[k].send_bwd > x ? est[k].send_bwd : x;
            cf = s->fwd_cost / v < cf ? s->fwd_cost / v : cf;
            cb = s->bwd_cost / v < cb ? s->bwd_cost / v : cb;
        }
        if (v > 1 && plan->schedule == APSOLVE_SCHEDULE_INTERLEAVED) {
            /* Megatron-Core's interleaved schedule: the chunks' compute in
             * the paper's closed form, and what its warm-up, cool-down and
             * steady state leave exposed of the exchanges (schedule.h):
             * the largest boundary's (the wrap from the last rank to the
             * first is one of them) against the shortest chunk's passes */
            out->p2p_exposed = apsolve_schedule_p2p_exposed(
                APSOLVE_SCHEDULE_INTERLEAVED, v, plan->micro_batches, (int)K, x, cf, cb);
            out->pipeline = apsolve_schedule_base_time(v, plan->micro_batches, sum, compute) +
                            out->p2p_exposed;
        } else if (v > 1) {
            out->pipeline = apsolve_schedule_base_time(v, plan->micro_batches, sum, period) +
                            out->transfers * apsolve_schedule_transfer_factor(
                                                 (ApsolveSchedule)plan->schedule, v);
        } else {
            /* Alpa's T with the first micro-batch's transfers on its
             * crossing of the stages */
            out->pipeline = apsolve_schedule_base_time(1, plan->micro_batches,
                                                       sum + out->transfers, period);
        }
        /* zero-bubble: the deferred W fill part of the bubble (schedule.h) */
        out->pipeline -= apsolve_stages_zb_saving(plan->schedule, v, plan->micro_batches,
                                                  plan->stages, K);
        out->total = out->apply_from_entries ? out->pipeline + out->apply
                                             : out->pipeline + out->grad_sync + out->optimizer;
        out->available = isfinite(out->total);
        if (!out->available)
            snprintf(out->why, sizeof out->why, "a stage cost is not finite");
    }
cleanup:
    if (pls)
        for (size_t k = 0; k < K; k++)
            free(pls[k]);
    free(pls);
    free(npl);
    free(spot);
    free(hosts);
    free(gpus);
    if (est != stages)
        free(est);
    return rc;
}

int apsolve_full_estimate(struct Costdb *db, int64_t sweep_id, const ApsolvePlan *plan,
                          ApsolveFullEstimate *out)
{
    return apsolve_full_estimate_ex(db, sweep_id, plan, 1.0, out, NULL);
}
