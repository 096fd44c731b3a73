/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FP8 training as NVIDIA Transformer Engine runs it (approf sweep --fp8,
 * docs/fp8.md): the linear layers' GEMMs on FP8 tensor cores, the casts TE
 * adds before them, the FP8 copy of the inputs the weight gradient reads
 * and the FP8 weight copies. Sources (TransformerEngine at d0067d0da6,
 * Megatron-LM at d98e8a64dd):
 * - transformer_engine/common/recipe/__init__.py, DelayedScaling: format
 *   HYBRID (E4M3 forward, E5M2 gradients), the amax taken in the cast
 *   kernels and reduced once per step (reduce_amax);
 * - transformer_engine/pytorch/module/linear.py, _linear_forward: the input
 *   is quantized with row-wise and column-wise (on Hopper: transposed)
 *   usage when the backward needs it (input_quantizer.set_usage), and only
 *   the column-wise copy is saved for the weight gradient
 *   (update_usage(rowwise_usage=False, columnwise_usage=True)); the weight
 *   is quantized into a cached workspace only when is_first_microbatch is
 *   None or True (update_ws), with the column-wise copy when the input
 *   needs a gradient;
 * - transformer_engine/pytorch/module/base.py, grad_output_preprocess: the
 *   output gradient quantized (row-wise for dgrad, column-wise for wgrad);
 * - Megatron-LM megatron/core/extensions/transformer_engine.py TELinear
 *   .forward passes is_first_microbatch, which
 *   megatron/core/pipeline_parallel/schedules.py sets on the first
 *   micro-batch of each step (set_is_first_microbatch): the weights are
 *   cast once per step;
 * - megatron/core/models/gpt/gpt_model.py: the output layer (LM head) is
 *   tensor_parallel.ColumnParallelLinear, not a TE module: it stays 16-bit.
 * The recipe (the spec's fp8, a CostdbFp8RecipeId; costdb/fp8_recipe.c owns
 * its facts) sets the bytes of each quantized copy (block scales beside
 * the data: MXFP8, blockwise) and whether an amax kernel reads the tensor
 * before each cast (current scaling, tensorwise). Every recipe keeps the
 * row-wise and column-wise copies above: MXFP8 and blockwise quantize
 * both from the high-precision tensor in one pass (MXFP8BlockScaling's
 * and Float8BlockScaling's docstrings, recipe/__init__.py), except a
 * per-tensor recipe (delayed, tensorwise) on a card with non-TN FP8 GEMMs
 * (Blackwell), which keeps one copy for both uses (approf_fp8_copies,
 * hw/fp8_card.c): its casts write 1 byte an element and its weights keep
 * one FP8 copy. Before each FP8 GEMM, TE may run a kernel on an operand's
 * scales (approf_fp8_gemm_scale_bytes, hw/fp8_card.c): blockwise on
 * Blackwell converts them to MXFP8's (TE's emulation), MXFP8 swizzles an
 * FP8 primary weight's; pushed per GEMM operand (push_scale_preps).
 */
#include <string.h>

#include "sharding/program_int.h"

/* Consumers whose producer TE does not run in FP8: the LM head (its
 * logits feed the loss), an MoE router (Megatron's TopKRouter is a plain
 * torch linear). */
static int bf16_consumer(ApprofOpKind k)
{
    return k == APPROF_OP_CROSS_ENTROPY || k == APPROF_OP_MSE_LOSS ||
           k == APPROF_OP_TOPK_ROUTER;
}

