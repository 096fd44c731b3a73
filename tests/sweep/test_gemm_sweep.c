/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sweep on a stored 'measured' hardware row (ApprofSweepConfig.hardware_id)
 * with a crafted GEMM rate table prices a GEMM-only program (a chain of
 * four bf16 matmuls) from the table: every forward entry is its layers'
 * FLOPs / rate, and the backward's GEMM part scales as 1 / rate; the sweep
 * records the row and the table's hash and says so in a notice. A row
 * without points prices as the spec's own row, bit for bit; an incomplete
 * grid is not used; an unknown row is refused; approf merge of two shards
 * carries the table along.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "cunit_run.h"

#include "costdb.h"
#include "sweep/merge.h"
#include "sweep/sweep.h"

static char dir[] = "/tmp/approf-gemm-sweep-XXXXXX";
static char db_path[300], model_path[300], merged_path[300], notices[4096];

static const char model_json[] =
    "{\"format\": \"approf-model\", \"version\": 1, \"name\": \"chain\", \"dtype\": \"bf16\","
    " \"batch_size\": 4096,"
    " \"tensors\": [{\"name\": \"x\", \"role\": \"input\", \"shape\": [4096, 2048], \"batch_dim\": 0},"
    "  {\"name\": \"w1\", \"role\": \"param\", \"shape\": [2048, 2048]},"
    "  {\"name\": \"w2\", \"role\": \"param\", \"shape\": [2048, 2048]},"
    "  {\"name\": \"w3\", \"role\": \"param\", \"shape\": [2048, 2048]},"
    "  {\"name\": \"w4\", \"role\": \"param\", \"shape\": [2048, 2048]}],"
    " \"ops\": [{\"name\": \"m1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"]},"
    "  {\"name\": \"m2\", \"op\": \"matmul\", \"inputs\": [\"m1:out0\", \"w2\"]},"
    "  {\"name\": \"m3\", \"op\": \"matmul\", \"inputs\": [\"m2:out0\", \"w3\"]},"
    "  {\"name\": \"m4\", \"op\": \"matmul\", \"inputs\": [\"m3:out0\", \"w4\"]}]}\n";

static void on_notice(void *ctx, const char *msg)
{
    size_t len = strlen(notices);
    (void)ctx;
    snprintf(notices + len, sizeof notices - len, "%s\n", msg);
}

static int setup(void)
{
    FILE *f;
    if (!mkdtemp(dir))
        return -1;
    snprintf(db_path, sizeof db_path, "%s/gemm.db", dir);
    snprintf(model_path, sizeof model_path, "%s/chain.json", dir);
    snprintf(merged_path, sizeof merged_path, "%s/merged.db", dir);
    f = fopen(model_path, "w");
    if (!f)
        return -1;
    fputs(model_json, f);
    return fclose(f);
}

static int teardown(void)
{
    static const char *const files[] = {"gemm.db", "gemm.db-wal", "gemm.db-shm", "chain.json",
                                        "merged.db", "merged.db-wal", "merged.db-shm"};
    char p[400];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    return rmdir(dir);
}

/* A measured row; with rate > 0 a bf16 grid 512 .. 16384 of that rate
 * (less its last point when incomplete). Its id. */
static int64_t measured_row(const char *fingerprint, double rate, int incomplete)
{
    static const int64_t g[2] = {512, 16384};
    Costdb *db = NULL;
    CostdbHardware hw;
    CostdbGemmPoint p[8];
    size_t n = 0;
    char err[512];
    CU_ASSERT_EQUAL_FATAL(costdb_open(db_path, 0, &db, err, sizeof err), 0);
    memset(&hw, 0, sizeof hw);
    snprintf(hw.fingerprint, sizeof hw.fingerprint, "%s", fingerprint);
    snprintf(hw.kind, sizeof hw.kind, "measured");
    snprintf(hw.gpu_model, sizeof hw.gpu_model, "Test GPU");
    hw.gpus_per_host = 8;
    hw.device_memory = (int64_t)80 << 30;
    CU_ASSERT_EQUAL_FATAL(costdb_hardware_upsert(db, &hw), 0);
    for (int a = 0; rate > 0 && a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++, n++) {
                memset(&p[n], 0, sizeof p[n]);
                snprintf(p[n].dtype, sizeof p[n].dtype, "bf16");
                p[n].m = g[a];
                p[n].n = g[b];
                p[n].k = g[c];
                p[n].rate = rate;
            }
    if (n)
        CU_ASSERT_EQUAL_FATAL(costdb_gemm_put(db, hw.id, p, incomplete ? n - 1 : n), 0);
    costdb_close(&db);
    return hw.id;
}

/* Runs the sweep (shard k of n) on hardware row id (0: the spec's); its
 * sweep id. */
