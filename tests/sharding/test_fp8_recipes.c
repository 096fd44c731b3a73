/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The FP8 recipes beside delayed scaling (approf sweep --fp8-recipe,
 * costdb/fp8_recipe.c, sharding/program_fp8.c, docs/fp8.md), counted by hand
 * on one GPT layer (hidden 1024, 16 heads, sequence 512, batch 2, bf16)
 * on one GPU against the same layer under delayed scaling:
 * - tensorwise (TE Float8CurrentScaling): before each cast the amax
 *   zeroed, one amax kernel reading the cast's input (2 bytes an element,
 *   one float out) and the scale computed from it (TE's 4 kernels a
 *   quantize; the zeroing and scale once for the output gradients of q,
 *   k and v, one TE module), and one more read of each weight in the
 *   once-per-step cast; memory unchanged;
 * - mxfp8 (TE MXFP8BlockScaling, on b200): the same kernels, each
 *   quantized copy 1 + 1/32 bytes an element (an E8M0 scale per 32):
 *   each cast writes copies/32 bytes an element more, the two weight
 *   copies 2/32 bytes a weight element more (resident and in the cast),
 *   the saved FP8 inputs 1/32 bytes an element more, so of the 1 byte an
 *   element delayed scaling saves on them 31/32 stay saved;
 * - blockwise (TE Float8BlockScaling): FP32 scales per 1x128 block of
 *   inputs and gradients (4/128 bytes an element a copy) and per 128x128
 *   block of weights (4/16384).
 * - blockwise on Blackwell (b200): TE's MXFP8 emulation, one scale
 *   conversion kernel per GEMM operand (per expert of a grouped GEMM);
 * - mxfp8 with FP8 primary weights: the weight's scale swizzle before its
 *   forward and dgrad GEMMs.
 * And the recipe table: names as Megatron-LM's --fp8-recipe, MXFP8
 * refused on h100-sxm and mi300x, taken on b200; blockwise refused on the
 * ROCm mi300x (Transformer Engine's ROCm build).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

/* The whole GPT layer as one stage on `gpus` GPUs of one host of hardware
 * `name`, data parallel over them. */
static int shard_mesh(const ApprofGraph *g, const char *name, int recipe, int gpus,
                      ApprofHardwareSpec *hw, ApprofStageProgram *p)
{
    CU_ASSERT_FATAL(approf_hardware_builtin(name, hw) == 0);
    hw->fp8 = recipe;
    return zoo_fixture_shard_whole(g, hw, gpus, COSTDB_RECOMPUTE_NONE, 0, p);
}

/* The same on one GPU. */
static int shard_recipe(const ApprofGraph *g, const char *name, int recipe,
                        ApprofHardwareSpec *hw, ApprofStageProgram *p)
{
    return shard_mesh(g, name, recipe, 1, hw, p);
}


/* Kernel i of phase ph belongs to an FP8 linear layer (its graph op is
 * an FP8 GEMM's). */
static int of_fp8_layer(const ApprofGraph *g, const ApprofStageProgram *p, int ph, size_t i)
{
    const ApprofKernel *k = &p->kernels[ph][i];
    if (k->kind == APPROF_K_GEMM || g->ops[k->op].kind != APPROF_OP_MATMUL)
        return 0;
    for (size_t j = 0; j < p->n_kernels[0]; j++)
        if (p->kernels[0][j].op == k->op && p->kernels[0][j].fp8)
            return 1;
    return 0;
}

/* A cast of delayed scaling: an elementwise kernel of an FP8 linear layer
 * reading 2 bytes and writing 1 or 2 an element (the bias adds of the
 * same layer read and write other amounts). */
static int is_cast(const ApprofGraph *g, const ApprofStageProgram *p, int ph, size_t i)
{
    const ApprofKernel *k = &p->kernels[ph][i];
    double e = (double)k->elements;
    return k->kind == APPROF_K_ELEMENTWISE && of_fp8_layer(g, p, ph, i) &&
           (k->bytes == 3.0 * e || k->bytes == 4.0 * e);
}

/* The weight elements of the FP8 layers (w: k x n of each forward GEMM). */
static double fp8_weight_elems(const ApprofStageProgram *p)
{
    double w = 0;
    for (size_t i = 0; i < p->n_kernels[0]; i++)
        if (p->kernels[0][i].fp8)
            w += (double)p->kernels[0][i].k * (double)p->kernels[0][i].n;
    return w;
}

static void test_recipe_table(void)
{
    ApprofHardwareSpec h;
    CU_ASSERT_EQUAL(costdb_fp8_recipe_parse("delayed"), COSTDB_FP8_DELAYED);
    CU_ASSERT_EQUAL(costdb_fp8_recipe_parse("tensorwise"), COSTDB_FP8_TENSORWISE);
    CU_ASSERT_EQUAL(costdb_fp8_recipe_parse("mxfp8"), COSTDB_FP8_MXFP8);
    CU_ASSERT_EQUAL(costdb_fp8_recipe_parse("blockwise"), COSTDB_FP8_BLOCKWISE);
    CU_ASSERT_EQUAL(costdb_fp8_recipe_parse("custom"), -1); /* not priced */
    CU_ASSERT_PTR_NULL(costdb_fp8_recipe(COSTDB_FP8_NONE));
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &h) == 0);
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_DELAYED));
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_TENSORWISE));
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_BLOCKWISE));
    CU_ASSERT_PTR_NOT_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_MXFP8));
    /* ROCm (mi300x): Transformer Engine's ROCm build takes delayed and
     * current scaling on gfx942, refuses blockwise on every AMD GPU and
     * MXFP8 below gfx950; the spec's rocm decides */
    CU_ASSERT_FATAL(approf_hardware_builtin("mi300x", &h) == 0);
    CU_ASSERT_EQUAL(h.rocm, 1);
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_DELAYED));
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_TENSORWISE));
    CU_ASSERT_PTR_NOT_NULL_FATAL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_BLOCKWISE));
    CU_ASSERT_PTR_NOT_NULL(strstr(approf_fp8_recipe_refusal(&h, COSTDB_FP8_BLOCKWISE),
                                  "not yet supported for ROCm"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_MXFP8));
    CU_ASSERT_PTR_NOT_NULL(strstr(approf_fp8_recipe_refusal(&h, COSTDB_FP8_MXFP8), "gfx950"));
    h.rocm = 0;
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_BLOCKWISE));
    CU_ASSERT_PTR_NOT_NULL(strstr(approf_fp8_recipe_refusal(&h, COSTDB_FP8_MXFP8), "Blackwell"));
    CU_ASSERT_FATAL(approf_hardware_builtin("b200", &h) == 0);
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_BLOCKWISE));
    CU_ASSERT_FATAL(approf_hardware_builtin("b200", &h) == 0);
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_MXFP8));
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &h) == 0);
    CU_ASSERT_PTR_NOT_NULL(approf_fp8_recipe_refusal(&h, COSTDB_FP8_DELAYED));
}

