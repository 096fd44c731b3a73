/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comparing two cost databases (approf compare): entries of one sweep on
 * each side are matched by model signature, layer range, submesh shape,
 * config (logical shape and force option) and phase — never by submesh or
 * config index, which differ between clusters. Ratios are B / A; rows are
 * sorted by |log ratio| (largest deviation first, unmatched and non-finite
 * last). The solver (libapsolve) plans each side with the sweep's
 * micro-batch count so the two plans can be read side by side. Writers for
 * text, CSV, JSON and HTML sit behind one table.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apsolve.h"
#include "grow.h"
#include "plural.h"
#include "report_int.h"
#include "text_mask.h"

typedef struct {
    int i, j, hosts, gpus, a, b, force, phase;
} Key;

typedef struct {
    Key k;
    int has[2];
    CostdbEntry e[2];
    double ratio;                     /* NaN when not comparable */
} Row;

typedef struct {
    const char *label;
    CostdbSweep sweep;
    char signature[COSTDB_NAME_MAX];
    char model_name[COSTDB_NAME_MAX];
    char gpu[COSTDB_NAME_MAX];
    ApsolvePlan *plan;
    char plan_error[256];
    int headroom_kept;                /* the plan keeps apsolve's default headroom */
} Side;

struct ApreportCompare {
    Side side[2];
    Row *rows;
    size_t n_rows;
    ApreportCompareSummary sum;
};

static int key_cmp(const Key *x, const Key *y)
{
    const int *a = &x->i, *b = &y->i;
    for (int n = 0; n < 8; n++)
        if (a[n] != b[n])
            return a[n] < b[n] ? -1 : 1;
    return 0;
}

static int row_key_cmp(const void *x, const void *y)
{
    return key_cmp(&((const Row *)x)->k, &((const Row *)y)->k);
}

static double dev(const Row *r)
{
    return isfinite(r->ratio) && r->ratio > 0 ? fabs(log(r->ratio)) : -1;
}

static int row_dev_cmp(const void *x, const void *y)
{
    const Row *a = x, *b = y;
    double da = dev(a), db = dev(b);
    if (da != db)
        return da > db ? -1 : 1;
    return key_cmp(&a->k, &b->k);
}

static int load_side(Costdb *db, int64_t sweep_id, Side *s, Row **rows, size_t *n,
                     size_t *cap, int which, char *err, size_t errlen)
{
    CostdbSubmesh *sm = NULL;
    CostdbConfig *cf = NULL;
    CostdbEntry *e = NULL;
    size_t nsm = 0, ncf = 0, ne = 0;
    int rc = APREPORT_EDB;
    if (sweep_id <= 0 && costdb_sweep_latest(db, &sweep_id) < 0) {
        snprintf(err, errlen, "%s: no sweep in the database", costdb_path(db));
        return APREPORT_ENOTFOUND;
    }
    if (costdb_sweep_get(db, sweep_id, &s->sweep) < 0) {
        snprintf(err, errlen, "%s: no sweep %lld", costdb_path(db), (long long)sweep_id);
        return APREPORT_ENOTFOUND;
    }
    if (s->sweep.model_id > 0) {
        CostdbModel m;
        if (costdb_model_get(db, s->sweep.model_id, &m) == 0) {
            snprintf(s->signature, sizeof(s->signature), "%s", m.signature);
            snprintf(s->model_name, sizeof(s->model_name), "%s", m.name);
        }
    }
    if (s->sweep.hardware_id > 0) {
        CostdbHardware *hw = malloc(sizeof(*hw));
        if (hw && costdb_hardware_get(db, s->sweep.hardware_id, hw) == 0)
            snprintf(s->gpu, sizeof(s->gpu), "%s", hw->gpu_model);
        free(hw);
    }
    if (costdb_sweep_submeshes(db, sweep_id, &sm, &nsm) < 0 ||
        costdb_sweep_configs(db, sweep_id, &cf, &ncf) < 0 ||
        costdb_entries_get(db, sweep_id, &e, &ne) < 0) {
        snprintf(err, errlen, "%s: %s", costdb_path(db), costdb_errmsg(db));
        goto cleanup;
    }
    /* one row spare: never NULL, even with no entries (qsort) */
    if (UTIL_GROW(*rows, *cap, *n + ne + 1) < 0) {
        rc = APREPORT_ENOMEM;
        goto cleanup;
    }
    for (size_t x = 0; x < ne; x++) {
        Row *r = &(*rows)[*n];
        const CostdbSubmesh *m = NULL;
        const CostdbConfig *c = NULL;
        for (size_t y = 0; y < nsm; y++)
            if (sm[y].index == e[x].submesh_index)
                m = &sm[y];
        for (size_t y = 0; y < ncf; y++)
            if (cf[y].submesh_index == e[x].submesh_index && cf[y].config_index == e[x].config_index)
                c = &cf[y];
        if (!m || !c)
            continue;
        memset(r, 0, sizeof(*r));
        r->k = (Key){e[x].start_layer, e[x].end_layer, m->hosts, m->gpus_per_host, c->logical_a,
                     c->logical_b, c->force_batch_dim, (int)e[x].phase};
        r->has[which] = 1;
        r->e[which] = e[x];
        (*n)++;
    }
    rc = 0;
cleanup:
    free(sm);
    free(cf);
    free(e);
    return rc;
}

