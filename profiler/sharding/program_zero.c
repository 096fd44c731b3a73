/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZeRO in the stage program (docs/variants.md, "ZeRO"): what sharding the
 * optimizer state, the gradients and the parameters over the
 * gradient-synchronisation group changes in the memory fields, the
 * apply-grad collectives and the per-micro-batch collectives.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "grow.h"
#include "sharding/program_int.h"

/* The parameter bytes of operator o of the stage (those it is the first
 * to read, so a tied parameter counts once); the build's table of them
 * where it has one for these facts (ShardStage.op_param). */
double shard_op_param_bytes(const ShardStage *st, const TInfo *ti, int o)
{
    const double *tab = shard_op_param_table(st, ti);
    return tab ? tab[o - st->op_begin] : shard_op_param_bytes_of(st, ti, o);
}

/* The ops without parameter bytes add nothing to any end's per-op loop
 * but a test (an accumulation add of 0 elements, a module of none), and
 * stage_param_bytes' sum is the same for every program of the build: both
 * read from the table once here. The total is summed over every op in
 * order, as stage_param_bytes sums it. */
void shard_param_ops_index(ShardStage *st, int *ops)
{
    double total = 0.0;
    int n = 0;
    for (int o = st->op_begin; o < st->op_end; o++) {
        double sum = st->op_param[o - st->op_begin];
        total += sum;
        if (sum > 0.0)
            ops[n++] = o;
    }
    st->param_ops = ops;
    st->n_param_ops = n;
    st->param_total = total;
}

double shard_op_param_bytes_of(const ShardStage *st, const TInfo *ti, int o)
{
    const ApprofGraph *g = st->g;
    double sum = 0.0;
    for (int i = 0; i < g->ops[o].n_inputs; i++) {
        int t = g->ops[o].inputs[i];
        if (g->tensors[t].role == APPROF_TENSOR_PARAM && st->t_first[t] == o)
            sum += ti[t].local;
    }
    return sum;
}

/* The bytes ZeRO-3's all-gathers move for operator o's parameters of
 * min_bytes bytes or more (those it is the first to read): with wire, each
 * at the bytes an element it is gathered in (an FP8 weight in FP8 under
 * the spec's fp8_param_gather: shard_fp8_gathered_ratio, program_fp8.c),
 * else at its own bytes. */
static double gathered_bytes(const ShardStage *st, const TInfo *ti, int o, double min_bytes,
                             int wire)
{
    const ApprofGraph *g = st->g;
    double sum = 0.0;
    for (int i = 0; i < g->ops[o].n_inputs; i++) {
        int t = g->ops[o].inputs[i];
        if (g->tensors[t].role == APPROF_TENSOR_PARAM && st->t_first[t] == o &&
            ti[t].local >= min_bytes)
            sum += ti[t].local * (wire ? shard_fp8_gathered_ratio(st, o, t) : 1.0);
    }
    return sum;
}

/* The stage's parameter bytes, each parameter once (shard_op_param_bytes). */
static double stage_param_bytes(const ShardStage *st, const TInfo *ti)
{
    double total = 0.0;
    if (shard_op_param_table(st, ti)) /* summed so once per build */
        return st->param_total;
    for (int o = st->op_begin; o < st->op_end; o++)
        total += shard_op_param_bytes(st, ti, o);
    return total;
}

/* gathered_bytes with no least size: an op's parameter bytes
 * (shard_op_param_bytes, the build's table) unless FP8 weights are
 * gathered in FP8 (a ratio other than 1; a local size is never below 0,
 * and x * 1.0 is x: the same sum) */
static double gathered_all(const ShardStage *st, const TInfo *ti, int o, int wire)
{
    if (wire && shard_fp8_zero3_gathers(st))
        return gathered_bytes(st, ti, o, 0.0, wire);
    return shard_op_param_bytes(st, ti, o);
}

/* The largest operator's share of the stage's parameter bytes (with wire,
 * of its bytes as gathered: gathered_bytes). */
