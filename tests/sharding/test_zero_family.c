/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ZeRO variants derived from one build of their stage
 * (ApprofShardRequest.zero_family, profiler/sharding/zero_family.c;
 * docs/performance.md, "ZeRO variants derived"): each derived program
 * equals the one built for its request after the ZeRO-0 build, as the
 * sweep asked for it before — signature, kernels,
 * collectives, apply-grad collectives and every memory field — on meshes
 * with and without data-parallel replicas, with and without recomputation,
 * at two memory levels; a derived program is answered from the context
 * (it carries no placements, which are its group owner's), and it also
 * equals its request built alone in a fresh context: the sharding ILP
 * reads nothing of the variant, so a stage's solution does not depend on
 * which stages the context solved before it (docs/variants.md,
 * "Determinism across shards"). The derived
 * programs hold the build's forward kernels and, where their gradient
 * accumulation is the same (ZeRO 1 with 0, 3 with 2), its backward
 * (docs/performance.md, "Shared kernel arrays and prices kept"): each still equals its
 * fresh build field by field, whatever order the programs are freed in;
 * under grad_accum_fusion (which changes the backward's GEMMs) nothing is
 * shared and they are still equal. The recomputation modes of a memory
 * level built one after another hold the first build's forward
 * (program_held.c; docs/performance.md, "One forward for the
 * recomputation modes") and equal the programs built alone. Where the
 * requests take kernel views, ZeRO 2 and 3 read the build's backward in
 * place (a head) and still equal, and are priced as, the fresh builds.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"
#include "zoo_fixture.h"

typedef struct {
    ApprofLayering l;
    int begin, end;
    ApprofHardwareSpec hw;
} Setup;

static void setup(Setup *s, const ApprofGraph *g)
{
    memset(s, 0, sizeof *s);
    s->end = (int)g->n_ops;
    s->l.n_layers = 1;
    s->l.op_begin = &s->begin;
    s->l.op_end = &s->end;
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &s->hw) == 0);
}

static ApprofShardRequest request(int a, int b, int level, int recompute, int zero)
{
    ApprofShardRequest req;
    memset(&req, 0, sizeof req);
    req.mesh_hosts = 1;
    req.mesh_gpus = a * b;
    req.logical_a = a;
    req.logical_b = b;
    req.force_batch_dim = 0;
    req.method = APPROF_ILP_SERIES_PARALLEL;
    req.variant.memory_level = level;
    req.memory_levels = 2;
    req.variant.recompute = recompute;
    req.variant.zero = zero;
    return req;
}

/* Builds (a, b, level, recompute) at ZeRO 0 in a new context, asking for
 * the ZeRO stages of family to be derived; *ctx keeps the context. */
static int build_zero0(const ApprofGraph *g, Setup *s, ApprofShardContext **ctx, int a, int b,
                       int level, int recompute, unsigned family)
{
    ApprofStageProgram p;
    char err[256];
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s->l, &s->hw, 4, ctx) == 0);
    ApprofShardRequest req = request(a, b, level, recompute, 0);
    req.zero_family = family;
    memset(&p, 0, sizeof p);
    int rc = approf_shard_stage(*ctx, &req, &p, err, sizeof err);
    if (!rc)
        CU_ASSERT(p.n_placements > 0);
    approf_stage_program_clear(&p);
    return rc;
}

/* ZeRO 1..3 of (a, b) at level and recompute, after its ZeRO-0 build as
 * the sweep asks for them: derived from that build in one context, built
 * one by one after it in another, and built alone in a fresh context. */
