/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Expert parallelism of a --parallel plan (expert_parallel.h; the model,
 * with the Megatron-Core code it follows, is in docs/expert-parallel.md).
 * Collectives are priced by costdb/collective.c, the one price of a
 * message; Adam's bytes by costdb_adam_bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "expert_parallel.h"
#include "fp8_recipe.h"
#include "frameworks.h"
#include "hardware.h"
#include "problem_subset.h"
#include "session.h"
#include "solver_int.h"

/* The expert gradients' reduction once per iteration over a group of g
 * ranks stride apart, of bytes: an all-reduce, or under ZeRO-1 (Megatron's
 * distributed optimizer) a reduce-scatter and an all-gather of the
 * updated shard; full = 0 leaves out the collectives' latency (the bytes
 * were part of the stage's one gradient collective, whose latency stays). */
static double reduce_part(const CostdbFabric *f, double bytes, int g, int stride, int M, int zero,
                          int full)
{
    double t = 0;
    CostdbCollKind k[2] = {zero ? COSTDB_COLL_REDUCE_SCATTER : COSTDB_COLL_ALL_REDUCE,
                           COSTDB_COLL_ALL_GATHER};
    for (int i = 0; i < (zero ? 2 : 1); i++) {
        double one = costdb_strided_collective_seconds(f, k[i], bytes, g, stride, M);
        t += full ? one : costdb_strided_collective_seconds(f, k[i], 2 * bytes, g, stride, M) - one;
    }
    return t;
}

/* The logical axis of mesh (a, b) an expert weight's E dimension (the
 * third from last, costdb_expert_split's) is split over: 0, 1, 2 (both),
 * -1 whole or unreadable. */
static int expert_axis(const CostdbPlacement *pl, int a, int b)
{
    CostdbLayout l;
    char err[8];
    int64_t d[COSTDB_MAX_DIMS];
    int nd = costdb_shape_parse(pl->shape, d, COSTDB_MAX_DIMS);
    if (nd < 3 || costdb_spec_parse(pl->sharding_spec, a, b, &l, err, sizeof err) < 0 ||
        l.ndim != nd)
        return -1;
    return l.mesh_axis_of_dim[nd - 3];
}

/* What an entry's placements say of its experts, whatever the layout
 * (logical (a, b) the entry's mesh): read once, priced per layout by
 * ep_price. */
static void ep_facts(const CostdbPlacement *pl, size_t n, int a, int b, ApsolveEpFacts *x)
{
    char last[COSTDB_NAME_MAX * 2] = "";
    memset(x, 0, sizeof *x);
    x->esize = 2;
    x->whole_e = 1;
    x->uniform = 1;
    x->ep0 = x->etp0 = -1;
    x->known = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t d[8], e;
        int nd = costdb_shape_parse(pl[i].shape, d, 8), pe, pt;
        double el = 1;
        const char *cut;
        if (!strcmp(pl[i].role, "input") && !x->batch && nd >= 2 && d[0] > 0) {
            x->batch = d[0];
            x->seq = d[1]; /* input_ids [B, S] or the hidden states [B, S, H] */
        }
        if (costdb_expert_split(&pl[i], a, b, &pe, &pt, &e) < 0)
            continue;
        for (int k = 0; k < nd; k++)
            el *= (double)d[k];
        /* one block per path before "/experts/" (gate, up and down of one
         * layer share it) */
        cut = strstr(pl[i].tensor_name, "/experts/");
        if ((size_t)(cut - pl[i].tensor_name) != strlen(last) ||
            strncmp(last, pl[i].tensor_name, strlen(last))) {
            snprintf(last, sizeof last, "%.*s", (int)(cut - pl[i].tensor_name),
                     pl[i].tensor_name);
            x->moe_layers++;
        }
        if (strstr(pl[i].tensor_name, "up_proj") && nd >= 2)
            x->hidden = d[nd - 2];
        if (costdb_dtype_bytes(pl[i].dtype) > 0)
            x->esize = costdb_dtype_bytes(pl[i].dtype);
        x->experts = (int)(e > x->experts ? e : x->experts);
        x->stored_ep = pe > x->stored_ep ? pe : x->stored_ep;
        x->stored_etp = pt > x->stored_etp ? pt : x->stored_etp;
        x->whole_e &= pe == 1;
        if (x->ep0 < 0) {
            x->ep0 = pe;
            x->etp0 = pt;
            x->etp_stride = costdb_expert_split_stride(&pl[i], a, b);
            x->e_axis = expert_axis(&pl[i], a, b);
        }
        x->uniform &= pe == x->ep0 && pt == x->etp0;
        if (x->e_axis != expert_axis(&pl[i], a, b))
            x->e_axis = -2;
        x->elements += el;
        x->local_before += el / ((double)pe * pt);
    }
}

