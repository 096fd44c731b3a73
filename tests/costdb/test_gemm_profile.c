/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of table gemm_profile (schema 9): put and get of a batch of
 * GEMM shape points, replacement per dtype, refusal of bad points before
 * anything is written, the schema's refusal of bad rows written with raw
 * SQL (typeof triggers, CHECK constraints), the readers' refusal of such
 * rows written anyway (triggers and CHECKs off) naming table, row and
 * column, and a schema-8 file: no points read-only, migrated read-write.
 */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "testutil.h"

/* A hardware row of kind measured, GPU "Fake GPU 40GB". */
static int64_t hardware_row(Costdb *db, const char *fingerprint)
{
    return tu_hardware_row(db, fingerprint, "measured", "Fake GPU 40GB");
}

static CostdbGemmPoint point(const char *dt, int64_t m, int64_t n, int64_t k, double rate)
{
    CostdbGemmPoint p;
    memset(&p, 0, sizeof p);
    snprintf(p.dtype, sizeof p.dtype, "%s", dt);
    p.m = m;
    p.n = n;
    p.k = k;
    p.rate = rate;
    return p;
}

/* A 2x2x2 grid in bf16 (given in reverse order) and one f16 point. */
static void test_put_get(void)
{
    Costdb *db = tu_open_new("gemm.db");
    int64_t hw = hardware_row(db, "measured:a"), other = hardware_row(db, "measured:b");
    CostdbGemmPoint pts[9], *out = NULL;
    size_t n = 0;
    for (int i = 0; i < 8; i++) {
        int j = 7 - i;
        pts[i] = point("bf16", 1024 << (j >> 2 & 1), 1024 << (j >> 1 & 1), 1024 << (j & 1),
                       100e12 + 10e12 * j);
    }
    pts[8] = point("f16", 4096, 4096, 4096, 600e12);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 9), 0);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, hw, "bf16", &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 8);
    for (size_t i = 0; i < 8; i++) {
        /* ordered by m, n, k */
        CU_ASSERT_STRING_EQUAL(out[i].dtype, "bf16");
        CU_ASSERT_EQUAL(out[i].m, 1024 << (i >> 2 & 1));
        CU_ASSERT_EQUAL(out[i].n, 1024 << (i >> 1 & 1));
        CU_ASSERT_EQUAL(out[i].k, 1024 << (i & 1));
        CU_ASSERT_EQUAL(out[i].rate, 100e12 + 10e12 * (double)i);
    }
    free(out);
    CU_ASSERT_EQUAL(costdb_gemm_list(db, hw, &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 9);
    CU_ASSERT_STRING_EQUAL(out[0].dtype, "bf16");
    CU_ASSERT_STRING_EQUAL(out[8].dtype, "f16");
    CU_ASSERT_EQUAL(out[8].rate, 600e12);
    free(out);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, other, "bf16", &out, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(out);
    CU_ASSERT_EQUAL(tu_count(tu_path("gemm.db"), "gemm_profile"), 9);

    /* A second put replaces the bf16 table and leaves f16 alone; a shape
     * twice keeps the last. */
    pts[0] = point("bf16", 512, 512, 512, 50e12);
    pts[1] = point("bf16", 512, 512, 512, 55e12);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), 0);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, hw, "bf16", &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(out[0].rate, 55e12);
    free(out);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, hw, "f16", &out, &n), 0);
    CU_ASSERT_EQUAL(n, 1);
    free(out);
    /* nothing at all: nothing changes */
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, NULL, 0), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("gemm.db"), "gemm_profile"), 2);

    /* Deleting the hardware row takes its points along. */
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_exec(tu_path("gemm.db"), "PRAGMA foreign_keys = ON;"
                                                " DELETE FROM hardware WHERE fingerprint = 'measured:a'"), 0);
    CU_ASSERT_EQUAL(tu_count(tu_path("gemm.db"), "gemm_profile"), 0);
}

/* Bad points are refused before anything is written, naming the field. */
static void test_put_refuses(void)
{
    Costdb *db = tu_open_new("gemm-bad.db");
    int64_t hw = hardware_row(db, "measured:a");
    CostdbGemmPoint pts[2];
    pts[0] = point("bf16", 1024, 1024, 1024, 100e12);
    pts[1] = point("bf16", 1024, 0, 1024, 100e12);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "field 'n' = 0"));
    pts[1] = point("bf16", 1024, 1024, COSTDB_MAX_GEMM_DIM + 1, 100e12);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "field 'k'"));
    pts[1] = point("bf16", 2048, 1024, 1024, -1.0);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "field 'rate' = -1"));
    pts[1].rate = INFINITY;
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    pts[1].rate = NAN;
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    pts[1].rate = 0.0;
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    pts[1] = point("", 2048, 1024, 1024, 1e12);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    memset(pts[1].dtype, 'x', sizeof pts[1].dtype); /* not NUL-terminated */
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, pts, 2), COSTDB_EINVAL);
    CU_ASSERT_EQUAL(costdb_gemm_put(NULL, hw, pts, 1), COSTDB_EINVAL);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, NULL, 1), COSTDB_EINVAL);
    costdb_close(&db);
    CU_ASSERT_EQUAL(tu_count(tu_path("gemm-bad.db"), "gemm_profile"), 0);
}

/* Raw SQL that bypasses the API: the typeof triggers refuse text in rate
 * and a real in m, the CHECKs a negative rate and a zero size, NOT NULL a
 * missing value even then. Written anyway (triggers and CHECKs off), each such row makes the readers fail
 * with ECORRUPT naming table gemm_profile, the row's key and the column. */
