/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sharding ILP of mixture-of-experts stages (zoo mixtral and
 * deepseek_moe, two blocks each, cut into layers as approf sweep cuts them)
 * is solved by the exact elimination alone (the twin-pair rule of
 * profiler/sharding/ilp_elim.c): every layer range on every mesh reaches no
 * CBC with the series-parallel method, along the time-versus-memory Pareto
 * set too, and its optimum equals CBC's (--sharding-solver cbc, which sends
 * the core to CBC).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

static ApprofGraph *build(const char *name, const char *preset)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    char err[256];
    memset(&o, 0, sizeof(o));
    o.preset = preset;
    o.num_layers = 2;
    o.batch = 2;
    o.seq_len = 512;
    o.dtype = "bf16";
    int rc = approf_zoo_build(name, &o, &g, err, sizeof(err));
    if (rc)
        fprintf(stderr, "%s: %s\n", name, err);
    CU_ASSERT_FATAL(rc == 0);
    return g;
}

typedef struct Solve {
    int rc;
    double time[3];
    int points;
    size_t cbc_runs;
} Solve;

/* One stage with a fresh context (no cache shared between methods); the
 * times of memory levels 0..levels-1 where the Pareto set has them. */
static Solve solve(const ApprofGraph *g, const ApprofLayering *l, const ApprofHardwareSpec *hw,
                   const ApprofShardRequest *base, ApprofIlpMethod method, int levels)
{
    Solve s;
    ApprofShardContext *ctx = NULL;
    char err[256];
    memset(&s, 0, sizeof(s));
    CU_ASSERT_FATAL(approf_shard_context_new(g, l, hw, 4, &ctx) == 0);
    for (int lvl = 0; lvl < levels; lvl++) {
        ApprofShardRequest req = *base;
        ApprofStageProgram p;
        memset(&p, 0, sizeof(p));
        req.method = method;
        req.memory_levels = levels;
        req.variant.memory_level = lvl;
        int rc = approf_shard_stage(ctx, &req, &p, err, sizeof(err));
        if (lvl == 0)
            s.rc = rc;
        if (rc) {
            if (lvl == 0 || rc != APPROF_ENOVARIANT)
                fprintf(stderr, "stage %d..%d: %s\n", req.start_layer, req.end_layer, err);
            break;
        }
        s.time[lvl] = p.ilp_objective;
        s.points = lvl + 1;
        approf_stage_program_clear(&p);
    }
    ApprofShardStats st;
    approf_shard_context_stats(ctx, &st);
    s.cbc_runs = st.cbc_runs;
    approf_shard_context_free(&ctx);
    return s;
}

static void check_model(const char *name, const char *preset)
{
    ApprofGraph *g = build(name, preset);
    ApprofLayering l;
    ApprofHardwareSpec hw;
    CU_ASSERT_FATAL(approf_hardware_builtin("h100-sxm", &hw) == 0);
    CU_ASSERT_FATAL(approf_layers_auto(g, 4, 0.5, &l) == 0);
    /* hosts, gpus, logical a x b, forced batch axis */
    const int meshes[][5] = {{1, 2, 2, 1, -1}, {1, 4, 2, 2, 0}, {1, 8, 1, 8, -1}, {2, 8, 2, 8, -1}};
    int stages = 0;
    size_t cores = 0;
    for (size_t m = 0; m < sizeof(meshes) / sizeof(meshes[0]); m++)
        for (int a = 0; a < l.n_layers; a++)
            for (int b = a; b < l.n_layers; b++) {
                ApprofShardRequest req;
                memset(&req, 0, sizeof(req));
                req.start_layer = a;
                req.end_layer = b;
                req.mesh_hosts = meshes[m][0];
                req.mesh_gpus = meshes[m][1];
                req.logical_a = meshes[m][2];
                req.logical_b = meshes[m][3];
                req.force_batch_dim = meshes[m][4];
                Solve sp = solve(g, &l, &hw, &req, APPROF_ILP_SERIES_PARALLEL, 3);
                Solve trees = solve(g, &l, &hw, &req, APPROF_ILP_ELIMINATE_TREES_THEN_CBC, 1);
                CU_ASSERT_EQUAL(sp.rc, trees.rc);
                CU_ASSERT_EQUAL(sp.cbc_runs, 0);
                if (sp.rc || trees.rc)
                    continue;
                stages++;
                CU_ASSERT_DOUBLE_EQUAL(sp.time[0], trees.time[0], 1e-9 * sp.time[0]);
                cores += trees.cbc_runs;
            }
    CU_ASSERT(stages >= 30);
    /* the trees-only method needs CBC on these stages (with CBC) */
    if (approf_ilp_have_cbc())
        CU_ASSERT(cores >= (size_t)stages / 2);
    approf_layering_free(&l);
    approf_graph_free(&g);
}

static void test_mixtral(void)
{
    check_model("mixtral", "mixtral-8x7b");
}

static void test_deepseek_moe(void)
{
    check_model("deepseek_moe", "deepseek-moe-16b");
}

int main(void)
{
    static const CunitTest tests[] = {
        {"mixtral stages without CBC, CBC's optimum", test_mixtral},
        {"deepseek-moe stages (shared experts)", test_deepseek_moe},
    };
    return CUNIT_RUN("moe stage", tests);
}