/* The weight slot of an MoE layer's expert GEMM (zoo_llama.c's
 * experts_gemm: a BATCH_MATMUL of the dispatched tokens and the [1, E, k,
 * n] expert weights), else -1. Megatron-Core's TEGroupedMLP (Megatron-LM
 * d98e8a64dd, megatron/core/transformer/moe/experts.py lines 183-240)
 * builds linear_fc1 and linear_fc2 as TEColumnParallelGroupedLinear /
 * TERowParallelGroupedLinear (megatron/core/extensions/
 * transformer_engine.py line 2382: TEGroupedLinear is TE's GroupedLinear,
 * passing is_first_microbatch like TELinear, lines 2721-2728), and TE's
 * _GroupedLinear.forward (TE d0067d0da6, transformer_engine/pytorch/
 * module/grouped_linear.py) runs them as a dense linear layer runs: the
 * input quantized row-wise and column-wise when the weight needs a
 * gradient (input_quantizer.set_usage, lines 704-714), the weights
 * quantized into the cached workspace only on the first micro-batch
 * (update_ws, line 837), FP8 grouped GEMMs (general_grouped_gemm, line
 * 875), only the column-wise input copy saved (update_usage, line 914),
 * the output gradient quantized row-wise for dgrad and column-wise for
 * wgrad (lines 1311-1313). Not modelled: Megatron's moe_act recompute or
 * fc1 offloading, which make fc2 / fc1 save the 16-bit input instead
 * (set_save_original_input, experts.py lines 273-284). */
static int expert_weight_slot(const ApprofGraph *g, int o)
{
    const ApprofOp *op = &g->ops[o];
    if (op->kind != APPROF_OP_BATCH_MATMUL || op->n_inputs != 2)
        return -1;
    for (int i = 0; i < 2; i++)
        if (g->tensors[op->inputs[i]].role == APPROF_TENSOR_PARAM)
            return i;
    return -1;
}

int shard_fp8_linear(const ShardStage *st, int o)
{
    const ApprofGraph *g = st->g;
    int ws, y;
    if (!st->hw || !st->hw->fp8 || !(st->hw->peak_flops_fp8 > 0) || g->dtype == APPROF_F32)
        return -1;
    ws = shard_linear_weight_slot(g, o);
    if (ws < 0)
        ws = expert_weight_slot(g, o);
    if (ws < 0)
        return -1;
    y = g->ops[o].outputs[0];
    if (st->t_first[y] >= 0)
        return bf16_consumer(g->ops[st->t_first[y]].kind) ? -1 : ws;
    for (size_t q = (size_t)o + 1; q < g->n_ops; q++)
        for (int i = 0; i < g->ops[q].n_inputs; i++)
            if (g->ops[q].inputs[i] == y)
                return bf16_consumer(g->ops[q].kind) ? -1 : ws;
    return ws;
}

/* The recipe priced (delayed scaling when the spec's fp8 names none). */
static const CostdbFp8Recipe *recipe_of(const ShardStage *st)
{
    const CostdbFp8Recipe *ri = costdb_fp8_recipe(st->hw->fp8);
    return ri ? ri : costdb_fp8_recipe(COSTDB_FP8_DELAYED);
}

/* A cast kernel of rows x cols elements (Transformer Engine's cast / cast-
 * transpose, with the amax fused under delayed scaling and the block
 * amaxes under the block recipes): reads the dtype's bytes, writes `out`
 * bytes per element (a quantized copy's bytes each: row-wise,
 * column-wise). With amax (current scaling) it is the amax kernel before
 * the cast instead: a reduction reading the tensor, writing one float. */
static void cast_kernel(ApprofKernel *k, ApprofDtype dt, int op, double rows, double cols,
                        double out, int amax)
{
    memset(k, 0, sizeof *k);
    k->kind = amax ? APPROF_K_REDUCTION : APPROF_K_ELEMENTWISE;
    k->op = op;
    k->dtype = dt;
    k->batch = 1;
    k->rows = (int64_t)rows;
    k->cols = (int64_t)cols;
    k->elements = (int64_t)(rows * cols);
    k->flops = (amax ? 1.0 : 2.0) * rows * cols; /* amax; scale and amax */
    k->bytes = ((double)approf_dtype_size(dt) + out) * rows * cols;
}

/* A one-thread kernel on the FP32 amax and scale (current scaling):
 * `bytes` read and written, priced at its launch. */
static int push_scale_kernel(ApprofStageProgram *p, int ph, size_t *cap, ApprofHash128 **dig,
                             int o, double bytes, uint64_t tag)
{
    ApprofKernel k;
    ApprofHash128 d;
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_ELEMENTWISE;
    k.op = o;
    k.dtype = APPROF_F32;
    k.batch = k.rows = k.cols = k.elements = 1;
    k.bytes = bytes;
    d = shard_kernel_digest(&k);
    d.b ^= tag;
    return shard_push_kernel(p, ph, cap, dig, &k, d, o);
}