static double largest_op_share(const ShardStage *st, const TInfo *ti, int wire)
{
    double total = stage_param_bytes(st, ti), worst = 0.0;
    for (int o = st->op_begin; o < st->op_end; o++) {
        double sum = gathered_all(st, ti, o, wire);
        if (sum > worst)
            worst = sum;
    }
    return total > 0.0 ? worst / total : 1.0;
}

/* The largest checkpoint block's share of the stage's parameter bytes
 * (FSDP2 gathers a whole block; with wire, as gathered). */
static double largest_unit_share(const ShardStage *st, const TInfo *ti, const int *blk, int n_blk,
                                 int wire)
{
    double total = stage_param_bytes(st, ti), worst = 0.0;
    for (int b = 0; b < n_blk; b++) {
        int end = b + 1 < n_blk ? blk[b + 1] : st->op_end;
        double sum = 0.0;
        for (int o = blk[b]; o < end; o++)
            sum += gathered_all(st, ti, o, wire);
        if (sum > worst)
            worst = sum;
    }
    return total > 0.0 ? worst / total : 1.0;
}

/* The modules of ZeRO-3's per-module collectives (push_module_colls):
 * the stage's operators that hold parameters (shard_op_param_bytes > 0),
 * in order, their parameter bytes and their bytes as gathered
 * (gathered_all with wire), and the stage's parameter bytes
 * (stage_param_bytes). A serial ZeRO-3 program pushes three runs of them
 * (the forward's all-gathers, the backward's gradient collectives and
 * all-gathers) and takes its largest module from them: read once per
 * program, the same values as read at each use. */
typedef struct {
    int n;
    int *op;
    double *own, *gathered;
    double total;
} ZeroModules;

static int zero_modules_make(const ShardStage *st, const TInfo *ti, ZeroModules *zm)
{
    size_t n = st->n_ops > 0 ? (size_t)st->n_ops : 0;
    /* shard_op_param_bytes: the build's table where it has one */
    const double *tab = shard_op_param_table(st, ti);
    /* gathered_all with wire: the op's parameter bytes unless FP8
     * weights are gathered in FP8 */
    int fp8 = shard_fp8_zero3_gathers(st);
    memset(zm, 0, sizeof *zm);
    if (!n)
        return 0;
    /* one block: the doubles first, then the ops */
    double *d = malloc(n * (2 * sizeof *d + sizeof *zm->op));
    if (!d)
        return APPROF_ENOMEM;
    zm->own = d;
    zm->gathered = d + n;
    zm->op = (int *)(d + 2 * n);
    if (tab) { /* its ops with parameters and its total (shard_param_ops_index) */
        zm->total = st->param_total;
        for (int i = 0; i < st->n_param_ops; i++) {
            int o = st->param_ops[i];
            double sum = tab[o - st->op_begin];
            zm->op[zm->n] = o;
            zm->own[zm->n] = sum;
            zm->gathered[zm->n++] = fp8 ? gathered_bytes(st, ti, o, 0.0, 1) : sum;
        }
        return 0;
    }
    /* the total as stage_param_bytes sums it: every op, in order */
    for (int o = st->op_begin; o < st->op_end; o++) {
        double sum = tab ? tab[o - st->op_begin] : shard_op_param_bytes_of(st, ti, o);
        zm->total += sum;
        if (!(sum > 0.0))
            continue;
        zm->op[zm->n] = o;
        zm->own[zm->n] = sum;
        zm->gathered[zm->n++] = fp8 ? gathered_bytes(st, ti, o, 0.0, 1) : sum;
    }
    return 0;
}

/* largest_op_share from the modules: an operator without parameters
 * has none to gather either (gathered_bytes sums the same tensors), and
 * no share above 0 is the largest, so the same maximum */
static double zero_modules_largest(const ZeroModules *zm, int wire)
{
    double worst = 0.0;
    for (int i = 0; i < zm->n; i++) {
        double sum = wire ? zm->gathered[i] : zm->own[i];
        if (sum > worst)
            worst = sum;
    }
    return zm->total > 0.0 ? worst / zm->total : 1.0;
}