/* The sweep's FP8 facts (x's fp8_*): under FP8 the stage program runs the
 * experts' GEMMs as FP8 linear layers where the spec has FP8 tensor cores
 * and the model trains in 16 bits (program_fp8.c, shard_fp8_linear and
 * expert_weight_slot: Megatron-Core's TEGroupedMLP), and keeps Transformer
 * Engine's FP8 copies of their weights beside them (shard_fp8_weights),
 * which an ep stage divides with the weights (ep_price); and the spec's
 * moe_drop_pad (the dispatcher drops and pads to the capacity).
 * 0; -1 when the sweep or its hardware row cannot be read. */
static int ep_fp8(struct Costdb *db, int64_t sweep, ApsolveEpFacts *x)
{
    CostdbSweep sw;
    CostdbHardware hw;
    double fp8 = 0, fp4 = 0, drop = 0;
    x->fp8_recipe = COSTDB_FP8_NONE;
    x->fp8_params = 0;
    x->fp8_copies = 2;
    x->drop_pad = 0;
    if (costdb_sweep_get(db, sweep, &sw) < 0 || sw.hardware_id <= 0 ||
        costdb_hardware_get(db, sw.hardware_id, &hw) < 0)
        return -1;
    if (costdb_json_member_number(hw.capabilities, "moe_drop_pad", &drop) == 0)
        x->drop_pad = drop != 0;
    if (costdb_json_member_number(hw.capabilities, "peak_flops_fp8", &fp8) < 0 || !(fp8 > 0))
        return 0;
    x->fp8_recipe = costdb_fp8_of_options(sw.options, &x->fp8_params);
    (void)costdb_json_member_number(hw.capabilities, "peak_flops_fp4", &fp4);
    x->fp8_copies = costdb_fp8_weight_copies(x->fp8_recipe, fp4 > 0);
    return 0;
}

/* Two row copies of the rows a GPU's experts run, read and written: slots
 * with probabilities (hidden + 1 a row), then the output (hidden); bytes
 * into *bytes, seconds returned (sorts by local expert, FP8 padding). */
static double slot_copies(const CostdbFabric *f, const ApsolveEpFacts *x, double rows,
                          double esize, double *bytes)
{
    double in = 2 * rows * ((double)x->hidden + 1) * esize, o = 2 * rows * (double)x->hidden * esize;
    *bytes = in + o;
    return costdb_memory_seconds(f, in) + costdb_memory_seconds(f, o);
}

