/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HSDP and FSDP2's reshard_after_forward of a --parallel ZeRO-3 plan
 * (hsdp.h; the model, with the PyTorch, torchtitan and DeepSpeed code it
 * follows, is in docs/hsdp.md). The stored ZeRO-3 entry is the profiler's
 * (profiler/sharding/program_zero.c, shard_apply_zero): its parameters
 * replicated over the data-parallel axis, P bytes, sharded over dp; one
 * all-gather per module (an operator holding parameters) in the forward
 * and again in the backward, one reduce-scatter per module in the
 * backward, each of the module's share of P. Collectives are priced by
 * costdb/collective.c, the one price of a message; Adam's bytes by
 * costdb_adam_bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "hsdp.h"
#include "session.h"
#include "solver_int.h"

/* The per-module collectives of kind k over a group of n ranks stride
 * devices apart: one collective_seconds per module of bytes[0..count), as
 * the stage program issues them (program_zero.c, push_module_colls). */
static double modules_seconds(const CostdbFabric *f, CostdbCollKind k, const double *bytes,
                              int count, int n, int stride, int M)
{
    double t = 0;
    for (int i = 0; i < count; i++)
        t += costdb_strided_collective_seconds(f, k, bytes[i], n, stride, M);
    return t;
}

/* Pieces a placement's tensor is cut into on each axis of logical mesh
 * (a, b), from its ShardingSpec; -1 when the spec does not parse. */
static int axis_pieces(const CostdbPlacement *pl, int a, int b, int nd, int *p0, int *p1)
{
    CostdbLayout lay;
    char err[8];
    if (costdb_spec_parse(pl->sharding_spec, a, b, &lay, err, sizeof err) < 0 || lay.ndim != nd)
        return -1;
    *p0 = *p1 = 1;
    for (int d = 0; d < nd && d < COSTDB_MAX_DIMS; d++) {
        int x = lay.mesh_axis_of_dim[d];
        if (x == 0 || x == 2)
            *p0 = a;
        if (x == 1 || x == 2)
            *p1 = b;
    }
    return 0;
}

/* The module of a parameter: its path without the last component
 * ("h.0/attn/c_attn" of "h.0/attn/c_attn/weight"), as the operator that
 * reads it is named. */
static size_t module_len(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? (size_t)(slash - name) : strlen(name);
}

