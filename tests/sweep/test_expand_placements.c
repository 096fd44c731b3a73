/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The writer thread's expansion of compact placement rows into costdb rows
 * (approf_sweep_expand_placements, profiler/sweep/sweep_tuple.c): with the
 * writer's per-tensor flags a tensor's name, shape and dtype are given on
 * its first row only (costdb_placements_put reads them only for a tensor
 * the sweep does not hold yet), every row keeps its key, role and spec,
 * and a database written so holds what complete rows give it.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "cunit_run.h"
#include "sweep/sweep_int.h"
#include "testutil.h"

static ApprofGraph *graph;
static char shapes[3][COSTDB_NAME_MAX] = {"64,32", "8,64", "8,32"};

static void make_sweep(Sweep *sw, ApprofTuple *t)
{
    static const char *const names[] = {"w", "x", "y"};
    static const int64_t dims[3][2] = {{64, 32}, {8, 64}, {8, 32}};
    if (!graph) {
        CU_ASSERT_EQUAL_FATAL(approf_graph_new("expand", APPROF_BF16, 8, &graph), 0);
        for (int i = 0; i < 3; i++)
            CU_ASSERT_EQUAL_FATAL(approf_graph_add_tensor(graph, names[i],
                                                          i ? APPROF_TENSOR_INPUT
                                                            : APPROF_TENSOR_PARAM,
                                                          APPROF_BF16, 2, dims[i], -1),
                                  i);
    }
    memset(sw, 0, sizeof *sw);
    sw->graph = graph;
    sw->shape_texts = shapes;
    *t = (ApprofTuple){0};
    t->start = 1;
    t->end = 2;
    t->submesh = 0;
    t->config = 3;
}

static void check_row(const CostdbPlacement *p, const ApprofTuple *t, int tensor,
                      const char *role, const char *spec, int described)
{
    CU_ASSERT(p->start_layer == t->start && p->end_layer == t->end &&
              p->submesh_index == t->submesh && p->config_index == t->config);
    CU_ASSERT_EQUAL(p->tensor_index, tensor);
    CU_ASSERT_STRING_EQUAL(p->role, role);
    CU_ASSERT_STRING_EQUAL(p->sharding_spec, spec);
    if (described) {
        CU_ASSERT_STRING_EQUAL(p->tensor_name, graph->tensors[tensor].name);
        CU_ASSERT_STRING_EQUAL(p->shape, shapes[tensor]);
        CU_ASSERT_STRING_EQUAL(p->dtype, "bf16");
    } else {
        CU_ASSERT(!p->tensor_name[0] && !p->shape[0] && !p->dtype[0]);
    }
}

/* Rows of one tuple: the param w and input x share one interned spec (one
 * pointer, the copy path of a spec equal to the row before's), the output
 * y another. */
static int tuple_rows(ApprofSlotPlacement *in, const char *s0, const char *s1)
{
    unsigned short n0 = (unsigned short)strlen(s0), n1 = (unsigned short)strlen(s1);
    in[0] = (ApprofSlotPlacement){0, 0, n0, s0};
    in[1] = (ApprofSlotPlacement){1, 1, n0, s0};
    in[2] = (ApprofSlotPlacement){2, 2, n1, s1};
    return 3;
}

static void test_flags(void)
{
    Sweep sw;
    ApprofTuple t;
    ApprofSlotPlacement in[3];
    CostdbPlacement *rows = NULL;
    size_t cap = 0;
    unsigned char described[3] = {0, 0, 0};
    make_sweep(&sw, &t);
    int n = tuple_rows(in, "S0R", "RR");
    /* without flags: every row complete, twice */
    for (int pass = 0; pass < 2; pass++) {
        CU_ASSERT_EQUAL_FATAL(approf_sweep_expand_placements(&sw, &t, in, n, NULL, &rows, &cap), n);
        check_row(&rows[0], &t, 0, "param", "S0R", 1);
        check_row(&rows[1], &t, 1, "input", "S0R", 1);
        check_row(&rows[2], &t, 2, "output", "RR", 1);
    }
    /* with flags: only x is new in the first call */
    described[0] = described[2] = 1;
    CU_ASSERT_EQUAL_FATAL(approf_sweep_expand_placements(&sw, &t, in, n, described, &rows, &cap),
                          n);
    check_row(&rows[0], &t, 0, "param", "S0R", 0);
    check_row(&rows[1], &t, 1, "input", "S0R", 1);
    check_row(&rows[2], &t, 2, "output", "RR", 0);
    CU_ASSERT(described[0] && described[1] && described[2]);
    /* then none is; a longer spec after a shorter one, and the other way */
    n = tuple_rows(in, "S01", "S0S1R");
    in[1].spec = in[2].spec;
    in[1].spec_len = in[2].spec_len;
    CU_ASSERT_EQUAL_FATAL(approf_sweep_expand_placements(&sw, &t, in, n, described, &rows, &cap),
                          n);
    check_row(&rows[0], &t, 0, "param", "S01", 0);
    check_row(&rows[1], &t, 1, "input", "S0S1R", 0);
    check_row(&rows[2], &t, 2, "output", "S0S1R", 0);
    free(rows);
}

