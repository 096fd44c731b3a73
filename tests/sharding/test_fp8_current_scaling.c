/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FP8 current scaling (--fp8-recipe tensorwise: Transformer Engine's
 * Float8CurrentScaling) as TE runs its quantize (docs/fp8.md, "The casts
 * TE adds"; docs/validation.md, "FP8 current scaling's casts as
 * Transformer Engine runs them"):
 * - the kernels a cast: costdb_fp8_cast_kernels, 4 under current scaling
 *   (the amax zeroed, the amax pass, the scale from the amax, the cast), 1
 *   under the other recipes;
 * - under sequence parallelism, one blocking 4-byte all-reduce (MAX) of
 *   the amax over the tensor-parallel axis for each column-parallel
 *   layer's gathered input in the forward (QKV's, shared by the three
 *   projections, and fc1's) and each row-parallel layer's gathered output
 *   gradient in the backward (the out-projection's and fc2's), counted on
 *   one GPT block in Megatron's layout on a 1 x 8 H100 mesh (tp 8) against
 *   the same block in 16 bits and under delayed scaling; none data
 *   parallel.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static ApprofGraph *gpt_block(void)
{
    ApprofZooOptions o;
    memset(&o, 0, sizeof o);
    o.num_layers = 1;
    o.hidden = 1024;
    o.heads = 16;
    o.seq_len = 512;
    o.vocab = 2056;
    o.batch = 8;
    o.dtype = "bf16";
    return zoo_fixture_build("gpt", &o);
}

/* The whole graph as one stage on one 8-GPU h100-sxm host, logical mesh
 * (a, b), memory level `level` of 3, under recipe (COSTDB_FP8_NONE: 16
 * bits) and recomputation `recompute`. */
static int shard(const ApprofGraph *g, int recipe, int a, int b, int level, int recompute,
                 ApprofStageProgram *p)
{
    ApprofHardwareSpec hw;
    ApprofLayering l;
    ApprofShardContext *ctx = NULL;
    ApprofShardRequest req;
    int begin = 0, end = (int)g->n_ops, rc;
    char err[256];
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    hw.fp8 = recipe;
    memset(&l, 0, sizeof l);
    l.n_layers = 1;
    l.op_begin = &begin;
    l.op_end = &end;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &ctx) == 0);
    memset(&req, 0, sizeof req);
    req.mesh_hosts = 1;
    req.mesh_gpus = 8;
    req.logical_a = a;
    req.logical_b = b;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = 3;
    req.variant.memory_level = level;
    req.variant.recompute = recompute;
    memset(p, 0, sizeof *p);
    rc = approf_shard_stage(ctx, &req, p, err, sizeof err);
    if (rc && rc != APPROF_ENOVARIANT)
        fprintf(stderr, "shard: %s\n", err);
    approf_shard_context_free(&ctx);
    return rc;
}

/* The blocking 4-byte all-reduces of phase ph (current scaling's amax). */
static int amax_reduces(const ApprofStageProgram *p, int ph, int group)
{
    int n = 0;
    for (size_t i = 0; i < p->n_colls[ph]; i++) {
        const ApprofCollective *c = &p->colls[ph][i];
        if (c->kind == APPROF_COLL_ALL_REDUCE && c->bytes == 4.0 && c->blocking) {
            CU_ASSERT_EQUAL(c->group_size, group);
            n++;
        }
    }
    return n;
}

