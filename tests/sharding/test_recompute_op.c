/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recomputation `op` (docs/variants.md, "Recomputation"): torchtitan's
 * per-op selective activation checkpointing as v0.2.2 defines it. On a
 * two-block Llama (flash attention, no biases) the policy saves, per
 * block, the outputs of the 1st, 3rd, 5th and 7th aten.mm (q_proj,
 * v_proj, gate_proj, down_proj: the count restarts per block) and of the
 * SDPA; everything else of a block is rerun in the backward; the
 * embedding, the final norm, the head and the loss are outside the
 * blocks and keep what their backward reads. The names below are counted
 * by hand from torchtitan's forward order (Attention: wq, wk, wv, sdpa,
 * wo; FeedForward: w1, w3, w2), not read from the code under test.
 */
#include <CUnit/Basic.h>
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

static ApprofGraph *build_llama(void)
{
    ApprofZooOptions o;
    zoo_fixture_small_options(&o, "f32");
    return zoo_fixture_build("llama", &o);
}

/* The whole graph as one stage on one GPU. */
static int shard_one(const ApprofGraph *g, int recompute, int zero, int gpus,
                     ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    return zoo_fixture_shard_whole(g, &hw, gpus, recompute, zero, p);
}

static const char *const saved_leaf[] = {"q_proj", "v_proj", "attention", "gate_proj",
                                         "down_proj"};

/* 1 when op o is one torchtitan's policy saves (by its name's last part). */
static int policy_saves(const ApprofGraph *g, int o)
{
    const char *leaf = strrchr(g->ops[o].name, '/');
    if (!leaf)
        return 0;
    for (size_t i = 0; i < sizeof saved_leaf / sizeof *saved_leaf; i++)
        if (!strcmp(leaf + 1, saved_leaf[i]))
            return 1;
    return 0;
}

static int in_block(const ApprofGraph *g, int o)
{
    return strchr(g->ops[o].name, '/') != NULL;
}

static void test_llama_two_blocks(void)
{
    ApprofGraph *g = build_llama();
    ApprofStageProgram none, full, op;
    CU_ASSERT_FATAL(shard_one(g, COSTDB_RECOMPUTE_NONE, 0, 1, &none) == 0);
    CU_ASSERT_FATAL(shard_one(g, COSTDB_RECOMPUTE_FULL, 0, 1, &full) == 0);
    CU_ASSERT_FATAL(shard_one(g, COSTDB_RECOMPUTE_OP, 0, 1, &op) == 0);
    /* the saved ops: 5 per block, 2 blocks, each with one output */
    int n_saved = 0;
    double kept = 0.0;
    for (size_t o = 0; o < g->n_ops; o++) {
        if (!policy_saves(g, (int)o))
            continue;
        n_saved++;
        const ApprofTensor *t = &g->tensors[g->ops[o].outputs[0]];
        double b = (double)approf_dtype_size(t->dtype);
        for (int d = 0; d < t->ndim; d++)
            b *= (double)t->dims[d];
        kept += b;
    }
    CU_ASSERT_EQUAL(n_saved, 10);
    /* Kept: what full keeps (the inputs of every checkpoint block: the
     * two transformer blocks' inputs, the ids, the final norm's, head's
     * and loss's inputs, which the ops outside the blocks also read in
     * their backward) plus exactly the saved ops' outputs. */
    if ((double)op.intermediate_size != (double)full.intermediate_size + kept)
        fprintf(stderr, "op %lld full %lld none %lld saved outputs %.0f\n",
                (long long)op.intermediate_size, (long long)full.intermediate_size,
                (long long)none.intermediate_size, kept);
    CU_ASSERT_EQUAL((double)op.intermediate_size, (double)full.intermediate_size + kept);
    CU_ASSERT(op.intermediate_size < none.intermediate_size);
    /* Rerun: the forward kernels of every other op of the blocks, once */
    size_t rerun = 0, rerun_gemm = 0, none_gemm = 0, op_gemm = 0;
    for (size_t i = 0; i < none.n_kernels[0]; i++) {
        const ApprofKernel *k = &none.kernels[0][i];
        if (in_block(g, k->op) && !policy_saves(g, k->op)) {
            rerun++;
            rerun_gemm += k->kind == APPROF_K_GEMM;
        }
    }
    for (size_t i = 0; i < none.n_kernels[1]; i++)
        none_gemm += none.kernels[1][i].kind == APPROF_K_GEMM;
    for (size_t i = 0; i < op.n_kernels[1]; i++)
        op_gemm += op.kernels[1][i].kind == APPROF_K_GEMM;
    CU_ASSERT_EQUAL(op.n_kernels[0], none.n_kernels[0]);
    CU_ASSERT_EQUAL(op.n_kernels[1], none.n_kernels[1] + rerun);
    /* the recomputed matmuls: k_proj, o_proj and up_proj of each block */
    CU_ASSERT_EQUAL(rerun_gemm, 6);
    CU_ASSERT_EQUAL(op_gemm, none_gemm + 6);
    CU_ASSERT(op.n_kernels[1] < full.n_kernels[1]);
    CU_ASSERT(op.temp_buffer_size[1] > none.temp_buffer_size[1]);
    CU_ASSERT_EQUAL(op.variant.recompute, COSTDB_RECOMPUTE_OP);
    approf_stage_program_clear(&none);
    approf_stage_program_clear(&full);
    approf_stage_program_clear(&op);
    approf_graph_free(&g);
}