int apsolve_hsdp_stage(struct Costdb *db, int64_t sweep, int gpus_per_host, int start, int end,
                       int s, int c, const ApsolveHsdpLayout *l, ApsolveHsdpStage *out,
                       char *why, size_t len)
{
    CostdbPlacement *pl = NULL;
    CostdbFabric f;
    size_t n = 0, last_len = 0;
    const char *last = NULL;
    double esize = 0, *mod = NULL;
    int G = l->dp, S = l->shard > 0 ? l->shard : l->dp, M = gpus_per_host, k = -1;
    memset(out, 0, sizeof *out);
    if (apsolve_stage_inputs(db, sweep, start, end, s, c, "the HSDP collectives", &f, &pl, &n,
                             why, len) < 0)
        return -1;
    if (!(mod = calloc(n ? n : 1, sizeof *mod))) {
        free(pl);
        snprintf(why, len, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t d[COSTDB_MAX_DIMS];
        int nd = costdb_shape_parse(pl[i].shape, d, COSTDB_MAX_DIMS), p0, p1;
        double el = 1, b;
        size_t ml = module_len(pl[i].tensor_name);
        if (strcmp(pl[i].role, "param") || nd < 0 ||
            axis_pieces(&pl[i], l->dp, l->tp, nd, &p0, &p1) < 0 || p0 > 1)
            continue; /* not a parameter ZeRO shards (one split over dp already) */
        for (int x = 0; x < nd; x++)
            el *= (double)d[x];
        el /= p1;
        if (costdb_dtype_bytes(pl[i].dtype) > 0)
            esize = costdb_dtype_bytes(pl[i].dtype);
        b = el * (esize > 0 ? esize : 2);
        /* a parameter of another module than the one before opens one */
        if (!last || ml != last_len || strncmp(last, pl[i].tensor_name, ml))
            k++;
        last = pl[i].tensor_name;
        last_len = ml;
        mod[k] += b;
        out->param_elems += el;
        out->param_bytes += b;
    }
    free(pl);
    out->modules = k + 1;
    for (int i = 0; i < out->modules; i++)
        out->largest = mod[i] > out->largest ? mod[i] : out->largest;
    if (!(out->param_bytes > 0) || G <= 1) {
        free(mod);
        return 0;
    }
    if (!(esize > 0))
        esize = 2;
    {
        double P = out->param_bytes, x = 1.0 / S - 1.0 / G;
        double per_elem = costdb_adam_state_bytes(&f.adam, esize); /* Adam (and the master) */
        int R = G / S;
        /* A phase's per-module collectives over the dp axis as stored
         * (stride tp) and over the shard group of S ranks: the inner
         * dimension of the (replicate, shard) mesh, so stride tp as well
         * (torchtitan's dense mesh pp, dp_replicate, fsdp, tp) */
        out->gather_before = modules_seconds(&f, COSTDB_COLL_ALL_GATHER, mod, out->modules, G,
                                             l->tp, M);
        out->gather_after = modules_seconds(&f, COSTDB_COLL_ALL_GATHER, mod, out->modules, S,
                                            l->tp, M);
        out->rs_before = modules_seconds(&f, COSTDB_COLL_REDUCE_SCATTER, mod, out->modules, G,
                                         l->tp, M);
        out->rs_after = modules_seconds(&f, COSTDB_COLL_REDUCE_SCATTER, mod, out->modules, S,
                                        l->tp, M);
        /* The gradient shard, P / S, all-reduced over the R replicas that
         * hold it (stride S tp), once per iteration: FSDP2's foreach_reduce
         * all-reduces the reduce-scattered shard over the replicate group,
         * which torch.distributed.pipelining and DeepSpeed's MiCS
         * (allreduce_mics_shard_grads) do at the accumulation boundary */
        if (R > 1) {
            double shard = P / S;
            out->allreduce = modules_seconds(&f, COSTDB_COLL_ALL_REDUCE, &shard, 1, R,
                                             S * l->tp, M);
        }
        out->comm_fwd = out->gather_after - out->gather_before;
        out->comm_bwd = out->gather_after - out->gather_before + out->rs_after - out->rs_before;
        /* The shard of the parameters (an input of the forward and of the
         * backward) and of the gradients (the backward's accumulation
         * buffers, at the width of the hardware row's grad_reduce_bytes:
         * costdb_grad_buffer_ratio, the stage program's rule) grows from
         * P / G to P / S: the backward's peak by P x (1 + ratio) (every
         * parameter taken as read by the backward: the stored entry does
         * not say which are not); the initial state by Adam's bytes of the
         * shard (shard_apply_zero's counts) */
        out->peak_delta = (int64_t)llround(
            P * x * (1.0 + costdb_grad_buffer_ratio(f.grad_reduce_bytes, esize)));
        out->initial_delta = (int64_t)llround(out->param_elems * per_elem * x);
        out->apply_delta = out->allreduce +
                           costdb_memory_seconds(&f, costdb_adam_bytes(&f.adam, out->param_elems * x, esize, esize));
        if (!l->raf) {
            /* reshard_after_forward off: the backward finds every module
             * gathered (no all-gather); the temporaries hold the stage's
             * gathered parameters, P, where the stored program holds the
             * module and the next one prefetched (2 x the largest) in the
             * forward and those and the module's gradient (3 x) in the
             * backward: both phases grow by P - 2 x the largest */
            out->comm_bwd -= out->gather_after;
            out->peak_delta += (int64_t)llround(P - 2.0 * out->largest);
        }
    }
    free(mod);
    return 0;
}

/* Entry idx of q under the HSDP layout x. */
static void transform(ApsolveProblem *q, size_t idx, const ApsolveHsdpStage *x)
{
    if (!isfinite(q->cost[idx]) || !(x->param_bytes > 0))
        return;
    apsolve_entry_add(q, idx, &(ApsolveEntryDelta){x->comm_fwd, x->comm_bwd, x->apply_delta,
                                                   x->peak_delta, x->initial_delta});
}

int apsolve_hsdp_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                         const ApsolveStageSpec *specs, size_t n, const ApsolveHsdpLayout *l,
                         ApsolveProblem **out, ApsolveHsdpStage *first, char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    int rc;
    *out = NULL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    for (size_t k = 0; k < n; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        int s = apsolve_find_submesh(q, sp->hosts, sp->gpus), best = -1;
        memset(&first[k], 0, sizeof first[k]);
        for (int c = 0; s >= 0 && c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            size_t idx = apsolve_index(q, sp->start_layer, sp->end_layer, s, c);
            ApsolveHsdpStage x;
            if (!cf->valid || cf->logical_a != l->dp || cf->logical_b != l->tp ||
                cf->force_batch_dim != 0 || cf->variant.zero != 3 || !isfinite(q->cost[idx]))
                continue;
            if (apsolve_hsdp_stage(db, sweep, q->cluster_gpus, sp->start_layer, sp->end_layer, s,
                                   c, l, &x, why, len)) {
                apsolve_problem_free(&q);
                return APSOLVE_EDB;
            }
            transform(q, idx, &x);
            if (best < 0 || cf->variant.memory_level < best) {
                best = cf->variant.memory_level;
                first[k] = x;
            }
        }
    }
    *out = q;
    return APSOLVE_OK;
}

