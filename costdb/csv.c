/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CSV interchange of stage profiles (schemas/csv-format.md). Export writes
 * one row per entry with floats in their shortest exact form, so export ->
 * import -> export is byte-identical. Import reads the whole file with
 * libcsv, validates every field (errors name FILE:LINE:COLUMN and the
 * field), derives the sweep's submesh and config lists, and inserts the
 * sweep and its entries in one transaction: a bad file imports nothing.
 */
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "costdb_int.h"
#include "csv_int.h"

const char *const cdb_csv_columns[CDB_CSV_NCOLS] = {
    "start", "end", "submesh", "logical_mesh", "force_batch_dim", "phase",
    "compute_cost", "peak_memory", "invar_size", "outvar_size", "temp_buffer_size",
    "available_memory", "intermediate_size", "initial_size", "status",
    "memory_level", "recompute", "zero", "apply_cost", "temp_activation_size",
};

void cdb_format_double(double v, char *buf, size_t len)
{
    if (isinf(v)) {
        snprintf(buf, len, "%s", v > 0 ? "inf" : "-inf");
        return;
    }
    /* The shortest %.Ng that reads back to the same double (like Python's
     * repr); %.17g always does, so this is lossless. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ---- export ------------------------------------------------------------- */

typedef struct {
    const CostdbEntry *e;
    const CostdbSubmesh *s;
    const CostdbConfig *c;
} ExportRow;

#define CMP3(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

/* Largest submesh shape first, then config index, start, end, phase. Keyed
 * by shape and by the configs' relative order (which an import keeps), so a
 * re-import exports in the same order even though indices are reassigned. */
static int cmp_export(const void *pa, const void *pb)
{
    const ExportRow *a = pa, *b = pb;
    int64_t da = (int64_t)a->s->hosts * a->s->gpus_per_host;
    int64_t db = (int64_t)b->s->hosts * b->s->gpus_per_host;
    int d[] = {CMP3(db, da), CMP3(b->s->hosts, a->s->hosts),
               CMP3(a->c->config_index, b->c->config_index),
               CMP3(a->e->start_layer, b->e->start_layer), CMP3(a->e->end_layer, b->e->end_layer),
               CMP3((int)a->e->phase, (int)b->e->phase)};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i])
            return d[i];
    return 0;
}

