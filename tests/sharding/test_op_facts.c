/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a program build reads of each graph op, kept once per context
 * (docs/performance.md, "The stage program build's own body: each op's
 * saved mask and parameter reads kept once (lvlself)"): the first build
 * fills ctx->op_facts (shard_op_facts_make) with every op's saved mask
 * (approf_op_saved_mask), its parameter inputs and the parameters its
 * backward reads when the op is not rerun; the build's steps read the
 * table instead of asking approf_op_saved_mask per op and slot and
 * walking the inputs' pairs. Checked on the zoo's GPT, llama, mixtral
 * (a MoE combine and router) and MLP (a first layer on model data, whose
 * weight is saved and not read) graphs: after a build the table is
 * made, and every entry equals the facts worked out here by the rule as
 * it was before the table (shard_mark_param_reads' loop), and
 * shard_op_facts_of's; and shard_mark_param_reads with the table marks
 * the same tensors as without a context, for every op rerun, none and
 * every other one.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/context.h"
#include "sharding/program_int.h"
#include "sharding/sharding.h"
#include "sharding/sharding_int.h"
#include "stage.h"
#include "zoo_fixture.h"

/* Op o's parameter inputs (bit i) and those its backward reads when not
 * rerun: the rule of shard_mark_param_reads before the table, written
 * out again. */
static void facts_by_rule(const ApprofGraph *g, int o, unsigned *param_in, unsigned *param_read)
{
    const ApprofOp *op = &g->ops[o];
    unsigned saved = approf_op_saved_mask(g, o);
    *param_in = *param_read = 0;
    for (int i = 0; i < op->n_inputs; i++) {
        if (g->tensors[op->inputs[i]].role != APPROF_TENSOR_PARAM)
            continue;
        *param_in |= 1u << i;
        int other = 0;
        for (int j = 0; j < op->n_inputs; j++)
            other |= j != i && (saved & APPROF_SAVED_INPUT(j)) &&
                     g->tensors[op->inputs[j]].requires_grad;
        if ((saved & APPROF_SAVED_INPUT(i)) && other)
            *param_read |= 1u << i;
    }
}

/* g as two layers on four GPUs, one build of each layer and of the pair
 * in one context; then the context's table against the rule, and the
 * parameter reads with the table against those without a context. */
static void check_graph(ApprofGraph *g, const ApprofLayering *l, const ApprofHardwareSpec *hw)
{
    ApprofShardContext *ctx = NULL;
    char err[256];
    CU_ASSERT_FATAL(approf_shard_context_new(g, l, hw, 4, &ctx) == 0);
    CU_ASSERT_PTR_NULL(ctx->op_facts);
    ApprofShardRequest req;
    memset(&req, 0, sizeof req);
    req.start_layer = 0;
    req.end_layer = (int)l->n_layers - 1;
    req.mesh_hosts = 1;
    req.mesh_gpus = 4;
    req.logical_a = 4;
    req.logical_b = 1;
    req.force_batch_dim = -1;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = 1;
    ApprofStageProgram p;
    memset(&p, 0, sizeof p);
    int rc = approf_shard_stage(ctx, &req, &p, err, sizeof err);
    if (rc)
        fprintf(stderr, "shard: %s\n", err);
    CU_ASSERT_FATAL(rc == 0);
    approf_stage_program_clear(&p);
    /* the build made the table */
    CU_ASSERT_PTR_NOT_NULL_FATAL(ctx->op_facts);
    int n_params = 0, n_reads = 0, n_saved = 0;
    for (size_t o = 0; o < g->n_ops; o++) {
        unsigned param_in, param_read;
        facts_by_rule(g, (int)o, &param_in, &param_read);
        ShardOpFacts f = ctx->op_facts[o], w = shard_op_facts_of(g, (int)o);
        CU_ASSERT_EQUAL(f.saved, approf_op_saved_mask(g, (int)o));
        CU_ASSERT_EQUAL(f.param_in, param_in);
        CU_ASSERT_EQUAL(f.param_read, param_read);
        CU_ASSERT(!memcmp(&f, &w, sizeof f));
        n_params += param_in != 0;
        n_reads += param_read != 0;
        n_saved += f.saved != 0;
    }
    CU_ASSERT(n_params > 0 && n_reads > 0 && n_saved > 0);

    /* shard_mark_param_reads: the table's marks against a context-less
     * stage's (worked out per op), for three recomputation patterns */
    ShardStage st;
    CU_ASSERT_FATAL(shard_stage_setup(ctx, &req, &st, 1, err, sizeof err) == 0);
    CU_ASSERT_FATAL(st.ctx == ctx && st.g == g);
    unsigned char *recomp = calloc((size_t)st.n_ops + 1, 1);
    TInfo *a = calloc(g->n_tensors, sizeof *a), *b = calloc(g->n_tensors, sizeof *b);
    CU_ASSERT_FATAL(recomp && a && b);
    for (int pat = 0; pat < 3; pat++) {
        for (int o = 0; o < st.n_ops; o++)
            recomp[o] = pat == 1 || (pat == 2 && o % 2);
        memset(a, 0, g->n_tensors * sizeof *a);
        memset(b, 0, g->n_tensors * sizeof *b);
        shard_mark_param_reads(&st, a, recomp);
        ShardStage bare = st;
        bare.ctx = NULL;
        shard_mark_param_reads(&bare, b, recomp);
        int marked = 0;
        for (size_t t = 0; t < g->n_tensors; t++) {
            CU_ASSERT_EQUAL(a[t].bwd_read, b[t].bwd_read);
            marked += a[t].bwd_read;
        }
        CU_ASSERT(marked > 0);
    }
    free(recomp);
    free(a);
    free(b);
    shard_stage_free(&st);
    approf_shard_context_free(&ctx);
}

static void test_gpt(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ZooTwoLayers s;
    zoo_fixture_two_layers(&s, g);
    check_graph(g, &s.l, &s.hw);
    approf_graph_free(&g);
}

static void test_llama_mixtral(void)
{
    const char *models[] = {"llama", "mixtral"};
    for (int m = 0; m < 2; m++) {
        ApprofZooOptions o;
        zoo_fixture_small_options(&o, "bf16");
        ApprofGraph *g = zoo_fixture_build(models[m], &o);
        ZooTwoLayers s;
        zoo_fixture_two_layers(&s, g);
        check_graph(g, &s.l, &s.hw);
        approf_graph_free(&g);
    }
}

/* The zoo's MLP: its first layer reads model data, which needs no
 * gradient, so its weight is saved but not read by the backward. */
static void test_mlp(void)
{
    ApprofGraph *g = zoo_fixture_mlp(8, 256);
    ZooTwoLayers s;
    zoo_fixture_two_layers(&s, g);
    check_graph(g, &s.l, &s.hw);
    int unread = 0;
    for (size_t o = 0; o < g->n_ops; o++) {
        ShardOpFacts f = shard_op_facts_of(g, (int)o);
        unread += (f.param_in & f.saved & ~f.param_read) != 0;
    }
    CU_ASSERT(unread > 0);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the op facts of the zoo's GPT equal the rule's", test_gpt},
        {"the op facts of the zoo's llama and mixtral equal the rule's", test_llama_mixtral},
        {"the op facts of the zoo's MLP (a weight saved, not read) equal the rule's",
         test_mlp},
    };
    return CUNIT_RUN("each op's saved mask and parameter reads kept once", tests);
}