/* Entry facts x under layout l on hosts of M GPUs with fabric f into out. */
static void ep_price(const ApsolveEpFacts *x, const CostdbFabric *fab, int M,
                     const ApsolveEpLayout *l, ApsolveEpStage *out)
{
    CostdbFabric f = *fab;
    double per_elem, devices = (double)l->dp * l->tp, esize = x->esize, slots;
    memset(out, 0, sizeof *out);
    if (!x->moe_layers)
        return;
    out->moe_layers = x->moe_layers;
    out->experts = x->experts;
    out->stored_ep = x->stored_ep;
    out->stored_etp = x->stored_etp;
    out->elements = x->elements;
    out->local_before = x->local_before;
    out->local_after = out->elements / ((double)l->ep * l->etp);
    if (x->uniform && x->ep0 == l->ep && x->etp0 == l->etp)
        out->usable = 1;
    else if (x->whole_e && x->uniform && x->etp0 == l->etp && x->batch > 0 && x->hidden > 0)
        out->usable = 2;
    /* A level that splits E over its whole tp axis (axis 1, ep0 = b ways)
     * and keeps the in/out dimensions whole computes, per GPU, the slots of
     * its dp replica's tokens for E/b experts: the slots of 1/(dp tp) of
     * the tokens, what a GPU of Megatron's ep x etp 1 computes. Its own
     * dispatch collectives are taken out below. */
    else if (x->uniform && x->e_axis == 1 && x->ep0 > 1 && x->ep0 == l->tp &&
             l->ep % x->ep0 == 0 && x->etp0 == 1 && l->etp == 1 && x->batch > 0 &&
             x->hidden > 0 && x->seq > 0) {
        out->usable = 2;
        out->from_split = 1;
    }
    /* The tokens one GPU holds enter the MoE layer split over dp and, under
     * the sequence parallelism Megatron requires with MoE and tp > 1, over
     * tp (and under context parallelism, whose entries are those of dp x cp
     * replicas, over cp: a cp GPU holds 1/cp of its samples' sequence);
     * each fills top_k of the E x capacity slots of its sample (the
     * capacity factor's padding included, dropless at factor 1). One
     * all-to-all over the ep group carries them to their experts' GPUs and
     * one brings them back, and the backward sends their gradients both
     * ways (token_dispatch and token_combine of MoEAlltoAllTokenDispatcher).
     * The ring formula takes the group's bytes, ep x one GPU's. */
    slots = (double)x->batch / devices * (double)out->experts * (double)l->capacity /
            (l->cp > 1 ? l->cp : 1);
    out->a2a_bytes = slots * (double)x->hidden * esize;
    /* token_dispatch sends each slot's routing probability in an
     * all-to-all of its own after the tokens' (global_probs), whose
     * gradient comes back in the backward; the probabilities are in the
     * router's logits dtype, the model's unless --moe-router-dtype
     * (topk_routing_with_score_function: probs.type_as(logits), moe_utils.py) */
    out->probs_bytes = slots * esize;
    /* Dropless (Megatron's default, no --moe-expert-capacity-factor: the
     * graph's capacity is then the balanced ceil(S top_k / E)),
     * preprocess all-gathers every rank's token count per expert (E
     * int64) over the tp x ep group before the all-to-all's splits are
     * known (gather_from_sequence_parallel_region(num_local_tokens_per_expert,
     * group=tp_ep_group)), once per forward; with a capacity factor the
     * dispatcher drops and pads to the capacity (drop_and_pad) and its
     * splits are fixed. A capacity factor of 1 builds the balanced graph
     * too: the spec's moe_drop_pad says which the run was. */
    out->dropless = !x->drop_pad && x->seq > 0 && l->top_k > 0 && out->experts > 0 &&
                    l->capacity == (x->seq * l->top_k + out->experts - 1) / out->experts;
    /* Under full recomputation (--recompute-granularity full) Megatron-Core
     * checkpoints whole transformer layers (megatron/core/recompute.py,
     * checkpointed_forward, core_v0.19.0: tensor_parallel.checkpoint around
     * the layers' forward), the MoE layer and its dispatcher inside, so the
     * backward reruns every forward item below before its own
     * (moe_layer_recompute, the MoE layer's own checkpoint, is the
     * selective granularity's "moe" module, not full's). The stored
     * entry's recomputed forward holds the graph's dispatch, not these. */
    {
        int L = out->moe_layers, rerun = l->recompute == COSTDB_RECOMPUTE_FULL;
        double t = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_TO_ALL,
                                                     out->a2a_bytes * l->ep, l->ep, l->etp, M);
        double tprob = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_TO_ALL,
                                                         out->probs_bytes * l->ep, l->ep, l->etp,
                                                         M);
        double sent = (l->ep - 1.0) / l->ep * (out->a2a_bytes + out->probs_bytes / 2);
        double erows = slots * (l->etp > 1 ? l->etp : 1); /* the slots a GPU's experts run */
        ApsolveEpCost *it = out->costs;
        *it++ = (ApsolveEpCost){"token all-to-all", out->a2a_bytes, l->ep, 2 * L, 2 * L, 0,
                                2 * L * t, 2 * L * t};
        *it++ = (ApsolveEpCost){"probabilities all-to-all", out->probs_bytes, l->ep, L, L, 0,
                                L * tprob, L * tprob};
        if (out->dropless)
            *it++ = (ApsolveEpCost){
                "token counts all-gather", 8.0 * out->experts, l->ep * l->etp, L, 0, 0,
                L * costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_GATHER,
                                                      8.0 * out->experts * l->ep * l->etp,
                                                      l->ep * l->etp, 1, M),
                0};
        /* With etp > 1, after the all-to-all, dispatch_postprocess
         * all-gathers the received slots and their probabilities over the
         * expert tensor-parallel group (gather_from_sequence_parallel_region,
         * group tp_group = pg_collection.expt_tp), and combine_preprocess
         * reduce-scatters the experts' output before the combine's
         * all-to-all (reduce_scatter_to_sequence_parallel_region); the
         * backward runs each the other way (token_dispatcher.py,
         * core_v0.19.0). The etp group is etp consecutive ranks (Megatron's
         * expert rank order puts etp fastest: parallel_state.py,
         * expert_decoder_rank_generator), priced there. */
        if (l->etp > 1) {
            double gb = out->a2a_bytes * l->etp; /* the group's slots, etp x a GPU's */
            double ag = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_GATHER, gb,
                                                          l->etp, 1, M);
            double rs = costdb_strided_collective_seconds(&f, COSTDB_COLL_REDUCE_SCATTER, gb,
                                                          l->etp, 1, M);
            *it++ = (ApsolveEpCost){"token all-gather over etp", out->a2a_bytes, l->etp, L, L,
                                    0, L * ag, L * rs};
            *it++ = (ApsolveEpCost){"output reduce-scatter over etp", out->a2a_bytes, l->etp,
                                    L, L, 0, L * rs, L * ag};
            *it++ = (ApsolveEpCost){
                "probabilities all-gather over etp", out->probs_bytes, l->etp, L, L, 0,
                L * costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_GATHER,
                                                      out->probs_bytes * l->etp, l->etp, 1, M),
                L * costdb_strided_collective_seconds(&f, COSTDB_COLL_REDUCE_SCATTER,
                                                      out->probs_bytes * l->etp, l->etp, 1, M)};
            /* A transformed level runs its experts as a tensor-parallel MLP
             * over the group its in/out split lies on (etp0 ranks,
             * etp_stride apart on the profiler's row-major mesh): the
             * sharding ILP's reshards (profiler/sharding/sharding_mesh.c,
             * shard_reshard) reduce the down projection's partial output
             * in the forward and the gate and up projections' partial
             * input gradient in the backward, one all-reduce each of the
             * dp replica's slots (etp x a GPU's), repeated in the
             * backward under full recomputation as the profiler repeats
             * its forward collectives. Those stood for the gathers above
             * and leave the stored entry at the same price. Under cp the
             * entry is the dp x cp run's at cp times the tokens, its time
             * divided by cp (context_parallel.h): the all-reduce of cp x
             * the slots, over cp. */
            if (out->usable == 2 && x->etp_stride > 0) {
                double n = l->cp > 1 ? l->cp : 1;
                double ar = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, gb * n,
                                                              x->etp0, x->etp_stride, M) /
                            n;
                *it++ = (ApsolveEpCost){"the level's own all-reduce of the experts' slots "
                                        "(taken out)",
                                        gb, x->etp0, L, L, 0, -L * ar, -L * ar};
            }
        }
        /* A level transformed from an E split over axis 1 (from_split) ran
         * its experts as the sharding ILP's all-gather dispatcher
         * (profiler/model/opsem.c: moe_dispatch takes the tokens replicated
         * over the axis that splits E, moe_combine's E loop is a reduction):
         * its stage program all-reduces the combine's partial sums, the dp
         * replica's tokens [B/a, S, H], over that axis in the forward, and
         * in the backward all-reduces the dispatch's partial input gradient
         * (the same bytes) and all-gathers the routing weights' gradient
         * [B/a, S, E] that the E-split dispatch and combine leave split
         * (profiler/sharding/sharding_mesh.c, shard_reshard); the forward's
         * all-reduce reruns in the backward under full recomputation, as
         * the profiler reruns its forward collectives. Megatron's
         * all-to-alls above replace them. Under cp the entry is the dp x cp
         * run's, its time divided by cp, as for the all-reduce above. */
        if (out->from_split) {
            double n = l->cp > 1 ? l->cp : 1, rows = (double)x->batch / l->dp * (double)x->seq;
            double tok = rows * (double)x->hidden * esize, pw = rows * out->experts * esize;
            double ar = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_REDUCE, tok,
                                                          x->ep0, 1, M) /
                        n;
            double ag = costdb_strided_collective_seconds(&f, COSTDB_COLL_ALL_GATHER, pw,
                                                          x->ep0, 1, M) /
                        n;
            *it++ = (ApsolveEpCost){"the level's own all-reduce of the tokens around its "
                                    "experts (taken out)",
                                    tok, x->ep0, L, L, 0, -L * ar, -L * ar};
            *it++ = (ApsolveEpCost){"the level's own all-gather of the routing weights' "
                                    "gradient (taken out)",
                                    pw, x->ep0, 0, L, 0, 0, -L * ag};
        }
        /* Permutation 2: with more than one local expert, the slots a GPU
         * receives (etp times as many after the etp group's all-gather)
         * arrive ordered by source rank and are sorted by local expert with
         * their probabilities (dispatch_postprocess: sort_chunks_by_idxs, or
         * the transpose of drop_and_pad), and the experts' output is sorted
         * back (combine_preprocess); the backward sorts their gradients.
         * Each is a memory-bound copy, read and write, which the graph's one
         * dispatch and combine (permutation 1 and its inverse, moe_utils.py
         * permute, unpermute) do not hold. */
        if (out->experts / l->ep > 1) {
            double bytes, copy = slot_copies(&f, x, erows, esize, &bytes);
            *it++ = (ApsolveEpCost){"sorts by local expert", bytes, 1, L, L, 0, L * copy,
                                    L * copy};
        }
        /* FP8 padding (TEGroupedMLP.forward, megatron/core/transformer/moe/
         * experts.py, core_r0.10.0 on, 92c8482e6d): FP8 GEMMs need each local
         * expert's rows a multiple of 16 (MXFP8 32): the slots and probs are
         * copied into a padded buffer before fc1 (TE's Fp8Padding), fc2's
         * output out of it (Fp8Unpadding), the backward the gradients back
         * (TE v2.9 module/fp8_padding.py, fp8_unpadding.py: every row read
         * and written). Skipped only when every count is aligned: dropless
         * counts priced as never. The sorts' copies, every MoE layer, pad
         * rows left out; FP8 linear experts in 16-bit training only. */
        if (out->dropless && x->fp8_recipe != COSTDB_FP8_NONE && esize < 4) {
            double bytes, copy = slot_copies(&f, x, erows, esize, &bytes);
            *it++ = (ApsolveEpCost){"FP8 padding of the experts' slots", bytes, 1, L, L, 0,
                                    L * copy, L * copy};
        }
        out->n_costs = (int)(it - out->costs);
        for (int k = 0; k < out->n_costs; k++) {
            ApsolveEpCost *e = &out->costs[k];
            if (rerun) {
                /* the rerun forward, before the backward's own */
                e->n_rerun = e->n_fwd;
                e->n_bwd += e->n_fwd;
                e->bwd += e->fwd;
            }
            if (e->group > 1) {
                out->comm_fwd += e->fwd;
                out->comm_bwd += e->bwd;
            } else {
                out->perm_fwd += e->fwd;
                out->perm_bwd += e->bwd;
            }
        }
        out->traffic_fwd = L * 2 * sent;
        out->traffic_bwd = (rerun ? 2 : 1) * L * 2 * sent;
    }
    if (out->usable != 2)
        return; /* as profiled, or not usable */
    /* Memory: the weights and, in the backward, their gradient buffers
     * (on the backward's peak: the local weights and their buffers, at the
     * width of the hardware row's grad_reduce_bytes, costdb_grad_buffer_ratio,
     * the stage program's rule; under FP8 Transformer Engine's FP8 copies
     * of them too, costdb_fp8_weight_extra_bytes, as shard_fp8_weights
     * counts them: 2 bytes an element on Hopper, less the 16-bit weight
     * with FP8 primary weights), Adam's f32
     * moments (and master copy in 16-bit training) in the initial state,
     * which ZeRO-1 shards over the gradients' group: the weight's replicas
     * as stored, the expert-data-parallel group under ep. */
    {
        int g_old = (int)(devices / ((double)out->stored_ep * out->stored_etp) + 0.5);
        int edp = (int)(devices / ((double)l->ep * l->etp) + 0.5);
        double zo = l->zero && g_old > 1 ? g_old : 1, zn = l->zero && edp > 1 ? edp : 1;
        double dl = out->local_after - out->local_before;
        per_elem = costdb_adam_state_bytes(&f.adam, esize);
        /* FP8 linear layers in 16-bit training only (shard_fp8_linear) */
        out->fp8_weight_bytes = esize < 4 ? costdb_fp8_weight_extra_bytes(
                                                x->fp8_recipe, x->fp8_copies,
                                                x->fp8_params && l->zero <= 2, esize)
                                          : 0.0;
        out->peak_delta = (int64_t)llround(
            dl * (esize * (1.0 + costdb_grad_buffer_ratio(f.grad_reduce_bytes, esize)) +
                  out->fp8_weight_bytes));
        out->initial_delta = (int64_t)llround(per_elem * (out->local_after / zn -
                                                          out->local_before / zo));
        /* Adam over the expert elements one GPU updates (ZeRO-1: its
         * shard), the profiler's optimizer_bytes count */
        out->apply_delta =
            costdb_memory_seconds(&f, costdb_adam_bytes(&f.adam, out->local_after / zn, esize, esize)) -
            costdb_memory_seconds(&f, costdb_adam_bytes(&f.adam, out->local_before / zo, esize, esize));
        /* Under the gradient overlap of the hardware row (DDP's and
         * Megatron's --overlap-grad-reduce) the reduction runs under the
         * backward, and the stored entry's exposed part (its last bucket)
         * stands; else the expert bytes leave the stored collective over
         * their g_old replicas (the data-parallel axis 0, stride tp) and
         * their own reduction over the expert-data-parallel group (stride
         * etp x ep, Megatron's expert rank order etp-ep-dp) comes in. */
        if (!(f.grad_overlap > 0))
            out->apply_delta +=
                reduce_part(&f, out->local_after * esize, edp, l->etp * l->ep, M, l->zero, 1) -
                reduce_part(&f, out->local_before * esize, g_old, l->tp, M, l->zero, 0);
    }
}

