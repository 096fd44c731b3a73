/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FP8 training as Transformer Engine runs it (approf sweep --fp8,
 * docs/fp8.md): an FP8 GEMM costs flops / (peak_flops_fp8 x the FP8 GEMM
 * efficiency) where it is compute bound; in a GPT stage the linear
 * layers' GEMMs (not attention's, not the LM head's) become FP8 GEMMs
 * with 1-byte operands, each forward input and each output gradient gets
 * a cast kernel reading 2 and writing 2 bytes per element, the saved
 * inputs shrink, the FP8 weights are resident and cast once per step, and
 * the stage costs less.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

static void test_fp8_gemm_price(void)
{
    ApprofHardwareSpec hw;
    ApprofKernel k;
    double n = 8192, t8, t16, e8, e16;
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    CU_ASSERT_FATAL(hw.peak_flops_fp8 > 0);
    memset(&k, 0, sizeof k);
    k.kind = APPROF_K_GEMM;
    k.dtype = APPROF_BF16;
    k.batch = 1;
    k.m = k.n = k.k = (int64_t)n;
    k.flops = 2 * n * n * n;
    k.bytes = 2 * (3 * n * n);
    k.store_bytes = 2 * n * n;
    t16 = approf_kernel_seconds(&hw, &k);
    e16 = hw.gemm_eff[APPROF_MATH_F16] > 0 ? hw.gemm_eff[APPROF_MATH_F16] : hw.gemm_efficiency;
    CU_ASSERT_DOUBLE_EQUAL(t16, k.flops / (hw.peak_flops[APPROF_BF16] * e16) +
                                    hw.kernel_launch_overhead, 1e-12);
    k.fp8 = 1;
    k.bytes = 2 * n * n + 2 * n * n; /* A, B one byte; C two */
    t8 = approf_kernel_seconds(&hw, &k);
    e8 = hw.gemm_eff[APPROF_MATH_FP8] > 0 ? hw.gemm_eff[APPROF_MATH_FP8] : hw.gemm_efficiency;
    CU_ASSERT_DOUBLE_EQUAL(t8, k.flops / (hw.peak_flops_fp8 * e8) + hw.kernel_launch_overhead,
                           1e-12);
    CU_ASSERT(t8 < t16);
}

/* One stage of the whole graph on a (1, 1) mesh of h100-sxm, fp8 or not. */
static int shard_dp(const ApprofGraph *g, int fp8, int dp, int zero, int fp8_params,
                    ApprofHardwareSpec *hw, ApprofStageProgram *p);
/* The ZeRO-3 schedule shard_dp prices (hw->zero3_schedule). */
static int zero3_schedule = APPROF_ZERO3_SERIAL;

static int shard_one(const ApprofGraph *g, int fp8, ApprofHardwareSpec *hw, ApprofStageProgram *p)
{
    return shard_dp(g, fp8, 1, 0, 0, hw, p);
}

/* One stage of the whole graph on a (dp, 1) mesh of h100-sxm under ZeRO
 * stage zero, fp8 or not, with FP8 primary weights or not. */
static int shard_dp(const ApprofGraph *g, int fp8, int dp, int zero, int fp8_params,
                    ApprofHardwareSpec *hw, ApprofStageProgram *p)
{
    ApprofLayering l;
    int begin = 0, end = (int)g->n_ops;
    ApprofShardContext *ctx = NULL;
    ApprofShardRequest req;
    char err[256];
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", hw) == 0);
    hw->fp8 = fp8;
    hw->fp8_param_gather = fp8_params;
    hw->zero3_schedule = zero3_schedule;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, hw, 1, &ctx) == 0);
    memset(&req, 0, sizeof req);
    req.mesh_hosts = req.logical_b = 1;
    req.mesh_gpus = req.logical_a = dp;
    req.variant.zero = zero;
    req.force_batch_dim = 0;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    memset(p, 0, sizeof *p);
    int rc = approf_shard_stage(ctx, &req, p, err, sizeof err);
    if (rc)
        fprintf(stderr, "shard: %s\n", err);
    approf_shard_context_free(&ctx);
    return rc;
}

