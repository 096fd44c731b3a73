/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forward's kernel-list digest (program_finish.c, kernel_list) made
 * once per held forward (docs/perf-fullends.md): the build's own end
 * digests its forward, its derived ZeRO programs, holding that forward,
 * take the digest, and a later recomputation build holding the same
 * forward (program_held.c) takes it from the held slot. Every program so
 * made, the build's, its ZeRO 1-3 programs and the recomputing builds'
 * with theirs, equals a fresh context's build of the same request field
 * by field, its signature included (a wrong or stale digest changes the
 * signature).
 */
#include <CUnit/Basic.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static const int modes[3] = {COSTDB_RECOMPUTE_NONE, COSTDB_RECOMPUTE_SELECTIVE,
                             COSTDB_RECOMPUTE_FULL};

/* the range (r0, r1) at every level and mode as the sweep asks them: ZeRO
 * 0 with its family (1-3 derived), then ZeRO 1-3 (taken), each against a
 * fresh context's build; views: the requests take kernel views */
static void check_range(int r0, int r1, int views)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    ZooTwoLayers s;
    int built = 0;
    zoo_fixture_two_layers(&s, g);
    ApprofShardContext *ctx = NULL;
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    for (int force = 0; force >= -1; force--)
        for (int lvl = 0; lvl < 3; lvl++)
            for (int m = 0; m < 3; m++)
                for (int z = 0; z <= 3; z++) {
                    ApprofShardRequest req =
                        zoo_fixture_request(r0, r1, 4, 1, force, 3, lvl, modes[m]);
                    req.variant.zero = z;
                    req.zero_family = z == 0 ? 0xEu : 0u;
                    req.kernel_views = views;
                    /* a derived ZeRO program keeps no placements */
                    built += zoo_fixture_same_as_fresh_with(ctx, g, &s, &req,
                                                            req.variant.zero == 0);
                }
    /* two levels at least, forced and not, each mode and ZeRO stage */
    CU_ASSERT(built >= 2 * 2 * 3 * 4);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

static void test_pair(void)
{
    check_range(0, 1, 0);
}

static void test_pair_views(void)
{
    check_range(0, 1, 1);
}

static void test_layers(void)
{
    check_range(0, 0, 1);
    check_range(1, 1, 0);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a range's programs with a shared forward digest equal fresh builds", test_pair},
        {"the same with kernel views", test_pair_views},
        {"the single layers' the same", test_layers},
    };
    return CUNIT_RUN("the forward's list digest made once per held forward", tests);
}
