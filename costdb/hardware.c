/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hardware fingerprints with their capabilities, the measured communication
 * and compute curves that hang off them, and models with their layers. Rows
 * keyed by fingerprint or signature are inserted once and found again.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"

/* ---- hardware ----------------------------------------------------------- */

static const char sql_hw_insert[] =
    "INSERT INTO hardware (fingerprint, kind, spec_name, gpu_model, gpus_per_host,"
    " device_memory, driver_version, cuda_version, nccl_version, interconnect,"
    " peak_flops_f32, peak_flops_f16, peak_flops_bf16, memory_bandwidth,"
    " intra_host_bandwidth, intra_host_latency, inter_host_bandwidth,"
    " inter_host_latency, capabilities, created_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
    " ?16, ?17, ?18, ?19, ?20) ON CONFLICT (fingerprint) DO NOTHING";
static const char sql_hw_id[] = "SELECT id FROM hardware WHERE fingerprint = ?1";
#define HW_COLUMNS                                                                   \
    "SELECT id, fingerprint, kind, spec_name, gpu_model, gpus_per_host, device_memory," \
    " driver_version, cuda_version, nccl_version, interconnect, peak_flops_f32,"     \
    " peak_flops_f16, peak_flops_bf16, memory_bandwidth, intra_host_bandwidth,"      \
    " intra_host_latency, inter_host_bandwidth, inter_host_latency, capabilities"    \
    " FROM hardware "
static const char sql_hw_get[] = HW_COLUMNS "WHERE id = ?1";
static const char sql_hw_find[] = HW_COLUMNS "WHERE fingerprint = ?1";

