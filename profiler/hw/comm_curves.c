/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Measured communication curves as the cost model uses them: the points of
 * one hardware row grouped into one curve per (collective, HxG group),
 * sorted by size, interpolated with approf_collective_seconds_curve. The
 * sweep builds them from the database and hangs them on its spec
 * (ApprofHardwareSpec.curves); approf_collective_seconds consults them
 * before the alpha-beta model, so the sharding solver, the analytic backend
 * and the CUDA backend all price collectives the same way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "hardware.h"
#include "fnv.h"

typedef struct {
    ApprofCollKind kind;
    int hosts, gpus;
    char dtype[8];
    CostdbCommPoint *pts; /* into the owner's array, sorted by bytes */
    size_t n;
} Curve;

struct ApprofCommCurves {
    CostdbCommPoint *pts;
    size_t n_pts;
    Curve *curves;
    size_t n_curves;
};

static int kind_of(const char *name, ApprofCollKind *out)
{
    for (int k = 0; k < APPROF_COLL_KIND_COUNT; k++)
        if (!strcmp(name, approf_coll_kind_name((ApprofCollKind)k))) {
            *out = (ApprofCollKind)k;
            return 1;
        }
    return 0;
}

static int group_of(const char *desc, int *hosts, int *gpus)
{
    char tail;
    if (sscanf(desc, "%dx%d%c", hosts, gpus, &tail) != 2)
        return 0;
    return *hosts >= 1 && *gpus >= 1 && *hosts <= 1 << 20 && *gpus <= 1 << 20;
}

/* Orders points by (collective, group, dtype, bytes). */
static int point_cmp(const void *pa, const void *pb)
{
    const CostdbCommPoint *a = pa, *b = pb;
    int c = strcmp(a->collective, b->collective);
    if (!c)
        c = strcmp(a->group_desc, b->group_desc);
    if (!c)
        c = strcmp(a->dtype, b->dtype);
    if (!c)
        c = (a->bytes > b->bytes) - (a->bytes < b->bytes);
    return c;
}

int approf_comm_curves_new(const CostdbCommPoint *pts, size_t n, const char *prefer_dtype,
                           ApprofCommCurves **out)
{
    ApprofCommCurves *c;
    size_t kept = 0;

    if (!out || (n && !pts))
        return APPROF_EINVAL;
    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c)
        return APPROF_ENOMEM;
    c->pts = malloc((n ? n : 1) * sizeof *c->pts);
    c->curves = malloc((n ? n : 1) * sizeof *c->curves);
    if (!c->pts || !c->curves) {
        approf_comm_curves_free(&c);
        return APPROF_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        ApprofCollKind k;
        int h, g;
        if (!kind_of(pts[i].collective, &k) || !group_of(pts[i].group_desc, &h, &g) ||
            pts[i].bytes <= 0 || !(pts[i].seconds >= 0) || pts[i].seconds > 1e30)
            continue;
        c->pts[kept++] = pts[i];
    }
    c->n_pts = kept;
    if (!kept) {
        approf_comm_curves_free(&c);
        return 0;
    }
    qsort(c->pts, kept, sizeof *c->pts, point_cmp);
    /* one run per (collective, group, dtype); keep one dtype per curve */
    for (size_t i = 0; i < kept;) {
        size_t j = i + 1;
        Curve cv;
        while (j < kept && !strcmp(c->pts[j].collective, c->pts[i].collective) &&
               !strcmp(c->pts[j].group_desc, c->pts[i].group_desc) &&
               !strcmp(c->pts[j].dtype, c->pts[i].dtype))
            j++;
        memset(&cv, 0, sizeof cv);
        kind_of(c->pts[i].collective, &cv.kind);
        group_of(c->pts[i].group_desc, &cv.hosts, &cv.gpus);
        snprintf(cv.dtype, sizeof cv.dtype, "%s", c->pts[i].dtype);
        cv.pts = &c->pts[i];
        cv.n = j - i;
        if (c->n_curves && c->curves[c->n_curves - 1].kind == cv.kind &&
            c->curves[c->n_curves - 1].hosts == cv.hosts &&
            c->curves[c->n_curves - 1].gpus == cv.gpus) {
            /* same curve in another dtype: the preferred one wins, else the
             * first (lexically smaller) stays */
            if (prefer_dtype && !strcmp(cv.dtype, prefer_dtype))
                c->curves[c->n_curves - 1] = cv;
        } else {
            c->curves[c->n_curves++] = cv;
        }
        i = j;
    }
    *out = c;
    return 0;
}

void approf_comm_curves_free(ApprofCommCurves **c)
{
    if (!c || !*c)
        return;
    free((*c)->pts);
    free((*c)->curves);
    free(*c);
    *c = NULL;
}

size_t approf_comm_curves_count(const ApprofCommCurves *c, size_t *points)
{
    size_t np = 0;
    if (!c) {
        if (points)
            *points = 0;
        return 0;
    }
    for (size_t i = 0; i < c->n_curves; i++)
        np += c->curves[i].n;
    if (points)
        *points = np;
    return c->n_curves;
}

static uint64_t mix(uint64_t h, const void *p, size_t len)
{
    return costdb_fnv1a(h, p, len);
}

void approf_comm_curves_hash(const ApprofCommCurves *c, char *out, size_t len)
{
    uint64_t h = COSTDB_FNV_BASIS;
    for (size_t i = 0; c && i < c->n_curves; i++) {
        const Curve *cv = &c->curves[i];
        int key[3] = {(int)cv->kind, cv->hosts, cv->gpus};
        h = mix(h, key, sizeof key);
        h = mix(h, cv->dtype, strlen(cv->dtype) + 1);
        for (size_t k = 0; k < cv->n; k++) {
            h = mix(h, &cv->pts[k].bytes, sizeof cv->pts[k].bytes);
            h = mix(h, &cv->pts[k].seconds, sizeof cv->pts[k].seconds);
        }
    }
    snprintf(out, len, "%016llx", (unsigned long long)h);
}

double approf_comm_curves_seconds(const ApprofCommCurves *c, ApprofCollKind kind, int hosts,
                                  int gpus, double bytes)
{
    if (!c)
        return -1.0;
    for (size_t i = 0; i < c->n_curves; i++) {
        const Curve *cv = &c->curves[i];
        if (cv->kind == kind && cv->hosts == hosts && cv->gpus == gpus)
            return bytes > 0 ? approf_collective_seconds_curve(cv->pts, cv->n, bytes) : 0.0;
    }
    return -1.0;
}
