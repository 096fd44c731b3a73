/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sweeps (provenance of one profiling run or one imported table), their
 * submesh and autosharding-config enumeration, and the stage profile entries
 * (one ModuleProfileResult per (sweep, i, j, s, c, phase)). Entries are
 * written as they are produced, each batch in its own transaction unless the
 * caller holds one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "costdb_int.h"
#include "entry_blocks.h"
#include "costdb_text.h"

static const char *const sweep_status_names[] = {
    "running", "complete", "interrupted", "failed", "imported",
};
static const char *const entry_status_names[] = {
    "ok", "oom", "failed", "timeout", "skipped",
};
#define N_SWEEP_STATUS (sizeof sweep_status_names / sizeof sweep_status_names[0])
#define N_ENTRY_STATUS (sizeof entry_status_names / sizeof entry_status_names[0])

const char *costdb_sweep_status_name(CostdbSweepStatus st)
{
    return (unsigned)st < N_SWEEP_STATUS ? sweep_status_names[st] : "unknown";
}

int costdb_sweep_status_parse(const char *s, CostdbSweepStatus *out)
{
    for (size_t i = 0; s && i < N_SWEEP_STATUS; i++) {
        if (!strcmp(s, sweep_status_names[i])) {
            *out = (CostdbSweepStatus)i;
            return 0;
        }
    }
    return COSTDB_EINVAL;
}

const char *costdb_status_name(CostdbStatus st)
{
    return (unsigned)st < N_ENTRY_STATUS ? entry_status_names[st] : "unknown";
}

int costdb_status_parse(const char *s, CostdbStatus *out)
{
    for (size_t i = 0; s && i < N_ENTRY_STATUS; i++) {
        if (!strcmp(s, entry_status_names[i])) {
            *out = (CostdbStatus)i;
            return 0;
        }
    }
    return COSTDB_EINVAL;
}

/* ---- sweeps ------------------------------------------------------------- */

static const char sql_sweep_insert[] =
    "INSERT INTO sweep (name, model_id, hardware_id, cluster_hosts, cluster_gpus,"
    " global_batch, micro_batches, num_layers, layer_option, submesh_space,"
    " logical_space, profile_mode, dtype, backend, tool_version, options, shard,"
    " source, started_at, finished_at, status, micro_batch_size)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
    " ?16, ?17, ?18, ?19, ?20, ?21, ?22)";
static const char sql_submesh_insert[] =
    "INSERT INTO sweep_submesh (sweep_id, submesh_index, hosts, gpus_per_host)"
    " VALUES (?1, ?2, ?3, ?4)";
static const char sql_config_insert[] =
    "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a,"
    " logical_b, force_batch_dim, memory_level, recompute, zero)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
#define SWEEP_SELECT(mbs)                                                            \
    "SELECT id, name, model_id, hardware_id, cluster_hosts, cluster_gpus,"          \
    " global_batch, micro_batches, num_layers, layer_option, submesh_space,"        \
    " logical_space, profile_mode, dtype, backend, tool_version, options, shard,"   \
    " source, started_at, finished_at, status, " mbs " FROM sweep "
/* Up to schema 9 the micro-batch size was not stored: a read-only reader
 * (which does not migrate) derives it as migration 010 does. */
#define SWEEP_MBS9                                                                   \
    "CASE WHEN typeof(global_batch) = 'integer' AND typeof(micro_batches) = 'integer'" \
    " AND micro_batches > 0 AND global_batch % micro_batches = 0"                    \
    " THEN global_batch / micro_batches END"
#define MBS_SCHEMA 10
static const char sql_sweep_get[] = SWEEP_SELECT("micro_batch_size") "WHERE id = ?1";
static const char sql_sweep_list[] = SWEEP_SELECT("micro_batch_size") "ORDER BY id";
static const char sql_sweep_get9[] = SWEEP_SELECT(SWEEP_MBS9) "WHERE id = ?1";
static const char sql_sweep_list9[] = SWEEP_SELECT(SWEEP_MBS9) "ORDER BY id";
static const char sql_sweep_latest[] = "SELECT max(id) FROM sweep";
static const char sql_sweep_status[] =
    "UPDATE sweep SET status = ?2, finished_at = CASE WHEN ?3 THEN ?4 ELSE finished_at END"
    " WHERE id = ?1";
static const char sql_sweep_delete[] = "DELETE FROM sweep WHERE id = ?1";
static const char sql_submeshes_get[] =
    "SELECT submesh_index, hosts, gpus_per_host FROM sweep_submesh WHERE sweep_id = ?1"
    " ORDER BY submesh_index";