static void solve_side(Costdb *db, Side *s)
{
    ApsolveProblem *p = NULL;
    ApsolveOptions o = {0};
    int rc;
    o.micro_batches = s->sweep.micro_batches > 0 ? s->sweep.micro_batches : 1;
    /* apsolve's auto plan: its default memory headroom, kept by its rule */
    o.headroom_percent = APSOLVE_DEFAULT_HEADROOM_PERCENT;
    if ((rc = apsolve_problem_from_db(db, s->sweep.id, &o, &p)) < 0) {
        snprintf(s->plan_error, sizeof(s->plan_error), "%s", apsolve_strerror(rc));
        return;
    }
    rc = apsolve_solve_keep_headroom(p, &o, &s->plan);
    s->headroom_kept = rc == 0 && o.search_headroom;
    o.search_headroom = 0; /* the explanation below is by the raw capacity */
    if (rc == APSOLVE_EINFEASIBLE)
        apsolve_explain(p, &o, s->plan_error, sizeof(s->plan_error));
    else if (rc < 0)
        snprintf(s->plan_error, sizeof(s->plan_error), "%s", apsolve_strerror(rc));
    apsolve_problem_free(&p);
}

/* The memory headroom a side's plan was made with, as apsolve's auto
 * search keeps it (docs/solver.md, "Memory headroom"). */
static void headroom_text(FILE *f, const Side *s)
{
    fprintf(f, "Memory headroom: %g %% of each device's memory for allocator fragmentation "
            "(apsolve's default, the 'reserve' column)%s\n", APSOLVE_DEFAULT_HEADROOM_PERCENT,
            s->headroom_kept ? "" : "; no plan keeps it, so this one is made by the raw "
                                    "capacity");
}