/* ZeRO-3's per-module collectives of kind c->kind in phase ph: one per
 * module (an operator that holds parameters), each of its share of the S
 * bytes (so the bandwidth terms add up to one collective of S, and the
 * per-step ring latency is paid once per module). DeepSpeed's stage 3
 * works module by module both ways (docs/variants.md, "ZeRO"): its hooks
 * all-gather each submodule's parameters before the submodule runs, and it
 * reduce-scatters the gradients one parameter at a time
 * (reduce_gradients_at_owner). An all-gather moves the module's parameters
 * as gathered (gathered_bytes). */
static int push_module_colls(const ZeroModules *zm, ApprofStageProgram *p, int ph, size_t *cap,
                             const ApprofCollective *c, double S)
{
    double total = zm->total;
    if (!(total > 0.0)) {
        ApprofCollective one = *c;
        one.bytes = S;
        return shard_push_coll(p, ph, cap, &one);
    }
    /* shard_push_coll's test, of the group here once (the same for every
     * module) and of each module's bytes below; room for every module
     * made once, and each written in place: the same collectives in the
     * same order as pushed one at a time */
    if (c->group_size <= 1 || !zm->n)
        return 0;
    size_t at = p->n_colls[ph];
    if (at + (size_t)zm->n > *cap && shard_colls_room(p, ph, cap, at + (size_t)zm->n))
        return APPROF_ENOMEM;
    const double *sums = c->kind == APPROF_COLL_ALL_GATHER ? zm->gathered : zm->own;
    ApprofCollective *to = p->colls[ph];
    for (int i = 0; i < zm->n; i++) {
        double bytes = S * (sums[i] / total);
        if (!(bytes > 0))
            continue;
        to[at] = *c;
        to[at++].bytes = bytes;
    }
    p->n_colls[ph] = at;
    return 0;
}

/* Appends the n collectives at src to phase ph's (a run pushed before,
 * each already past shard_push_coll's test). */
static int append_colls(ApprofStageProgram *p, int ph, size_t *cap, const ApprofCollective *src,
                        size_t n)
{
    if (!n)
        return 0;
    if (p->n_colls[ph] + n > *cap && shard_colls_room(p, ph, cap, p->n_colls[ph] + n))
        return APPROF_ENOMEM;
    memcpy(&p->colls[ph][p->n_colls[ph]], src, n * sizeof *src);
    p->n_colls[ph] += n;
    return 0;
}

/* ZeRO-3's second gathers in a backward that reruns the forward (full
 * recomputation; docs/variants.md, "ZeRO-3 and recomputation"). The rerun
 * forward of a block gathers each module before it runs; DeepSpeed then
 * keeps a module gathered for its backward only when the modules used in
 * between hold fewer than COSTDB_ZERO3_MAX_REUSE_DISTANCE parameter
 * elements (stage3_max_reuse_distance, 1e9 by default:
 * deepspeed/runtime/zero/constants.py from v0.3.13, March 2021, on;
 * PartitionedParameterCoordinator._keep_for_later): those are the
 * block's later modules, once in the rerun and once more in the backward,
 * which runs them in reverse. Any other module is released and gathered
 * again for its backward: one more all-gather of its share of S. */
static int push_regathers(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                          size_t *cap, const ApprofCollective *c, double S, const int *blk,
                          int n_blk)
{
    double total, esize = (double)approf_dtype_size(st->g->dtype);
    int rc = 0;
    if (st->variant.recompute != COSTDB_RECOMPUTE_FULL) /* no rerun forward: nothing to sum */
        return 0;
    if (!((total = stage_param_bytes(st, ti)) > 0.0))
        return 0;
    for (int b = 0; b < n_blk && !rc; b++) {
        int end = b + 1 < n_blk ? blk[b + 1] : st->op_end;
        double later = 0.0; /* bytes of the block's modules after o */
        for (int o = end - 1; o >= blk[b] && !rc; o--) {
            double sum = shard_op_param_bytes(st, ti, o);
            if (sum > 0.0 && 2.0 * later / esize >= (double)COSTDB_ZERO3_MAX_REUSE_DISTANCE) {
                ApprofCollective m = *c;
                m.bytes = S * (gathered_all(st, ti, o, 1) / total);
                rc = shard_push_coll(p, 1, cap, &m);
            }
            later += sum;
        }
    }
    return rc;
}

