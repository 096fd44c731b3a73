/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Measured GEMM rates per shape as the cost model uses them (table
 * gemm_profile, `approf probe`'s grid): the points of one hardware row
 * grouped per dtype into an m x n x k grid, and the rate of any shape
 * interpolated in it. The sweep builds the table from the database and
 * hangs it on its spec (ApprofHardwareSpec.gemm_table); approf_kernel_seconds
 * consults it before the roofline (hw/cost.c), so the analytic backend and
 * the sharding solver price GEMMs the same way.
 *
 * Interpolation: trilinear in log2(m), log2(n), log2(k) between the grid's
 * neighbours of the shape on each axis, the rate itself (not its inverse)
 * weighted. At a grid point the weights are 1 and 0, so the point's rate
 * comes back exactly; between two neighbours on one axis the rate moves
 * monotonically from one to the other; outside the grid each size is
 * clamped to the grid's first or last (the rate of the nearest edge). Sizes
 * sit in powers of two in the probe's grid, and GEMM efficiency follows the
 * logarithm of the size far better than the size itself (it saturates).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costdb.h"
#include "fnv.h"
#include "grow.h"
#include "hardware.h"

typedef struct {
    char dtype[8];
    int nx[3];          /* distinct sizes of m, n, k */
    double *lg[3];      /* their log2, ascending */
    int64_t *sz[3];     /* the sizes */
    double *rate;       /* [(i * nx[1] + j) * nx[2] + l] */
    size_t points;      /* nx[0] * nx[1] * nx[2] */
    int complete;       /* every (m, n, k) of the grid has a point */
} Grid;

struct ApprofGemmTable {
    Grid *grids;
    size_t n;
    uint64_t hash;
};

static int point_cmp(const void *pa, const void *pb)
{
    const CostdbGemmPoint *a = pa, *b = pb;
    int c = strcmp(a->dtype, b->dtype);
    if (c)
        return c;
    if (a->m != b->m)
        return a->m < b->m ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    /* a shape twice (not from the database, whose key forbids it): the
     * larger rate last, which grid_build keeps */
    return a->rate < b->rate ? -1 : a->rate > b->rate;
}

static int64_t dim(const CostdbGemmPoint *p, int d)
{
    return d == 0 ? p->m : d == 1 ? p->n : p->k;
}

static int i64_cmp(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : a > b;
}

static int find(const int64_t *v, int n, int64_t x)
{
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (v[mid] == x)
            return mid;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static void grid_free(Grid *g)
{
    for (int d = 0; d < 3; d++) {
        free(g->lg[d]);
        free(g->sz[d]);
    }
    free(g->rate);
}

/* The grid of the sorted points p[0..n) of one dtype (a later duplicate
 * of a shape wins). */
static int grid_build(const CostdbGemmPoint *p, size_t n, Grid *g)
{
    size_t cells = 1;
    memset(g, 0, sizeof *g);
    snprintf(g->dtype, sizeof g->dtype, "%s", p[0].dtype);
    for (int d = 0; d < 3; d++) {
        int64_t *v = malloc(n * sizeof *v);
        int u = 0;
        if (!v)
            return APPROF_ENOMEM;
        for (size_t i = 0; i < n; i++)
            v[i] = dim(&p[i], d);
        qsort(v, n, sizeof *v, i64_cmp);
        for (size_t i = 0; i < n; i++)
            if (u == 0 || v[i] != v[u - 1])
                v[u++] = v[i];
        g->sz[d] = v;
        g->nx[d] = u;
        g->lg[d] = malloc((size_t)u * sizeof *g->lg[d]);
        if (!g->lg[d])
            return APPROF_ENOMEM;
        for (int i = 0; i < u; i++)
            g->lg[d][i] = log2((double)v[i]);
        cells *= (size_t)u;
    }
    g->rate = calloc(cells, sizeof *g->rate);
    if (!g->rate)
        return APPROF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int a = find(g->sz[0], g->nx[0], p[i].m), b = find(g->sz[1], g->nx[1], p[i].n);
        int c = find(g->sz[2], g->nx[2], p[i].k);
        size_t at = ((size_t)a * (size_t)g->nx[1] + (size_t)b) * (size_t)g->nx[2] + (size_t)c;
        if (g->rate[at] == 0.0)
            g->points++;
        g->rate[at] = p[i].rate;
    }
    g->complete = g->points == cells;
    return 0;
}

int approf_gemm_table_new(const CostdbGemmPoint *pts, size_t n, ApprofGemmTable **out)
{
    ApprofGemmTable *t;
    CostdbGemmPoint *s;
    size_t cap_grids = 0;
    int rc = 0;
    if (!out || (n && !pts))
        return APPROF_EINVAL;
    *out = NULL;
    for (size_t i = 0; i < n; i++)
        if (pts[i].m < 1 || pts[i].n < 1 || pts[i].k < 1 || !isfinite(pts[i].rate) ||
            !(pts[i].rate > 0) || !memchr(pts[i].dtype, '\0', sizeof pts[i].dtype))
            return APPROF_EINVAL;
    if (n == 0)
        return 0;
    t = calloc(1, sizeof *t);
    s = malloc(n * sizeof *s);
    if (!t || !s) {
        free(t);
        free(s);
        return APPROF_ENOMEM;
    }
    memcpy(s, pts, n * sizeof *s);
    qsort(s, n, sizeof *s, point_cmp);
    t->hash = COSTDB_FNV_BASIS;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t j = i;
        while (j < n && !strcmp(s[j].dtype, s[i].dtype))
            j++;
        if (UTIL_GROW(t->grids, cap_grids, t->n + 1) < 0) {
            rc = APPROF_ENOMEM;
            break;
        }
        rc = grid_build(s + i, j - i, &t->grids[t->n]);
        t->n++;
        i = j;
    }
    /* the hash covers every point as the table holds it (bit-exact) */
    for (size_t g = 0; g < t->n && rc == 0; g++) {
        const Grid *x = &t->grids[g];
        t->hash = costdb_fnv1a(t->hash, x->dtype, strlen(x->dtype) + 1);
        for (int d = 0; d < 3; d++)
            t->hash = costdb_fnv1a(t->hash, x->sz[d], (size_t)x->nx[d] * sizeof *x->sz[d]);
        t->hash = costdb_fnv1a(t->hash, x->rate,
                               (size_t)x->nx[0] * (size_t)x->nx[1] * (size_t)x->nx[2] *
                                   sizeof *x->rate);
    }
    free(s);
    if (rc < 0) {
        approf_gemm_table_free(&t);
        return rc;
    }
    *out = t;
    return 0;
}

