/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the CSV interchange: export -> import -> export is
 * byte-identical, headers in any order with extra columns, Alpa's submesh
 * order and first-appearance config order, import options, and every
 * bad-input case refused with the exact FILE:LINE:COLUMN message while the
 * database stays unchanged (row counts through a raw connection).
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

#define HEADER "start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory," \
               "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"   \
               "initial_size,status\n"
/* The header of a sweep with variants or known apply costs. */
#define VHEADER "start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory," \
                "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"   \
                "initial_size,status,memory_level,recompute,zero,apply_cost\n"
/* A plain table with schema 17's activation-sized transient. */
#define AHEADER "start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory," \
                "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,"   \
                "initial_size,status,temp_activation_size\n"

static int export_to(Costdb *db, int64_t id, const char *path)
{
    FILE *f = fopen(path, "w");
    int rc;
    if (!f)
        return -1;
    rc = costdb_csv_export(db, id, f);
    fclose(f);
    return rc;
}

/* A sweep exported to <stem>1.csv, that file imported (the sweep id2) and
 * exported to <stem>2.csv, that imported and exported to <stem>3.csv: the
 * three files' texts and lengths (the first two asserted read; the third
 * NULL when it cannot be). */
typedef struct RoundTrip {
    int64_t id2;
    char *csv[3];
    size_t len[3];
} RoundTrip;

static void round_trip(Costdb *db, int64_t id, const char *stem, RoundTrip *rt)
{
    char name[3][64];
    int64_t id3 = 0;
    memset(rt, 0, sizeof *rt);
    for (int i = 0; i < 3; i++)
        snprintf(name[i], sizeof name[i], "%s%d.csv", stem, i + 1);
    CU_ASSERT_EQUAL_FATAL(export_to(db, id, tu_path(name[0])), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, tu_path(name[0]), NULL, &rt->id2), 0);
    CU_ASSERT_EQUAL_FATAL(export_to(db, rt->id2, tu_path(name[1])), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, tu_path(name[1]), NULL, &id3), 0);
    CU_ASSERT_EQUAL_FATAL(export_to(db, id3, tu_path(name[2])), 0);
    for (int i = 0; i < 3; i++)
        rt->csv[i] = tu_read(tu_path(name[i]), &rt->len[i]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt->csv[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt->csv[1]);
}

static void round_trip_free(RoundTrip *rt)
{
    for (int i = 0; i < 3; i++)
        free(rt->csv[i]);
}