int apsolve_ep_stage(struct Costdb *db, int64_t sweep, int gpus_per_host, int start, int end,
                     int s, int c, const ApsolveEpLayout *l, ApsolveEpStage *out, char *why,
                     size_t len)
{
    CostdbPlacement *pl = NULL;
    CostdbFabric f;
    ApsolveEpFacts x;
    size_t n = 0;
    memset(out, 0, sizeof *out);
    if (apsolve_stage_inputs(db, sweep, start, end, s, c, "the token all-to-all", &f, &pl, &n,
                             why, len) < 0)
        return -1;
    ep_facts(pl, n, l->dp, l->tp, &x);
    free(pl);
    if (ep_fp8(db, sweep, &x) < 0) {
        snprintf(why, len, "sweep %lld: its hardware row cannot be read to price the expert "
                 "weights' FP8 copies", (long long)sweep);
        return -1;
    }
    ep_price(&x, &f, gpus_per_host, l, out);
    return 0;
}

void apsolve_ep_a2a_hidden(const ApsolveEpStage *x, double fwd, double bwd, double *hidden_fwd,
                           double *hidden_bwd)
{
    double a2a_fwd = 0, a2a_bwd = 0;
    for (int k = 0; k < x->n_costs; k++)
        if (strstr(x->costs[k].what, "all-to-all")) {
            a2a_fwd += x->costs[k].fwd;
            a2a_bwd += x->costs[k].bwd;
        }
    /* Megatron-Core's combined 1F1B (combined_1f1b.py lines 34-41 at
     * Megatron-LM 00caa53, the schedule plan of fine_grained_callables.py)
     * runs one micro-batch's forward beside another's backward, layer by
     * layer on two streams: the forward's dispatch and combine all-to-alls
     * under the backward's attention and MLP compute, and the backward's
     * under the forward's. The project's one overlap rule, with no GEMM
     * slowdown (the solver's fabric carries none): hidden min(comm,
     * window), the rest exposed. */
    *hidden_fwd = approf_overlap_hidden_at(0.0, a2a_fwd, bwd);
    *hidden_bwd = approf_overlap_hidden_at(0.0, a2a_bwd, fwd);
}

