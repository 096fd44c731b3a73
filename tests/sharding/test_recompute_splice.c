/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A recompute-full program spliced from the none build of its stage
 * (program_splice.c, docs/perf-recfull.md): a full build holding the none
 * build's forward takes that build's backward runs and collectives (less
 * its re-gather copies, plus every forward collective) instead of pushing
 * them op by op. Every zoo model that builds with the small options, as
 * two layers on four GPUs: each range, logical mesh (4, 1) and (2, 2),
 * forced and unforced, memory levels 0-2, recomputation none, selective
 * and full in the sweep's order, ZeRO 0 with its family then 1-3 taken,
 * with and without async backward collectives and kernel views; each
 * program against a fresh context's build of the same request (no held
 * forward there: the full program pushed), field by field: signature
 * (which digests every kernel's digest and async marks in order and
 * every collective), kernels, collectives, memory and placements
 * (zoo_fixture_same_program). The splices counted show the full builds
 * were spliced (a wrong splice, one re-gather copy left in, fails here:
 * docs/perf-recfull.md). A context's none builds keep nothing until it
 * has been asked for a recomputation: one full request first. The models
 * alternate between async collectives with kernel views and neither.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "model/zoo.h"
#include "sharding/program_build.h"
#include "sharding/program_splice.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static const int modes[3] = {COSTDB_RECOMPUTE_NONE, COSTDB_RECOMPUTE_SELECTIVE,
                             COSTDB_RECOMPUTE_FULL};

/* every request of g's ranges in one context, each against a fresh
 * context's; returns the full builds spliced */
static unsigned long check_graph(const ApprofGraph *g, double async, int views)
{
    static const int ranges[3][2] = {{0, 1}, {0, 0}, {1, 1}};
    static const int meshes[2][2] = {{4, 1}, {2, 2}};
    ZooTwoLayers s;
    unsigned long before;
    zoo_fixture_two_layers(&s, g);
    s.hw.tp_async_grad = async;
    ApprofShardContext *ctx = NULL;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    ApprofShardRequest first = zoo_fixture_request(0, 0, 4, 1, 0, 3, 0, COSTDB_RECOMPUTE_FULL);
    zoo_fixture_same_as_fresh_with(ctx, g, &s, &first, 1);
    before = shard_splice_count();
    for (int r = 0; r < 3; r++)
        for (int me = 0; me < 2; me++)
            for (int force = 0; force >= -1; force--)
                for (int lvl = 0; lvl < 3; lvl++)
                    for (int m = 0; m < 3; m++)
                        for (int z = 0; z <= 3; z++) {
                            ApprofShardRequest req = zoo_fixture_request(
                                ranges[r][0], ranges[r][1], meshes[me][0], meshes[me][1],
                                force, 3, lvl, modes[m]);
                            req.variant.zero = z;
                            req.zero_family = z == 0 ? 0xEu : 0u;
                            req.kernel_views = views;
                            zoo_fixture_same_as_fresh_with(ctx, g, &s, &req, z == 0);
                        }
    approf_shard_context_free(&ctx);
    return shard_splice_count() - before;
}

static void test_zoo(void)
{
    size_t n = 0;
    const ApprofZooEntry *e = approf_zoo_list(&n);
    int models = 0;
    for (size_t i = 0; i < n; i++) {
        ApprofZooOptions o;
        ApprofGraph *g = NULL;
        char err[256];
        zoo_fixture_small_options(&o, "bf16");
        /* the image models take no decoder options: not this check's */
        if (approf_zoo_build(e[i].name, &o, &g, err, sizeof err))
            continue;
        unsigned long spliced = check_graph(g, i % 2 ? 0.5 : 0.0, (int)(i % 2));
        printf("\n  %s: %lu full builds spliced", e[i].name, spliced);
        CU_ASSERT(spliced > 0);
        models++;
        approf_graph_free(&g);
    }
    CU_ASSERT(models >= 4);
}

/* A submesh's configs in the sweep's order (approf_config_variants):
 * the plain entry (level 0, none, ZeRO 0 with its family 1-3) of every
 * config, then each config's other variants, levels 0-2, none, selective
 * and full, ZeRO 0 (with its family) to 3. Between the last config's
 * plain build and its ZeRO-1 request the three configs before it put 8
 * families of 3 each (72 puts): every ZeRO 1-3 request is taken from
 * its family, none built (context.h, SHARD_ZERO_SLOTS). */
static void test_zero_slots(void)
{
    static const int cfg[4][3] = {{4, 1, 0}, {2, 2, 0}, {1, 4, 0}, {4, 1, -1}};
    static const int ranges[3][2] = {{0, 1}, {0, 0}, {1, 1}};
    ApprofZooOptions o;
    zoo_fixture_small_options(&o, "bf16");
    ApprofGraph *g = zoo_fixture_build("gpt", &o);
    ZooTwoLayers s;
    zoo_fixture_two_layers(&s, g);
    ApprofShardContext *ctx = NULL;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    unsigned long zero_builds = 0, builds = shard_build_count();
    int taken = 0;
    for (int r = 0; r < 3; r++)
        for (int pass = 0; pass < 2; pass++)
            for (int c = 0; c < 4; c++)
                for (int lvl = 0; lvl < 3; lvl++)
                    for (int m = 0; m < 3; m++)
                        for (int z = 0; z <= 3; z++) {
                            int plain = lvl == 0 && m == 0 && z == 0;
                            if (plain != (pass == 0))
                                continue;
                            ApprofShardRequest req =
                                zoo_fixture_request(ranges[r][0], ranges[r][1], cfg[c][0],
                                                    cfg[c][1], cfg[c][2], 3, lvl, modes[m]);
                            req.variant.zero = z;
                            req.zero_family = z == 0 ? 0xEu : 0u;
                            ApprofStageProgram p;
                            char err[256];
                            memset(&p, 0, sizeof p);
                            unsigned long before = shard_build_count();
                            int rc = approf_shard_stage(ctx, &req, &p, err, sizeof err);
                            if (z > 0) {
                                zero_builds += shard_build_count() - before;
                                taken += rc == 0 && shard_build_count() == before;
                            }
                            approf_stage_program_clear(&p);
                        }
    printf("\n  %lu builds, %d ZeRO 1-3 programs taken, %lu built", shard_build_count() - builds,
           taken, zero_builds);
    CU_ASSERT(taken > 0);
    CU_ASSERT_EQUAL(zero_builds, 0);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the zoo's full programs spliced equal fresh builds", test_zoo},
        {"a submesh's ZeRO families outlive its configs' variants", test_zero_slots},
    };
    return CUNIT_RUN("recompute-full programs spliced from the none build", tests);
}