static void test_fp8_stage(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec h16, h8;
    ApprofStageProgram a, b;
    char err[256];
    int vocab = 2048 + 8, n_lin = 0, n_lin_bwd = 0, head = 0;
    double welems = 0;
    memset(&o, 0, sizeof o);
    o.num_layers = 1;
    o.hidden = 4096; /* GEMM-bound: 4096 x 4096 x 4096 and larger */
    o.heads = 32;
    o.seq_len = 2048;
    o.vocab = vocab;
    o.batch = 2;
    o.dtype = "bf16";
    CU_ASSERT_FATAL(approf_zoo_build("gpt", &o, &g, err, sizeof err) == 0);
    CU_ASSERT_FATAL(shard_one(g, 0, &h16, &a) == 0);
    CU_ASSERT_FATAL(shard_one(g, 1, &h8, &b) == 0);
    /* the linear layers: MATMUL with a weight; the LM head's N is the vocabulary */
    for (size_t i = 0; i < b.n_kernels[0]; i++) {
        const ApprofKernel *k = &b.kernels[0][i];
        if (k->kind != APPROF_K_GEMM)
            continue;
        if (k->attention || g->ops[k->op].kind != APPROF_OP_MATMUL) {
            CU_ASSERT(!k->fp8);
        } else if (k->n == vocab) {
            CU_ASSERT(!k->fp8);
            head++;
        } else {
            CU_ASSERT(k->fp8);
            CU_ASSERT_DOUBLE_EQUAL(k->bytes, (double)k->m * k->k + (double)k->k * k->n +
                                                 2.0 * k->m * k->n, 0.5);
            n_lin++;
        }
    }
    CU_ASSERT(head == 1);
    CU_ASSERT(n_lin >= 4); /* q, k, v (or fused), out, fc1, fc2 */
    for (size_t i = 0; i < b.n_kernels[1]; i++)
        n_lin_bwd += b.kernels[1][i].fp8;
    CU_ASSERT(n_lin_bwd >= n_lin); /* dgrad and wgrad of each (no dgrad where the input
                                    * needs no gradient) */
    /* the casts: the forward's per distinct input, the backward's per layer; each
     * reads 2 bytes and writes 2 (row-wise and column-wise FP8 copies) */
    {
        size_t extra0 = b.n_kernels[0] - a.n_kernels[0], extra1 = b.n_kernels[1] - a.n_kernels[1];
        size_t casts0 = 0, casts1 = 0;
        CU_ASSERT(extra0 >= 1 && extra0 <= (size_t)n_lin);
        CU_ASSERT(extra1 == (size_t)n_lin);
        for (int ph = 0; ph < 2; ph++)
            for (size_t i = 0; i < b.n_kernels[ph]; i++) {
                const ApprofKernel *k = &b.kernels[ph][i];
                if (k->kind != APPROF_K_ELEMENTWISE || g->ops[k->op].kind != APPROF_OP_MATMUL ||
                    !(k->bytes == 4.0 * (double)k->elements || k->bytes == 3.0 * (double)k->elements))
                    continue;
                /* a cast is the size of the layer's input (forward) or output */
                CU_ASSERT(k->elements > 0);
                {
                    int found = 0;
                    for (size_t j = 0; j < b.n_kernels[0]; j++) {
                        const ApprofKernel *f = &b.kernels[0][j];
                        if (f->op == k->op && f->fp8 &&
                            (double)k->elements == (ph ? (double)f->m * f->n : (double)f->m * f->k))
                            found = 1;
                    }
                    CU_ASSERT(found);
                }
                if (ph)
                    casts1++;
                else
                    casts0++;
            }
        CU_ASSERT(casts0 >= extra0);
        CU_ASSERT(casts1 >= extra1);
    }
    /* memory: saved inputs in FP8, the FP8 weights resident, cast once per step */
    for (size_t i = 0; i < b.n_kernels[0]; i++)
        if (b.kernels[0][i].fp8)
            welems += (double)b.kernels[0][i].k * (double)b.kernels[0][i].n; /* w: k x n */
    CU_ASSERT(welems > 0);
    CU_ASSERT(b.intermediate_size < a.intermediate_size);
    CU_ASSERT_DOUBLE_EQUAL(b.optimizer_bytes - a.optimizer_bytes, 4.0 * welems, 1.0);
    CU_ASSERT(strcmp(a.signature, b.signature) != 0);
    /* cheaper: the GEMMs are at twice the peak */
    CU_ASSERT(approf_phase_seconds(&h8, &b, 0) < approf_phase_seconds(&h16, &a, 0));
    CU_ASSERT(approf_phase_seconds(&h8, &b, 1) < approf_phase_seconds(&h16, &a, 1));
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&b);
    approf_graph_free(&g);
}

