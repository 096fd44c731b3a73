/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the costdb tests (see testutil.h). */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costdb_rows.h"
#include "testutil.h"

static char dir[256];

const char *tu_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/costdb-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(99);
        }
    }
    return dir;
}

const char *tu_path(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tu_dir(), name);
    return b;
}

char *tu_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *p;
            cap = cap ? cap * 2 : 8192;
            p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (!got)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int tu_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f) == 0 ? 0 : -1;
}

int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void tu_unlink_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[600];
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

int64_t tu_count(const char *db_path, const char *table)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char sql[1024];
    int64_t n = -1;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

int tu_exec(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(db_path, &db) == SQLITE_OK &&
             sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    sqlite3_close(db);
    return rc;
}

/* Schema 16's STRICT tables: each one's CREATE TABLE text, in sqlite_master,
 * with STRICT taken out (strict = 0) or as approf's migrations wrote it
 * (strict = 1, from saved); the text is what a connection opened after it
 * parses, as a writer who edits the schema with PRAGMA writable_schema
 * would. Returns the number of tables (saved: their texts), or -1. */
#define TU_STRICT_MAX 8
static int untyped(const char *db_path, const char *sql);

static int strict_tables(const char *db_path, int strict, char *saved[TU_STRICT_MAX][2])
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int n = 0, ok = sqlite3_open(db_path, &db) == SQLITE_OK &&
                    sqlite3_exec(db, "PRAGMA writable_schema=ON; BEGIN", NULL, NULL, NULL) ==
                        SQLITE_OK;
    if (ok && !strict) {
        ok = sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
                                " AND sql LIKE '%) STRICT%'", -1, &st, NULL) == SQLITE_OK;
        while (ok && n < TU_STRICT_MAX && sqlite3_step(st) == SQLITE_ROW) {
            saved[n][0] = strdup((const char *)sqlite3_column_text(st, 0));
            saved[n][1] = strdup((const char *)sqlite3_column_text(st, 1));
            ok = saved[n][0] && saved[n][1];
            n++;
        }
        sqlite3_finalize(st);
        ok = ok && sqlite3_exec(db, "UPDATE sqlite_master SET sql = replace(replace(sql,"
                                " ') STRICT, WITHOUT ROWID', ') WITHOUT ROWID'), ') STRICT', ')')"
                                " WHERE type = 'table' AND sql LIKE '%) STRICT%'", NULL, NULL,
                                NULL) == SQLITE_OK;
    }
    for (int i = 0; ok && strict && i < TU_STRICT_MAX && saved[i][0]; i++, n++) {
        ok = sqlite3_prepare_v2(db, "UPDATE sqlite_master SET sql = ?2 WHERE type = 'table'"
                                " AND name = ?1", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_bind_text(st, 1, saved[i][0], -1, SQLITE_STATIC) == SQLITE_OK &&
             sqlite3_bind_text(st, 2, saved[i][1], -1, SQLITE_STATIC) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_DONE;
        sqlite3_finalize(st);
    }
    ok = ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return ok ? n : -1;
}

int tu_exec_untyped(const char *db_path, const char *sql)
{
    char *strict[TU_STRICT_MAX][2] = {{NULL}};
    int n_strict = strict_tables(db_path, 0, strict), rc = n_strict < 0 ? -1 : untyped(db_path, sql);
    if (n_strict > 0 && strict_tables(db_path, 1, strict) != n_strict)
        rc = -1;
    for (int i = 0; i < TU_STRICT_MAX; i++) {
        free(strict[i][0]);
        free(strict[i][1]);
    }
    return rc;
}

static int untyped(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    char *(*keep)[2] = NULL; /* name, then the SQL that made it */
    size_t n = 0;
    int ok = sqlite3_open(db_path, &db) == SQLITE_OK &&
             sqlite3_exec(db, "PRAGMA ignore_check_constraints=ON; PRAGMA foreign_keys=OFF;"
                          " BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                                " AND name LIKE 'strict!_%' ESCAPE '!'", -1, &st,
                                NULL) == SQLITE_OK;
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        __typeof__(keep) k = realloc(keep, (n + 1) * sizeof *keep);
        if (!(ok = k != NULL))
            break;
        keep = k;
        keep[n][0] = strdup((const char *)sqlite3_column_text(st, 0));
        keep[n][1] = strdup((const char *)sqlite3_column_text(st, 1));
        ok = keep[n][0] && keep[n][1];
        n++;
    }
    sqlite3_finalize(st);
    for (size_t i = 0; i < n && ok; i++) {
        char drop[256];
        snprintf(drop, sizeof drop, "DROP TRIGGER \"%s\"", keep[i][0]);
        ok = sqlite3_exec(db, drop, NULL, NULL, NULL) == SQLITE_OK;
    }
    ok = ok && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    for (size_t i = 0; i < n; i++) {
        ok = ok && sqlite3_exec(db, keep[i][1], NULL, NULL, NULL) == SQLITE_OK;
        free(keep[i][0]);
        free(keep[i][1]);
    }
    free(keep);
    ok = ok && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK;
    sqlite3_close(db);
    return ok ? 0 : -1;
}

