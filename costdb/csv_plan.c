/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of an imported CSV cost table and construction of the sweep it
 * describes: the header is mapped by name, every field is checked (errors
 * name FILE:LINE:COLUMN and the field), submeshes are indexed in Alpa's
 * order (ascending device count, then hosts), configs per submesh in order of
 * first appearance, and duplicate keys are refused. Nothing here touches the
 * database.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "csv_int.h"

enum { C_START, C_END, C_SUBMESH, C_LOGICAL, C_FBD, C_PHASE, C_COST, C_PEAK, C_INVAR,
       C_OUTVAR, C_TEMP, C_AVAIL, C_INTER, C_INIT, C_STATUS, C_LEVEL, C_RECOMPUTE, C_ZERO,
       C_APPLY, C_TEMPACT };

/* The largest memory level a file may name: a level indexes Pareto points
 * of one stage, never more than a few. */
#define CSV_MAX_MEMORY_LEVEL 1024

int cdb_csv_error(Costdb *db, const char *path, int line, int col, const char *field,
                  const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (field)
        return cdb_err(db, COSTDB_EPARSE, "%s:%d:%d: field '%s': %s", path, line, col, field, what);
    return cdb_err(db, COSTDB_EPARSE, "%s:%d:%d: %s", path, line, col, what);
}

/* One validated data line. */
typedef struct {
    int line;
    int start, end;
    int hosts, gpus, la, lb, fbd;
    CostdbPhase phase;
    double cost;
    int64_t size[7];
    CostdbStatus status;
    CostdbVariant variant;     /* the config's */
    double apply_cost;         /* < 0: unknown */
    int64_t temp_activation;   /* schema 17; 0: NULL */
    int submesh, config;       /* assigned indices */
} Rec;

typedef struct {
    const CdbCsvTable *t;
    int col[CDB_CSV_NCOLS];    /* header position of each column, -1 absent */
    const CdbCsvLine *cur;
} Ctx;