/* Entry idx of q under the ep layout x (a2a_overlap: Megatron-Core's MoE
 * all-to-all overlap, apsolve_ep_a2a_hidden). */
static void transform(ApsolveProblem *q, size_t idx, const ApsolveEpStage *x, int a2a_overlap)
{
    double hf = 0, hb = 0;
    if (x->usable == 1 || !isfinite(q->cost[idx]))
        return;
    if (x->usable == 0) {
        q->cost[idx] = INFINITY;
        return;
    }
    if (a2a_overlap && q->fwd_cost && q->bwd_cost)
        apsolve_ep_a2a_hidden(x, q->fwd_cost[idx], q->bwd_cost[idx], &hf, &hb);
    apsolve_entry_add(q, idx, &(ApsolveEntryDelta){x->comm_fwd + x->perm_fwd - hf,
                                                   x->comm_bwd + x->perm_bwd - hb, x->apply_delta,
                                                   x->peak_delta, x->initial_delta});
}

int apsolve_ep_problem(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                       const ApsolveStageSpec *specs, size_t n, const ApsolveEpLayout *l,
                       ApsolveProblem **out, ApsolveEpStage *first, char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    ApsolveEpStage *xs;
    int rc;
    *out = NULL;
    if ((rc = apsolve_problem_clone(p, &q)) != APSOLVE_OK)
        return rc;
    if (!(xs = calloc((size_t)q->num_configs, sizeof *xs))) {
        apsolve_problem_free(&q);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < n; k++) {
        const ApsolveStageSpec *sp = &specs[k];
        int s = apsolve_find_submesh(q, sp->hosts, sp->gpus), best = -1;
        memset(&first[k], 0, sizeof first[k]);
        if (s < 0)
            continue;
        memset(xs, 0, (size_t)q->num_configs * sizeof *xs);
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            size_t idx = apsolve_index(q, sp->start_layer, sp->end_layer, s, c);
            /* a twin the sweep judged out of memory is priced from the time
             * it computed; the transformed memory decides fit */
            if (!cf->valid || cf->logical_a != l->dp || cf->logical_b != l->tp ||
                cf->force_batch_dim != 0 || !apsolve_unfit_restore(q, idx))
                continue;
            ApsolveEpLayout m = *l;
            m.recompute = cf->variant.recompute; /* full reruns the dispatcher */
            if (apsolve_ep_stage(db, sweep, q->cluster_gpus, sp->start_layer, sp->end_layer, s,
                                 c, &m, &xs[c], why, len)) {
                free(xs);
                apsolve_problem_free(&q);
                return APSOLVE_EDB;
            }
        }
        /* A variant (recompute, ZeRO) the sweep profiled with the experts
         * split as asked is priced as profiled: its transformed levels
         * stand aside. */
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            for (int d = 0; d < q->num_configs && xs[c].usable == 2; d++) {
                const ApsolveConfig *df = &q->configs[(size_t)s * q->num_configs + d];
                if (xs[d].usable == 1 && costdb_variant_same_settings(df->variant, cf->variant))
                    xs[c].usable = 0;
            }
        }
        for (int c = 0; c < q->num_configs; c++) {
            const ApsolveConfig *cf = &q->configs[(size_t)s * q->num_configs + c];
            if (!xs[c].moe_layers)
                continue;
            transform(q, apsolve_index(q, sp->start_layer, sp->end_layer, s, c), &xs[c],
                      l->a2a_overlap);
            if (xs[c].usable &&
                (best < 0 || cf->variant.memory_level < best ||
                 (cf->variant.memory_level == best && xs[c].usable < first[k].usable))) {
                best = cf->variant.memory_level;
                first[k] = xs[c];
            } else if (!first[k].moe_layers) {
                first[k] = xs[c];
            }
        }
    }
    free(xs);
    *out = q;
    return APSOLVE_OK;
}