static const char sql_configs_get[] =
    "SELECT submesh_index, config_index, logical_a, logical_b, force_batch_dim,"
    " memory_level, recompute, zero FROM sweep_config WHERE sweep_id = ?1 ORDER BY submesh_index, config_index";

static int sweep_check(Costdb *db, const CostdbSweep *s)
{
    int rc;
#define CHECK_TEXT(f) \
    if ((rc = cdb_check_text(db, s->f, sizeof s->f, #f)) < 0) return rc
    CHECK_TEXT(name);
    CHECK_TEXT(layer_option);
    CHECK_TEXT(submesh_space);
    CHECK_TEXT(logical_space);
    CHECK_TEXT(profile_mode);
    CHECK_TEXT(dtype);
    CHECK_TEXT(backend);
    CHECK_TEXT(tool_version);
    CHECK_TEXT(options);
    CHECK_TEXT(shard);
    CHECK_TEXT(source);
    CHECK_TEXT(started_at);
    CHECK_TEXT(finished_at);
#undef CHECK_TEXT
    if ((unsigned)s->status >= N_SWEEP_STATUS)
        return cdb_err(db, COSTDB_EINVAL, "%s: bad sweep status %d", db->path, (int)s->status);
    if (s->micro_batch_size < 0 ||
        (s->micro_batch_size > 0 && s->micro_batch_size * s->micro_batches != s->global_batch))
        return cdb_err(db, COSTDB_EINVAL,
                       "%s: sweep micro_batch_size %lld: %d micro-batches of it are not the"
                       " global batch %lld", db->path, (long long)s->micro_batch_size,
                       s->micro_batches, (long long)s->global_batch);
    return 0;
}

/* The variant fields have no SQL-side name for a bad recompute value, so
 * all three are checked here with a message naming the config. */
static int config_check(Costdb *db, const CostdbConfig *c)
{
    if (!costdb_variant_valid(c->variant))
        return cdb_err(db, COSTDB_EINVAL,
                       "%s: config (%d, %d): bad variant (memory_level %d, recompute %d,"
                       " zero %d)",
                       db->path, c->submesh_index, c->config_index, c->variant.memory_level,
                       c->variant.recompute, c->variant.zero);
    return 0;
}

int costdb_sweep_create(Costdb *db, CostdbSweep *s,
                        const CostdbSubmesh *submeshes, size_t n_submeshes,
                        const CostdbConfig *configs, size_t n_configs)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !s || (n_submeshes && !submeshes) || (n_configs && !configs))
        return COSTDB_EINVAL;
    /* a writer that does not say derives it (a CSV import, a merge of an
     * older file's sweep) */
    if (!s->micro_batch_size && s->micro_batches > 0 && s->global_batch > 0 &&
        s->global_batch % s->micro_batches == 0)
        s->micro_batch_size = s->global_batch / s->micro_batches;
    if ((rc = sweep_check(db, s)) < 0)
        return rc;
    for (size_t i = 0; i < n_configs; i++)
        if ((rc = config_check(db, &configs[i])) < 0)
            return rc;
    if (!s->started_at[0])
        costdb_now(s->started_at, sizeof s->started_at);
    if (!s->tool_version[0])
        snprintf(s->tool_version, sizeof s->tool_version, "%s", APPROF_VERSION);
    if (!s->profile_mode[0])
        snprintf(s->profile_mode, sizeof s->profile_mode, "composition");
    if (!s->dtype[0])
        snprintf(s->dtype, sizeof s->dtype, "f32");
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_sweep_insert, &st)) < 0)
        goto cleanup;
    cdb_bind_text(st, 1, s->name, 1);
    cdb_bind_int_or_null(st, 2, s->model_id, 0);
    cdb_bind_int_or_null(st, 3, s->hardware_id, 0);
    sqlite3_bind_int(st, 4, s->cluster_hosts);
    sqlite3_bind_int(st, 5, s->cluster_gpus);
    sqlite3_bind_int64(st, 6, s->global_batch);
    sqlite3_bind_int(st, 7, s->micro_batches);
    sqlite3_bind_int(st, 8, s->num_layers);
    cdb_bind_text(st, 9, s->layer_option, 0);
    cdb_bind_text(st, 10, s->submesh_space, 0);
    cdb_bind_text(st, 11, s->logical_space, 0);
    cdb_bind_text(st, 12, s->profile_mode, 0);
    cdb_bind_text(st, 13, s->dtype, 0);
    cdb_bind_text(st, 14, s->backend, 0);
    cdb_bind_text(st, 15, s->tool_version, 0);
    cdb_bind_text(st, 16, s->options, 1);
    cdb_bind_text(st, 17, s->shard, 1);
    cdb_bind_text(st, 18, s->source, 1);
    cdb_bind_text(st, 19, s->started_at, 0);
    cdb_bind_text(st, 20, s->finished_at, 1);
    cdb_bind_text(st, 21, sweep_status_names[s->status], 0);
    cdb_bind_int_or_null(st, 22, s->micro_batch_size, 0);
    rc = cdb_exec_stmt(db, st, sql_sweep_insert);
    cdb_release(st);
    if (rc < 0)
        goto cleanup;
    s->id = sqlite3_last_insert_rowid(db->sql);
    for (size_t i = 0; i < n_submeshes && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_submesh_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, s->id);
        sqlite3_bind_int(st, 2, submeshes[i].index);
        sqlite3_bind_int(st, 3, submeshes[i].hosts);
        sqlite3_bind_int(st, 4, submeshes[i].gpus_per_host);
        rc = cdb_exec_stmt(db, st, sql_submesh_insert);
        cdb_release(st);
    }
    for (size_t i = 0; i < n_configs && rc >= 0; i++) {
        if ((rc = cdb_prepare(db, sql_config_insert, &st)) < 0)
            break;
        sqlite3_bind_int64(st, 1, s->id);
        sqlite3_bind_int(st, 2, configs[i].submesh_index);
        sqlite3_bind_int(st, 3, configs[i].config_index);
        sqlite3_bind_int(st, 4, configs[i].logical_a);
        sqlite3_bind_int(st, 5, configs[i].logical_b);
        cdb_bind_int_or_null(st, 6, configs[i].force_batch_dim, -1);
        sqlite3_bind_int(st, 7, configs[i].variant.memory_level);
        sqlite3_bind_text(st, 8, costdb_recompute_name(configs[i].variant.recompute), -1,
                          SQLITE_STATIC);
        sqlite3_bind_int(st, 9, configs[i].variant.zero);
        rc = cdb_exec_stmt(db, st, sql_config_insert);
        cdb_release(st);
    }