static int field_error(const Ctx *c, int k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int field_error(const Ctx *c, int k, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return cdb_csv_error(c->t->db, c->t->path, c->cur->line, c->col[k] + 1, cdb_csv_columns[k],
                         "%s", what);
}

static const char *field(const Ctx *c, int k)
{
    return c->col[k] < 0 ? "" : c->cur->fields[c->col[k]];
}

/* A whole decimal integer in [0, max]. */
static int parse_count(const Ctx *c, int k, int64_t max, int64_t *out)
{
    const char *s = field(c, k);
    char *end = NULL;
    long long v;
    if (!*s)
        return field_error(c, k, "empty, expected an integer");
    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        return field_error(c, k, "'%s' is not an integer", s);
    if (errno == ERANGE || v > max)
        return field_error(c, k, "%s is out of range", s);
    if (v < 0)
        return field_error(c, k, "%s is negative", s);
    *out = v;
    return 0;
}

/* "NxM" with N, M > 0. */
static int parse_shape(const Ctx *c, int k, int *n, int *m)
{
    const char *s = field(c, k);
    long v[2] = {0, 0};
    int i = 0;
    for (const char *p = s;; p++) {
        if (*p >= '0' && *p <= '9') {
            v[i] = v[i] * 10 + (*p - '0');
            if (v[i] > (1L << 20))
                return field_error(c, k, "'%s' is out of range", s);
        } else if (*p == 'x' && i == 0 && p > s && p[-1] >= '0' && p[-1] <= '9') {
            i = 1;
        } else if (*p == '\0' && i == 1 && p[-1] >= '0' && p[-1] <= '9') {
            break;
        } else {
            return field_error(c, k, "'%s' is not a shape NxM", s);
        }
    }
    if (v[0] <= 0 || v[1] <= 0)
        return field_error(c, k, "'%s' has a zero dimension", s);
    *n = (int)v[0];
    *m = (int)v[1];
    return 0;
}

/* The optional variant columns: an absent column or an empty field is the
 * default (memory level 0, recompute none, zero 0, apply cost unknown). */
static int parse_variant(const Ctx *c, Rec *r)
{
    const char *s;
    char *end = NULL;
    int64_t v = 0;
    int rc;
    r->variant.recompute = COSTDB_RECOMPUTE_NONE;
    r->apply_cost = -1.0;
    if (*field(c, C_LEVEL)) {
        if ((rc = parse_count(c, C_LEVEL, CSV_MAX_MEMORY_LEVEL, &v)) < 0)
            return rc;
        r->variant.memory_level = (int)v;
    }
    s = field(c, C_RECOMPUTE);
    if (*s && (r->variant.recompute = costdb_recompute_parse(s)) < 0)
        return field_error(c, C_RECOMPUTE, "'%s' is not none, selective, full or op", s);
    s = field(c, C_ZERO);
    if (*s) {
        if (strcmp(s, "0") && strcmp(s, "1") && strcmp(s, "2") && strcmp(s, "3"))
            return field_error(c, C_ZERO, "'%s' is not a ZeRO stage 0, 1, 2 or 3", s);
        r->variant.zero = s[0] - '0';
    }
    s = field(c, C_APPLY);
    if (*s) {
        errno = 0;
        r->apply_cost = strtod(s, &end);
        if (end == s || *end != '\0')
            return field_error(c, C_APPLY, "'%s' is not a number", s);
        if (!isfinite(r->apply_cost))
            return field_error(c, C_APPLY, "'%s' is not finite (leave it empty when unknown)", s);
        if (r->apply_cost == 0)
            r->apply_cost = 0.0;  /* -0 is zero */
        if (r->apply_cost < 0)
            return field_error(c, C_APPLY, "%s is negative", s);
        if (r->apply_cost > COSTDB_MAX_SECONDS)
            return field_error(c, C_APPLY, "%s is out of range (at most %g s)", s,
                               COSTDB_MAX_SECONDS);
    }
    return 0;
}

static int parse_line(const Ctx *c, Rec *r)
{
    static const int size_cols[7] = {C_PEAK, C_INVAR, C_OUTVAR, C_TEMP, C_AVAIL, C_INTER, C_INIT};
    const char *s;
    char *end = NULL;
    int64_t v = 0;
    int rc;
    memset(r, 0, sizeof *r);
    r->line = c->cur->line;
    if ((rc = parse_count(c, C_START, COSTDB_MAX_LAYERS - 1, &v)) < 0)
        return rc;
    r->start = (int)v;
    if ((rc = parse_count(c, C_END, COSTDB_MAX_LAYERS - 1, &v)) < 0)
        return rc;
    r->end = (int)v;
    if (r->end < r->start)
        return field_error(c, C_END, "end %d is before start %d", r->end, r->start);
    if ((rc = parse_shape(c, C_SUBMESH, &r->hosts, &r->gpus)) < 0 ||
        (rc = parse_shape(c, C_LOGICAL, &r->la, &r->lb)) < 0)
        return rc;
    if ((int64_t)r->hosts * r->gpus > COSTDB_MAX_DEVICES)
        return field_error(c, C_SUBMESH, "%dx%d is more than %d devices", r->hosts, r->gpus,
                           COSTDB_MAX_DEVICES);
    if ((int64_t)r->la * r->lb != (int64_t)r->hosts * r->gpus)
        return field_error(c, C_LOGICAL, "%dx%d has %lld devices, the submesh %dx%d has %lld",
                           r->la, r->lb, (long long)r->la * r->lb, r->hosts, r->gpus,
                           (long long)r->hosts * r->gpus);
    s = field(c, C_FBD);
    if (!*s)
        r->fbd = -1;
    else if (!strcmp(s, "0") || !strcmp(s, "1"))
        r->fbd = s[0] - '0';
    else
        return field_error(c, C_FBD, "'%s' is not a logical mesh axis (0 or 1) or empty", s);
    s = field(c, C_PHASE);
    if (!strcmp(s, "fwd"))
        r->phase = COSTDB_FWD;
    else if (!strcmp(s, "bwd"))
        r->phase = COSTDB_BWD;
    else
        return field_error(c, C_PHASE, "'%s' is not fwd or bwd", s);
    s = field(c, C_COST);
    errno = 0;
    r->cost = *s ? strtod(s, &end) : 0.0;
    if (!*s || end == s || *end != '\0')
        return field_error(c, C_COST, "'%s' is not a number", s);
    if (isnan(r->cost))
        return field_error(c, C_COST, "NaN is not a cost (use inf for a failed entry)");
    if (r->cost == 0)
        r->cost = 0.0;  /* -0 is zero */
    if (r->cost < 0)
        return field_error(c, C_COST, "%s is negative", s);
    /* 'inf' is a failed entry; a number that overflows to it (1e309) or
     * one too large to sum exactly is a mistake. */
    if ((isinf(r->cost) && errno == ERANGE) || (isfinite(r->cost) && r->cost > COSTDB_MAX_SECONDS))
        return field_error(c, C_COST, "%s is out of range (at most %g s; inf for a failed entry)",
                           s, COSTDB_MAX_SECONDS);
    for (int i = 0; i < 7; i++) {
        if ((rc = parse_count(c, size_cols[i], COSTDB_MAX_BYTES, &r->size[i])) < 0)
            return rc;
    }
    /* Schema 17's activation-sized part of temp_buffer_size: optional, an
     * absent column or an empty field is NULL; else 1..temp_buffer_size,
     * as stage_cost's CHECK keeps it. */
    if (*field(c, C_TEMPACT)) {
        if ((rc = parse_count(c, C_TEMPACT, COSTDB_MAX_BYTES, &r->temp_activation)) < 0)
            return rc;
        if (r->temp_activation == 0)
            return field_error(c, C_TEMPACT, "0 is not an activation-sized part (leave the "
                                             "field empty when there is none)");
        if (r->temp_activation > r->size[3])
            return field_error(c, C_TEMPACT, "%lld is more than temp_buffer_size %lld",
                               (long long)r->temp_activation, (long long)r->size[3]);
    }
    s = field(c, C_STATUS);
    r->status = COSTDB_STATUS_OK;
    if (*s && costdb_status_parse(s, &r->status) < 0)
        return field_error(c, C_STATUS, "'%s' is not ok, oom, failed, timeout or skipped", s);
    return parse_variant(c, r);
}

static int map_header(Ctx *c)
{
    const CdbCsvLine *h = &c->t->lines[0];
    c->cur = h;
    for (int k = 0; k < CDB_CSV_NCOLS; k++) {
        c->col[k] = -1;
        for (size_t i = 0; i < h->n; i++) {
            if (strcmp(h->fields[i], cdb_csv_columns[k]))
                continue;
            if (c->col[k] >= 0)
                return cdb_csv_error(c->t->db, c->t->path, h->line, (int)i + 1, cdb_csv_columns[k],
                                     "column appears twice in the header (also column %d)",
                                     c->col[k] + 1);
            c->col[k] = (int)i;
        }
        if (c->col[k] < 0 && k < C_STATUS)
            return cdb_csv_error(c->t->db, c->t->path, h->line, (int)h->n + 1, cdb_csv_columns[k],
                                 "missing from the header");
    }
    return 0;
}

static int cmp_submesh(const void *a, const void *b)
{
    const CostdbSubmesh *x = a, *y = b;
    int64_t dx = (int64_t)x->hosts * x->gpus_per_host, dy = (int64_t)y->hosts * y->gpus_per_host;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return (x->hosts > y->hosts) - (x->hosts < y->hosts);
}

#define CMP3(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

static int cmp_key(const void *a, const void *b)
{
    const Rec *x = *(const Rec *const *)a, *y = *(const Rec *const *)b;
    int d[] = {CMP3(x->start, y->start), CMP3(x->end, y->end), CMP3(x->submesh, y->submesh),
               CMP3(x->config, y->config), CMP3((int)x->phase, (int)y->phase),
               CMP3(x->line, y->line)};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i])
            return d[i];
    return 0;
}