void tu_cleanup(void)
{
    DIR *d;
    struct dirent *e;
    if (!dir[0] || !(d = opendir(dir)))
        return;
    while ((e = readdir(d)) != NULL) {
        char p[600];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
    dir[0] = '\0';
}

#ifndef COSTDB_SCHEMA_DIR
#error "COSTDB_SCHEMA_DIR must name the schemas/ folder"
#endif

/* Reads schemas/NNN_*.sql of migration number k (malloc'd); NULL when no
 * such file or more than one. */
static char *read_migration(int k)
{
    DIR *d = opendir(COSTDB_SCHEMA_DIR);
    struct dirent *e;
    char prefix[16], path[600] = "";
    int found = 0;
    if (!d)
        return NULL;
    snprintf(prefix, sizeof prefix, "%03d_", k);
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (!strncmp(e->d_name, prefix, 4) && len > 8 && !strcmp(e->d_name + len - 4, ".sql")) {
            snprintf(path, sizeof path, "%s/%s", COSTDB_SCHEMA_DIR, e->d_name);
            found++;
        }
    }
    closedir(d);
    return found == 1 ? tu_read(path, NULL) : NULL;
}

int tu_old_schema(const char *db_path, int version)
{
    char pragma[64];
    tu_unlink_db(db_path);
    for (int k = 1; k <= version; k++) {
        char *sql = read_migration(k);
        int rc = sql ? tu_exec(db_path, sql) : -1;
        free(sql);
        if (rc)
            return -1;
    }
    snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d;", version);
    return tu_exec(db_path, pragma);
}

int tu_run(const char *suite, const CunitTest *tests, size_t n)
{
    int rc = cunit_run(suite, tests, n);
    tu_cleanup();
    return rc;
}

Costdb *tu_open_new(const char *name)
{
    Costdb *db = NULL;
    char err[512];
    tu_unlink_db(tu_path(name));
    CU_ASSERT_EQUAL_FATAL(costdb_open(tu_path(name), 0, &db, err, sizeof err), 0);
    return db;
}

void tu_sweep(CostdbSweep *s, const char *name, int hosts, int gpus, int64_t global_batch,
              int micro_batches, int layers)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->cluster_hosts = hosts;
    s->cluster_gpus = gpus;
    s->global_batch = global_batch;
    s->micro_batches = micro_batches;
    s->num_layers = layers;
    snprintf(s->backend, sizeof s->backend, "model");
}

int64_t tu_hardware_row(Costdb *db, const char *fingerprint, const char *kind,
                        const char *gpu_model)
{
    CostdbHardware hw;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.fingerprint, sizeof hw.fingerprint, "%s", fingerprint);
    snprintf(hw.kind, sizeof hw.kind, "%s", kind);
    snprintf(hw.gpu_model, sizeof hw.gpu_model, "%s", gpu_model);
    hw.gpus_per_host = 2;
    hw.device_memory = (int64_t)40 << 30;
    CU_ASSERT_EQUAL_FATAL(costdb_hardware_upsert(db, &hw), 0);
    return hw.id;
}

void tu_text_add(TuText *t, const char *line)
{
    size_t k = strlen(line);
    if (t->n + k + 1 > t->cap) {
        t->cap = (t->n + k + 1) * 2;
        t->s = realloc(t->s, t->cap);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t->s);
    }
    memcpy(t->s + t->n, line, k + 1);
    t->n += k;
}

int tu_stage_row_text(void *ctx, const CostdbStageRow *r)
{
    char line[256];
    snprintf(line, sizeof line, "%d %d %d %d %d %.17g %.17g %.17g %.17g %lld %lld %lld %lld\n",
             r->start_layer, r->end_layer, r->submesh_index, r->config_index, (int)r->phase,
             r->compute_cost, r->apply_cost, r->wgrad_cost, r->unfit_cost,
             (long long)r->peak_memory, (long long)r->available_memory,
             (long long)r->intermediate_size, (long long)r->initial_size);
    tu_text_add(ctx, line);
    return 0;
}

Costdb *tu_two_layer_sweep(const char *path, const char *name, CostdbSweep *s,
                           CostdbEntry e[8])
{
    static const CostdbSubmesh sm[] = {{0, 1, 2}};
    static const CostdbConfig cf[] = {{0, 0, 2, 1, 0, {0, COSTDB_RECOMPUTE_NONE, 0}},
                                      {0, 1, 1, 2, -1, {0, COSTDB_RECOMPUTE_NONE, 0}}};
    Costdb *db = NULL;
    size_t n = 0;
    tu_unlink_db(path);
    CU_ASSERT_EQUAL_FATAL(costdb_open(path, 0, &db, NULL, 0), 0);
    tu_sweep(s, name, 1, 2, 8, 2, 2);
    CU_ASSERT_EQUAL_FATAL(costdb_sweep_create(db, s, sm, 1, cf, 2), 0);
    memset(e, 0, 8 * sizeof *e);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 2; c++)
            for (int ph = 0; ph < 2; ph++, n++) {
                e[n].start_layer = e[n].end_layer = i;
                e[n].config_index = c;
                e[n].phase = (CostdbPhase)ph;
                e[n].compute_cost = 0.5 + ph + c;
                e[n].peak_memory = 1000;
                e[n].available_memory = 4000;
                e[n].repeats = 1;
                e[n].apply_cost = -1;
                e[n].wgrad_cost = -1;
            }
    return db;
}