static int64_t sweep_shard(int64_t hardware_id, int expect_rc, int k, int n)
{
    ApprofSweepConfig cfg;
    ApprofSweepCallbacks cb;
    ApprofSweepSummary sum;
    char err[1024] = "";
    int rc;
    memset(&cfg, 0, sizeof cfg);
    memset(&cb, 0, sizeof cb);
    cb.notice = on_notice;
    notices[0] = '\0';
    cfg.sharding_method = APPROF_ILP_SERIES_PARALLEL;
    cfg.db_path = db_path;
    cfg.model_file = model_path;
    cfg.layers = 2;
    cfg.eps = 0.5;
    cfg.cluster_hosts = 1;
    cfg.cluster_gpus = 1;
    cfg.global_batch = 4096;
    cfg.micro_batches = 1;
    cfg.dtype = APPROF_BF16;
    cfg.hardware = "h100-sxm";
    cfg.hardware_id = hardware_id;
    cfg.backend = "model";
    cfg.imbalance_tol = -1;
    cfg.shard_k = k;
    cfg.shard_n = n;
    cfg.tool_version = "test";
    rc = approf_sweep_run(&cfg, &cb, &sum, err, sizeof err);
    CU_ASSERT_EQUAL(rc, expect_rc);
    if (rc != expect_rc)
        printf("\nsweep on row %lld: %d %s\n", (long long)hardware_id, rc, err);
    if (rc != 0) {
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "no hardware row"));
        return 0;
    }
    return sum.sweep_id;
}

static int64_t sweep(int64_t hardware_id, int expect_rc)
{
    return sweep_shard(hardware_id, expect_rc, 0, 1);
}

typedef struct {
    CostdbSweep row;
    CostdbEntry *e;
    size_t n;
    double fwd_flops[8];
    int layers;
} Result;

static void result_in(const char *path, int64_t sweep_id, Result *r)
{
    Costdb *db = NULL;
    CostdbLayer *l = NULL;
    size_t nl = 0;
    memset(r, 0, sizeof *r);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_get(db, sweep_id, &r->row), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, sweep_id, &r->e, &r->n), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_model_layers(db, r->row.model_id, &l, &nl), 0);
    CU_ASSERT_FATAL(nl >= 2 && nl <= 8);
    for (size_t i = 0; i < nl; i++)
        r->fwd_flops[i] = l[i].fwd_flops;
    r->layers = (int)nl;
    free(l);
    costdb_close(&db);
}

static void result(int64_t sweep_id, Result *r)
{
    result_in(db_path, sweep_id, r);
}

static const CostdbEntry *find(const Result *r, int i, int j, int c, CostdbPhase ph)
{
    for (size_t k = 0; k < r->n; k++)
        if (r->e[k].start_layer == i && r->e[k].end_layer == j && r->e[k].submesh_index == 0 &&
            r->e[k].config_index == c && r->e[k].phase == ph)
            return &r->e[k];
    return NULL;
}