static void test_tensorwise(void)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec hd, ht;
    ApprofStageProgram d, t;
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_DELAYED, &hd, &d) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_TENSORWISE, &ht, &t) == 0);
    for (int ph = 0; ph < 2; ph++) {
        size_t casts = 0, amax = 0, scales = 0;
        double want = 0, got = 0;
        for (size_t i = 0; i < d.n_kernels[ph]; i++)
            if (is_cast(g, &d, ph, i)) {
                casts++;
                want += 2.0 * (double)d.kernels[ph][i].elements; /* read bf16 */
            }
        for (size_t i = 0; i < t.n_kernels[ph]; i++) {
            const ApprofKernel *k = &t.kernels[ph][i];
            /* an amax kernel: reads 2 bytes an element (a bias gradient
             * of the same layer writes its reduced row too) */
            if (k->kind == APPROF_K_REDUCTION && of_fp8_layer(g, &t, ph, i) &&
                k->bytes == 2.0 * (double)k->elements) {
                amax++;
                got += k->bytes;
                /* TE's quantize: the amax zeroed (one float written), the
                 * amax kernel, the scale from it (a one-thread kernel: the
                 * amax read, the scale and its inverse written), then the
                 * cast of the same size; in the backward the output
                 * gradients of q, k and v (one TE module, linear_qkv)
                 * are one quantize: its zeroing and scale once */
                CU_ASSERT_FATAL(i >= 1 && i + 2 < t.n_kernels[ph]);
                if (t.kernels[ph][i + 1].elements == 1) {
                    scales++;
                    CU_ASSERT_EQUAL(t.kernels[ph][i - 1].elements, 1);
                    CU_ASSERT_DOUBLE_EQUAL(t.kernels[ph][i - 1].bytes, 4.0, 1e-9);
                    CU_ASSERT_DOUBLE_EQUAL(t.kernels[ph][i + 1].bytes, 12.0, 1e-9);
                    CU_ASSERT_EQUAL(t.kernels[ph][i + 2].elements, k->elements);
                    CU_ASSERT(is_cast(g, &t, ph, i + 2));
                } else {
                    CU_ASSERT_EQUAL(t.kernels[ph][i + 1].elements, k->elements);
                    CU_ASSERT(is_cast(g, &t, ph, i + 1));
                }
            }
        }
        CU_ASSERT(casts > 0);
        CU_ASSERT_EQUAL(amax, casts);
        /* forward: the 4 inputs (q, k, v share one); backward: 4 modules
         * of 6 layers */
        CU_ASSERT_EQUAL(casts, ph ? 6 : 4);
        CU_ASSERT_EQUAL(scales, 4);
        CU_ASSERT_EQUAL(t.n_kernels[ph], d.n_kernels[ph] + casts +
                                             (size_t)(costdb_fp8_cast_kernels(
                                                          COSTDB_FP8_TENSORWISE) - 2) * scales);
        CU_ASSERT_DOUBLE_EQUAL(got, want, 0.5);
    }
    /* the weights' cast reads them once more (2 bytes an element) */
    CU_ASSERT_DOUBLE_EQUAL(t.optimizer_bytes - d.optimizer_bytes, 2.0 * fp8_weight_elems(&d), 1.0);
    CU_ASSERT_EQUAL(t.invar_size[0], d.invar_size[0]);
    CU_ASSERT_EQUAL(t.intermediate_size, d.intermediate_size);
    CU_ASSERT(strcmp(t.signature, d.signature) != 0);
    CU_ASSERT(approf_phase_seconds(&ht, &t, 0) > approf_phase_seconds(&hd, &d, 0));
    approf_stage_program_clear(&d);
    approf_stage_program_clear(&t);
    approf_graph_free(&g);
}

