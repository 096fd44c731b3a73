/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An op's kernels and operand layouts found by its strategy's index
 * (docs/performance.md, "The memory levels' build bodies: an op's kernels
 * and layouts kept with its strategies (lvlbody)"): shard_op_kernels
 * keeps a copy of the kernel memo's entry with the memo's strategy list
 * of the op (StratEntry.kern, reached through ShardOp.kern), so a later
 * build of any op with the same descriptor on the same mesh takes it by
 * index instead of hashing the op's descriptor and probing the memo; and
 * the list holds each strategy's operand layouts (StratEntry.lay), which
 * the build reads (shard_in_layout, shard_out_layout) instead of working
 * them out per op and slot. Every op's kept layouts equal its own worked
 * out. Checked on the zoo's two-layer
 * GPT (both layers' ops share descriptors) on meshes (4, 1) and (2, 2),
 * forced and not: every op under every strategy, asked twice in one
 * context, is answered the second time from the kept copy, which holds
 * the memo's own arrays; and its kernels and digests equal, field for
 * field, those a fresh context lowers for that op alone. Then the
 * programs of every memory level (three kept) and recomputation mode of
 * each layer and of the pair, forced and not, built in one context per
 * range in the sweep's order, equal those of a fresh context per
 * request.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "sharding/context.h"
#include "sharding/sharding.h"
#include "sharding/sharding_int.h"
#include "stage.h"
#include "zoo_fixture.h"

/* x's kernels and digests equal y's, field for field, but for the op
 * field (a memo entry's is the op first lowered: the caller sets it). */
static void same_entry(const KernelEntry *x, const KernelEntry *y)
{
    CU_ASSERT_EQUAL_FATAL(x->n[0], y->n[0]);
    CU_ASSERT_EQUAL_FATAL(x->n[1], y->n[1]);
    for (int i = 0; i < x->n[0] + x->n[1]; i++) {
        ApprofKernel a = x->k[i], b = y->k[i];
        a.op = b.op = 0;
        CU_ASSERT(!memcmp(&a, &b, sizeof a));
        CU_ASSERT(!memcmp(&x->dig[i], &y->dig[i], sizeof x->dig[i]));
    }
}

/* The whole graph's stage on logical mesh (a, b), force: each op under
 * each strategy twice in ctx, against a fresh context's lowering. */
static void check_mesh(const ApprofGraph *g, int a, int b, int force)
{
    ZooTwoLayers s;
    ApprofShardContext *ctx = NULL;
    ApprofStageProgram p;
    char err[256];
    zoo_fixture_two_layers(&s, g);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    ApprofShardRequest req = zoo_fixture_request(0, 1, a, b, force, 1, 0, COSTDB_RECOMPUTE_NONE);
    /* a build first: the context's descriptors and memos in place */
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &req, &p, err, sizeof err) == 0);
    approf_stage_program_clear(&p);
    ShardStage st;
    int maxk = 0, kept = 0;
    CU_ASSERT_FATAL(shard_stage_setup(ctx, &req, &st, 1, err, sizeof err) == 0);
    CU_ASSERT_FATAL(shard_stage_ops(ctx, &st, &maxk, err, sizeof err) == 0);
    st.choice = calloc((size_t)st.n_ops, sizeof *st.choice);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st.choice);
    for (int o = 0; o < st.n_ops; o++) {
        const ShardOp *so = &st.ops[o];
        const ApprofOp *op = &g->ops[so->op];
        for (int j = 0; j < so->k; j++) {
            /* the layouts kept with the list: op o's own, worked out */
            CU_ASSERT_PTR_NOT_NULL_FATAL(so->lay);
            st.choice[o] = j;
            for (int i = 0; i < op->n_inputs; i++) {
                ShardLayout L = shard_operand_layout(&so->s[j], so->sp->in_map[i],
                                                     g->tensors[op->inputs[i]].ndim);
                ShardLayout K = shard_in_layout(&st, o, i);
                CU_ASSERT(L.d[0] == K.d[0] && L.d[1] == K.d[1]);
            }
            for (int i = 0; i < op->n_outputs; i++) {
                ShardLayout L = shard_operand_layout(&so->s[j], so->sp->out_map[i],
                                                     g->tensors[op->outputs[i]].ndim);
                ShardLayout K = shard_out_layout(&st, o, i);
                CU_ASSERT(L.d[0] == K.d[0] && L.d[1] == K.d[1]);
            }
            ApprofKernel kbuf[2][2 * APPROF_MAX_KERNELS];
            ApprofHash128 dbuf[2][2 * APPROF_MAX_KERNELS];
            KernelEntry own[2] = {{.k = kbuf[0], .dig = dbuf[0]}, {.k = kbuf[1], .dig = dbuf[1]}};
            int rc[2];
            const KernelEntry *e1 = shard_op_kernels(ctx, &st, o, &so->s[j], &own[0], &rc[0]);
            const KernelEntry *e2 = shard_op_kernels(ctx, &st, o, &so->s[j], &own[1], &rc[1]);
            CU_ASSERT_EQUAL_FATAL(rc[0], 0);
            CU_ASSERT_EQUAL_FATAL(rc[1], 0);
            CU_ASSERT_FATAL(e1 && e2);
            /* the second answer is the kept copy, of the memo's arrays */
            CU_ASSERT_PTR_NOT_NULL_FATAL(so->kern);
            CU_ASSERT(e2 == &so->kern[j]);
            CU_ASSERT(e2->k == e1->k && e2->dig == e1->dig);
            CU_ASSERT(e2 != &own[1]);
            kept += e2 == &so->kern[j];
            /* and the same kernels as a fresh context lowers for o alone */
            ApprofShardContext *fresh = NULL;
            if (o % 7 && j % 3) /* a fresh context for a sample: they cost */
                continue;
            CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &fresh) == 0);
            ApprofStageProgram q;
            memset(&q, 0, sizeof q);
            CU_ASSERT_FATAL(approf_shard_stage(fresh, &req, &q, err, sizeof err) == 0);
            approf_stage_program_clear(&q);
            ShardStage fs;
            int fk = 0;
            CU_ASSERT_FATAL(shard_stage_setup(fresh, &req, &fs, 1, err, sizeof err) == 0);
            CU_ASSERT_FATAL(shard_stage_ops(fresh, &fs, &fk, err, sizeof err) == 0);
            CU_ASSERT_EQUAL_FATAL(fs.ops[o].k, so->k);
            ApprofKernel fb[2 * APPROF_MAX_KERNELS];
            ApprofHash128 fd[2 * APPROF_MAX_KERNELS];
            KernelEntry fown = {.k = fb, .dig = fd};
            int frc;
            const KernelEntry *fe = shard_op_kernels(NULL, &fs, o, &fs.ops[o].s[j], &fown, &frc);
            CU_ASSERT_FATAL(frc == 0 && fe == &fown);
            same_entry(e2, fe);
            shard_stage_free(&fs);
            approf_shard_context_free(&fresh);
        }
    }
    CU_ASSERT(kept > 0);
    shard_stage_free(&st);
    approf_shard_context_free(&ctx);
}