static void test_measured_row(void)
{
    const double rate = 1e12;
    int64_t table = measured_row("measured:Test GPU:table", rate, 0);
    int64_t table2 = measured_row("measured:Test GPU:table x2", 2 * rate, 0);
    int64_t table4 = measured_row("measured:Test GPU:table x4", 4 * rate, 0);
    int64_t bare = measured_row("measured:Test GPU:bare", 0, 0);
    int64_t holes = measured_row("measured:Test GPU:holes", rate, 1);
    Result a, a2, a4, b, s, h;
    int checked = 0;

    result(sweep(table, 0), &a);
    CU_ASSERT_EQUAL(a.row.hardware_id, table);
    CU_ASSERT_PTR_NOT_NULL(strstr(a.row.options, "\"gemm_table\":\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(notices, "GEMMs in bf16 from 8 measured shapes of hardware"));
    CU_ASSERT_PTR_NOT_NULL(strstr(notices, "hardware row"));
    CU_ASSERT_FATAL(a.n > 0);
    /* forward: the layers' FLOPs at the table's rate, nothing else */
    for (size_t k = 0; k < a.n; k++) {
        const CostdbEntry *e = &a.e[k];
        double flops = 0;
        if (e->phase != COSTDB_FWD || e->status != COSTDB_STATUS_OK)
            continue;
        for (int l = e->start_layer; l <= e->end_layer; l++)
            flops += a.fwd_flops[l];
        CU_ASSERT(flops > 0);
        CU_ASSERT_DOUBLE_EQUAL(e->compute_cost, flops / rate, 1e-12 * flops / rate);
        checked++;
    }
    CU_ASSERT(checked >= 2); /* the whole model on 1x1, two configs */

    /* the backward's GEMMs scale as 1 / rate (what is not a GEMM does not
     * change): c(r) - c(2r) = 2 (c(2r) - c(4r)) */
    result(sweep(table2, 0), &a2);
    result(sweep(table4, 0), &a4);
    checked = 0;
    for (size_t k = 0; k < a.n; k++) {
        const CostdbEntry *e = &a.e[k], *e2, *e4;
        if (e->phase != COSTDB_BWD || e->status != COSTDB_STATUS_OK)
            continue;
        e2 = find(&a2, e->start_layer, e->end_layer, e->config_index, COSTDB_BWD);
        e4 = find(&a4, e->start_layer, e->end_layer, e->config_index, COSTDB_BWD);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e4);
        CU_ASSERT(e2->compute_cost < e->compute_cost);
        CU_ASSERT_DOUBLE_EQUAL(e->compute_cost - e2->compute_cost,
                               2 * (e2->compute_cost - e4->compute_cost), 1e-9 * e->compute_cost);
        checked++;
    }
    CU_ASSERT(checked >= 2); /* the whole model on 1x1, two configs */

    /* a row without points, and one whose grid has a hole: as the spec's
     * own row, bit for bit */
    result(sweep(0, 0), &s);
    CU_ASSERT_PTR_NULL(strstr(s.row.options, "gemm_table"));
    result(sweep(bare, 0), &b);
    CU_ASSERT_EQUAL(b.row.hardware_id, bare);
    CU_ASSERT_PTR_NULL(strstr(b.row.options, "gemm_table"));
    result(sweep(holes, 0), &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(notices, "the 7 bf16 GEMM shapes of hardware"));
    CU_ASSERT_PTR_NULL(strstr(h.row.options, "gemm_table"));
    CU_ASSERT_EQUAL_FATAL(b.n, s.n);
    CU_ASSERT_EQUAL_FATAL(h.n, s.n);
    for (size_t k = 0; k < s.n; k++) {
        const CostdbEntry *x = find(&b, s.e[k].start_layer, s.e[k].end_layer, s.e[k].config_index,
                                    s.e[k].phase);
        const CostdbEntry *y = find(&h, s.e[k].start_layer, s.e[k].end_layer, s.e[k].config_index,
                                    s.e[k].phase);
        const CostdbEntry *z = find(&a, s.e[k].start_layer, s.e[k].end_layer, s.e[k].config_index,
                                    s.e[k].phase);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        CU_ASSERT_PTR_NOT_NULL_FATAL(z);
        CU_ASSERT_EQUAL(x->compute_cost, s.e[k].compute_cost);
        CU_ASSERT_EQUAL(y->compute_cost, s.e[k].compute_cost);
        CU_ASSERT(z->compute_cost > 10 * s.e[k].compute_cost); /* 1 TFLOP/s is slow */
    }

    /* an unknown row */
    sweep(999, APPROF_EINVAL);

    /* two shards merged: the entries of the whole sweep, the row's GEMM
     * points along (the options name their hash) */
    {
        const char *in[1] = {db_path};
        ApprofMergeSummary ms;
        Costdb *db = NULL;
        CostdbGemmPoint *gp = NULL;
        size_t ng = 0;
        char err[512] = "";
        Result m;
        sweep_shard(table, 0, 0, 2);
        sweep_shard(table, 0, 1, 2);
        CU_ASSERT_EQUAL_FATAL(approf_merge_shards(merged_path, in, 1, &ms, err, sizeof err), 0);
        result_in(merged_path, 1, &m);
        CU_ASSERT_STRING_EQUAL(m.row.options, a.row.options);
        CU_ASSERT_EQUAL_FATAL(m.n, a.n);
        for (size_t k = 0; k < a.n; k++) {
            const CostdbEntry *x = find(&m, a.e[k].start_layer, a.e[k].end_layer,
                                        a.e[k].config_index, a.e[k].phase);
            CU_ASSERT_PTR_NOT_NULL_FATAL(x);
            CU_ASSERT_EQUAL(x->compute_cost, a.e[k].compute_cost);
        }
        CU_ASSERT_EQUAL_FATAL(costdb_open(merged_path, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        CU_ASSERT_EQUAL(costdb_gemm_list(db, m.row.hardware_id, &gp, &ng), 0);
        CU_ASSERT_EQUAL(ng, 8);
        CU_ASSERT(ng == 8 && gp[0].rate == rate && !strcmp(gp[0].dtype, "bf16"));
        free(gp);
        costdb_close(&db);
        free(m.e);
    }
    free(a.e);
    free(a2.e);
    free(a4.e);
    free(b.e);
    free(s.e);
    free(h.e);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"a sweep on a measured row prices GEMMs from its table", test_measured_row},
    };
    return CUNIT_RUN_FIXTURE("gemm sweep", setup, teardown, tests);
}