/* DeepSpeed stage 3's defaults at v0.16.4 (deepspeed/runtime/zero/config.py,
 * DeepSpeedZeroConfig): stage3_prefetch_bucket_size 5e7 parameter elements
 * fetched ahead of use, reduce_bucket_size 5e8 gradient elements per
 * reduce-scatter (docs/variants.md, "ZeRO-3 overlap"). */
#define DS_PREFETCH_BUCKET_ELEMS 5e7
#define DS_REDUCE_BUCKET_ELEMS 5e8

/* DeepSpeed stage 3 prefetches only while the gathered parameters it holds
 * (those of the module being fetched and of the modules prefetched and not
 * yet run; persistent ones are not counted) are fewer than
 * stage3_max_live_parameters elements, 1e9 by default: v0.3.13
 * (constants.py ZERO_OPTIMIZATION_MAX_LIVE_PARAMETERS_DEFAULT; the check in
 * stage3.py prefetch_next_sub_modules, line 319) and v0.16.4
 * (partitioned_param_coordinator.py fetch_sub_module, line 381:
 * min(max_n_available_params - n_available_params, prefetch_bucket_sz)).
 * A module of more elements than that prefetches nothing, and the next
 * one is fetched on demand (docs/validation.md, "ZeRO-3 as DeepSpeed
 * v0.3.13 ran it"). */
#define DS_MAX_LIVE_ELEMS 1e9

/* DeepSpeed stage 3 keeps a parameter of fewer than
 * stage3_param_persistence_threshold elements whole on every GPU and never
 * gathers it (ds_persist): 1e5 by default at v0.16.4
 * (deepspeed/runtime/zero/config.py, DeepSpeedZeroConfig.param_persistence_threshold)
 * and at v0.3.13 (constants.py,
 * ZERO_OPTIMIZATION_PARAM_PERSISTENCE_THRESHOLD_DEFAULT). Its gradient is
 * still reduced with the others of its bucket. */
#define DS_PERSISTENCE_ELEMS 1e5

/* The collective that reduces ZeRO-3's gradients: a reduce-scatter, each
 * rank receiving its 1/n (FSDP; DeepSpeed with contiguous_gradients), or
 * under the spec's zero3_grad_all_reduce an all-reduce of the same bucket,
 * each rank receiving all of it (DeepSpeed's stage 3 with
 * contiguous_gradients off, its default from v0.3.13 to v0.4.2:
 * reduce_ipg_grads -> buffered_reduce_fallback -> allreduce_bucket ->
 * dist.all_reduce, deepspeed/runtime/zero/stage3.py at v0.3.13 lines
 * 1700-1710 and 1794-1812; hardware.h). */
static ApprofCollKind zero3_grad_kind(const ShardStage *st)
{
    return st->hw && st->hw->zero3_grad_all_reduce ? APPROF_COLL_ALL_REDUCE
                                                   : APPROF_COLL_REDUCE_SCATTER;
}

/* The bytes of operator o's parameters DeepSpeed gathers: those of
 * DS_PERSISTENCE_ELEMS elements or more (esize bytes each; with wire, as
 * gathered). */
static double ds_gathered_bytes(const ShardStage *st, const TInfo *ti, int o, double esize,
                                int wire)
{
    return gathered_bytes(st, ti, o, DS_PERSISTENCE_ELEMS * esize, wire);
}

/* DeepSpeed's gather of the persistent parameters after every optimizer
 * step (docs/validation.md, "ZeRO-3's per-rank host work in DeepSpeed
 * v0.3.13, counted"). At v0.3.13 (and v0.3.14 to v0.5.10) the end of every
 * backward partitions every gathered parameter, the persistent ones too
 * (stage3.py backward -> _partition_all_parameters ->
 * release_and_reset_parameter, which does not look at ds_persist), and
 * _post_step gathers them again after the step with the coalesced
 * _allgather_params (partition_parameters.py lines 638-700): one
 * all-gather over a list of world_size views, which PyTorch's
 * ProcessGroupNCCL copies out with one copy per rank (as
 * zero3_rank_copies prices for every other gather), then for each
 * persistent parameter of s elements and each rank i with
 * i * ceil(s / G) < s one copy_ of its slice into the parameter (line
 * 687): ceil(s / ceil(s / G)) copies. Each copy moves its slice; all of
 * them move the persistent bytes twice. Under the deepspeed schedule with
 * zero3_rank_copies (the list-form gathers of v0.3.13 to v0.5.0); the
 * gather's own NCCL time (one message of the persistent bytes) is not
 * counted. */