void cdb_csv_plan_free(CdbImportPlan *plan)
{
    if (!plan)
        return;
    free(plan->submeshes);
    free(plan->configs);
    free(plan->entries);
    plan->submeshes = NULL;
    plan->configs = NULL;
    plan->entries = NULL;
}

/* Builds the submesh list (Alpa's order) and assigns each record its index. */
static int plan_submeshes(const Ctx *c, Rec *recs, size_t n, const CostdbImportOptions *opt,
                          CdbImportPlan *plan)
{
    size_t cap = 0;
    int rc;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        for (k = 0; k < plan->n_submeshes; k++)
            if (plan->submeshes[k].hosts == recs[i].hosts &&
                plan->submeshes[k].gpus_per_host == recs[i].gpus)
                break;
        if (k < plan->n_submeshes)
            continue;
        if (opt->cluster_hosts > 0 &&
            (recs[i].hosts > opt->cluster_hosts || recs[i].gpus > opt->cluster_gpus)) {
            Ctx at = *c;
            at.cur = &c->t->lines[i + 1];
            return field_error(&at, C_SUBMESH, "%dx%d does not fit in the cluster %dx%d",
                               recs[i].hosts, recs[i].gpus, opt->cluster_hosts, opt->cluster_gpus);
        }
        if ((rc = cdb_grow(c->t->db, (void **)&plan->submeshes, &cap, plan->n_submeshes + 1,
                           sizeof *plan->submeshes)) < 0)
            return rc;
        plan->submeshes[plan->n_submeshes].hosts = recs[i].hosts;
        plan->submeshes[plan->n_submeshes].gpus_per_host = recs[i].gpus;
        plan->n_submeshes++;
    }
    qsort(plan->submeshes, plan->n_submeshes, sizeof *plan->submeshes, cmp_submesh);
    for (size_t k = 0; k < plan->n_submeshes; k++)
        plan->submeshes[k].index = (int)k;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < plan->n_submeshes; k++)
            if (plan->submeshes[k].hosts == recs[i].hosts &&
                plan->submeshes[k].gpus_per_host == recs[i].gpus)
                recs[i].submesh = (int)k;
    return 0;
}

