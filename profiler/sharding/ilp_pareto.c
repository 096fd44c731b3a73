/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The time-versus-memory Pareto points of a strategy ILP (ilp.h,
 * docs/variants.md): exact solves of time + weight x memory, the weights
 * bisected along the lower convex hull, negligible savings dropped. The
 * weighted solves replay the first solve's elimination (ilp_work_replay)
 * rather than build, hash and eliminate each problem anew
 * (docs/performance.md, "Memory levels by replay").
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "graph.h"
#include "sharding/ilp_int.h"

/* ---- time-versus-memory Pareto points ------------------------------------ */

typedef struct ParetoPoint {
    double t, m;
    int *choice;
} ParetoPoint;

/* How the bisection's weights are solved (IlpParetoMode): with REPLAY the
 * first fresh solve's working problem is kept in w (have_work) and
 * replayed for every later weight; nonneg: whether no cost, memory or
 * edge entry of p has its sign bit set (-1 until known: found by the
 * least-memory weight's loop over the same entries, or by
 * problem_nonnegative when pareto_settled asks first);
 * replays and settled counted for ilp_cache_pareto_replays. */
typedef struct ParetoSolver {
    ApprofIlpMethod method;
    ApprofIlpCache *cache;
    IlpParetoMode mode;
    Work w;
    int have_work;
    int nonneg;
    size_t replays, settled;
} ParetoSolver;

/* The bit pattern of x. */
static inline uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The bit patterns of a[0..n) or'ed together: the sign bit is clear when
 * no entry is negative, -0 or a NaN with its sign set. */
static uint64_t or_bits(const double *a, size_t n)
{
    uint64_t acc = 0;
    size_t i = 0;
#ifdef __SSE2__
    __m128i v = _mm_setzero_si128();
    for (; i + 2 <= n; i += 2)
        v = _mm_or_si128(v, _mm_loadu_si128((const __m128i *)(const void *)(a + i)));
    uint64_t lanes[2];
    _mm_storeu_si128((__m128i *)(void *)lanes, v);
    acc = lanes[0] | lanes[1];
#endif
    for (; i < n; i++) {
        uint64_t b;
        memcpy(&b, a + i, sizeof b);
        acc |= b;
    }
    return acc;
}

/* Whether no cost, memory or edge entry of p has its sign bit set: then
 * every term of a solution whose value the elimination finds finite is
 * nonnegative (a NaN entry is never on such a solution: the steps' least
 * over candidates skips it, or V is NaN). */
static int problem_nonnegative(const ApprofIlp *p)
{
    uint64_t acc = 0;
    for (int v = 0; v < p->n_nodes; v++) {
        acc |= or_bits(p->cost[v], (size_t)p->k[v]);
        if (p->mem[v])
            acc |= or_bits(p->mem[v], (size_t)p->k[v]);
    }
    for (int e = 0; e < p->n_edges; e++)
        acc |= or_bits(p->r[e], (size_t)p->k[p->eu[e]] * (size_t)p->k[p->ev[e]]);
    return !(acc >> 63);
}

/* Whether the point the replay just done on s->w would give (C, the
 * back-substitution's solution) has t + weight x m, as the bisection adds
 * it up from approf_ilp_evaluate's and approf_ilp_memory's sums, at least
 * thr: then the bisection's test rejects it whatever it is, and the
 * back-substitution and its sums are not needed. With no core, the
 * replay's elim_value V is C's value as the steps added it up: each step's
 * entry is the least of its candidates, and the back-substitution takes
 * at every step the candidate that entry holds, so V is a sum of C's
 * terms (each node's c0 + weight x m, each edge's entry), finite terms
 * when V is finite, taken by rounded additions in the steps' order. With
 * every term nonnegative (problem_nonnegative), a sum whose terms pass
 * through at most h roundings is within a factor (1 +- gamma_h),
 * gamma_h = h u / (1 - h u), u = 2^-53, of the exact sum (Higham,
 * "Accuracy and Stability of Numerical Algorithms", 2nd ed., section 4.2:
 * recursive summation, the same per leaf path of any tree of additions).
 * The steps take at most 2 roundings for a node's cost, 5 per step a term
 * passes through (at most one a node) and one per eliminated part added
 * into V; the bisection's value at most n_nodes + n_edges + 2. So with
 * h = 8 (n_nodes + n_edges) + 64, C's value is at least its exact value
 * times (1 - gamma_h), at least V (1 - gamma_h) / (1 + gamma_h) >=
 * V (1 - 2 h DBL_EPSILON); the test below takes twice that margin for
 * its own two roundings. V at most 1e300, so no sum of the point
 * overflows (work_finish's objective stays finite: no error skipped); no
 * core, so no solver's error is skipped either. */
