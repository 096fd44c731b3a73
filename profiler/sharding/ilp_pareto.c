/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time-versus-memory Pareto points of a strategy ILP (ilp.h,
 * docs/variants.md): exact solves of time + weight x memory, the weights
 * bisected along the lower convex hull, negligible savings dropped. The
 * weighted solves replay the first solve's elimination (ilp_work_replay)
 * rather than build, hash and eliminate each problem anew
 * (docs/performance.md, "Memory levels by replay").
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

/* How the bisection's weights are solved (IlpParetoMode): with REPLAY the
 * first fresh solve's working problem is kept in w (have_work) and
 * replayed for every later weight. */
typedef struct ParetoSolver {
    ApprofIlpMethod method;
    ApprofIlpCache *cache;
    IlpParetoMode mode;
    Work w;
    int have_work;
} ParetoSolver;

static int pareto_solve(ApprofIlp *p, ParetoSolver *s, double weight, ParetoPoint *out)
{
    double obj = 0.0;
    int rc;
    ApprofIlpStats st;
    approf_ilp_set_memory_weight(p, weight);
    if (s->mode == ILP_PARETO_FRESH) {
        rc = approf_ilp_solve(p, s->method, s->cache, out->choice, &obj, &st);
    } else if (s->have_work) {
        rc = ilp_solve_replay(p, s->method, &s->w, out->choice, &obj);
    } else {
        rc = ilp_solve_keep(p, s->method, NULL, out->choice, &obj, &st, &s->w, NULL);
        s->have_work = !rc;
    }
    if (rc)
        return rc;
    out->t = obj;
    out->m = approf_ilp_memory(p, out->choice);
    return 0;
}

/* Relative memory saving below which a slower Pareto point is dropped. */
#define PARETO_NEGLIGIBLE 0.005

int ilp_pareto_run(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                   IlpParetoMode mode, int max_points, int *choices, double *times, double *mems,
                   int *n_points, ApprofIlpStats *stats)
{
    enum { CAP = 32 };
    ParetoPoint pt[CAP];
    int np = 0, rc = 0, n = p ? p->n_nodes : 0, solves = 0;
    double w0;
    ApprofIlpStats st0;
    ApprofHash128 key0 = {0, 0};
    ParetoSolver sv = {.method = method, .cache = cache, .mode = mode};
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
    /* the fastest point, through the cache either way (its stats are the
     * caller's), its working problem kept for the replays */
    approf_ilp_set_memory_weight(p, 0.0);
    if (mode == ILP_PARETO_FRESH) {
        rc = approf_ilp_solve(p, method, cache, pt[0].choice, &pt[0].t, &st0);
    } else {
        /* one point: no replay, so nothing to keep */
        rc = ilp_solve_keep(p, method, cache, pt[0].choice, &pt[0].t, &st0,
                            max_points > 1 ? &sv.w : NULL, &key0);
        sv.have_work = !rc && !st0.cached && max_points > 1;
    }
    if (rc)
        goto done;
    pt[0].m = approf_ilp_memory(p, pt[0].choice);
    if (mode == ILP_PARETO_REPLAY && st0.cached && max_points > 1 &&
        ilp_cache_points_find(cache, key0, max_points, n, choices, times, mems, n_points)) {
        if (stats)
            *stats = st0;
        goto done;
    }
    np = 1;
    /* With REPLAY, no least-memory solve when no choice has less memory
     * than the fastest point by more than the bisection's half byte: that
     * solve's point would not be taken (approf_ilp_memory's sum is
     * monotone in each node's memory, so no choice's memory is below the
     * floor). */
    if (max_points > 1 && !(mode == ILP_PARETO_REPLAY && sv.have_work &&
                            ilp_work_memory_floor(&sv.w) >= pt[0].m - 0.5)) {
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
        rc = pareto_solve(p, &sv, upper, &pt[1]);
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
            rc = pareto_solve(p, &sv, lambda, C);
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
    /* one point is the weight-0 solve's entry already */
    if (mode == ILP_PARETO_REPLAY && cache && max_points > 1)
        rc = ilp_cache_points_put(cache, key0, max_points, n, choices, times, mems, keep);
done:
    for (int i = 0; i < CAP; i++)
        free(pt[i].choice);
    ilp_work_free(&sv.w);
    p->weight = w0;
    return rc;
}

int approf_ilp_pareto(ApprofIlp *p, ApprofIlpMethod method, ApprofIlpCache *cache,
                      int max_points, int *choices, double *times, double *mems,
                      int *n_points, ApprofIlpStats *stats)
{
    return ilp_pareto_run(p, method, cache, ilp_cache_pareto_mode(cache), max_points, choices,
                          times, mems, n_points, stats);
}
