/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time-versus-memory Pareto points of a strategy ILP (ilp.h,
 * docs/variants.md): exact solves of time + weight x memory, the weights
 * bisected along the lower convex hull, negligible savings dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "sharding/ilp_int.h"

/* ---- time-versus-memory Pareto points ------------------------------------ */

typedef struct ParetoPoint {
    double t, m;
    int *choice;
} ParetoPoint;

static int pareto_solve(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                        double weight, ParetoPoint *out, ApprofIlpStats *stats)
{
    double obj = 0.0;
    approf_ilp_set_memory_weight(p, weight);
    int rc = approf_ilp_solve(p, method, cache, out->choice, &obj, stats);
    if (rc)
        return rc;
    out->t = obj;
    out->m = approf_ilp_memory(p, out->choice);
    return 0;
}

/* Relative memory saving below which a slower Pareto point is dropped. */
#define PARETO_NEGLIGIBLE 0.005

int approf_ilp_pareto(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                      int max_points, int *choices, double *times, double *mems,
                      int *n_points, ApprofIlpStats *stats)
{
    enum { CAP = 32 };
    ParetoPoint pt[CAP];
    int np = 0, rc = 0, n = p ? p->n_nodes : 0, solves = 0;
    double w0;
    ApprofIlpStats st0, st;
    if (!p || !choices || !times || !mems || !n_points || max_points < 1)
        return APPROF_EINVAL;
    w0 = p->weight;
    *n_points = 0;
    memset(pt, 0, sizeof pt);
    for (int i = 0; i < CAP; i++) {
        pt[i].choice = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
        if (!pt[i].choice) {
            rc = APPROF_ENOMEM;
            goto done;
        }
    }
    rc = pareto_solve(p, method, cache, 0.0, &pt[0], &st0);
    if (rc)
        goto done;
    np = 1;
    if (max_points > 1) {
        /* A weight under which one byte outweighs every possible time
         * difference gives the least-memory solution (fastest among them). */
        double upper = 1.0;
        for (int v = 0; v < p->n_nodes; v++)
            for (int i = 0; i < p->k[v]; i++)
                if (isfinite(p->cost[v][i]))
                    upper += fabs(p->cost[v][i]);
        for (int e = 0; e < p->n_edges; e++) {
            size_t kk = (size_t)p->k[p->eu[e]] * (size_t)p->k[p->ev[e]];
            for (size_t i = 0; i < kk; i++)
                if (isfinite(p->r[e][i]))
                    upper += fabs(p->r[e][i]);
        }
        rc = pareto_solve(p, method, cache, upper, &pt[1], &st);
        if (rc)
            goto done;
        if (pt[1].m < pt[0].m - 0.5 && pt[1].t > pt[0].t) {
            np = 2;
        } else if (pt[1].m < pt[0].m - 0.5) {
            /* as fast and leaner: the weight-0 solve broke a tie badly */
            ParetoPoint tmp = pt[0];
            pt[0] = pt[1];
            pt[1] = tmp;
        }
        /* Bisect every hull segment (l, l+1) whose weight yields a point
         * strictly below it; points stay sorted by time. */
        for (int l = 0; np >= 2 && l + 1 < np && np < CAP && solves < 4 * CAP;) {
            ParetoPoint *L = &pt[l], *R = &pt[l + 1];
            double lambda = (R->t - L->t) / (L->m - R->m);
            ParetoPoint *C = &pt[np];
            solves++;
            rc = pareto_solve(p, method, cache, lambda, C, &st);
            if (rc)
                goto done;
            double vc = C->t + lambda * C->m, vl = L->t + lambda * L->m;
            if (vc < vl - 1e-9 * (fabs(vl) + 1e-12) && C->m < L->m - 0.5 && C->m > R->m + 0.5 &&
                C->t > L->t && C->t < R->t) {
                ParetoPoint tmp = *C;
                memmove(&pt[l + 2], &pt[l + 1], (size_t)(np - l - 1) * sizeof(ParetoPoint));
                pt[l + 1] = tmp;
                np++;
            } else {
                l++;
            }
        }
    }
    /* A point that saves under PARETO_NEGLIGIBLE of the memory of the last
     * kept, faster point is not worth its time: dropped, so a lean level is
     * not bought with a few kilobytes of biases (docs/variants.md). */
    int kept = np > 0 ? 1 : 0;
    for (int q = 1; q < np; q++) {
        if (pt[kept - 1].m - pt[q].m < PARETO_NEGLIGIBLE * pt[kept - 1].m)
            continue;
        if (q != kept) {
            ParetoPoint tmp = pt[kept];
            pt[kept] = pt[q];
            pt[q] = tmp;
        }
        kept++;
    }
    np = kept;
    /* Keep the fastest, the least-memory and evenly spaced ones between. */
    int keep = np < max_points ? np : max_points;
    for (int q = 0; q < keep; q++) {
        int src = keep == 1 ? 0 : (int)((long)q * (np - 1) / (keep - 1));
        memcpy(choices + (size_t)q * (size_t)n, pt[src].choice, (size_t)n * sizeof(int));
        times[q] = pt[src].t;
        mems[q] = pt[src].m;
    }
    *n_points = keep;
    if (stats)
        *stats = st0;
done:
    for (int i = 0; i < CAP; i++)
        free(pt[i].choice);
    p->weight = w0;
    return rc;
}
