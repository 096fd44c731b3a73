/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An ep stage's price (expert_parallel.h; the model, with the Megatron-Core
 * code it follows, is in docs/expert-parallel.md): what an entry's
 * placements say of its experts, the sweep's FP8 facts, and their price
 * under an ep layout. Collectives are priced by costdb/collective.c, the
 * one price of a message; Adam's bytes by costdb_adam_bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective.h"
#include "costdb.h"
#include "costdb_text.h"
#include "ep_stage_price.h"
#include "expert_parallel.h"
#include "fp8_recipe.h"
#include "hardware.h"
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
 * apsolve_ep_price. */
void apsolve_ep_facts(const CostdbPlacement *pl, size_t n, int a, int b, ApsolveEpFacts *x)
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
        x->expert_tensors++;
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
 * which an ep stage divides with the weights (apsolve_ep_price); and the
 * spec's moe_drop_pad (the dispatcher drops and pads to the capacity).
 * 0; -1 when the sweep or its hardware row cannot be read. */
int apsolve_ep_fp8(struct Costdb *db, int64_t sweep, ApsolveEpFacts *x)
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
    if (costdb_json_member_number(hw.capabilities, "kernel_launch_overhead", &x->launch) < 0 ||
        !(x->launch > 0))
        x->launch = 0;
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

/* The kernels a MoE layer's experts launch per micro-batch under ep
 * layout l beyond those of the stored level, forward into *fwd and
 * backward into *bwd (either may be negative); 1 when there are any.
 * Megatron-Core's TEGroupedMLP (megatron/core/transformer/moe/experts.py
 * at 92c8482e6d, Megatron-Bridge 5776a6d90's 3rdparty/Megatron-LM) runs
 * fc1 (gate and up fused) and fc2 as Transformer Engine GroupedLinear
 * modules of num_local_experts GEMMs with the counts as host integers
 * (tokens_per_expert.tolist()). In TE v2.9 (module/grouped_linear.py,
 * _GroupedLinear.forward and backward) each of fprop, dgrad and wgrad is
 * general_grouped_gemm, whose multi_stream_cublas_gemm
 * (common/gemm/cublaslt_gemm.cu; the CUTLASS grouped GEMM only under
 * NVTE_USE_CUTLASS_GROUPED_GEMM on Hopper) launches one cuBLAS GEMM per
 * local expert, round-robin on the compute streams: 6 x E/ep GEMMs a
 * layer. Under FP8 the inputs of fc1 and fc2, and in the backward their
 * output gradients, go through tex.split_quantize (csrc/extensions/
 * cast.cpp, multi_tensor_quantize_impl), one fused multi-tensor cast
 * under delayed scaling (Float8Quantizer only), else one quantize per
 * expert: under current scaling 4 kernels (csrc/quantizer.cpp,
 * Float8CurrentScalingQuantizer::quantize_impl: compute_amax, which
 * launches zero_amax_kernel and the amax kernel, common/recipe/
 * current_scaling.cu; compute_scale_from_amax_kernel; the cast), under
 * the block recipes 1 (nvte_quantize_v2). The stored level runs each
 * expert weight's GEMMs (forward, dgrad, wgrad) as one batched kernel
 * and casts the experts' input and the down projection's input forward,
 * each weight's output gradient backward, each cast the kernels
 * costdb_fp8_cast_kernels counts (program_fp8.c push_cast: 4 under current
 * scaling, as TE's quantize runs them, the zeroing and scale kernels once
 * for the gate's and up's output gradients); the memory
 * and FLOPs are the same, each further kernel costs the hardware row's
 * launch overhead (the profiler's per-kernel price, hw/cost.c). */
static int grouped_launches(const ApsolveEpFacts *x, const ApsolveEpLayout *l, int *fwd,
                            int *bwd)
{
    int nl = l->ep > 0 && x->experts / l->ep > 1 ? x->experts / l->ep : 1;
    int w = x->moe_layers > 0 ? x->expert_tensors / x->moe_layers : 0;
    *fwd = *bwd = 0;
    if (!(x->launch > 0) || w <= 0)
        return 0;
    *fwd = 2 * nl - w;     /* fprop of fc1 and fc2 against the level's one per weight */
    *bwd = 4 * nl - 2 * w; /* dgrad and wgrad */
    if (x->fp8_recipe != COSTDB_FP8_NONE && x->esize < 4) {
        int kc = costdb_fp8_cast_kernels(x->fp8_recipe); /* the level's kernels a cast */
        int ks = costdb_fp8_cast_scale_kernels(x->fp8_recipe); /* once a module */
        int te = x->fp8_recipe == COSTDB_FP8_DELAYED ? 1 : nl * kc; /* TE's a site */
        *fwd += 2 * te - 2 * kc;
        /* the level's backward: each expert weight's output gradient, the
         * scale kernels once for fc1's two (gate and up read one input) */
        *bwd += 2 * te - (w * (kc - ks) + 2 * ks);
    }
    return *fwd != 0 || *bwd != 0;
}

/* Entry facts x under layout l on hosts of M GPUs with fabric f into out. */
void apsolve_ep_price(const ApsolveEpFacts *x, const CostdbFabric *fab, int M,
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
        {
            int fk, bk;
            if (grouped_launches(x, l, &fk, &bk))
                *it++ = (ApsolveEpCost){"per-expert GEMMs and FP8 casts (TE GroupedLinear)", 0,
                                        1, L * fk, L * bk, 0, L * fk * x->launch,
                                        L * bk * x->launch};
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
        /* The framework's passes over its gradient buffer before the
         * reduction (grad_presync_passes, hw/grad_presync.c: Megatron-Core's
         * start_grad_sync norm and expert scaling), priced in the stored
         * entry over its local expert elements, run over the layout's:
         * the whole buffer, at its reduce width, ZeRO-1 or not (where the
         * stored entry reduced over more than one GPU, as it prices them) */
        if (g_old > 1 && f.grad_presync_passes > 0) {
            double pre = f.grad_presync_passes *
                         costdb_memory_seconds(&f, fabs(dl) * esize *
                                                       costdb_grad_buffer_ratio(f.grad_reduce_bytes,
                                                                                esize));
            out->apply_delta += dl < 0 ? -pre : pre;
        }
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
    apsolve_ep_facts(pl, n, l->dp, l->tp, &x);
    free(pl);
    if (apsolve_ep_fp8(db, sweep, &x) < 0) {
        snprintf(why, len, "sweep %lld: its hardware row cannot be read to price the expert "
                 "weights' FP8 copies", (long long)sweep);
        return -1;
    }
    apsolve_ep_price(&x, &f, gpus_per_host, l, out);
    return 0;
}
