/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Plans with their stages, and the resharding tasks between a plan's
 * stages (placements: placement_read.c, placement_write.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "costdb_int.h"

/* ---- plans -------------------------------------------------------------- */

static const char sql_plan_insert[] =
    "INSERT INTO plan (sweep_id, kind, objective, micro_batches, global_batch,"
    " memory_budget, max_stages, cost, full_cost, feasible, solve_seconds, options,"
    " created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char sql_stage_insert[] =
    "INSERT INTO plan_stage (plan_id, stage_index, start_layer, end_layer, submesh_index,"
    " submesh_hosts, submesh_gpus, config_index, logical_a, logical_b, force_batch_dim,"
    " fwd_cost, bwd_cost, peak_memory, memory_needed, available_memory)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";
static const char sql_plan_get[] =
    "SELECT id, sweep_id, kind, objective, micro_batches, global_batch, memory_budget,"
    " max_stages, cost, full_cost, feasible, solve_seconds, options, created_at"
    " FROM plan WHERE id = ?1";
static const char sql_stages_get[] =
    "SELECT stage_index, start_layer, end_layer, submesh_index, submesh_hosts,"
    " submesh_gpus, config_index, logical_a, logical_b, force_batch_dim, fwd_cost,"
    " bwd_cost, peak_memory, memory_needed, available_memory FROM plan_stage"
    " WHERE plan_id = ?1 ORDER BY stage_index";
static const char sql_plan_latest_any[] = "SELECT max(id) FROM plan";
static const char sql_plan_latest_sweep[] = "SELECT max(id) FROM plan WHERE sweep_id = ?1";

/* What plan_stages_row accepts, checked before a stage is stored: never
 * write a row the readers refuse. 0 or COSTDB_EINVAL naming stage i. */
static int plan_stage_check(Costdb *db, const CostdbPlanStage *s, size_t i, int layers)
{
    const char *what = NULL;
    if (s->stage_index != (int)i)
        what = "stage_index (the stages are numbered 0..n-1 in order)";
    else if (s->start_layer < 0 || s->end_layer < s->start_layer || s->end_layer >= layers ||
             (i > 0 && s->start_layer != s[-1].end_layer + 1))
        what = "start_layer..end_layer (consecutive ranges inside the sweep's layers)";
    else if (s->submesh_index < -1 || s->submesh_index >= COSTDB_MAX_INDEX ||
             s->config_index < -1 || s->config_index >= COSTDB_MAX_INDEX)
        what = "submesh_index or config_index (-1 .. COSTDB_MAX_INDEX - 1)";
    else if (s->submesh_hosts < 1 || s->submesh_gpus < 1 || s->logical_a < 1 ||
             s->logical_b < 1 ||
             (int64_t)s->submesh_hosts * s->submesh_gpus > COSTDB_MAX_DEVICES ||
             (int64_t)s->logical_a * s->logical_b > COSTDB_MAX_DEVICES)
        what = "submesh_hosts x submesh_gpus or logical_a x logical_b (1 .. COSTDB_MAX_DEVICES)";
    else if (s->force_batch_dim < -1 || s->force_batch_dim > 1)
        what = "force_batch_dim (-1, 0 or 1)";
    else if (s->peak_memory < 0 || s->peak_memory > COSTDB_MAX_BYTES || s->memory_needed < 0 ||
             s->available_memory < 0 || s->available_memory > COSTDB_MAX_BYTES)
        what = "peak_memory, memory_needed or available_memory (0 .. COSTDB_MAX_BYTES)";
    if (!what)
        return 0;
    return cdb_err(db, COSTDB_EINVAL,
                   "%s: plan stage %zu (stage_index=%d, submesh %d x %d, logical %d x %d): field %s"
                   " is out of range", db->path, i, s->stage_index, s->submesh_hosts,
                   s->submesh_gpus, s->logical_a, s->logical_b, what);
}

int costdb_plan_put(Costdb *db, CostdbPlan *p, const CostdbPlanStage *stages, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc, layers = COSTDB_MAX_LAYERS;
    if (!db || !p || (n && !stages))
        return COSTDB_EINVAL;
    if ((rc = cdb_check_text(db, p->kind, sizeof p->kind, "kind")) < 0 ||
        (rc = cdb_check_text(db, p->objective, sizeof p->objective, "objective")) < 0 ||
        (rc = cdb_check_text(db, p->options, sizeof p->options, "options")) < 0 ||
        (rc = cdb_check_text(db, p->created_at, sizeof p->created_at, "created_at")) < 0 ||
        (rc = cdb_check_double(db, p->cost, "cost")) < 0 ||
        /* full_cost NaN means "not estimated": stored as NULL */
        (rc = isnan(p->full_cost) ? 0 : cdb_check_double(db, p->full_cost, "full_cost")) < 0 ||
        (rc = cdb_check_double(db, p->solve_seconds, "solve_seconds")) < 0)
        return rc;
    if (p->micro_batches < 1 || p->micro_batches > COSTDB_MAX_MICRO_BATCHES)
        return cdb_err(db, COSTDB_EINVAL, "%s: plan: micro_batches %d is outside 1..%d"
                       " (COSTDB_MAX_MICRO_BATCHES)", db->path, p->micro_batches,
                       COSTDB_MAX_MICRO_BATCHES);
    if (n && (rc = cdb_sweep_layers(db, p->sweep_id, &layers)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = plan_stage_check(db, &stages[i], i, layers)) < 0 ||
            (rc = cdb_check_double(db, stages[i].fwd_cost, "fwd_cost")) < 0 ||
            (rc = cdb_check_double(db, stages[i].bwd_cost, "bwd_cost")) < 0)
            return rc;
    if (!p->created_at[0])
        costdb_now(p->created_at, sizeof p->created_at);
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_plan_insert, &st)) < 0)
        goto cleanup;
    sqlite3_bind_int64(st, 1, p->sweep_id);
    cdb_bind_text(st, 2, p->kind, 0);
    cdb_bind_text(st, 3, p->objective, 0);
    sqlite3_bind_int(st, 4, p->micro_batches);
    cdb_bind_int_or_null(st, 5, p->global_batch, 0);
    cdb_bind_int_or_null(st, 6, p->memory_budget, 0);
    cdb_bind_int_or_null(st, 7, p->max_stages, 0);
    sqlite3_bind_double(st, 8, p->cost);
    if (isnan(p->full_cost))
        sqlite3_bind_null(st, 9);
    else
        sqlite3_bind_double(st, 9, p->full_cost);
    sqlite3_bind_int(st, 10, p->feasible ? 1 : 0);
    sqlite3_bind_double(st, 11, p->solve_seconds);
    cdb_bind_text(st, 12, p->options, 1);
    cdb_bind_text(st, 13, p->created_at, 0);
    rc = cdb_exec_stmt(db, st, sql_plan_insert);
    cdb_release(st);
    if (rc < 0)
        goto cleanup;
    p->id = sqlite3_last_insert_rowid(db->sql);
    for (size_t i = 0; i < n && rc >= 0; i++) {
        const CostdbPlanStage *s = &stages[i];
        if ((rc = cdb_prepare(db, sql_stage_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, p->id);
        sqlite3_bind_int(st, 2, s->stage_index);
        sqlite3_bind_int(st, 3, s->start_layer);
        sqlite3_bind_int(st, 4, s->end_layer);
        cdb_bind_int_or_null(st, 5, s->submesh_index, -1);
        sqlite3_bind_int(st, 6, s->submesh_hosts);
        sqlite3_bind_int(st, 7, s->submesh_gpus);
        cdb_bind_int_or_null(st, 8, s->config_index, -1);
        sqlite3_bind_int(st, 9, s->logical_a);
        sqlite3_bind_int(st, 10, s->logical_b);
        cdb_bind_int_or_null(st, 11, s->force_batch_dim, -1);
        sqlite3_bind_double(st, 12, s->fwd_cost);
        sqlite3_bind_double(st, 13, s->bwd_cost);
        sqlite3_bind_int64(st, 14, s->peak_memory);
        sqlite3_bind_int64(st, 15, s->memory_needed);
        sqlite3_bind_int64(st, 16, s->available_memory);
        rc = cdb_exec_stmt(db, st, sql_stage_insert);
        cdb_release(st);
    }
cleanup:
    rc = cdb_txn_leave(db, rc);
    if (rc < 0)
        p->id = 0;
    return rc;
}

static int plan_stages_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbPlanStage *s = row;
    int rc;
    s->submesh_index = s->config_index = s->force_batch_dim = -1;
    /* A stage's layers and mesh size loops and device tables in the solver
     * and the reports: bounded like a sweep's. */
    if ((rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &s->stage_index)) < 0 ||
        (rc = cdb_col_int(db, st, 1, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                          &s->start_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 2, s->start_layer, COSTDB_MAX_LAYERS - 1,
                          "(start_layer..COSTDB_MAX_LAYERS)", &s->end_layer)) < 0 ||
        (sqlite3_column_type(st, 3) != SQLITE_NULL &&
         (rc = cdb_col_int(db, st, 3, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                           &s->submesh_index)) < 0) ||
        (rc = cdb_col_int(db, st, 4, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &s->submesh_hosts)) < 0 ||
        (rc = cdb_col_int(db, st, 5, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &s->submesh_gpus)) < 0 ||
        (sqlite3_column_type(st, 6) != SQLITE_NULL &&
         (rc = cdb_col_int(db, st, 6, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                           &s->config_index)) < 0) ||
        (rc = cdb_col_int(db, st, 7, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &s->logical_a)) < 0 ||
        (rc = cdb_col_int(db, st, 8, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &s->logical_b)) < 0 ||
        (sqlite3_column_type(st, 9) != SQLITE_NULL &&
         (rc = cdb_col_int(db, st, 9, 0, 1, NULL, &s->force_batch_dim)) < 0) ||
        (rc = cdb_col_seconds(db, st, 10, 1, &s->fwd_cost)) < 0 ||
        (rc = cdb_col_seconds(db, st, 11, 1, &s->bwd_cost)) < 0 ||
        (rc = cdb_col_range(db, st, 12, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &s->peak_memory)) < 0 ||
        (rc = cdb_col_range(db, st, 13, 0, INT64_MAX, NULL, &s->memory_needed)) < 0 ||
        (rc = cdb_col_range(db, st, 14, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                            &s->available_memory)) < 0)
        return rc;
    if ((int64_t)s->submesh_hosts * s->submesh_gpus > COSTDB_MAX_DEVICES ||
        (int64_t)s->logical_a * s->logical_b > COSTDB_MAX_DEVICES)
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s: table plan_stage, row (stage_index=%d): mesh %d x %d (logical %d x %d)"
                       " is more than %d devices (COSTDB_MAX_DEVICES)", db->path, s->stage_index,
                       s->submesh_hosts, s->submesh_gpus, s->logical_a, s->logical_b,
                       COSTDB_MAX_DEVICES);
    return 0;
}