static void shard_zero3_post_step(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                                  int G, double esize)
{
    const ApprofGraph *g = st->g;
    double copies = (double)G, bytes = 0.0;
    for (int o = st->op_begin; o < st->op_end; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            int t = g->ops[o].inputs[i];
            double s = ti[t].local / esize, part;
            if (g->tensors[t].role != APPROF_TENSOR_PARAM || st->t_first[t] != o ||
                !(s >= 1.0) || s >= DS_PERSISTENCE_ELEMS)
                continue;
            part = ceil(s / G);
            copies += ceil(s / part);
            bytes += 2.0 * ti[t].local;
        }
    if (bytes > 0.0) {
        p->zero3_post_step_copies = copies;
        p->zero3_post_step_bytes = bytes;
    }
}

/* The units of an overlapping ZeRO-3 schedule (hw/zero3_overlap.c): FSDP2
 * shards whole checkpoint blocks (torchtitan applies fully_shard to each
 * transformer block), DeepSpeed gathers module by module (an operator that
 * holds parameters). first[u] is unit u's first operator, bytes[u] its
 * parameter bytes, wire[u] the bytes its all-gather moves (FSDP2: the
 * block's as gathered, gathered_bytes), units without parameters are left
 * out. Returns n. */
static int zero3_units(const ShardStage *st, const TInfo *ti, int fsdp2, const int *blk,
                       int n_blk, int *first, double *bytes, double *wire)
{
    int n = 0;
    if (fsdp2) {
        for (int b = 0; b < n_blk; b++) {
            int end = b + 1 < n_blk ? blk[b + 1] : st->op_end;
            double sum = 0.0, w = 0.0;
            for (int o = blk[b]; o < end; o++) {
                sum += shard_op_param_bytes(st, ti, o);
                w += gathered_all(st, ti, o, 1);
            }
            if (sum > 0.0) {
                first[n] = blk[b];
                wire[n] = w;
                bytes[n++] = sum;
            }
        }
        return n;
    }
    for (int o = st->op_begin; o < st->op_end; o++) {
        double sum = shard_op_param_bytes(st, ti, o);
        if (sum > 0.0) {
            first[n] = o;
            wire[n] = ds_gathered_bytes(st, ti, o, (double)approf_dtype_size(st->g->dtype), 1);
            bytes[n++] = sum;
        }
    }
    return n;
}

/* When unit k's all-gather is issued (zero3_issue), for n units of elems[]
 * elements taken in the phase's order (forward: 1..n; backward: n..1). FSDP2
 * prefetches one unit ahead: the next unit's all-gather is issued as the
 * current one's compute starts (implicit forward prefetching: the
 * all-gather stream runs one all-gather ahead, the next copy-in waiting
 * for the current copy-out; FSDPParamGroup._backward_prefetch in the
 * backward), the first at the start of the phase. DeepSpeed
 * (PartitionedParameterCoordinator.fetch_sub_module) fetches the module it
 * needs when it is not yet in flight (issue = the unit itself), waits for
 * it, then prefetches the next modules of its trace while the elements
 * it prefetches stay under stage3_prefetch_bucket_size (the one that
 * crosses the budget included), and only while the gathered elements it
 * holds (gathered_elems of this unit and of those prefetched) are under
 * stage3_max_live_parameters (DS_MAX_LIVE_ELEMS). */
