/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a build reads of an op without its iteration space (issue 38,
 * docs/perf-fullprod.md): ShardOp.reduce_loops, the op's reduction loops
 * as a bit mask that shard_stage_ops fills beside sp, and
 * shard_strat_reduces, which reads it where the build and the ILP read
 * sp->kind[s->ax[x]]; and shard_copy_kernels, the builds' copy of
 * kernels by memcpy. Checked on the zoo's two-layer GPT and llama, both
 * layers on meshes (4, 1) and (2, 2), memory levels 0 to 2 (so that the
 * later requests are lent the kept ops, stage_ops.c): every op's mask
 * bit for bit against sp->kind, and every strategy's test on both axes
 * against the rule as it was; some strategies split a reduction. And a
 * built program's kernels copied by shard_copy_kernels hold the same
 * bytes and fields as its own.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "sharding/context.h"
#include "sharding/program_int.h"
#include "sharding/sharding.h"
#include "sharding/sharding_int.h"
#include "stage.h"
#include "zoo_fixture.h"

/* st's ops' masks and tests against sp->kind; the strategies that split
 * a reduction loop are added to *reducing. */
static void check_stage(const ShardStage *st, int *reducing)
{
    for (int o = 0; o < st->n_ops; o++) {
        const ShardOp *so = &st->ops[o];
        CU_ASSERT_PTR_NOT_NULL_FATAL(so->sp);
        for (int i = 0; i < APPROF_MAX_ITER; i++)
            CU_ASSERT_EQUAL((so->reduce_loops >> i) & 1u,
                            so->sp->kind[i] == APPROF_ITER_REDUCE ? 1u : 0u);
        for (int j = 0; j < so->k; j++)
            for (int x = 0; x < 2; x++) {
                const ShardStrat *s = &so->s[j];
                int rule = s->ax[x] >= 0 && so->sp->kind[s->ax[x]] == APPROF_ITER_REDUCE;
                CU_ASSERT_EQUAL(shard_strat_reduces(so, s, x), rule);
                *reducing += rule;
            }
    }
}

static void check_graph(ApprofGraph *g)
{
    ZooTwoLayers s;
    ApprofShardContext *ctx = NULL;
    char err[256];
    zoo_fixture_two_layers(&s, g);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    int reducing = 0, lent = 0;
    for (int mesh = 0; mesh < 2; mesh++)
        for (int level = 0; level < 3; level++) {
            ApprofShardRequest r = zoo_fixture_request(0, 1, mesh ? 2 : 4, mesh ? 2 : 1, 0, 3,
                                                       level, COSTDB_RECOMPUTE_NONE);
            /* a build first, so that the ops' strategies are memoised
             * and kept for the next requests */
            ApprofStageProgram p;
            memset(&p, 0, sizeof p);
            int rc = approf_shard_stage(ctx, &r, &p, err, sizeof err);
            /* a level past the stage's distinct points: no program */
            if (rc && rc != APPROF_ENOVARIANT)
                fprintf(stderr, "mesh %d level %d: %s\n", mesh, level, err);
            CU_ASSERT_FATAL(rc == 0 || rc == APPROF_ENOVARIANT);
            approf_stage_program_clear(&p);
            ShardStage st;
            int maxk = 0;
            CU_ASSERT_FATAL(shard_stage_setup(ctx, &r, &st, 1, err, sizeof err) == 0);
            CU_ASSERT_FATAL(shard_stage_ops(ctx, &st, &maxk, err, sizeof err) == 0);
            lent += st.ops_borrowed;
            check_stage(&st, &reducing);
            shard_stage_free(&st);
        }
    CU_ASSERT(reducing > 0);
    CU_ASSERT(lent > 0);
    approf_shard_context_free(&ctx);
}

static void test_gpt(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    check_graph(g);
    approf_graph_free(&g);
}

static void test_llama(void)
{
    ApprofZooOptions o;
    zoo_fixture_small_options(&o, "bf16");
    ApprofGraph *g = zoo_fixture_build("llama", &o);
    check_graph(g);
    approf_graph_free(&g);
}

/* A program's kernels copied by shard_copy_kernels: the same bytes, and
 * field for field what an assignment gives. */
static void test_copy_kernels(void)
{
    ApprofGraph *g = zoo_fixture_gpt(1);
    ZooTwoLayers s;
    zoo_fixture_two_layers(&s, g);
    ApprofStageProgram p;
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(zoo_fixture_shard_whole(g, &s.hw, 4, COSTDB_RECOMPUTE_FULL, 0, &p) == 0);
    size_t n = p.n_kernels[1];
    CU_ASSERT_FATAL(n > 2 && p.n_kernel_head[1] == 0);
    ApprofKernel *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    CU_ASSERT_FATAL(a && b);
    shard_copy_kernels(a, p.kernels[1], n);
    CU_ASSERT(!memcmp(a, p.kernels[1], n * sizeof *a));
    /* one at a time, as the accumulation's adds are copied */
    for (size_t i = 0; i < n; i++) {
        shard_copy_kernels(&b[i], &p.kernels[1][i], 1);
        ApprofKernel c = p.kernels[1][i];
        CU_ASSERT_EQUAL(b[i].kind, c.kind);
        CU_ASSERT_EQUAL(b[i].op, c.op);
        CU_ASSERT_EQUAL(b[i].m, c.m);
        CU_ASSERT_EQUAL(b[i].n, c.n);
        CU_ASSERT_EQUAL(b[i].k, c.k);
        CU_ASSERT_EQUAL(b[i].elements, c.elements);
        CU_ASSERT_EQUAL(b[i].async_group, c.async_group);
        CU_ASSERT(!memcmp(&b[i].flops, &c.flops, sizeof c.flops));
        CU_ASSERT(!memcmp(&b[i].bytes, &c.bytes, sizeof c.bytes));
        CU_ASSERT_EQUAL(shard_kernel_digest(&b[i]).a, shard_kernel_digest(&c).a);
        CU_ASSERT_EQUAL(shard_kernel_digest(&b[i]).b, shard_kernel_digest(&c).b);
    }
    free(a);
    free(b);
    approf_stage_program_clear(&p);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the zoo's GPT: each op's reduction mask and test equal sp->kind's", test_gpt},
        {"the zoo's llama: each op's reduction mask and test equal sp->kind's", test_llama},
        {"kernels copied by shard_copy_kernels equal the program's", test_copy_kernels},
    };
    return CUNIT_RUN("reduction loops from the op's mask; kernels copied by memcpy", tests);
}
