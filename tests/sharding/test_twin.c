/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A forced-batch build taken by its unforced twin
 * (profiler/sharding/program_twin.c; docs/performance.md, "A level-0
 * build taken by its unforced twin"). In one context, as the sweep asks
 * for them, the (n m, 1) mesh's forced-batch request (force_batch_dim 0)
 * and then its unforced twin (-1), at memory level 0, with and without
 * recomputation and a ZeRO family: where the two sharding solutions are
 * the same, the twin's program holds the forced build's kernel arrays
 * (it was taken, not built), and it and its derived ZeRO stages equal the
 * programs a fresh context builds for the unforced requests, field by
 * field: the signature text and body, force_batch_dim, the ILP objective,
 * kernels, collectives, memory, placements, and the prices
 * (approf_phase_seconds_memo through one memo that priced the forced
 * program first, as the sweep's, against approf_phase_seconds of the
 * fresh build), bit for bit. Where the solutions differ (a wide MLP at a
 * small batch: the unforced optimum splits the weights), nothing is taken
 * and the twin still equals the fresh build. A program with another
 * force_batch_dim has another signature.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

static ApprofShardRequest request(int gpus, int layer, int force, int levels, int recompute,
                                  int zero, unsigned family)
{
    ApprofShardRequest req;
    memset(&req, 0, sizeof req);
    req.start_layer = req.end_layer = layer;
    req.mesh_hosts = 1;
    req.mesh_gpus = req.logical_a = gpus;
    req.logical_b = 1;
    req.force_batch_dim = force;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.memory_levels = levels;
    req.variant.recompute = recompute;
    req.variant.zero = zero;
    req.zero_family = family;
    req.kernel_views = 1;
    return req;
}

/* d's prices through the sweep's memo equal b's priced alone, bit for
 * bit (phases and the backward's weight-gradient share). */
static void same_prices(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                        const ApprofStageProgram *d, const ApprofStageProgram *b)
{
    for (int ph = 0; ph < 2; ph++)
        zoo_fixture_same_bits(approf_phase_seconds_memo(hw, d, ph, memo), approf_phase_seconds(hw, b, ph));
    double bw = approf_phase_seconds(hw, b, 1);
    zoo_fixture_same_bits(approf_wgrad_seconds_memo(hw, d, 1.0, &bw, memo),
              approf_wgrad_seconds_memo(hw, b, 1.0, &bw, NULL));
}

/* Whether d holds f's kernel arrays (taken from f's build). */
static int holds(const ApprofStageProgram *d, const ApprofStageProgram *f)
{
    return d->n_kernels[0] && d->kernels[0] == f->kernels[0] && d->kernels[1] == f->kernels[1];
}

/* The forced request of layer `layer` on gpus GPUs and then its unforced
 * twin in one context, against the unforced requests in a fresh one;
 * ffamily, family: the ZeRO stages derived with the forced and the
 * unforced level-0 build (bits 1..3). Returns whether the twin was taken
 * (it is, exactly when the solutions are the same and the forced build
 * derived every ZeRO stage the twin's family asks for). */
static int check_twin(const ApprofGraph *g, int gpus, int layer, int levels, int recompute,
                      unsigned ffamily, unsigned family)
{
    ZooTwoLayers s;
    ApprofShardContext *ctx = NULL, *fresh = NULL;
    ApprofStageProgram f, t, u, dt, du;
    ApprofPriceMemo *memo = NULL;
    char e1[256] = "", e2[256] = "";
    zoo_fixture_two_layers(&s, g);
    memset(&f, 0, sizeof f);
    memset(&t, 0, sizeof t);
    memset(&u, 0, sizeof u);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &fresh) == 0);
    ApprofShardRequest rf = request(gpus, layer, 0, levels, recompute, 0, ffamily);
    ApprofShardRequest ru = request(gpus, layer, -1, levels, recompute, 0, family);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &rf, &f, e1, sizeof e1) == 0);
    /* the sweep prices the forced program first, with one memo */
    for (int ph = 0; ph < 2; ph++)
        (void)approf_phase_seconds_memo(&s.hw, &f, ph, &memo);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &ru, &t, e1, sizeof e1) == 0);
    CU_ASSERT_FATAL(approf_shard_stage(fresh, &ru, &u, e2, sizeof e2) == 0);
    int taken = holds(&t, &f);
    /* taken exactly when the fresh unforced build's solution is the
     * forced one: its program then differs from f only in what the
     * request fields sign */
    int same_solution = !memcmp(u.signature_body, f.signature_body, sizeof u.signature_body);
    CU_ASSERT_EQUAL(taken, same_solution && !(family & ~ffamily));
    CU_ASSERT(strcmp(u.signature, f.signature) != 0); /* force_batch_dim is signed */
    zoo_fixture_same_program(&t, &u, 1);
    same_prices(&s.hw, &memo, &t, &u);
    /* the ZeRO stages of the twin's family: derived with the forced build
     * and taken with it, or derived with the twin's own build */
    for (int z = 1; z <= 3; z++) {
        if (!(family & (1u << z)))
            continue;
        ApprofShardRequest rz = request(gpus, layer, -1, levels, recompute, z, 0);
        memset(&dt, 0, sizeof dt);
        memset(&du, 0, sizeof du);
        int a = approf_shard_stage(ctx, &rz, &dt, e1, sizeof e1);
        int b = approf_shard_stage(fresh, &rz, &du, e2, sizeof e2);
        CU_ASSERT_EQUAL(a, b);
        CU_ASSERT_STRING_EQUAL(e1, e2);
        if (!a && !b) {
            zoo_fixture_same_program(&dt, &du, 1);
            same_prices(&s.hw, &memo, &dt, &du);
        }
        approf_stage_program_clear(&dt);
        approf_stage_program_clear(&du);
    }
    approf_stage_program_clear(&f); /* the twin's arrays outlive their first holder */
    zoo_fixture_same_program(&t, &u, 1);
    approf_stage_program_clear(&t);
    approf_stage_program_clear(&u);
    approf_price_memo_free(memo);
    approf_shard_context_free(&ctx);
    approf_shard_context_free(&fresh);
    return taken;
}

