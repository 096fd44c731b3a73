/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers for the costdb tests: a private temporary directory, reading a
 * whole file to compare bytes, writing a file, counting rows through a
 * separate raw SQLite connection (an oracle independent of costdb), a file
 * of an older schema built from the migrations in schemas/, the rows most
 * tests start from (a fresh database, a sweep, a hardware row), and the
 * CUnit run of a test program.
 */
#ifndef COSTDB_TESTUTIL_H
#define COSTDB_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "costdb.h"
#include "cunit_run.h"

/* Creates (once) and returns a fresh temporary directory. */
const char *tu_dir(void);
/* Joins tu_dir() and name into a static rotating buffer. */
const char *tu_path(const char *name);
/* Reads a whole file (malloc'd, NUL-terminated); NULL if missing. */
char *tu_read(const char *path, size_t *len);
/* Writes text to a file; 0 or -1. */
int tu_write(const char *path, const char *text);
/* Removes a database file and its -wal/-shm/-journal siblings. */
void tu_unlink_db(const char *path);
/* SELECT count(*) FROM table via a raw read-only connection; -1 on error. */
int64_t tu_count(const char *db_path, const char *table);
/* Runs SQL through a raw connection; 0 or -1. */
int tu_exec(const char *db_path, const char *sql);
/* Runs SQL through a raw connection as a careless writer would: no CHECK
 * constraints, no foreign keys, none of schema 4's typeof triggers
 * (strict_*: dropped for the statement and put back as they were) and no
 * STRICT tables (schema 16's stage_cost: its CREATE TABLE text without
 * STRICT for the statement, through PRAGMA writable_schema, then put back),
 * while the triggers that make the stage_profile view writable still run;
 * 0 or -1. */
int tu_exec_untyped(const char *db_path, const char *sql);
/* 1 if the file exists. */
int tu_exists(const char *path);
/* Removes the temporary directory and everything in it. */
void tu_cleanup(void);

/* A fresh database at path (its files removed first) holding sweep `name`
 * as approf creates it: one host of 2 GPUs, global batch 8 in 2
 * micro-batches, 2 layers, submesh 0 of 1 x 2 with configs 0 (logical
 * (2, 1), batch on axis 0) and 1 ((1, 2)); *s the sweep. e gets its 8
 * entries in key order (layer, config, phase), not yet written: compute
 * 0.5 + phase + config, peak 1000 of 4000 bytes, one repeat, no apply or
 * wgrad cost. Returns the open database (CUnit-fatal on failure). */
Costdb *tu_two_layer_sweep(const char *path, const char *name, CostdbSweep *s,
                           CostdbEntry e[8]);

/* A growing text (NUL-terminated in s; free s when done). */
typedef struct TuText {
    char *s;
    size_t n, cap;
} TuText;
/* Appends line (any text) to t. */
void tu_text_add(TuText *t, const char *line);
/* A costdb_stage_rows callback (ctx a TuText): appends the row, every field
 * printed, reals at 17 digits, one line a row. */
struct CostdbStageRow;
int tu_stage_row_text(void *ctx, const struct CostdbStageRow *r);

/* Creates db_path (its files removed first) as a database of schema
 * `version` that an older approf left: the migrations 001 .. version of
 * schemas/ (COSTDB_SCHEMA_DIR) run in order through a raw connection, then
 * user_version set to version; 0, or -1 when a migration is missing, cannot
 * be read or fails. */
int tu_old_schema(const char *db_path, int version);

/* Sweep 3 as such a file holds it (schema 3 or later): one host of 2 GPUs,
 * global batch 8 in 2 micro-batches, 2 layers, complete; its submesh 0 of
 * 1 x 2 and that submesh's config 0 on the logical mesh (2, 1). */
#define TU_SWEEP3_SQL                                                                          \
    "INSERT INTO sweep (id, cluster_hosts, cluster_gpus, global_batch, micro_batches,"         \
    " num_layers, layer_option, submesh_space, logical_space, profile_mode, dtype,"            \
    " backend, tool_version, started_at, status) VALUES (3, 1, 2, 8, 2, 2, 'manual',"          \
    " 'all', 'all', 'composition', 'f32', 'model', '0.1', '2025-01-01T00:00:00Z',"             \
    " 'complete');"                                                                            \
    "INSERT INTO sweep_submesh VALUES (3, 0, 1, 2);"                                           \
    "INSERT INTO sweep_config (sweep_id, submesh_index, config_index, logical_a, logical_b,"   \
    " force_batch_dim) VALUES (3, 0, 0, 2, 1, 0);"

/* A fresh database at tu_path(name) (its files removed first), opened
 * read-write; a fatal CUnit assertion that the open succeeds. */
Costdb *tu_open_new(const char *name);

/* A sweep row to create: name, an N x M cluster of hosts x gpus, the
 * global batch in micro_batches micro-batches, layers layers, backend
 * "model"; every other field zero or empty. */
void tu_sweep(CostdbSweep *s, const char *name, int hosts, int gpus, int64_t global_batch,
              int micro_batches, int layers);

/* Upserts a hardware row of 2 GPUs a host with 40 GiB each, of the given
 * fingerprint, kind and GPU model (a fatal CUnit assertion that it is
 * stored); returns its id. */
int64_t tu_hardware_row(Costdb *db, const char *fingerprint, const char *kind,
                        const char *gpu_model);

/* Runs the tests as the CUnit suite `suite` (cunit_run), then removes the
 * temporary directory; returns the program's exit status. */
int tu_run(const char *suite, const CunitTest *tests, size_t n);
#define TU_RUN(suite, tests) tu_run(suite, tests, sizeof(tests) / sizeof((tests)[0]))

#endif