static void test_round_trip(void)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}, {1, 1, 2}, {2, 2, 2}};
    static const CostdbConfig cf[] = {
        {0, 0, 1, 1, 0}, {0, 1, 1, 1, -1},
        {1, 0, 2, 1, 0}, {1, 1, 1, 2, 0}, {1, 2, 2, 1, -1},
        {2, 0, 4, 1, 0}, {2, 1, 2, 2, 1}, {2, 2, 4, 1, -1},
    };
    static const double costs[] = {0.1, 1e-7, 123.45678901234568, 0.004, 1.0 / 3.0, 123456789.12345679,
                                   0.0, 2.5};
    Costdb *db = tu_open_new("rt.db");
    CostdbSweep s;
    CostdbEntry e[24];
    size_t n = 0;
    RoundTrip rt;
    char *a, *b;
    tu_sweep(&s, "rt", 2, 2, 4, 4, 3);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 3, cf, 8), 0);
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        for (int j = i; j < 3; j++) {
            for (int c = 0; c < 2 && n < 24; c++) {
                for (int m = 0; m < 2 && n < 24; m++, n++) {
                    CostdbEntry *x = &e[n];
                    x->start_layer = i;
                    x->end_layer = j;
                    x->submesh_index = (int)(n % 3);
                    x->config_index = c;
                    x->phase = (CostdbPhase)m;
                    x->compute_cost = costs[n % 8];
                    x->peak_memory = 1000003LL * (int64_t)n;
                    x->invar_size = 17 * (int64_t)n;
                    x->outvar_size = 19;
                    x->temp_buffer_size = 23;
                    x->available_memory = 42949672960LL;
                    x->intermediate_size = (int64_t)n;
                    x->initial_size = 9000000000000LL;
                    x->status = COSTDB_STATUS_OK;
                    x->apply_cost = -1.0; /* unknown: a plain Alpa table */
                }
            }
        }
    }
    e[5].compute_cost = INFINITY;
    e[5].status = COSTDB_STATUS_OOM;
    e[6].status = COSTDB_STATUS_SKIPPED;
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    round_trip(db, s.id, "rt", &rt);
    a = rt.csv[0];
    b = rt.csv[1];
    CU_ASSERT_EQUAL(rt.len[0], rt.len[1]);
    CU_ASSERT_STRING_EQUAL(a, b);
    /* Values are printed exactly and shortest: spot checks. */
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",inf,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",123.45678901234568,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",0.3333333333333333,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",1e-07,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",9000000000000,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",1x1,1x1,,fwd,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",2x2,1,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",skipped\n"));
    CU_ASSERT_EQUAL(strncmp(a, HEADER, strlen(HEADER)), 0);
    CU_ASSERT_PTR_NULL(strstr(a, "memory_level"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt.csv[2]);
    CU_ASSERT_STRING_EQUAL(a, rt.csv[2]);
    round_trip_free(&rt);
    {
        CostdbEntry *got = NULL;
        size_t ng = 0;
        CostdbSweep s2;
        CU_ASSERT_EQUAL(costdb_entries_get(db, rt.id2, &got, &ng), 0);
        CU_ASSERT_EQUAL(ng, n);
        free(got);
        CU_ASSERT_EQUAL(costdb_sweep_get(db, rt.id2, &s2), 0);
        CU_ASSERT_EQUAL(s2.status, COSTDB_SWEEP_IMPORTED);
        CU_ASSERT_STRING_EQUAL(s2.backend, "import");
        CU_ASSERT_STRING_EQUAL(s2.name, "rt1.csv");
        CU_ASSERT_STRING_EQUAL(s2.source, tu_path("rt1.csv"));
        CU_ASSERT_EQUAL(s2.cluster_hosts, 2);
        CU_ASSERT_EQUAL(s2.cluster_gpus, 2);
        CU_ASSERT_EQUAL(s2.num_layers, 3);
    }
    costdb_close(&db);
}

/* Variant configs and apply costs: the four optional columns are written,
 * configs are told apart by their variant, and the round trip is exact. */