cleanup:
    rc = cdb_txn_leave(db, rc);
    if (rc < 0)
        s->id = 0;
    return rc;
}

static int sweep_read(Costdb *db, sqlite3_stmt *st, CostdbSweep *o)
{
    char status[32];
    int rc;
    memset(o, 0, sizeof *o);
    if ((rc = cdb_row_check(db, st)) < 0)
        return rc;
    o->id = sqlite3_column_int64(st, 0);
    o->model_id = cdb_column_int_or(st, 2, 0);
    o->hardware_id = cdb_column_int_or(st, 3, 0);
    /* The cluster sizes every device table downstream: bounded here. */
    if ((rc = cdb_col_int(db, st, 4, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &o->cluster_hosts)) < 0 ||
        (rc = cdb_col_int(db, st, 5, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &o->cluster_gpus)) < 0 ||
        (rc = cdb_col_range(db, st, 6, 1, COSTDB_MAX_BATCH, "(COSTDB_MAX_BATCH)",
                            &o->global_batch)) < 0 ||
        (rc = cdb_col_int(db, st, 7, 1, COSTDB_MAX_MICRO_BATCHES, "(COSTDB_MAX_MICRO_BATCHES)",
                          &o->micro_batches)) < 0 ||
        (rc = cdb_col_int(db, st, 8, 1, COSTDB_MAX_LAYERS, "(COSTDB_MAX_LAYERS)",
                          &o->num_layers)) < 0)
        return rc;
    if ((int64_t)o->cluster_hosts * o->cluster_gpus > COSTDB_MAX_DEVICES)
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s: table sweep, row (id=%lld): cluster %d x %d is more than %d devices"
                       " (COSTDB_MAX_DEVICES)", db->path, (long long)o->id, o->cluster_hosts,
                       o->cluster_gpus, COSTDB_MAX_DEVICES);
    rc = cdb_column_text(db, st, 1, o->name, sizeof o->name, "name");
#define TEXT(col, f) \
    if (!rc) rc = cdb_column_text(db, st, col, o->f, sizeof o->f, #f)
    TEXT(9, layer_option);
    TEXT(10, submesh_space);
    TEXT(11, logical_space);
    TEXT(12, profile_mode);
    TEXT(13, dtype);
    TEXT(14, backend);
    TEXT(15, tool_version);
    TEXT(16, options);
    TEXT(17, shard);
    if (!rc && o->shard[0] && costdb_shard_parse(o->shard, &(int){0}, &(int){0}) < 0)
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: table sweep, row (id=%lld): column shard = '%.40s'"
                     " is not K/N (0 <= K < N, as approf sweep --shard writes it)", db->path,
                     (long long)o->id, o->shard);
    TEXT(18, source);
    TEXT(19, started_at);
    TEXT(20, finished_at);