int apsolve_ep_cache_new(const ApsolveProblem *p, ApsolveEpCache *c)
{
    size_t sc = (size_t)p->num_submeshes * (size_t)p->num_configs;
    c->facts = calloc(apsolve_problem_cells(p) + 1, sizeof *c->facts);
    c->owner = malloc((sc + 1) * sizeof *c->owner);
    if (!c->facts || !c->owner) {
        apsolve_ep_cache_free(c);
        return APSOLVE_ENOMEM;
    }
    for (size_t k = 0; k < sc; k++)
        c->owner[k] = -1;
    c->sweep_fp8_read = 0;
    return APSOLVE_OK;
}

void apsolve_ep_cache_free(ApsolveEpCache *c)
{
    free(c->facts);
    free(c->owner);
    c->facts = NULL;
    c->owner = NULL;
}

/* Facts of entry (i, j, s, c) from cache, read on first use: once per
 * placement owner (the variants of one memory level share its
 * placements: costdb_placements_owner); *f the fabric, read with the first
 * entry. *x points at them. 0; -1 with why. */
static int cached_facts(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                        ApsolveEpCache *cache, int i, int j, int s, int c, CostdbFabric *f,
                        int *have_f, const ApsolveEpFacts **x, char *why, size_t len)
{
    const ApsolveConfig *cf = &p->configs[(size_t)s * p->num_configs + c];
    int *own = &cache->owner[(size_t)s * p->num_configs + c];
    CostdbPlacement *pl = NULL;
    ApsolveEpFacts *y;
    size_t n = 0;
    if (*own < 0 && costdb_placements_owner(db, sweep, s, c, own) < 0) {
        snprintf(why, len, "placements of config %d: %s", c, costdb_errmsg(db));
        return -1;
    }
    if (*own < 0 || *own >= p->num_configs)
        *own = c;
    y = &cache->facts[apsolve_index(p, i, j, s, *own)];
    *x = y;
    /* the facts are cached per owner; the fabric is read once per call
     * (the caller's f), so a call that finds the facts known still reads it */
    if (y->known && *have_f)
        return 0;
    if (!*have_f) {
        if (apsolve_stage_inputs(db, sweep, i, j, s, c, "the token all-to-all", f, &pl, &n, why,
                                 len) < 0)
            return -1;
        *have_f = 1;
    } else if (costdb_placements_get(db, sweep, i, j, s, c, &pl, &n) < 0) {
        snprintf(why, len, "layers %d-%d: placements: %s", i, j, costdb_errmsg(db));
        return -1;
    }
    ep_facts(pl, n, cf->logical_a, cf->logical_b, y);
    free(pl);
    if (!cache->sweep_fp8_read) {
        if (ep_fp8(db, sweep, &cache->sweep_fp8) < 0) {
            y->known = 0;
            snprintf(why, len, "sweep %lld: its hardware row cannot be read to price the "
                     "expert weights' FP8 copies", (long long)sweep);
            return -1;
        }
        cache->sweep_fp8_read = 1;
    }
    y->fp8_recipe = cache->sweep_fp8.fp8_recipe;
    y->fp8_copies = cache->sweep_fp8.fp8_copies;
    y->fp8_params = cache->sweep_fp8.fp8_params;
    y->drop_pad = cache->sweep_fp8.drop_pad;
    return 0;
}

