/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the CSV import: the parsed lines of a file and the sweep
 * (submeshes, configs, entries) built from them after every field has been
 * validated. csv.c reads the file; csv_plan.c validates and plans.
 */
#ifndef COSTDB_CSV_INT_H
#define COSTDB_CSV_INT_H

#include "costdb_int.h"

#define CDB_CSV_NCOLS 20
/* The columns of a plain (Alpa) table; the variant columns after them
 * (memory_level, recompute, zero, apply_cost) are written only for sweeps
 * that have a variant config or a known apply cost, the last
 * (temp_activation_size, schema 17) only for sweeps with an entry that has
 * one. */
#define CDB_CSV_NPLAIN 15
#define CDB_CSV_NVARIANT 19
/* Column names in export order (schemas/csv-format.md). */
extern const char *const cdb_csv_columns[CDB_CSV_NCOLS];

typedef struct CdbCsvLine {
    const char *const *fields;
    size_t n;
    int line;                  /* 1-based physical line where the record starts */
} CdbCsvLine;

typedef struct CdbCsvTable {
    Costdb *db;
    const char *path;
    const CdbCsvLine *lines;   /* lines[0] is the header */
    size_t n_lines;
} CdbCsvTable;

typedef struct CdbImportPlan {
    CostdbSweep sweep;
    CostdbSubmesh *submeshes;
    size_t n_submeshes;
    CostdbConfig *configs;
    size_t n_configs;
    CostdbEntry *entries;
    size_t n_entries;
} CdbImportPlan;

/* Records "PATH:LINE:COL: field 'NAME': what" (without the field part when
 * field is NULL) and returns COSTDB_EPARSE. */
int cdb_csv_error(Costdb *db, const char *path, int line, int col, const char *field,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Validates every line and fills plan (arrays malloc'd; cdb_csv_plan_free). */
int cdb_csv_plan(const CdbCsvTable *t, const CostdbImportOptions *opt, CdbImportPlan *plan);
void cdb_csv_plan_free(CdbImportPlan *plan);
/* Shortest "%.Ng" that reads back to v exactly; "inf" for +inf. */
void cdb_format_double(double v, char *buf, size_t len);

#endif