#undef TEXT
    if (!rc)
        rc = cdb_column_text(db, st, 21, status, sizeof status, "status");
    if (!rc && sqlite3_column_type(st, 22) != SQLITE_NULL &&
        (rc = cdb_col_range(db, st, 22, 1, COSTDB_MAX_BATCH, "(COSTDB_MAX_BATCH)",
                            &o->micro_batch_size)) == 0 &&
        o->micro_batch_size * o->micro_batches != o->global_batch)
        rc = cdb_err(db, COSTDB_ECORRUPT,
                     "%s: table sweep, row (id=%lld): column micro_batch_size = %lld times"
                     " micro_batches %d is not global_batch %lld", db->path, (long long)o->id,
                     (long long)o->micro_batch_size, o->micro_batches,
                     (long long)o->global_batch);
    if (!rc && costdb_sweep_status_parse(status, &o->status) < 0)
        rc = cdb_err(db, COSTDB_ECORRUPT, "%s: sweep %lld has unknown status '%s'",
                     db->path, (long long)o->id, status);
    return rc;
}

int costdb_micro_batch_family(int64_t gb, int64_t *sizes, int max)
{
    int n = 0;
    if (!sizes || gb <= 0)
        return 0;
    for (int b = 1; b <= 16 && n < max; b *= 2)
        if (gb % b == 0)
            sizes[n++] = gb / b;
    return n;
}

int costdb_sweep_get(Costdb *db, int64_t id, CostdbSweep *out)
{
    sqlite3_stmt *st = NULL;
    const char *sql;
    int rc;
    if (!db || !out)
        return COSTDB_EINVAL;
    sql = db->version >= MBS_SCHEMA ? sql_sweep_get : sql_sweep_get9;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        rc = sweep_read(db, st, out);
    else if (rc == SQLITE_DONE)
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no sweep %lld", db->path, (long long)id);
    else
        rc = cdb_fail(db, rc, sql);
    cdb_release(st);
    return rc;
}

int costdb_sweep_latest(Costdb *db, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !id)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_sweep_latest, &st)) < 0)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (rc == SQLITE_ROW) {
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: the database holds no sweep", db->path);
    } else {
        rc = cdb_fail(db, rc, sql_sweep_latest);
    }
    cdb_release(st);
    return rc;
}

static int sweep_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    return sweep_read(db, st, row);
}

int costdb_sweep_list(Costdb *db, CostdbSweep **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    const char *sql;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    sql = db->version >= MBS_SCHEMA ? sql_sweep_list : sql_sweep_list9;
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    return cdb_collect(db, st, sql, sizeof **out, sweep_row, (void **)out, n);
}

/* Runs a one-row write keyed by sweep id; ENOTFOUND when no row changed. */
static int write_by_id(Costdb *db, const char *sql, sqlite3_stmt *st, int64_t id)
{
    int rc = cdb_exec_stmt(db, st, sql);
    if (rc == 0 && sqlite3_changes(db->sql) == 0)
        rc = cdb_err(db, COSTDB_ENOTFOUND, "%s: no sweep %lld", db->path, (long long)id);
    return rc;
}

int costdb_sweep_set_status(Costdb *db, int64_t id, CostdbSweepStatus status, int set_finished)
{
    sqlite3_stmt *st = NULL;
    char now[32];
    int rc;
    if (!db || (unsigned)status >= N_SWEEP_STATUS)
        return COSTDB_EINVAL;
    if (db->readonly)
        return cdb_err(db, COSTDB_EREADONLY, "%s: opened read-only", db->path);
    if ((rc = cdb_prepare(db, sql_sweep_status, &st)) < 0)
        return rc;
    costdb_now(now, sizeof now);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, sweep_status_names[status], -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, set_finished ? 1 : 0);
    sqlite3_bind_text(st, 4, now, -1, SQLITE_STATIC);
    rc = write_by_id(db, sql_sweep_status, st, id);
    cdb_release(st);
    return rc;
}

int costdb_sweep_delete(Costdb *db, int64_t id)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db)
        return COSTDB_EINVAL;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    if ((rc = cdb_prepare(db, sql_sweep_delete, &st)) == 0) {
        sqlite3_bind_int64(st, 1, id);
        rc = write_by_id(db, sql_sweep_delete, st, id);
        cdb_release(st);
    }
    /* the sweep's id may be given to the next sweep made: its cached cost
     * and tensor ids name rows that are gone */
    cdb_caches_clear(db);
    return cdb_txn_leave(db, rc);
}

