/* approf_shard_program_key_view (memo.c), which the sweep asks once per
 * tuple (sweep_tuple.c): the key and tensor order of
 * approf_shard_program_key, and the order it lends stays as it was across
 * the build of the same request (the sweep reads it after the build, to
 * record the stage's template). */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "graph.h"
#include "hardware.h"
#include "model/zoo.h"
#include "sharding/sharding.h"
#include "stage.h"

/* One layer per operator: any range of operators is a stage. */
static void one_layer_per_op(const ApprofGraph *g, ApprofLayering *l, int *begin, int *end)
{
    l->n_layers = (int)g->n_ops;
    l->op_begin = begin;
    l->op_end = end;
    for (size_t i = 0; i < g->n_ops; i++) {
        begin[i] = (int)i;
        end[i] = (int)i + 1;
    }
    snprintf(l->option, sizeof(l->option), "manual");
}

static void test_view_as_copy(void)
{
    ApprofZooOptions o;
    ApprofGraph *g = NULL;
    ApprofHardwareSpec hw;
    ApprofLayering l;
    char err[256];
    memset(&o, 0, sizeof o);
    o.hidden = 64;
    o.num_layers = 4;
    o.batch = 16;
    CU_ASSERT_FATAL(approf_zoo_build("mlp", &o, &g, err, sizeof err) == 0);
    int n = (int)g->n_ops;
    int *begin = calloc(g->n_ops, sizeof(int)), *endv = calloc(g->n_ops, sizeof(int));
    int *lent = calloc(g->n_tensors, sizeof(int));
    ApprofShardContext *view_ctx = NULL, *copy_ctx = NULL;
    const int cfg[][7] = {/* hosts gpus a b force recompute zero */
                          {1, 4, 4, 1, -1, 0, 0}, {1, 4, 2, 2, -1, 0, 0},
                          {1, 4, 4, 1, 0, COSTDB_RECOMPUTE_FULL, 0}, {1, 4, 4, 1, -1, 0, 3},
                          {2, 4, 4, 2, -1, 0, 0}};
    int checked = 0;
    CU_ASSERT_FATAL(begin && endv && lent);
    CU_ASSERT_FATAL(approf_hardware_builtin("a100-40g", &hw) == 0);
    one_layer_per_op(g, &l, begin, endv);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &view_ctx) == 0);
    CU_ASSERT_FATAL(approf_shard_context_new(g, &l, &hw, 4, &copy_ctx) == 0);
    for (int start = 0; start < n; start++)
        for (int end = start; end < n; end++)
            for (size_t c = 0; c < sizeof(cfg) / sizeof(cfg[0]); c++) {
                ApprofShardRequest req = {start, end, cfg[c][0], cfg[c][1], cfg[c][2],
                                          cfg[c][3], cfg[c][4],
                                          APPROF_ILP_ELIMINATE_TREES_THEN_CBC,
                                          {0, cfg[c][5], cfg[c][6]}, 2};
                uint64_t kv[2] = {0, 0}, kc[2] = {1, 1};
                const int *view = NULL;
                int *copy = NULL, nv = -1, nc = -2;
                ApprofStageProgram p;
                CU_ASSERT_FATAL(approf_shard_program_key_view(view_ctx, &req, kv, &view, &nv) ==
                                0);
                CU_ASSERT_FATAL(approf_shard_program_key(copy_ctx, &req, kc, &copy, &nc) == 0);
                CU_ASSERT_EQUAL(kv[0], kc[0]);
                CU_ASSERT_EQUAL(kv[1], kc[1]);
                CU_ASSERT_FATAL(nv == nc && nv > 0 && (size_t)nv <= g->n_tensors);
                CU_ASSERT(memcmp(view, copy, (size_t)nv * sizeof(int)) == 0);
                memcpy(lent, view, (size_t)nv * sizeof(int));
                /* the sweep's build between the key and the template's record */
                memset(&p, 0, sizeof p);
                (void)approf_shard_stage(view_ctx, &req, &p, err, sizeof err);
                approf_stage_program_clear(&p);
                CU_ASSERT(memcmp(view, lent, (size_t)nv * sizeof(int)) == 0);
                free(copy);
                checked++;
            }
    CU_ASSERT(checked == 5 * n * (n + 1) / 2);
    approf_shard_context_free(&view_ctx);
    approf_shard_context_free(&copy_ctx);
    free(lent);
    free(begin);
    free(endv);
    approf_graph_free(&g);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"the lent tensor order is the copy's, and lasts the build", test_view_as_copy},
    };
    return CUNIT_RUN("sweep_program_key_view", tests);
}