static void test_kernels_kept(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    check_mesh(g, 4, 1, 0);
    check_mesh(g, 4, 1, -1);
    check_mesh(g, 2, 2, -1);
    approf_graph_free(&g);
}

/* Every level and recomputation mode of each layer and of the pair, both
 * forced and not, in one context per range as the sweep asks for them,
 * against a fresh context each. */
static void test_levels_same_programs(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ZooTwoLayers s;
    zoo_fixture_two_layers(&s, g);
    int ranges[3][2] = {{0, 0}, {1, 1}, {0, 1}};
    int modes[3] = {COSTDB_RECOMPUTE_NONE, COSTDB_RECOMPUTE_SELECTIVE, COSTDB_RECOMPUTE_FULL};
    int built = 0;
    for (int r = 0; r < 3; r++) {
        ApprofShardContext *ctx = NULL;
        CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
        for (int force = 0; force >= -1; force--)
            for (int lvl = 0; lvl < 3; lvl++)
                for (int m = 0; m < 3; m++) {
                    ApprofShardRequest req = zoo_fixture_request(
                        ranges[r][0], ranges[r][1], 4, 1, force, 3, lvl, modes[m]);
                    built += zoo_fixture_same_as_fresh(ctx, g, &s, &req);
                }
        approf_shard_context_free(&ctx);
    }
    CU_ASSERT(built >= 3 * 2 * 2 * 3); /* two levels at least of each */
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"an op's kernels kept with its strategies equal a fresh lowering",
         test_kernels_kept},
        {"every level's program in one context equals a fresh context's",
         test_levels_same_programs},
    };
    return CUNIT_RUN("an op's kernels found by its strategy", tests);
}