int costdb_csv_export(Costdb *db, int64_t sweep_id, FILE *out)
{
    CostdbSubmesh *sm = NULL;
    CostdbConfig *cf = NULL;
    CostdbEntry *e = NULL;
    ExportRow *rows = NULL;
    size_t n_sm = 0, n_cf = 0, n_e = 0;
    CostdbSweep sweep;
    int rc, variants = 0, act = 0, first = 1;
    if (!db || !out)
        return COSTDB_EINVAL;
    if ((rc = costdb_sweep_get(db, sweep_id, &sweep)) < 0 ||
        (rc = costdb_sweep_submeshes(db, sweep_id, &sm, &n_sm)) < 0 ||
        (rc = costdb_sweep_configs(db, sweep_id, &cf, &n_cf)) < 0 ||
        (rc = costdb_entries_get(db, sweep_id, &e, &n_e)) < 0)
        goto cleanup;
    /* A plain table keeps Alpa's 15 columns; the variant columns come only
     * when they carry something, and an import keeps exactly that. */
    for (size_t i = 0; i < n_cf && !variants; i++)
        variants = !costdb_variant_is_plain(cf[i].variant);
    for (size_t i = 0; i < n_e && !variants; i++)
        variants = e[i].apply_cost >= 0;
    /* Schema 17's activation-sized transient likewise: its column comes
     * only when an entry has one (empty fields are NULL). */
    for (size_t i = 0; i < n_e && !act; i++)
        act = e[i].temp_activation_size > 0;
    for (int k = 0; k < CDB_CSV_NCOLS; k++) {
        if ((k >= CDB_CSV_NPLAIN && k < CDB_CSV_NVARIANT && !variants) ||
            (k == CDB_CSV_NVARIANT && !act))
            continue;
        fprintf(out, "%s%s", first ? "" : ",", cdb_csv_columns[k]);
        first = 0;
    }
    fputc('\n', out);
    rows = calloc(n_e ? n_e : 1, sizeof *rows);
    if (!rows) {
        rc = cdb_err(db, COSTDB_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n_e; i++) {
        rows[i].e = &e[i];
        for (size_t k = 0; k < n_sm && !rows[i].s; k++)
            if (sm[k].index == e[i].submesh_index)
                rows[i].s = &sm[k];
        for (size_t k = 0; k < n_cf && !rows[i].c; k++)
            if (cf[k].submesh_index == e[i].submesh_index && cf[k].config_index == e[i].config_index)
                rows[i].c = &cf[k];
        if (!rows[i].s || !rows[i].c) {
            rc = cdb_err(db, COSTDB_ECORRUPT, "%s: sweep %lld: entry (%d, %d, %d, %d) has no "
                         "submesh/config row", db->path, (long long)sweep_id, e[i].start_layer,
                         e[i].end_layer, e[i].submesh_index, e[i].config_index);
            goto cleanup;
        }
    }
    qsort(rows, n_e, sizeof *rows, cmp_export);
    for (size_t i = 0; i < n_e; i++) {
        const CostdbEntry *x = rows[i].e;
        const CostdbSubmesh *s = rows[i].s;
        const CostdbConfig *c = rows[i].c;
        char cost[40], fbd[16] = "";
        cdb_format_double(x->compute_cost, cost, sizeof cost);
        if (c->force_batch_dim >= 0)
            snprintf(fbd, sizeof fbd, "%d", c->force_batch_dim);
        fprintf(out, "%d,%d,%dx%d,%dx%d,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s",
                x->start_layer, x->end_layer, s->hosts, s->gpus_per_host,
                c->logical_a, c->logical_b, fbd, x->phase == COSTDB_BWD ? "bwd" : "fwd", cost,
                (long long)x->peak_memory, (long long)x->invar_size,
                (long long)x->outvar_size, (long long)x->temp_buffer_size,
                (long long)x->available_memory, (long long)x->intermediate_size,
                (long long)x->initial_size, costdb_status_name(x->status));
        if (variants) {
            char apply[40] = "";
            if (x->apply_cost >= 0)
                cdb_format_double(x->apply_cost, apply, sizeof apply);
            fprintf(out, ",%d,%s,%d,%s", c->variant.memory_level,
                    costdb_recompute_name(c->variant.recompute), c->variant.zero, apply);
        }
        if (act) {
            fputc(',', out);
            if (x->temp_activation_size > 0)
                fprintf(out, "%lld", (long long)x->temp_activation_size);
        }
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out))
        rc = cdb_err(db, COSTDB_EIO, "cannot write the CSV output: %s", strerror(errno));
cleanup:
    free(rows);
    free(sm);
    free(cf);
    free(e);
    return rc;
}

/* ---- reading the file --------------------------------------------------- */

typedef struct {
    char **f;
    size_t n;
    int line;
} CsvRow;

typedef struct {
    Costdb *db;
    const char *path;
    CsvRow *rows;
    size_t n_rows, cap_rows;
    char **cur;
    size_t n_cur, cap_cur;
    int feed_line;       /* physical line being fed to the parser */
    int rec_line;        /* line where the current record began */
    int in_record;
    int err;
    int nul_col;         /* 1-based column of a field holding a NUL byte, 0: none */
} CsvReader;

/* The longest physical line an import reads (schemas/csv-format.md): a
 * line of Alpa's table is about 150 bytes; a longer one is not a cost table
 * and would otherwise be held whole in memory, several times. */
#define CDB_CSV_MAX_LINE (1 << 20)

static void row_free(char **f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(f[i]);
    free(f);
}