static void check_family(const ApprofGraph *g, int a, int b, int level, int recompute)
{
    Setup s;
    ApprofShardContext *fam = NULL, *one = NULL, *alone = NULL;
    setup(&s, g);
    int r1 = build_zero0(g, &s, &fam, a, b, level, recompute, 0xEu);
    int r2 = build_zero0(g, &s, &one, a, b, level, recompute, 0u);
    CU_ASSERT_EQUAL(r1, r2);
    /* selective recomputation of a stage without attention: no family */
    CU_ASSERT(!r1 || r1 == APPROF_ENOVARIANT);
    for (int z = 1; z <= 3 && !r1 && !r2; z++) {
        ApprofStageProgram d, p, q;
        char e1[256] = "", e2[256] = "", e3[256] = "";
        ApprofShardRequest rz = request(a, b, level, recompute, z);
        memset(&d, 0, sizeof d);
        memset(&p, 0, sizeof p);
        memset(&q, 0, sizeof q);
        int rd = approf_shard_stage(fam, &rz, &d, e1, sizeof e1);
        int rb = approf_shard_stage(one, &rz, &p, e2, sizeof e2);
        CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &alone) == 0);
        int rq = approf_shard_stage(alone, &rz, &q, e3, sizeof e3);
        approf_shard_context_free(&alone);
        CU_ASSERT_EQUAL(rd, rb);
        CU_ASSERT_EQUAL(rq, rb);
        CU_ASSERT_STRING_EQUAL(e1, e2);
        CU_ASSERT_STRING_EQUAL(e3, e2);
        if (!rd && !rb) {
            zoo_fixture_same_program(&d, &p, 0);
            CU_ASSERT_EQUAL(d.n_placements, 0); /* answered from the family */
            CU_ASSERT(p.n_placements > 0);
        }
        if (!rq && !rb)
            zoo_fixture_same_program(&q, &p, 0);
        approf_stage_program_clear(&d);
        approf_stage_program_clear(&p);
        approf_stage_program_clear(&q);
    }
    approf_shard_context_free(&fam);
    approf_shard_context_free(&one);
}

/* Builds (a, b) at ZeRO 0 in a context that derives ZeRO 1..3, keeping the
 * ZeRO-0 program and the derived ones side by side: the derived programs
 * hold the shared arrays (fusion: none) and equal the programs built one
 * by one in another context; freed in an order other than built. */
static void check_shared(const ApprofGraph *g, int a, int b, int recompute, int fusion)
{
    Setup s;
    ApprofShardContext *fam = NULL, *one = NULL;
    ApprofStageProgram p, d[4], f[4];
    char err[256];
    setup(&s, g);
    s.hw.grad_accum_fusion = fusion;
    memset(d, 0, sizeof d);
    memset(f, 0, sizeof f);
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &fam) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &one) == 0);
    ApprofShardRequest req = request(a, b, 0, recompute, 0);
    req.zero_family = 0xEu;
    CU_ASSERT_FATAL(approf_shard_stage(fam, &req, &p, err, sizeof err) == 0);
    req.zero_family = 0;
    CU_ASSERT_FATAL(approf_shard_stage(one, &req, &f[0], err, sizeof err) == 0);
    zoo_fixture_same_program(&p, &f[0], 0);
    for (int z = 1; z <= 3; z++) {
        ApprofShardRequest rz = request(a, b, 0, recompute, z);
        CU_ASSERT_FATAL(approf_shard_stage(fam, &rz, &d[z], err, sizeof err) == 0);
        CU_ASSERT_FATAL(approf_shard_stage(one, &rz, &f[z], err, sizeof err) == 0);
        zoo_fixture_same_program(&d[z], &f[z], 0);
        /* built alone: no backward shared (its forward is kept for the
         * stage's other recomputation modes, program_held.c), but on the
         * (n m, 1) mesh, where its arrays are kept for its unforced twin
         * (program_twin.c) */
        CU_ASSERT_EQUAL(f[z].kernel_share[1] != NULL, b == 1);
        /* the forward is the build's, for every ZeRO stage */
        CU_ASSERT_EQUAL(d[z].kernels[0] == p.kernels[0], !fusion);
    }
    /* ZeRO 1 ends with ZeRO 0's accumulation, 3 with 2's; 2 with its own */
    CU_ASSERT_EQUAL(d[1].kernels[1] == p.kernels[1], !fusion);
    CU_ASSERT_EQUAL(d[3].kernels[1] == d[2].kernels[1], !fusion);
    CU_ASSERT(d[2].kernels[1] != p.kernels[1]);
    CU_ASSERT(d[2].n_kernels[1] == p.n_kernels[1]);
    /* ZeRO 1's end appends no collective, 2's none to the forward: they
     * read the build's in place (ZeroTail.colls), its first n_colls; 2's
     * backward appends a reduce-scatter to a copy (fusion: all copies) */
    for (int ph = 0; ph < 2; ph++)
        CU_ASSERT_EQUAL(d[1].coll_share[ph] && d[1].colls[ph] == p.colls[ph] &&
                            d[1].n_colls[ph] <= p.n_colls[ph],
                        !fusion || !p.colls[ph]);
    CU_ASSERT_EQUAL(d[2].colls[0] == p.colls[0], !fusion || !p.colls[0]);
    CU_ASSERT(d[2].colls[1] != p.colls[1]);
    approf_stage_program_clear(&d[2]);
    approf_stage_program_clear(&p);
    zoo_fixture_same_program(&d[3], &f[3], 0); /* still there with its first holders gone */
    zoo_fixture_same_program(&d[1], &f[1], 0);
    approf_stage_program_clear(&d[1]);
    approf_stage_program_clear(&d[3]);
    for (int z = 0; z < 4; z++)
        approf_stage_program_clear(&f[z]);
    approf_shard_context_free(&fam);
    approf_shard_context_free(&one);
}