/* What the reports index by a plan's stages and layers: stage_index i in
 * row i, consecutive layer ranges inside the sweep's layers (dp_result.txt
 * lists each stage's layers). 0 or ECORRUPT naming the row. */
static int plan_stages_check(Costdb *db, int64_t id, int64_t sweep_id, const CostdbPlanStage *s,
                             size_t n)
{
    int layers = COSTDB_MAX_LAYERS, rc;
    if ((rc = cdb_sweep_layers(db, sweep_id, &layers)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const char *col = NULL;
        long long got = 0, want = 0;
        if (s[i].stage_index != (int)i)
            col = "stage_index", got = s[i].stage_index, want = (long long)i;
        else if (i > 0 && s[i].start_layer != s[i - 1].end_layer + 1)
            col = "start_layer", got = s[i].start_layer, want = s[i - 1].end_layer + 1;
        if (col)
            return cdb_err(db, COSTDB_ECORRUPT,
                           "%s: table plan_stage, row (plan_id=%lld, stage_index=%d): column %s"
                           " = %lld where %lld was expected (a plan's stages are numbered 0..n-1"
                           " and cover consecutive layers)", db->path, (long long)id,
                           s[i].stage_index, col, got, want);
        if (s[i].end_layer >= layers)
            return cdb_err(db, COSTDB_ECORRUPT,
                           "%s: table plan_stage, row (plan_id=%lld, stage_index=%d): column"
                           " end_layer = %d is past the sweep's %d layers (0..%d)", db->path,
                           (long long)id, s[i].stage_index, s[i].end_layer, layers, layers - 1);
    }
    return 0;
}

static int plan_stages(Costdb *db, int64_t id, int64_t sweep_id, CostdbPlanStage **out,
                       size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql_stages_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    if ((rc = cdb_collect(db, st, sql_stages_get, sizeof **out, plan_stages_row, (void **)out,
                          n)) < 0)
        return rc;
    /* Readers index the stage array by stage_index (a resharding task's
     * src_stage/dst_stage too) */
    if ((rc = plan_stages_check(db, id, sweep_id, *out, *n)) < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

int costdb_plan_get(Costdb *db, int64_t id, CostdbPlan *out, CostdbPlanStage **stages, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || (stages && !n))
        return COSTDB_EINVAL;
    if (stages) {
        *stages = NULL;
        *n = 0;
    }
    if ((rc = cdb_prepare(db, sql_plan_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no plan %lld", db->path, (long long)id);
        goto cleanup;
    }
    if (rc != SQLITE_ROW) {
        rc = cdb_fail(db, rc, sql_plan_get);
        goto cleanup;
    }
    memset(out, 0, sizeof *out);
    if ((rc = cdb_row_check(db, st)) < 0 ||
        (rc = cdb_col_int(db, st, 4, 1, COSTDB_MAX_MICRO_BATCHES, "(COSTDB_MAX_MICRO_BATCHES)",
                          &out->micro_batches)) < 0)
        goto cleanup;
    if (sqlite3_column_type(st, 7) != SQLITE_NULL &&
        (rc = cdb_col_int(db, st, 7, 0, COSTDB_MAX_LAYERS, "(COSTDB_MAX_LAYERS)",
                          &out->max_stages)) < 0)
        goto cleanup;
    if (isnan(sqlite3_column_double(st, 8)) || sqlite3_column_double(st, 8) < 0) {
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table plan, row (id=%lld): cost %g is not >= 0",
                     db->path, (long long)sqlite3_column_int64(st, 0),
                     sqlite3_column_double(st, 8));
        goto cleanup;
    }
    out->id = sqlite3_column_int64(st, 0);
    out->sweep_id = sqlite3_column_int64(st, 1);
    rc = cdb_column_text(db, st, 2, out->kind, sizeof out->kind, "kind");
    if (!rc) rc = cdb_column_text(db, st, 3, out->objective, sizeof out->objective, "objective");
    out->global_batch = cdb_column_int_or(st, 5, 0);
    out->memory_budget = cdb_column_int_or(st, 6, 0);
    out->cost = sqlite3_column_double(st, 8);
    out->full_cost = cdb_column_double(st, 9);
    out->feasible = sqlite3_column_int(st, 10);
    out->solve_seconds = cdb_column_double(st, 11);
    if (!rc) rc = cdb_column_text(db, st, 12, out->options, sizeof out->options, "options");
    if (!rc) rc = cdb_column_text(db, st, 13, out->created_at, sizeof out->created_at, "created_at");
    cdb_release(st);
    st = NULL;
    if (rc == 0 && stages)
        rc = plan_stages(db, id, out->sweep_id, stages, n);
cleanup:
    cdb_release(st);
    return rc;
}

int costdb_plan_latest(Costdb *db, int64_t sweep_id, int64_t *id)
{
    const char *sql = sweep_id > 0 ? sql_plan_latest_sweep : sql_plan_latest_any;
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !id)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    if (sweep_id > 0)
        sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (rc == SQLITE_ROW) {
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no plan", db->path);
    } else {
        rc = cdb_fail(db, rc, sql);
    }
    cdb_release(st);
    return rc;
}

/* ---- resharding tasks --------------------------------------------------- */

static const char sql_task_insert[] =
    "INSERT INTO resharding_task (plan_id, task_index, src_stage, dst_stage, tensor_name,"
    " shape, dtype, src_spec, dst_spec, bytes, strategy, seconds)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";
static const char sql_task_get[] =
    "SELECT task_index, src_stage, dst_stage, tensor_name, shape, dtype, src_spec,"
    " dst_spec, bytes, strategy, seconds FROM resharding_task WHERE plan_id = ?1"
    " ORDER BY task_index";

static const char sql_stage_count[] = "SELECT count(*) FROM plan_stage WHERE plan_id = ?1";

/* *count = the number of stages plan_id has (0 for no such plan). */
static int plan_stage_count(Costdb *db, int64_t plan_id, int *count)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = cdb_prepare(db, sql_stage_count, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, plan_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0);
        *count = c > COSTDB_MAX_INDEX ? COSTDB_MAX_INDEX : (int)c;
        rc = 0;
    } else {
        rc = cdb_fail(db, rc, sql_stage_count);
    }
    cdb_release(st);
    return rc;
}