static void zero3_gather_issue(int n, const double *elems, const double *gathered_elems,
                               int fsdp2, int backward, int *issue)
{
    for (int i = 0, q = 0; i < n; i++) {
        int k = backward ? n - 1 - i : i; /* k-th unit run (0-based unit index) */
        double live = 0.0;
        if (fsdp2) {
            issue[k] = i == 0 ? 0 : (backward ? k + 2 : k); /* the unit run before, 1-based */
            continue;
        }
        if (q <= i) {
            issue[k] = k + 1; /* on demand */
            q = i + 1;
        }
        for (int j = i; j < q; j++) /* held: this unit and those prefetched */
            live += gathered_elems[backward ? n - 1 - j : j];
        if (live >= DS_MAX_LIVE_ELEMS)
            continue;
        for (double numel = 0.0; q < n && numel < DS_PREFETCH_BUCKET_ELEMS; q++) {
            int u = backward ? n - 1 - q : q;
            issue[u] = k + 1;
            numel += elems[u];
        }
    }
}

/* ZeRO-3's collectives under an overlapping schedule (hw->zero3_schedule;
 * docs/variants.md, "ZeRO-3 overlap"): per unit an all-gather in the
 * forward and again in the backward (FSDP2's reshard_after_forward, True
 * for every block; DeepSpeed releases a module after use), each marked
 * with its unit and when it is issued, and the gradients' reduce-scatters:
 * FSDP2 one per block, issued as the block's backward ends
 * (FSDPParamGroup.post_backward on the reduce-scatter stream); DeepSpeed
 * in buckets of reduce_bucket_size elements in backward order
 * (DeepSpeedZeroOptimizer_Stage3.reduce_independent_p_g_buckets_and_remove_grads
 * flushes the bucket when the next gradient would overflow it, on the
 * reduce_and_partition_stream since overlap_comm is on for stage 3; the
 * last bucket when the backward ends). Under full recomputation DeepSpeed's
 * second gathers (push_regathers' rule) are issued on demand. */
static int push_zero3_scheduled(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                                size_t *ccap, const ApprofCollective *c, double S,
                                const int *blk, int n_blk)
{
    int fsdp2 = st->hw->zero3_schedule == APPROF_ZERO3_FSDP2, rc = 0, n;
    double total = stage_param_bytes(st, ti), esize = (double)approf_dtype_size(st->g->dtype);
    int cap = st->op_end - st->op_begin > 0 ? st->op_end - st->op_begin : 1;
    int *first = malloc(3 * (size_t)cap * sizeof *first);
    double *bytes = malloc(5 * (size_t)cap * sizeof *bytes);
    if (!first || !bytes) {
        free(first);
        free(bytes);
        return APPROF_ENOMEM;
    }
    int *issue = first + cap, *unit_of = first + 2 * cap;
    double *elems = bytes + cap, *gathered = bytes + 2 * cap, *gathered_elems = bytes + 3 * cap;
    double *wire = bytes + 4 * cap;
    n = zero3_units(st, ti, fsdp2, blk, n_blk, first, bytes, wire);
    for (int u = 0; u < n; u++) {
        elems[u] = bytes[u] / esize;
        /* FSDP2 gathers a block's every parameter; DeepSpeed a module's
         * parameters that are not persistent (a norm's, a bias: none);
         * each moves wire[u] bytes */
        gathered[u] = fsdp2 ? bytes[u] : ds_gathered_bytes(st, ti, first[u], esize, 0);
        gathered_elems[u] = gathered[u] / esize;
    }
    for (int ph = 0; ph < 2 && !rc; ph++) {
        zero3_gather_issue(n, elems, gathered_elems, fsdp2, ph, issue);
        for (int u = 0; u < n && !rc; u++) {
            ApprofCollective m = *c;
            if (!(gathered[u] > 0.0))
                continue;
            m.kind = APPROF_COLL_ALL_GATHER;
            m.bytes = S * (wire[u] / total);
            m.op = first[u];
            m.zero3_unit = u + 1;
            m.zero3_issue = issue[u];
            rc = shard_push_coll(p, ph, &ccap[ph], &m);
        }
    }
    if (!fsdp2 && !rc && st->variant.recompute == COSTDB_RECOMPUTE_FULL) {
        /* the second gathers, on demand (push_regathers' rule) */
        for (int u = 0; u < n; u++)
            unit_of[u] = 0;
        for (int b = 0; b < n_blk && !rc; b++) {
            int end = b + 1 < n_blk ? blk[b + 1] : st->op_end;
            double later = 0.0;
            for (int o = end - 1; o >= blk[b] && !rc; o--) {
                double sum = shard_op_param_bytes(st, ti, o);
                double gsum = ds_gathered_bytes(st, ti, o, esize, 1);
                if (gsum > 0.0 && 2.0 * later / esize >= (double)COSTDB_ZERO3_MAX_REUSE_DISTANCE) {
                    int u = 0;
                    while (u < n && first[u] != o)
                        u++;
                    ApprofCollective m = *c;
                    m.kind = APPROF_COLL_ALL_GATHER;
                    m.bytes = S * (gsum / total);
                    m.op = o;
                    m.zero3_unit = m.zero3_issue = u + 1;
                    rc = shard_push_coll(p, 1, &ccap[1], &m);
                }
                later += sum;
            }
        }
    }
    /* the reduce-scatters, in backward order: units k down to lo */
    for (int k = n - 1, lo; k >= 0 && !rc; k = lo - 1) {
        double bucket = 0.0, bucket_bytes = 0.0;
        lo = k;
        if (fsdp2) {
            bucket_bytes = bytes[k];
        } else {
            /* DeepSpeed's bucket: units k, k-1, ... while they fit (at least one) */
            for (; lo >= 0 && (lo == k || bucket + elems[lo] <= DS_REDUCE_BUCKET_ELEMS); lo--) {
                bucket += elems[lo];
                bucket_bytes += bytes[lo];
            }
            lo++;
        }
        ApprofCollective m = *c;
        m.kind = zero3_grad_kind(st);
        m.bytes = S * (bucket_bytes / total);
        m.op = first[lo];
        m.zero3_unit = lo + 1;
        /* FSDP2: as the block's backward ends; DeepSpeed: as the backward
         * of the unit that overflows the bucket (unit lo - 1, 1-based lo)
         * ends, the last bucket as the backward ends (0) */
        m.zero3_issue = fsdp2 ? k + 1 : lo;
        rc = shard_push_coll(p, 1, &ccap[1], &m);
    }
    free(first);
    free(bytes);
    return rc;
}