/* A two-layer GPT at batch 8 on 8 and 2 GPUs: the unforced optimum is
 * data parallel, the forced one's; the twin is taken, with and without
 * recomputation, memory levels and a ZeRO family. */
static void test_same_solution(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    static const int gpus[] = {8, 2};
    for (size_t m = 0; m < sizeof gpus / sizeof gpus[0]; m++)
        for (int r = COSTDB_RECOMPUTE_NONE; r <= COSTDB_RECOMPUTE_FULL; r++) {
            if (r == COSTDB_RECOMPUTE_SELECTIVE)
                continue;
            for (int levels = 1; levels <= 2; levels++) {
                CU_ASSERT(check_twin(g, gpus[m], 0, levels, r, 0xEu, 0xEu));
                CU_ASSERT(check_twin(g, gpus[m], 1, levels, r, 0u, 0u));
                /* a ZeRO stage of the twin's family not derived with the
                 * forced build: the twin is built */
                CU_ASSERT(!check_twin(g, gpus[m], 0, levels, r, 0x2u, 0x6u));
            }
        }
    approf_graph_free(&g);
}

/* A wide MLP at batch 8 on 8 GPUs: the unforced optimum splits the
 * weights, so the twin is not taken, and it still equals the fresh
 * build. */
static void test_other_solution(void)
{
    ApprofGraph *g = zoo_fixture_mlp(8, 8192);
    for (int r = COSTDB_RECOMPUTE_NONE; r <= COSTDB_RECOMPUTE_FULL; r += 2) {
        CU_ASSERT(!check_twin(g, 8, 0, 1, r, 0xEu, 0xEu));
        CU_ASSERT(!check_twin(g, 8, 1, 2, r, 0u, 0u));
    }
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the same solution: the forced build taken, equal to a fresh unforced build",
         test_same_solution},
        {"another solution: nothing taken, equal to a fresh unforced build", test_other_solution},
    };
    return CUNIT_RUN("forced build taken by its unforced twin", tests);
}