/* Recipe `r` on hardware `hw` against delayed scaling on h100-sxm (one
 * GPU: the same kernels on any card; two copies of a tensor used both
 * ways): every cast writes `extra` bytes an element a copy more, each
 * weight element's two copies 2 x wextra more; the saved FP8 inputs
 * `extra` an element more. */
static void block_recipe(const char *hw, int r, double extra, double wextra)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec hd, hr, h16;
    ApprofStageProgram d, m, a;
    CU_ASSERT_FATAL(shard_recipe(g, hw, COSTDB_FP8_NONE, &h16, &a) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_DELAYED, &hd, &d) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, hw, r, &hr, &m) == 0);
    for (int ph = 0; ph < 2; ph++) {
        double want = 0, got = 0;
        CU_ASSERT_EQUAL_FATAL(m.n_kernels[ph], d.n_kernels[ph]);
        for (size_t i = 0; i < d.n_kernels[ph]; i++)
            if (is_cast(g, &d, ph, i)) {
                const ApprofKernel *k = &d.kernels[ph][i];
                double copies = k->bytes / (double)k->elements - 2.0; /* bytes written */
                want += k->bytes + copies * extra * (double)k->elements;
                got += m.kernels[ph][i].bytes;
            }
        CU_ASSERT(want > 0);
        CU_ASSERT_DOUBLE_EQUAL(got, want, 0.5 + 1e-9 * want);
    }
    double w = fp8_weight_elems(&d);
    CU_ASSERT_DOUBLE_EQUAL((double)(m.invar_size[0] - d.invar_size[0]), 2.0 * wextra * w, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(m.optimizer_bytes - d.optimizer_bytes, 2.0 * wextra * w, 1.0);
    /* delayed scaling keeps 1 byte of 2 of each FP8-only saved input:
     * (a - d) = elements; here (a - m) = elements x (1 - extra) */
    double saved = (double)(a.intermediate_size - d.intermediate_size);
    CU_ASSERT(saved > 0);
    CU_ASSERT_DOUBLE_EQUAL((double)(a.intermediate_size - m.intermediate_size),
                           saved * (1.0 - extra), 2.0);
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&d);
    approf_stage_program_clear(&m);
    approf_graph_free(&g);
}