static int hw_check(Costdb *db, const CostdbHardware *hw)
{
    const double d[] = {hw->peak_flops_f32, hw->peak_flops_f16, hw->peak_flops_bf16,
                        hw->memory_bandwidth, hw->intra_host_bandwidth,
                        hw->intra_host_latency, hw->inter_host_bandwidth,
                        hw->inter_host_latency};
    int rc;
#define CHECK_TEXT(f) \
    if ((rc = cdb_check_text(db, hw->f, sizeof hw->f, #f)) < 0) return rc
    CHECK_TEXT(fingerprint);
    CHECK_TEXT(kind);
    CHECK_TEXT(spec_name);
    CHECK_TEXT(gpu_model);
    CHECK_TEXT(driver_version);
    CHECK_TEXT(cuda_version);
    CHECK_TEXT(nccl_version);
    CHECK_TEXT(interconnect);
    CHECK_TEXT(capabilities);
#undef CHECK_TEXT
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if ((rc = cdb_check_double(db, d[i], "hardware capability")) < 0)
            return rc;
    if (!hw->fingerprint[0])
        return cdb_err(db, COSTDB_EINVAL, "%s: hardware fingerprint is empty", db->path);
    return 0;
}

static int lookup_id(Costdb *db, const char *sql, const char *key, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int rc = cdb_prepare(db, sql, &st);
    if (rc < 0)
        return rc;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (rc == SQLITE_DONE) {
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no row for '%s'", db->path, key);
    } else {
        rc = cdb_fail(db, rc, sql);
    }
    cdb_release(st);
    return rc;
}

int costdb_hardware_upsert(Costdb *db, CostdbHardware *hw)
{
    sqlite3_stmt *st = NULL;
    char now[32];
    int rc;
    if (!db || !hw)
        return COSTDB_EINVAL;
    if ((rc = hw_check(db, hw)) < 0)
        return rc;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    rc = cdb_prepare(db, sql_hw_insert, &st);
    if (rc < 0)
        goto cleanup;
    costdb_now(now, sizeof now);
    cdb_bind_text(st, 1, hw->fingerprint, 0);
    cdb_bind_text(st, 2, hw->kind, 0);
    cdb_bind_text(st, 3, hw->spec_name, 1);
    cdb_bind_text(st, 4, hw->gpu_model, 0);
    sqlite3_bind_int(st, 5, hw->gpus_per_host);
    sqlite3_bind_int64(st, 6, hw->device_memory);
    cdb_bind_text(st, 7, hw->driver_version, 1);
    cdb_bind_text(st, 8, hw->cuda_version, 1);
    cdb_bind_text(st, 9, hw->nccl_version, 1);
    cdb_bind_text(st, 10, hw->interconnect, 1);
    sqlite3_bind_double(st, 11, hw->peak_flops_f32);
    sqlite3_bind_double(st, 12, hw->peak_flops_f16);
    sqlite3_bind_double(st, 13, hw->peak_flops_bf16);
    sqlite3_bind_double(st, 14, hw->memory_bandwidth);
    sqlite3_bind_double(st, 15, hw->intra_host_bandwidth);
    sqlite3_bind_double(st, 16, hw->intra_host_latency);
    sqlite3_bind_double(st, 17, hw->inter_host_bandwidth);
    sqlite3_bind_double(st, 18, hw->inter_host_latency);
    cdb_bind_text(st, 19, hw->capabilities, 1);
    cdb_bind_text(st, 20, now, 0);
    rc = cdb_exec_stmt(db, st, sql_hw_insert);
    cdb_release(st);
    if (rc < 0)
        goto cleanup;
    rc = lookup_id(db, sql_hw_id, hw->fingerprint, &hw->id);
cleanup:
    return cdb_txn_leave(db, rc);
}

static int hw_read(Costdb *db, const char *sql, sqlite3_stmt *st, CostdbHardware *out)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return cdb_err(db, COSTDB_ENOTFOUND, "%s: no such hardware", db->path);
    if (rc != SQLITE_ROW)
        return cdb_fail(db, rc, sql);
    memset(out, 0, sizeof *out);
    if ((rc = cdb_row_check(db, st)) < 0 ||
        (rc = cdb_col_int(db, st, 5, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &out->gpus_per_host)) < 0 ||
        (rc = cdb_col_range(db, st, 6, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &out->device_memory)) < 0)
        return rc;
    for (int c = 11; c <= 18; c++) {
        double v = cdb_column_double(st, c);
        if (!isfinite(v) || v < 0)
            return cdb_err(db, COSTDB_ECORRUPT, "%s: table hardware, row (id=%lld): column %s"
                           " = %g is not a finite number >= 0", db->path,
                           (long long)sqlite3_column_int64(st, 0), sqlite3_column_name(st, c), v);
    }
    out->id = sqlite3_column_int64(st, 0);
    rc = cdb_column_text(db, st, 1, out->fingerprint, sizeof out->fingerprint, "fingerprint");
    if (!rc) rc = cdb_column_text(db, st, 2, out->kind, sizeof out->kind, "kind");
    if (!rc) rc = cdb_column_text(db, st, 3, out->spec_name, sizeof out->spec_name, "spec_name");
    if (!rc) rc = cdb_column_text(db, st, 4, out->gpu_model, sizeof out->gpu_model, "gpu_model");
    if (!rc) rc = cdb_column_text(db, st, 7, out->driver_version, sizeof out->driver_version, "driver_version");
    if (!rc) rc = cdb_column_text(db, st, 8, out->cuda_version, sizeof out->cuda_version, "cuda_version");
    if (!rc) rc = cdb_column_text(db, st, 9, out->nccl_version, sizeof out->nccl_version, "nccl_version");
    if (!rc) rc = cdb_column_text(db, st, 10, out->interconnect, sizeof out->interconnect, "interconnect");
    out->peak_flops_f32 = cdb_column_double(st, 11);
    out->peak_flops_f16 = cdb_column_double(st, 12);
    out->peak_flops_bf16 = cdb_column_double(st, 13);
    out->memory_bandwidth = cdb_column_double(st, 14);
    out->intra_host_bandwidth = cdb_column_double(st, 15);
    out->intra_host_latency = cdb_column_double(st, 16);
    out->inter_host_bandwidth = cdb_column_double(st, 17);
    out->inter_host_latency = cdb_column_double(st, 18);
    if (!rc) rc = cdb_column_text(db, st, 19, out->capabilities, sizeof out->capabilities, "capabilities");
    return rc;
}

int costdb_hardware_get(Costdb *db, int64_t id, CostdbHardware *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_hw_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = hw_read(db, sql_hw_get, st, out);
    cdb_release(st);
    return rc;
}

int costdb_hardware_find(Costdb *db, const char *fingerprint, CostdbHardware *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !fingerprint || !out)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_hw_find, &st)) < 0)
        return rc;
    sqlite3_bind_text(st, 1, fingerprint, -1, SQLITE_STATIC);
    rc = hw_read(db, sql_hw_find, st, out);
    cdb_release(st);
    return rc;
}

/* ---- communication and compute curves ----------------------------------- */

static const char sql_comm_delete[] =
    "DELETE FROM comm_profile WHERE hardware_id = ?1 AND collective = ?2"
    " AND group_desc = ?3 AND dtype = ?4";