/* Pushes the cast of op o's operand to phase ph: `copies` quantized
 * copies. Under current scaling, TE's Float8CurrentScalingQuantizer
 * quantize (TE v2.9 pytorch/csrc/quantizer.cpp quantize_impl; at
 * bee4649c, NeMo 25.04's pin, extensions/cast.cpp quantize) launches
 * costdb_fp8_cast_kernels' 4 kernels in order: the amax zeroed
 * (common/recipe/current_scaling.cu launch_amax_kernel: zero_amax_kernel,
 * cudaMemsetAsync at bee4649c), the amax kernel reading the tensor,
 * compute_scale_from_amax_kernel (<<<1, 1>>>: reads the amax, writes the
 * scale and its inverse), then the cast. */
static int push_cast(const ShardStage *st, ApprofStageProgram *p, int ph, size_t *cap,
                     ApprofHash128 **dig, int o, double rows, double cols, double copies,
                     int scale)
{
    const CostdbFp8Recipe *ri = recipe_of(st);
    ApprofKernel cast;
    ApprofHash128 d;
    int rc = 0;
    if (ri->amax_pass) {
        if (scale)
            rc = push_scale_kernel(p, ph, cap, dig, o, 4.0, 0x2e2e2e2e2e2e2e2eull);
        if (rc)
            return rc;
        cast_kernel(&cast, st->g->dtype, o, rows, cols, 0.0, 1);
        d = shard_kernel_digest(&cast);
        d.b ^= 0xa3a3a3a3a3a3a3a3ull;
        rc = shard_push_kernel(p, ph, cap, dig, &cast, d, o);
        if (!rc && scale)
            rc = push_scale_kernel(p, ph, cap, dig, o, 12.0, 0x5e5e5e5e5e5e5e5eull);
        if (rc)
            return rc;
    }
    cast_kernel(&cast, st->g->dtype, o, rows, cols, copies * ri->act_copy_bytes, 0);
    d = shard_kernel_digest(&cast);
    d.b ^= 0xf8f8f8f8f8f8f8f8ull;
    return shard_push_kernel(p, ph, cap, dig, &cast, d, o);
}

/* An FP8 GEMM operand whose scales a kernel prepares before the GEMM
 * (approf_fp8_gemm_scale_bytes): its elements, its kind
 * (ApprofFp8Operand), the kernels (one per expert of a grouped GEMM where
 * TE converts each expert's scales on its own). */
typedef struct {
    double elems;
    int operand;
    int64_t kernels;
} ScalePrep;

/* Pushes the scale kernels of the FP8 GEMM operands sp[0..n) to phase
 * ph: each a memory-bound kernel reading and writing the card's and
 * recipe's bytes an element (hw/fp8_card.c; blockwise on Blackwell: the
 * MXFP8 emulation's scale conversion; MXFP8: an FP8 primary weight's
 * scale swizzle). */
static int push_scale_preps(const ShardStage *st, ApprofStageProgram *p, int ph, size_t *cap,
                            ApprofHash128 **dig, int o, const ScalePrep *sp, int n)
{
    int rc = 0;
    for (int j = 0; j < n && !rc; j++) {
        double b = approf_fp8_gemm_scale_bytes(st->hw, st->hw->fp8, sp[j].operand);
        int64_t nk = sp[j].kernels > 1 ? sp[j].kernels : 1;
        ApprofKernel k;
        ApprofHash128 d;
        if (!(b > 0) || !(sp[j].elems > 0))
            continue;
        memset(&k, 0, sizeof k);
        k.kind = APPROF_K_ELEMENTWISE;
        k.op = o;
        k.dtype = st->g->dtype;
        k.batch = 1;
        k.elements = (int64_t)(sp[j].elems / (double)nk);
        k.rows = 1;
        k.cols = k.elements;
        k.bytes = b * (double)k.elements;
        d = shard_kernel_digest(&k);
        d.b ^= 0x5c5c5c5c5c5c5c5cull;
        for (int64_t e = 0; e < nk && !rc; e++)
            rc = shard_push_kernel(p, ph, cap, dig, &k, d, o);
    }
    return rc;
}