static void test_round_trip_variants(void)
{
    static const CostdbSubmesh sm[] = {{0, 1, 1}, {1, 1, 2}};
    static const CostdbConfig cf[] = {
        {0, 0, 1, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
        {1, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
        {1, 1, 1, 2, -1, {0, COSTDB_RECOMPUTE_NONE, 0}},
        {1, 2, 2, 1, 0, {1, COSTDB_RECOMPUTE_NONE, 0}},
        {1, 3, 2, 1, 0, {0, COSTDB_RECOMPUTE_FULL, 0}},
        {1, 4, 2, 1, 0, {1, COSTDB_RECOMPUTE_SELECTIVE, 2}},
        {1, 5, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 3}},
    };
    static const double apply[] = {0.25, -1.0, 1e-9, 0.0, 1.0 / 7.0, 3.5, 12.0};
    Costdb *db = tu_open_new("rtv.db");
    CostdbSweep s;
    CostdbEntry e[16];
    CostdbConfig *got = NULL;
    CostdbEntry *ge = NULL;
    size_t n = 0, ng = 0;
    RoundTrip rt;
    char *a, *b;
    tu_sweep(&s, "rtv", 1, 2, 2, 2, 1);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 2, cf, 7), 0);
    memset(e, 0, sizeof e);
    for (int c = 0; c < 7; c++) {
        for (int m = 0; m < 2; m++, n++) {
            e[n].submesh_index = cf[c].submesh_index;
            e[n].config_index = cf[c].config_index;
            e[n].phase = (CostdbPhase)m;
            e[n].compute_cost = 0.5 + c;
            e[n].peak_memory = 100 * (c + 1);
            e[n].apply_cost = apply[c];
        }
    }
    e[9].compute_cost = INFINITY;
    e[9].status = COSTDB_STATUS_SKIPPED;
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, n, 0), 0);
    round_trip(db, s.id, "rtv", &rt);
    a = rt.csv[0];
    b = rt.csv[1];
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT_EQUAL(strncmp(a, VHEADER, strlen(VHEADER)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",ok,1,selective,2,3.5\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",ok,0,full,0,0.14285714285714285\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",1x2,2x1,0,fwd,1.5,200,0,0,0,0,0,0,ok,0,none,0,\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",ok,0,none,3,12\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",ok,1,none,0,0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",1x2,,fwd,2.5,300,0,0,0,0,0,0,ok,0,none,0,1e-09\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(a, ",skipped,0,full,0,0.14285714285714285\n"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt.csv[2]);
    CU_ASSERT_STRING_EQUAL(a, rt.csv[2]);
    round_trip_free(&rt);
    CU_ASSERT_EQUAL(costdb_sweep_configs(db, rt.id2, &got, &ng), 0);
    CU_ASSERT_EQUAL_FATAL(ng, 7);
    for (size_t i = 0; i < ng; i++) {
        CU_ASSERT_EQUAL(got[i].config_index, cf[i].config_index);
        CU_ASSERT_EQUAL(got[i].force_batch_dim, cf[i].force_batch_dim);
        CU_ASSERT_EQUAL(got[i].variant.memory_level, cf[i].variant.memory_level);
        CU_ASSERT_EQUAL(got[i].variant.recompute, cf[i].variant.recompute);
        CU_ASSERT_EQUAL(got[i].variant.zero, cf[i].variant.zero);
    }
    free(got);
    CU_ASSERT_EQUAL(costdb_entries_get(db, rt.id2, &ge, &ng), 0);
    CU_ASSERT_EQUAL_FATAL(ng, n);
    for (size_t i = 0; i < ng; i++) {
        int c = ge[i].config_index + (ge[i].submesh_index ? 1 : 0);
        if (apply[c] < 0) {
            CU_ASSERT(ge[i].apply_cost < 0);
        } else {
            CU_ASSERT_EQUAL(ge[i].apply_cost, apply[c]);
        }
    }
    free(ge);
    costdb_close(&db);
}

/* Schema 17's temp_activation_size: exported as the last column only when
 * an entry has one (empty for the others), imported back as it was, and an
 * old file without the column (or an empty field) imports NULL. */
static void test_round_trip_temp_activation(void)
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0}, {0, 1, 1, 2, 0}};
    Costdb *db = tu_open_new("rta.db");
    const char *p = tu_path("rta-old.csv");
    CostdbSweep s;
    CostdbEntry e[4], *ge = NULL;
    size_t ng = 0;
    int64_t id = 0;
    RoundTrip rt;
    tu_sweep(&s, "rta", 1, 2, 2, 2, 1);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, &s, sm, 1, cf, 2), 0);
    memset(e, 0, sizeof e);
    for (int i = 0; i < 4; i++) {
        e[i].config_index = i / 2;
        e[i].phase = (CostdbPhase)(i % 2);
        e[i].compute_cost = 0.5 + i;
        e[i].peak_memory = 1000;
        e[i].temp_buffer_size = 400 + i;
        e[i].temp_activation_size = i == 2 ? 0 : 100 * (i + 1);
        e[i].apply_cost = -1.0;
        e[i].wgrad_cost = -1.0;
    }
    CU_ASSERT_EQUAL_FATAL(costdb_entries_put(db, s.id, e, 4, 0), 0);
    round_trip(db, s.id, "rta", &rt);
    CU_ASSERT_EQUAL(strncmp(rt.csv[0], AHEADER, strlen(AHEADER)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(rt.csv[0], ",fwd,0.5,1000,0,0,400,0,0,0,ok,100\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rt.csv[0], ",fwd,2.5,1000,0,0,402,0,0,0,ok,\n"));
    CU_ASSERT_STRING_EQUAL(rt.csv[0], rt.csv[1]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt.csv[2]);
    CU_ASSERT_STRING_EQUAL(rt.csv[0], rt.csv[2]);
    round_trip_free(&rt);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, rt.id2, &ge, &ng), 0);
    CU_ASSERT_EQUAL_FATAL(ng, 4);
    for (size_t i = 0; i < ng; i++) {
        int k = ge[i].config_index * 2 + (int)ge[i].phase;
        CU_ASSERT_EQUAL(ge[i].temp_activation_size, e[k].temp_activation_size);
    }
    free(ge);
    /* an old file: no column, NULL */
    CU_ASSERT_EQUAL_FATAL(tu_write(p, HEADER "0,0,1x2,2x1,0,fwd,0.5,1000,0,0,400,0,0,0,ok\n"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, p, NULL, &id), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_entries_get(db, id, &ge, &ng), 0);
    CU_ASSERT_EQUAL_FATAL(ng, 1);
    CU_ASSERT_EQUAL(ge[0].temp_activation_size, 0);
    free(ge);
    costdb_close(&db);
}

