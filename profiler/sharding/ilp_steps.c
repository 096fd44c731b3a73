/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The arithmetic of each step of the strategy ILP's exact elimination
 * (ilp_elim.c), shared by the elimination and its replay (ilp_work_replay,
 * docs/performance.md "Memory levels by replay"): each step a minimum over
 * the eliminated node(s) for every choice of what stays, with an argmin
 * table for the back-substitution. One function per kind of step serves
 * both, so a replay's sums and comparisons are the elimination's. The
 * degree-2 and twin-pair steps are a plan (operands, strides and the
 * instance of the fill) and its run; a replay makes its plans once, runs
 * them without the argmin tables and finds the argmin entries its
 * back-substitution reads (docs/performance.md "The memory levels'
 * replays planned once, their argmins found where read").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "graph.h"
#include "sharding/ilp_int.h"

/* r entry of edge e for endpoint x at local a and the other at b. */
static double edge_at(const Work *w, const WEdge *e, int x, int a, int b)
{
    if (e->u == x)
        return e->r[(size_t)a * w->n[e->v].k + b];
    return e->r[(size_t)b * w->n[e->v].k + a];
}

/* The edges a step reads are named by id, so a replay reads the same
 * tables in the same order. */

/* A scratch buffer of n doubles (w's, valid until the next call). */
double *ilp_work_scratch(Work *w, size_t n)
{
    if (n > w->cap_scratch) {
        double *b = realloc(w->scratch, n * sizeof(double));
        if (!b)
            return NULL;
        w->scratch = b;
        w->cap_scratch = n;
    }
    return w->scratch;
}

/* EL_FIXED: x's one strategy folded into the other end of edge e. */
void ilp_fold_fixed(Work *w, int x, int e)
{
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[ilp_other_end(ed, x)];
    for (int j = 0; j < y->k; j++)
        y->c[j] += edge_at(w, ed, x, 0, j);
}

/* EL_DEG0: arg[0] the cheapest strategy of x; APPROF_EINFEASIBLE when
 * even that one is infinite. */
int ilp_table_deg0(const Work *w, int x, int *arg)
{
    const WNode *a = &w->n[x];
    arg[0] = 0;
    for (int i = 1; i < a->k; i++)
        if (a->c[i] < a->c[arg[0]])
            arg[0] = i;
    return isfinite(a->c[arg[0]]) ? 0 : APPROF_EINFEASIBLE;
}

/* EL_DEG1: x's best strategy for each of y's (the other end of e) folded
 * into y's costs, the argmin into arg. */
void ilp_fold_deg1(Work *w, int x, int e, int *arg)
{
    const WNode *a = &w->n[x];
    const WEdge *ed = &w->e[e];
    WNode *y = &w->n[ilp_other_end(ed, x)];
    for (int j = 0; j < y->k; j++) {
        double best = INFINITY;
        arg[j] = 0;
        for (int i = 0; i < a->k; i++) {
            double v = a->c[i] + edge_at(w, ed, x, i, j);
            if (v < best) {
                best = v;
                arg[j] = i;
            }
        }
        y->c[j] += best;
    }
}

/* Where edge e's entry for x at i and the other end at j lies: e->r[i *
 * *si + j * *sj], the layout edge_at reads, taken once per table so that
 * a step's loops read the tables in place. */
static void edge_strides(const Work *w, const WEdge *e, int x, size_t *si, size_t *sj)
{
    if (e->u == x) {
        *si = (size_t)w->n[e->v].k;
        *sj = 1;
    } else {
        *si = 1;
        *sj = (size_t)w->n[e->v].k;
    }
}

/* Largest x whose c_x + r1 a degree-2 step keeps on the stack. */
#define DEG2_STACK 64

/* The k_y x k_z table of a degree-2 step (table_deg2) for kx strategies
 * of x: inlined for each small kx (a constant there, so the loop over x's
 * strategies is unrolled), and for the pairs of kx and kz that make most
 * of llama-3-8b's full sweep also kz (docs/performance.md "The degree-2
 * steps by the count of z's strategies"); the same sums and comparisons
 * in the same order for every kx and kz. Without args the argmin is not
 * written (a replay's: ilp_deg2_arg_at finds the one entry its
 * back-substitution reads). */
#ifdef __SSE2__
/* Most strategies of x whose sums c_x + r1 a replay's fill keeps in
 * registers (deg2_fill_pairs; more go the scalar way). */
#define DEG2_PAIRS_MAXK 8

/* Lanes 0 and 1: p[0] and p[d] (d 1: one unaligned load). */
static inline __attribute__((always_inline)) __m128d lanes_load(const double *p, size_t d)
{
    return d == 1 ? _mm_loadu_pd(p) : _mm_loadh_pd(_mm_load_sd(p), p + d);
}

/* Lane 0 into p[0], lane 1 into p[d]. */
static inline __attribute__((always_inline)) void lanes_store(double *p, size_t d, __m128d v)
{
    if (d == 1) {
        _mm_storeu_pd(p, v);
    } else {
        _mm_storel_pd(p, v);
        _mm_storeh_pd(p + d, v);
    }
}

/* deg2_fill without the argmin (a replay's), two of z's strategies at a
 * time: lane h of a pair is z's strategy l + h, its candidates tb[i] +
 * col_(l+h)[i] in i's order, tb[i] = c_x[i] + r1 in both lanes (kept in
 * registers: kx a constant at most DEG2_PAIRS_MAXK). minpd(v, best) is
 * v < best ? v : best, the scalar loop's choice (same sum, same strict
 * test; minsd likewise for an odd kz's last strategy), so each lane's
 * minimum, and what is written or added (old + best), is the scalar
 * fill's bit for bit (docs/performance.md "Two of z's strategies at a
 * time"). */
static inline __attribute__((always_inline)) void deg2_fill_pairs(
    int kx, int ky, int kz, const double *c, const double *r1, size_t si1, size_t sj1,
    const double *r2, size_t si2, size_t sl2, double *r, size_t rj, size_t rl, int add)
{
    const __m128d inf = _mm_set1_pd(INFINITY);
    for (int j = 0; j < ky; j++) {
        const double *row = r1 + (size_t)j * sj1;
        double *out = r + (size_t)j * rj;
        __m128d tb[DEG2_PAIRS_MAXK];
        int l = 0;
        for (int i = 0; i < kx; i++)
            tb[i] = _mm_set1_pd(c[i] + row[(size_t)i * si1]);
        for (; l + 2 <= kz; l += 2) {
            const double *col = r2 + (size_t)l * sl2;
            double *o0 = out + (size_t)l * rl;
            __m128d best = inf;
            for (int i = 0; i < kx; i++)
                best = _mm_min_pd(_mm_add_pd(tb[i], lanes_load(col + (size_t)i * si2, sl2)),
                                  best);
            if (add)
                best = _mm_add_pd(lanes_load(o0, rl), best);
            lanes_store(o0, rl, best);
        }
        if (l < kz) {
            const double *col = r2 + (size_t)l * sl2;
            double *o0 = out + (size_t)l * rl;
            __m128d best = inf;
            for (int i = 0; i < kx; i++)
                best = _mm_min_sd(_mm_add_sd(tb[i], _mm_load_sd(col + (size_t)i * si2)), best);
            if (add)
                best = _mm_add_sd(_mm_load_sd(o0), best);
            _mm_store_sd(o0, best);
        }
    }
}
#endif

static inline __attribute__((always_inline)) void deg2_fill(
    int kx, int ky, int kz, const double *c, const double *r1, size_t si1, size_t sj1,
    const double *r2, size_t si2, size_t sl2, double *t, int *arg, double *r, size_t rj,
    size_t rl, int add, int args)
{
#ifdef __SSE2__
    if (!args && kx <= DEG2_PAIRS_MAXK) {
        /* the strides' usual values as constants, so the loads and
         * stores take their one-instruction forms */
        if (sl2 == 1 && rl == 1)
            deg2_fill_pairs(kx, ky, kz, c, r1, si1, sj1, r2, si2, 1, r, rj, 1, add);
        else if (sl2 == 1)
            deg2_fill_pairs(kx, ky, kz, c, r1, si1, sj1, r2, si2, 1, r, rj, rl, add);
        else if (rl == 1)
            deg2_fill_pairs(kx, ky, kz, c, r1, si1, sj1, r2, si2, sl2, r, rj, 1, add);
        else
            deg2_fill_pairs(kx, ky, kz, c, r1, si1, sj1, r2, si2, sl2, r, rj, rl, add);
        return;
    }
#endif
    for (int j = 0; j < ky; j++) {
        const double *row = r1 + (size_t)j * sj1;
        for (int i = 0; i < kx; i++)
            t[i] = c[i] + row[(size_t)i * si1];
        for (int l = 0; l < kz; l++) {
            const double *col = r2 + (size_t)l * sl2;
            double best = INFINITY;
            int bi = 0;
            for (int i = 0; i < kx; i++) {
                double v = t[i] + col[(size_t)i * si2];
                if (v < best) {
                    best = v;
                    bi = i;
                }
            }
            if (args)
                arg[(size_t)j * kz + l] = bi;
            if (add)
                r[(size_t)j * rj + (size_t)l * rl] += best;
            else
                r[(size_t)j * rj + (size_t)l * rl] = best;
        }
    }
}

/* The strides of out's table by y's and z's strategies (edge_strides). */
static void step_out_strides(const Work *w, const StepOut *out, int kz, double **r, size_t *rj,
                             size_t *rl)
{
    if (out->acc) {
        *r = out->acc->r;
        edge_strides(w, out->acc, out->y, rj, rl);
    } else {
        *r = out->r;
        *rj = (size_t)kz;
        *rl = 1;
    }
}

/* One instance of deg2_fill for a plan's operands; K and KZ constants
 * where the plan's kx and kz are those listed in deg2_fill_for. */
#define DEG2_FN(NAME, K, KZ, ADD, ARGS) \
    static void NAME(const Deg2Plan *p, double *t) \
    { \
        deg2_fill(K, p->ky, KZ, p->c, p->r1, p->si1, p->sj1, p->r2, p->si2, p->sl2, t, p->arg, \
                  p->r, p->rj, p->rl, ADD, ARGS); \
    }
#define DEG2_FNS(ADD, ARGS, SUF) \
    DEG2_FN(fill_3_2_##SUF, 3, 2, ADD, ARGS) \
    DEG2_FN(fill_4_2_##SUF, 4, 2, ADD, ARGS) \
    DEG2_FN(fill_4_3_##SUF, 4, 3, ADD, ARGS) \
    DEG2_FN(fill_4_4_##SUF, 4, 4, ADD, ARGS) \
    DEG2_FN(fill_4_5_##SUF, 4, 5, ADD, ARGS) \
    DEG2_FN(fill_5_2_##SUF, 5, 2, ADD, ARGS) \
    DEG2_FN(fill_5_3_##SUF, 5, 3, ADD, ARGS) \
    DEG2_FN(fill_5_4_##SUF, 5, 4, ADD, ARGS) \
    DEG2_FN(fill_5_5_##SUF, 5, 5, ADD, ARGS) \
    DEG2_FN(fill_5_6_##SUF, 5, 6, ADD, ARGS) \
    DEG2_FN(fill_2_z_##SUF, 2, p->kz, ADD, ARGS) \
    DEG2_FN(fill_3_z_##SUF, 3, p->kz, ADD, ARGS) \
    DEG2_FN(fill_4_z_##SUF, 4, p->kz, ADD, ARGS) \
    DEG2_FN(fill_5_z_##SUF, 5, p->kz, ADD, ARGS) \
    DEG2_FN(fill_6_z_##SUF, 6, p->kz, ADD, ARGS) \
    DEG2_FN(fill_x_z_##SUF, p->kx, p->kz, ADD, ARGS)
DEG2_FNS(0, 1, set)
DEG2_FNS(1, 1, add)
DEG2_FNS(0, 0, set_v)
DEG2_FNS(1, 0, add_v)
#undef DEG2_FNS
#undef DEG2_FN

/* The instance for kx and kz strategies, adding into the table or not:
 * inlined for the pairs of kx and kz that make most of llama-3-8b's full
 * sweep, then for each small kx (docs/performance.md "The degree-2 steps
 * by the count of z's strategies"). */
static Deg2Fill deg2_fill_for(int kx, int kz, int add, int args)
{
#define DEG2_PICK(SUF) \
    switch (kx * 8 + kz) { \
    case 3 * 8 + 2: return fill_3_2_##SUF; \
    case 4 * 8 + 2: return fill_4_2_##SUF; \
    case 4 * 8 + 3: return fill_4_3_##SUF; \
    case 4 * 8 + 4: return fill_4_4_##SUF; \
    case 4 * 8 + 5: return fill_4_5_##SUF; \
    case 5 * 8 + 2: return fill_5_2_##SUF; \
    case 5 * 8 + 3: return fill_5_3_##SUF; \
    case 5 * 8 + 4: return fill_5_4_##SUF; \
    case 5 * 8 + 5: return fill_5_5_##SUF; \
    case 5 * 8 + 6: return fill_5_6_##SUF; \
    default: break; \
    } \
    switch (kx) { \
    case 2: return fill_2_z_##SUF; \
    case 3: return fill_3_z_##SUF; \
    case 4: return fill_4_z_##SUF; \
    case 5: return fill_5_z_##SUF; \
    case 6: return fill_6_z_##SUF; \
    default: return fill_x_z_##SUF; \
    }
    if (add && args) {
        DEG2_PICK(add)
    }
    if (args) {
        DEG2_PICK(set)
    }
    if (add) {
        DEG2_PICK(add_v)
    }
    DEG2_PICK(set_v)
#undef DEG2_PICK
}

void ilp_deg2_plan(const Work *w, int x, int e1, int e2, int *arg, const StepOut *out,
                   Deg2Plan *pl, int args)
{
    const WNode *a = &w->n[x];
    const WEdge *d1 = &w->e[e1], *d2 = &w->e[e2];
    pl->kx = a->k;
    pl->ky = w->n[ilp_other_end(d1, x)].k;
    pl->kz = w->n[ilp_other_end(d2, x)].k;
    pl->c = a->c;
    pl->r1 = d1->r;
    pl->r2 = d2->r;
    pl->arg = arg;
    edge_strides(w, d1, x, &pl->si1, &pl->sj1);
    edge_strides(w, d2, x, &pl->si2, &pl->sl2);
    step_out_strides(w, out, pl->kz, &pl->r, &pl->rj, &pl->rl);
    pl->fill = deg2_fill_for(pl->kx, pl->kz, out->acc != NULL, args);
}

/* ilp_deg2_arg_at for kx strategies of x (unrolled where a constant). */
static inline __attribute__((always_inline)) int deg2_arg(const Deg2Plan *p, int kx, int j, int l)
{
    const double *row = p->r1 + (size_t)j * p->sj1, *col = p->r2 + (size_t)l * p->sl2;
    size_t si1 = p->si1, si2 = p->si2;
    double best = INFINITY;
    int bi = 0;
    for (int i = 0; i < kx; i++) {
        /* deg2_fill's t[i], then its candidate */
        double t = p->c[i] + row[(size_t)i * si1];
        double v = t + col[(size_t)i * si2];
        if (v < best) {
            best = v;
            bi = i;
        }
    }
    return bi;
}

int ilp_deg2_arg_at(const Deg2Plan *p, int j, int l)
{
    switch (p->kx) {
    case 3: return deg2_arg(p, 3, j, l);
    case 4: return deg2_arg(p, 4, j, l);
    case 5: return deg2_arg(p, 5, j, l);
    default: return deg2_arg(p, p->kx, j, l);
    }
}

int ilp_deg2_run(Work *w, const Deg2Plan *pl)
{
    double stack[DEG2_STACK], *t = stack;
    if (pl->kx > DEG2_STACK && !(t = ilp_work_scratch(w, (size_t)pl->kx)))
        return APPROF_ENOMEM;
    pl->fill(pl, t);
    return 0;
}

/* EL_DEG2: x's best strategy for each pair of y's and z's (the other ends
 * of e1 and e2), the k_y x k_z table into out, the argmin into arg; 0 or
 * APPROF_ENOMEM. Each candidate is (c_x + r1) + r2 as written out in
 * full, the first sum kept per y's strategy, both tables read in place;
 * the first least candidate is taken. */
int ilp_table_deg2(Work *w, int x, int e1, int e2, int *arg, const StepOut *out)
{
    Deg2Plan pl;
    ilp_deg2_plan(w, x, e1, e2, arg, out, &pl, 1);
    return ilp_deg2_run(w, &pl);
}

/* Largest scratch of doubles a twin-pair step keeps on the stack. */
#define PAIR_STACK 256

/* The least base[i][j] + cx[i] + cy[j] (the first in i, then j), its
 * i * ky + j into *arg: inlined for the twin pairs' usual sizes (3 x 2
 * and 4 x 3 strategies make nearly all of llama-3-8b's full sweep,
 * docs/performance.md), constants there, so the loops are unrolled; the
 * same sums and comparisons in the same order for every size. */
static inline __attribute__((always_inline)) double pair_min(int kx, int ky, const double *base,
                                                             const double *cx, const double *cy,
                                                             int *arg)
{
    double best = INFINITY;
    int bi = 0;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++) {
            double v = base[(size_t)i * ky + j] + cx[i] + cy[j];
            if (v < best) {
                best = v;
                bi = i * ky + j;
            }
        }
    if (arg)
        *arg = bi;
    return best;
}

/* pair_min when y has no edge to a or c (cy all +0.0, the sum 0.0 + 0.0 of
 * its absent terms): the least base[i][j] + cx[i], plus 0.0. Adding +0.0
 * changes no value but -0.0 (to +0.0, equal to it in every comparison) and
 * keeps NaN NaN, so each candidate compares as base[i][j] + cx[i] + cy[j]
 * does, the same one is taken (ties included), and its value plus 0.0 is
 * that candidate's: bit for bit pair_min's answer, one sum fewer a
 * candidate and no cy to fill (docs/performance.md "The twin pairs without
 * the twin's outer edges"). */
static inline __attribute__((always_inline)) double pair_min_lone(int kx, int ky,
                                                                  const double *base,
                                                                  const double *cx, int *arg)
{
    double best = INFINITY;
    int bi = 0;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++) {
            double v = base[(size_t)i * ky + j] + cx[i];
            if (v < best) {
                best = v;
                bi = i * ky + j;
            }
        }
    if (arg)
        *arg = bi;
    return best + 0.0;
}

#ifdef __SSE2__
/* Most strategies of x and of its twin whose base a replay's lone fill
 * keeps in both lanes (pair_fill_lone_pairs; more go the scalar way). */
#define PAIR_PAIRS_MAXX 4
#define PAIR_PAIRS_MAXY 3

/* pair_fill for a lone twin without the argmin (a replay's), two of c's
 * strategies at a time: lane h of a pair is c's strategy u + h, its
 * candidates base[i][j] + cx_(u+h)[i] in i's then j's order, the best
 * plus 0.0 (pair_min_lone), with cx = ax + rxc and base = (nxc + nyc) +
 * rxy as pair_fill sums them. minpd(v, best) is v < best ? v : best, the
 * scalar loop's choice (minsd likewise for an odd kc's last strategy), so
 * each lane's value, and what is written or added (old + best), is the
 * scalar fill's bit for bit (docs/performance.md "Two of z's strategies
 * at a time"). */
static inline __attribute__((always_inline)) void pair_fill_lone_pairs(const PairPlan *p, int kx,
                                                                       int ky, size_t sxc_u,
                                                                       size_t ru, int add)
{
    const __m128d inf = _mm_set1_pd(INFINITY), zero = _mm_setzero_pd();
    __m128d bb[PAIR_PAIRS_MAXX * PAIR_PAIRS_MAXY], ax[PAIR_PAIRS_MAXX], cx[PAIR_PAIRS_MAXX];
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++)
            bb[i * ky + j] = _mm_set1_pd(p->nxc[i] + p->nyc[j] +
                                         p->rxy[(size_t)i * p->sxy_i + (size_t)j * p->sxy_j]);
    for (int s = 0; s < p->ka; s++) {
        double *out = p->r + (size_t)s * p->rs;
        int u = 0;
        for (int i = 0; i < kx; i++)
            ax[i] = _mm_set1_pd(p->rxa[(size_t)i * p->sxa_i + (size_t)s * p->sxa_s]);
        for (; u + 2 <= p->kc; u += 2) {
            __m128d best = inf;
            for (int i = 0; i < kx; i++)
                cx[i] = _mm_add_pd(ax[i], lanes_load(p->rxc + (size_t)i * p->sxc_i +
                                                         (size_t)u * sxc_u,
                                                     sxc_u));
            for (int i = 0; i < kx; i++)
                for (int j = 0; j < ky; j++)
                    best = _mm_min_pd(_mm_add_pd(bb[i * ky + j], cx[i]), best);
            best = _mm_add_pd(best, zero);
            if (add)
                best = _mm_add_pd(lanes_load(out + (size_t)u * ru, ru), best);
            lanes_store(out + (size_t)u * ru, ru, best);
        }
        if (u < p->kc) {
            __m128d best = inf;
            for (int i = 0; i < kx; i++)
                cx[i] = _mm_add_sd(ax[i], _mm_load_sd(p->rxc + (size_t)i * p->sxc_i +
                                                      (size_t)u * sxc_u));
            for (int i = 0; i < kx; i++)
                for (int j = 0; j < ky; j++)
                    best = _mm_min_sd(_mm_add_sd(bb[i * ky + j], cx[i]), best);
            best = _mm_add_sd(best, zero);
            if (add)
                best = _mm_add_sd(_mm_load_sd(out + (size_t)u * ru), best);
            _mm_store_sd(out + (size_t)u * ru, best);
        }
    }
}
#endif

/* The k_a x k_c table of a twin-pair step (ilp_table_pair) for kx and ky
 * strategies of x and its twin, adding into the table or not, y with or
 * without edges to a and c (lone): inlined for the twin pairs' usual
 * sizes (3 x 2 and 4 x 3, constants there), the same sums and
 * comparisons in the same order for every size. base holds kx * ky + 2 *
 * kx + 2 * ky doubles. */
static inline __attribute__((always_inline)) void pair_fill(const PairPlan *p, int kx, int ky,
                                                            int add, int lone, int args,
                                                            double *base)
{
#ifdef __SSE2__
    if (lone && !args && kx <= PAIR_PAIRS_MAXX && ky <= PAIR_PAIRS_MAXY) {
        /* the strides' usual values as constants (lanes_load) */
        if (p->sxc_u == 1 && p->ru == 1)
            pair_fill_lone_pairs(p, kx, ky, 1, 1, add);
        else if (p->sxc_u == 1)
            pair_fill_lone_pairs(p, kx, ky, 1, p->ru, add);
        else if (p->ru == 1)
            pair_fill_lone_pairs(p, kx, ky, p->sxc_u, 1, add);
        else
            pair_fill_lone_pairs(p, kx, ky, p->sxc_u, p->ru, add);
        return;
    }
#endif
    int ka = p->ka, kc = p->kc;
    double *r = p->r;
    /* base[i][j]: x at i and y at j with their edge; then the a and c
     * terms of x (ax, cx) and of y (ay, cy) */
    double *ax = base + (size_t)kx * ky, *cx = ax + kx, *ay = cx + kx, *cy = ay + ky;
    for (int i = 0; i < kx; i++)
        for (int j = 0; j < ky; j++)
            base[(size_t)i * ky + j] =
                p->nxc[i] + p->nyc[j] + p->rxy[(size_t)i * p->sxy_i + (size_t)j * p->sxy_j];
    for (int s = 0; s < ka; s++) {
        for (int i = 0; i < kx; i++)
            ax[i] = p->rxa[(size_t)i * p->sxa_i + (size_t)s * p->sxa_s];
        if (lone) {
            for (int u = 0; u < kc; u++) {
                for (int i = 0; i < kx; i++)
                    cx[i] = ax[i] + p->rxc[(size_t)i * p->sxc_i + (size_t)u * p->sxc_u];
                int bi = 0;
                double best = pair_min_lone(kx, ky, base, cx, args ? &bi : NULL);
                if (add)
                    r[(size_t)s * p->rs + (size_t)u * p->ru] += best;
                else
                    r[(size_t)s * p->rs + (size_t)u * p->ru] = best;
                if (args)
                    p->arg[(size_t)s * kc + u] = bi;
            }
            continue;
        }
        for (int j = 0; j < ky; j++)
            ay[j] = p->rya ? p->rya[(size_t)j * p->sya_j + (size_t)s * p->sya_s] : 0.0;
        for (int u = 0; u < kc; u++) {
            for (int i = 0; i < kx; i++)
                cx[i] = ax[i] + p->rxc[(size_t)i * p->sxc_i + (size_t)u * p->sxc_u];
            for (int j = 0; j < ky; j++)
                cy[j] = ay[j] + (p->ryc ? p->ryc[(size_t)j * p->syc_j + (size_t)u * p->syc_u] : 0.0);
            int bi = 0;
            double best = pair_min(kx, ky, base, cx, cy, args ? &bi : NULL);
            if (add)
                r[(size_t)s * p->rs + (size_t)u * p->ru] += best;
            else
                r[(size_t)s * p->rs + (size_t)u * p->ru] = best;
            if (args)
                p->arg[(size_t)s * kc + u] = bi;
        }
    }
}

#define PAIR_FN(NAME, KX, KY, ADD, LONE, ARGS) \
    static void NAME(const PairPlan *p, double *base) \
    { \
        pair_fill(p, KX, KY, ADD, LONE, ARGS, base); \
    }
#define PAIR_FNS(ADD, LONE, ARGS, SUF) \
    PAIR_FN(pair_3_2_##SUF, 3, 2, ADD, LONE, ARGS) \
    PAIR_FN(pair_4_3_##SUF, 4, 3, ADD, LONE, ARGS) \
    PAIR_FN(pair_x_y_##SUF, p->kx, p->ky, ADD, LONE, ARGS)
PAIR_FNS(0, 0, 1, set)
PAIR_FNS(1, 0, 1, add)
PAIR_FNS(0, 1, 1, set_lone)
PAIR_FNS(1, 1, 1, add_lone)
PAIR_FNS(0, 0, 0, set_v)
PAIR_FNS(1, 0, 0, add_v)
PAIR_FNS(0, 1, 0, set_lone_v)
PAIR_FNS(1, 1, 0, add_lone_v)
#undef PAIR_FNS
#undef PAIR_FN

static PairFill pair_fill_for(int kx, int ky, int add, int lone, int args)
{
#define PAIR_PICK(SUF) \
    return kx * 8 + ky == 3 * 8 + 2   ? pair_3_2_##SUF \
           : kx * 8 + ky == 4 * 8 + 3 ? pair_4_3_##SUF \
                                      : pair_x_y_##SUF
    switch (lone * 4 + add * 2 + args) {
    case 0: PAIR_PICK(set_v);
    case 1: PAIR_PICK(set);
    case 2: PAIR_PICK(add_v);
    case 3: PAIR_PICK(add);
    case 4: PAIR_PICK(set_lone_v);
    case 5: PAIR_PICK(set_lone);
    case 6: PAIR_PICK(add_lone_v);
    default: PAIR_PICK(add_lone);
    }
#undef PAIR_PICK
}

void ilp_pair_plan(const Work *w, int x, const int e[5], int *arg, const StepOut *out,
                   PairPlan *pl, int args)
{
    const WEdge *exy = &w->e[e[0]], *exa = &w->e[e[1]], *exc = &w->e[e[2]];
    const WEdge *eya = e[3] >= 0 ? &w->e[e[3]] : NULL, *eyc = e[4] >= 0 ? &w->e[e[4]] : NULL;
    int y = ilp_other_end(exy, x);
    memset(pl, 0, sizeof *pl);
    pl->kx = w->n[x].k;
    pl->ky = w->n[y].k;
    pl->ka = w->n[ilp_other_end(exa, x)].k;
    pl->kc = w->n[ilp_other_end(exc, x)].k;
    pl->nxc = w->n[x].c;
    pl->nyc = w->n[y].c;
    pl->rxy = exy->r;
    pl->rxa = exa->r;
    pl->rxc = exc->r;
    pl->arg = arg;
    edge_strides(w, exy, x, &pl->sxy_i, &pl->sxy_j);
    edge_strides(w, exa, x, &pl->sxa_i, &pl->sxa_s);
    edge_strides(w, exc, x, &pl->sxc_i, &pl->sxc_u);
    if (eya) {
        pl->rya = eya->r;
        edge_strides(w, eya, y, &pl->sya_j, &pl->sya_s);
    }
    if (eyc) {
        pl->ryc = eyc->r;
        edge_strides(w, eyc, y, &pl->syc_j, &pl->syc_u);
    }
    step_out_strides(w, out, pl->kc, &pl->r, &pl->rs, &pl->ru);
    pl->fill = pair_fill_for(pl->kx, pl->ky, out->acc != NULL, !eya && !eyc, args);
}

int ilp_pair_arg_at(const PairPlan *p, int s, int u)
{
    double best = INFINITY;
    int bi = 0, lone = !p->rya && !p->ryc;
    for (int i = 0; i < p->kx; i++) {
        /* pair_fill's cx[i] (ax[i] + the x-c entry) */
        double cx = p->rxa[(size_t)i * p->sxa_i + (size_t)s * p->sxa_s] +
                    p->rxc[(size_t)i * p->sxc_i + (size_t)u * p->sxc_u];
        for (int j = 0; j < p->ky; j++) {
            /* its base[i][j], then pair_min_lone's or pair_min's candidate */
            double base = p->nxc[i] + p->nyc[j] + p->rxy[(size_t)i * p->sxy_i + (size_t)j * p->sxy_j];
            double v;
            if (lone) {
                v = base + cx;
            } else {
                double ay = p->rya ? p->rya[(size_t)j * p->sya_j + (size_t)s * p->sya_s] : 0.0;
                double cy = ay + (p->ryc ? p->ryc[(size_t)j * p->syc_j + (size_t)u * p->syc_u] : 0.0);
                v = base + cx + cy;
            }
            if (v < best) {
                best = v;
                bi = i * p->ky + j;
            }
        }
    }
    return bi;
}

size_t ilp_pair_scratch(const PairPlan *pl)
{
    return (size_t)pl->kx * pl->ky + 2 * (size_t)pl->kx + 2 * (size_t)pl->ky;
}

int ilp_pair_run(Work *w, const PairPlan *pl)
{
    double stack[PAIR_STACK], *base = stack;
    if (ilp_pair_scratch(pl) > PAIR_STACK && !(base = ilp_work_scratch(w, ilp_pair_scratch(pl))))
        return APPROF_ENOMEM;
    pl->fill(pl, base);
    return 0;
}

/* EL_PAIR: x and its twin y at their best for each pair of a's and c's,
 * e = {x-y, x-a, x-c, y-a or -1, y-c or -1}; the k_a x k_c table into r,
 * the argmin (x's choice * k_y + y's) into arg. 0 or APPROF_ENOMEM. The
 * tables are read in place (edge_strides). */
int ilp_table_pair(Work *w, int x, const int e[5], int *arg, const StepOut *out)
{
    PairPlan pl;
    ilp_pair_plan(w, x, e, arg, out, &pl, 1);
    return ilp_pair_run(w, &pl);
}