/* Whether config cf can hold ep stages of layout l at all, whatever the
 * layer range (apsolve_ep_problem_auto): (dp, tp) with the batch on axis 0,
 * ZeRO below 2, its GPUs a multiple of ep x etp; under the MoE all-to-all
 * overlap not a full recomputation (Megatron-Core refuses it, as
 * apsolve_ep_a2a_overlap_check does for --parallel). */
static int config_holds_ep(const ApsolveConfig *cf, const ApsolveEpLayout *l)
{
    return cf->valid && cf->force_batch_dim == 0 && cf->variant.zero < 2 &&
           ((int64_t)cf->logical_a * cf->logical_b) % (l->ep * l->etp) == 0 &&
           !(l->a2a_overlap && cf->variant.recompute == COSTDB_RECOMPUTE_FULL);
}

int apsolve_ep_problem_auto(struct Costdb *db, int64_t sweep, const ApsolveProblem *p,
                            ApsolveEpCache *cache, const ApsolveEpLayout *l,
                            ApsolveProblem **out, ApsolveSubset *view, size_t *transformed,
                            char *why, size_t len)
{
    ApsolveProblem *q = NULL;
    ApsolveEpStage *xs;
    CostdbFabric f;
    int *use;
    int have_f = 0, rc, C = p->num_configs;
    *out = NULL;
    *transformed = 0;
    if (view) {
        /* the pairs that can hold ep stages (problem_subset.h): the rest
         * would be +inf */
        size_t pairs = (size_t)p->num_submeshes * (size_t)C;
        unsigned char *keep = malloc(pairs);
        if (!keep)
            return APSOLVE_ENOMEM;
        for (size_t k = 0; k < pairs; k++)
            keep[k] = (unsigned char)config_holds_ep(&p->configs[k], l);
        rc = apsolve_subset_new(p, keep, 1, view);
        free(keep);
        if (rc == APSOLVE_OK && (rc = apsolve_subset_problem(p, view, &q)) != APSOLVE_OK)
            apsolve_subset_free(view);
    } else {
        rc = apsolve_problem_clone(p, &q);
    }
    if (rc != APSOLVE_OK)
        return rc;
    xs = calloc((size_t)(C > 0 ? C : 1), sizeof *xs);
    use = calloc((size_t)(C > 0 ? C : 1), sizeof *use);
    if (!xs || !use) {
        rc = APSOLVE_ENOMEM;
        goto fail;
    }
    memset(&f, 0, sizeof f);
    for (int i = 0; i < p->num_layers; i++)
        for (int j = i; j < p->num_layers; j++)
            for (int s = 0; s < p->num_submeshes; s++) {
                /* use[c]: -1 +inf, 0 no experts (kept), 1 as profiled, 2 transformed */
                for (int c = 0; c < C; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
                    size_t idx = apsolve_index(p, i, j, s, c);
                    ApsolveEpLayout m = *l;
                    const ApsolveEpFacts *x = NULL;
                    use[c] = -1;
                    if (!config_holds_ep(cf, l) || !isfinite(p->cost[idx]))
                        continue;
                    if (cached_facts(db, sweep, p, cache, i, j, s, c, &f, &have_f, &x, why,
                                     len)) {
                        rc = APSOLVE_EDB;
                        goto fail;
                    }
                    m.dp = cf->logical_a;
                    m.tp = cf->logical_b;
                    m.zero = cf->variant.zero;
                    m.recompute = cf->variant.recompute;
                    ep_price(x, &f, p->cluster_gpus, &m, &xs[c]);
                    if (!xs[c].moe_layers)
                        use[c] = 0;
                    else if (xs[c].experts % l->ep == 0 && xs[c].usable)
                        use[c] = xs[c].usable;
                }
                /* a variant the sweep profiled with the experts split as
                 * asked is priced as profiled: its transformed twins (same
                 * mesh, recompute and ZeRO) stand aside, as in
                 * apsolve_ep_problem */
                for (int c = 0; c < C; c++) {
                    const ApsolveConfig *cf = &p->configs[(size_t)s * C + c];
                    for (int d = 0; d < C && use[c] == 2; d++) {
                        const ApsolveConfig *df = &p->configs[(size_t)s * C + d];
                        if (use[d] == 1 && df->logical_a == cf->logical_a &&
                            df->logical_b == cf->logical_b &&
                            costdb_variant_same_settings(df->variant, cf->variant))
                            use[c] = -1;
                    }
                }
                for (int c = 0; c < C; c++) {
                    size_t idx = apsolve_index(p, i, j, s, c);
                    int u = use[c];
                    if (view) {
                        /* a pair left out of the subset is +inf already */
                        int at = view->at[(size_t)s * C + c];
                        if (at < 0)
                            continue;
                        idx = apsolve_index(q, i, j, at / view->num_configs,
                                            at % view->num_configs);
                    }
                    if (u < 0) {
                        q->cost[idx] = INFINITY;
                        if (q->fwd_cost && q->bwd_cost)
                            q->fwd_cost[idx] = q->bwd_cost[idx] = INFINITY;
                    } else if (u == 2) {
                        transform(q, idx, &xs[c], l->a2a_overlap);
                        ++*transformed;
                    }
                }
            }
    free(xs);
    free(use);
    *out = q;
    return APSOLVE_OK;
fail:
    free(xs);
    free(use);
    apsolve_problem_free(&q);
    if (view)
        apsolve_subset_free(view);
    return rc;
}