/* The kernels of d's phase ph, a head's first (stage.h, kernel_head),
 * equal b's, which has no head. */
static void same_phase_kernels(const ApprofStageProgram *d, const ApprofStageProgram *b, int ph)
{
    CU_ASSERT_EQUAL(b->n_kernel_head[ph], 0);
    CU_ASSERT_FATAL(approf_phase_kernel_count(d, ph) == b->n_kernels[ph]);
    for (size_t i = 0; i < b->n_kernels[ph]; i++)
        CU_ASSERT(!memcmp(approf_phase_kernel(d, ph, i), &b->kernels[ph][i], sizeof b->kernels[ph][i]));
}

/* Prices of d's phases (one memo through the family, as the sweep's) and
 * of b's (none) bit for bit equal. */
static void same_prices(const ApprofHardwareSpec *hw, ApprofPriceMemo **memo,
                        const ApprofStageProgram *d, const ApprofStageProgram *b)
{
    for (int ph = 0; ph < 2; ph++) {
        double x = approf_phase_seconds_memo(hw, d, ph, memo), y = approf_phase_seconds(hw, b, ph);
        CU_ASSERT(!memcmp(&x, &y, sizeof x));
    }
    double bw = approf_phase_seconds(hw, b, 1);
    double x = approf_wgrad_seconds_memo(hw, d, 1.0, &bw, memo);
    double y = approf_wgrad_seconds_memo(hw, b, 1.0, &bw, NULL);
    CU_ASSERT(!memcmp(&x, &y, sizeof x));
}

/* ZeRO 0..3 of (a, b) in a context whose requests take kernel views
 * (ApprofShardRequest.kernel_views; docs/performance.md, "The derived
 * backwards read in place"): ZeRO 2 and 3 read the build's backward in
 * place as their head (none under grad_accum_fusion), and every program
 * equals the one built alone kernel by kernel, in its signature and in
 * its prices, memo or not (the memo's sums up to the head's end); after
 * the build is freed the heads are still read; a copy, a flattened
 * program and a program asked for without views have no head and equal
 * the fresh build. */