static void summarize(ApreportCompare *c)
{
    ApreportCompareSummary *s = &c->sum;
    double logsum = 0, diffsum = 0;
    size_t ndiff = 0;
    memset(s, 0, sizeof(*s));
    s->models_match = !strcmp(c->side[0].signature, c->side[1].signature);
    s->min_ratio = INFINITY;
    s->max_ratio = -INFINITY;
    for (size_t i = 0; i < c->n_rows; i++) {
        Row *r = &c->rows[i];
        r->ratio = NAN;
        if (!r->has[0] || !r->has[1]) {
            s->only_a += r->has[0];
            s->only_b += r->has[1];
            continue;
        }
        s->matched++;
        if (r->e[0].status == COSTDB_STATUS_OK && r->e[1].status == COSTDB_STATUS_OK) {
            double d = (double)(r->e[1].peak_memory - r->e[0].peak_memory);
            diffsum += d;
            ndiff++;
            if (fabs(d) > s->max_abs_peak_diff)
                s->max_abs_peak_diff = fabs(d);
        }
        double a = r->e[0].compute_cost, b = r->e[1].compute_cost;
        if (isfinite(a) && isfinite(b) && a > 0 && b > 0 &&
            r->e[0].status == COSTDB_STATUS_OK && r->e[1].status == COSTDB_STATUS_OK) {
            r->ratio = b / a;
            s->ratios++;
            logsum += log(r->ratio);
            if (r->ratio < s->min_ratio)
                s->min_ratio = r->ratio;
            if (r->ratio > s->max_ratio)
                s->max_ratio = r->ratio;
        }
    }
    s->geomean = s->ratios ? exp(logsum / (double)s->ratios) : NAN;
    if (!s->ratios)
        s->min_ratio = s->max_ratio = NAN;
    s->mean_peak_diff = ndiff ? diffsum / (double)ndiff : 0;
}

int apreport_compare(Costdb *a, Costdb *b, const ApreportCompareOptions *opt,
                     ApreportCompare **out, char *err, size_t errlen)
{
    ApreportCompare *c;
    Row *rows = NULL;
    size_t n = 0, m = 0, cap = 0;
    int rc;
    if (!a || !b || !opt || !out)
        return APREPORT_EINVAL;
    *out = NULL;
    if (!(c = calloc(1, sizeof(*c))))
        return APREPORT_ENOMEM;
    c->side[0].label = opt->label_a ? opt->label_a : costdb_path(a);
    c->side[1].label = opt->label_b ? opt->label_b : costdb_path(b);
    if ((rc = load_side(a, opt->sweep_a, &c->side[0], &rows, &n, &cap, 0, err, errlen)) < 0 ||
        (rc = load_side(b, opt->sweep_b, &c->side[1], &rows, &n, &cap, 1, err, errlen)) < 0)
        goto fail;
    /* Different models: nothing matches (every entry is one-sided). */
    if (strcmp(c->side[0].signature, c->side[1].signature))
        for (size_t i = 0; i < n; i++)
            rows[i].k.i += rows[i].has[1] ? 1 << 24 : 0;
    qsort(rows, n, sizeof(Row), row_key_cmp);
    for (size_t i = 0; i < n; i++) {
        int w = rows[i].has[1];
        if (m > 0 && !key_cmp(&rows[m - 1].k, &rows[i].k) && !rows[m - 1].has[w]) {
            rows[m - 1].has[w] = 1;
            rows[m - 1].e[w] = rows[i].e[w];
            continue;
        }
        rows[m++] = rows[i];
    }
    for (size_t i = 0; i < m; i++)
        if (rows[i].k.i >= 1 << 24)
            rows[i].k.i -= 1 << 24;
    c->rows = rows;
    c->n_rows = m;
    summarize(c);
    qsort(c->rows, c->n_rows, sizeof(Row), row_dev_cmp);
    if (opt->solve) {
        solve_side(a, &c->side[0]);
        solve_side(b, &c->side[1]);
    }
    *out = c;
    return 0;
fail:
    free(rows);
    free(c);
    return rc;
}

void apreport_compare_free(ApreportCompare **c)
{
    if (!c || !*c)
        return;
    apsolve_plan_free(&(*c)->side[0].plan);
    apsolve_plan_free(&(*c)->side[1].plan);
    free((*c)->rows);
    free(*c);
    *c = NULL;
}

void apreport_compare_summary(const ApreportCompare *c, ApreportCompareSummary *out)
{
    *out = c->sum;
}

/* ---- writers ---------------------------------------------------------------- */

static void key_text(const Key *k, char *out, size_t len)
{
    snprintf(out, len, "(%d, %d, (%d, %d), (%d, %d)%s)", k->i, k->j, k->hosts, k->gpus, k->a, k->b,
             k->force >= 0 ? " f" : "");
}

/* The names come from the database (and the path from the user): masked
 * for the terminal as approf list masks them. */