static void test_mxfp8(void)
{
    block_recipe("b200", COSTDB_FP8_MXFP8, 1.0 / 32.0, 1.0 / 32.0);
}

static void test_blockwise(void)
{
    block_recipe("h100-sxm", COSTDB_FP8_BLOCKWISE, 4.0 / 128.0, 4.0 / 16384.0);
}

/* Delayed scaling's amax all-reduce (TE reduce_and_update_fp8_tensors
 * over Megatron's amax reduction group): the GPT layer data parallel over
 * 2 GPUs of h100-sxm has, beside the 16-bit program's collectives, one
 * all-reduce over the whole mesh per phase, of 3 FP32 amaxes per FP8
 * linear layer in the forward (12 bytes) and 2 in the backward (8): six
 * layers (q, k, v, out, fc1, fc2), 72 and 48 bytes. Tensorwise scaling
 * reduces no amax history: no collective; one GPU: none either. The
 * all-reduce is blocking (TE's async_op=False, issued between modules):
 * the 16-bit program's collectives are not. */
static void test_amax_reduce(void)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec h;
    ApprofStageProgram a, d, t, one;
    int n_lin = 0;
    CU_ASSERT_FATAL(shard_mesh(g, "h100-sxm", COSTDB_FP8_NONE, 2, &h, &a) == 0);
    CU_ASSERT_FATAL(shard_mesh(g, "h100-sxm", COSTDB_FP8_DELAYED, 2, &h, &d) == 0);
    CU_ASSERT_FATAL(shard_mesh(g, "h100-sxm", COSTDB_FP8_TENSORWISE, 2, &h, &t) == 0);
    CU_ASSERT_FATAL(shard_mesh(g, "h100-sxm", COSTDB_FP8_DELAYED, 1, &h, &one) == 0);
    for (size_t i = 0; i < d.n_kernels[0]; i++)
        n_lin += d.kernels[0][i].fp8;
    CU_ASSERT_EQUAL(n_lin, 6);
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_EQUAL_FATAL(d.n_colls[ph], a.n_colls[ph] + 1);
        const ApprofCollective *c = &d.colls[ph][d.n_colls[ph] - 1];
        CU_ASSERT_EQUAL(c->kind, APPROF_COLL_ALL_REDUCE);
        CU_ASSERT_EQUAL(c->axes, APPROF_AXIS0 | APPROF_AXIS1);
        CU_ASSERT_EQUAL(c->group_size, 2);
        CU_ASSERT_DOUBLE_EQUAL(c->bytes, (ph ? 8.0 : 12.0) * n_lin, 1e-9);
        CU_ASSERT_EQUAL(c->blocking, 1); /* synchronous, beside no GEMM */
        for (size_t i = 0; i < a.n_colls[ph]; i++)
            CU_ASSERT_EQUAL(d.colls[ph][i].blocking, 0);
        CU_ASSERT_EQUAL(t.n_colls[ph], a.n_colls[ph]);
    }
    CU_ASSERT_EQUAL(one.n_colls[0], 0);
    CU_ASSERT_EQUAL(one.n_colls[1], 0);
    CU_ASSERT(strcmp(d.signature, t.signature) != 0);
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&d);
    approf_stage_program_clear(&t);
    approf_stage_program_clear(&one);
    approf_graph_free(&g);
}

/* Blackwell under a per-tensor recipe (TE's Float8Tensor on a card with
 * non-TN FP8 GEMMs): one copy of each quantized tensor. Delayed scaling
 * on b200 against h100-sxm, one GPU: every cast writes 1 byte an element
 * (reads 2: 3 bytes an element), the weights keep one FP8 copy (welems
 * bytes fewer resident, and fewer written in the once-per-step cast), the
 * saved inputs are as on Hopper; mxfp8 keeps both copies there. */