int shard_fp8_op(const ShardStage *st, TInfo *ti, ApprofStageProgram *p, int ph, size_t k0,
                 int o, int forward, size_t *cap, ApprofHash128 **dig)
{
    const ApprofGraph *g = st->g;
    const ApprofOp *op = &g->ops[o];
    int ws = shard_fp8_linear(st, o), n_gemm = 0, xin = -1, n_prep = 0, rc;
    size_t k1 = p->n_kernels[ph];
    double rows = 0, cols = 0, welems;
    ScalePrep prep[8];
    /* the weight operand: an FP8 primary weight (the spec's
     * fp8_param_gather, Megatron's --fp8-param-gather under ZeRO-1/2;
     * ZeRO-3 gathers through torchao instead), else TE's cached copy */
    int wop = st->hw && st->hw->fp8_param_gather && st->variant.zero <= 2
                  ? APPROF_FP8_OPERAND_PRIMARY_WEIGHT
                  : APPROF_FP8_OPERAND_WEIGHT;
    if (ws < 0)
        return 0;
    welems = ti[op->inputs[ws]].local /
             (double)approf_dtype_size(g->tensors[op->inputs[ws]].dtype);
    for (int i = 0; i < op->n_inputs; i++)
        if (i != ws && g->tensors[op->inputs[i]].role != APPROF_TENSOR_PARAM)
            xin = op->inputs[i];
    for (size_t i = k0; i < k1; i++) {
        ApprofKernel *k = &p->kernels[ph][i];
        double es = (double)approf_dtype_size(k->dtype), b = (double)k->batch;
        if (k->kind != APPROF_K_GEMM || k->attention)
            continue;
        /* A and B in FP8, C in the model's dtype (TE's GEMM output) */
        k->fp8 = 1;
        k->bytes = b * ((double)k->m * (double)k->k + (double)k->k * (double)k->n) +
                   es * b * (double)k->m * (double)k->n;
        k->store_bytes = es * b * (double)k->m * (double)k->n;
        dig[ph][i] = shard_kernel_digest(k);
        dig[ph][i].a ^= 0xf8f8f8f8f8f8f8f8ull;
        if (forward && n_gemm == 0)
            rows = (double)k->batch * (double)k->m, cols = (double)k->k; /* x: m x k */
        if (!forward) /* the last is the wgrad, dw = x^T dy: k x n over m, so dy is m x n
                       * (per expert: batch of them) */
            rows = (double)k->batch * (double)k->k, cols = (double)k->n;
        /* the operands' scales before the GEMM: A (m x k) an input or
         * output gradient; B the weight in the forward and dgrad, the
         * output gradient (k x n) in the wgrad. A grouped GEMM converts
         * each expert's blockwise scales on its own (gemm.cpp lines
         * 595-603) but swizzles all its MXFP8 scales in one kernel
         * (multi_tensor_swizzle_scales_for_gemm, lines 572-575) */
        if (n_prep + 2 <= (int)(sizeof prep / sizeof prep[0])) {
            int64_t ne = k->experts > 1 && st->hw->fp8 != COSTDB_FP8_MXFP8 ? k->experts : 1;
            double a = b * (double)k->m * (double)k->k;
            prep[n_prep++] = (ScalePrep){a, APPROF_FP8_OPERAND_ACT, ne};
            if (k->wgrad)
                prep[n_prep++] =
                    (ScalePrep){b * (double)k->k * (double)k->n, APPROF_FP8_OPERAND_ACT, ne};
            else
                prep[n_prep++] = (ScalePrep){welems, wop, ne};
        }
        n_gemm++;
    }
    if (!n_gemm)
        return 0;
    rc = push_scale_preps(st, p, ph, cap, dig, o, prep, n_prep);
    if (rc)
        return rc;
    if (forward) {
        /* the input, once per stage and pass where several linear layers
         * read it (q, k, v); row-wise for the GEMM, column-wise kept for
         * the weight gradient */
        unsigned bit = ph ? 2u : 1u;
        if (xin >= 0 && (ti[xin].fp8_cast & bit))
            return 0;
        if (xin >= 0)
            ti[xin].fp8_cast |= bit;
        return push_cast(st, p, ph, cap, dig, o, rows, cols,
                         (double)approf_fp8_copies(st->hw, st->hw->fp8), 1);
    }
    /* the output gradient in E5M2: row-wise for dgrad, column-wise for
     * wgrad (rows x cols from the last GEMM, the wgrad's, above). Layers
     * that read one input (q, k, v; gate, up) are one TE module in
     * Megatron (linear_qkv, linear_fc1), whose concatenated output
     * gradient is one quantize: its scale kernels once (fp8_cast bit 4),
     * the amax and cast per layer at its bytes */
    {
        int scale = !(xin >= 0 && (ti[xin].fp8_cast & 4u));
        if (xin >= 0)
            ti[xin].fp8_cast |= 4u;
        return push_cast(st, p, ph, cap, dig, o, rows, cols,
                         n_gemm > 1 ? (double)approf_fp8_copies(st->hw, st->hw->fp8) : 1.0,
                         scale);
    }
}