static void side_desc(FILE *f, const char *tag, const Side *s)
{
    char label[4096], model[COSTDB_NAME_MAX], gpu[sizeof s->gpu];
    fprintf(f, "%s: %s sweep %lld (%s%s%s, %dx%d, %d %s of %lld)\n", tag,
            costdb_text_mask(s->label, label, sizeof label), (long long)s->sweep.id,
            s->model_name[0] ? costdb_text_mask(s->model_name, model, sizeof model)
                             : "imported table",
            s->gpu[0] ? " on " : "", costdb_text_mask(s->gpu, gpu, sizeof gpu),
            s->sweep.cluster_hosts, s->sweep.cluster_gpus, s->sweep.micro_batches,
            costdb_plural(s->sweep.micro_batches, "micro-batch", "micro-batches"),
            (long long)s->sweep.micro_batch_size);
}

static int write_text(const ApreportCompare *c, FILE *f)
{
    const ApreportCompareSummary *s = &c->sum;
    char key[96];
    side_desc(f, "A", &c->side[0]);
    side_desc(f, "B", &c->side[1]);
    if (!s->models_match)
        fputs("warning: the model signatures differ; no entry can match\n", f);
    fprintf(f, "matched %zu, only in A %zu, only in B %zu\n", s->matched, s->only_a, s->only_b);
    fprintf(f, "compute cost B/A over %zu %s: geomean %.4f, min %.4f, max %.4f\n", s->ratios,
            costdb_plural((long long)s->ratios, "entry", "entries"), s->geomean, s->min_ratio,
            s->max_ratio);
    fprintf(f, "peak memory B-A: mean %+.3f GiB, max |diff| %.3f GiB\n\n",
            s->mean_peak_diff / (1 << 30), s->max_abs_peak_diff / (1 << 30));
    fprintf(f, "%-32s %-5s %12s %12s %8s %10s %10s\n", "entry (i, j, submesh, logical)", "phase",
            "A cost (s)", "B cost (s)", "B/A", "A peak GiB", "B peak GiB");
    for (size_t i = 0; i < c->n_rows; i++) {
        const Row *r = &c->rows[i];
        if (!r->has[0] || !r->has[1])
            continue;
        key_text(&r->k, key, sizeof(key));
        fprintf(f, "%-32s %-5s %12.6g %12.6g %8.4f %10.3f %10.3f\n", key, r->k.phase ? "bwd" : "fwd",
                r->e[0].compute_cost, r->e[1].compute_cost, r->ratio,
                rep_gb(r->e[0].peak_memory), rep_gb(r->e[1].peak_memory));
    }
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->n_rows; i++) {
            const Row *r = &c->rows[i];
            if (r->has[w] && !r->has[!w]) {
                key_text(&r->k, key, sizeof(key));
                fprintf(f, "only in %c: %s %s cost %.6g\n", w ? 'B' : 'A', key,
                        r->k.phase ? "bwd" : "fwd", r->e[w].compute_cost);
            }
        }
    for (int w = 0; w < 2; w++) {
        char label[4096];
        fprintf(f, "\nplan on %c (%s):\n", w ? 'B' : 'A',
                costdb_text_mask(c->side[w].label, label, sizeof label));
        if (c->side[w].plan) {
            ApsolveOutput o = {"auto", "auto", c->side[w].plan, 0};
            headroom_text(f, &c->side[w]);
            apsolve_write(f, "text", &o, 1);
        } else {
            fprintf(f, "no plan: %s\n", c->side[w].plan_error[0] ? c->side[w].plan_error
                                                                  : "solver not run");
        }
    }
    return ferror(f) ? APREPORT_EIO : 0;
}


/* A number in the CSV: the JSON writer's digits (one value, one text in
 * both formats); inf and nan as C prints them. */
static void csv_num(char *buf, size_t len, double v)
{
    if (isfinite(v))
        costdb_json_number_text(v, buf, len);
    else
        snprintf(buf, len, "%g", v);
}