static const char sql_comm_insert[] =
    "INSERT OR REPLACE INTO comm_profile (hardware_id, collective, group_desc, dtype, bytes, seconds)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char sql_comm_get[] =
    "SELECT collective, group_desc, dtype, bytes, seconds FROM comm_profile"
    " WHERE hardware_id = ?1 AND collective = ?2 AND group_desc = ?3 AND dtype = ?4"
    " ORDER BY bytes";
static const char sql_comm_list[] =
    "SELECT collective, group_desc, dtype, bytes, seconds FROM comm_profile"
    " WHERE hardware_id = ?1 ORDER BY collective, group_desc, dtype, bytes";

int costdb_comm_put(Costdb *db, int64_t hardware_id, const CostdbCommPoint *pts, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || (n && !pts))
        return COSTDB_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if ((rc = cdb_check_text(db, pts[i].collective, sizeof pts[i].collective, "collective")) < 0 ||
            (rc = cdb_check_text(db, pts[i].group_desc, sizeof pts[i].group_desc, "group_desc")) < 0 ||
            (rc = cdb_check_text(db, pts[i].dtype, sizeof pts[i].dtype, "dtype")) < 0 ||
            (rc = cdb_check_double(db, pts[i].seconds, "seconds")) < 0)
            return rc;
    }
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    /* All deletes first: the points of one curve replace the old curve. */
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_comm_delete, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].collective, 0);
        cdb_bind_text(st, 3, pts[i].group_desc, 0);
        cdb_bind_text(st, 4, pts[i].dtype, 0);
        rc = cdb_exec_stmt(db, st, sql_comm_delete);
        cdb_release(st);
    }
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_comm_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].collective, 0);
        cdb_bind_text(st, 3, pts[i].group_desc, 0);
        cdb_bind_text(st, 4, pts[i].dtype, 0);
        sqlite3_bind_int64(st, 5, pts[i].bytes);
        sqlite3_bind_double(st, 6, pts[i].seconds);
        rc = cdb_exec_stmt(db, st, sql_comm_insert);
        cdb_release(st);
    }
    return cdb_txn_leave(db, rc);
}

static int comm_get_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbCommPoint *p = row;
    int rc;
    if ((rc = cdb_column_text(db, st, 0, p->collective, sizeof p->collective, "collective")) < 0 ||
        (rc = cdb_column_text(db, st, 1, p->group_desc, sizeof p->group_desc, "group_desc")) < 0 ||
        (rc = cdb_column_text(db, st, 2, p->dtype, sizeof p->dtype, "dtype")) < 0)
        return rc;
    if ((rc = cdb_col_range(db, st, 3, 1, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)", &p->bytes)) < 0)
        return rc;
    return cdb_col_seconds(db, st, 4, 0, &p->seconds);
}

int costdb_comm_get(Costdb *db, int64_t hardware_id, const char *collective,
                    const char *group_desc, const char *dtype,
                    CostdbCommPoint **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !collective || !group_desc || !dtype || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_comm_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, hardware_id);
    sqlite3_bind_text(st, 2, collective, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, group_desc, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, dtype, -1, SQLITE_STATIC);
    return cdb_collect(db, st, sql_comm_get, sizeof **out, comm_get_row, (void **)out, n);
}

int costdb_comm_list(Costdb *db, int64_t hardware_id, CostdbCommPoint **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_comm_list, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, hardware_id);
    return cdb_collect(db, st, sql_comm_list, sizeof **out, comm_get_row, (void **)out, n);
}

static const char sql_compute_delete[] =
    "DELETE FROM compute_profile WHERE hardware_id = ?1 AND op = ?2 AND dtype = ?3";
static const char sql_compute_insert[] =
    "INSERT OR REPLACE INTO compute_profile (hardware_id, op, dtype, size, rate)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char sql_compute_get[] =
    "SELECT op, dtype, size, rate FROM compute_profile"
    " WHERE hardware_id = ?1 AND op = ?2 AND dtype = ?3 ORDER BY size";

int costdb_compute_put(Costdb *db, int64_t hardware_id, const CostdbComputePoint *pts, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || (n && !pts))
        return COSTDB_EINVAL;
    for (size_t i = 0; i < n; i++) {
        if ((rc = cdb_check_text(db, pts[i].op, sizeof pts[i].op, "op")) < 0 ||
            (rc = cdb_check_text(db, pts[i].dtype, sizeof pts[i].dtype, "dtype")) < 0 ||
            (rc = cdb_check_double(db, pts[i].rate, "rate")) < 0)
            return rc;
    }
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_compute_delete, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].op, 0);
        cdb_bind_text(st, 3, pts[i].dtype, 0);
        rc = cdb_exec_stmt(db, st, sql_compute_delete);
        cdb_release(st);
    }
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_compute_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, hardware_id);
        cdb_bind_text(st, 2, pts[i].op, 0);
        cdb_bind_text(st, 3, pts[i].dtype, 0);
        sqlite3_bind_int64(st, 4, pts[i].size);
        sqlite3_bind_double(st, 5, pts[i].rate);
        rc = cdb_exec_stmt(db, st, sql_compute_insert);
        cdb_release(st);
    }
    return cdb_txn_leave(db, rc);
}