int costdb_resharding_put(Costdb *db, int64_t plan_id, const CostdbReshardingTask *t, size_t n)
{
    sqlite3_stmt *st = NULL;
    int rc, nst = 0;
    if (!db || (n && !t))
        return COSTDB_EINVAL;
    if (n && (rc = plan_stage_count(db, plan_id, &nst)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (t[i].src_stage < 0 || t[i].src_stage >= nst || t[i].dst_stage < 0 ||
            t[i].dst_stage >= nst)
            return cdb_err(db, COSTDB_EINVAL, "%s: resharding task %zu: src_stage %d or dst_stage"
                           " %d is not a stage of plan %lld (%d stage%s)", db->path, i,
                           t[i].src_stage, t[i].dst_stage, (long long)plan_id, nst,
                           nst == 1 ? "" : "s");
        if ((rc = cdb_check_text(db, t[i].tensor_name, sizeof t[i].tensor_name, "tensor_name")) < 0 ||
            (rc = cdb_check_text(db, t[i].shape, sizeof t[i].shape, "shape")) < 0 ||
            (rc = cdb_check_text(db, t[i].dtype, sizeof t[i].dtype, "dtype")) < 0 ||
            (rc = cdb_check_text(db, t[i].src_spec, sizeof t[i].src_spec, "src_spec")) < 0 ||
            (rc = cdb_check_text(db, t[i].dst_spec, sizeof t[i].dst_spec, "dst_spec")) < 0 ||
            (rc = cdb_check_text(db, t[i].strategy, sizeof t[i].strategy, "strategy")) < 0 ||
            (rc = cdb_check_double(db, t[i].seconds, "seconds")) < 0)
            return rc;
    }
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_task_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, plan_id);
        sqlite3_bind_int(st, 2, t[i].task_index);
        sqlite3_bind_int(st, 3, t[i].src_stage);
        sqlite3_bind_int(st, 4, t[i].dst_stage);
        cdb_bind_text(st, 5, t[i].tensor_name, 0);
        cdb_bind_text(st, 6, t[i].shape, 0);
        cdb_bind_text(st, 7, t[i].dtype, 0);
        cdb_bind_text(st, 8, t[i].src_spec, 0);
        cdb_bind_text(st, 9, t[i].dst_spec, 0);
        sqlite3_bind_int64(st, 10, t[i].bytes);
        cdb_bind_text(st, 11, t[i].strategy, 0);
        sqlite3_bind_double(st, 12, t[i].seconds);
        rc = cdb_exec_stmt(db, st, sql_task_insert);
        cdb_release(st);
    }
    return cdb_txn_leave(db, rc);
}