void approf_gemm_table_free(ApprofGemmTable **t)
{
    if (!t || !*t)
        return;
    for (size_t i = 0; i < (*t)->n; i++)
        grid_free(&(*t)->grids[i]);
    free((*t)->grids);
    free(*t);
    *t = NULL;
}

static const Grid *grid_of(const ApprofGemmTable *t, const char *dtype)
{
    for (size_t i = 0; t && dtype && i < t->n; i++)
        if (!strcmp(t->grids[i].dtype, dtype))
            return &t->grids[i];
    return NULL;
}

size_t approf_gemm_table_count(const ApprofGemmTable *t, const char *dtype, int *complete,
                               int sizes[3])
{
    const Grid *g = grid_of(t, dtype);
    if (complete)
        *complete = g ? g->complete : 0;
    for (int d = 0; sizes && d < 3; d++)
        sizes[d] = g ? g->nx[d] : 0;
    return g ? g->points : 0;
}

void approf_gemm_table_hash(const ApprofGemmTable *t, char *out, size_t len)
{
    if (out && len)
        snprintf(out, len, "%016llx", (unsigned long long)(t ? t->hash : 0));
}

const char *approf_gemm_table_dtype(const ApprofHardwareSpec *hw, ApprofDtype dt)
{
    switch (dt) {
    case APPROF_BF16: return "bf16";
    case APPROF_F16: return "f16";
    default: return approf_math_class(hw, APPROF_F32) == APPROF_MATH_TF32 ? "tf32" : "f32";
    }
}

/* The neighbours of log2(x) on one axis: lg[*i] and lg[*i + 1] (the same
 * index on an axis of one size), with weight *w on the second. */
static void axis(const double *lg, int n, double x, int *i, double *w)
{
    double l = log2(x);
    int lo = 0, hi = n - 1;
    if (n == 1 || l <= lg[0]) {
        *i = 0;
        *w = 0.0;
        return;
    }
    if (l >= lg[n - 1]) {
        *i = n - 2;
        *w = 1.0;
        return;
    }
    while (hi - lo > 1) { /* lg[lo] < l < lg[hi] */
        int mid = (lo + hi) / 2;
        if (lg[mid] <= l)
            lo = mid;
        else
            hi = mid;
    }
    *i = lo;
    *w = (l - lg[lo]) / (lg[lo + 1] - lg[lo]);
}

double approf_gemm_table_rate(const ApprofGemmTable *t, const char *dtype, double m, double n,
                              double k)
{
    const Grid *g = grid_of(t, dtype);
    const double x[3] = {m, n, k};
    int i[3], step[3];
    double w[3], r = 0.0;
    if (!g || !g->complete || !(m >= 1) || !(n >= 1) || !(k >= 1))
        return 0.0;
    for (int d = 0; d < 3; d++) {
        axis(g->lg[d], g->nx[d], x[d], &i[d], &w[d]);
        step[d] = g->nx[d] > 1 ? 1 : 0;
    }
    /* the 8 corners, in a fixed order: equal inputs, bit-identical rates */
    for (int c = 0; c < 8; c++) {
        double wt = 1.0;
        size_t at;
        int ix[3];
        for (int d = 0; d < 3; d++) {
            int hi = (c >> (2 - d)) & 1;
            wt *= hi ? w[d] : 1.0 - w[d];
            ix[d] = i[d] + (hi ? step[d] : 0);
        }
        if (wt == 0.0)
            continue;
        at = ((size_t)ix[0] * (size_t)g->nx[1] + (size_t)ix[1]) * (size_t)g->nx[2] + (size_t)ix[2];
        r += wt * g->rate[at];
    }
    return r;
}