static void test_blackwell_one_copy(void)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec hh, hb;
    ApprofStageProgram h, b;
    size_t casts = 0;
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_DELAYED, &hh, &h) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "b200", COSTDB_FP8_DELAYED, &hb, &b) == 0);
    CU_ASSERT_EQUAL(approf_fp8_copies(&hb, COSTDB_FP8_DELAYED), 1);
    CU_ASSERT_EQUAL(approf_fp8_copies(&hb, COSTDB_FP8_TENSORWISE), 1);
    CU_ASSERT_EQUAL(approf_fp8_copies(&hb, COSTDB_FP8_MXFP8), 2);
    CU_ASSERT_EQUAL(approf_fp8_copies(&hh, COSTDB_FP8_DELAYED), 2);
    for (int ph = 0; ph < 2; ph++) {
        CU_ASSERT_EQUAL_FATAL(b.n_kernels[ph], h.n_kernels[ph]);
        for (size_t i = 0; i < h.n_kernels[ph]; i++)
            if (is_cast(g, &h, ph, i)) {
                casts++;
                CU_ASSERT_DOUBLE_EQUAL(b.kernels[ph][i].bytes,
                                       3.0 * (double)b.kernels[ph][i].elements, 0.5);
            }
    }
    CU_ASSERT(casts > 0);
    double w = fp8_weight_elems(&h);
    CU_ASSERT_DOUBLE_EQUAL((double)(h.invar_size[0] - b.invar_size[0]), w, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(h.optimizer_bytes - b.optimizer_bytes, w, 1.0);
    CU_ASSERT_EQUAL(h.intermediate_size, b.intermediate_size);
    approf_stage_program_clear(&h);
    approf_stage_program_clear(&b);
    approf_graph_free(&g);
}

/* The kernels of phase ph of p that are no cast, GEMM or other op's
 * kernel but scale kernels of FP8 GEMM operands (elementwise kernels of an
 * FP8 layer reading and writing less than a byte an element). */
static void scale_kernels(const ApprofGraph *g, const ApprofStageProgram *p, int ph, size_t *n,
                          double *bytes)
{
    *n = 0;
    *bytes = 0;
    for (size_t i = 0; i < p->n_kernels[ph]; i++) {
        const ApprofKernel *k = &p->kernels[ph][i];
        if (k->kind == APPROF_K_ELEMENTWISE && of_fp8_layer(g, p, ph, i) &&
            k->bytes < (double)k->elements) {
            (*n)++;
            *bytes += k->bytes;
        }
    }
}

/* Blockwise on Blackwell: TE emulates Float8BlockScaling with MXFP8
 * (pytorch/csrc/extensions/gemm.cpp at d0067d0da6): before each FP8 GEMM
 * one kernel per operand reads its FP32 block scales and writes MXFP8's
 * swizzled E8M0 scales, 1 byte per 32 elements. Against blockwise on
 * h100-sxm (native block-scaled GEMMs, no such kernel), one GPU: per
 * FP8 layer with forward GEMM x (m x k) . w (k x n), y = m x n, the
 * forward adds x (4/128 + 1/32) + w (4/16384 + 1/32) bytes in 2
 * kernels; the backward's dgrad y (4/128 + 1/32) + w (4/16384 + 1/32)
 * and wgrad (x + y)(4/128 + 1/32), in 4 kernels. Everything else equal. */