/* Columns shuffled, an extra column, no status column, blank lines, CRLF,
 * quoted fields; submeshes listed out of Alpa's order. */
static void test_any_order(void)
{
    Costdb *db = tu_open_new("order.db");
    const char *p = tu_path("order.csv");
    CostdbImportOptions opt = {0};
    CostdbSubmesh *sm = NULL;
    CostdbConfig *cf = NULL;
    CostdbEntry *e = NULL;
    CostdbSweep s;
    size_t n = 0;
    int64_t id = 0;
    CU_ASSERT_EQUAL_FATAL(tu_write(p,
        "note,phase,end,start,compute_cost,submesh,logical_mesh,force_batch_dim,peak_memory,"
        "invar_size,outvar_size,temp_buffer_size,available_memory,intermediate_size,initial_size\r\n"
        "x,fwd,1,0,0.5,2x8,16x1,,1,2,3,4,5,6,7\r\n"
        "\r\n"
        "\"a, quoted\",bwd,0,0,0.25,1x8,2x4,0,10,20,30,40,50,60,70\r\n"
        "y,fwd,0,0,0.125,1x1,1x1,0,1,1,1,1,1,1,1\r\n"
        "z,fwd,0,0,0.75,1x8,8x1,0,1,1,1,1,1,1,1\r\n"
        "z,fwd,1,1,inf,1x8,2x4,0,1,1,1,1,1,1,1\r\n"
        "z,fwd,1,1,1.5,1x2,2x1,,1,1,1,1,1,1,1\r\n"), 0);
    opt.micro_batches = 4;
    opt.global_batch = 32;
    opt.name = "mine";
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, p, &opt, &id), 0);
    CU_ASSERT_EQUAL(costdb_sweep_get(db, id, &s), 0);
    CU_ASSERT_STRING_EQUAL(s.name, "mine");
    CU_ASSERT_EQUAL(s.cluster_hosts, 2);
    CU_ASSERT_EQUAL(s.cluster_gpus, 8);
    CU_ASSERT_EQUAL(s.micro_batches, 4);
    CU_ASSERT_EQUAL(s.global_batch, 32);
    CU_ASSERT_EQUAL(s.num_layers, 2);
    /* Alpa's order: (1,1), (1,2), (1,8), (2,8). */
    CU_ASSERT_EQUAL(costdb_sweep_submeshes(db, id, &sm, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    CU_ASSERT(sm[0].hosts == 1 && sm[0].gpus_per_host == 1);
    CU_ASSERT(sm[1].hosts == 1 && sm[1].gpus_per_host == 2);
    CU_ASSERT(sm[2].hosts == 1 && sm[2].gpus_per_host == 8);
    CU_ASSERT(sm[3].hosts == 2 && sm[3].gpus_per_host == 8);
    free(sm);
    /* Configs of (1,8) in order of first appearance: 2x4 f0, then 8x1 f0. */
    CU_ASSERT_EQUAL(costdb_sweep_configs(db, id, &cf, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 5);
    CU_ASSERT(cf[1].submesh_index == 1 && cf[1].logical_a == 2 && cf[1].force_batch_dim == -1);
    CU_ASSERT(cf[2].submesh_index == 2 && cf[2].config_index == 0 && cf[2].logical_a == 2 &&
              cf[2].logical_b == 4 && cf[2].force_batch_dim == 0);
    CU_ASSERT(cf[3].submesh_index == 2 && cf[3].config_index == 1 && cf[3].logical_a == 8);
    CU_ASSERT(cf[4].submesh_index == 3 && cf[4].logical_a == 16 && cf[4].force_batch_dim == -1);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT(costdb_variant_is_plain(cf[i].variant));
    free(cf);
    CU_ASSERT_EQUAL(costdb_entries_get(db, id, &e, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 6);
    /* Largest submesh first: (0,1) on 2x8. */
    CU_ASSERT(e[0].submesh_index == 3 && e[0].end_layer == 1 && e[0].compute_cost == 0.5);
    CU_ASSERT_EQUAL(e[0].peak_memory, 1);
    CU_ASSERT_EQUAL(e[0].initial_size, 7);
    CU_ASSERT_EQUAL(e[0].status, COSTDB_STATUS_OK);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT(e[i].apply_cost < 0); /* no apply_cost column: unknown */
    CU_ASSERT(e[1].submesh_index == 2 && e[1].config_index == 0 && e[1].phase == COSTDB_BWD);
    CU_ASSERT_EQUAL(e[1].temp_buffer_size, 40);
    CU_ASSERT(e[2].submesh_index == 2 && e[2].config_index == 1 && e[2].compute_cost == 0.75);
    CU_ASSERT(e[3].submesh_index == 2 && e[3].start_layer == 1 && isinf(e[3].compute_cost));
    CU_ASSERT(e[4].submesh_index == 1 && e[4].compute_cost == 1.5);
    CU_ASSERT(e[5].submesh_index == 0 && e[5].compute_cost == 0.125);
    free(e);
    costdb_close(&db);
}

typedef struct {
    const char *name;
    const char *text;
    const char *where;   /* expected message after "PATH:" */
} BadCase;

static void test_bad_inputs(void)
{
    static const BadCase cases[] = {
        {"empty file", "", "1:1: empty file: expected a header line"},
        {"header only", HEADER, "2:1: no data lines after the header"},
        {"missing column",
         "start,end,submesh,logical_mesh,force_batch_dim,phase,compute_cost,peak_memory,"
         "invar_size,outvar_size,available_memory,intermediate_size,initial_size\n"
         "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1\n",
         "1:14: field 'temp_buffer_size': missing from the header"},
        {"non-number size", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"
                            "0,1,1x1,1x1,0,fwd,0.1,1,1,12kB,1,1,1,1,ok\n",
         "3:10: field 'outvar_size': '12kB' is not an integer"},
        {"non-number cost", HEADER "0,0,1x1,1x1,0,fwd,fast,1,1,1,1,1,1,1,ok\n",
         "2:7: field 'compute_cost': 'fast' is not a number"},
        {"negative size", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,-5,1,1,1,1,1,ok\n",
         "2:9: field 'invar_size': -5 is negative"},
        {"negative cost", HEADER "0,0,1x1,1x1,0,fwd,-0.1,1,1,1,1,1,1,1,ok\n",
         "2:7: field 'compute_cost': -0.1 is negative"},
        {"end before start", HEADER "3,2,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:2: field 'end': end 2 is before start 3"},
        {"bad submesh", HEADER "0,0,1*8,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:3: field 'submesh': '1*8' is not a shape NxM"},
        {"bad logical mesh", HEADER "0,0,1x8,8x,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:4: field 'logical_mesh': '8x' is not a shape NxM"},
        {"logical size", HEADER "0,0,1x8,2x2,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:4: field 'logical_mesh': 2x2 has 4 devices, the submesh 1x8 has 8"},
        {"bad phase", HEADER "0,0,1x1,1x1,0,both,0.1,1,1,1,1,1,1,1,ok\n",
         "2:6: field 'phase': 'both' is not fwd or bwd"},
        {"bad force_batch_dim", HEADER "0,0,1x1,1x1,yes,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:5: field 'force_batch_dim': 'yes' is not a logical mesh axis (0 or 1) or empty"},
        {"bad status", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,fine\n",
         "2:15: field 'status': 'fine' is not ok, oom, failed, timeout or skipped"},
        {"NaN", HEADER "0,0,1x1,1x1,0,fwd,nan,1,1,1,1,1,1,1,ok\n",
         "2:7: field 'compute_cost': NaN is not a cost (use inf for a failed entry)"},
        {"duplicate key", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"
                          "0,0,1x1,1x1,,fwd,0.1,1,1,1,1,1,1,1,ok\n"
                          "\n"
                          "0,0,1x1,1x1,0,fwd,0.2,1,1,1,1,1,1,1,ok\n",
         "5:1: field 'start': duplicate entry (0, 0, 1x1, 1x1, fwd) already on line 2"},
        {"truncated line", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"
                           "0,1,1x1,1x1,0,fwd,0.1,1,1\n",
         "3:10: field 'outvar_size': truncated line: 9 fields, the header has 15"},
        {"too many fields", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,extra\n",
         "2:16: 16 fields, the header has only 15"},
        {"unterminated quote", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,\"ok\n",
         "2:15: field 'status': truncated line: a quoted field is not closed"},
        {"memory_level not a number", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,x,none,0,\n",
         "2:16: field 'memory_level': 'x' is not an integer"},
        {"negative memory_level", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,-1,none,0,\n",
         "2:16: field 'memory_level': -1 is negative"},
        {"huge memory_level", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,5000,none,0,\n",
         "2:16: field 'memory_level': 5000 is out of range"},
        {"bad recompute", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,some,0,\n",
         "2:17: field 'recompute': 'some' is not none, selective, full or op"},
        {"bad zero", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,4,\n",
         "2:18: field 'zero': '4' is not a ZeRO stage 0, 1, 2 or 3"},
        {"zero not a number", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,01,\n",
         "2:18: field 'zero': '01' is not a ZeRO stage 0, 1, 2 or 3"},
        {"apply_cost not a number", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,1s\n",
         "2:19: field 'apply_cost': '1s' is not a number"},
        {"negative apply_cost", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,-0.5\n",
         "2:19: field 'apply_cost': -0.5 is negative"},
        {"infinite apply_cost", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,inf\n",
         "2:19: field 'apply_cost': 'inf' is not finite (leave it empty when unknown)"},
        {"NaN apply_cost", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,nan\n",
         "2:19: field 'apply_cost': 'nan' is not finite (leave it empty when unknown)"},
        {"duplicate variant", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,1,0.5\n"
                              "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,0.5\n"
                              "0,0,1x1,1x1,0,fwd,0.2,1,1,1,1,1,1,1,ok,0,none,1,\n",
         "4:1: field 'start': duplicate entry (0, 0, 1x1, 1x1, fwd) (memory level 0, recompute "
         "none, zero 1) already on line 2"},
        {"truncated variant line", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none\n",
         "2:18: field 'zero': truncated line: 17 fields, the header has 19"},
        {"duplicate header", "start,start\n0,0\n",
         "1:2: field 'start': column appears twice in the header (also column 1)"},
        {"cost overflows to inf", HEADER "0,0,1x1,1x1,0,fwd,1e309,1,1,1,1,1,1,1,ok\n",
         "2:7: field 'compute_cost': 1e309 is out of range (at most 1e+09 s; inf for a failed entry)"},
        {"cost too large to sum", HEADER "0,0,1x1,1x1,0,fwd,5e307,1,1,1,1,1,1,1,ok\n",
         "2:7: field 'compute_cost': 5e307 is out of range (at most 1e+09 s; inf for a failed entry)"},
        {"huge apply_cost", VHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok,0,none,0,5e307\n",
         "2:19: field 'apply_cost': 5e307 is out of range (at most 1e+09 s)"},
        {"size past COSTDB_MAX_BYTES", HEADER "0,0,1x1,1x1,0,fwd,0.1,4611686018427387903,1,1,1,1,1,1,ok\n",
         "2:8: field 'peak_memory': 4611686018427387903 is out of range"},
        {"layer past COSTDB_MAX_LAYERS", HEADER "0,2147483647,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:2: field 'end': 2147483647 is out of range"},
        {"submesh past COSTDB_MAX_DEVICES", HEADER "0,0,1048576x1048576,1048576x1048576,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "2:3: field 'submesh': 1048576x1048576 is more than 1048576 devices"},
        {"temp_activation_size not a number", AHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,9,1,1,1,ok,9B\n",
         "2:16: field 'temp_activation_size': '9B' is not an integer"},
        {"negative temp_activation_size", AHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,9,1,1,1,ok,-1\n",
         "2:16: field 'temp_activation_size': -1 is negative"},
        {"zero temp_activation_size", AHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,9,1,1,1,ok,0\n",
         "2:16: field 'temp_activation_size': 0 is not an activation-sized part (leave the "
         "field empty when there is none)"},
        {"temp_activation_size past temp_buffer_size", AHEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,9,1,1,1,ok,10\n",
         "2:16: field 'temp_activation_size': 10 is more than temp_buffer_size 9"},
        {"does not fit the cluster", HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"
                                     "0,0,2x8,16x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n",
         "3:3: field 'submesh': 2x8 does not fit in the cluster 1x8"},
    };
    Costdb *db = tu_open_new("bad.db");
    const char *p = tu_path("bad.csv");
    const char *dbp = tu_path("bad.db");
    static const char *const tables[] = {"sweep", "sweep_submesh", "sweep_config", "stage_profile"};
    CostdbImportOptions opt = {0};
    int64_t before[4], id = 0;
    /* One good import first, so "unchanged" means something. */
    CU_ASSERT_EQUAL_FATAL(tu_write(p, HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, p, NULL, &id), 0);
    for (int t = 0; t < 4; t++)
        before[t] = tu_count(dbp, tables[t]);
    CU_ASSERT_EQUAL(before[3], 1);
    opt.cluster_hosts = 1;
    opt.cluster_gpus = 8;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char want[600];
        int64_t sid = -7;
        int rc;
        CU_ASSERT_EQUAL_FATAL(tu_write(p, cases[i].text), 0);
        rc = costdb_csv_import(db, p, &opt, &sid);
        snprintf(want, sizeof want, "%s:%s", p, cases[i].where);
        if (rc != COSTDB_EPARSE || strcmp(costdb_errmsg(db), want))
            fprintf(stderr, "\ncase '%s': rc %d, message\n  '%s'\nwanted\n  '%s'\n", cases[i].name,
                    rc, costdb_errmsg(db), want);
        CU_ASSERT_EQUAL(rc, COSTDB_EPARSE);
        CU_ASSERT_STRING_EQUAL(costdb_errmsg(db), want);
        CU_ASSERT_EQUAL(sid, -7);
        for (int t = 0; t < 4; t++)
            CU_ASSERT_EQUAL(tu_count(dbp, tables[t]), before[t]);
    }
    CU_ASSERT_EQUAL(costdb_csv_import(db, tu_path("no-such.csv"), NULL, &id), COSTDB_EIO);
    /* Only some variant columns, in any order, empty fields as defaults:
     * configs differ by variant, not a duplicate. */
    CU_ASSERT_EQUAL_FATAL(tu_write(p, "zero,start,end,submesh,logical_mesh,force_batch_dim,phase,"
                                      "compute_cost,peak_memory,invar_size,outvar_size,"
                                      "temp_buffer_size,available_memory,intermediate_size,"
                                      "initial_size\n"
                                      "1,0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1\n"
                                      ",0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1\n"), 0);
    CU_ASSERT_EQUAL(costdb_csv_import(db, p, NULL, &id), 0);
    {
        CostdbConfig *cf = NULL;
        size_t n = 0;
        CU_ASSERT_EQUAL(costdb_sweep_configs(db, id, &cf, &n), 0);
        CU_ASSERT_EQUAL_FATAL(n, 2);
        CU_ASSERT(cf[0].variant.zero == 1 && cf[1].variant.zero == 0 && cf[0].config_index == 0);
        CU_ASSERT(cf[0].variant.recompute == COSTDB_RECOMPUTE_NONE &&
                  cf[1].variant.memory_level == 0);
        free(cf);
    }
    costdb_close(&db);
}

/* An import inside the caller's transaction is undone with it. */
static void test_import_in_transaction(void)
{
    Costdb *db = tu_open_new("txn.db");
    const char *p = tu_path("txn.csv");
    int64_t id = 0;
    CU_ASSERT_EQUAL_FATAL(tu_write(p, HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\n"), 0);
    CU_ASSERT_EQUAL(costdb_begin(db), 0);
    CU_ASSERT_EQUAL(costdb_csv_import(db, p, NULL, &id), 0);
    CU_ASSERT_EQUAL(costdb_rollback(db), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("txn.db"), "sweep"), 0);
    costdb_close(&db);
}

/* Parser edges (issue 14): a NUL byte inside a field, a UTF-8 BOM, -0, and
 * a line past the 1 MiB cap are handled without touching the database. */
static void test_parser_edges(void)
{
    Costdb *db = tu_open_new("edges.db");
    const char *p = tu_path("edges.csv");
    const char *dbp = tu_path("edges.db");
    static const char nul[] = HEADER "0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,ok\0garbage\n";
    CostdbEntry *e = NULL;
    size_t n = 0;
    int64_t id = -7;
    FILE *f;
    char want[600];

    f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(nul, 1, sizeof nul - 1, f);
    fclose(f);
    CU_ASSERT_EQUAL(costdb_csv_import(db, p, NULL, &id), COSTDB_EPARSE);
    snprintf(want, sizeof want, "%s:2:15: field 'status': a NUL byte inside the field", p);
    CU_ASSERT_STRING_EQUAL(costdb_errmsg(db), want);
    CU_ASSERT_EQUAL(tu_count(dbp, "stage_profile"), 0);

    /* BOM before the header; -0 costs and sizes are zero */
    CU_ASSERT_EQUAL_FATAL(tu_write(p, "\xEF\xBB\xBF" HEADER
                                      "0,0,1x1,1x1,0,fwd,-0,-0,1,1,1,1,1,1,ok\n"
                                      "0,0,1x1,1x1,0,bwd,-0.0,1,1,1,1,1,1,1,ok\n"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_csv_import(db, p, NULL, &id), 0);
    CU_ASSERT_EQUAL(costdb_entries_get(db, id, &e, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(e[0].compute_cost == 0 && !signbit(e[0].compute_cost));
    CU_ASSERT(e[1].compute_cost == 0 && !signbit(e[1].compute_cost));
    CU_ASSERT_EQUAL(e[0].peak_memory, 0);
    free(e);

    /* a 2 MiB field: refused at the cap, naming the line */
    {
        size_t big = (size_t)2 << 20;
        char *text = malloc(big + 256);
        int64_t before = tu_count(dbp, "stage_profile");
        CU_ASSERT_PTR_NOT_NULL_FATAL(text);
        snprintf(text, 256, "%s0,0,1x1,1x1,0,fwd,0.1,1,1,1,1,1,1,1,", HEADER);
        memset(text + strlen(text), 'k', big);
        text[strlen(HEADER) + 36 + big] = '\0';
        CU_ASSERT_EQUAL_FATAL(tu_write(p, text), 0);
        free(text);
        id = -7;
        CU_ASSERT_EQUAL(costdb_csv_import(db, p, NULL, &id), COSTDB_EPARSE);
        snprintf(want, sizeof want, "%s:2:1: line longer than 1048576 bytes (the limit of a CSV"
                 " line)", p);
        CU_ASSERT_STRING_EQUAL(costdb_errmsg(db), want);
        CU_ASSERT_EQUAL(id, -7);
        CU_ASSERT_EQUAL(tu_count(dbp, "stage_profile"), before);
    }
    costdb_close(&db);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"export -> import -> export is byte-identical", test_round_trip},
        {"variant columns round trip", test_round_trip_variants},
        {"temp_activation_size round trip", test_round_trip_temp_activation},
        {"header in any order, extra columns, Alpa order", test_any_order},
        {"bad inputs leave the database unchanged", test_bad_inputs},
        {"import inside a transaction", test_import_in_transaction},
        {"NUL byte, BOM, -0, line-length cap", test_parser_edges},
    };
    return TU_RUN("costdb csv", tests);
}