void apsolve_ep_frameworks(int dp, int tp, int ep, int etp, int zero, struct ApsolveFwVerdict *v)
{
    unsigned ds = 1u << APSOLVE_FW_DEEPSPEED, tt = 1u << APSOLVE_FW_TORCHTITAN;
    if (ep <= 1)
        return;
    if ((v->runs & ds) && (dp % ep || (tp > 1 && etp != tp))) {
        v->runs &= ~ds;
        snprintf(v->why[APSOLVE_FW_DEEPSPEED], sizeof v->why[0], "experts on ep %d x etp %d: "
                 "its MoE layer takes ep_size ranks of the %d data-parallel ones and splits the "
                 "experts over all %d tp ranks or none", ep, etp, dp, tp);
    }
    if ((v->runs & tt) && zero == 0) {
        v->runs &= ~tt;
        snprintf(v->why[APSOLVE_FW_TORCHTITAN], sizeof v->why[0], "expert parallelism with "
                 "ZeRO-0: it builds expert parallelism inside FSDP's data-parallel shards "
                 "(ZeRO-2/3)");
    }
    if ((v->runs & tt) && etp != 1 && etp != tp) {
        v->runs &= ~tt;
        snprintf(v->why[APSOLVE_FW_TORCHTITAN], sizeof v->why[0], "expert tensor parallelism "
                 "%d: it takes 1 or the tensor-parallel size %d (ParallelDims._validate)", etp,
                 tp);
    }
}

int apsolve_ep_a2a_overlap_check(const struct ApsolveParallel *par, char *errbuf, size_t errlen)
{
    /* TransformerConfig.__post_init__ (megatron/core/transformer/
     * transformer_config.py, the `if self.overlap_moe_expert_parallel_comm`
     * block) asserts each of these */
    if (par->ep < 2) {
        snprintf(errbuf, errlen, "moe_a2a_overlap needs expert parallelism (ep >= 2): "
                 "Megatron-Core's overlap_moe_expert_parallel_comm is only supported with "
                 "expert model parallelism");
        return -1;
    }
    if (par->pp > 1 && par->vpp < 2) {
        snprintf(errbuf, errlen, "moe_a2a_overlap with pp=%d needs vpp >= 2: Megatron-Core "
                 "runs the MoE all-to-all overlap on the interleaved schedule only", par->pp);
        return -1;
    }
    if (par->recompute == COSTDB_RECOMPUTE_FULL) {
        snprintf(errbuf, errlen, "moe_a2a_overlap is not run with recompute=full: "
                 "Megatron-Core asks to disable full recomputation with "
                 "overlap_moe_expert_parallel_comm");
        return -1;
    }
    return 0;
}