static void on_field(void *s, size_t len, void *data)
{
    CsvReader *rd = data;
    char *copy;
    if (rd->err)
        return;
    /* 'ok\0garbage' would read as 'ok': refuse the field instead. */
    if (len && memchr(s, '\0', len)) {
        rd->err = COSTDB_EPARSE;
        rd->nul_col = (int)rd->n_cur + 1;
        return;
    }
    if (cdb_grow(NULL, (void **)&rd->cur, &rd->cap_cur, rd->n_cur + 1, sizeof *rd->cur) < 0 ||
        !(copy = malloc(len + 1))) {
        rd->err = COSTDB_ENOMEM;
        return;
    }
    if (len)
        memcpy(copy, s, len);
    copy[len] = '\0';
    rd->cur[rd->n_cur++] = copy;
}

static void on_record(int c, void *data)
{
    CsvReader *rd = data;
    (void)c;
    rd->in_record = 0;
    if (rd->err)
        return;
    /* A line of blanks only: not a record. */
    if (rd->n_cur == 1 && !rd->cur[0][0]) {
        row_free(rd->cur, rd->n_cur);
    } else if (cdb_grow(NULL, (void **)&rd->rows, &rd->cap_rows, rd->n_rows + 1,
                        sizeof *rd->rows) < 0) {
        row_free(rd->cur, rd->n_cur);
        rd->err = COSTDB_ENOMEM;
    } else {
        rd->rows[rd->n_rows].f = rd->cur;
        rd->rows[rd->n_rows].n = rd->n_cur;
        rd->rows[rd->n_rows].line = rd->rec_line;
        rd->n_rows++;
    }
    rd->cur = NULL;
    rd->n_cur = rd->cap_cur = 0;
}

static int read_file(Costdb *db, const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 0, run = 0;
    int rc = 0, line = 1;
    if (!f)
        return cdb_err(db, COSTDB_EIO, "%s: cannot open: %s", path, strerror(errno));
    for (;;) {
        size_t got;
        if ((rc = cdb_grow(db, (void **)&b, &cap, n + 65536, 1)) < 0)
            goto cleanup;
        got = fread(b + n, 1, cap - n, f);
        /* Stop at the first line past the cap, before reading the rest. */
        for (size_t k = n; k < n + got; k++) {
            if (b[k] == '\n') {
                line++;
                run = 0;
            } else if (++run > CDB_CSV_MAX_LINE) {
                rc = cdb_csv_error(db, path, line, 1, NULL,
                                   "line longer than %d bytes (the limit of a CSV line)",
                                   CDB_CSV_MAX_LINE);
                goto cleanup;
            }
        }
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(f))
        rc = cdb_err(db, COSTDB_EIO, "%s: cannot read: %s", path, strerror(errno));
cleanup:
    fclose(f);
    if (rc < 0) {
        free(b);
        return rc;
    }
    *buf = b;
    *len = n;
    return 0;
}

/* The header's name for the column where the parser stopped, if known. */
static const char *current_field_name(const CsvReader *rd)
{
    if (rd->n_rows > 0 && rd->n_cur < rd->rows[0].n)
        return rd->rows[0].f[rd->n_cur];
    return NULL;
}