static int submesh_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbSubmesh *x = row;
    int rc;
    if ((rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)", &x->index)) < 0 ||
        (rc = cdb_col_int(db, st, 1, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)", &x->hosts)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &x->gpus_per_host)) < 0)
        return rc;
    if ((int64_t)x->hosts * x->gpus_per_host > COSTDB_MAX_DEVICES)
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s: table sweep_submesh, row (submesh_index=%d): %d x %d is more than %d"
                       " devices (COSTDB_MAX_DEVICES)", db->path, x->index, x->hosts,
                       x->gpus_per_host, COSTDB_MAX_DEVICES);
    return 0;
}

int costdb_sweep_submeshes(Costdb *db, int64_t sweep_id, CostdbSubmesh **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_submeshes_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    return cdb_collect(db, st, sql_submeshes_get, sizeof **out, submesh_row, (void **)out, n);
}

static int config_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbConfig *x = row;
    char recompute[32];
    int rc;
    if ((rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &x->submesh_index)) < 0 ||
        (rc = cdb_col_int(db, st, 1, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &x->config_index)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &x->logical_a)) < 0 ||
        (rc = cdb_col_int(db, st, 3, 1, COSTDB_MAX_DEVICES, "(COSTDB_MAX_DEVICES)",
                          &x->logical_b)) < 0 ||
        (rc = cdb_col_int(db, st, 5, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &x->variant.memory_level)) < 0 ||
        (rc = cdb_col_int(db, st, 7, 0, 3, NULL, &x->variant.zero)) < 0)
        return rc;
    if (sqlite3_column_type(st, 4) == SQLITE_NULL)
        x->force_batch_dim = -1;
    else if ((rc = cdb_col_int(db, st, 4, 0, 1, NULL, &x->force_batch_dim)) < 0)
        return rc;
    if ((int64_t)x->logical_a * x->logical_b > COSTDB_MAX_DEVICES)
        return cdb_err(db, COSTDB_ECORRUPT,
                       "%s: table sweep_config, row (submesh_index=%d, config_index=%d): logical"
                       " mesh %d x %d is more than %d devices (COSTDB_MAX_DEVICES)", db->path,
                       x->submesh_index, x->config_index, x->logical_a, x->logical_b,
                       COSTDB_MAX_DEVICES);
    if ((rc = cdb_column_text(db, st, 6, recompute, sizeof recompute, "recompute")) < 0)
        return rc;
    x->variant.recompute = costdb_recompute_parse(recompute);
    if (x->variant.recompute < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: config (%d, %d) has unknown recompute '%s'",
                       db->path, x->submesh_index, x->config_index, recompute);
    return 0;
}

int costdb_sweep_configs(Costdb *db, int64_t sweep_id, CostdbConfig **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_configs_get, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    return cdb_collect(db, st, sql_configs_get, sizeof **out, config_row, (void **)out, n);
}

/* ---- stage profile entries ---------------------------------------------- */

/* Schema 14: an entry is a slot of its block in stage_entry_block, or a row
 * of stage_entry_row, with the id of its costs in stage_cost (entry_blocks.c,
 * entry_costs.c); readers go through the stage_profile view. */
/* wgrad_cost is schema 12's: a file opened read-only at an older version
 * reads NULL in its place (unknown). */
#define SQL_ENTRIES_ALL(wgrad)                                                         \
    "SELECT start_layer, end_layer, submesh_index, config_index, phase, compute_cost,"   \
    " peak_memory, invar_size, outvar_size, temp_buffer_size, available_memory,"        \
    " intermediate_size, initial_size, repeats, spread, reused, status, error,"          \
    " apply_cost, " wgrad " FROM stage_profile WHERE sweep_id = ?1"
#define SQL_ENTRIES_GET(wgrad)                                                         \
    SQL_ENTRIES_ALL(wgrad)                                                             \
    " ORDER BY submesh_index DESC, start_layer, end_layer, config_index, phase"
static const char sql_entries_get[] = SQL_ENTRIES_GET("wgrad_cost");
/* Schema 14: the view lists a sweep's slots in key order (its blocks by
 * their key, a block's slots in order), then its rows; an ORDER BY would
 * sort them all, so the reader sorts only what is out of order. */
static const char sql_entries_get_v14[] = SQL_ENTRIES_ALL("wgrad_cost");
/* A sweep whose entries are all in blocks (approf's writer): its slots
 * joined to their costs, the view's two SELECTs for the slots in one (the
 * LEFT JOIN stays one here, with no condition on a cost column). */