static int pareto_settled(const ApprofIlp *p, ParetoSolver *s, double thr)
{
    const Work *w = &s->w;
    double v = w->elim_value;
    double h = 8.0 * ((double)p->n_nodes + (double)p->n_edges) + 64.0;
    double margin = 4.0 * h * DBL_EPSILON;
    if (w->n_core != 0 || !(p->weight >= 0.0) || !(v >= 0.0) || !(v <= 1e300) ||
        !(margin <= 1e-6))
        return 0;
    if (s->nonneg < 0)
        s->nonneg = problem_nonnegative(p);
    return s->nonneg && v - margin * v >= thr;
}

/* The point of weight weight into out; with thr not NaN (REPLAY), *settled
 * set instead when pareto_settled shows that its t + weight x m is at
 * least thr (out left as it was). */
static int pareto_solve(ApprofIlp *p, ParetoSolver *s, double weight, double thr,
                        ParetoPoint *out, int *settled)
{
    double obj = 0.0, mem = 0.0;
    int rc, have_mem = 0;
    ApprofIlpStats st;
    approf_ilp_set_memory_weight(p, weight);
    *settled = 0;
    if (s->mode == ILP_PARETO_FRESH) {
        rc = approf_ilp_solve(p, s->method, s->cache, out->choice, &obj, &st);
    } else if (s->have_work) {
        s->replays++;
        rc = ilp_work_replay(p, &s->w);
        if (!rc && !isnan(thr) && pareto_settled(p, s, thr)) {
            s->settled++;
            *settled = 1;
            return 0;
        }
        if (!rc)
            rc = ilp_replay_finish(p, s->method, &s->w, out->choice, &obj, &mem);
        have_mem = 1;
    } else {
        rc = ilp_solve_keep(p, s->method, NULL, out->choice, &obj, &st, &s->w, NULL);
        s->have_work = !rc;
    }
    if (rc)
        return rc;
    out->t = obj;
    out->m = have_mem ? mem : approf_ilp_memory(p, out->choice);
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
    ParetoSolver sv = {.method = method, .cache = cache, .mode = mode, .nonneg = -1};
    if (!p || !choices || !times || !mems || !n_points || max_points < 1)
        return APPROF_EINVAL;
    w0 = p->weight;
    *n_points = 0;
    memset(pt, 0, sizeof pt);
    /* the points' choices in one block (one point only needs one) */
    size_t stride = (size_t)(n > 0 ? n : 1);
    int *choice_block = malloc((max_points > 1 ? CAP : 1) * stride * sizeof(int));
    if (!choice_block) {
        rc = APPROF_ENOMEM;
        goto done;
    }
    for (int i = 0; i < (max_points > 1 ? CAP : 1); i++)
        pt[i].choice = choice_block + (size_t)i * stride;
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
        int settled;
        /* the entries' bit patterns or'ed on the way (problem_nonnegative's
         * answer for pareto_settled, the same entries read once) */
        uint64_t bits = 0;
        for (int v = 0; v < p->n_nodes; v++) {
            for (int i = 0; i < p->k[v]; i++) {
                double c = p->cost[v][i];
                bits |= bits_of(c);
                if (isfinite(c))
                    upper += fabs(c);
            }
            if (p->mem[v])
                bits |= or_bits(p->mem[v], (size_t)p->k[v]);
        }
        for (int e = 0; e < p->n_edges; e++) {
            size_t kk = (size_t)p->k[p->eu[e]] * (size_t)p->k[p->ev[e]];
            for (size_t i = 0; i < kk; i++) {
                double r = p->r[e][i];
                bits |= bits_of(r);
                if (isfinite(r))
                    upper += fabs(r);
            }
        }
        sv.nonneg = !(bits >> 63);
        rc = pareto_solve(p, &sv, upper, NAN, &pt[1], &settled);
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
            double vl = L->t + lambda * L->m, thr = vl - 1e-9 * (fabs(vl) + 1e-12);
            solves++;
            /* a point whose value is shown to be at least thr is not
             * taken (the test below): its segment ends either way */
            rc = pareto_solve(p, &sv, lambda, thr, C, &settled);
            if (rc)
                goto done;
            if (!settled && C->t + lambda * C->m < thr && C->m < L->m - 0.5 && C->m > R->m + 0.5 &&
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
    ilp_cache_count_replays(cache, sv.replays, sv.settled);
    free(choice_block);
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