static int parse_rows(CsvReader *rd, const char *buf, size_t len)
{
    struct csv_parser p;
    size_t pos = 0;
    int rc = 0;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI) != 0)
        return cdb_err(rd->db, COSTDB_ENOMEM, "out of memory");
    rd->feed_line = 1;
    /* Feed one physical line at a time so that we know where we are. */
    while (pos < len && rc == 0) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t chunk = nl ? (size_t)(nl - (buf + pos)) + 1 : len - pos;
        int blank = 1;
        for (size_t k = 0; k < chunk && blank; k++)
            blank = buf[pos + k] == '\n' || buf[pos + k] == '\r' ||
                    buf[pos + k] == ' ' || buf[pos + k] == '\t';
        if (!rd->in_record && !blank) {
            rd->in_record = 1;
            rd->rec_line = rd->feed_line;
        }
        if (csv_parse(&p, buf + pos, chunk, on_field, on_record, rd) != chunk)
            rc = cdb_csv_error(rd->db, rd->path, rd->in_record ? rd->rec_line : rd->feed_line,
                               (int)rd->n_cur + 1, current_field_name(rd),
                               "malformed CSV (%s)", csv_strerror(csv_error(&p)));
        else if (rd->err == COSTDB_EPARSE)
            rc = cdb_csv_error(rd->db, rd->path, rd->rec_line, rd->nul_col,
                               rd->n_rows > 0 && (size_t)rd->nul_col <= rd->rows[0].n
                                   ? rd->rows[0].f[rd->nul_col - 1] : NULL,
                               "a NUL byte inside the field");
        else if (rd->err)
            rc = cdb_err(rd->db, rd->err, "out of memory");
        pos += chunk;
        rd->feed_line++;
    }
    if (rc == 0 && csv_fini(&p, on_field, on_record, rd) != 0)
        rc = cdb_csv_error(rd->db, rd->path, rd->rec_line, (int)rd->n_cur + 1,
                           current_field_name(rd), "truncated line: a quoted field is not closed");
    if (rc == 0 && rd->err == COSTDB_EPARSE)
        rc = cdb_csv_error(rd->db, rd->path, rd->rec_line, rd->nul_col,
                           rd->n_rows > 0 && (size_t)rd->nul_col <= rd->rows[0].n
                               ? rd->rows[0].f[rd->nul_col - 1] : NULL,
                           "a NUL byte inside the field");
    else if (rc == 0 && rd->err)
        rc = cdb_err(rd->db, rd->err, "out of memory");
    csv_free(&p);
    return rc;
}

/* ---- import ------------------------------------------------------------- */

int costdb_csv_import(Costdb *db, const char *path, const CostdbImportOptions *opt,
                      int64_t *sweep_id)
{
    CostdbImportOptions defaults = {0};
    CsvReader rd;
    CdbImportPlan plan;
    char *buf = NULL;
    size_t len = 0;
    int rc, txn = 0;
    if (!db || !path || !sweep_id)
        return COSTDB_EINVAL;
    if (!opt)
        opt = &defaults;
    memset(&rd, 0, sizeof rd);
    memset(&plan, 0, sizeof plan);
    rd.db = db;
    rd.path = path;
    if ((rc = read_file(db, path, &buf, &len)) < 0)
        goto cleanup;
    /* A UTF-8 byte order mark (spreadsheets write one) is not part of the
     * first column's name. */
    if ((rc = len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? parse_rows(&rd, buf + 3, len - 3)
                                                       : parse_rows(&rd, buf, len)) < 0)
        goto cleanup;
    if (rd.n_rows == 0) {
        rc = cdb_csv_error(db, path, 1, 1, NULL, "empty file: expected a header line");
        goto cleanup;
    }
    {
        CdbCsvTable t = {db, path, NULL, 0};
        size_t n_rows = rd.n_rows;
        CdbCsvLine *lines = calloc(n_rows, sizeof *lines);
        if (!lines) {
            rc = cdb_err(db, COSTDB_ENOMEM, "out of memory");
            goto cleanup;
        }
        for (size_t i = 0; i < n_rows; i++) {
            lines[i].fields = (const char *const *)rd.rows[i].f;
            lines[i].n = rd.rows[i].n;
            lines[i].line = rd.rows[i].line;
        }
        t.lines = lines;
        t.n_lines = n_rows;
        rc = cdb_csv_plan(&t, opt, &plan);
        free(lines);
        if (rc < 0)
            goto cleanup;
    }
    if ((rc = cdb_txn_enter(db)) < 0)
        goto cleanup;
    txn = 1;
    if ((rc = costdb_sweep_create(db, &plan.sweep, plan.submeshes, plan.n_submeshes,
                                  plan.configs, plan.n_configs)) < 0)
        goto cleanup;
    if ((rc = costdb_entries_put(db, plan.sweep.id, plan.entries, plan.n_entries, 0)) < 0)
        goto cleanup;
    *sweep_id = plan.sweep.id;
cleanup:
    if (txn)
        rc = cdb_txn_leave(db, rc);
    for (size_t i = 0; i < rd.n_rows; i++)
        row_free(rd.rows[i].f, rd.rows[i].n);
    free(rd.rows);
    row_free(rd.cur, rd.n_cur);
    cdb_csv_plan_free(&plan);
    free(buf);
    return rc;
}
