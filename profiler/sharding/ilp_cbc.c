/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CBC side of the strategy ILP (ilp.h): the core left by elimination as
 * a 0-1 program (one-hot binary s_v per node, continuous e_uv per edge tied
 * to both endpoints by the marginal equalities sum_j e[i][j] = s_u[i] and
 * sum_i e[i][j] = s_v[j], which make e integral whenever s is; forbidden
 * strategies and pairs have no column; an optional memory row), assembled
 * column-wise and loaded into CBC through its C interface in one call.
 * CBC 2.10's Cbc_solve runs CbcMain1, which keeps process-wide state
 * (statics of the command-line driver), so concurrent solves from sweep
 * worker threads are serialised by cbc_lock; each solve still gets a model
 * of its own, and everything before and after it runs in parallel.
 */
#include "config.h"

#if HAVE_CBC
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* CBC's headers test COIN_BIG_INDEX without defining it (-Wundef). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <Cbc_C_Interface.h>
#pragma GCC diagnostic pop

#include "graph.h"
#include "sharding/ilp_int.h"

static pthread_mutex_t cbc_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct Trip {
    int row, col;
    double val;
} Trip;

typedef struct Lp {
    Trip *t;
    int nt, cap_t;
    double *obj;
    char *is_int;
    int ncol, cap_col;
    double *rlb, *rub;
    int nrow, cap_row;
} Lp;

static int lp_col(Lp *lp, double obj, char is_int)
{
    int c1 = lp->cap_col, c2 = lp->cap_col;
    if (ilp_grow((void **)&lp->obj, &c1, lp->ncol + 1, sizeof(double)) ||
        ilp_grow((void **)&lp->is_int, &c2, lp->ncol + 1, 1))
        return APPROF_ENOMEM;
    lp->cap_col = c1;
    lp->obj[lp->ncol] = obj;
    lp->is_int[lp->ncol] = is_int;
    return lp->ncol++;
}

static int lp_row(Lp *lp, double lb, double ub)
{
    int c1 = lp->cap_row, c2 = lp->cap_row;
    if (ilp_grow((void **)&lp->rlb, &c1, lp->nrow + 1, sizeof(double)) ||
        ilp_grow((void **)&lp->rub, &c2, lp->nrow + 1, sizeof(double)))
        return APPROF_ENOMEM;
    lp->cap_row = c1;
    lp->rlb[lp->nrow] = lb;
    lp->rub[lp->nrow] = ub;
    return lp->nrow++;
}

static int lp_nz(Lp *lp, int row, int col, double val)
{
    if (ilp_grow((void **)&lp->t, &lp->cap_t, lp->nt + 1, sizeof(Trip)))
        return APPROF_ENOMEM;
    lp->t[lp->nt++] = (Trip){row, col, val};
    return 0;
}

static void lp_free(Lp *lp)
{
    free(lp->t);
    free(lp->obj);
    free(lp->is_int);
    free(lp->rlb);
    free(lp->rub);
}

/* CBC on the alive nodes; see the file comment for the formulation. The
 * model is assembled as triplets and loaded in one call (column-wise), which
 * is much faster than adding rows and columns one by one. */