static void check_views(const ApprofGraph *g, int a, int b, int recompute, int fusion)
{
    Setup s;
    ApprofShardContext *fam = NULL, *one = NULL;
    ApprofStageProgram p, d[4], f[4], c;
    ApprofPriceMemo *memo = NULL;
    char err[256];
    setup(&s, g);
    s.hw.grad_accum_fusion = fusion;
    memset(d, 0, sizeof d);
    memset(f, 0, sizeof f);
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &fam) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &one) == 0);
    ApprofShardRequest req = request(a, b, 0, recompute, 0);
    req.zero_family = 0xEu;
    req.kernel_views = 1;
    CU_ASSERT_FATAL(approf_shard_stage(fam, &req, &p, err, sizeof err) == 0);
    req.zero_family = 0;
    req.kernel_views = 0;
    CU_ASSERT_FATAL(approf_shard_stage(one, &req, &f[0], err, sizeof err) == 0);
    zoo_fixture_same_program(&p, &f[0], 0);
    same_prices(&s.hw, &memo, &p, &f[0]);
    for (int z = 1; z <= 3; z++) {
        ApprofShardRequest rz = request(a, b, 0, recompute, z);
        rz.kernel_views = 1;
        CU_ASSERT_FATAL(approf_shard_stage(fam, &rz, &d[z], err, sizeof err) == 0);
        rz.kernel_views = 0;
        CU_ASSERT_FATAL(approf_shard_stage(one, &rz, &f[z], err, sizeof err) == 0);
        CU_ASSERT_STRING_EQUAL(d[z].signature, f[z].signature);
        same_phase_kernels(&d[z], &f[z], 0);
        same_phase_kernels(&d[z], &f[z], 1);
        same_prices(&s.hw, &memo, &d[z], &f[z]);
        CU_ASSERT_EQUAL(d[z].n_kernel_head[0], 0);
        /* ZeRO 2's partition accumulates after the build's backward,
         * read in place; ZeRO 1 holds the build's whole backward */
        if (z >= 2 && !fusion) {
            CU_ASSERT_FATAL(d[z].n_kernel_head[1] > 0);
            CU_ASSERT(d[z].kernel_head[1] == p.kernels[1]);
            CU_ASSERT(d[z].n_kernel_head[1] < p.n_kernels[1]);
        } else {
            CU_ASSERT_EQUAL(d[z].n_kernel_head[1], 0);
        }
    }
    CU_ASSERT_EQUAL(d[3].kernels[1] == d[2].kernels[1], !fusion);
    approf_stage_program_clear(&p); /* the heads' first holder gone */
    CU_ASSERT_FATAL(approf_stage_program_copy(&c, &d[2]) == 0);
    CU_ASSERT(c.n_kernel_head[1] == 0 && c.head_share[1] == NULL);
    zoo_fixture_same_program(&c, &f[2], 0);
    approf_stage_program_clear(&c);
    approf_stage_program_clear(&d[2]);
    same_phase_kernels(&d[3], &f[3], 1);
    CU_ASSERT_FATAL(approf_stage_program_flatten(&d[3]) == 0);
    CU_ASSERT(d[3].n_kernel_head[1] == 0 && d[3].head_share[1] == NULL);
    zoo_fixture_same_program(&d[3], &f[3], 0);
    /* the family asked for without views: no head */
    ApprofStageProgram q;
    memset(&q, 0, sizeof q);
    req = request(a, b, 1, recompute, 0);
    req.zero_family = 0x4u;
    req.kernel_views = 1;
    int rc = approf_shard_stage(fam, &req, &q, err, sizeof err);
    approf_stage_program_clear(&q);
    ApprofShardRequest r2 = request(a, b, 1, recompute, 2);
    if (!rc && approf_shard_stage(fam, &r2, &q, err, sizeof err) == 0) {
        CU_ASSERT(q.n_kernel_head[1] == 0 && q.head_share[1] == NULL);
        ApprofStageProgram o;
        memset(&o, 0, sizeof o);
        CU_ASSERT_FATAL(approf_shard_stage(one, &r2, &o, err, sizeof err) == 0);
        zoo_fixture_same_program(&q, &o, 0);
        approf_stage_program_clear(&o);
    }
    approf_stage_program_clear(&q);
    for (int z = 0; z < 4; z++) {
        approf_stage_program_clear(&d[z]);
        approf_stage_program_clear(&f[z]);
    }
    approf_price_memo_free(memo);
    approf_shard_context_free(&fam);
    approf_shard_context_free(&one);
}

/* check on a two-layer GPT for each mesh shape, recomputation and
 * fusion choice. */