static void test_blockwise_blackwell(void)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec hh, hb;
    ApprofStageProgram h, b;
    const double a = 4.0 / 128.0 + 1.0 / 32.0, wv = 4.0 / 16384.0 + 1.0 / 32.0;
    double want[2] = {0, 0};
    size_t layers = 0;
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_BLOCKWISE, &hh, &h) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "b200", COSTDB_FP8_BLOCKWISE, &hb, &b) == 0);
    CU_ASSERT_PTR_NULL(approf_fp8_recipe_refusal(&hb, COSTDB_FP8_BLOCKWISE));
    CU_ASSERT_EQUAL(approf_fp8_copies(&hb, COSTDB_FP8_BLOCKWISE), 2);
    for (size_t i = 0; i < h.n_kernels[0]; i++) {
        const ApprofKernel *k = &h.kernels[0][i];
        double x, y, w;
        if (!k->fp8)
            continue;
        x = (double)k->m * (double)k->k, y = (double)k->m * (double)k->n;
        w = (double)k->k * (double)k->n;
        want[0] += x * a + w * wv;
        want[1] += y * a + w * wv + (x + y) * a;
        layers++;
    }
    CU_ASSERT_EQUAL(layers, 6);
    for (int ph = 0; ph < 2; ph++) {
        size_t nh, nb;
        double bh, bb;
        scale_kernels(g, &h, ph, &nh, &bh);
        scale_kernels(g, &b, ph, &nb, &bb);
        CU_ASSERT_EQUAL(nh, 0);
        CU_ASSERT_EQUAL(nb, (ph ? 4 : 2) * layers);
        CU_ASSERT_EQUAL(b.n_kernels[ph], h.n_kernels[ph] + nb);
        CU_ASSERT_DOUBLE_EQUAL(bb, want[ph], 0.5 + 1e-9 * want[ph]);
    }
    CU_ASSERT_EQUAL(b.invar_size[0], h.invar_size[0]);
    CU_ASSERT_EQUAL(b.intermediate_size, h.intermediate_size);
    CU_ASSERT_DOUBLE_EQUAL(b.optimizer_bytes, h.optimizer_bytes, 1.0);
    approf_stage_program_clear(&h);
    approf_stage_program_clear(&b);
    approf_graph_free(&g);
}

/* Blockwise on Blackwell in an MoE layer: TE's grouped GEMM converts each
 * expert's scales on its own (gemm.cpp's te_general_grouped_gemm). One
 * mixtral block on one b200 (8 experts on the device): each expert GEMM
 * (gate, up, down; x[B, E, C, k] . w[1, E, k, n] -> y) adds 8 kernels per
 * operand: the forward x (4/128 + 1/32) + w (4/16384 + 1/32) bytes in 16,
 * the backward's dgrad y (4/128 + 1/32) + w (4/16384 + 1/32) and wgrad
 * (x + y)(4/128 + 1/32) in 32. */
static void test_blockwise_blackwell_experts(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec hh, hb;
    ApprofStageProgram h, b;
    const double a = 4.0 / 128.0 + 1.0 / 32.0, wv = 4.0 / 16384.0 + 1.0 / 32.0;
    double want[2] = {0, 0};
    char err[256];
    int n_gemms = 0;
    memset(&o, 0, sizeof o);
    o.preset = "mixtral-8x7b";
    o.num_layers = 1;
    o.batch = 2;
    o.seq_len = 512;
    o.dtype = "bf16";
    CU_ASSERT_FATAL(approf_zoo_build("mixtral", &o, &g, err, sizeof err) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "h100-sxm", COSTDB_FP8_BLOCKWISE, &hh, &h) == 0);
    CU_ASSERT_FATAL(shard_recipe(g, "b200", COSTDB_FP8_BLOCKWISE, &hb, &b) == 0);
    for (size_t i = 0; i < g->n_ops; i++) {
        const ApprofOp *op = &g->ops[i];
        double x, y, w;
        if (op->kind != APPROF_OP_BATCH_MATMUL ||
            g->tensors[op->inputs[1]].role != APPROF_TENSOR_PARAM)
            continue;
        x = (double)approf_tensor_elements(&g->tensors[op->inputs[0]]);
        w = (double)approf_tensor_elements(&g->tensors[op->inputs[1]]);
        y = (double)approf_tensor_elements(&g->tensors[op->outputs[0]]);
        want[0] += x * a + w * wv;
        want[1] += y * a + w * wv + (x + y) * a;
        n_gemms++;
    }
    CU_ASSERT_EQUAL(n_gemms, 3);
    for (int ph = 0; ph < 2; ph++) {
        size_t n[2] = {0, 0};
        double bytes[2] = {0, 0};
        const ApprofStageProgram *ps[2] = {&h, &b};
        for (int j = 0; j < 2; j++)
            for (size_t i = 0; i < ps[j]->n_kernels[ph]; i++) {
                const ApprofKernel *k = &ps[j]->kernels[ph][i];
                if (k->kind == APPROF_K_ELEMENTWISE &&
                    g->ops[k->op].kind == APPROF_OP_BATCH_MATMUL &&
                    k->bytes < (double)k->elements) {
                    n[j]++;
                    bytes[j] += k->bytes;
                }
            }
        CU_ASSERT_EQUAL(n[0], 0);
        CU_ASSERT_EQUAL(n[1], (size_t)(ph ? 32 : 16) * (size_t)n_gemms);
        CU_ASSERT_DOUBLE_EQUAL(bytes[1], want[ph], 0.5 + 1e-9 * want[ph]);
    }
    approf_stage_program_clear(&h);
    approf_stage_program_clear(&b);
    approf_graph_free(&g);
}