void shard_fp8_saved(const ShardStage *st, const TInfo *ti, const int *touched, int n_touched,
                     double *saved_act, double *sin_saved)
{
    const ApprofGraph *g = st->g;
    if (!st->hw || !st->hw->fp8)
        return;
    /* saved inputs that only FP8 linear layers save: the column-wise
     * quantized copy (one byte an element and the recipe's block scales)
     * instead of the dtype's bytes */
    double cb = recipe_of(st)->act_copy_bytes;
    for (int k = 0; k < n_touched; k++) {
        int t = touched[k];
        double es = (double)approf_dtype_size(g->tensors[t].dtype);
        if (!ti[t].keep || !ti[t].fp8_saved || ti[t].nonfp8_saved || ti[t].stage_out || es <= cb)
            continue;
        if (ti[t].in_range)
            *saved_act -= ti[t].local * (1.0 - cb / es);
        else
            *sin_saved -= ti[t].local * (1.0 - cb / es);
    }
}

/* Delayed scaling's amax reductions (TE d0067d0da6,
 * transformer_engine/pytorch/quantization.py): reduce_and_update_fp8_tensors
 * concatenates the FP32 amaxes of an autocast region's FP8 tensors and
 * all-reduces them (MAX) over the region's amax reduction group when
 * recipe.reduce_amax (the default), at each exit of the outermost
 * fp8_autocast in the forward (autocast_exit) and once in the backward
 * (linear.py: the first FP8 module's backward, forward=False); the other
 * recipes keep no amax buffer ("noop for other recipes"). A module holds 3
 * forward FP8 tensors per GEMM and 2 backward ones (base.py,
 * num_fp8_tensors). Megatron-LM core_v0.19.0 wraps a whole transformer
 * block's pass in one fp8 context under delayed scaling
 * (transformer_block.py use_outer_quantization_context) with
 * get_amax_reduction_group(with_context_parallel=True) (fp8_utils.py), the
 * tensor-, data- and context-parallel ranks of the stage: one all-reduce
 * per micro-batch and phase over the stage's whole mesh, 12 bytes per FP8
 * linear layer forward and 8 backward. The all-reduce is synchronous
 * (reduce_tensor_across_group_op_max: async_op=False, in TE d0067d0da6
 * quantization.py and in TE 1.x, v1.9's 7d576ed fp8.py, the version NeMo
 * 24.07's r2.0.0rc1 Dockerfile pins), issued from the host at the
 * autocast exit or inside the first module's backward: no GEMM runs beside
 * it, so TE's userbuffers overlap hides none of it (blocking). */
