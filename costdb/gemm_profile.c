/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GEMM rates per shape of a hardware row (table gemm_profile, schema 9):
 * `approf probe` stores a grid of (m, n, k) per dtype, the analytic
 * backend prices GEMMs from it (profiler/hw/gemm_table.c). Writes replace
 * whole tables (hardware, dtype) in one transaction, after every point was
 * checked; reads check every value they return.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "costdb_int.h"

/* The first schema with table gemm_profile. */
#define GEMM_SCHEMA 9

static const char sql_gemm_delete[] =
    "DELETE FROM gemm_profile WHERE hardware_id = ?1 AND dtype = ?2";
static const char sql_gemm_insert[] =
    "INSERT OR REPLACE INTO gemm_profile (hardware_id, dtype, m, n, k, rate)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char sql_gemm_get[] =
    "SELECT hardware_id, dtype, m, n, k, rate FROM gemm_profile"
    " WHERE hardware_id = ?1 AND dtype = ?2 ORDER BY m, n, k";
static const char sql_gemm_list[] =
    "SELECT hardware_id, dtype, m, n, k, rate FROM gemm_profile"
    " WHERE hardware_id = ?1 ORDER BY dtype, m, n, k";

static int check_point(Costdb *db, const CostdbGemmPoint *p, size_t i)
{
    const int64_t dims[3] = {p->m, p->n, p->k};
    static const char *const names[3] = {"m", "n", "k"};
    int rc = cdb_check_text(db, p->dtype, sizeof p->dtype, "dtype");
    if (rc < 0)
        return rc;
    if (!p->dtype[0])
        return cdb_err(db, COSTDB_EINVAL, "%s: GEMM point %zu: field 'dtype' is empty",
                       db->path, i);
    for (int d = 0; d < 3; d++)
        if (dims[d] < 1 || dims[d] > COSTDB_MAX_GEMM_DIM)
            return cdb_err(db, COSTDB_EINVAL,
                           "%s: GEMM point %zu (%s %lldx%lldx%lld): field '%s' = %lld is outside"
                           " 1..%lld (COSTDB_MAX_GEMM_DIM)", db->path, i, p->dtype,
                           (long long)p->m, (long long)p->n, (long long)p->k, names[d],
                           (long long)dims[d], (long long)COSTDB_MAX_GEMM_DIM);
    if (!isfinite(p->rate) || !(p->rate > 0))
        return cdb_err(db, COSTDB_EINVAL,
                       "%s: GEMM point %zu (%s %lldx%lldx%lld): field 'rate' = %g is not a"
                       " finite rate > 0", db->path, i, p->dtype, (long long)p->m,
                       (long long)p->n, (long long)p->k, p->rate);
    return 0;
}

int costdb_gemm_put(Costdb *db, int64_t hardware_id, const CostdbGemmPoint *pts, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || (n && !pts))
        return COSTDB_EINVAL;
    for (size_t i = 0; i < n; i++)
        if ((rc = check_point(db, &pts[i], i)) < 0)
            return rc;
    if (n == 0)
        return 0;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    /* each dtype's table once: a point whose dtype an earlier point had
     * was deleted with it */
    for (size_t i = 0; i < n && rc >= 0; i++) {
        size_t j = 0;
        while (j < i && strcmp(pts[j].dtype, pts[i].dtype))
            j++;
        if (j < i)
            continue;
        if ((rc = cdb_prepare(db, sql_gemm_delete, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].dtype, 0);
        rc = cdb_exec_stmt(db, st, sql_gemm_delete);
        cdb_release(st);
    }
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_gemm_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].dtype, 0);
        sqlite3_bind_int64(st, 3, pts[i].m);
        sqlite3_bind_int64(st, 4, pts[i].n);
        sqlite3_bind_int64(st, 5, pts[i].k);
        sqlite3_bind_double(st, 6, pts[i].rate);
        rc = cdb_exec_stmt(db, st, sql_gemm_insert);
        cdb_release(st);
    }
    return cdb_txn_leave(db, rc);
}

static int gemm_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbGemmPoint *p = row;
    int rc;
    /* column 0, hardware_id, is selected so that a refusal names the row */
    if ((rc = cdb_column_text(db, st, 1, p->dtype, sizeof p->dtype, "dtype")) < 0 ||
        (rc = cdb_col_range(db, st, 2, 1, COSTDB_MAX_GEMM_DIM, "(COSTDB_MAX_GEMM_DIM)", &p->m)) < 0 ||
        (rc = cdb_col_range(db, st, 3, 1, COSTDB_MAX_GEMM_DIM, "(COSTDB_MAX_GEMM_DIM)", &p->n)) < 0 ||
        (rc = cdb_col_range(db, st, 4, 1, COSTDB_MAX_GEMM_DIM, "(COSTDB_MAX_GEMM_DIM)", &p->k)) < 0)
        return rc;
    return cdb_col_rate(db, st, 5, &p->rate);
}

static int collect(Costdb *db, int64_t hardware_id, const char *dtype, CostdbGemmPoint **out,
                   size_t *n)
{
    const char *sql = dtype ? sql_gemm_get : sql_gemm_list;
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    *out = NULL;
    *n = 0;
    if (db->version < GEMM_SCHEMA)
        return 0; /* a file from before the table: no points */
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, hardware_id);
    if (dtype)
        sqlite3_bind_text(st, 2, dtype, -1, SQLITE_STATIC);
    return cdb_collect(db, st, sql, sizeof **out, gemm_row, (void **)out, n);
}

int costdb_gemm_get(Costdb *db, int64_t hardware_id, const char *dtype, CostdbGemmPoint **out,
                    size_t *n)
{
    if (!dtype)
        return COSTDB_EINVAL;
    return collect(db, hardware_id, dtype, out, n);
}

int costdb_gemm_list(Costdb *db, int64_t hardware_id, CostdbGemmPoint **out, size_t *n)
{
    return collect(db, hardware_id, NULL, out, n);
}