static int write_csv(const ApreportCompare *c, FILE *f)
{
    fputs("start,end,submesh,logical_mesh,force_batch_dim,phase,a_cost,b_cost,ratio,a_peak_memory,"
          "b_peak_memory,side\n", f);
    for (size_t i = 0; i < c->n_rows; i++) {
        const Row *r = &c->rows[i];
        char fb[16] = "", ac[40] = "", bc[40] = "", ra[40] = "", ap[32] = "", bp[32] = "";
        if (r->k.force >= 0)
            snprintf(fb, sizeof(fb), "%d", r->k.force);
        if (r->has[0]) {
            csv_num(ac, sizeof ac, r->e[0].compute_cost);
            snprintf(ap, sizeof(ap), "%lld", (long long)r->e[0].peak_memory);
        }
        if (r->has[1]) {
            csv_num(bc, sizeof bc, r->e[1].compute_cost);
            snprintf(bp, sizeof(bp), "%lld", (long long)r->e[1].peak_memory);
        }
        if (isfinite(r->ratio))
            csv_num(ra, sizeof ra, r->ratio);
        fprintf(f, "%d,%d,%dx%d,%dx%d,%s,%s,%s,%s,%s,%s,%s,%s\n", r->k.i, r->k.j, r->k.hosts,
                r->k.gpus, r->k.a, r->k.b, fb, r->k.phase ? "bwd" : "fwd", ac, bc, ra, ap, bp,
                r->has[0] && r->has[1] ? "both" : r->has[0] ? "a" : "b");
    }
    return ferror(f) ? APREPORT_EIO : 0;
}

static void jnum(FILE *f, double v)
{
    costdb_json_number(f, v);
}

static int write_json(const ApreportCompare *c, FILE *f)
{
    const ApreportCompareSummary *s = &c->sum;
    fputs("{\n  \"sides\": [", f);
    for (int w = 0; w < 2; w++) {
        fputs(w ? ", {\"label\": " : "{\"label\": ", f);
        rep_json_string(f, c->side[w].label);
        fprintf(f, ", \"sweep_id\": %lld, \"model\": ", (long long)c->side[w].sweep.id);
        rep_json_string(f, c->side[w].model_name);
        fputs(", \"signature\": ", f);
        rep_json_string(f, c->side[w].signature);
        fputs(", \"gpu\": ", f);
        rep_json_string(f, c->side[w].gpu);
        fprintf(f, ", \"memory_headroom\": \"%g%%\", \"headroom_kept\": %s, \"plan\": ",
                APSOLVE_DEFAULT_HEADROOM_PERCENT, c->side[w].headroom_kept ? "true" : "false");
        if (c->side[w].plan) {
            ApsolveOutput o = {"auto", "auto", c->side[w].plan, 0};
            apsolve_write(f, "json", &o, 1);
        } else {
            fputs("null", f);
        }
        fputs("}", f);
    }
    fprintf(f, "],\n  \"summary\": {\"models_match\": %s, \"matched\": %zu, \"only_a\": %zu, "
               "\"only_b\": %zu, \"ratios\": %zu, \"geomean\": ",
            s->models_match ? "true" : "false", s->matched, s->only_a, s->only_b, s->ratios);
    jnum(f, s->geomean);
    fputs(", \"min\": ", f);
    jnum(f, s->min_ratio);
    fputs(", \"max\": ", f);
    jnum(f, s->max_ratio);
    fputs(", \"mean_peak_diff\": ", f);
    jnum(f, s->mean_peak_diff);
    fputs(", \"max_abs_peak_diff\": ", f);
    jnum(f, s->max_abs_peak_diff);
    fputs("},\n  \"entries\": [", f);
    for (size_t i = 0; i < c->n_rows; i++) {
        const Row *r = &c->rows[i];
        fprintf(f, "%s\n    {\"start\": %d, \"end\": %d, \"submesh\": [%d, %d], \"logical_mesh\": "
                   "[%d, %d], \"force_batch_dim\": ", i ? "," : "", r->k.i, r->k.j, r->k.hosts,
                r->k.gpus, r->k.a, r->k.b);
        if (r->k.force >= 0)
            fprintf(f, "%d", r->k.force);
        else
            fputs("null", f);
        fprintf(f, ", \"phase\": \"%s\", \"a_cost\": ", r->k.phase ? "bwd" : "fwd");
        jnum(f, r->has[0] ? r->e[0].compute_cost : NAN);
        fputs(", \"b_cost\": ", f);
        jnum(f, r->has[1] ? r->e[1].compute_cost : NAN);
        fputs(", \"ratio\": ", f);
        jnum(f, r->ratio);
        fputs("}", f);
    }
    fputs("]\n}\n", f);
    return ferror(f) ? APREPORT_EIO : 0;
}