/* FP8 primary weights (fp8_param_gather, Megatron's --fp8-param-gather):
 * on the GPT layer of test_fp8_stage, dp 2 under ZeRO-1, each FP8 layer's
 * weight element keeps its two FP8 copies (2 bytes) and loses its bf16
 * weight (2 bytes): both modules' inputs are 2 x welems smaller; the
 * distributed optimizer's all-gather of the updated parameters moves 1
 * byte of them instead of 2: welems fewer bytes. The optimizer state and
 * the casts are unchanged. */
static void test_fp8_params(void)
{
    ApprofGraph *g = NULL;
    ApprofHardwareSpec h8, hp;
    ApprofStageProgram b, c;
    double welems = 0, gb = 0, gc = 0;
    g = zoo_fixture_fp8_gpt_layer();
    CU_ASSERT_FATAL(shard_dp(g, 1, 2, 1, 0, &h8, &b) == 0);
    CU_ASSERT_FATAL(shard_dp(g, 1, 2, 1, 1, &hp, &c) == 0);
    for (size_t i = 0; i < b.n_kernels[0]; i++)
        if (b.kernels[0][i].fp8)
            welems += (double)b.kernels[0][i].k * (double)b.kernels[0][i].n;
    /* the four linear layers of a GPT block: q, k, v and out (4 h^2), fc1 and fc2 (8 h^2) */
    CU_ASSERT_DOUBLE_EQUAL(welems, 12.0 * 1024 * 1024, 0.5);
    CU_ASSERT_DOUBLE_EQUAL((double)(b.invar_size[0] - c.invar_size[0]), 2.0 * welems, 1.0);
    CU_ASSERT_DOUBLE_EQUAL((double)(b.invar_size[1] - c.invar_size[1]), 2.0 * welems, 1.0);
    for (size_t i = 0; i < b.n_apply_colls; i++)
        if (b.apply_colls[i].kind == APPROF_COLL_ALL_GATHER)
            gb += b.apply_colls[i].bytes;
    for (size_t i = 0; i < c.n_apply_colls; i++)
        if (c.apply_colls[i].kind == APPROF_COLL_ALL_GATHER)
            gc += c.apply_colls[i].bytes;
    CU_ASSERT(gb > 0);
    CU_ASSERT_DOUBLE_EQUAL(gb - gc, welems, 1.0);
    CU_ASSERT_EQUAL(b.initial_size, c.initial_size);
    CU_ASSERT_DOUBLE_EQUAL(b.optimizer_bytes, c.optimizer_bytes, 0.5);
    CU_ASSERT(c.peak_memory[1] < b.peak_memory[1]);
    approf_stage_program_clear(&b);
    approf_stage_program_clear(&c);
    approf_graph_free(&g);
}

/* The bytes of phase ph's collectives of kind k (ph 2: the apply ones). */
static double coll_bytes(const ApprofStageProgram *p, int ph, ApprofCollKind k)
{
    const ApprofCollective *c = ph < 2 ? p->colls[ph] : p->apply_colls;
    size_t n = ph < 2 ? p->n_colls[ph] : p->n_apply_colls;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        if (c[i].kind == k)
            sum += c[i].bytes;
    return sum;
}

/* FP8 weight all-gathers under ZeRO-3 (fp8_param_gather, torchtitan's
 * enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp,
 * torchao's FSDP2 float8 all-gather): the GPT layer of test_fp8_params at
 * dp 2 under ZeRO-3 and the FSDP2 schedule. Each FP8 weight element moves
 * 1 byte instead of 2 in the forward's and the backward's all-gathers
 * (welems fewer bytes in each phase), the reduce-scatters are unchanged;
 * the gathered unit and the one prefetched (2 units in the forward, 2 and
 * the gradient in the backward) hold 1 byte an element: 2 x welems less
 * temp in each phase; no FP8 copy is resident (2 bytes an element, 2
 * copies on Hopper): 2 x welems less in both modules' inputs; per step the
 * cast once of the whole weight (read 2, write 2 x 1 bytes) is replaced by
 * the amax read of the half shard (2 x welems / 2 bytes): 3 x welems fewer
 * optimizer bytes, and one all-reduce of 4 bytes per FP8 weight. */