static int compute_get_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbComputePoint *p = row;
    int rc;
    if ((rc = cdb_column_text(db, st, 0, p->op, sizeof p->op, "op")) < 0 ||
        (rc = cdb_column_text(db, st, 1, p->dtype, sizeof p->dtype, "dtype")) < 0)
        return rc;
    if ((rc = cdb_col_range(db, st, 2, 0, INT64_MAX, NULL, &p->size)) < 0)
        return rc;
    p->rate = sqlite3_column_double(st, 3);
    if (!isfinite(p->rate) || p->rate < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: table compute_profile, row (op=%s, size=%lld):"
                       " rate %g is not a finite number >= 0", db->path, p->op,
                       (long long)p->size, p->rate);
    return 0;
}

int costdb_compute_get(Costdb *db, int64_t hardware_id, const char *op, const char *dtype,
                       CostdbComputePoint **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !op || !dtype || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_compute_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, hardware_id);
    sqlite3_bind_text(st, 2, op, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, dtype, -1, SQLITE_STATIC);
    return cdb_collect(db, st, sql_compute_get, sizeof **out, compute_get_row, (void **)out, n);
}

/* ---- models ------------------------------------------------------------- */

static const char sql_model_insert[] =
    "INSERT INTO model (name, signature, graph_hash, options, dtype, batch_size,"
    " num_params, num_layers, layer_option, created_at)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (signature) DO NOTHING";
static const char sql_model_id[] = "SELECT id FROM model WHERE signature = ?1";
static const char sql_layer_insert[] =
    "INSERT INTO model_layer (model_id, layer_index, op_begin, op_end, fwd_flops,"
    " bwd_flops, param_bytes, activation_bytes, inbound_bytes)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
static const char sql_model_get[] =
    "SELECT id, name, signature, graph_hash, options, dtype, batch_size, num_params,"
    " num_layers, layer_option FROM model WHERE id = ?1";
static const char sql_layers_get[] =
    "SELECT layer_index, op_begin, op_end, fwd_flops, bwd_flops, param_bytes,"
    " activation_bytes, inbound_bytes FROM model_layer WHERE model_id = ?1"
    " ORDER BY layer_index";