static void each_case(void (*check)(const ApprofGraph *, int, int, int, int))
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    static const int meshes[][2] = {{8, 1}, {2, 4}};
    for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
        for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++)
            for (int fusion = 0; fusion < 2; fusion++)
                check(g, meshes[m][0], meshes[m][1], r, fusion);
    approf_graph_free(&g);
}

static void test_shared_arrays(void)
{
    each_case(check_shared);
}

static void test_kernel_views(void)
{
    each_case(check_views);
}

/* A copy of a program that holds shared kernels owns its arrays. */
static void test_copy_owns(void)
{
    ApprofGraph *g = zoo_fixture_gpt(1);
    Setup s;
    ApprofShardContext *ctx = NULL;
    ApprofStageProgram p, d, c;
    char err[256];
    setup(&s, g);
    memset(&p, 0, sizeof p);
    memset(&d, 0, sizeof d);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    ApprofShardRequest req = request(8, 1, 0, COSTDB_RECOMPUTE_NONE, 0);
    req.zero_family = 0x2u;
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &req, &p, err, sizeof err) == 0);
    ApprofShardRequest r1 = request(8, 1, 0, COSTDB_RECOMPUTE_NONE, 1);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &r1, &d, err, sizeof err) == 0);
    CU_ASSERT_FATAL(d.kernel_share[0] != NULL && d.kernels[0] == p.kernels[0]);
    CU_ASSERT_FATAL(approf_stage_program_copy(&c, &d) == 0);
    CU_ASSERT(c.kernel_share[0] == NULL && c.kernel_share[1] == NULL);
    CU_ASSERT(c.kernels[0] != d.kernels[0]);
    approf_stage_program_clear(&p);
    approf_stage_program_clear(&d);
    CU_ASSERT_FATAL(c.n_kernels[0] > 0);
    CU_ASSERT_EQUAL(c.kernels[0][c.n_kernels[0] - 1].op >= 0, 1); /* readable after both */
    approf_stage_program_clear(&c);
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

static void test_derived_equal_built(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    static const int meshes[][2] = {{8, 1}, {2, 4}, {1, 8}, {1, 1}};
    for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
        for (int level = 0; level < 2; level++)
            for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++)
                check_family(g, meshes[m][0], meshes[m][1], level, r);
    approf_graph_free(&g);
}

/* One GPU has no data-parallel replicas: every derived ZeRO stage is
 * refused as its own build is, with the same message. */
static void test_no_replicas(void)
{
    ApprofGraph *g = zoo_fixture_gpt(1);
    Setup s;
    ApprofShardContext *ctx = NULL;
    ApprofStageProgram p;
    char err[256];
    setup(&s, g);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    ApprofShardRequest req = request(1, 1, 0, COSTDB_RECOMPUTE_NONE, 0);
    req.zero_family = 0xEu;
    memset(&p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_stage(ctx, &req, &p, err, sizeof err) == 0);
    approf_stage_program_clear(&p);
    for (int z = 1; z <= 3; z++) {
        ApprofShardRequest rz = request(1, 1, 0, COSTDB_RECOMPUTE_NONE, z);
        err[0] = '\0';
        CU_ASSERT_EQUAL(approf_shard_stage(ctx, &rz, &p, err, sizeof err), APPROF_ENOVARIANT);
        CU_ASSERT_STRING_EQUAL(err, "ZeRO: the stage has no data-parallel replicas");
    }
    approf_shard_context_free(&ctx);
    approf_graph_free(&g);
}

/* The recomputation modes of one memory level built one after another in
 * one context hold the first build's forward (program_held.c) and equal
 * the programs built alone in fresh contexts, whatever order they are
 * freed in; another memory level (another sharding solution, when the
 * stage has one) or another ZeRO stage does not take it. */