static void test_fp8_zero3_gathers(void)
{
    ApprofGraph *g = NULL;
    ApprofHardwareSpec h8, hp;
    ApprofStageProgram b, c;
    double welems = 0;
    int n_lin = 0;
    g = zoo_fixture_fp8_gpt_layer();
    zero3_schedule = APPROF_ZERO3_FSDP2;
    CU_ASSERT_FATAL(shard_dp(g, 1, 2, 3, 0, &h8, &b) == 0);
    CU_ASSERT_FATAL(shard_dp(g, 1, 2, 3, 1, &hp, &c) == 0);
    zero3_schedule = APPROF_ZERO3_SERIAL;
    for (size_t i = 0; i < b.n_kernels[0]; i++)
        if (b.kernels[0][i].fp8) {
            welems += (double)b.kernels[0][i].k * (double)b.kernels[0][i].n;
            n_lin++;
        }
    CU_ASSERT_DOUBLE_EQUAL(welems, 12.0 * 1024 * 1024, 0.5);
    for (int ph = 0; ph < 2; ph++) {
        double ab = coll_bytes(&b, ph, APPROF_COLL_ALL_GATHER);
        CU_ASSERT(ab > 2.0 * welems);
        CU_ASSERT_DOUBLE_EQUAL(ab - coll_bytes(&c, ph, APPROF_COLL_ALL_GATHER), welems, 1.0);
        CU_ASSERT_DOUBLE_EQUAL(coll_bytes(&b, ph, APPROF_COLL_REDUCE_SCATTER),
                               coll_bytes(&c, ph, APPROF_COLL_REDUCE_SCATTER), 0.5);
        CU_ASSERT_DOUBLE_EQUAL((double)(b.temp_buffer_size[ph] - c.temp_buffer_size[ph]),
                               2.0 * welems, 2.0);
        CU_ASSERT_DOUBLE_EQUAL((double)(b.invar_size[ph] - c.invar_size[ph]), 2.0 * welems, 2.0);
        CU_ASSERT(c.peak_memory[ph] < b.peak_memory[ph]);
    }
    CU_ASSERT_DOUBLE_EQUAL(b.optimizer_bytes - c.optimizer_bytes, 3.0 * welems, 1.0);
    CU_ASSERT_EQUAL(b.n_apply_colls, 0);
    CU_ASSERT_DOUBLE_EQUAL(coll_bytes(&c, 2, APPROF_COLL_ALL_REDUCE), 4.0 * n_lin, 1e-9);
    approf_stage_program_clear(&b);
    approf_stage_program_clear(&c);
    /* the serial and DeepSpeed schedules' gathers (module by module;
     * every weight here is above DeepSpeed's persistence threshold) move
     * the same welems bytes fewer in each phase */
    for (int sched = APPROF_ZERO3_SERIAL; sched <= APPROF_ZERO3_DEEPSPEED; sched += 2) {
        zero3_schedule = sched;
        CU_ASSERT_FATAL(shard_dp(g, 1, 2, 3, 0, &h8, &b) == 0);
        CU_ASSERT_FATAL(shard_dp(g, 1, 2, 3, 1, &hp, &c) == 0);
        for (int ph = 0; ph < 2; ph++)
            CU_ASSERT_DOUBLE_EQUAL(coll_bytes(&b, ph, APPROF_COLL_ALL_GATHER) -
                                       coll_bytes(&c, ph, APPROF_COLL_ALL_GATHER),
                                   welems, 1.0);
        approf_stage_program_clear(&b);
        approf_stage_program_clear(&c);
    }
    zero3_schedule = APPROF_ZERO3_SERIAL;
    approf_graph_free(&g);
}