/* MXFP8 with FP8 primary weights (fp8_param_gather): TE quantizes inputs,
 * output gradients and its cached weights with GEMM-swizzled scales
 * (optimize_for_gemm), but not FP8 primary weights
 * (_enable_weight_preswizzle, module/base.py): each GEMM that reads such a
 * weight, forward and dgrad, first swizzles its E8M0 scales
 * (swizzle_scales_for_gemm), reading and writing w / 32 bytes. On b200,
 * one GPU: one kernel per FP8 layer and phase, 2 w / 32 bytes, beside the
 * same program with TE's cached weights; none under delayed scaling. */
static void test_mxfp8_primary_weights(void)
{
    ApprofGraph *g = zoo_fixture_fp8_gpt_layer();
    ApprofHardwareSpec hc, hp, hd;
    ApprofStageProgram c, pw, d;
    double w = 0;
    size_t layers = 0;
    CU_ASSERT_FATAL(approf_hardware_builtin("b200", &hc) == 0);
    hp = hc;
    hc.fp8 = hp.fp8 = COSTDB_FP8_MXFP8;
    hp.fp8_param_gather = 1;
    hd = hp;
    hd.fp8 = COSTDB_FP8_DELAYED;
    CU_ASSERT_FATAL(zoo_fixture_shard_whole(g, &hc, 1, COSTDB_RECOMPUTE_NONE, 0, &c) == 0);
    CU_ASSERT_FATAL(zoo_fixture_shard_whole(g, &hp, 1, COSTDB_RECOMPUTE_NONE, 0, &pw) == 0);
    CU_ASSERT_FATAL(zoo_fixture_shard_whole(g, &hd, 1, COSTDB_RECOMPUTE_NONE, 0, &d) == 0);
    for (size_t i = 0; i < c.n_kernels[0]; i++)
        if (c.kernels[0][i].fp8) {
            w += (double)c.kernels[0][i].k * (double)c.kernels[0][i].n;
            layers++;
        }
    CU_ASSERT_EQUAL(layers, 6);
    for (int ph = 0; ph < 2; ph++) {
        size_t n;
        double bytes;
        scale_kernels(g, &c, ph, &n, &bytes);
        CU_ASSERT_EQUAL(n, 0);
        scale_kernels(g, &d, ph, &n, &bytes);
        CU_ASSERT_EQUAL(n, 0);
        scale_kernels(g, &pw, ph, &n, &bytes);
        CU_ASSERT_EQUAL(n, layers);
        CU_ASSERT_EQUAL(pw.n_kernels[ph], c.n_kernels[ph] + layers);
        CU_ASSERT_DOUBLE_EQUAL(bytes, 2.0 * w / 32.0, 0.5);
    }
    approf_stage_program_clear(&c);
    approf_stage_program_clear(&pw);
    approf_stage_program_clear(&d);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the recipe table", test_recipe_table},
        {"tensorwise: the amax pass and scale kernels of each cast", test_tensorwise},
        {"mxfp8: E8M0 scales per 32 elements", test_mxfp8},
        {"blockwise: FP32 scales per 1x128 and 128x128 block", test_blockwise},
        {"delayed: the amax all-reduce per micro-batch and phase", test_amax_reduce},
        {"Blackwell: one copy under a per-tensor recipe", test_blackwell_one_copy},
        {"blockwise on Blackwell: the MXFP8 emulation's scale conversions",
         test_blockwise_blackwell},
        {"blockwise on Blackwell: one conversion per expert", test_blockwise_blackwell_experts},
        {"mxfp8: FP8 primary weights' scale swizzle per GEMM", test_mxfp8_primary_weights},
    };
    return CUNIT_RUN("fp8_recipes", tests);
}