int ilp_core_cbc(Work *w, const int *core, int nc, ApprofIlpStats *st)
{
    int rc = 0, locked = 0;
    Cbc_Model *model = NULL;
    Lp lp;
    int **scol = calloc((size_t)w->nn, sizeof(int *));
    int *ecol = NULL;
    CoinBigIndex *start = NULL;
    int *index = NULL;
    double *value = NULL, *clb = NULL, *cub = NULL;
    memset(&lp, 0, sizeof(lp));
    if (!scol)
        return APPROF_ENOMEM;
    /* Scale so the largest finite coefficient is 1e6: costs are seconds,
     * differences of microseconds must stay above CBC's tolerances. */
    double maxc = 0.0;
    for (int i = 0; i < nc; i++)
        for (int s = 0; s < w->n[core[i]].k; s++)
            if (isfinite(w->n[core[i]].c[s]) && fabs(w->n[core[i]].c[s]) > maxc)
                maxc = fabs(w->n[core[i]].c[s]);
    for (int e = 0; e < w->ne; e++)
        if (w->e[e].alive)
            for (int q = 0; q < w->n[w->e[e].u].k * w->n[w->e[e].v].k; q++)
                if (isfinite(w->e[e].r[q]) && fabs(w->e[e].r[q]) > maxc)
                    maxc = fabs(w->e[e].r[q]);
    double scale = maxc > 0 ? 1e6 / maxc : 1.0;

    /* s columns and one-hot rows */
    for (int i = 0; i < nc && !rc; i++) {
        WNode *a = &w->n[core[i]];
        scol[core[i]] = malloc((size_t)a->k * sizeof(int));
        if (!scol[core[i]]) {
            rc = APPROF_ENOMEM;
            break;
        }
        int row = lp_row(&lp, 1.0, 1.0), any = 0;
        if (row < 0) {
            rc = row;
            break;
        }
        for (int s = 0; s < a->k && !rc; s++) {
            scol[core[i]][s] = -1;
            if (!isfinite(a->c[s]))
                continue;
            int col = lp_col(&lp, a->c[s] * scale, 1);
            if (col < 0)
                rc = col;
            else
                rc = lp_nz(&lp, row, col, 1.0);
            scol[core[i]][s] = col;
            any = 1;
        }
        if (!rc && !any)
            rc = APPROF_EINFEASIBLE;
    }
    /* e columns and marginal rows */
    for (int e = 0; e < w->ne && !rc; e++) {
        WEdge *ed = &w->e[e];
        if (!ed->alive)
            continue;
        int ku = w->n[ed->u].k, kv = w->n[ed->v].k;
        free(ecol);
        ecol = malloc((size_t)ku * kv * sizeof(int));
        if (!ecol) {
            rc = APPROF_ENOMEM;
            break;
        }
        int row_u0 = lp.nrow, row_v0 = lp.nrow + ku;
        for (int q = 0; q < ku + kv && !rc; q++) {
            int row = lp_row(&lp, 0.0, 0.0);
            if (row < 0)
                rc = row;
        }
        for (int i = 0; i < ku && !rc; i++)
            if (scol[ed->u][i] >= 0)
                rc = lp_nz(&lp, row_u0 + i, scol[ed->u][i], -1.0);
        for (int j = 0; j < kv && !rc; j++)
            if (scol[ed->v][j] >= 0)
                rc = lp_nz(&lp, row_v0 + j, scol[ed->v][j], -1.0);
        for (int i = 0; i < ku && !rc; i++)
            for (int j = 0; j < kv && !rc; j++) {
                double r = ed->r[(size_t)i * kv + j];
                if (!isfinite(r) || scol[ed->u][i] < 0 || scol[ed->v][j] < 0)
                    continue;
                int col = lp_col(&lp, r * scale, 0);
                if (col < 0) {
                    rc = col;
                    break;
                }
                rc = lp_nz(&lp, row_u0 + i, col, 1.0);
                if (!rc)
                    rc = lp_nz(&lp, row_v0 + j, col, 1.0);
            }
    }
    if (!rc && w->budget >= 0) {
        int row = lp_row(&lp, -DBL_MAX, w->budget);
        if (row < 0)
            rc = row;
        for (int i = 0; i < nc && !rc; i++)
            for (int s = 0; s < w->n[core[i]].k && !rc; s++)
                if (scol[core[i]][s] >= 0 && w->n[core[i]].m[s] != 0.0)
                    rc = lp_nz(&lp, row, scol[core[i]][s], w->n[core[i]].m[s]);
    }
    if (rc)
        goto cleanup;
    /* column-wise (CSC) arrays */
    start = calloc((size_t)lp.ncol + 1, sizeof(CoinBigIndex));
    index = malloc((size_t)(lp.nt ? lp.nt : 1) * sizeof(int));
    value = malloc((size_t)(lp.nt ? lp.nt : 1) * sizeof(double));
    clb = calloc((size_t)lp.ncol + 1, sizeof(double));
    cub = malloc(((size_t)lp.ncol + 1) * sizeof(double));
    if (!start || !index || !value || !clb || !cub) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    for (int c = 0; c < lp.ncol; c++)
        cub[c] = 1.0;
    memset(start, 0, ((size_t)lp.ncol + 1) * sizeof(CoinBigIndex));
    for (int q = 0; q < lp.nt; q++)
        start[lp.t[q].col + 1]++;
    for (int c = 0; c < lp.ncol; c++)
        start[c + 1] += start[c];
    {
        CoinBigIndex *fill = malloc(((size_t)lp.ncol + 1) * sizeof(CoinBigIndex));
        if (!fill) {
            rc = APPROF_ENOMEM;
            goto cleanup;
        }
        memcpy(fill, start, ((size_t)lp.ncol + 1) * sizeof(CoinBigIndex));
        for (int q = 0; q < lp.nt; q++) {
            CoinBigIndex at = fill[lp.t[q].col]++;
            index[at] = lp.t[q].row;
            value[at] = lp.t[q].val;
        }
        free(fill);
    }

    pthread_mutex_lock(&cbc_lock);
    locked = 1;
    model = Cbc_newModel();
    if (!model) {
        rc = APPROF_ENOMEM;
        goto cleanup;
    }
    Cbc_loadProblem(model, lp.ncol, lp.nrow, start, index, value, clb, cub, lp.obj, lp.rlb,
                    lp.rub);
    for (int c = 0; c < lp.ncol; c++)
        if (lp.is_int[c])
            Cbc_setInteger(model, c);
    Cbc_setLogLevel(model, 0);
    Cbc_setParameter(model, "logLevel", "0");
    /* The marginal (local-polytope) relaxation is tight on most of these
     * cores; CBC's preprocessing and cut generation cost more than they
     * save here. */
    Cbc_setParameter(model, "preprocess", "off");
    Cbc_setParameter(model, "cuts", "off");
    Cbc_setAllowableGap(model, 1e-7);
    Cbc_setAllowableFractionGap(model, 0.0);
    st->cbc_cols = lp.ncol;
    st->cbc_rows = lp.nrow;
    st->used_cbc = 1;
    Cbc_solve(model);
    if (Cbc_isProvenInfeasible(model)) {
        rc = APPROF_EINFEASIBLE;
        goto cleanup;
    }
    if (!Cbc_isProvenOptimal(model)) {
        rc = APPROF_EUNSUPPORTED;
        goto cleanup;
    }
    const double *x = Cbc_getColSolution(model);
    for (int i = 0; i < nc; i++) {
        WNode *a = &w->n[core[i]];
        a->choice = -1;
        for (int s = 0; s < a->k; s++)
            if (scol[core[i]][s] >= 0 && x[scol[core[i]][s]] > 0.5)
                a->choice = s;
        if (a->choice < 0) {
            rc = APPROF_EUNSUPPORTED;
            goto cleanup;
        }
    }
cleanup:
    if (model)
        Cbc_deleteModel(model);
    if (locked)
        pthread_mutex_unlock(&cbc_lock);
    for (int i = 0; i < w->nn; i++)
        free(scol[i]);
    free(scol);
    free(ecol);
    free(start);
    free(index);
    free(value);
    free(clb);
    free(cub);
    lp_free(&lp);
    return rc;
}
#else
/* ISO C wants a non-empty translation unit. */
typedef int approf_ilp_cbc_unused;
#endif