void apsolve_hsdp_frameworks(int dp_shard, int tp, int raf, ApsolveFwVerdict *v)
{
    const int f = APSOLVE_FW_DEEPSPEED, m = APSOLVE_FW_MEGATRON;
    /* Megatron-FSDP's post-forward hook releases each FSDP unit's gathered
     * parameters (megatron_fsdp.py _post_forward, lines 956-975 at
     * core_v0.19.0), with no switch to keep them */
    if (!raf && (v->runs & (1u << m))) {
        v->runs &= ~(1u << m);
        snprintf(v->why[m], sizeof v->why[m], "raf=0: Megatron-FSDP reshards each transformer "
                 "layer after its forward and gathers it again for the backward");
    }
    if (!(v->runs & (1u << f)))
        return;
    if (!raf)
        snprintf(v->why[f], sizeof v->why[f], "raf=0: its stage 3 releases a module's "
                 "parameters after use and has no reshard_after_forward control");
    else if (dp_shard > 0 && tp > 1)
        snprintf(v->why[f], sizeof v->why[f], "HSDP with tp %d: MiCS (mics_shard_size) shards "
                 "over consecutive global ranks (create_mics_comm_groups ignores the model-"
                 "parallel grid), so only pure data parallelism", tp);
    else
        return;
    v->runs &= ~(1u << f);
}

int apsolve_hsdp_parse_check(const ApsolveParallel *par, int shard_seen, int raf_seen,
                             char *errbuf, size_t errlen)
{
    if (shard_seen && par->zero != 3) {
        snprintf(errbuf, errlen, "dp_shard=%d shards ZeRO-3's parameters, gradients and "
                 "optimizer state within groups of %d replicas (HSDP): it needs zero=3, not "
                 "zero=%d", par->dp_shard, par->dp_shard, par->zero);
        return -1;
    }
    if (raf_seen && par->zero != 3) {
        snprintf(errbuf, errlen, "raf is FSDP2's reshard_after_forward of ZeRO-3's gathered "
                 "parameters: it needs zero=3, not zero=%d", par->zero);
        return -1;
    }
    if (shard_seen && par->dp_shard < 2) {
        snprintf(errbuf, errlen, "dp_shard=1 shards nothing: that is plain data parallelism "
                 "(zero=0)");
        return -1;
    }
    if (shard_seen && par->dp % par->dp_shard) {
        snprintf(errbuf, errlen, "dp_shard=%d does not divide dp=%d: HSDP's mesh is dp / "
                 "dp_shard replicas of dp_shard shards (torchtitan's data_parallel_replicate_"
                 "degree x data_parallel_shard_degree is the data-parallel degree)",
                 par->dp_shard, par->dp);
        return -1;
    }
    if ((shard_seen || raf_seen) && (par->cp > 1 || par->ep > 1 || par->etp > 0)) {
        snprintf(errbuf, errlen, "dp_shard and raf are not priced with %s (docs/hsdp.md)",
                 par->cp > 1 ? "context parallelism (cp)" : "expert parallelism (ep, etp)");
        return -1;
    }
    return 0;
}
