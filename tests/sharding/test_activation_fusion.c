/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --activation-fusion (docs/models.md, "Activation fusion"): the gated
 * MLP's SiLU as Megatron-Core's fused SwiGLU runs it. SwiGLUFunction
 * (megatron/core/fusions/fused_bias_swiglu.py at 92c8482e6d) saves only
 * its input, the fc1 output (gate and up: 2 x ffn elements a token), and
 * its backward (swiglu_back) recomputes silu from it; eager PyTorch's
 * `w2(silu(w1 x) * w3 x)` keeps silu's input, silu's output and up (3 x
 * ffn). Counted by hand on a one-block Llama in bf16 (2 bytes an
 * element), one GPU, no recomputation: the MLP saves 3 x ffn x tokens x 2
 * bytes eager and 2 x with the fusion, the rest of the block the same;
 * the fused backward reruns silu's forward once (one memory-bound kernel
 * reading and writing ffn x tokens elements) and its temporaries hold the
 * rerun output.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "zoo_fixture.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

#define BATCH 2
#define SEQ 64

/* One small layer of the zoo's model (preset: NULL or a preset of it). */
static ApprofGraph *build_small(const char *model, const char *preset, int fusion)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof o);
    o.preset = preset;
    o.num_layers = 1;
    o.hidden = 128;
    o.heads = 4;
    o.seq_len = SEQ;
    o.vocab = 512;
    o.batch = BATCH;
    o.dtype = "bf16";
    o.activation_fusion = fusion;
    int rc = approf_zoo_build(model, &o, &g, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", model, err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

static ApprofGraph *build_llama(int fusion)
{
    return build_small("llama", NULL, fusion);
}

static int shard_one(const ApprofGraph *g, int recompute, ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    return zoo_fixture_shard_whole(g, &hw, 1, recompute, 0, p);
}

static int op_named(const ApprofGraph *g, const char *name)
{
    for (size_t o = 0; o < g->n_ops; o++)
        if (!strcmp(g->ops[o].name, name))
            return (int)o;
    return -1;
}

static void test_swiglu_saves_two_ffn(void)
{
    ApprofGraph *eager = build_llama(0), *fused = build_llama(1);
    int silu = op_named(fused, "model.layers.0/mlp/gate_proj/silu");
    CU_ASSERT_FATAL(silu >= 0);
    CU_ASSERT_FATAL(op_named(eager, "model.layers.0/mlp/gate_proj/silu") == silu);
    /* the MLP's width, from silu's output [B, S, ffn] */
    const ApprofTensor *y = &fused->tensors[fused->ops[silu].outputs[0]];
    CU_ASSERT_FATAL(y->ndim == 3 && y->dims[0] == BATCH && y->dims[1] == SEQ);
    double ffn_bytes = (double)y->dims[2] * BATCH * SEQ * 2.0;
    /* the two graphs differ only in the flag, and their hashes say so */
    char he[40], hf[40];
    approf_graph_hash(eager, he, sizeof he);
    approf_graph_hash(fused, hf, sizeof hf);
    CU_ASSERT(strcmp(he, hf) != 0);
    /* none (selective needs the eager attention's softmax: the same rule) */
    int rec[1] = {COSTDB_RECOMPUTE_NONE};
    for (int r = 0; r < 1; r++) {
        ApprofStageProgram pe, pf;
        CU_ASSERT_FATAL(shard_one(eager, rec[r], &pe) == 0);
        CU_ASSERT_FATAL(shard_one(fused, rec[r], &pf) == 0);
        /* MLP saved: 3 x ffn eager, 2 x ffn fused; all else equal */
        if ((double)pe.intermediate_size - (double)pf.intermediate_size != ffn_bytes)
            fprintf(stderr, "recompute %d: eager %lld fused %lld ffn bytes %.0f\n", rec[r],
                    (long long)pe.intermediate_size, (long long)pf.intermediate_size, ffn_bytes);
        CU_ASSERT_EQUAL((double)pe.intermediate_size - (double)pf.intermediate_size, ffn_bytes);
        /* the forward is the same; the backward reruns silu's forward
         * once: one kernel of silu, reading ffn and writing ffn */
        CU_ASSERT_EQUAL(pf.n_kernels[0], pe.n_kernels[0]);
        CU_ASSERT_EQUAL(pf.n_kernels[1], pe.n_kernels[1] + 1);
        int n_silu_e = 0, n_silu_f = 0;
        double rerun_bytes = 0.0;
        for (size_t i = 0; i < pe.n_kernels[1]; i++)
            n_silu_e += pe.kernels[1][i].op == silu;
        for (size_t i = 0; i < pf.n_kernels[1]; i++)
            if (pf.kernels[1][i].op == silu) {
                n_silu_f++;
                rerun_bytes += pf.kernels[1][i].bytes;
            }
        CU_ASSERT_EQUAL(n_silu_f, n_silu_e + 1);
        double silu_bwd = 0.0;
        for (size_t i = 0; i < pe.n_kernels[1]; i++)
            if (pe.kernels[1][i].op == silu)
                silu_bwd += pe.kernels[1][i].bytes;
        CU_ASSERT_EQUAL(rerun_bytes - silu_bwd, 2.0 * ffn_bytes);
        /* the rerun's output lives in the backward's temporaries */
        CU_ASSERT(pf.temp_buffer_size[1] >= pe.temp_buffer_size[1]);
        approf_stage_program_clear(&pe);
        approf_stage_program_clear(&pf);
    }
    approf_graph_free(&eager);
    approf_graph_free(&fused);
}

/* Full recomputation reruns every op and torchtitan's op policy every op
 * but the mms and the attention: silu is rerun already, the flag changes
 * nothing. */
static void test_full_and_op_unchanged(void)
{
    ApprofGraph *eager = build_llama(0), *fused = build_llama(1);
    int rec[2] = {COSTDB_RECOMPUTE_FULL, COSTDB_RECOMPUTE_OP};
    for (int r = 0; r < 2; r++) {
        ApprofStageProgram pe, pf;
        CU_ASSERT_FATAL(shard_one(eager, rec[r], &pe) == 0);
        CU_ASSERT_FATAL(shard_one(fused, rec[r], &pf) == 0);
        CU_ASSERT_EQUAL(pf.intermediate_size, pe.intermediate_size);
        CU_ASSERT_EQUAL(pf.n_kernels[1], pe.n_kernels[1]);
        approf_stage_program_clear(&pe);
        approf_stage_program_clear(&pf);
    }
    approf_graph_free(&eager);
    approf_graph_free(&fused);
}

/* The experts under --activation-fusion: Megatron-Core (r0.12 on; at
 * 92c8482e6d) permutes the routing probabilities with the tokens and
 * applies them in TEGroupedMLP's weighted_bias_swiglu_impl, whose
 * WeightedSwiGLUFunction saves only its input and the probabilities; the
 * combine (unpermute) takes none, so the experts' output is not kept.
 * Counted by hand on one Mixtral block (8 experts, top 2) of 2 samples of
 * 64 tokens in bf16 on one GPU: capacity ceil(64 x 2 / 8) = 16 slots per
 * expert and sample, 2 x 8 x 16 = 256 slots. Eager keeps the SiLU's output
 * (256 x ffn x 2 bytes) and the combine's input, the down projection's
 * output (256 x h x 2 bytes); fused keeps neither. */
static ApprofGraph *build_mixtral(int fusion)
{
    return build_small("mixtral", "mixtral-8x7b", fusion);
}

static void test_experts_keep_no_output(void)
{
    ApprofGraph *eager = build_mixtral(0), *fused = build_mixtral(1);
    int comb = op_named(fused, "model.layers.0/mlp/combine");
    int down = op_named(fused, "model.layers.0/mlp/experts/down_proj");
    int silu = op_named(fused, "model.layers.0/mlp/experts/gate_proj/silu");
    CU_ASSERT_FATAL(comb >= 0 && down >= 0 && silu >= 0);
    CU_ASSERT_FATAL(op_named(eager, "model.layers.0/mlp/combine") == comb);
    /* the combine's saved inputs: the routing only, fused */
    CU_ASSERT(fused->ops[comb].attrs.probs_in_experts == 1);
    CU_ASSERT(eager->ops[comb].attrs.probs_in_experts == 0);
    CU_ASSERT_EQUAL(approf_op_saved_mask(fused, comb), APPROF_SAVED_INPUT(1));
    CU_ASSERT_EQUAL(approf_op_saved_mask(eager, comb),
                    APPROF_SAVED_INPUT(0) | APPROF_SAVED_INPUT(1));
    /* 256 slots: [B, E, C, h] = [2, 8, 16, 128], ffn from the SiLU */
    const ApprofTensor *y = &fused->tensors[fused->ops[down].outputs[0]];
    const ApprofTensor *a = &fused->tensors[fused->ops[silu].outputs[0]];
    CU_ASSERT_FATAL(y->ndim == 4 && y->dims[0] == 2 && y->dims[1] == 8 && y->dims[2] == 16 &&
                    y->dims[3] == 128);
    CU_ASSERT_FATAL(a->ndim == 4 && a->dims[2] == 16);
    double ffn = (double)a->dims[3];
    ApprofStageProgram pe, pf;
    CU_ASSERT_FATAL(shard_one(eager, COSTDB_RECOMPUTE_NONE, &pe) == 0);
    CU_ASSERT_FATAL(shard_one(fused, COSTDB_RECOMPUTE_NONE, &pf) == 0);
    /* the block's dense part is the same: 256 x (ffn + 128) x 2 bytes */
    CU_ASSERT_EQUAL((double)pe.intermediate_size - (double)pf.intermediate_size,
                    256.0 * (ffn + 128.0) * 2.0);
    /* the time's kernels: only the SiLU's rerun is added */
    CU_ASSERT_EQUAL(pf.n_kernels[0], pe.n_kernels[0]);
    CU_ASSERT_EQUAL(pf.n_kernels[1], pe.n_kernels[1] + 1);
    approf_stage_program_clear(&pe);
    approf_stage_program_clear(&pf);
    approf_graph_free(&eager);
    approf_graph_free(&fused);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"swiglu_saves_two_ffn", test_swiglu_saves_two_ffn},
        {"full_and_op_unchanged", test_full_and_op_unchanged},
        {"experts_keep_no_output", test_experts_keep_no_output},
    };
    return CUNIT_RUN("activation_fusion", tests);
}