/* ZeRO over the gradient-synchronisation group (docs/variants.md): the
 * apply-grad collectives, the optimizer bytes, and for ZeRO >= 1 the
 * optimizer state, >= 2 the gradients (reduce-scattered every
 * micro-batch; ZeRO-3 one module at a time), 3 the parameters
 * (all-gathered before the forward and the backward, one module at a time,
 * and again before a module's backward where the recomputed forward let
 * it go: push_regathers) divided by the group size G. blk[] holds the
 * first op of each of the n_blk checkpoint blocks. read_share
 * is the part of the parameter bytes the backward module reads.
 * APPROF_ENOVARIANT for ZeRO >= 1 without replicas (G = 1). */
int shard_zero_group(const ApprofStageProgram *p)
{
    const ApprofCollective *gs = &p->grad_sync;
    return gs->group_size > 1 && gs->bytes > 0 ? gs->group_size : 1;
}

int shard_apply_zero(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                     double param_elems, double read_share, const int *blk, int n_blk,
                     size_t *ccap)
{
    const ApprofCollective *gs = &p->grad_sync;
    int G = shard_zero_group(p), z = st->variant.zero, rc = 0;
    /* ZeRO-3 overlapped as a framework schedules it (0: serial) */
    int sched = st->hw && G > 1 ? st->hw->zero3_schedule : APPROF_ZERO3_SERIAL;
    /* a parameter read by several ops (tied embeddings) is counted once */
    double S = G > 1 ? fmin(gs->bytes, (double)p->param_bytes) : 0.0, esize = (double)approf_dtype_size(st->g->dtype);
    double S_elems = S / esize, per_elem = shard_adam_state_bytes(st, esize);
    double cut = S * (1.0 - 1.0 / G);
    ApprofCollective c = *gs;
    ZeroModules zm = {0};
    c.bytes = S;
    if (z > 0 && G <= 1)
        return APPROF_ENOVARIANT;
    /* ZeRO-3 pushed module by module (push_module_colls: no overlapping
     * schedule, or nothing for one to gather), its modules read by each
     * of its pushes */
    int serial = z == 3 && !(sched && S > 0.0 && stage_param_bytes(st, ti) > 0.0);
    if (serial && (rc = zero_modules_make(st, ti, &zm)))
        return rc;
    p->n_apply_colls = 0;
    if (G > 1) {
        c.kind = z == 0 ? APPROF_COLL_ALL_REDUCE : APPROF_COLL_REDUCE_SCATTER;
        if (z <= 1)
            p->apply_colls[p->n_apply_colls++] = c;
        c.kind = APPROF_COLL_ALL_GATHER;
        if (z == 1 || z == 2)
            p->apply_colls[p->n_apply_colls++] = c;
    }
    if (z >= 1)
        p->initial_size -= (int64_t)llround(S_elems * per_elem * (1.0 - 1.0 / G));
    if (z >= 2) {
        /* the backward's accumulation buffers (invar, outvar, donated), at
         * their own width */
        double buf_cut = cut * shard_grad_buffer_ratio(st);
        p->invar_size[1] -= (int64_t)llround(buf_cut);
        p->outvar_size[1] -= (int64_t)llround(buf_cut);
        p->donated_size[1] -= (int64_t)llround(buf_cut);
        /* ZeRO-2 reduce-scatters gradient buckets, ZeRO-3 module by module
         * (an overlapping schedule: push_zero3_scheduled, below) */
        c.kind = z < 3 ? APPROF_COLL_REDUCE_SCATTER : zero3_grad_kind(st);
        if (z < 3)
            rc = shard_push_coll(p, 1, &ccap[1], &c);
        else if (!sched)
            rc = push_module_colls(&zm, p, 1, &ccap[1], &c, S);
    }
    if (z == 3 && !rc) {
        /* the gathered module and the next one prefetched, as gathered
         * (FP8 weights in FP8 under fp8_param_gather); in the backward
         * also the module's full gradient before its reduce-scatter */
        int fsdp2 = sched == APPROF_ZERO3_FSDP2;
        double module = S * (fsdp2 ? largest_unit_share(st, ti, blk, n_blk, 0)
                             : serial ? zero_modules_largest(&zm, 0)
                                      : largest_op_share(st, ti, 0));
        double gathered = S * (fsdp2 ? largest_unit_share(st, ti, blk, n_blk, 1)
                               : serial ? zero_modules_largest(&zm, 1)
                                        : largest_op_share(st, ti, 1));
        p->invar_size[0] -= (int64_t)llround(cut);
        p->invar_size[1] -= (int64_t)llround(cut * read_share);
        p->temp_buffer_size[0] += (int64_t)llround(2.0 * gathered);
        p->temp_buffer_size[1] += (int64_t)llround(2.0 * gathered + module);
        c.kind = APPROF_COLL_ALL_GATHER;
        if (!serial) {
            rc = push_zero3_scheduled(st, ti, p, ccap, &c, S, blk, n_blk);
        } else {
            /* the backward's all-gathers are the forward's: the same
             * collective over the same modules */
            size_t from = p->n_colls[0];
            rc = push_module_colls(&zm, p, 0, &ccap[0], &c, S);
            if (!rc)
                rc = append_colls(p, 1, &ccap[1], &p->colls[0][from], p->n_colls[0] - from);
            if (!rc)
                rc = push_regathers(st, ti, p, &ccap[1], &c, S, blk, n_blk);
        }
    }
    p->zero3_post_step_copies = p->zero3_post_step_bytes = 0.0;
    if (z == 3 && !rc && G > 1 && sched == APPROF_ZERO3_DEEPSPEED && st->hw->zero3_rank_copies)
        shard_zero3_post_step(st, ti, p, G, esize);
    free(zm.own);
    p->optimizer_elements = param_elems - S_elems + S_elems / (z >= 1 ? G : 1);
    p->optimizer_bytes = shard_adam_bytes(st, p->optimizer_elements, esize);
    return rc;
}