static const char sql_entries_get_blocks[] =
    "SELECT e.start_layer AS start_layer, e.end_layer AS end_layer,"
    " e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase,"
    " c.compute_cost, c.peak_memory, c.invar_size, c.outvar_size, c.temp_buffer_size,"
    " c.available_memory, c.intermediate_size, c.initial_size, c.repeats, c.spread,"
    " e.reused AS reused, c.status, c.error, c.apply_cost, c.wgrad_cost"
    " FROM stage_entry_slot e LEFT JOIN stage_cost c"
    " ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id WHERE e.sweep_id = ?1";
/* Schema 15: the error text from stage_error and the sweep's
 * available_memory from stage_cost_sweep, then columns 20-23 for
 * cdb_cost_refs_check. */
#define SQL_ENTRIES_BLOCKS_V15(act)                                                     \
    "SELECT e.start_layer AS start_layer, e.end_layer AS end_layer,"                      \
    " e.submesh_index AS submesh_index, e.config_index AS config_index, e.phase AS phase," \
    " c.compute_cost, c.peak_memory, c.invar_size, c.outvar_size, c.temp_buffer_size,"    \
    " coalesce(c.available_memory, m.available_memory), c.intermediate_size,"             \
    " c.initial_size, c.repeats, c.spread, e.reused AS reused, c.status, x.text,"         \
    " c.apply_cost, c.wgrad_cost, c.sweep_id, c.cost_id, c.error_id, c.available_memory," \
    " " act " FROM stage_entry_slot e LEFT JOIN stage_cost c"                             \
    " ON c.sweep_id = e.sweep_id AND c.cost_id = e.cost_id"                               \
    " LEFT JOIN stage_cost_sweep m ON m.sweep_id = ?1"                                    \
    " LEFT JOIN stage_error x ON x.id = c.error_id WHERE e.sweep_id = ?1"
/* and column 24 schema 17's temp_activation_size (NULL before) */
static const char sql_entries_get_blocks_v15[] = SQL_ENTRIES_BLOCKS_V15("NULL");
static const char sql_entries_get_blocks_v17[] =
    SQL_ENTRIES_BLOCKS_V15("c.temp_activation_size");
static const char sql_entries_get_v11[] = SQL_ENTRIES_GET("NULL");
static const char sql_entry_exists[] =
    "SELECT 1 FROM stage_profile WHERE sweep_id = ?1 AND start_layer = ?2"
    " AND end_layer = ?3 AND submesh_index = ?4 AND config_index = ?5 AND phase = ?6";
static const char sql_entries_count[] =
    "SELECT count(*) FROM stage_profile WHERE sweep_id = ?1";

static int entry_check(Costdb *db, const CostdbEntry *e)
{
    const int64_t sizes[7] = {e->peak_memory, e->invar_size, e->outvar_size, e->temp_buffer_size,
                              e->available_memory, e->intermediate_size, e->initial_size};
    int rc;
    if ((rc = cdb_check_double(db, e->compute_cost, "compute_cost")) < 0 ||
        (rc = cdb_check_seconds(db, e->compute_cost, "compute_cost")) < 0 ||
        (rc = cdb_check_double(db, e->spread, "spread")) < 0 ||
        (rc = cdb_check_text(db, e->error, sizeof e->error, "error")) < 0)
        return rc;
    if (e->phase != COSTDB_FWD && e->phase != COSTDB_BWD)
        return cdb_err(db, COSTDB_EINVAL, "%s: bad phase %d", db->path, (int)e->phase);
    if ((unsigned)e->status >= N_ENTRY_STATUS)
        return cdb_err(db, COSTDB_EINVAL, "%s: bad entry status %d", db->path, (int)e->status);
    if (e->start_layer < 0 || e->end_layer < e->start_layer || e->end_layer >= COSTDB_MAX_LAYERS)
        return cdb_err(db, COSTDB_EINVAL, "%s: entry layers %d..%d are outside 0..%d"
                       " (COSTDB_MAX_LAYERS)", db->path, e->start_layer, e->end_layer,
                       COSTDB_MAX_LAYERS - 1);
    for (int k = 0; k < 7; k++)
        if (sizes[k] < 0 || sizes[k] > COSTDB_MAX_BYTES)
            return cdb_err(db, COSTDB_EINVAL, "%s: entry (%d, %d, %d, %d): size %lld is outside"
                           " 0..%lld (COSTDB_MAX_BYTES)", db->path, e->start_layer,
                           e->end_layer, e->submesh_index, e->config_index,
                           (long long)sizes[k], (long long)COSTDB_MAX_BYTES);
    return 0;
}