static int resharding_get_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbReshardingTask *t = row;
    int rc;
    if ((rc = cdb_col_int(db, st, 0, 0, INT32_MAX, NULL, &t->task_index)) < 0 ||
        (rc = cdb_col_int(db, st, 1, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &t->src_stage)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &t->dst_stage)) < 0 ||
        (rc = cdb_col_range(db, st, 8, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)", &t->bytes)) < 0 ||
        (rc = cdb_col_seconds(db, st, 10, 1, &t->seconds)) < 0)
        return rc;
    if ((rc = cdb_column_text(db, st, 3, t->tensor_name, sizeof t->tensor_name, "tensor_name")) < 0 ||
        (rc = cdb_column_text(db, st, 4, t->shape, sizeof t->shape, "shape")) < 0 ||
        (rc = cdb_column_text(db, st, 5, t->dtype, sizeof t->dtype, "dtype")) < 0 ||
        (rc = cdb_column_text(db, st, 6, t->src_spec, sizeof t->src_spec, "src_spec")) < 0 ||
        (rc = cdb_column_text(db, st, 7, t->dst_spec, sizeof t->dst_spec, "dst_spec")) < 0 ||
        (rc = cdb_column_text(db, st, 9, t->strategy, sizeof t->strategy, "strategy")) < 0)
        return rc;
    return 0;
}

int costdb_resharding_get(Costdb *db, int64_t plan_id, CostdbReshardingTask **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc, nst = 0;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_task_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, plan_id);
    if ((rc = cdb_collect(db, st, sql_task_get, sizeof **out, resharding_get_row, (void **)out,
                          n)) < 0 || *n == 0)
        return rc;
    /* the reports index the plan's stage array by both stages */
    if ((rc = plan_stage_count(db, plan_id, &nst)) < 0)
        goto refuse;
    for (size_t i = 0; i < *n; i++) {
        const CostdbReshardingTask *t = &(*out)[i];
        const char *col = t->src_stage >= nst ? "src_stage" : t->dst_stage >= nst ? "dst_stage" : NULL;
        if (col) {
            rc = cdb_err(db, COSTDB_ECORRUPT,
                         "%s: table resharding_task, row (plan_id=%lld, task_index=%d): column"
                         " %s = %d is not a stage of the plan (it has %d stage%s)", db->path,
                         (long long)plan_id, t->task_index, col,
                         col[0] == 's' ? t->src_stage : t->dst_stage, nst, nst == 1 ? "" : "s");
            goto refuse;
        }
    }
    return 0;
refuse:
    free(*out);
    *out = NULL;
    *n = 0;
    return rc;
}