static int push_amax_reduce(const ShardStage *st, ApprofStageProgram *p, size_t ccap[2],
                            int n_lin, int op)
{
    const ShardMesh *m = &st->mesh;
    ApprofCollective c;
    int rc = 0;
    if (st->hw->fp8 != COSTDB_FP8_DELAYED || n_lin == 0 || m->n[0] * m->n[1] <= 1)
        return 0;
    memset(&c, 0, sizeof c);
    c.kind = APPROF_COLL_ALL_REDUCE;
    c.axes = APPROF_AXIS0 | APPROF_AXIS1;
    c.group_size = m->n[0] * m->n[1];
    c.crosses_hosts = m->cross_both;
    c.hosts = m->hosts_both;
    c.span_hosts = m->span_hosts_both;
    c.op = op;
    c.blocking = 1;
    for (int ph = 0; ph < 2 && !rc; ph++) {
        c.bytes = (ph ? 2.0 : 3.0) * 4.0 * (double)n_lin;
        rc = shard_push_coll(p, ph, &ccap[ph], &c);
    }
    return rc;
}

/* 1 when graph op o is the first FP8 operator of the stage reading t as
 * its activation operand: the one whose forward casts t (shard_fp8_op
 * casts a tensor once per stage and pass). */
static int first_fp8_reader(const ShardStage *st, int t, int o)
{
    const ApprofGraph *g = st->g;
    int q = g->tensors[t].producer >= st->op_begin ? g->tensors[t].producer + 1 : st->op_begin;
    for (; q < o; q++)
        for (int i = 0; i < g->ops[q].n_inputs; i++)
            if (g->ops[q].inputs[i] == t) {
                int ws = shard_fp8_linear(st, q);
                if (ws >= 0 && ws != i)
                    return 0;
                break;
            }
    return 1;
}

/* Current scaling's amax all-reduce under sequence parallelism. TE sets
 * with_amax_reduction over the tensor-parallel group on a
 * column-parallel layer's input quantizer and a row-parallel layer's
 * output-gradient quantizer when sequence_parallel is on
 * (_customize_quantizers_float8_current_scaling in module/linear.py and
 * layernorm_linear.py, at TE bee4649c, NeMo 25.04's pin, and v2.9, the
 * 25.11 container's): the rank quantizes its sequence shard before the
 * FP8 all-gather (distributed.py gather_along_first_dim, _all_gather_fp8;
 * base.py grad_output_preprocess), and between the amax kernel and the
 * scale kernel its quantize all-reduces (MAX) the 4-byte amax over the
 * group and waits for it (quantizer.cpp quantize_impl at v2.9,
 * extensions/cast.cpp at bee4649c: allreduce(...)->wait()). The stage
 * program's tell of such a layer: a dense FP8 linear layer whose input,
 * produced in the stage split over a mesh axis, it reads whole over that
 * axis (the forward all-gather; again in the backward where the
 * recomputed forward casts it again, TInfo.fp8_cast), or whose output its strategy
 * reduce-scatters over an axis (the backward all-gathers the gradient,
 * shard_fuses_to_reduce_scatter). One blocking all-reduce of 4 bytes over
 * that axis each: the cast waits on it with nothing beside it, as for
 * delayed scaling's (push_amax_reduce). Not GroupedLinear's (no
 * amax reduction group in grouped_linear.py). */