int costdb_model_upsert(Costdb *db, CostdbModel *m, const CostdbLayer *layers, size_t n_layers)
{
    sqlite3_stmt *st = NULL;
    char now[32];
    int rc, inserted;
    if (!db || !m || (n_layers && !layers))
        return COSTDB_EINVAL;
    if ((rc = cdb_check_text(db, m->name, sizeof m->name, "name")) < 0 ||
        (rc = cdb_check_text(db, m->signature, sizeof m->signature, "signature")) < 0 ||
        (rc = cdb_check_text(db, m->graph_hash, sizeof m->graph_hash, "graph_hash")) < 0 ||
        (rc = cdb_check_text(db, m->options, sizeof m->options, "options")) < 0 ||
        (rc = cdb_check_text(db, m->dtype, sizeof m->dtype, "dtype")) < 0 ||
        (rc = cdb_check_text(db, m->layer_option, sizeof m->layer_option, "layer_option")) < 0)
        return rc;
    for (size_t i = 0; i < n_layers; i++)
        if ((rc = cdb_check_double(db, layers[i].fwd_flops, "fwd_flops")) < 0 ||
            (rc = cdb_check_double(db, layers[i].bwd_flops, "bwd_flops")) < 0)
            return rc;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_model_insert, &st)) < 0)
        goto cleanup;
    costdb_now(now, sizeof now);
    cdb_bind_text(st, 1, m->name, 0);
    cdb_bind_text(st, 2, m->signature, 0);
    cdb_bind_text(st, 3, m->graph_hash, 0);
    cdb_bind_text(st, 4, m->options, 1);
    cdb_bind_text(st, 5, m->dtype, 0);
    sqlite3_bind_int64(st, 6, m->batch_size);
    sqlite3_bind_int64(st, 7, m->num_params);
    sqlite3_bind_int(st, 8, m->num_layers);
    cdb_bind_text(st, 9, m->layer_option, 0);
    cdb_bind_text(st, 10, now, 0);
    rc = cdb_exec_stmt(db, st, sql_model_insert);
    inserted = sqlite3_changes(db->sql) > 0;
    cdb_release(st);
    if (rc < 0)
        goto cleanup;
    if ((rc = lookup_id(db, sql_model_id, m->signature, &m->id)) < 0 || !inserted)
        goto cleanup;
    for (size_t i = 0; i < n_layers && rc >= 0; i++) {
        const CostdbLayer *l = &layers[i];
        if ((rc = cdb_prepare(db, sql_layer_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, m->id);
        sqlite3_bind_int(st, 2, l->layer_index);
        sqlite3_bind_int(st, 3, l->op_begin);
        sqlite3_bind_int(st, 4, l->op_end);
        sqlite3_bind_double(st, 5, l->fwd_flops);
        sqlite3_bind_double(st, 6, l->bwd_flops);
        sqlite3_bind_int64(st, 7, l->param_bytes);
        sqlite3_bind_int64(st, 8, l->activation_bytes);
        sqlite3_bind_int64(st, 9, l->inbound_bytes);
        rc = cdb_exec_stmt(db, st, sql_layer_insert);
        cdb_release(st);
    }
cleanup:
    return cdb_txn_leave(db, rc);
}

int costdb_model_get(Costdb *db, int64_t id, CostdbModel *out)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_model_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no model %lld", db->path, (long long)id);
        goto cleanup;
    }
    if (rc != SQLITE_ROW) {
        rc = cdb_fail(db, rc, sql_model_get);
        goto cleanup;
    }
    memset(out, 0, sizeof *out);
    if ((rc = cdb_row_check(db, st)) < 0 ||
        (rc = cdb_col_range(db, st, 6, 1, COSTDB_MAX_BATCH, "(COSTDB_MAX_BATCH)",
                            &out->batch_size)) < 0 ||
        (rc = cdb_col_range(db, st, 7, 0, INT64_MAX, NULL, &out->num_params)) < 0 ||
        (rc = cdb_col_int(db, st, 8, 1, COSTDB_MAX_LAYERS, "(COSTDB_MAX_LAYERS)",
                          &out->num_layers)) < 0)
        goto cleanup;
    out->id = sqlite3_column_int64(st, 0);
    rc = cdb_column_text(db, st, 1, out->name, sizeof out->name, "name");
    if (!rc) rc = cdb_column_text(db, st, 2, out->signature, sizeof out->signature, "signature");
    if (!rc) rc = cdb_column_text(db, st, 3, out->graph_hash, sizeof out->graph_hash, "graph_hash");
    if (!rc) rc = cdb_column_text(db, st, 4, out->options, sizeof out->options, "options");
    if (!rc) rc = cdb_column_text(db, st, 5, out->dtype, sizeof out->dtype, "dtype");
    if (!rc) rc = cdb_column_text(db, st, 9, out->layer_option, sizeof out->layer_option, "layer_option");
cleanup:
    cdb_release(st);
    return rc;
}

static int model_layers_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbLayer *l = row;
    int rc;
    if ((rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                          &l->layer_index)) < 0 ||
        (rc = cdb_col_int(db, st, 1, 0, COSTDB_MAX_OPS, "(COSTDB_MAX_OPS)", &l->op_begin)) < 0 ||
        (rc = cdb_col_int(db, st, 2, l->op_begin, COSTDB_MAX_OPS, "(op_begin..COSTDB_MAX_OPS)",
                          &l->op_end)) < 0 ||
        (rc = cdb_col_range(db, st, 5, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &l->param_bytes)) < 0 ||
        (rc = cdb_col_range(db, st, 6, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &l->activation_bytes)) < 0 ||
        (rc = cdb_col_range(db, st, 7, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &l->inbound_bytes)) < 0)
        return rc;
    l->fwd_flops = sqlite3_column_double(st, 3);
    l->bwd_flops = sqlite3_column_double(st, 4);
    if (!isfinite(l->fwd_flops) || !isfinite(l->bwd_flops) || l->fwd_flops < 0 || l->bwd_flops < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: table model_layer, row (layer_index=%d): FLOPs"
                       " %g/%g are not finite numbers >= 0", db->path, l->layer_index,
                       l->fwd_flops, l->bwd_flops);
    return 0;
}

int costdb_model_layers(Costdb *db, int64_t model_id, CostdbLayer **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_layers_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, model_id);
    return cdb_collect(db, st, sql_layers_get, sizeof **out, model_layers_row, (void **)out, n);
}
