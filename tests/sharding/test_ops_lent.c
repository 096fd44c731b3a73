/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A stage's ops lent to its later requests (stage_ops.c): the first
 * request of a stage with several memory levels enumerates its ops into
 * an array of its own and keeps a copy in the context (KeptOps); a later
 * request of the same stage (another level or recomputation mode) reads
 * that copy in place (ShardStage.ops_borrowed) instead of copying it into
 * a fresh array, and its stage frees only what it owns. Checked on the
 * zoo's two-layer GPT's pair of layers on mesh (4, 1), forced and not
 * (after a build of the first layer alone): a request within the first
 * three is lent the kept list, entry for entry what a fresh context
 * enumerates; an array the set-up allocated is given back; and the list
 * outlives its borrowers (lent again after their stages are freed; the
 * context frees it).
 */
#include <CUnit/Basic.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "sharding/context.h"
#include "sharding/sharding.h"
#include "sharding/sharding_int.h"
#include "stage.h"
#include "zoo_fixture.h"

static ApprofShardRequest request(int force, int level)
{
    return zoo_fixture_request(0, 1, 4, 1, force, 3, level, COSTDB_RECOMPUTE_NONE);
}

/* a's ops equal b's, entry for entry (each points at its context's memo:
 * compared by what they hold) */
static void same_ops(const ShardStage *a, const ShardStage *b)
{
    CU_ASSERT_EQUAL_FATAL(a->n_ops, b->n_ops);
    for (int o = 0; o < a->n_ops; o++) {
        const ShardOp *x = &a->ops[o], *y = &b->ops[o];
        CU_ASSERT_EQUAL(x->op, y->op);
        CU_ASSERT_EQUAL_FATAL(x->k, y->k);
        for (int j = 0; j < x->k; j++)
            CU_ASSERT(!memcmp(&x->s[j], &y->s[j], sizeof x->s[j]));
    }
}

static void check(int force)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ZooTwoLayers s;
    ApprofShardContext *ctx = NULL, *fresh = NULL;
    char err[256];
    zoo_fixture_two_layers(&s, g);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &fresh) == 0);
    ApprofShardRequest r0 = request(force, 0), r1 = request(force, 1);
    ShardStage a, b, f;
    int ka = 0, kb = 0, kf = 0;
    /* a build of another range first in each context: its op descriptors
     * in place (build_and_solve makes them before shard_stage_ops) */
    ApprofShardRequest other = request(force, 0);
    other.end_layer = 0;
    for (int c = 0; c < 2; c++) {
        ApprofStageProgram p;
        memset(&p, 0, sizeof p);
        CU_ASSERT_FATAL(approf_shard_stage(c ? fresh : ctx, &other, &p, err, sizeof err) == 0);
        approf_stage_program_clear(&p);
    }
    /* the stage's requests in turn: a request whose ops are not all in
     * the context's memo yet enumerates some into the stage's own block
     * and keeps nothing; the first with all of them memoised enumerates
     * into its own array and keeps a copy; the next ones are lent it
     * (the set-up's array, where it made one, given back) */
    const ShardOp *lent = NULL;
    int asked = 0;
    for (; asked < 4 && !lent; asked++) {
        ApprofShardRequest *r = asked % 2 ? &r1 : &r0;
        CU_ASSERT_FATAL(shard_stage_setup(ctx, r, &a, asked % 2, err, sizeof err) == 0);
        CU_ASSERT_FATAL(shard_stage_ops(ctx, &a, &ka, err, sizeof err) == 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a.ops);
        if (a.ops_borrowed) {
            lent = a.ops;
            /* a fresh context's enumeration of the same stage */
            CU_ASSERT_FATAL(shard_stage_setup(fresh, r, &f, 0, err, sizeof err) == 0);
            CU_ASSERT_FATAL(shard_stage_ops(fresh, &f, &kf, err, sizeof err) == 0);
            CU_ASSERT_EQUAL(f.ops_borrowed, 0);
            CU_ASSERT_EQUAL(kf, ka);
            same_ops(&a, &f);
            shard_stage_free(&f);
        }
        shard_stage_free(&a);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(lent);
    CU_ASSERT(asked <= 3);
    /* the list outlives its borrower: lent again, the same array */
    CU_ASSERT_FATAL(shard_stage_setup(ctx, &r1, &b, 1, err, sizeof err) == 0);
    CU_ASSERT_FATAL(shard_stage_ops(ctx, &b, &kb, err, sizeof err) == 0);
    CU_ASSERT_EQUAL(b.ops_borrowed, 1);
    CU_ASSERT_PTR_EQUAL(b.ops, lent);
    CU_ASSERT_EQUAL(kb, ka);
    shard_stage_free(&b);
    approf_shard_context_free(&fresh);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

static void test_ops_lent(void)
{
    check(0);
    check(-1);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a stage's later requests read its kept ops in place", test_ops_lent},
    };
    return CUNIT_RUN("a stage's ops lent to its variants", tests);
}