static void test_cast_kernels(void)
{
    CU_ASSERT_EQUAL(costdb_fp8_cast_kernels(COSTDB_FP8_TENSORWISE), 4);
    CU_ASSERT_EQUAL(costdb_fp8_cast_kernels(COSTDB_FP8_DELAYED), 1);
    CU_ASSERT_EQUAL(costdb_fp8_cast_kernels(COSTDB_FP8_MXFP8), 1);
    CU_ASSERT_EQUAL(costdb_fp8_cast_kernels(COSTDB_FP8_BLOCKWISE), 1);
    CU_ASSERT_EQUAL(costdb_fp8_cast_kernels(COSTDB_FP8_NONE), 0);
    CU_ASSERT_EQUAL(costdb_fp8_cast_scale_kernels(COSTDB_FP8_TENSORWISE), 2);
    CU_ASSERT_EQUAL(costdb_fp8_cast_scale_kernels(COSTDB_FP8_DELAYED), 0);
    CU_ASSERT_EQUAL(costdb_fp8_cast_scale_kernels(COSTDB_FP8_MXFP8), 0);
}

/* Megatron's layout with sequence parallelism (the least-memory level
 * that has it, as in sharding_variants' "Megatron layout"): per block 2
 * forward and 2 backward amax all-reduces over the 8 GPUs, the 16-bit
 * program's collectives otherwise unchanged; with full recomputation the
 * recomputed forward's 2 casts reduce again in the backward. */
static void test_sp_amax_reduce(void)
{
    ApprofGraph *g = gpt_block();
    ApprofStageProgram a, t, d, dp, tr, ar;
    int level = 2;
    while (level > 0 && shard(g, COSTDB_FP8_NONE, 1, 8, level, COSTDB_RECOMPUTE_NONE, &a) ==
                            APPROF_ENOVARIANT)
        level--;
    CU_ASSERT_FATAL(level > 0);
    CU_ASSERT_FATAL(shard(g, COSTDB_FP8_TENSORWISE, 1, 8, level, COSTDB_RECOMPUTE_NONE, &t) == 0);
    CU_ASSERT_FATAL(shard(g, COSTDB_FP8_DELAYED, 1, 8, level, COSTDB_RECOMPUTE_NONE, &d) == 0);
    for (int ph = 0; ph < 2; ph++) {
        int n = amax_reduces(&t, ph, 8);
        CU_ASSERT_EQUAL(n, 2);
        CU_ASSERT_EQUAL(amax_reduces(&a, ph, 8), 0);
        CU_ASSERT_EQUAL(amax_reduces(&d, ph, 8), 0);
        CU_ASSERT_EQUAL(t.n_colls[ph], a.n_colls[ph] + (size_t)n);
    }
    /* full recomputation: the backward reruns the forward's casts */
    CU_ASSERT_FATAL(shard(g, COSTDB_FP8_NONE, 1, 8, level, COSTDB_RECOMPUTE_FULL, &ar) == 0);
    CU_ASSERT_FATAL(shard(g, COSTDB_FP8_TENSORWISE, 1, 8, level, COSTDB_RECOMPUTE_FULL, &tr) == 0);
    CU_ASSERT_EQUAL(amax_reduces(&tr, 0, 8), 2);
    CU_ASSERT_EQUAL(amax_reduces(&tr, 1, 8), 4);
    CU_ASSERT_EQUAL(tr.n_colls[1], ar.n_colls[1] + 4);
    /* data parallel: nothing is gathered, nothing reduced */
    CU_ASSERT_FATAL(shard(g, COSTDB_FP8_TENSORWISE, 8, 1, 0, COSTDB_RECOMPUTE_NONE, &dp) == 0);
    CU_ASSERT_EQUAL(amax_reduces(&dp, 0, 8), 0);
    CU_ASSERT_EQUAL(amax_reduces(&dp, 1, 8), 0);
    approf_stage_program_clear(&a);
    approf_stage_program_clear(&t);
    approf_stage_program_clear(&d);
    approf_stage_program_clear(&dp);
    approf_stage_program_clear(&tr);
    approf_stage_program_clear(&ar);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"current scaling: TE's 4 kernels a cast", test_cast_kernels},
        {"current scaling: the amax all-reduce of sequence-parallel casts", test_sp_amax_reduce},
    };
    return CUNIT_RUN("fp8_current_scaling", tests);
}