/* Stage (i, i, 0, 0)'s rows expanded with flags (described: NULL for
 * complete rows) and stored; the stored rows of every stage as text. */
static void store(const char *name, unsigned char *described, char *out, size_t outlen)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0}};
    Costdb *db = tu_open_new(name);
    CostdbSweep sw_row;
    Sweep sw;
    ApprofTuple t;
    ApprofSlotPlacement in[3];
    CostdbPlacement *rows = NULL, *got = NULL;
    size_t cap = 0, n_got = 0, at = 0;
    tu_sweep(&sw_row, "expand", 1, 2, 8, 2, 4);
    snprintf(sw_row.layer_option, sizeof sw_row.layer_option, "manual");
    snprintf(sw_row.submesh_space, sizeof sw_row.submesh_space, "all");
    snprintf(sw_row.logical_space, sizeof sw_row.logical_space, "all");
    sw_row.status = COSTDB_SWEEP_RUNNING;
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &sw_row, sm, 1, cf, 1), 0);
    make_sweep(&sw, &t);
    for (int i = 0; i < 4; i++) {
        t.start = t.end = i;
        t.config = 0;
        int n = tuple_rows(in, i % 2 ? "S0R" : "RS1", "RR");
        CU_ASSERT_EQUAL_FATAL(
            approf_sweep_expand_placements(&sw, &t, in + (i == 0), n - (i == 0), described,
                                           &rows, &cap),
            n - (i == 0));
        CU_ASSERT_EQUAL_FATAL(costdb_placements_put(db, sw_row.id, rows, (size_t)(n - (i == 0))),
                              0);
    }
    out[0] = '\0';
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL_FATAL(costdb_placements_get(db, sw_row.id, i, i, 0, 0, &got, &n_got), 0);
        for (size_t k = 0; k < n_got; k++)
            at += (size_t)snprintf(out + at, outlen - at, "%d %d %s %s %s %s %s;",
                                   got[k].start_layer, got[k].tensor_index, got[k].tensor_name,
                                   got[k].role, got[k].shape, got[k].dtype,
                                   got[k].sharding_spec);
        free(got);
        got = NULL;
    }
    free(rows);
    costdb_close(&db);
}

static void test_stored(void)
{
    char plain[4096], flagged[4096];
    unsigned char described[3] = {0, 0, 0};
    store("test_expand_placements_a.db", NULL, plain, sizeof plain);
    store("test_expand_placements_b.db", described, flagged, sizeof flagged);
    CU_ASSERT_STRING_EQUAL(plain, flagged);
    /* every tensor's texts are stored */
    CU_ASSERT_PTR_NOT_NULL(strstr(plain, "2 0 w param 64,32 bf16 RS1;"));
    CU_ASSERT_PTR_NOT_NULL(strstr(plain, "1 1 x input 8,64 bf16 S0R;"));
    CU_ASSERT_PTR_NOT_NULL(strstr(plain, "3 2 y output 8,32 bf16 RR;"));
}

int main(void)
{
    static const CunitTest tests[] = {
        {"flags: a tensor's texts on its first row", test_flags},
        {"a database written with flags equals one of complete rows", test_stored},
    };
    int rc = CUNIT_RUN("sweep expand placements", tests);
    approf_graph_free(&graph);
    return rc;
}