/* The experts' grouped GEMMs in FP8 (Megatron-Core's TEGroupedMLP on TE's
 * GroupedLinear, program_fp8.c's expert_weight_slot): one mixtral block on
 * one h100-sxm under delayed scaling. By hand: the three expert GEMMs
 * (gate, up, down) run FP8 forward GEMMs, the router's gate stays 16-bit;
 * the forward casts the dispatched tokens x[B, E, C, h] once (gate and up
 * read it) and the down projection's input [B, E, C, ffn] once, each
 * reading 2 bytes and writing 2 an element; the backward casts each
 * expert GEMM's output gradient; the FP8 weight copies of the experts' E x
 * k x n elements are cast once per step (read 2, write 2: 4 bytes an
 * element) with those of the dense layers; the experts' saved inputs (x
 * and the SwiGLU product) shrink to one byte an element. */
static void test_fp8_experts(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec h16, h8;
    ApprofStageProgram a, b;
    char err[256];
    double welems = 0, xe_elems = 0, mid_elems = 0, cast0 = 0, n_expert_fp8 = 0;
    int router_16 = 0;
    memset(&o, 0, sizeof o);
    o.preset = "mixtral-8x7b";
    o.num_layers = 1;
    o.batch = 2;
    o.seq_len = 512;
    o.dtype = "bf16";
    CU_ASSERT_FATAL(approf_zoo_build("mixtral", &o, &g, err, sizeof err) == 0);
    CU_ASSERT_FATAL(shard_one(g, 0, &h16, &a) == 0);
    CU_ASSERT_FATAL(shard_one(g, 1, &h8, &b) == 0);
    for (size_t i = 0; i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        if (op->kind == APPROF_OP_BATCH_MATMUL &&
            g->tensors[op->inputs[1]].role == APPROF_TENSOR_PARAM) {
            const ApprofTensor *x = &g->tensors[op->inputs[0]];
            double e = (double)approf_tensor_elements(x);
            if (strstr(op->name, "down_proj"))
                mid_elems += e;
            else if (strstr(op->name, "gate_proj"))
                xe_elems += e; /* up_proj reads the same x */
        }
    }
    CU_ASSERT_FATAL(xe_elems > 0 && mid_elems > 0);
    for (size_t i = 0; i < b.n_kernels[0]; i++) {
        const ApprofKernel *k = &b.kernels[0][i];
        ApprofOpKind ok = g->ops[k->op].kind;
        if (k->kind == APPROF_K_GEMM && ok == APPROF_OP_BATCH_MATMUL && !k->attention) {
            CU_ASSERT(k->fp8);
            n_expert_fp8 += k->fp8;
            /* the [1, E, k, n] weights (the kernel's batch is B x E) */
            welems += (double)approf_tensor_elements(&g->tensors[g->ops[k->op].inputs[1]]);
        } else if (k->kind == APPROF_K_GEMM && k->fp8) {
            welems += (double)k->k * (double)k->n;
        } else if (k->kind == APPROF_K_GEMM && ok == APPROF_OP_MATMUL && k->n == 8) {
            router_16++; /* the router's gate: 8 experts */
        }
        if (k->kind == APPROF_K_ELEMENTWISE && ok == APPROF_OP_BATCH_MATMUL)
            cast0 += (double)k->elements;
    }
    CU_ASSERT(n_expert_fp8 == 3);
    CU_ASSERT(router_16 == 1);
    CU_ASSERT_DOUBLE_EQUAL(cast0, xe_elems + mid_elems, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(b.optimizer_bytes - a.optimizer_bytes, 4.0 * welems, 1.0);
    /* the experts' saved inputs: 2 bytes an element less 1 */
    /* and, as in a dense layer, the q/k/v projections' input and the output
     * projection's: B x S x h each */
    CU_ASSERT_DOUBLE_EQUAL((double)(a.intermediate_size - b.intermediate_size),
                           xe_elems + mid_elems + 2.0 * 2 * 512 * 4096, 0.5);
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&b);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"an FP8 GEMM at the FP8 peak", test_fp8_gemm_price},
        {"a GPT stage in FP8", test_fp8_stage},
        {"FP8 primary weights", test_fp8_params},
        {"FP8 weight all-gathers under ZeRO-3", test_fp8_zero3_gathers},
        {"the experts' grouped GEMMs in FP8", test_fp8_experts},
    };
    return CUNIT_RUN("fp8", tests);
}