int costdb_entries_put(Costdb *db, int64_t sweep_id, const CostdbEntry *e, size_t n, int replace)
{
    int rc;
    int layers = COSTDB_MAX_LAYERS;
    if (!db || (n && !e))
        return COSTDB_EINVAL;
    if (n && (rc = cdb_sweep_layers(db, sweep_id, &layers)) < 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = entry_check(db, &e[i])) < 0 ||
            (rc = cdb_entry_layers_check(db, COSTDB_EINVAL, sweep_id, layers, e[i].start_layer,
                                         e[i].end_layer, e[i].submesh_index, e[i].config_index,
                                         (int)e[i].phase)) < 0)
            return rc;
    if ((rc = cdb_txn_enter(db)) < 0)
        return rc;
    rc = cdb_entry_blocks_put(db, sweep_id, e, n, replace);
    return cdb_txn_leave(db, rc);
}

int cdb_entry_row(Costdb *db, sqlite3_stmt *st, void *row)
{
    CostdbEntry *x = row;
    char status[32];
    int rc;
    int phase = 0;
    int64_t *sizes[] = {&x->peak_memory, &x->invar_size, &x->outvar_size, &x->temp_buffer_size,
                        &x->available_memory, &x->intermediate_size, &x->initial_size};
    if ((rc = cdb_col_int(db, st, 0, 0, COSTDB_MAX_LAYERS - 1, "(COSTDB_MAX_LAYERS)",
                          &x->start_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 1, x->start_layer, COSTDB_MAX_LAYERS - 1,
                          "(start_layer..COSTDB_MAX_LAYERS)", &x->end_layer)) < 0 ||
        (rc = cdb_col_int(db, st, 2, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &x->submesh_index)) < 0 ||
        (rc = cdb_col_int(db, st, 3, 0, COSTDB_MAX_INDEX - 1, "(COSTDB_MAX_INDEX)",
                          &x->config_index)) < 0 ||
        (rc = cdb_col_int(db, st, 4, 0, 1, NULL, &phase)) < 0)
        return rc;
    x->phase = phase ? COSTDB_BWD : COSTDB_FWD;
    /* status is NOT NULL in stage_cost: NULL is the view's join finding no
     * cost row */
    if (sqlite3_column_type(st, 16) == SQLITE_NULL)
        return cdb_entry_without_costs(db, st, -1);
    if ((rc = cdb_cost_refs_check(db, st, 17, 10)) < 0 ||
        (rc = cdb_column_text(db, st, 16, status, sizeof status, "status")) < 0 ||
        (rc = cdb_column_text(db, st, 17, x->error, sizeof x->error, "error")) < 0)
        return rc;
    if (costdb_status_parse(status, &x->status) < 0)
        return cdb_err(db, COSTDB_ECORRUPT, "%s: entry with unknown status '%s'", db->path, status);
    /* A cost that is NULL or text would read as 0 s, the cheapest stage of
     * all; a finite one past COSTDB_MAX_SECONDS would overflow a sum: refuse
     * both. Infinite and negative costs load as they are: the solver treats
     * them as no stage (docs/reliability.md). */
    if ((rc = cdb_col_cost(db, st, 5, &x->compute_cost)) < 0)
        return rc;
    /* an oom row's column holds the time computed for it (unfit_cost),
     * its cost is +inf */
    x->unfit_cost = 0.0;
    if (x->status == COSTDB_STATUS_OOM) {
        x->unfit_cost = isfinite(x->compute_cost) && x->compute_cost > 0 ? x->compute_cost : 0.0;
        x->compute_cost = INFINITY;
    }
    for (int k = 0; k < 7; k++)
        if ((rc = cdb_col_range(db, st, 6 + k, 0, COSTDB_MAX_BYTES, "(COSTDB_MAX_BYTES)",
                                sizes[k])) < 0)
            return rc;
    if ((rc = cdb_col_int(db, st, 13, 0, INT32_MAX, NULL, &x->repeats)) < 0 ||
        (rc = cdb_col_int(db, st, 15, 0, 1, NULL, &x->reused)) < 0)
        return rc;
    x->spread = cdb_column_double(st, 14);
    if (!isfinite(x->spread) || x->spread < 0) {
        char key[64];
        snprintf(key, sizeof key, "%g", x->spread);
        return cdb_err(db, COSTDB_ECORRUPT, "%s: entry (%d, %d, %d, %d): spread %s is not a"
                       " finite number >= 0", db->path, x->start_layer, x->end_layer,
                       x->submesh_index, x->config_index, key);
    }
    if ((rc = cdb_col_cost_or_null(db, st, 18, &x->apply_cost)) < 0 ||
        (rc = cdb_col_cost_or_null(db, st, 19, &x->wgrad_cost)) < 0)
        return rc;
    /* schema 17, where the statement reads it (column 24; the view has
     * none): within 1..temp_buffer_size, as its CHECK keeps it */
    x->temp_activation_size = 0;
    if (sqlite3_column_count(st) > 24 && sqlite3_column_type(st, 24) == SQLITE_INTEGER &&
        sqlite3_column_int64(st, 24) > 0 &&
        sqlite3_column_int64(st, 24) <= x->temp_buffer_size)
        x->temp_activation_size = sqlite3_column_int64(st, 24);
    return 0;
}