/* Configs per submesh in order of first appearance in the file. */
static int plan_configs(const Ctx *c, Rec *recs, size_t n, CdbImportPlan *plan)
{
    size_t cap = 0;
    int rc;
    for (size_t i = 0; i < n; i++) {
        int next = 0;
        size_t k;
        for (k = 0; k < plan->n_configs; k++) {
            const CostdbConfig *x = &plan->configs[k];
            if (x->submesh_index != recs[i].submesh)
                continue;
            if (x->logical_a == recs[i].la && x->logical_b == recs[i].lb &&
                x->force_batch_dim == recs[i].fbd &&
                costdb_variant_equal(x->variant, recs[i].variant))
                break;
            next = x->config_index + 1;
        }
        if (k == plan->n_configs) {
            if ((rc = cdb_grow(c->t->db, (void **)&plan->configs, &cap, plan->n_configs + 1,
                               sizeof *plan->configs)) < 0)
                return rc;
            memset(&plan->configs[k], 0, sizeof plan->configs[k]);
            plan->configs[k].submesh_index = recs[i].submesh;
            plan->configs[k].config_index = next;
            plan->configs[k].logical_a = recs[i].la;
            plan->configs[k].logical_b = recs[i].lb;
            plan->configs[k].force_batch_dim = recs[i].fbd;
            plan->configs[k].variant = recs[i].variant;
            plan->n_configs++;
        }
        recs[i].config = plan->configs[k].config_index;
    }
    return 0;
}

static int check_duplicates(const Ctx *c, const Rec *recs, size_t n)
{
    const Rec **order = malloc((n ? n : 1) * sizeof *order);
    int rc = 0;
    if (!order)
        return cdb_err(c->t->db, COSTDB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = &recs[i];
    qsort(order, n, sizeof *order, cmp_key);
    for (size_t i = 1; i < n && rc == 0; i++) {
        const Rec *a = order[i - 1], *b = order[i];
        if (a->start == b->start && a->end == b->end && a->submesh == b->submesh &&
            a->config == b->config && a->phase == b->phase) {
            Ctx at = *c;
            at.cur = &c->t->lines[(size_t)(b - recs) + 1];
            char variant[96] = "";
            if (!costdb_variant_is_plain(b->variant))
                snprintf(variant, sizeof variant, " (memory level %d, recompute %s, zero %d)",
                         b->variant.memory_level, costdb_recompute_name(b->variant.recompute),
                         b->variant.zero);
            rc = field_error(&at, C_START,
                             "duplicate entry (%d, %d, %dx%d, %dx%d, %s)%s already on line %d",
                             b->start, b->end, b->hosts, b->gpus, b->la, b->lb,
                             b->phase == COSTDB_BWD ? "bwd" : "fwd", variant, a->line);
        }
    }
    free(order);
    return rc;
}

static int fill_sweep(const Ctx *c, const Rec *recs, size_t n, const CostdbImportOptions *opt,
                      CdbImportPlan *plan)
{
    CostdbSweep *s = &plan->sweep;
    const CostdbSubmesh *largest = &plan->submeshes[plan->n_submeshes - 1];
    const char *base = strrchr(c->t->path, '/');
    const char *name = opt->name ? opt->name : (base ? base + 1 : c->t->path);
    int max_end = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].end > max_end)
            max_end = recs[i].end;
    memset(s, 0, sizeof *s);
    if (strlen(name) >= sizeof s->name)
        return cdb_err(c->t->db, COSTDB_EINVAL, "sweep name '%s' is longer than %zu bytes", name,
                       sizeof s->name - 1);
    if (strlen(c->t->path) >= sizeof s->source)
        return cdb_err(c->t->db, COSTDB_EINVAL, "%s: the path is longer than %zu bytes",
                       c->t->path, sizeof s->source - 1);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->source, sizeof s->source, "%s", c->t->path);
    s->cluster_hosts = opt->cluster_hosts > 0 ? opt->cluster_hosts : largest->hosts;
    s->cluster_gpus = opt->cluster_gpus > 0 ? opt->cluster_gpus : largest->gpus_per_host;
    s->global_batch = opt->global_batch > 0 ? opt->global_batch : 1;
    s->micro_batches = opt->micro_batches > 0 ? opt->micro_batches : 1;
    s->num_layers = max_end + 1;
    snprintf(s->layer_option, sizeof s->layer_option, "imported");
    snprintf(s->submesh_space, sizeof s->submesh_space, "imported");
    snprintf(s->logical_space, sizeof s->logical_space, "imported");
    snprintf(s->backend, sizeof s->backend, "import");
    snprintf(s->tool_version, sizeof s->tool_version, "%s", APPROF_VERSION);
    costdb_now(s->started_at, sizeof s->started_at);
    snprintf(s->finished_at, sizeof s->finished_at, "%s", s->started_at);
    s->status = COSTDB_SWEEP_IMPORTED;
    return 0;
}