static int push_sp_amax_reduces(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                                size_t ccap[2])
{
    const ApprofGraph *g = st->g;
    const ShardMesh *m = &st->mesh;
    int rc = 0;
    if (!recipe_of(st)->amax_pass || m->n[0] * m->n[1] <= 1)
        return 0;
    for (int so = 0; so < st->n_ops && !rc; so++) {
        const ShardOp *sop = &st->ops[so];
        const ShardStrat *s = &sop->s[st->choice[so]];
        int o = sop->op, ws, y, q;
        const ApprofOp *op = &g->ops[o];
        if (shard_linear_weight_slot(g, o) < 0 || (ws = shard_fp8_linear(st, o)) < 0)
            continue;
        for (int i = 0; i < op->n_inputs && !rc; i++) {
            int t = op->inputs[i];
            ShardLayout lc;
            if (i == ws || g->tensors[t].role == APPROF_TENSOR_PARAM || !ti[t].in_range ||
                !first_fp8_reader(st, t, o))
                continue;
            lc = shard_operand_layout(s, sop->sp->in_map[i], g->tensors[t].ndim);
            for (int x = 0; x < 2 && !rc; x++)
                for (int ph = 0; ph < 2 && !rc; ph++)
                    if (m->n[x] > 1 && ti[t].L.d[x] >= 0 && lc.d[x] < 0 &&
                        (ph == 0 || (ti[t].fp8_cast & 2u))) {
                        ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x, 4.0, o);
                        c.blocking = 1;
                        rc = shard_push_coll(p, ph, &ccap[ph], &c);
                    }
        }
        y = op->outputs[0];
        q = st->t_first[y];
        if (q < 0)
            continue;
        for (int x = 0; x < 2 && !rc; x++) {
            const ShardOp *cs = &st->ops[q - st->op_begin];
            int slot = 0;
            ShardLayout lc;
            if (!shard_strat_reduces(sop, s, x))
                continue;
            while (slot < g->ops[q].n_inputs && g->ops[q].inputs[slot] != y)
                slot++;
            lc = shard_operand_layout(&cs->s[st->choice[q - st->op_begin]], cs->sp->in_map[slot],
                                      g->tensors[y].ndim);
            if (shard_fuses_to_reduce_scatter(st, y, x, ti[y].L, lc, 1)) {
                ApprofCollective c = shard_coll(m, APPROF_COLL_ALL_REDUCE, x, 4.0, o);
                c.blocking = 1;
                rc = shard_push_coll(p, 1, &ccap[1], &c);
            }
        }
    }
    return rc;
}

/* FP8 weight all-gathers under ZeRO-3 (the spec's fp8_param_gather with
 * ZeRO-3; docs/fp8.md, "FP8 weight all-gathers under ZeRO-3"), as
 * torchtitan v0.2.2 (73a0e6979dd1) runs them with [quantize.linear.float8]
 * enable_fsdp_float8_all_gather and precompute_float8_dynamic_scale_for_fsdp
 * (torchtitan/components/quantization/float8.py lines 87-99: both only
 * where FSDP shards, dp_shard_enabled; post_optimizer_hook line 162 calls
 * torchao's precompute once per step), in torchao v0.18.0's FSDP2
 * extension (torchao/float8/fsdp_utils.py): fsdp_pre_all_gather (line 228)
 * casts the rank's high-precision shard to float8 with the precomputed
 * scale and hands FSDP its 1-byte data to gather (line 251);
 * fsdp_post_all_gather (line 253) wraps the gathered bytes as the
 * Float8TrainingTensor the GEMM reads, freed with the unit's other
 * gathered parameters; the high-precision shard stays the parameter.
 * precompute_float8_dynamic_scale_for_fsdp (line 28) takes the amaxes of
 * all the float8 weights' shards (_foreach_norm, line 70) and all-reduces
 * them once (line 73). The recipe's weight_copy_bytes is the bytes of a
 * gathered element (1 for a per-tensor recipe; torchao's float8 all-gather
 * is its tensorwise recipe's). Megatron-FSDP's --fp8-param-gather
 * (core_v0.19.0, megatron/core/distributed/fsdp/src/megatron_fsdp/
 * param_and_grad_buffer.py: uint8 gather buffers, line 994, and a
 * transpose-weight buffer for FP8, line 1687) keeps the FP8 shard as the
 * weight and gathers both copies on Hopper: not modelled. */
int shard_fp8_zero3_gathers(const ShardStage *st)
{
    return st->hw && st->hw->fp8 && st->hw->fp8_param_gather && st->variant.zero == 3;
}

double shard_fp8_gathered_ratio(const ShardStage *st, int o, int t)
{
    /* torchao's float8 all-gather converts Float8Linear weights: not the
     * experts' grouped weights */
    int ws = shard_fp8_zero3_gathers(st) && shard_linear_weight_slot(st->g, o) >= 0
                 ? shard_fp8_linear(st, o)
                 : -1;
    double es, wcb;
    if (ws < 0 || st->g->ops[o].inputs[ws] != t)
        return 1.0;
    es = (double)approf_dtype_size(st->g->tensors[t].dtype);
    wcb = recipe_of(st)->weight_copy_bytes;
    return wcb < es ? wcb / es : 1.0;
}