/* stage_entry's key order: submesh_index descending, then start_layer,
 * end_layer, config_index, phase. */
static int entry_key_cmp(const void *pa, const void *pb)
{
    const CostdbEntry *a = pa, *b = pb;
    if (a->submesh_index != b->submesh_index)
        return a->submesh_index > b->submesh_index ? -1 : 1;
    if (a->start_layer != b->start_layer)
        return a->start_layer < b->start_layer ? -1 : 1;
    if (a->end_layer != b->end_layer)
        return a->end_layer < b->end_layer ? -1 : 1;
    if (a->config_index != b->config_index)
        return a->config_index < b->config_index ? -1 : 1;
    return (a->phase > b->phase) - (a->phase < b->phase);
}

int costdb_entries_get(Costdb *db, int64_t sweep_id, CostdbEntry **out, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !out || !n)
        return COSTDB_EINVAL;
    const char *sql = db->version >= 14   ? sql_entries_get_v14
                      : db->version >= 12 ? sql_entries_get
                                          : sql_entries_get_v11;
    if (db->version >= 14 && (rc = cdb_entry_blocks_check(db, sweep_id)) < 0)
        return rc;
    if (db->version >= 14 && (rc = cdb_entry_rows_any(db, sweep_id)) <= 0) {
        if (rc < 0)
            return rc;
        sql = db->version >= 17   ? sql_entries_get_blocks_v17
              : db->version >= 15 ? sql_entries_get_blocks_v15
                                  : sql_entries_get_blocks;
        /* schema 15: the slots decoded in C (entries_read.c); 1 when it
         * leaves the sweep to SQL */
        if (db->version >= 15 && (rc = cdb_entries_get_blocks(db, sweep_id, out, n)) <= 0) {
            if (rc < 0)
                return rc;
            return cdb_entries_layers_check(db, sweep_id, out, n);
        }
    }
    if ((rc = cdb_prepare(db, sql, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    if ((rc = cdb_collect(db, st, sql, sizeof **out, cdb_entry_row, (void **)out, n)) < 0)
        return rc;
    for (size_t i = 1; i < *n; i++)
        if (entry_key_cmp(&(*out)[i - 1], &(*out)[i]) > 0) {
            qsort(*out, *n, sizeof **out, entry_key_cmp);
            break;
        }
    return cdb_entries_layers_check(db, sweep_id, out, n);
}

int costdb_entry_exists(Costdb *db, int64_t sweep_id, int start, int end, int submesh,
                        int config, CostdbPhase phase, int *exists)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !exists)
        return COSTDB_EINVAL;
    if ((rc = cdb_prepare(db, sql_entry_exists, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    sqlite3_bind_int(st, 2, start);
    sqlite3_bind_int(st, 3, end);
    sqlite3_bind_int(st, 4, submesh);
    sqlite3_bind_int(st, 5, config);
    sqlite3_bind_int(st, 6, (int)phase);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        *exists = rc == SQLITE_ROW;
        rc = 0;
    } else {
        rc = cdb_fail(db, rc, sql_entry_exists);
    }
    cdb_release(st);
    return rc;
}

int costdb_entries_count(Costdb *db, int64_t sweep_id, int64_t *n)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (!db || !n)
        return COSTDB_EINVAL;
    if (db->version >= 14) /* the slots, not decoded through the view */
        return cdb_entry_blocks_count(db, sweep_id, n);
    if ((rc = cdb_prepare(db, sql_entries_count, &st)) < 0)
        return rc;
    sqlite3_bind_int64(st, 1, sweep_id);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *n = sqlite3_column_int64(st, 0);
        rc = 0;
    } else {
        rc = cdb_fail(db, rc, sql_entries_count);
    }
    cdb_release(st);
    return rc;
}