static void test_corrupt_rows(void)
{
    static const struct { const char *values; const char *says; } bad[] = {
        {"(1, 'bf16', 1024, 1024, 1024, -1.0)", "column rate = -1 is not a finite rate > 0"},
        {"(1, 'bf16', 1024, 1024, 1024, 'abc')", "column rate holds text 'abc'"},
        {"(1, 'bf16', 1024, 1024, 1024, 9e999)", "column rate = inf is not a finite rate > 0"},
        {"(1, 'bf16', 1024, 1024, 1024, 0.0)", "column rate = 0 is not a finite rate > 0"},
        {"(1, 'bf16', 0, 1024, 1024, 1e12)", "column m = 0 is outside 1..2147483648"},
        {"(1, 'bf16', 1024, -8, 1024, 1e12)", "column n = -8 is outside"},
        {"(1, 'bf16', 1024, 1024, 2.5, 1e12)", "column k holds a real, not an INTEGER value"},
    };
    const char *p = tu_path("gemm-corrupt.db");
    Costdb *db = tu_open_new("gemm-corrupt.db");
    CostdbGemmPoint good = point("bf16", 2048, 2048, 2048, 500e12), *out = NULL;
    size_t n = 0;
    int64_t hw = hardware_row(db, "measured:a");
    CU_ASSERT_EQUAL_FATAL(hw, 1);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, hw, &good, 1), 0);
    costdb_close(&db);

    /* the schema refuses them */
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO gemm_profile VALUES (1, 'bf16', 1024, 1024, 1024, 'abc')"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO gemm_profile VALUES (1, 'bf16', 1024.5, 1024, 1024, 1e12)"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO gemm_profile VALUES (1, 'bf16', 1024, 1024, 1024, -1.0)"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO gemm_profile VALUES (1, 'bf16', 0, 1024, 1024, 1e12)"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "INSERT INTO gemm_profile VALUES (1, NULL, 1024, 1024, 1024, 1e12)"), -1);
    CU_ASSERT_EQUAL(tu_exec_untyped(p, "INSERT INTO gemm_profile VALUES (1, 'bf16', 1024, 1024, 1024, NULL)"), -1);
    CU_ASSERT_EQUAL(tu_exec(p, "UPDATE gemm_profile SET rate = 'fast'"), -1);
    CU_ASSERT_EQUAL(tu_count(p, "gemm_profile"), 1);

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "DELETE FROM gemm_profile WHERE m <> 2048 OR typeof(m) <> 'integer';"
                                  " INSERT INTO gemm_profile VALUES %s", bad[i].values);
        CU_ASSERT_EQUAL_FATAL(tu_exec_untyped(p, sql), 0);
        CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
        CU_ASSERT_EQUAL(costdb_gemm_get(db, 1, "bf16", &out, &n), COSTDB_ECORRUPT);
        CU_ASSERT_PTR_NULL(out);
        CU_ASSERT_EQUAL(n, 0);
        if (!strstr(costdb_errmsg(db), "table gemm_profile") ||
            !strstr(costdb_errmsg(db), bad[i].says))
            printf("\n%s: %s\n", bad[i].values, costdb_errmsg(db));
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), bad[i].says));
        CU_ASSERT_PTR_NOT_NULL(strstr(costdb_errmsg(db), "table gemm_profile, row (hardware_id=1,"
                                                         " dtype=bf16, m="));
        CU_ASSERT_EQUAL(costdb_gemm_list(db, 1, &out, &n), COSTDB_ECORRUPT);
        /* another dtype of the row is not affected */
        CU_ASSERT_EQUAL(costdb_gemm_get(db, 1, "f16", &out, &n), 0);
        CU_ASSERT_EQUAL(n, 0);
        costdb_close(&db);
    }
}

/* A file of schema 8 (migrations 001-008 run by hand) with a hardware row:
 * read-only it has no GEMM points; opened read-write it migrates to 9 and
 * takes them. */
static void test_schema8(void)
{
    const char *p = tu_path("schema8.db");
    CostdbGemmPoint pt = point("f16", 1024, 2048, 4096, 321e12), *out = NULL;
    Costdb *db = NULL;
    size_t n = 7;
    int v = 0;
    CU_ASSERT_EQUAL_FATAL(tu_old_schema(p, 8), 0);
    CU_ASSERT_EQUAL_FATAL(tu_exec(p,
        "INSERT INTO hardware (id, fingerprint, kind, gpu_model, gpus_per_host, device_memory,"
        " created_at) VALUES (1, 'measured:x', 'measured', 'X', 8, 1024, '2025-01-01T00:00:00Z');"), 0);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, COSTDB_OPEN_READONLY, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, 8);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, 1, "f16", &out, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(costdb_gemm_list(db, 1, &out, &n), 0);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(costdb_gemm_put(db, 1, &pt, 1), COSTDB_EREADONLY);
    costdb_close(&db);
    CU_ASSERT_EQUAL_FATAL(costdb_open(p, 0, &db, NULL, 0), 0);
    CU_ASSERT_EQUAL(costdb_file_version(db, &v), 0);
    CU_ASSERT_EQUAL(v, costdb_schema_version());
    CU_ASSERT_EQUAL(costdb_gemm_put(db, 1, &pt, 1), 0);
    CU_ASSERT_EQUAL(costdb_gemm_get(db, 1, "f16", &out, &n), 0);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(out[0].m, 1024);
    CU_ASSERT_EQUAL(out[0].n, 2048);
    CU_ASSERT_EQUAL(out[0].k, 4096);
    CU_ASSERT_EQUAL(out[0].rate, 321e12);
    free(out);
    costdb_close(&db);
}

int main(void)
{
    static const CunitTest tests[] = {
        {"put and get", test_put_get},
        {"put refuses bad points", test_put_refuses},
        {"corrupt rows refused", test_corrupt_rows},
        {"schema 8 file", test_schema8},
    };
    return TU_RUN("gemm_profile", tests);
}