int cdb_csv_plan(const CdbCsvTable *t, const CostdbImportOptions *opt, CdbImportPlan *plan)
{
    Ctx c;
    Rec *recs = NULL;
    size_t n = t->n_lines - 1;
    int rc;
    memset(plan, 0, sizeof *plan);
    memset(&c, 0, sizeof c);
    c.t = t;
    if ((rc = map_header(&c)) < 0)
        return rc;
    if (n == 0)
        return cdb_csv_error(t->db, t->path, t->lines[0].line + 1, 1, NULL,
                             "no data lines after the header");
    recs = calloc(n, sizeof *recs);
    if (!recs)
        return cdb_err(t->db, COSTDB_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const CdbCsvLine *l = &t->lines[i + 1];
        const CdbCsvLine *h = &t->lines[0];
        c.cur = l;
        if (l->n < h->n) {
            rc = cdb_csv_error(t->db, t->path, l->line, (int)l->n + 1, h->fields[l->n],
                               "truncated line: %zu fields, the header has %zu", l->n, h->n);
            goto cleanup;
        }
        if (l->n > h->n) {
            rc = cdb_csv_error(t->db, t->path, l->line, (int)h->n + 1, NULL,
                               "%zu fields, the header has only %zu", l->n, h->n);
            goto cleanup;
        }
        if ((rc = parse_line(&c, &recs[i])) < 0)
            goto cleanup;
    }
    if ((rc = plan_submeshes(&c, recs, n, opt, plan)) < 0 ||
        (rc = plan_configs(&c, recs, n, plan)) < 0 ||
        (rc = check_duplicates(&c, recs, n)) < 0 ||
        (rc = fill_sweep(&c, recs, n, opt, plan)) < 0)
        goto cleanup;
    plan->entries = calloc(n, sizeof *plan->entries);
    if (!plan->entries) {
        rc = cdb_err(t->db, COSTDB_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        CostdbEntry *e = &plan->entries[i];
        e->start_layer = recs[i].start;
        e->end_layer = recs[i].end;
        e->submesh_index = recs[i].submesh;
        e->config_index = recs[i].config;
        e->phase = recs[i].phase;
        e->compute_cost = recs[i].cost;
        e->peak_memory = recs[i].size[0];
        e->invar_size = recs[i].size[1];
        e->outvar_size = recs[i].size[2];
        e->temp_buffer_size = recs[i].size[3];
        e->available_memory = recs[i].size[4];
        e->intermediate_size = recs[i].size[5];
        e->initial_size = recs[i].size[6];
        e->repeats = 1;
        e->status = recs[i].status;
        e->apply_cost = recs[i].apply_cost;
        e->wgrad_cost = -1.0; /* a CSV table has no weight-gradient split */
        e->temp_activation_size = recs[i].temp_activation;
    }
    plan->n_entries = n;
cleanup:
    free(recs);
    if (rc < 0)
        cdb_csv_plan_free(plan);
    return rc;
}