static void check_held_forward(const ApprofGraph *g, int a, int b, int level)
{
    Setup s;
    ApprofShardContext *ctx = NULL;
    ApprofStageProgram p[COSTDB_RECOMPUTE_COUNT], f;
    int rc[COSTDB_RECOMPUTE_COUNT];
    char err[256];
    setup(&s, g);
    memset(p, 0, sizeof p);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &ctx) == 0);
    /* a context keeps a build's tensor facts for the other modes once it
     * was asked for a recomputation (program.c): another stage's first */
    ApprofShardRequest warm = request(a, b, 0, COSTDB_RECOMPUTE_FULL, 0);
    warm.force_batch_dim = -1;
    memset(&f, 0, sizeof f);
    CU_ASSERT_EQUAL(approf_shard_stage(ctx, &warm, &f, err, sizeof err), 0);
    approf_stage_program_clear(&f);
    for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++) {
        ApprofShardRequest req = request(a, b, level, r, 0);
        rc[r] = approf_shard_stage(ctx, &req, &p[r], err, sizeof err);
        CU_ASSERT(!rc[r] || rc[r] == APPROF_ENOVARIANT);
    }
    if (rc[COSTDB_RECOMPUTE_NONE]) { /* one sharding point: no such level */
        for (int r = 0; r < COSTDB_RECOMPUTE_COUNT; r++)
            CU_ASSERT_EQUAL(rc[r], APPROF_ENOVARIANT);
        approf_shard_context_free(&ctx);
        return;
    }
    /* selective and full hold it; full, the last of the sweep's order
     * (--variants all), lets it go, so op after it pushes its own */
    for (int r = 1; r < COSTDB_RECOMPUTE_COUNT; r++)
        if (!rc[r])
            CU_ASSERT_EQUAL(p[r].kernels[0] == p[0].kernels[0], r <= COSTDB_RECOMPUTE_FULL);
    /* a ZeRO stage of its own keys its own forward */
    ApprofStageProgram z;
    ApprofShardRequest rz = request(a, b, level, COSTDB_RECOMPUTE_FULL, 1);
    memset(&z, 0, sizeof z);
    if (a * b > 1 && approf_shard_stage(ctx, &rz, &z, err, sizeof err) == 0)
        CU_ASSERT(z.kernels[0] != p[0].kernels[0]);
    approf_stage_program_clear(&z);
    approf_stage_program_clear(&p[0]); /* the first holder gone */
    for (int r = 1; r < COSTDB_RECOMPUTE_COUNT; r++) {
        ApprofShardContext *one = NULL;
        ApprofShardRequest req = request(a, b, level, r, 0);
        memset(&f, 0, sizeof f);
        CU_ASSERT_FATAL(approf_shard_context_new(g, &s.l, &s.hw, 4, &one) == 0);
        CU_ASSERT_EQUAL(approf_shard_stage(one, &req, &f, err, sizeof err), rc[r]);
        if (!rc[r]) {
            /* selective copies the first build's tensor facts and
             * placements, full takes them (program_held.c) */
            zoo_fixture_same_program(&p[r], &f, 1);
            CU_ASSERT(p[r].n_placements > 0);
        }
        approf_stage_program_clear(&f);
        approf_stage_program_clear(&p[r]);
        approf_shard_context_free(&one);
    }
    approf_shard_context_free(&ctx);
}

static void test_held_forward(void)
{
    ApprofGraph *g = zoo_fixture_gpt(2);
    static const int meshes[][2] = {{8, 1}, {2, 4}, {1, 8}, {1, 1}};
    for (size_t m = 0; m < sizeof meshes / sizeof meshes[0]; m++)
        for (int level = 0; level < 2; level++)
            check_held_forward(g, meshes[m][0], meshes[m][1], level);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"derived programs equal the programs built alone", test_derived_equal_built},
        {"no replicas: derived refusals equal the built ones", test_no_replicas},
        {"shared kernel arrays: held, equal to fresh builds", test_shared_arrays},
        {"a copy of a program with shared kernels owns its arrays", test_copy_owns},
        {"kernel views: heads read in place, equal to fresh builds and priced alike",
         test_kernel_views},
        {"recomputation modes hold one forward, equal to fresh builds (and their tensor facts "
         "and placements)", test_held_forward},
    };
    return CUNIT_RUN("ZeRO variants derived", tests);
}