/* Backward GEMMs of graph op o. */
static int bwd_gemms(const ApprofStageProgram *p, int o)
{
    int n = 0;
    for (size_t i = 0; i < p->n_kernels[1]; i++)
        n += p->kernels[1][i].op == o && p->kernels[1][i].kind == APPROF_K_GEMM;
    return n;
}

static int op_named(const ApprofGraph *g, const char *name)
{
    for (size_t o = 0; o < g->n_ops; o++)
        if (!strcmp(g->ops[o].name, name))
            return (int)o;
    return -1;
}

/* A stage that starts inside a block (at block 0's k_proj) counts the
 * block's mms from the block's start, as torchtitan's counter does:
 * k_proj is the 2nd mm (rerun), v_proj the 3rd (saved). */
static void test_stage_inside_block(void)
{
    ApprofGraph *g = build_llama();
    int kq = op_named(g, "model.layers.0/self_attn/k_proj");
    int vq = op_named(g, "model.layers.0/self_attn/v_proj");
    CU_ASSERT_FATAL(kq > 0 && vq > kq);
    int begin[2] = {0, kq}, end[2] = {kq, (int)g->n_ops};
    ApprofLayering l;
    ApprofHardwareSpec hw;
    memset(&l, 0, sizeof l);
    l.n_layers = 2;
    l.op_begin = begin;
    l.op_end = end;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    ApprofStageProgram p[2];
    for (int r = 0; r < 2; r++) {
        ApprofShardContext *ctx = NULL;
        char err[256];
        CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 1, &ctx) == 0);
        ApprofShardRequest req;
        memset(&req, 0, sizeof req);
        req.start_layer = req.end_layer = 1;
        req.mesh_hosts = req.mesh_gpus = req.logical_a = req.logical_b = 1;
        req.method = APPROF_ILP_SERIES_PARALLEL;
        req.memory_levels = 1;
        req.variant.recompute = r ? COSTDB_RECOMPUTE_OP : COSTDB_RECOMPUTE_NONE;
        memset(&p[r], 0, sizeof p[r]);
        CU_ASSERT_FATAL(approf_shard_stage(ctx, &req, &p[r], err, sizeof err) == 0);
        approf_shard_context_free(&ctx);
    }
    CU_ASSERT_EQUAL(bwd_gemms(&p[1], kq), bwd_gemms(&p[0], kq) + 1);
    CU_ASSERT_EQUAL(bwd_gemms(&p[1], vq), bwd_gemms(&p[0], vq));
    approf_stage_program_clear(&p[0]);
    approf_stage_program_clear(&p[1]);
    approf_graph_free(&g);
}

/* Each mode's name is stored and read back by costdb, which owns them. */
static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(costdb_recompute_name(COSTDB_RECOMPUTE_OP), "op");
    CU_ASSERT_EQUAL(costdb_recompute_parse("op"), COSTDB_RECOMPUTE_OP);
    /* keeps less than selective, more than full */
    CU_ASSERT_EQUAL(costdb_recompute_max(COSTDB_RECOMPUTE_SELECTIVE, COSTDB_RECOMPUTE_OP),
                    COSTDB_RECOMPUTE_OP);
    CU_ASSERT_EQUAL(costdb_recompute_max(COSTDB_RECOMPUTE_OP, COSTDB_RECOMPUTE_FULL),
                    COSTDB_RECOMPUTE_FULL);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"llama two blocks: saved matmuls and the rerun", test_llama_two_blocks},
        {"a stage inside a block counts from the block", test_stage_inside_block},
        {"names", test_names},
    };
    return CUNIT_RUN("recompute_op", tests);
}