static int write_html(const ApreportCompare *c, FILE *f)
{
    const ApreportCompareSummary *s = &c->sum;
    char key[96];
    rep_html(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>approf compare"
          "</title><style>body{font-family:sans-serif;margin:24px}table{border-collapse:collapse;"
          "font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px}td.n{text-align:right}"
          "pre{background:#f6f6f6;padding:8px}</style></head><body>\n<h1>approf compare</h1>\n<p>");
    for (int w = 0; w < 2; w++) {
        rep_html(f, "%c: <code>", w ? 'B' : 'A');
        rep_html(f, "%s", c->side[w].label);
        rep_html(f, "</code> sweep %lld<br>\n", (long long)c->side[w].sweep.id);
    }
    rep_html(f, "</p><p>matched %zu, only in A %zu, only in B %zu; compute B/A geomean %.4f, "
               "min %.4f, max %.4f</p>\n<table><tr><th>entry</th><th>phase</th><th>A (s)</th>"
               "<th>B (s)</th><th>B/A</th></tr>\n",
            s->matched, s->only_a, s->only_b, s->geomean, s->min_ratio, s->max_ratio);
    for (size_t i = 0; i < c->n_rows; i++) {
        const Row *r = &c->rows[i];
        key_text(&r->k, key, sizeof(key));
        rep_html(f, "<tr><td>%s</td><td>%s</td><td class=\"n\">", key, r->k.phase ? "bwd" : "fwd");
        if (r->has[0])
            rep_html(f, "%.6g", r->e[0].compute_cost);
        rep_html(f, "</td><td class=\"n\">");
        if (r->has[1])
            rep_html(f, "%.6g", r->e[1].compute_cost);
        rep_html(f, "</td><td class=\"n\">");
        if (isfinite(r->ratio))
            rep_html(f, "%.4f", r->ratio);
        rep_html(f, "</td></tr>\n");
    }
    rep_html(f, "</table>\n");
    for (int w = 0; w < 2; w++) {
        rep_html(f, "<h2>Plan on %c</h2>\n<pre>", w ? 'B' : 'A');
        if (c->side[w].plan) {
            char *buf = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&buf, &len);
            ApsolveOutput o = {"auto", "auto", c->side[w].plan, 0};
            if (m) {
                headroom_text(m, &c->side[w]);
                apsolve_write(m, "text", &o, 1);
                fclose(m);
                rep_html(f, "%s", buf);
            }
            free(buf);
        } else {
            rep_html(f, "%s", c->side[w].plan_error);
        }
        rep_html(f, "</pre>\n");
    }
    rep_html(f, "</body></html>\n");
    return ferror(f) ? APREPORT_EIO : 0;
}

static const struct {
    const char *name;
    int (*fn)(const ApreportCompare *c, FILE *f);
} compare_writers[] = {
    {"text", write_text}, {"csv", write_csv}, {"json", write_json}, {"html", write_html},
};

int apreport_compare_write(const ApreportCompare *c, const char *format, FILE *f)
{
    if (!c || !format || !f)
        return APREPORT_EINVAL;
    for (size_t i = 0; i < sizeof(compare_writers) / sizeof(compare_writers[0]); i++)
        if (!strcmp(compare_writers[i].name, format))
            return compare_writers[i].fn(c, f);
    return APREPORT_EINVAL;
}