int shard_fp8_weights(const ShardStage *st, const TInfo *ti, ApprofStageProgram *p,
                      size_t ccap[2])
{
    const ApprofGraph *g = st->g;
    double welems = 0.0;
    int n_lin = 0, first = -1, rc;
    if (!st->hw || !st->hw->fp8)
        return 0;
    /* the FP8 weights (row-wise and column-wise copies, one on Blackwell
     * under a per-tensor recipe, cached for the step, each the recipe's
     * weight_copy_bytes an element): resident in
     * both modules; cast once per step, read the dtype's bytes and write
     * both copies (and under current scaling read once more for the
     * amax), with the optimizer's bytes */
    const CostdbFp8Recipe *ri = recipe_of(st);
    for (int o = st->op_begin; o < st->op_end; o++) {
        int ws = shard_fp8_linear(st, o);
        if (ws >= 0) {
            int w = g->ops[o].inputs[ws];
            welems += ti[w].local / (double)approf_dtype_size(g->tensors[w].dtype);
            first = first < 0 ? o : first;
            n_lin++;
        }
    }
    /* FP8 primary weights (the spec's fp8_param_gather: Megatron-LM's
     * --fp8-param-gather, which validate_args allows with the distributed
     * optimizer, megatron/training/arguments.py at core_v0.19.0; NeMo's
     * fp8_params): the FP8 copies are the weights, no 16-bit weight is
     * kept beside them, and the distributed optimizer's all-gather of the
     * updated parameters (ZeRO-1/2's apply all-gather) moves one byte an
     * element of them instead of the dtype's. The f32 main copy, the
     * gradients and the cast once per step stay. ZeRO-3 keeps the 16-bit
     * shard and gathers FP8 weights (shard_fp8_zero3_gathers). */
    double es = (double)approf_dtype_size(g->dtype);
    int copies = approf_fp8_copies(st->hw, st->hw->fp8);
    double wcb = ri->weight_copy_bytes, saved = (es - wcb) * welems;
    int fp8_params = st->hw->fp8_param_gather && st->variant.zero <= 2;
    double keep16 = fp8_params ? es * welems : 0.0;
    /* resident beyond the 16-bit weights (the one rule the solver's ep
     * stages also take, costdb_fp8_weight_extra_bytes) */
    double extra = costdb_fp8_weight_extra_bytes(
        costdb_fp8_recipe(st->hw->fp8) ? st->hw->fp8 : COSTDB_FP8_DELAYED, copies, fp8_params, es) *
                   welems;
    if (shard_fp8_zero3_gathers(st) && n_lin > 0) {
        /* ZeRO-3's FP8 gathers: no FP8 copy resident, the gathered FP8
         * weight is the gather buffer (program_zero.c); per step the
         * shard's amaxes are read (_foreach_norm) and all-reduced once
         * over the ZeRO group, 4 bytes a weight */
        int G = shard_zero_group(p);
        p->optimizer_bytes += es * welems / G;
        if (G > 1 && p->n_apply_colls < sizeof p->apply_colls / sizeof p->apply_colls[0]) {
            ApprofCollective c = p->grad_sync;
            c.kind = APPROF_COLL_ALL_REDUCE;
            c.bytes = 4.0 * (double)n_lin;
            p->apply_colls[p->n_apply_colls++] = c;
        }
        rc = push_sp_amax_reduces(st, ti, p, ccap);
        return rc ? rc : push_amax_reduce(st, p, ccap, n_lin, first);
    }
    p->invar_size[0] += (int64_t)extra;
    p->invar_size[1] += (int64_t)extra;
    p->optimizer_bytes += (es * (1.0 + ri->amax_pass) + copies * wcb) * welems;
    if (keep16 > 0 && saved > 0)
        for (size_t i = 0; i < p->n_apply_colls; i++)
            if (p->apply_colls[i].kind == APPROF_COLL_ALL_GATHER)
                p->apply_colls[i].bytes =
                    p->apply_colls[i].bytes > saved ? p->apply_colls[i].bytes - saved : 0.0;
    rc = push_sp_amax_reduces(st, ti, p, ccap);
    return rc ? rc : push_amax_reduce(st, p, ccap, n_lin, first);
}
