/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A range's program does not depend on what its sharding context built
 * before it (docs/performance.md, "A tied parameter's gradient add outside
 * the node cost table (ctxorder)"). The zoo's two-layer GPT ties its LM
 * head (layer 1) to the embedding table (layer 0): the parameter's first
 * reader, whose strategy pays for the table's gradient add in the sharding
 * ILP's node cost, is the head in the range (1, 1) and the embedding in
 * (0, 1). The context's node cost table (shard_cost_table) keeps an op's
 * cost per logical mesh for every range; with the add kept in it, (0, 1)
 * after (1, 1) had a larger ILP objective than in a fresh context (15 of
 * its 18 requests: the same programs but for the objective, so other
 * signatures) and (1, 1) after (0, 1) a smaller one. Every request (three
 * memory levels, three recomputation modes, forced and not) of a range,
 * asked in one context after the ranges the sweep's order puts before it
 * (and in the other order), equals a fresh context's program field by
 * field, the objective's bits included.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static const int modes[3] = {COSTDB_RECOMPUTE_NONE, COSTDB_RECOMPUTE_SELECTIVE,
                             COSTDB_RECOMPUTE_FULL};

/* every request of the range (r0, r1) in ctx, as the sweep orders them */
static void build_range(ApprofShardContext *ctx, int r0, int r1)
{
    char err[256];
    for (int force = 0; force >= -1; force--)
        for (int lvl = 0; lvl < 3; lvl++)
            for (int m = 0; m < 3; m++) {
                ApprofShardRequest req = zoo_fixture_request(r0, r1, 4, 1, force, 3, lvl, modes[m]);
                ApprofStageProgram p;
                memset(&p, 0, sizeof p);
                if (!approf_shard_stage(ctx, &req, &p, err, sizeof err))
                    approf_stage_program_clear(&p);
            }
}

/* The range (r0, r1)'s requests in a context that first built the ranges
 * before[0 .. n), each against a fresh context's. */
static void check_after(const int (*before)[2], int n, int r0, int r1)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ZooTwoLayers s;
    int built = 0;
    zoo_fixture_two_layers(&s, g);
    ApprofShardContext *ctx = NULL;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    for (int i = 0; i < n; i++)
        build_range(ctx, before[i][0], before[i][1]);
    for (int force = 0; force >= -1; force--)
        for (int lvl = 0; lvl < 3; lvl++)
            for (int m = 0; m < 3; m++) {
                ApprofShardRequest req = zoo_fixture_request(r0, r1, 4, 1, force, 3, lvl, modes[m]);
                built += zoo_fixture_same_as_fresh(ctx, g, &s, &req);
            }
    CU_ASSERT(built >= 2 * 2 * 3); /* two levels at least, forced and not */
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

/* the sweep's order: the single layers, then the pair */
static void test_pair_after_layers(void)
{
    static const int before[2][2] = {{0, 0}, {1, 1}};
    check_after(before, 2, 0, 1);
}

/* the head's layer alone before the pair, and after it */
static void test_pair_after_head(void)
{
    static const int before[1][2] = {{1, 1}};
    check_after(before, 1, 0, 1);
}

static void test_head_after_pair(void)
{
    static const int before[1][2] = {{0, 1}};
    check_after(before, 1, 1, 1);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the pair after both single layers equals a fresh context's",
         test_pair_after_layers},
        {"the pair after the head's layer equals a fresh context's", test_pair_after_head},
        {"the head's layer after the pair equals a fresh context's", test_head_after_pair},
    };
    return CUNIT_RUN("a range's program whatever its context built before", tests);
}
